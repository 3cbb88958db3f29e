//! Packets per second per core through send and receive: two endpoints in
//! the in-memory impairment harness, one established connection, 1,200-byte
//! messages (one DATA packet each), a loss-free 1 Gbit/s link with 1 ms
//! one way. One iteration hands 5,000 messages to the sender and runs the
//! harness until the receiving application has all of them, so it covers
//! fragmentation, packetisation, checksums, pacing and congestion control,
//! the pipes, decoding, reassembly, delivery events, and the ACKs flowing
//! back. Criterion's throughput is in elements = DATA packets; the
//! benchmark is single-threaded, so that is per core.
//!
//! It runs twice in one process: unencrypted (`plain`), and protected by a
//! `Noise_IK` handshake (`noise_ik`: every packet sealed by the sender and
//! opened by the receiver, ChaCha20-Poly1305, ACKs included) — the ratio of
//! the two is the per-core cost of packet protection (docs/security.md).
//!
//! `cargo bench -p peregrine-proto --bench throughput`

#[path = "../tests/support/mod.rs"]
mod support;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use peregrine_proto::crypto::{NoiseConfig, SecurityConfig, StaticKeypair};
use peregrine_proto::harness::{Harness, NodeId, PipeConfig};
use peregrine_proto::{ConnectionConfig, Event, Time};
use std::hint::black_box;
use support::{addr, App, CLIENT, SERVER};

const PACKETS: usize = 5_000;
const PAYLOAD: usize = 1_200;

/// The client's and the server's configurations: plain, or `Noise_IK`.
fn configs(encrypted: bool) -> (ConnectionConfig, ConnectionConfig) {
    if !encrypted {
        return (ConnectionConfig::default(), ConnectionConfig::default());
    }
    let server_kp = StaticKeypair::from_private([0x5e; 32]);
    let client_kp = StaticKeypair::from_private([0xc1; 32]);
    let client = ConnectionConfig {
        security: Some(SecurityConfig::Noise(NoiseConfig::ik(
            client_kp,
            server_kp.public(),
        ))),
        ..ConnectionConfig::default()
    };
    let server = ConnectionConfig {
        security: Some(SecurityConfig::Noise(NoiseConfig::server(server_kp))),
        ..ConnectionConfig::default()
    };
    (client, server)
}

/// A harness whose connection is established (handshake and packet-pair
/// probe done) and whose client holds `PACKETS` messages to send.
fn established(encrypted: bool) -> (Harness<App>, NodeId, NodeId) {
    let (config, server_config) = configs(encrypted);
    let mut h: Harness<App> = Harness::new(1);
    let mut server = App::server(server_config, 3);
    server.keep_bytes = false;
    let c = h.add_node(addr(CLIENT), App::client(2));
    let s = h.add_node(addr(SERVER), server);
    h.set_default_pipe(PipeConfig {
        rate_bps: 1_000_000_000,
        delay_us: 1_000,
        ..PipeConfig::default()
    })
    .expect("valid pipe");
    h.node_mut(c).connect(Time::ZERO, addr(SERVER), config);
    h.run_until(Time::from_millis(100)).expect("handshake");
    assert!(h.node(c).saw(|e| *e == Event::Connected));
    let payload = vec![0x5a; PAYLOAD];
    h.node_mut(c).outbox = (0..PACKETS).map(|_| payload.clone()).collect();
    (h, c, s)
}

/// Send everything and run until the receiver has it all.
fn transfer((mut h, c, s): (Harness<App>, NodeId, NodeId)) -> Harness<App> {
    let base = h.node(s).received.len();
    h.node_mut(c).pump();
    while h.node(s).received.len() < base + PACKETS {
        h.step().expect("harness").expect("events until delivered");
    }
    h
}

/// The figure is packets per second only if each message is one DATA
/// packet and nothing is retransmitted: check once, outside the timing.
fn check_one_packet_per_message(encrypted: bool) {
    let (h, c, s) = established(encrypted);
    let stats = |h: &Harness<App>| {
        let app = h.node(c);
        app.conn
            .and_then(|conn| app.ep.stats(conn))
            .expect("connection open")
    };
    let before = stats(&h);
    let h = transfer((h, c, s));
    let after = stats(&h);
    assert_eq!(
        after.data_packets_sent - before.data_packets_sent,
        PACKETS as u64
    );
    assert_eq!(after.packets_retransmitted, 0);
    assert_eq!(after.security.encrypted, encrypted);
}

fn bench_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("harness");
    group.throughput(Throughput::Elements(PACKETS as u64));
    group.sample_size(20);
    for (name, encrypted) in [
        ("send_receive_1200B_packets", false),
        ("send_receive_1200B_packets_noise_ik", true),
    ] {
        check_one_packet_per_message(encrypted);
        group.bench_function(name, |b| {
            b.iter_batched(
                || established(encrypted),
                |setup| black_box(transfer(setup)),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench_throughput);
criterion_main!(benches);
