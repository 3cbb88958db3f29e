//! Multicast groups over UDP (issue 29, items 1 and 3), over real
//! loopback sockets: a source fans a group's messages out over its
//! members' connections; one receiver is a member throughout, one joins
//! late and one leaves mid-stream. Each gets every group message sent
//! while it was a member — the range the source reports in
//! `MemberJoined { first_seq }` / `MemberLeft { end_seq }` — exactly once
//! and in order, through the three receive interfaces (`recv_on`, `recv`,
//! the `on_message` up-call).

use peregrine::{
    Connection, ConnectionConfig, ConnectionEvent, Endpoint, Error, GroupError, GroupEvent,
    GroupRequestError, DEFAULT_GROUP_STREAM,
};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{timeout, Instant};

const GROUP: u32 = 0xe000_0029;
/// Group messages sent in all.
const TOTAL: u64 = 300;
const BODY_BYTES: usize = 200;

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal address")
}

/// Message `seq`: its number in the first 8 bytes, then filler derived
/// from it (so a corrupted or misplaced body is caught).
fn body(seq: u64) -> Vec<u8> {
    let mut m: Vec<u8> = (0..BODY_BYTES).map(|i| (seq as u8) ^ (i as u8)).collect();
    m[..8].copy_from_slice(&seq.to_be_bytes());
    m
}

/// The sequence number a body carries, after checking the filler.
fn seq_of(bytes: &[u8]) -> u64 {
    assert_eq!(
        bytes.len(),
        BODY_BYTES,
        "group header stripped, body intact"
    );
    let mut s = [0u8; 8];
    s.copy_from_slice(&bytes[..8]);
    let seq = u64::from_be_bytes(s);
    assert_eq!(bytes, &body(seq)[..], "body of message {seq}");
    seq
}

