//! TCP Illinois: loss-based window control whose increase and decrease
//! factors are set by queueing delay (cc-spec §3.12; Liu, Başar & Srikant,
//! Performance Evaluation 2008; kernel `tcp_illinois.c`).
//!
//! Illinois is for high bandwidth-delay paths. Loss still decides *when* the
//! window shrinks, but the average queueing delay of the last round `da`,
//! relative to the largest delay seen `dm`, decides *how much* it grows and
//! shrinks: with an empty queue the additive increase α is large (up to 10
//! segments per RTT) and the decrease β small (1/8); as the queue fills, α
//! falls towards 0.3 and β rises to 1/2. α and β are recomputed once per
//! round (H12, sequence form) from that round's RTT samples; below
//! `win_thresh` segments the flow behaves like Reno (α = 1, β = 1/2).
//!
//! **Parameters** ([`IllinoisConfig`]): `α_min = 0.3`, `α_max = 10`,
//! `α_base = 1`, `β_min = 1/8`, `β_max = 1/2`, `β_base = 1/2`,
//! `win_thresh = 15` segments, `θ = 5` low-delay rounds before α returns to
//! α_max, RTT samples clamped to 3,355,443 µs (kernel `U32_MAX/1280`).
//!
//! **Arithmetic.** By default α and β are real-valued functions of the
//! delays in µs (the spec's normative mode). `linux_compat = true` gives the
//! kernel's fixed point (α in 1/128, β in 1/64, integer µs delays), which
//! reproduces Linux traces bit for bit. RTT samples are raw µs as in the
//! kernel (no H13 `+1`): §3.12 aggregates a sum and a count per round.
//!
//! This module makes no [PROJECT CHOICE]s: everything it does is the
//! kernel's. `set_initial_window` keeps the default meaning
//! (`cwnd = ssthresh =` the measured window).

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::rate::SeqRound;
use crate::types::{AckSample, CaState, PathInfo};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Kernel fixed-point scale of α (`ALPHA_SHIFT = 7`).
const ALPHA_SCALE: f64 = 128.0;
/// Kernel fixed-point scale of β (`BETA_SHIFT = 6`).
const BETA_SCALE: f64 = 64.0;

/// TCP Illinois settings (cc-spec §3.12).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct IllinoisConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// Smallest additive increase, segments per RTT (0.3; kernel 38/128).
    pub alpha_min: f64,
    /// Largest additive increase, segments per RTT (10).
    pub alpha_max: f64,
    /// Additive increase below `win_thresh_segs` and after an RTO (1).
    pub alpha_base: f64,
    /// Smallest multiplicative decrease factor (1/8).
    pub beta_min: f64,
    /// Largest multiplicative decrease factor (1/2).
    pub beta_max: f64,
    /// Decrease factor below `win_thresh_segs` and after an RTO (1/2).
    pub beta_base: f64,
    /// Below this window, segments, α and β stay at their base values (15).
    pub win_thresh_segs: u32,
    /// Consecutive low-delay rounds before α returns to `alpha_max` (θ = 5).
    pub theta_rounds: u32,
    /// RTT samples above this are clamped, microseconds (kernel `U32_MAX/1280`).
    pub rtt_max_us: u64,
    /// Compute α and β in the kernel's fixed point (α in 1/128, β in 1/64,
    /// integer µs delays) instead of real-valued (default false).
    pub linux_compat: bool,
}

impl Default for IllinoisConfig {
    fn default() -> Self {
        IllinoisConfig {
            core: CoreConfig::default(),
            alpha_min: 0.3,
            alpha_max: 10.0,
            alpha_base: 1.0,
            beta_min: 0.125,
            beta_max: 0.5,
            beta_base: 0.5,
            win_thresh_segs: 15,
            theta_rounds: 5,
            rtt_max_us: u32::MAX as u64 / 1280,
            linux_compat: false,
        }
    }
}

impl IllinoisConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Illinois> {
        PolicyController::new(self.core.clone(), Illinois::new(self.clone()))
    }
}

