//! Integrity once (docs/protocol.md §1): a plain datagram is checksummed
//! once when sent and once when received, a sealed one never. This test
//! reads the checksum counter, which exists only in this crate's unit
//! test build (`wire::checksum::calls`, `#[cfg(test)]`): counting in the
//! library proper would cost a thread-local update per datagram, so it
//! stays a unit test, driving two endpoints by hand (no harness). Its
//! sibling end-to-end AEAD tests are in `tests/connection/aead.rs`.

use super::Endpoint;
use crate::connection::{ConnectionConfig, EndpointConfig, Event};
use crate::crypto::{NoiseConfig, NoisePattern, SecurityConfig, StaticKeypair};
use crate::io::SansIo;
use crate::wire::StartupMode;
use crate::Time;
use std::net::SocketAddr;
use std::time::Duration;

/// Endpoint `i`'s address (endpoint 0 connects to endpoint 1).
pub(super) fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, (i + 1) as u8], 4000))
}

/// Moves datagrams both ways at `now` until neither side has any (at
/// most 50 rounds).
pub(super) fn pump(a: &mut Endpoint, b: &mut Endpoint, now: Time) {
    let mut buf = Vec::new();
    for _ in 0..50 {
        let mut moved = false;
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            b.handle_datagram(now, addr(0), None, &mut buf[..t.size]);
            moved = true;
        }
        while let Some(t) = b.poll_transmit(now, &mut buf) {
            a.handle_datagram(now, addr(1), None, &mut buf[..t.size]);
            moved = true;
        }
        if !moved {
            break;
        }
    }
}

fn kp(b: u8) -> StaticKeypair {
    StaticKeypair::from_private([b; 32])
}

fn cfg(security: Option<SecurityConfig>) -> ConnectionConfig {
    ConnectionConfig {
        startup: StartupMode::SlowStart,
        security,
        ..ConnectionConfig::default()
    }
}

/// One DATA datagram sent and received on an established connection:
/// how many checksums that took (this thread's counter).
fn checksums_per_datagram(c: ConnectionConfig, s: ConnectionConfig) -> u64 {
    let mut a = Endpoint::new(EndpointConfig::default(), 1);
    let mut b = Endpoint::new(EndpointConfig::server(s), 2);
    let h = a.connect(Time::ZERO, addr(1), c).unwrap();
    let mut now = Time::ZERO;
    let mut buf = Vec::new();
    for _ in 0..100 {
        now += Duration::from_millis(5);
        a.handle_timeout(now);
        b.handle_timeout(now);
        pump(&mut a, &mut b, now);
    }
    assert!(a.stats(h).is_some_and(|s| s.packets_received > 0));
    while b.poll_event().is_some() {}
    a.send_message(h, now, 0, &[7; 1_000]).unwrap();
    let before = crate::wire::checksum::calls();
    let t = a.poll_transmit(now, &mut buf).expect("the DATA datagram");
    b.handle_datagram(now, addr(0), None, &mut buf[..t.size]);
    let n = crate::wire::checksum::calls() - before;
    assert!(
        std::iter::from_fn(|| b.poll_event())
            .any(|(_, e)| matches!(e, Event::MessageReceived { .. })),
        "delivered"
    );
    n
}

#[test]
fn the_checksum_runs_once_per_side_on_plain_datagrams_never_on_sealed_ones() {
    assert_eq!(
        checksums_per_datagram(cfg(None), cfg(None)),
        2,
        "plain: encode + decode"
    );
    let (ck, sk) = (kp(1), kp(2));
    for pattern in [NoisePattern::IK, NoisePattern::NNpsk0] {
        let (c, s) = match pattern {
            NoisePattern::IK => (
                SecurityConfig::Noise(NoiseConfig::ik(ck.clone(), sk.public())),
                SecurityConfig::Noise(NoiseConfig::server(sk.clone())),
            ),
            _ => (
                SecurityConfig::PresharedKey([3; 32]),
                SecurityConfig::PresharedKey([3; 32]),
            ),
        };
        assert_eq!(
            checksums_per_datagram(cfg(Some(c)), cfg(Some(s))),
            0,
            "{pattern:?}: sealed"
        );
    }
}

