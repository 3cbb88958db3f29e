//! Bounded memory (issue 7, item 5; seed 003 §III-F) end to end: a sender
//! whose endpoint pool has a 1 MB ceiling and a receiver that stalls —
//! its window closed for 2 s, or the link blacked out while messages
//! carry deadlines.
//!
//! What must hold: `send_message` says `WouldBlock` (never an abort, never
//! a silent drop); the pool's use, sampled after every harness event,
//! never exceeds the ceiling; `Writable` fires once room frees; after the
//! receiver resumes every message arrives exactly once; and the
//! accounting is exact — the pool is empty again once everything is
//! acknowledged, abandoned, or the connection is gone.

mod support;

use peregrine_proto::harness::{Harness, NodeId, Outage, PipeConfig, RunOutcome};
use peregrine_proto::{
    ConnectionConfig, EndpointConfig, Event, MessageId, SendError, Time, WindowTarget,
};
use std::time::Duration;
use support::{addr, App, CLIENT, SERVER};

const CEILING: usize = 1_000_000;
const MESSAGES: u32 = 3_000;
const MESSAGE_LEN: usize = 1_000;

fn message(n: u32) -> Vec<u8> {
    let mut m = vec![(n % 241) as u8; MESSAGE_LEN];
    m[..4].copy_from_slice(&n.to_be_bytes());
    m
}

fn intact(id: MessageId, bytes: &[u8]) -> bool {
    id.stream == 0 && bytes == message(id.number).as_slice()
}

fn pipe() -> PipeConfig {
    PipeConfig {
        rate_bps: 20_000_000,
        delay_us: 15_000,
        queue_limit_bytes: Some(256 * 1024),
        ..PipeConfig::default()
    }
}

fn client_config() -> EndpointConfig {
    EndpointConfig {
        memory_ceiling_bytes: CEILING,
        ..EndpointConfig::default()
    }
}

/// Runs until idle (or `limit`), sampling the client's pool after every
/// event; returns the largest use seen.
fn run_sampling(h: &mut Harness<App>, c: NodeId, limit: Time) -> usize {
    let mut largest = 0u64;
    while h.now() <= limit {
        match h.step().expect("the harness runs") {
            Some(_) => {
                let s = h.node(c).ep.endpoint_stats();
                largest = largest.max(s.pool_bytes_in_use);
                assert!(
                    s.pool_bytes_in_use <= CEILING as u64,
                    "pool over its ceiling at {:?}: {}",
                    h.now(),
                    s.pool_bytes_in_use
                );
            }
            None => break,
        }
    }
    largest as usize
}

#[test]
fn pool_stalled_receiver_gives_would_block_loses_nothing_and_stays_under_the_ceiling() {
    let mut h: Harness<App> = Harness::new(31);
    let client = App::new(client_config(), 32);
    let mut server = App::server(ConnectionConfig::default(), 33);
    server.keep_bytes = false;
    server.expect = Some(intact);
    let c = h.add_node(addr(CLIENT), client);
    let s = h.add_node(addr(SERVER), server);
    h.set_default_pipe(pipe()).expect("valid pipe");
    h.node_mut(c)
        .connect(Time::ZERO, addr(SERVER), ConnectionConfig::default());
    h.run_until(Time::from_millis(150)).expect("runs");
    // The receiver stalls (handover window closed), then the application
    // hands over 3 MB at once.
    let now = h.now();
    {
        let app = h.node_mut(s);
        let conn = app.conn.expect("connected");
        app.ep
            .set_receive_window(conn, now, WindowTarget::Connection, 0);
    }
    // The closing CWIN reaches the sender first.
    h.run_until(Time::from_millis(200)).expect("runs");
    let now = h.now();
    {
        let app = h.node_mut(c);
        app.outbox = (0..MESSAGES).map(message).collect();
        app.close_when_sent = true;
        app.pump();
        assert!(app.would_block > 0, "the ceiling refused some messages");
        let stats = app.ep.endpoint_stats().clone();
        assert!(stats.pool_bytes_in_use <= CEILING as u64);
        assert!(stats.pool_bytes_in_use + MESSAGE_LEN as u64 > CEILING as u64);
        assert_eq!(stats.pool_ceiling_bytes, CEILING as u64);
        // The refusal is clear and carries the pool's state.
        let conn = app.conn.expect("connected");
        match app.ep.send_message(conn, now, 0, message(u32::MAX)) {
            Err(SendError::WouldBlock { in_use, ceiling }) => {
                assert_eq!(ceiling, CEILING);
                assert_eq!(in_use as u64, stats.pool_bytes_in_use);
            }
            other => panic!("expected WouldBlock, got {other:?}"),
        }
    }
    let largest = run_sampling(&mut h, c, Time::from_millis(2_150));
    assert!(largest > CEILING - MESSAGE_LEN);
    assert!(
        !h.node(c).saw(|e| *e == Event::Writable),
        "nothing is acknowledged while the receiver is stalled"
    );
    let now = h.now();
    {
        let app = h.node_mut(s);
        let conn = app.conn.expect("connected");
        app.ep
            .set_receive_window(conn, now, WindowTarget::Connection, u64::MAX);
    }
    run_sampling(&mut h, c, Time::from_millis(120_000));
    assert_eq!(
        h.run_until_idle(Time::from_millis(120_000)).expect("runs"),
        RunOutcome::Idle
    );
    let (client, server) = (h.node(c), h.node(s));
    assert!(client.saw(|e| *e == Event::Writable), "Writable fired");
    assert!(client.send_errors.is_empty(), "{:?}", client.send_errors);
    assert_eq!(server.bad_messages, 0);
    assert_eq!(server.received.len(), MESSAGES as usize);
    for (i, r) in server.received.iter().enumerate() {
        assert_eq!(r.1.number as usize, i, "out of order or twice");
    }
    let (_, _, undelivered) = client.closed().expect("closed");
    assert!(undelivered.is_empty());
    let stats = client.ep.endpoint_stats();
    assert_eq!(stats.pool_bytes_in_use, 0, "everything released");
    assert!(stats.pool_peak_bytes <= CEILING as u64);
    assert!(stats.pool_peak_bytes as usize >= largest);
    assert_eq!(stats.pool_would_block, client.would_block + 1);
}

