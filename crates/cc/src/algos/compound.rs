//! Compound TCP (CTCP): a Reno loss window plus a delay window
//! (cc-spec §3.13; Tan, Song, Zhang & Sridharan, INFOCOM 2006;
//! draft-sridharan-tcpm-ctcp-02). No kernel or ns-3 reference exists.
//!
//! CTCP is for high-speed, long-distance paths where Reno's one segment per
//! RTT is too slow, while staying fair to Reno when queues build. The
//! window is `cwnd_l + floor(dwnd)`: the loss window `cwnd_l` follows Reno
//! (slow start, one segment per window of acknowledged segments, halved on
//! loss); the real-valued delay window `dwnd` grows by `α·win^k − 1` per
//! round while the Vegas-style backlog estimate `diff = win·(RTT −
//! base_RTT)/RTT` stays below γ, and shrinks by `ζ·diff` once it does not.
//! On a congestion event the whole window is reduced by β. The core's PRR
//! runs on the total during recovery; at the end of the episode `cwnd_l` and
//! `dwnd` take their post-reduction values. RTT samples are aggregated per
//! round as in Vegas (H13: `rtt_us + 1`, `base_rtt` = lifetime minimum,
//! `round_min` and a sample count per round; rounds are H12's sequence form).
//!
//! **Parameters** ([`CompoundConfig`]): `α = 1/8`, `β = 1/2`, `k = 3/4`,
//! `ζ = 1`, `γ = 30` segments.
//!
//! **[PROJECT CHOICE]s** (the sources leave these open):
//! * the RTT of a round is its minimum sample, and `dwnd` is only updated
//!   for a round with at least `min_round_samples = 3` samples (Vegas'
//!   rule: fewer samples are too noisy to separate queueing from jitter);
//! * no low-window threshold (`dwnd_min_window_segs = 0`): with the default
//!   constants `α·win^k − 1 > 0` only for `win > 16`, so the delay window is
//!   naturally inactive for small windows;
//! * the loss window's half is floored and `dwnd' = max(win·(1 − β) −
//!   floor(cwnd_l/2), 0)`, so the total stays `win·(1 − β)` for odd `cwnd_l`;
//! * the per-round aggregator restarts at the start and at the end of every
//!   congestion episode (`reset_round_on_episode`), so a round never mixes
//!   samples from before and after a reduction.
//!
//! Other gaps filled here: `win` in the delay-window and loss rules is the
//! real-valued `cwnd_l + dwnd`; the delay window is only updated on rounds
//! that end in congestion avoidance while cwnd-limited (H3: do not grow an
//! unused window, and an app-limited window overstates the backlog); in slow
//! start the whole window is the loss window (an existing `dwnd` is folded
//! into `cwnd_l`, never dropped); an undo restores the split from before the
//! episode. `set_initial_window` starts congestion avoidance with the
//! measured window as the loss window and `dwnd = 0`.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::rate::SeqRound;
use crate::types::{AckSample, CaState, CwndEvent, PathInfo};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Compound TCP settings (cc-spec §3.13).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct CompoundConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// Delay-window increase factor α in `α·win^k − 1`, segments per round (1/8).
    pub alpha: f64,
    /// Multiplicative decrease of the whole window on a congestion event (1/2).
    pub beta: f64,
    /// Exponent k of the delay-window increase (3/4).
    pub k: f64,
    /// Delay-window decrease per segment of estimated backlog, ζ (1).
    pub zeta: f64,
    /// Backlog threshold γ, segments: below it `dwnd` grows, above it shrinks (30).
    pub gamma_segs: f64,
    /// [PROJECT CHOICE] Fewest RTT samples a round needs to update `dwnd` (3, as Vegas).
    pub min_round_samples: u32,
    /// [PROJECT CHOICE] `dwnd` only grows while `cwnd_l + dwnd` is at least
    /// this many segments (0 = no threshold; the increase is 0 below 16 anyway).
    pub dwnd_min_window_segs: u32,
    /// [PROJECT CHOICE] Restart the per-round RTT aggregator when a
    /// congestion episode starts and when it ends.
    pub reset_round_on_episode: bool,
}

