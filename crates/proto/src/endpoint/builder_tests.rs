//! The packet builder's report (`send_helpers::Written`) against a decode
//! of the bytes it wrote, on real connections: the sealer and the tracer
//! use the report instead of reading the header back, so it must be
//! exactly what a decoder would find. Unit test: it reaches into the
//! endpoint's connection set to poll a connection directly.

use super::integrity_tests::{addr, pump};
use super::Endpoint;
use crate::connection::{ConnectionConfig, EndpointConfig};
use crate::crypto::SecurityConfig;
use crate::endpoint::ConnectionHandle;
use crate::io::SansIo;
use crate::send_helpers::Written;
use crate::wire::{DatagramRepr, PacketType, HEADER_LEN};
use crate::Time;
use std::collections::BTreeSet;
use std::time::Duration;

/// Checks `w` against a decode of `buf` (plaintext, as built); returns
/// its packet type.
fn check(w: &Written, buf: &[u8], expected_pn: Option<u64>) -> PacketType {
    assert_eq!(w.len(), buf.len(), "length");
    let dg = DatagramRepr::decode(buf).expect("the builder writes valid datagrams");
    assert_eq!(w.header, dg.header, "header, TOTAL_LEN and CHKSUM included");
    assert_eq!(w.payload_len, buf.len() - HEADER_LEN);
    assert_eq!(
        w.packet_number.map(|pn| pn as u32),
        dg.payload.packet_number(),
        "{:?}: packet number",
        w.pk_type()
    );
    if w.packet_number.is_some() {
        assert_eq!(w.packet_number, expected_pn, "consecutive numbers");
    }
    w.pk_type()
}

/// Polls the connection `h` of `ep` directly (no sealing) until it has
/// nothing more, checking every report; the types seen.
fn drain(ep: &mut Endpoint, h: ConnectionHandle, now: Time) -> BTreeSet<u8> {
    let mut seen = BTreeSet::new();
    let mut buf = Vec::new();
    let c = ep.connections.get_untracked(&h).expect("the connection");
    // Nothing else takes packet numbers meanwhile: each is the last + 1.
    let mut last: Option<u64> = None;
    for _ in 0..10_000 {
        let Some(w) = c.poll_transmit(now, &mut buf) else {
            break;
        };
        let expected = last.map_or(w.packet_number, |l| Some(l + 1));
        seen.insert(check(&w, &buf, expected).code());
        last = w.packet_number.or(last);
    }
    seen
}

fn run(security: Option<SecurityConfig>) {
    let cfg = ConnectionConfig {
        security,
        checksum: true,
        ..ConnectionConfig::default()
    };
    // START, as a fresh client builds it.
    {
        let mut a = Endpoint::new(EndpointConfig::default(), 7);
        let h = a.connect(Time::ZERO, addr(1), cfg.clone()).unwrap();
        let mut buf = Vec::new();
        let c = a.connections.get_untracked(&h).unwrap();
        let w = c.poll_transmit(Time::ZERO, &mut buf).expect("START");
        assert_eq!(check(&w, &buf, None), PacketType::Start);
        assert_eq!(w.packet_number, None);
    }
    let mut a = Endpoint::new(EndpointConfig::default(), 1);
    let mut b = Endpoint::new(EndpointConfig::server(cfg.clone()), 2);
    let h = a.connect(Time::ZERO, addr(1), cfg).unwrap();
    let mut now = Time::ZERO;
    for _ in 0..20 {
        now += Duration::from_millis(5);
        a.handle_timeout(now);
        b.handle_timeout(now);
        pump(&mut a, &mut b, now);
    }
    let hb = std::iter::from_fn(|| b.poll_event())
        .map(|(h, _)| h)
        .next()
        .expect("the server's connection");
    // The server owes ACKs for what it received through the endpoint.
    a.send_message(h, now, 0, &[8; 5_000]).unwrap();
    let mut buf = Vec::new();
    while let Some(t) = a.poll_transmit(now, &mut buf) {
        b.handle_datagram(now, addr(0), None, &mut buf[..t.size]);
    }
    let seen = drain(&mut b, hb, now + Duration::from_millis(50));
    assert!(seen.contains(&PacketType::Ack.code()), "{seen:?}");
    // DATA, several datagrams' worth (never delivered: they stay in
    // flight, and the loss timer resends them below).
    a.send_message(h, now, 0, &[7; 8_000]).unwrap();
    let seen = drain(&mut a, h, now);
    assert!(seen.contains(&PacketType::Data.code()), "{seen:?}");
    // The close handshake's bare packets, once everything is delivered.
    for _ in 0..400 {
        now += Duration::from_millis(5);
        a.handle_timeout(now);
        b.handle_timeout(now);
        pump(&mut a, &mut b, now);
    }
    a.close(h, now);
    let seen = drain(&mut a, h, now);
    assert!(
        seen.contains(&PacketType::End.code()) || seen.contains(&PacketType::Fin.code()),
        "{seen:?}"
    );
}

#[test]
fn the_builders_report_matches_a_decode_of_its_bytes_plain() {
    run(None);
}

#[test]
fn the_builders_report_matches_a_decode_of_its_bytes_sealed() {
    run(Some(SecurityConfig::PresharedKey([5; 32])));
}
