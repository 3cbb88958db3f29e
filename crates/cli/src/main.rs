//! The `peregrine` command. A thin layer: every subcommand parses its
//! arguments, calls a library and prints.

use clap::{Parser, Subcommand};

mod cc_cmd;
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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        None => cc_cmd::default_showcase(),
        Some(Command::Cc(args)) => cc_cmd::run(args),
        Some(Command::Wire(args)) => wire_cmd::run(args),
    }
}
