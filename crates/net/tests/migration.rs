//! Address migration across a real rebinding: the client moves to a new
//! UDP socket mid-transfer, the server validates the new path and follows
//! it, and every message arrives once, in order (SHA-256 of the stream).

use peregrine::{ConnectionConfig, Endpoint, StreamConfig};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::time::Duration;

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal address")
}

const MSG: usize = 8 * 1024;

fn message(i: u32) -> Vec<u8> {
    let mut m: Vec<u8> = (0..MSG)
        .map(|k| (k as u32 ^ i.wrapping_mul(31)) as u8)
        .collect();
    m[..4].copy_from_slice(&i.to_be_bytes());
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_across_a_real_rebinding_mid_transfer_delivers_every_message_once() {
    const COUNT: u32 = 2048; // 16 MiB
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind server");
    let addr = server.local_addr();
    let client = Endpoint::client(v4()).expect("bind client");
    let before = client.local_addr();
    let conn = client
        .connect(addr, ConnectionConfig::default())
        .await
        .expect("connect");
    conn.open_stream(1, StreamConfig::default())
        .expect("stream");
    let sconn = server.accept().await.expect("accept");
    assert_eq!(sconn.remote_address(), Some(before));
    let receiver = {
        let sconn = sconn.clone();
        tokio::spawn(async move {
            let mut h = Sha256::new();
            let mut next = 0u32;
            while next < COUNT {
                let (s, b) = tokio::time::timeout(Duration::from_secs(20), sconn.recv())
                    .await
                    .expect("progress")
                    .expect("a message");
                assert_eq!(s, 1);
                let i = u32::from_be_bytes(b[..4].try_into().expect("4-byte prefix"));
                assert_eq!(i, next, "every message once, in order");
                h.update(&b);
                next += 1;
            }
            h.finalize().to_vec()
        })
    };
    let mut h = Sha256::new();
    let mut after = None;
    for i in 0..COUNT {
        if i == COUNT / 3 {
            after = Some(client.rebind(v4()).expect("rebind"));
        }
        let m = message(i);
        h.update(&m);
        conn.send(1, &m).await.expect("send");
    }
    let after = after.expect("rebound once");
    assert_ne!(before, after, "a new socket, a new address");
    let digest = receiver.await.expect("receiver task");
    assert_eq!(digest, h.finalize().to_vec(), "SHA-256 of the stream");
    let ss = sconn.stats().expect("server stats");
    eprintln!("server path stats: {:?}", ss.path);
    assert!(
        ss.path.migrations >= 1,
        "the server followed: {:?}",
        ss.path
    );
    assert!(ss.path.responses_received >= 1, "after validating the path");
    assert_eq!(
        sconn.remote_address(),
        Some(after),
        "the server follows the client"
    );
    assert_eq!(ss.messages_delivered, u64::from(COUNT));
    // A graceful close waits until everything is acknowledged.
    assert_eq!(conn.close().await, peregrine::CloseReason::Local);
    let cs = conn.stats().expect("client stats (kept after close)");
    assert_eq!(cs.messages_acked, u64::from(COUNT));
    // Only one connection ever: the rebinding did not open a new one.
    assert_eq!(server.stats().core.connections_accepted, 1);
}
