//! `peregrine reproduce …`: rerun a seed paper's experiment in the
//! laboratory and write a report beside its published numbers.
//!
//! Each reproduction is one subcommand in its own module; this file only
//! holds the group, so adding one is a two-line change.

use clap::{Args, Subcommand};

pub mod fanet;
mod fanet_report;

/// `peregrine reproduce`.
#[derive(Args, Debug)]
pub struct ReproduceArgs {
    #[command(subcommand)]
    what: Reproduction,
}

#[derive(Subcommand, Debug)]
enum Reproduction {
    /// Seed 001: 13 controllers in a 10-UAV swarm over 802.11b (issue 10).
    Fanet(fanet::FanetArgs),
}

/// Run the chosen reproduction.
pub fn run(args: ReproduceArgs) -> anyhow::Result<()> {
    match args.what {
        Reproduction::Fanet(a) => fanet::run(a),
    }
}
