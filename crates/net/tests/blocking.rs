//! The blocking facade: a server thread and a client thread, no async code.

use peregrine::blocking::Endpoint;
use peregrine::{CloseReason, ConnectionConfig};
use std::time::Duration;

#[test]
fn blocking_echo_and_close() {
    let server = Endpoint::server(
        "127.0.0.1:0".parse().expect("literal"),
        ConnectionConfig::default(),
    )
    .expect("bind");
    let addr = server.local_addr();
    // A plain OS thread is the point of the blocking API.
    let srv = std::thread::Builder::new()
        .spawn(move || {
            let conn = server.accept().expect("accept");
            let mut n = 0;
            while let Some((s, b)) = conn.recv() {
                conn.send(s, &b).expect("echo");
                n += 1;
            }
            (n, conn.close())
        })
        .expect("server thread");
    let client = Endpoint::client("127.0.0.1:0".parse().expect("literal")).expect("bind");
    let conn = client
        .connect(addr, ConnectionConfig::default())
        .expect("connect");
    for i in 0..20u32 {
        let msg = vec![i as u8; 100 + 500 * i as usize];
        conn.send(5, &msg).expect("send");
        let (s, b) = conn
            .recv_timeout(Duration::from_secs(10))
            .expect("echo within 10 s");
        assert_eq!((s, &b[..]), (5, &msg[..]));
    }
    // Read before closing: the core resets its receive counters on close.
    let st = conn.stats().expect("stats");
    assert_eq!(st.messages_delivered, 20, "{st:?}");
    assert_eq!(conn.close(), CloseReason::Local);
    let (n, reason) = srv.join().expect("server thread");
    assert_eq!(n, 20);
    assert_eq!(reason, CloseReason::Remote);
}

#[test]
fn dropping_blocking_handles_still_closes_gracefully() {
    let server = Endpoint::server(
        "127.0.0.1:0".parse().expect("literal"),
        ConnectionConfig::default(),
    )
    .expect("bind");
    let addr = server.local_addr();
    let srv = std::thread::Builder::new()
        .spawn(move || {
            let conn = server.accept().expect("accept");
            let mut n = 0;
            while conn.recv().is_some() {
                n += 1;
            }
            (n, conn.close())
        })
        .expect("server thread");
    {
        let client = Endpoint::client("127.0.0.1:0".parse().expect("literal")).expect("bind");
        let conn = client
            .connect(addr, ConnectionConfig::default())
            .expect("connect");
        for i in 0..50u8 {
            conn.send(1, &[i; 10_000]).expect("send");
        }
        // Dropped here without close(): the driver finishes sending and
        // closes before the runtime goes away.
    }
    let (n, reason) = srv.join().expect("server thread");
    assert_eq!(n, 50, "every queued message was delivered");
    assert_eq!(reason, CloseReason::Remote);
}

#[test]
fn blocking_group_send_and_receive() {
    use peregrine::{GroupEvent, DEFAULT_GROUP_STREAM};
    let source = Endpoint::server(
        "127.0.0.1:0".parse().expect("literal"),
        ConnectionConfig::default(),
    )
    .expect("bind");
    let group = source.group(9).expect("group");
    let member = Endpoint::client("127.0.0.1:0".parse().expect("literal")).expect("bind");
    let conn = member
        .connect(source.local_addr(), ConnectionConfig::default())
        .expect("connect");
    let _at_source = source.accept().expect("accept");
    conn.join_group(9).expect("join");
    match group.next_event() {
        Some(GroupEvent::MemberJoined { first_seq: 0, .. }) => {}
        other => panic!("{other:?}"),
    }
    for n in 0u8..10 {
        assert_eq!(group.send(&[n; 32]).expect("send"), u64::from(n));
    }
    for n in 0u8..10 {
        let got = conn.recv().expect("message");
        assert_eq!(got, (DEFAULT_GROUP_STREAM, bytes::Bytes::from(vec![n; 32])));
    }
}
