//! H-TCP's validated constants and pure formulas (cc-spec §3.4): α_Δ,
//! RTT scaling, the Linux fixed-point variants and the flooring helper.
//! Shared with S-HTCP (`algos::shtcp`).

use super::AlphaInputs;
use std::time::Duration;

/// The raw H-TCP settings shared by H-TCP's and S-HTCP's configs.
#[derive(Clone, Debug)]
pub(crate) struct ParamFields {
    pub delta_l_ms: u64,
    pub beta_min: f64,
    pub beta_max: f64,
    pub use_rtt_scaling: bool,
    pub rtt_scaling_ref_ms: u64,
    pub rtt_scaling_min: f64,
    pub rtt_scaling_max: f64,
    pub use_bandwidth_switch: bool,
    pub bandwidth_switch_tolerance: f64,
    pub max_rtt_guard_ms: u64,
    pub max_rtt_fade: f64,
    pub adaptive_beta_min_rtt_ms: u64,
    pub linux_hz: Option<u32>,
}

/// `x` if finite, else `default`.
pub(crate) fn finite_or(x: f64, default: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        default
    }
}

/// `x` limited to `[lo, hi]` without panicking (`hi` wins if `lo > hi`; NaN gives `lo`).
pub(crate) fn clamp_f64(x: f64, lo: f64, hi: f64) -> f64 {
    x.max(lo).min(hi)
}

/// The validated H-TCP constants a policy runs with (built from a config;
/// non-finite or out-of-range values are replaced so nothing can panic).
#[derive(Clone, Debug, PartialEq)]
pub struct HtcpParams {
    pub(crate) delta_l: Duration,
    pub(crate) beta_min: f64,
    pub(crate) beta_max: f64,
    pub(crate) use_rtt_scaling: bool,
    pub(crate) rtt_ref: Duration,
    pub(crate) scale_min: f64,
    pub(crate) scale_max: f64,
    pub(crate) use_bandwidth_switch: bool,
    pub(crate) bw_tolerance: f64,
    pub(crate) max_rtt_guard: Duration,
    pub(crate) max_rtt_fade: f64,
    pub(crate) adaptive_beta_min_rtt: Duration,
    /// `Some(HZ)` in Linux fixed-point mode.
    pub(crate) linux_hz: Option<u32>,
}

impl HtcpParams {
    pub(crate) fn from_fields(f: ParamFields) -> HtcpParams {
        let b0 = clamp_f64(finite_or(f.beta_min, 0.5), 0.0, 1.0);
        let b1 = clamp_f64(finite_or(f.beta_max, 0.8), 0.0, 1.0);
        let s0 = finite_or(f.rtt_scaling_min, 0.1).max(1e-6);
        let s1 = finite_or(f.rtt_scaling_max, 2.0).max(1e-6);
        HtcpParams {
            delta_l: Duration::from_millis(f.delta_l_ms),
            beta_min: b0.min(b1),
            beta_max: b0.max(b1),
            use_rtt_scaling: f.use_rtt_scaling,
            rtt_ref: Duration::from_millis(f.rtt_scaling_ref_ms.max(1)),
            scale_min: s0.min(s1),
            scale_max: s0.max(s1),
            use_bandwidth_switch: f.use_bandwidth_switch,
            bw_tolerance: finite_or(f.bandwidth_switch_tolerance, 0.2).max(0.0),
            max_rtt_guard: Duration::from_millis(f.max_rtt_guard_ms),
            max_rtt_fade: clamp_f64(finite_or(f.max_rtt_fade, 0.95), 0.0, 1.0),
            adaptive_beta_min_rtt: Duration::from_millis(f.adaptive_beta_min_rtt_ms),
            linux_hz: f.linux_hz.map(|hz| hz.max(1)),
        }
    }
}

/// α_Δ(Δ) (real-valued): 1 if Δ ≤ Δ_L, else `1 + 10(Δ−Δ_L) + ((Δ−Δ_L)/2)²`, Δ in seconds.
pub fn alpha_delta(delta: Duration, delta_l: Duration) -> f64 {
    if delta <= delta_l {
        return 1.0;
    }
    let d = (delta - delta_l).as_secs_f64();
    1.0 + 10.0 * d + (d / 2.0) * (d / 2.0)
}

