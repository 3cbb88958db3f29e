//! NewReno: Reno congestion avoidance with NewReno/SACK recovery
//! (cc-spec §3.1; RFC 5681, 6582, 6675, 6937; kernel `tcp_cong.c`).
//!
//! Slow start and additive increase count acknowledged segments (H1, H2),
//! so stretch ACKs are not penalised; the loss response halves the window.
//! Recovery is PRR by default; [`RecoveryMode::ClassicNewReno`] in the core
//! config gives RFC 6582 window inflation.
//!
//! [`RecoveryMode::ClassicNewReno`]: crate::core::RecoveryMode::ClassicNewReno

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// What `ssthresh` halves on a congestion event.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum SsthreshBasis {
    /// `cwnd / 2` (kernel; default).
    #[default]
    Cwnd,
    /// `FlightSize / 2` (RFC 5681, ns-3 `TcpNewReno`).
    FlightSize,
}

/// NewReno settings.
#[derive(Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct NewRenoConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// [PROJECT CHOICE] the window `ssthresh` halves: cwnd (kernel) or flight size (RFC).
    pub ssthresh_basis: SsthreshBasis,
}

impl NewRenoConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<NewReno> {
        PolicyController::new(
            self.core.clone(),
            NewReno {
                basis: self.ssthresh_basis,
            },
        )
    }
}

/// The NewReno policy.
#[derive(Clone, Debug)]
pub struct NewReno {
    basis: SsthreshBasis,
}

impl CcPolicy for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }

    fn ssthresh(&mut self, core: &Core, path: &PathInfo) -> u32 {
        match self.basis {
            SsthreshBasis::Cwnd => core.reno_ssthresh(),
            SsthreshBasis::FlightSize => (path.in_flight / 2).max(2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::core::RecoveryMode;
    use crate::testutil::{ack, path};
    use crate::types::{AckSample, CaState, CongestionEvent, CongestionKind, SSTHRESH_INF};
    use crate::Time;

    fn newreno(cwnd: u32, ssthresh: u32) -> PolicyController<NewReno> {
        crate::testutil::with_window(NewRenoConfig::default().build(), cwnd, ssthresh)
    }

    fn loss(in_flight: u32) -> CongestionEvent {
        CongestionEvent {
            kind: CongestionKind::Loss,
            now: Time::ZERO,
            is_persistent: false,
            lost_segs: 1,
            in_flight,
            lost_sent_at: None,
        }
    }

    #[test]
    fn nr1_slow_start() {
        let mut c = newreno(10, SSTHRESH_INF);
        c.on_ack(&ack(2), &path(0, 100));
        assert_eq!(c.core().cwnd, 12);
    }

    #[test]
    fn nr2_slow_start_overshoot_split() {
        let mut c = newreno(10, 11);
        c.on_ack(&ack(3), &path(0, 100));
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (11, 2));
    }

    #[test]
    fn nr3_congestion_avoidance_and_stretch_ack() {
        let mut c = newreno(10, 5);
        for _ in 0..10 {
            c.on_ack(&ack(1), &path(0, 100));
        }
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (11, 0));
        let mut c = newreno(10, 5);
        c.on_ack(&ack(25), &path(0, 100));
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (12, 5));
    }

    #[test]
    fn nr4_gentle_credit() {
        let mut c = newreno(10, 5);
        c.core_mut().cwnd_cnt = 12;
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (11, 1));
    }

    #[test]
    fn nr5_ssthresh() {
        for (cwnd, want) in [(20, 10), (3, 2), (1, 2)] {
            let mut c = newreno(cwnd, SSTHRESH_INF);
            c.on_congestion_event(&loss(cwnd), &path(0, 100));
            assert_eq!(c.core().ssthresh, want, "cwnd {cwnd}");
        }
        let mut c = NewRenoConfig {
            ssthresh_basis: SsthreshBasis::FlightSize,
            ..Default::default()
        }
        .build();
        c.init(&path(0, 100));
        c.core_mut().cwnd = 20;
        let mut p = path(0, 100);
        p.in_flight = 17;
        c.on_congestion_event(&loss(17), &p);
        assert_eq!(c.core().ssthresh, 8);
    }

    #[test]
    fn nr6_classic_newreno() {
        let mut c = NewRenoConfig {
            core: CoreConfig {
                recovery_mode: RecoveryMode::ClassicNewReno,
                ..Default::default()
            },
            ..Default::default()
        }
        .build();
        let p = path(0, 100);
        c.init(&p);
        c.core_mut().cwnd = 20;
        c.on_congestion_event(&loss(20), &p);
        assert_eq!((c.core().ssthresh, c.core().cwnd), (10, 13));
        let dup = AckSample {
            is_dup_ack: true,
            ..AckSample::default()
        };
        for _ in 0..4 {
            c.on_ack(&dup, &p);
        }
        assert_eq!(c.core().cwnd, 17);
        c.on_ack(&ack(5), &p);
        assert_eq!(c.core().cwnd, 13);
        c.on_recovery_exit(&p);
        assert_eq!(c.core().cwnd, 10);
        assert_eq!(c.core().ca_state, CaState::Open);
    }

    #[test]
    fn nr7_prr_proportional() {
        let mut c = newreno(20, SSTHRESH_INF);
        let mut p = path(0, 100);
        p.in_flight = 19;
        c.on_congestion_event(&loss(19), &p);
        assert_eq!(c.core().ssthresh, 10);
        // (pipe after ACK, sndcnt, cwnd, prr_delivered, prr_out) per ACK.
        let rows = [
            (18, 1, 19, 1, 1),
            (18, 0, 18, 2, 1),
            (17, 1, 18, 3, 2),
            (17, 0, 17, 4, 2),
        ];
        for (i, (pipe, sndcnt, cwnd, delivered, out)) in rows.into_iter().enumerate() {
            p.in_flight = pipe;
            let a = AckSample {
                acked_segs: 1,
                una_advanced: false,
                ..AckSample::default()
            };
            c.on_ack(&a, &p);
            assert_eq!(c.core().cwnd, cwnd, "ACK {}", i + 1);
            assert_eq!(c.core().prr_delivered, delivered);
            // The sender sends exactly sndcnt.
            for _ in 0..sndcnt {
                c.on_packet_sent(&p, 1448);
            }
            assert_eq!(c.core().prr_out, out);
        }
    }

    #[test]
    fn nr8_prr_slow_start_reduction_bound() {
        let mut c = newreno(20, SSTHRESH_INF);
        let mut p = path(0, 100);
        c.on_congestion_event(&loss(20), &p);
        p.in_flight = 8;
        c.on_ack(&ack(1), &p);
        assert_eq!(c.core().cwnd, 10);
    }

    #[test]
    fn nr9_rto() {
        let mut c = newreno(20, SSTHRESH_INF);
        let mut p = path(0, 100);
        p.in_flight = 0;
        c.on_rto(&p);
        assert_eq!((c.core().ssthresh, c.core().cwnd), (10, 1));
        for (segs, want) in [(1, 2), (2, 4), (4, 8)] {
            c.on_ack(&ack(segs), &p);
            assert_eq!(c.core().cwnd, want);
        }
    }
}
