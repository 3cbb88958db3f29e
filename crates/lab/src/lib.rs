//! # peregrine-lab — the laboratory
//!
//! Experiments above the simulator (`peregrine_sim`): each seed paper's
//! reproduction as library code, the showcases, sweeps written to a
//! directory, and the reports (Markdown with SVG charts) rendered from
//! their results. The `peregrine` command is a thin layer over this
//! crate: it parses arguments, draws progress bars and prints.
//!
//! Every experiment has the same shape: an options struct (the plan's
//! size and where to write), a `run(options, progress)` function taking a
//! [`Progress`] sink, and a typed outcome (the summary written to
//! `summary.json`, the report's path and the text the command prints).
//!
//! * [`reproduce`]: `quic_sched` (seed 002), `fanet` (seed 001),
//!   `mmwave_cvn` (seed 004), `sltp` (seed 003, real sockets).
//! * [`showcase`]: the drone-control showcase of `cargo run --release`.
//! * [`cclab`]: the controller lab's table, showcase report and plots.
//! * [`bench`]: `peregrine bench endpoint`, one server endpoint with
//!   thousands of connections in virtual time.
//! * [`experiment`]: the sweep engine — grids over scenario fields and
//!   seeds run across cores ([`experiment::run_sweep`]), aggregated with
//!   95 % confidence intervals. It moved here from `peregrine-sim`, which
//!   is the engine and its models only.
//! * [`sweep`]: a scenario sweep written to a directory with its report;
//!   [`sweep_backend`]: its runs on this machine or a Ray cluster, kept
//!   when interrupted and resumed.
//! * [`report`], [`charts`], [`published`]: Markdown reports, SVG charts
//!   and the seed papers' published numbers.
//!
//! Dependencies: `cc ← proto ← sim ← lab ← cli`.

#![warn(missing_docs)]

pub mod bench;
pub mod cclab;
pub mod charts;
pub mod experiment;
pub mod keyed;
pub mod netns;
pub mod parquet;
pub mod plan;
pub mod plot;
pub mod progress;
pub mod published;
pub mod qlog_plot;
pub mod registry;
pub mod report;
pub mod reproduce;
pub mod showcase;
pub mod sim_plots;
pub mod sweep;
pub mod sweep_backend;

pub use keyed::Keyed;
pub use progress::{Progress, Silent};

/// Write `text` to `dir/name`; the path written.
pub(crate) fn write_file(
    dir: &std::path::Path,
    name: &str,
    text: &str,
) -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context as _;
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
