//! Unit tests of the Noise handshakes and of packet protection.

use super::noise::{ClientHandshake, ServerHandshake};
use super::*;
use crate::send_helpers::write;
use crate::wire::{
    BarePayload, DatagramRepr, Flags, HeaderRepr, PacketType, Payload, AUTH_TAG_LEN,
};

const PSK: [u8; PSK_LEN] = [7; PSK_LEN];

/// The peer's address in these tests (only rotation reads it).
const PEER: SocketAddr = SocketAddr::new(
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1)),
    4433,
);

fn kp(b: u8) -> StaticKeypair {
    StaticKeypair::from_private([b; KEY_LEN])
}

/// Runs one handshake between `client` and `server` configurations with
/// the given seeds, entirely in memory: returns both states.
fn handshake_with(
    client: &SecurityConfig,
    server: &SecurityConfig,
    seeds: (u8, u8),
) -> Result<(SecurityState, SecurityState), HandshakeError> {
    handshake_hw(client, server, seeds, false)
}

/// [`handshake_with`] on a client whose CPU does (`aes_hardware`) or does
/// not accelerate AES.
fn handshake_hw(
    client: &SecurityConfig,
    server: &SecurityConfig,
    seeds: (u8, u8),
    aes_hardware: bool,
) -> Result<(SecurityState, SecurityState), HandshakeError> {
    let mut c = SecurityState::client(client, [seeds.0; 32], aes_hardware)?;
    c.prepare([1; BINDING_LEN]);
    let m1 = c.hello().ok_or(HandshakeError::Internal)?.to_vec();
    let offer = c.aead_tlv();
    let hs = ServerHandshake::accept(
        &server.noise(),
        Some(&m1),
        offer,
        [1; BINDING_LEN],
        [seeds.1; 32],
    )?;
    let mut s = SecurityState::server(hs);
    s.prepare([2; BINDING_LEN]);
    let m2 = s.hello().ok_or(HandshakeError::Internal)?.to_vec();
    c.read_reply(Some(&m2), s.aead_tlv(), [2; BINDING_LEN])?;
    Ok((c, s))
}

/// Opens `wire` in place in a copy, the way the endpoint does in its
/// receive buffer: `out` is the plaintext datagram on success.
fn open_into(s: &mut SecurityState, wire: &[u8], out: &mut Vec<u8>) -> Result<(), OpenError> {
    out.clear();
    out.extend_from_slice(wire);
    let n = s.open(out, Time::ZERO, Duration::from_secs(1), PEER)?;
    out.truncate(n);
    Ok(())
}

fn pair() -> (SecurityState, SecurityState) {
    let psk = SecurityConfig::PresharedKey(PSK);
    handshake_with(&psk, &psk, (1, 2)).expect("NNpsk0 completes")
}
/// A plaintext END datagram with packet number `pn`, as a protected
/// connection writes it: no ST_CKS (the tag will cover it).
fn end(pn: u32) -> Vec<u8> {
    let mut h = HeaderRepr::new(PacketType::End);
    h.dest_id = 0x1234;
    h.src_id = 0x5678;
    h.sync_no = 0x0abc;
    h.flags = Flags::REPLY_REQ;
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
    let n = c.seal(&mut buf, plain.len(), PEER).unwrap();
    // An XX client appends message 3 until it has heard from the server.
    let extra = n - plain.len() - AUTH_TAG_LEN;
    assert!(extra == 0 || extra == XX_MSG3_LEN, "{extra}");
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
        open_into(&mut s, &wire, &mut out).unwrap();
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
                open_into(&mut s, &bad, &mut out).is_err(),
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
    open_into(&mut s, &wire, &mut out).unwrap();
}

#[test]
fn sealed_datagrams_carry_no_checksum_and_refuse_st_cks() {
    let (mut c, mut s) = pair();
    // Even a plaintext written with ST_CKS and a checksum leaves without.
    let mut plain = end(3);
    plain[5] |= Flags::ST_CKS.bits();
    plain[6] = 0xab;
    let mut wire = plain.clone();
    let n = c.seal(&mut wire, plain.len(), PEER).unwrap();
    let h = crate::wire::HeaderRepr::decode(&wire[..n]).unwrap();
    assert!(!h.flags.contains(Flags::ST_CKS));
    assert_eq!(h.chksum, 0);
    // A header bit flipped: the tag fails.
    let mut out = Vec::new();
    let mut bad = wire.clone();
    bad[12] ^= 0x40;
    assert_eq!(
        open_into(&mut s, &bad, &mut out),
        Err(OpenError::Unauthenticated)
    );
    assert_eq!(s.stats.auth_failures, 1);
    // ST_CKS set with a valid checksum (an attacker can compute it; a
    // peer must not send it): malformed, before any AEAD work.
    let mut st = wire.clone();
    st[5] |= Flags::ST_CKS.bits();
    let chk = crate::wire::datagram_checksum(&st);
    st[6..8].copy_from_slice(&chk.to_be_bytes());
    assert_eq!(open_into(&mut s, &st, &mut out), Err(OpenError::Malformed));
    assert_eq!(s.stats.malformed_dropped, 1);
    open_into(&mut s, &wire, &mut out).unwrap();
    assert_eq!(
        &out[..],
        &{
            let mut p = plain.clone();
            p[5] &= !Flags::ST_CKS.bits();
            p[6] = 0;
            p
        }[..]
    );
}

