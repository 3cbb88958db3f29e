//! Running a sweep: every (grid point, seed) across cores.
//!
//! [`run_sweep`] builds one document per run — the base document without
//! its `[sweep]` table, the point's overrides applied with
//! [`set_path`], and the top-level [`SEED_KEY`] set to the run's seed —
//! and hands it to a caller-given closure (the engine, or a toy in tests)
//! that returns the run's JSON summary.
//!
//! **Seeds**: the base seed is the document's `seed` (a non-negative
//! integer; [`DEFAULT_BASE_SEED`] if absent) and the i-th run of every
//! point has seed `base_seed + i`, i = 0 .. seeds. Every point sees the
//! same seeds, so differences between points are not differences of
//! luck (common random numbers).
//!
//! **Determinism**: the runs go on a rayon pool of `threads` threads, and
//! the results are gathered by index, so they come back in (point, seed)
//! order whatever the order of completion or the thread count. If runs
//! fail, every run still completes and the *first failing run in (point,
//! seed) order* is reported, with its point label, seed and the number of
//! failed runs: the same error for any thread count.

use super::spec::{SpecError, SweepPoint, SweepSpec};
use peregrine_sim::scenario::overrides::{set_path, OverrideError};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use thiserror::Error;
use toml::Value;

/// The top-level document key that carries a run's seed.
pub const SEED_KEY: &str = "seed";

/// The base seed when the document has no `seed`.
pub const DEFAULT_BASE_SEED: u64 = 1;

/// Why a sweep could not run. `E` is the run closure's error.
#[derive(Debug, Error)]
pub enum SweepError<E> {
    /// The sweep specification is invalid.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The document's `seed` is not a non-negative integer, or the last
    /// seed does not fit a TOML integer.
    #[error("`{SEED_KEY}` must be an integer from 0 to {max}, found {found}")]
    BaseSeed {
        /// The largest base seed usable with this many seeds.
        max: i64,
        /// What the document has.
        found: String,
    },
    /// A grid point's override does not apply to the document.
    #[error("sweep point `{point}`: {error}")]
    Override {
        /// The point's label.
        point: String,
        /// Why the override failed (names the key).
        error: OverrideError,
    },
    /// A run failed (the first in (point, seed) order).
    #[error("run of sweep point `{point}` with seed {seed} failed ({failed} of {total} runs failed): {error}")]
    Run {
        /// The point's label.
        point: String,
        /// The run's seed.
        seed: u64,
        /// How many runs failed in all.
        failed: usize,
        /// How many runs there were.
        total: usize,
        /// The closure's error.
        error: E,
    },
    /// The thread pool could not be built.
    #[error("cannot start the sweep's thread pool: {0}")]
    ThreadPool(String),
}

/// Every run's result, in (point, seed) order: by default its summary
/// (`summary.json`'s value, what [`super::aggregate()`] reads); an
/// experiment that keeps typed results per run chooses its own `T`.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOutcome<T = serde_json::Value> {
    /// The sweep that was run.
    pub spec: SweepSpec,
    /// Its points, in order.
    pub points: Vec<SweepPoint>,
    /// The seed of run 0 of every point.
    pub base_seed: u64,
    /// `runs[point][i]`: the result of the point's run with seed
    /// `base_seed + i`.
    pub runs: Vec<Vec<T>>,
}

impl<T> SweepOutcome<T> {
    /// The seed of run `i` of every point.
    pub fn seed(&self, i: usize) -> u64 {
        self.base_seed + i as u64
    }
}

/// The base seed of a document: its `seed`, or [`DEFAULT_BASE_SEED`].
/// `seeds` runs must fit: `seed + seeds - 1` is at most `i64::MAX`.
pub fn base_seed<E>(doc: &Value, seeds: u32) -> Result<u64, SweepError<E>> {
    let max = i64::MAX - i64::from(seeds.saturating_sub(1));
    match doc.get(SEED_KEY) {
        None => Ok(DEFAULT_BASE_SEED),
        Some(Value::Integer(n)) if (0..=max).contains(n) => Ok(*n as u64),
        Some(other) => Err(SweepError::BaseSeed {
            max,
            found: other.to_string(),
        }),
    }
}

