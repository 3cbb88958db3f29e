//! Order statistics for repeated timings: the report quotes medians (robust
//! to the odd descheduled round trip on a shared machine), with mean, min
//! and max beside them so the spread is visible.

use serde::Serialize;

/// The median of `samples`: the middle value, or the mean of the two middle
/// values for an even count; `None` when empty. Non-finite values are ignored
/// (they cannot come from a clock, so they are not measurements).
pub fn median(samples: &[f64]) -> Option<f64> {
    let sorted = sorted_finite(samples);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Mean of the finite values of `samples`; `None` when there are none.
pub fn mean(samples: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if finite.is_empty() {
        None
    } else {
        Some(finite.iter().sum::<f64>() / finite.len() as f64)
    }
}

fn sorted_finite(samples: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Summary of one set of repeated measurements (e.g. round-trip times in ms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of finite samples.
    pub count: usize,
    /// Median.
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarise `samples`; `None` when there is no finite sample.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let sorted = sorted_finite(samples);
        Some(Summary {
            count: sorted.len(),
            median: median(&sorted)?,
            mean: mean(&sorted)?,
            min: *sorted.first()?,
            max: *sorted.last()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.5]), Some(7.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn median_ignores_non_finite_and_resists_outliers() {
        assert_eq!(median(&[1.0, f64::NAN, 2.0, 3.0, f64::INFINITY]), Some(2.0));
        assert_eq!(median(&[f64::NAN]), None);
        // One descheduled round trip does not move the median.
        assert_eq!(median(&[1.0, 1.1, 0.9, 1.0, 250.0]), Some(1.0));
    }

    #[test]
    fn summary_of_samples() {
        let s = Summary::of(&[2.0, 8.0, 4.0, 6.0]).expect("four finite samples");
        assert_eq!(s.count, 4);
        assert_eq!(s.median, 5.0);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 8.0);
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(mean(&[1.0, 2.0, f64::NAN]), Some(1.5));
    }
}