#[test]
fn tamper_truncated_datagrams_are_rejected() {
    let (mut c, mut s) = pair();
    let (_, wire) = sealed(&mut c, 0);
    let mut out = Vec::new();
    for n in 0..wire.len() {
        assert!(
            open_into(&mut s, &wire[..n], &mut out).is_err(),
            "truncated to {n}"
        );
    }
    open_into(&mut s, &wire, &mut out).unwrap();
}

#[test]
fn replay_of_an_opened_packet_is_dropped_and_counted() {
    let (mut c, mut s) = pair();
    let (_, a) = sealed(&mut c, 0);
    let (_, b) = sealed(&mut c, 1);
    let mut out = Vec::new();
    open_into(&mut s, &b, &mut out).unwrap();
    open_into(&mut s, &a, &mut out).unwrap(); // reordered, not replayed
    assert_eq!(open_into(&mut s, &a, &mut out), Err(OpenError::Replayed));
    assert_eq!(open_into(&mut s, &b, &mut out), Err(OpenError::Replayed));
    assert_eq!(s.stats.replays_dropped, 2);
    assert_eq!(s.stats.packets_opened, 2);
}

#[test]
fn forged_with_another_key_or_direction_is_rejected() {
    let (mut c, mut s) = pair();
    // A packet the server sealed cannot be reflected back to it.
    let plain = end(0);
    let mut buf = plain.clone();
    s.seal(&mut buf, plain.len(), PEER).unwrap();
    let mut out = Vec::new();
    assert_eq!(
        open_into(&mut s, &buf, &mut out),
        Err(OpenError::Unauthenticated)
    );
    // Keys of another connection (other ephemeral keys) do not open it.
    let (_, mut other) = {
        let psk = SecurityConfig::PresharedKey(PSK);
        handshake_with(&psk, &psk, (3, 4)).unwrap()
    };
    let (_, wire) = sealed(&mut c, 0);
    assert_eq!(
        open_into(&mut other, &wire, &mut out),
        Err(OpenError::Unauthenticated)
    );
    // And without keys nothing opens.
    let mut fresh =
        SecurityState::client(&SecurityConfig::PresharedKey(PSK), [2; 32], false).unwrap();
    assert_eq!(
        open_into(&mut fresh, &wire, &mut out),
        Err(OpenError::NoKeys)
    );
}

#[test]
fn keys_differ_per_direction_and_per_connection() {
    let a = derive_keys(&[1; 32], &[2; 32], &[3; 32]);
    let b = derive_keys(&[1; 32], &[2; 32], &[4; 32]);
    let c = derive_keys(&[9; 32], &[2; 32], &[3; 32]);
    assert_ne!(a.c2s_key, a.s2c_key);
    assert_ne!(a.c2s_iv, a.s2c_iv);
    assert_ne!(a.c2s_key, b.c2s_key);
    assert_ne!(a.s2c_key, c.s2c_key);
    assert!(!format!("{a:?}").contains('1'));
}

fn all_pairs() -> Vec<(NoisePattern, SecurityConfig, SecurityConfig)> {
    let (ck, sk) = (kp(1), kp(2));
    vec![
        (
            NoisePattern::IK,
            SecurityConfig::Noise(NoiseConfig::ik(ck.clone(), sk.public())),
            SecurityConfig::Noise(NoiseConfig::server(sk.clone())),
        ),
        (
            NoisePattern::XX,
            SecurityConfig::Noise(NoiseConfig::xx(ck.clone())),
            SecurityConfig::Noise(NoiseConfig::server(sk.clone())),
        ),
        (
            NoisePattern::IKpsk2,
            SecurityConfig::Noise(NoiseConfig::ik_psk2(ck.clone(), sk.public(), PSK)),
            SecurityConfig::Noise(NoiseConfig::server_psk(Some(sk.clone()), PSK)),
        ),
        (
            NoisePattern::NNpsk0,
            SecurityConfig::PresharedKey(PSK),
            SecurityConfig::Noise(NoiseConfig::server_psk(Some(sk), PSK)),
        ),
    ]
}

