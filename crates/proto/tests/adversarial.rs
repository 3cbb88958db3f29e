//! An on-path attacker during a transfer over the in-memory harness
//! (issue 13, item 6): property tests that inject arbitrary, mutated,
//! truncated, replayed and forged datagrams at either side of a running
//! two-way transfer, at arbitrary instants and from the genuine or a
//! stranger's address.
//!
//! What must hold for every attack sequence:
//! * nothing panics and the run ends (the harness's timer-spin check on);
//! * both applications receive every message the other sent, intact, in
//!   order on its stream, exactly once, and both connections close
//!   normally (END / END + FIN) with nothing undelivered;
//! * protected mode (`SecurityConfig::PresharedKey`): every injected
//!   datagram is rejected and counted — each injection raises exactly one
//!   of the receiving endpoint's drop counters (`decode_errors`,
//!   `unknown_connection`, `auth_failures`, `replays_dropped`) — including
//!   well-formed forged END, FIN + REMOTE_RESET, NACK and CWIN carrying the
//!   connection's real ids and SYNC_NO.
//!
//! Unprotected mode promises no authenticity: an attacker who sees SYNC_NO
//! forges END or REMOTE_RESET at will, so there the attacks are limited to
//! what an unprotected transport must survive — garbage, truncations,
//! single-byte corruption (always caught by the 16-bit checksum) and exact
//! replays of delivered datagrams.
//!
//! Replays are taken from the harness's delivery log, i.e. datagrams the
//! receiver has already processed (a copy that overtakes its original is a
//! delivery, not an attack). Each property runs few cases
//! (`ADVERSARIAL_CASES` overrides), so the dev-profile test run stays fast;
//! `ADVERSARIAL_VERBOSE=1` prints how each run ended.

mod support;

use peregrine_proto::crypto::SecurityConfig;
use peregrine_proto::endpoint::EndpointStats;
use peregrine_proto::harness::{Harness, NodeId, PipeConfig, RunOutcome};
use peregrine_proto::wire::{
    BarePayload, CwinPayload, CwinReason, DatagramRepr, Flags, Header, HeaderRepr, MissingPackets,
    NackPayload, PacketType, Payload, AUTH_TAG_LEN,
};
use peregrine_proto::{CloseReason, ConnectionConfig, MessageId, Time};
use proptest::prelude::*;
use std::net::SocketAddr;
use support::{addr, App, CLIENT, SERVER};

const PSK: [u8; 32] = [0x42; 32];
const CLIENT_MESSAGES: u32 = 40;
const SERVER_MESSAGES: u32 = 15;
/// Attacks land within this many milliseconds of the start.
const ATTACK_WINDOW_MS: u64 = 400;

