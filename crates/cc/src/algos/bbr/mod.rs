//! BBR v1 (cc-spec §3.14; Cardwell et al., ACM Queue 2016; kernel
//! `net/ipv4/tcp_bbr.c`): a model-based, full-control congestion controller.
//!
//! BBR does not treat loss as its congestion signal. It estimates the
//! bottleneck bandwidth (a max filter over 10 packet-timed rounds of
//! delivery-rate samples) and the two-way propagation delay (a 10 s min
//! filter of RTT samples) and sets the pacing rate to `pacing_gain · bw` and
//! cwnd to `cwnd_gain · bw · min_rtt` plus allowances. It runs STARTUP
//! (gain 2/ln 2) until the bandwidth stops growing by 25 % for 3 rounds,
//! DRAINs the queue it built, then cycles through PROBE_BW's eight gains
//! (5/4, 3/4, then six rounds of 1) and dips to 4 segments in PROBE_RTT when
//! the min-RTT estimate is 10 s old. It is for bulk flows on paths where
//! buffers are deep (bufferbloat) or losses are not congestion (policed or
//! lossy links); it is not fair to loss-based flows in shallow buffers. It
//! needs the connection's delivery-rate samples ([`AckSample::rate`], H11).
//!
//! **Parameters** ([`BbrConfig`], defaults = kernel v1): bandwidth filter 10
//! rounds; min-RTT window 10 s; PROBE_RTT 200 ms at 4 segments; gains
//! `739/256`, `88/256`, cwnd gain 2, cycle `[5/4, 3/4, 1 ×6]` (all gains are
//! fractions of 256); full pipe at < 25 % growth for 3 rounds; long-term
//! (policer) model 4–16 rounds, loss 50/256, consistency 1/8 or 4 kbit/s,
//! 48 rounds of use; ACK-aggregation gain 1, 5-round buckets, epoch reset at
//! 2²⁰ segments, cap `bw · 100 ms`; minimum TSO rate 1.2 Mbit/s; pacing
//! margin 1 %.
//!
//! **[PROJECT CHOICE]s.** `random_seed` (default `0xB3B3_0001`): the kernel
//! draws the first PROBE_BW phase from its global RNG; we draw it from a
//! seeded splitmix64 so runs are reproducible. `tso_max_bytes` (65,215 =
//! 65,536 − 1 − 320, the kernel's GSO legacy maximum minus x86-64
//! `MAX_TCP_HEADER`): the spec leaves "headers" open. `fixed_quantum_segs`
//! (default none = kernel rule): a transport without segmentation offload may
//! fix the quantum (ns-3 uses 1).
//!
//! **Plumbing decisions** (where our trait differs from the kernel's):
//! * The per-ACK RTT sample is [`AckSample::rtt`] (Karn-valid, the kernel's
//!   `rs->rtt_us`); if [`AckSample::rate`] is `None` the rate sample is
//!   invalid (no bandwidth, round or aggregation update), `acked`, `losses`
//!   and `prior_in_flight` then come from the [`AckSample`].
//! * PROBE_RTT "marks the connection app-limited"; the connection cannot be
//!   told, so BBR itself treats as app-limited every sample whose packet was
//!   sent from PROBE_RTT entry until the connection's kernel-style mark
//!   (`delivered + in_flight` at the last PROBE_RTT ACK) was passed.
//! * The kernel skips `cwnd = ssthresh` at recovery exit for `cong_control`
//!   algorithms; so does the adapter for every full-control policy. BBR ignores `CoreConfig::recovery_mode` (always PRR
//!   bookkeeping, which BBR never uses) so classic inflation cannot touch it.
//! * There is no earliest-departure-time queue to discount, so in-flight is
//!   used as is (the spec's v1 rules).
//! * The long-term model needs the connection's total lost count; BBR sums
//!   the per-ACK losses, and at an RTO adds the drop of in-flight since the
//!   last ACK (the packets the RTO marked lost).
//! * [`on_initial_window`](CcPolicy::on_initial_window) (packet-pair
//!   start-up): the measured window becomes cwnd, BBR stays in STARTUP with
//!   `ssthresh = ∞`, and its initial pacing rate is re-derived from that cwnd
//!   (`high_gain · cwnd / SRTT`), as kernel init does from the IW.
//! * `on_idle_restart` is always an app-limited restart (idle ≥ RTO means the
//!   sender had nothing to send).

