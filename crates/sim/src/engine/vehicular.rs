//! Wiring a vehicular mmWave world into a built simulation: each
//! vehicle's generated access link becomes a pair of
//! [`MmWaveLink`]s replaying the recorded channel, and each outage's hint
//! (from a [`HintSource`] of the scenario's accuracy) is scheduled for the
//! sending connection of that vehicle's flow (`Endpoint::link_hint` at
//! `deliver_at`).
//!
//! With `handover_buffer = "drop"` the downlink direction loses its queue
//! (the old station's RLC buffer) at each of the vehicle's handovers.
//!
//! Hints are known in advance because the channel is recorded before the
//! run (it does not depend on traffic); scheduling them up front is
//! exactly equivalent to emitting them as the outages happen.

use super::hint_lane::HintLane;
use super::{Ev, Sim, SimError};
use crate::scenario::model::ServerSpec;
use crate::scenario::Scenario;
use crate::world::cells::{CellScheduler, HandoverBuffer, TrafficCells};
use crate::world::channel::hints::{HintOrigin, HintPriors, HintSource};
use crate::world::channel::mmwave::FailureKind;
use crate::world::link::QueueLimit;
use crate::world::mmwave_link::MmWaveLink;
use crate::world::vehicles::ChannelTimeline;

/// Replace the access links of `scenario`'s vehicular world in `sim` and
/// schedule the hints of `timeline`. A scenario without `[vehicular]` is
/// left untouched.
pub(crate) fn attach(
    sim: &mut Sim,
    scenario: &Scenario,
    timeline: &ChannelTimeline,
) -> Result<(), SimError> {
    let m = &scenario.model;
    let Some(v) = &m.vehicular else {
        return Ok(());
    };
    let fail = |message: String| SimError {
        scenario: scenario.name(),
        seed: m.seed,
        message,
    };
    if timeline.capacity.len() != v.config.vehicles {
        return Err(fail(format!(
            "the channel timeline has {} vehicles, the scenario {}",
            timeline.capacity.len(),
            v.config.vehicles
        )));
    }
    // Cells that follow traffic: one scheduler shared by every downlink.
    let cells = match (&timeline.cells, v.cells_follow_traffic) {
        (Some(inputs), true) => {
            if inputs.own.len() != v.config.vehicles || inputs.stations.len() != v.config.vehicles {
                return Err(fail(format!(
                    "the channel timeline's cells have {} vehicles, the scenario {}",
                    inputs.own.len(),
                    v.config.vehicles
                )));
            }
            let scheduler = CellScheduler::new(
                v.scheduler,
                v.config.vehicles,
                std::time::Duration::from_nanos(v.config.pf_window.0),
                v.config.pf_min_share,
            );
            Some(std::rc::Rc::new(std::cell::RefCell::new(
                TrafficCells::new(
                    scheduler,
                    inputs.clone(),
                    std::time::Duration::from_nanos(v.config.step.0),
                ),
            )))
        }
        (None, true) => {
            return Err(fail(
                "vehicular.cell_demand = \"backlogged\" needs a channel timeline recorded \
                 with it (ChannelTimeline::record of this scenario)"
                    .into(),
            ))
        }
        (_, false) => None,
    };
    for (i, cap) in timeline.capacity.iter().enumerate() {
        let li = v.first_access_link + i;
        let spec = &m.links[li];
        for d in 0..2 {
            let dir = &spec.dirs[d];
            debug_assert!(matches!(dir.server, ServerSpec::Rate(_)));
            let limit = QueueLimit {
                packets: dir.queue.packets,
                bytes: dir.queue.bytes,
                floor_packets: dir.queue_floor_packets,
            };
            // Direction 0 is gw → vehicle: with cells that follow traffic
            // it replays the vehicle's own rate at its share of the cell.
            let shared = cells.as_ref().filter(|_| d == 0);
            let steps = match (shared, &timeline.cells) {
                (Some(_), Some(inputs)) => &inputs.own[i],
                _ => cap,
            };
            let mut link = MmWaveLink::new(
                std::sync::Arc::clone(steps),
                std::time::Duration::from_nanos(dir.delay_ns),
                limit,
            );
            if let Some(c) = shared {
                link = link.with_cells(std::rc::Rc::clone(c), i);
            }
            // Direction 0 is gw → vehicle: the base station's RLC buffer.
            if d == 0 && v.handover_buffer == HandoverBuffer::Drop {
                link = link.with_flush_at(
                    timeline
                        .events
                        .iter()
                        .filter(|e| e.vehicle == i && e.kind == FailureKind::Handover)
                        .map(|e| e.time)
                        .collect(),
                );
            }
            sim.links[2 * li + d] = Box::new(link);
        }
    }
    let origin = HintOrigin::parse(&v.config.hint_source)
        .ok_or_else(|| fail(format!("vehicular.hint_source: {:?}", v.config.hint_source)))?;
    let ms = |x: f64| std::time::Duration::from_secs_f64(x.max(0.0) * 1e-3);
    let c = &v.channel;
    let priors = HintPriors {
        recovery: ms(c.link_recovery_ms),
        handover: ms(c.handover_interruption_ms),
        blockage: ms(c.nlos_recovery_ms),
        horizon: ms(c.blockage_horizon_ms),
        ..HintPriors::default()
    };
    let mut hints = HintSource::new(
        v.hints.clone(),
        std::time::Duration::from_nanos(v.config.hint_delay.0),
        m.seed,
    )
    .map_err(|e| fail(e.to_string()))?
    .with_origin(origin, priors);
    let end = crate::Time::from_nanos(m.duration_ns);
    let mut scheduled = hints.false_alarms(v.config.vehicles, end);
    scheduled.extend(timeline.events.iter().filter_map(|ev| hints.on_event(ev)));
    // Each hint under the sequence number pushing it here would have
    // taken, only the earliest in the queue (`hint_lane.rs`): the same
    // events in the same order, without a run's worth of hints in the heap.
    let mut lane = Vec::new();
    for h in scheduled {
        let at = h.deliver_at;
        if at.as_nanos() <= m.duration_ns && h.vehicle < v.config.vehicles {
            let seq = sim.queue.reserve();
            lane.push((at, seq, v.first_flow + h.vehicle, h.hint));
        }
    }
    sim.hint_lane = HintLane::new(lane);
    if let Some((at, seq)) = sim.hint_lane.first() {
        sim.queue.push_reserved(at, seq, Ev::LaneHint);
    }
    Ok(())
}

#[cfg(test)]
#[path = "vehicular_tests.rs"]
mod tests;
