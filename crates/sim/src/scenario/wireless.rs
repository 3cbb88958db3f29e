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
use crate::world::channel::wifi::WifiConfig;
use crate::world::dcf::MacConfig;
use crate::world::geom::Bounds;
use crate::world::mobility::{GaussMarkovConfig, MobilityConfig};
use crate::world::olsr::OlsrConfig;
use crate::world::routing::RoutingConfig;
use serde::Deserialize;
use std::time::Duration;

/// The routing protocol of a wireless world.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutingProtocol {
    /// Idealized proactive routing: shortest hop count on the true
    /// connectivity, recomputed every `recompute_interval_s`, no control
    /// traffic (`world::routing`). The default, so files written before
    /// OLSR existed run as they did.
    #[default]
    Oracle,
    /// OLSR (RFC 3626) as broadcast traffic over the DCF (`world::olsr`):
    /// routes only from the HELLOs and TCs each node received.
    Olsr,
}

/// `[wireless] routing`, as written: either the protocol's name,
/// `routing = "olsr"` / `routing = "oracle"`, or a table
/// `routing = { protocol = "olsr", hello_interval_s = 2.0, tc_interval_s = 5.0 }` /
/// `routing = { protocol = "oracle", recompute_interval_s = 1.0 }`
/// (`protocol` defaults to `"oracle"`, so the pre-OLSR form
/// `routing = { recompute_interval_s = 1.0 }` keeps its meaning). A field
/// of the other protocol is an error naming it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoutingSetting {
    /// Which protocol.
    pub protocol: RoutingProtocol,
    /// Oracle: time between route recomputations, s (default 1).
    pub recompute_interval_s: Option<f64>,
    /// OLSR: HELLO_INTERVAL, s (default 2, RFC 3626 §18.2).
    pub hello_interval_s: Option<f64>,
    /// OLSR: TC_INTERVAL, s (default 5).
    pub tc_interval_s: Option<f64>,
}

/// The table form of [`RoutingSetting`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoutingTable {
    #[serde(default)]
    protocol: RoutingProtocol,
    recompute_interval_s: Option<f64>,
    hello_interval_s: Option<f64>,
    tc_interval_s: Option<f64>,
}

impl<'de> Deserialize<'de> for RoutingSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RoutingSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"olsr\", \"oracle\" or a routing table")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RoutingSetting, E> {
                let protocol =
                    RoutingProtocol::deserialize(serde::de::value::StrDeserializer::<E>::new(v))?;
                Ok(RoutingSetting {
                    protocol,
                    ..RoutingSetting::default()
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RoutingSetting, A::Error> {
                let t =
                    RoutingTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RoutingSetting {
                    protocol: t.protocol,
                    recompute_interval_s: t.recompute_interval_s,
                    hello_interval_s: t.hello_interval_s,
                    tc_interval_s: t.tc_interval_s,
                })
            }
        }
        d.deserialize_any(V)
    }
}

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

/// The validated routing of a wireless world.
#[derive(Clone, Debug, PartialEq)]
pub enum RoutingSpec {
    /// The idealized oracle.
    Oracle(RoutingConfig),
    /// OLSR over the DCF.
    Olsr(OlsrConfig),
}

fn default_box() -> [f64; 3] {
    [300.0, 300.0, 100.0]
}
fn default_queue() -> u64 {
    100
}
fn default_mobility() -> MobilityConfig {
    MobilityConfig::GaussMarkov(GaussMarkovConfig::default())
}

/// `[wireless]`: the shared medium, the box, routing and default mobility.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WirelessConfig {
    /// Size of the simulation box `[x, y, z]`, metres, corner at the
    /// origin (default `[300, 300, 100]`).
    #[serde(default = "default_box")]
    pub box_m: [f64; 3],
    /// Capacity of every node's drop-tail FIFO transmit queue, packets
    /// (default 100, ns-3's `WifiMacQueue` default is 500; seed 001 does
    /// not say).
    #[serde(default = "default_queue")]
    pub queue_packets: u64,
    /// The 802.11b channel (`world::channel::wifi::WifiConfig`).
    #[serde(default)]
    pub channel: WifiConfig,
    /// The routing protocol and its timing ([`RoutingSetting`]): `"oracle"`
    /// (default) or `"olsr"` (needs `mac = { model = "dcf" }`).
    #[serde(default)]
    pub routing: RoutingSetting,
    /// The MAC (`world::dcf::MacConfig`): `{ model = "statistical" }`
    /// (default) or `{ model = "dcf", rx_sensitivity_dbm, capture_threshold_db }`.
    #[serde(default)]
    pub mac: MacConfig,
    /// Mobility of nodes that give none (default Gauss-Markov with its
    /// defaults: 20 m/s, α = 0.85, 0.1 s steps).
    #[serde(default = "default_mobility")]
    pub mobility: MobilityConfig,
}

/// The validated wireless world.
#[derive(Clone, Debug)]
pub struct WirelessSpec {
    /// The simulation box.
    pub bounds: Bounds,
    /// Per-node transmit queue capacity, packets.
    pub queue_packets: u64,
    /// The channel.
    pub channel: WifiConfig,
    /// Routing.
    pub routing: RoutingSpec,
    /// The MAC.
    pub mac: MacConfig,
    /// Each node's mobility, by node index.
    pub mobility: Vec<MobilityConfig>,
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