mod model;
mod update;

#[cfg(test)]
mod tests;

pub use model::{bdp, budget, AckAggregation, Bw, PhaseRng, QuantumRule, GAIN_UNIT};

use crate::core::{Core, CoreConfig, RecoveryMode};
use crate::filter::WindowedFilter;
use crate::policy::{CcPolicy, PolicyController};
use crate::rate::RoundCounter;
use crate::types::{AckSample, CaState, CwndEvent, PathInfo, StartupMeasurement, SSTHRESH_INF};
use crate::Time;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// BBR v1 settings; defaults are the kernel's constants (cc-spec §3.14).
/// Gains (`*_x256`) are fractions of 256 (kernel `BBR_UNIT`).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct BbrConfig {
    /// Shared core settings (`recovery_mode` is ignored: BBR sets cwnd itself).
    pub core: CoreConfig,
    /// Bandwidth max-filter window, packet-timed rounds (kernel `bbr_bw_rtts` = 10).
    pub bw_filter_rounds: u32,
    /// Min-RTT filter window, milliseconds (10 s).
    pub min_rtt_window_ms: u64,
    /// Minimum time at the PROBE_RTT window, milliseconds (200); 0 disables PROBE_RTT.
    pub probe_rtt_duration_ms: u64,
    /// STARTUP pacing and cwnd gain, /256 (739 = 256·2885/1000 + 1 ≈ 2/ln 2).
    pub high_gain_x256: u32,
    /// DRAIN pacing gain, /256 (88 = 256·1000/2885).
    pub drain_gain_x256: u32,
    /// PROBE_BW cwnd gain, /256 (512 = 2).
    pub cwnd_gain_x256: u32,
    /// PROBE_BW pacing-gain cycle, /256 (`[5/4, 3/4, 1, 1, 1, 1, 1, 1]`).
    pub pacing_gain_cycle_x256: [u32; 8],
    /// The first PROBE_BW phase is `7 − r`, `r` uniform in `0..n`, advanced once (kernel `bbr_cycle_rand` = 7).
    pub cycle_rand_phases: u32,
    /// [PROJECT CHOICE] Seed of the splitmix64 generator that draws the first
    /// PROBE_BW phase (the kernel uses its global RNG; we want reproducible runs).
    pub random_seed: u64,
    /// Minimum cwnd target and PROBE_RTT window, segments (4).
    pub cwnd_min_target_segs: u32,
    /// Full pipe: bandwidth must grow by this factor per round, /256 (320 = 1.25).
    pub full_bw_thresh_x256: u32,
    /// Full pipe after this many rounds without that growth (3).
    pub full_bw_rounds: u32,
    /// Long-term model: minimum interval, rounds (4).
    pub lt_intvl_min_rounds: u32,
    /// Long-term model: an interval longer than this many rounds is discarded (16 = 4·4).
    pub lt_intvl_max_rounds: u32,
    /// Long-term model: an interval is lossy if lost/delivered ≥ this, /256 (50 ≈ 20 %).
    pub lt_loss_thresh_x256: u32,
    /// Long-term model: two intervals are consistent if their rates differ by ≤ this ratio, /256 (32 = 1/8).
    pub lt_bw_ratio_x256: u32,
    /// Long-term model: ... or by at most this many bits per second (4000).
    pub lt_bw_diff_bits_per_sec: u64,
    /// Long-term model: use the policed rate for this many PROBE_BW rounds (48).
    pub lt_bw_max_rounds: u32,
    /// ACK-aggregation cwnd allowance gain, /256 (256 = 1; 0 disables the estimator).
    pub extra_acked_gain_x256: u32,
    /// ACK-aggregation bucket length, rounds (5; the max spans 5–10 rounds).
    pub extra_acked_win_rounds: u32,
    /// ACK-aggregation epoch restarts once this many segments were acknowledged in it (2²⁰).
    pub ack_epoch_acked_reset_thresh_segs: u32,
    /// ACK-aggregation allowance cap, microseconds of the bandwidth estimate (100,000 = 100 ms).
    pub extra_acked_max_us: u64,
    /// Below this pacing rate the minimum send quantum is 1 segment, else 2; bits/s (1.2 Mbit/s).
    pub min_tso_rate_bits_per_sec: u64,
    /// Every pacing rate is reduced by this percentage (kernel `bbr_pacing_margin_percent` = 1).
    pub pacing_margin_percent: u32,
    /// The send quantum is `pacing_rate >> pacing_shift` bytes (10: ~1 ms of data).
    pub pacing_shift: u32,
    /// [PROJECT CHOICE] Byte cap of one send quantum: 65,536 − 1 − 320 (kernel GSO
    /// legacy maximum minus x86-64 `MAX_TCP_HEADER`; the spec says "65536 − headers").
    pub tso_max_bytes: u32,
    /// Segment cap of one send quantum (127).
    pub tso_max_segs: u32,
    /// [PROJECT CHOICE] A fixed send quantum in segments instead of the kernel
    /// rule (ns-3 uses 1); `None` (default) reproduces the kernel.
    pub fixed_quantum_segs: Option<u32>,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig {
            core: CoreConfig::default(),
            bw_filter_rounds: 10,
            min_rtt_window_ms: 10_000,
            probe_rtt_duration_ms: 200,
            high_gain_x256: GAIN_UNIT * 2885 / 1000 + 1,
            drain_gain_x256: GAIN_UNIT * 1000 / 2885,
            cwnd_gain_x256: GAIN_UNIT * 2,
            pacing_gain_cycle_x256: [
                GAIN_UNIT * 5 / 4,
                GAIN_UNIT * 3 / 4,
                GAIN_UNIT,
                GAIN_UNIT,
                GAIN_UNIT,
                GAIN_UNIT,
                GAIN_UNIT,
                GAIN_UNIT,
            ],
            cycle_rand_phases: 7,
            random_seed: 0xB3B3_0001,
            cwnd_min_target_segs: 4,
            full_bw_thresh_x256: GAIN_UNIT * 5 / 4,
            full_bw_rounds: 3,
            lt_intvl_min_rounds: 4,
            lt_intvl_max_rounds: 16,
            lt_loss_thresh_x256: 50,
            lt_bw_ratio_x256: GAIN_UNIT / 8,
            lt_bw_diff_bits_per_sec: 4000,
            lt_bw_max_rounds: 48,
            extra_acked_gain_x256: GAIN_UNIT,
            extra_acked_win_rounds: 5,
            ack_epoch_acked_reset_thresh_segs: 1 << 20,
            extra_acked_max_us: 100_000,
            min_tso_rate_bits_per_sec: 1_200_000,
            pacing_margin_percent: 1,
            pacing_shift: 10,
            tso_max_bytes: 65_536 - 1 - 320,
            tso_max_segs: 127,
            fixed_quantum_segs: None,
        }
    }
}

