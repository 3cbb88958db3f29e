//! # peregrine-sim — the laboratory
//!
//! A deterministic discrete-event simulator that runs the unmodified
//! `peregrine-proto` code over modelled networks. Scenario in, results
//! out: [`Scenario::from_toml_str`] (or `from_file`) reads and validates a
//! TOML scenario, [`run`] simulates it, and [`SimResults`] writes
//! `summary.json`, tidy CSVs and a readable table. The `peregrine sim`
//! command is a thin layer over these three calls.
//!
//! * [`rng`]: every random source is a seeded generator derived from the
//!   scenario seed and a stable component name, so adding a component never
//!   changes another component's draws.
//! * [`scenario`]: scenario files, units, validation and `key=value` overrides.
//! * [`engine`]: the event queue ordered by (time, sequence), endpoints
//!   driven through their sans-IO interface, forwarding through a router.
//! * [`experiment`]: sweeps over scenario fields and seeds, run across
//!   cores and aggregated with 95 % confidence intervals.
//! * [`world`]: the modelled physical world — geometry, packets, links
//!   (rate or Mahimahi trace, drop-tail queue, loss, outages), mobility
//!   models, radio channels (802.11b, 28 GHz mmWave) and routing.
//! * [`cclab`]: the controller lab — one congestion controller, ACK by ACK,
//!   through one drop-tail bottleneck on a scripted path (`peregrine cc`).
//! * [`apps`]: bulk, CBR, ON/OFF, file and message-trace applications.
//! * [`metrics`]: per-flow and per-stream measurements and their outputs.

#![warn(missing_docs)]

pub mod apps;
pub mod cclab;
pub mod engine;
pub mod experiment;
pub mod metrics;
pub mod rng;
pub mod scenario;
pub mod world;

pub use engine::SimError;
pub use metrics::SimResults;
pub use peregrine_cc::Time;
pub use scenario::{Scenario, ScenarioError};

/// Simulate `scenario` to its end. A vehicular world's channel is
/// recorded first ([`world::vehicles::ChannelTimeline::record`]).
pub fn run(scenario: &Scenario) -> Result<SimResults, SimError> {
    match &scenario.model.vehicular {
        None => run_with_timeline(scenario, None),
        Some(v) => {
            let m = &scenario.model;
            let tl = world::vehicles::ChannelTimeline::record(v, m.duration_ns, m.seed).map_err(
                |e| SimError {
                    scenario: scenario.name(),
                    seed: m.seed,
                    message: e.to_string(),
                },
            )?;
            run_with_timeline(scenario, Some(&tl))
        }
    }
}

/// [`run`], calling `progress(simulated time, events so far)` every 65,536
/// events (and never otherwise), so a caller can show how far a long run
/// is. The observer sees the run; it cannot change it. Cost: that of
/// [`run`] plus one observer call per 65,536 events.
pub fn run_with_progress(
    scenario: &Scenario,
    progress: &mut dyn FnMut(Time, u64),
) -> Result<SimResults, SimError> {
    let m = &scenario.model;
    let timeline = match &m.vehicular {
        None => None,
        Some(v) => Some(
            world::vehicles::ChannelTimeline::record(v, m.duration_ns, m.seed).map_err(|e| {
                SimError {
                    scenario: scenario.name(),
                    seed: m.seed,
                    message: e.to_string(),
                }
            })?,
        ),
    };
    let mut sim = engine::build::build(scenario)?;
    if let Some(tl) = &timeline {
        engine::vehicular::attach(&mut sim, scenario, tl)?;
    }
    let events = sim.run_observed(progress)?;
    Ok(sim.finish(scenario, events))
}

/// Simulate `scenario` with a vehicular world's channel already recorded
/// (`timeline`, shared by the runs that differ only in traffic, controller
/// or hints); `None` for other scenarios.
pub fn run_with_timeline(
    scenario: &Scenario,
    timeline: Option<&world::vehicles::ChannelTimeline>,
) -> Result<SimResults, SimError> {
    let mut sim = engine::build::build(scenario)?;
    if let Some(tl) = timeline {
        engine::vehicular::attach(&mut sim, scenario, tl)?;
    }
    let events = sim.run()?;
    Ok(sim.finish(scenario, events))
}
