//! Adaptive switching, EDF, aging, deadlines and unreliable streams on the
//! impairment harness.

#[path = "sched/common.rs"]
mod common;

use common::*;
use peregrine_proto::harness::{Outage, PipeConfig};
use peregrine_proto::{
    AbandonReason, Event, SchedulerConfig, StreamConfig, StreamReliability, Time,
};
use std::collections::BTreeSet;
use std::time::Duration;

const BLOCK: usize = 1415;
const MS: Duration = Duration::from_millis(1);

fn open(p: &mut Pair, id: u16, class: u8, reliability: StreamReliability) {
    let (now, conn) = (p.now(), p.conn);
    p.sender()
        .open_stream(
            conn,
            now,
            id,
            StreamConfig {
                class,
                reliability,
                ..StreamConfig::default()
            },
        )
        .unwrap();
}

/// Keep `stream` backlogged with `ahead` full blocks not yet sent.
fn top_up(p: &mut Pair, stream: u16, queued: &mut u64, ahead: u64) {
    let (now, conn) = (p.now(), p.conn);
    let sent =
        p.h.node(p.a)
            .stats(conn)
            .unwrap()
            .streams
            .iter()
            .find(|s| s.id == stream)
            .map_or(0, |s| s.bytes_sent / BLOCK as u64);
    while *queued < sent + ahead {
        p.sender()
            .send_message(conn, now, stream, &[7; BLOCK])
            .unwrap();
        *queued += 1;
    }
}

