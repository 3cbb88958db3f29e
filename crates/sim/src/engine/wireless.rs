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
//!
//! With `routing = "olsr"` (issue 22) the router is `engine::olsr`'s
//! instead: each node's table is what its OLSR agent learnt, a packet on
//! a broken next hop costs its MAC retries, and the same engine event
//! only *samples* the tables every [`OLSR_SAMPLE_INTERVAL`]: whether each
//! flow's source has a route to its destination (`reachable_fraction`,
//! the route availability), whether following the tables hop by hop
//! reaches it over links that are up at that instant
//! (`route_valid_fraction`), and the path's changes between samples.

use super::olsr::{OlsrNet, OlsrRouter, SharedOlsr};
use super::{Hop, Router};
use crate::scenario::wireless::{RoutingSpec, WirelessSpec};
use crate::world::channel::wifi::WifiChannel;
use crate::world::dcf::{DcfStats, MacConfig};
use crate::world::link::LinkModel;
use crate::world::medium::{Medium, MediumStats, SharedMedium, WifiNic};
use crate::world::mobility::MobilityConfig;
use crate::world::routing::{Routing, RoutingConfig};
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

/// How often the engine samples OLSR's tables for the route statistics
/// (the oracle's are sampled at each recomputation).
pub const OLSR_SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// The engine's handle on the wireless world.
pub(crate) struct Wireless {
    pub(crate) medium: SharedMedium,
    /// Time between route recomputations or samples (at least 1 ns).
    pub(crate) interval: Duration,
    /// (src, dst) of every flow.
    pub(crate) pairs: Vec<(usize, usize)>,
    /// Per flow: recomputations (samples) at which its destination was
    /// reachable.
    pub(crate) reachable: Vec<u64>,
    /// OLSR's agents, when `routing = "olsr"`.
    pub(crate) olsr: Option<SharedOlsr>,
    /// The instant of the live `Ev::Olsr` in the engine's queue.
    pub(crate) olsr_wake: Option<Time>,
    /// OLSR: samples taken.
    samples: u64,
    /// OLSR, per flow: samples at which the tables' path was valid.
    valid: Vec<u64>,
    /// OLSR, per flow: path changes between samples, and the last path
    /// (nodes after the source; empty = no route).
    path_changes: Vec<u64>,
    last_path: Vec<Option<Vec<usize>>>,
    path_buf: Vec<usize>,
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
    let oracle = match &spec.routing {
        RoutingSpec::Oracle(c) => c.clone(),
        RoutingSpec::Olsr(_) => RoutingConfig::default(),
    };
    let interval = match &spec.routing {
        RoutingSpec::Oracle(c) => c.recompute_interval(),
        RoutingSpec::Olsr(_) => OLSR_SAMPLE_INTERVAL,
    };
    let routing =
        Routing::new(nodes.len(), oracle).map_err(|e| format!("wireless.routing: {e}"))?;
    let mut medium = Medium::new(wifi, mobility, routing);
    if let MacConfig::Dcf(d) = &spec.mac {
        medium = medium
            .with_dcf(d.clone(), spec.queue_packets, seed)
            .map_err(|e| format!("wireless.mac.{}: {e}", e.field))?;
    }
    if matches!(spec.routing, RoutingSpec::Olsr(_)) && medium.dcf().is_none() {
        return Err("wireless.routing: OLSR needs the DCF (wireless.mac)".into());
    }
    let medium = Rc::new(RefCell::new(medium));
    let olsr = match &spec.routing {
        RoutingSpec::Olsr(c) => Some(Rc::new(RefCell::new(OlsrNet::new(nodes.len(), c, seed)))),
        RoutingSpec::Oracle(_) => None,
    };
    let router: Box<dyn Router> = match &olsr {
        Some(o) => Box::new(OlsrRouter {
            olsr: Rc::clone(o),
            medium: Rc::clone(&medium),
        }),
        None => Box::new(WirelessRouter {
            medium: Rc::clone(&medium),
        }),
    };
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
    let n_pairs = pairs.len();
    Ok(Built {
        links,
        link_names,
        router,
        wireless: Wireless {
            medium,
            interval: interval.max(Duration::from_nanos(1)),
            reachable: vec![0; n_pairs],
            pairs,
            olsr,
            olsr_wake: None,
            samples: 0,
            valid: vec![0; n_pairs],
            path_changes: vec![0; n_pairs],
            last_path: vec![None; n_pairs],
            path_buf: Vec::new(),
        },
    })
}

impl Wireless {
    /// Recompute the routes at `now` (oracle) or sample OLSR's; returns
    /// when to do it next. O(nodes²) (oracle), O(flows · hops · log
    /// nodes) (OLSR).
    pub(crate) fn tick(&mut self, now: Time) -> Time {
        if let Some(net) = self.olsr.clone() {
            self.sample_olsr(now, &net.borrow());
            return now + self.interval;
        }
        let mut m = self.medium.borrow_mut();
        m.recompute_routes(now);
        for (f, &(s, d)) in self.pairs.iter().enumerate() {
            if m.routing().hops(s, d).is_some() {
                self.reachable[f] += 1;
            }
        }
        now + self.interval
    }

