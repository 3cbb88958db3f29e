//! The wireless (ad hoc 802.11b) form of a scenario: `[wireless]` and the
//! per-node `mobility` of `[[nodes]]` (issue 10).
//!
//! A scenario with a `[wireless]` table has no point-to-point links: its
//! nodes share one 802.11b medium, move with a mobility model inside the
//! simulation box and relay each other's packets along the shortest path
//! of the current connectivity graph (`world::routing`). Every node must be
//! declared in `[[nodes]]`; a node without its own `mobility` takes
//! `wireless.mobility`. The channel and routing tables are the typed
//! configurations of `world::channel::wifi` and `world::routing`, read
//! with their documented defaults (unknown keys are errors). `routing`
//! also takes the protocol's name (`"oracle"`, `"olsr"`; issue 22).

use super::config::ScenarioConfig;
use super::ScenarioError;
use crate::world::dcf::MacConfig;
use crate::world::geom::Bounds;
use crate::world::olsr::OlsrConfig;
use crate::world::routing::RoutingConfig;
use std::time::Duration;

// The table's types live with the models they configure
// (`world::wireless`); re-exported so `scenario::wireless::*` keeps working.
pub use crate::world::wireless::{
    RoutingProtocol, RoutingSetting, RoutingSpec, WirelessConfig, WirelessSpec,
};

/// Longest OLSR message interval accepted, s (a day).
const MAX_OLSR_INTERVAL_S: f64 = 86_400.0;

impl RoutingSetting {
    /// The oracle's configuration, or OLSR's; the error is (field, why).
    /// O(1).
    fn resolve(&self, mac: &MacConfig) -> Result<RoutingSpec, (String, String)> {
        let f = |name: &str| format!("wireless.routing.{name}");
        match self.protocol {
            RoutingProtocol::Oracle => {
                for (name, v) in [
                    ("hello_interval_s", self.hello_interval_s),
                    ("tc_interval_s", self.tc_interval_s),
                ] {
                    if v.is_some() {
                        return Err((f(name), "applies to protocol = \"olsr\" only".into()));
                    }
                }
                let mut c = RoutingConfig::default();
                if let Some(s) = self.recompute_interval_s {
                    c.recompute_interval_s = s;
                }
                c.validate()
                    .map_err(|e| (f("recompute_interval_s"), e.to_string()))?;
                Ok(RoutingSpec::Oracle(c))
            }
            RoutingProtocol::Olsr => {
                if self.recompute_interval_s.is_some() {
                    return Err((
                        f("recompute_interval_s"),
                        "applies to protocol = \"oracle\" only (OLSR learns routes from its messages)".into(),
                    ));
                }
                if !matches!(mac, MacConfig::Dcf(_)) {
                    return Err((
                        "wireless.routing".into(),
                        "OLSR needs broadcast frames on the medium: set wireless.mac = { model = \"dcf\" }".into(),
                    ));
                }
                let mut c = OlsrConfig::default();
                for (name, v, slot) in [
                    (
                        "hello_interval_s",
                        self.hello_interval_s,
                        &mut c.hello_interval,
                    ),
                    ("tc_interval_s", self.tc_interval_s, &mut c.tc_interval),
                ] {
                    if let Some(s) = v {
                        if !(s.is_finite() && (0.01..=MAX_OLSR_INTERVAL_S).contains(&s)) {
                            return Err((
                                f(name),
                                format!("{s} s (allowed: 0.01 to {MAX_OLSR_INTERVAL_S} s)"),
                            ));
                        }
                        *slot = Duration::from_secs_f64(s);
                    }
                }
                Ok(RoutingSpec::Olsr(c))
            }
        }
    }
}

/// Check `cfg.wireless` (if any) against the rest of the scenario; `nodes`
/// are the resolved node names. Errors name the field.
pub fn validate(
    cfg: &ScenarioConfig,
    nodes: &[String],
    origin: &str,
) -> Result<Option<WirelessSpec>, ScenarioError> {
    let err = |field: String, msg: String| Err(ScenarioError::new(origin, field, msg));
    let Some(w) = &cfg.wireless else {
        if let Some(i) = cfg.nodes.iter().position(|n| n.mobility.is_some()) {
            return err(
                format!("nodes.{i}.mobility"),
                "a node moves only in a wireless scenario (add a [wireless] table)".into(),
            );
        }
        return Ok(None);
    };
    if !cfg.links.is_empty() {
        return err(
            "links".into(),
            "a wireless scenario has no point-to-point links (its nodes share the [wireless] medium)"
                .into(),
        );
    }
    if nodes.len() < 2 || nodes.len() > 1024 {
        return err(
            "nodes".into(),
            format!(
                "{} nodes (a wireless scenario declares 2 to 1024 [[nodes]])",
                nodes.len()
            ),
        );
    }
    for (i, x) in w.box_m.iter().enumerate() {
        if !x.is_finite() || *x < 0.0 || *x > 1e7 {
            return err(
                format!("wireless.box_m.{i}"),
                format!("{x} is not a size in metres (allowed: 0 to 1e7)"),
            );
        }
    }
    if w.queue_packets == 0 || w.queue_packets > 1_000_000 {
        return err(
            "wireless.queue_packets".into(),
            format!("{} (allowed: 1 to 1,000,000)", w.queue_packets),
        );
    }
    if let Err(e) = w.channel.validate() {
        return err(format!("wireless.channel.{}", e.field), e.to_string());
    }
    if let MacConfig::Dcf(d) = &w.mac {
        if let Err(e) = d.validate() {
            return err(format!("wireless.mac.{}", e.field), e.to_string());
        }
    }
    let routing = match w.routing.resolve(&w.mac) {
        Ok(r) => r,
        Err((field, msg)) => return err(field, msg),
    };
    if let Err(e) = w.mobility.validate() {
        return err("wireless.mobility".into(), e.to_string());
    }
    let mut mobility = Vec::with_capacity(nodes.len());
    for (i, n) in cfg.nodes.iter().enumerate() {
        let m = n.mobility.clone().unwrap_or_else(|| w.mobility.clone());
        if let Err(e) = m.validate() {
            return err(format!("nodes.{i}.mobility"), e.to_string());
        }
        mobility.push(m);
    }
    Ok(Some(WirelessSpec {
        bounds: Bounds::from_size(w.box_m[0], w.box_m[1], w.box_m[2]),
        queue_packets: w.queue_packets,
        channel: w.channel.clone(),
        routing,
        mac: w.mac.clone(),
        mobility,
    }))
}