fn abandoned(p: &Pair, reason: AbandonReason) -> Vec<(u16, u32)> {
    p.sender_events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::MessageAbandoned { id, reason: r } if *r == reason => {
                Some((id.stream, id.number))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn adaptive_switches_as_algorithm_4_when_capacity_steps_down_and_up() {
    let fast = PipeConfig {
        rate_bps: 4_000_000,
        delay_us: 20_000,
        queue_limit_bytes: Some(20_000),
        ..PipeConfig::default()
    };
    let slow = PipeConfig {
        rate_bps: 500_000,
        queue_limit_bytes: Some(2_500),
        ..fast.clone()
    };
    let target = 2_000_000;
    let mut p = Pair::new(
        fast.clone(),
        cubic(SchedulerConfig::Adaptive { target_bps: target }),
        11,
    );
    open(&mut p, 1, 3, StreamReliability::ReliableOrdered);
    open(&mut p, 2, 0, StreamReliability::ReliableOrdered);
    let mut bulk = 0;
    let mut modes = Vec::new();
    let mut checked = 0;
    while p.now() < Time::from_millis(30_000) {
        let now = p.now();
        if now == Time::from_millis(10_000) {
            p.h.set_pipe(p.a, p.b, slow.clone()).unwrap();
        }
        if now == Time::from_millis(20_000) {
            p.h.set_pipe(p.a, p.b, fast.clone()).unwrap();
        }
        top_up(&mut p, 1, &mut bulk, 20);
        if now.as_nanos().is_multiple_of(500_000_000) {
            let conn = p.conn;
            p.sender().send_message(conn, now, 2, &[1; 3000]).unwrap();
        }
        p.run_until(now + 10 * MS, 10 * MS);
        let s = p.h.node(p.a).stats(p.conn).unwrap();
        // Algorithm 4 at the latest decision: RR iff sBW > target.
        let want = if s.scheduler_estimate_bps.is_some_and(|bw| bw > target) {
            "rr"
        } else {
            "abs"
        };
        assert_eq!(s.scheduler, "adaptive");
        assert_eq!(s.scheduler_mode, Some(want), "at {:?}: {s:?}", p.now());
        checked += 1;
        modes.push((p.now(), want, s.scheduler_switches));
    }
    let mode_at = |ms: u64| {
        modes
            .iter()
            .rev()
            .find(|m| m.0 <= Time::from_millis(ms))
            .unwrap()
            .1
    };
    // Fast: sBW ≈ 5/4 · (BDP + queue) · 8 / sRTT well above 2 Mbit/s.
    assert_eq!(mode_at(9_990), "rr");
    // Slow: cwnd collapses to ~5 KB at sRTT ≥ 40 ms: below the target.
    assert_eq!(mode_at(19_990), "abs");
    assert_eq!(mode_at(29_990), "rr");
    let switches = modes.last().unwrap().2;
    eprintln!("{checked} samples checked, {switches} switches");
    assert!(switches >= 3, "ABS → RR, RR → ABS, ABS → RR: {switches}");
}

/// Three deadline streams and a bulk stream on the Fig. 6 link; returns
/// (deadline messages sent, deadline misses).
fn deadline_mix(scheduler: SchedulerConfig, seed: u64) -> (u32, usize) {
    let mut p = Pair::new(fig6_pipe(), cubic(scheduler), seed);
    for id in 1..=3 {
        open(&mut p, id, 1, StreamReliability::ReliableOrdered);
    }
    open(&mut p, 9, 3, StreamReliability::ReliableOrdered);
    let mut bulk = 0;
    let mut sent = 0;
    // (stream, blocks, relative deadline)
    let plan = [(1u16, 2usize, 250u64), (2, 12, 400), (3, 8, 900)];
    while p.now() < Time::from_millis(22_000) {
        let now = p.now();
        top_up(&mut p, 9, &mut bulk, 20);
        let ms = now.as_nanos() / 1_000_000;
        if (2_000..21_000).contains(&ms) && ms.is_multiple_of(1_000) {
            let conn = p.conn;
            for (id, blocks, d) in plan {
                p.sender()
                    .send_message_with_deadline(
                        conn,
                        now,
                        id,
                        vec![3; blocks * BLOCK],
                        Some(now + Duration::from_millis(d)),
                    )
                    .unwrap();
                sent += 1;
            }
        }
        p.run_until(now + MS, MS);
    }
    let misses = abandoned(&p, AbandonReason::DeadlineExpired)
        .iter()
        .filter(|m| m.0 != 9)
        .count();
    (sent, misses)
}

#[test]
fn edf_meets_deadlines_that_rr_misses() {
    let (sent, edf) = deadline_mix(SchedulerConfig::Edf, 21);
    let (_, rr) = deadline_mix(SchedulerConfig::RoundRobin, 21);
    eprintln!("{sent} deadline messages: EDF missed {edf}, RR missed {rr}");
    assert!(edf * 20 <= sent as usize, "EDF missed {edf} of {sent}");
    assert!(
        rr >= 10 && rr >= 4 * edf.max(1),
        "RR missed {rr}, EDF {edf}"
    );
}

/// A class-0 bulk stream and a class-3 stream with a small message every
/// 250 ms; latencies of the class-3 messages delivered.
fn starvation(scheduler: SchedulerConfig) -> (usize, Vec<Duration>) {
    let mut p = Pair::new(fig6_pipe(), cubic(scheduler), 31);
    open(&mut p, 1, 0, StreamReliability::ReliableOrdered);
    open(&mut p, 2, 3, StreamReliability::ReliableOrdered);
    let mut bulk = 0;
    let mut queued_at = Vec::new();
    while p.now() < Time::from_millis(12_000) {
        let now = p.now();
        top_up(&mut p, 1, &mut bulk, 20);
        let ms = now.as_nanos() / 1_000_000;
        if (1_000..11_000).contains(&ms) && ms.is_multiple_of(250) {
            let conn = p.conn;
            p.sender().send_message(conn, now, 2, &[5; 100]).unwrap();
            queued_at.push(now);
        }
        p.run_until(now + MS, MS);
    }
    let lat = p
        .delivered
        .iter()
        .filter(|d| d.1 == 2)
        .map(|d| d.0 - queued_at[d.2 as usize])
        .collect();
    (queued_at.len(), lat)
}

#[test]
fn aging_bounds_every_wait_where_abs_starves_the_low_class() {
    let (sent, abs) = starvation(SchedulerConfig::Abs);
    assert_eq!(
        abs.len(),
        0,
        "ABS alone starves class 3 behind a backlogged class 0"
    );
    let bound = Duration::from_millis(400);
    let (sent2, aging) = starvation(SchedulerConfig::Aging { bound });
    assert_eq!(sent, sent2);
    assert_eq!(aging.len(), sent, "aging delivers every class-3 message");
    let worst = aging.iter().max().unwrap();
    eprintln!("aging: worst class-3 latency {worst:?} (bound {bound:?})");
    // Queued → delivered includes the path (queue + propagation), so the
    // wait before sending is below this.
    assert!(*worst <= bound, "{worst:?}");
}

#[test]
fn deadline_expired_message_is_reported_and_skipped_so_later_ones_flow() {
    let pipe = PipeConfig {
        rate_bps: 10_000_000,
        delay_us: 10_000,
        outages: vec![Outage {
            start_us: 1_000_000,
            end_us: 1_600_000,
        }],
        ..PipeConfig::default()
    };
    let mut p = Pair::new(pipe, cubic(SchedulerConfig::RoundRobin), 41);
    open(&mut p, 5, 1, StreamReliability::ReliableOrdered);
    p.run_until(Time::from_millis(1_000), 10 * MS);
    assert!(p.connected);
    let (now, conn) = (p.now(), p.conn);
    let late = p
        .sender()
        .send_message_with_deadline(conn, now, 5, &[1; 3000], Some(now + 300 * MS))
        .unwrap();
    let after = p.sender().send_message(conn, now, 5, b"after").unwrap();
    p.run_until(Time::from_millis(5_000), 10 * MS);
    assert_eq!(
        abandoned(&p, AbandonReason::DeadlineExpired),
        [(5, late.number)],
        "reported once"
    );
    let got: Vec<u32> = p
        .delivered
        .iter()
        .filter(|d| d.1 == 5)
        .map(|d| d.2)
        .collect();
    assert_eq!(
        got,
        [after.number],
        "skipped, and the next one is not blocked"
    );
    let rx = p.h.node(p.b).handles()[0];
    assert_eq!(p.h.node(p.b).stats(rx).unwrap().messages_skipped, 1);
    let tx = p.h.node(p.a).stats(conn).unwrap();
    assert!(tx.skips_sent >= 1);
    assert_eq!(tx.messages_abandoned, 1);
}

#[test]
fn deadline_met_messages_are_delivered_and_not_reported() {
    let mut p = Pair::new(fig6_pipe(), cubic(SchedulerConfig::Edf), 42);
    p.run_until(Time::from_millis(500), 10 * MS);
    for i in 0..50u32 {
        let (now, conn) = (p.now(), p.conn);
        p.sender()
            .send_message_with_deadline(conn, now, 3, &i.to_be_bytes(), Some(now + 2_000 * MS))
            .unwrap();
        p.run_until(now + 50 * MS, 10 * MS);
    }
    p.run_until(p.now() + 3_000 * MS, 10 * MS);
    assert_eq!(p.delivered.len(), 50);
    assert!(abandoned(&p, AbandonReason::DeadlineExpired).is_empty());
}

#[test]
fn unreliable_lost_blocks_are_never_retransmitted_and_arrive_at_most_once() {
    let pipe = PipeConfig {
        rate_bps: 10_000_000,
        delay_us: 10_000,
        loss: 0.1,
        ..PipeConfig::default()
    };
    let mut p = Pair::new(pipe, cubic(SchedulerConfig::RoundRobin), 51);
    open(&mut p, 4, 2, StreamReliability::Unreliable);
    p.run_until(Time::from_millis(500), 10 * MS);
    let mut sent = Vec::new();
    for i in 0..300u32 {
        let (now, conn) = (p.now(), p.conn);
        let mut m = vec![(i % 251) as u8; 200 + (i as usize * 37) % 3000];
        m[..4].copy_from_slice(&i.to_be_bytes());
        let id = p.sender().send_message(conn, now, 4, &m).unwrap();
        assert_eq!(id.number, i);
        sent.push(m);
        p.run_until(now + 5 * MS, 5 * MS);
    }
    p.run_until(p.now() + 30_000 * MS, 10 * MS);
    let mut seen = BTreeSet::new();
    for d in &p.delivered {
        assert_eq!(d.1, 4);
        assert!(seen.insert(d.2), "message {} twice", d.2);
        assert_eq!(d.3, sent[d.2 as usize], "message {} intact", d.2);
    }
    let lost = abandoned(&p, AbandonReason::Lost);
    let tx = p.h.node(p.a).stats(p.conn).unwrap();
    let s4 = tx.streams.iter().find(|s| s.id == 4).unwrap();
    eprintln!(
        "unreliable: {} of 300 delivered, {} abandoned as lost",
        seen.len(),
        lost.len()
    );
    assert_eq!(s4.bytes_retransmitted, 0, "never retransmitted");
    assert!(!lost.is_empty() && seen.len() < 300);
    assert!(
        seen.len() + lost.len() >= 300,
        "every message accounted for"
    );
}

#[test]
fn unreliable_messages_past_their_deadline_are_never_sent() {
    // A slow link with a long backlog: messages whose deadline passes
    // while they wait are dropped by the sender, never delivered late.
    let mut p = Pair::new(fig6_pipe(), cubic(SchedulerConfig::RoundRobin), 52);
    open(&mut p, 6, 2, StreamReliability::Unreliable);
    p.run_until(Time::from_millis(500), 10 * MS);
    let (now, conn) = (p.now(), p.conn);
    let deadline = now + 300 * MS;
    for _ in 0..100 {
        p.sender()
            .send_message_with_deadline(conn, now, 6, &[9; BLOCK], Some(deadline))
            .unwrap();
    }
    p.run_until(now + 3_000 * MS, MS);
    let expired = abandoned(&p, AbandonReason::DeadlineExpired).len();
    let lost = abandoned(&p, AbandonReason::Lost).len();
    // One-way delay plus a full drop-tail queue plus one packet.
    let latest = deadline + 20 * MS + Duration::from_micros((5_000 + 1_452) * 8);
    assert!(p.delivered.iter().all(|d| d.0 <= latest + MS));
    eprintln!(
        "{} delivered by the deadline, {expired} expired, {lost} lost",
        p.delivered.len()
    );
    assert!(expired > 50 && p.delivered.len() + expired + lost >= 100);
}

#[test]
fn abs_coalesces_small_messages_of_several_streams_and_marks_pri() {
    use peregrine_proto::wire::{DatagramRepr, PacketType, Payload};
    let pipe = PipeConfig {
        rate_bps: 10_000_000,
        delay_us: 10_000,
        ..PipeConfig::default()
    };
    let mut p = Pair::new(pipe, cubic(SchedulerConfig::Abs), 61);
    open(&mut p, 1, 2, StreamReliability::ReliableOrdered);
    open(&mut p, 2, 1, StreamReliability::ReliableUnordered);
    open(&mut p, 3, 3, StreamReliability::Unreliable);
    p.run_until(Time::from_millis(500), 10 * MS);
    p.h.record_deliveries(true);
    let (now, conn) = (p.now(), p.conn);
    for i in 0..5u8 {
        for s in [3u16, 1, 2] {
            p.sender().send_message(conn, now, s, &[i; 40]).unwrap();
        }
    }
    p.run_until(now + 500 * MS, 10 * MS);
    assert_eq!(p.delivered.len(), 15);
    let mut coalesced = 0;
    for e in p.h.delivery_log().iter().filter(|e| e.from == p.a) {
        let d = DatagramRepr::decode(&e.datagram).unwrap();
        if d.header.pk_type != PacketType::Data {
            continue;
        }
        let Payload::Data(data) = &d.payload else {
            unreachable!()
        };
        let class = |s: u16| [0, 2, 1, 3][usize::from(s)];
        let streams: BTreeSet<u16> = data.frames.iter().map(|f| f.stream_id).collect();
        let most_urgent = streams.iter().map(|&s| class(s)).min().unwrap();
        assert_eq!(d.header.pri, most_urgent, "PRI is the most urgent class");
        // ABS packs in priority order: classes never decrease.
        let classes: Vec<u8> = data.frames.iter().map(|f| class(f.stream_id)).collect();
        assert!(classes.windows(2).all(|w| w[0] <= w[1]), "{classes:?}");
        if streams.len() > 1 {
            coalesced += 1;
        }
    }
    assert!(
        coalesced >= 1,
        "small messages of several streams share a datagram"
    );
}

#[test]
fn rr_streams_are_opened_by_either_side() {
    let mut p = Pair::new(fig6_pipe(), cubic(SchedulerConfig::RoundRobin), 71);
    p.run_until(Time::from_millis(300), 10 * MS);
    let server = p.h.node(p.b).handles()[0];
    let now = p.now();
    let b = p.b;
    p.h.node_mut(b)
        .open_stream(
            server,
            now,
            9,
            StreamConfig {
                class: 0,
                reliability: StreamReliability::ReliableUnordered,
                ..StreamConfig::default()
            },
        )
        .unwrap();
    p.h.node_mut(b)
        .set_scheduler(server, now, SchedulerConfig::Abs);
    for i in 0..3u8 {
        p.h.node_mut(b)
            .send_message(server, now, 9, &[i; 10])
            .unwrap();
        p.h.node_mut(b)
            .send_message(server, now, 4, &[i; 10])
            .unwrap();
    }
    let conn = p.conn;
    p.sender().send_message(conn, now, 9, b"client").unwrap();
    p.run_until(now + 500 * MS, 10 * MS);
    let at_client: Vec<(u16, u32)> = p
        .sender_events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::MessageReceived { stream, id, .. } => Some((*stream, id.number)),
            _ => None,
        })
        .collect();
    assert_eq!(at_client.len(), 6);
    assert_eq!(at_client[..3], [(9, 0), (9, 1), (9, 2)], "class 0 first");
    assert_eq!(p.delivered.len(), 1);
    assert_eq!((p.delivered[0].1, p.delivered[0].2), (9, 0));
    let s = p.h.node(p.b).stats(server).unwrap();
    assert_eq!(s.scheduler, "abs");
}

#[test]
fn wfq_thousands_of_streams_on_one_connection() {
    let pipe = PipeConfig {
        rate_bps: 50_000_000,
        delay_us: 10_000,
        loss: 0.01,
        ..PipeConfig::default()
    };
    let mut p = Pair::new(pipe, cubic(SchedulerConfig::Wfq), 81);
    p.run_until(Time::from_millis(100), 10 * MS);
    let (now, conn) = (p.now(), p.conn);
    for id in 0..4_000u16 {
        p.sender()
            .send_message(conn, now, id, id.to_be_bytes().repeat(20))
            .unwrap();
    }
    p.run_until(now + 5_000 * MS, 10 * MS);
    let got: BTreeSet<u16> = p.delivered.iter().map(|d| d.1).collect();
    assert_eq!(got.len(), 4_000);
    assert!(p
        .delivered
        .iter()
        .all(|d| d.3 == d.1.to_be_bytes().repeat(20)));
}
