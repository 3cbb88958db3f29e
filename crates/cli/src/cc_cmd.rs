//! `peregrine cc list|trace|plot` and the default showcase table.

use clap::{Args, Subcommand};

/// Arguments of `peregrine cc`.
#[derive(Args, Debug)]
pub struct CcArgs {
    #[command(subcommand)]
    command: CcCommand,
}

#[derive(Subcommand, Debug)]
enum CcCommand {
    /// Print the registered controller names, one per line.
    List,
}

/// Run `peregrine cc`.
pub fn run(args: CcArgs) -> anyhow::Result<()> {
    match args.command {
        CcCommand::List => {
            for name in peregrine_cc::NAMES {
                println!("{name}");
            }
            Ok(())
        }
    }
}

/// `peregrine` with no arguments.
pub fn default_showcase() -> anyhow::Result<()> {
    Ok(())
}
