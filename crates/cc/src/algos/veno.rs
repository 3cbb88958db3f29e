//! TCP Veno (cc-spec §3.7; Fu & Liew, IEEE JSAC 2003; kernel `tcp_veno.c`).
//!
//! Veno is Reno with a Vegas-style backlog estimate `N = cwnd·(RTT −
//! BaseRTT)/RTT`, meant for wireless access links where many losses are
//! random rather than congestive. While `N < β` the path is judged not
//! congested: growth is Reno's and a loss is taken as random, cutting the
//! window only to 4/5. Once `N ≥ β` the path is congestive: the window grows
//! by one segment every *other* round and a loss halves it. As in the
//! kernel, `N` is kept doubled (`diff2 = 2N`, half-segment resolution) and is
//! computed on every growth ACK from that ACK's RTT (the minimum is cleared
//! after every ACK); the sample counter is never reset after start-up.
//!
//! **Parameters** ([`VenoConfig`]): `beta_segs` = 3 (backlog threshold,
//! compared as `diff2 < 2β`), `random_loss_num/den` = 4/5 (ssthresh factor
//! for a random loss), `min_rtt_samples` = 3 (kernel `cntrtt > 2`).
//!
//! **[PROJECT CHOICE]s.** `keep_diff_without_rtt_sample` (default true): on
//! a growth ACK that carried no RTT sample since the last computation, the
//! last `diff2` is kept. The kernel computes with its "no sample" sentinel
//! (`0x7fffffff` µs), which makes `target2 ≈ 0` and classifies the path as
//! congestive — an artefact of ACKs without samples, not a measurement;
//! `false` reproduces it.
//!
//! **Kernel details kept.** Before the first computation `diff2 = 0`
//! (zeroed state), so an early loss counts as random. An idle restart
//! forgets the base RTT but keeps `cntrtt` and `diff2`. The every-other-round
//! rule uses the core's `cwnd_cnt` as its credit counter.
//!
//! **Packet-pair start-up** (`set_initial_window`): the default meaning —
//! `cwnd = ssthresh = segs`, congestion avoidance from the measured pipe.
//!
//! **Loss classification** for behaviour tests: [`Veno::last_loss_was_random`].

use super::vegas::{bound_window, RttAggregator, RTT_INF_US};
use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, CaState, CwndEvent, PathInfo};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Veno settings (cc-spec §3.7).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct VenoConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// β: backlog (segments) at or above which the path is congestive
    /// (kernel compares `2N` with `2β = 6`).
    pub beta_segs: u32,
    /// Numerator of the ssthresh factor after a random (non-congestive) loss (4 of 4/5).
    pub random_loss_num: u32,
    /// Denominator of the ssthresh factor after a random loss (5 of 4/5).
    pub random_loss_den: u32,
    /// RTT samples needed since start-up before the backlog rule is used;
    /// fewer grow as NewReno (kernel `cntrtt <= 2`).
    pub min_rtt_samples: u32,
    /// [PROJECT CHOICE] keep the last `diff2` when a growth ACK finds no RTT
    /// sample since the previous computation (default); `false` computes
    /// with the kernel's ∞ sentinel (the path then looks congestive).
    pub keep_diff_without_rtt_sample: bool,
}

impl Default for VenoConfig {
    fn default() -> Self {
        VenoConfig {
            core: CoreConfig::default(),
            beta_segs: 3,
            random_loss_num: 4,
            random_loss_den: 5,
            min_rtt_samples: 3,
            keep_diff_without_rtt_sample: true,
        }
    }
}

impl VenoConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Veno> {
        PolicyController::new(
            self.core.clone(),
            Veno {
                cfg: self.clone(),
                rtt: RttAggregator::new(),
                inc: true,
                diff2: 0,
                doing: false,
                last_loss_random: false,
            },
        )
    }
}

