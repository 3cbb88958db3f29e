//! BIC TCP (cc-spec §3.8; Xu, Harfoush & Rhee, INFOCOM 2004; kernel `tcp_bic.c`).
//!
//! Binary Increase Congestion control is for long fat networks where Reno
//! is too slow but RTT fairness still matters. After a loss it remembers the
//! window where the loss happened (`W_last`) and searches for it with a
//! binary search (jumping halfway per RTT, at most `S_max` segments per RTT),
//! creeping slowly near `W_last` (the "plateau") and probing beyond it with
//! a mirror-image slow start, then linearly. Below `low_window` segments it
//! is plain Reno. The loss decrease is `β = 819/1024 ≈ 0.8` (halving at
//! small windows) with fast convergence (`W_last ≈ 0.9·cwnd` when the window
//! is shrinking). The per-ACK divisor `cnt` is recomputed at most once per
//! 31.25 ms unless cwnd changed, and is scaled by the measured
//! segments-per-ACK ratio (`delayed_ack`, ×16) like the kernel.
//!
//! **Parameters** (see [`BicConfig`]): `b` (4), `max_increment_segs` (16),
//! `low_window_segs` (14), `beta_1024` (819), `fast_convergence` (true),
//! `smooth_part` (20), `update_interval_us` (31 250), `ack_ratio_scaling`
//! (true). Undo is H5.
//!
//! **[PROJECT CHOICE]s.** `ack_ratio_scaling` is a switch (default on, for
//! kernel fidelity): it is a legacy of per-ACK counting and doubles growth
//! when every ACK covers two segments. The gating interval uses `path.now`
//! (kernel: `HZ/32` jiffies, restated as 31.25 ms); a clock that goes
//! backwards counts as "no time elapsed". `set_initial_window` keeps the core
//! default (`cwnd = ssthresh = segs`): with `W_last` unknown (0) the first
//! update treats the flow as before any loss (cnt capped at 20).

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, CaState, PathInfo};
use crate::Time;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `delayed_ack` fixed-point shift (kernel `ACK_RATIO_SHIFT`).
const ACK_RATIO_SHIFT: u32 = 4;
/// `delayed_ack` after a reset: two segments per ACK.
const DELAYED_ACK_INIT: u32 = 2 << ACK_RATIO_SHIFT;
/// Scale of `beta_1024`.
const BETA_SCALE: u64 = 1024;
/// Before the first loss, `cnt` is capped here (≥ 5 % growth per RTT).
const CNT_CAP_BEFORE_LOSS: u32 = 20;

/// BIC settings (defaults = cc-spec §3.8, kernel values).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct BicConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// Binary-search divisor `B`: the search jumps to `(W_last − cwnd)/B` (kernel 4).
    pub b: u32,
    /// Maximum increment `S_max`, segments per RTT (kernel 16).
    pub max_increment_segs: u32,
    /// Windows at or below this are grown as Reno and halved on loss, segments (kernel 14).
    pub low_window_segs: u32,
    /// Multiplicative decrease `β`, in units of 1/1024 (kernel 819 ≈ 0.8).
    pub beta_1024: u32,
    /// Fast convergence: on a loss below `W_last`, remember
    /// `cwnd·(1024+β)/2048` (≈ 0.9·cwnd) instead of cwnd (kernel on).
    pub fast_convergence: bool,
    /// Plateau divisor factor: near `W_last`, `cnt = cwnd·smooth_part/B`
    /// (+1 segment per 5 RTTs; kernel 20, ns-3 5).
    pub smooth_part: u32,
    /// `cnt` is recomputed at most once per this interval while cwnd is
    /// unchanged, microseconds (kernel `HZ/32` = 31.25 ms).
    pub update_interval_us: u64,
    /// [PROJECT CHOICE] Scale `cnt` by the measured ACK ratio
    /// (`cnt·16/delayed_ack`) as the kernel does (default true; ns-3: false).
    pub ack_ratio_scaling: bool,
}

impl Default for BicConfig {
    fn default() -> Self {
        BicConfig {
            core: CoreConfig::default(),
            b: 4,
            max_increment_segs: 16,
            low_window_segs: 14,
            beta_1024: 819,
            fast_convergence: true,
            smooth_part: 20,
            update_interval_us: 31_250,
            ack_ratio_scaling: true,
        }
    }
}

