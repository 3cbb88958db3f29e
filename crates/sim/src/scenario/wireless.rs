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
//! with their documented defaults (unknown keys are errors).

use super::config::ScenarioConfig;
use super::ScenarioError;
use crate::world::channel::wifi::WifiConfig;
use crate::world::dcf::MacConfig;
use crate::world::geom::Bounds;
use crate::world::mobility::{GaussMarkovConfig, MobilityConfig};
use crate::world::routing::RoutingConfig;
use serde::Deserialize;

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
    /// Route recomputation (`world::routing::RoutingConfig`).
    #[serde(default)]
    pub routing: RoutingConfig,
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
    pub routing: RoutingConfig,
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
    if let Err(e) = w.routing.validate() {
        return err(
            "wireless.routing.recompute_interval_s".into(),
            e.to_string(),
        );
    }
    if let MacConfig::Dcf(d) = &w.mac {
        if let Err(e) = d.validate() {
            return err(format!("wireless.mac.{}", e.field), e.to_string());
        }
    }
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
        routing: w.routing.clone(),
        mac: w.mac.clone(),
        mobility,
    }))
}
