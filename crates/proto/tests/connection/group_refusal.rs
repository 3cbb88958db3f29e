//! A source refusing a JOIN (issue 29, "rejected"): it answers with
//! LEAVE + REPLY carrying the same GROUP_ID, the member reports
//! `GroupRejected` and stops asking, and the source never counts the peer
//! as a member. The default policy accepts every group.

use crate::basic::connected;
use peregrine_proto::connection::*;
use peregrine_proto::harness::driver::{addr, Fate};
use peregrine_proto::wire::{Flags, PacketType};
use std::collections::BTreeSet;
use std::time::Duration;

const ACCEPTED: u32 = 7;
const REFUSED: u32 = 42;

fn only(groups: &[u32]) -> JoinPolicy {
    JoinPolicy::Only(groups.iter().copied().collect::<BTreeSet<u32>>())
}

fn count(sim: &peregrine_proto::harness::driver::Driver, node: usize, ev: Event) -> usize {
    sim.events[node].iter().filter(|(_, e)| *e == ev).count()
}

#[test]
fn a_refused_join_is_answered_with_a_leave_reply_and_reported_rejected() {
    let (mut sim, client, server) = connected();
    // Set after the connection exists: it applies to it too.
    sim.eps[1].set_join_policy(only(&[ACCEPTED]));
    assert_eq!(*sim.eps[1].join_policy(), only(&[ACCEPTED]));

    sim.eps[0].join_group(client, sim.now, REFUSED).unwrap();
    sim.run_for(Duration::from_secs(2));
    // The answer on the wire: LEAVE + REPLY, no JOIN reply.
    let answers: Vec<_> = sim
        .log
        .iter()
        .filter(|s| s.from == 1 && s.header.flags.contains(Flags::REPLY))
        .map(|s| s.header.pk_type)
        .filter(|t| matches!(t, PacketType::Join | PacketType::Leave))
        .collect();
    assert_eq!(answers, vec![PacketType::Leave]);
    assert_eq!(count(&sim, 0, Event::GroupRejected { group: REFUSED }), 1);
    assert_eq!(count(&sim, 0, Event::GroupJoined { group: REFUSED }), 0);
    assert_eq!(count(&sim, 1, Event::PeerJoined { group: REFUSED }), 0);
    assert!(!sim.eps[1].peer_in_group(server, REFUSED));
    // The member dropped its request: no JOIN goes out any more.
    let last = sim.log.len();
    sim.run_for(Duration::from_secs(3));
    assert!(!sim.log[last..]
        .iter()
        .any(|s| s.from == 0 && s.header.pk_type == PacketType::Join));

    // A group the source accepts still joins.
    sim.eps[0].join_group(client, sim.now, ACCEPTED).unwrap();
    sim.run_for(Duration::from_secs(2));
    assert_eq!(count(&sim, 0, Event::GroupJoined { group: ACCEPTED }), 1);
    assert_eq!(count(&sim, 1, Event::PeerJoined { group: ACCEPTED }), 1);
    assert!(sim.eps[1].peer_in_group(server, ACCEPTED));
    assert_eq!(count(&sim, 0, Event::GroupRejected { group: ACCEPTED }), 0);
}

#[test]
fn the_default_policy_accepts_every_group() {
    let (mut sim, client, server) = connected();
    assert_eq!(*sim.eps[1].join_policy(), JoinPolicy::AcceptAll);
    for group in [0, REFUSED, u32::MAX] {
        sim.eps[0].join_group(client, sim.now, group).unwrap();
    }
    sim.run_for(Duration::from_secs(2));
    for group in [0, REFUSED, u32::MAX] {
        assert_eq!(count(&sim, 0, Event::GroupJoined { group }), 1, "{group}");
        assert_eq!(count(&sim, 1, Event::PeerJoined { group }), 1, "{group}");
        assert!(sim.eps[1].peer_in_group(server, group));
    }
    assert!(!sim.events[0]
        .iter()
        .any(|(_, e)| matches!(e, Event::GroupRejected { .. })));
}

#[test]
fn a_join_refused_after_the_policy_narrowed_removes_the_member() {
    let (mut sim, client, server) = connected();
    sim.eps[0].join_group(client, sim.now, REFUSED).unwrap();
    sim.run_for(Duration::from_secs(1));
    assert!(sim.eps[1].peer_in_group(server, REFUSED));
    // Narrowing keeps the applied member ...
    sim.eps[1].set_join_policy(only(&[]));
    assert!(sim.eps[1].peer_in_group(server, REFUSED));
    // ... until it asks again: then the source's answer and its state
    // agree that it is not a member.
    sim.eps[0].join_group(client, sim.now, REFUSED).unwrap();
    sim.run_for(Duration::from_secs(1));
    assert!(!sim.eps[1].peer_in_group(server, REFUSED));
    assert_eq!(count(&sim, 1, Event::PeerLeft { group: REFUSED }), 1);
    assert_eq!(count(&sim, 0, Event::GroupRejected { group: REFUSED }), 1);
    // A LEAVE is never refused: its LEAVE reply is still `GroupLeft`.
    sim.eps[0].leave_group(client, sim.now, REFUSED).unwrap();
    sim.run_for(Duration::from_secs(1));
    assert_eq!(count(&sim, 0, Event::GroupLeft { group: REFUSED }), 1);
    assert_eq!(count(&sim, 1, Event::PeerLeft { group: REFUSED }), 1);
}

#[test]
fn late_answers_to_a_replaced_leave_are_not_taken_for_a_refusal() {
    let (mut sim, client, _server) = connected();
    sim.eps[0].join_group(client, sim.now, REFUSED).unwrap();
    sim.run_for(Duration::from_secs(1));
    assert_eq!(count(&sim, 0, Event::GroupJoined { group: REFUSED }), 1);
    // The source's answers to the LEAVE are held back (logged, not
    // delivered) until the member has replaced the LEAVE with a JOIN.
    let leave_reply = |from: usize, h: &peregrine_proto::wire::HeaderRepr| {
        from == 1 && h.pk_type == PacketType::Leave && h.flags.contains(Flags::REPLY)
    };
    sim.hook = Box::new(move |from, h, _| {
        if leave_reply(from, h) || (from == 0 && h.pk_type == PacketType::Join) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    sim.eps[0].leave_group(client, sim.now, REFUSED).unwrap();
    sim.run_for(Duration::from_secs(3));
    sim.eps[0].join_group(client, sim.now, REFUSED).unwrap();
    sim.run_for(Duration::from_millis(5));
    let held: Vec<Vec<u8>> = sim
        .log
        .iter()
        .filter(|s| leave_reply(s.from, &s.header))
        .map(|s| s.bytes.clone())
        .collect();
    assert!(held.len() >= 2, "the LEAVE was repeated: {}", held.len());
    for bytes in &held {
        sim.inject(0, addr(1), bytes);
    }
    assert_eq!(count(&sim, 0, Event::GroupRejected { group: REFUSED }), 0);
    assert_eq!(count(&sim, 0, Event::GroupLeft { group: REFUSED }), 0);
    // The JOIN, still pending, is answered once it gets through.
    sim.hook = Box::new(|_, _, _| Fate::Deliver);
    sim.run_for(Duration::from_secs(10));
    assert_eq!(count(&sim, 0, Event::GroupJoined { group: REFUSED }), 2);
    assert_eq!(count(&sim, 0, Event::GroupRejected { group: REFUSED }), 0);
}
