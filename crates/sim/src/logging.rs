//! `tracing` events of a simulation run (issue 26 item 5): run start and
//! end, a run that stopped (livelock, a flow that cannot start, a capture
//! that cannot be written), flows that failed, links that dropped
//! packets. Silent unless the program installs a subscriber (`peregrine`
//! does only when `RUST_LOG` is set); nothing here can change a result.
//!
//! Levels: a run's start and end at `debug` (a sweep runs thousands),
//! failed flows and stopped runs at `warn`, per-link drop totals at
//! `debug`, each dropped packet at `trace` (`engine::Sim::drop_packet`).
//! Nothing is logged per event at `debug` or above: the engine processes
//! ~10⁷ events/s. Target `peregrine_sim` (`RUST_LOG=peregrine_sim=debug`).

use crate::engine::SimError;
use crate::{Scenario, SimResults};

/// A run begins. O(1).
pub(crate) fn run_started(scenario: &Scenario) {
    let m = &scenario.model;
    tracing::debug!(
        scenario = %scenario.name(),
        seed = m.seed,
        duration_ns = m.duration_ns,
        nodes = m.nodes.len(),
        links = m.links.len(),
        flows = m.flows.len(),
        "simulation starts"
    );
}

/// A run ended: its totals, each failed flow (`warn`) and each link
/// direction that dropped packets (`debug`). O(flows + links), and only
/// when a subscriber listens at those levels.
pub(crate) fn run_finished(r: &SimResults) {
    tracing::debug!(
        scenario = %r.name,
        seed = r.seed,
        duration_ns = r.duration_ns,
        events = r.events,
        flows = r.flows.len(),
        failed_flows = r.flows.iter().filter(|f| f.failure().is_some()).count(),
        "simulation finished"
    );
    if tracing::enabled!(tracing::Level::WARN) {
        for (i, why) in r.failed_flows() {
            let f = &r.flows[i];
            tracing::warn!(
                scenario = %r.name,
                seed = r.seed,
                flow = %f.name,
                reason = why.as_str(),
                "flow failed"
            );
        }
    }
    if tracing::enabled!(tracing::Level::DEBUG) {
        for l in &r.links {
            let s = &l.stats;
            let dropped = s.queue_drops + s.channel_drops + s.outage_drops + s.mtu_drops;
            if dropped > 0 {
                tracing::debug!(
                    scenario = %r.name,
                    link = %l.name,
                    queue_drops = s.queue_drops,
                    channel_drops = s.channel_drops,
                    outage_drops = s.outage_drops,
                    mtu_drops = s.mtu_drops,
                    enqueued = s.enqueued_packets,
                    "link dropped packets"
                );
            }
        }
    }
}

/// A run stopped with an error (livelock, a flow that could not start,
/// a capture or qlog file that could not be written). O(1).
pub(crate) fn run_failed(e: &SimError) {
    tracing::warn!(
        scenario = %e.scenario,
        seed = e.seed,
        error = %e.message,
        "simulation stopped"
    );
}
