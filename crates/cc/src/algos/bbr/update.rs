//! BBR's per-ACK algorithm (cc-spec §3.14 steps 1–8, kernel `bbr_main`),
//! the long-term (policer) model and the mode transitions.

use super::model::{bdp, budget, Bw, QuantumRule, GAIN_UNIT};
use super::{Bbr, BbrMode, LongTerm};
use crate::core::Core;
use crate::types::{AckSample, CaState, PathInfo};
use crate::Time;
use std::time::Duration;

/// Number of phases in the PROBE_BW gain cycle.
const CYCLE_LEN: usize = 8;
/// The long-term model waits for an interval of at least this long (kernel: 1 ms).
const LT_MIN_INTERVAL: Duration = Duration::from_millis(1);

/// What BBR reads from one ACK (kernel `struct rate_sample`).
#[derive(Clone, Debug, Default)]
pub(super) struct Rs {
    /// A rate sample exists and its interval is positive.
    pub valid: bool,
    pub delivered: u32,
    pub interval: Duration,
    pub prior_delivered: u64,
    pub prior_in_flight: u32,
    pub losses: u32,
    pub acked_sacked: u32,
    pub is_app_limited: bool,
    pub rtt: Option<Duration>,
    pub is_ack_delayed: bool,
}

impl Rs {
    /// The sample of `ack`; samples of packets sent in `app_limited_range`
    /// (by their `prior_delivered`) count as app-limited.
    pub fn from_ack(ack: &AckSample, app_limited_range: Option<(u64, u64)>) -> Rs {
        match &ack.rate {
            Some(r) => {
                let marked = app_limited_range
                    .is_some_and(|(lo, hi)| (lo..=hi).contains(&r.prior_delivered));
                Rs {
                    valid: r.is_valid(),
                    delivered: r.delivered,
                    interval: r.interval,
                    prior_delivered: r.prior_delivered,
                    prior_in_flight: r.prior_in_flight,
                    losses: r.losses,
                    acked_sacked: r.acked_sacked,
                    is_app_limited: r.is_app_limited || marked,
                    rtt: ack.rtt,
                    is_ack_delayed: r.is_ack_delayed,
                }
            }
            None => Rs {
                prior_in_flight: ack.prior_in_flight,
                losses: ack.newly_lost,
                acked_sacked: ack.acked_segs,
                rtt: ack.rtt,
                ..Rs::default()
            },
        }
    }
}

impl Bbr {
    /// Kernel `bbr_main`: update the model, then pacing, then cwnd.
    pub(super) fn cong_control(&mut self, core: &mut Core, ack: &AckSample, path: &PathInfo) {
        let rs = Rs::from_ack(ack, self.app_limited_range);
        self.delivered = path.delivered;
        if rs.acked_sacked > 0 {
            self.delivered_stamp = path.now;
        }
        self.lost_segs = self.lost_segs.saturating_add(rs.losses as u64);
        self.last_in_flight = path.in_flight;

        self.update_bw(&rs, path);
        self.update_ack_aggregation(&rs, core.cwnd);
        self.update_cycle_phase(&rs);
        self.check_full_bw_reached(&rs);
        self.check_drain(core, path);
        self.update_min_rtt(core, &rs, path);
        self.update_gains();

        let bw = self.bw();
        self.set_pacing_rate(core.cwnd, path, bw, self.pacing_gain_x256);
        self.set_cwnd(core, &rs, path, bw, self.cwnd_gain_x256);
    }

    /// The send quantum at the current pacing rate, segments.
    pub(super) fn quantum(&self) -> u32 {
        let rule = QuantumRule {
            fixed_segs: self.cfg.fixed_quantum_segs,
            pacing_shift: self.cfg.pacing_shift,
            max_bytes: self.cfg.tso_max_bytes,
            max_segs: self.cfg.tso_max_segs,
            min_tso_rate_bytes_per_sec: self.cfg.min_tso_rate_bits_per_sec / 8,
        };
        rule.quantum(self.pacing_rate_bytes_per_sec, self.mss)
    }

