//! The event loop: ordering, per-pair pipes, limits, guards, errors.

use super::{addr, Toy, MS};
use peregrine_proto::harness::{Harness, HarnessError, PipeConfig, RunOutcome, StepEvent};
use peregrine_proto::{EcnCodepoint, SansIo, Time, Transmit};
use std::net::SocketAddr;

#[test]
fn same_instant_events_run_in_the_order_they_were_scheduled() {
    // An echo node answers two senders whose datagrams arrive at the same
    // instant; step() reports each event, deliveries in sending order.
    let mut h = Harness::new(3);
    let a = h.add_node(addr(1), Toy::sender(addr(3), 1, 8, MS));
    let b = h.add_node(addr(2), Toy::sender(addr(3), 1, 8, MS));
    let e = h.add_node(addr(3), Toy::echo());
    h.set_default_pipe(PipeConfig {
        delay_us: 1_000,
        ..Default::default()
    })
    .unwrap();
    let at = Time::from_millis(1);
    let mut events = Vec::new();
    while let Some(ev) = h.step().unwrap() {
        events.push(ev);
    }
    let delivered = |from, to, at| StepEvent::Delivered {
        at,
        from,
        to,
        len: 8,
    };
    assert_eq!(
        events,
        [
            delivered(a, e, at),
            delivered(b, e, at),
            delivered(e, a, Time::from_millis(2)),
            delivered(e, b, Time::from_millis(2)),
        ]
    );
    assert_eq!(h.now(), Time::from_millis(2));
    assert_eq!(h.step().unwrap(), None);
}

/// A broken node: always wants a timer at time zero and never sends.
struct Spinner;

impl SansIo for Spinner {
    fn handle_datagram(&mut self, _: Time, _: SocketAddr, _: Option<EcnCodepoint>, _: &mut [u8]) {}
    fn poll_transmit(&mut self, _: Time, _: &mut Vec<u8>) -> Option<Transmit> {
        None
    }
    fn poll_timeout(&mut self) -> Option<Time> {
        Some(Time::ZERO)
    }
    fn handle_timeout(&mut self, _: Time) {}
}

#[test]
fn timer_spin_is_detected_and_names_the_seed() {
    let mut h = Harness::new(99);
    h.set_timer_spin_limit(50);
    let n = h.add_node(addr(1), Spinner);
    // Time is stuck at zero; the error says where, who and which seed.
    let err = h.run_until_idle(Time::from_millis(1)).unwrap_err();
    assert_eq!(
        err,
        HarnessError::TimerSpin {
            node: n,
            at: Time::ZERO,
            count: 51,
            seed: 99
        }
    );
    assert!(err.to_string().contains("harness seed 99"), "{err}");
    assert_eq!(h.now(), Time::ZERO);
}

#[test]
fn a_timer_in_the_past_that_makes_progress_is_not_a_spin() {
    // It asks for a timer at "now" 500 times in a row, but each firing
    // sends a datagram.
    let mut h = Harness::new(1);
    h.set_timer_spin_limit(1);
    let mut sender = Toy::sender(addr(2), 500, 8, 0);
    sender.pace_by_timer = true;
    let a = h.add_node(addr(1), sender);
    let b = h.add_node(addr(2), Toy::sink());
    assert_eq!(h.run_until_idle(Time::MAX).unwrap(), RunOutcome::Idle);
    assert_eq!(h.node(b).received.len(), 500);
    assert_eq!(h.node(a).sent, 500);
}

