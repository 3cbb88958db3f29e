//! Slow-start exit for CUBIC (cc-spec §3.10): HyStart++ (RFC 9406, the
//! default) and the Linux kernel's HyStart (ack train + delay increase).
//!
//! Both watch RTT samples round by round during slow start and end it by
//! setting `ssthresh = cwnd` before the queue overflows. HyStart++ first
//! enters Conservative Slow Start (CSS), growing at a quarter of the rate
//! for a few rounds, and returns to slow start if the delay increase was
//! spurious; Linux HyStart exits at once.

use crate::core::Core;
use crate::rate::SeqRound;
use crate::types::{PathInfo, SSTHRESH_INF};
use crate::Time;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// HyStart++ constants (RFC 9406 §4.3), all as the RFC recommends.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct HyStartPlusPlusConfig {
    /// `MIN_RTT_THRESH`: lower clamp of the delay-increase threshold, µs (4 ms).
    pub min_rtt_thresh_us: u64,
    /// `MAX_RTT_THRESH`: upper clamp of the delay-increase threshold, µs (16 ms).
    pub max_rtt_thresh_us: u64,
    /// `MIN_RTT_DIVISOR`: the threshold is `lastRoundMinRTT / divisor` before clamping (8).
    pub min_rtt_divisor: u32,
    /// `N_RTT_SAMPLE`: RTT samples a round needs before its minimum is trusted (8).
    pub n_rtt_sample: u32,
    /// `CSS_GROWTH_DIVISOR`: slow-start growth is divided by this in CSS (4).
    pub css_growth_divisor: u32,
    /// `CSS_ROUNDS`: rounds spent in CSS before congestion avoidance starts (5).
    pub css_rounds: u32,
    /// `L`: at most this many segments of growth per ACK when unpaced (8);
    /// unlimited when the connection is paced (RFC 9406 §4.2).
    pub l_segs: u32,
}

impl Default for HyStartPlusPlusConfig {
    fn default() -> Self {
        HyStartPlusPlusConfig {
            min_rtt_thresh_us: 4_000,
            max_rtt_thresh_us: 16_000,
            min_rtt_divisor: 8,
            n_rtt_sample: 8,
            css_growth_divisor: 4,
            css_rounds: 5,
            l_segs: 8,
        }
    }
}

impl HyStartPlusPlusConfig {
    /// `RttThresh = clamp(lastRoundMinRTT / MIN_RTT_DIVISOR, MIN_RTT_THRESH, MAX_RTT_THRESH)`.
    pub fn rtt_thresh(&self, last_round_min_rtt: Duration) -> Duration {
        let lo = Duration::from_micros(self.min_rtt_thresh_us);
        let hi = Duration::from_micros(self.max_rtt_thresh_us).max(lo);
        (last_round_min_rtt / self.min_rtt_divisor.max(1)).clamp(lo, hi)
    }
}

/// HyStart++ state (RFC 9406 §4.2), used during the initial slow start only.
#[derive(Clone, Debug, Default)]
pub(crate) struct HyStartPlusPlus {
    pub(crate) cfg: HyStartPlusPlusConfig,
    round: SeqRound,
    pub(crate) last_round_min_rtt: Option<Duration>,
    pub(crate) current_round_min_rtt: Option<Duration>,
    pub(crate) rtt_sample_count: u32,
    /// In Conservative Slow Start.
    pub(crate) in_css: bool,
    pub(crate) css_baseline_min_rtt: Option<Duration>,
    /// Rounds that ended while in CSS.
    pub(crate) css_rounds_done: u32,
    /// Growth credit in CSS, segments × `css_growth_divisor` not yet applied.
    css_credit: u32,
    /// The initial slow start is over (exit, loss, ECN, RTO or a measured start).
    pub(crate) done: bool,
}

impl HyStartPlusPlus {
    pub(crate) fn new(cfg: HyStartPlusPlusConfig) -> Self {
        HyStartPlusPlus {
            cfg,
            ..Default::default()
        }
    }

    /// Forget all measurements; the next round begins after `snd_nxt`.
    /// `done` is kept: RFC 9406 §4.1 runs HyStart++ in the initial slow start only.
    pub(crate) fn reset(&mut self, snd_nxt: u64) {
        let done = self.done;
        *self = HyStartPlusPlus::new(self.cfg.clone());
        self.done = done;
        self.round.beg_snd_nxt = snd_nxt;
    }