impl BicConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Bic> {
        PolicyController::new(self.core.clone(), Bic::new(self.clone()))
    }
}

/// The BIC policy.
#[derive(Clone, Debug)]
pub struct Bic {
    config: BicConfig,
    /// Acknowledged segments per +1 segment (the `w` of H2).
    cnt: u32,
    /// Window at the last loss (`last_max_cwnd`), segments; 0 = none.
    w_last: u32,
    /// cwnd when `cnt` was last computed; 0 = never.
    last_cwnd: u32,
    /// When `cnt` was last computed.
    last_time: Time,
    /// Start of the current growth epoch; `None` = no epoch.
    epoch_start: Option<Time>,
    /// Segments per ACK × 16, EWMA with gain 1/16.
    delayed_ack: u32,
}

impl Bic {
    /// A BIC policy with `config`, in its reset state.
    pub fn new(config: BicConfig) -> Bic {
        let mut bic = Bic {
            config,
            cnt: 0,
            w_last: 0,
            last_cwnd: 0,
            last_time: Time::ZERO,
            epoch_start: None,
            delayed_ack: DELAYED_ACK_INIT,
        };
        bic.reset();
        bic
    }

    /// Kernel `bictcp_reset`.
    fn reset(&mut self) {
        self.cnt = 0;
        self.w_last = 0;
        self.last_cwnd = 0;
        self.last_time = Time::ZERO;
        self.epoch_start = None;
        self.delayed_ack = DELAYED_ACK_INIT;
    }

    /// The current per-ACK divisor `cnt`.
    pub fn cnt(&self) -> u32 {
        self.cnt
    }

    /// The window at the last loss (`W_last`), segments; 0 = none yet.
    pub fn w_last(&self) -> u32 {
        self.w_last
    }

    /// When the current growth epoch started, if one is running.
    pub fn epoch_start(&self) -> Option<Time> {
        self.epoch_start
    }

    /// Kernel `bictcp_update`: recompute `cnt` for `cwnd` at `now`.
    fn update(&mut self, cwnd: u32, now: Time) {
        let interval = Duration::from_micros(self.config.update_interval_us);
        if self.last_cwnd == cwnd && now.saturating_duration_since(self.last_time) <= interval {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now;
        if self.epoch_start.is_none() {
            self.epoch_start = Some(now);
        }
        // Reno below the low window; no ACK-ratio scaling (kernel returns early).
        if cwnd <= self.config.low_window_segs {
            self.cnt = cwnd.max(1);
            return;
        }
        let c = &self.config;
        let cwnd64 = cwnd as u64;
        let w_last = self.w_last as u64;
        let b = c.b.max(1) as u64;
        let s_max = c.max_increment_segs.max(1) as u64;
        let plateau = cwnd64.saturating_mul(c.smooth_part as u64) / b;
        let mut cnt: u64 = if cwnd64 < w_last {
            let dist = (w_last - cwnd64) / b;
            if dist > s_max {
                cwnd64 / s_max // linear, +S_max per RTT
            } else if dist <= 1 {
                plateau // plateau: +1 per smooth_part/B RTTs
            } else {
                cwnd64 / dist // binary search
            }
        } else if cwnd64 < w_last + b {
            plateau // just above W_last
        } else if cwnd64 < w_last.saturating_add(s_max.saturating_mul(b - 1)) {
            // Max probing ("slow start" mirror of the binary search); cwnd > w_last here.
            cwnd64 * (b - 1) / (cwnd64 - w_last)
        } else {
            cwnd64 / s_max // linear
        };
        if self.w_last == 0 && cnt > CNT_CAP_BEFORE_LOSS as u64 {
            cnt = CNT_CAP_BEFORE_LOSS as u64;
        }
        if c.ack_ratio_scaling {
            cnt = cnt.saturating_mul(1 << ACK_RATIO_SHIFT) / self.delayed_ack.max(1) as u64;
        }
        self.cnt = cnt.clamp(1, u32::MAX as u64) as u32;
    }
}

impl CcPolicy for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    fn init(&mut self, _core: &mut Core, _path: &PathInfo) {
        self.reset();
    }