/// The Veno policy.
#[derive(Clone, Debug)]
pub struct Veno {
    cfg: VenoConfig,
    /// H13 samples: `base_rtt`, `min_rtt` (cleared after every growth ACK), `cntrtt`.
    pub(crate) rtt: RttAggregator,
    /// Congestive state: the next full window of credit may add a segment.
    pub(crate) inc: bool,
    /// `2N`, half-segments, as last computed.
    pub(crate) diff2: u64,
    /// `doing_veno_now`: the backlog rule is active (state Open).
    pub(crate) doing: bool,
    last_loss_random: bool,
}

impl Veno {
    /// Whether the last `ssthresh()` call (loss or RTO) judged the loss
    /// random, i.e. `diff2 < 2β` then, so ssthresh was `cwnd·4/5` rather
    /// than `cwnd/2`. `false` before the first loss.
    pub fn last_loss_was_random(&self) -> bool {
        self.last_loss_random
    }

    /// The current backlog estimate `N = diff2/2`, segments (last computed value).
    pub fn backlog_segs(&self) -> f64 {
        self.diff2 as f64 / 2.0
    }

    /// Whether the path is currently judged congestive (`diff2 ≥ 2β`).
    pub fn is_congestive(&self) -> bool {
        self.diff2 >= self.two_beta()
    }

    /// The base RTT (minimum sample + 1 µs since the last (re-)init), if any.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.rtt.base_rtt()
    }

    fn two_beta(&self) -> u64 {
        2 * self.cfg.beta_segs as u64
    }

    /// `veno_enable`.
    fn enable(&mut self) {
        self.doing = true;
        self.rtt.clear_min();
    }

    /// `tcp_veno_init` (also the idle-restart re-init): forgets the base
    /// RTT; keeps `cntrtt` and `diff2` as the kernel does.
    fn veno_init(&mut self) {
        self.rtt.forget_base();
        self.inc = true;
        self.enable();
    }

    /// `diff2 = 2·cwnd − floor(2·cwnd·base_rtt / min_rtt)`.
    fn update_diff(&mut self, cwnd: u32) {
        if self.cfg.keep_diff_without_rtt_sample && self.rtt.round_min_us == RTT_INF_US {
            return;
        }
        let two_cwnd = 2 * cwnd as u128;
        let target2 =
            two_cwnd * self.rtt.base_rtt_us as u128 / self.rtt.round_min_us.max(1) as u128;
        // min_rtt ≥ base_rtt, so target2 ≤ 2·cwnd < 2^33.
        self.diff2 = u64::try_from(two_cwnd.saturating_sub(target2)).unwrap_or(u64::MAX);
    }
}

