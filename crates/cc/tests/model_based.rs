//! One model-based property test run against every registered controller
//! (the s2n-quic `fuzz_target.rs` idea): a small model of a connection
//! turns arbitrary operation sequences into well-formed calls of the
//! `CongestionController` contract, and the controller's answers are checked
//! after every call.
//!
//! Invariants: no panic; cwnd ≥ 1 segment and ≤ the controller's clamp;
//! ssthresh, when finite, ≥ 1 segment; a pacing rate, when set, is positive;
//! and in congestion avoidance a sequence of ACKs whose RTT samples equal
//! the minimum RTT never shrinks cwnd (BBR and BBRv3, model-based
//! controllers whose window follows their bandwidth and RTT estimates, and
//! LEDBAT++, whose periodic slowdown drops the window to 2 segments on an
//! ACK by design, are exempt from this one).

use peregrine_cc::{
    AckSample, CaState, CongestionController, CongestionEvent, CongestionKind, EcnSample, LinkHint,
    LinkHintKind, PathInfo, RateSample, Time, NAMES,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::time::Duration;

const MSS: u32 = 1200;

#[derive(Clone, Debug)]
enum Op {
    Ack {
        segs: u32,
        rtt_us: Option<u64>,
        advance: bool,
    },
    Loss {
        lost: u32,
    },
    Ecn,
    EcnCounts {
        ect: u64,
        ce: u64,
    },
    Rto,
    PersistentCongestion,
    RecoveryExit,
    Undo,
    Idle {
        ms: u64,
    },
    Hint {
        kind: u8,
        duration_ms: Option<u64>,
        cqi: Option<u8>,
        speed: Option<f32>,
    },
    Send {
        n: u32,
    },
    Wait {
        ms: u64,
    },
    InitialWindow {
        bytes: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0u32..80, prop::option::weighted(0.9, prop_oneof![1u64..400_000, 0u64..5, 1_000_000u64..30_000_000]), any::<bool>())
            .prop_map(|(segs, rtt_us, advance)| Op::Ack { segs, rtt_us, advance }),
        2 => (1u32..20).prop_map(|lost| Op::Loss { lost }),
        1 => Just(Op::Ecn),
        1 => (prop_oneof![0u64..100, Just(u64::MAX)], prop_oneof![0u64..100, Just(u64::MAX)])
            .prop_map(|(ect, ce)| Op::EcnCounts { ect, ce }),
        1 => Just(Op::Rto),
        1 => Just(Op::PersistentCongestion),
        2 => Just(Op::RecoveryExit),
        1 => Just(Op::Undo),
        1 => (0u64..20_000).prop_map(|ms| Op::Idle { ms }),
        1 => (0u8..5, prop::option::of(0u64..5_000), prop::option::of(0u8..16), prop::option::of(prop_oneof![0.0f32..60.0, Just(f32::NAN), Just(-1.0f32), Just(f32::INFINITY)]))
            .prop_map(|(kind, duration_ms, cqi, speed)| Op::Hint { kind, duration_ms, cqi, speed }),
        4 => (0u32..100).prop_map(|n| Op::Send { n }),
        3 => (0u64..3_000).prop_map(|ms| Op::Wait { ms }),
        1 => prop_oneof![0u64..10, 1u64..100_000_000, Just(u64::MAX)].prop_map(|bytes| Op::InitialWindow { bytes }),
    ]
}

/// The connection side of the contract, reduced to what the controllers read.
struct Conn {
    path: PathInfo,
    recover: u64,
}

impl Conn {
    fn new() -> Conn {
        let mut path = PathInfo::new(Time::from_millis(1), MSS);
        path.srtt = Some(Duration::from_millis(50));
        path.rttvar = Some(Duration::from_millis(10));
        path.min_rtt = Some(Duration::from_millis(50));
        path.rto = Duration::from_millis(250);
        Conn { path, recover: 0 }
    }

    fn advance(&mut self, ms: u64) {
        self.path.now += Duration::from_millis(ms);
    }

    fn rtt_sample(&mut self, rtt: Duration) {
        let p = &mut self.path;
        p.latest_rtt = Some(rtt);
        p.min_rtt = Some(p.min_rtt.map_or(rtt, |m| m.min(rtt)));
        p.srtt = Some(p.srtt.map_or(rtt, |s| s * 7 / 8 + rtt / 8));
        p.rto = (p.srtt.unwrap_or(rtt) * 2).max(Duration::from_millis(200));
    }

