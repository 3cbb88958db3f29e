//! YeAH-TCP (cc-spec §3.9; Baiocchi, Castellani & Vacirca, PFLDnet 2007;
//! kernel `tcp_yeah.c`).
//!
//! YeAH is a high-speed controller for long fat networks that wants
//! Scalable-TCP growth without filling the bottleneck queue or starving Reno
//! flows. Once per round (H12) it estimates the queue it keeps at the
//! bottleneck, `Q = cwnd·(RTT − BaseRTT)/RTT`, from the round's minimum RTT.
//! While `Q ≤ ALPHA` and the queueing delay stays within `BaseRTT/PHY` it
//! runs in *fast* mode (Scalable growth, +1 % per round); otherwise in
//! *slow* mode (Reno growth), where a queue above `ALPHA` is drained at once
//! by a precautionary decongestion (`cwnd −= min(Q/GAMMA, cwnd/2^EPSILON)`,
//! never below `reno_count`). `reno_count` tracks what a competing Reno flow
//! would have. On loss it removes only the estimated queue (at least
//! `cwnd/2^DELTA`, at most half) unless it has been in slow mode for `RHO`
//! rounds — then it assumes Reno competition and halves. It reuses Vegas's
//! RTT aggregator and its `pkts_acked`, `set_state` and `cwnd_event` hooks
//! (an idle restart forgets the base RTT).
//!
//! **Parameters** ([`YeahConfig`]): `alpha_segs` = 80, `gamma` = 1,
//! `delta_shift` = 3, `epsilon_shift` = 1, `phy` = 8, `rho_rounds` = 16,
//! `zeta_rounds` = 50, `scalable_ai_cnt` = 100, `min_rtt_samples` = 3,
//! `cwnd_clamp_segs` = `0xffffffff/128`.
//!
//! **[PROJECT CHOICE]s.** `cwnd_clamp_segs` defaults to the kernel's
//! `0xffffffff/128 = 33554431` (the spec writes `2^32/128`, one more; the
//! kernel's integer value is used so traces match Linux).
//!
//! **Implementation notes.** Divisors and shift counts from the
//! configuration are guarded (a zero divisor counts as 1, a shift of 32 or
//! more gives 0). [`CcStats::mode`](crate::CcStats::mode) reports `fast`
//! or `slow`.
//!
//! **Packet-pair start-up** (`set_initial_window`): the default meaning —
//! `cwnd = ssthresh = segs`, congestion avoidance from the measured pipe.
//!
//! **Loss classification** for behaviour tests:
//! [`Yeah::last_reduction_was_queue_based`].

use super::vegas::VegasState;
use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, CaState, CwndEvent, PathInfo};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Cap of the slow-mode round counter (kernel `0xffffff`).
const DOING_RENO_MAX: u32 = 0xff_ffff;

/// YeAH settings (cc-spec §3.9).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct YeahConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// ALPHA: maximum tolerated bottleneck queue, segments.
    pub alpha_segs: u32,
    /// GAMMA: divisor of the queue removed by a precautionary decongestion (1 = all of it).
    pub gamma: u32,
    /// DELTA: a loss removes at least `cwnd >> DELTA` segments (shift count).
    pub delta_shift: u32,
    /// EPSILON: a precautionary decongestion removes at most `cwnd >> EPSILON` (shift count).
    pub epsilon_shift: u32,
    /// PHY: slow mode when the queueing delay exceeds `BaseRTT / PHY`.
    pub phy: u32,
    /// RHO: slow-mode rounds after which a loss halves (Reno competition assumed), rounds.
    pub rho_rounds: u32,
    /// ZETA: fast-mode rounds after which `reno_count` is reset, rounds.
    pub zeta_rounds: u32,
    /// Scalable TCP's AI count: fast mode adds one segment per `min(cwnd, this)` ACKed segments.
    pub scalable_ai_cnt: u32,
    /// RTT samples a round needs before the queue estimate is used (kernel `cntRTT > 2`).
    pub min_rtt_samples: u32,
    /// [PROJECT CHOICE] upper bound on cwnd, segments (kernel `0xffffffff/128`, so the
    /// multiplicative arithmetic cannot overflow).
    pub cwnd_clamp_segs: u32,
}

