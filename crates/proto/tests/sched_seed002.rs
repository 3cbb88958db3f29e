//! Seed 002's qualitative claims on the Fig. 6 set-up: one connection, a
//! bulk stream and a priority stream over 1 Mbit/s, 40 ms RTT, a drop-tail
//! buffer of one BDP, CUBIC from slow start; the priority stream sends a
//! message of 8 full packets once per second.

#[path = "sched/common.rs"]
mod common;

use common::*;
use peregrine_proto::{SchedulerConfig, StreamConfig, Time};
use std::time::Duration;

const BULK: u16 = 1;
const PRIO: u16 = 2;
/// Data per full packet: 1452 − 37 bytes.
const BLOCK: usize = 1415;
const MESSAGES: u32 = 20;

/// Priority-message latencies (queued → delivered) under `scheduler`.
fn fig6(scheduler: SchedulerConfig, seed: u64) -> (Vec<Duration>, u64) {
    let mut p = Pair::new(fig6_pipe(), cubic(scheduler), seed);
    let now = p.now();
    let conn = p.conn;
    p.sender()
        .open_stream(
            conn,
            now,
            BULK,
            StreamConfig {
                class: 3,
                weight: 1,
                ..StreamConfig::default()
            },
        )
        .unwrap();
    p.sender()
        .open_stream(
            conn,
            now,
            PRIO,
            StreamConfig {
                class: 0,
                weight: 3,
                ..StreamConfig::default()
            },
        )
        .unwrap();
    let mut queued_at = Vec::new();
    let mut bulk_queued = 0u64;
    let end = Time::from_millis(2_000 + u64::from(MESSAGES) * 1_000 + 1_000);
    while p.now() < end {
        let now = p.now();
        // Keep the bulk stream backlogged (about 30 packets ahead).
        let bulk_delivered = p.delivered.iter().filter(|d| d.1 == BULK).count() as u64;
        while bulk_queued < bulk_delivered + 30 {
            p.sender()
                .send_message(conn, now, BULK, &[0xb; BLOCK])
                .unwrap();
            bulk_queued += 1;
        }
        // One priority message a second from t = 2 s (after slow start).
        let due = Time::from_millis(2_000 + queued_at.len() as u64 * 1_000);
        if queued_at.len() < MESSAGES as usize && now >= due {
            let mut m = vec![0xa; 8 * BLOCK];
            m[..4].copy_from_slice(&(queued_at.len() as u32).to_be_bytes());
            p.sender().send_message(conn, now, PRIO, &m).unwrap();
            queued_at.push(now);
        }
        p.run_until(now + Duration::from_millis(1), Duration::from_millis(1));
    }
    let latencies: Vec<Duration> = p
        .delivered
        .iter()
        .filter(|d| d.1 == PRIO)
        .map(|d| d.0 - queued_at[d.2 as usize])
        .collect();
    assert_eq!(latencies.len(), MESSAGES as usize, "every priority message");
    let stats = p.h.node(p.a).stats(conn).unwrap();
    let bulk_bytes = stats
        .streams
        .iter()
        .find(|s| s.id == BULK)
        .unwrap()
        .bytes_sent;
    (latencies, bulk_bytes)
}

/// 8 packets of 1452 bytes at 1 Mbit/s, plus one RTT: the bound's base.
fn serialization_plus_rtt() -> Duration {
    Duration::from_micros(8 * 1452 * 8) + Duration::from_millis(40)
}

#[test]
fn abs_median_priority_latency_within_1_5_of_serialization_plus_rtt() {
    let (mut lat, bulk) = fig6(SchedulerConfig::Abs, 1);
    let med = median(&mut lat);
    let bound = serialization_plus_rtt().mul_f64(1.5);
    eprintln!("abs: median {med:?} (bound {bound:?}), bulk {bulk} bytes");
    assert!(med <= bound, "ABS median {med:?} > {bound:?}");
    assert!(bulk > 1_000_000, "the bulk stream still moves: {bulk}");
}

#[test]
fn rr_median_priority_latency_is_clearly_larger_than_abs() {
    let (mut abs, _) = fig6(SchedulerConfig::Abs, 2);
    let (mut rr, _) = fig6(SchedulerConfig::RoundRobin, 2);
    let (abs, rr) = (median(&mut abs), median(&mut rr));
    eprintln!("abs {abs:?}, rr {rr:?}");
    assert!(rr > abs.mul_f64(1.3), "RR {rr:?} vs ABS {abs:?}");
}

#[test]
fn wfq_75_percent_lies_between_abs_and_rr() {
    let (mut abs, _) = fig6(SchedulerConfig::Abs, 3);
    let (mut wfq, _) = fig6(SchedulerConfig::Wfq, 3);
    let (mut rr, _) = fig6(SchedulerConfig::RoundRobin, 3);
    let (abs, wfq, rr) = (median(&mut abs), median(&mut wfq), median(&mut rr));
    eprintln!("abs {abs:?}, wfq {wfq:?}, rr {rr:?}");
    assert!(
        abs <= wfq && wfq < rr,
        "abs {abs:?}, wfq {wfq:?}, rr {rr:?}"
    );
}

#[test]
fn wfq_shares_match_weights_within_2_percent_over_10000_full_packets() {
    // Three backlogged streams, weights 1:2:5, over a fast clean link;
    // shares of the data bytes sent over 10,000 full packets.
    let pipe = peregrine_proto::harness::PipeConfig {
        rate_bps: 100_000_000,
        delay_us: 5_000,
        ..Default::default()
    };
    let mut p = Pair::new(pipe, cubic(SchedulerConfig::Wfq), 4);
    let conn = p.conn;
    let weights = [(1u16, 1u32), (2, 2), (3, 5)];
    for (id, w) in weights {
        let now = p.now();
        p.sender()
            .open_stream(
                conn,
                now,
                id,
                StreamConfig {
                    weight: w,
                    ..StreamConfig::default()
                },
            )
            .unwrap();
    }
    let mut queued = [0u64; 4];
    loop {
        let now = p.now();
        let stats = p.h.node(p.a).stats(conn).unwrap();
        let total: u64 = stats.streams.iter().map(|s| s.bytes_sent).sum();
        if total >= 10_000 * BLOCK as u64 {
            let sum: u32 = weights.iter().map(|w| w.1).sum();
            for (id, w) in weights {
                let s = stats.streams.iter().find(|s| s.id == id).unwrap();
                let share = s.bytes_sent as f64 / total as f64;
                let want = f64::from(w) / f64::from(sum);
                eprintln!("stream {id}: weight {w}, share {share:.4} (want {want:.4})");
                assert!(
                    (share - want).abs() <= 0.02 * want,
                    "stream {id}: {share} vs {want}"
                );
            }
            break;
        }
        for (id, _) in weights {
            // Backlogged: always 64 packets' worth not yet sent.
            let sent = stats
                .streams
                .iter()
                .find(|s| s.id == id)
                .map_or(0, |s| s.bytes_sent / BLOCK as u64);
            while queued[usize::from(id)] < sent + 64 {
                p.sender().send_message(conn, now, id, &[1; BLOCK]).unwrap();
                queued[usize::from(id)] += 1;
            }
        }
        p.run_until(now + Duration::from_millis(2), Duration::from_millis(2));
        assert!(p.now() < Time::from_millis(60_000), "too slow");
    }
}
