//! The quantile of the lab's per-message latency tables, kept as a name
//! only for `reproduce::quic_sched::fig5` (another change is moving that
//! module; it should call [`peregrine_sim::metrics::quantile`] with
//! [`QuantileMethod::RoundedIndex`] directly, and this module then goes).

use peregrine_sim::metrics::QuantileMethod;

/// The `q`-quantile (0–1) of `sorted` (ascending) by the rounded-index
/// rule ([`QuantileMethod::RoundedIndex`]: the element at index
/// `round((n − 1) · q)`), or `None` for an empty slice. O(1).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    peregrine_sim::metrics::quantile(sorted, q, QuantileMethod::RoundedIndex)
}
