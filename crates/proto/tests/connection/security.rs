//! Packet protection end to end over the in-memory driver: an encrypted
//! transfer, an on-path attacker injecting forged END / FIN+RESET / NACK /
//! CWIN, replaying captured datagrams and flipping bits, and the
//! negotiation rules (no silent downgrade).

use crate::write;
use peregrine_cc::Time;
use peregrine_proto::connection::*;
use peregrine_proto::crypto::{SecurityConfig, PSK_LEN};
use peregrine_proto::endpoint::{ConnectionHandle, Endpoint};
use peregrine_proto::harness::driver::{addr, Driver};
use peregrine_proto::wire::{
    datagram_checksum, BarePayload, CwinPayload, CwinReason, DatagramRepr, Flags, HeaderRepr,
    MissingPackets, NackPayload, PacketType, Payload, StartupMode, Tlv, AUTH_TAG_LEN,
};
use std::time::Duration;

const MESSAGES: usize = 200;

fn secure() -> ConnectionConfig {
    ConnectionConfig {
        startup: StartupMode::SlowStart,
        security: Some(SecurityConfig::PresharedKey([0x42; PSK_LEN])),
        ..ConnectionConfig::default()
    }
}

fn message(i: usize) -> Vec<u8> {
    let mut m = b"SECRET-PAYLOAD-".to_vec();
    m.extend_from_slice(&(i as u32).to_be_bytes());
    m.resize(40 + (i * 37) % 3000, (i % 251) as u8);
    m
}

/// Client (node 0) and server (node 1), both protected with `config`,
/// connected; returns the sim and the client's handle.
fn connected(
    client: ConnectionConfig,
    server: ConnectionConfig,
    loss: f64,
) -> (Driver, ConnectionHandle) {
    let a = Endpoint::new(EndpointConfig::default(), 11);
    let b = Endpoint::new(EndpointConfig::server(server), 12);
    let mut sim = Driver::new(vec![a, b], Duration::from_millis(10), 13);
    sim.loss = loss;
    sim.rate_bps = 20_000_000;
    let h = sim.eps[0]
        .connect(Time::ZERO, addr(1), client)
        .expect("valid config");
    sim.run_for(Duration::from_millis(100));
    (sim, h)
}

/// Sends `MESSAGES` messages client → server and runs until delivered.
fn transfer(sim: &mut Driver, h: ConnectionHandle, from: usize) {
    let mut next = from;
    while sim.now < Time::from_secs_f64(60.0) {
        while next < MESSAGES
            && sim.eps[0]
                .send_message(h, sim.now, 0, message(next))
                .is_ok()
        {
            next += 1;
        }
        sim.run_for(Duration::from_millis(20));
        if next == MESSAGES && sim.received(1).len() == MESSAGES {
            break;
        }
    }
}

fn assert_all_delivered(sim: &Driver) {
    let got = sim.received(1);
    assert_eq!(got.len(), MESSAGES);
    for (i, (n, bytes)) in got.iter().enumerate() {
        assert_eq!(*n as usize, i, "in order, exactly once");
        assert_eq!(bytes, &message(i), "message {i} intact");
    }
}

fn server_handle(sim: &Driver) -> ConnectionHandle {
    sim.eps[1].handles()[0]
}

#[test]
fn tamper_free_encrypted_transfer_is_sealed_and_delivered() {
    let (mut sim, h) = connected(secure(), secure(), 0.02);
    transfer(&mut sim, h, 0);
    assert_all_delivered(&sim);
    let c = sim.eps[0].stats(h).unwrap().security;
    let s = sim.eps[1].stats(server_handle(&sim)).unwrap().security;
    assert!(c.encrypted && s.encrypted);
    assert!(c.packets_sealed > MESSAGES as u64 / 2);
    assert!(s.packets_opened > 0 && c.packets_opened > 0);
    assert_eq!(s.auth_failures + c.auth_failures, 0);
    // Nothing of the plaintext is visible on the wire, and every
    // post-handshake datagram carries a tag.
    let needle = b"SECRET-PAYLOAD-";
    for sent in &sim.log {
        assert!(!sent.bytes.windows(needle.len()).any(|w| w == needle));
        if !sent.header.pk_type.is_handshake() {
            assert_eq!(usize::from(sent.header.total_len), sent.bytes.len());
            assert!(
                sent.bytes.len() >= peregrine_proto::crypto::aead::CLEAR_PREFIX_LEN + AUTH_TAG_LEN
            );
            assert!(
                sent.bytes.len() <= 1452,
                "sealed datagram within MAX_PACKET_SIZE"
            );
        }
    }
}

