//! The experiment registry: THE list of the laboratory's experiments (the
//! seed papers' reproductions in [`crate::reproduce`]).
//!
//! Python's `peregrine.reproduce(NAME)` runs them through [`run`], its
//! `experiments()` lists [`EXPERIMENTS`], and `peregrine reproduce`'s
//! subcommands are checked against it (crates/cli/tests/registry_recipe.rs).
//! Adding an experiment is one new module under `reproduce/` (an options
//! struct, `run(&options, &dyn Progress)`, a typed outcome with a
//! serialisable summary) and one entry here; the CLI's subcommand for it
//! carries its own flags (docs/architecture.md, "Adding an experiment").

use crate::reproduce::{aqm, fanet, mmwave_cvn, quic_sched};
use crate::Progress;
use std::path::PathBuf;

/// The options every simulated experiment takes (Python's keyword
/// arguments; the CLI's common flags).
#[derive(Clone, Debug)]
pub struct CommonOptions {
    /// The reduced run (`--quick`).
    pub quick: bool,
    /// Runs per case, where the experiment has seeds (`--seeds`).
    pub seeds: Option<u32>,
    /// Output folder; the results go to `out/NAME/`.
    pub out: PathBuf,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Seconds-long runs, for tests.
    pub tiny: bool,
    /// How the report says to rerun it.
    pub command: String,
}

/// What a run through the registry returns.
#[derive(Clone, Debug)]
pub struct Reproduced {
    /// The typed summary as JSON text (what `summary.json` holds).
    pub summary_json: String,
    /// The output folder (`out/NAME`).
    pub dir: PathBuf,
    /// The report written.
    pub report: PathBuf,
    /// What `peregrine reproduce NAME` prints.
    pub console: String,
}

/// A function that runs one experiment with the common options.
pub type RunFn = fn(&CommonOptions, &dyn Progress) -> anyhow::Result<Reproduced>;

/// One registered experiment.
#[derive(Clone, Copy, Debug)]
pub struct Experiment {
    /// Its name: `peregrine reproduce NAME`, `peregrine.reproduce("NAME")`.
    pub name: &'static str,
    /// One line: the seed paper and what is rerun.
    pub summary: &'static str,
    /// How to run it with the common options; `None` for an experiment
    /// that only the CLI runs (it needs the `peregrine` binary and the
    /// host's loopback: `sltp`).
    pub run: Option<RunFn>,
}

fn json(v: &impl serde::Serialize) -> anyhow::Result<String> {
    Ok(serde_json::to_string(v)?)
}

/// Every experiment, in the order `peregrine reproduce --help` lists them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "fanet",
        summary: "Seed 001: 13 controllers in a 10-UAV swarm over 802.11b",
        run: Some(|c, p| {
            let o = fanet::run(
                &fanet::Options {
                    quick: c.quick,
                    seeds: c.seeds,
                    out: c.out.clone(),
                    duration: c.tiny.then(|| "3s".to_string()),
                    threads: c.threads,
                    command: c.command.clone(),
                },
                p,
            )?;
            Ok(Reproduced {
                summary_json: json(&o.summary)?,
                dir: o.dir,
                report: o.report,
                console: o.console,
            })
        }),
    },
    Experiment {
        name: "quic-sched",
        summary: "Seed 002 (stream schedulers): Fig. 5, Table 1, the adaptive scheduler",
        run: Some(|c, p| {
            let o = quic_sched::run(
                &quic_sched::Options {
                    quick: c.quick,
                    full: false,
                    out: c.out.clone(),
                    threads: c.threads,
                    tiny: c.tiny,
                },
                p,
            )?;
            Ok(Reproduced {
                summary_json: json(&o.summary)?,
                dir: o.dir,
                report: o.report,
                console: o.console,
            })
        }),
    },
    Experiment {
        name: "mmwave-cvn",
        summary: "Seed 004 §4: RTW-TCP vs CUBIC, Compound and BBR on 28 GHz mmWave",
        run: Some(|c, p| {
            let o = mmwave_cvn::run(
                &mmwave_cvn::Options {
                    quick: c.quick,
                    out: c.out.clone(),
                    seeds: c.seeds,
                    threads: c.threads,
                    duration_s: c.tiny.then_some(2.0),
                },
                p,
            )?;
            Ok(Reproduced {
                summary_json: json(&o.summary)?,
                dir: o.dir,
                report: o.report,
                console: o.console,
            })
        }),
    },
    Experiment {
        name: "aqm",
        summary: "Issue 41: drop-tail/CoDel/FQ-CoDel/PIE/DualPI2 × Linux CUBIC/SLTP CUBIC/BBR/BBRv3/Prague, L4S beside classic",
        run: Some(|c, p| {
            let o = aqm::run(
                &aqm::Options {
                    quick: c.quick,
                    out: c.out.clone(),
                    seeds: c.seeds,
                    threads: c.threads,
                    duration_s: c.tiny.then_some(3.0),
                    command: c.command.clone(),
                },
                p,
            )?;
            Ok(Reproduced {
                summary_json: json(&o.summary)?,
                dir: o.dir,
                report: o.report,
                console: o.console,
            })
        }),
    },
    Experiment {
        name: "sltp",
        summary: "Seed 003 (SLTP) §VI: network time of Peregrine vs kernel TCP over loopback",
        run: None,
    },
];

/// The registry entry of `name`. O(experiments).
pub fn experiment(name: &str) -> Option<&'static Experiment> {
    EXPERIMENTS.iter().find(|e| e.name == name)
}

/// The names of the experiments [`run`] can run, in registry order.
pub fn runnable_names() -> Vec<&'static str> {
    EXPERIMENTS
        .iter()
        .filter(|e| e.run.is_some())
        .map(|e| e.name)
        .collect()
}

/// Run the experiment called `name` with the common options; an unknown
/// name, or one only the CLI runs, is an error naming the allowed ones.
pub fn run(
    name: &str,
    options: &CommonOptions,
    progress: &dyn Progress,
) -> anyhow::Result<Reproduced> {
    match experiment(name).and_then(|e| e.run) {
        Some(run) => run(options, progress),
        None => anyhow::bail!(
            "unknown reproduction {name:?} (allowed: {})",
            runnable_names().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_unknown_ones_are_refused_by_name() {
        let mut names: Vec<_> = EXPERIMENTS.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EXPERIMENTS.len());
        assert_eq!(
            runnable_names(),
            ["fanet", "quic-sched", "mmwave-cvn", "aqm"]
        );
        let opts = CommonOptions {
            quick: true,
            seeds: None,
            out: PathBuf::from("unused"),
            threads: 1,
            tiny: true,
            command: String::new(),
        };
        let e = run("sltp", &opts, &crate::progress::Silent).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown reproduction \"sltp\" (allowed: fanet, quic-sched, mmwave-cvn, aqm)"
        );
    }
}
