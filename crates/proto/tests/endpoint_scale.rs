//! Work proportional to what is active (issue 20): with 2,000 idle
//! connections open on one server endpoint, a turn in which one of them
//! sends a message and gets it echoed visits O(1) connections in
//! `poll_transmit`, `handle_timeout`, `poll_event` and `poll_timeout` —
//! counted with the endpoint's test-only visit counter, not timed. And a
//! held stream's messages, parked by the connection instead of rescanned,
//! come out in order when released, before the peer's close. A client
//! with nothing to send proves its address at once after the handshake.
//!
//! The endpoints are driven directly over a zero-latency in-memory wire
//! (sans-IO, virtual time). Large counts belong in `peregrine bench
//! endpoint`, not here.

use peregrine_proto::wire::StartupMode;
use peregrine_proto::{
    ConnectionConfig, ConnectionHandle, Endpoint, EndpointConfig, Event, SansIo, Time,
};
use std::net::SocketAddr;
use std::time::Duration;

const CONNECTIONS: usize = 2_000;

/// Events one endpoint reported, with their connection.
type Events = Vec<(ConnectionHandle, Event)>;

fn server_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1], 4433))
}

fn client_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 2], 5000))
}

/// Run both endpoints at `now` until neither has a datagram to send;
/// the events each reported.
fn exchange(now: Time, client: &mut Endpoint, server: &mut Endpoint) -> (Events, Events) {
    let mut buf = Vec::new();
    let (mut cev, mut sev) = (Vec::new(), Vec::new());
    loop {
        let mut moved = false;
        while let Some(t) = client.poll_transmit(now, &mut buf) {
            let mut d = buf[..t.size].to_vec();
            server.handle_datagram(now, client_addr(), t.ecn, &mut d);
            moved = true;
        }
        while let Some(t) = server.poll_transmit(now, &mut buf) {
            assert_eq!(t.destination, client_addr());
            let mut d = buf[..t.size].to_vec();
            client.handle_datagram(now, server_addr(), t.ecn, &mut d);
            moved = true;
        }
        while let Some(e) = client.poll_event() {
            cev.push(e);
        }
        while let Some(e) = server.poll_event() {
            sev.push(e);
        }
        if !moved {
            return (cev, sev);
        }
    }
}

