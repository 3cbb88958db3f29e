//! Property tests of streams, schedulers and partial reliability on the
//! impairment harness, 1,000 small cases each: any mix of streams
//! (classes, weights, reliability modes), any scheduler (switched at run
//! time in some cases), messages with and without deadlines, and a lossy,
//! jittery, reordering, duplicating link.

#[path = "sched/common.rs"]
mod common;

use common::*;
use peregrine_proto::harness::{Jitter, PipeConfig};
use peregrine_proto::{
    AbandonReason, ConnectionConfig, Event, SchedulerConfig, StreamConfig, StreamReliability, Time,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

#[derive(Clone, Debug)]
struct Msg {
    stream: usize,
    size: usize,
    at_ms: u64,
    deadline_ms: Option<u64>,
}

#[derive(Clone, Debug)]
struct Case {
    scheduler: SchedulerConfig,
    switch_to: Option<SchedulerConfig>,
    streams: Vec<StreamConfig>,
    messages: Vec<Msg>,
    pipe: PipeConfig,
    seed: u64,
}

fn scheduler() -> impl Strategy<Value = SchedulerConfig> {
    prop_oneof![
        Just(SchedulerConfig::RoundRobin),
        Just(SchedulerConfig::Wfq),
        Just(SchedulerConfig::Abs),
        (100_000u64..20_000_000).prop_map(|t| SchedulerConfig::Adaptive { target_bps: t }),
        Just(SchedulerConfig::Edf),
        (20u64..500).prop_map(|ms| SchedulerConfig::Aging {
            bound: Duration::from_millis(ms)
        }),
    ]
}

fn reliability() -> impl Strategy<Value = StreamReliability> {
    prop_oneof![
        Just(StreamReliability::ReliableOrdered),
        Just(StreamReliability::ReliableUnordered),
        Just(StreamReliability::Unreliable),
    ]
}

/// `unreliable_share`: how the modes are drawn (the unreliable property
/// wants more unreliable streams).
fn case(deadlines: bool, force: Option<StreamReliability>) -> impl Strategy<Value = Case> {
    let stream =
        (0u8..4, 1u32..6, reliability()).prop_map(move |(class, weight, r)| StreamConfig {
            class,
            weight,
            reliability: force.unwrap_or(r),
            ..StreamConfig::default()
        });
    let streams = prop::collection::vec(stream, 1..4);
    let msg = (
        0usize..4,
        prop_oneof![0usize..80, 0usize..5000, 5000usize..20_000],
        0u64..400,
        prop::option::weighted(0.4, 5u64..600),
    )
        .prop_map(move |(stream, size, at_ms, deadline_ms)| Msg {
            stream,
            size,
            at_ms,
            deadline_ms: deadline_ms.filter(|_| deadlines),
        });
    let messages = prop::collection::vec(msg, 1..40);
    let pipe = (
        0.0f64..0.15,
        0.0f64..0.05,
        0u64..8_000,
        any::<bool>(),
        1_000_000u64..20_000_000,
        2_000u64..25_000,
    )
        .prop_map(
            |(loss, duplicate, jitter_us, reorders, rate_bps, delay_us)| PipeConfig {
                rate_bps,
                delay_us,
                loss,
                duplicate,
                jitter: Jitter::Uniform { max_us: jitter_us },
                jitter_reorders: reorders,
                queue_limit_bytes: Some(30_000),
                ..PipeConfig::default()
            },
        );
    (
        scheduler(),
        prop::option::of(scheduler()),
        streams,
        messages,
        pipe,
        any::<u64>(),
    )
        .prop_map(
            |(scheduler, switch_to, streams, mut messages, pipe, seed)| {
                for m in &mut messages {
                    m.stream %= streams.len();
                }
                messages.sort_by_key(|m| m.at_ms);
                Case {
                    scheduler,
                    switch_to,
                    streams,
                    messages,
                    pipe,
                    seed,
                }
            },
        )
}

/// (stream id, number) → payload sent, deadline, mode.
type Sent = BTreeMap<(u16, u32), (Vec<u8>, Option<Time>, StreamReliability)>;

struct Outcome {
    /// (stream id, number) → payload sent, deadline, mode.
    sent: Sent,
    /// Deliveries in order: (exact time, stream, number, bytes).
    delivered: Vec<Delivery>,
    abandoned: BTreeMap<(u16, u32), AbandonReason>,
}

fn payload(stream: u16, number: u32, size: usize) -> Vec<u8> {
    let mut b = vec![(number as u8) ^ (stream as u8); size];
    for (i, x) in b.iter_mut().take(6).enumerate() {
        *x = [stream.to_be_bytes(), [0, 0]].concat()[i % 4] ^ number as u8;
    }
    b
}

fn run(c: &Case) -> Outcome {
    // The handshake on a clean path (a lost START is not what is tested
    // here), then the impairments.
    let clean = PipeConfig {
        rate_bps: c.pipe.rate_bps,
        delay_us: c.pipe.delay_us,
        ..PipeConfig::default()
    };
    // These properties are about delivery whatever the loss: at the
    // 15 % loss each way a case may draw, five probes in a row can go
    // unanswered (≈ 0.28^5 per timeout episode), which the peer-death
    // rule (issue 21) rightly calls a dead peer. Not what is tested here.
    let config = ConnectionConfig {
        peer_death_timeouts: 0,
        ..cubic(c.scheduler)
    };
    let mut p = Pair::new(clean, config, c.seed);
    let conn = p.conn;
    for (i, s) in c.streams.iter().enumerate() {
        p.sender()
            .open_stream(conn, Time::ZERO, 10 + i as u16, *s)
            .unwrap();
    }
    // Start once connected (plus the message's offset).
    while !p.connected {
        assert!(p.h.step().unwrap().is_some(), "no handshake");
        p.collect();
    }
    let (a, b) = (p.a, p.b);
    p.h.set_pipe(a, b, c.pipe.clone()).unwrap();
    p.h.set_pipe(b, a, c.pipe.clone()).unwrap();
    let t0 = p.now();
    let mut sent = BTreeMap::new();
    let mut next = 0;
    let limit = t0 + Duration::from_secs(60);
    let mut switched = false;
    loop {
        // Application actions due before the next network event.
        let ev = p.h.next_event_time().unwrap();
        let due = c
            .messages
            .get(next)
            .map(|m| t0 + Duration::from_millis(m.at_ms));
        if let Some(d) = due.filter(|&d| ev.is_none_or(|e| d <= e)) {
            p.h.run_until(d).unwrap();
            let m = &c.messages[next];
            next += 1;
            let stream = 10 + m.stream as u16;
            let deadline = m.deadline_ms.map(|ms| d + Duration::from_millis(ms));
            let number =
                p.h.node(p.a)
                    .stats(conn)
                    .unwrap()
                    .streams
                    .iter()
                    .find(|s| s.id == stream)
                    .map_or(0, |s| s.messages_queued as u32);
            let bytes = payload(stream, number, m.size);
            let id = p
                .sender()
                .send_message_with_deadline(conn, d, stream, &bytes, deadline)
                .unwrap();
            assert_eq!(id.number, number);
            sent.insert(
                (stream, number),
                (bytes, deadline, c.streams[m.stream].reliability),
            );
            if next == c.messages.len() / 2 && !switched {
                if let Some(s) = c.switch_to {
                    p.sender().set_scheduler(conn, d, s);
                }
                switched = true;
            }
            continue;
        }
        if next == c.messages.len() && resolved(&p, &sent) {
            break;
        }
        if ev.is_none() || p.now() > limit {
            break;
        }
        if p.h.step().unwrap().is_none() {
            break;
        }
        p.collect();
    }
    let abandoned = p
        .sender_events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::MessageAbandoned { id, reason } => Some(((id.stream, id.number), *reason)),
            _ => None,
        })
        .collect();
    if std::env::var_os("SCHED_PROPS_VERBOSE").is_some() {
        let tx = p.h.node(p.a).stats(conn).unwrap();
        eprintln!(
            "{} sent, {} delivered, {} abandoned, {} skips, {} lost pkts, {:?}",
            sent.len(),
            p.delivered.len(),
            tx.messages_abandoned,
            tx.skips_sent,
            tx.packets_lost,
            p.now() - t0
        );
    }
    Outcome {
        sent,
        delivered: p.delivered,
        abandoned,
    }
}