/// The Illinois policy.
#[derive(Clone, Debug)]
pub struct Illinois {
    config: IllinoisConfig,
    /// Sum of this round's RTT samples, µs.
    sum_rtt_us: u64,
    /// Number of this round's RTT samples.
    cnt_rtt: u32,
    /// Smallest RTT ever seen, µs (never aged).
    base_rtt_us: u64,
    /// Largest RTT ever seen, µs (never aged).
    max_rtt_us: u64,
    /// Round boundary (kernel `end_seq`).
    round: SeqRound,
    /// Current additive increase, segments per RTT.
    alpha: f64,
    /// Current multiplicative decrease factor.
    beta: f64,
    /// Segments acknowledged by the current ACK (kernel `ca->acked`).
    acked: u32,
    /// The average delay has been above `dm/100` since α was last α_max.
    rtt_above: bool,
    /// Consecutive low-delay rounds counted while `rtt_above`.
    rtt_low: u32,
}

impl Illinois {
    fn new(config: IllinoisConfig) -> Illinois {
        Illinois {
            alpha: config.alpha_max,
            beta: config.beta_base,
            config,
            sum_rtt_us: 0,
            cnt_rtt: 0,
            base_rtt_us: 0x7fff_ffff,
            max_rtt_us: 0,
            round: SeqRound::default(),
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
        }
    }

    /// The current additive increase α, segments per RTT.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The current decrease factor β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Start a new round at `snd_nxt` (kernel `rtt_reset`).
    fn rtt_reset(&mut self, snd_nxt: u64) {
        self.round.beg_snd_nxt = snd_nxt;
        self.cnt_rtt = 0;
        self.sum_rtt_us = 0;
    }

    /// The low-delay branch of α (`da ≤ dm/100`): α_max, unless the delay
    /// was high recently, in which case α_max only on the θ-th low round.
    fn alpha_low_delay(&mut self) -> f64 {
        if !self.rtt_above {
            return self.config.alpha_max;
        }
        self.rtt_low = self.rtt_low.saturating_add(1);
        if self.rtt_low < self.config.theta_rounds {
            return self.alpha;
        }
        self.rtt_low = 0;
        self.rtt_above = false;
        self.config.alpha_max
    }

    /// Real-valued α(da, dm), delays in µs.
    fn alpha_real(&mut self, da: f64, dm: f64) -> f64 {
        let d1 = dm / 100.0;
        if da <= d1 {
            return self.alpha_low_delay();
        }
        self.rtt_above = true;
        let (amin, amax) = (self.config.alpha_min, self.config.alpha_max);
        let (dm, da) = (dm - d1, da - d1);
        let denom = dm + da * (amax - amin) / amin;
        let a = dm * amax / denom;
        if a.is_finite() && a > 0.0 {
            a
        } else {
            amin
        }
    }

    /// Kernel fixed-point α(da, dm) in 1/128 units, delays in integer µs.
    fn alpha_fixed(&mut self, da: u64, dm: u64) -> u64 {
        let d1 = dm / 100;
        if da <= d1 {
            return (self.alpha_low_delay() * ALPHA_SCALE) as u64;
        }
        self.rtt_above = true;
        let amin = ((self.config.alpha_min * ALPHA_SCALE) as u64).max(1);
        let amax = (self.config.alpha_max * ALPHA_SCALE) as u64;
        let (dm, da) = (dm - d1, da - d1);
        let num = (dm as u128).saturating_mul(amax as u128);
        let slope = (da as u128).saturating_mul(amax.saturating_sub(amin) as u128) / amin as u128;
        let denom = (dm as u128).saturating_add(slope);
        if denom == 0 {
            return amin;
        }
        u64::try_from(num / denom).unwrap_or(amax)
    }

    /// Real-valued β(da, dm), delays in µs.
    fn beta_real(&self, da: f64, dm: f64) -> f64 {
        let (bmin, bmax) = (self.config.beta_min, self.config.beta_max);
        let d2 = dm / 10.0;
        if da <= d2 {
            return bmin;
        }
        let d3 = 8.0 * dm / 10.0;
        if da >= d3 || d3 <= d2 {
            return bmax;
        }
        let b = (bmin * d3 - bmax * d2 + (bmax - bmin) * da) / (d3 - d2);
        if b.is_finite() {
            b
        } else {
            bmax
        }
    }