/// XX: the server reads message 3 from behind the client's first sealed
/// datagram; then both directions open.
fn finish_xx(c: &mut SecurityState, s: &mut SecurityState) {
    let plain = end(0);
    let mut buf = plain.clone();
    let n = c.seal(&mut buf, plain.len(), PEER).unwrap();
    assert_eq!(n, plain.len() + AUTH_TAG_LEN + XX_MSG3_LEN);
    let mut out = Vec::new();
    open_into(s, &buf, &mut out).unwrap();
    assert_eq!(out, plain);
}

#[test]
fn handshake_every_pattern_derives_matching_keys() {
    for (pattern, client, server) in all_pairs() {
        let (mut c, mut s) = handshake_with(&client, &server, (5, 6)).unwrap();
        assert_eq!(c.stats.pattern, Some(pattern));
        assert_eq!(s.stats.pattern, Some(pattern));
        if pattern == NoisePattern::XX {
            assert!(!s.has_keys(), "an XX server waits for message 3");
            finish_xx(&mut c, &mut s);
        }
        assert!(c.has_keys() && s.has_keys(), "{pattern:?}");
        let mut out = Vec::new();
        for pn in 1..4 {
            let (plain, wire) = sealed(&mut c, pn);
            open_into(&mut s, &wire, &mut out).unwrap();
            assert_eq!(out, plain, "{pattern:?} client to server");
            let (plain, wire) = sealed(&mut s, pn);
            open_into(&mut c, &wire, &mut out).unwrap();
            assert_eq!(out, plain, "{pattern:?} server to client");
        }
        // Peer keys: each side learns the other's static key, but NNpsk0
        // has none.
        let expect = |k: StaticKeypair| (pattern != NoisePattern::NNpsk0).then(|| k.public());
        assert_eq!(c.stats.peer_static_key, expect(kp(2)), "{pattern:?}");
        assert_eq!(s.stats.peer_static_key, expect(kp(1)), "{pattern:?}");
    }
}

#[test]
fn handshake_messages_have_the_documented_lengths() {
    // [mode | Noise message]; payload = 32-byte binding.
    let want = [
        (NoisePattern::IK, 1 + 32 + 48 + 48, 1 + 32 + 48),
        (NoisePattern::XX, 1 + 32 + 32, 1 + 32 + 48 + 48),
        (NoisePattern::IKpsk2, 1 + 32 + 48 + 48, 1 + 32 + 48),
        (NoisePattern::NNpsk0, 1 + 32 + 48, 1 + 32 + 48),
    ];
    for ((pattern, client, server), (p, m1_len, m2_len)) in all_pairs().into_iter().zip(want) {
        assert_eq!(pattern, p);
        let mut c = SecurityState::client(&client, [1; 32], false).unwrap();
        c.prepare([0; 32]);
        let m1 = c.hello().unwrap().to_vec();
        assert_eq!(
            (m1[0], m1.len()),
            (pattern.mode_byte(), m1_len),
            "{pattern:?}"
        );
        assert_eq!(pattern.start_value_len(), m1_len, "{pattern:?}");
        assert_eq!(pattern.reply_value_len(), m2_len, "{pattern:?}");
        let hs =
            ServerHandshake::accept(&server.noise(), Some(&m1), c.aead_tlv(), [0; 32], [2; 32])
                .unwrap();
        let mut s = SecurityState::server(hs);
        s.prepare([0; 32]);
        assert_eq!(s.hello().unwrap().len(), m2_len, "{pattern:?}");
    }
}

#[test]
fn handshake_same_seed_same_bytes_other_seed_other_bytes() {
    let (_, client, _) = all_pairs().remove(0);
    let msg1 = |seed: u8| {
        let mut c = ClientHandshake::new(&client.noise(), [seed; 32], false).unwrap();
        c.start_value([0; 32]).unwrap().to_vec()
    };
    assert_eq!(msg1(1), msg1(1));
    assert_ne!(msg1(1), msg1(2));
}

