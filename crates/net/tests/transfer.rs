//! Transfers over real loopback sockets: SHA-256-checked bulk, IPv6, the
//! up-call interface, close and reopen, many connections at once.

use peregrine::{Connection, ConnectionConfig, Endpoint, StreamConfig};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CHUNK: usize = 256 * 1024;

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal address")
}

/// Deterministic pseudo-random bytes (xorshift), so the hash checks content.
fn fill(buf: &mut [u8], state: &mut u64) {
    for b in buf.chunks_mut(8) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let v = state.to_le_bytes();
        b.copy_from_slice(&v[..b.len()]);
    }
}

/// Send `total` bytes on stream 1 from a client to a server and compare
/// the SHA-256 of what was sent and what arrived.
async fn sha_transfer(bind: SocketAddr, total: usize) {
    let server = Endpoint::server(bind, ConnectionConfig::default()).expect("bind server");
    let addr = server.local_addr();
    let receiver = tokio::spawn(async move {
        let conn = server.accept().await.expect("a connection");
        let mut h = Sha256::new();
        let mut got = 0usize;
        while let Some((stream, bytes)) = conn.recv().await {
            assert_eq!(stream, 1);
            got += bytes.len();
            h.update(&bytes);
        }
        (got, h.finalize().to_vec(), conn.stats())
    });
    let client = Endpoint::client(bind).expect("bind client");
    let conn = client
        .connect(addr, ConnectionConfig::default())
        .await
        .expect("connect");
    let mut h = Sha256::new();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut buf = vec![0u8; CHUNK];
    let mut sent = 0;
    while sent < total {
        let n = CHUNK.min(total - sent);
        fill(&mut buf[..n], &mut state);
        h.update(&buf[..n]);
        conn.send(1, &buf[..n]).await.expect("send");
        sent += n;
    }
    let reason = conn.close().await;
    assert_eq!(
        reason,
        peregrine::CloseReason::Local,
        "client stats at close: {:?}",
        conn.stats()
    );
    let (got, digest, server_stats) = receiver.await.expect("receiver task");
    assert_eq!(got, total, "server stats: {server_stats:?}");
    assert_eq!(
        digest,
        h.finalize().to_vec(),
        "SHA-256 of the received bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_64_mib_checked_by_sha256() {
    sha_transfer(v4(), 64 << 20).await;
}

/// The 1 GB transfer. Ignored by default: about 9 s in the
/// dev profile on a shared 2-core machine; the 64 MiB test above runs the
/// same code. Run with `cargo test -p peregrine --test transfer -- --ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "1 GiB: slow in the dev profile; the 64 MiB variant runs by default"]
async fn transfer_1_gib_checked_by_sha256() {
    sha_transfer(v4(), 1 << 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_over_ipv6() {
    let bind: SocketAddr = "[::1]:0".parse().expect("literal address");
    // Skip on hosts without IPv6 loopback.
    #[allow(clippy::disallowed_types)]
    if std::net::UdpSocket::bind(bind).is_err() {
        eprintln!("skipping: no IPv6 loopback here");
        return;
    }
    sha_transfer(bind, 4 << 20).await;
}

/// A server and a client endpoint on loopback (default configurations)
/// and the two ends of one connection between them: (server, client,
/// the client's end, the server's end). The endpoints are returned so
/// their drivers live as long as the test holds them.
async fn connected_pair() -> (Endpoint, Endpoint, Connection, Connection) {
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind");
    let addr = server.local_addr();
    let client = Endpoint::client(v4()).expect("bind");
    let conn = client
        .connect(addr, ConnectionConfig::default())
        .await
        .expect("connect");
    let sconn = server.accept().await.expect("accept");
    (server, client, conn, sconn)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upcall_delivers_every_message_in_order() {
    let (_server, _client, conn, sconn) = connected_pair().await;
    const N: u32 = 20_000;
    let seen: Arc<Mutex<Vec<u32>>> = Arc::new(Mutex::new(Vec::new()));
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let mut done_tx = Some(done_tx);
    let s2 = seen.clone();
    sconn.on_message(3, move |stream, bytes| {
        assert_eq!(stream, 3);
        let n = u32::from_be_bytes(bytes[..4].try_into().expect("4-byte prefix"));
        let mut v = s2.lock().expect("not poisoned");
        v.push(n);
        if v.len() == N as usize {
            if let Some(tx) = done_tx.take() {
                let _ = tx.send(());
            }
        }
    });
    conn.open_stream(
        3,
        StreamConfig {
            class: 0,
            ..StreamConfig::default()
        },
    )
    .expect("open stream");
    for i in 0..N {
        // Sizes vary from 4 bytes to several blocks.
        let mut m = vec![0u8; 4 + (i as usize * 37) % 3000];
        m[..4].copy_from_slice(&i.to_be_bytes());
        conn.send(3, &m).await.expect("send");
    }
    tokio::time::timeout(Duration::from_secs(30), done_rx)
        .await
        .expect("all messages within 30 s")
        .expect("callback alive");
    let v = seen.lock().expect("not poisoned").clone();
    assert_eq!(v, (0..N).collect::<Vec<_>>());
    // Nothing of stream 3 reached the inbox.
    assert!(sconn.try_recv().is_none());
    conn.close().await;
}

async fn echo_server(server: Endpoint) {
    while let Some(conn) = server.accept().await {
        tokio::spawn(async move {
            while let Some((s, b)) = conn.recv().await {
                if conn.send(s, &b).await.is_err() {
                    break;
                }
            }
            conn.closed().await;
        });
    }
}

async fn echo_once(conn: &Connection, n: usize, tag: u8) {
    let msg = vec![tag; n];
    conn.send(2, &msg).await.expect("send");
    let (s, b) = conn.recv().await.expect("echo");
    assert_eq!(s, 2);
    assert_eq!(&b[..], &msg[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_and_reopen() {
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind");
    let addr = server.local_addr();
    let srv_stats = Arc::new(server);
    let srv = srv_stats.clone();
    // The server endpoint is shared: accept through a clone of the Arc.
    tokio::spawn(async move {
        while let Some(conn) = srv.accept().await {
            tokio::spawn(async move {
                while let Some((s, b)) = conn.recv().await {
                    if conn.send(s, &b).await.is_err() {
                        break;
                    }
                }
                conn.closed().await;
            });
        }
    });
    let client = Endpoint::client(v4()).expect("bind");
    for round in 0..5u8 {
        let conn = client
            .connect(addr, ConnectionConfig::default())
            .await
            .expect("connect");
        echo_once(&conn, 10_000, round).await;
        assert_eq!(conn.close().await, peregrine::CloseReason::Local);
        assert!(conn.send(2, b"late").await.is_err(), "closed refuses sends");
    }
    assert_eq!(srv_stats.stats().core.connections_accepted, 5);
    // Every connection was released by both cores.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(client.stats().connections, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_concurrent_connections_transfer_and_close() {
    const N_CONNS: u32 = 100;
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind");
    let addr = server.local_addr();
    tokio::spawn(echo_server(server));
    let client = Arc::new(Endpoint::client(v4()).expect("bind"));
    let mut tasks = Vec::new();
    for i in 0..N_CONNS {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let conn = client
                .connect(addr, ConnectionConfig::default())
                .await
                .expect("connect");
            // 64 KiB each way, as 8 messages.
            for k in 0..8u8 {
                echo_once(&conn, 8192, (i as u8).wrapping_add(k)).await;
            }
            conn.close().await
        }));
    }
    for t in tasks {
        assert_eq!(t.await.expect("task"), peregrine::CloseReason::Local);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(client.stats().connections, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebind_moves_the_endpoint_to_a_new_socket() {
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind");
    let addr = server.local_addr();
    let server = Arc::new(server);
    let srv = server.clone();
    let remotes = Arc::new(Mutex::new(Vec::new()));
    let r2 = remotes.clone();
    tokio::spawn(async move {
        while let Some(conn) = srv.accept().await {
            r2.lock().expect("not poisoned").push(conn.remote_address());
            tokio::spawn(async move {
                while let Some((s, b)) = conn.recv().await {
                    if conn.send(s, &b).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    let client = Endpoint::client(v4()).expect("bind");
    let before = client.local_addr();
    let c1 = client
        .connect(addr, ConnectionConfig::default())
        .await
        .expect("connect");
    echo_once(&c1, 3000, 1).await;
    c1.close().await;
    let after = client.rebind(v4()).expect("rebind");
    assert_ne!(before.port(), after.port());
    assert_eq!(client.local_addr(), after);
    let c2 = client
        .connect(addr, ConnectionConfig::default())
        .await
        .expect("connect after rebinding");
    echo_once(&c2, 3000, 2).await;
    c2.close().await;
    // Exactly two accepts: the START after `rebind` never leaves from the
    // old socket (it once did, and the server accepted a ghost).
    let seen = remotes.lock().expect("not poisoned").clone();
    assert_eq!(
        seen,
        vec![Some(before), Some(after)],
        "the server saw both sockets"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_does_not_read_slows_the_sender() {
    // Small buffers on both sides: 256 KiB to receive, 256 KiB to send.
    let config = ConnectionConfig {
        max_receive_buffer_bytes: 256 * 1024,
        max_send_buffer_bytes: 256 * 1024,
        max_message_size: 64 * 1024,
        ..ConnectionConfig::default()
    };
    let server = Endpoint::server(v4(), config.clone()).expect("bind");
    let addr = server.local_addr();
    let client = Endpoint::client(v4()).expect("bind");
    let conn = client.connect(addr, config).await.expect("connect");
    let sconn = server.accept().await.expect("accept");
    const MSG: usize = 16 * 1024;
    const COUNT: u32 = 256; // 4 MiB
    let accepted = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let sender = {
        let (conn, accepted) = (conn.clone(), accepted.clone());
        tokio::spawn(async move {
            for i in 0..COUNT {
                let mut m = vec![0u8; MSG];
                m[..4].copy_from_slice(&i.to_be_bytes());
                conn.send(1, &m).await.expect("send");
                accepted.store(i + 1, std::sync::atomic::Ordering::SeqCst);
            }
        })
    };
    // Nobody reads for half a second: the inbox fills to its limit, the
    // stream is held, the window closes and `send` stops returning.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stalled = accepted.load(std::sync::atomic::Ordering::SeqCst);
    eprintln!("accepted without a reader: {stalled}");
    // Inbox (256 KiB + one message) + core receive buffer (256 KiB) +
    // send buffer (256 KiB) hold at most ~49 messages of 16 KiB.
    assert!(
        stalled >= 16,
        "at least the send buffer's worth left: {stalled}"
    );
    assert!(
        stalled < 60,
        "the sender got {stalled} of {COUNT} messages out without a reader"
    );
    // Now read everything, in order.
    for i in 0..COUNT {
        let (s, b) = tokio::time::timeout(Duration::from_secs(20), sconn.recv())
            .await
            .expect("progress once the reader reads")
            .expect("a message");
        assert_eq!(s, 1);
        assert_eq!(u32::from_be_bytes(b[..4].try_into().expect("prefix")), i);
    }
    sender.await.expect("sender");
    conn.close().await;
}

/// Messages up to `max_message_size` arrive whole from an XX initiator
/// (the default security), whose blocks are 64 bytes shorter than its
/// responder's: the responder once bounded a message's block count by its
/// own block size and refused, silently and forever, every message within
/// about 3 % of the limit (63,000 bytes of 65,536).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_up_to_the_maximum_arrive_from_an_xx_client() {
    let cfg = ConnectionConfig {
        max_message_size: 65_536,
        ..ConnectionConfig::default()
    };
    let server = Endpoint::server(v4(), cfg.clone()).expect("bind server");
    let addr = server.local_addr();
    let client = Endpoint::client(v4()).expect("bind client");
    let conn = client.connect(addr, cfg).await.expect("connect");
    let sconn = server.accept().await.expect("a connection");
    for size in [62_000usize, 63_000, 64_000, 65_536] {
        let mut msg = vec![0u8; size];
        let mut state = size as u64 | 1;
        fill(&mut msg, &mut state);
        conn.send(1, &msg).await.expect("send");
        let got = tokio::time::timeout(Duration::from_secs(10), sconn.recv())
            .await
            .unwrap_or_else(|_| panic!("{size} bytes not delivered in 10 s: {:?}", sconn.stats()))
            .expect("open");
        assert_eq!((got.0, &got.1[..]), (1, &msg[..]), "{size}-byte message");
    }
    let stats = sconn.stats().expect("stats");
    assert_eq!(stats.protocol_errors, 0, "{stats:?}");
}

/// Issue 36: priority messages beside a saturating bulk stream, answered
/// from the server's up-call (which now runs before the turn builds its
/// own datagrams) and sent by a client whose priority datagrams end their
/// send batch. Every answer comes back, in order, and the bulk stream
/// keeps moving meanwhile. No timing is asserted (a shared machine); the
/// latency itself is measured by `bench/peers.sh` (docs/performance.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upcall_answers_priority_messages_beside_bulk() {
    let (_server, _client, conn, sconn) = connected_pair().await;
    // The server answers stream 2 from its driver's thread with the
    // message's 4-byte sequence number, and counts the bulk bytes.
    let answer = Arc::new(Mutex::new(Some(sconn.clone())));
    let a2 = answer.clone();
    sconn.on_message(2, move |s, b| {
        if let Some(c) = a2.lock().expect("not poisoned").as_ref() {
            c.try_send(s, b.slice(..4))
                .expect("room for a 4-byte answer");
        }
    });
    let bulk_bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let bb = bulk_bytes.clone();
    sconn.on_message(16, move |_, b| {
        bb.fetch_add(b.len() as u64, std::sync::atomic::Ordering::Relaxed);
    });
    const N: u32 = 300;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
    conn.on_message(2, move |_, b| {
        let _ = tx.send(u32::from_be_bytes(b[..4].try_into().expect("4 bytes")));
    });
    conn.open_stream(
        2,
        StreamConfig {
            class: 0,
            ..StreamConfig::default()
        },
    )
    .expect("open the priority stream");
    conn.open_stream(
        16,
        StreamConfig {
            class: 2,
            ..StreamConfig::default()
        },
    )
    .expect("open the bulk stream");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (bulk_conn, bulk_stop) = (conn.clone(), stop.clone());
    let bulk = tokio::spawn(async move {
        let chunk = vec![7u8; 64 * 1024];
        while !bulk_stop.load(std::sync::atomic::Ordering::Relaxed) {
            if bulk_conn.send(16, &chunk[..]).await.is_err() {
                break;
            }
        }
    });
    // Let the bulk stream fill the path first.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = bulk_bytes.load(std::sync::atomic::Ordering::Relaxed);
    for i in 0..N {
        let mut m = vec![0u8; 200];
        m[..4].copy_from_slice(&i.to_be_bytes());
        conn.send(2, &m).await.expect("send a priority message");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let mut got = Vec::new();
    while got.len() < N as usize {
        let n = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("every answer within 30 s")
            .expect("the callback is alive");
        got.push(n);
    }
    assert_eq!(got, (0..N).collect::<Vec<_>>(), "answers in order");
    let after = bulk_bytes.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        after > before,
        "the bulk stream moved while the priority messages ran ({before} -> {after} bytes)"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    bulk.abort();
    answer.lock().expect("not poisoned").take();
    conn.abort();
}
