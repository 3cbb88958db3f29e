//! Make-before-break multicast (issue 7, item 4) on the impairment
//! harness: a source (a road-side unit's server) and members on links
//! losing 3 % of datagrams each way. Members JOIN over their connection;
//! the source fans every group message out over each member's connection.
//!
//! The member attached through two paths at once is two harness nodes —
//! its radio on the old road-side unit's path (10.0.0.5, 25 ms one way)
//! and on the new one's (10.0.0.6, 5 ms) — each with its own connection
//! to the source, feeding one shared `GroupReceiver`.

use peregrine_proto::harness::{Harness, NodeId, Outage, PipeConfig};
use peregrine_proto::multicast::{
    EvictReason, GroupConfig, GroupEvent, GroupReceiver, GroupSendError, GroupSender,
};
use peregrine_proto::{
    ConnectionConfig, ConnectionHandle, EcnCodepoint, Endpoint, EndpointConfig, Event, SansIo,
    Time, Transmit,
};
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

const GROUP: u32 = 0xe000_0007;
const STREAM: u16 = 1;
const SIZE: usize = 300;

fn addr(n: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, n], 4000))
}

/// Message `seq`: its number in the first 8 bytes, the rest derived.
fn body(seq: u64) -> Vec<u8> {
    let mut m: Vec<u8> = (0..SIZE).map(|i| (seq as u8) ^ (i as u8)).collect();
    m[..8].copy_from_slice(&seq.to_be_bytes());
    m
}

struct Source {
    group: GroupSender,
    /// Admit messages until this many were admitted (0 = not started).
    total: u64,
    events: Vec<(Time, GroupEvent)>,
    would_block: u64,
}

/// What a receiver delivers: shared by the nodes of one receiver.
struct Delivered {
    rx: GroupReceiver,
    got: Vec<u64>,
    bad: u64,
}

struct Member {
    conns: Vec<ConnectionHandle>,
    out: Rc<RefCell<Delivered>>,
    /// Group messages received on this node (copies included).
    copies: u64,
    events: Vec<(Time, ConnectionHandle, Event)>,
}

impl Member {
    fn got(&self) -> Vec<u64> {
        self.out.borrow().got.clone()
    }
    fn bad(&self) -> u64 {
        self.out.borrow().bad
    }
}

enum Role {
    Source(Source),
    Member(Member),
}

struct Node {
    ep: Endpoint,
    now: Time,
    role: Role,
}

impl Node {
    fn source(config: GroupConfig) -> Node {
        Node {
            ep: Endpoint::new(EndpointConfig::server(ConnectionConfig::default()), 100),
            now: Time::ZERO,
            role: Role::Source(Source {
                group: GroupSender::new(config),
                total: 0,
                events: Vec::new(),
                would_block: 0,
            }),
        }
    }

    fn member(seed: u64) -> Node {
        let out = Rc::new(RefCell::new(Delivered {
            rx: GroupReceiver::new(GROUP, 4096),
            got: Vec::new(),
            bad: 0,
        }));
        Node::member_sharing(seed, out)
    }

    /// Another radio of the receiver that delivers into `out`.
    fn member_sharing(seed: u64, out: Rc<RefCell<Delivered>>) -> Node {
        Node {
            ep: Endpoint::new(EndpointConfig::default(), seed),
            now: Time::ZERO,
            role: Role::Member(Member {
                conns: Vec::new(),
                out,
                copies: 0,
                events: Vec::new(),
            }),
        }
    }

    fn src(&self) -> &Source {
        match &self.role {
            Role::Source(s) => s,
            Role::Member(_) => panic!("not the source"),
        }
    }

    fn src_mut(&mut self) -> &mut Source {
        match &mut self.role {
            Role::Source(s) => s,
            Role::Member(_) => panic!("not the source"),
        }
    }

    fn mem(&self) -> &Member {
        match &self.role {
            Role::Member(m) => m,
            Role::Source(_) => panic!("not a member"),
        }
    }

