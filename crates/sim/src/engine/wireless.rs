//! The wireless world in the engine (issue 10): building the shared
//! 802.11b medium, one interface per node and the multi-hop router from a
//! scenario's `[wireless]` table, the periodic route recomputation, and
//! the world's results.
//!
//! Interfaces are link models (index = node index) and the router a
//! [`Router`], so the engine forwards hop by hop exactly as on wired
//! links: at every node the router names the next hop from the (possibly
//! stale) routing table and the packet joins that node's transmit queue.
//! A packet is dropped, reason `no_route`, when the table has no route to
//! its destination or when the table's next hop is no longer in range (a
//! broken route; counted apart). Routes are recomputed every
//! `wireless.routing.recompute_interval_s` by an engine event, whatever the
//! traffic, so route changes count the topology's changes only.

use super::{Hop, Router};
use crate::scenario::wireless::WirelessSpec;
use crate::world::channel::wifi::WifiChannel;
use crate::world::dcf::{DcfStats, MacConfig};
use crate::world::link::LinkModel;
use crate::world::medium::{Medium, MediumStats, SharedMedium, WifiNic};
use crate::world::mobility::MobilityConfig;
use crate::world::routing::Routing;
use peregrine_cc::Time;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// Routes over the shared medium's current tables.
pub struct WirelessRouter {
    medium: SharedMedium,
}

impl Router for WirelessRouter {
    fn next_hop(&mut self, now: Time, at: usize, dst: usize) -> Option<Hop> {
        let mut m = self.medium.borrow_mut();
        let Some(next) = m.routing().next_hop(at, dst) else {
            m.count_route_drop(false);
            return None;
        };
        if !m.link_up(now, at, next) {
            m.count_route_drop(true);
            return None;
        }
        Some(Hop {
            link: at,
            node: next,
        })
    }
}

/// The engine's handle on the wireless world.
pub(crate) struct Wireless {
    pub(crate) medium: SharedMedium,
    /// Time between route recomputations (at least 1 ns).
    pub(crate) interval: Duration,
    /// (src, dst) of every flow.
    pub(crate) pairs: Vec<(usize, usize)>,
    /// Per flow: recomputations after which its destination was reachable.
    pub(crate) reachable: Vec<u64>,
}

/// What `build` hands the engine.
pub(crate) struct Built {
    pub(crate) links: Vec<Box<dyn LinkModel>>,
    pub(crate) link_names: Vec<String>,
    pub(crate) router: Box<dyn Router>,
    pub(crate) wireless: Wireless,
}

/// Build the medium, interfaces and router of `spec` for `nodes`;
/// `resolve` finds a mobility trace file as written in the scenario.
pub(crate) fn build(
    spec: &WirelessSpec,
    nodes: &[String],
    pairs: Vec<(usize, usize)>,
    seed: u64,
    resolve: impl Fn(&str) -> std::path::PathBuf,
) -> Result<Built, String> {
    let wifi = WifiChannel::new(spec.channel.clone(), seed)
        .map_err(|e| format!("wireless.channel: {e}"))?;
    let mut mobility = Vec::with_capacity(nodes.len());
    for (i, m) in spec.mobility.iter().enumerate() {
        // Trace files are found like every scenario file (folder, then up).
        let mut m = m.clone();
        if let MobilityConfig::Trace(t) = &mut m {
            t.path = resolve(&t.path).to_string_lossy().into_owned();
        }
        mobility.push(
            m.build(i, spec.bounds, seed)
                .map_err(|e| format!("nodes.{i}.mobility: {e}"))?,
        );
    }
    let routing = Routing::new(nodes.len(), spec.routing.clone())
        .map_err(|e| format!("wireless.routing: {e}"))?;
    let mut medium = Medium::new(wifi, mobility, routing);
    if let MacConfig::Dcf(d) = &spec.mac {
        medium = medium
            .with_dcf(d.clone(), spec.queue_packets, seed)
            .map_err(|e| format!("wireless.mac.{}: {e}", e.field))?;
    }
    let medium = Rc::new(RefCell::new(medium));
    let mut links: Vec<Box<dyn LinkModel>> = Vec::new();
    let mut link_names = Vec::new();
    for (i, name) in nodes.iter().enumerate() {
        links.push(Box::new(WifiNic::new(
            i,
            Rc::clone(&medium),
            spec.queue_packets,
        )));
        link_names.push(format!("wifi/{name}"));
    }
    Ok(Built {
        links,
        link_names,
        router: Box::new(WirelessRouter {
            medium: Rc::clone(&medium),
        }),
        wireless: Wireless {
            medium,
            interval: spec
                .routing
                .recompute_interval()
                .max(Duration::from_nanos(1)),
            reachable: vec![0; pairs.len()],
            pairs,
        },
    })
}

