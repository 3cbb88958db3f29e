//! TCP Prague, the L4S scalable controller (RFC 9331 §4.3's "Prague L4S
//! requirements" and its scalable congestion response; RFC 9330 §4.3;
//! DCTCP's α estimator, RFC 8257 §3.3; Linux out-of-tree `tcp_prague.c`).
//!
//! Prague sends ECT(1) and reacts to the *fraction* of its packets an L4S
//! bottleneck (DualPI2, RFC 9332) marked CE, not to the mere presence of a
//! mark: per round trip it updates `α ← (1 − g)·α + g·F` (F the marked
//! fraction of the round's acknowledged packets, g = 1/16), and on a round
//! with marks it reduces once, `cwnd ← cwnd·(1 − α/2)`. With marks steady
//! at fraction F, α converges to F and the window falls by F/2 per round:
//! a shallow, frequent sawtooth that keeps the L4S queue near 1 ms. It
//! grows additively, one segment per round trip (Reno's congestion
//! avoidance), after a standard slow start, and it paces. A loss is a
//! classic signal: the window halves (Reno, RFC 9331 §4.3 "fall back to
//! Reno-friendly on loss").
//!
//! **Parameters** ([`PragueConfig`]): `alpha_gain_shift` (4: g = 1/16),
//! `alpha_init` (1.0, DCTCP and Linux Prague: a flow that starts into a
//! congested queue answers its first marks fully), pacing on,
//! `max_burst_us` (250: the pacer releases at most 250 µs at the pacing
//! rate back to back, at least one packet — Linux Prague's GSO burst
//! bound; the pacer's common credit of 10 packets or 2 ms would cross an
//! L4S AQM's 1 ms step threshold by itself and draw marks no congestion
//! caused).
//!
//! **Plumbing.** The per-ACK counts come through
//! [`CongestionController::on_ecn`](crate::CongestionController::on_ecn);
//! the once-per-round reduction is the connection's CWR episode (started by
//! the first newly reported CE of a round trip, as for every controller):
//! Prague sets `cwnd = ssthresh = cwnd·(1 − α/2)` when it starts and keeps
//! growing additively through it (a full-control policy: no PRR, as Linux
//! Prague's `cong_control`). A loss halves the window at once and holds it
//! until the recovery episode ends.
//! Rounds are packet-timed: a round ends when `snd_una` passes the
//! `snd_nxt` recorded at its start.
//!
//! **[PROJECT CHOICE]s.** Linux Prague's RTT-independence ("rtt scaling")
//! is left out: the additive increase is Reno's one segment per round
//! trip, which RFC 9331 §4.3 allows. Pacing uses the core's rule (H9:
//! 2·cwnd/SRTT in slow start, 1.2·cwnd/SRTT after), switched on.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{
    AckSample, CaState, CongestionEvent, CongestionKind, CongestionResponse, EcnResponse,
    EcnSample, PathInfo,
};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Prague settings (defaults = RFC 8257/9331 and Linux Prague).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct PragueConfig {
    /// Shared core settings (`pacing` defaults to on for Prague).
    pub core: CoreConfig,
    /// α's EWMA gain as a right shift: g = 2^−shift (4: g = 1/16, RFC 8257).
    pub alpha_gain_shift: u32,
    /// α before the first round's estimate, in [0, 1] (1.0).
    pub alpha_init: f64,
    /// The longest burst the pacer may release back to back, µs at the
    /// pacing rate, never less than one packet (250: Linux Prague's
    /// `prague_burst_shift` = 12, 2^−12 s). 0 keeps the pacer's common
    /// burst credit (10 packets or 2 ms), which crosses DualPI2's 1 ms
    /// step threshold by itself.
    pub max_burst_us: u64,
}

impl Default for PragueConfig {
    fn default() -> Self {
        PragueConfig {
            core: CoreConfig {
                pacing: true,
                ..CoreConfig::default()
            },
            alpha_gain_shift: 4,
            alpha_init: 1.0,
            max_burst_us: 250,
        }
    }
}

impl PragueConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Prague> {
        let alpha_init = if self.alpha_init.is_finite() {
            self.alpha_init.clamp(0.0, 1.0)
        } else {
            1.0
        };
        PolicyController::new(
            self.core.clone(),
            Prague {
                gain: 1.0 / f64::from(1u32 << self.alpha_gain_shift.min(16)),
                alpha_init,
                alpha: alpha_init,
                round_end: 0,
                round_acked_packets: 0,
                round_ce_packets: 0,
                last_kind: CongestionKind::Loss,
                max_burst: (self.max_burst_us > 0)
                    .then(|| Duration::from_micros(self.max_burst_us)),
            },
        )
    }
}

/// The Prague policy.
#[derive(Clone, Debug)]
pub struct Prague {
    gain: f64,
    alpha_init: f64,
    alpha: f64,
    /// The round ends when `snd_una` reaches this packet number.
    round_end: u64,
    round_acked_packets: u64,
    round_ce_packets: u64,
    last_kind: CongestionKind,
    max_burst: Option<Duration>,
}

