//! Address migration (issue 7, item 3) on the impairment harness: the
//! client's address changes in the middle of a two-way transfer (a NAT
//! rebinding that changes the port, or a new IP address after a
//! handover); the server validates the new path before it sends more than
//! three times what it received from there, then moves; every message
//! arrives once, in order. A genuine datagram copied by an attacker and
//! sent from a third address never moves the connection.
//!
//! The path: 10 Mbit/s each way, 20 ms one way, a 128 KB queue; 600
//! messages of 1,000 bytes each way.

mod support;

use peregrine_proto::harness::{Harness, NodeId, PipeConfig};
use peregrine_proto::{ConnectionConfig, Event, MessageId, Time};
use std::net::SocketAddr;
use support::{addr, App, CLIENT, SERVER};

const MESSAGES: u32 = 600;
const SIZE: usize = 1_000;
const REBIND_AT_MS: u64 = 250;
const LIMIT_MS: u64 = 20_000;

/// Message `n` of side `side`: its number and side in the first bytes.
fn message(side: u8, n: u32) -> Vec<u8> {
    let mut m = vec![side; SIZE];
    m[..4].copy_from_slice(&n.to_be_bytes());
    m[4] = (n as u8).wrapping_mul(31) ^ side;
    m
}

fn setup(seed: u64) -> (Harness<App>, NodeId, NodeId) {
    setup_with_loss(seed, 0.0)
}

fn setup_with_loss(seed: u64, loss: f64) -> (Harness<App>, NodeId, NodeId) {
    let mut h = Harness::new(seed);
    h.set_default_pipe(PipeConfig {
        rate_bps: 10_000_000,
        delay_us: 20_000,
        queue_limit_bytes: Some(128 * 1024),
        loss,
        ..PipeConfig::default()
    })
    .unwrap();
    h.record_deliveries(true);
    let mut client = App::client(seed);
    let mut server = App::server(ConnectionConfig::default(), seed + 1);
    client.outbox = (0..MESSAGES).map(|n| message(1, n)).collect();
    server.outbox = (0..MESSAGES).map(|n| message(2, n)).collect();
    client.tap = Some(Vec::new());
    server.tap = Some(Vec::new());
    let c = h.add_node(addr(CLIENT), client);
    let s = h.add_node(addr(SERVER), server);
    h.node_mut(c)
        .connect(Time::ZERO, addr(SERVER), ConnectionConfig::default());
    (h, c, s)
}

fn done(h: &Harness<App>, c: NodeId, s: NodeId) -> bool {
    h.node(c).received.len() >= MESSAGES as usize && h.node(s).received.len() >= MESSAGES as usize
}

/// Runs until both sides got every message (or the limit).
fn run_to_completion(h: &mut Harness<App>, c: NodeId, s: NodeId) {
    while !done(h, c, s) && h.now() < Time::from_millis(LIMIT_MS) {
        let next = Time::from_nanos(h.now().as_nanos() + 10_000_000);
        h.run_until(next).unwrap();
    }
}

/// Every message of `side` exactly once, in order, intact.
fn assert_all_once_in_order(app: &App, side: u8, who: &str) {
    let ids: Vec<MessageId> = app.received.iter().map(|(_, id, _)| *id).collect();
    let want: Vec<MessageId> = (0..MESSAGES)
        .map(|number| MessageId { stream: 0, number })
        .collect();
    assert_eq!(ids, want, "{who}: every message once, in order");
    for (_, id, bytes) in &app.received {
        assert_eq!(bytes, &message(side, id.number), "{who}: message intact");
    }
}

fn migrated(app: &App) -> Vec<(Time, SocketAddr, SocketAddr, bool)> {
    app.events
        .iter()
        .filter_map(|(t, e)| match e {
            Event::PathMigrated {
                from,
                to,
                congestion_reset,
            } => Some((*t, *from, *to, *congestion_reset)),
            _ => None,
        })
        .collect()
}

/// Moves the client to `new_addr` mid-transfer and checks the outcome;
/// returns the harness for more checks.
fn rebind(seed: u64, new_addr: SocketAddr) -> (Harness<App>, NodeId, NodeId) {
    rebind_with_loss(seed, new_addr, 0.0)
}

