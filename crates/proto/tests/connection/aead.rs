//! Issue 18 end to end: the packet AEAD agreed in the handshake (the
//! client's preference against what the server accepts, no common AEAD, a
//! downgrade by an on-path attacker editing the offer) and integrity once
//! (sealed datagrams carry no ST_CKS; plain ones a correct checksum,
//! computed once when sent and once when received).

use peregrine_cc::Time;
use peregrine_proto::connection::*;
use peregrine_proto::crypto::{
    binding, AeadAlgorithm, AeadPreference, NoiseConfig, SecurityConfig, StaticKeypair,
};
use peregrine_proto::endpoint::{ConnectionHandle, Endpoint};
use peregrine_proto::harness::driver::{addr, Driver};
use peregrine_proto::io::SansIo;
use peregrine_proto::wire::{
    DatagramRepr, Flags, Payload, RejectReason, StartPayload, StartupMode, Tlv,
};
use std::time::Duration;

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

/// IK (or XX) client and server configurations with these AEAD preferences.
fn noise(
    xx: bool,
    client: AeadPreference,
    server: AeadPreference,
) -> (ConnectionConfig, ConnectionConfig) {
    let (ck, sk) = (kp(1), kp(2));
    let c = if xx {
        NoiseConfig::xx(ck)
    } else {
        NoiseConfig::ik(ck, sk.public())
    };
    (
        cfg(Some(SecurityConfig::Noise(c.with_aead(client)))),
        cfg(Some(SecurityConfig::Noise(
            NoiseConfig::server(sk).with_aead(server),
        ))),
    )
}

/// A driver with a client endpoint (`aes_hardware` as given) and a server.
fn sim(
    client: ConnectionConfig,
    server: ConnectionConfig,
    aes_hardware: bool,
) -> (Driver, ConnectionHandle) {
    let a = Endpoint::new(
        EndpointConfig {
            aes_hardware,
            ..EndpointConfig::default()
        },
        7,
    );
    let b = Endpoint::new(EndpointConfig::server(server), 8);
    let mut sim = Driver::new(vec![a, b], Duration::from_millis(10), 9);
    let h = sim.eps[0]
        .connect(Time::ZERO, addr(1), client)
        .expect("valid config");
    (sim, h)
}

fn deliver_some(sim: &mut Driver, h: ConnectionHandle, n: usize) {
    for i in 0..n {
        let m = vec![i as u8; 3_000];
        sim.eps[0].send_message(h, sim.now, 0, &m).expect("room");
    }
    sim.run_for(Duration::from_secs(2));
    let got = sim.received(1).len();
    assert_eq!(got, n, "all {n} messages delivered");
}

#[test]
fn client_prefers_aes_server_accepts_only_chacha_both_use_chacha() {
    for xx in [false, true] {
        let (c, s) = noise(xx, AeadPreference::Auto, AeadPreference::ChaCha20Poly1305);
        let (mut sim, h) = sim(c, s, true);
        deliver_some(&mut sim, h, 10);
        let server = sim.eps[1].handles()[0];
        let want = Some(AeadAlgorithm::ChaCha20Poly1305);
        assert_eq!(sim.eps[0].security_aead(h), want, "xx {xx}");
        assert_eq!(sim.eps[1].security_aead(server), want, "xx {xx}");
        assert_eq!(sim.eps[0].stats(h).unwrap().security.aead, want);
    }
    // And the other way: the client prefers ChaCha (no AES hardware), the
    // server accepts only AES.
    let (c, s) = noise(false, AeadPreference::Auto, AeadPreference::Aes128Gcm);
    let (mut sim, h) = sim(c, s, false);
    deliver_some(&mut sim, h, 10);
    assert_eq!(sim.eps[0].security_aead(h), Some(AeadAlgorithm::Aes128Gcm));
}

#[test]
fn auto_on_both_sides_follows_the_clients_cpu() {
    for (hw, want) in [
        (true, AeadAlgorithm::Aes128Gcm),
        (false, AeadAlgorithm::ChaCha20Poly1305),
    ] {
        let (c, s) = noise(false, AeadPreference::Auto, AeadPreference::Auto);
        let (mut sim, h) = sim(c, s, hw);
        deliver_some(&mut sim, h, 5);
        let server = sim.eps[1].handles()[0];
        assert_eq!(sim.eps[0].security_aead(h), Some(want));
        assert_eq!(sim.eps[1].security_aead(server), Some(want));
    }
}

#[test]
fn no_common_aead_is_rejected_and_the_client_closes_rejected() {
    let (c, s) = noise(
        false,
        AeadPreference::Aes128Gcm,
        AeadPreference::ChaCha20Poly1305,
    );
    let (mut sim, _h) = sim(c, s, true);
    sim.run_for(Duration::from_secs(15));
    assert!(sim.eps[1].handles().is_empty(), "no server state");
    let e = sim.eps[1].endpoint_stats();
    assert!(e.rejects_sent >= 1 && e.handshake_failures >= 1);
    let reject = sim
        .log
        .iter()
        .find(|s| s.from == 1 && s.header.pk_type == peregrine_proto::wire::PacketType::Reject)
        .expect("a REJECT");
    let d = DatagramRepr::decode(&reject.bytes).unwrap();
    let Payload::Reject(r) = d.payload else {
        panic!("not a REJECT")
    };
    assert_eq!(r.reason, RejectReason::AEAD_UNSUPPORTED);
    assert!(
        matches!(
            sim.closed(0),
            Some(Event::Closed {
                reason: CloseReason::Rejected(RejectReason::AEAD_UNSUPPORTED),
                ..
            })
        ),
        "{:?}",
        sim.closed(0)
    );
}