impl Prague {
    /// The current α (the EWMA of the marked fraction), in [0, 1].
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Close the round if `snd_una` passed its end: fold the round's
    /// marked fraction into α (RFC 8257 §3.3 step 4). O(1).
    fn maybe_end_round(&mut self, path: &PathInfo) {
        if path.snd_una < self.round_end {
            return;
        }
        if self.round_acked_packets > 0 {
            let f = (self.round_ce_packets as f64 / self.round_acked_packets as f64).min(1.0);
            self.alpha = ((1.0 - self.gain) * self.alpha + self.gain * f).clamp(0.0, 1.0);
        }
        self.round_acked_packets = 0;
        self.round_ce_packets = 0;
        self.round_end = path.snd_nxt.max(path.snd_una.saturating_add(1));
    }
}

impl CcPolicy for Prague {
    fn name(&self) -> &'static str {
        "prague"
    }

    fn init(&mut self, _core: &mut Core, path: &PathInfo) {
        self.alpha = self.alpha_init;
        self.round_acked_packets = 0;
        self.round_ce_packets = 0;
        self.round_end = path.snd_nxt;
    }

    fn ecn_response(&self) -> EcnResponse {
        EcnResponse::Scalable
    }

    fn max_pacing_burst(&self) -> Option<Duration> {
        self.max_burst
    }

    fn on_ecn(&mut self, _core: &mut Core, sample: &EcnSample, path: &PathInfo) {
        self.round_acked_packets = self
            .round_acked_packets
            .saturating_add(sample.newly_ect_packets.max(sample.newly_ce_packets));
        self.round_ce_packets = self
            .round_ce_packets
            .saturating_add(sample.newly_ce_packets);
        self.maybe_end_round(path);
    }

    fn on_packets_acked(&mut self, _core: &mut Core, _ack: &AckSample, path: &PathInfo) {
        self.maybe_end_round(path);
    }

    fn full_control(&self) -> bool {
        // Prague owns its window in every state: the reduction for marks is
        // applied at once and growth goes on during the CWR round (Linux
        // Prague's `cong_control`), instead of PRR holding the window for
        // a round trip after every marked round, which would halve the
        // growth rate of a flow that sees marks every round.
        true
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }

    fn on_cong_control(&mut self, core: &mut Core, ack: &AckSample, path: &PathInfo) {
        match core.ca_state {
            // Loss recovery: the halved window holds until the episode ends.
            CaState::Recovery => {}
            _ if ack.una_advanced => core.reno_cong_avoid(ack.acked_segs, path),
            _ => {}
        }
    }

    fn on_state(&mut self, core: &mut Core, new: CaState, _path: &PathInfo) {
        if new == CaState::Recovery {
            // Classic fallback: the window halves at once (ssthresh was just set).
            let s = core.ssthresh;
            core.set_cwnd(s);
        }
    }

    fn classify_congestion(
        &mut self,
        _core: &mut Core,
        event: &CongestionEvent,
        _path: &PathInfo,
    ) -> CongestionResponse {
        self.last_kind = event.kind;
        CongestionResponse::Reduce
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        match self.last_kind {
            // The scalable response: cwnd·(1 − α/2), at least 2 segments.
            CongestionKind::Ecn => {
                let keep = (core.cwnd as f64 * (1.0 - self.alpha / 2.0)).floor();
                (keep as u32).clamp(2, core.cwnd.max(2))
            }
            // Classic fallback on loss and RTO: halve.
            CongestionKind::Loss => core.reno_ssthresh(),
        }
    }

    fn on_event(&mut self, core: &mut Core, event: crate::types::CwndEvent, _path: &PathInfo) {
        match event {
            // The scalable reduction, once per marked round trip (ssthresh
            // was just set to cwnd·(1 − α/2)).
            crate::types::CwndEvent::EcnCe => {
                let s = core.ssthresh;
                core.set_cwnd(s);
            }
            // An RTO is a loss: the `ssthresh` call made for it halves.
            crate::types::CwndEvent::Loss => self.last_kind = CongestionKind::Loss,
            _ => {}
        }
    }

    fn mode(&self) -> Option<&'static str> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::testutil::{ack, path};
    use crate::types::{CongestionEvent, SSTHRESH_INF};
    use crate::Time;

    fn ecn_event() -> CongestionEvent {
        CongestionEvent {
            kind: CongestionKind::Ecn,
            now: Time::ZERO,
            is_persistent: false,
            lost_segs: 0,
            in_flight: 100,
            lost_sent_at: None,
        }
    }

    /// One round of `window` packets, `marked` of them CE: the ECN counts
    /// arrive, then (if any were marked) the CWR episode starts, PRR runs
    /// and the episode ends at the round's end.
    fn round(c: &mut PolicyController<Prague>, p: &mut PathInfo, window: u32, marked: u32) {
        let start = p.snd_nxt;
        p.snd_nxt += u64::from(window);
        p.snd_una = start;
        c.on_ecn(
            &EcnSample {
                newly_ect_packets: u64::from(window),
                newly_ce_packets: u64::from(marked),
                acked_bytes: 0,
            },
            p,
        );
        if marked > 0 {
            c.on_congestion_event(&ecn_event(), p);
            p.ca_state = CaState::Cwr;
            p.snd_una = p.snd_nxt;
            c.on_recovery_exit(p);
            p.ca_state = CaState::Open;
        } else {
            p.snd_una = p.snd_nxt;
        }
    }

    #[test]
    fn alpha_converges_to_the_marked_fraction() {
        let mut c = crate::testutil::with_window(PragueConfig::default().build(), 100, 50);
        let mut p = path(0, 20);
        c.init(&p);
        for _ in 0..400 {
            // 10 % of every round's packets are marked; no reductions here,
            // only the estimator.
            let start = p.snd_nxt;
            p.snd_nxt += 100;
            p.snd_una = start + 100;
            c.on_ecn(
                &EcnSample {
                    newly_ect_packets: 100,
                    newly_ce_packets: 10,
                    acked_bytes: 0,
                },
                &p,
            );
        }
        let a = c.policy().alpha();
        assert!((a - 0.1).abs() < 1e-3, "alpha {a}");
    }

    #[test]
    fn window_falls_by_half_the_marked_fraction_per_round() {
        for (fraction_pct, window) in [(10u32, 200u32), (40, 200), (100, 80)] {
            let mut c = crate::testutil::with_window(PragueConfig::default().build(), window, 2);
            let mut p = path(0, 20);
            c.init(&p);
            c.core_mut().cwnd = window;
            c.core_mut().ssthresh = 2;
            // Let α settle on the fraction without reducing.
            for _ in 0..300 {
                let start = p.snd_nxt;
                p.snd_nxt += 100;
                p.snd_una = start + 100;
                c.on_ecn(
                    &EcnSample {
                        newly_ect_packets: 100,
                        newly_ce_packets: u64::from(fraction_pct),
                        acked_bytes: 0,
                    },
                    &p,
                );
            }
            let alpha = c.policy().alpha();
            let f = f64::from(fraction_pct) / 100.0;
            assert!((alpha - f).abs() < 0.01, "alpha {alpha} vs F {f}");
            c.core_mut().cwnd = window;
            let marked = window * fraction_pct / 100;
            round(&mut c, &mut p, window, marked);
            let after = c.core().cwnd as f64;
            let want = window as f64 * (1.0 - f / 2.0);
            assert!(
                (after - want).abs() <= 1.5,
                "F {f}: cwnd {window} -> {after}, want {want:.1}"
            );
        }
    }

    #[test]
    fn unmarked_rounds_grow_one_segment_per_round() {
        let mut c = crate::testutil::with_window(PragueConfig::default().build(), 50, 2);
        let p = path(0, 20);
        for _ in 0..50 {
            c.on_ack(&ack(1), &p);
        }
        assert_eq!(c.core().cwnd, 51);
    }

    #[test]
    fn loss_halves_like_reno() {
        let mut c =
            crate::testutil::with_window(PragueConfig::default().build(), 100, SSTHRESH_INF);
        c.on_congestion_event(&crate::testutil::loss_event(100), &path(0, 20));
        assert_eq!(c.core().ssthresh, 50);
    }

    #[test]
    fn prague_is_scalable_and_paced() {
        let mut c = PragueConfig::default().build();
        c.init(&path(0, 20));
        assert_eq!(c.ecn_response(), EcnResponse::Scalable);
        assert!(c.pacing_rate_bytes_per_sec().is_some());
        // A small burst credit (Linux Prague's 2^-12 s); 0 keeps the
        // pacer's common one, as every classic controller does.
        assert_eq!(
            c.max_pacing_burst(),
            Some(std::time::Duration::from_micros(250))
        );
        let common = PragueConfig {
            max_burst_us: 0,
            ..PragueConfig::default()
        };
        assert_eq!(common.build().max_pacing_burst(), None);
        let cubic = crate::CcConfig::from_name("cubic").expect("registered");
        assert_eq!(cubic.build().max_pacing_burst(), None);
    }

    /// Over a link that marks CE above 1 ms of sojourn (an L4S step AQM),
    /// Prague keeps the queue short with no loss and fills the link.
    #[test]
    fn keeps_a_short_queue_over_a_marking_link() {
        use crate::testutil::Bottleneck;
        let mut b = Bottleneck::new(1000.0, std::time::Duration::from_millis(20), 200);
        b.ce_threshold = Some(std::time::Duration::from_millis(1));
        b.add(Box::new(PragueConfig::default().build()), true, Time::ZERO);
        b.run(Time::from_secs_f64(20.0), |_| {});
        let f = &b.flows[0];
        assert_eq!(f.lost, 0);
        assert!(f.ce > 0);
        let p99 = b.sojourn_percentile_ms(2_000, 99.0);
        eprintln!(
            "prague: sojourn p99 {p99} ms, {} acked, {} CE",
            f.acked, f.ce
        );
        assert!(p99 <= 5.0, "sojourn p99 {p99} ms");
        assert!(
            f.acked as f64 > 0.9 * 20_000.0,
            "goodput {} of 20000",
            f.acked
        );
    }
}
