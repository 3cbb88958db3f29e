//! Every event reaches the application (issue 21, item 6), over real
//! loopback sockets: abandoned messages to their sender (by id, as an
//! event and as the outcome of a tracked send), the peer's reset, path
//! migration, security violations, link-hint effects with RTW-TCP holding
//! its window through an announced outage; per-stream receive; and
//! per-stream send buffers, so a bulk stream cannot keep a control
//! stream's message from being queued.

use peregrine::{
    AbandonReason, CcConfig, CloseReason, ConnectionConfig, ConnectionEvent, Endpoint, HintEffect,
    LinkHint, LinkHintKind, MessageOutcome, SendError, StreamConfig, ViolationKind, WindowTarget,
    DEFAULT_STREAM_SEND_BUFFER_BYTES,
};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::time::{timeout, Instant};

#[path = "support/relay.rs"]
mod relay;

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal address")
}

/// A connected pair: (server endpoint, client endpoint, client side,
/// server side), with `config` on the client.
async fn pair(
    config: ConnectionConfig,
) -> (
    Endpoint,
    Endpoint,
    peregrine::Connection,
    peregrine::Connection,
) {
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind server");
    let client = Endpoint::client(v4()).expect("bind client");
    let conn = client
        .connect(server.local_addr(), config)
        .await
        .expect("connect");
    let sconn = server.accept().await.expect("accept");
    (server, client, conn, sconn)
}

/// The next event that `pick` accepts, skipping others (at most `wait`).
async fn event_where<T>(
    conn: &peregrine::Connection,
    wait: Duration,
    mut pick: impl FnMut(&ConnectionEvent) -> Option<T>,
) -> Option<T> {
    let end = Instant::now() + wait;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let ev = timeout(left, conn.next_event()).await.ok()??;
        if let Some(t) = pick(&ev) {
            return Some(t);
        }
    }
}

/// A message whose deadline passes while the receiver's window is closed
/// is abandoned: its sender gets `MessageAbandoned` with the id `send`
/// returned, and a tracked send's outcome says so; a tracked message the
/// peer acknowledges settles as `Acknowledged`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_message_is_reported_to_its_sender_by_id() {
    let (_s, _c, conn, sconn) = pair(ConnectionConfig::default()).await;
    // Something acknowledged first (the tracked path for success).
    let ok = conn
        .send_tracked(1, b"first".to_vec(), None)
        .await
        .expect("send");
    assert_eq!(
        timeout(Duration::from_secs(5), ok.outcome()).await,
        Ok(MessageOutcome::Acknowledged)
    );
    // The receiver closes its window: nothing new can leave the sender.
    assert!(sconn.set_receive_window(WindowTarget::Connection, 0));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let id = conn
        .send_with_deadline(1, vec![7u8; 1000], Duration::from_millis(50))
        .await
        .expect("send");
    let tracked = conn
        .send_tracked(1, vec![8u8; 1000], Some(Duration::from_millis(50)))
        .await
        .expect("send");
    let tracked_id = tracked.id();
    assert_eq!(tracked_id.stream, 1);
    assert_eq!(tracked_id.number, id.number + 1);
    assert_eq!(
        timeout(Duration::from_secs(5), tracked.outcome()).await,
        Ok(MessageOutcome::Abandoned(AbandonReason::DeadlineExpired))
    );
    let mut abandoned = Vec::new();
    while abandoned.len() < 2 {
        let got = event_where(&conn, Duration::from_secs(5), |ev| match ev {
            ConnectionEvent::MessageAbandoned { id, reason } => Some((*id, *reason)),
            _ => None,
        })
        .await
        .expect("both abandoned messages reported");
        abandoned.push(got);
    }
    assert_eq!(
        abandoned,
        [
            (id, AbandonReason::DeadlineExpired),
            (tracked_id, AbandonReason::DeadlineExpired)
        ]
    );
    assert!(sconn.set_receive_window(WindowTarget::Connection, u64::MAX));
    assert_eq!(conn.events_dropped(), 0);
}

