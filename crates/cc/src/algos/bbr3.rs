//! BBRv3 (draft-ietf-ccwg-bbr, "BBR Congestion Control", Cardwell et al.;
//! the algorithm Linux ships out of tree as BBRv3): a model-based,
//! full-control controller with explicit loss and ECN bounds.
//!
//! Like BBR v1 ([`super::bbr`]) it paces at a gain times its bandwidth
//! estimate and bounds in-flight data by a gain times the estimated BDP;
//! unlike v1 it keeps a *range* of safe operating points: `bw_hi`/
//! `inflight_hi` (long-term upper bounds, raised by probing and cut when a
//! probe meets more than 2 % loss or, when ECN is in use, a CE ratio above
//! 50 %) and `bw_lo`/`inflight_lo` (short-term lower bounds, cut by `β` =
//! 0.7 on each round with loss while not probing). The state machine
//! (draft §4.3):
//!
//! ```text
//!  STARTUP (pacing 2.77, cwnd 2) ──full pipe or high loss──▶ DRAIN (pacing 0.35)
//!  DRAIN ──in flight ≤ BDP──▶ PROBE_BW:
//!     DOWN (0.90) ──in flight ≤ BDP and ≤ headroom──▶ CRUISE (1.0)
//!     DOWN/CRUISE ──probe wait (2–3 s) or Reno-coexistence rounds──▶ REFILL (1.0)
//!     REFILL ──one round──▶ UP (1.25, cwnd gain 2.25)
//!     UP ──in flight too high, or bw stopped growing at inflight_hi──▶ DOWN
//!  any ──min RTT not refreshed for 5 s──▶ PROBE_RTT (cwnd = ½ BDP, ≥ 200 ms and a round)
//!  PROBE_RTT ──done──▶ PROBE_BW DOWN→CRUISE (pipe full) or STARTUP
//! ```
//!
//! **Parameters** ([`Bbr3Config`], defaults = the draft's constants):
//! startup pacing gain 2.77 (4·ln 2), startup and probe cwnd gain 2, drain
//! 0.35, DOWN 0.90, CRUISE/REFILL 1.0, UP 1.25 with cwnd gain 2.25; loss
//! threshold 2 %, β 0.7, headroom 15 %, 4-segment minimum, full pipe at
//! < 25 % growth for 3 rounds, startup exit at ≥ 6 loss events in a round
//! with loss above the threshold; min-RTT window 10 s, PROBE_RTT every 5 s
//! for 200 ms at ½ BDP; max-bw filter of 2 PROBE_BW cycles; probe wait 2 s
//! + up to 1 s, Reno-coexistence bound 63 rounds; pacing margin 1 %.
//!
//! **ECN.** The draft leaves the ECN response open; this implementation
//! uses the one of Linux BBRv3 (`tcp_bbr.c`), active only once the
//! connection reports ECN counts ([`CongestionController::on_ecn`]): the
//! per-round CE ratio feeds an EWMA α (gain 1/16, start 1); a round whose
//! CE ratio exceeds 50 % means in-flight is too high (like 2 % loss);
//! outside probing a round with marks cuts `inflight_lo` to
//! `(1 − α/3)·inflight_lo`; two such rounds in STARTUP end it.
//!
//! **Plumbing decisions** (where the trait differs from the draft's
//! connection):
//! * Windows and rates are `f64` in segments and segments per second; the
//!   core's cwnd is their floor.
//! * `RS.tx_in_flight` (in flight when the sampled packet was sent) is not
//!   in [`RateSample`](crate::RateSample): the sample's `prior_in_flight`
//!   stands in for it, and `RS.lost` is the losses counted since the
//!   current loss round started.
//! * The ACK-aggregation estimate (`extra_acked`, 10 rounds) is v1's
//!   estimator ([`super::bbr::AckAggregation`]) with two 5-round buckets.
//! * Loss recovery: on entering Recovery the window is saved and set to
//!   in flight + 1 (packet conservation for one round); leaving it restores
//!   `max(cwnd, prior_cwnd)` (draft §4.6.4.4). A CWR episode (ECN echo)
//!   does not touch the window: the ECN bounds above do.
//! * The random probe wait and the random start of the Reno-coexistence
//!   count come from a seeded splitmix64 (`random_seed`), so runs repeat.