    fn on_packets_acked(&mut self, core: &mut Core, ack: &AckSample, _path: &PathInfo) {
        if core.ca_state == CaState::Open {
            self.delayed_ack = self
                .delayed_ack
                .saturating_add(ack.acked_segs)
                .saturating_sub(self.delayed_ack >> ACK_RATIO_SHIFT);
        }
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        if !path.cwnd_limited {
            return;
        }
        let mut acked = acked;
        if core.in_slow_start() {
            acked = core.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.update(core.cwnd, path.now);
        core.cong_avoid_ai(self.cnt, acked);
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        let c = &self.config;
        let cwnd = core.cwnd;
        self.epoch_start = None;
        let w_last = if cwnd < self.w_last && c.fast_convergence {
            let f = BETA_SCALE + c.beta_1024 as u64;
            (cwnd as u64).saturating_mul(f) / (2 * BETA_SCALE)
        } else {
            cwnd as u64
        };
        self.w_last = w_last.min(u32::MAX as u64) as u32;
        let ssthresh = if cwnd <= c.low_window_segs {
            cwnd / 2
        } else {
            (cwnd as u64 * c.beta_1024 as u64 / BETA_SCALE).min(u32::MAX as u64) as u32
        };
        ssthresh.max(2)
    }

    fn on_state(&mut self, _core: &mut Core, new: CaState, _path: &PathInfo) {
        if new == CaState::Loss {
            self.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::testutil::{ack, path};
    use crate::types::{CongestionEvent, SSTHRESH_INF};

    fn bic(cwnd: u32, ssthresh: u32) -> PolicyController<Bic> {
        crate::testutil::with_window(BicConfig::default().build(), cwnd, ssthresh)
    }

    fn loss() -> CongestionEvent {
        crate::testutil::loss_event(100)
    }

    /// cnt after one CA ACK of `segs` segments with `delayed_ack` kept at 16·segs.
    fn cnt_for(cwnd: u32, w_last: u32, segs: u32) -> u32 {
        let mut c = bic(cwnd, 2);
        c.policy_mut().w_last = w_last;
        c.policy_mut().delayed_ack = 16 * segs;
        c.on_ack(&ack(segs), &path(0, 100));
        // The EWMA is at its fixed point for this ACK size.
        assert_eq!(c.policy().delayed_ack, 16 * segs);
        c.policy().cnt()
    }

    #[test]
    fn bi_cnt_table() {
        // (cwnd, W_last, cnt with delayed_ack 16, cnt with delayed_ack 32)
        let rows = [
            (10, 100, 10, 10),
            (60, 100, 6, 3),
            (98, 100, 490, 245),
            (50, 200, 3, 1),
            (120, 100, 18, 9),
            (200, 100, 12, 6),
            (100, 0, 6, 3),
            (400, 0, 20, 10),
        ];
        for (cwnd, w_last, cnt16, cnt32) in rows {
            assert_eq!(
                cnt_for(cwnd, w_last, 1),
                cnt16,
                "cwnd {cwnd} W_last {w_last} [16]"
            );
            assert_eq!(
                cnt_for(cwnd, w_last, 2),
                cnt32,
                "cwnd {cwnd} W_last {w_last} [32]"
            );
        }
    }

    #[test]
    fn bi_loss() {
        let mut c = bic(100, SSTHRESH_INF);
        c.policy_mut().w_last = 120;
        c.on_congestion_event(&loss(), &path(0, 100));
        assert_eq!((c.policy().w_last(), c.core().ssthresh), (89, 79));
        assert_eq!(c.policy().epoch_start(), None);

        let mut c = bic(100, SSTHRESH_INF);
        c.policy_mut().w_last = 80;
        c.on_congestion_event(&loss(), &path(0, 100));
        assert_eq!((c.policy().w_last(), c.core().ssthresh), (100, 79));

        let mut c = bic(12, SSTHRESH_INF);
        c.on_congestion_event(&loss(), &path(0, 100));
        assert_eq!(c.core().ssthresh, 6);
    }

    #[test]
    fn cnt_is_gated_for_31_25_ms() {
        let mut c = bic(60, 2);
        c.policy_mut().delayed_ack = 16;
        c.policy_mut().w_last = 100;
        // Each ACK is one segment; cwnd stays 60 until cnt segments are acknowledged.
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!(c.policy().cnt(), 6);
        assert_eq!(c.policy().epoch_start(), Some(Time::ZERO));
        // W_last changes, cwnd does not: cnt is kept within 31.25 ms.
        c.policy_mut().w_last = 200;
        let mut p = path(0, 100);
        p.now = Time::from_micros(31_250);
        c.on_ack(&ack(1), &p);
        assert_eq!(c.policy().cnt(), 6);
        // Just after the interval it is recomputed (dist 35 > 16 → 60/16).
        p.now = Time::from_micros(31_251);
        c.on_ack(&ack(1), &p);
        assert_eq!(c.policy().cnt(), 3);
        assert_eq!(c.policy().epoch_start(), Some(Time::ZERO));
    }

    #[test]
    fn delayed_ack_tracks_segments_per_ack_in_open_only() {
        let mut c = bic(100, 2);
        assert_eq!(c.policy().delayed_ack, 32);
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!(c.policy().delayed_ack, 31); // 32 + 1 − 2
        for _ in 0..200 {
            c.on_ack(&ack(1), &path(0, 100));
        }
        assert_eq!(c.policy().delayed_ack, 16 + 15); // fixed point of d + 1 − d/16
        c.on_congestion_event(&loss(), &path(0, 100));
        let before = c.policy().delayed_ack;
        let mut p = path(0, 100);
        p.ca_state = CaState::Recovery;
        c.on_ack(&ack(4), &p);
        assert_eq!(c.policy().delayed_ack, before);
    }

    #[test]
    fn rto_resets_the_state() {
        let mut c = bic(100, 2);
        c.on_ack(&ack(1), &path(0, 100));
        let mut p = path(0, 100);
        p.in_flight = 0;
        c.on_rto(&p);
        // ssthresh() ran first (W_last = 100), then on_state(Loss) reset everything.
        assert_eq!(c.core().ssthresh, 79);
        let b = c.policy();
        assert_eq!((b.cnt, b.w_last, b.last_cwnd, b.delayed_ack), (0, 0, 0, 32));
        assert_eq!((b.last_time, b.epoch_start), (Time::ZERO, None));
    }

    #[test]
    fn ack_ratio_scaling_can_be_switched_off() {
        let mut c = BicConfig {
            ack_ratio_scaling: false,
            ..Default::default()
        }
        .build();
        c.init(&path(0, 100));
        c.core_mut().cwnd = 60;
        c.core_mut().ssthresh = 2;
        c.policy_mut().w_last = 100;
        c.on_ack(&ack(2), &path(0, 100));
        assert_eq!(c.policy().cnt(), 6);
    }

    #[test]
    fn growth_follows_cnt() {
        // cwnd 60, W_last 100, one segment per ACK: cnt 6 → +1 per 6 segments.
        let mut c = bic(60, 2);
        c.policy_mut().w_last = 100;
        c.policy_mut().delayed_ack = 16;
        for _ in 0..5 {
            c.on_ack(&ack(1), &path(0, 100));
        }
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (60, 5));
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (61, 0));
    }

    #[test]
    fn degenerate_config_does_not_panic() {
        let mut c = BicConfig {
            b: 0,
            max_increment_segs: 0,
            low_window_segs: 0,
            beta_1024: u32::MAX,
            smooth_part: u32::MAX,
            ..Default::default()
        }
        .build();
        c.init(&path(0, 100));
        c.core_mut().cwnd = u32::MAX / 2;
        c.core_mut().ssthresh = 2;
        for w_last in [0, 1, u32::MAX / 2 - 1, u32::MAX] {
            c.policy_mut().w_last = w_last;
            c.policy_mut().last_cwnd = 0;
            c.on_ack(&ack(u32::MAX), &path(0, 100));
            assert!(c.policy().cnt() >= 1);
        }
        c.on_congestion_event(&loss(), &path(0, 100));
        assert!(c.core().ssthresh >= 2);
    }
}
