//! Westwood+: NewReno growth with a bandwidth-estimate loss response
//! (cc-spec §3.11; Mascolo et al., MobiCom 2001; Grieco & Mascolo, CCR 2004;
//! kernel `tcp_westwood.c`).
//!
//! Westwood+ measures the rate at which the ACK stream reports delivered
//! data, once per RTT-long sampling window (the "+" fix against ACK
//! compression), and smooths it with two cascaded 7/8 EWMAs into a
//! bandwidth estimate (BWE). Growth is NewReno's; after a congestion episode
//! it sets `cwnd = ssthresh = BWE·RTT_min` instead of blindly halving, so a
//! flow on a lossy wireless link whose losses are not caused by queueing
//! keeps a window matching the pipe it measured. It is meant for paths with
//! random (non-congestion) losses. `ssthresh` at recovery entry is NewReno's
//! `cwnd/2` (used by PRR during the episode); the BWE window is applied when
//! the episode completes (`CompleteCwr`) and as `ssthresh` after an RTO.
//!
//! **Parameters** ([`WestwoodConfig`]): the EWMA weight (7/8), the minimum
//! sampling window (50 ms), the placeholder RTT before the first sample
//! (20 s) and the floor of the BWE window (2 segments).
//!
//! **Plumbing for a packet-numbered transport.** `snd_una` is a packet
//! number, so the bytes an ACK reports are `(snd_una − una_copy) · mss`.
//! An ACK takes the kernel's fast path ("in-order cumulative ACK") when
//! `una_advanced && !is_dup_ack && newly_lost == 0 && ecn_ce_count == 0`
//! and the connection has no NACK/SACK holes; "has SACK information" is
//! approximated by a congestion state other than `Open` (Disorder, Cwr,
//! Recovery and Loss all imply holes or an ECN echo). Every other ACK takes
//! the dup-ACK/SACK accounting path. An ACK that acknowledges nothing new and
//! carries no RTT sample carries no delivery information and is not seen by
//! the policy (the adapter only calls `on_packets_acked` for ACKs that do).
//!
//! **[PROJECT CHOICE]s.** `sack_credit_per_segment` (default on): a
//! duplicate ACK (one that does not move `snd_una`) credits
//! `acked_segs · mss` bytes instead of the kernel's one MSS, because one
//! Peregrine ACK can newly report several out-of-order packets where TCP
//! would have sent one duplicate ACK per segment; with one packet per ACK
//! both rules agree (WW-4). As in the kernel, a duplicate ACK's credit is
//! never netted against `accounted` (the kernel's credit is one MSS, which
//! its partial-ACK branch `c > mss` cannot see). Set it to `false` for the
//! literal kernel rule.
//!
//! `set_initial_window` keeps the default meaning (`cwnd = ssthresh =`
//! the measured window); the bandwidth estimate starts empty either way.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, CaState, CwndEvent, PathInfo, SSTHRESH_INF};
use crate::Time;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Westwood+ settings (cc-spec §3.11).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct WestwoodConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// Weight of the old value in both EWMA stages, as a numerator over
    /// `filter_denominator` (kernel: 7 of 8).
    pub filter_old_weight: u64,
    /// Denominator of the EWMA weights (kernel: 8, i.e. `>> 3`).
    pub filter_denominator: u64,
    /// Minimum length of a bandwidth sampling window, microseconds (kernel
    /// `TCP_WESTWOOD_RTT_MIN`: 50 ms); a window lasts `max(rtt, this)`.
    pub min_sample_window_us: u64,
    /// RTT and RTT_min used before the first RTT sample, microseconds
    /// (kernel `TCP_WESTWOOD_INIT_RTT`: 20 s).
    pub initial_rtt_us: u64,
    /// Floor of the BWE window `bw_est·rtt_min/mss`, segments (kernel: 2).
    pub min_window_segs: u32,
    /// [PROJECT CHOICE] A duplicate ACK credits `acked_segs · mss` bytes
    /// (true) rather than the kernel's one MSS per duplicate ACK (false):
    /// one Peregrine ACK may newly report several out-of-order packets.
    pub sack_credit_per_segment: bool,
}

impl Default for WestwoodConfig {
    fn default() -> Self {
        WestwoodConfig {
            core: CoreConfig::default(),
            filter_old_weight: 7,
            filter_denominator: 8,
            min_sample_window_us: 50_000,
            initial_rtt_us: 20_000_000,
            min_window_segs: 2,
            sack_credit_per_segment: true,
        }
    }
}

impl WestwoodConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Westwood> {
        PolicyController::new(self.core.clone(), Westwood::new(self.clone()))
    }
}