use super::bbr::{AckAggregation, Bw};
use crate::core::{Core, CoreConfig, RecoveryMode};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, CaState, CwndEvent, EcnSample, PathInfo};
use crate::Time;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// BBRv3 settings; defaults are draft-ietf-ccwg-bbr's constants.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct Bbr3Config {
    /// Shared core settings (`recovery_mode` is ignored: BBR sets cwnd itself).
    pub core: CoreConfig,
    /// STARTUP pacing gain (2.77 ≈ 4·ln 2).
    pub startup_pacing_gain: f64,
    /// STARTUP and PROBE_BW cwnd gain (2).
    pub cwnd_gain: f64,
    /// DRAIN pacing gain (0.35).
    pub drain_pacing_gain: f64,
    /// PROBE_BW_DOWN pacing gain (0.90).
    pub probe_down_pacing_gain: f64,
    /// PROBE_BW_UP pacing gain (1.25).
    pub probe_up_pacing_gain: f64,
    /// PROBE_BW_UP cwnd gain (2.25).
    pub probe_up_cwnd_gain: f64,
    /// Highest tolerated loss rate of a probing round (0.02).
    pub loss_thresh: f64,
    /// Multiplicative decrease of the lower bounds per lossy round (0.7).
    pub beta: f64,
    /// Share of `inflight_hi` left free in CRUISE (0.15).
    pub headroom: f64,
    /// Smallest window, segments (4).
    pub min_pipe_cwnd_segs: u32,
    /// STARTUP ends after this many loss events in one round with loss
    /// above `loss_thresh` (6).
    pub startup_full_loss_count: u32,
    /// Full pipe: the bandwidth must grow by this factor per round (1.25) ...
    pub full_bw_growth: f64,
    /// ... or the pipe is full after this many rounds (3).
    pub full_bw_rounds: u32,
    /// Min-RTT filter window, ms (10,000).
    pub min_rtt_window_ms: u64,
    /// PROBE_RTT is due when the probe-RTT min delay is this old, ms (5,000).
    pub probe_rtt_interval_ms: u64,
    /// Time at the PROBE_RTT window, ms (200).
    pub probe_rtt_duration_ms: u64,
    /// PROBE_RTT window as a fraction of the BDP (0.5).
    pub probe_rtt_cwnd_gain: f64,
    /// Base wait between bandwidth probes, ms (2,000) ...
    pub probe_wait_base_ms: u64,
    /// ... plus a uniform random share of this, ms (1,000).
    pub probe_wait_rand_ms: u64,
    /// Reno-coexistence bound on the rounds between probes (63).
    pub max_probe_rounds: u32,
    /// Pacing rate margin below the bandwidth estimate, percent (1).
    pub pacing_margin_percent: u32,
    /// ECN: CE ratio of a round above which in-flight is too high (0.5).
    pub ecn_thresh: f64,
    /// ECN: `inflight_lo` cut per marked round is `ecn_factor · α` (1/3).
    pub ecn_factor: f64,
    /// ECN: α's EWMA gain (1/16).
    pub ecn_alpha_gain: f64,
    /// ECN: rounds with a CE ratio above `ecn_thresh` that end STARTUP (2).
    pub startup_full_ecn_rounds: u32,
    /// [PROJECT CHOICE] Seed of the random probe wait (reproducible runs).
    pub random_seed: u64,
}

impl Default for Bbr3Config {
    fn default() -> Self {
        Bbr3Config {
            core: CoreConfig::default(),
            startup_pacing_gain: 2.77,
            cwnd_gain: 2.0,
            drain_pacing_gain: 0.35,
            probe_down_pacing_gain: 0.90,
            probe_up_pacing_gain: 1.25,
            probe_up_cwnd_gain: 2.25,
            loss_thresh: 0.02,
            beta: 0.7,
            headroom: 0.15,
            min_pipe_cwnd_segs: 4,
            startup_full_loss_count: 6,
            full_bw_growth: 1.25,
            full_bw_rounds: 3,
            min_rtt_window_ms: 10_000,
            probe_rtt_interval_ms: 5_000,
            probe_rtt_duration_ms: 200,
            probe_rtt_cwnd_gain: 0.5,
            probe_wait_base_ms: 2_000,
            probe_wait_rand_ms: 1_000,
            max_probe_rounds: 63,
            pacing_margin_percent: 1,
            ecn_thresh: 0.5,
            ecn_factor: 1.0 / 3.0,
            ecn_alpha_gain: 1.0 / 16.0,
            startup_full_ecn_rounds: 2,
            random_seed: 0xB3B3_0003,
        }
    }
}

/// A gain or fraction from the configuration, made finite and within `[lo, hi]`.
fn sane(v: f64, lo: f64, hi: f64, default: f64) -> f64 {
    if v.is_finite() {
        v.clamp(lo, hi)
    } else {
        default
    }
}

impl Bbr3Config {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Bbr3> {
        let d = Bbr3Config::default();
        let c = Bbr3Config {
            core: CoreConfig {
                recovery_mode: RecoveryMode::Prr,
                ..self.core.clone()
            },
            startup_pacing_gain: sane(self.startup_pacing_gain, 1.0, 16.0, d.startup_pacing_gain),
            cwnd_gain: sane(self.cwnd_gain, 1.0, 16.0, d.cwnd_gain),
            drain_pacing_gain: sane(self.drain_pacing_gain, 0.05, 1.0, d.drain_pacing_gain),
            probe_down_pacing_gain: sane(self.probe_down_pacing_gain, 0.05, 1.0, 0.9),
            probe_up_pacing_gain: sane(self.probe_up_pacing_gain, 1.0, 16.0, 1.25),
            probe_up_cwnd_gain: sane(self.probe_up_cwnd_gain, 1.0, 16.0, 2.25),
            loss_thresh: sane(self.loss_thresh, 0.0, 1.0, 0.02),
            beta: sane(self.beta, 0.0, 1.0, 0.7),
            headroom: sane(self.headroom, 0.0, 1.0, 0.15),
            probe_rtt_cwnd_gain: sane(self.probe_rtt_cwnd_gain, 0.0, 16.0, 0.5),
            full_bw_growth: sane(self.full_bw_growth, 1.0, 16.0, 1.25),
            ecn_thresh: sane(self.ecn_thresh, 0.0, 1.0, 0.5),
            ecn_factor: sane(self.ecn_factor, 0.0, 1.0, d.ecn_factor),
            ecn_alpha_gain: sane(self.ecn_alpha_gain, 0.0, 1.0, d.ecn_alpha_gain),
            min_pipe_cwnd_segs: self.min_pipe_cwnd_segs.max(1),
            full_bw_rounds: self.full_bw_rounds.max(1),
            ..self.clone()
        };
        PolicyController::new(c.core.clone(), Bbr3::new(c))
    }
}

