//! The `peregrine` command. A thin layer: every subcommand parses its
//! arguments, calls a library and prints.

use clap::{Parser, Subcommand};
use std::io::Write as _;
use std::process::ExitCode;

mod cc_cmd;
// Experiment infrastructure (charts, Markdown reports, published numbers,
// sweeps with a progress bar): wired to `peregrine sim --sweep` and
// `peregrine reproduce` once the simulation engine lands; until then only
// their tests use them.
#[allow(dead_code, unused_imports)]
mod charts;
mod plot;
#[allow(dead_code)]
mod progress;
#[allow(dead_code)]
mod published;
#[allow(dead_code)]
mod report;
mod reproduce;
mod sim_cmd;
#[allow(dead_code)]
mod sweep_cli;
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
    Sim(sim_cmd::SimArgs),
    /// Benchmarks: `peregrine bench sim`.
    Bench(sim_cmd::BenchArgs),
    /// Reproduce a seed's experiment: `peregrine reproduce mmwave-cvn`.
    Reproduce(reproduce::ReproduceArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => cc_cmd::default_showcase(),
        Some(Command::Cc(args)) => cc_cmd::run(args),
        Some(Command::Wire(args)) => wire_cmd::run(args),
        Some(Command::Sim(args)) => sim_cmd::run(args),
        Some(Command::Bench(args)) => sim_cmd::bench(args),
        Some(Command::Reproduce(args)) => reproduce::run(args),
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