/// The blocks after a message's first are checked while copied into the
/// message (`Endpoint::verify_checksum`): a corrupted one is dropped and
/// counted like any datagram with a bad checksum, nothing of it is stored,
/// and its good retransmission completes the message byte for byte.
#[test]
fn a_block_checked_while_copied_is_dropped_when_corrupted_and_stored_once_right() {
    let mut a = Endpoint::new(EndpointConfig::default(), 1);
    let mut b = Endpoint::new(EndpointConfig::server(cfg(None)), 2);
    let h = a.connect(Time::ZERO, addr(1), cfg(None)).unwrap();
    let mut now = Time::ZERO;
    for _ in 0..100 {
        now += Duration::from_millis(5);
        a.handle_timeout(now);
        b.handle_timeout(now);
        pump(&mut a, &mut b, now);
    }
    while b.poll_event().is_some() {}
    let message: Vec<u8> = (0..5_000u32).map(|i| (i * 7 + i / 300) as u8).collect();
    a.send_message(h, now, 0, message.clone()).unwrap();
    let mut datagrams = Vec::new();
    let mut buf = Vec::new();
    while let Some(t) = a.poll_transmit(now, &mut buf) {
        datagrams.push(buf[..t.size].to_vec());
    }
    assert!(datagrams.len() >= 3, "a message of several blocks");
    let decode_errors = b.endpoint_stats().decode_errors;
    b.handle_datagram(now, addr(0), None, &mut datagrams[0].clone());
    // The second block, corrupted in its data (last byte).
    let mut bad = datagrams[1].clone();
    *bad.last_mut().unwrap() ^= 0x40;
    let before = crate::wire::checksum::calls();
    b.handle_datagram(now, addr(0), None, &mut bad);
    assert_eq!(crate::wire::checksum::calls() - before, 1, "summed once");
    assert_eq!(b.endpoint_stats().decode_errors, decode_errors + 1);
    // Then every block, the second again: once each is stored.
    let before = crate::wire::checksum::calls();
    let staged = crate::connection::recv::staged_stores();
    for dg in &datagrams[1..] {
        b.handle_datagram(now, addr(0), None, &mut dg.clone());
    }
    assert_eq!(
        crate::wire::checksum::calls() - before,
        datagrams.len() as u64 - 1,
        "one checksum a datagram"
    );
    assert_eq!(
        crate::connection::recv::staged_stores() - staged,
        datagrams.len() as u64 - 1,
        "every block after the first checked while copied"
    );
    let got: Vec<Vec<u8>> = std::iter::from_fn(|| b.poll_event())
        .filter_map(|(_, e)| match e {
            Event::MessageReceived { bytes, .. } => Some(bytes.to_vec()),
            _ => None,
        })
        .collect();
    assert_eq!(got, vec![message], "delivered once, intact");
    assert_eq!(b.endpoint_stats().decode_errors, decode_errors + 1);
}

/// An XX client appends its 64-byte message 3 behind every datagram until
/// the server shows it has the keys; after that the room goes back to
/// data: a bulk message's datagrams fill the connection's packet size
/// again (sealed 1,452 bytes by default), not 64 bytes less for the
/// connection's whole life (issue 36), and the message still arrives
/// whole.
#[test]
fn an_xx_clients_datagrams_grow_back_once_message_3_is_no_longer_sent() {
    let (ck, sk) = (kp(1), kp(2));
    let c = cfg(Some(SecurityConfig::Noise(NoiseConfig::xx(ck))));
    let s = cfg(Some(SecurityConfig::Noise(NoiseConfig::server(sk))));
    let max = usize::from(c.max_packet_size);
    let mut a = Endpoint::new(EndpointConfig::default(), 1);
    let mut b = Endpoint::new(EndpointConfig::server(s), 2);
    let h = a.connect(Time::ZERO, addr(1), c).unwrap();
    let mut now = Time::ZERO;
    // The handshake's two messages (START, then START-REPLY); message 3
    // rides on what the client seals next, until the server answers.
    for _ in 0..2 {
        now += Duration::from_millis(5);
        a.handle_timeout(now);
        b.handle_timeout(now);
        let mut buf = Vec::new();
        while let Some(t) = b.poll_transmit(now, &mut buf) {
            a.handle_datagram(now, addr(1), None, &mut buf[..t.size]);
        }
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            b.handle_datagram(now, addr(0), None, &mut buf[..t.size]);
        }
    }
    // Sizes of the client's datagrams carrying one 20,000-byte message,
    // each delivered (the server answers between them).
    let send = |a: &mut Endpoint, b: &mut Endpoint, now: Time, fill: u8| -> Vec<usize> {
        a.send_message(h, now, 0, &[fill; 20_000]).unwrap();
        let mut sizes = Vec::new();
        let mut buf = Vec::new();
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            sizes.push(t.size);
            b.handle_datagram(now, addr(0), None, &mut buf[..t.size]);
        }
        sizes
    };
    let first = send(&mut a, &mut b, now, 1);
    assert!(!first.is_empty(), "the first message leaves");
    // Message 3 rides behind them, in the room kept for it.
    assert!(first.iter().all(|&n| n <= max), "{first:?}");
    for _ in 0..20 {
        now += Duration::from_millis(5);
        a.handle_timeout(now);
        b.handle_timeout(now);
        pump(&mut a, &mut b, now);
    }
    let later = send(&mut a, &mut b, now, 2);
    assert!(later.len() > 1, "{later:?}");
    // Before the room came back these were max − 64 bytes (1,388).
    assert!(
        later[..later.len() - 1].iter().all(|&n| n == max),
        "full datagrams once message 3 is gone: {later:?}"
    );
    for _ in 0..20 {
        now += Duration::from_millis(5);
        a.handle_timeout(now);
        b.handle_timeout(now);
        pump(&mut a, &mut b, now);
    }
    let got: Vec<Vec<u8>> = std::iter::from_fn(|| b.poll_event())
        .filter_map(|(_, e)| match e {
            Event::MessageReceived { bytes, .. } => Some(bytes),
            _ => None,
        })
        .collect();
    assert_eq!(got, vec![vec![1; 20_000], vec![2; 20_000]]);
}
