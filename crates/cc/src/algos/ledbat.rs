//! LEDBAT, the "less than best effort" controller for background
//! transfers (RFC 6817), with LEDBAT++'s changes
//! (draft-irtf-iccrg-ledbat-plus-plus-01, the variant Windows ships).
//!
//! LEDBAT keeps the queue it causes at the bottleneck near a target delay
//! and backs off as soon as anyone else builds a queue, so it yields to
//! loss-based flows (CUBIC, Reno) sharing the bottleneck. It estimates the
//! queueing delay as the current delay minus the base (uncongested) delay:
//!
//! * **base delay**: the minimum delay over the last `base_history_minutes`
//!   minutes, kept as one minimum per minute (RFC 6817 §3.4.2,
//!   BASE_HISTORY = 10);
//! * **current delay**: the minimum of the last `current_filter` samples
//!   (RFC 6817 §3.4.2's FILTER, CURRENT_FILTER = 4).
//!
//! LEDBAT++ then changes RFC 6817's linear controller (§4 of the draft):
//! the target is 60 ms; the increase gain is
//! `GAIN = 1 / min(16, ceil(2·target / base_delay))` so that flows with a
//! short base delay do not out-grow long ones; above the target the window
//! falls multiplicatively, `W += max(GAIN − W·(delay/target − 1), −W/2)`
//! per round trip; slow start grows by GAIN per ACK and ends when the
//! queueing delay passes ¾ of the target; and **periodic slowdowns**
//! re-measure the base delay: two round trips after the initial slow start
//! the window drops to 2 segments for two round trips, then slow-starts
//! back to where it was, and the next slowdown comes 9 × the last one's
//! duration later (≈ 10 % of the time, so that all LEDBAT flows of a
//! bottleneck drain the queue together and see the true base delay).
//! A loss halves the window (RFC 6817 §3.4.1), at most once per round trip.
//!
//! **Delay measurement ([PROJECT CHOICE]).** LEDBAT needs the one-way
//! delay; SLTP carries no sender timestamps, so the delay sample is each
//! ACK's RTT sample ([`AckSample::rtt`]): queueing delay = filtered RTT −
//! minimum RTT over the base history. The base cancels the fixed part of
//! both directions, so this is the forward plus the reverse queueing
//! delay: a queue on the ACK path also makes LEDBAT yield (conservative for
//! a scavenger), as in every RTT-based LEDBAT (µTP without timestamps,
//! Windows' LEDBAT++ over TCP).
//!
//! **Parameters** ([`LedbatConfig`]): `target_ms` (60; RFC 6817's 100 with
//! `plus_plus = false`), `plus_plus` (true), `base_history_minutes` (10),
//! `current_filter` (4), `min_cwnd_segs` (2), `slowdown_rtts` (2),
//! `slowdown_interval_factor` (9). Windows are kept fractional inside
//! (RFC 6817 counts bytes) and floored to whole segments for the core.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, CaState, CwndEvent, PathInfo};
use crate::Time;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::Duration;

/// LEDBAT / LEDBAT++ settings.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct LedbatConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// LEDBAT++ (true: dynamic GAIN, multiplicative decrease, delay-exit
    /// slow start, periodic slowdowns) or plain RFC 6817 (false).
    pub plus_plus: bool,
    /// Target queueing delay, ms; `None` = 60 (LEDBAT++) or 100 (RFC 6817).
    pub target_ms: Option<u64>,
    /// Minutes of base-delay history (RFC 6817 BASE_HISTORY = 10).
    pub base_history_minutes: u32,
    /// Delay samples in the current-delay min filter (CURRENT_FILTER = 4).
    pub current_filter: u32,
    /// Smallest window, segments (RFC 6817 MIN_CWND = 2).
    pub min_cwnd_segs: u32,
    /// Round trips a slowdown holds the window at `min_cwnd_segs` (2).
    pub slowdown_rtts: u32,
    /// The next slowdown starts this many slowdown durations after the
    /// last one ended (9: slowdowns take ≈ 10 % of the time).
    pub slowdown_interval_factor: u32,
}

impl Default for LedbatConfig {
    fn default() -> Self {
        LedbatConfig {
            core: CoreConfig::default(),
            plus_plus: true,
            target_ms: None,
            base_history_minutes: 10,
            current_filter: 4,
            min_cwnd_segs: 2,
            slowdown_rtts: 2,
            slowdown_interval_factor: 9,
        }
    }
}