impl Default for CompoundConfig {
    fn default() -> Self {
        CompoundConfig {
            core: CoreConfig::default(),
            alpha: 0.125,
            beta: 0.5,
            k: 0.75,
            zeta: 1.0,
            gamma_segs: 30.0,
            min_round_samples: 3,
            dwnd_min_window_segs: 0,
            reset_round_on_episode: true,
        }
    }
}

impl CompoundConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Compound> {
        PolicyController::new(self.core.clone(), Compound::new(self.clone()))
    }
}

/// The Compound TCP policy.
#[derive(Clone, Debug)]
pub struct Compound {
    config: CompoundConfig,
    /// Loss window, segments.
    cwnd_l: u32,
    /// Delay window, segments (finite, ≥ 0).
    dwnd: f64,
    /// The `core.cwnd` this policy last wrote; a difference means the core
    /// changed the window (PRR, RTO, undo, clamp) and the split is re-derived.
    exported: u32,
    /// Lifetime minimum of `rtt_us + 1`, µs (`u64::MAX` = no sample yet).
    base_rtt_us: u64,
    /// Minimum of `rtt_us + 1` in the current round, µs (`u64::MAX` = none).
    round_min_us: u64,
    /// RTT samples in the current round.
    cnt: u32,
    /// Round boundary (H12, sequence form).
    round: SeqRound,
    /// `(cwnd_l', dwnd')` decided at the start of the current episode.
    pending: Option<(u32, f64)>,
    /// `(cwnd_l, dwnd)` before the current episode, for an undo.
    prior: Option<(u32, f64)>,
}

/// A finite, non-negative delay window no larger than `u32::MAX` segments.
fn sane(d: f64) -> f64 {
    if d.is_finite() {
        d.clamp(0.0, u32::MAX as f64)
    } else {
        0.0
    }
}

impl Compound {
    fn new(config: CompoundConfig) -> Compound {
        Compound {
            config,
            cwnd_l: 1,
            dwnd: 0.0,
            exported: 0,
            base_rtt_us: u64::MAX,
            round_min_us: u64::MAX,
            cnt: 0,
            round: SeqRound::default(),
            pending: None,
            prior: None,
        }
    }

    /// The loss window, segments.
    pub fn cwnd_l(&self) -> u32 {
        self.cwnd_l
    }

    /// The delay window, segments (real-valued).
    pub fn dwnd(&self) -> f64 {
        self.dwnd
    }

    /// `cwnd_l + floor(dwnd)`, segments.
    fn total(&self) -> u32 {
        self.cwnd_l.saturating_add(self.dwnd.floor() as u32)
    }

    /// `cwnd_l + dwnd`, segments (real-valued).
    fn win(&self) -> f64 {
        self.cwnd_l as f64 + self.dwnd
    }

    /// Split a total window set by the core: keep `floor(dwnd)` if it fits.
    fn split(&mut self, total: u32) {
        let total = total.max(1);
        let fd = self.dwnd.floor() as u32;
        if total > fd {
            self.cwnd_l = total - fd;
        } else {
            self.cwnd_l = 1;
            self.dwnd = (total - 1) as f64;
        }
    }

    /// Re-derive the split if the core changed `cwnd` since we last wrote it.
    fn absorb(&mut self, cwnd: u32) {
        if cwnd != self.exported {
            self.split(cwnd);
            self.exported = cwnd;
        }
    }

    /// Write `cwnd_l + floor(dwnd)` to the core (clamped; the split follows a clamp).
    fn export(&mut self, core: &mut Core) {
        self.dwnd = sane(self.dwnd);
        self.cwnd_l = self.cwnd_l.max(1);
        let total = self.total();
        core.set_cwnd(total);
        if core.cwnd != total {
            self.split(core.cwnd);
        }
        self.exported = core.cwnd;
    }

    /// Start a new round at `snd_nxt` with an empty aggregator.
    fn reset_round(&mut self, snd_nxt: u64) {
        self.round.beg_snd_nxt = snd_nxt;
        self.round_min_us = u64::MAX;
        self.cnt = 0;
    }

