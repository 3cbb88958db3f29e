//! Property test: arbitrary call sequences never panic and keep the
//! window within `[1, clamp]` and a pacing rate of at least 1 B/s.

use super::*;
use crate::types::{LinkHint, LinkHintKind};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Ack {
        acked: u32,
        rtt_us: Option<u64>,
        interval_us: u64,
        delivered: u32,
        losses: u32,
        app: bool,
        in_flight: u32,
        state: u8,
    },
    NoRate {
        acked: u32,
        rtt_us: Option<u64>,
    },
    Loss,
    Ecn,
    Exit,
    Rto {
        in_flight: u32,
    },
    Undo,
    Idle,
    Hint,
    Advance {
        ms: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u32..200, proptest::option::of(prop_oneof![Just(0u64), 1u64..1_000_000, Just(u64::MAX / 4)]),
              prop_oneof![Just(0u64), 1u64..10_000_000], 0u32..1000, 0u32..50, any::<bool>(), 0u32..500, 0u8..5)
            .prop_map(|(acked, rtt_us, interval_us, delivered, losses, app, in_flight, state)| Op::Ack {
                acked, rtt_us, interval_us, delivered, losses, app, in_flight, state }),
        1 => (0u32..5, proptest::option::of(0u64..1_000_000)).prop_map(|(acked, rtt_us)| Op::NoRate { acked, rtt_us }),
        1 => Just(Op::Loss),
        1 => Just(Op::Ecn),
        1 => Just(Op::Exit),
        1 => (0u32..100).prop_map(|in_flight| Op::Rto { in_flight }),
        1 => Just(Op::Undo),
        1 => Just(Op::Idle),
        1 => Just(Op::Hint),
        2 => prop_oneof![0u64..100, 100u64..30_000].prop_map(|ms| Op::Advance { ms }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn never_panics_and_window_stays_in_bounds(ops in proptest::collection::vec(op(), 1..300)) {
        let mut c = BbrConfig::default().build();
        let mut p = path_at(0);
        c.init(&p);
        for op in ops {
            match op {
                Op::Ack { acked, rtt_us, interval_us, delivered, losses, app, in_flight, state } => {
                    p.delivered = p.delivered.saturating_add(acked as u64);
                    p.in_flight = in_flight;
                    p.ca_state = [CaState::Open, CaState::Disorder, CaState::Cwr, CaState::Recovery, CaState::Loss][state as usize];
                    let rs = RateSample {
                        delivered,
                        interval: Duration::from_micros(interval_us),
                        prior_delivered: p.delivered.saturating_sub(delivered as u64),
                        prior_in_flight: in_flight,
                        losses,
                        acked_sacked: acked,
                        is_app_limited: app,
                        rtt: rtt_us.map(Duration::from_micros),
                        is_ack_delayed: false,
                    };
                    let mut a = ack_with(rs, None);
                    a.rtt = rtt_us.map(Duration::from_micros);
                    c.on_ack(&a, &p);
                }
                Op::NoRate { acked, rtt_us } => {
                    let a = AckSample { acked_segs: acked, rtt: rtt_us.map(Duration::from_micros), ..AckSample::default() };
                    c.on_ack(&a, &p);
                }
                Op::Loss => { c.on_congestion_event(&loss_event(p.in_flight), &p); }
                Op::Ecn => {
                    let ev = CongestionEvent { kind: CongestionKind::Ecn, ..loss_event(p.in_flight) };
                    c.on_congestion_event(&ev, &p);
                }
                Op::Exit => { p.snd_una = p.snd_nxt; c.on_recovery_exit(&p); }
                Op::Rto { in_flight } => { p.in_flight = in_flight; c.on_rto(&p); }
                Op::Undo => c.on_spurious_congestion(&p),
                Op::Idle => c.on_idle_restart(&p, Duration::from_secs(1)),
                Op::Hint => {
                    let h = LinkHint { kind: LinkHintKind::Blockage, issued_at: p.now, predicted_duration: None, cqi: None, speed_mps: None };
                    c.on_link_hint(&h, &p);
                }
                Op::Advance { ms: d } => { p.now += ms(d); p.snd_nxt += 10; }
            }
            let cwnd = c.core().cwnd;
            prop_assert!(cwnd >= 1 && cwnd <= c.core().cwnd_clamp);
            prop_assert!(c.pacing_rate_bytes_per_sec().is_some_and(|r| r >= 1));
            let _ = c.stats();
        }
    }
}