#[test]
fn handshake_failures_wrong_psk_key_pattern_authorization() {
    let (ck, sk) = (kp(1), kp(2));
    let fails = |client: SecurityConfig, server: SecurityConfig| {
        handshake_with(&client, &server, (1, 2)).err()
    };
    // Wrong PSK.
    assert_eq!(
        fails(
            SecurityConfig::PresharedKey([1; 32]),
            SecurityConfig::PresharedKey([2; 32])
        ),
        Some(HandshakeError::Unauthenticated)
    );
    // Wrong server key (IK to a server with another key).
    assert_eq!(
        fails(
            SecurityConfig::Noise(NoiseConfig::ik(ck.clone(), kp(3).public())),
            SecurityConfig::Noise(NoiseConfig::server(sk.clone()))
        ),
        Some(HandshakeError::Unauthenticated)
    );
    // Pattern not accepted.
    assert_eq!(
        fails(
            SecurityConfig::PresharedKey(PSK),
            SecurityConfig::Noise(NoiseConfig::server(sk.clone()))
        ),
        Some(HandshakeError::NotAccepted)
    );
    // IK client not authorized: refused at message 1.
    let only_3 = NoiseConfig::server(sk.clone()).authorize(vec![kp(3).public()]);
    assert_eq!(
        fails(
            SecurityConfig::Noise(NoiseConfig::ik(ck.clone(), sk.public())),
            SecurityConfig::Noise(only_3.clone())
        ),
        Some(HandshakeError::Unauthorized)
    );
    // XX client not authorized: refused at message 3.
    let (mut c, mut s) = handshake_with(
        &SecurityConfig::Noise(NoiseConfig::xx(ck.clone())),
        &SecurityConfig::Noise(only_3),
        (1, 2),
    )
    .unwrap();
    let plain = end(0);
    let mut buf = plain.clone();
    c.seal(&mut buf, plain.len(), PEER).unwrap();
    let mut out = Vec::new();
    assert_eq!(open_into(&mut s, &buf, &mut out), Err(OpenError::Handshake));
    assert!(s.refused && !s.has_keys());
}

#[test]
fn tamper_xx_message_3_then_genuine_completes() {
    let (_, client, server) = all_pairs().remove(1);
    let (mut c, mut s) = handshake_with(&client, &server, (1, 2)).unwrap();
    let plain = end(0);
    let mut buf = plain.clone();
    c.seal(&mut buf, plain.len(), PEER).unwrap();
    let mut out = Vec::new();
    // A flip in the payload tag (the client's key decrypts, then the tag
    // fails), in the encrypted key, and a truncated message 3.
    for at in [buf.len() - 3, buf.len() - 60] {
        let mut bad = buf.clone();
        bad[at] ^= 0x20;
        assert_eq!(open_into(&mut s, &bad, &mut out), Err(OpenError::Handshake));
    }
    assert_eq!(s.stats.handshake_failures, 2);
    open_into(&mut s, &buf, &mut out).unwrap();
    assert_eq!(out, plain);
    assert_eq!(s.stats.peer_static_key, Some(kp(1).public()));
}

#[test]
fn handshake_xx_pinned_server_key_is_checked() {
    let (ck, sk) = (kp(1), kp(2));
    let fails = |client: SecurityConfig, server: SecurityConfig| {
        handshake_with(&client, &server, (1, 2)).err()
    };
    // XX with a pinned server key that does not match (and that does).
    let mut good = NoiseConfig::xx(ck.clone());
    good.peer_key = Some(sk.public());
    assert_eq!(
        fails(
            SecurityConfig::Noise(good),
            SecurityConfig::Noise(NoiseConfig::server(sk.clone()))
        ),
        None
    );
    let mut pinned = NoiseConfig::xx(ck);
    pinned.peer_key = Some(kp(3).public());
    assert_eq!(
        fails(
            SecurityConfig::Noise(pinned),
            SecurityConfig::Noise(NoiseConfig::server(sk))
        ),
        Some(HandshakeError::WrongServerKey)
    );
    // Nothing at all, junk modes.
    let mut c = SecurityState::client(&SecurityConfig::PresharedKey(PSK), [1; 32], false).unwrap();
    c.prepare([0; 32]);
    assert_eq!(
        c.read_reply(None, None, [0; 32]),
        Err(HandshakeError::Missing)
    );
    assert_eq!(
        c.read_reply(Some(&[]), None, [0; 32]),
        Err(HandshakeError::Malformed)
    );
    assert_eq!(
        c.read_reply(Some(&[9, 1]), None, [0; 32]),
        Err(HandshakeError::Malformed)
    );
    assert_eq!(c.stats.handshake_failures, 3);
}