impl BbrConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Bbr> {
        // BBR sets cwnd on every ACK; the adapter's classic-NewReno inflation
        // at recovery entry must not touch it.
        let core = CoreConfig {
            recovery_mode: RecoveryMode::Prr,
            ..self.core.clone()
        };
        PolicyController::new(core, Bbr::new(self.clone()))
    }
}

/// BBR's operating mode.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BbrMode {
    /// Ramp up at high gain to fill the pipe.
    Startup,
    /// Drain the queue STARTUP built.
    Drain,
    /// Steady state: cycle the pacing gain around the estimated bandwidth.
    ProbeBw,
    /// Cut the window to re-measure the propagation delay.
    ProbeRtt,
}

impl BbrMode {
    /// The mode's name in stats (`startup`, `drain`, `probe_bw`, `probe_rtt`).
    pub fn as_str(self) -> &'static str {
        match self {
            BbrMode::Startup => "startup",
            BbrMode::Drain => "drain",
            BbrMode::ProbeBw => "probe_bw",
            BbrMode::ProbeRtt => "probe_rtt",
        }
    }
}

/// Long-term (policer) sampling state (kernel `lt_*`).
#[derive(Clone, Debug, Default, PartialEq)]
struct LongTerm {
    is_sampling: bool,
    rounds: u32,
    use_bw: bool,
    bw: Option<Bw>,
    last_delivered: u64,
    last_stamp: Time,
    last_lost: u64,
}