/// Kernel `jiffies` elapsed in `d` (floor).
pub(crate) fn jiffies(d: Duration, hz: u32) -> u64 {
    u64::try_from(d.as_nanos() * hz as u128 / 1_000_000_000).unwrap_or(u64::MAX)
}

/// Kernel `usecs_to_jiffies` (rounds up) of an RTT.
pub(crate) fn rtt_jiffies(d: Duration, hz: u32) -> u64 {
    let us = d.as_micros();
    u64::try_from((us * hz as u128).div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// Linux integer α_Δ: `1 + ⌊(10d + ⌊⌊d/2⌋²/HZ⌋)/HZ⌋`, d = Δ−Δ_L in jiffies.
/// Computed in 64 bits (the kernel's u32 square overflows beyond ~131 s at HZ 1000).
pub fn alpha_delta_linux(delta: Duration, delta_l: Duration, hz: u32) -> u64 {
    let hz = hz.max(1);
    let diff = jiffies(delta, hz);
    let dl = jiffies(delta_l, hz);
    if diff <= dl {
        return 1;
    }
    let d = diff - dl;
    let h = hz as u64;
    let sq = (d / 2).saturating_mul(d / 2) / h;
    (d.saturating_mul(10).saturating_add(sq) / h).saturating_add(1)
}

/// Real-valued H-TCP α: `2·f·(1−β)`, `f = α_Δ(Δ)`, with RTT scaling
/// `f = max(α_Δ · clamp(min_rtt/ref, lo, hi), 1)` when enabled and known.
pub(crate) fn htcp_alpha_real(p: &HtcpParams, i: &AlphaInputs) -> f64 {
    let mut f = alpha_delta(i.delta, p.delta_l);
    if p.use_rtt_scaling {
        if let Some(min_rtt) = i.min_rtt.filter(|m| !m.is_zero()) {
            let ratio = min_rtt.as_secs_f64() / p.rtt_ref.as_secs_f64();
            f = (f * clamp_f64(ratio, p.scale_min, p.scale_max)).max(1.0);
        }
    }
    2.0 * f * (1.0 - i.beta)
}

/// β in 7-bit fixed point (`β·128`, exact in compat mode).
pub(crate) fn beta128(beta: f64) -> u64 {
    (clamp_f64(beta, 0.0, 1.0) * 128.0).round() as u64
}

/// Linux fixed-point α (`htcp_alpha_update`), returned as `alpha/128`.
pub(crate) fn htcp_alpha_linux(p: &HtcpParams, hz: u32, i: &AlphaInputs) -> f64 {
    let mut factor = alpha_delta_linux(i.delta, p.delta_l, hz);
    if p.use_rtt_scaling {
        let min_j = i.min_rtt.map_or(0, |m| rtt_jiffies(m, hz));
        if min_j > 0 {
            // (HZ << 3) / (10 · minRTT) for ref = 100 ms: 8 · ref_jiffies / minRTT.
            let num = 8 * p.rtt_ref.as_nanos() * hz as u128;
            let scale = u64::try_from(num / (1_000_000_000 * min_j as u128)).unwrap_or(u64::MAX);
            let lo = (8.0 / p.scale_max).round() as u64;
            let hi = ((8.0 / p.scale_min).round() as u64).max(lo);
            let scale = scale.clamp(lo, hi).max(1);
            factor = (factor.saturating_mul(8) / scale).max(1);
        }
    }
    let a128 = factor
        .saturating_mul(2)
        .saturating_mul(128u64.saturating_sub(beta128(i.beta)));
    let a128 = if a128 == 0 { 128 } else { a128 };
    a128 as f64 / 128.0
}

/// `floor(cwnd·factor)` for a real factor; errors below 1e-9 relative are
/// absorbed so that decimal constants (0.8, 0.7) floor like exact rationals.
pub(crate) fn floor_scaled(cwnd: u32, factor: f64) -> u32 {
    if !(factor.is_finite() && factor > 0.0) {
        return 0;
    }
    let x = cwnd as f64 * factor;
    let r = x.round();
    let y = if (x - r).abs() <= 1e-9 * r.max(1.0) {
        r
    } else {
        x.floor()
    };
    y.min(u32::MAX as f64) as u32
}

/// β's initial and reset value: `beta_min` (7-bit fixed point in compat mode).
pub(crate) fn reset_beta(p: &HtcpParams) -> f64 {
    match p.linux_hz {
        Some(_) => (p.beta_min * 128.0).floor() / 128.0,
        None => p.beta_min,
    }
}