#[test]
fn pool_bytes_of_abandoned_messages_are_released_and_wake_the_sender() {
    // The link is black for 5 s from 300 ms; the messages' deadlines pass
    // in it: abandoned messages must leave the pool.
    let black = PipeConfig {
        outages: vec![Outage {
            start_us: 300_000,
            end_us: 5_300_000,
        }],
        ..pipe()
    };
    let mut h: Harness<App> = Harness::new(41);
    let client = App::new(client_config(), 42);
    let server = App::server(ConnectionConfig::default(), 43);
    let c = h.add_node(addr(CLIENT), client);
    h.add_node(addr(SERVER), server);
    h.set_default_pipe(black).expect("valid pipe");
    h.node_mut(c)
        .connect(Time::ZERO, addr(SERVER), ConnectionConfig::default());
    h.run_until(Time::from_millis(290)).expect("runs");
    let now = h.now();
    let deadline = now + Duration::from_millis(1_000);
    let mut accepted = 0u32;
    {
        let app = h.node_mut(c);
        let conn = app.conn.expect("connected");
        loop {
            let m = message(accepted);
            match app
                .ep
                .send_message_with_deadline(conn, now, 0, &m, Some(deadline))
            {
                Ok(_) => accepted += 1,
                Err(SendError::WouldBlock { .. }) => break,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        assert_eq!(accepted as usize, CEILING / MESSAGE_LEN);
    }
    run_sampling(&mut h, c, Time::from_millis(2_000));
    let client = h.node(c);
    let abandoned = client
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::MessageAbandoned { .. }))
        .count();
    let acked = {
        let conn = client.conn.expect("connected");
        client.ep.stats(conn).expect("stats").messages_acked
    };
    assert_eq!(abandoned as u64 + acked, u64::from(accepted));
    assert!(abandoned > 0, "the deadlines passed in the blackout");
    assert_eq!(client.ep.endpoint_stats().pool_bytes_in_use, 0);
    assert!(client.saw(|e| *e == Event::Writable));
}

#[test]
fn pool_a_freed_connection_releases_its_bytes_and_wakes_the_others() {
    // Two connections share the client's pool; the receiver's window is
    // closed on the first, so its messages stay. Aborting it frees the
    // pool, and the second one, refused before, hears Writable.
    let mut h: Harness<App> = Harness::new(51);
    let client = App::new(client_config(), 52);
    let server = App::server(ConnectionConfig::default(), 53);
    let c = h.add_node(addr(CLIENT), client);
    let s = h.add_node(addr(SERVER), server);
    h.set_default_pipe(pipe()).expect("valid pipe");
    let now = h.now();
    let (first, second) = {
        let ep = &mut h.node_mut(c).ep;
        let cfg = ConnectionConfig::default();
        let a = ep
            .connect(now, addr(SERVER), cfg.clone())
            .expect("connects");
        let b = ep.connect(now, addr(SERVER), cfg).expect("connects");
        (a, b)
    };
    h.run_until(Time::from_millis(150)).expect("runs");
    let now = h.now();
    {
        let ep = &mut h.node_mut(s).ep;
        for conn in ep.handles() {
            assert!(ep.set_receive_window(conn, now, WindowTarget::Connection, 0));
        }
    }
    h.run_until(Time::from_millis(200)).expect("runs");
    let now = h.now();
    {
        let ep = &mut h.node_mut(c).ep;
        let mut n = 0u32;
        while ep.send_message(first, now, 0, message(n)).is_ok() {
            n += 1;
        }
        assert_eq!(n as usize, CEILING / MESSAGE_LEN);
        assert!(matches!(
            ep.send_message(second, now, 0, message(0)),
            Err(SendError::WouldBlock { .. })
        ));
        assert_eq!(ep.endpoint_stats().pool_bytes_in_use, CEILING as u64);
    }
    h.run_until(Time::from_millis(1_000)).expect("runs");
    assert_eq!(
        h.node(c).ep.endpoint_stats().pool_bytes_in_use,
        CEILING as u64,
        "a stalled receiver acknowledges nothing"
    );
    let now = h.now();
    h.node_mut(c).ep.abort(first, now);
    h.run_until(Time::from_millis(1_100)).expect("runs");
    let app = h.node(c);
    assert_eq!(app.ep.endpoint_stats().pool_bytes_in_use, 0);
    assert!(app
        .events
        .iter()
        .any(|(_, e)| matches!(e, Event::Closed { undelivered, .. } if undelivered.len() == CEILING / MESSAGE_LEN)),
        "the aborted connection reports what it never delivered");
    assert_eq!(app.conn, Some(first));
    let woke = app
        .events
        .iter()
        .filter(|(_, e)| *e == Event::Writable)
        .count();
    assert_eq!(woke, 1, "Writable once, for the second connection");
    let now = h.now();
    assert!(h
        .node_mut(c)
        .ep
        .send_message(second, now, 0, message(0))
        .is_ok());
}