/// The BBR v1 policy.
#[derive(Clone, Debug)]
pub struct Bbr {
    cfg: BbrConfig,
    mode: BbrMode,
    bw_filter: WindowedFilter,
    rounds: RoundCounter,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Time,
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    packet_conservation: bool,
    prev_ca_state: CaState,
    idle_restart: bool,
    full_bw: Bw,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    pacing_gain_x256: u32,
    cwnd_gain_x256: u32,
    cycle_idx: usize,
    cycle_stamp: Time,
    prior_cwnd: u32,
    has_seen_rtt: bool,
    pacing_rate_bytes_per_sec: u64,
    lt: LongTerm,
    agg: AckAggregation,
    rng: PhaseRng,
    mss: u32,
    max_pacing_rate_bytes_per_sec: Option<u64>,
    /// The connection's `delivered` at the last event.
    delivered: u64,
    /// When data was last delivered (kernel `delivered_mstamp`).
    delivered_stamp: Time,
    /// Segments reported lost over the connection's life (kernel `tp->lost`).
    lost_segs: u64,
    /// In-flight after the last ACK (to count the packets an RTO marks lost).
    last_in_flight: u32,
    /// Packets with `delivered` at send in this range are app-limited (PROBE_RTT).
    app_limited_range: Option<(u64, u64)>,
}

impl Bbr {
    /// A policy with `cfg`, before `init`.
    pub fn new(cfg: BbrConfig) -> Bbr {
        let bw_filter = WindowedFilter::new_max(cfg.bw_filter_rounds as u64);
        let rng = PhaseRng::new(cfg.random_seed);
        Bbr {
            mode: BbrMode::Startup,
            bw_filter,
            rounds: RoundCounter::default(),
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            packet_conservation: false,
            prev_ca_state: CaState::Open,
            idle_restart: false,
            full_bw: Bw::ZERO,
            full_bw_cnt: 0,
            full_bw_reached: false,
            pacing_gain_x256: cfg.high_gain_x256,
            cwnd_gain_x256: cfg.high_gain_x256,
            cycle_idx: 0,
            cycle_stamp: Time::ZERO,
            prior_cwnd: 0,
            has_seen_rtt: false,
            pacing_rate_bytes_per_sec: 0,
            lt: LongTerm::default(),
            agg: AckAggregation::default(),
            rng,
            mss: 1448,
            max_pacing_rate_bytes_per_sec: None,
            delivered: 0,
            delivered_stamp: Time::ZERO,
            lost_segs: 0,
            last_in_flight: 0,
            app_limited_range: None,
            cfg,
        }
    }

    /// Packet-timed rounds counted so far.
    pub fn round_count(&self) -> u64 {
        self.rounds.round_count
    }
    /// The windowed minimum RTT (`None` before the first sample).
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    /// When the min-RTT estimate was last refreshed.
    pub fn min_rtt_stamp(&self) -> Time {
        self.min_rtt_stamp
    }
    /// Index of the current PROBE_BW phase in the gain cycle (0 = the 5/4 phase).
    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }
    /// The current pacing gain as a real number.
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain_x256 as f64 / GAIN_UNIT as f64
    }
    /// The current cwnd gain as a real number.
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain_x256 as f64 / GAIN_UNIT as f64
    }
    /// Whether STARTUP has filled the pipe.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    /// The current mode.
    pub fn bbr_mode(&self) -> BbrMode {
        self.mode
    }
    /// The bandwidth estimate used for pacing and cwnd (`lt_bw` while policed).
    pub fn bw(&self) -> Bw {
        match (self.lt.use_bw, self.lt.bw) {
            (true, Some(bw)) => bw,
            _ => self.max_bw(),
        }
    }
    /// The max filter's bandwidth.
    pub fn max_bw(&self) -> Bw {
        Bw::from_raw(self.bw_filter.get_or_zero())
    }
    /// cwnd saved at the last recovery or PROBE_RTT entry, segments.
    pub fn prior_cwnd(&self) -> u32 {
        self.prior_cwnd
    }
    /// Whether the long-term (policed) rate is in use.
    pub fn lt_use_bw(&self) -> bool {
        self.lt.use_bw
    }
    /// The current pacing rate, bytes per second.
    pub fn pacing_rate_bytes_per_sec(&self) -> u64 {
        self.pacing_rate_bytes_per_sec
    }

    /// Kernel `bbr_save_cwnd`: remember the last known good cwnd.
    fn save_cwnd(&mut self, cwnd: u32) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }
}