impl CcPolicy for Veno {
    fn name(&self) -> &'static str {
        "veno"
    }

    fn init(&mut self, _core: &mut Core, _path: &PathInfo) {
        // Kernel: the private area is zeroed, then `tcp_veno_init`.
        self.rtt = RttAggregator::new();
        self.diff2 = 0;
        self.last_loss_random = false;
        self.veno_init();
    }

    fn on_packets_acked(&mut self, _core: &mut Core, ack: &AckSample, _path: &PathInfo) {
        if let Some(rtt) = ack.rtt {
            self.rtt.sample(rtt);
        }
    }

    fn on_state(&mut self, _core: &mut Core, new: CaState, _path: &PathInfo) {
        if new == CaState::Open {
            self.enable();
        } else {
            self.doing = false;
        }
    }

    fn on_event(&mut self, _core: &mut Core, event: CwndEvent, _path: &PathInfo) {
        if let CwndEvent::TxStart { .. } = event {
            self.veno_init();
        }
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        if !self.doing {
            core.reno_cong_avoid(acked, path);
            return;
        }
        if !path.cwnd_limited {
            return;
        }
        if self.rtt.cnt < self.cfg.min_rtt_samples {
            core.reno_cong_avoid(acked, path);
        } else {
            self.update_diff(core.cwnd);
            let mut acked = acked;
            if core.in_slow_start() {
                acked = core.slow_start(acked);
            }
            if acked > 0 {
                if self.diff2 < self.two_beta() {
                    // Non-congestive: Reno, +1 per round.
                    let w = core.cwnd;
                    core.cong_avoid_ai(w, acked);
                } else if core.cwnd_cnt >= core.cwnd {
                    // Congestive: +1 every other round.
                    if self.inc && core.cwnd < core.cwnd_clamp {
                        core.cwnd += 1;
                        self.inc = false;
                    } else {
                        self.inc = true;
                    }
                    core.cwnd_cnt = 0;
                } else {
                    core.cwnd_cnt = core.cwnd_cnt.saturating_add(acked);
                }
            }
            core.cwnd = bound_window(core.cwnd, core.cwnd_clamp);
        }
        // N uses the latest ACK's RTT, not a round minimum.
        self.rtt.clear_min();
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        let cwnd = core.cwnd as u64;
        self.last_loss_random = self.diff2 < self.two_beta();
        let s = if self.last_loss_random {
            cwnd * self.cfg.random_loss_num as u64 / self.cfg.random_loss_den.max(1) as u64
        } else {
            cwnd / 2
        };
        u32::try_from(s).unwrap_or(u32::MAX).max(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algos::vegas::test_support::{at, loss, never_shrinks_at_min_rtt, stress};
    use crate::controller::CongestionController;
    use crate::testutil::{ack, ack_rtt};

    /// Veno in congestion avoidance at `cwnd` with a base RTT of `base_ms`
    /// established by three ACKs (so `cntrtt = 3`), `cwnd_cnt = 0`, `inc`.
    fn veno_at(cwnd: u32, base_ms: u64) -> PolicyController<Veno> {
        let mut c = VenoConfig::default().build();
        let p = at(1000, 1100);
        c.init(&p);
        for _ in 0..3 {
            c.on_ack(&ack_rtt(1, base_ms * 1000), &p);
        }
        let core = c.core_mut();
        core.cwnd = cwnd;
        core.ssthresh = cwnd / 2;
        core.cwnd_cnt = 0;
        c.policy_mut().inc = true;
        c
    }

    /// One 1-segment growth ACK with an RTT sample of `rtt_ms`, then a loss.
    fn diff2_then_loss(cwnd: u32, base_ms: u64, rtt_ms: u64) -> (u64, u32, bool) {
        let mut c = veno_at(cwnd, base_ms);
        c.on_ack(&ack_rtt(1, rtt_ms * 1000), &at(1000, 1100));
        let diff2 = c.policy().diff2;
        c.on_congestion_event(&loss(), &at(1000, 1100));
        (diff2, c.core().ssthresh, c.policy().last_loss_was_random())
    }

    #[test]
    fn ve1_non_congestive_loss_cuts_to_four_fifths() {
        // target2 = floor(100·100001/104001) = 96 → diff2 = 4 (N = 1.92).
        assert_eq!(diff2_then_loss(50, 100, 104), (4, 40, true));
    }

    #[test]
    fn ve2_congestive_loss_halves() {
        // target2 = floor(100·100001/110001) = 90 → diff2 = 10 (N = 4.55).
        assert_eq!(diff2_then_loss(50, 100, 110), (10, 25, false));
    }

    #[test]
    fn ve3_threshold_at_two_beta() {
        assert_eq!(diff2_then_loss(100, 50, 51), (4, 80, true));
        assert_eq!(diff2_then_loss(100, 50, 52), (8, 50, false));
    }

    #[test]
    fn ve4_every_other_round_when_congestive() {
        let mut c = veno_at(50, 100);
        let p = at(1000, 1100);
        let mut cwnd_after = Vec::new();
        for n in 1..=155u32 {
            c.on_ack(&ack_rtt(1, 110_000), &p);
            assert!(c.policy().is_congestive(), "ACK #{n}");
            cwnd_after.push((n, c.core().cwnd, c.policy().inc));
        }
        assert_eq!(cwnd_after[49], (50, 50, true));
        assert_eq!(cwnd_after[50], (51, 51, false), "ACK #51 adds a segment");
        assert_eq!(cwnd_after[101], (102, 51, false));
        assert_eq!(cwnd_after[102], (103, 51, true), "ACK #103 only re-arms");
        assert_eq!(cwnd_after[153], (154, 51, true));
        assert_eq!(cwnd_after[154], (155, 52, false), "ACK #155 adds a segment");
    }

    #[test]
    fn min_rtt_cleared_every_ack_but_count_kept() {
        let mut c = veno_at(50, 100);
        c.on_ack(&ack_rtt(1, 110_000), &at(1000, 1100));
        assert_eq!(c.policy().rtt.round_min_us, RTT_INF_US);
        assert_eq!(c.policy().rtt.cnt, 4);
        assert!(c.policy().is_congestive());
        // The next ACK's RTT alone decides: back at the base → non-congestive.
        c.on_ack(&ack_rtt(1, 100_000), &at(1000, 1100));
        assert_eq!(c.policy().diff2, 0);
    }

    #[test]
    fn ack_without_sample_keeps_last_diff_by_default() {
        let mut c = veno_at(50, 100);
        c.on_ack(&ack_rtt(1, 104_000), &at(1000, 1100));
        c.on_ack(&ack(1), &at(1000, 1100));
        assert_eq!(c.policy().diff2, 4);
        // Kernel-literal: min_rtt = 0x7fffffff µs → target2 = 0 → diff2 = 2·cwnd.
        let mut c = VenoConfig {
            keep_diff_without_rtt_sample: false,
            ..Default::default()
        }
        .build();
        let p = at(1000, 1100);
        c.init(&p);
        for _ in 0..3 {
            c.on_ack(&ack_rtt(1, 100_000), &p);
        }
        c.core_mut().cwnd = 50;
        c.core_mut().ssthresh = 25;
        c.on_ack(&ack(1), &p);
        assert_eq!(c.policy().diff2, 100);
    }

    #[test]
    fn idle_restart_forgets_base_keeps_count() {
        let mut c = veno_at(50, 100);
        c.on_idle_restart(&at(1000, 1100), Duration::from_secs(5));
        assert_eq!(c.policy().base_rtt(), None);
        assert_eq!(c.policy().rtt.cnt, 3);
        assert!(c.policy().inc && c.policy().doing);
    }

    #[test]
    fn reno_growth_with_few_samples_or_outside_open() {
        let mut c = VenoConfig::default().build();
        let p = at(1000, 1100);
        c.init(&p);
        c.on_ack(&ack_rtt(2, 100_000), &p);
        assert_eq!(c.core().cwnd, 12, "slow start with cntrtt = 1");
        c.on_congestion_event(&loss(), &p);
        assert!(!c.policy().doing);
        assert!(c.policy().last_loss_was_random(), "diff2 starts at 0");
        assert_eq!(c.core().ssthresh, 12 * 4 / 5);
        c.on_recovery_exit(&at(1101, 1200));
        assert!(c.policy().doing);
    }

    #[test]
    fn survives_arbitrary_calls() {
        for keep in [true, false] {
            for seed in 1..6 {
                let mut c = VenoConfig {
                    keep_diff_without_rtt_sample: keep,
                    ..Default::default()
                }
                .build();
                let (mut congestive, mut calm) = (0, 0);
                stress(&mut c, seed, |c| {
                    if c.policy().is_congestive() {
                        congestive += 1;
                    } else {
                        calm += 1;
                    }
                });
                assert!(congestive > 0 && calm > 0, "{congestive} / {calm}");
            }
        }
    }

    #[test]
    fn never_shrinks_when_rtt_stays_at_minimum() {
        never_shrinks_at_min_rtt(&mut VenoConfig::default().build());
    }
}