/// The header fields of the latest client → server datagram (what an
/// on-path attacker sees).
fn observed(sim: &Driver, from: usize) -> HeaderRepr {
    sim.log
        .iter()
        .rev()
        .find(|s| s.from == from && !s.header.pk_type.is_handshake())
        .map(|s| s.header)
        .expect("traffic seen")
}

fn forge(template: HeaderRepr, pk_type: PacketType, flags: Flags, payload: Payload<'_>) -> Vec<u8> {
    let mut h = HeaderRepr::new(pk_type);
    h.dest_id = template.dest_id;
    h.src_id = template.src_id;
    h.sync_no = template.sync_no;
    // The genuine packets' ST_CKS (clear on sealed ones): a forger copies
    // what it sees.
    h.flags = if template.flags.contains(Flags::ST_CKS) {
        flags | Flags::ST_CKS
    } else {
        flags
    };
    let mut buf = Vec::new();
    write(&mut buf, h, payload).expect("encodable");
    buf
}

#[test]
fn forged_end_reset_nack_cwin_are_rejected_and_counted() {
    let (mut sim, h) = connected(secure(), secure(), 0.0);
    // Half the messages, then the attack, then the rest.
    for i in 0..MESSAGES / 2 {
        sim.eps[0].send_message(h, sim.now, 0, message(i)).unwrap();
    }
    sim.run_for(Duration::from_millis(300));
    let to_server = observed(&sim, 0);
    let to_client = observed(&sim, 1);
    let mut injected = [0u64; 2];
    for pn in [1_000u32, 5, 0] {
        let bare = || Payload::Bare(BarePayload { packet_number: pn });
        let nack = || {
            Payload::Nack(NackPayload {
                packet_number: pn,
                missing_packets: vec![MissingPackets {
                    first: 0,
                    count: 50,
                }],
                missing_blocks: vec![],
            })
        };
        let cwin = || {
            Payload::Cwin(CwinPayload {
                packet_number: pn,
                window_bytes: 0,
                reason: CwinReason::HANDOVER_START,
            })
        };
        for (to, tpl) in [(1usize, to_server), (0, to_client)] {
            let from = addr(1 - to);
            let forged = [
                forge(tpl, PacketType::End, Flags::REPLY_REQ, bare()),
                forge(tpl, PacketType::Fin, Flags::REMOTE_RESET, bare()),
                forge(tpl, PacketType::Fin, Flags::EMPTY, bare()),
                forge(tpl, PacketType::Nack, Flags::EMPTY, nack()),
                forge(tpl, PacketType::Cwin, Flags::EMPTY, cwin()),
            ];
            for mut f in forged {
                // Also with a (random) tag appended, as a sealed one would be.
                sim.inject(to, from, &f);
                let len = f.len() + AUTH_TAG_LEN;
                f.extend_from_slice(&[0xa5; AUTH_TAG_LEN]);
                f[8..10].copy_from_slice(&(len as u16).to_be_bytes());
                if tpl.flags.contains(Flags::ST_CKS) {
                    let c = datagram_checksum(&f);
                    f[6..8].copy_from_slice(&c.to_be_bytes());
                }
                sim.inject(to, from, &f);
                injected[to] += 2;
            }
        }
    }
    transfer(&mut sim, h, MESSAGES / 2);
    assert_all_delivered(&sim);
    assert!(
        sim.closed(0).is_none() && sim.closed(1).is_none(),
        "no forged teardown"
    );
    assert!(!sim.saw(1, |e| matches!(e, Event::PeerClosed)));
    let c = sim.eps[0].stats(h).unwrap();
    let s = sim.eps[1].stats(server_handle(&sim)).unwrap();
    // Each forged datagram is rejected exactly once: short ones as
    // malformed, stale packet numbers by the replay window, the rest by
    // the tag.
    let rejected = |x: peregrine_proto::crypto::SecurityStats| {
        x.auth_failures + x.replays_dropped + x.malformed_dropped
    };
    assert_eq!(rejected(s.security), injected[1]);
    assert_eq!(rejected(c.security), injected[0]);
    assert!(s.security.auth_failures > 0 && s.security.malformed_dropped > 0);
    let e = sim.eps[1].endpoint_stats();
    assert_eq!(
        e.auth_failures + e.replays_dropped,
        s.security.auth_failures + s.security.replays_dropped
    );
    assert_eq!(s.nacks_received, 0, "no forged NACK reached recovery");
    assert_eq!(s.state, ConnectionState::Connected);
    // Past the threshold the application hears about it.
    assert!(sim.saw(1, |e| matches!(
        e,
        Event::SecurityViolation {
            kind: ViolationKind::Unauthenticated,
            ..
        }
    )));
}

