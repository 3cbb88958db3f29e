//! The runtime's path MTU discovery over loopback: the default
//! configuration searches up to the interface's MTU (loopback: 65,536, so
//! 65,507-byte datagrams over IPv4), a pinned configuration keeps its
//! fixed size, and a transfer arrives intact either way. (Namespace tests
//! with a 1,280- and a 9,000-byte veth run the `peregrine perf` binary:
//! `crates/cli/tests/pmtud_netns.rs`.)

use peregrine::{ConnectionConfig, Endpoint, PmtuDiscovery, StreamConfig};
use peregrine_proto::pmtud::PmtudState;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal address")
}

/// Send `total` bytes from a client with `config` to a default server;
/// the client's PMTU stats at the end, after checking the SHA-256.
async fn transfer(
    config: ConnectionConfig,
    total: usize,
) -> peregrine_proto::connection::PmtuStats {
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind server");
    let addr = server.local_addr();
    let receiver = tokio::spawn(async move {
        let conn = server.accept().await.expect("a connection");
        let mut h = Sha256::new();
        while let Some((_, bytes)) = conn.recv().await {
            h.update(&bytes);
        }
        h.finalize().to_vec()
    });
    let client = Endpoint::client(v4()).expect("bind client");
    let conn = client.connect(addr, config).await.expect("connect");
    conn.open_stream(1, StreamConfig::default())
        .expect("stream");
    let data: Vec<u8> = (0..total).map(|i| (i * 7 % 251) as u8).collect();
    for chunk in data.chunks(200_000) {
        conn.send(1, chunk).await.expect("send");
    }
    // Let the search finish (loopback: one round trip) before reading it.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let pmtu = conn.stats().expect("stats").pmtu;
    conn.close().await;
    assert_eq!(
        receiver.await.expect("receiver"),
        Sha256::digest(&data).to_vec()
    );
    pmtu
}

#[tokio::test]
async fn the_default_searches_up_to_the_interface_mtu() {
    let p = transfer(ConnectionConfig::default(), 4 << 20).await;
    assert_eq!(p.state, PmtudState::SearchComplete, "{p:?}");
    // Loopback's MTU is 65,536 unless someone changed it: anything above
    // the old fixed 1,452 shows the runtime found the interface's MTU.
    assert!(
        p.max_bytes > 1452 && p.current_bytes == p.max_bytes,
        "{p:?}"
    );
    assert!(p.max_bytes <= 65_507, "capped at one IPv4 packet: {p:?}");
}

#[tokio::test]
async fn a_pinned_size_is_kept() {
    let pinned = ConnectionConfig {
        pmtu_discovery: PmtuDiscovery::Off,
        max_packet_size: 1452,
        ..ConnectionConfig::default()
    };
    let p = transfer(pinned, 1 << 20).await;
    assert_eq!((p.state, p.current_bytes), (PmtudState::Disabled, 1452));
}
