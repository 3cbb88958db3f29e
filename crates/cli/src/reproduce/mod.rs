//! `peregrine reproduce <experiment>`: the seeds' experiments, run in the
//! laboratory and written as a report beside the published findings.
//! Each experiment is one submodule with its own arguments.

use clap::{Args, Subcommand};

pub mod mmwave_cvn;

/// `peregrine reproduce …`.
#[derive(Args, Debug)]
pub struct ReproduceArgs {
    #[command(subcommand)]
    which: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// Seed 004 §4: RTW-TCP vs CUBIC, Compound and BBR for connected
    /// vehicles on 28 GHz mmWave (rural/urban × Manhattan/random).
    MmwaveCvn(mmwave_cvn::MmwaveCvnArgs),
}

/// Run the chosen reproduction.
pub fn run(args: ReproduceArgs) -> anyhow::Result<()> {
    match args.which {
        Which::MmwaveCvn(a) => mmwave_cvn::run(a),
    }
}