/// BBRv3's state (draft §4.3), PROBE_BW split into its four phases.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Bbr3Mode {
    /// Ramp up quickly.
    Startup,
    /// Drain the queue STARTUP built.
    Drain,
    /// PROBE_BW: slow down to drain any queue and leave headroom.
    ProbeBwDown,
    /// PROBE_BW: cruise at the estimated bandwidth with headroom.
    ProbeBwCruise,
    /// PROBE_BW: refill the pipe before probing.
    ProbeBwRefill,
    /// PROBE_BW: probe for more bandwidth.
    ProbeBwUp,
    /// Cut in-flight to re-measure the propagation delay.
    ProbeRtt,
}

impl Bbr3Mode {
    /// A short lower-case name (stats, traces).
    pub fn as_str(self) -> &'static str {
        match self {
            Bbr3Mode::Startup => "startup",
            Bbr3Mode::Drain => "drain",
            Bbr3Mode::ProbeBwDown => "probe_bw_down",
            Bbr3Mode::ProbeBwCruise => "probe_bw_cruise",
            Bbr3Mode::ProbeBwRefill => "probe_bw_refill",
            Bbr3Mode::ProbeBwUp => "probe_bw_up",
            Bbr3Mode::ProbeRtt => "probe_rtt",
        }
    }

    fn is_probe_bw(self) -> bool {
        matches!(
            self,
            Bbr3Mode::ProbeBwDown
                | Bbr3Mode::ProbeBwCruise
                | Bbr3Mode::ProbeBwRefill
                | Bbr3Mode::ProbeBwUp
        )
    }
}

/// Where the ACKs of a bandwidth probe are (draft `BBR.ack_phase`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    ProbeStopping,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
}

/// The BBRv3 policy.
#[derive(Clone, Debug)]
pub struct Bbr3 {
    c: Bbr3Config,
    mode: Bbr3Mode,
    pacing_gain: f64,
    cwnd_gain: f64,
    pacing_rate_bytes_per_sec: u64,
    // Rounds.
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    // Bandwidth model, segments per second.
    bw_hi: [f64; 2],
    bw_lo: f64,
    bw: f64,
    bw_latest: f64,
    cycle_count: u64,
    // In-flight model, segments (INFINITY = unset).
    inflight_hi: f64,
    inflight_lo: f64,
    inflight_latest: f64,
    // Min RTT.
    min_rtt: Option<Duration>,
    min_rtt_stamp: Time,
    probe_rtt_min_delay: Option<Duration>,
    probe_rtt_min_stamp: Time,
    probe_rtt_expired: bool,
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    idle_restart: bool,
    // Full pipe.
    full_bw: f64,
    full_bw_count: u32,
    full_bw_now: bool,
    full_bw_reached: bool,
    // Loss rounds.
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    loss_events_in_round: u32,
    lost_in_round: u64,
    delivered_in_round: u64,
    // ECN.
    ecn_in_use: bool,
    ecn_alpha: f64,
    ce_in_round: u64,
    ect_in_round: u64,
    ce_ratio_last_round: f64,
    startup_ecn_rounds: u32,
    // PROBE_BW.
    ack_phase: AckPhase,
    cycle_stamp: Time,
    bw_probe_wait: Duration,
    rounds_since_bw_probe: u64,
    bw_probe_samples: bool,
    bw_probe_up_rounds: u32,
    bw_probe_up_acks: f64,
    probe_up_cnt: f64,
    // Recovery.
    prior_cwnd: u32,
    packet_conservation: bool,
    conservation_round_end: u64,
    in_recovery: bool,
    // Aggregation.
    agg: AckAggregation,
    rng: crate::algos::bbr::PhaseRng,
    /// Every mode this flow entered, in order (tests and traces; bounded).
    transitions: Vec<Bbr3Mode>,
    /// Packet size, bytes (for the bandwidth in bytes per second).
    mss: u32,
}

/// Most entries [`Bbr3::transitions`] keeps.
const TRANSITION_LOG: usize = 64;

impl Bbr3 {
    fn new(c: Bbr3Config) -> Bbr3 {
        let seed = c.random_seed;
        Bbr3 {
            pacing_gain: c.startup_pacing_gain,
            cwnd_gain: c.cwnd_gain,
            c,
            mode: Bbr3Mode::Startup,
            pacing_rate_bytes_per_sec: 0,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            bw_hi: [0.0; 2],
            bw_lo: f64::INFINITY,
            bw: 0.0,
            bw_latest: 0.0,
            cycle_count: 0,
            inflight_hi: f64::INFINITY,
            inflight_lo: f64::INFINITY,
            inflight_latest: 0.0,
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: Time::ZERO,
            probe_rtt_expired: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            idle_restart: false,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            loss_round_delivered: 0,
            loss_round_start: false,
            loss_in_round: false,
            loss_events_in_round: 0,
            lost_in_round: 0,
            delivered_in_round: 0,
            ecn_in_use: false,
            ecn_alpha: 1.0,
            ce_in_round: 0,
            ect_in_round: 0,
            ce_ratio_last_round: 0.0,
            startup_ecn_rounds: 0,
            ack_phase: AckPhase::Init,
            cycle_stamp: Time::ZERO,
            bw_probe_wait: Duration::ZERO,
            rounds_since_bw_probe: 0,
            bw_probe_samples: false,
            bw_probe_up_rounds: 0,
            bw_probe_up_acks: 0.0,
            probe_up_cnt: f64::INFINITY,
            prior_cwnd: 0,
            packet_conservation: false,
            conservation_round_end: 0,
            in_recovery: false,
            agg: AckAggregation::default(),
            rng: crate::algos::bbr::PhaseRng::new(seed),
            transitions: vec![Bbr3Mode::Startup],
            mss: 1448,
        }
    }

