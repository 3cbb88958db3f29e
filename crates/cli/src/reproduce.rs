//! `peregrine reproduce <experiment>`: the arguments of each seed paper's
//! reproduction, handed to `peregrine_lab::reproduce` with a progress bar;
//! the command prints what the experiment returns.
//!
//! Registering an experiment is an entry in the lab's experiment registry
//! (`peregrine_lab::registry::EXPERIMENTS`), and here a variant of
//! [`ReproduceCommand`] with its arguments and a match arm in [`run`]; its
//! logic lives in the lab. tests/registry_recipe.rs checks that the
//! subcommands are exactly the registry's experiments.

use crate::out;
use crate::progress::Bar;
use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use peregrine_lab::reproduce::{aqm, fanet, mmwave_cvn, quic_sched, sltp};
use std::path::PathBuf;

/// Arguments of `peregrine reproduce`.
#[derive(Args, Debug)]
pub struct ReproduceArgs {
    #[command(subcommand)]
    command: ReproduceCommand,
    /// Chart formats and size (`--format svg,pdf,png`, `--figure-size`).
    #[command(flatten)]
    figures: crate::figure_args::FigureArgs,
}

#[derive(Subcommand, Debug)]
enum ReproduceCommand {
    /// Seed 001: 13 controllers in a 10-UAV swarm over 802.11b.
    Fanet(FanetArgs),
    /// Seed 002 (stream schedulers): Fig. 5 box plot, Table 1 gains over
    /// RR, the adaptive scheduler over mmWave traces.
    QuicSched(QuicSchedArgs),
    /// Seed 004 §4: RTW-TCP vs CUBIC, Compound and BBR for connected
    /// vehicles on 28 GHz mmWave (rural/urban × Manhattan/random).
    MmwaveCvn(MmwaveCvnArgs),
    /// Issue 41: one 20 Mbit/s, 40 ms bottleneck under drop-tail, CoDel,
    /// FQ-CoDel, PIE and DualPI2 × Linux CUBIC (HyStart, TCP's delayed
    /// ACK), SLTP's CUBIC, BBR, BBRv3 and Prague, with a priority stream;
    /// and Prague beside Linux CUBIC in DualPI2.
    Aqm(AqmArgs),
    /// Seed 003 (SLTP) §VI: network time of Peregrine vs kernel TCP over
    /// loopback, 1 KiB to 1 MiB, at 0–100 % background CPU load, with the
    /// packet-pair probe's latency, bandwidth and burst.
    Sltp(SltpArgs),
}

/// Arguments of `peregrine reproduce quic-sched`.
#[derive(Args, Debug, Clone)]
struct QuicSchedArgs {
    /// Every Table 1 cell with fewer seeds and shorter runs, a reduced
    /// Fig. 5 and §4.3: under a minute.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// §4.3 with the seed's 1 GB per stream (long).
    #[arg(long)]
    full: bool,
    /// Output folder; the results go to DIR/quic-sched.
    #[arg(long, value_name = "DIR", default_value = "out")]
    out: PathBuf,
    /// Worker threads (0: one per core). Results do not depend on it.
    #[arg(long, value_name = "T", default_value_t = 0)]
    threads: usize,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
    /// A tiny run for tests (seconds in a debug build); implies --quick.
    #[arg(long, hide = true)]
    tiny: bool,
}

/// Arguments of `peregrine reproduce fanet`.
#[derive(Args, Debug, Clone)]
struct FanetArgs {
    /// 2 seeds of 30 s instead of N seeds of 100 s (under two minutes).
    #[arg(long)]
    quick: bool,
    /// Seeds per controller (default 10; 2 with --quick).
    #[arg(long)]
    seeds: Option<u32>,
    /// Output folder; the results go to DIR/fanet/.
    #[arg(long, default_value = "repro-out")]
    out: PathBuf,
    /// Simulated duration per run, e.g. `5s` (tests; default 100 s, 30 s with --quick).
    #[arg(long, hide = true)]
    duration: Option<String>,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Arguments of `peregrine reproduce mmwave-cvn`.
#[derive(Args, Debug, Clone)]
struct MmwaveCvnArgs {
    /// Urban/random only: bulk with perfect and absent hints, CBR at
    /// loads 0.6 and 1.0, 3 seeds of 10 s (under a minute).
    #[arg(long)]
    quick: bool,
    /// Output folder; the report goes to DIR/mmwave-cvn/.
    #[arg(long, default_value = "repro-out")]
    out: PathBuf,
    /// Runs per grid point (seeds 1, 2, …) for every part of the grid;
    /// figures are means with 95 % CIs. Default: 5 for the bulk comparison
    /// and the highway, 3 for the hint-mode grid and the load figure.
    #[arg(long)]
    seeds: Option<u32>,
    /// Worker threads (0: one per core). Results do not depend on it.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Simulated seconds per run (tests use a tiny one).
    #[arg(long, hide = true)]
    duration_s: Option<f64>,
}

/// Arguments of `peregrine reproduce aqm`.
#[derive(Args, Debug, Clone)]
struct AqmArgs {
    /// 2 seeds of 10 s per cell (under a minute in a debug build).
    #[arg(long)]
    quick: bool,
    /// Runs per cell (seeds 1, 2, …); figures are means with 95 % CIs.
    /// Default: 5 (2 with --quick).
    #[arg(long)]
    seeds: Option<u32>,
    /// Output folder; the report goes to DIR/aqm/.
    #[arg(long, default_value = "repro-out")]
    out: PathBuf,
    /// Worker threads (0: one per core). Results do not depend on it.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Simulated seconds per run (tests use a short one).
    #[arg(long, hide = true)]
    duration_s: Option<f64>,
}

/// A transport of `reproduce sltp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TransportArg {
    /// Peregrine over UDP, through `peregrine perf` echo mode.
    Peregrine,
    /// The kernel's TCP, through the in-process echo.
    Tcp,
}

