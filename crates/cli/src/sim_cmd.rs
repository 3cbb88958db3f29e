//! `peregrine sim SCENARIO.toml [--set key=value]… [--out DIR]` and
//! `peregrine bench sim`: a thin layer over `peregrine_sim`.
//!
//! `sim` reads and validates the scenario (errors name the file, the
//! field and what is allowed), runs it, prints the summary table and
//! writes `DIR/summary.json` plus the CSVs (default `DIR`:
//! `sim-out/<scenario name>`). A failed run names its seed.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use peregrine_sim::{run as run_sim, Scenario};
use std::path::PathBuf;

/// Arguments of `peregrine sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// Override a field, e.g. `--set duration=5s --set flows.0.cc=bbr`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Where to write summary.json and the CSVs (default sim-out/<name>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print only the table; write nothing.
    #[arg(long)]
    no_write: bool,
}

/// Run `peregrine sim`.
pub fn run(args: SimArgs) -> Result<()> {
    let scenario = Scenario::from_file(&args.scenario, &args.set)?;
    let results = run_sim(&scenario)?;
    crate::out(&results.print_table())?;
    if !args.no_write {
        let dir = args
            .out
            .unwrap_or_else(|| PathBuf::from("sim-out").join(scenario.name()));
        results
            .write_to(&dir)
            .with_context(|| format!("cannot write results to {}", dir.display()))?;
        crate::out(&format!(
            "\nwrote {}/summary.json and CSVs\n",
            dir.display()
        ))?;
    }
    Ok(())
}

/// Arguments of `peregrine bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Simulated events per wall-second and wall time of a scenario
    /// (default: the embedded 100 s dumbbell), median of several runs.
    Sim {
        /// A scenario file instead of the embedded dumbbell.
        scenario: Option<PathBuf>,
        /// Runs to take the median of.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Overrides, as for `peregrine sim`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
}

/// The reference scenario, embedded so the benchmark runs anywhere.
const DUMBBELL: &str = include_str!("../../../scenarios/dumbbell.toml");

/// Run `peregrine bench`.
pub fn bench(args: BenchArgs) -> Result<()> {
    let BenchCommand::Sim {
        scenario,
        runs,
        set,
    } = args.command;
    let scenario = match scenario {
        Some(p) => Scenario::from_file(&p, &set)?,
        None => Scenario::from_toml_str(DUMBBELL, "scenarios/dumbbell.toml (embedded)", &set)?,
    };
    let mut walls = Vec::new();
    let mut events = 0;
    for i in 0..runs.max(1) {
        // Benchmarks measure the machine's wall clock on purpose; the
        // simulation itself never reads it.
        #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
        let t0 = std::time::Instant::now();
        let r = run_sim(&scenario)?;
        #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
        let wall = t0.elapsed().as_secs_f64();
        events = r.events;
        crate::out(&format!(
            "run {}: {} events in {:.3} s wall ({:.0} events/s)\n",
            i + 1,
            r.events,
            wall,
            r.events as f64 / wall
        ))?;
        walls.push(wall);
    }
    walls.sort_by(f64::total_cmp);
    let median = walls[walls.len() / 2];
    crate::out(&format!(
        "\n{}: {} s simulated, {} events; median wall time {:.3} s over {} runs = {:.0} simulated events per wall-second ({:.0}x real time)\n",
        scenario.name(),
        scenario.model.duration_ns as f64 / 1e9,
        events,
        median,
        walls.len(),
        events as f64 / median,
        scenario.model.duration_ns as f64 / 1e9 / median,
    ))
}