impl LedbatConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Ledbat> {
        let target_ms = self
            .target_ms
            .unwrap_or(if self.plus_plus { 60 } else { 100 })
            .max(1);
        PolicyController::new(
            self.core.clone(),
            Ledbat {
                plus_plus: self.plus_plus,
                target: Duration::from_millis(target_ms),
                history_len: self.base_history_minutes.clamp(1, 1_000) as usize,
                filter_len: self.current_filter.clamp(1, 1_000) as usize,
                min_cwnd: self.min_cwnd_segs.max(1),
                slowdown_rtts: self.slowdown_rtts.max(1),
                slowdown_factor: self.slowdown_interval_factor,
                state: State::default(),
            },
        )
    }
}

/// Where LEDBAT++'s periodic slowdown is.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Slowdown {
    /// The initial slow start has not ended yet.
    #[default]
    BeforeFirst,
    /// Normal operation; the next slowdown starts at this time.
    Scheduled(Time),
    /// Holding the window at the minimum until this time (started at `since`).
    Holding {
        /// When the slowdown started.
        since: Time,
        /// When the window may grow again.
        until: Time,
    },
    /// Slow-starting back to the window before the slowdown.
    Recovering {
        /// When the slowdown started.
        since: Time,
    },
}

#[derive(Clone, Debug, Default)]
struct State {
    /// Fractional window, segments (the core holds its floor).
    cwnd: f64,
    /// The core's window when `cwnd` was last written: a change means the
    /// core (a loss, PRR, an RTO, an undo) moved it, and we follow.
    written: u32,
    /// One minimum RTT per minute, oldest first: (minute index, minimum).
    base_history: VecDeque<(u64, Duration)>,
    /// The last `filter_len` RTT samples.
    current: VecDeque<Duration>,
    slowdown: Slowdown,
    /// The window to slow-start back to after a slowdown.
    slowdown_ssthresh: u32,
}

/// The LEDBAT policy.
#[derive(Clone, Debug)]
pub struct Ledbat {
    plus_plus: bool,
    target: Duration,
    history_len: usize,
    filter_len: usize,
    min_cwnd: u32,
    slowdown_rtts: u32,
    slowdown_factor: u32,
    state: State,
}

impl Ledbat {
    /// Base delay: the minimum over the history, if any sample came.
    pub fn base_delay(&self) -> Option<Duration> {
        self.state.base_history.iter().map(|&(_, d)| d).min()
    }

    /// Current delay: the minimum of the last samples.
    pub fn current_delay(&self) -> Option<Duration> {
        self.state.current.iter().copied().min()
    }

    /// Estimated queueing delay (current − base); zero before any sample.
    pub fn queueing_delay(&self) -> Duration {
        match (self.current_delay(), self.base_delay()) {
            (Some(c), Some(b)) => c.saturating_sub(b),
            _ => Duration::ZERO,
        }
    }

    /// Where the periodic slowdown is.
    pub fn slowdown(&self) -> Slowdown {
        self.state.slowdown
    }

    /// The target queueing delay.
    pub fn target(&self) -> Duration {
        self.target
    }

    /// LEDBAT++'s GAIN = 1 / min(16, ceil(2·target/base)); 1 for RFC 6817.
    fn gain(&self) -> f64 {
        if !self.plus_plus {
            return 1.0;
        }
        let Some(base) = self.base_delay().filter(|b| !b.is_zero()) else {
            return 1.0 / 16.0;
        };
        let ratio = (2.0 * self.target.as_secs_f64() / base.as_secs_f64()).ceil();
        1.0 / ratio.clamp(1.0, 16.0)
    }

    /// RFC 6817 §3.4.2 `update_base_delay` / `update_current_delay`. O(history + filter).
    fn add_delay_sample(&mut self, now: Time, rtt: Duration) {
        let minute = now.as_nanos() / 60_000_000_000;
        let h = &mut self.state.base_history;
        match h.back_mut() {
            Some((m, d)) if *m == minute => *d = (*d).min(rtt),
            _ => {
                h.push_back((minute, rtt));
                while h.len() > self.history_len {
                    h.pop_front();
                }
            }
        }
        let c = &mut self.state.current;
        c.push_back(rtt);
        while c.len() > self.filter_len {
            c.pop_front();
        }
    }

