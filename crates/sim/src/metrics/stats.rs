//! Small statistics helpers used by the summaries (quantiles are in
//! [`super::quantile`]).

/// Jain's fairness index (Σx)² / (n · Σx²); 1 for perfectly equal shares,
/// `None` for no flows or all zero.
pub fn jain_index(xs: &[f64]) -> Option<f64> {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        None
    } else {
        Some(s * s / (n * s2))
    }
}

/// Mean and population standard deviation.
pub fn mean_std(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    Some((m, v.sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_of_equal_and_unequal_shares() {
        assert_eq!(jain_index(&[2.0, 2.0, 2.0]), Some(1.0));
        let j = jain_index(&[1.0, 0.0]).expect("non-zero");
        assert!((j - 0.5).abs() < 1e-12);
        assert_eq!(jain_index(&[]), None);
    }
}