fn rebind_with_loss(seed: u64, new_addr: SocketAddr, loss: f64) -> (Harness<App>, NodeId, NodeId) {
    let (mut h, c, s) = setup_with_loss(seed, loss);
    let rebind_at = Time::from_millis(REBIND_AT_MS);
    h.run_until(rebind_at).unwrap();
    let got = (h.node(c).received.len(), h.node(s).received.len());
    assert!(
        got.0 > 0 && got.1 > 0 && got.0 < MESSAGES as usize && got.1 < MESSAGES as usize,
        "the move happens mid-transfer: {got:?}"
    );
    h.set_addr(c, new_addr);
    run_to_completion(&mut h, c, s);
    assert_all_once_in_order(h.node(s), 1, "server");
    assert_all_once_in_order(h.node(c), 2, "client");

    let moves = migrated(h.node(s));
    assert_eq!(moves.len(), 1, "one migration: {moves:?}");
    let (migrated_at, from, to, _) = moves[0];
    assert_eq!((from, to), (addr(CLIENT), new_addr));
    let server = h.node(s);
    let conn = server.conn.unwrap();
    assert_eq!(server.ep.remote(conn), Some(new_addr));
    let stats = server.ep.stats(conn).unwrap();
    assert_eq!(stats.path.migrations, 1);
    assert_eq!(stats.path.responses_received, 1);
    assert!(stats.path.challenges_sent >= 1);
    assert_eq!(stats.path.failed_validations, 0);
    let client_stats = h.node(c).ep.stats(h.node(c).conn.unwrap()).unwrap();
    assert!(client_stats.path.challenges_received >= 1);
    assert_eq!(client_stats.path.migrations, 0, "the server did not move");

    // Anti-amplification, seen on the wire: until the move, every
    // datagram the server sent to the new address is at most 3x what it
    // got from there (datagrams to the old address are unroutable now).
    let from_server: u64 = h
        .delivery_log()
        .iter()
        .filter(|e| e.from == s && e.sent_at >= rebind_at && e.sent_at < migrated_at)
        .map(|e| e.datagram.len() as u64)
        .sum();
    let to_server: u64 = h
        .delivery_log()
        .iter()
        .filter(|e| e.from == c && e.at >= rebind_at && e.at <= migrated_at)
        .map(|e| e.datagram.len() as u64)
        .sum();
    println!(
        "moved to {new_addr} at {:.1} ms (rebound at {REBIND_AT_MS} ms): {from_server} bytes sent to it before, {to_server} received from it; {} challenge(s); done at {:.1} ms",
        migrated_at.as_nanos() as f64 / 1e6,
        stats.path.challenges_sent,
        h.now().as_nanos() as f64 / 1e6
    );
    assert!(from_server > 0, "the challenge reached the new address");
    assert!(
        from_server <= 3 * to_server,
        "sent {from_server} bytes to the unvalidated address, got {to_server}"
    );
    assert!(stats.path.unvalidated_bytes_sent <= 3 * stats.path.unvalidated_bytes_received);
    // Before validation the server kept sending to the old address.
    assert!(h.unroutable() > 0);
    // Afterwards, everything goes to the new address.
    let tap = server.tap.as_ref().unwrap();
    assert!(tap
        .iter()
        .filter(|(t, _, _)| *t > migrated_at)
        .all(|(_, to, _)| *to == new_addr));
    (h, c, s)
}

#[test]
fn migration_nat_rebinding_mid_transfer_validates_then_moves_keeping_congestion_state() {
    let new_addr = SocketAddr::from(([10, 0, 0, CLIENT], 5000));
    let (h, _, s) = rebind(11, new_addr);
    let moves = migrated(h.node(s));
    assert!(!moves[0].3, "port-only change: congestion state kept");
    let stats = h.node(s).ep.stats(h.node(s).conn.unwrap()).unwrap();
    assert_eq!(stats.path.congestion_resets, 0);
}

