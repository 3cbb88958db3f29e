//! BBR's path model arithmetic (cc-spec §3.14 "Derived quantities"): the
//! bandwidth unit, BDP, send quantum, quantisation budget, pacing-rate
//! conversion, the ACK-aggregation estimator and the seeded phase RNG.
//!
//! Everything here is integer arithmetic on exact rationals (gains are
//! fractions of 256 as in the kernel, `BBR_UNIT`), computed in `u128` with
//! checked products so that no input can overflow or panic: a product that
//! does not fit saturates.

use crate::Time;
use std::time::Duration;

/// Gains are fractions of this unit (kernel `BBR_UNIT = 1 << 8`).
pub const GAIN_UNIT: u32 = 256;

/// Fractional bits of [`Bw`].
const BW_SHIFT: u32 = 24;
const NANOS_PER_SEC: u128 = 1_000_000_000;

/// A bandwidth in segments per second, fixed point with 24 fractional bits
/// (resolution 6·10⁻⁸ segments/s; saturates at about 1.1·10¹² segments/s).
///
/// The kernel keeps packets per µs scaled by 2²⁴; per second keeps the
/// spec's vectors exact (1000 segments/s is represented exactly).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bw(u64);

impl Bw {
    /// No bandwidth.
    pub const ZERO: Bw = Bw(0);

    /// From the raw fixed-point value (what the max filter stores).
    pub const fn from_raw(raw: u64) -> Bw {
        Bw(raw)
    }
    /// The raw fixed-point value.
    pub const fn raw(self) -> u64 {
        self.0
    }
    /// From a real number of segments per second (non-finite or negative → 0).
    pub fn from_segs_per_sec(segs_per_sec: f64) -> Bw {
        if !segs_per_sec.is_finite() || segs_per_sec <= 0.0 {
            return Bw::ZERO;
        }
        let raw = segs_per_sec * (1u64 << BW_SHIFT) as f64;
        Bw(raw.min(u64::MAX as f64) as u64)
    }
    /// `segs` delivered over `interval` (floor); `None` if the interval is zero.
    pub fn from_delivery(segs: u64, interval: Duration) -> Option<Bw> {
        let ns = interval.as_nanos();
        if ns == 0 {
            return None;
        }
        let num = (segs as u128) << BW_SHIFT;
        let raw = num.saturating_mul(NANOS_PER_SEC) / ns;
        Some(Bw(sat_u64(raw)))
    }
    /// Segments per second as a real number.
    pub fn segs_per_sec(self) -> f64 {
        self.0 as f64 / (1u64 << BW_SHIFT) as f64
    }
    /// Whole segments delivered at this rate over `d` (floor).
    pub fn segs_in(self, d: Duration) -> u64 {
        let prod = (self.0 as u128).saturating_mul(d.as_nanos());
        sat_u64(prod / (NANOS_PER_SEC << BW_SHIFT))
    }
    /// `self · num / den` (floor), saturating; `den = 0` gives zero.
    pub fn scale(self, num: u64, den: u64) -> Bw {
        if den == 0 {
            return Bw::ZERO;
        }
        Bw(sat_u64(
            (self.0 as u128).saturating_mul(num as u128) / den as u128,
        ))
    }
    /// Absolute difference.
    pub fn abs_diff(self, other: Bw) -> Bw {
        Bw(self.0.abs_diff(other.0))
    }
    /// Mean of two bandwidths (floor), as the kernel averages two intervals.
    pub fn mean(self, other: Bw) -> Bw {
        Bw(((self.0 as u128 + other.0 as u128) / 2) as u64)
    }
    /// Bytes per second at this rate with `gain` (fractions of [`GAIN_UNIT`])
    /// and a pacing margin of `margin_percent` (floor, saturating). This is
    /// kernel `bbr_rate_bytes_per_sec`.
    pub fn bytes_per_sec(self, mss: u32, gain_x256: u32, margin_percent: u32) -> u64 {
        let keep = 100u128.saturating_sub(margin_percent as u128);
        let num = (self.0 as u128)
            .checked_mul(mss as u128)
            .and_then(|v| v.checked_mul(gain_x256 as u128))
            .and_then(|v| v.checked_mul(keep));
        match num {
            Some(n) => sat_u64(n / ((GAIN_UNIT as u128 * 100) << BW_SHIFT)),
            None => u64::MAX,
        }
    }
    /// [`Bw::bytes_per_sec`] as a real number (for tables and tests).
    pub fn bytes_per_sec_f64(self, mss: u32, gain_x256: u32, margin_percent: u32) -> f64 {
        let keep = 100f64 - (margin_percent.min(100) as f64);
        self.segs_per_sec() * mss as f64 * gain_x256 as f64 * keep / (GAIN_UNIT as f64 * 100.0)
    }
}

