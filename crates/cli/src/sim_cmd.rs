//! `peregrine sim SCENARIO.toml [--set key=value]… [--out DIR] [--pcap DIR]
//! [--sweep key=v1,v2,…]… [--seeds N]`, `peregrine bench sim` and
//! `peregrine bench endpoint` (`peregrine_lab::bench::endpoint`): a thin
//! layer over `peregrine_sim`.
//!
//! `sim` reads and validates the scenario (errors name the file, the
//! field and what is allowed), runs it, prints the summary table and
//! writes `DIR/summary.json` plus the CSVs (default `DIR`:
//! `sim-out/<scenario name>`) and, unless `--no-plots`, the charts of
//! `peregrine_lab::sim_plots` in `DIR/plots/`. A failed run names its seed;
//! failed flows are flagged and the command fails when all failed.
//!
//! **Sweeps**: when the scenario has a `[sweep]` table or the command
//! line gives `--sweep`/`--seeds`, every (grid point, seed) is run in
//! parallel through [`peregrine_lab::sweep::run_sweep_to_dir`] (progress bar,
//! mean and 95 % CI per point) and `DIR` (default
//! `sim-out/<name>-sweep`) gets `sweep.csv`, `sweep.json`, `runs.jsonl`, `runs.parquet`,
//! `report.md` and `plots/`. The `--set` overrides apply to the base
//! document before the grid. `--backend ray [--ray-address ADDR]` runs
//! the grid on a Ray cluster and `--resume` finishes an interrupted
//! sweep ([`crate::sweep_cmd`]).

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use peregrine_lab::sweep::SweepOptions;
use peregrine_sim::scenario::ScenarioDocument;
use peregrine_sim::{run as run_sim, run_observed, RunOptions, Scenario};
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
    /// Print only the table; write nothing (but the --pcap captures, if asked).
    #[arg(long)]
    no_write: bool,
    /// Write one pcapng capture per link direction into DIR
    /// (`<link>.<up|down>.pcapng`): every datagram as it is offered to the
    /// link, simulated timestamps, IPv4/UDP headers with the nodes'
    /// addresses. Open with Wireshark and tools/wireshark/sltp.lua.
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    /// Write one qlog file (`.sqlog`, JSON-SEQ) per connection endpoint
    /// into DIR: packets, losses, congestion metrics, events; open in
    /// qvis or draw with `peregrine qlog plot`.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// Do not draw DIR/plots/ (throughput, cwnd and RTT per flow, latency
    /// CDF per stream).
    #[arg(long)]
    no_plots: bool,
    /// Sweep options (a sweep runs when any is given or the scenario has [sweep]).
    #[command(flatten)]
    sweep: SweepArgs,
    /// Where a sweep runs (local cores or Ray) and --resume.
    #[command(flatten)]
    backend: crate::sweep_cmd::BackendArgs,
    /// Chart formats and size (`--format svg,pdf,png`, `--figure-size`).
    #[command(flatten)]
    figures: crate::figure_args::FigureArgs,
}

/// Sweep options of `peregrine sim`.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepArgs {
    /// Sweep a scenario field over values: `key=v1,v2,…` (repeatable;
    /// dotted keys as for --set, e.g. `flows.0.cc=cubic,bbr`). Laid over the
    /// scenario's own [sweep.grid].
    #[arg(long = "sweep", value_name = "KEY=V1,V2,…")]
    pub sweep: Vec<String>,
    /// Runs per grid point, with seeds seed, seed+1, … (the scenario's
    /// `seed`, default 1). Overrides [sweep] seeds.
    #[arg(long, value_name = "N")]
    pub seeds: Option<u32>,
    /// Worker threads (0: one per core). Results do not depend on it.
    #[arg(long, value_name = "T", default_value_t = 0)]
    pub threads: usize,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Run `peregrine sim`.
pub fn run(args: SimArgs) -> Result<()> {
    let origin = args.scenario.display().to_string();
    // Read, parsed and overridden once: one run and a sweep both start here.
    let doc = ScenarioDocument::read(&args.scenario, &args.set)?;
    args.figures.prepare()?;
    let wants_sweep = !args.sweep.sweep.is_empty() || args.sweep.seeds.is_some() || doc.has_sweep();
    if wants_sweep {
        for (flag, given) in [
            ("--pcap", args.pcap.is_some()),
            ("--qlog", args.qlog.is_some()),
        ] {
            if given {
                anyhow::bail!(
                    "{flag} records one run; a sweep runs many: drop --sweep/--seeds (or the \
                     scenario's [sweep] table) or drop {flag}"
                );
            }
        }
        return run_sweep_cmd(&args, &origin, &doc);
    }
    let scenario = doc.scenario()?;
    let options = RunOptions {
        pcap_dir: args.pcap.clone(),
        qlog_dir: args.qlog.clone(),
    };
    let mut progress =
        crate::sim_progress::RunProgress::new(scenario.model.duration_ns, args.sweep.quiet);
    let results = run_observed(&scenario, &options, &mut |t, events| {
        progress.report(t, events)
    });
    progress.finish();
    let results = results?;
    if let Some(dir) = &args.pcap {
        eprintln!("wrote pcapng captures to {}", dir.display());
    }
    if let Some(dir) = &args.qlog {
        eprintln!("wrote qlog files to {}", dir.display());
    }
    crate::out(&results.print_table())?;
    // A run whose flows never connected or delivered nothing must not look
    // fine: say so on stderr, and fail the command when no flow worked.
    eprint!("{}", results.failure_warnings());
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
        if !args.no_plots {
            let plots = dir.join("plots");
            peregrine_lab::sim_plots::write_run_plots(&results, &plots)?;
            crate::out(&format!(
                "wrote {}/ (throughput, cwnd, RTT, latency CDF)\n",
                plots.display()
            ))?;
            args.figures.export(&plots)?;
        }
    }
    if results.all_flows_failed() {
        anyhow::bail!(
            "every flow failed ({} of {}): check the rates, delays and start times in {origin}",
            results.flows.len(),
            results.flows.len()
        );
    }
    Ok(())
}