    /// Opens a connection to the source; it joins the group once connected.
    fn open_path(&mut self, now: Time) -> ConnectionHandle {
        let h = self
            .ep
            .connect(now, addr(100), ConnectionConfig::default())
            .unwrap();
        if let Role::Member(m) = &mut self.role {
            m.conns.push(h);
        }
        h
    }

    fn leave(&mut self, now: Time, h: ConnectionHandle) {
        self.ep.leave_group(h, now, GROUP).unwrap();
    }

    /// Read endpoint events and move the group along.
    fn process(&mut self) {
        let now = self.now;
        while let Some((h, ev)) = self.ep.poll_event() {
            match &mut self.role {
                Role::Source(s) => {
                    s.group.handle_event(now, h, &ev);
                }
                Role::Member(m) => {
                    match &ev {
                        Event::Connected => {
                            self.ep.join_group(h, now, GROUP).unwrap();
                        }
                        Event::MessageReceived { stream, bytes, .. } if *stream == STREAM => {
                            m.copies += 1;
                            let mut out = m.out.borrow_mut();
                            if out.rx.on_message(bytes).is_err() {
                                out.bad += 1;
                            }
                            while let Some((seq, b)) = out.rx.poll_message() {
                                if b != body(seq) {
                                    out.bad += 1;
                                }
                                out.got.push(seq);
                            }
                            continue;
                        }
                        _ => {}
                    }
                    m.events.push((now, h, ev));
                }
            }
        }
        if let Role::Source(s) = &mut self.role {
            s.group.poll(&mut self.ep, now);
            while s.group.next_seq() < s.total {
                let seq = s.group.next_seq();
                match s.group.send(&body(seq)) {
                    Ok(_) => {}
                    Err(GroupSendError::WouldBlock) => {
                        s.would_block += 1;
                        break;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            s.group.poll(&mut self.ep, now);
            while let Some(e) = s.group.poll_event() {
                s.events.push((now, e));
            }
        }
    }
}

impl SansIo for Node {
    fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        bytes: &mut [u8],
    ) {
        self.now = self.now.max(now);
        self.ep.handle_datagram(now, remote, ecn, bytes);
        self.process();
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.now = self.now.max(now);
        self.ep.poll_transmit(now, buf)
    }

    fn poll_timeout(&mut self) -> Option<Time> {
        let group = match &self.role {
            Role::Source(s) => s.group.poll_timeout(),
            Role::Member(_) => None,
        };
        match (self.ep.poll_timeout(), group) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        self.now = self.now.max(now);
        self.ep.handle_timeout(now);
        self.process();
    }
}

fn lossy() -> PipeConfig {
    PipeConfig {
        rate_bps: 5_000_000,
        delay_us: 10_000,
        queue_limit_bytes: Some(64 * 1024),
        loss: 0.03,
        ..PipeConfig::default()
    }
}

fn step(h: &mut Harness<Node>, ms: u64) {
    let next = Time::from_nanos(h.now().as_nanos() + ms * 1_000_000);
    h.run_until(next).unwrap();
}

fn joined(h: &Harness<Node>, s: NodeId) -> usize {
    h.node(s)
        .src()
        .events
        .iter()
        .filter(|(_, e)| matches!(e, GroupEvent::MemberJoined { .. }))
        .count()
}

fn saw(m: &Member, conn: ConnectionHandle, f: impl Fn(&Event) -> bool) -> bool {
    m.events.iter().any(|(_, c, e)| *c == conn && f(e))
}

#[test]
fn multicast_five_lossy_members_one_leaving_one_switching_paths_get_every_message_once_in_order() {
    const TOTAL: u64 = 1_500;
    let mut h = Harness::new(21);
    h.set_default_pipe(lossy()).unwrap();
    let config = GroupConfig {
        group: GROUP,
        stream: STREAM,
        max_queue_messages: 128,
        member_window: 32,
        evict_after: Some(Duration::from_secs(10)),
    };
    let s = h.add_node(addr(100), Node::source(config));
    let members: Vec<NodeId> = (1..=5u8)
        .map(|i| h.add_node(addr(i), Node::member(u64::from(i))))
        .collect();
    let (leaver, switcher) = (members[3], members[4]);
    // The switcher's second radio, on the new road-side unit's path.
    let shared = Rc::clone(&h.node(switcher).mem().out);
    let new_radio = h.add_node(addr(6), Node::member_sharing(6, shared));
    let old_path_cfg = PipeConfig {
        delay_us: 25_000,
        ..lossy()
    };
    let new_path_cfg = PipeConfig {
        delay_us: 5_000,
        ..lossy()
    };
    h.set_pipe(s, switcher, old_path_cfg.clone()).unwrap();
    h.set_pipe(switcher, s, old_path_cfg).unwrap();
    h.set_pipe(s, new_radio, new_path_cfg.clone()).unwrap();
    h.set_pipe(new_radio, s, new_path_cfg).unwrap();
    for &m in &members {
        h.node_mut(m).open_path(Time::ZERO);
    }
    // Everyone joins (JOINs and their answers cross the lossy links too).
    while joined(&h, s) < 5 {
        step(&mut h, 10);
        assert!(h.now() < Time::from_millis(10_000), "members never joined");
    }
    h.node_mut(s).src_mut().total = TOTAL;
    h.node_mut(s).process();
    let old_path = h.node(switcher).mem().conns[0];
    let mut new_path = None;
    let mut left_old = false;
    let mut leaver_left = false;
    while h.now() < Time::from_millis(120_000) {
        step(&mut h, 10);
        let admitted = h.node(s).src().group.next_seq();
        // The switcher opens its second path a quarter of the way in …
        if new_path.is_none() && admitted >= TOTAL / 4 {
            let now = h.now();
            new_path = Some(h.node_mut(new_radio).open_path(now));
        }
        // … and leaves the old one once the new one is confirmed and
        // carries messages.
        if let Some(np) = new_path {
            let radio = h.node(new_radio).mem();
            if !left_old
                && saw(radio, np, |e| matches!(e, Event::GroupJoined { .. }))
                && radio.copies > 0
            {
                let now = h.now();
                h.node_mut(switcher).leave(now, old_path);
                left_old = true;
            }
        }
        if !leaver_left && admitted >= TOTAL / 2 {
            let now = h.now();
            let c = h.node(leaver).mem().conns[0];
            h.node_mut(leaver).leave(now, c);
            leaver_left = true;
        }
        let src = &h.node(s).src().group;
        if admitted == TOTAL && src.queued() == 0 && src.members().len() == 4 {
            break;
        }
    }
    assert!(left_old && leaver_left);
    let source = h.node(s).src();
    assert_eq!(source.group.next_seq(), TOTAL, "every message admitted");
    assert_eq!(source.group.queued(), 0, "and acknowledged by every member");
    assert!(source.would_block > 0, "the group was paced by its members");
    let events = &source.events;
    // The leaver got exactly what it was owed; the old path drained too.
    let left: Vec<(ConnectionHandle, u64, u64)> = events
        .iter()
        .filter_map(|(_, e)| match e {
            GroupEvent::MemberLeft {
                member,
                first_seq,
                end_seq,
            } => Some((*member, *first_seq, *end_seq)),
            _ => None,
        })
        .collect();
    assert_eq!(left.len(), 2, "{events:?}");
    assert!(
        !events
            .iter()
            .any(|(_, e)| matches!(e, GroupEvent::MemberEvicted { .. })),
        "nobody evicted: {events:?}"
    );
    // Map the source's connection handles back to member addresses.
    let who = |c: ConnectionHandle| h.node(s).ep.remote(c);
    let leaver_range = left
        .iter()
        .find(|(c, _, _)| who(*c) == Some(addr(4)))
        .map(|&(_, first, end)| (first, end))
        .expect("the leaver left");
    let old_path_range = left
        .iter()
        .find(|(c, _, _)| who(*c) == Some(addr(5)))
        .map(|&(_, first, end)| (first, end))
        .expect("the switcher's old path left");
    assert_eq!(leaver_range.0, 0);
    assert!(
        leaver_range.1 >= TOTAL / 2 && leaver_range.1 < TOTAL,
        "left halfway: {leaver_range:?}"
    );
    assert!(old_path_range.1 > TOTAL / 4 && old_path_range.1 < TOTAL);
    // The new radio's connection joined at the sequence number then
    // current, before the old path's end: the two paths overlap.
    let new_first = events
        .iter()
        .find_map(|(_, e)| match e {
            GroupEvent::MemberJoined { member, first_seq } if who(*member) == Some(addr(6)) => {
                Some(*first_seq)
            }
            _ => None,
        })
        .expect("the new path joined");
    assert!(
        new_first < old_path_range.1,
        "{new_first} vs {old_path_range:?}"
    );
    for (i, &m) in members.iter().enumerate() {
        let mem = h.node(m).mem();
        assert_eq!(mem.bad(), 0, "member {i}: intact messages");
        let want: Vec<u64> = if m == leaver {
            (leaver_range.0..leaver_range.1).collect()
        } else {
            (0..TOTAL).collect()
        };
        // The switcher's two radios share one receiver: checked once.
        assert_eq!(mem.got(), want, "member {i}: every message once, in order");
    }
    let sw = h.node(switcher).mem();
    let radio = h.node(new_radio).mem();
    let rx = sw.out.borrow().rx.stats().clone();
    let joins: Vec<(Time, u64)> = events
        .iter()
        .filter_map(|(t, e)| match e {
            GroupEvent::MemberJoined { first_seq, .. } => Some((*t, *first_seq)),
            _ => None,
        })
        .collect();
    println!(
        "done at {:.2} s; joins (time, first seq) {joins:?}; old path got {old_path_range:?}, new path from {new_first}, leaver {leaver_range:?}; switcher copies old {} new {}",
        h.now().as_nanos() as f64 / 1e9,
        sw.copies,
        radio.copies
    );
    assert_eq!(sw.copies + radio.copies, TOTAL + rx.duplicates);
    assert!(
        saw(sw, old_path, |e| matches!(e, Event::GroupLeft { .. })),
        "the old path's LEAVE was confirmed"
    );
    assert!(
        rx.duplicates > 0,
        "both paths carried some messages: de-duplicated"
    );
    let stats = source.group.stats();
    println!(
        "admitted {} (would-block {}), member sends {}, max queue {}; switcher duplicates {}, reordered {}",
        stats.messages_admitted,
        source.would_block,
        stats.member_messages_sent,
        stats.max_queue_messages,
        rx.duplicates,
        rx.reordered
    );
}

#[test]
fn multicast_silent_member_is_evicted_and_the_group_moves_on() {
    const TOTAL: u64 = 1_500;
    const SILENT_FROM_MS: u64 = 500;
    let mut h = Harness::new(22);
    h.set_default_pipe(lossy()).unwrap();
    let config = GroupConfig {
        group: GROUP,
        stream: STREAM,
        max_queue_messages: 64,
        member_window: 16,
        evict_after: Some(Duration::from_secs(2)),
    };
    let s = h.add_node(addr(100), Node::source(config));
    let members: Vec<NodeId> = (1..=3u8)
        .map(|i| h.add_node(addr(i), Node::member(u64::from(i))))
        .collect();
    // The third member's links die for good at 1 s, both ways.
    let dark = PipeConfig {
        outages: vec![Outage {
            start_us: SILENT_FROM_MS * 1_000,
            end_us: 3_600_000_000,
        }],
        ..lossy()
    };
    h.set_pipe(s, members[2], dark.clone()).unwrap();
    h.set_pipe(members[2], s, dark).unwrap();
    for &m in &members {
        h.node_mut(m).open_path(Time::ZERO);
    }
    while joined(&h, s) < 3 {
        step(&mut h, 10);
        assert!(
            h.now() < Time::from_millis(SILENT_FROM_MS),
            "members never joined"
        );
    }
    h.node_mut(s).src_mut().total = TOTAL;
    h.node_mut(s).process();
    // Admitted messages 1.0 s and 1.9 s after the dark member's last
    // progress (before its eviction 2 s after it).
    let mut stalled = Vec::new();
    // When the source last saw the dark member's acknowledgements advance
    // (to the 10 ms step): the silence clock starts there.
    let mut dark_acked: Option<(u64, Time)> = None;
    while h.now() < Time::from_millis(60_000) {
        step(&mut h, 10);
        let src = h.node(s).src();
        let ep = &h.node(s).ep;
        let dark_member = src
            .group
            .members()
            .into_iter()
            .find(|&m| ep.remote(m) == Some(addr(3)))
            .and_then(|m| src.group.member(m));
        if let Some(info) = dark_member {
            if dark_acked.is_none_or(|(a, _)| a != info.acked_below) {
                dark_acked = Some((info.acked_below, h.now()));
            }
        }
        // Before the silence the progress time still moves; from 1 s
        // after it, it no longer can.
        let progress_ms = dark_acked.map_or(u64::MAX, |(_, t)| t.as_nanos() / 1_000_000);
        let since = (h.now().as_nanos() / 1_000_000).saturating_sub(progress_ms);
        if h.now() > Time::from_millis(SILENT_FROM_MS) && (since == 1_000 || since == 1_900) {
            stalled.push((src.group.next_seq(), src.group.members().len()));
        }
        if src.group.next_seq() == TOTAL && src.group.queued() == 0 {
            break;
        }
    }
    let source = h.node(s).src();
    let evicted: Vec<(Time, ConnectionHandle, EvictReason)> = source
        .events
        .iter()
        .filter_map(|(t, e)| match e {
            GroupEvent::MemberEvicted { member, reason, .. } => Some((*t, *member, *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(evicted.len(), 1, "{:?}", source.events);
    let (at, who, reason) = evicted[0];
    assert_eq!(reason, EvictReason::Silent);
    // The silent member's connection may be gone already: the
    // peer-death rule (issue 21) closes it ~3.2 s into the silence.
    let ep = &h.node(s).ep;
    assert!(
        ep.remote(who).is_none_or(|a| a == addr(3)),
        "{:?}",
        ep.remote(who)
    );
    for other in ep.handles() {
        if matches!(ep.remote(other), Some(a) if a == addr(1) || a == addr(2)) {
            assert_ne!(other, who, "a live member was evicted");
        }
    }
    let at_ms = at.as_nanos() / 1_000_000;
    // 2 s after its last acknowledgement that moved it on. That falls
    // before the silence starts, how long before depends on the run: with
    // 3 % loss the head of the member's window can wait for a
    // retransmission (the last progress fell at 490 ms with the old
    // packet-pair default, at 290 ms with slow start, seed 22).
    let (_, progress_at) = dark_acked.expect("the dark member was seen");
    let progress_ms = progress_at.as_nanos() / 1_000_000;
    assert!(
        progress_ms <= SILENT_FROM_MS + 10,
        "progress at {progress_ms} ms"
    );
    assert!(
        (progress_ms + 1_990..=progress_ms + 2_010).contains(&at_ms),
        "evicted {at_ms} ms: 2 s after its last acknowledgement at {progress_ms} ms"
    );
    assert_eq!(stalled.len(), 2);
    assert_eq!(
        stalled[0], stalled[1],
        "the group waited for the silent member"
    );
    assert!(stalled[0].0 < TOTAL && stalled[0].1 == 3);
    assert!(source.would_block > 0);
    assert_eq!(source.group.next_seq(), TOTAL);
    assert_eq!(source.group.queued(), 0);
    assert_eq!(source.group.stats().evictions, 1);
    for &m in &members[..2] {
        let mem = h.node(m).mem();
        assert_eq!(mem.bad(), 0);
        assert_eq!(mem.got(), (0..TOTAL).collect::<Vec<_>>());
    }
    // The silent one got a gap-free prefix, exactly once.
    let silent = h.node(members[2]).mem();
    let n = silent.got().len() as u64;
    assert!(n < TOTAL);
    assert_eq!(silent.got(), (0..n).collect::<Vec<_>>());
    println!(
        "evicted at {at_ms} ms; admitted while it was silent: {:?}; the silent member had {n} messages; the others all {TOTAL} by {:.2} s",
        stalled,
        h.now().as_nanos() as f64 / 1e9
    );
}