#[test]
fn migration_new_ip_address_mid_transfer_resets_rtt_and_congestion_state() {
    let new_addr = SocketAddr::from(([10, 0, 1, 9], 4000));
    let (h, _, s) = rebind(12, new_addr);
    let moves = migrated(h.node(s));
    assert!(moves[0].3, "new IP address: RTT and congestion restart");
    let stats = h.node(s).ep.stats(h.node(s).conn.unwrap()).unwrap();
    assert_eq!(stats.path.congestion_resets, 1);
}

#[test]
fn migration_spoofed_copies_from_a_third_address_do_not_move_the_connection() {
    let (mut h, c, s) = setup(13);
    let spoofer = SocketAddr::from(([10, 0, 0, 66], 4000));
    h.run_until(Time::from_millis(200)).unwrap();
    let tap = h.node(c).tap.clone().unwrap();
    // 1. A replay: a datagram the server already has, from elsewhere.
    let old = tap
        .iter()
        .rev()
        .find(|(t, _, _)| t.as_nanos() + 100_000_000 < h.now().as_nanos())
        .map(|(_, _, b)| b.clone())
        .unwrap();
    h.inject(spoofer, s, &old).unwrap();
    let conn = h.node(s).conn.unwrap();
    let stats = h.node(s).ep.stats(conn).unwrap();
    assert_eq!(stats.path.rejected_packets, 1);
    assert_eq!(stats.wrong_address, 1);
    assert_eq!(
        stats.path.challenges_sent, 0,
        "a replay is not even challenged"
    );
    // 2. A race: a copy of the datagram still in flight, arriving first.
    let fresh = h.node(c).tap.as_ref().unwrap().last().unwrap().2.clone();
    let sent_before = h.unroutable();
    h.inject(spoofer, s, &fresh).unwrap();
    run_to_completion(&mut h, c, s);
    h.run_until(Time::from_nanos(h.now().as_nanos() + 5_000_000_000))
        .unwrap();
    assert_all_once_in_order(h.node(s), 1, "server");
    assert_all_once_in_order(h.node(c), 2, "client");
    let server = h.node(s);
    let stats = server.ep.stats(conn).unwrap();
    assert_eq!(server.ep.remote(conn), Some(addr(CLIENT)), "not moved");
    assert!(migrated(server).is_empty());
    assert_eq!(stats.path.migrations, 0);
    assert!(stats.path.challenges_sent >= 1, "the copy was challenged");
    assert_eq!(stats.path.failed_validations, 1, "and the challenge failed");
    assert!(stats.path.unvalidated_bytes_sent <= 3 * stats.path.unvalidated_bytes_received);
    // Only challenges went to the spoofer: they are the only unroutable
    // datagrams, and everything else went to the client.
    let to_spoofer: Vec<&(Time, SocketAddr, Vec<u8>)> = server
        .tap
        .as_ref()
        .unwrap()
        .iter()
        .filter(|(_, to, _)| *to == spoofer)
        .collect();
    assert_eq!(to_spoofer.len() as u64, stats.path.challenges_sent);
    assert_eq!(h.unroutable() - sent_before, stats.path.challenges_sent);
    assert!(server
        .tap
        .as_ref()
        .unwrap()
        .iter()
        .all(|(_, to, _)| *to == spoofer || *to == addr(CLIENT)));
}

#[test]
fn migration_with_five_percent_loss_each_way_still_validates_and_completes() {
    let new_addr = SocketAddr::from(([10, 0, 0, CLIENT], 6000));
    for seed in [31, 32, 33] {
        let (h, c, s) = rebind_with_loss(seed, new_addr, 0.05);
        let stats = h.node(s).ep.stats(h.node(s).conn.unwrap()).unwrap();
        assert!(
            stats.packets_lost > 0,
            "seed {seed}: the links did lose packets"
        );
        let client = h.node(c).ep.stats(h.node(c).conn.unwrap()).unwrap();
        println!(
            "seed {seed}: challenges {} (answered {}), server lost {} packets, client lost {}",
            stats.path.challenges_sent,
            client.path.challenges_received,
            stats.packets_lost,
            client.packets_lost
        );
    }
}