/// The Westwood+ policy: NewReno growth plus the bandwidth estimator.
#[derive(Clone, Debug)]
pub struct Westwood {
    config: WestwoodConfig,
    /// First EWMA stage (non-smoothed estimate), bytes per second.
    bw_ns_est: u64,
    /// Second EWMA stage: the bandwidth estimate, bytes per second (0 = empty).
    bw_est: u64,
    /// Bytes credited in the current sampling window.
    bk: u64,
    /// Start of the current sampling window.
    win_start: Time,
    /// `snd_una` (packet number) at the previous ACK.
    una_copy: u64,
    /// Bytes credited by duplicate ACKs and not yet cumulatively acknowledged.
    accounted: u64,
    /// Latest RTT sample.
    rtt: Duration,
    /// Minimum RTT since the last RTO.
    rtt_min: Duration,
    /// Take the next RTT as the new minimum (after an RTO).
    reset_rtt_min: bool,
    /// No ACK seen yet: `una_copy` is taken from the first one.
    first_ack: bool,
}

impl Westwood {
    fn new(config: WestwoodConfig) -> Westwood {
        let rtt = Duration::from_micros(config.initial_rtt_us);
        Westwood {
            config,
            bw_ns_est: 0,
            bw_est: 0,
            bk: 0,
            win_start: Time::ZERO,
            una_copy: 0,
            accounted: 0,
            rtt,
            rtt_min: rtt,
            reset_rtt_min: true,
            first_ack: true,
        }
    }

    /// The current bandwidth estimate, bytes per second (0 = none yet).
    pub fn bw_est_bytes_per_sec(&self) -> u64 {
        self.bw_est
    }

    /// The minimum RTT the estimator uses (since the last RTO).
    pub fn rtt_min(&self) -> Duration {
        self.rtt_min
    }

    /// One EWMA step `(w·old + (d − w)·new) / d` (kernel `westwood_do_filter`).
    fn ewma(&self, old: u64, new: u64) -> u64 {
        let d = self.config.filter_denominator.max(1) as u128;
        let w = (self.config.filter_old_weight as u128).min(d);
        let v = (w * old as u128 + (d - w) * new as u128) / d;
        u64::try_from(v).unwrap_or(u64::MAX)
    }

    /// Step 1: close the sampling window if it lasted more than `max(rtt, 50 ms)`.
    fn update_window(&mut self, path: &PathInfo) {
        if self.first_ack {
            self.una_copy = path.snd_una;
            self.first_ack = false;
        }
        let delta = path.now - self.win_start;
        let min_win = Duration::from_micros(self.config.min_sample_window_us);
        if !self.rtt.is_zero() && !delta.is_zero() && delta > self.rtt.max(min_win) {
            let delta_ns = delta.as_nanos().max(1);
            let s = self.bk as u128 * 1_000_000_000 / delta_ns;
            let s = u64::try_from(s).unwrap_or(u64::MAX);
            if self.bw_ns_est == 0 && self.bw_est == 0 {
                self.bw_ns_est = s;
                self.bw_est = s;
            } else {
                self.bw_ns_est = self.ewma(self.bw_ns_est, s);
                self.bw_est = self.ewma(self.bw_est, self.bw_ns_est);
            }
            self.bk = 0;
            self.win_start = path.now;
        }
    }

    /// Step 2, slow path (kernel `westwood_acked_count`): bytes this
    /// dup-ACK/SACK/ECE ACK may credit, net of earlier duplicate-ACK credit.
    fn acked_count(&mut self, ack: &AckSample, path: &PathInfo) -> u64 {
        let mss = path.mss.max(1) as u64;
        let mut c = path
            .snd_una
            .saturating_sub(self.una_copy)
            .saturating_mul(mss);
        if c == 0 {
            let dup = if self.config.sack_credit_per_segment {
                (ack.acked_segs as u64).saturating_mul(mss)
            } else {
                mss
            };
            self.accounted = self.accounted.saturating_add(dup);
            c = dup;
        } else if c > mss {
            // Partial or delayed ACK: part of it was already credited.
            if self.accounted >= c {
                self.accounted -= c;
                c = mss;
            } else {
                c -= self.accounted;
                self.accounted = 0;
            }
        }
        self.una_copy = path.snd_una;
        c
    }

    /// Steps 1–3 for one ACK (kernel `tcp_westwood_ack`).
    fn on_ack_event(&mut self, core: &Core, ack: &AckSample, path: &PathInfo) {
        self.update_window(path);
        let no_holes = core.ca_state == CaState::Open && path.ca_state == CaState::Open;
        let in_order = ack.una_advanced
            && !ack.is_dup_ack
            && ack.newly_lost == 0
            && ack.ecn_ce_count == 0
            && no_holes;
        let credit = if in_order {
            let mss = path.mss.max(1) as u64;
            let c = path
                .snd_una
                .saturating_sub(self.una_copy)
                .saturating_mul(mss);
            self.una_copy = path.snd_una;
            c
        } else {
            self.acked_count(ack, path)
        };
        self.bk = self.bk.saturating_add(credit);
        self.rtt_min = if self.reset_rtt_min {
            self.rtt
        } else {
            self.rtt_min.min(self.rtt)
        };
        self.reset_rtt_min = false;
    }