    /// `budget(c)`: the +2 applies in the 5/4 phase whatever gain is asked for.
    pub(super) fn budget(&self, cwnd: u32) -> u32 {
        let probe_up = self.mode == BbrMode::ProbeBw && self.cycle_idx == 0;
        budget(cwnd, self.quantum(), probe_up)
    }

    /// `bdp(bw, g)` with the current min RTT; IW before any RTT sample.
    pub(super) fn bdp(&self, bw: Bw, gain_x256: u32) -> u32 {
        bdp(
            bw,
            self.min_rtt,
            gain_x256,
            self.cfg.core.initial_window_segs,
        )
    }

    /// `inflight(bw, g) = budget(bdp(bw, g))`.
    pub(super) fn inflight(&self, bw: Bw, gain_x256: u32) -> u32 {
        self.budget(self.bdp(bw, gain_x256))
    }

    /// The cwnd target: `budget(bdp(bw, g) + aggregation allowance)`.
    pub(super) fn target_cwnd(&self, bw: Bw, gain_x256: u32) -> u32 {
        let c = self
            .bdp(bw, gain_x256)
            .saturating_add(self.ack_aggregation_cwnd());
        self.budget(c)
    }

    /// The pacing rate for `bw` and `gain`, with the margin and the configured cap.
    pub(super) fn bw_to_pacing_rate(&self, bw: Bw, gain_x256: u32) -> u64 {
        let rate = bw.bytes_per_sec(self.mss, gain_x256, self.cfg.pacing_margin_percent);
        match self.max_pacing_rate_bytes_per_sec {
            Some(max) => rate.min(max),
            None => rate,
        }
    }

    /// Kernel `bbr_init_pacing_rate_from_rtt`: `high_gain · cwnd / SRTT`
    /// (1 ms nominal before any RTT sample).
    pub(super) fn init_pacing_rate_from_rtt(&mut self, cwnd: u32, path: &PathInfo) {
        let rtt = match path.srtt {
            Some(srtt) => {
                self.has_seen_rtt = true;
                srtt.max(Duration::from_micros(1))
            }
            None => Duration::from_millis(1),
        };
        let bw = Bw::from_delivery(cwnd as u64, rtt).unwrap_or(Bw::ZERO);
        self.pacing_rate_bytes_per_sec = self.bw_to_pacing_rate(bw, self.cfg.high_gain_x256);
    }

    /// Step 7 (kernel `bbr_set_pacing_rate`): never slow down before the pipe is full.
    pub(super) fn set_pacing_rate(&mut self, cwnd: u32, path: &PathInfo, bw: Bw, gain_x256: u32) {
        let rate = self.bw_to_pacing_rate(bw, gain_x256);
        if !self.has_seen_rtt && path.srtt.is_some() {
            self.init_pacing_rate_from_rtt(cwnd, path);
        }
        if self.full_bw_reached || rate > self.pacing_rate_bytes_per_sec {
            self.pacing_rate_bytes_per_sec = rate;
        }
    }

    /// Step 1 (kernel `bbr_update_bw`): rounds, long-term model, max filter.
    fn update_bw(&mut self, rs: &Rs, path: &PathInfo) {
        self.rounds.round_start = false;
        if !rs.valid {
            return;
        }
        if self.rounds.update(rs.prior_delivered, path.delivered) {
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(rs.losses, rs.is_app_limited);
        let bw = Bw::from_delivery(rs.delivered as u64, rs.interval).unwrap_or(Bw::ZERO);
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw_filter.update(self.rounds.round_count, bw.raw());
        }
    }