#[test]
fn forged_message_2_then_genuine_still_completes() {
    for (pattern, client, server) in all_pairs() {
        let mut c = SecurityState::client(&client, [1; 32], false).unwrap();
        c.prepare([1; 32]);
        let m1 = c.hello().unwrap().to_vec();
        let hs =
            ServerHandshake::accept(&server.noise(), Some(&m1), c.aead_tlv(), [1; 32], [2; 32])
                .unwrap();
        let mut s = SecurityState::server(hs);
        s.prepare([2; 32]);
        let m2 = s.hello().unwrap().to_vec();
        // Random bytes of the right length, and the genuine message with
        // one bit flipped, do not authenticate.
        let mut random = m2.clone();
        for (i, b) in random.iter_mut().enumerate().skip(1) {
            *b = (i as u8).wrapping_mul(37) ^ 0x5a;
        }
        assert!(
            c.read_reply(Some(&random), None, [2; 32]).is_err(),
            "{pattern:?}"
        );
        let mut flipped = m2.clone();
        flipped[m2.len() - 1] ^= 1;
        assert!(c.read_reply(Some(&flipped), None, [2; 32]).is_err());
        // The genuine message under another binding (spliced into a
        // START-REPLY with other fields) authenticates but is refused...
        assert_eq!(
            c.read_reply(Some(&m2), None, [3; 32]),
            Err(HandshakeError::BindingMismatch),
            "{pattern:?}"
        );
        // ...and the genuine START-REPLY still completes afterwards.
        c.read_reply(Some(&m2), None, [2; 32]).unwrap();
        if pattern == NoisePattern::XX {
            finish_xx(&mut c, &mut s);
        }
        let (plain, wire) = sealed(&mut c, 1);
        let mut out = Vec::new();
        open_into(&mut s, &wire, &mut out).unwrap();
        assert_eq!(out, plain);
        assert_eq!(c.stats.handshake_failures, 3);
    }
}

#[test]
fn binding_covers_header_fields_and_tlvs_but_not_security() {
    use crate::wire::Tlv;
    let mut h = HeaderRepr::new(PacketType::Start);
    h.src_id = 7;
    h.sync_no = 9;
    let tlvs = [Tlv::Version(1), Tlv::WindowScale(3)];
    let b = binding(&h, &tlvs);
    let mut with_sec = tlvs.to_vec();
    with_sec.push(Tlv::Security(&[1, 2, 3]));
    assert_eq!(binding(&h, &with_sec), b);
    assert_ne!(binding(&h, &[Tlv::Version(1), Tlv::WindowScale(4)]), b);
    let mut h2 = h;
    h2.sync_no = 10;
    assert_ne!(binding(&h2, &tlvs), b);
    let mut h3 = h;
    h3.window_size = 1;
    assert_ne!(binding(&h3, &tlvs), b);
}

/// A `Noise_NNpsk0` pair whose client offers `client` and whose server
/// accepts `server` (client CPU with AES hardware: `hw`).
fn aead_pair(
    client: AeadPreference,
    server: AeadPreference,
    hw: bool,
) -> Result<(SecurityState, SecurityState), HandshakeError> {
    let psk = SecurityConfig::PresharedKey(PSK);
    handshake_hw(
        &psk.clone().with_aead(client),
        &psk.with_aead(server),
        (1, 2),
        hw,
    )
}

#[test]
fn each_aead_round_trips_and_rejects_tamper_wrong_key_and_replay() {
    for (pref, aead) in [
        (AeadPreference::Aes128Gcm, AeadAlgorithm::Aes128Gcm),
        (
            AeadPreference::ChaCha20Poly1305,
            AeadAlgorithm::ChaCha20Poly1305,
        ),
    ] {
        let (mut c, mut s) = aead_pair(pref, pref, false).unwrap();
        assert_eq!((c.stats.aead, s.stats.aead), (Some(aead), Some(aead)));
        let mut out = Vec::new();
        // Round trip, both directions, sizes from empty payload to 1,400 B.
        for pn in 0..4u32 {
            let (plain, wire) = sealed(&mut c, pn);
            assert_eq!(wire.len(), plain.len() + AUTH_TAG_LEN);
            open_into(&mut s, &wire, &mut out).unwrap();
            assert_eq!(out, plain, "{aead}");
            let (plain, wire) = sealed(&mut s, pn);
            open_into(&mut c, &wire, &mut out).unwrap();
            assert_eq!(out, plain, "{aead}");
        }
        let mut big = end(9);
        big.resize(1_400 - AUTH_TAG_LEN, 0x77);
        let len = big.len();
        big[8..10].copy_from_slice(&(len as u16).to_be_bytes());
        let mut wire = big.clone();
        c.seal(&mut wire, len, PEER).unwrap();
        assert_eq!(wire.len(), 1_400);
        assert_ne!(wire[24..len], big[24..], "{aead}: encrypted");
        // Tamper: ciphertext, tag, header (associated data).
        for at in [100, 1_399, 2] {
            let mut bad = wire.clone();
            bad[at] ^= 1;
            assert_eq!(
                open_into(&mut s, &bad, &mut out),
                Err(OpenError::Unauthenticated),
                "{aead} flip at {at}"
            );
        }
        open_into(&mut s, &wire, &mut out).unwrap();
        assert_eq!(out, big, "{aead}: 1,400-byte datagram");
        // Replay.
        assert_eq!(open_into(&mut s, &wire, &mut out), Err(OpenError::Replayed));
        // Wrong key: another handshake (other ephemeral keys), same AEAD.
        let (_, mut other) = {
            let psk = SecurityConfig::PresharedKey(PSK);
            handshake_hw(
                &psk.clone().with_aead(pref),
                &psk.with_aead(pref),
                (3, 4),
                false,
            )
            .unwrap()
        };
        let (_, wire) = sealed(&mut c, 10);
        assert_eq!(
            open_into(&mut other, &wire, &mut out),
            Err(OpenError::Unauthenticated),
            "{aead}: wrong key"
        );
        assert_eq!(s.stats.auth_failures, 3);
        assert_eq!(s.stats.replays_dropped, 1);
    }
}