impl Wireless {
    /// Recompute the routes at `now`; returns when to do it next.
    pub(crate) fn tick(&mut self, now: Time) -> Time {
        let mut m = self.medium.borrow_mut();
        m.recompute_routes(now);
        for (f, &(s, d)) in self.pairs.iter().enumerate() {
            if m.routing().hops(s, d).is_some() {
                self.reachable[f] += 1;
            }
        }
        now + self.interval
    }

    /// The world's results.
    pub(crate) fn result(&self) -> WirelessResult {
        let m = self.medium.borrow();
        let r = m.routing();
        let recomputations = r.recomputations();
        WirelessResult {
            recomputations,
            route_changes_total: r.total_route_changes(),
            flows: self
                .pairs
                .iter()
                .zip(&self.reachable)
                .map(|(&(s, d), &reach)| FlowRoutes {
                    route_changes: r.route_changes(s, d),
                    reachable_fraction: if recomputations == 0 {
                        0.0
                    } else {
                        reach as f64 / recomputations as f64
                    },
                })
                .collect(),
            stats: m.stats().clone(),
            dcf: m.dcf().map(|d| d.stats().clone()),
        }
    }
}

/// Route statistics of one flow's (source, destination) pair.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowRoutes {
    /// Times its path changed (including becoming (un)reachable).
    pub route_changes: u64,
    /// Fraction of recomputations after which the destination was reachable.
    pub reachable_fraction: f64,
}

/// What the wireless world measured.
#[derive(Clone, Debug, PartialEq)]
pub struct WirelessResult {
    /// Route recomputations.
    pub recomputations: u64,
    /// Route changes over all ordered pairs of nodes.
    pub route_changes_total: u64,
    /// Per flow, in order.
    pub flows: Vec<FlowRoutes>,
    /// MAC and routing counters.
    pub stats: MediumStats,
    /// The DCF's own counters, when the scenario selected it.
    pub dcf: Option<DcfStats>,
}

impl WirelessResult {
    /// As JSON (the `wireless` key of `summary.json`).
    pub fn to_json(&self) -> Value {
        let s = &self.stats;
        let mut v = json!({
            "route_recomputations": self.recomputations,
            "route_changes_total": self.route_changes_total,
            "flows": self.flows.iter().map(|f| json!({
                "route_changes": f.route_changes,
                "reachable_fraction": (f.reachable_fraction * 1e6).round() / 1e6,
            })).collect::<Vec<_>>(),
            "frames": s.frames,
            "mac_attempts": s.attempts,
            "mac_collisions": s.collisions,
            "mac_drops": s.mac_drops,
            "no_route_drops": s.no_route_drops,
            "broken_route_drops": s.broken_route_drops,
        });
        // Only under the DCF: statistical-MAC summaries keep their keys.
        if let (Some(d), Some(o)) = (&self.dcf, v.as_object_mut()) {
            o.insert(
                "dcf".into(),
                json!({
                    "retries": d.retries,
                    "collisions": d.collisions,
                    "errors": d.errors,
                    "acks": d.acks,
                    "broadcasts": d.broadcasts,
                }),
            );
        }
        v
    }
}
