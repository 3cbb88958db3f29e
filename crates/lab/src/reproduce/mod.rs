//! The seed papers' experiments, rerun on the simulator (and, for SLTP,
//! on this machine's loopback), each writing a report with the published
//! numbers beside ours.
//!
//! Each experiment is a module with an options struct, a
//! `run(&options, &dyn Progress)` function and a typed outcome; adding one
//! is a module here, one entry in the experiment registry
//! ([`crate::registry::EXPERIMENTS`]) and a subcommand in the CLI's
//! `reproduce` (its flags, and one line that calls `run`).

pub mod fanet;
pub mod mmwave_cvn;
pub mod quic_sched;
pub mod sltp;

/// The command line as the user typed it, `peregrine` first (for the
/// reports' "how to rerun" lines).
pub fn command_line() -> String {
    std::iter::once("peregrine".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}
