//! 10,000 messages through a lossy link and through a 2-second outage,
//! with each of the 16 registered congestion controllers (issue 5,
//! "Tests"): every message arrives exactly once, intact and in order, and
//! the close then ends normally on both sides.
//!
//! The path: 20 Mbit/s each way with a 256 KB drop-tail queue, 15 ms one
//! way (RTT 30 ms); messages of 200–1,200 bytes; the default connection
//! configuration (packet-pair start-up, 200 ms minimum RTO, 30 s idle
//! timeout) with only the controller changed. Completion time is the
//! virtual instant the receiving application gets the last message; each
//! test prints a table of them (`cargo test --test transfer -- --nocapture`).

mod support;

use peregrine_cc::{CcConfig, NAMES};
use peregrine_proto::harness::{Harness, Outage, PipeConfig, RunOutcome};
use peregrine_proto::{CloseReason, ConnectionConfig, MessageId, Time};
use support::{addr, App, CLIENT, SERVER};

const MESSAGES: u32 = 10_000;
const RATE_BPS: u64 = 20_000_000;
const ONE_WAY_DELAY_US: u64 = 15_000;
const QUEUE_LIMIT_BYTES: u64 = 256 * 1024;
/// A transfer still running at this virtual time has hung.
const LIMIT_S: f64 = 900.0;

/// Message `n`: 200–1,200 bytes, its number in the first four, the rest
/// derived from it, so any mix-up or damage shows.
fn message(n: u32) -> Vec<u8> {
    let mut x = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let len = 200 + (next() % 1001) as usize;
    let mut m: Vec<u8> = (0..len).map(|_| next() as u8).collect();
    m[..4].copy_from_slice(&n.to_be_bytes());
    m
}

fn intact(id: MessageId, bytes: &[u8]) -> bool {
    id.stream == 0 && bytes == message(id.number).as_slice()
}

/// What one transfer measured.
struct Outcome {
    completion_s: f64,
    packets_sent: u64,
    retransmitted: u64,
    lost: u64,
    spurious: u64,
    rtos: u64,
}

fn transfer(controller: &str, pipe: &PipeConfig, seed: u64) -> Result<Outcome, String> {
    let config = ConnectionConfig {
        cc: CcConfig::from_name(controller).map_err(|e| e.to_string())?,
        ..ConnectionConfig::default()
    };
    let mut h: Harness<App> = Harness::new(seed);
    let mut client = App::client(seed.wrapping_add(1));
    client.outbox = (0..MESSAGES).map(message).collect();
    client.close_when_sent = true;
    let mut server = App::server(config.clone(), seed.wrapping_add(2));
    server.keep_bytes = false;
    server.expect = Some(intact);
    let c = h.add_node(addr(CLIENT), client);
    let s = h.add_node(addr(SERVER), server);
    for (from, to) in [(c, s), (s, c)] {
        h.set_pipe(from, to, pipe.clone())
            .map_err(|e| e.to_string())?;
    }
    h.node_mut(c).connect(Time::ZERO, addr(SERVER), config);
    let outcome = h
        .run_until_idle(Time::from_secs_f64(LIMIT_S))
        .map_err(|e| e.to_string())?;
    let (client, server) = (h.node(c), h.node(s));
    if outcome != RunOutcome::Idle {
        return Err(format!(
            "hung: still busy at {:?} with {} of {MESSAGES} delivered (seed {seed})",
            h.now(),
            server.received.len()
        ));
    }
    if server.bad_messages > 0 {
        return Err(format!("{} messages arrived damaged", server.bad_messages));
    }
    if server.received.len() != MESSAGES as usize {
        return Err(format!(
            "{} of {MESSAGES} messages delivered (seed {seed})",
            server.received.len()
        ));
    }
    if let Some(i) =
        (server.received.iter().enumerate()).position(|(i, (_, id, _))| id.number as usize != i)
    {
        return Err(format!(
            "message #{i} delivered out of order or twice: {:?}",
            server.received[i].1
        ));
    }
    match (client.closed(), server.closed()) {
        (Some((_, CloseReason::Local, a)), Some((_, CloseReason::Remote, b)))
            if a.is_empty() && b.is_empty() => {}
        (a, b) => {
            return Err(format!(
                "close did not end normally: client {a:?}, server {b:?}"
            ))
        }
    }
    let stats = client
        .conn
        .and_then(|handle| client.ep.stats(handle))
        .ok_or("the client's stats are gone")?;
    Ok(Outcome {
        completion_s: server
            .last_received_at()
            .unwrap_or(Time::ZERO)
            .as_secs_f64(),
        packets_sent: stats.data_packets_sent,
        retransmitted: stats.packets_retransmitted,
        lost: stats.packets_lost,
        spurious: stats.spurious_losses,
        rtos: stats.rtos,
    })
}

/// Runs the transfer with every controller, prints a table (in one piece:
/// the two tests run in parallel), fails listing every controller that
/// did not deliver.
fn every_controller(label: &str, pipe: PipeConfig, seed: u64) {
    use std::fmt::Write;
    let mut table = format!(
        "{label}: {MESSAGES} messages, 20 Mbit/s, RTT 30 ms\n{:<10} {:>12} {:>9} {:>9} {:>7} {:>9} {:>5}\n",
        "controller", "completion s", "data pkts", "retrans", "lost", "spurious", "RTOs"
    );
    let mut failures = Vec::new();
    for (i, name) in NAMES.iter().enumerate() {
        let _ = match transfer(name, &pipe, seed + i as u64) {
            Ok(o) => writeln!(
                table,
                "{name:<10} {:>12.2} {:>9} {:>9} {:>7} {:>9} {:>5}",
                o.completion_s, o.packets_sent, o.retransmitted, o.lost, o.spurious, o.rtos
            ),
            Err(why) => {
                failures.push(format!("{name}: {why}"));
                writeln!(table, "{name:<10} FAILED: {why}")
            }
        };
    }
    eprintln!("{table}");
    assert!(failures.is_empty(), "{label}: {failures:#?}");
}

fn link() -> PipeConfig {
    PipeConfig {
        rate_bps: RATE_BPS,
        delay_us: ONE_WAY_DELAY_US,
        queue_limit_bytes: Some(QUEUE_LIMIT_BYTES),
        ..PipeConfig::default()
    }
}

#[test]
fn ten_thousand_messages_through_5_percent_loss_with_every_controller() {
    let pipe = PipeConfig {
        loss: 0.05,
        ..link()
    };
    every_controller("5 % Bernoulli loss both ways", pipe, 5_000);
}

#[test]
fn ten_thousand_messages_through_a_2_second_outage_with_every_controller() {
    // Both directions down from 1 s to 3 s, while the transfer (about
    // 2.9 s of serialisation alone) is under way.
    let pipe = PipeConfig {
        outages: vec![Outage {
            start_us: 1_000_000,
            end_us: 3_000_000,
        }],
        ..link()
    };
    every_controller("2 s outage both ways (1 s to 3 s)", pipe, 7_000);
}