    fn ack(&mut self, segs: u32, rtt: Option<Duration>, advance: bool) -> AckSample {
        if let Some(r) = rtt {
            self.rtt_sample(r);
        }
        let prior_in_flight = self.path.in_flight;
        let acked = segs.min(self.path.in_flight.max(segs));
        self.path.in_flight = self.path.in_flight.saturating_sub(acked);
        let before = self.path.delivered;
        self.path.delivered += acked as u64;
        let una_advanced = advance && acked > 0;
        if una_advanced {
            self.path.snd_una = (self.path.snd_una + acked as u64).min(self.path.snd_nxt);
        }
        AckSample {
            acked_segs: acked,
            acked_bytes: acked as u64 * MSS as u64,
            rtt,
            prior_in_flight,
            una_advanced,
            is_dup_ack: !una_advanced,
            newly_lost: 0,
            ecn_ce_count: 0,
            rate: Some(RateSample {
                delivered: acked,
                interval: rtt.unwrap_or(Duration::ZERO),
                prior_delivered: before.saturating_sub(prior_in_flight as u64),
                prior_in_flight,
                losses: 0,
                acked_sacked: acked,
                is_app_limited: false,
                rtt,
                is_ack_delayed: false,
            }),
        }
    }
}

fn check(cc: &dyn CongestionController, name: &str) -> Result<(), TestCaseError> {
    let s = cc.stats();
    prop_assert!(
        s.cwnd_bytes >= MSS as u64,
        "{name}: cwnd {} below one segment",
        s.cwnd_bytes
    );
    prop_assert!(
        s.cwnd_bytes <= s.cwnd_clamp_bytes,
        "{name}: cwnd {} above clamp {}",
        s.cwnd_bytes,
        s.cwnd_clamp_bytes
    );
    if let Some(ss) = s.ssthresh_bytes {
        prop_assert!(ss >= MSS as u64, "{name}: ssthresh {ss} below one segment");
    }
    if let Some(rate) = s.pacing_rate_bytes_per_sec {
        prop_assert!(rate > 0, "{name}: zero pacing rate");
    }
    Ok(())
}

