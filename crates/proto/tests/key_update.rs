//! Key update and connection-ID rotation on the impairment harness
//! (issue 37): two protected endpoints exchange 600 messages each way
//! over a lossy, reordering path while both replace their packet keys
//! every 64 KiB; every message arrives once, in order, intact, and both
//! sides went through many generations. A client that moves mid-transfer
//! and switches to a spare connection ID is followed by the server.

mod support;

use peregrine_proto::crypto::{KeyUpdateConfig, SecurityConfig};
use peregrine_proto::harness::{Harness, NodeId, PipeConfig, Reorder};
use peregrine_proto::{ConnectionConfig, MessageId, Time};
use support::{addr, App, CLIENT, SERVER};

const MESSAGES: u32 = 600;
const SIZE: usize = 1_000;
const LIMIT_MS: u64 = 30_000;

fn message(side: u8, n: u32) -> Vec<u8> {
    let mut m = vec![side; SIZE];
    m[..4].copy_from_slice(&n.to_be_bytes());
    m[4] = (n as u8).wrapping_mul(31) ^ side;
    m
}

fn config() -> ConnectionConfig {
    ConnectionConfig {
        security: Some(SecurityConfig::PresharedKey([9; 32])),
        key_update: KeyUpdateConfig {
            bytes: Some(64 * 1024),
            ..KeyUpdateConfig::default()
        },
        ..ConnectionConfig::default()
    }
}

fn setup(seed: u64, loss: f64, reorder: f64) -> (Harness<App>, NodeId, NodeId) {
    let mut h = Harness::new(seed);
    h.set_default_pipe(PipeConfig {
        rate_bps: 10_000_000,
        delay_us: 20_000,
        queue_limit_bytes: Some(128 * 1024),
        loss,
        reorder: (reorder > 0.0).then_some(Reorder {
            probability: reorder,
            extra_delay_us: 5_000,
        }),
        ..PipeConfig::default()
    })
    .unwrap();
    let mut client = App::client(seed);
    let mut server = App::server(config(), seed + 1);
    client.outbox = (0..MESSAGES).map(|n| message(1, n)).collect();
    server.outbox = (0..MESSAGES).map(|n| message(2, n)).collect();
    let c = h.add_node(addr(CLIENT), client);
    let s = h.add_node(addr(SERVER), server);
    h.node_mut(c).connect(Time::ZERO, addr(SERVER), config());
    (h, c, s)
}

fn run(h: &mut Harness<App>, c: NodeId, s: NodeId) {
    while (h.node(c).received.len() < MESSAGES as usize
        || h.node(s).received.len() < MESSAGES as usize)
        && h.now() < Time::from_millis(LIMIT_MS)
    {
        let next = Time::from_nanos(h.now().as_nanos() + 10_000_000);
        h.run_until(next).unwrap();
    }
}

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

#[test]
fn many_key_updates_under_loss_and_reordering_lose_nothing() {
    for (seed, loss, reorder) in [(1, 0.0, 0.0), (2, 0.02, 0.0), (3, 0.01, 0.05)] {
        let (mut h, c, s) = setup(seed, loss, reorder);
        run(&mut h, c, s);
        assert_all_once_in_order(h.node(s), 1, "server");
        assert_all_once_in_order(h.node(c), 2, "client");
        let cs = h.node(c).ep.stats(h.node(c).conn.unwrap()).unwrap();
        let ss = h.node(s).ep.stats(h.node(s).conn.unwrap()).unwrap();
        eprintln!(
            "seed {seed}: client {:?} / server {:?}",
            cs.security, ss.security
        );
        // 600 KB each way at 64 KiB per key would be about 9 updates per
        // direction, but each side also waits for the peer to acknowledge
        // a packet of the current key before starting the next (RFC 9001
        // §6.1): 40 ms RTT plus the ACK delay against the 52 ms 64 KiB
        // take at 10 Mbit/s. Seen: 6 (seed 1, no loss), 11 (seeds 2, 3).
        assert!(cs.security.key_updates >= 5, "{:?}", cs.security);
        assert!(
            cs.security.key_updates.abs_diff(ss.security.key_updates) <= 1,
            "both sides move together"
        );
        assert!(cs.security.key_updates_initiated >= 2);
        assert!(ss.security.key_updates_initiated >= 2);
    }
}

#[test]
fn a_client_that_moves_switches_to_a_spare_id_and_the_server_follows() {
    let (mut h, c, s) = setup(7, 0.0, 0.0);
    h.run_until(Time::from_millis(250)).unwrap();
    let new_addr = "10.0.0.99:5555".parse().unwrap();
    h.set_addr(c, new_addr);
    let handle = h.node(c).conn.unwrap();
    assert!(
        h.node_mut(c).ep.rotate_connection_id(handle),
        "the server issued spares after the handshake"
    );
    run(&mut h, c, s);
    assert_all_once_in_order(h.node(s), 1, "server");
    assert_all_once_in_order(h.node(c), 2, "client");
    let ss = h.node(s).ep.stats(h.node(s).conn.unwrap()).unwrap();
    let cs = h.node(c).ep.stats(handle).unwrap();
    assert_eq!(cs.security.cid_changes, 1);
    assert_eq!(
        ss.security.cid_changes, 1,
        "the server saw the new sequence"
    );
    assert_eq!(ss.path.migrations, 1);
    assert_eq!(h.node(s).ep.remote(h.node(s).conn.unwrap()), Some(new_addr));
}