    /// The current state.
    pub fn mode(&self) -> Bbr3Mode {
        self.mode
    }

    /// The states entered so far, oldest first (at most 64 kept).
    pub fn transitions(&self) -> &[Bbr3Mode] {
        &self.transitions
    }

    /// The bandwidth estimate, segments per second (`min(max_bw, bw_lo)`).
    pub fn bw_segs_per_sec(&self) -> f64 {
        self.bw
    }

    /// The long-term in-flight bound, segments (`None` = not set).
    pub fn inflight_hi(&self) -> Option<f64> {
        self.inflight_hi.is_finite().then_some(self.inflight_hi)
    }

    /// The short-term in-flight bound, segments (`None` = not set).
    pub fn inflight_lo(&self) -> Option<f64> {
        self.inflight_lo.is_finite().then_some(self.inflight_lo)
    }

    /// The current pacing gain.
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    /// ECN α (EWMA of the per-round CE ratio).
    pub fn ecn_alpha(&self) -> f64 {
        self.ecn_alpha
    }

    fn set_mode(&mut self, m: Bbr3Mode) {
        self.mode = m;
        if self.transitions.len() < TRANSITION_LOG {
            self.transitions.push(m);
        }
    }

    fn max_bw(&self) -> f64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// `BBRBDPMultiple(bw, gain)`: segments; the initial window before any RTT.
    fn bdp_multiple(&self, gain: f64, core: &Core) -> f64 {
        match self.min_rtt {
            Some(rtt) => gain * self.bw * rtt.as_secs_f64(),
            None => f64::from(core.config.initial_window_segs.max(1)),
        }
    }

    fn send_quantum_segs(&self, core: &Core) -> f64 {
        // draft §4.6.3: pacing rate × 1 ms, within [2 segments, 64 KB].
        let mss = f64::from(core.mss.max(1));
        let bytes = (self.pacing_rate_bytes_per_sec as f64 / 1000.0).clamp(2.0 * mss, 65_536.0);
        (bytes / mss).max(2.0)
    }

    /// `BBRInflight(gain)` with the quantization budget (draft §4.6.4.2).
    fn inflight(&self, gain: f64, core: &Core) -> f64 {
        let mut w = self.bdp_multiple(gain, core).ceil();
        w = w.max(3.0 * self.send_quantum_segs(core));
        w = w.max(f64::from(self.c.min_pipe_cwnd_segs));
        if self.mode == Bbr3Mode::ProbeBwUp {
            w += 2.0;
        }
        w
    }

    fn inflight_with_headroom(&self) -> f64 {
        if !self.inflight_hi.is_finite() {
            return f64::INFINITY;
        }
        let headroom = (self.c.headroom * self.inflight_hi).max(1.0);
        (self.inflight_hi - headroom).max(f64::from(self.c.min_pipe_cwnd_segs))
    }

    fn target_inflight(&self, core: &Core) -> f64 {
        self.bdp_multiple(1.0, core).min(f64::from(core.cwnd))
    }

    fn probe_rtt_cwnd(&self, core: &Core) -> f64 {
        self.bdp_multiple(self.c.probe_rtt_cwnd_gain, core)
            .max(f64::from(self.c.min_pipe_cwnd_segs))
    }