    /// Kernel fixed-point β(da, dm) in 1/64 units, delays in integer µs.
    fn beta_fixed(&self, da: u64, dm: u64) -> u64 {
        let bmin = (self.config.beta_min * BETA_SCALE) as u128;
        let bmax = (self.config.beta_max * BETA_SCALE) as u128;
        let d2 = dm / 10;
        if da <= d2 {
            return bmin as u64;
        }
        let d3 = dm.saturating_mul(8) / 10;
        if da >= d3 || d3 <= d2 {
            return bmax as u64;
        }
        let (d2, d3, da) = (d2 as u128, d3 as u128, da as u128);
        let num = bmin
            .saturating_mul(d3)
            .saturating_add(bmax.saturating_sub(bmin).saturating_mul(da))
            .saturating_sub(bmax.saturating_mul(d2));
        u64::try_from(num / (d3 - d2)).unwrap_or(bmax as u64)
    }

    /// Recompute α and β from this round (kernel `update_params`, without the reset).
    fn update_params(&mut self, core: &Core) {
        if core.cwnd < self.config.win_thresh_segs {
            self.alpha = self.config.alpha_base;
            self.beta = self.config.beta_base;
        } else if self.cnt_rtt > 0 {
            let base = self.base_rtt_us;
            let dm = self.max_rtt_us.saturating_sub(base);
            if self.config.linux_compat {
                let da = (self.sum_rtt_us / self.cnt_rtt as u64).saturating_sub(base);
                self.alpha = self.alpha_fixed(da, dm) as f64 / ALPHA_SCALE;
                self.beta = self.beta_fixed(da, dm) as f64 / BETA_SCALE;
            } else {
                let avg = self.sum_rtt_us as f64 / self.cnt_rtt as f64;
                let da = (avg - base as f64).max(0.0);
                let dm = dm as f64;
                self.alpha = self.alpha_real(da, dm);
                self.beta = self.beta_real(da, dm);
            }
        }
    }
}