/// `peregrine sim … --sweep …`: the grid in parallel (or on Ray), then
/// the sweep outputs.
fn run_sweep_cmd(args: &SimArgs, origin: &str, doc: &ScenarioDocument) -> Result<()> {
    let name = doc.name();
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("sim-out").join(format!("{name}-sweep")));
    let mut command = format!("`peregrine sim {origin}");
    for s in &args.set {
        command.push_str(&format!(" --set {s}"));
    }
    for s in &args.sweep.sweep {
        command.push_str(&format!(" --sweep {s}"));
    }
    if let Some(n) = args.sweep.seeds {
        command.push_str(&format!(" --seeds {n}"));
    }
    command.push('`');
    let description = format!("Scenario `{name}` ({origin}), run as {command}.");
    crate::sweep_cmd::run(
        &args.backend,
        &args.figures,
        doc.value(),
        origin,
        doc.base_dir(),
        &format!("Sweep of {name}"),
        &description,
        &SweepOptions {
            sweep: args.sweep.sweep.clone(),
            seeds: args.sweep.seeds,
            threads: args.sweep.threads,
        },
        args.sweep.quiet,
        &dir,
        |run_doc, _seed| Ok(run_sim(&doc.run_scenario(run_doc.clone())?)?.summary_json()),
    )
}

/// Arguments of `peregrine bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Simulated events per wall-second, wall time and peak RSS of a
    /// scenario (default: the embedded 100 s dumbbell), median of several
    /// runs (`peregrine_lab::bench::sim`).
    Sim {
        /// A scenario file instead of the embedded dumbbell.
        scenario: Option<PathBuf>,
        /// Runs to take the median of.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Overrides, as for `peregrine sim`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Print `{"scenario", "simulated_seconds", "events", "wall_seconds", "events_per_second", "real_time_factor", "peak_rss_bytes", "user_cpu_seconds", "runs": [{"events", "wall_seconds", "events_per_second"}, …]}`.
        #[arg(long)]
        json: bool,
    },
    /// One server endpoint with N connections, sans-IO in virtual time:
    /// handshake, 1 KiB each way, 60 s of keep-alives; wall time, µs and
    /// KiB per connection.
    Endpoint {
        /// Connection counts, one run each.
        #[arg(long, value_delimiter = ',', default_values_t = peregrine_lab::bench::endpoint::DEFAULT_CONNECTIONS)]
        connections: Vec<usize>,
        /// Print `{"runs": [{"connections", "seconds", "us_per_connection", "kib_per_connection"}, …]}`.
        #[arg(long)]
        json: bool,
    },
}

/// The reference scenario, embedded so the benchmark runs anywhere.
const DUMBBELL: &str = include_str!("../../../scenarios/dumbbell.toml");

/// Run `peregrine bench`.
pub fn bench(args: BenchArgs) -> Result<()> {
    let (scenario, runs, set, json) = match args.command {
        BenchCommand::Sim {
            scenario,
            runs,
            set,
            json,
        } => (scenario, runs, set, json),
        BenchCommand::Endpoint { connections, json } => return bench_endpoint(connections, json),
    };
    let scenario = match scenario {
        Some(p) => Scenario::from_file(&p, &set)?,
        None => Scenario::from_toml_str(DUMBBELL, "scenarios/dumbbell.toml (embedded)", &set)?,
    };
    if runs == 0 {
        anyhow::bail!("--runs must be at least 1");
    }
    let outcome = peregrine_lab::bench::sim::run(&scenario, runs, |i, r| {
        if !json {
            // Progress on stderr so that stdout stays one document.
            eprintln!(
                "run {}: {} events in {:.3} s wall ({:.0} events/s)",
                i + 1,
                r.events,
                r.wall_seconds,
                r.events_per_second
            );
        }
    })?;
    if json {
        crate::out(&format!("{}\n", serde_json::to_string(&outcome)?))
    } else {
        crate::out(&outcome.table())
    }
}

/// Run `peregrine bench endpoint` (the work is `peregrine_lab::bench::endpoint`).
fn bench_endpoint(connections: Vec<usize>, json: bool) -> Result<()> {
    use peregrine_lab::bench::endpoint;
    let outcome = endpoint::run(&endpoint::Options {
        connections,
        ..endpoint::Options::default()
    })?;
    if json {
        crate::out(&format!("{}\n", serde_json::to_string(&outcome)?))
    } else {
        crate::out(&outcome.table())
    }
}