    /// `max(floor(bw_est·rtt_min/mss), 2)` segments (kernel `tcp_westwood_bw_rttmin`),
    /// kept below [`SSTHRESH_INF`] so it always reads as a finite threshold.
    pub fn bwe_window(&self, mss: u32) -> u32 {
        let mss = mss.max(1) as u128;
        let segs =
            (self.bw_est as u128).saturating_mul(self.rtt_min.as_nanos()) / (1_000_000_000 * mss);
        let segs = segs.min((SSTHRESH_INF - 1) as u128) as u32;
        segs.max(self.config.min_window_segs.max(1))
    }
}

impl CcPolicy for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    fn init(&mut self, _core: &mut Core, path: &PathInfo) {
        *self = Westwood::new(self.config.clone());
        self.win_start = path.now;
        self.una_copy = path.snd_una;
    }

    fn on_packets_acked(&mut self, core: &mut Core, ack: &AckSample, path: &PathInfo) {
        if let Some(r) = ack.rtt.filter(|r| !r.is_zero()) {
            self.rtt = r;
        }
        self.on_ack_event(core, ack, path);
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }

    fn on_event(&mut self, core: &mut Core, event: CwndEvent, _path: &PathInfo) {
        match event {
            CwndEvent::CompleteCwr => {
                core.ssthresh = self.bwe_window(core.mss);
                let s = core.ssthresh;
                core.set_cwnd(s);
            }
            CwndEvent::Loss => {
                core.ssthresh = self.bwe_window(core.mss);
                self.reset_rtt_min = true;
            }
            CwndEvent::TxStart { .. } | CwndEvent::EcnCe => {}
        }
    }

    fn bandwidth_estimate_bytes_per_sec(&self) -> Option<u64> {
        (self.bw_est > 0).then_some(self.bw_est)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::testutil::{ack, ack_rtt, path, MSS};
    use crate::types::{CongestionEvent, CongestionKind};

    /// A controller initialised at t = 0 with `snd_una = 0`.
    fn westwood() -> PolicyController<Westwood> {
        let mut c = WestwoodConfig::default().build();
        let mut p = path(0, 0);
        p.snd_una = 0;
        c.init(&p);
        c
    }

    /// An Open path at `now_ms` whose cumulative point is `una`.
    fn at(now_ms: u64, una: u64) -> PathInfo {
        let mut p = path(now_ms, 0);
        p.snd_una = una;
        p.snd_nxt = una + 100;
        p
    }

    #[test]
    fn ww1_two_stage_filter() {
        let mut c = westwood();
        // First ACK sets una_copy; an RTT of 99 ms makes windows close after > 99 ms.
        c.on_ack(&ack_rtt(1, 99_000), &at(0, 0));
        c.on_ack(&ack_rtt(1000, 99_000), &at(50, 1000));
        assert_eq!(c.policy().bk, 1_448_000);
        // Closes the first window (100 ms); its own 500 packets open the second.
        c.on_ack(&ack(500), &at(100, 1500));
        assert_eq!(c.policy().bw_ns_est, 14_480_000);
        assert_eq!(c.policy().bw_est, 14_480_000);
        assert_eq!(c.policy().bk, 724_000);
        c.on_ack(&ack(1), &at(200, 1501));
        assert_eq!(c.policy().bw_ns_est, 13_575_000);
        assert_eq!(c.policy().bw_est, 14_366_875);
        assert_eq!(c.stats().bandwidth_estimate_bytes_per_sec, Some(14_366_875));
    }

    #[test]
    fn ww2_bwe_window_at_recovery_end() {
        let mut c = westwood();
        {
            let w = c.policy_mut();
            w.bw_est = 14_366_875;
            w.bw_ns_est = 14_366_875;
            w.rtt = Duration::from_millis(50);
            w.rtt_min = Duration::from_millis(50);
            w.reset_rtt_min = false;
        }
        assert_eq!(c.policy().bwe_window(MSS), 496);
        c.core_mut().cwnd = 1200;
        c.core_mut().ssthresh = 1000;
        let mut p = at(0, 1000);
        p.in_flight = 1200;
        let ev = CongestionEvent {
            kind: CongestionKind::Loss,
            now: p.now,
            is_persistent: false,
            lost_segs: 1,
            in_flight: 1200,
            lost_sent_at: None,
        };
        c.on_congestion_event(&ev, &p);
        assert_eq!(c.core().ssthresh, 600, "H4 at recovery entry");
        // PRR brings cwnd to about half the window.
        p.in_flight = 590;
        c.on_ack(&ack(10), &p);
        assert!(c.core().cwnd <= 600);
        c.on_recovery_exit(&p);
        assert_eq!((c.core().cwnd, c.core().ssthresh), (496, 496));
        // An RTO sets ssthresh from the BWE too, and re-arms the RTT_min reset.
        p.in_flight = 0;
        c.on_rto(&p);
        assert_eq!((c.core().cwnd, c.core().ssthresh), (1, 496));
        assert!(c.policy().reset_rtt_min);
    }

    #[test]
    fn ww3_sampling_window_length() {
        for (rtt_us, edge_ms) in [(20_000, 50), (80_000, 80)] {
            let mut c = westwood();
            c.on_ack(&ack_rtt(1, rtt_us), &at(0, 0));
            c.on_ack(&ack_rtt(10, rtt_us), &at(10, 10));
            c.on_ack(&ack(1), &at(edge_ms, 11));
            assert_eq!(
                c.policy().bw_est,
                0,
                "rtt {rtt_us} µs: still open at {edge_ms} ms"
            );
            c.on_ack(&ack(1), &at(edge_ms + 1, 12));
            assert!(
                c.policy().bw_est > 0,
                "rtt {rtt_us} µs: closed after {edge_ms} ms"
            );
            assert_eq!(c.policy().win_start, Time::from_millis(edge_ms + 1));
        }
    }

    #[test]
    fn ww4_dup_ack_accounting() {
        let mss = MSS as u64;
        let dup = AckSample {
            acked_segs: 1,
            acked_bytes: mss,
            is_dup_ack: true,
            ..AckSample::default()
        };
        // SACK path: the connection is in Disorder (holes outstanding).
        let mut c = westwood();
        let mut p = at(0, 100);
        p.ca_state = CaState::Disorder;
        c.on_ack(&dup, &p); // first ACK: una_copy = 100, then a duplicate
        assert_eq!(c.policy().una_copy, 100);
        assert_eq!((c.policy().bk, c.policy().accounted), (mss, mss));
        p.snd_una = 103;
        c.on_ack(&ack(3), &p);
        assert_eq!((c.policy().bk, c.policy().accounted), (3 * mss, 0));
        // The same ACK on the fast path (Open, in order) credits all 3 MSS.
        let mut c = westwood();
        let mut p = at(0, 100);
        p.ca_state = CaState::Disorder;
        c.on_ack(&dup, &p);
        p.snd_una = 103;
        p.ca_state = CaState::Open;
        c.on_ack(&ack(3), &p);
        assert_eq!((c.policy().bk, c.policy().accounted), (4 * mss, mss));
    }

    #[test]
    fn kernel_dup_credit_is_one_mss() {
        let mut c = WestwoodConfig {
            sack_credit_per_segment: false,
            ..Default::default()
        }
        .build();
        let mut p = at(0, 100);
        c.init(&p);
        p.ca_state = CaState::Disorder;
        let dup = AckSample {
            acked_segs: 4,
            is_dup_ack: true,
            ..AckSample::default()
        };
        c.on_ack(&dup, &p);
        assert_eq!(c.policy().accounted, MSS as u64);
        // Per-segment credit (default) counts the four newly reported packets.
        let mut c = westwood();
        c.on_ack(&dup, &p);
        assert_eq!(c.policy().accounted, 4 * MSS as u64);
    }

    #[test]
    fn rtt_min_tracks_samples_and_resets_after_rto() {
        let mut c = westwood();
        assert_eq!(c.policy().rtt_min(), Duration::from_secs(20));
        c.on_ack(&ack_rtt(1, 40_000), &at(0, 1));
        c.on_ack(&ack_rtt(1, 30_000), &at(1, 2));
        c.on_ack(&ack_rtt(1, 60_000), &at(2, 3));
        assert_eq!(c.policy().rtt_min(), Duration::from_millis(30));
        c.on_rto(&at(3, 3));
        c.on_ack(&ack_rtt(1, 70_000), &at(4, 4));
        assert_eq!(c.policy().rtt_min(), Duration::from_millis(70));
    }

    #[test]
    fn empty_estimate_gives_the_floor() {
        let mut c = westwood();
        c.core_mut().cwnd = 50;
        let p = at(0, 0);
        let ev = CongestionEvent {
            kind: CongestionKind::Ecn,
            now: p.now,
            is_persistent: false,
            lost_segs: 0,
            in_flight: 50,
            lost_sent_at: None,
        };
        c.on_congestion_event(&ev, &p);
        c.on_recovery_exit(&p);
        assert_eq!((c.core().cwnd, c.core().ssthresh), (2, 2));
        assert_eq!(c.stats().bandwidth_estimate_bytes_per_sec, None);
    }
}
