//! Real Noise handshakes through the public API, and the seed corpus of the
//! `handshake` fuzz target (`fuzz/fuzz_targets/handshake.rs`) made from
//! them.
//!
//! The test checks that every captured START, START-REPLY and XX message-3
//! carrier is what the handshake needs (fed back in order, it connects).
//! With `PEREGRINE_WRITE_HANDSHAKE_CORPUS=1` it also writes the corpus
//! (`fuzz/corpus/handshake/`, input format `[kind, mode, bytes…]` as the
//! fuzz target documents):
//!
//! ```sh
//! PEREGRINE_WRITE_HANDSHAKE_CORPUS=1 cargo test -p peregrine-proto --test handshake_corpus
//! ```

use peregrine_proto::connection::{ConnectionConfig, EndpointConfig};
use peregrine_proto::crypto::{NoiseConfig, NoisePattern, SecurityConfig, StaticKeypair};
use peregrine_proto::wire::{DatagramRepr, Payload, StartupMode, Tlv};
use peregrine_proto::{Endpoint, Event, SansIo, Time};
use std::net::SocketAddr;
use std::path::PathBuf;

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

/// The fuzz target's server configurations (`mode % 3`).
fn server_cfg(mode: u8) -> ConnectionConfig {
    match mode % 3 {
        0 => cfg(SecurityConfig::Noise(NoiseConfig::server(kp(2)))),
        1 => cfg(SecurityConfig::Noise(NoiseConfig::server_psk(
            Some(kp(2)),
            PSK,
        ))),
        _ => cfg(SecurityConfig::PresharedKey(PSK)),
    }
}

/// The fuzz target's client configurations (`mode % 4`).
fn client_cfg(mode: u8) -> ConnectionConfig {
    match mode % 4 {
        0 => cfg(SecurityConfig::Noise(NoiseConfig::ik(
            kp(1),
            kp(2).public(),
        ))),
        1 => cfg(SecurityConfig::Noise(NoiseConfig::xx(kp(1)))),
        2 => cfg(SecurityConfig::Noise(NoiseConfig::ik_psk2(
            kp(1),
            kp(2).public(),
            PSK,
        ))),
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
    out
}

fn events(ep: &mut Endpoint) -> Vec<Event> {
    std::iter::from_fn(|| ep.poll_event().map(|(_, e)| e)).collect()
}

/// One handshake of client `mode` against the matching server: the
/// captured (START, START-REPLY, first client datagram after it).
fn capture(mode: u8) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let server_mode = if mode % 4 >= 2 { 1 } else { 0 };
    let now = Time::ZERO;
    let mut c = Endpoint::new(EndpointConfig::default(), 100 + u64::from(mode));
    let mut s = Endpoint::new(EndpointConfig::server(server_cfg(server_mode)), 200);
    let h = c.connect(now, addr(2), client_cfg(mode)).expect("valid");
    let start = drain(&mut c, now).remove(0);
    s.handle_datagram(now, addr(1), None, &mut start.clone());
    let reply = drain(&mut s, now).remove(0);
    c.handle_datagram(now, addr(2), None, &mut reply.clone());
    assert!(events(&mut c).contains(&Event::Connected), "mode {mode}");
    c.send_message(h, now, 0, b"corpus").expect("room");
    let first = drain(&mut c, now).remove(0);
    s.handle_datagram(now, addr(1), None, &mut first.clone());
    let got = events(&mut s);
    assert!(got.contains(&Event::Connected), "mode {mode}: {got:?}");
    assert!(
        got.iter()
            .any(|e| matches!(e, Event::MessageReceived { bytes, .. } if bytes == b"corpus")),
        "mode {mode}"
    );
    (start, reply, first)
}

/// The mode byte of a START's SECURITY TLV.
fn security_mode(dg: &[u8]) -> Option<u8> {
    let d = DatagramRepr::decode(dg).ok()?;
    let Payload::Start(p) = d.payload else {
        return None;
    };
    p.tlvs.iter().find_map(|t| match t {
        Tlv::Security(v) => v.first().copied(),
        _ => None,
    })
}

#[test]
fn handshake_corpus_inputs_are_real_handshakes() {
    let mut corpus: Vec<(String, Vec<u8>)> = Vec::new();
    let mut add = |name: &str, kind: u8, mode: u8, bytes: &[u8]| {
        let mut v = vec![kind, mode];
        v.extend_from_slice(bytes);
        corpus.push((name.to_string(), v));
    };
    for mode in 0..4u8 {
        let pattern = NoisePattern::ALL[usize::from(mode)];
        let (start, reply, first) = capture(mode);
        // START and START-REPLY carry the pattern's SECURITY value.
        for dg in [&start, &reply] {
            assert_eq!(security_mode(dg), Some(pattern.mode_byte()), "{pattern:?}");
        }
        let server_mode = if mode >= 2 { 1 } else { 0 };
        add(&format!("start-{pattern:?}"), 0, server_mode, &start);
        add(&format!("reply-{pattern:?}"), 1, mode, &reply);
        if pattern == NoisePattern::XX {
            add("msg3-carrier", 2, 0, &first);
            add("msg3-xor-none", 3, 0, &[0; 4]);
            let mut flip = vec![0u8; first.len()];
            if let Some(b) = flip.last_mut() {
                *b = 1;
            }
            add("msg3-xor-tag", 3, 0, &flip);
        }
    }
    // A START to a server of the wrong kind, and junk.
    let (start_nn, _, _) = capture(3);
    add("start-NNpsk0-to-IK-server", 0, 0, &start_nn);
    add("start-NNpsk0-to-psk-server", 0, 2, &start_nn);
    add("empty", 0, 0, &[]);
    assert!(corpus.len() <= 50);
    if std::env::var_os("PEREGRINE_WRITE_HANDSHAKE_CORPUS").is_some() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/handshake");
        std::fs::create_dir_all(&dir).expect("corpus directory");
        for (name, bytes) in &corpus {
            std::fs::write(dir.join(name), bytes).expect("corpus file");
        }
        println!("wrote {} files to {}", corpus.len(), dir.display());
    }
}