impl Default for YeahConfig {
    fn default() -> Self {
        YeahConfig {
            core: CoreConfig::default(),
            alpha_segs: 80,
            gamma: 1,
            delta_shift: 3,
            epsilon_shift: 1,
            phy: 8,
            rho_rounds: 16,
            zeta_rounds: 50,
            scalable_ai_cnt: 100,
            min_rtt_samples: 3,
            cwnd_clamp_segs: 0xffff_ffff / 128,
        }
    }
}

impl YeahConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Yeah> {
        PolicyController::new(
            self.core.clone(),
            Yeah {
                cfg: self.clone(),
                vegas: VegasState::new(),
                last_q: 0,
                doing_reno_now: 0,
                reno_count: 2,
                fast_count: 0,
                last_queue_based: false,
            },
        )
    }
}

/// `x >> s`, 0 when `s ≥ 32`.
fn shr(x: u32, s: u32) -> u32 {
    x.checked_shr(s).unwrap_or(0)
}

/// The YeAH policy.
#[derive(Clone, Debug)]
pub struct Yeah {
    cfg: YeahConfig,
    /// Shared Vegas state (`struct vegas`, first member in the kernel).
    pub(crate) vegas: VegasState,
    /// Queue estimate at the last round end with enough samples, segments (`lastQ`).
    pub(crate) last_q: u32,
    /// Consecutive slow-mode rounds (0 = fast mode).
    pub(crate) doing_reno_now: u32,
    /// Estimated window of a competing Reno flow, segments.
    pub(crate) reno_count: u32,
    /// Consecutive fast-mode rounds.
    pub(crate) fast_count: u32,
    last_queue_based: bool,
}

impl Yeah {
    /// Whether the last `ssthresh()` call (loss or RTO) used the queue-based
    /// reduction `red = clamp(lastQ, cwnd >> DELTA, max(cwnd/2, 2))` — YeAH
    /// judged it was not competing with Reno flows and removed only its
    /// queue — rather than halving (after `RHO` slow-mode rounds). `false`
    /// before the first loss.
    pub fn last_reduction_was_queue_based(&self) -> bool {
        self.last_queue_based
    }

    /// Whether YeAH is in fast (Scalable) mode.
    pub fn is_fast_mode(&self) -> bool {
        self.doing_reno_now == 0
    }

    /// The queue estimate at the last round end with enough samples, segments.
    pub fn queue_segs(&self) -> u32 {
        self.last_q
    }

    /// `reno_count`: the estimated window of a competing Reno flow, segments.
    pub fn reno_count_segs(&self) -> u32 {
        self.reno_count
    }

    /// The base RTT (minimum sample + 1 µs since the last (re-)init), if any.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.vegas.rtt.base_rtt()
    }

    /// The once-per-round queue estimate and mode switch.
    fn round_end(&mut self, core: &mut Core) {
        let rtt = self.vegas.rtt.round_min_us.max(1) as u64;
        let base = self.vegas.rtt.base_rtt_us as u64;
        let queue_delay = rtt.saturating_sub(base);
        // queue ≤ cwnd because queue_delay ≤ rtt.
        let queue = u32::try_from(core.cwnd as u64 * queue_delay / rtt).unwrap_or(u32::MAX);
        let alpha = self.cfg.alpha_segs;
        if queue > alpha || queue_delay > base / self.cfg.phy.max(1) as u64 {
            if queue > alpha && core.cwnd > self.reno_count {
                // Precautionary decongestion.
                let reduction =
                    (queue / self.cfg.gamma.max(1)).min(shr(core.cwnd, self.cfg.epsilon_shift));
                core.cwnd = core.cwnd.saturating_sub(reduction).max(self.reno_count);
                core.ssthresh = core.cwnd;
            }
            self.reno_count = if self.reno_count <= 2 {
                (core.cwnd >> 1).max(2)
            } else {
                self.reno_count.saturating_add(1)
            };
            self.doing_reno_now = self.doing_reno_now.saturating_add(1).min(DOING_RENO_MAX);
        } else {
            self.fast_count = self.fast_count.saturating_add(1);
            if self.fast_count > self.cfg.zeta_rounds {
                self.reno_count = 2;
                self.fast_count = 0;
            }
            self.doing_reno_now = 0;
        }
        self.last_q = queue;
    }
}