    fn sync(&mut self, core: &Core) {
        if core.cwnd != self.state.written {
            self.state.cwnd = f64::from(core.cwnd);
        }
    }

    fn write(&mut self, core: &mut Core) {
        let floor = self
            .state
            .cwnd
            .max(f64::from(self.min_cwnd))
            .min(f64::from(u32::MAX));
        self.state.cwnd = floor;
        core.set_cwnd(floor as u32);
        self.state.written = core.cwnd;
    }

    fn srtt(path: &PathInfo) -> Duration {
        path.srtt
            .or(path.latest_rtt)
            .unwrap_or(Duration::from_millis(100))
    }

    /// Start the next slowdown if it is due (LEDBAT++ §4.4). O(1).
    fn check_slowdown(&mut self, core: &mut Core, path: &PathInfo) {
        if !self.plus_plus {
            return;
        }
        let rtt = Self::srtt(path);
        match self.state.slowdown {
            Slowdown::Scheduled(at) if path.now >= at && core.ca_state == CaState::Open => {
                self.state.slowdown_ssthresh = core.cwnd.max(self.min_cwnd);
                self.state.slowdown = Slowdown::Holding {
                    since: path.now,
                    until: path.now + rtt.saturating_mul(self.slowdown_rtts),
                };
                self.state.cwnd = f64::from(self.min_cwnd);
                self.write(core);
            }
            Slowdown::Holding { since, until } if path.now >= until => {
                core.ssthresh = self.state.slowdown_ssthresh;
                self.state.slowdown = Slowdown::Recovering { since };
            }
            Slowdown::Recovering { since } if !core.in_slow_start() => {
                let took = path.now.saturating_duration_since(since);
                let wait = took.saturating_mul(self.slowdown_factor);
                self.state.slowdown = Slowdown::Scheduled(path.now + wait);
            }
            _ => {}
        }
    }
}

