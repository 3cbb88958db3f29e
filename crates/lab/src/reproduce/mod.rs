//! The seed papers' experiments, rerun on the simulator (and, for SLTP,
//! on this machine's loopback), each writing a report with the published
//! numbers beside ours.
//!
//! Each experiment is a module with an options struct, a
//! `run(&options, &dyn Progress)` function and a typed outcome; adding one
//! is a module here, one entry in the experiment registry
//! ([`crate::registry::EXPERIMENTS`]) and a subcommand in the CLI's
//! `reproduce` (its flags, and one line that calls `run`).

pub mod aqm;
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

/// What a simulated reproduction prints when it is done: where it wrote,
/// and its runs, events and wall time (never written to a file, so the
/// outputs stay byte-deterministic).
pub fn console_line(
    report: &std::path::Path,
    dir: &std::path::Path,
    runs: usize,
    events: u64,
    wall_s: f64,
) -> String {
    format!(
        "wrote {} and {}/summary.json\n{} runs, {} events in {:.1} s wall ({:.0} events/s)\n",
        report.display(),
        dir.display(),
        runs,
        events,
        wall_s,
        events as f64 / wall_s.max(1e-9)
    )
}

/// The two ACK policies the reproductions report side by side (issue 39),
/// shared by `fanet` and `mmwave-cvn`: `summary.json`'s top level (the
/// `controllers` of fanet, the `scenarios` of mmwave-cvn) is
/// [`ack_policy::PRIMARY`], the other sits under `by_ack_policy.<name>`.
pub mod ack_policy {
    use crate::report::{Cell, Table};

    /// The policy of every table but the side-by-side one: SLTP's own.
    pub const PRIMARY: &str = "sltp";
    /// The seeds' transport: TCP's delayed ACK, under `by_ack_policy.tcp`.
    pub const TCP: &str = "tcp";

    /// `(tcp − sltp) ÷ |sltp|` of two means, in %, as a cell (missing if
    /// either mean is missing or the SLTP mean is 0).
    pub fn tcp_vs_sltp(sltp: Option<f64>, tcp: Option<f64>) -> Cell {
        sltp.zip(tcp)
            .filter(|(a, _)| *a != 0.0)
            .map_or(Cell::Missing, |(a, b)| {
                Cell::NumText(format!("{:+.2} %", 100.0 * (b - a) / a.abs()))
            })
    }

    /// The side-by-side table's legend: what `sltp` and `tcp` mean and
    /// how `tcp vs sltp` is computed.
    pub fn explain(t: &mut Table) -> &mut Table {
        t.explain(
            "sltp / tcp",
            "the receiver's ACK policy: SLTP's stretch ACKs (the other tables) or TCP's \
             delayed ACK (every second full-size packet, 40 ms timer: the seed's transport)",
        )
        .explain(
            "tcp vs sltp",
            "(tcp − sltp) ÷ sltp of the mean throughputs, %",
        )
        .explain("cells", "mean ± 95 % CI over seeds")
    }

    /// The section's opening sentences; `case` names what ran under both
    /// policies and `keys` where `summary.json` keeps each.
    pub fn intro(case: &str, keys: &str) -> String {
        format!(
            "Every other table runs SLTP's ACK policy. Here {case} also runs under TCP's \
             delayed ACK, the transport the seed measured, so the controller effect and the \
             ACK-policy effect can be told apart (`summary.json`: {keys})."
        )
    }
}