    fn start_round(&mut self, delivered: u64) {
        self.next_round_delivered = delivered;
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = f64::INFINITY;
    }

    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0.0;
    }

    fn enter_drain(&mut self) {
        self.set_mode(Bbr3Mode::Drain);
        self.pacing_gain = self.c.drain_pacing_gain;
        self.cwnd_gain = self.c.cwnd_gain;
    }

    fn enter_startup(&mut self) {
        self.set_mode(Bbr3Mode::Startup);
        self.pacing_gain = self.c.startup_pacing_gain;
        self.cwnd_gain = self.c.cwnd_gain;
    }

    fn pick_probe_wait(&mut self) {
        self.rounds_since_bw_probe = u64::from(self.rng.below(2));
        let rand_ms = if self.c.probe_wait_rand_ms == 0 {
            0
        } else {
            (self.rng.next_u64() >> 11) % (self.c.probe_wait_rand_ms + 1)
        };
        self.bw_probe_wait =
            Duration::from_millis(self.c.probe_wait_base_ms.saturating_add(rand_ms));
    }

    fn start_probe_down(&mut self, path: &PathInfo) {
        self.reset_congestion_signals();
        self.probe_up_cnt = f64::INFINITY;
        self.pick_probe_wait();
        self.cycle_stamp = path.now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round(path.delivered);
        self.set_mode(Bbr3Mode::ProbeBwDown);
        self.pacing_gain = self.c.probe_down_pacing_gain;
        self.cwnd_gain = self.c.cwnd_gain;
    }

    fn start_probe_cruise(&mut self) {
        self.set_mode(Bbr3Mode::ProbeBwCruise);
        self.pacing_gain = 1.0;
        self.cwnd_gain = self.c.cwnd_gain;
    }

    fn start_probe_refill(&mut self, path: &PathInfo) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acks = 0.0;
        self.ack_phase = AckPhase::Refilling;
        self.start_round(path.delivered);
        self.set_mode(Bbr3Mode::ProbeBwRefill);
        self.pacing_gain = 1.0;
        self.cwnd_gain = self.c.cwnd_gain;
    }

    fn start_probe_up(&mut self, core: &Core, path: &PathInfo, delivery_rate: f64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round(path.delivered);
        self.reset_full_bw();
        self.full_bw = delivery_rate;
        self.set_mode(Bbr3Mode::ProbeBwUp);
        self.pacing_gain = self.c.probe_up_pacing_gain;
        self.cwnd_gain = self.c.probe_up_cwnd_gain;
        self.raise_inflight_hi_slope(core);
    }

    fn enter_probe_bw(&mut self, path: &PathInfo) {
        self.cwnd_gain = self.c.cwnd_gain;
        self.start_probe_down(path);
    }

    fn raise_inflight_hi_slope(&mut self, core: &Core) {
        let growth_this_round = f64::from(1u32 << self.bw_probe_up_rounds.min(30));
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_cnt = (f64::from(core.cwnd) / growth_this_round).max(1.0);
    }

    fn probe_inflight_hi_upward(&mut self, core: &Core, path: &PathInfo, acked: u32) {
        if !path.cwnd_limited || f64::from(core.cwnd) < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += f64::from(acked);
        if self.bw_probe_up_acks >= self.probe_up_cnt {
            let delta = (self.bw_probe_up_acks / self.probe_up_cnt).floor();
            self.bw_probe_up_acks -= delta * self.probe_up_cnt;
            self.inflight_hi += delta;
        }
        if self.round_start {
            self.raise_inflight_hi_slope(core);
        }
    }

    /// `IsInflightTooHigh`: the round's losses above 2 % of in flight, or
    /// (ECN in use) its CE ratio above the ECN threshold.
    fn is_inflight_too_high(&self, tx_in_flight: f64) -> bool {
        let loss = self.lost_in_round as f64 > self.c.loss_thresh * tx_in_flight.max(1.0);
        let ecn = self.ecn_in_use
            && self.ect_in_round > 0
            && self.c.ecn_thresh > 0.0
            && (self.ce_in_round as f64 / self.ect_in_round as f64) > self.c.ecn_thresh;
        loss || ecn
    }

    fn handle_inflight_too_high(
        &mut self,
        core: &Core,
        path: &PathInfo,
        rs_app_limited: bool,
        tx_in_flight: f64,
    ) {
        self.bw_probe_samples = false;
        if !rs_app_limited {
            self.inflight_hi = tx_in_flight.max(self.target_inflight(core) * self.c.beta);
        }
        if self.mode == Bbr3Mode::ProbeBwUp {
            self.start_probe_down(path);
        }
    }

    fn adapt_upper_bounds(
        &mut self,
        core: &Core,
        path: &PathInfo,
        acked: u32,
        app_limited: bool,
        tx_in_flight: f64,
    ) {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode.is_probe_bw() && !app_limited {
                // AdvanceMaxBwFilter: a new PROBE_BW cycle.
                self.cycle_count += 1;
                self.bw_hi[0] = self.bw_hi[1];
                self.bw_hi[1] = 0.0;
            }
        }
        if self.is_inflight_too_high(tx_in_flight) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(core, path, app_limited, tx_in_flight);
            }
            return;
        }
        if !self.inflight_hi.is_finite() {
            return;
        }
        if tx_in_flight > self.inflight_hi {
            self.inflight_hi = tx_in_flight;
        }
        if self.mode == Bbr3Mode::ProbeBwUp {
            self.probe_inflight_hi_upward(core, path, acked);
        }
    }

    fn has_elapsed_in_phase(&self, d: Duration, now: Time) -> bool {
        now > self.cycle_stamp + d
    }

    fn is_reno_coexistence_probe_time(&self, core: &Core) -> bool {
        let reno_rounds = self.target_inflight(core);
        let rounds = reno_rounds.min(f64::from(self.c.max_probe_rounds));
        self.rounds_since_bw_probe as f64 >= rounds
    }

    fn check_time_to_probe_bw(&mut self, core: &Core, path: &PathInfo) -> bool {
        if self.has_elapsed_in_phase(self.bw_probe_wait, path.now)
            || self.is_reno_coexistence_probe_time(core)
        {
            self.start_probe_refill(path);
            return true;
        }
        false
    }

    fn check_time_to_cruise(&self, core: &Core, in_flight: f64) -> bool {
        if in_flight > self.inflight_with_headroom() {
            return false;
        }
        in_flight <= self.inflight(1.0, core)
    }

    fn check_time_to_go_down(&mut self, core: &Core, path: &PathInfo, delivery_rate: f64) -> bool {
        if path.cwnd_limited && f64::from(core.cwnd) >= self.inflight_hi {
            self.reset_full_bw();
            self.full_bw = delivery_rate;
        } else if self.full_bw_now {
            return true;
        }
        false
    }

    #[allow(clippy::too_many_arguments)] // the draft's per-ACK inputs
    fn update_probe_bw_cycle_phase(
        &mut self,
        core: &Core,
        path: &PathInfo,
        acked: u32,
        app_limited: bool,
        tx_in_flight: f64,
        delivery_rate: f64,
    ) {
        if !self.full_bw_reached {
            return;
        }
        self.adapt_upper_bounds(core, path, acked, app_limited, tx_in_flight);
        let in_flight = f64::from(path.in_flight);
        let mode = self.mode;
        match mode {
            Bbr3Mode::ProbeBwDown => {
                if self.check_time_to_probe_bw(core, path) {
                    return;
                }
                if self.check_time_to_cruise(core, in_flight) {
                    self.start_probe_cruise();
                }
            }
            Bbr3Mode::ProbeBwCruise => {
                self.check_time_to_probe_bw(core, path);
            }
            Bbr3Mode::ProbeBwRefill if self.round_start => {
                self.bw_probe_samples = true;
                self.start_probe_up(core, path, delivery_rate);
            }
            Bbr3Mode::ProbeBwUp if self.check_time_to_go_down(core, path, delivery_rate) => {
                self.start_probe_down(path);
            }
            _ => {}
        }
    }

    fn check_full_bw_reached(&mut self, app_limited: bool) {
        if self.full_bw_now || !self.round_start || app_limited {
            return;
        }
        let max_bw = self.max_bw();
        if max_bw >= self.full_bw * self.c.full_bw_growth {
            self.reset_full_bw();
            self.full_bw = max_bw;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= self.c.full_bw_rounds;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// STARTUP's loss and ECN exits (draft §4.3.1.3; Linux BBRv3 for ECN).
    fn check_startup_high_loss_or_ecn(&mut self, core: &Core, tx_in_flight: f64) {
        if self.mode != Bbr3Mode::Startup || self.full_bw_reached || !self.loss_round_start {
            return;
        }
        let lossy = self.in_recovery
            && self.c.startup_full_loss_count > 0
            && self.loss_events_in_round >= self.c.startup_full_loss_count
            && self.lost_in_round as f64 > self.c.loss_thresh * tx_in_flight.max(1.0);
        let marked = self.ecn_in_use
            && self.c.startup_full_ecn_rounds > 0
            && self.startup_ecn_rounds >= self.c.startup_full_ecn_rounds;
        if lossy || marked {
            // BBRHandleQueueFull.
            self.inflight_hi = self
                .bdp_multiple(1.0, core)
                .max(self.inflight_latest)
                .max(f64::from(self.c.min_pipe_cwnd_segs));
            self.full_bw_reached = true;
        }
    }

    fn update_min_rtt(&mut self, rtt: Option<Duration>, now: Time) {
        let interval = Duration::from_millis(self.c.probe_rtt_interval_ms);
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp + interval;
        if let Some(rtt) = rtt {
            if self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired {
                self.probe_rtt_min_delay = Some(rtt);
                self.probe_rtt_min_stamp = now;
            }
        }
        let window = Duration::from_millis(self.c.min_rtt_window_ms);
        let min_rtt_expired = now > self.min_rtt_stamp + window;
        if let Some(d) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| d < m) || min_rtt_expired {
                self.min_rtt = Some(d);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    fn check_probe_rtt(&mut self, core: &mut Core, path: &PathInfo, delivered_segs: u32) {
        if self.mode != Bbr3Mode::ProbeRtt
            && self.probe_rtt_expired
            && !self.idle_restart
            && self.c.probe_rtt_duration_ms > 0
        {
            self.set_mode(Bbr3Mode::ProbeRtt);
            self.pacing_gain = 1.0;
            self.cwnd_gain = self.c.probe_rtt_cwnd_gain;
            self.save_cwnd(core);
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round(path.delivered);
        }
        if self.mode == Bbr3Mode::ProbeRtt {
            self.handle_probe_rtt(core, path);
        }
        if delivered_segs > 0 {
            self.idle_restart = false;
        }
    }

    fn handle_probe_rtt(&mut self, core: &mut Core, path: &PathInfo) {
        match self.probe_rtt_done_stamp {
            None if f64::from(path.in_flight) <= self.probe_rtt_cwnd(core) => {
                self.probe_rtt_done_stamp =
                    Some(path.now + Duration::from_millis(self.c.probe_rtt_duration_ms));
                self.probe_rtt_round_done = false;
                self.start_round(path.delivered);
            }
            Some(_) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(core, path);
                }
            }
            None => {}
        }
    }

    fn check_probe_rtt_done(&mut self, core: &mut Core, path: &PathInfo) {
        if let Some(done) = self.probe_rtt_done_stamp {
            if path.now > done {
                self.probe_rtt_min_stamp = path.now;
                self.restore_cwnd(core);
                self.exit_probe_rtt(path);
            }
        }
    }

    fn exit_probe_rtt(&mut self, path: &PathInfo) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.start_probe_down(path);
            self.start_probe_cruise();
        } else {
            self.enter_startup();
        }
    }

    fn save_cwnd(&mut self, core: &Core) {
        if !self.in_recovery && self.mode != Bbr3Mode::ProbeRtt {
            self.prior_cwnd = core.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(core.cwnd);
        }
    }

    fn restore_cwnd(&mut self, core: &mut Core) {
        let w = core.cwnd.max(self.prior_cwnd);
        core.set_cwnd(w);
    }

    /// The lower bounds after a round with loss or CE marks (draft §4.5.10,
    /// Linux BBRv3 for ECN). Not while probing.
    fn adapt_lower_bounds_from_congestion(&mut self, core: &Core) {
        if matches!(
            self.mode,
            Bbr3Mode::Startup | Bbr3Mode::ProbeBwRefill | Bbr3Mode::ProbeBwUp
        ) {
            return;
        }
        let marked = self.ecn_in_use && self.ce_in_round > 0;
        if !self.loss_in_round && !marked {
            return;
        }
        if !self.bw_lo.is_finite() {
            self.bw_lo = self.max_bw();
        }
        if !self.inflight_lo.is_finite() {
            self.inflight_lo = f64::from(core.cwnd);
        }
        if self.loss_in_round {
            self.bw_lo = self.bw_latest.max(self.c.beta * self.bw_lo);
            self.inflight_lo = self.inflight_latest.max(self.c.beta * self.inflight_lo);
        }
        if marked {
            let cut = (1.0 - self.c.ecn_factor * self.ecn_alpha).max(0.0);
            self.inflight_lo = (self.inflight_lo * cut).max(f64::from(self.c.min_pipe_cwnd_segs));
        }
    }

    fn set_pacing_rate(&mut self, core: &Core, path: &PathInfo) {
        let mss = f64::from(core.mss.max(1));
        let margin = 1.0 - f64::from(self.c.pacing_margin_percent.min(100)) / 100.0;
        let rate = if self.bw > 0.0 {
            self.pacing_gain * self.bw * mss * margin
        } else {
            // No bandwidth sample yet: startup gain × cwnd / RTT (1 ms nominal).
            let rtt = path
                .srtt
                .filter(|d| !d.is_zero())
                .map_or(0.001, |d| d.as_secs_f64());
            self.c.startup_pacing_gain * f64::from(core.cwnd) * mss / rtt
        };
        let mut rate = rate.clamp(1.0, u64::MAX as f64 / 2.0) as u64;
        if let Some(max) = core.config.max_pacing_rate_bytes_per_sec {
            rate = rate.min(max.max(1));
        }
        if self.full_bw_reached || rate > self.pacing_rate_bytes_per_sec {
            self.pacing_rate_bytes_per_sec = rate;
        }
    }

    fn set_cwnd(&mut self, core: &mut Core, path: &PathInfo, acked: u32) {
        let max_inflight = self.inflight(self.cwnd_gain, core)
            + if self.bw > 0.0 {
                f64::from(self.agg.max_extra_acked())
            } else {
                0.0
            };
        let mut cwnd = f64::from(core.cwnd);
        if self.packet_conservation {
            cwnd = cwnd.max(f64::from(path.in_flight) + f64::from(acked));
        } else if self.full_bw_reached {
            cwnd = (cwnd + f64::from(acked)).min(max_inflight);
        } else if cwnd < max_inflight || path.delivered < u64::from(core.config.initial_window_segs)
        {
            cwnd += f64::from(acked);
        }
        cwnd = cwnd.max(f64::from(self.c.min_pipe_cwnd_segs));
        if self.mode == Bbr3Mode::ProbeRtt {
            cwnd = cwnd.min(self.probe_rtt_cwnd(core));
        }
        // BoundCwndForModel.
        let mut cap = f64::INFINITY;
        if self.mode.is_probe_bw() && self.mode != Bbr3Mode::ProbeBwCruise {
            cap = self.inflight_hi;
        } else if matches!(self.mode, Bbr3Mode::ProbeRtt | Bbr3Mode::ProbeBwCruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo);
        cap = cap.max(f64::from(self.c.min_pipe_cwnd_segs));
        cwnd = cwnd.min(cap);
        core.set_cwnd(cwnd.clamp(1.0, u32::MAX as f64) as u32);
    }
}

