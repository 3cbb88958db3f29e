//! A source that refuses JOINs for groups it does not host (issue 29,
//! item 1, "rejected"), over real loopback sockets: with
//! `EndpointBuilder::refuse_unknown_groups(true)`, joining an unhosted
//! group yields `ConnectionEvent::GroupRejected` (and no member at the
//! source), joining a hosted one works, and a dropped group is refused
//! again. Without the option every JOIN is accepted.

use peregrine::{Connection, ConnectionConfig, ConnectionEvent, Endpoint, EndpointBuilder};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::time::{timeout, Instant};

const HOSTED: u32 = 0xe000_0029;
const UNHOSTED: u32 = 0xe000_0030;

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal address")
}

/// The first group answer for `group` (joined, rejected or left), other
/// events skipped; `None` after 10 s.
async fn answer(conn: &Connection, group: u32) -> Option<ConnectionEvent> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let ev = timeout(left, conn.next_event()).await.ok()??;
        match ev {
            ConnectionEvent::GroupJoined { group: g }
            | ConnectionEvent::GroupRejected { group: g }
            | ConnectionEvent::GroupLeft { group: g }
                if g == group =>
            {
                return Some(ev)
            }
            _ => {}
        }
    }
}

/// Every `PeerJoined` the source's side of a connection reported so far.
fn peer_joins(at_source: &Connection) -> Vec<u32> {
    let mut v = Vec::new();
    while let Some(ev) = at_source.try_next_event() {
        if let ConnectionEvent::PeerJoined { group } = ev {
            v.push(group);
        }
    }
    v
}

async fn connect(source: &Endpoint) -> (Endpoint, Connection, Connection) {
    let ep = Endpoint::client(v4()).expect("bind receiver");
    let conn = ep
        .connect(source.local_addr(), ConnectionConfig::default())
        .await
        .expect("connect");
    let at_source = source.accept().await.expect("accept");
    (ep, conn, at_source)
}

#[tokio::test]
async fn a_source_refusing_unknown_groups_rejects_them_and_accepts_its_own() {
    let source = EndpointBuilder::new()
        .server(ConnectionConfig::default())
        .refuse_unknown_groups(true)
        .bind(v4())
        .expect("bind source");
    let group = source.group(HOSTED).expect("group");
    let (_ep, conn, at_source) = connect(&source).await;

    conn.join_group(UNHOSTED).expect("join is sent");
    assert_eq!(
        answer(&conn, UNHOSTED).await,
        Some(ConnectionEvent::GroupRejected { group: UNHOSTED })
    );

    conn.join_group(HOSTED).expect("join is sent");
    assert_eq!(
        answer(&conn, HOSTED).await,
        Some(ConnectionEvent::GroupJoined { group: HOSTED })
    );
    // The member is in the hosted group only.
    let end = Instant::now() + Duration::from_secs(5);
    while group.members().is_empty() && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(group.members().len(), 1);
    assert_eq!(peer_joins(&at_source), vec![HOSTED]);

    // Once the group is dropped it is unknown again: a new JOIN (after a
    // LEAVE) is refused.
    conn.leave_group(HOSTED).expect("leave is sent");
    assert_eq!(
        answer(&conn, HOSTED).await,
        Some(ConnectionEvent::GroupLeft { group: HOSTED })
    );
    drop(group);
    conn.join_group(HOSTED).expect("join is sent");
    assert_eq!(
        answer(&conn, HOSTED).await,
        Some(ConnectionEvent::GroupRejected { group: HOSTED })
    );
    assert_eq!(peer_joins(&at_source), Vec::<u32>::new());
}

#[tokio::test]
async fn by_default_a_source_accepts_a_join_for_any_group() {
    let source = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind source");
    let _group = source.group(HOSTED).expect("group");
    let (_ep, conn, at_source) = connect(&source).await;
    conn.join_group(UNHOSTED).expect("join is sent");
    assert_eq!(
        answer(&conn, UNHOSTED).await,
        Some(ConnectionEvent::GroupJoined { group: UNHOSTED })
    );
    // The PeerJoined is queued before the answer goes out.
    assert_eq!(peer_joins(&at_source), vec![UNHOSTED]);
}