fn apply(cc: &mut dyn CongestionController, conn: &mut Conn, op: &Op) {
    match *op {
        Op::Ack {
            segs,
            rtt_us,
            advance,
        } => {
            conn.advance(1);
            let ack = conn.ack(segs, rtt_us.map(Duration::from_micros), advance);
            if matches!(conn.path.ca_state, CaState::Loss | CaState::Disorder)
                && conn.path.snd_una >= conn.recover
            {
                conn.path.ca_state = CaState::Open;
            }
            cc.on_ack(&ack, &conn.path);
        }
        Op::Loss { lost } => {
            let lost = lost.min(conn.path.in_flight);
            conn.path.in_flight -= lost;
            let ev = CongestionEvent {
                kind: CongestionKind::Loss,
                now: conn.path.now,
                is_persistent: false,
                lost_segs: lost,
                in_flight: conn.path.in_flight,
                lost_sent_at: None,
            };
            cc.on_congestion_event(&ev, &conn.path);
            conn.recover = conn.path.snd_nxt;
            conn.path.ca_state = CaState::Recovery;
        }
        Op::Ecn | Op::PersistentCongestion => {
            let persistent = matches!(op, Op::PersistentCongestion);
            let ev = CongestionEvent {
                kind: if persistent {
                    CongestionKind::Loss
                } else {
                    CongestionKind::Ecn
                },
                now: conn.path.now,
                is_persistent: persistent,
                lost_segs: 0,
                in_flight: conn.path.in_flight,
                lost_sent_at: None,
            };
            cc.on_congestion_event(&ev, &conn.path);
            conn.recover = conn.path.snd_nxt;
            conn.path.ca_state = if persistent {
                CaState::Loss
            } else {
                CaState::Cwr
            };
        }
        Op::EcnCounts { ect, ce } => {
            let sample = EcnSample {
                newly_ect_packets: ect,
                newly_ce_packets: ce,
                acked_bytes: ect.saturating_mul(u64::from(MSS)),
            };
            cc.on_ecn(&sample, &conn.path);
        }
        Op::Rto => {
            conn.path.in_flight = 0;
            cc.on_rto(&conn.path);
            conn.recover = conn.path.snd_nxt;
            conn.path.ca_state = CaState::Loss;
        }
        Op::RecoveryExit => {
            if matches!(conn.path.ca_state, CaState::Recovery | CaState::Cwr) {
                conn.path.snd_una = conn.path.snd_una.max(conn.recover);
                conn.path.ca_state = CaState::Open;
                cc.on_recovery_exit(&conn.path);
            }
        }
        Op::Undo => {
            conn.path.ca_state = CaState::Open;
            cc.on_spurious_congestion(&conn.path);
        }
        Op::Idle { ms } => {
            conn.advance(ms);
            conn.path.in_flight = 0;
            cc.on_idle_restart(&conn.path, Duration::from_millis(ms));
        }
        Op::Hint {
            kind,
            duration_ms,
            cqi,
            speed,
        } => {
            let kind = [
                LinkHintKind::Blockage,
                LinkHintKind::Deafness,
                LinkHintKind::BeamMisalignment,
                LinkHintKind::Handover,
                LinkHintKind::CongestionFree,
            ][kind as usize % 5];
            let hint = LinkHint {
                kind,
                issued_at: conn.path.now,
                predicted_duration: duration_ms.map(Duration::from_millis),
                cqi,
                speed_mps: speed,
            };
            cc.on_link_hint(&hint, &conn.path);
        }
        Op::Send { n } => {
            let _ = cc.send_gate(conn.path.now);
            for _ in 0..n {
                conn.path.snd_nxt += 1;
                conn.path.in_flight += 1;
                cc.on_packet_sent(&conn.path, MSS);
            }
        }
        Op::Wait { ms } => {
            conn.advance(ms);
            let _ = cc.held_rto_timeout(conn.path.now);
        }
        Op::InitialWindow { bytes } => cc.set_initial_window(bytes, &conn.path),
    }
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn arbitrary_sequences_keep_every_controller_within_bounds() {
    for name in NAMES {
        let mut runner = runner(1000);
        let result = runner.run(&prop::collection::vec(op(), 1..120), |ops| {
            let mut cc = peregrine_cc::build(name).expect("registered name");
            let mut conn = Conn::new();
            cc.init(&conn.path);
            check(cc.as_ref(), name)?;
            for op in &ops {
                apply(cc.as_mut(), &mut conn, op);
                check(cc.as_ref(), name)?;
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{name}: {e}");
        }
    }
}

#[test]
fn acks_in_congestion_avoidance_never_shrink_cwnd() {
    let acks = prop::collection::vec((1u32..16, 0u64..30), 1..300);
    for name in NAMES
        .iter()
        .copied()
        .filter(|n| !matches!(*n, "bbr" | "bbr3" | "ledbat"))
    {
        let mut runner = runner(1000);
        let result = runner.run(&(1u32..200, acks.clone()), |(start_segs, acks)| {
            let mut cc = peregrine_cc::build(name).expect("registered name");
            let mut conn = Conn::new();
            cc.init(&conn.path);
            // Enter congestion avoidance: one loss episode, then its end.
            conn.path.in_flight = start_segs;
            conn.path.snd_nxt += start_segs as u64;
            apply(cc.as_mut(), &mut conn, &Op::Loss { lost: 1 });
            apply(cc.as_mut(), &mut conn, &Op::RecoveryExit);
            let min_rtt = conn.path.min_rtt.expect("set by Conn::new");
            for (segs, gap_ms) in acks {
                let before = cc.cwnd_bytes();
                conn.advance(gap_ms);
                conn.path.snd_nxt += segs as u64;
                conn.path.in_flight += segs;
                let ack = conn.ack(segs, Some(min_rtt), true);
                cc.on_ack(&ack, &conn.path);
                prop_assert!(
                    cc.cwnd_bytes() >= before,
                    "{name}: cwnd shrank from {before} to {} on an ACK",
                    cc.cwnd_bytes()
                );
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{name}: {e}");
        }
    }
}

/// RFC 3649 §5: below `Low_Window` (38 segments) HighSpeed TCP *is* Reno.
/// The same operation sequence — stretch ACKs, losses, RTOs, undo, idle —
/// must give HighSpeed and NewReno identical windows for as long as the
/// window has never exceeded 38 segments.
#[test]
fn highspeed_equals_newreno_below_38_segments() {
    const LOW_WINDOW_SEGS: u64 = 38;
    let mut runner = runner(2000);
    let result = runner.run(&prop::collection::vec(op(), 1..200), |ops| {
        let mut hs = peregrine_cc::build("highspeed").expect("registered name");
        let mut nr = peregrine_cc::build("newreno").expect("registered name");
        let mut conn_hs = Conn::new();
        let mut conn_nr = Conn::new();
        hs.init(&conn_hs.path);
        nr.init(&conn_nr.path);
        for (i, op) in ops.iter().enumerate() {
            if matches!(op, Op::Hint { .. }) {
                continue;
            }
            if hs.cwnd_bytes() > LOW_WINDOW_SEGS * MSS as u64 {
                break;
            }
            apply(hs.as_mut(), &mut conn_hs, op);
            apply(nr.as_mut(), &mut conn_nr, op);
            let (h, n) = (hs.stats(), nr.stats());
            let low = LOW_WINDOW_SEGS * MSS as u64;
            if h.cwnd_bytes > low && n.cwnd_bytes > low {
                // Both left Reno's region together: nothing more to compare.
                break;
            }
            prop_assert_eq!(
                (h.cwnd_bytes, h.ssthresh_bytes),
                (n.cwnd_bytes, n.ssthresh_bytes),
                "op {} {:?}: highspeed (cwnd, ssthresh) differs from newreno",
                i,
                op
            );
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
