//! The kernel's fixed-point CUBIC curve (`tcp_cubic.c`, `bictcp_update`),
//! for bit-compatible comparisons with Linux traces (cc-spec §3.10 CU-7).
//!
//! `C = bic_scale·10/1024 = 410/1024` segments/s³; time is counted in
//! 1/1024 s (`BICTCP_HZ = 10`); `K = ∛(cube_factor·(W_max − cwnd))` with
//! `cube_factor = 2^40 / 410`, and the target is
//! `origin ± (410·|t − K|³ >> 40)`. All integer; nothing here can overflow
//! (u128 for the cubes, saturating where the inputs are absurd).

/// `bic_scale · 10`: C in 1/1024 segments/s³.
const CUBE_RTT_SCALE: u128 = 410;
/// `2^(10 + 3·BICTCP_HZ) / (bic_scale · 10)`.
const CUBE_FACTOR: u128 = (1u128 << 40) / CUBE_RTT_SCALE;

/// Exact integer cube root (floor). The kernel's `cubic_root` is a table
/// plus one Newton step accurate to about 0.2 %; the floor agrees with it on
/// the spec's vectors and has no approximation to document.
pub(crate) fn icbrt(x: u128) -> u64 {
    let cube = |r: u128| r.checked_mul(r).and_then(|v| v.checked_mul(r));
    // The f64 estimate is within one or two of the answer; settle exactly.
    let mut r = (x as f64).cbrt() as u128;
    while r > 0 && cube(r).is_none_or(|c| c > x) {
        r -= 1;
    }
    while cube(r + 1).is_some_and(|c| c <= x) {
        r += 1;
    }
    u64::try_from(r).unwrap_or(u64::MAX)
}

/// `K` in 1/1024 s for an epoch starting at `cwnd` below `w_max` (0 otherwise).
pub(crate) fn k_fp(w_max_segs: u64, cwnd_segs: u64) -> u64 {
    if w_max_segs <= cwnd_segs {
        return 0;
    }
    icbrt(CUBE_FACTOR.saturating_mul(u128::from(w_max_segs - cwnd_segs)))
}

/// The integer target window `t_fp` (1/1024 s) into an epoch with `origin` and `k_fp`.
pub(crate) fn target_segs(origin_segs: u64, k_fp: u64, t_fp: u64) -> u64 {
    let offs = u128::from(t_fp.abs_diff(k_fp));
    let delta = CUBE_RTT_SCALE
        .saturating_mul(offs)
        .saturating_mul(offs)
        .saturating_mul(offs)
        >> 40;
    let delta = u64::try_from(delta).unwrap_or(u64::MAX);
    if t_fp < k_fp {
        origin_segs.saturating_sub(delta)
    } else {
        origin_segs.saturating_add(delta)
    }
}

/// Seconds to the kernel's 1/1024-s units (floor; negative or NaN → 0).
pub(crate) fn secs_to_fp(t_secs: f64) -> u64 {
    let v = (t_secs * 1024.0).floor();
    if v.is_finite() && v > 0.0 {
        v.min(u64::MAX as f64) as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cc-spec CU-7: W_max 100, reduction to 70.
    #[test]
    fn cu7_kernel_fixed_point() {
        let k = k_fp(100, 70);
        assert_eq!(k, 4316);
        assert!((k as f64 / 1024.0 - 4.2148).abs() < 5e-5);
        let targets: Vec<u64> = [0u64, 1, 2, 6]
            .iter()
            .map(|s| target_segs(100, k, s * 1024))
            .collect();
        assert_eq!(targets, vec![71, 87, 96, 102]);
    }

    #[test]
    fn icbrt_is_exact_floor() {
        for x in [0u128, 1, 7, 8, 26, 27, 80_452_070_310, u64::MAX as u128] {
            let r = icbrt(x) as u128;
            assert!(r * r * r <= x && (r + 1) * (r + 1) * (r + 1) > x, "{x}");
        }
        assert_eq!(icbrt(u128::MAX), icbrt(u128::MAX)); // no overflow, no panic
    }
}