impl CcPolicy for Ledbat {
    fn name(&self) -> &'static str {
        "ledbat"
    }

    fn init(&mut self, core: &mut Core, _path: &PathInfo) {
        self.state = State::default();
        self.state.cwnd = f64::from(core.cwnd);
        self.state.written = core.cwnd;
    }

    fn on_packets_acked(&mut self, _core: &mut Core, ack: &AckSample, path: &PathInfo) {
        if let Some(rtt) = ack.rtt {
            self.add_delay_sample(path.now, rtt);
        }
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        self.sync(core);
        self.check_slowdown(core, path);
        if matches!(self.state.slowdown, Slowdown::Holding { .. }) {
            return;
        }
        if !path.cwnd_limited || acked == 0 {
            return;
        }
        let gain = self.gain();
        let target = self.target.as_secs_f64();
        let qdelay = self.queueing_delay().as_secs_f64();
        let acked = f64::from(acked);
        let w = self.state.cwnd.max(1.0);
        if core.in_slow_start() {
            if self.plus_plus && qdelay > 0.75 * target {
                // Delay exit (LEDBAT++ §4.1): slow start ends here.
                core.ssthresh = core.cwnd.max(self.min_cwnd);
                if self.state.slowdown == Slowdown::BeforeFirst {
                    let at = path.now + Self::srtt(path).saturating_mul(2);
                    self.state.slowdown = Slowdown::Scheduled(at);
                }
                return;
            }
            let step = if self.plus_plus { gain * acked } else { acked };
            self.state.cwnd = (w + step).min(f64::from(core.ssthresh));
            self.write(core);
            return;
        }
        if self.state.slowdown == Slowdown::BeforeFirst && self.plus_plus {
            let at = path.now + Self::srtt(path).saturating_mul(2);
            self.state.slowdown = Slowdown::Scheduled(at);
        }
        let per_rtt = if !self.plus_plus {
            // RFC 6817: GAIN · off_target, linear in both directions.
            gain * (target - qdelay) / target
        } else if qdelay < target {
            gain
        } else {
            // LEDBAT++ §4.2 multiplicative decrease, at most half per RTT.
            (gain - w * (qdelay / target - 1.0)).max(-w / 2.0)
        };
        self.state.cwnd = w + per_rtt * acked / w;
        self.write(core);
    }

    fn on_event(&mut self, core: &mut Core, event: CwndEvent, path: &PathInfo) {
        match event {
            // After idle, RFC 6817 §3.4.3: restart from the initial window.
            CwndEvent::TxStart { .. } => {
                let iw = core.config.initial_window_segs.max(self.min_cwnd);
                if core.cwnd > iw {
                    core.set_cwnd(iw);
                }
                self.state.cwnd = f64::from(core.cwnd);
                self.state.written = core.cwnd;
            }
            CwndEvent::Loss | CwndEvent::CompleteCwr | CwndEvent::EcnCe => {
                // A congestion episode ends or restarts a slowdown cycle: the
                // window the slowdown would restore is no longer valid.
                if let Slowdown::Holding { .. } | Slowdown::Recovering { .. } = self.state.slowdown
                {
                    let at = path.now + Self::srtt(path).saturating_mul(2);
                    self.state.slowdown = Slowdown::Scheduled(at);
                }
            }
        }
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        (core.cwnd / 2).max(self.min_cwnd)
    }

    fn mode(&self) -> Option<&'static str> {
        Some(match self.state.slowdown {
            Slowdown::Holding { .. } => "slowdown",
            Slowdown::Recovering { .. } => "slowdown_recovery",
            Slowdown::BeforeFirst | Slowdown::Scheduled(_) => "normal",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::testutil::{ack_rtt, path};

    fn ledbat() -> PolicyController<Ledbat> {
        let mut c = LedbatConfig::default().build();
        c.init(&path(0, 40));
        c
    }

    #[test]
    fn queueing_delay_is_filtered_rtt_minus_base() {
        let mut c = ledbat();
        let p = path(0, 40);
        for rtt_ms in [40u64, 45, 50, 70, 80, 90, 100] {
            c.on_ack(&ack_rtt(1, rtt_ms * 1000), &p);
        }
        // Base 40 ms; current = min(last four: 70, 80, 90, 100) = 70 ms.
        assert_eq!(c.policy().base_delay(), Some(Duration::from_millis(40)));
        assert_eq!(c.policy().queueing_delay(), Duration::from_millis(30));
    }

    #[test]
    fn base_history_forgets_minutes_older_than_ten() {
        let mut c = ledbat();
        c.on_ack(&ack_rtt(1, 10_000), &path(0, 40));
        for minute in 1..=10u64 {
            c.on_ack(&ack_rtt(1, 50_000), &path(minute * 60_000, 40));
        }
        assert_eq!(c.policy().base_delay(), Some(Duration::from_millis(50)));
    }

    #[test]
    fn slow_start_exits_at_three_quarters_of_target() {
        let mut c = ledbat();
        let p = path(0, 40);
        // Base 40 ms: GAIN = 1/ceil(120/40) = 1/3 per ACK.
        for _ in 0..4 {
            c.on_ack(&ack_rtt(1, 40_000), &p);
        }
        assert!(c.in_slow_start());
        let cw = c.core().cwnd;
        assert_eq!(cw, 11, "10 + 4/3");
        // Queueing delay 50 ms > 45 ms: exit.
        for _ in 0..4 {
            c.on_ack(&ack_rtt(1, 90_000), &p);
        }
        assert!(!c.in_slow_start());
        assert!(matches!(c.policy().slowdown(), Slowdown::Scheduled(_)));
    }

    #[test]
    fn above_target_the_window_falls_multiplicatively() {
        let mut c = ledbat();
        c.core_mut().ssthresh = 2;
        c.core_mut().cwnd = 100;
        let p = path(0, 40);
        c.on_ack(&ack_rtt(1, 40_000), &p);
        // Queueing delay 120 ms = 2 × target: one RTT's ACKs cut at most W/2.
        for _ in 0..4 {
            c.on_ack(&ack_rtt(1, 160_000), &p);
        }
        let before = c.core().cwnd;
        for _ in 0..before {
            c.on_ack(&ack_rtt(1, 160_000), &p);
        }
        let after = c.core().cwnd;
        assert!(after < before * 3 / 4, "{before} -> {after}");
        assert!(after >= before / 2 - 10, "{before} -> {after}");
    }

    #[test]
    fn below_target_the_window_grows_by_gain_per_rtt() {
        let mut c = ledbat();
        c.core_mut().ssthresh = 2;
        c.core_mut().cwnd = 30;
        let p = path(0, 40);
        // Base 40 ms, no queue: GAIN = 1/3 segment per RTT (≈ 3 windows
        // of ACKs per segment; a little more, as the window grows).
        for _ in 0..92 {
            c.on_ack(&ack_rtt(1, 40_000), &p);
        }
        assert_eq!(c.core().cwnd, 31);
    }

    #[test]
    fn periodic_slowdown_drops_to_two_segments_and_recovers() {
        let mut c = ledbat();
        c.core_mut().ssthresh = 2;
        c.core_mut().cwnd = 40;
        let mut now = 0;
        c.on_ack(&ack_rtt(1, 40_000), &path(now, 40));
        let Slowdown::Scheduled(at) = c.policy().slowdown() else {
            panic!("scheduled after slow start: {:?}", c.policy().slowdown());
        };
        assert_eq!(at, Time::from_millis(80));
        now = 81;
        c.on_ack(&ack_rtt(1, 40_000), &path(now, 40));
        assert_eq!(c.core().cwnd, 2);
        assert!(matches!(c.policy().slowdown(), Slowdown::Holding { .. }));
        // Two RTTs later it slow-starts back to 40.
        now += 81;
        for _ in 0..200 {
            c.on_ack(&ack_rtt(1, 40_000), &path(now, 40));
            now += 1;
        }
        assert_eq!(c.core().cwnd, 40);
        assert!(matches!(c.policy().slowdown(), Slowdown::Scheduled(_)));
    }

    #[test]
    fn rfc6817_mode_uses_100ms_and_linear_decrease() {
        let c = LedbatConfig {
            plus_plus: false,
            ..Default::default()
        }
        .build();
        assert_eq!(c.policy().target(), Duration::from_millis(100));
    }

    /// Alone on a deep buffer (300 ms), LEDBAT++ holds the queueing delay
    /// near its 60 ms target, well below the buffer, and fills the link
    /// but for its slowdowns.
    #[test]
    fn holds_the_queueing_delay_near_its_target() {
        use crate::testutil::Bottleneck;
        let mut b = Bottleneck::new(1000.0, Duration::from_millis(40), 300);
        b.add(Box::new(LedbatConfig::default().build()), false, Time::ZERO);
        b.run(Time::from_secs_f64(30.0), |_| {});
        let p50 = b.sojourn_percentile_ms(5_000, 50.0);
        let p99 = b.sojourn_percentile_ms(5_000, 99.0);
        eprintln!(
            "ledbat alone: sojourn p50 {p50} ms p99 {p99} ms, {} acked",
            b.flows[0].acked
        );
        assert!((30.0..=75.0).contains(&p50), "queueing delay p50 {p50} ms");
        assert!(p99 < 120.0, "queueing delay p99 {p99} ms");
        let f = &b.flows[0];
        assert_eq!(f.lost, 0);
        assert!(
            f.acked as f64 > 0.75 * 30_000.0,
            "goodput {} of 30000",
            f.acked
        );
    }

    /// A CUBIC flow joining a LEDBAT++ flow takes most of the link: LEDBAT
    /// backs off as CUBIC's queue passes its target (RFC 6817 §2.1).
    #[test]
    fn yields_to_a_cubic_flow() {
        use crate::testutil::Bottleneck;
        let mut b = Bottleneck::new(1000.0, Duration::from_millis(40), 200);
        b.add(Box::new(LedbatConfig::default().build()), false, Time::ZERO);
        b.add(
            crate::build("cubic").unwrap(),
            false,
            Time::from_millis(5_000),
        );
        let mut at_10s = (0, 0);
        b.run(Time::from_secs_f64(30.0), |b| {
            if b.now == Time::from_millis(10_000) {
                at_10s = (b.flows[0].acked, b.flows[1].acked);
            }
        });
        let ledbat = b.flows[0].acked - at_10s.0;
        let cubic = b.flows[1].acked - at_10s.1;
        let share = cubic as f64 / (ledbat + cubic) as f64;
        eprintln!("ledbat vs cubic: cubic share {share:.3} ({ledbat} vs {cubic} packets, 10-30 s)");
        assert!(
            share > 0.8,
            "CUBIC's share {share:.3} (ledbat {ledbat}, cubic {cubic})"
        );
        assert!((ledbat + cubic) as f64 > 0.85 * 20_000.0, "link used");
    }
}