#[test]
fn aes_and_chacha_keys_of_one_handshake_do_not_open_each_other() {
    let (mut c, _) = aead_pair(AeadPreference::Aes128Gcm, AeadPreference::Auto, false).unwrap();
    let (_, mut s) = aead_pair(
        AeadPreference::ChaCha20Poly1305,
        AeadPreference::Auto,
        false,
    )
    .unwrap();
    let (_, wire) = sealed(&mut c, 0);
    let mut out = Vec::new();
    assert_eq!(
        open_into(&mut s, &wire, &mut out),
        Err(OpenError::Unauthenticated)
    );
}

#[test]
fn negotiation_picks_the_first_offered_aead_the_server_accepts() {
    use AeadAlgorithm::{Aes128Gcm as Aes, ChaCha20Poly1305 as ChaCha};
    use AeadPreference as P;
    let cases = [
        // (client, server, client has AES hardware, agreed)
        (P::Auto, P::Auto, true, Aes),
        (P::Auto, P::Auto, false, ChaCha),
        // The client prefers X, the server supports only Y: both use Y.
        (P::Auto, P::ChaCha20Poly1305, true, ChaCha),
        (P::Auto, P::Aes128Gcm, false, Aes),
        (P::Aes128Gcm, P::Auto, false, Aes),
        (P::ChaCha20Poly1305, P::Auto, true, ChaCha),
    ];
    for (client, server, hw, want) in cases {
        let (c, s) = aead_pair(client, server, hw).unwrap();
        assert_eq!(c.stats.aead, Some(want), "{client:?} {server:?} {hw}");
        assert_eq!(s.stats.aead, Some(want), "{client:?} {server:?} {hw}");
    }
    assert_eq!(P::Auto.offer(true), &[1, 2]);
    assert_eq!(P::Auto.offer(false), &[2, 1]);
    // No TLV (a peer from before it existed) means ChaCha20-Poly1305.
    assert_eq!(P::Auto.select(None), Some(ChaCha));
    assert_eq!(P::Aes128Gcm.select(None), None);
    // Unknown codes are skipped.
    assert_eq!(P::Auto.select(Some(&[77, 1])), Some(Aes));
    for p in P::ALL {
        assert_eq!(P::from_name(p.name()), Some(p));
    }
    for a in AeadAlgorithm::ALL {
        assert_eq!(AeadAlgorithm::from_code(a.code()), Some(a));
        assert_eq!(AeadAlgorithm::from_name(a.name()), Some(a));
    }
}

#[test]
fn no_common_aead_is_a_clear_rejection() {
    let e = aead_pair(
        AeadPreference::Aes128Gcm,
        AeadPreference::ChaCha20Poly1305,
        true,
    )
    .err();
    assert_eq!(e, Some(HandshakeError::NoCommonAead));
    assert_eq!(
        HandshakeError::NoCommonAead.reject_reason(),
        Some(crate::wire::RejectReason::AEAD_UNSUPPORTED)
    );
}