fn cases() -> u32 {
    std::env::var("ADVERSARIAL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32)
}

/// Message `n` of a side: 100–1,600 bytes, its side and number in front.
fn message(side: u8, n: u32) -> Vec<u8> {
    let mut x = (u64::from(side) << 40 | u64::from(n)).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let len = 100 + (next() % 1_501) as usize;
    let mut m: Vec<u8> = (0..len).map(|_| next() as u8).collect();
    m[0] = side;
    m[1..5].copy_from_slice(&n.to_be_bytes());
    m
}

/// One injected datagram.
#[derive(Clone, Debug)]
enum Payloads {
    /// Arbitrary bytes.
    Raw(Vec<u8>),
    /// A delivered datagram (selector) with byte mutations and an optional cut.
    Mutated {
        pick: usize,
        flips: Vec<(usize, u8)>,
        cut: Option<usize>,
    },
    /// A delivered datagram, unchanged.
    Replay(usize),
    /// A well-formed END / FIN + REMOTE_RESET / NACK / CWIN with the ids and
    /// SYNC_NO of a delivered datagram (protected mode only).
    Forged { pick: usize, kind: u8 },
}

#[derive(Clone, Debug)]
struct Attack {
    at_ms: u64,
    /// Inject at the server (else at the client).
    at_server: bool,
    /// Claim the genuine peer's address (else a stranger's).
    genuine_source: bool,
    what: Payloads,
}

fn attack(secure: bool) -> impl Strategy<Value = Attack> {
    let raw = prop::collection::vec(any::<u8>(), 0..120).prop_map(Payloads::Raw);
    // Protected mode: any number of arbitrary mutations; unprotected: one
    // changed byte (the checksum catches every single-byte change).
    let flips = if secure {
        prop::collection::vec((any::<usize>(), 1..=255u8), 1..5).boxed()
    } else {
        prop::collection::vec((any::<usize>(), 1..=255u8), 1..2).boxed()
    };
    let mutated = (any::<usize>(), flips, prop::option::of(any::<usize>()))
        .prop_map(|(pick, flips, cut)| Payloads::Mutated { pick, flips, cut });
    let replay = any::<usize>().prop_map(Payloads::Replay);
    let what = if secure {
        let forged =
            (any::<usize>(), 0..6u8).prop_map(|(pick, kind)| Payloads::Forged { pick, kind });
        prop_oneof![raw, mutated, replay, forged].boxed()
    } else {
        prop_oneof![raw, mutated, replay].boxed()
    };
    (0..ATTACK_WINDOW_MS, any::<bool>(), any::<bool>(), what).prop_map(
        |(at_ms, at_server, genuine_source, what)| Attack {
            at_ms,
            at_server,
            genuine_source,
            what,
        },
    )
}

/// A forged packet of `kind` with `template`'s ids, SYNC_NO and window, a
/// valid checksum, and (protected mode) a garbage tag.
fn forge(template: &[u8], kind: u8, tagged: bool) -> Option<Vec<u8>> {
    let t = HeaderRepr::parse(&Header::new_checked(template).ok()?).ok()?;
    let bare = Payload::Bare(BarePayload {
        packet_number: 0x7fff_0000,
    });
    let (pk_type, flags, payload) = match kind {
        0 => (PacketType::End, Flags::REPLY_REQ, bare),
        1 => (PacketType::Fin, Flags::REMOTE_RESET, bare),
        2 => (PacketType::Fin, Flags::EMPTY, bare),
        3 => (
            PacketType::Nack,
            Flags::EMPTY,
            Payload::Nack(NackPayload {
                packet_number: 0x7fff_0001,
                missing_packets: vec![MissingPackets { first: 1, count: 8 }],
                missing_blocks: Vec::new(),
            }),
        ),
        4 => (
            PacketType::Cwin,
            Flags::EMPTY,
            Payload::Cwin(CwinPayload {
                packet_number: 0x7fff_0002,
                window_bytes: 0,
                reason: CwinReason::HANDOVER_START,
            }),
        ),
        _ => (PacketType::Idle, Flags::REMOTE_RESET, bare),
    };
    let mut header = HeaderRepr::new(pk_type);
    header.dest_id = t.dest_id;
    header.src_id = t.src_id;
    header.sync_no = t.sync_no;
    header.flags = flags | Flags::ST_CKS;
    let tag = [0x3cu8; AUTH_TAG_LEN];
    let d = DatagramRepr {
        header,
        payload,
        auth_tag: if tagged { &tag } else { &[] },
    };
    let mut out = vec![0u8; d.buffer_len()];
    let n = d.emit(&mut out).ok()?;
    out.truncate(n);
    Some(out)
}

/// Drop counters of an endpoint: each rejected datagram raises one.
fn rejected(s: &EndpointStats) -> u64 {
    s.decode_errors + s.unknown_connection + s.auth_failures + s.replays_dropped
}

fn is_handshake(bytes: &[u8]) -> bool {
    Header::new_checked(bytes)
        .ok()
        .and_then(|h| HeaderRepr::parse(&h).ok())
        .is_some_and(|h| h.pk_type.is_handshake())
}

/// The bytes of an attack, or `None` when it has nothing to work on yet.
fn materialize(h: &Harness<App>, a: &Attack, target: NodeId, secure: bool) -> Option<Vec<u8>> {
    let log: Vec<&Vec<u8>> = h
        .delivery_log()
        .iter()
        .filter(|e| e.to == target)
        .map(|e| &e.datagram)
        .collect();
    let pick = |i: usize| (!log.is_empty()).then(|| log[i % log.len()].clone());
    match &a.what {
        Payloads::Raw(b) => Some(b.clone()),
        Payloads::Replay(i) => pick(*i),
        Payloads::Mutated {
            pick: i,
            flips,
            cut,
        } => {
            let mut b = pick(*i)?;
            for (pos, xor) in flips {
                let n = b.len();
                b[pos % n] ^= xor;
            }
            if let Some(c) = cut {
                b.truncate(c % b.len());
            }
            Some(b)
        }
        Payloads::Forged { pick: i, kind } => forge(&pick(*i)?, *kind, secure),
    }
}

struct Outcome {
    injected: u64,
    counted: u64,
}

fn run(secure: bool, attacks: &[Attack], seed: u64) -> Result<Outcome, TestCaseError> {
    let config = ConnectionConfig {
        security: secure.then_some(SecurityConfig::PresharedKey(PSK)),
        ..ConnectionConfig::default()
    };
    let mut h: Harness<App> = Harness::new(seed);
    h.record_deliveries(true);
    let mut client = App::client(seed ^ 1);
    client.outbox = (0..CLIENT_MESSAGES).map(|n| message(0, n)).collect();
    client.close_when_sent = true;
    let mut server = App::server(config.clone(), seed ^ 2);
    server.outbox = (0..SERVER_MESSAGES).map(|n| message(1, n)).collect();
    let c = h.add_node(addr(CLIENT), client);
    let s = h.add_node(addr(SERVER), server);
    let link = PipeConfig {
        rate_bps: 2_000_000,
        delay_us: 10_000,
        ..PipeConfig::default()
    };
    for (from, to) in [(c, s), (s, c)] {
        h.set_pipe(from, to, link.clone())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    h.node_mut(c).connect(Time::ZERO, addr(SERVER), config);

    let mut attacks = attacks.to_vec();
    attacks.sort_by_key(|a| a.at_ms);
    let (mut injected, mut counted) = (0, 0);
    for a in &attacks {
        h.run_until(Time::from_millis(a.at_ms))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (target, peer) = if a.at_server { (s, c) } else { (c, s) };
        let Some(bytes) = materialize(&h, a, target, secure) else {
            continue;
        };
        let from: SocketAddr = if a.genuine_source {
            h.addr(peer)
        } else {
            SocketAddr::from(([192, 0, 2, 66], 5555))
        };
        let before = rejected(h.node(target).ep.endpoint_stats());
        h.inject(from, target, &bytes)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let after = rejected(h.node(target).ep.endpoint_stats());
        if secure && !is_handshake(&bytes) {
            injected += 1;
            counted += after - before;
            prop_assert_eq!(
                after - before,
                1,
                "protected mode: injected {:?} ({} bytes) was not rejected exactly once",
                a,
                bytes.len()
            );
        }
    }
    // The server closes once it has sent everything and the client closed.
    let outcome = h
        .run_until_idle(Time::from_millis(120_000))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(
        outcome,
        RunOutcome::Idle,
        "the transfer hung (seed {})",
        seed
    );
    if std::env::var_os("ADVERSARIAL_VERBOSE").is_some() {
        eprintln!("done at {:?}; last message at {:?}; client closed {:?}; server closed {:?}; injected {injected} counted {counted}", h.now(), h.node(s).last_received_at(), h.node(c).closed(), h.node(s).closed());
    }
    for (node, peer_side, count) in [(s, 0u8, CLIENT_MESSAGES), (c, 1u8, SERVER_MESSAGES)] {
        let app = h.node(node);
        let got: Vec<(MessageId, &Vec<u8>)> =
            app.received.iter().map(|(_, id, b)| (*id, b)).collect();
        prop_assert_eq!(
            got.len(),
            count as usize,
            "side {}: messages delivered",
            1 - peer_side
        );
        for (i, (id, bytes)) in got.iter().enumerate() {
            prop_assert_eq!(
                *id,
                MessageId {
                    stream: 0,
                    number: i as u32
                }
            );
            prop_assert!(
                **bytes == message(peer_side, i as u32),
                "message {} damaged",
                i
            );
        }
    }
    let (cl, sv) = (h.node(c).closed(), h.node(s).closed());
    match (&cl, &sv) {
        (Some((_, CloseReason::Local, a)), Some((_, CloseReason::Remote, b)))
            if a.is_empty() && b.is_empty() => {}
        _ => prop_assert!(false, "abnormal close: client {:?}, server {:?}", cl, sv),
    }
    Ok(Outcome { injected, counted })
}

/// The baseline: with no attacker both transfers complete and close normally.
#[test]
fn clean_transfer_both_ways_completes_in_both_modes() {
    for secure in [false, true] {
        let o = run(secure, &[], 7).unwrap_or_else(|e| panic!("secure={secure}: {e}"));
        assert_eq!((o.injected, o.counted), (0, 0));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn tamper_replay_garbage_unprotected_transfer_survives(
        attacks in prop::collection::vec(attack(false), 0..40),
        seed in any::<u64>(),
    ) {
        run(false, &attacks, seed)?;
    }

    #[test]
    fn forged_tamper_replay_protected_transfer_rejects_and_counts_every_injection(
        attacks in prop::collection::vec(attack(true), 1..40),
        seed in any::<u64>(),
    ) {
        let o = run(true, &attacks, seed)?;
        prop_assert_eq!(o.injected, o.counted);
    }
}

/// Every forgery kind and a replay, at both sides, spread over the
/// transfer: all counted, none harmful.
#[test]
fn forged_and_replayed_at_both_sides_during_the_transfer_are_all_counted() {
    let mut attacks = Vec::new();
    for i in 0..24u64 {
        let what = match i % 8 {
            6 => Payloads::Replay(i as usize * 7),
            7 => Payloads::Mutated {
                pick: i as usize,
                flips: vec![(4, 0x10), (30, 0xff)],
                cut: None,
            },
            k => Payloads::Forged {
                pick: i as usize * 3,
                kind: k as u8,
            },
        };
        attacks.push(Attack {
            at_ms: 20 + i * 12,
            at_server: i % 2 == 0,
            genuine_source: i % 3 != 0,
            what,
        });
    }
    let o = run(true, &attacks, 99).unwrap_or_else(|e| panic!("{e}"));
    // A few picks land on a START / START-REPLY (handshake packets are
    // in the clear and not counted here); the rest must all be counted.
    assert!(
        o.injected >= 18,
        "only {} of 24 attacks injected",
        o.injected
    );
    assert_eq!(o.counted, o.injected);
}
