//! The driver runs on a thread of its own per endpoint ("peregrine-ep"),
//! off the application's runtime: an endpoint binds without any runtime,
//! the connections of an application on a current-thread runtime move data
//! while that runtime is busy elsewhere, dropped handles still close
//! gracefully (the queued message and the END go out from the driver's
//! thread), and the thread ends afterwards — none is left behind.
//!
//! One test in this binary, so that the count of driver threads in the
//! process is this test's alone.

use peregrine::{CloseReason, ConnectionConfig, Endpoint, StreamConfig};
use std::net::SocketAddr;
use std::time::Duration;

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal address")
}

/// Threads of this process named like an endpoint driver (Linux: from
/// /proc/self/task/*/comm; elsewhere the thread check is skipped).
fn driver_threads() -> Option<usize> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    Some(
        tasks
            .filter_map(Result::ok)
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.trim_end() == "peregrine-ep")
            })
            .count(),
    )
}

/// Wait (polling every 20 ms, about `limit` at most) until there are
/// `want` driver threads (a new thread names itself once it runs); how
/// many there are.
fn wait_for_driver_threads(want: usize, limit: Duration) -> Option<usize> {
    const POLL: Duration = Duration::from_millis(20);
    let mut polls = limit.as_millis() / POLL.as_millis();
    loop {
        let n = driver_threads()?;
        if n == want || polls == 0 {
            return Some(n);
        }
        polls -= 1;
        std::thread::sleep(POLL);
    }
}

#[test]
fn drivers_run_on_their_own_threads_close_gracefully_and_end() {
    // Bound outside any runtime: the endpoint brings its own.
    let lone = Endpoint::client(v4()).expect("bind without a runtime");
    if let Some(n) = wait_for_driver_threads(1, Duration::from_secs(5)) {
        assert_eq!(n, 1, "one driver thread per endpoint");
    }
    drop(lone);
    // Nothing to close: the driver stops at once.
    if let Some(n) = wait_for_driver_threads(0, Duration::from_secs(5)) {
        assert_eq!(n, 0, "the lone endpoint's driver thread ended");
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    rt.block_on(async {
        let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind server");
        let client = Endpoint::client(v4()).expect("bind client");
        if let Some(n) = wait_for_driver_threads(2, Duration::from_secs(5)) {
            assert_eq!(n, 2, "one driver thread per endpoint");
        }
        let addr = server.local_addr();
        let conn = client
            .connect(addr, ConnectionConfig::default())
            .await
            .expect("connect");
        let peer = server.accept().await.expect("accepted");
        conn.open_stream(1, StreamConfig::default())
            .expect("stream 1");
        conn.send(1, &[7; 300_000]).await.expect("send");
        // The application's only thread is now busy (not polling
        // anything): the drivers move the message meanwhile.
        std::thread::sleep(Duration::from_millis(200));
        // Dropped without close(): the client's driver sends what is
        // queued, closes gracefully and stops.
        drop(conn);
        drop(client);
        let (stream, bytes) = peer.recv().await.expect("the queued message");
        assert_eq!((stream, bytes.len()), (1, 300_000));
        let reason = tokio::time::timeout(Duration::from_secs(10), peer.closed())
            .await
            .expect("the close completes");
        assert_eq!(reason, CloseReason::Remote, "a graceful close by the peer");
        drop(peer);
        drop(server);
    });
    drop(rt);
    // The drivers' shutdown grace is 2 s; both must be gone well before 5.
    if let Some(n) = wait_for_driver_threads(0, Duration::from_secs(5)) {
        assert_eq!(n, 0, "no driver thread is left after the endpoints");
    }
}
