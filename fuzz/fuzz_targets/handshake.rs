//! The Noise handshake path: arbitrary bytes as a START to a server of each
//! mode, as a START-REPLY to a client in the Starting state of each
//! pattern, and as (or mutating) the XX client datagrams that carry
//! message 3 to a server awaiting it. Nothing may panic, and a forged
//! handshake message must never establish keys.
//!
//! Input: `[kind, mode, bytes…]`. `kind % 4`: 0 START to a server, 1
//! START-REPLY to a client, 2 raw datagram to an XX server awaiting
//! message 3, 3 a genuine message-3 carrier XORed with `bytes`. `mode`
//! picks the server configuration or the client pattern. Kinds 1 and 2
//! patch DEST_ID (and the checksum, if ST_CKS is set) so the bytes reach
//! the connection. Seeds: `fuzz/corpus/handshake/`, written by
//! `crates/proto/tests/handshake_corpus.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peregrine_proto::connection::{ConnectionConfig, EndpointConfig};
use peregrine_proto::crypto::{NoiseConfig, SecurityConfig, StaticKeypair};
use peregrine_proto::wire::{datagram_checksum, Flags, StartupMode};
use peregrine_proto::{ConnectionHandle, Endpoint, SansIo, Time};
use std::net::SocketAddr;

const PSK: [u8; 32] = [0x42; 32];

fn kp(b: u8) -> StaticKeypair {
    StaticKeypair::from_private([b; 32])
}

fn cfg(s: SecurityConfig) -> ConnectionConfig {
    ConnectionConfig {
        startup: StartupMode::SlowStart,
        security: Some(s),
        ..ConnectionConfig::default()
    }
}

fn server_cfg(mode: u8) -> ConnectionConfig {
    match mode % 3 {
        0 => cfg(SecurityConfig::Noise(NoiseConfig::server(kp(2)))),
        1 => cfg(SecurityConfig::Noise(NoiseConfig::server_psk(Some(kp(2)), PSK))),
        _ => cfg(SecurityConfig::PresharedKey(PSK)),
    }
}

fn client_cfg(mode: u8) -> ConnectionConfig {
    match mode % 4 {
        0 => cfg(SecurityConfig::Noise(NoiseConfig::ik(kp(1), kp(2).public()))),
        1 => cfg(SecurityConfig::Noise(NoiseConfig::xx(kp(1)))),
        2 => cfg(SecurityConfig::Noise(NoiseConfig::ik_psk2(kp(1), kp(2).public(), PSK))),
        _ => cfg(SecurityConfig::PresharedKey(PSK)),
    }
}

fn addr(i: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, i], 4000))
}

fn drain(ep: &mut Endpoint, now: Time) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while let Some(t) = ep.poll_transmit(now, &mut buf) {
        out.push(buf[..t.size].to_vec());
    }
    while ep.poll_event().is_some() {}
    out
}

/// Sets DEST_ID and, if ST_CKS is set and the length is right, CHKSUM.
fn address(mut bytes: Vec<u8>, dest_id: u16) -> Vec<u8> {
    if bytes.len() >= 20 {
        bytes[0..2].copy_from_slice(&dest_id.to_be_bytes());
        let total = usize::from(u16::from_be_bytes([bytes[8], bytes[9]]));
        if Flags(bytes[5]).contains(Flags::ST_CKS) && total <= bytes.len() {
            bytes[6..8].copy_from_slice(&[0, 0]);
            let c = datagram_checksum(&bytes[..total]);
            bytes[6..8].copy_from_slice(&c.to_be_bytes());
        }
    }
    bytes
}

fn connected(ep: &Endpoint, h: ConnectionHandle) -> bool {
    ep.stats(h).is_some_and(|s| s.security.encrypted)
}

/// SRC_ID of the first datagram (the sender's connection id).
fn src_id(dgs: &[Vec<u8>]) -> u16 {
    dgs.first()
        .and_then(|d| d.get(2..4))
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
}

/// An XX client and server with START and START-REPLY exchanged: the
/// server awaits message 3; returns the server, its connection id and the
/// client's first datagram carrying message 3.
fn xx_pair() -> (Endpoint, u16, Vec<u8>) {
    let now = Time::ZERO;
    let mut c = Endpoint::new(EndpointConfig::default(), 1);
    let mut s = Endpoint::new(EndpointConfig::server(server_cfg(0)), 2);
    let h = c.connect(now, addr(2), client_cfg(1)).expect("valid");
    for mut d in drain(&mut c, now) {
        s.handle_datagram(now, addr(1), None, &mut d);
    }
    let reply = drain(&mut s, now);
    for d in &reply {
        c.handle_datagram(now, addr(2), None, &mut d.clone());
    }
    c.send_message(h, now, 0, b"fuzz").expect("room");
    let carrier = drain(&mut c, now).into_iter().next().unwrap_or_default();
    (s, src_id(&reply), carrier)
}

fuzz_target!(|data: &[u8]| {
    let [kind, mode, bytes @ ..] = data else {
        return;
    };
    let now = Time::ZERO;
    match kind % 4 {
        0 => {
            let mut s = Endpoint::new(EndpointConfig::server(server_cfg(*mode)), 2);
            s.handle_datagram(now, addr(1), None, &mut bytes.to_vec());
            drain(&mut s, now);
            for h in s.handles() {
                // A connection exists only if message 1 authenticated.
                assert!(s.stats(h).is_some());
            }
        }
        1 => {
            let mut c = Endpoint::new(EndpointConfig::default(), 1);
            let h = c.connect(now, addr(2), client_cfg(*mode)).expect("valid");
            let local = src_id(&drain(&mut c, now));
            c.handle_datagram(now, addr(2), None, &mut address(bytes.to_vec(), local));
            drain(&mut c, now);
            // Nobody holds the server keys: no forged answer completes.
            assert!(!connected(&c, h), "a forged START-REPLY completed");
        }
        k => {
            let (mut s, id, carrier) = xx_pair();
            let mut dg = if k == 2 {
                address(bytes.to_vec(), id)
            } else {
                let mut g = carrier.clone();
                for (b, x) in g.iter_mut().zip(bytes) {
                    *b ^= x;
                }
                g
            };
            s.handle_datagram(now, addr(1), None, &mut dg);
            drain(&mut s, now);
        }
    }
});
