//! The `peregrine` command. A thin layer: every subcommand parses its
//! arguments, calls a library and prints.

use clap::{Parser, Subcommand};
use std::io::Write as _;
use std::process::ExitCode;

mod cc_cmd;
mod emu_cmd;
mod figure_args;
mod keygen_cmd;
mod logging;
mod perf_out;
mod progress;
mod qlog_cmd;
mod reproduce;
mod sim_cmd;
mod sim_progress;
mod sweep_cmd;
mod tunnel_cmd;
mod wire_cmd;

/// Peregrine: a transport for things that move, and a laboratory to study it.
#[derive(Parser, Debug)]
#[command(name = "peregrine", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The congestion-controller lab: list, trace and plot controllers.
    Cc(cc_cmd::CcArgs),
    /// Encode and decode SLTP datagrams.
    Wire(wire_cmd::WireArgs),
    /// Run one simulation scenario (TOML) and write its results.
    #[command(after_help = peregrine_sim::world::link_registry::help_text())]
    Sim(sim_cmd::SimArgs),
    /// Benchmarks: `peregrine bench sim`, `peregrine bench endpoint`.
    Bench(sim_cmd::BenchArgs),
    /// Write a static keypair (FILE, FILE.pub) or a fleet pre-shared key (--psk).
    Keygen(keygen_cmd::KeygenArgs),
    /// Measure Peregrine over real UDP (iperf-like server and client).
    Perf(peregrine_perf::PerfArgs),
    /// Carry local UDP and TCP ports over prioritized streams (`tunnel server`, `tunnel client -L …`).
    Tunnel(tunnel_cmd::TunnelArgs),
    /// Run a command over an emulated link (the simulator's link model, live, in a network namespace).
    Emu(emu_cmd::EmuArgs),
    /// Read qlog files: `peregrine qlog plot FILE` draws the congestion view.
    Qlog(qlog_cmd::QlogArgs),
    /// Rerun a seed paper's experiments: `peregrine reproduce quic-sched`, `sltp`, ….
    Reproduce(reproduce::ReproduceArgs),
    /// Background CPU load for `reproduce sltp` (one duty-cycled busy loop).
    #[command(hide = true)]
    Hog(reproduce::HogArgs),
}

/// Counts live heap bytes only while a benchmark enables it
/// (`peregrine bench endpoint`'s KiB per connection); otherwise one
/// relaxed load per allocation.
#[global_allocator]
static ALLOC: peregrine_lab::bench::alloc::CountingAlloc =
    peregrine_lab::bench::alloc::CountingAlloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init();
    let result = match cli.command {
        None => showcase(),
        Some(Command::Cc(args)) => cc_cmd::run(args),
        Some(Command::Wire(args)) => wire_cmd::run(args),
        Some(Command::Sim(args)) => sim_cmd::run(args),
        Some(Command::Bench(args)) => sim_cmd::bench(args),
        Some(Command::Keygen(args)) => keygen_cmd::run(args),
        Some(Command::Perf(args)) => perf_out::run(args),
        Some(Command::Emu(args)) => emu_cmd::run(args),
        Some(Command::Tunnel(args)) => tunnel_cmd::run(args),
        Some(Command::Qlog(args)) => qlog_cmd::run(args),
        Some(Command::Reproduce(args)) => reproduce::run(args),
        Some(Command::Hog(args)) => reproduce::hog(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that went away (`peregrine cc trace cubic | head`) is not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, naming the problem; the chain of causes joined with ": ".
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `peregrine` with no arguments: the showcase (`peregrine_lab::showcase`).
fn showcase() -> anyhow::Result<()> {
    let o = peregrine_lab::showcase::run(std::path::Path::new("out/showcase"))?;
    out(&o.console)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Write `text` to standard output, reporting (not panicking on) a closed pipe.
pub fn out(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}