/// The peer's abort reaches the application as `NetworkReset`, then
/// `Closed` with reason `Reset`, then the event stream ends; a tracked
/// message left unacknowledged is reported undelivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_and_the_close_reach_the_application() {
    let (_s, _c, conn, sconn) = pair(ConnectionConfig::default()).await;
    // The client's message can never be acknowledged: the server's window
    // is closed, then the server aborts.
    assert!(sconn.set_receive_window(WindowTarget::Connection, 0));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stuck = conn
        .send_tracked(2, vec![1u8; 4000], None)
        .await
        .expect("send");
    sconn.abort();
    let mut seen = Vec::new();
    while let Ok(Some(ev)) = timeout(Duration::from_secs(5), conn.next_event()).await {
        seen.push(ev);
    }
    assert!(
        seen.contains(&ConnectionEvent::NetworkReset),
        "events: {seen:?}"
    );
    let closed = seen.last().expect("some events");
    assert!(
        matches!(closed, ConnectionEvent::Closed { reason: CloseReason::Reset, undelivered } if undelivered.contains(&stuck.id())),
        "last event: {closed:?}"
    );
    assert_eq!(
        stuck.try_outcome(),
        Some(MessageOutcome::Undelivered(CloseReason::Reset))
    );
    // After `Closed`, the stream of events is over.
    assert_eq!(conn.next_event().await, None);
}

/// A real rebinding of the client: the server's application hears
/// `PathMigrated` from the old address to the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_migration_is_reported() {
    let (_s, client, conn, sconn) = pair(ConnectionConfig::default()).await;
    let before = client.local_addr();
    conn.send(1, b"before".to_vec()).await.expect("send");
    assert_eq!(
        timeout(Duration::from_secs(5), sconn.recv()).await,
        Ok(Some((1, peregrine::Bytes::from_static(b"before"))))
    );
    let after = client.rebind(v4()).expect("rebind");
    conn.send(1, b"after".to_vec()).await.expect("send");
    let moved = event_where(&sconn, Duration::from_secs(5), |ev| match ev {
        ConnectionEvent::PathMigrated { from, to, .. } => Some((*from, *to)),
        _ => None,
    })
    .await
    .expect("PathMigrated");
    assert_eq!(moved, (before, after));
}

/// Replayed datagrams (an on-path relay duplicates every sealed datagram
/// towards the server) are dropped, counted and reported to the server's
/// application as `SecurityViolation { Unauthenticated }`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_datagrams_are_reported_as_security_violations() {
    use relay::{pass, Dir};
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind server");
    let relay = relay::relay(
        server.local_addr(),
        Box::new(|dir, dg, armed, _rng| {
            let mut out = pass(dg);
            if armed && dir == Dir::ToServer {
                out.push((dg.to_vec(), true));
            }
            out
        }),
        1,
    )
    .await;
    let client = Endpoint::client(v4()).expect("bind client");
    let conn = client
        .connect(relay.addr, ConnectionConfig::default())
        .await
        .expect("connect");
    let sconn = server.accept().await.expect("accept");
    conn.send(1, b"hello".to_vec()).await.expect("send");
    timeout(Duration::from_secs(5), sconn.recv())
        .await
        .expect("first message")
        .expect("open");
    relay.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    // One message at a time, each read before the next is sent: each
    // leaves in a datagram of its own, duplicated by the relay (the first
    // report comes at the 4th failure, AUTH_FAILURE_THRESHOLD).
    for i in 0..16u8 {
        conn.send(1, vec![i; 100]).await.expect("send");
        timeout(Duration::from_secs(5), sconn.recv())
            .await
            .expect("delivered")
            .expect("open");
    }
    let count = event_where(&sconn, Duration::from_secs(5), |ev| match ev {
        ConnectionEvent::SecurityViolation {
            kind: ViolationKind::Unauthenticated,
            count,
        } => Some(*count),
        _ => None,
    })
    .await
    .expect("SecurityViolation reported");
    assert!(count >= 1);
    assert!(relay.injected(Dir::ToServer) >= count);
}

/// `recv_on(stream)` returns only that stream's messages, in order, while
/// `recv` returns the others: each message once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recv_on_reads_one_stream_and_recv_the_rest() {
    let (_s, _c, conn, sconn) = pair(ConnectionConfig::default()).await;
    for i in 0..50u32 {
        conn.send(1 + (i % 2) as u16, i.to_be_bytes().to_vec())
            .await
            .expect("send");
    }
    let number = |b: &[u8]| u32::from_be_bytes(b.try_into().expect("4 bytes"));
    let mut evens = Vec::new();
    while evens.len() < 25 {
        let b = timeout(Duration::from_secs(5), sconn.recv_on(1))
            .await
            .expect("progress")
            .expect("open");
        evens.push(number(&b));
    }
    assert_eq!(evens, (0..50).step_by(2).collect::<Vec<_>>());
    let mut odds = Vec::new();
    while odds.len() < 25 {
        let (s, b) = timeout(Duration::from_secs(5), sconn.recv())
            .await
            .expect("progress")
            .expect("open");
        assert_eq!(s, 2, "stream 1 was read to the end by recv_on");
        odds.push(number(&b));
    }
    assert_eq!(odds, (1..50).step_by(2).collect::<Vec<_>>());
    assert_eq!(sconn.try_recv(), None);
    assert_eq!(sconn.try_recv_on(1), None);
}