#[test]
fn echo_livelock_is_reported_as_stalled() {
    let mut h = Harness::new(5);
    h.set_instant_event_limit(10_000);
    h.add_node(addr(1), Toy::echo());
    let b = h.add_node(addr(2), Toy::echo());
    h.node_mut(b)
        .outbox
        .push_back((addr(1), b"ping-pong".to_vec()));
    let err = h.run_until(Time::from_millis(1)).unwrap_err();
    assert!(
        matches!(err, HarnessError::Stalled { seed: 5, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("harness seed 5"));
}

#[test]
fn pipes_are_per_ordered_pair_with_a_default() {
    let mut h = Harness::new(12);
    let a = h.add_node(addr(1), Toy::sender(addr(2), 100, 8, MS));
    let b = h.add_node(addr(2), Toy::sender(addr(1), 100, 8, MS));
    h.set_default_pipe(PipeConfig {
        delay_us: 7_000,
        ..Default::default()
    })
    .unwrap();
    h.set_pipe(
        a,
        b,
        PipeConfig {
            loss: 1.0,
            ..Default::default()
        },
    )
    .unwrap();
    h.run_until(Time::from_millis(1_000)).unwrap();
    assert_eq!(h.now(), Time::from_millis(1_000));
    assert!(h.node(b).received.is_empty());
    let at_a = &h.node(a).received;
    assert_eq!(at_a.len(), 100);
    assert_eq!((at_a[0].0, at_a[0].1), (Time::from_millis(7), addr(2)));
    assert_eq!(h.pipe(b, a).unwrap().config().delay_us, 7_000);
    assert_eq!(h.pipe(a, b).unwrap().stats().dropped.random_loss, 100);
}

#[test]
fn run_until_idle_stops_at_the_limit_and_unknown_addresses_are_counted() {
    let mut h = Harness::new(13);
    let a = h.add_node(addr(1), Toy::sender(addr(9), 1_000, 8, MS));
    let out = h.run_until_idle(Time::from_millis(100)).unwrap();
    assert_eq!(out, RunOutcome::LimitReached);
    assert_eq!(h.now(), Time::from_millis(100));
    assert_eq!(h.unroutable(), 101);
    assert_eq!(h.node(a).sent, 101);
    assert_eq!(h.run_until_idle(Time::MAX).unwrap(), RunOutcome::Idle);
    assert_eq!(h.now(), Time::from_millis(999));
    // Time never goes back.
    h.run_until(Time::from_millis(5)).unwrap();
    assert_eq!(h.now(), Time::from_millis(999));
}

#[test]
fn invalid_configs_name_the_field() {
    let mut h: Harness<Toy> = Harness::new(77);
    let a = h.add_node(addr(1), Toy::sink());
    let b = h.add_node(addr(2), Toy::sink());
    let err = h
        .set_pipe(
            a,
            b,
            PipeConfig {
                duplicate: 1.5,
                ..Default::default()
            },
        )
        .unwrap_err();
    match &err {
        HarnessError::InvalidPipe { source, seed, .. } => {
            assert_eq!((source.field.as_str(), *seed), ("duplicate", 77));
        }
        other => panic!("{other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("`duplicate`") && msg.contains("harness seed 77"),
        "{msg}"
    );

    // From a scenario file: defaults fill in, typos and bad values fail.
    let cfg: PipeConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(cfg, PipeConfig::perfect());
    let cfg: PipeConfig = serde_json::from_str(
        r#"{"rate_bps": 1000000, "loss": 0.05,
            "jitter": {"kind": "uniform", "max_us": 5000},
            "gilbert_elliott": {"p_gb": 0.01, "p_bg": 0.3},
            "corruption": {"probability": 0.01, "pattern": {"kind": "burst", "max_len_bits": 15}},
            "outages": [{"start_us": 0, "end_us": 10}]}"#,
    )
    .unwrap();
    cfg.validate().unwrap();
    assert_eq!(cfg.gilbert_elliott.unwrap().loss_bad, 1.0);
    assert!(serde_json::from_str::<PipeConfig>(r#"{"los": 0.05}"#).is_err());
    assert!(
        serde_json::from_str::<PipeConfig>(r#"{"jitter": {"kind": "uniform", "max": 1}}"#).is_err()
    );
    let cfg: PipeConfig =
        serde_json::from_str(r#"{"gilbert_elliott": {"p_gb": 0.1, "p_bg": -0.3}}"#).unwrap();
    assert_eq!(cfg.validate().unwrap_err().field, "gilbert_elliott.p_bg");
}

#[test]
#[should_panic(expected = "already belongs to node 0 (harness seed 31)")]
fn duplicate_addresses_panic_with_the_seed() {
    let mut h = Harness::new(31);
    h.add_node(addr(1), Toy::sink());
    h.add_node(addr(1), Toy::sink());
}