impl CcPolicy for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    fn init(&mut self, core: &mut Core, path: &PathInfo) {
        let c = self.c.clone();
        *self = Bbr3::new(c);
        self.mss = core.mss.max(1);
        self.min_rtt = path.min_rtt.or(path.srtt);
        self.min_rtt_stamp = path.now;
        self.probe_rtt_min_delay = self.min_rtt;
        self.probe_rtt_min_stamp = path.now;
        self.next_round_delivered = path.delivered;
        self.loss_round_delivered = path.delivered;
        self.agg.restart_epoch(path.now);
        self.set_pacing_rate(core, path);
    }

    fn full_control(&self) -> bool {
        true
    }

    fn on_cong_avoid(&mut self, _core: &mut Core, _ack: &AckSample, _acked: u32, _path: &PathInfo) {
        // Full control: the window is set in `on_cong_control`.
    }

    fn on_ecn(&mut self, _core: &mut Core, sample: &EcnSample, _path: &PathInfo) {
        self.ecn_in_use = true;
        self.ce_in_round = self.ce_in_round.saturating_add(sample.newly_ce_packets);
        self.ect_in_round = self
            .ect_in_round
            .saturating_add(sample.newly_ect_packets.max(sample.newly_ce_packets));
    }

    fn on_cong_control(&mut self, core: &mut Core, ack: &AckSample, path: &PathInfo) {
        let rs = ack.rate.clone().unwrap_or_default();
        let valid = rs.is_valid();
        let delivery_rate = rs.rate_segs_per_sec().unwrap_or(0.0);
        let app_limited = !valid || rs.is_app_limited;
        let acked = ack.acked_segs;
        let losses = if ack.rate.is_some() {
            rs.losses
        } else {
            ack.newly_lost
        };
        let prior_delivered = if ack.rate.is_some() {
            rs.prior_delivered
        } else {
            path.delivered.saturating_sub(u64::from(acked))
        };
        let tx_in_flight = f64::from(if ack.rate.is_some() {
            rs.prior_in_flight
        } else {
            ack.prior_in_flight
        });

        // BBRUpdateRound.
        self.round_start = false;
        if prior_delivered >= self.next_round_delivered && (acked > 0 || valid) {
            self.next_round_delivered = path.delivered;
            self.round_count += 1;
            self.rounds_since_bw_probe += 1;
            self.round_start = true;
        }
        if self.packet_conservation && path.snd_una >= self.conservation_round_end {
            self.packet_conservation = false;
        }

        // BBRUpdateLatestDeliverySignals.
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(delivery_rate);
        self.inflight_latest = self.inflight_latest.max(f64::from(rs.delivered));
        if prior_delivered >= self.loss_round_delivered && (acked > 0 || valid) {
            self.loss_round_delivered = path.delivered;
            self.loss_round_start = true;
        }
        self.lost_in_round = self.lost_in_round.saturating_add(u64::from(losses));
        self.delivered_in_round = self.delivered_in_round.saturating_add(u64::from(acked));
        if losses > 0 {
            self.loss_events_in_round = self.loss_events_in_round.saturating_add(1);
        }

        // BBRUpdateCongestionSignals: the max-bw filter, then the round's verdict.
        if valid && (delivery_rate >= self.max_bw() || !rs.is_app_limited) {
            self.bw_hi[1] = self.bw_hi[1].max(delivery_rate);
        }
        if losses > 0 {
            self.loss_in_round = true;
        }
        if self.loss_round_start {
            if self.ecn_in_use && self.ect_in_round > 0 {
                let ratio = (self.ce_in_round as f64 / self.ect_in_round as f64).min(1.0);
                self.ce_ratio_last_round = ratio;
                self.ecn_alpha =
                    (1.0 - self.c.ecn_alpha_gain) * self.ecn_alpha + self.c.ecn_alpha_gain * ratio;
                if self.mode == Bbr3Mode::Startup && ratio > self.c.ecn_thresh {
                    self.startup_ecn_rounds += 1;
                } else if ratio <= self.c.ecn_thresh {
                    self.startup_ecn_rounds = 0;
                }
            }
            self.adapt_lower_bounds_from_congestion(core);
        }

        // BBRUpdateACKAggregation.
        if valid && self.bw > 0.0 {
            self.agg.update(
                self.round_start,
                5,
                path.now,
                Bw::from_segs_per_sec(self.bw),
                acked,
                1 << 20,
                core.cwnd,
            );
        }

        // State machine.
        self.check_full_bw_reached(app_limited);
        self.check_startup_high_loss_or_ecn(core, tx_in_flight);
        if self.mode == Bbr3Mode::Startup && self.full_bw_reached {
            self.enter_drain();
        }
        if self.mode == Bbr3Mode::Drain && f64::from(path.in_flight) <= self.inflight(1.0, core) {
            self.enter_probe_bw(path);
        }
        self.update_probe_bw_cycle_phase(
            core,
            path,
            acked,
            app_limited,
            tx_in_flight,
            delivery_rate,
        );
        self.update_min_rtt(ack.rtt, path.now);
        self.check_probe_rtt(core, path, acked);

        // BBRAdvanceLatestDeliverySignals and the end of the loss round.
        if self.loss_round_start {
            self.bw_latest = delivery_rate;
            self.inflight_latest = f64::from(rs.delivered);
            self.loss_in_round = false;
            self.loss_events_in_round = 0;
            self.lost_in_round = 0;
            self.delivered_in_round = 0;
            self.ce_in_round = 0;
            self.ect_in_round = 0;
        }
        // BBRBoundBWForModel.
        self.bw = self.max_bw().min(self.bw_lo);

        self.set_pacing_rate(core, path);
        self.set_cwnd(core, path, acked);
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        // BBR does not use ssthresh; keep it.
        core.ssthresh
    }

    fn on_state(&mut self, core: &mut Core, new: CaState, path: &PathInfo) {
        match new {
            CaState::Recovery => {
                // draft §4.6.4.4: packet conservation for one round.
                self.save_cwnd(core);
                self.in_recovery = true;
                let w = path
                    .in_flight
                    .saturating_add(1)
                    .max(self.c.min_pipe_cwnd_segs);
                core.set_cwnd(w);
                self.packet_conservation = true;
                self.conservation_round_end = path.snd_nxt;
            }
            CaState::Loss => {
                self.save_cwnd(core);
                self.in_recovery = true;
                self.packet_conservation = false;
                self.reset_full_bw();
            }
            CaState::Open | CaState::Disorder => {
                if self.in_recovery {
                    self.in_recovery = false;
                    self.packet_conservation = false;
                    self.restore_cwnd(core);
                }
            }
            CaState::Cwr => {}
        }
    }

    fn on_event(&mut self, core: &mut Core, event: CwndEvent, path: &PathInfo) {
        if let CwndEvent::TxStart { .. } = event {
            self.idle_restart = true;
            self.agg.restart_epoch(path.now);
            if self.mode.is_probe_bw() {
                let saved = self.pacing_gain;
                self.pacing_gain = 1.0;
                self.set_pacing_rate(core, path);
                self.pacing_gain = saved;
            } else if self.mode == Bbr3Mode::ProbeRtt {
                self.check_probe_rtt_done(core, path);
            }
        }
    }

    fn on_initial_window(&mut self, core: &mut Core, segs: u32, path: &PathInfo) {
        // Packet-pair start-up: the measured window, still in STARTUP.
        core.set_cwnd(segs);
        self.set_pacing_rate(core, path);
    }

    fn pacing_rate(&self, _core: &Core, _path: &PathInfo) -> Option<u64> {
        Some(self.pacing_rate_bytes_per_sec.max(1))
    }

    fn mode(&self) -> Option<&'static str> {
        Some(self.mode.as_str())
    }

    fn bandwidth_estimate_bytes_per_sec(&self) -> Option<u64> {
        (self.bw > 0.0).then(|| (self.bw * f64::from(self.mss)).min(u64::MAX as f64 / 2.0) as u64)
    }
}

#[cfg(test)]
mod tests;