/// A bulk stream that fills its own send buffer (the receiver's window is
/// closed, so nothing is acknowledged) leaves room in the connection's:
/// a control stream's `send` completes at once, and its message arrives
/// before the bulk backlog once the window reopens. With one 16 MiB
/// buffer shared by all streams (before issue 21) the control `send`
/// waited for the bulk stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_bulk_stream_does_not_hold_up_a_control_stream() {
    const BULK: u16 = 10;
    const CONTROL: u16 = 1;
    let (_s, _c, conn, sconn) = pair(ConnectionConfig::default()).await;
    conn.open_stream(
        BULK,
        StreamConfig {
            class: 3,
            ..StreamConfig::default()
        },
    )
    .expect("bulk stream");
    conn.open_stream(
        CONTROL,
        StreamConfig {
            class: 0,
            ..StreamConfig::default()
        },
    )
    .expect("control stream");
    assert!(sconn.set_receive_window(WindowTarget::Connection, 0));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let chunk = peregrine::Bytes::from(vec![0xb5u8; 64 * 1024]);
    let mut queued = 0usize;
    loop {
        match conn.try_send(BULK, chunk.clone()) {
            Ok(_) => queued += chunk.len(),
            Err(peregrine::Error::Send(SendError::BufferFull)) => break,
            Err(e) => panic!("bulk send: {e}"),
        }
    }
    assert!(
        (DEFAULT_STREAM_SEND_BUFFER_BYTES - chunk.len()..=DEFAULT_STREAM_SEND_BUFFER_BYTES)
            .contains(&queued),
        "the bulk stream stops at its own limit: {queued} bytes"
    );
    // A bulk `send` now waits …
    let bulk_wait = timeout(Duration::from_millis(100), conn.send(BULK, chunk.clone())).await;
    assert!(bulk_wait.is_err(), "the full bulk stream must wait");
    // … but the control stream's does not.
    let started = Instant::now();
    let control = timeout(Duration::from_secs(2), conn.send(CONTROL, b"stop".to_vec()))
        .await
        .expect("the control send must not wait behind the bulk stream")
        .expect("send");
    let took = started.elapsed();
    eprintln!("control send took {took:?} with {queued} bulk bytes queued");
    assert_eq!(control.stream, CONTROL);
    assert!(sconn.set_receive_window(WindowTarget::Connection, u64::MAX));
    let first_control = timeout(Duration::from_secs(10), sconn.recv_on(CONTROL))
        .await
        .expect("control message delivered")
        .expect("open");
    assert_eq!(&first_control[..], b"stop");
}