#[test]
fn replay_of_every_captured_datagram_is_dropped() {
    let (mut sim, h) = connected(secure(), secure(), 0.0);
    transfer(&mut sim, h, 0);
    assert_all_delivered(&sim);
    let captured: Vec<_> = sim
        .log
        .iter()
        .filter(|s| s.from == 0 && !s.header.pk_type.is_handshake())
        .map(|s| s.bytes.clone())
        .collect();
    assert!(captured.len() > 50);
    let before = sim.eps[1].stats(server_handle(&sim)).unwrap().security;
    for bytes in &captured {
        sim.inject(1, addr(0), bytes);
    }
    let after = sim.eps[1].stats(server_handle(&sim)).unwrap().security;
    assert_eq!(
        after.replays_dropped - before.replays_dropped,
        captured.len() as u64
    );
    assert_eq!(after.packets_opened, before.packets_opened);
    assert_eq!(sim.received(1).len(), MESSAGES, "nothing delivered twice");
    assert_eq!(
        sim.eps[1].endpoint_stats().replays_dropped,
        captured.len() as u64
    );
}

#[test]
fn tamper_bit_flips_and_truncations_in_flight_are_rejected() {
    let (mut sim, h) = connected(secure(), secure(), 0.0);
    for i in 0..MESSAGES / 2 {
        sim.eps[0].send_message(h, sim.now, 0, message(i)).unwrap();
    }
    sim.run_for(Duration::from_millis(50));
    let captured: Vec<Vec<u8>> = sim
        .log
        .iter()
        .filter(|s| s.from == 0 && s.header.pk_type == PacketType::Data)
        .map(|s| s.bytes.clone())
        .take(20)
        .collect();
    assert!(!captured.is_empty());
    let mut flipped = 0u64;
    for (k, bytes) in captured.iter().enumerate() {
        // A flip past the header with the checksum fixed up: only the tag
        // can catch it.
        let mut bad = bytes.clone();
        let at = 24 + (k * 13) % (bad.len() - 24);
        bad[at] ^= 1 << (k % 8);
        bad[6..8].copy_from_slice(&[0, 0]);
        let c = datagram_checksum(&bad);
        bad[6..8].copy_from_slice(&c.to_be_bytes());
        sim.inject(1, addr(0), &bad);
        flipped += 1;
        // Truncations are malformed (length/checksum) before any crypto.
        sim.inject(1, addr(0), &bytes[..bytes.len() - 1 - k % 16]);
    }
    transfer(&mut sim, h, MESSAGES / 2);
    // Every original arrived too; delivery intact.
    let got = sim.received(1);
    for (i, (n, bytes)) in got.iter().enumerate() {
        assert_eq!(*n as usize, i);
        assert_eq!(bytes, &message(i));
    }
    let s = sim.eps[1].stats(server_handle(&sim)).unwrap().security;
    // A tampered copy that arrives after its original is caught by the
    // replay window first; either way it never opens.
    assert_eq!(s.auth_failures + s.replays_dropped, flipped);
    assert_eq!(s.malformed_dropped, captured.len() as u64);
}

#[test]
fn unencrypted_mode_sends_no_security_tlv_and_no_tag() {
    let plain = ConnectionConfig {
        startup: StartupMode::SlowStart,
        ..ConnectionConfig::default()
    };
    let (mut sim, h) = connected(plain.clone(), plain, 0.0);
    transfer(&mut sim, h, 0);
    assert_all_delivered(&sim);
    for sent in &sim.log {
        let dg = DatagramRepr::decode(&sent.bytes).expect("in the clear");
        if let Payload::Start(s) = dg.payload {
            assert!(!s.tlvs.iter().any(|t| matches!(t, Tlv::Security(_))));
        }
    }
    assert!(!sim.eps[0].stats(h).unwrap().security.encrypted);
}

#[test]
fn forged_downgrade_is_refused_both_ways() {
    let plain = ConnectionConfig {
        startup: StartupMode::SlowStart,
        ..ConnectionConfig::default()
    };
    // A protected server rejects an unprotected client.
    let (mut sim, _) = connected(plain.clone(), secure(), 0.0);
    sim.run_for(Duration::from_secs(1));
    assert!(sim.eps[1].handles().is_empty());
    assert_eq!(sim.eps[1].endpoint_stats().rejects_sent, 1);
    assert!(!sim.saw(0, |e| matches!(e, Event::Connected)));
    // A protected client refuses an unprotected answer: it drops it
    // (counted) and gives up at the handshake timeout.
    let (mut sim, h) = connected(secure(), plain, 0.0);
    sim.run_for(Duration::from_secs(11));
    assert!(!sim.saw(0, |e| matches!(e, Event::Connected)));
    assert!(matches!(
        sim.closed(0),
        Some(Event::Closed {
            reason: CloseReason::HandshakeTimeout,
            ..
        })
    ));
    assert!(sim.eps[0].stats(h).unwrap().security.handshake_failures >= 1);
}
