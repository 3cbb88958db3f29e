//! The shared core every window-based controller is built on (cc-spec §2.2,
//! §2.6): it owns `cwnd`, `ssthresh`, the additive-increase credit, PRR and
//! the undo state, and provides the kernel's helper procedures H1–H9.
//!
//! Windows are in segments (`u32`) as in the spec; the public trait converts
//! to bytes.

use crate::types::{AckSample, CaState, PathInfo, SSTHRESH_INF};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// How the window evolves during fast recovery (cc-spec §3.1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum RecoveryMode {
    /// Proportional Rate Reduction (RFC 6937, kernel): the default.
    #[default]
    Prr,
    /// RFC 6582 window inflation/deflation (SACK-less NewReno).
    ClassicNewReno,
}

/// Settings shared by every controller: the [PROJECT CHOICE]s of the core.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct CoreConfig {
    /// Initial window in segments (RFC 6928: 10).
    pub initial_window_segs: u32,
    /// Fast-recovery window rule.
    pub recovery_mode: RecoveryMode,
    /// Pace window-based controllers at the kernel's default rate (H9).
    /// Off by default: the kernel only paces when asked (fq qdisc or SO_MAX_PACING_RATE).
    pub pacing: bool,
    /// Upper bound on the H9 pacing rate, bytes per second.
    pub max_pacing_rate_bytes_per_sec: Option<u64>,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            initial_window_segs: 10,
            recovery_mode: RecoveryMode::Prr,
            pacing: false,
            max_pacing_rate_bytes_per_sec: None,
        }
    }
}

/// Window state shared by every controller (kernel `tcp_sock` fields).
#[derive(Clone, Debug)]
pub struct Core {
    /// Core settings.
    pub config: CoreConfig,
    /// Packet size, bytes (set from `PathInfo::mss` at init).
    pub mss: u32,
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Slow-start threshold, segments ([`SSTHRESH_INF`] = none yet).
    pub ssthresh: u32,
    /// Additive-increase credit: segments acknowledged since the last +1 (`snd_cwnd_cnt`).
    pub cwnd_cnt: u32,
    /// Upper bound on `cwnd`, segments.
    pub cwnd_clamp: u32,
    /// `cwnd` when the last episode started (undo, PRR's RecoverFS).
    pub prior_cwnd: u32,
    /// `current_ssthresh()` when the last episode started (undo).
    pub prior_ssthresh: u32,
    /// Congestion state as the core sees it.
    pub ca_state: CaState,
    /// Packet number that ends the current episode (RFC 6582 `recover`).
    pub recover: u64,
    /// PRR: segments delivered since the episode started.
    pub prr_delivered: u32,
    /// PRR: segments sent since the episode started.
    pub prr_out: u32,
    /// The current episode was answered with `Hold`: no reduction, no PRR.
    pub held: bool,
    /// The current episode was undone.
    pub undone: bool,
    /// A reduction happened that has not been undone yet.
    pub undo_available: bool,
    /// RTOs since the current Loss episode began.
    pub loss_rtos: u32,
    /// Pacing rate, bytes per second.
    pub pacing_rate: Option<u64>,
}

impl Core {
    /// A core with `config`, before `init`.
    pub fn new(config: CoreConfig) -> Core {
        let iw = config.initial_window_segs.max(1);
        Core {
            config,
            mss: 1448,
            cwnd: iw,
            ssthresh: SSTHRESH_INF,
            cwnd_cnt: 0,
            cwnd_clamp: u32::MAX,
            prior_cwnd: 0,
            prior_ssthresh: 0,
            ca_state: CaState::Open,
            recover: 0,
            prr_delivered: 0,
            prr_out: 0,
            held: false,
            undone: false,
            undo_available: false,
            loss_rtos: 0,
            pacing_rate: None,
        }
    }

    /// Reset to the state `init` starts from.
    pub(crate) fn reset(&mut self, path: &PathInfo) {
        let config = self.config.clone();
        *self = Core::new(config);
        self.mss = path.mss.max(1);
    }

    /// `cwnd < ssthresh` (kernel `tcp_in_slow_start`).
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Set `cwnd`, keeping it within `[1, cwnd_clamp]`.
    pub fn set_cwnd(&mut self, segs: u32) {
        self.cwnd = segs.clamp(1, self.cwnd_clamp.max(1));
    }