    /// The once-per-round delay-window rule, with `RTT = round_min`.
    fn update_dwnd(&mut self) {
        if self.round_min_us == u64::MAX || self.base_rtt_us == u64::MAX {
            return;
        }
        let c = &self.config;
        let rtt = self.round_min_us.max(1) as f64;
        let base = (self.base_rtt_us as f64).min(rtt);
        let win = self.win();
        let diff = win * (rtt - base) / rtt;
        if diff < c.gamma_segs {
            if win >= c.dwnd_min_window_segs as f64 {
                let inc = c.alpha * win.powf(c.k) - 1.0;
                if inc.is_finite() && inc > 0.0 {
                    self.dwnd += inc;
                }
            }
        } else {
            self.dwnd = (self.dwnd - c.zeta * diff).max(0.0);
        }
        self.dwnd = sane(self.dwnd);
    }
}

impl CcPolicy for Compound {
    fn name(&self) -> &'static str {
        "compound"
    }

    fn init(&mut self, core: &mut Core, path: &PathInfo) {
        *self = Compound::new(self.config.clone());
        self.cwnd_l = core.cwnd.max(1);
        self.exported = core.cwnd;
        self.reset_round(path.snd_nxt);
    }

    fn on_packets_acked(&mut self, _core: &mut Core, ack: &AckSample, _path: &PathInfo) {
        if let Some(rtt) = ack.rtt {
            // H13: +1 µs so that a zero RTT still counts.
            let v = u64::try_from(rtt.as_micros())
                .unwrap_or(u64::MAX)
                .saturating_add(1);
            self.base_rtt_us = self.base_rtt_us.min(v);
            self.round_min_us = self.round_min_us.min(v);
            self.cnt = self.cnt.saturating_add(1);
        }
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        self.absorb(core.cwnd);
        if self.round.end_of_round(path.snd_una, path.snd_nxt) {
            if !core.in_slow_start()
                && path.cwnd_limited
                && self.cnt >= self.config.min_round_samples
            {
                self.update_dwnd();
            }
            self.round_min_us = u64::MAX;
            self.cnt = 0;
        }
        if path.cwnd_limited {
            let mut left = acked;
            if core.in_slow_start() {
                // The delay component only runs in congestion avoidance.
                self.cwnd_l = self.total();
                self.dwnd = 0.0;
                core.cwnd = self.cwnd_l;
                left = core.slow_start(acked);
                self.cwnd_l = core.cwnd;
            }
            if left > 0 {
                // Loss window: +1/win per acknowledged segment (H2 on cwnd_l).
                let w = self.total();
                core.cwnd = self.cwnd_l;
                core.cong_avoid_ai(w, left);
                self.cwnd_l = core.cwnd;
            }
        }
        self.export(core);
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        self.absorb(core.cwnd);
        self.prior = Some((self.cwnd_l, self.dwnd));
        let half = self.cwnd_l / 2;
        let beta = if self.config.beta.is_finite() {
            self.config.beta.clamp(0.0, 1.0)
        } else {
            0.5
        };
        let cwnd_l = half.max(1);
        let dwnd = sane(self.win() * (1.0 - beta) - half as f64);
        self.pending = Some((cwnd_l, dwnd));
        cwnd_l.saturating_add(dwnd.floor() as u32).max(2)
    }

    fn undo_cwnd(&mut self, core: &Core) -> u32 {
        self.pending = None;
        if let Some((l, d)) = self.prior.take() {
            let t = l.saturating_add(d.floor() as u32);
            if t >= core.cwnd {
                self.cwnd_l = l.max(1);
                self.dwnd = sane(d);
                self.exported = t;
                return t;
            }
        }
        core.reno_undo()
    }

    fn on_state(&mut self, core: &mut Core, new: CaState, path: &PathInfo) {
        if new == CaState::Loss {
            // After an RTO the loss window restarts from the core's cwnd; dwnd = 0.
            self.dwnd = 0.0;
            self.cwnd_l = core.cwnd.max(1);
            self.exported = core.cwnd;
        }
        if self.config.reset_round_on_episode
            && matches!(new, CaState::Cwr | CaState::Recovery | CaState::Loss)
        {
            self.reset_round(path.snd_nxt);
        }
    }

    fn on_event(&mut self, core: &mut Core, event: CwndEvent, path: &PathInfo) {
        match event {
            CwndEvent::CompleteCwr => {
                // The core has just set cwnd = ssthresh.
                if let Some((l, d)) = self.pending.take() {
                    self.cwnd_l = l;
                    self.dwnd = d;
                }
                if self.total() != core.cwnd {
                    self.split(core.cwnd);
                }
                self.export(core);
                if self.config.reset_round_on_episode {
                    self.reset_round(path.snd_nxt);
                }
            }
            CwndEvent::Loss => {
                // RTO: the loss window follows standard TCP.
                self.absorb(core.cwnd);
                core.ssthresh = ((self.win() / 2.0).floor().min(u32::MAX as f64) as u32).max(2);
                self.pending = None;
                self.dwnd = 0.0;
                self.cwnd_l = 1;
                // The core sets cwnd = in_flight + 1 next; force a re-split then.
                self.exported = 0;
            }
            CwndEvent::TxStart { .. } | CwndEvent::EcnCe => {}
        }
    }

    fn on_initial_window(&mut self, core: &mut Core, segs: u32, _path: &PathInfo) {
        core.set_cwnd(segs);
        core.ssthresh = core.cwnd;
        self.cwnd_l = core.cwnd;
        self.dwnd = 0.0;
        self.exported = core.cwnd;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::testutil::{ack, ack_rtt, path};
    use crate::types::CongestionEvent;

    /// A controller in congestion avoidance with `cwnd_l` and `dwnd`
    /// (round boundary at packet 1100, `snd_una` 1000).
    fn ctcp(cwnd_l: u32, dwnd: f64) -> PolicyController<Compound> {
        let mut c = CompoundConfig::default().build();
        c.init(&path(0, 100));
        let (core, p) = c.parts_mut();
        p.cwnd_l = cwnd_l;
        p.dwnd = dwnd;
        p.export(core);
        core.ssthresh = 2;
        c
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    fn inc(win: f64) -> f64 {
        0.125 * win.powf(0.75) - 1.0
    }

    fn loss() -> CongestionEvent {
        crate::testutil::loss_event(100)
    }

    #[test]
    fn ct1_delay_window_increase() {
        let mut c = ctcp(80, 20.0);
        let p = c.policy_mut();
        // diff = 100·(100,000 − 90,000)/100,000 = 10 < 30.
        (p.base_rtt_us, p.round_min_us, p.cnt) = (90_000, 100_000, 3);
        p.update_dwnd();
        assert!(close(p.dwnd, 20.0 + inc(100.0)), "{}", p.dwnd);
        assert!((p.dwnd - 22.9528).abs() < 5e-5);
    }

    #[test]
    fn ct2_increase_by_window() {
        for (cwnd_l, want) in [(1000, 21.2285), (16, 0.0), (10, 0.0)] {
            let mut c = ctcp(cwnd_l, 0.0);
            let p = c.policy_mut();
            (p.base_rtt_us, p.round_min_us, p.cnt) = (100_000, 100_000, 3);
            p.update_dwnd();
            if want == 0.0 {
                assert_eq!(p.dwnd, 0.0, "win {cwnd_l}");
            } else {
                assert!(close(p.dwnd, inc(1000.0)));
                assert!((p.dwnd - want).abs() < 5e-5, "{}", p.dwnd);
            }
        }
    }

    #[test]
    fn ct3_backlog_rounds() {
        for (raw_us, want_dwnd, want_cwnd) in
            [(124_999, 10.0, 160), (109_999, 50.0 + inc(200.0), 205)]
        {
            let mut c = ctcp(150, 50.0);
            let mut p = path(0, 100);
            // Round 1 sees the base RTT with too few samples to act.
            c.on_ack(&ack_rtt(1, 99_999), &p);
            p.snd_una = 1101;
            p.snd_nxt = 1200;
            c.on_ack(&ack(1), &p);
            assert_eq!(c.policy().dwnd(), 50.0);
            assert_eq!(c.policy().base_rtt_us, 100_000);
            // Round 2: three samples; the third ACK ends the round.
            c.on_ack(&ack_rtt(1, raw_us), &p);
            c.on_ack(&ack_rtt(1, raw_us), &p);
            assert_eq!(c.policy().round_min_us, raw_us + 1);
            p.snd_una = 1201;
            c.on_ack(&ack_rtt(1, raw_us), &p);
            assert!(close(c.policy().dwnd(), want_dwnd), "{}", c.policy().dwnd());
            assert_eq!((c.policy().cwnd_l(), c.core().cwnd), (150, want_cwnd));
        }
        assert!((inc(200.0) - 5.6479).abs() < 5e-5);
    }

    #[test]
    fn ct4_loss_split() {
        for (l, d, l2, d2, ss) in [
            (60, 40.0, 30, 20.0, 50),
            (90, 10.0, 45, 5.0, 50),
            (100, 0.0, 50, 0.0, 50),
            (61, 39.0, 30, 20.0, 50),
        ] {
            let mut c = ctcp(l, d);
            let p = path(0, 100);
            c.on_congestion_event(&loss(), &p);
            assert_eq!(c.core().ssthresh, ss, "{l}+{d}");
            assert_eq!(c.policy().pending, Some((l2, d2)));
            c.on_recovery_exit(&p);
            assert_eq!((c.policy().cwnd_l(), c.policy().dwnd()), (l2, d2));
            assert_eq!(c.core().cwnd, ss);
        }
    }

    #[test]
    fn ct5_loss_window_growth() {
        let mut c = ctcp(60, 40.0);
        let p = path(0, 100);
        for _ in 0..99 {
            c.on_ack(&ack(1), &p);
        }
        assert_eq!((c.policy().cwnd_l(), c.core().cwnd), (60, 100));
        c.on_ack(&ack(1), &p);
        assert_eq!((c.policy().cwnd_l(), c.core().cwnd), (61, 101));
        assert_eq!(c.policy().dwnd(), 40.0);
    }

    #[test]
    fn backlog_above_gamma_shrinks_dwnd_to_zero_at_most() {
        let mut c = ctcp(100, 5.0);
        let p = c.policy_mut();
        (p.base_rtt_us, p.round_min_us) = (50_000, 100_000);
        p.update_dwnd();
        assert_eq!(p.dwnd, 0.0);
    }

    #[test]
    fn slow_start_folds_dwnd_into_loss_window() {
        let mut c = ctcp(20, 7.5);
        c.core_mut().ssthresh = 100;
        c.on_ack(&ack(2), &path(0, 100));
        assert_eq!((c.policy().cwnd_l(), c.policy().dwnd()), (29, 0.0));
        assert_eq!(c.core().cwnd, 29);
    }

    #[test]
    fn rto_and_undo() {
        let mut c = ctcp(61, 39.0);
        let mut p = path(0, 100);
        p.in_flight = 0;
        c.on_rto(&p);
        assert_eq!((c.core().ssthresh, c.core().cwnd), (50, 1));
        assert_eq!((c.policy().cwnd_l(), c.policy().dwnd()), (1, 0.0));
        c.on_ack(&ack(1), &p);
        assert_eq!((c.policy().cwnd_l(), c.core().cwnd), (2, 2));
        c.on_spurious_congestion(&p);
        assert_eq!((c.policy().cwnd_l(), c.policy().dwnd()), (61, 39.0));
        assert_eq!(c.core().cwnd, 100);
    }

    #[test]
    fn prr_runs_on_the_total() {
        let mut c = ctcp(60, 40.0);
        let mut p = path(0, 100);
        c.on_congestion_event(&loss(), &p);
        p.in_flight = 60;
        c.on_ack(&ack(1), &p);
        assert!(c.core().cwnd < 100);
        c.on_recovery_exit(&p);
        assert_eq!(
            (c.policy().cwnd_l(), c.policy().dwnd(), c.core().cwnd),
            (30, 20.0, 50)
        );
    }

    #[test]
    fn equal_rtts_never_shrink_the_window() {
        let mut c = ctcp(40, 0.0);
        let mut p = path(0, 100);
        let mut last = c.core().cwnd;
        for i in 0..2_000u64 {
            p.snd_una = 1000 + i;
            p.snd_nxt = p.snd_una + 100;
            c.on_ack(&ack_rtt(1, 0), &p);
            assert!(c.core().cwnd >= last);
            last = c.core().cwnd;
            let pol = c.policy();
            assert_eq!(pol.cwnd_l() + pol.dwnd().floor() as u32, last);
        }
        assert!(c.policy().dwnd() > 0.0);
    }

    #[test]
    fn initial_window_is_all_loss_window() {
        let mut c = ctcp(60, 40.0);
        c.set_initial_window(30 * 1448, &path(0, 100));
        assert_eq!((c.policy().cwnd_l(), c.policy().dwnd()), (30, 0.0));
        assert_eq!((c.core().cwnd, c.core().ssthresh), (30, 30));
    }
}