impl CcPolicy for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn init(&mut self, core: &mut Core, path: &PathInfo) {
        let cfg = self.cfg.clone();
        *self = Bbr::new(cfg);
        core.ssthresh = SSTHRESH_INF;
        self.mss = core.mss.max(1);
        self.max_pacing_rate_bytes_per_sec = core.config.max_pacing_rate_bytes_per_sec;
        self.delivered = path.delivered;
        self.delivered_stamp = path.now;
        self.last_in_flight = path.in_flight;
        self.rounds.restart(path.delivered);
        self.min_rtt = path.min_rtt;
        self.min_rtt_stamp = path.now;
        self.init_pacing_rate_from_rtt(core.cwnd, path);
        self.reset_lt_sampling();
        self.agg.restart_epoch(path.now);
    }

    fn on_cong_avoid(&mut self, _core: &mut Core, _ack: &AckSample, _acked: u32, _p: &PathInfo) {
        // Never called: BBR has full control of the window.
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        self.save_cwnd(core.cwnd);
        core.ssthresh
    }

    fn undo_cwnd(&mut self, core: &Core) -> u32 {
        self.full_bw = Bw::ZERO;
        self.full_bw_cnt = 0;
        self.reset_lt_sampling();
        core.cwnd
    }

    fn on_state(&mut self, _core: &mut Core, new: CaState, path: &PathInfo) {
        if new == CaState::Loss {
            // The RTO marked the outstanding packets lost.
            let marked = self.last_in_flight.saturating_sub(path.in_flight);
            self.lost_segs = self.lost_segs.saturating_add(marked as u64);
            self.last_in_flight = path.in_flight;
            self.delivered = self.delivered.max(path.delivered);
            self.prev_ca_state = CaState::Loss;
            self.full_bw = Bw::ZERO;
            self.rounds.round_start = true; // treat an RTO like the end of a round
            self.lt_bw_sampling(1, false);
        }
    }

    fn on_event(&mut self, core: &mut Core, event: CwndEvent, path: &PathInfo) {
        match event {
            CwndEvent::TxStart { .. } => {
                self.idle_restart = true;
                self.agg.restart_epoch(path.now);
                match self.mode {
                    BbrMode::ProbeBw => {
                        let bw = self.bw();
                        self.set_pacing_rate(core.cwnd, path, bw, GAIN_UNIT);
                    }
                    BbrMode::ProbeRtt => self.check_probe_rtt_done(core, path.now),
                    _ => {}
                }
            }
            // The adapter skips H7 (cwnd = ssthresh) at recovery exit for
            // full-control policies, as the kernel does for `cong_control`.
            CwndEvent::CompleteCwr | CwndEvent::Loss | CwndEvent::EcnCe => {}
        }
    }

    fn full_control(&self) -> bool {
        true
    }

    fn on_cong_control(&mut self, core: &mut Core, ack: &AckSample, path: &PathInfo) {
        self.cong_control(core, ack, path);
    }

    fn pacing_rate(&self, _core: &Core, _path: &PathInfo) -> Option<u64> {
        Some(self.pacing_rate_bytes_per_sec.max(1))
    }

    fn on_initial_window(&mut self, core: &mut Core, segs: u32, path: &PathInfo) {
        core.set_cwnd(segs);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(core.cwnd, path);
    }

    fn on_startup_measurement(
        &mut self,
        core: &mut Core,
        segs: u32,
        m: &StartupMeasurement,
        path: &PathInfo,
    ) {
        core.set_cwnd(segs);
        // The pair's bandwidth is BBR's first bandwidth sample: pacing
        // (STARTUP's high gain) and the BDP start from it rather than
        // from the initial window over the first RTT.
        let bw =
            Bw::from_segs_per_sec(m.bandwidth_bytes_per_sec as f64 / f64::from(self.mss.max(1)));
        self.bw_filter.update(self.rounds.round_count, bw.raw());
        let rate = self.bw_to_pacing_rate(self.bw(), self.pacing_gain_x256);
        if path.srtt.is_some() {
            self.has_seen_rtt = true;
        }
        self.pacing_rate_bytes_per_sec = self.pacing_rate_bytes_per_sec.max(rate);
    }

    fn mode(&self) -> Option<&'static str> {
        Some(self.mode.as_str())
    }

    fn bandwidth_estimate_bytes_per_sec(&self) -> Option<u64> {
        let known = self.bw_filter.get().is_some() || self.lt.use_bw;
        known.then(|| self.bw().bytes_per_sec(self.mss, GAIN_UNIT, 0))
    }
}
