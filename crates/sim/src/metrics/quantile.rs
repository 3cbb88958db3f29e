//! The one quantile helper of the project: which element of a sorted
//! sample a quantile names.
//!
//! Two rules are in use, and each published table keeps its own, because
//! changing the rule changes the numbers:
//!
//! * [`QuantileMethod::NearestRank`] — the simulator's summaries
//!   (`summary.json` delay and latency percentiles, the histogram's
//!   quantiles): the smallest value with at least `⌈q·n⌉` values at or
//!   below it (rank clamped to `1..=n`).
//! * [`QuantileMethod::RoundedIndex`] — the laboratory's message-latency
//!   tables and `peregrine perf`: the value at 0-based index
//!   `round((n − 1)·q)` (ties away from zero).
//!
//! Neither interpolates, so every quantile is a value of the sample.

/// How a quantile picks its element among `n` sorted values.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QuantileMethod {
    /// 1-based rank `⌈q·n⌉`, clamped to `1..=n`.
    NearestRank,
    /// 0-based index `round((n − 1)·q)`, clamped to `0..n`.
    RoundedIndex,
}

impl QuantileMethod {
    /// The 0-based index of the `q`-quantile (`q` clamped to 0–1) among
    /// `n` sorted values, or `None` when `n == 0`. O(1).
    pub fn index(self, n: u64, q: f64) -> Option<u64> {
        let last = n.checked_sub(1)?;
        let q = q.clamp(0.0, 1.0);
        Some(match self {
            QuantileMethod::NearestRank => ((q * n as f64).ceil() as u64).clamp(1, n) - 1,
            QuantileMethod::RoundedIndex => ((last as f64 * q).round() as u64).min(last),
        })
    }
}

/// The `q`-quantile (0–1, clamped) of `sorted` (ascending) by `method`,
/// or `None` for an empty slice. O(1).
pub fn quantile<T: Copy>(sorted: &[T], q: f64, method: QuantileMethod) -> Option<T> {
    let i = method.index(sorted.len() as u64, q)?;
    sorted.get(usize::try_from(i).ok()?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use QuantileMethod::{NearestRank, RoundedIndex};

    #[test]
    fn published_examples() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5, NearestRank), Some(50));
        assert_eq!(quantile(&v, 0.95, NearestRank), Some(95));
        assert_eq!(quantile(&v, 1.0, NearestRank), Some(100));
        let f: Vec<f64> = (1..=100).map(f64::from).collect();
        // `peregrine perf`'s p50 and p99 of 1..=100.
        assert_eq!(quantile(&f, 0.5, RoundedIndex), Some(51.0));
        assert_eq!(quantile(&f, 0.99, RoundedIndex), Some(99.0));
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.95, RoundedIndex), Some(5.0));
        assert_eq!(quantile(&[2.0, 4.0], 0.5, RoundedIndex), Some(4.0));
        assert_eq!(quantile::<u64>(&[], 0.5, NearestRank), None);
        assert_eq!(quantile::<f64>(&[], 0.5, RoundedIndex), None);
    }

    fn method() -> impl Strategy<Value = QuantileMethod> {
        prop_oneof![Just(NearestRank), Just(RoundedIndex)]
    }

    proptest! {
        /// The definitions, checked against their textbook form.
        #[test]
        fn matches_the_definitions(mut v in prop::collection::vec(0u64..1000, 1..200),
                                   q in 0.0f64..=1.0) {
            v.sort_unstable();
            let n = v.len();
            let nr = quantile(&v, q, NearestRank).unwrap();
            // The smallest value with at least ⌈q·n⌉ (≥ 1) values at or below it.
            let need = ((q * n as f64).ceil() as usize).max(1);
            let smallest = *v.iter().find(|x| v.iter().filter(|y| *y <= *x).count() >= need).unwrap();
            prop_assert_eq!(nr, smallest);
            let ri = quantile(&v, q, RoundedIndex).unwrap();
            prop_assert_eq!(ri, v[((n - 1) as f64 * q).round() as usize]);
        }

        /// Monotone in q, a member of the sample, min at 0 and max at 1;
        /// q outside 0–1 is clamped.
        #[test]
        fn monotone_and_bounded(mut v in prop::collection::vec(any::<i32>(), 1..100),
                                a in -0.5f64..1.5, b in -0.5f64..1.5, m in method()) {
            v.sort_unstable();
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let (x, y) = (quantile(&v, lo, m).unwrap(), quantile(&v, hi, m).unwrap());
            prop_assert!(x <= y);
            prop_assert!(v.contains(&x));
            prop_assert_eq!(quantile(&v, 0.0, m), v.first().copied());
            prop_assert_eq!(quantile(&v, 1.0, m), v.last().copied());
            prop_assert_eq!(quantile(&v, lo, m), quantile(&v, lo.clamp(0.0, 1.0), m));
        }
    }
}