/// The next event that `pick` accepts, skipping others (at most `wait`).
async fn event_where<T>(
    conn: &Connection,
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

/// A receiver: its own endpoint (as a separate process would have) and
/// its connection to the source; plus the source's side of it.
async fn receiver(source: &Endpoint) -> (Endpoint, Connection, Connection) {
    let ep = Endpoint::client(v4()).expect("bind receiver");
    let conn = ep
        .connect(source.local_addr(), ConnectionConfig::default())
        .await
        .expect("connect");
    let at_source = source.accept().await.expect("accept");
    (ep, conn, at_source)
}

async fn joined(conn: &Connection) {
    event_where(conn, Duration::from_secs(10), |e| {
        matches!(e, ConnectionEvent::GroupJoined { group: GROUP }).then_some(())
    })
    .await
    .expect("GroupJoined");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_joiner_and_leaver_get_exactly_their_membership_in_order() {
    let source = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind source");
    let group = source.group(GROUP).expect("group");
    let (_ep_a, a, a_src) = receiver(&source).await;
    let (_ep_b, b, b_src) = receiver(&source).await;
    let (_ep_c, c, c_src) = receiver(&source).await;

    // C reads through the up-call.
    let c_got = Arc::new(Mutex::new(Vec::new()));
    let sink = c_got.clone();
    c.on_message(DEFAULT_GROUP_STREAM, move |stream, bytes| {
        assert_eq!(stream, DEFAULT_GROUP_STREAM);
        sink.lock().expect("lock").push(seq_of(&bytes));
    });
    a.join_group(GROUP).expect("A joins");
    c.join_group(GROUP).expect("C joins");
    joined(&a).await;
    joined(&c).await;

    // A reads per stream, B with recv (any stream), concurrently with
    // the sending.
    let reader_a = tokio::spawn({
        let a = a.clone();
        async move {
            let mut got = Vec::new();
            while let Ok(Some(m)) =
                timeout(Duration::from_secs(3), a.recv_on(DEFAULT_GROUP_STREAM)).await
            {
                got.push(seq_of(&m));
            }
            got
        }
    });
    let reader_b = tokio::spawn({
        let b = b.clone();
        async move {
            let mut got = Vec::new();
            while let Ok(Some((stream, m))) = timeout(Duration::from_secs(3), b.recv()).await {
                assert_eq!(stream, DEFAULT_GROUP_STREAM);
                got.push(seq_of(&m));
            }
            got
        }
    });

    for seq in 0..TOTAL {
        if seq == TOTAL / 3 {
            b.join_group(GROUP).expect("B joins late");
        }
        if seq == 2 * TOTAL / 3 {
            c.leave_group(GROUP).expect("C leaves mid-stream");
        }
        let admitted = timeout(Duration::from_secs(10), group.send(&body(seq)))
            .await
            .expect("send did not stall")
            .expect("send");
        assert_eq!(admitted, seq, "group sequence numbers count from 0");
        if seq % 16 == 0 {
            // Let membership changes land while messages flow.
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    joined(&b).await;
    event_where(&c, Duration::from_secs(10), |e| {
        matches!(e, ConnectionEvent::GroupLeft { group: GROUP }).then_some(())
    })
    .await
    .expect("GroupLeft");

    // The source's account of each membership.
    let mut first = BTreeMap::new();
    let mut end = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while end.is_empty() || first.len() < 3 {
        let left = deadline.saturating_duration_since(Instant::now());
        match timeout(left, group.next_event()).await {
            Ok(Some(GroupEvent::MemberJoined { member, first_seq })) => {
                first.insert(member, first_seq);
            }
            Ok(Some(GroupEvent::MemberLeft {
                member,
                first_seq,
                end_seq,
            })) => {
                assert_eq!(first.get(&member), Some(&first_seq));
                end.insert(member, end_seq);
            }
            other => panic!("unexpected group event {other:?} (joined {first:?})"),
        }
    }
    let first_a = first[&a_src.handle()];
    let first_b = first[&b_src.handle()];
    let first_c = first[&c_src.handle()];
    let end_c = end[&c_src.handle()];
    assert_eq!(first_a, 0, "A joined before the first message");
    assert_eq!(first_c, 0, "C joined before the first message");
    assert!(
        first_b > 0 && first_b < TOTAL,
        "B joined mid-stream: {first_b}"
    );
    assert!(
        (2 * TOTAL / 3..TOTAL).contains(&end_c),
        "C left mid-stream: {end_c}"
    );
    assert!(!end.contains_key(&a_src.handle()) && !end.contains_key(&b_src.handle()));

    eprintln!("memberships: A {first_a}..{TOTAL}, B {first_b}..{TOTAL}, C {first_c}..{end_c}");
    let got_a = reader_a.await.expect("reader A");
    let got_b = reader_b.await.expect("reader B");
    let got_c = c_got.lock().expect("lock").clone();
    // Exactly once, in order: the received list IS the member's range.
    assert_eq!(got_a, (first_a..TOTAL).collect::<Vec<_>>(), "A");
    assert_eq!(got_b, (first_b..TOTAL).collect::<Vec<_>>(), "B");
    assert_eq!(got_c, (first_c..end_c).collect::<Vec<_>>(), "C");
    for conn in [&a, &b, &c] {
        assert_eq!(conn.group_messages_rejected(), 0);
    }
    let stats = group.stats();
    assert_eq!(stats.messages_admitted, TOTAL);
    assert_eq!(
        stats.member_messages_sent,
        (TOTAL - first_a) + (TOTAL - first_b) + (end_c - first_c),
        "one copy per member per message"
    );
    assert_eq!(group.members().len(), 2, "A and B remain");
}

#[tokio::test]
async fn a_member_that_joined_before_the_group_existed_is_added() {
    let source = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind source");
    let (_ep, conn, at_source) = receiver(&source).await;
    conn.join_group(GROUP).expect("join");
    joined(&conn).await;
    let group = source.group(GROUP).expect("group");
    assert_eq!(group.members(), vec![at_source.handle()]);
    assert_eq!(
        group.try_next_event(),
        Some(GroupEvent::MemberJoined {
            member: at_source.handle(),
            first_seq: 0
        })
    );
    group.send(b"hello, swarm").await.expect("send");
    let got = timeout(Duration::from_secs(5), conn.recv_on(DEFAULT_GROUP_STREAM))
        .await
        .expect("in time")
        .expect("message");
    assert_eq!(&got[..], b"hello, swarm");
}

#[tokio::test]
async fn refusals_name_the_group_and_the_reason() {
    let source = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind source");
    let _group = source.group(GROUP).expect("group");
    match source.group(GROUP) {
        Err(Error::Group(GroupError::Exists { group: GROUP })) => {}
        other => panic!("a second group {GROUP} was not refused: {other:?}"),
    }
    let (_ep, conn, _at_source) = receiver(&source).await;
    conn.close().await;
    match conn.join_group(GROUP) {
        Err(
            e @ Error::Group(GroupError::Request {
                group: GROUP,
                source: GroupRequestError::NotConnected | GroupRequestError::UnknownConnection,
            }),
        ) => {
            assert!(e.to_string().contains(&GROUP.to_string()), "{e}");
        }
        other => panic!("a JOIN on a closed connection was not refused: {other:?}"),
    }
}

#[tokio::test]
async fn leaving_and_joining_again_resumes_at_the_new_membership() {
    let source = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind source");
    let group = source.group(GROUP).expect("group");
    let (_ep, conn, _at_source) = receiver(&source).await;
    let mut expected = Vec::new();
    let mut next = 0u64;
    for round in 0..2 {
        conn.join_group(GROUP).expect("join");
        joined(&conn).await;
        let first_seq = match timeout(Duration::from_secs(5), group.next_event()).await {
            Ok(Some(GroupEvent::MemberJoined { first_seq, .. })) => first_seq,
            other => panic!("round {round}: {other:?}"),
        };
        for _ in 0..20 {
            next = group.send(&body(next)).await.expect("send") + 1;
        }
        conn.leave_group(GROUP).expect("leave");
        let end_seq = match timeout(Duration::from_secs(5), group.next_event()).await {
            Ok(Some(GroupEvent::MemberLeft { end_seq, .. })) => end_seq,
            other => panic!("round {round}: {other:?}"),
        };
        expected.extend(first_seq..end_seq);
        // Sent while not a member: must not arrive.
        for _ in 0..5 {
            next = group.send(&body(next)).await.expect("send") + 1;
        }
    }
    let mut got = Vec::new();
    while let Ok(Some(m)) = timeout(
        Duration::from_millis(500),
        conn.recv_on(DEFAULT_GROUP_STREAM),
    )
    .await
    {
        got.push(seq_of(&m));
    }
    assert_eq!(got.len(), 40, "two memberships of 20 messages");
    assert_eq!(got, expected);
    assert_eq!(conn.group_messages_rejected(), 0);
}
