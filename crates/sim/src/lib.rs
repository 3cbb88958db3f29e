//! # peregrine-sim — the engine and its models
//!
//! A deterministic discrete-event simulator that runs the unmodified
//! `peregrine-proto` code over modelled networks. Scenario in, results
//! out: [`Scenario::from_toml_str`] (or `from_file`) reads and validates a
//! TOML scenario, [`run`] simulates it, and [`SimResults`] writes
//! `summary.json`, tidy CSVs and a readable table. The `peregrine sim`
//! command is a thin layer over these three calls.
//!
//! This crate is the engine and its models only. Sweeps over scenario
//! fields and seeds (the grid, the parallel runner, confidence
//! intervals) are the laboratory's: `peregrine_lab::experiment`. The
//! event queue and the host loop the engine runs on are
//! `peregrine_proto::vtime`, shared with the harness and the lab.
//!
//! * [`rng`]: every random source is a seeded generator derived from the
//!   scenario seed and a stable component name, so adding a component never
//!   changes another component's draws.
//! * [`scenario`]: scenario files — the [`scenario::ScenarioDocument`]
//!   read, parsed and overridden (`key=value`) once — and validation.
//! * [`units`]: durations and rates as scenario files write them.
//! * [`engine`]: a world of the one host loop (`peregrine_proto::vtime`),
//!   endpoints driven through their sans-IO interface, forwarding through
//!   a router.
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
mod logging;
pub mod metrics;
pub mod paths;
pub mod rng;
pub mod scenario;
pub mod units;
pub mod world;

pub use engine::SimError;
pub use metrics::SimResults;
pub use peregrine_cc::Time;
pub use scenario::{Scenario, ScenarioError};

/// Simulate `scenario` to its end. A vehicular world's channel is
/// recorded first ([`world::vehicles::ChannelTimeline::record`]).
pub fn run(scenario: &Scenario) -> Result<SimResults, SimError> {
    run_with_options(scenario, &RunOptions::default())
}

/// [`run`], calling `progress(simulated time, events so far)` every 65,536
/// events (and never otherwise), so a caller can show how far a long run
/// is. The observer sees the run; it cannot change it. Cost: that of
/// [`run`] plus one observer call per 65,536 events.
pub fn run_with_progress(
    scenario: &Scenario,
    progress: &mut dyn FnMut(Time, u64),
) -> Result<SimResults, SimError> {
    run_observed(scenario, &RunOptions::default(), progress)
}

/// [`run_with_options`] and [`run_with_progress`] at once: what
/// `peregrine sim` calls.
pub fn run_observed(
    scenario: &Scenario,
    options: &RunOptions,
    progress: &mut dyn FnMut(Time, u64),
) -> Result<SimResults, SimError> {
    let timeline = record_timeline(scenario)?;
    run_inner(scenario, timeline.as_ref(), options, Some(progress))
}

/// A vehicular world's channel, recorded (`None` for other worlds).
fn record_timeline(
    scenario: &Scenario,
) -> Result<Option<world::vehicles::ChannelTimeline>, SimError> {
    let m = &scenario.model;
    m.vehicular
        .as_ref()
        .map(|v| {
            world::vehicles::ChannelTimeline::record(v, m.duration_ns, m.seed).map_err(|e| {
                SimError {
                    scenario: scenario.name(),
                    seed: m.seed,
                    message: e.to_string(),
                }
            })
        })
        .transpose()
}

/// Simulate `scenario` with a vehicular world's channel already recorded
/// (`timeline`, shared by the runs that differ only in traffic, controller
/// or hints); `None` for other scenarios.
pub fn run_with_timeline(
    scenario: &Scenario,
    timeline: Option<&world::vehicles::ChannelTimeline>,
) -> Result<SimResults, SimError> {
    run_inner(scenario, timeline, &RunOptions::default(), None)
}

/// What a run writes besides its results (the command line's `--pcap`
/// and `--qlog`).
/// None of it changes the results: a run with captures gives the same
/// `SimResults` as one without.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Write one pcapng capture per link direction into this directory
    /// (`<link>.<up|down>.pcapng`, `wifi.<node>.pcapng`): every datagram
    /// as it is offered to the direction, simulated timestamps, wrapped
    /// in IPv4/UDP with the nodes' addresses (`engine/capture.rs`).
    pub pcap_dir: Option<std::path::PathBuf>,
    /// Write one qlog file (JSON-SEQ, `.sqlog`) per connection endpoint
    /// into this directory: `<flow>-<client|server>-<id>.sqlog`, times in
    /// simulated milliseconds (`peregrine_trace::qlog`).
    pub qlog_dir: Option<std::path::PathBuf>,
}

/// [`run`] with [`RunOptions`].
pub fn run_with_options(scenario: &Scenario, options: &RunOptions) -> Result<SimResults, SimError> {
    let timeline = record_timeline(scenario)?;
    run_inner(scenario, timeline.as_ref(), options, None)
}

fn run_inner(
    scenario: &Scenario,
    timeline: Option<&world::vehicles::ChannelTimeline>,
    options: &RunOptions,
    progress: Option<&mut dyn FnMut(Time, u64)>,
) -> Result<SimResults, SimError> {
    logging::run_started(scenario);
    let r = run_built(scenario, timeline, options, progress);
    match &r {
        Ok(results) => logging::run_finished(results),
        Err(e) => logging::run_failed(e),
    }
    r
}

fn run_built(
    scenario: &Scenario,
    timeline: Option<&world::vehicles::ChannelTimeline>,
    options: &RunOptions,
    progress: Option<&mut dyn FnMut(Time, u64)>,
) -> Result<SimResults, SimError> {
    let mut sim = engine::build::build(scenario)?;
    if let Some(tl) = timeline {
        engine::vehicular::attach(&mut sim, scenario, tl)?;
    }
    if let Some(dir) = &options.pcap_dir {
        sim.capture_into(dir)?;
    }
    if let Some(dir) = &options.qlog_dir {
        let names: Vec<String> = scenario
            .model
            .flows
            .iter()
            .map(|f| f.name.clone())
            .collect();
        sim.trace_into(dir, &names)?;
    }
    let events = match progress {
        Some(p) => sim.run_observed(p)?,
        None => sim.run()?,
    };
    sim.close_capture()?;
    let mut results = sim.finish(scenario, events);
    if let Some(tl) = timeline {
        results.handover_multicast = engine::handover::run(scenario, tl)?;
    }
    Ok(results)
}
