//! The quantile the lab's tables use for per-message latencies.

/// The `q`-quantile (0–1) of `sorted` (ascending): the element at index
/// `round((n − 1) · q)`, or `None` for an empty slice. O(1).
///
/// This is not the nearest-rank percentile of the simulator's summaries
/// (`peregrine_sim::metrics::percentile`): the two are kept apart because
/// published reports were made with each, and changing either would
/// change their numbers.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let i = (last as f64 * q.clamp(0.0, 1.0)).round() as usize;
    sorted.get(i.min(last)).copied()
}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn rounds_the_index() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), Some(3.0));
        assert_eq!(quantile(&v, 0.95), Some(5.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&[2.0, 4.0], 0.5), Some(4.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