impl CcPolicy for Illinois {
    fn name(&self) -> &'static str {
        "illinois"
    }

    fn init(&mut self, _core: &mut Core, path: &PathInfo) {
        *self = Illinois::new(self.config.clone());
        self.rtt_reset(path.snd_nxt);
    }

    fn on_packets_acked(&mut self, _core: &mut Core, ack: &AckSample, _path: &PathInfo) {
        self.acked = ack.acked_segs;
        let Some(rtt) = ack.rtt else {
            return;
        };
        let rtt_us = u64::try_from(rtt.as_micros())
            .unwrap_or(u64::MAX)
            .min(self.config.rtt_max_us);
        self.base_rtt_us = self.base_rtt_us.min(rtt_us);
        self.max_rtt_us = self.max_rtt_us.max(rtt_us);
        self.cnt_rtt = self.cnt_rtt.saturating_add(1);
        self.sum_rtt_us = self.sum_rtt_us.saturating_add(rtt_us);
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        if self.round.end_of_round(path.snd_una, path.snd_nxt) {
            self.update_params(core);
            self.rtt_reset(path.snd_nxt);
        }
        if !path.cwnd_limited {
            return;
        }
        if core.in_slow_start() {
            // Kernel: the slow-start leftover is discarded.
            core.slow_start(acked);
            return;
        }
        core.cwnd_cnt = core.cwnd_cnt.saturating_add(self.acked);
        self.acked = 1;
        // Close approximation of cwnd += α / cwnd per acknowledged segment.
        let delta = (core.cwnd_cnt as f64 * self.alpha).floor();
        let cwnd = core.cwnd.max(1);
        if delta.is_finite() && delta >= cwnd as f64 {
            let inc = (delta / cwnd as f64).floor().min(u32::MAX as f64) as u32;
            core.cwnd = cwnd.saturating_add(inc).min(core.cwnd_clamp);
            core.cwnd_cnt = 0;
        }
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        let beta = if self.beta.is_finite() {
            self.beta.clamp(0.0, 1.0)
        } else {
            self.config.beta_base.clamp(0.0, 1.0)
        };
        // β is k/64 in compat mode and `cwnd` < 2^32, so the product is exact in f64.
        let cut = (core.cwnd as f64 * beta).floor() as u32;
        core.cwnd.saturating_sub(cut).max(2)
    }

    fn on_state(&mut self, _core: &mut Core, new: CaState, path: &PathInfo) {
        if new == CaState::Loss {
            self.alpha = self.config.alpha_base;
            self.beta = self.config.beta_base;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.rtt_reset(path.snd_nxt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::testutil::{ack, ack_rtt, path};

    fn illinois(config: IllinoisConfig, cwnd: u32, ssthresh: u32) -> PolicyController<Illinois> {
        let mut c = config.build();
        c.init(&path(0, 100));
        c.core_mut().cwnd = cwnd;
        c.core_mut().ssthresh = ssthresh;
        c
    }

    /// (da ms, α real, α kernel /128, β real, β kernel /64, ssthresh real, ssthresh kernel)
    const TABLE: [(f64, f64, u64, f64, u64, u32, u32); 7] = [
        (0.5, 10.0, 1280, 0.125, 8, 88, 88),
        (5.0, 4.3358, 551, 0.125, 8, 88, 88),
        (10.0, 2.5385, 322, 0.125, 8, 88, 88),
        (30.0, 0.9550, 121, 0.2321, 14, 77, 79),
        (50.0, 0.5881, 74, 0.3393, 21, 67, 68),
        (80.0, 0.3731, 47, 0.5, 32, 50, 50),
        (100.0, 0.3000, 38, 0.5, 32, 50, 50),
    ];

    #[test]
    fn il_table_alpha_beta_ssthresh() {
        let dm = 100_000.0;
        for (da_ms, a_real, a_fp, b_real, b_fp, ss_real, ss_fp) in TABLE {
            let da = da_ms * 1000.0;
            // Real-valued (default).
            let mut c = illinois(IllinoisConfig::default(), 100, 50);
            let (core, p) = c.parts_mut();
            let a = p.alpha_real(da, dm);
            let b = p.beta_real(da, dm);
            // The table prints four decimals.
            assert!((a - a_real).abs() <= 5e-5, "da {da_ms}: α {a}");
            assert!((b - b_real).abs() <= 5e-5, "da {da_ms}: β {b}");
            p.alpha = a;
            p.beta = b;
            assert_eq!(p.ssthresh(core, &path(0, 100)), ss_real, "da {da_ms}");
            // Kernel fixed point.
            let mut c = illinois(
                IllinoisConfig {
                    linux_compat: true,
                    ..Default::default()
                },
                100,
                50,
            );
            let (core, p) = c.parts_mut();
            let da = da as u64;
            assert_eq!(p.alpha_fixed(da, dm as u64), a_fp, "da {da_ms}");
            assert_eq!(p.beta_fixed(da, dm as u64), b_fp, "da {da_ms}");
            p.beta = b_fp as f64 / BETA_SCALE;
            assert_eq!(p.ssthresh(core, &path(0, 100)), ss_fp, "da {da_ms}");
        }
        // Exact formula at da = 5 ms: 99·10 / (99 + 4·9.7/0.3).
        let mut c = illinois(IllinoisConfig::default(), 100, 50);
        let a = c.policy_mut().alpha_real(5_000.0, dm);
        let want = 99_000.0 * 10.0 / (99_000.0 + 4_000.0 * 9.7 / 0.3);
        assert!((a - want).abs() <= 1e-9 * want);
        // And β at da = 30 ms: (0.125·80 − 0.5·10 + 0.375·30) / 70 = 16.25/70.
        let b = c.policy().beta_real(30_000.0, dm);
        assert!((b - 16.25 / 70.0).abs() <= 1e-9 * b);
    }

    #[test]
    fn il_inc_alpha_ten() {
        let mut c = illinois(IllinoisConfig::default(), 100, 50);
        assert_eq!(c.policy().alpha(), 10.0);
        let p = path(0, 100); // snd_una 1000 ≤ beg_snd_nxt 1100: no round end
        for i in 1..=9 {
            c.on_ack(&ack(1), &p);
            assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (100, i));
        }
        c.on_ack(&ack(1), &p);
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (101, 0));
        // A stretch ACK of 25 segments: δ = 250 ≥ 100 → +2, remainder discarded.
        let mut c = illinois(IllinoisConfig::default(), 100, 50);
        c.on_ack(&ack(25), &p);
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (102, 0));
    }

    #[test]
    fn il_theta_five_low_rounds() {
        let mut c = illinois(IllinoisConfig::default(), 100, 50);
        let p = c.policy_mut();
        let dm = 100_000.0;
        let a = p.alpha_real(30_000.0, dm);
        p.alpha = a;
        assert!(p.rtt_above);
        for round in 1..=4 {
            assert_eq!(p.alpha_real(500.0, dm), a, "low round {round} keeps α");
            assert_eq!(p.rtt_low, round);
        }
        assert_eq!(p.alpha_real(500.0, dm), 10.0, "5th low round");
        assert_eq!((p.rtt_low, p.rtt_above), (0, false));
        // Kernel fixed point counts the same way.
        let mut c = illinois(IllinoisConfig::default(), 100, 50);
        let p = c.policy_mut();
        p.alpha = p.alpha_fixed(30_000, 100_000) as f64 / ALPHA_SCALE;
        for _ in 1..=4 {
            assert_eq!(p.alpha_fixed(500, 100_000), 121);
        }
        assert_eq!(p.alpha_fixed(500, 100_000), 1280);
    }

    #[test]
    fn rounds_update_alpha_beta_from_samples() {
        let mut c = illinois(IllinoisConfig::default(), 100, 50);
        let mut p = path(0, 100);
        // Round 1: base 100 ms, max 200 ms, average 130 ms → da = 30 ms.
        for rtt_ms in [100, 200, 100, 120] {
            c.on_ack(&ack_rtt(1, rtt_ms * 1000), &p);
        }
        p.snd_una = 1101;
        p.snd_nxt = 1200;
        c.on_ack(&ack(1), &p);
        assert!((c.policy().alpha() - 0.9550).abs() < 5e-5);
        assert!((c.policy().beta() - 0.2321).abs() < 5e-5);
        assert_eq!(c.policy().round.beg_snd_nxt, 1200);
        assert_eq!(c.policy().cnt_rtt, 0);
        // Below win_thresh the round end resets α, β to Reno's.
        c.core_mut().cwnd = 14;
        p.snd_una = 1201;
        c.on_ack(&ack(1), &p);
        assert_eq!((c.policy().alpha(), c.policy().beta()), (1.0, 0.5));
    }

    #[test]
    fn rto_resets_to_base_values() {
        let mut c = illinois(IllinoisConfig::default(), 100, 50);
        c.policy_mut().rtt_above = true;
        c.policy_mut().beta = 0.125;
        let mut p = path(0, 100);
        p.in_flight = 0;
        c.on_rto(&p);
        // ssthresh used the β in force before the RTO.
        assert_eq!(c.core().ssthresh, 88);
        assert_eq!((c.policy().alpha(), c.policy().beta()), (1.0, 0.5));
        assert!(!c.policy().rtt_above);
        assert_eq!(c.core().cwnd, 1);
    }

    #[test]
    fn huge_and_zero_rtts_are_safe() {
        let mut c = illinois(IllinoisConfig::default(), 100, 50);
        let mut p = path(0, 100);
        for rtt in [0, u64::MAX / 2_000, 1, 0] {
            c.on_ack(&ack_rtt(1, rtt), &p);
        }
        assert_eq!(c.policy().max_rtt_us, IllinoisConfig::default().rtt_max_us);
        p.snd_una = 1101;
        c.on_ack(&ack(1), &p);
        assert!(c.policy().alpha().is_finite() && c.policy().alpha() > 0.0);
        assert!(c.core().cwnd >= 100);
    }
}
