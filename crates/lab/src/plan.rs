//! Running a typed plan: a list of points (each a typed description of
//! one set-up, turned into a [`peregrine_sim::scenario::ScenarioConfig`]
//! by the experiment) with `seeds` runs each, across cores.
//!
//! The runs go through the simulator's sweep runner
//! ([`crate::experiment::run_sweep`]) over the points' indexes, so
//! they inherit its guarantees: results in (point, seed) order whatever
//! the thread count, the i-th run of every point seeded `base_seed + i`
//! (common random numbers), and the first failing run in that order
//! reported with its point and seed.

use crate::experiment::{self, SweepOutcome, SweepSpec};
use anyhow::Context as _;

/// The grid key that carries a point's index through the sweep runner.
const POINT_KEY: &str = "point";

/// How a plan is run: seeds per point, the first seed, worker threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanRuns {
    /// Runs per point.
    pub seeds: u32,
    /// The seed of every point's first run (run `i` has `base_seed + i`).
    pub base_seed: u64,
    /// Worker threads (0: one per core). Results do not depend on it.
    pub threads: usize,
}

/// Run every point of `points` as `how` says, calling `progress(done,
/// total)` after each run (from the worker threads; the caller starts and
/// finishes its [`crate::Progress`] phase). `run(point, seed)` makes one
/// run and returns its typed record; `label(point)` names the point in
/// errors. `runs[p][i]` of the outcome is point `p`'s run with seed
/// `base_seed + i`. Cost: the runs, over `threads` cores.
pub fn run_plan<P, R, F>(
    points: &[P],
    how: PlanRuns,
    progress: &(dyn Fn(usize, usize) + Sync),
    label: impl Fn(&P) -> String + Sync,
    run: F,
) -> anyhow::Result<SweepOutcome<R>>
where
    P: Sync,
    R: Send,
    F: Fn(&P, u64) -> anyhow::Result<R> + Sync,
{
    let seed = i64::try_from(how.base_seed).context("the base seed must fit a TOML integer")?;
    let mut base = toml::Table::new();
    base.insert(experiment::SEED_KEY.into(), toml::Value::Integer(seed));
    base.insert(POINT_KEY.into(), toml::Value::Integer(0));
    let indexes = (0..points.len())
        .map(|i| i64::try_from(i).map(toml::Value::Integer))
        .collect::<Result<Vec<_>, _>>()
        .context("too many points")?;
    let spec = SweepSpec {
        grid: vec![(POINT_KEY.into(), indexes)],
        seeds: how.seeds,
    };
    let result = experiment::run_sweep(
        &toml::Value::Table(base),
        &spec,
        how.threads,
        progress,
        |doc, seed| -> anyhow::Result<R> {
            let p = doc
                .get(POINT_KEY)
                .and_then(toml::Value::as_integer)
                .and_then(|p| usize::try_from(p).ok())
                .and_then(|p| points.get(p))
                .context("the sweep runner lost a point's index")?;
            // One line: the sweep runner shows the error's Display only.
            run(p, seed).map_err(|e| anyhow::anyhow!("{}: {e:#}", label(p)))
        },
    );
    result.map_err(|e| anyhow::anyhow!("{e:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_come_back_by_point_and_seed_whatever_the_threads() {
        let points = ["a", "bb", "ccc"];
        for threads in [1, 2] {
            let how = PlanRuns {
                seeds: 3,
                base_seed: 10,
                threads,
            };
            let o = run_plan(
                &points,
                how,
                &|_, _| {},
                |p| p.to_string(),
                |p, seed| Ok(format!("{p}{seed}")),
            )
            .unwrap();
            assert_eq!(o.base_seed, 10);
            assert_eq!(o.runs[0], ["a10", "a11", "a12"]);
            assert_eq!(o.runs[2], ["ccc10", "ccc11", "ccc12"]);
        }
    }

    #[test]
    fn a_failing_run_names_its_point_and_seed() {
        let how = PlanRuns {
            seeds: 2,
            base_seed: 1,
            threads: 1,
        };
        let e = run_plan(
            &[1u32, 2],
            how,
            &|_, _| {},
            |p| format!("point {p}"),
            |p, seed| {
                anyhow::ensure!(!(*p == 2 && seed == 2), "boom");
                Ok(())
            },
        )
        .unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.contains("seed 2") && text.contains("point 2: boom"),
            "{text}"
        );
    }
}