    /// Step 2 (kernel `bbr_update_ack_aggregation`).
    fn update_ack_aggregation(&mut self, rs: &Rs, cwnd: u32) {
        if self.cfg.extra_acked_gain_x256 == 0 || rs.acked_sacked == 0 || !rs.valid {
            return;
        }
        let bw = self.bw();
        self.agg.update(
            self.rounds.round_start,
            self.cfg.extra_acked_win_rounds,
            self.delivered_stamp,
            bw,
            rs.acked_sacked,
            self.cfg.ack_epoch_acked_reset_thresh_segs,
            cwnd,
        );
    }

    /// `aggregation_allowance()` (kernel `bbr_ack_aggregation_cwnd`), segments.
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        if self.cfg.extra_acked_gain_x256 == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = self
            .bw()
            .segs_in(Duration::from_micros(self.cfg.extra_acked_max_us));
        let aggr = (self.cfg.extra_acked_gain_x256 as u64)
            .saturating_mul(self.agg.max_extra_acked() as u64)
            / GAIN_UNIT as u64;
        aggr.min(max_aggr).min(u32::MAX as u64) as u32
    }

    /// Step 3 (kernel `bbr_update_cycle_phase`).
    fn update_cycle_phase(&mut self, rs: &Rs) {
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(rs) {
            self.advance_cycle_phase();
        }
    }

    fn is_next_cycle_phase(&self, rs: &Rs) -> bool {
        let elapsed = self
            .delivered_stamp
            .saturating_duration_since(self.cycle_stamp);
        let full_length = self.min_rtt.is_some_and(|m| elapsed > m);
        let gain = self.pacing_gain_x256;
        if gain == GAIN_UNIT {
            return full_length;
        }
        let bw = self.max_bw();
        if gain > GAIN_UNIT {
            full_length && (rs.losses > 0 || rs.prior_in_flight >= self.inflight(bw, gain))
        } else {
            full_length || rs.prior_in_flight <= self.inflight(bw, GAIN_UNIT)
        }
    }

    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = self.delivered_stamp;
    }

    /// Kernel `bbr_reset_probe_bw_mode`: a random first phase, never the 3/4 one.
    pub(super) fn reset_probe_bw_mode(&mut self) {
        self.mode = BbrMode::ProbeBw;
        let n = self.cfg.cycle_rand_phases.clamp(1, CYCLE_LEN as u32);
        let r = self.rng.below(n) as usize; // < n ≤ 8
        self.cycle_idx = CYCLE_LEN - 1 - r;
        self.advance_cycle_phase();
    }

    fn reset_mode(&mut self) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode();
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    /// Step 4 (kernel `bbr_check_full_bw_reached`).
    fn check_full_bw_reached(&mut self, rs: &Rs) {
        if self.full_bw_reached || !self.rounds.round_start || rs.is_app_limited {
            return;
        }
        let thresh = self
            .full_bw
            .scale(self.cfg.full_bw_thresh_x256 as u64, GAIN_UNIT as u64);
        let max_bw = self.max_bw();
        if max_bw >= thresh {
            self.full_bw = max_bw;
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt = self.full_bw_cnt.saturating_add(1);
        self.full_bw_reached = self.full_bw_cnt >= self.cfg.full_bw_rounds;
    }

    /// Step 5 (kernel `bbr_check_drain`).
    fn check_drain(&mut self, core: &mut Core, path: &PathInfo) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            core.ssthresh = self.inflight(self.max_bw(), GAIN_UNIT).max(1);
        }
        if self.mode == BbrMode::Drain && path.in_flight <= self.inflight(self.max_bw(), GAIN_UNIT)
        {
            self.reset_probe_bw_mode();
        }
    }

    /// Step 6 (kernel `bbr_update_min_rtt`): the min-RTT filter and PROBE_RTT.
    fn update_min_rtt(&mut self, core: &mut Core, rs: &Rs, path: &PathInfo) {
        let now = path.now;
        let window = Duration::from_millis(self.cfg.min_rtt_window_ms);
        let expired = now > self.min_rtt_stamp.saturating_add(window);
        if let Some(rtt) = rs.rtt {
            let lower = self.min_rtt.is_none_or(|m| rtt < m);
            if lower || (expired && !rs.is_ack_delayed) {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if self.cfg.probe_rtt_duration_ms > 0
            && expired
            && !self.idle_restart
            && self.mode != BbrMode::ProbeRtt
        {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(core.cwnd);
            self.probe_rtt_done_stamp = None;
            self.app_limited_range = Some((path.delivered, path.delivered));
        }
        if self.mode == BbrMode::ProbeRtt {
            // Kernel: tp->app_limited = delivered + in_flight (at least 1).
            let mark = path.delivered.saturating_add(path.in_flight as u64).max(1);
            let lo = self.app_limited_range.map_or(path.delivered, |(lo, _)| lo);
            self.app_limited_range = Some((lo, mark));
            if self.probe_rtt_done_stamp.is_none()
                && path.in_flight <= self.cfg.cwnd_min_target_segs
            {
                let hold = Duration::from_millis(self.cfg.probe_rtt_duration_ms);
                self.probe_rtt_done_stamp = Some(now.saturating_add(hold));
                self.probe_rtt_round_done = false;
                self.rounds.restart(path.delivered);
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.rounds.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(core, now);
                }
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// Kernel `bbr_check_probe_rtt_done`: leave PROBE_RTT after its hold time.
    pub(super) fn check_probe_rtt_done(&mut self, core: &mut Core, now: Time) {
        if self.probe_rtt_done_stamp.is_none_or(|done| now <= done) {
            return;
        }
        self.min_rtt_stamp = now;
        core.set_cwnd(core.cwnd.max(self.prior_cwnd));
        self.reset_mode();
    }

    /// Kernel `bbr_update_gains`.
    pub(super) fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            BbrMode::Startup => (self.cfg.high_gain_x256, self.cfg.high_gain_x256),
            BbrMode::Drain => (self.cfg.drain_gain_x256, self.cfg.high_gain_x256),
            BbrMode::ProbeBw => {
                let pacing = if self.lt.use_bw {
                    GAIN_UNIT
                } else {
                    self.cfg.pacing_gain_cycle_x256[self.cycle_idx % CYCLE_LEN]
                };
                (pacing, self.cfg.cwnd_gain_x256)
            }
            BbrMode::ProbeRtt => (GAIN_UNIT, GAIN_UNIT),
        };
        self.pacing_gain_x256 = pacing;
        self.cwnd_gain_x256 = cwnd;
    }

    /// Step 8 (kernel `bbr_set_cwnd` with `bbr_set_cwnd_to_recover_or_restore`).
    fn set_cwnd(&mut self, core: &mut Core, rs: &Rs, path: &PathInfo, bw: Bw, gain_x256: u32) {
        let acked = rs.acked_sacked;
        let mut cwnd = core.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(cwnd, rs, core.ca_state, path);
            cwnd = c;
            if !conserving {
                let target = self.target_cwnd(bw, gain_x256);
                if self.full_bw_reached {
                    cwnd = cwnd.saturating_add(acked).min(target);
                } else if cwnd < target || path.delivered < self.cfg.core.initial_window_segs as u64
                {
                    cwnd = cwnd.saturating_add(acked);
                }
                cwnd = cwnd.max(self.cfg.cwnd_min_target_segs);
            }
        }
        cwnd = cwnd.min(core.cwnd_clamp);
        if self.mode == BbrMode::ProbeRtt {
            cwnd = cwnd.min(self.cfg.cwnd_min_target_segs);
        }
        core.set_cwnd(cwnd);
    }

    /// Packet conservation in the first round of recovery, restore on exit.
    /// Returns the new cwnd and whether packet conservation decided it.
    pub(super) fn recover_or_restore(
        &mut self,
        cwnd: u32,
        rs: &Rs,
        state: CaState,
        path: &PathInfo,
    ) -> (u32, bool) {
        let acked = rs.acked_sacked;
        let prev = self.prev_ca_state;
        let mut cwnd = cwnd;
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // First round of recovery: send one packet per packet delivered.
            self.packet_conservation = true;
            self.rounds.restart(path.delivered);
            cwnd = path.in_flight.saturating_add(acked);
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            // Leaving Recovery or Loss: restore the cwnd saved at entry.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(path.in_flight.saturating_add(acked)), true);
        }
        (cwnd, false)
    }

    /// Kernel `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_interval(&mut self) {
        self.lt.last_stamp = self.delivered_stamp;
        self.lt.last_delivered = self.delivered;
        self.lt.last_lost = self.lost_segs;
        self.lt.rounds = 0;
    }

    /// Kernel `bbr_reset_lt_bw_sampling`.
    pub(super) fn reset_lt_sampling(&mut self) {
        self.lt = LongTerm::default();
        self.reset_lt_interval();
    }

    /// Kernel `bbr_lt_bw_sampling`: detect a token-bucket policer from two
    /// lossy intervals with consistent delivery rates.
    pub(super) fn lt_bw_sampling(&mut self, losses: u32, is_app_limited: bool) {
        if self.lt.use_bw {
            if self.mode == BbrMode::ProbeBw && self.rounds.round_start {
                self.lt.rounds = self.lt.rounds.saturating_add(1);
                if self.lt.rounds >= self.cfg.lt_bw_max_rounds {
                    self.reset_lt_sampling(); // stop using lt_bw
                    self.reset_probe_bw_mode(); // restart gain cycling
                }
            }
            return;
        }
        // Start at the first loss, once the policer's tokens are exhausted.
        if !self.lt.is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_interval();
            self.lt.is_sampling = true;
        }
        if is_app_limited {
            self.reset_lt_sampling();
            return;
        }
        if self.rounds.round_start {
            self.lt.rounds = self.lt.rounds.saturating_add(1);
        }
        if self.lt.rounds < self.cfg.lt_intvl_min_rounds {
            return;
        }
        if self.lt.rounds > self.cfg.lt_intvl_max_rounds {
            self.reset_lt_sampling();
            return;
        }
        if losses == 0 {
            return;
        }
        let lost = self.lost_segs.saturating_sub(self.lt.last_lost) as u128;
        let delivered = self.delivered.saturating_sub(self.lt.last_delivered);
        let lossy =
            lost * GAIN_UNIT as u128 >= self.cfg.lt_loss_thresh_x256 as u128 * delivered as u128;
        if delivered == 0 || !lossy {
            return;
        }
        let t = self
            .delivered_stamp
            .saturating_duration_since(self.lt.last_stamp);
        if t < LT_MIN_INTERVAL {
            return;
        }
        let bw = Bw::from_delivery(delivered, t).unwrap_or(Bw::ZERO);
        self.lt_bw_interval_done(bw);
    }

    fn lt_bw_interval_done(&mut self, bw: Bw) {
        if let Some(lt_bw) = self.lt.bw {
            let diff = bw.abs_diff(lt_bw);
            let ratio_ok = diff.raw() as u128 * GAIN_UNIT as u128
                <= self.cfg.lt_bw_ratio_x256 as u128 * lt_bw.raw() as u128;
            // As the kernel: the difference converted with the pacing margin.
            let diff_bytes =
                diff.bytes_per_sec(self.mss, GAIN_UNIT, self.cfg.pacing_margin_percent);
            let diff_ok = diff_bytes <= self.cfg.lt_bw_diff_bits_per_sec / 8;
            if ratio_ok || diff_ok {
                self.lt.bw = Some(bw.mean(lt_bw));
                self.lt.use_bw = true;
                self.pacing_gain_x256 = GAIN_UNIT;
                self.lt.rounds = 0;
                return;
            }
        }
        self.lt.bw = Some(bw);
        self.reset_lt_interval();
    }
}