    /// Whether HyStart++ governs the current slow start.
    pub(crate) fn active(&self, core: &Core) -> bool {
        !self.done && core.ssthresh >= SSTHRESH_INF && core.in_slow_start()
    }

    /// Round bookkeeping and the SS ↔ CSS ↔ CA decisions for one ACK.
    pub(crate) fn on_ack(&mut self, core: &mut Core, rtt: Option<Duration>, path: &PathInfo) {
        if self.round.end_of_round(path.snd_una, path.snd_nxt) {
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = None;
            self.rtt_sample_count = 0;
            if self.in_css {
                self.css_rounds_done = self.css_rounds_done.saturating_add(1);
                if self.css_rounds_done >= self.cfg.css_rounds {
                    // CSS is over: enter congestion avoidance.
                    core.ssthresh = core.cwnd.max(1);
                    self.done = true;
                    self.in_css = false;
                    return;
                }
            }
        }
        let Some(rtt) = rtt else { return };
        self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.rtt_sample_count = self.rtt_sample_count.saturating_add(1);
        if self.rtt_sample_count < self.cfg.n_rtt_sample {
            return;
        }
        let Some(current) = self.current_round_min_rtt else {
            return;
        };
        if !self.in_css {
            let Some(last) = self.last_round_min_rtt else {
                return;
            };
            if current >= last.saturating_add(self.cfg.rtt_thresh(last)) {
                self.in_css = true;
                self.css_baseline_min_rtt = Some(current);
                self.css_rounds_done = 0;
                self.css_credit = 0;
            }
        } else if self.css_baseline_min_rtt.is_some_and(|b| current < b) {
            // The delay increase was spurious: back to slow start.
            self.in_css = false;
            self.css_baseline_min_rtt = None;
        }
    }

    /// The slow-start growth, in segments, for an ACK of `acked` segments:
    /// `min(acked, L)` in slow start, a quarter of that in CSS (with the
    /// fraction carried to the next ACK).
    pub(crate) fn growth(&mut self, acked: u32, paced: bool) -> u32 {
        let g = if paced {
            acked
        } else {
            acked.min(self.cfg.l_segs.max(1))
        };
        if !self.in_css {
            return g;
        }
        let div = self.cfg.css_growth_divisor.max(1);
        self.css_credit = self.css_credit.saturating_add(g);
        let add = self.css_credit / div;
        self.css_credit -= add * div;
        add
    }
}

/// The kernel HyStart constants (`tcp_cubic.c` module parameters and macros).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct LinuxHyStartConfig {
    /// Use the ack-train detector (`hystart_detect` bit 1).
    pub ack_train: bool,
    /// Use the delay-increase detector (`hystart_detect` bit 2).
    pub delay: bool,
    /// `hystart_low_window`: HyStart runs only while `cwnd ≥` this, segments (16).
    pub low_window_segs: u32,
    /// `hystart_ack_delta_us`: ACKs closer than this belong to one train, µs (2 ms).
    pub ack_delta_us: u64,
    /// `HYSTART_MIN_SAMPLES`: samples per round before the delay test runs (8).
    pub min_samples: u32,
    /// Divisor of `delay_min` in the delay threshold (`delay_min >> 3`, i.e. 8).
    pub delay_thresh_divisor: u32,
    /// Lower clamp of the delay threshold, µs (4 ms).
    pub delay_thresh_min_us: u64,
    /// Upper clamp of the delay threshold, µs (16 ms).
    pub delay_thresh_max_us: u64,
    /// `sk_gso_max_size`, bytes, used in the ack-train cushion (65,536).
    pub gso_max_size_bytes: u64,
    /// Upper bound of the ack-train cushion `ack_delay`, µs (1 ms).
    pub ack_delay_max_us: u64,
}

impl Default for LinuxHyStartConfig {
    fn default() -> Self {
        LinuxHyStartConfig {
            ack_train: true,
            delay: true,
            low_window_segs: 16,
            ack_delta_us: 2_000,
            min_samples: 8,
            delay_thresh_divisor: 8,
            delay_thresh_min_us: 4_000,
            delay_thresh_max_us: 16_000,
            gso_max_size_bytes: 65_536,
            ack_delay_max_us: 1_000,
        }
    }
}

