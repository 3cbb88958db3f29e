//! Address migration and JOIN/LEAVE on the in-memory test driver: the
//! anti-amplification budget, give-up after unanswered challenges, what
//! from a new address is never even considered, and the JOIN/LEAVE
//! exchange with its retries.

use crate::basic::{connected, ms};
use peregrine_proto::connection::path::{AMPLIFICATION_FACTOR, MAX_CHALLENGES, PATH_PROBE_ID};
use peregrine_proto::connection::*;
use peregrine_proto::harness::driver::{addr, Fate};
use peregrine_proto::wire::{
    BarePayload, DatagramRepr, EchoPayload, Flags, HeaderRepr, PacketType, Payload,
};
use std::time::Duration;

/// An IDLE from the client with packet number `pn`, its ids and SYNC_NO
/// copied from a packet the client sent after the handshake (what an
/// on-path attacker sees).
fn forged_idle(sim: &peregrine_proto::harness::driver::Driver, pn: u32) -> Vec<u8> {
    let seen = sim
        .log
        .iter()
        .rev()
        .find(|s| s.from == 0 && s.header.dest_id != 0)
        .unwrap();
    let mut h = HeaderRepr::new(PacketType::Idle);
    h.dest_id = seen.header.dest_id;
    h.src_id = seen.header.src_id;
    h.sync_no = seen.header.sync_no;
    h.flags = Flags::ST_CKS;
    let dg = DatagramRepr {
        header: h,
        payload: Payload::Bare(BarePayload { packet_number: pn }),
        auth_tag: &[],
    };
    let mut bytes = vec![0u8; dg.buffer_len()];
    let n = dg.emit(&mut bytes).unwrap();
    bytes.truncate(n);
    bytes
}

#[test]
fn migration_challenges_to_an_unanswering_address_stay_within_three_times_what_it_sent() {
    let (mut sim, client, server) = connected();
    sim.eps[0].send_message(client, sim.now, 0, b"hi").unwrap();
    sim.run_for(ms(100));
    let spoofer = addr(9);
    let idle = forged_idle(&sim, 1_000);
    assert_eq!(idle.len(), 24);
    sim.inject(1, spoofer, &idle);
    sim.run_for(Duration::from_secs(30));
    let s = sim.eps[1].stats(server).unwrap();
    // 24 bytes received → a budget of 72: two 36-byte challenges.
    assert_eq!(s.path.unvalidated_bytes_received, 24);
    assert_eq!(s.path.challenges_sent, 2);
    assert_eq!(s.path.unvalidated_bytes_sent, 72);
    assert!(s.path.unvalidated_bytes_sent <= AMPLIFICATION_FACTOR * 24);
    assert_eq!(
        s.path.failed_validations, 1,
        "given up after {MAX_CHALLENGES} rounds"
    );
    assert_eq!(s.path.migrations, 0);
    assert_eq!(sim.eps[1].remote(server), Some(addr(0)));
    assert!(!sim.saw(1, |e| matches!(e, Event::PathMigrated { .. })));
}

#[test]
fn migration_wrong_sync_no_start_and_reset_from_a_new_address_are_rejected_unchallenged() {
    let (mut sim, client, server) = connected();
    sim.eps[0].send_message(client, sim.now, 0, b"hi").unwrap();
    sim.run_for(ms(100));
    let spoofer = addr(9);
    let good = forged_idle(&sim, 2_000);
    // Wrong SYNC_NO.
    let mut bad = DatagramRepr::decode(&good).unwrap();
    bad.header.sync_no ^= 1;
    let mut bytes = vec![0u8; bad.buffer_len()];
    bad.emit(&mut bytes).unwrap();
    sim.inject(1, spoofer, &bytes);
    // REMOTE_RESET with the right SYNC_NO: never from a new address.
    let mut reset = DatagramRepr::decode(&good).unwrap();
    reset.header.flags = Flags::ST_CKS | Flags::REMOTE_RESET;
    let mut bytes = vec![0u8; reset.buffer_len()];
    reset.emit(&mut bytes).unwrap();
    sim.inject(1, spoofer, &bytes);
    sim.run_for(ms(500));
    let s = sim.eps[1].stats(server).unwrap();
    assert_eq!(s.path.rejected_packets, 2);
    assert_eq!(s.wrong_address, 2);
    assert_eq!(s.path.challenges_sent, 0);
    assert_eq!(sim.eps[1].state(server), Some(ConnectionState::Connected));
    // The connection still works.
    sim.eps[0].send_message(client, sim.now, 0, b"ok").unwrap();
    sim.run_for(ms(200));
    assert_eq!(
        sim.received(1).last().map(|m| m.1.clone()),
        Some(b"ok".to_vec())
    );
}