    /// One sample of OLSR's tables for every flow.
    fn sample_olsr(&mut self, now: Time, net: &OlsrNet) {
        self.samples += 1;
        let mut m = self.medium.borrow_mut();
        for (f, &(s, d)) in self.pairs.iter().enumerate() {
            let path = &mut self.path_buf;
            path.clear();
            let mut at = s;
            let mut valid = net.next_hop(s, d).is_some();
            if valid {
                self.reachable[f] += 1;
            }
            // Follow the tables (a loop or a dead end ends the walk).
            while at != d && path.len() < usize::from(crate::world::packet::MAX_HOPS) {
                let Some(next) = net.next_hop(at, d) else {
                    valid = false;
                    break;
                };
                valid &= m.link_up(now, at, next);
                path.push(next);
                at = next;
            }
            valid &= at == d;
            if valid {
                self.valid[f] += 1;
            }
            let same = self.last_path[f].as_deref() == Some(path.as_slice());
            if !same {
                if self.last_path[f].is_some() {
                    self.path_changes[f] += 1;
                }
                self.last_path[f] = Some(path.clone());
            }
        }
    }

    /// The world's results.
    pub(crate) fn result(&self) -> WirelessResult {
        let m = self.medium.borrow();
        if let Some(net) = &self.olsr {
            return self.olsr_result(&m, &net.borrow());
        }
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
                    valid_fraction: None,
                })
                .collect(),
            stats: m.stats().clone(),
            dcf: m.dcf().map(|d| d.stats().clone()),
            olsr: None,
        }
    }

    fn olsr_result(&self, m: &crate::world::medium::Medium, net: &OlsrNet) -> WirelessResult {
        let frac = |k: u64| {
            if self.samples == 0 {
                0.0
            } else {
                k as f64 / self.samples as f64
            }
        };
        let (bytes, packets) = net.sent();
        WirelessResult {
            recomputations: self.samples,
            route_changes_total: net.route_changes(),
            flows: (0..self.pairs.len())
                .map(|f| FlowRoutes {
                    route_changes: self.path_changes[f],
                    reachable_fraction: frac(self.reachable[f]),
                    valid_fraction: Some(frac(self.valid[f])),
                })
                .collect(),
            stats: m.stats().clone(),
            dcf: m.dcf().map(|d| d.stats().clone()),
            olsr: Some(OlsrResult {
                control_bytes: bytes,
                control_packets: packets,
                received: net.received,
                queue_drops: net.queue_drops,
                control_packets_by_node: net.sent_by_node(),
            }),
        }
    }
}

/// OLSR's traffic in one run.
#[derive(Clone, Debug, PartialEq)]
pub struct OlsrResult {
    /// Wire bytes (IP/UDP included) of every OLSR packet sent.
    pub control_bytes: u64,
    /// OLSR packets sent (HELLOs, TCs, forwarded TCs).
    pub control_packets: u64,
    /// OLSR packets decoded (each receiver counts).
    pub received: u64,
    /// OLSR packets dropped at a full transmit queue.
    pub queue_drops: u64,
    /// OLSR packets sent, per node (not in `summary.json`).
    pub control_packets_by_node: Vec<u64>,
}

/// Route statistics of one flow's (source, destination) pair.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowRoutes {
    /// Times its path changed (including becoming (un)reachable).
    pub route_changes: u64,
    /// Fraction of recomputations after which the destination was
    /// reachable (OLSR: of samples at which the source had a route — the
    /// route availability).
    pub reachable_fraction: f64,
    /// OLSR only: fraction of samples at which following the tables from
    /// the source reached the destination over links up at that instant.
    pub valid_fraction: Option<f64>,
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
    /// OLSR's traffic, when the scenario routes with it.
    pub olsr: Option<OlsrResult>,
}

impl WirelessResult {
    /// Share of all airtime (data, ACK and broadcast transmissions) taken
    /// by OLSR's broadcasts; 0 without OLSR or without the DCF.
    pub fn control_airtime_share(&self) -> f64 {
        match (&self.olsr, &self.dcf) {
            (Some(_), Some(d)) if d.airtime_ns > 0 => {
                d.broadcast_airtime_ns as f64 / d.airtime_ns as f64
            }
            _ => 0.0,
        }
    }

    /// As JSON (the `wireless` key of `summary.json`). Keys added by
    /// issue 22 appear only under the DCF (`dcf`) or OLSR (`routing`,
    /// `olsr`, each flow's `route_valid_fraction`), so the oracle's
    /// statistical-MAC summaries keep their bytes.
    pub fn to_json(&self) -> Value {
        let s = &self.stats;
        let r6 = |x: f64| (x * 1e6).round() / 1e6;
        let mut v = json!({
            "route_recomputations": self.recomputations,
            "route_changes_total": self.route_changes_total,
            "flows": self.flows.iter().map(|f| {
                let mut o = json!({
                    "route_changes": f.route_changes,
                    "reachable_fraction": r6(f.reachable_fraction),
                });
                if let (Some(x), Some(m)) = (f.valid_fraction, o.as_object_mut()) {
                    m.insert("route_valid_fraction".into(), json!(r6(x)));
                }
                o
            }).collect::<Vec<_>>(),
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
        if let (Some(ol), Some(o)) = (&self.olsr, v.as_object_mut()) {
            o.insert("routing".into(), json!("olsr"));
            o.insert(
                "olsr".into(),
                json!({
                    "control_bytes": ol.control_bytes,
                    "control_packets": ol.control_packets,
                    "received": ol.received,
                    "queue_drops": ol.queue_drops,
                    "hop_limit_drops": s.hop_limit_drops,
                    "control_airtime_share": r6(self.control_airtime_share()),
                    "sample_interval_ms": OLSR_SAMPLE_INTERVAL.as_millis() as u64,
                }),
            );
        }
        v
    }
}