#[test]
fn a_turn_with_one_active_connection_visits_o1_connections() {
    let config = EndpointConfig::default();
    assert!(
        config.max_connections >= CONNECTIONS,
        "the default limit admits a fleet"
    );
    let mut server = Endpoint::new(EndpointConfig::server(ConnectionConfig::default()), 1);
    let mut client = Endpoint::new(EndpointConfig::default(), 2);
    let t0 = Time::ZERO;
    // Open them in waves (the half-open limit is about STARTs in flight).
    let mut handles = Vec::with_capacity(CONNECTIONS);
    for wave in 0..CONNECTIONS / 200 {
        let now = t0 + Duration::from_millis(wave as u64);
        for _ in 0..200 {
            handles.push(
                client
                    .connect(now, server_addr(), ConnectionConfig::default())
                    .expect("under the connection limit"),
            );
        }
        exchange(now, &mut client, &mut server);
    }
    assert_eq!(server.connection_count(), CONNECTIONS);
    assert_eq!(client.connection_count(), CONNECTIONS);

    // Let the handshakes' timers (ACKs, probes) settle: run both to a
    // quiet instant well before the first keep-alive.
    let mut now = t0 + Duration::from_millis(20);
    for _ in 0..200 {
        let next = [client.poll_timeout(), server.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        match next {
            Some(t) if t < t0 + Duration::from_secs(2) => {
                now = now.max(t);
                client.handle_timeout(now);
                server.handle_timeout(now);
                exchange(now, &mut client, &mut server);
            }
            _ => break,
        }
    }
    now += Duration::from_millis(10);
    let quiet_until = [client.poll_timeout(), server.poll_timeout()]
        .into_iter()
        .flatten()
        .min()
        .expect("idle connections keep a keep-alive timer");
    assert!(
        quiet_until > now + Duration::from_millis(100),
        "no timer due in the measured turn"
    );

    // The measured turn: one connection sends 1 KiB, the server echoes it.
    let before = (client.connections_visited(), server.connections_visited());
    let h = handles[CONNECTIONS / 2];
    client
        .send_message(h, now, 0, vec![7u8; 1024])
        .expect("an open connection");
    client.handle_timeout(now);
    server.handle_timeout(now);
    let (_, sev) = exchange(now, &mut client, &mut server);
    let (sh, bytes) = sev
        .into_iter()
        .find_map(|(h, e)| match e {
            Event::MessageReceived { bytes, .. } => Some((h, bytes)),
            _ => None,
        })
        .expect("the server received the message");
    server.send_message(sh, now, 0, bytes).expect("open");
    let (cev, _) = exchange(now, &mut client, &mut server);
    assert!(cev
        .iter()
        .any(|(ch, e)| *ch == h && matches!(e, Event::MessageReceived { .. })));
    client.poll_timeout();
    server.poll_timeout();
    let visited = (
        client.connections_visited() - before.0,
        server.connections_visited() - before.1,
    );
    eprintln!("visited (client, server) in the measured turn: {visited:?}");
    // A handful of polls per side, each visiting the one connection: a
    // constant, whatever the count held (a scan would visit 2,000).
    assert!(
        visited.0 <= 20 && visited.1 <= 20,
        "visited (client, server) = {visited:?} for one active connection among {CONNECTIONS}"
    );

    // Keep-alives: every connection is due in one `handle_timeout`, which
    // visits each once — work proportional to what is due.
    let before = server.connections_visited();
    let ka = server.poll_timeout().expect("a keep-alive timer");
    server.handle_timeout(ka + Duration::from_secs(6));
    let due = server.connections_visited() - before;
    assert!(
        (1..=CONNECTIONS as u64).contains(&due),
        "{due} visits for {CONNECTIONS} due connections"
    );
}

#[test]
fn held_messages_wait_in_order_and_the_close_never_overtakes_them() {
    let mut server = Endpoint::new(EndpointConfig::server(ConnectionConfig::default()), 3);
    let mut client = Endpoint::new(EndpointConfig::default(), 4);
    let mut now = Time::ZERO;
    let h = client
        .connect(now, server_addr(), ConnectionConfig::default())
        .expect("connects");
    let (_, sev) = exchange(now, &mut client, &mut server);
    let sh = sev
        .iter()
        .find(|(_, e)| *e == Event::Connected)
        .map(|(h, _)| *h)
        .expect("the server accepted");
    assert!(server.hold_stream(sh, 1, true));
    for i in 0..50u8 {
        for stream in [1u16, 2] {
            client
                .send_message(h, now, stream, vec![i; 10])
                .expect("open");
        }
    }
    client.close(h, now);
    // Run until quiet: stream 2 is delivered, stream 1 and the close wait.
    let mut got = Vec::new();
    for _ in 0..100 {
        now += Duration::from_millis(5);
        client.handle_timeout(now);
        server.handle_timeout(now);
        let (_, sev) = exchange(now, &mut client, &mut server);
        got.extend(sev);
    }
    let on = |got: &[(ConnectionHandle, Event)], s: u16| -> Vec<u8> {
        got.iter()
            .filter_map(|(_, e)| match e {
                Event::MessageReceived { stream, bytes, .. } if *stream == s => Some(bytes[0]),
                _ => None,
            })
            .collect()
    };
    assert_eq!(on(&got, 2), (0..50).collect::<Vec<_>>());
    assert!(on(&got, 1).is_empty(), "held");
    assert!(!got.iter().any(|(_, e)| *e == Event::PeerClosed));
    // Released: every held message, in order, then the close.
    assert!(server.hold_stream(sh, 1, false));
    let mut rest = Vec::new();
    while let Some(e) = server.poll_event() {
        rest.push(e);
    }
    assert_eq!(on(&rest, 1), (0..50).collect::<Vec<_>>());
    let closed_at = rest
        .iter()
        .position(|(_, e)| *e == Event::PeerClosed)
        .expect("the close comes once the messages are read");
    assert_eq!(closed_at, 50, "after every held message");
}

#[test]
fn a_client_with_nothing_to_send_answers_the_start_reply_at_once() {
    // With slow start (the default) a client sends no packet-pair probes,
    // and this one has no data either: it must still prove its address
    // right after the START-REPLY, or the server's side stays half-open —
    // amplification-limited and expired after a few RTTs, while the
    // client believes it is connected.
    for startup in [StartupMode::SlowStart, StartupMode::PacketPair] {
        let config = ConnectionConfig {
            startup,
            ..ConnectionConfig::default()
        };
        let mut server = Endpoint::new(EndpointConfig::server(config.clone()), 5);
        let mut client = Endpoint::new(EndpointConfig::default(), 6);
        let now = Time::from_millis(1);
        let h = client
            .connect(now, server_addr(), config)
            .expect("valid config");
        let (cev, _) = exchange(now, &mut client, &mut server);
        assert!(
            cev.iter()
                .any(|(ch, e)| *ch == h && matches!(e, Event::Connected)),
            "{startup:?}: connected"
        );
        assert_eq!(client.stats(h).map(|s| s.data_packets_sent), Some(0));
        let sh = server.handles()[0];
        assert_eq!(
            server.endpoint_stats().half_open,
            0,
            "{startup:?}: the server's side is no longer half-open"
        );
        assert_eq!(server.address_validated(sh), Some(true));
        // Long after any half-open expiry, with nothing exchanged since,
        // the server's side is still there.
        server.handle_timeout(now + Duration::from_secs(4));
        assert_eq!(server.endpoint_stats().half_open_expired, 0);
        assert_eq!(server.connection_count(), 1, "{startup:?}");
    }
}
