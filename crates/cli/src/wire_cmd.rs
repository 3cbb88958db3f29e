//! `peregrine wire encode|decode` (filled in by the wire-format work).

use clap::{Args, Subcommand};

/// Arguments of `peregrine wire`.
#[derive(Args, Debug)]
pub struct WireArgs {
    #[command(subcommand)]
    command: WireCommand,
}

#[derive(Subcommand, Debug)]
enum WireCommand {
    /// Decode one datagram given as hex and print it as JSON.
    Decode {
        /// The datagram, hex.
        hex: String,
    },
    /// Encode one datagram given as JSON and print it as lower-case hex.
    Encode {
        /// The datagram, JSON.
        json: String,
    },
}

/// Run `peregrine wire`.
pub fn run(args: WireArgs) -> anyhow::Result<()> {
    match args.command {
        WireCommand::Decode { .. } | WireCommand::Encode { .. } => {
            anyhow::bail!("peregrine wire is not implemented yet")
        }
    }
}