impl LinuxHyStartConfig {
    /// Kernel `hystart_ack_delay`: `min(1 ms, 4·gso_max_size/pacing_rate)` in
    /// µs (floored); 0 when no pacing rate is known.
    pub fn ack_delay_us(&self, pacing_rate_bytes_per_sec: Option<u64>) -> u64 {
        match pacing_rate_bytes_per_sec {
            None | Some(0) => 0,
            Some(rate) => {
                let num = (self.gso_max_size_bytes as u128) * 4 * 1_000_000;
                let d = u64::try_from(num / rate as u128).unwrap_or(u64::MAX);
                d.min(self.ack_delay_max_us)
            }
        }
    }

    /// The ack-train threshold, µs: `delay_min + ack_delay`, halved (integer
    /// µs) when the connection is not paced.
    pub fn ack_train_threshold_us(&self, delay_min_us: u64, ack_delay_us: u64, paced: bool) -> u64 {
        let t = delay_min_us.saturating_add(ack_delay_us);
        if paced {
            t
        } else {
            t / 2
        }
    }

    /// The delay-increase trigger, µs: `curr_rtt` above this ends slow start
    /// (`delay_min + clamp(delay_min/8, 4 ms, 16 ms)`).
    pub fn delay_trigger_us(&self, delay_min_us: u64) -> u64 {
        let lo = self.delay_thresh_min_us;
        let hi = self.delay_thresh_max_us.max(lo);
        let thresh = (delay_min_us / self.delay_thresh_divisor.max(1) as u64).clamp(lo, hi);
        delay_min_us.saturating_add(thresh)
    }
}

/// Kernel HyStart state (`struct bictcp` fields), times in µs.
#[derive(Clone, Debug, Default)]
pub(crate) struct LinuxHyStart {
    pub(crate) cfg: LinuxHyStartConfig,
    /// Slow-start exit already triggered (`found`).
    pub(crate) found: bool,
    round_start_us: u64,
    last_ack_us: u64,
    end_seq: u64,
    curr_rtt_us: u64,
    sample_cnt: u32,
}

fn micros(t: Time) -> u64 {
    t.as_nanos() / 1_000
}

impl LinuxHyStart {
    pub(crate) fn new(cfg: LinuxHyStartConfig) -> Self {
        LinuxHyStart {
            cfg,
            curr_rtt_us: u64::MAX,
            ..Default::default()
        }
    }

    /// Kernel `bictcp_hystart_reset`: a new round begins now and ends after `snd_nxt`.
    fn reset_round(&mut self, now: Time, snd_nxt: u64) {
        self.round_start_us = micros(now);
        self.last_ack_us = self.round_start_us;
        self.end_seq = snd_nxt;
        self.curr_rtt_us = u64::MAX;
        self.sample_cnt = 0;
    }

    /// Kernel `bictcp_reset` + `bictcp_hystart_reset` (init and RTO).
    pub(crate) fn reset(&mut self, now: Time, snd_nxt: u64) {
        self.found = false;
        self.reset_round(now, snd_nxt);
    }

    /// Whether HyStart watches this ACK (kernel `cubictcp_acked` guard).
    pub(crate) fn active(&self, core: &Core) -> bool {
        !self.found && core.in_slow_start() && core.cwnd >= self.cfg.low_window_segs
    }

    /// Kernel `hystart_update` for one RTT sample `delay_us` (≥ 1).
    pub(crate) fn update(
        &mut self,
        core: &mut Core,
        delay_us: u64,
        delay_min_us: u64,
        ack_delay_us: u64,
        path: &PathInfo,
    ) {
        if path.snd_una > self.end_seq {
            self.reset_round(path.now, path.snd_nxt);
        }
        let now = micros(path.now);
        if self.cfg.ack_train && now.saturating_sub(self.last_ack_us) <= self.cfg.ack_delta_us {
            self.last_ack_us = now;
            let paced = core.config.pacing;
            let threshold = self
                .cfg
                .ack_train_threshold_us(delay_min_us, ack_delay_us, paced);
            if now.saturating_sub(self.round_start_us) > threshold {
                self.found = true;
                core.ssthresh = core.cwnd.max(1);
            }
        }
        if self.cfg.delay {
            self.curr_rtt_us = self.curr_rtt_us.min(delay_us);
            if self.sample_cnt < self.cfg.min_samples {
                self.sample_cnt += 1;
            } else if self.curr_rtt_us > self.cfg.delay_trigger_us(delay_min_us) {
                self.found = true;
                core.ssthresh = core.cwnd.max(1);
            }
        }
    }
}
