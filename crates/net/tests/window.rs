//! The handover window and the buffer pool over real loopback sockets:
//! a receiver closes its window for a second mid-transfer and the sender
//! pauses without loss or RTO; the endpoint's memory ceiling is checked
//! at bind and reported in the stats.

use peregrine::{ConnectionConfig, Endpoint, EndpointBuilder, Error, StreamConfig, WindowTarget};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::time::Instant;

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal address")
}

const MSG: usize = 16 * 1024;

fn message(i: u32) -> Vec<u8> {
    let mut m = vec![(i % 251) as u8; MSG];
    m[..4].copy_from_slice(&i.to_be_bytes());
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_receive_window_for_a_second_pauses_without_loss_or_rto() {
    const COUNT: u32 = 512; // 8 MiB
    const CLOSE_AT: u32 = COUNT / 4;
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind server");
    let addr = server.local_addr();
    let client = Endpoint::client(v4()).expect("bind client");
    let conn = client
        .connect(addr, ConnectionConfig::default())
        .await
        .expect("connect");
    conn.open_stream(1, StreamConfig::default())
        .expect("stream");
    let sconn = server.accept().await.expect("accept");
    let sender = {
        let conn = conn.clone();
        tokio::spawn(async move {
            for i in 0..COUNT {
                conn.send(1, &message(i)).await.expect("send");
            }
        })
    };
    let mut next = 0u32;
    let check = |next: &mut u32, (s, b): (u16, peregrine::Bytes)| {
        assert_eq!(s, 1);
        assert_eq!(b.len(), MSG);
        let i = u32::from_be_bytes(b[..4].try_into().expect("4-byte prefix"));
        assert_eq!(i, *next, "in order, each once");
        assert!(
            b[4..].iter().all(|&x| x == (i % 251) as u8),
            "content of {i}"
        );
        *next += 1;
    };
    while next < CLOSE_AT {
        let m = tokio::time::timeout(Duration::from_secs(10), sconn.recv())
            .await
            .expect("progress before the pause")
            .expect("a message");
        check(&mut next, m);
    }
    // Handover: close the window for one second, keep reading what was
    // already in flight.
    assert!(sconn.set_receive_window(WindowTarget::Connection, 0));
    let closed_at = Instant::now();
    let mut late_arrivals = 0u32;
    loop {
        let left = Duration::from_secs(1).saturating_sub(closed_at.elapsed());
        if left.is_zero() {
            break;
        }
        match tokio::time::timeout(left, sconn.recv()).await {
            Ok(Some(m)) => {
                if closed_at.elapsed() > Duration::from_millis(500) {
                    late_arrivals += 1;
                }
                check(&mut next, m);
            }
            Ok(None) => panic!("connection ended during the pause"),
            Err(_) => break,
        }
    }
    let during = next - CLOSE_AT;
    eprintln!("messages in flight when the window closed: {during}");
    assert!(
        next < COUNT,
        "the pause held the transfer back ({next} read)"
    );
    assert_eq!(
        late_arrivals, 0,
        "new data arrived more than 500 ms after the window closed"
    );
    let paused = conn.stats().expect("client stats");
    assert!(
        paused.window.window_pauses >= 1,
        "the sender saw the zero window: {:?}",
        paused.window
    );
    // Reopen: the rest arrives.
    assert!(sconn.set_receive_window(WindowTarget::Connection, u64::MAX));
    while next < COUNT {
        let m = tokio::time::timeout(Duration::from_secs(20), sconn.recv())
            .await
            .expect("progress after reopening")
            .expect("a message");
        check(&mut next, m);
    }
    sender.await.expect("sender task");
    let cs = conn.stats().expect("client stats");
    let ss = sconn.stats().expect("server stats");
    eprintln!("client window {:?}, rtos {}", cs.window, cs.rtos);
    assert_eq!(cs.rtos, 0, "no retransmission timeout during the pause");
    assert_eq!(cs.packets_lost, 0, "the pause is not loss");
    assert!(cs.window.cwins_received >= 2, "closing and reopening CWINs");
    assert!(ss.window.cwins_sent >= 2);
    assert!(cs.window.window_paused >= Duration::from_millis(500));
    assert_eq!(ss.messages_delivered, u64::from(COUNT));
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_memory_ceiling_is_refused_at_bind_naming_the_field() {
    let err = EndpointBuilder::new()
        .memory_ceiling(0)
        .bind(v4())
        .expect_err("a zero ceiling cannot work");
    match err {
        Error::Config(e) => assert_eq!(e.field, "memory_ceiling_bytes"),
        other => panic!("expected a configuration error, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_ceiling_bounds_the_pool_and_the_stats_report_it() {
    const CEILING: usize = 256 * 1024;
    const COUNT: u32 = 128; // 2 MiB through a 256 KiB pool
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind server");
    let addr = server.local_addr();
    let client = EndpointBuilder::new()
        .memory_ceiling(CEILING)
        .bind(v4())
        .expect("bind client");
    let conn = client
        .connect(addr, ConnectionConfig::default())
        .await
        .expect("connect");
    let reader = tokio::spawn(async move {
        let sconn = server.accept().await.expect("accept");
        let mut n = 0u32;
        while let Some((_, b)) = sconn.recv().await {
            assert_eq!(u32::from_be_bytes(b[..4].try_into().expect("prefix")), n);
            n += 1;
        }
        n
    });
    for i in 0..COUNT {
        conn.send(1, &message(i))
            .await
            .expect("send waits for the pool");
    }
    let stats = client.stats().core;
    eprintln!("pool stats: {stats:?}");
    assert_eq!(stats.pool_ceiling_bytes, CEILING as u64);
    assert!(stats.pool_peak_bytes > 0);
    assert!(stats.pool_peak_bytes <= CEILING as u64, "{stats:?}");
    conn.close().await;
    assert_eq!(reader.await.expect("reader"), COUNT);
    assert_eq!(client.stats().core.pool_bytes_in_use, 0);
}
