//! Descriptive statistics of a sample and its 95 % confidence interval.
//!
//! The confidence interval of the mean is Student's t: half-width
//! `t(0.975, n − 1) · s / √n`, with `s` the sample standard deviation
//! (denominator n − 1). The quantile `t(0.975, ν)` comes from a table for
//! ν ≤ 30 (standard values to 7 significant digits) and, above, from the
//! Cornish–Fisher expansion of t around the normal quantile (Abramowitz &
//! Stegun 26.7.5), whose error there is below 1e-6. With one sample there
//! is no spread: `std` and `ci95` are `None`.
//!
//! The median of an even count is the mean of the two middle values.

/// `t(0.975, ν)` for ν = 1 ..= 30.
const T975: [f64; 30] = [
    12.706_205, 4.302_653, 3.182_446, 2.776_445, 2.570_582, 2.446_912, 2.364_624, 2.306_004,
    2.262_157, 2.228_139, 2.200_985, 2.178_813, 2.160_369, 2.144_787, 2.131_450, 2.119_905,
    2.109_816, 2.100_922, 2.093_024, 2.085_963, 2.079_614, 2.073_873, 2.068_658, 2.063_899,
    2.059_539, 2.055_529, 2.051_831, 2.048_407, 2.045_230, 2.042_272,
];

/// The 0.975 quantile of the standard normal distribution.
const Z975: f64 = 1.959_963_984_540_054;

/// The 0.975 quantile of Student's t with `dof` degrees of freedom
/// (`None` for 0 degrees of freedom).
pub fn t_975(dof: u64) -> Option<f64> {
    match dof {
        0 => None,
        1..=30 => Some(T975[dof as usize - 1]),
        _ => {
            let v = dof as f64;
            let z = Z975;
            let (z3, z5, z7, z9) = (z.powi(3), z.powi(5), z.powi(7), z.powi(9));
            let g1 = (z3 + z) / 4.0;
            let g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
            let g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
            let g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92160.0;
            Some(z + g1 / v + g2 / v.powi(2) + g3 / v.powi(3) + g4 / v.powi(4))
        }
    }
}

/// Summary statistics of a non-empty sample of finite numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Sample size.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); `None` for one sample.
    pub std: Option<f64>,
    /// Half-width of the 95 % confidence interval of the mean; `None` for
    /// one sample.
    pub ci95: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarize `values`, in any order; `None` if empty or if any value
    /// is not finite.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len();
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let (std, ci95) = if n >= 2 {
            let var = sorted.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let std = var.sqrt();
            let t = t_975(n as u64 - 1);
            (Some(std), t.map(|t| t * std / (n as f64).sqrt()))
        } else {
            (None, None)
        };
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Summary {
            n,
            mean,
            std,
            ci95,
            min: sorted[0],
            median,
            max: sorted[n - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_published_tables() {
        assert_eq!(t_975(0), None);
        assert!(close(t_975(1).unwrap(), 12.706, 1e-3));
        assert!(close(t_975(9).unwrap(), 2.262, 1e-3));
        assert!(close(t_975(29).unwrap(), 2.045, 1e-3));
        // Past the table: the expansion against published values.
        assert!(close(t_975(40).unwrap(), 2.021_075, 1e-5));
        assert!(close(t_975(60).unwrap(), 2.000_298, 1e-5));
        assert!(close(t_975(120).unwrap(), 1.979_930, 1e-5));
        assert!(close(t_975(1_000_000).unwrap(), Z975, 1e-5));
        // The expansion meets the table smoothly at the seam.
        assert!(close(t_975(31).unwrap(), 2.039_513, 1e-5));
    }

    #[test]
    fn summary_of_known_sample() {
        // 1..=10: mean 5.5, s = sqrt(55/6) = 3.02765, ci = 2.262157 * s / sqrt(10).
        let v: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let s = Summary::of(&v).unwrap();
        assert_eq!(s.n, 10);
        assert!(close(s.mean, 5.5, 1e-12));
        assert!(close(s.std.unwrap(), (55.0_f64 / 6.0).sqrt(), 1e-12));
        assert!(close(
            s.ci95.unwrap(),
            2.262_157 * (55.0_f64 / 6.0).sqrt() / 10f64.sqrt(),
            1e-9
        ));
        assert!(close(s.ci95.unwrap(), 2.1659, 1e-4));
        assert_eq!((s.min, s.median, s.max), (1.0, 5.5, 10.0));
        let odd = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(odd.median, 2.0);
    }

    #[test]
    fn degenerate_samples() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        let one = Summary::of(&[4.0]).unwrap();
        assert_eq!((one.n, one.mean, one.std, one.ci95), (1, 4.0, None, None));
        let same = Summary::of(&[2.0; 5]).unwrap();
        assert_eq!((same.std, same.ci95), (Some(0.0), Some(0.0)));
    }
}
