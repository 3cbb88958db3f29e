//! Unit tests of packet protection with pre-shared keys.

use super::*;
use crate::send_helpers::write;
use crate::wire::{
    BarePayload, DatagramRepr, Flags, HeaderRepr, PacketType, Payload, AUTH_TAG_LEN,
};

const PSK: [u8; PSK_LEN] = [7; PSK_LEN];

fn pair() -> (SecurityState, SecurityState) {
    let mut c = SecurityState::new(SecurityConfig::PresharedKey(PSK), true, [1; 16]);
    let mut s = SecurityState::new(SecurityConfig::PresharedKey(PSK), false, [2; 16]);
    let (ch, sh) = (c.hello().to_vec(), s.hello().to_vec());
    c.complete(Some(&sh)).unwrap();
    s.complete(Some(&ch)).unwrap();
    (c, s)
}

/// A plaintext END datagram with packet number `pn`.
fn end(pn: u32) -> Vec<u8> {
    let mut h = HeaderRepr::new(PacketType::End);
    h.dest_id = 0x1234;
    h.src_id = 0x5678;
    h.sync_no = 0x0abc;
    h.flags = Flags::ST_CKS | Flags::REPLY_REQ;
    let mut buf = Vec::new();
    write(
        &mut buf,
        h,
        Payload::Bare(BarePayload { packet_number: pn }),
    )
    .unwrap();
    buf
}

fn sealed(c: &mut SecurityState, pn: u32) -> (Vec<u8>, Vec<u8>) {
    let plain = end(pn);
    let mut buf = plain.clone();
    let n = c.seal(&mut buf, plain.len()).unwrap();
    assert_eq!(n, plain.len() + AUTH_TAG_LEN);
    assert_eq!(buf.len(), n);
    (plain, buf)
}

#[test]
fn seal_then_open_restores_the_plaintext_datagram() {
    let (mut c, mut s) = pair();
    for pn in 0..5 {
        let (plain, wire) = sealed(&mut c, pn);
        // The sealed datagram is itself well-formed with a tag.
        let dg = DatagramRepr::decode_with_tag(&wire, AUTH_TAG_LEN).unwrap();
        assert_eq!(dg.auth_tag.len(), AUTH_TAG_LEN);
        let mut out = Vec::new();
        s.open(&wire, &mut out).unwrap();
        assert_eq!(out, plain);
        DatagramRepr::decode(&out).unwrap();
    }
    assert_eq!(c.stats.packets_sealed, 5);
    assert_eq!(s.stats.packets_opened, 5);
}

#[test]
fn tamper_every_bit_flip_is_rejected() {
    let (mut c, mut s) = pair();
    let (_, wire) = sealed(&mut c, 0);
    let mut out = Vec::new();
    let mut rejected = 0;
    for byte in 0..wire.len() {
        for bit in 0..8 {
            let mut bad = wire.clone();
            bad[byte] ^= 1 << bit;
            assert!(
                s.open(&bad, &mut out).is_err(),
                "flip {byte}.{bit} accepted"
            );
            rejected += 1;
        }
    }
    assert_eq!(
        s.stats.auth_failures + s.stats.malformed_dropped + s.stats.replays_dropped,
        rejected
    );
    assert_eq!(s.stats.packets_opened, 0);
    // The genuine packet still opens afterwards: failures moved nothing.
    s.open(&wire, &mut out).unwrap();
}

#[test]
fn tamper_with_fixed_checksum_is_unauthenticated() {
    // An attacker who recomputes the checksum still fails the tag.
    let (mut c, mut s) = pair();
    let (_, mut wire) = sealed(&mut c, 3);
    wire[12] ^= 0x40;
    let chk = crate::wire::datagram_checksum(&wire);
    wire[6..8].copy_from_slice(&chk.to_be_bytes());
    let mut out = Vec::new();
    assert_eq!(s.open(&wire, &mut out), Err(OpenError::Unauthenticated));
    assert_eq!(s.stats.auth_failures, 1);
}

#[test]
fn tamper_truncated_datagrams_are_rejected() {
    let (mut c, mut s) = pair();
    let (_, wire) = sealed(&mut c, 0);
    let mut out = Vec::new();
    for n in 0..wire.len() {
        assert!(s.open(&wire[..n], &mut out).is_err(), "truncated to {n}");
    }
    s.open(&wire, &mut out).unwrap();
}

#[test]
fn replay_of_an_opened_packet_is_dropped_and_counted() {
    let (mut c, mut s) = pair();
    let (_, a) = sealed(&mut c, 0);
    let (_, b) = sealed(&mut c, 1);
    let mut out = Vec::new();
    s.open(&b, &mut out).unwrap();
    s.open(&a, &mut out).unwrap(); // reordered, not replayed
    assert_eq!(s.open(&a, &mut out), Err(OpenError::Replayed));
    assert_eq!(s.open(&b, &mut out), Err(OpenError::Replayed));
    assert_eq!(s.stats.replays_dropped, 2);
    assert_eq!(s.stats.packets_opened, 2);
}

#[test]
fn forged_with_another_key_or_direction_is_rejected() {
    let (mut c, mut s) = pair();
    // A packet the server sealed cannot be reflected back to it.
    let plain = end(0);
    let mut buf = plain.clone();
    s.seal(&mut buf, plain.len()).unwrap();
    let mut out = Vec::new();
    assert_eq!(s.open(&buf, &mut out), Err(OpenError::Unauthenticated));
    // Keys of another connection (other randoms) do not open it either.
    let mut other = SecurityState::new(SecurityConfig::PresharedKey(PSK), false, [9; 16]);
    other.complete(Some(c.hello())).unwrap();
    let (_, wire) = sealed(&mut c, 0);
    assert_eq!(other.open(&wire, &mut out), Err(OpenError::Unauthenticated));
    // And without keys nothing opens.
    let mut fresh = SecurityState::new(SecurityConfig::PresharedKey(PSK), false, [2; 16]);
    assert_eq!(fresh.open(&wire, &mut out), Err(OpenError::NoKeys));
}

#[test]
fn keys_differ_per_direction_and_per_connection() {
    let a = derive_keys(&PSK, &[1; 16], &[2; 16]);
    let b = derive_keys(&PSK, &[1; 16], &[3; 16]);
    assert_ne!(a.c2s_key, a.s2c_key);
    assert_ne!(a.c2s_iv, a.s2c_iv);
    assert_ne!(a.c2s_key, b.c2s_key);
}

#[test]
fn hello_parsing_rejects_bad_modes_and_lengths() {
    assert!(parse_hello(&[MODE_PSK; 17]).is_ok());
    assert_eq!(parse_hello(&[]), Err(HandshakeError::Malformed));
    assert_eq!(parse_hello(&[2; 17]), Err(HandshakeError::Malformed));
    assert_eq!(parse_hello(&[MODE_PSK; 16]), Err(HandshakeError::Malformed));
}