/// Link hints through the runtime: an RTW-TCP sender in mid-transfer is
/// told of a 150 ms blockage. It holds its window — the same cwnd in
/// `stats()` during the outage, the controller "frozen", only probes
/// sent — and resumes at that window when the link answers; the
/// application sees `LinkHintApplied { WindowHeld }`, `SendWindowHeld`
/// and `SendWindowReleased { reduced: false }`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rtw_tcp_holds_its_window_through_an_announced_outage() {
    // The pro-active freeze is an extension (seed 004 holds only on a loss).
    let cc = CcConfig::RtwTcp(peregrine_cc::algos::rtwtcp::RtwTcpConfig::with_extensions());
    let config = ConnectionConfig {
        cc,
        ..ConnectionConfig::default()
    };
    let (_s, _c, conn, sconn) = pair(config).await;
    let reader = tokio::spawn(async move { while sconn.recv().await.is_some() {} });
    let writer = {
        let conn = conn.clone();
        tokio::spawn(async move {
            let chunk = peregrine::Bytes::from(vec![0x3cu8; 16 * 1024]);
            while conn.send(1, chunk.clone()).await.is_ok() {}
        })
    };
    // Let the window grow past its initial value.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let s0 = conn.stats().expect("stats");
    assert_eq!(s0.controller_mode, Some("normal"));
    const OUTAGE: Duration = Duration::from_millis(150);
    conn.link_hint(&LinkHint {
        kind: LinkHintKind::Blockage,
        issued_at: peregrine_proto::Time::ZERO, // stamped by the runtime
        predicted_duration: Some(OUTAGE),
        cqi: None,
        speed_mps: None,
    });
    let hinted_at = Instant::now();
    let applied = event_where(&conn, Duration::from_secs(2), |ev| match ev {
        ConnectionEvent::LinkHintApplied {
            kind,
            effect,
            cwnd_bytes,
        } => Some((*kind, *effect, *cwnd_bytes)),
        _ => None,
    })
    .await
    .expect("LinkHintApplied");
    assert_eq!(applied.0, LinkHintKind::Blockage);
    assert_eq!(applied.1, HintEffect::WindowHeld);
    let held = event_where(&conn, Duration::from_secs(1), |ev| match ev {
        ConnectionEvent::SendWindowHeld { cwnd_bytes } => Some(*cwnd_bytes),
        _ => None,
    })
    .await
    .expect("SendWindowHeld");
    assert_eq!(held, applied.2);
    // During the outage: the window is kept and nothing but probes leaves.
    let during_a = conn.stats().expect("stats");
    tokio::time::sleep(Duration::from_millis(60)).await;
    let during_b = conn.stats().expect("stats");
    assert!(hinted_at.elapsed() < OUTAGE, "checked inside the outage");
    assert_eq!(during_a.controller_mode, Some("frozen"));
    assert_eq!(during_b.controller_mode, Some("frozen"));
    assert_eq!(during_a.cwnd_bytes, held);
    assert_eq!(during_b.cwnd_bytes, held);
    let sent_during = during_b.packets_sent - during_a.packets_sent;
    assert!(sent_during <= 3, "only probes: {sent_during} packets");
    let (held_for, after_cwnd, reduced) =
        event_where(&conn, Duration::from_secs(3), |ev| match ev {
            ConnectionEvent::SendWindowReleased {
                held_for,
                cwnd_bytes,
                reduced,
            } => Some((*held_for, *cwnd_bytes, *reduced)),
            _ => None,
        })
        .await
        .expect("SendWindowReleased");
    eprintln!(
        "cwnd before the hint {} B, held {held} B for {held_for:?}, after {after_cwnd} B; \
         {sent_during} packets in 60 ms of the outage",
        s0.cwnd_bytes
    );
    assert!(!reduced);
    assert!(held_for >= OUTAGE, "held for {held_for:?}");
    assert_eq!(after_cwnd, held, "resumes at the held window");
    // And the transfer goes on.
    let p0 = conn.stats().expect("stats").packets_sent;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = conn.stats().expect("stats");
    assert_eq!(after.controller_mode, Some("normal"));
    assert!(after.packets_sent > p0 + 10, "sending resumed");
    writer.abort();
    reader.abort();
}

/// The blocking facade mirrors the event, per-stream and tracked-send API.
#[test]
fn the_blocking_api_mirrors_events_recv_on_and_tracked_sends() {
    use peregrine::blocking;
    let server = blocking::Endpoint::server(v4(), ConnectionConfig::default()).expect("bind");
    let client = blocking::Endpoint::client(v4()).expect("bind");
    let conn = client
        .connect(server.local_addr(), ConnectionConfig::default())
        .expect("connect");
    let sconn = server.accept().expect("accept");
    let d = conn
        .send_tracked(4, b"tracked".to_vec(), None)
        .expect("send");
    assert_eq!(d.outcome(), MessageOutcome::Acknowledged);
    conn.send(5, b"other".to_vec()).expect("send");
    assert_eq!(
        sconn.recv_on_timeout(5, Duration::from_secs(5)).as_deref(),
        Some(&b"other"[..])
    );
    assert_eq!(
        sconn.recv_on_timeout(4, Duration::from_secs(5)).as_deref(),
        Some(&b"tracked"[..])
    );
    assert_eq!(sconn.try_next_event(), None);
    conn.close();
    let mut last = None;
    while let Some(ev) = sconn.next_event_timeout(Duration::from_secs(5)) {
        last = Some(ev);
    }
    assert!(
        matches!(
            last,
            Some(ConnectionEvent::Closed {
                reason: CloseReason::Remote,
                ..
            })
        ),
        "{last:?}"
    );
}