/// Every message delivered or abandoned.
fn resolved(p: &Pair, sent: &Sent) -> bool {
    let done: BTreeSet<(u16, u32)> = p
        .delivered
        .iter()
        .map(|d| (d.1, d.2))
        .chain(p.sender_events.iter().filter_map(|(_, e)| match e {
            Event::MessageAbandoned { id, .. } => Some((id.stream, id.number)),
            _ => None,
        }))
        .collect();
    sent.keys().all(|k| done.contains(k))
}

/// Per-stream order on ordered streams, at most once everywhere, intact
/// bytes.
fn check_common(o: &Outcome) -> Result<(), TestCaseError> {
    let mut seen = BTreeSet::new();
    let mut last: BTreeMap<u16, u32> = BTreeMap::new();
    for (_, stream, number, bytes) in &o.delivered {
        let key = (*stream, *number);
        prop_assert!(seen.insert(key), "{key:?} delivered twice");
        let (want, _, mode) = o.sent.get(&key).expect("only what was sent");
        prop_assert_eq!(bytes, want, "{:?} intact", key);
        if *mode == StreamReliability::ReliableOrdered {
            if let Some(l) = last.insert(*stream, *number) {
                prop_assert!(
                    *number > l,
                    "stream {} out of order: {} after {}",
                    stream,
                    number,
                    l
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Reliable messages without a deadline: exactly once, in order on an
    /// ordered stream, whatever the scheduler, priorities or impairments.
    #[test]
    fn sched_any_reliable_messages_arrive_exactly_once_in_order(
        c in case(false, None),
    ) {
        let o = run(&c);
        check_common(&o)?;
        let got: BTreeSet<(u16, u32)> = o.delivered.iter().map(|d| (d.1, d.2)).collect();
        for (key, (_, _, mode)) in &o.sent {
            if *mode != StreamReliability::Unreliable {
                prop_assert!(got.contains(key), "{:?} ({:?}) never delivered", key, mode);
                prop_assert!(!o.abandoned.contains_key(key));
            }
        }
    }

    /// Messages with deadlines: an abandoned message never blocks later
    /// ones — every reliable message that was not abandoned is delivered,
    /// in order on ordered streams.
    #[test]
    fn deadline_skipped_messages_never_block_later_ones(
        c in case(true, None),
    ) {
        let o = run(&c);
        check_common(&o)?;
        let got: BTreeSet<(u16, u32)> = o.delivered.iter().map(|d| (d.1, d.2)).collect();
        for (key, (_, deadline, mode)) in &o.sent {
            if *mode == StreamReliability::Unreliable {
                continue;
            }
            if deadline.is_none() {
                prop_assert!(got.contains(key), "{:?} never delivered", key);
            } else {
                prop_assert!(
                    got.contains(key) || o.abandoned.contains_key(key),
                    "{:?} neither delivered nor abandoned", key
                );
            }
        }
    }

    /// Unreliable messages: at most once, and never after their deadline
    /// (plus the path: the sender sends nothing of a message past its
    /// deadline, so only the one-way delay, jitter and queue remain).
    #[test]
    fn unreliable_messages_at_most_once_never_after_deadline(
        c in case(true, Some(StreamReliability::Unreliable)),
    ) {
        let o = run(&c);
        check_common(&o)?;
        let pipe = &c.pipe;
        let jitter = match pipe.jitter {
            Jitter::Uniform { max_us } => max_us,
            _ => 0,
        };
        let queue_us = (30_000 + 1_500) * 8 * 1_000_000 / pipe.rate_bps;
        let slack = Duration::from_micros(pipe.delay_us + jitter + queue_us + 1);
        for (t, stream, number, _) in &o.delivered {
            let (_, deadline, _) = &o.sent[&(*stream, *number)];
            if let Some(d) = deadline {
                prop_assert!(*t <= *d + slack, "{}/{} at {:?} after {:?}", stream, number, t, d);
            }
        }
        for (key, (_, deadline, _)) in &o.sent {
            prop_assert!(
                o.delivered.iter().any(|d| (d.1, d.2) == *key)
                    || o.abandoned.contains_key(key)
                    || deadline.is_none(),
                "{:?} neither delivered nor abandoned", key
            );
        }
    }
}