fn sat_u64(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

fn sat_u32(v: u128) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// `bdp(bw, g) = ceil(bw · min_rtt · g)` in segments (kernel `bbr_bdp`);
/// `None` for `min_rtt` (no RTT sample yet) gives `iw_segs`.
pub fn bdp(bw: Bw, min_rtt: Option<Duration>, gain_x256: u32, iw_segs: u32) -> u32 {
    let Some(min_rtt) = min_rtt else {
        return iw_segs;
    };
    let den = (NANOS_PER_SEC * GAIN_UNIT as u128) << BW_SHIFT;
    let num = (bw.0 as u128)
        .checked_mul(min_rtt.as_nanos())
        .and_then(|v| v.checked_mul(gain_x256 as u128));
    match num {
        Some(n) => sat_u32(n.div_ceil(den)),
        None => u32::MAX,
    }
}

/// The parameters of the send quantum (kernel `bbr_tso_segs_goal`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct QuantumRule {
    /// A fixed quantum, segments (ns-3 uses 1), instead of the kernel rule.
    pub fixed_segs: Option<u32>,
    /// The quantum is `pacing_rate >> pacing_shift` bytes (1024 = ~1 ms of data).
    pub pacing_shift: u32,
    /// Byte cap of one quantum (kernel: GSO max size − 1 − headers).
    pub max_bytes: u32,
    /// Segment cap of one quantum (kernel: 127).
    pub max_segs: u32,
    /// Below this pacing rate (bytes/s) the minimum quantum is 1, else 2.
    pub min_tso_rate_bytes_per_sec: u64,
}

impl QuantumRule {
    /// `quantum() = min(max(floor(min(rate >> shift, max_bytes) / mss), m), max_segs)`,
    /// `m = 1` below the minimum TSO rate, else 2.
    pub fn quantum(&self, pacing_rate_bytes_per_sec: u64, mss: u32) -> u32 {
        if let Some(q) = self.fixed_segs {
            return q;
        }
        let bytes = pacing_rate_bytes_per_sec
            .checked_shr(self.pacing_shift)
            .unwrap_or(0)
            .min(self.max_bytes as u64);
        let min_segs = if pacing_rate_bytes_per_sec < self.min_tso_rate_bytes_per_sec {
            1
        } else {
            2
        };
        let segs = (bytes / mss.max(1) as u64).max(min_segs);
        segs.min(self.max_segs as u64) as u32
    }
}

/// `budget(c) = round_up_to_even(c + 3·quantum) + (probe_up ? 2 : 0)` (kernel
/// `bbr_quantization_budget`; `probe_up` = ProbeBw with `cycle_idx == 0`).
pub fn budget(cwnd: u32, quantum: u32, probe_up: bool) -> u32 {
    let c = cwnd.saturating_add(quantum.saturating_mul(3));
    // Round up to even (at u32::MAX this rounds down to MAX − 1; harmless).
    let even = c.saturating_add(1) & !1u32;
    if probe_up {
        even.saturating_add(2)
    } else {
        even
    }
}

/// The ACK-aggregation estimator (kernel `bbr_update_ack_aggregation`): the
/// windowed maximum of segments acknowledged beyond what the bandwidth
/// estimate predicts, kept in two buckets of `win_rounds` rounds each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AckAggregation {
    /// Start of the current sampling epoch.
    pub epoch_start: Time,
    /// Segments (S)ACKed in the current epoch.
    pub epoch_acked_segs: u32,
    /// Maximum excess per bucket, segments.
    pub extra_acked_segs: [u32; 2],
    /// Rounds since the current bucket started.
    pub win_rounds: u32,
    /// Index of the current bucket.
    pub win_idx: usize,
}

impl AckAggregation {
    /// Restart the sampling epoch at `now` (after idle, or when ACKs fall behind).
    pub fn restart_epoch(&mut self, now: Time) {
        self.epoch_start = now;
        self.epoch_acked_segs = 0;
    }

    /// Account one valid ACK of `acked` segments at `now` (the delivery time)
    /// against `bw`. `bucket_rounds` is the bucket length, `reset_thresh` the
    /// epoch size that forces a restart; the excess is capped at `cwnd`.
    #[allow(clippy::too_many_arguments)] // mirrors the kernel's inputs one to one
    pub fn update(
        &mut self,
        round_start: bool,
        bucket_rounds: u32,
        now: Time,
        bw: Bw,
        acked: u32,
        reset_thresh: u32,
        cwnd: u32,
    ) {
        if round_start {
            self.win_rounds = self.win_rounds.saturating_add(1).min(0x1f);
            if self.win_rounds >= bucket_rounds {
                self.win_rounds = 0;
                self.win_idx ^= 1;
                self.extra_acked_segs[self.win_idx & 1] = 0;
            }
        }
        let epoch = now.saturating_duration_since(self.epoch_start);
        let mut expected = bw.segs_in(epoch);
        if self.epoch_acked_segs as u64 <= expected
            || self.epoch_acked_segs.saturating_add(acked) >= reset_thresh
        {
            self.restart_epoch(now);
            expected = 0;
        }
        let cap = reset_thresh.max(1) - 1;
        self.epoch_acked_segs = self.epoch_acked_segs.saturating_add(acked).min(cap);
        let extra = (self.epoch_acked_segs as u64).saturating_sub(expected);
        let extra = extra.min(cwnd as u64) as u32;
        let slot = &mut self.extra_acked_segs[self.win_idx & 1];
        if extra > *slot {
            *slot = extra;
        }
    }

    /// The larger of the two buckets.
    pub fn max_extra_acked(&self) -> u32 {
        self.extra_acked_segs[0].max(self.extra_acked_segs[1])
    }
}

/// SplitMix64 ([`crate::splitmix`]): a small, seedable, deterministic
/// generator for the random PROBE_BW start phase (no global state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseRng(u64);

impl PhaseRng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        PhaseRng(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let out = crate::splitmix::mix64(self.0);
        self.0 = self.0.wrapping_add(crate::splitmix::GOLDEN_GAMMA);
        out
    }
    /// A value in `0..n` (kernel `get_random_u32_below`); 0 when `n == 0`.
    pub fn below(&mut self, n: u32) -> u32 {
        let x = self.next_u64() >> 32;
        ((x * n as u64) >> 32) as u32
    }
}