/// Arguments of `peregrine reproduce sltp`.
#[derive(Args, Debug)]
struct SltpArgs {
    /// A short run (1, 16, 256 KiB and 1 MiB; one connection of 5 round
    /// trips per point), well under a minute.
    #[arg(long)]
    quick: bool,
    /// Output directory; everything goes to DIR/sltp/.
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Transports to measure (Peregrine needs `peregrine perf`).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "peregrine,tcp"
    )]
    transports: Vec<TransportArg>,
    /// Buffer sizes in bytes, comma-separated (default: powers of two from
    /// 1 KiB to 1 MiB).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<u64>,
    /// Background loads in percent, comma-separated (default 0,25,50,75,100).
    #[arg(long, value_delimiter = ',')]
    loads: Vec<u8>,
    /// Connections per point and transport (default 5; 1 with --quick).
    #[arg(long)]
    connections: Option<usize>,
    /// Round trips per connection (default 10; 5 with --quick).
    #[arg(long)]
    echoes: Option<usize>,
    /// The binary providing `perf` (default: this one). For tests.
    #[arg(long, hide = true)]
    perf_bin: Option<PathBuf>,
    /// Measure across a wire instead of loopback: servers and clients in two
    /// new network namespaces joined by a veth pair with a 1,500-byte MTU
    /// shaped to 1 Gbit/s each way by `tc tbf`, as on the seed's Ethernet
    /// (senders keep their segment offloads, as with a NIC; tbf cuts
    /// super-packets into frames). Needs root and iproute2 (`ip`, `tc`); the namespaces are
    /// deleted on exit, also on error or Ctrl-C.
    #[arg(long)]
    ethernet: bool,
}

/// Arguments of the hidden `peregrine hog`.
#[derive(Args, Debug)]
pub struct HogArgs {
    /// Fraction of each 10 ms period spent spinning, 0.0 ..= 1.0.
    #[arg(long)]
    duty: f64,
    /// Exit after this many seconds whatever happens.
    #[arg(long)]
    seconds: f64,
}

/// Run `peregrine reproduce`.
pub fn run(args: ReproduceArgs) -> anyhow::Result<()> {
    let figures = args.figures;
    figures.prepare()?;
    match args.command {
        ReproduceCommand::Fanet(a) => {
            let opts = fanet::Options {
                quick: a.quick,
                seeds: a.seeds,
                out: a.out,
                duration: a.duration,
                threads: a.threads,
                command: peregrine_lab::reproduce::command_line(),
            };
            let o = fanet::run(&opts, &Bar::new(a.quiet))?;
            out(&o.console)?;
            figures.export(&o.dir)
        }
        ReproduceCommand::QuicSched(a) => {
            let opts = quic_sched::Options {
                quick: a.quick,
                full: a.full,
                out: a.out,
                threads: a.threads,
                tiny: a.tiny,
            };
            let o = quic_sched::run(&opts, &Bar::new(a.quiet))?;
            out(&o.console)?;
            figures.export(&o.dir)
        }
        ReproduceCommand::MmwaveCvn(a) => {
            let opts = mmwave_cvn::Options {
                quick: a.quick,
                out: a.out,
                seeds: a.seeds,
                threads: a.threads,
                duration_s: a.duration_s,
            };
            let o = mmwave_cvn::run(&opts, &Bar::new(a.quiet))?;
            out(&o.console)?;
            figures.export(&o.dir)
        }
        ReproduceCommand::Aqm(a) => {
            let opts = aqm::Options {
                quick: a.quick,
                out: a.out,
                seeds: a.seeds,
                threads: a.threads,
                duration_s: a.duration_s,
                command: peregrine_lab::reproduce::command_line(),
            };
            let o = aqm::run(&opts, &Bar::new(a.quiet))?;
            out(&o.console)?;
            figures.export(&o.dir)
        }
        ReproduceCommand::Sltp(a) => run_sltp(a, &figures),
    }
}

fn run_sltp(a: SltpArgs, figures: &crate::figure_args::FigureArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot find the running peregrine binary")?;
    let opts = sltp::Options {
        quick: a.quick,
        out: a.out,
        transports: a
            .transports
            .iter()
            .map(|t| match t {
                TransportArg::Peregrine => sltp::report::Transport::Peregrine,
                TransportArg::Tcp => sltp::report::Transport::Tcp,
            })
            .collect(),
        sizes: a.sizes,
        loads: a.loads,
        connections: a.connections,
        echoes: a.echoes,
        perf_bin: a.perf_bin,
        command: peregrine_lab::reproduce::command_line(),
        ethernet: a.ethernet,
        ..sltp::Options::new(exe)
    };
    let o = sltp::run(&opts, &Bar::new(false))?;
    out(&format!("{}\n", o.report.display()))?;
    if let Some(dir) = o.report.parent() {
        figures.export(dir)?;
    }
    if !o.results.failures.is_empty() {
        eprintln!(
            "{} measurement(s) failed; see the report",
            o.results.failures.len()
        );
    }
    Ok(())
}

/// Run the hidden `peregrine hog` (background load for `reproduce sltp`).
pub fn hog(a: HogArgs) -> anyhow::Result<()> {
    sltp::hog::run(sltp::hog::HogArgs {
        duty: a.duty,
        seconds: a.seconds,
    })
}