/// Run `spec` over `base` on `threads` threads (0: one per core).
///
/// `run(doc, seed)` gets the run's whole document (overrides and seed
/// applied, `[sweep]` removed) and its seed; `progress(done, total)` is
/// called after each run, from the worker threads. A run returns any
/// `T` (its summary as JSON for [`super::aggregate()`], or a typed result).
/// Cost: the runs, over `threads` cores.
pub fn run_sweep<T, E, F>(
    base: &Value,
    spec: &SweepSpec,
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
    run: F,
) -> Result<SweepOutcome<T>, SweepError<E>>
where
    T: Send,
    E: Send,
    F: Fn(&Value, u64) -> Result<T, E> + Sync,
{
    let base_seed = base_seed::<E>(base, spec.seeds)?;
    let points = spec.points();
    // One document per point, checked before any run starts.
    let mut stripped = base.clone();
    if let Value::Table(t) = &mut stripped {
        t.remove("sweep");
    }
    let mut docs = Vec::with_capacity(points.len());
    for p in &points {
        let mut d = stripped.clone();
        for (key, value) in &p.overrides {
            set_path(&mut d, key, value.clone()).map_err(|error| SweepError::Override {
                point: p.label.clone(),
                error,
            })?;
        }
        docs.push(d);
    }
    let seeds = spec.seeds as usize;
    let total = points.len() * seeds;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("sweep-{i}"))
        .build()
        .map_err(|e| SweepError::ThreadPool(e.to_string()))?;
    let done = AtomicUsize::new(0);
    let results: Vec<Result<T, E>> = pool.install(|| {
        (0..total)
            .into_par_iter()
            .map(|j| {
                let (point, i) = (j / seeds, j % seeds);
                let seed = base_seed + i as u64;
                let mut doc = docs[point].clone();
                if let Value::Table(t) = &mut doc {
                    // base_seed() checked that every seed fits an i64.
                    t.insert(SEED_KEY.to_string(), Value::Integer(seed as i64));
                }
                let r = run(&doc, seed);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                r
            })
            .collect()
    });
    let failed = results.iter().filter(|r| r.is_err()).count();
    let mut runs: Vec<Vec<T>> = Vec::with_capacity(points.len());
    for (j, r) in results.into_iter().enumerate() {
        let (point, i) = (j / seeds, j % seeds);
        match r {
            Ok(summary) => {
                if i == 0 {
                    runs.push(Vec::with_capacity(seeds));
                }
                if let Some(row) = runs.last_mut() {
                    row.push(summary);
                }
            }
            Err(error) => {
                return Err(SweepError::Run {
                    point: points[point].label.clone(),
                    seed: base_seed + i as u64,
                    failed,
                    total,
                    error,
                })
            }
        }
    }
    Ok(SweepOutcome {
        spec: spec.clone(),
        points,
        base_seed,
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    fn doc(text: &str) -> Value {
        Value::Table(text.parse::<toml::Table>().expect("test TOML is valid"))
    }

    /// A toy "engine": reads the overridden fields and the seed.
    fn toy(d: &Value, seed: u64) -> Result<serde_json::Value, String> {
        let rate = d["rate"].as_integer().ok_or("rate")?;
        let cc = d["flows"][0]["cc"].as_str().ok_or("cc")?.to_string();
        assert!(d.get("sweep").is_none(), "the [sweep] table is removed");
        assert_eq!(d[SEED_KEY].as_integer(), Some(seed as i64));
        Ok(json!({ "cc": cc, "rate": rate, "seed": seed, "x": rate as f64 * 0.5 + seed as f64 }))
    }

    const BASE: &str = "seed = 40\nrate = 1\n[[flows]]\ncc = \"cubic\"\n";

    #[test]
    fn runs_every_point_and_seed_in_order() {
        let base = doc(BASE);
        let spec = SweepSpec::from_cli(
            &["rate=10,20".into(), "flows.0.cc=bbr,vegas".into()],
            Some(3),
        )
        .unwrap();
        let calls = Mutex::new(Vec::new());
        let out = run_sweep(
            &base,
            &spec,
            2,
            &|done, total| calls.lock().unwrap().push((done, total)),
            toy,
        )
        .unwrap();
        assert_eq!(out.base_seed, 40);
        assert_eq!(out.runs.len(), 4);
        assert!(out.runs.iter().all(|r| r.len() == 3));
        assert_eq!(
            out.runs[1][2],
            json!({"cc": "vegas", "rate": 10, "seed": 42, "x": 47.0})
        );
        assert_eq!(out.runs[2][0]["cc"], "bbr");
        assert_eq!(out.runs[2][0]["rate"], 20);
        assert_eq!(out.seed(2), 42);
        let mut calls = calls.into_inner().unwrap();
        calls.sort();
        assert_eq!(calls, (1..=12).map(|d| (d, 12)).collect::<Vec<_>>());
    }

    #[test]
    fn thread_count_does_not_change_results() {
        let base = doc(BASE);
        let spec = SweepSpec::from_cli(&["rate=1,2,3".into()], Some(5)).unwrap();
        let one = run_sweep(&base, &spec, 1, &|_, _| {}, toy).unwrap();
        let two = run_sweep(&base, &spec, 2, &|_, _| {}, toy).unwrap();
        assert_eq!(one, two);
    }

    #[test]
    fn first_failing_run_in_order_is_reported() {
        let base = doc(BASE);
        let spec = SweepSpec::from_cli(&["rate=1,2,3".into()], Some(4)).unwrap();
        let failing = |d: &Value, seed: u64| {
            if d["rate"].as_integer() >= Some(2) && seed >= 42 {
                Err(format!("boom at {seed}"))
            } else {
                toy(d, seed)
            }
        };
        for threads in [1, 2] {
            let err = run_sweep(&base, &spec, threads, &|_, _| {}, failing).unwrap_err();
            assert_eq!(
                err.to_string(),
                "run of sweep point `rate=2` with seed 42 failed (4 of 12 runs failed): boom at 42"
            );
        }
    }

    #[test]
    fn bad_override_and_bad_seed_are_named() {
        let spec = SweepSpec::from_cli(&["flows.5.cc=bbr".into()], None).unwrap();
        let err = run_sweep(&doc(BASE), &spec, 1, &|_, _| {}, toy).unwrap_err();
        assert!(
            err.to_string().contains("sweep point `flows.5.cc=bbr`"),
            "{err}"
        );
        assert!(err.to_string().contains("index 5 is out of range"), "{err}");
        let spec = SweepSpec::default();
        let err = run_sweep(&doc("seed = -1\n"), &spec, 1, &|_, _| {}, toy).unwrap_err();
        assert!(matches!(err, SweepError::BaseSeed { .. }), "{err}");
        let err = run_sweep(&doc("seed = \"x\"\n"), &spec, 1, &|_, _| {}, toy).unwrap_err();
        assert!(
            err.to_string().starts_with("`seed` must be an integer"),
            "{err}"
        );
        let spec = SweepSpec {
            grid: vec![],
            seeds: 2,
        };
        let big = format!("seed = {}\n", i64::MAX);
        assert!(matches!(
            run_sweep(&doc(&big), &spec, 1, &|_, _| {}, toy),
            Err(SweepError::BaseSeed { .. })
        ));
    }

    #[test]
    fn default_base_seed_when_absent() {
        let out = run_sweep(
            &doc("rate = 3\n[[flows]]\ncc = \"x\"\n"),
            &SweepSpec {
                grid: vec![],
                seeds: 2,
            },
            1,
            &|_, _| {},
            toy,
        )
        .unwrap();
        assert_eq!(out.base_seed, DEFAULT_BASE_SEED);
        assert_eq!(out.runs[0][1]["seed"], DEFAULT_BASE_SEED + 1);
        assert_eq!(out.points[0].label, "base");
    }
}
