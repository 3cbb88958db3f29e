//! 802.11 DCF timing and the Bianchi collision probability.
//!
//! One frame exchange occupies the medium for
//! `DIFS + backoff + PLCP + (MAC header + body + FCS)/rate` and then either
//! `SIFS + ACK` (success) or an ACK timeout (collision or bit errors).
//! The backoff of the `i`-th attempt (0-based) is drawn uniformly from
//! `0..=CW_i` slots, `CW_i = min((CWmin+1)·2^i − 1, CWmax)`.
//!
//! **Collisions** use Bianchi's saturation model (G. Bianchi, "Performance
//! analysis of the IEEE 802.11 distributed coordination function", IEEE
//! JSAC 18(3), 2000, Eqs. 7 and 9): with `n` stations that always have a
//! frame to send, window `W = CWmin + 1` and `m` doubling stages, the
//! per-slot transmission probability `τ` and the conditional collision
//! probability `p` solve
//!
//! ```text
//! τ = 2 / (W + 1 + p·W·Σ_{k=0}^{m−1} (2p)^k),     p = 1 − (1 − τ)^(n−1)
//! ```
//!
//! (the first is Bianchi's Eq. 7 with the geometric sum written out, which
//! removes its removable singularity at `p = ½`). The fixed point is found
//! by bisection. `n − 1` is the number of *contenders* the engine counts
//! within carrier-sense range with a frame queued; treating them as
//! saturated over-estimates collisions at light load, which is the usual
//! price of this approximation. Hidden terminals are not modelled.

use super::WifiConfig;
use std::time::Duration;

/// ACK frame length, bytes (frame control, duration, RA, FCS).
pub const ACK_BYTES: usize = 14;

/// Time to send `bytes` at `rate_mbps` after the PLCP preamble and header
/// (`Duration::MAX` if that does not fit, e.g. a zero rate).
pub fn frame_time(cfg: &WifiConfig, bytes: usize, rate_mbps: f64) -> Duration {
    let body_us = (bytes as f64) * 8.0 / rate_mbps;
    Duration::try_from_secs_f64((cfg.preamble_us() + body_us) * 1e-6).unwrap_or(Duration::MAX)
}

/// `DIFS = SIFS + 2 · slot`.
pub fn difs(cfg: &WifiConfig) -> Duration {
    Duration::from_micros(cfg.sifs_us + 2 * cfg.slot_us)
}

/// `SIFS + ACK` at the basic rate: the tail of a successful exchange.
pub fn sifs_ack(cfg: &WifiConfig) -> Duration {
    Duration::from_micros(cfg.sifs_us) + frame_time(cfg, ACK_BYTES, cfg.basic_rate_mbps)
}

/// How long a sender waits for an ACK that does not come: SIFS, one slot
/// and the time the ACK would have taken.
pub fn ack_timeout(cfg: &WifiConfig) -> Duration {
    sifs_ack(cfg) + Duration::from_micros(cfg.slot_us)
}

/// Contention window of the `attempt`-th transmission (0-based), slots.
pub fn contention_window(cfg: &WifiConfig, attempt: u32) -> u32 {
    let w = u64::from(cfg.cw_min) + 1;
    let grown = w.checked_shl(attempt.min(20)).unwrap_or(u64::MAX) - 1;
    grown.min(u64::from(cfg.cw_max)) as u32
}

/// Number of backoff stages `m` with `CWmax + 1 = 2^m · (CWmin + 1)`
/// (rounded down when the two are not a power of two apart).
pub fn backoff_stages(cfg: &WifiConfig) -> u32 {
    let ratio = (f64::from(cfg.cw_max) + 1.0) / (f64::from(cfg.cw_min) + 1.0);
    ratio.log2().floor().max(0.0) as u32
}

/// Bianchi's conditional collision probability for `stations` saturated
/// stations (ourselves included) with window `w = CWmin + 1` and `m`
/// doubling stages. One station (or none) never collides.
pub fn bianchi_collision_probability(stations: usize, w: f64, m: u32) -> f64 {
    if stations <= 1 {
        return 0.0;
    }
    let others = (stations - 1) as f64;
    let tau = |p: f64| {
        let mut sum = 0.0;
        let mut term = 1.0;
        for _ in 0..m {
            sum += term;
            term *= 2.0 * p;
        }
        2.0 / (w + 1.0 + p * w * sum)
    };
    // g(p) = 1 − (1 − τ(p))^(n−1) − p falls from g(0) ≥ 0 to g(1) < 0.
    let g = |p: f64| 1.0 - (1.0 - tau(p)).powf(others) - p;
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if g(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bianchi_fixed_point_solves_both_equations_and_rises_with_contenders() {
        // m = 0 has a closed form: τ = 2/(W+1), p = 1 − (1 − τ)^(n−1).
        let p = bianchi_collision_probability(2, 32.0, 0);
        assert!((p - 2.0 / 33.0).abs() < 1e-9, "{p}");
        let p5 = bianchi_collision_probability(5, 32.0, 0);
        assert!((p5 - (1.0 - (1.0 - 2.0 / 33.0f64).powi(4))).abs() < 1e-9);
        // With doubling stages, check the residual of Bianchi's Eq. 7 and 9.
        for n in [2usize, 5, 10, 20] {
            let p = bianchi_collision_probability(n, 32.0, 5);
            let tau = 2.0 * (1.0 - 2.0 * p)
                / ((1.0 - 2.0 * p) * 33.0 + p * 32.0 * (1.0 - (2.0 * p).powi(5)));
            let p_again = 1.0 - (1.0 - tau).powi(n as i32 - 1);
            assert!((p - p_again).abs() < 1e-6, "n={n}: {p} vs {p_again}");
        }
        let mut prev = 0.0;
        for n in 1..50 {
            let p = bianchi_collision_probability(n, 32.0, 5);
            assert!(p >= prev && p < 1.0);
            prev = p;
        }
        assert!(bianchi_collision_probability(10, 32.0, 5) > 0.2);
        assert_eq!(bianchi_collision_probability(1, 32.0, 5), 0.0);
        assert_eq!(bianchi_collision_probability(0, 32.0, 5), 0.0);
    }

    #[test]
    fn timing_of_802_11b_long_preamble() {
        let cfg = WifiConfig::default();
        assert_eq!(difs(&cfg), Duration::from_micros(50));
        // ACK: 192 µs PLCP + 112 bits at 1 Mbit/s.
        assert_eq!(sifs_ack(&cfg), Duration::from_micros(10 + 192 + 112));
        assert_eq!(contention_window(&cfg, 0), 31);
        assert_eq!(contention_window(&cfg, 1), 63);
        assert_eq!(contention_window(&cfg, 5), 1023);
        assert_eq!(contention_window(&cfg, 9), 1023);
        assert_eq!(contention_window(&cfg, 40), 1023);
        assert_eq!(backoff_stages(&cfg), 5);
    }
}