#[test]
fn a_reply_choosing_an_aead_not_offered_is_refused_then_genuine_completes() {
    let psk = SecurityConfig::PresharedKey(PSK);
    let client = psk.clone().with_aead(AeadPreference::ChaCha20Poly1305);
    let mut c = SecurityState::client(&client, [1; 32], true).unwrap();
    c.prepare([1; 32]);
    assert_eq!(c.aead_tlv(), Some(&[2u8][..]));
    let m1 = c.hello().unwrap().to_vec();
    let hs =
        ServerHandshake::accept(&psk.noise(), Some(&m1), c.aead_tlv(), [1; 32], [2; 32]).unwrap();
    let mut s = SecurityState::server(hs);
    s.prepare([2; 32]);
    let m2 = s.hello().unwrap().to_vec();
    for bad in [&[1u8][..], &[2, 1], &[9]] {
        assert_eq!(
            c.read_reply(Some(&m2), Some(bad), [2; 32]),
            Err(HandshakeError::AeadMismatch),
            "{bad:?}"
        );
    }
    c.read_reply(Some(&m2), s.aead_tlv(), [2; 32]).unwrap();
    assert_eq!(c.stats.aead, Some(AeadAlgorithm::ChaCha20Poly1305));
    assert_eq!(c.stats.handshake_failures, 3);
}

/// [`handshake_hw`] with both sides keeping their keys for a key log
/// (the server's copy of the client's ephemeral key taken from message
/// 1, as the endpoint takes it from the START), XX finished.
fn handshake_logged(
    client: &SecurityConfig,
    server: &SecurityConfig,
    aes_hardware: bool,
) -> (SecurityState, SecurityState) {
    let mut c = SecurityState::client(client, [5; 32], aes_hardware).unwrap();
    c.keep_keys(None);
    c.prepare([1; BINDING_LEN]);
    let m1 = c.hello().unwrap().to_vec();
    let hs = ServerHandshake::accept(
        &server.noise(),
        Some(&m1),
        c.aead_tlv(),
        [1; BINDING_LEN],
        [6; 32],
    )
    .unwrap();
    let mut s = SecurityState::server(hs);
    s.keep_keys(Some(m1[1..33].try_into().unwrap()));
    s.prepare([2; BINDING_LEN]);
    let m2 = s.hello().unwrap().to_vec();
    c.read_reply(Some(&m2), s.aead_tlv(), [2; BINDING_LEN])
        .unwrap();
    if c.stats.pattern == Some(NoisePattern::XX) {
        assert!(
            s.take_keys().is_none(),
            "no XX server keys before message 3"
        );
        finish_xx(&mut c, &mut s);
    }
    (c, s)
}

/// Opens `sealed` with ring alone, from a key and an IV as a key log
/// writes them (nonce = IV XOR the packet number; the clear prefix is the
/// associated data): the plaintext payload after the packet number.
fn open_with_logged(aead: AeadAlgorithm, key: &[u8], iv: &[u8; 12], sealed: &[u8]) -> Vec<u8> {
    use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, CHACHA20_POLY1305};
    let alg = match aead {
        AeadAlgorithm::Aes128Gcm => &AES_128_GCM,
        AeadAlgorithm::ChaCha20Poly1305 => &CHACHA20_POLY1305,
    };
    let key = LessSafeKey::new(UnboundKey::new(alg, key).unwrap());
    let prefix = aead::CLEAR_PREFIX_LEN;
    let pn = u32::from_be_bytes(sealed[prefix - 4..prefix].try_into().unwrap());
    let mut nonce = *iv;
    for (b, p) in nonce[4..].iter_mut().zip(u64::from(pn).to_be_bytes()) {
        *b ^= p;
    }
    let mut body = sealed[prefix..].to_vec();
    let plain = key
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&sealed[..prefix]),
            &mut body,
        )
        .expect("the logged key opens the packet");
    plain.to_vec()
}

#[test]
fn key_log_material_opens_both_directions_for_every_pattern_and_aead() {
    for (pattern, client, server) in all_pairs() {
        for aes in [false, true] {
            let (mut c, mut s) = handshake_logged(&client, &server, aes);
            let (mc, ms) = (c.take_keys().unwrap(), s.take_keys().unwrap());
            assert_eq!(mc, ms, "{pattern:?}: both sides log the same lines");
            assert_eq!(mc.key_log_lines(), ms.key_log_lines());
            let want = if aes {
                AeadAlgorithm::Aes128Gcm
            } else {
                AeadAlgorithm::ChaCha20Poly1305
            };
            assert_eq!(mc.aead, want, "{pattern:?}");
            assert!(c.take_keys().is_none(), "taken once");
            // Client → server and server → client, opened with the logged
            // keys alone.
            for (side, key, iv) in [
                (&mut c, mc.client_key(), mc.client_iv()),
                (&mut s, mc.server_key(), mc.server_iv()),
            ] {
                let plain = end(9);
                let mut buf = plain.clone();
                side.seal(&mut buf, plain.len(), PEER).unwrap();
                let len = plain.len() + AUTH_TAG_LEN;
                let opened = open_with_logged(mc.aead, key, iv, &buf[..len]);
                assert_eq!(opened, plain[aead::CLEAR_PREFIX_LEN..], "{pattern:?}");
            }
        }
    }
}

