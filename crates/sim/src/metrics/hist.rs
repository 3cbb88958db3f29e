//! A log-linear histogram for per-packet delays: bounded memory however
//! many packets a run carries (multi-gigabit runs carry millions), exact
//! count and mean, quantiles within 0.05 %.
//!
//! Values below 1024 have their own bucket; above, each power of two is
//! split into 1024 equal buckets, and a quantile reports the midpoint of
//! its bucket (relative error at most 1/2048).

use super::quantile::QuantileMethod;

/// Mantissa bits per power of two.
const BITS: u32 = 10;
const SUB: u64 = 1 << BITS;

/// Counts of `u64` values (nanoseconds) in log-linear buckets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogHistogram {
    counts: Vec<u64>,
    n: u64,
    sum: u128,
}

fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let m = (v >> (e - BITS)) & (SUB - 1);
    ((u64::from(e - BITS + 1) << BITS) + m) as usize
}

fn midpoint(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let e = (i >> BITS) as u32 + BITS - 1;
    let m = i & (SUB - 1);
    let width = 1u64 << (e - BITS);
    ((SUB + m) << (e - BITS)) + width / 2
}

impl LogHistogram {
    /// Count one value.
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.n += 1;
        self.sum += u128::from(v);
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The exact mean, or `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum as f64 / self.n as f64)
    }

    /// The `q`-quantile (0–1) by nearest rank
    /// ([`QuantileMethod::NearestRank`], as for a sorted sample), as its
    /// bucket's midpoint. O(buckets).
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let index = QuantileMethod::NearestRank.index(self.n, q)?;
        // The bucket holding the value of 0-based index `index`.
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > index {
                return Some(midpoint(i));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact_and_large_ones_within_a_twentieth_of_a_percent() {
        let mut h = LogHistogram::default();
        for v in 1..=1000u64 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), Some(500));
        assert_eq!(h.quantile(0.99), Some(990));
        assert_eq!(h.mean(), Some(500.5));
        let mut h = LogHistogram::default();
        let vals: Vec<u64> = (0..10_000u64).map(|i| 20_000_000 + i * 7_919).collect();
        for v in &vals {
            h.record(*v);
        }
        for q in [0.5, 0.95, 0.99] {
            let exact = crate::metrics::quantile(&vals, q, QuantileMethod::NearestRank)
                .expect("non-empty") as f64;
            let got = h.quantile(q).expect("non-empty") as f64;
            assert!((got / exact - 1.0).abs() < 5e-4, "q {q}: {got} vs {exact}");
        }
        assert_eq!(h.count(), 10_000);
    }

    proptest::proptest! {
        /// Below 1024 every value has its own bucket: the histogram's
        /// quantile is the sorted sample's, by the same rank rule.
        #[test]
        fn exact_buckets_agree_with_the_sorted_sample(
            mut v in proptest::collection::vec(0u64..1024, 1..300),
            q in 0.0f64..=1.0,
        ) {
            let mut h = LogHistogram::default();
            for x in &v {
                h.record(*x);
            }
            v.sort_unstable();
            proptest::prop_assert_eq!(
                h.quantile(q),
                crate::metrics::quantile(&v, q, QuantileMethod::NearestRank)
            );
        }
    }

    #[test]
    fn buckets_round_trip() {
        for v in [1023u64, 1024, 1025, 4096, 123_456_789, u64::MAX / 3] {
            let m = midpoint(index(v)) as f64;
            assert!(
                (m / v as f64 - 1.0).abs() <= 1.0 / 2048.0 + 1e-12,
                "{v} → {m}"
            );
        }
    }
}
