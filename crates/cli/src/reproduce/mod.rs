//! `peregrine reproduce <experiment>`: one command per seed paper that
//! reruns its experiments on the simulator and writes a report with the
//! published numbers beside ours.
//!
//! Each experiment lives in its own module with an `Args` struct and a
//! `run` function; registering one is a variant of [`ReproduceCommand`]
//! and a match arm in [`run`].

use clap::{Args, Subcommand};

pub mod fanet;
mod fanet_report;
pub mod mmwave_cvn;
pub mod quic_sched;
mod quic_sched_adaptive;
mod quic_sched_fig5;
mod quic_sched_setups;

/// Arguments of `peregrine reproduce`.
#[derive(Args, Debug)]
pub struct ReproduceArgs {
    #[command(subcommand)]
    command: ReproduceCommand,
}

#[derive(Subcommand, Debug)]
enum ReproduceCommand {
    /// Seed 001: 13 controllers in a 10-UAV swarm over 802.11b.
    Fanet(fanet::FanetArgs),
    /// Seed 002 (stream schedulers): Fig. 5 box plot, Table 1 gains over
    /// RR, the adaptive scheduler over mmWave traces.
    QuicSched(quic_sched::QuicSchedArgs),
    /// Seed 004 §4: RTW-TCP vs CUBIC, Compound and BBR for connected
    /// vehicles on 28 GHz mmWave (rural/urban × Manhattan/random).
    MmwaveCvn(mmwave_cvn::MmwaveCvnArgs),
    /// Seed 003 (SLTP) §VI: network time of Peregrine vs kernel TCP over
    /// loopback, 1 KiB to 1 MiB, at 0–100 % background CPU load, with the
    /// packet-pair probe's latency, bandwidth and burst.
    Sltp(crate::reproduce_sltp::SltpArgs),
}

/// Run `peregrine reproduce`.
pub fn run(args: ReproduceArgs) -> anyhow::Result<()> {
    match args.command {
        ReproduceCommand::Fanet(a) => fanet::run(a),
        ReproduceCommand::QuicSched(a) => quic_sched::run(a),
        ReproduceCommand::MmwaveCvn(a) => mmwave_cvn::run(a),
        ReproduceCommand::Sltp(a) => crate::reproduce_sltp::run(a),
    }
}