impl CcPolicy for Yeah {
    fn name(&self) -> &'static str {
        "yeah"
    }

    fn init(&mut self, core: &mut Core, path: &PathInfo) {
        self.vegas = VegasState::new();
        self.vegas.init(path);
        self.doing_reno_now = 0;
        self.last_q = 0;
        self.reno_count = 2;
        self.fast_count = 0;
        self.last_queue_based = false;
        core.cwnd_clamp = core.cwnd_clamp.min(self.cfg.cwnd_clamp_segs.max(2));
        core.cwnd = core.cwnd.min(core.cwnd_clamp);
    }

    fn on_packets_acked(&mut self, _core: &mut Core, ack: &AckSample, _path: &PathInfo) {
        self.vegas.on_packets_acked(ack);
    }

    fn on_state(&mut self, _core: &mut Core, new: CaState, path: &PathInfo) {
        self.vegas.on_state(new, path);
    }

    fn on_event(&mut self, _core: &mut Core, event: CwndEvent, path: &PathInfo) {
        self.vegas.on_event(event, path);
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        if !path.cwnd_limited {
            return;
        }
        let mut acked = acked;
        if core.in_slow_start() {
            acked = core.slow_start(acked);
        }
        if acked > 0 {
            let w = if self.doing_reno_now == 0 {
                core.cwnd.min(self.cfg.scalable_ai_cnt) // fast mode: Scalable
            } else {
                core.cwnd // slow mode: Reno
            };
            core.cong_avoid_ai(w, acked);
        }
        if self.vegas.end_of_round(path) {
            if self.vegas.enough_samples(self.cfg.min_rtt_samples) {
                self.round_end(core);
            }
            self.vegas.rtt.clear_round();
        }
    }

    fn mode(&self) -> Option<&'static str> {
        Some(if self.is_fast_mode() { "fast" } else { "slow" })
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        let cwnd = core.cwnd;
        let half = (cwnd >> 1).max(2);
        self.last_queue_based = self.doing_reno_now < self.cfg.rho_rounds;
        let reduction = if self.last_queue_based {
            // Min first, then max (kernel order).
            self.last_q.min(half).max(shr(cwnd, self.cfg.delta_shift))
        } else {
            half
        };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(2);
        cwnd.saturating_sub(reduction).max(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algos::vegas::test_support::{
        at, drive_round, loss, never_shrinks_at_min_rtt, stress,
    };
    use crate::controller::CongestionController;
    use crate::testutil::{ack, ack_rtt};

    fn yeah() -> PolicyController<Yeah> {
        let mut c = YeahConfig::default().build();
        c.init(&at(1000, 1100));
        c
    }

    /// A round ending with cwnd 400 in congestion avoidance (ssthresh 300).
    fn round_at_400(round_ms: u64) -> PolicyController<Yeah> {
        let mut c = yeah();
        drive_round(&mut c, 100, round_ms, 3, 400, 300);
        c
    }

    #[test]
    fn ye1_slow_mode_with_decongestion() {
        let c = round_at_400(130);
        let y = c.policy();
        // queue = floor(400·30000/130001) = 92 > 80.
        assert_eq!(y.queue_segs(), 92);
        assert_eq!((c.core().cwnd, c.core().ssthresh), (308, 308));
        assert_eq!(y.reno_count_segs(), 154);
        assert_eq!(y.doing_reno_now, 1);
        assert_eq!(c.stats().mode, Some("slow"));
    }

    #[test]
    fn ye2_fast_mode() {
        let c = round_at_400(110);
        let y = c.policy();
        assert_eq!(y.queue_segs(), 36);
        assert_eq!((c.core().cwnd, c.core().ssthresh), (400, 300));
        assert_eq!((y.doing_reno_now, y.fast_count), (0, 1));
        assert!(y.is_fast_mode());
        assert_eq!(c.stats().mode, Some("fast"));
    }

    #[test]
    fn ye3_slow_mode_by_delay_without_decongestion() {
        let c = round_at_400(115);
        let y = c.policy();
        assert_eq!(y.queue_segs(), 52);
        assert_eq!((c.core().cwnd, c.core().ssthresh), (400, 300));
        assert_eq!((y.reno_count, y.doing_reno_now), (200, 1));
    }

    #[test]
    fn ye4_loss_reduction() {
        let cases = [
            // (lastQ, doing_reno_now, reno_count before) → (ssthresh, queue-based, reno_count after)
            ((10, 0, 2), (350, true, 2)),
            ((300, 0, 2), (200, true, 2)),
            ((10, 20, 200), (200, false, 100)),
        ];
        for ((last_q, doing, reno), (want, queue_based, reno_after)) in cases {
            let mut c = yeah();
            c.core_mut().cwnd = 400;
            let y = c.policy_mut();
            y.last_q = last_q;
            y.doing_reno_now = doing;
            y.reno_count = reno;
            y.fast_count = 7;
            c.on_congestion_event(&loss(), &at(1000, 1100));
            let y = c.policy();
            assert_eq!(c.core().ssthresh, want, "lastQ {last_q}, doing {doing}");
            assert_eq!(y.last_reduction_was_queue_based(), queue_based);
            assert_eq!((y.reno_count, y.fast_count), (reno_after, 0));
        }
    }

    #[test]
    fn clamp_is_lowered_at_init() {
        let c = yeah();
        assert_eq!(c.core().cwnd_clamp, 33_554_431);
    }

    #[test]
    fn fast_mode_grows_like_scalable_slow_mode_like_reno() {
        let mut c = round_at_400(110); // fast mode
        c.core_mut().cwnd_cnt = 0;
        for una in 1202..1302 {
            c.on_ack(&ack(1), &at(una, 1300));
        }
        assert_eq!(c.core().cwnd, 401, "+1 per 100 segments");
        let mut c = round_at_400(115); // slow mode
        c.core_mut().cwnd_cnt = 0;
        for una in 1202..1302 {
            c.on_ack(&ack(1), &at(una, 1300));
        }
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (400, 100));
    }

    #[test]
    fn zeta_fast_rounds_reset_reno_count() {
        let mut c = round_at_400(110); // next round ends after packet 1300
        c.policy_mut().reno_count = 77;
        c.policy_mut().fast_count = 50;
        for una in 1250..1253 {
            c.on_ack(&ack_rtt(1, 110_000), &at(una, 1300));
        }
        assert_eq!(c.policy().fast_count, 50, "same round");
        c.on_ack(&ack_rtt(1, 110_000), &at(1301, 1400));
        assert_eq!((c.policy().reno_count, c.policy().fast_count), (2, 0));
    }

    #[test]
    fn idle_restart_forgets_base_rtt_only() {
        let mut c = round_at_400(130);
        c.on_idle_restart(&at(1201, 1300), Duration::from_secs(5));
        let y = c.policy();
        assert_eq!(y.base_rtt(), None);
        assert_eq!(
            (y.reno_count, y.doing_reno_now, y.queue_segs()),
            (154, 1, 92)
        );
    }

    #[test]
    fn survives_arbitrary_calls() {
        for seed in 1..8 {
            let (mut fast, mut slow) = (0, 0);
            stress(&mut YeahConfig::default().build(), seed, |c| {
                if c.policy().is_fast_mode() {
                    fast += 1;
                } else {
                    slow += 1;
                }
            });
            assert!(fast > 0 && slow > 0, "{fast} / {slow}");
        }
    }

    #[test]
    fn never_shrinks_when_rtt_stays_at_minimum() {
        never_shrinks_at_min_rtt(&mut YeahConfig::default().build());
    }
}
