//! Per-seed values and paired comparisons between grid points.
//!
//! Every point of a sweep runs the same seeds (common random numbers), so
//! two points are best compared seed by seed: the gain of a scheduler
//! over round-robin is `1 − latency(s, seed) / latency(rr, seed)` for
//! each seed, then summarized with its confidence interval
//! ([`paired`]). Comparing the two means instead would fold the luck of
//! the seeds into the interval. [`values`] gives one point's per-seed
//! values of a key, in seed order, for box plots and CDFs.

use super::runner::SweepOutcome;
use super::stats::Summary;
use thiserror::Error;

/// Why a comparison could not be made.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CompareError {
    /// No grid point has this label.
    #[error("no sweep point is labelled `{0}`")]
    NoPoint(String),
    /// A run's summary has no number at the pointer.
    #[error("point `{point}`, seed {seed}: no number at `{pointer}`")]
    NoNumber {
        /// The point's label.
        point: String,
        /// The run's seed.
        seed: u64,
        /// The JSON pointer.
        pointer: String,
    },
    /// The comparison gave a NaN or infinite value (e.g. a division by 0).
    #[error("points `{a}` and `{b}`, seed {seed}: the comparison of `{pointer}` is not finite")]
    NotFinite {
        /// The first point.
        a: String,
        /// The second point.
        b: String,
        /// The run's seed.
        seed: u64,
        /// The JSON pointer.
        pointer: String,
    },
}

fn point_index(outcome: &SweepOutcome, label: &str) -> Result<usize, CompareError> {
    outcome
        .points
        .iter()
        .position(|p| p.label == label)
        .ok_or_else(|| CompareError::NoPoint(label.to_string()))
}

/// The number at `pointer` (RFC 6901) in each run of point `label`, in
/// seed order.
pub fn values(
    outcome: &SweepOutcome,
    label: &str,
    pointer: &str,
) -> Result<Vec<f64>, CompareError> {
    let p = point_index(outcome, label)?;
    outcome.runs[p]
        .iter()
        .enumerate()
        .map(|(i, run)| {
            run.pointer(pointer)
                .and_then(serde_json::Value::as_f64)
                .ok_or_else(|| CompareError::NoNumber {
                    point: label.to_string(),
                    seed: outcome.seed(i),
                    pointer: pointer.to_string(),
                })
        })
        .collect()
}

/// Summary over seeds of `f(value at a, value at b)` for the number at
/// `pointer` in points `a` and `b` (e.g. `|s, rr| 1.0 - s / rr`).
pub fn paired(
    outcome: &SweepOutcome,
    a: &str,
    b: &str,
    pointer: &str,
    f: impl Fn(f64, f64) -> f64,
) -> Result<Summary, CompareError> {
    let (va, vb) = (values(outcome, a, pointer)?, values(outcome, b, pointer)?);
    let mut out = Vec::with_capacity(va.len());
    for (i, (x, y)) in va.into_iter().zip(vb).enumerate() {
        let v = f(x, y);
        if !v.is_finite() {
            return Err(CompareError::NotFinite {
                a: a.to_string(),
                b: b.to_string(),
                seed: outcome.seed(i),
                pointer: pointer.to_string(),
            });
        }
        out.push(v);
    }
    // Every point has `seeds` >= 1 runs, so the sample is non-empty.
    Summary::of(&out).ok_or_else(|| CompareError::NoPoint(a.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{run_sweep, SweepSpec};
    use serde_json::json;

    fn outcome() -> SweepOutcome {
        let base = toml::Value::Table("sched = \"rr\"".parse().unwrap());
        let spec = SweepSpec::from_cli(&["sched=rr,abs".into()], Some(4)).unwrap();
        run_sweep(&base, &spec, 2, &|_, _| {}, |d, seed| {
            // Latency varies a lot by seed; ABS is always 20 % faster.
            let rr = 100.0 * seed as f64;
            let lat = if d["sched"].as_str() == Some("abs") {
                0.8 * rr
            } else {
                rr
            };
            Ok::<_, String>(json!({ "latency_ms": { "mean": lat }, "zero": 0 }))
        })
        .unwrap()
    }

    #[test]
    fn per_seed_values_and_paired_gain() {
        let o = outcome();
        assert_eq!(
            values(&o, "sched=rr", "/latency_ms/mean").unwrap(),
            [100.0, 200.0, 300.0, 400.0]
        );
        let gain = paired(&o, "sched=abs", "sched=rr", "/latency_ms/mean", |s, rr| {
            1.0 - s / rr
        })
        .unwrap();
        assert_eq!(gain.n, 4);
        assert!((gain.mean - 0.2).abs() < 1e-12);
        // Paired: the seeds' spread cancels out.
        assert!(gain.ci95.unwrap() < 1e-12);
    }

    #[test]
    fn errors_name_point_seed_and_pointer() {
        let o = outcome();
        assert_eq!(
            values(&o, "sched=edf", "/x").unwrap_err(),
            CompareError::NoPoint("sched=edf".into())
        );
        assert_eq!(
            values(&o, "sched=rr", "/missing").unwrap_err().to_string(),
            "point `sched=rr`, seed 1: no number at `/missing`"
        );
        let e = paired(&o, "sched=abs", "sched=rr", "/zero", |a, b| a / b).unwrap_err();
        assert!(
            e.to_string()
                .contains("seed 1: the comparison of `/zero` is not finite"),
            "{e}"
        );
    }
}