#[test]
fn no_key_log_keeps_nothing() {
    let (mut c, mut s) = pair();
    assert!(c.take_keys().is_none() && s.take_keys().is_none());
    assert!(c.keylog.is_none() && s.keylog.is_none());
}

/// The key-update and rotation test vectors of docs/security.md ("Key
/// update and connection-ID rotation: test vectors", assembled from
/// docs/security-parts/keys.md): computed here and required verbatim in
/// the part file, so the document cannot drift from the code.
#[test]
fn key_update_and_rotation_vectors_match_the_documentation() {
    use crate::wire::Control;
    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
    let s0 = [0x11u8; 32];
    let s1 = update::next_secret(&s0);
    let s2 = update::next_secret(&s1);
    let raw = DerivedKeys {
        c2s_key: s0,
        c2s_iv: [0x22; 12],
        s2c_key: [0x33; 32],
        s2c_iv: [0x44; 12],
    };
    // Generation 1 of the client's AES-128-GCM key seals END, PN 5.
    let mut keys = aead::PacketKeys::new(AeadAlgorithm::Aes128Gcm, true, &raw).unwrap();
    let mut peer = aead::PacketKeys::new(AeadAlgorithm::Aes128Gcm, false, &raw).unwrap();
    let mut ack = end(0);
    let n = ack.len();
    peer.seal(&mut ack, n, None).unwrap();
    keys.open(&mut ack, Time::ZERO, Duration::from_secs(1), 0)
        .unwrap();
    keys.request_update();
    keys.arm_switch();
    let mut announce = end(4);
    let n = announce.len();
    keys.seal(&mut announce, n, None).unwrap();
    let plain = end(5);
    let mut sealed = plain.clone();
    keys.seal(&mut sealed, plain.len(), None).unwrap();
    // Rotation sequence 1.
    let prk = rotation::rotation_key(&s0, &[0x33; 32]);
    let m = rotation::sequence_masks(&prk, 1, 0x123, 0x456);
    let (_, ncid) = Control::NewConnectionId {
        sequence: 1,
        id: 0xbeef,
        ack: false,
    }
    .to_echo(7);
    let (_, keyu) = Control::KeyUpdate { generation: 1 }.to_echo(4);
    let echo_hex = |e: crate::wire::EchoPayload| {
        let mut v = e.packet_number.to_be_bytes().to_vec();
        v.extend_from_slice(&e.probe_id.to_be_bytes());
        v.extend_from_slice(&e.timestamp_ns.to_be_bytes());
        hex(&v)
    };
    let block = format!(
        "```text\n\
         secret[0]                 {}\n\
         secret[1]                 {}\n\
         secret[2]                 {}\n\
         AES-128-GCM key[1]        {}\n\
         END PN 5, plaintext       {}\n\
         END PN 5, sealed, gen 1   {}\n\
         rotation PRK              {}\n\
         sequence 1: pn_offset_c2s {:08x}  pn_offset_s2c {:08x}  sync_c2s {:03x}  sync_s2c {:03x}\n\
         NEW_CONNECTION_ID seq 1, id 0xbeef, PN 7 (ECHO payload)  {}\n\
         KEY_UPDATE generation 1, PN 4 (ECHO payload)            {}\n\
         ```\n",
        hex(&s0),
        hex(&s1),
        hex(&s2),
        hex(&s1[..16]),
        hex(&plain),
        hex(&sealed),
        hex(&prk),
        m.c2s_pn_offset,
        m.s2c_pn_offset,
        m.c2s_sync,
        m.s2c_sync,
        echo_hex(ncid),
        echo_hex(keyu),
    );
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/security-parts/keys.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        doc.contains(&block),
        "{} must contain the vectors exactly:\n{block}",
        path.display()
    );
    // And the sealed vector opens under generation 1 at the peer.
    let mut b = announce.clone();
    peer.open(&mut b, Time::ZERO, Duration::from_secs(1), 0)
        .unwrap();
    peer.on_announcement(4, 1);
    let mut b = sealed.clone();
    assert!(peer
        .open(&mut b, Time::ZERO, Duration::from_secs(1), 0)
        .is_ok());
}