/// The client's START with its AEAD TLV value replaced by `offer` (the
/// checksum recomputed, as an on-path attacker can). For XX, whose
/// message 1 carries the binding in the clear, the attacker rewrites the
/// binding too.
fn edit_offer(start: &[u8], offer: &'static [u8], xx: bool) -> Vec<u8> {
    let d = DatagramRepr::decode(start).unwrap();
    let Payload::Start(p) = d.payload else {
        panic!("not a START")
    };
    let mut tlvs: Vec<Tlv<'_>> = p
        .tlvs
        .iter()
        .map(|t| match t {
            Tlv::Aead(_) => Tlv::Aead(offer),
            other => *other,
        })
        .collect();
    let mut sec: Vec<u8> = Vec::new();
    if xx {
        let b = binding(&d.header, &tlvs);
        for t in &tlvs {
            if let Tlv::Security(v) = t {
                sec = v.to_vec();
            }
        }
        // XX message 1: mode (1) ‖ e (32) ‖ binding (32, in the clear).
        sec[33..65].copy_from_slice(&b);
        let sec: &'static [u8] = Box::leak(sec.into_boxed_slice());
        for t in &mut tlvs {
            if let Tlv::Security(v) = t {
                *v = sec;
            }
        }
    }
    let mut out = Vec::new();
    crate::write(&mut out, d.header, Payload::Start(StartPayload { tlvs })).expect("encodable");
    out
}

#[test]
fn downgrade_by_editing_the_aead_offer_fails() {
    for xx in [false, true] {
        for forced in [&[2u8][..], &[2, 1]] {
            let forced: &'static [u8] = if forced.len() == 1 { &[2] } else { &[2, 1] };
            let (c, s) = noise(xx, AeadPreference::Auto, AeadPreference::Auto);
            let mut a = Endpoint::new(
                EndpointConfig {
                    aes_hardware: true,
                    ..EndpointConfig::default()
                },
                7,
            );
            let mut b = Endpoint::new(EndpointConfig::server(s), 8);
            let h = a.connect(Time::ZERO, addr(1), c).unwrap();
            let mut buf = Vec::new();
            let t = a.poll_transmit(Time::ZERO, &mut buf).expect("START");
            let genuine = DatagramRepr::decode(&buf[..t.size]).unwrap();
            let Payload::Start(p) = &genuine.payload else {
                panic!("not a START")
            };
            assert!(p.tlvs.contains(&Tlv::Aead(&[1, 2])), "AES offered first");
            // The on-path attacker offers ChaCha20-Poly1305 first (or only)
            // instead of the client's AES-128-GCM first.
            let mut edited = edit_offer(&buf[..t.size], forced, xx);
            b.handle_datagram(Time::ZERO, addr(0), None, &mut edited);
            if xx {
                // XX message 1 carries no secret: the server accepts the
                // edited START, but message 2 (whose handshake hash holds
                // the edited message 1) fails on the client.
                assert_eq!(b.endpoint_stats().connections_accepted, 1);
                let t = b.poll_transmit(Time::ZERO, &mut buf).expect("START-REPLY");
                a.handle_datagram(Time::ZERO, addr(1), None, &mut buf[..t.size]);
                let s = a.stats(h).unwrap();
                assert_eq!(s.security.handshake_failures, 1, "xx {forced:?}");
                assert!(!s.security.encrypted, "xx {forced:?}: no keys");
                assert_eq!(a.security_aead(h), None);
                assert_eq!(a.state(h), Some(ConnectionState::Starting));
            } else {
                // IK: message 1's encrypted binding no longer matches.
                let e = b.endpoint_stats();
                assert_eq!(e.handshake_failures, 1, "ik {forced:?}");
                assert_eq!(e.connections_accepted, 0);
                assert!(b.handles().is_empty());
                assert!(b.poll_transmit(Time::ZERO, &mut buf).is_none(), "no answer");
            }
        }
    }
}

#[test]
fn sealed_datagrams_carry_no_checksum_plain_ones_a_correct_one() {
    let (ck, sk) = (kp(1), kp(2));
    let protected = (
        cfg(Some(SecurityConfig::Noise(NoiseConfig::ik(
            ck,
            sk.public(),
        )))),
        cfg(Some(SecurityConfig::Noise(NoiseConfig::server(sk)))),
    );
    for (c, s) in [protected, (cfg(None), cfg(None))] {
        let secure = c.security.is_some();
        let (mut sim, h) = sim(c, s, false);
        deliver_some(&mut sim, h, 20);
        let mut sealed = 0;
        for sent in &sim.log {
            let hdr = sent.header;
            if secure && !hdr.pk_type.is_handshake() {
                assert!(!hdr.flags.contains(Flags::ST_CKS), "{hdr:?}");
                assert_eq!(hdr.chksum, 0, "{hdr:?}");
                sealed += 1;
            } else {
                assert!(hdr.flags.contains(Flags::ST_CKS), "{hdr:?}");
                assert_eq!(
                    hdr.chksum,
                    peregrine_proto::wire::datagram_checksum(&sent.bytes),
                    "{hdr:?}"
                );
            }
        }
        assert_eq!(sealed > 0, secure);
    }
}