#[test]
fn migration_a_path_challenge_is_answered_with_the_same_bytes() {
    let (mut sim, _client, _server) = connected();
    sim.run_for(ms(50));
    // The server's view of the client, to forge a challenge "from" it.
    let seen = sim.log.iter().rev().find(|s| s.from == 1).unwrap().clone();
    let mut h = HeaderRepr::new(PacketType::Echo);
    h.dest_id = seen.header.dest_id;
    h.src_id = seen.header.src_id;
    h.sync_no = seen.header.sync_no;
    h.flags = Flags::ST_CKS | Flags::REPLY_REQ;
    let dg = DatagramRepr {
        header: h,
        payload: Payload::Echo(EchoPayload {
            packet_number: 5_000,
            probe_id: PATH_PROBE_ID,
            timestamp_ns: 0x0123_4567_89ab_cdef,
            arrival_ns: None,
            padding_len: 0,
        }),
        auth_tag: &[],
    };
    let mut bytes = vec![0u8; dg.buffer_len()];
    dg.emit(&mut bytes).unwrap();
    let before = sim.log.len();
    sim.inject(0, addr(1), &bytes);
    let answer = sim.log[before..]
        .iter()
        .find(|s| s.from == 0 && s.header.pk_type == PacketType::Echo)
        .expect("answered");
    assert!(answer.header.flags.contains(Flags::REPLY));
    let Payload::Echo(e) = DatagramRepr::decode(&answer.bytes).unwrap().payload else {
        panic!("an ECHO");
    };
    assert_eq!(
        (e.probe_id, e.timestamp_ns),
        (PATH_PROBE_ID, 0x0123_4567_89ab_cdef)
    );
    let c = sim.eps[0].stats(sim.eps[0].handles()[0]).unwrap();
    assert_eq!(c.path.challenges_received, 1);
}

#[test]
fn group_join_and_leave_are_repeated_until_answered_and_reported_once() {
    let (mut sim, client, server) = connected();
    // Lose the first two JOINs.
    let mut lost = 0;
    sim.hook = Box::new(move |from, h, _| {
        if from == 0 && h.pk_type == PacketType::Join && lost < 2 {
            lost += 1;
            return Fate::Drop;
        }
        Fate::Deliver
    });
    sim.eps[0].join_group(client, sim.now, 42).unwrap();
    sim.run_for(Duration::from_secs(5));
    let joins = sim
        .log
        .iter()
        .filter(|s| s.from == 0 && s.header.pk_type == PacketType::Join)
        .count();
    assert_eq!(joins, 3);
    assert!(sim.eps[1].peer_in_group(server, 42));
    let peer_joined = |e: &Event| *e == Event::PeerJoined { group: 42 };
    assert_eq!(
        sim.events[1].iter().filter(|(_, e)| peer_joined(e)).count(),
        1
    );
    assert!(sim.saw(0, |e| *e == Event::GroupJoined { group: 42 }));
    sim.eps[0].leave_group(client, sim.now, 42).unwrap();
    sim.run_for(Duration::from_secs(1));
    assert!(!sim.eps[1].peer_in_group(server, 42));
    assert!(sim.saw(1, |e| *e == Event::PeerLeft { group: 42 }));
    assert!(sim.saw(0, |e| *e == Event::GroupLeft { group: 42 }));
    // Nothing pending any more: no JOIN/LEAVE after the answers.
    let last = sim.log.len();
    sim.run_for(Duration::from_secs(3));
    assert!(!sim.log[last..]
        .iter()
        .any(|s| matches!(s.header.pk_type, PacketType::Join | PacketType::Leave)));
}

#[test]
fn migration_a_lost_challenge_is_repeated_and_the_move_completes() {
    let (mut sim, client, server) = connected();
    // Drop the first PATH_CHALLENGE the server sends.
    let mut dropped = false;
    sim.hook = Box::new(move |from, h, bytes| {
        let challenge = from == 1
            && h.pk_type == PacketType::Echo
            && h.flags.contains(Flags::REPLY_REQ)
            && matches!(
                DatagramRepr::decode(bytes).map(|d| d.payload),
                Ok(Payload::Echo(e)) if e.probe_id == PATH_PROBE_ID
            );
        if challenge && !dropped {
            dropped = true;
            return Fate::Drop;
        }
        Fate::Deliver
    });
    for i in 0..20u8 {
        sim.eps[0]
            .send_message(client, sim.now, 0, &[i; 100])
            .unwrap();
    }
    sim.run_for(ms(30));
    // The client's NAT rebinds: its packets now come from another port.
    let moved = std::net::SocketAddr::from(([10, 0, 0, 1], 7777));
    sim.addrs[0] = moved;
    for i in 20..40u8 {
        sim.eps[0]
            .send_message(client, sim.now, 0, &[i; 100])
            .unwrap();
    }
    sim.run_for(Duration::from_secs(10));
    let s = sim.eps[1].stats(server).unwrap();
    assert_eq!(s.path.challenges_sent, 2, "the lost one was repeated");
    assert_eq!(s.path.migrations, 1);
    assert_eq!(s.path.congestion_resets, 0, "port-only change");
    assert_eq!(sim.eps[1].remote(server), Some(moved));
    let got: Vec<u8> = sim.received(1).iter().map(|(_, b)| b[0]).collect();
    assert_eq!(
        got,
        (0..40).collect::<Vec<u8>>(),
        "every message once, in order"
    );
}