    /// H1 `slow_start(acked) -> leftover` (kernel `tcp_slow_start`): grow by
    /// one segment per acknowledged segment, stopping exactly at `ssthresh`;
    /// returns the segments left for congestion avoidance.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        // Only meaningful in slow start; never shrinks the window if called outside it.
        let new = self
            .cwnd
            .saturating_add(acked)
            .min(self.ssthresh)
            .max(self.cwnd);
        let leftover = acked - (new - self.cwnd);
        self.cwnd = new.min(self.cwnd_clamp);
        leftover
    }

    /// H2 `cong_avoid_ai(w, acked)` (kernel `tcp_cong_avoid_ai`): one
    /// segment per `w` acknowledged segments.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        // Credit accrued under a larger w is applied gently: one segment.
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd = self.cwnd.saturating_add(1);
        }
        self.cwnd_cnt = self.cwnd_cnt.saturating_add(acked);
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd = self.cwnd.saturating_add(delta);
        }
        self.cwnd = self.cwnd.min(self.cwnd_clamp);
    }

    /// NewReno growth (cc-spec §3.1, kernel `tcp_reno_cong_avoid`): nothing
    /// unless cwnd-limited; slow start, then AI with `w = cwnd` for the rest.
    pub fn reno_cong_avoid(&mut self, acked: u32, path: &PathInfo) {
        if !path.cwnd_limited {
            return;
        }
        self.reno_growth(acked);
    }

    /// NewReno growth without the cwnd-limited test (for policies that test it themselves).
    pub fn reno_growth(&mut self, acked: u32) {
        let mut left = acked;
        if self.in_slow_start() {
            left = self.slow_start(acked);
        }
        if left > 0 {
            let w = self.cwnd;
            self.cong_avoid_ai(w, left);
        }
    }

    /// H4 `reno_ssthresh() = max(floor(cwnd/2), 2)`.
    pub fn reno_ssthresh(&self) -> u32 {
        (self.cwnd / 2).max(2)
    }

    /// H5 `reno_undo() = max(cwnd, prior_cwnd)`.
    pub fn reno_undo(&self) -> u32 {
        self.cwnd.max(self.prior_cwnd)
    }

    /// Kernel `tcp_current_ssthresh`: `ssthresh` during a reduction,
    /// otherwise `max(ssthresh, cwnd/2 + cwnd/4)`.
    pub fn current_ssthresh(&self) -> u32 {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.ssthresh
        } else {
            self.ssthresh.max(self.cwnd / 2 + self.cwnd / 4)
        }
    }

    /// Start a PRR episode (H6 initialisation).
    pub(crate) fn prr_init(&mut self) {
        self.prr_delivered = 0;
        self.prr_out = 0;
    }

    /// H6: one PRR step for an ACK in Cwr/Recovery (RFC 6937, kernel
    /// `tcp_cwnd_reduction`, RecoverFS = `prior_cwnd`).
    pub fn prr_step(&mut self, ack: &AckSample, path: &PathInfo) {
        let d = ack.acked_segs;
        if d == 0 {
            return;
        }
        self.prr_delivered = self.prr_delivered.saturating_add(d);
        // i128: `ssthresh * prr_delivered` can exceed i64 (both up to u32::MAX).
        let pipe = path.in_flight as i128;
        let ssthresh = self.ssthresh.min(self.cwnd_clamp) as i128;
        let prr_delivered = self.prr_delivered as i128;
        let prr_out = self.prr_out as i128;
        let mut sndcnt: i128 = if pipe > ssthresh {
            let recover_fs = (self.prior_cwnd as i128).max(1);
            // ceil(ssthresh * prr_delivered / prior_cwnd) - prr_out
            (ssthresh * prr_delivered + recover_fs - 1) / recover_fs - prr_out
        } else {
            let mut s = (prr_delivered - prr_out).max(d as i128);
            if ack.una_advanced && ack.newly_lost == 0 {
                s += 1;
            }
            s.min(ssthresh - pipe)
        };
        sndcnt = sndcnt.max(if self.prr_out == 0 { 1 } else { 0 });
        let cwnd = (pipe + sndcnt).clamp(1, u32::MAX as i128) as u32;
        self.set_cwnd(cwnd);
    }

    /// RFC 6582 window inflation/deflation for an ACK during classic
    /// NewReno recovery (cc-spec §3.1 steps 2–3).
    pub fn classic_recovery_step(&mut self, ack: &AckSample) {
        if ack.una_advanced {
            // Partial ACK: deflate by what it acknowledged, then add one back.
            let newly = ack.acked_segs;
            let mut cwnd = self.cwnd.saturating_sub(newly);
            if newly >= 1 {
                cwnd = cwnd.saturating_add(1);
            }
            self.set_cwnd(cwnd);
        } else if ack.is_dup_ack {
            self.set_cwnd(self.cwnd.saturating_add(1));
        }
    }

    /// H9: the kernel's default pacing rate for window-based controllers,
    /// bytes per second, or `None` when pacing is off or no SRTT is known.
    pub fn default_pacing_rate(&self, path: &PathInfo) -> Option<u64> {
        if !self.config.pacing {
            return None;
        }
        let srtt = path.srtt.filter(|d| !d.is_zero())?;
        let ratio = if (self.cwnd as u64) < (self.ssthresh as u64) / 2 {
            2.0
        } else {
            1.2
        };
        let segs = self.cwnd.max(path.in_flight) as f64;
        let rate = ratio * self.mss as f64 * segs / srtt.as_secs_f64();
        let mut rate = rate.min(u64::MAX as f64) as u64;
        if let Some(max) = self.config.max_pacing_rate_bytes_per_sec {
            rate = rate.min(max);
        }
        Some(rate.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core(cwnd: u32, ssthresh: u32) -> Core {
        let mut c = Core::new(CoreConfig::default());
        c.cwnd = cwnd;
        c.ssthresh = ssthresh;
        c
    }

    #[test]
    fn slow_start_stops_at_ssthresh() {
        let mut c = core(10, 11);
        assert_eq!(c.slow_start(3), 2);
        assert_eq!(c.cwnd, 11);
        let mut c = core(10, SSTHRESH_INF);
        assert_eq!(c.slow_start(2), 0);
        assert_eq!(c.cwnd, 12);
    }

    #[test]
    fn slow_start_respects_clamp() {
        let mut c = core(10, SSTHRESH_INF);
        c.cwnd_clamp = 11;
        c.slow_start(5);
        assert_eq!(c.cwnd, 11);
    }

    #[test]
    fn current_ssthresh_rule() {
        let mut c = core(100, 20);
        assert_eq!(c.current_ssthresh(), 75);
        c.ca_state = CaState::Recovery;
        assert_eq!(c.current_ssthresh(), 20);
    }
}
