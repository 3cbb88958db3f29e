//! Make-before-break handover (issue 29, `vehicular.handover =
//! "make_before_break"`): per vehicle, a downlink group stream that
//! follows the vehicle from station to station, and the unicast stream it
//! is compared with, over the same recorded channel.
//!
//! **The world.** One server behind every station (a core link of
//! `core_delay`), sans-IO `peregrine_proto` endpoints driven unmodified:
//! the server's endpoint (one [`GroupSender`] for the vehicle's group and
//! one accepted unicast connection), the vehicle's unicast endpoint on
//! today's access link (the recorded [`ChannelTimeline::capacity`]: a
//! handover is an outage of `handover_interruption_ms`, the RLC buffer
//! moved or dropped as `handover_buffer` says), and one radio endpoint per
//! station on that station's attachment
//! ([`crate::world::vehicles::Attachments::per_station`]). All radios feed
//! one [`GroupReceiver`], which removes the copies the overlap brings.
//!
//! **The policy** (the vehicle's, driven by the channel's association
//! changes): first association → connect over that station's radio and
//! JOIN; a candidate (better by the hysteresis) → connect over its radio
//! and JOIN there while the old one still serves; a candidate dropped
//! before its handover → LEAVE and close it; the handover done → LEAVE the
//! old station `overlap` later, close once the LEAVE is confirmed. A
//! forced handover (the serving station lost, no candidate time) opens
//! the new radio only when it serves: that one is break-before-make.
//!
//! Why a loop of its own rather than flows of the engine: a vehicle's
//! attachments come and go with the channel, while the engine's flows
//! are fixed endpoint pairs over fixed routes; keeping this beside the
//! engine leaves every other scenario's run untouched (the streams here
//! do not compete with the scenario's own flows).
//!
//! Both streams send the same messages: `payload_bytes` each at
//! `group_rate`, message `k`'s number in its first 8 bytes, from
//! [`STREAM_START`] to [`STOP_BEFORE_END`] before the end.

use super::SimError;
use crate::metrics::handover::{measure, HandoverSpan, StreamMeasures, StreamTrace};
use crate::scenario::Scenario;
use crate::world::cells::HandoverBuffer;
use crate::world::channel::mmwave::FailureKind;
use crate::world::link::{LinkModel, LinkOutput, QueueLimit};
use crate::world::mmwave_link::MmWaveLink;
use crate::world::packet::Packet;
use crate::world::vehicles::{AssociationChange, ChannelTimeline};
use crate::Time;
use peregrine_proto::multicast::{GroupConfig, GroupReceiver, GroupSender};
use peregrine_proto::vtime::{self, EventQueue, Host, RunLimits};
use peregrine_proto::{
    ConnectionConfig, ConnectionHandle, Endpoint, EndpointConfig, Event, SansIo,
};
use rand::RngExt;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// The vehicle's downlink group.
pub const GROUP: u32 = 0xe000_0029;
/// The group's stream on every member connection.
pub const GROUP_STREAM: u16 = 1;
/// The unicast stream's stream.
pub const UNICAST_STREAM: u16 = 2;
/// The streams start once the first connections are up.
pub const STREAM_START: Duration = Duration::from_millis(200);
/// The streams stop this long before the end, so that what they sent
/// can arrive (messages created after are not counted as lost).
pub const STOP_BEFORE_END: Duration = Duration::from_millis(500);
/// A member with messages outstanding and no progress for this long is
/// evicted (an old attachment that went out of range before its LEAVE).
const EVICT_AFTER: Duration = Duration::from_millis(1000);
/// Most events at one instant before the loop declares a livelock.
const MAX_EVENTS_PER_INSTANT: u64 = 1_000_000;
/// IPv4 + UDP header bytes added to every datagram on the links.
const IP_UDP_BYTES: u32 = 28;

/// One vehicle's streams, measured.
#[derive(Clone, Debug, PartialEq)]
pub struct VehicleHandover {
    /// The vehicle.
    pub vehicle: usize,
    /// Its handovers (from the channel's `handover` outages).
    pub handovers: Vec<HandoverSpan>,
    /// The unicast stream over today's handover.
    pub unicast: StreamMeasures,
    /// The make-before-break group stream.
    pub make_before_break: StreamMeasures,
    /// JOINs the group's source accepted (one per attachment).
    pub joins: u64,
    /// Members the source evicted (an attachment lost before its LEAVE).
    pub evictions: u64,
}

/// Every vehicle's, and the settings they ran with (`summary.json`
/// `handover_multicast`).
#[derive(Clone, Debug, PartialEq)]
pub struct HandoverResult {
    /// How long an old attachment is kept after a handover.
    pub overlap: Duration,
    /// The streams' rate, bit/s.
    pub rate_bps: u64,
    /// Bytes per message.
    pub message_bytes: u32,
    /// Per vehicle.
    pub vehicles: Vec<VehicleHandover>,
}

impl HandoverResult {
    /// All vehicles' unicast measures as one.
    pub fn unicast(&self) -> StreamMeasures {
        StreamMeasures::combine(self.vehicles.iter().map(|v| &v.unicast))
    }

    /// All vehicles' make-before-break measures as one.
    pub fn make_before_break(&self) -> StreamMeasures {
        StreamMeasures::combine(self.vehicles.iter().map(|v| &v.make_before_break))
    }

    /// The `handover_multicast` object of `summary.json`.
    pub fn to_json(&self) -> Value {
        let vehicles: Vec<Value> = self
            .vehicles
            .iter()
            .map(|v| {
                json!({
                    "vehicle": v.vehicle,
                    "handovers": v.handovers.len(),
                    "joins": v.joins,
                    "evictions": v.evictions,
                    "unicast": v.unicast.to_json(),
                    "make_before_break": v.make_before_break.to_json(),
                })
            })
            .collect();
        json!({
            "overlap_ms": self.overlap.as_secs_f64() * 1e3,
            "rate_bps": self.rate_bps,
            "message_bytes": self.message_bytes,
            "handovers": self.vehicles.iter().map(|v| v.handovers.len()).sum::<usize>(),
            "unicast": self.unicast().to_json(),
            "make_before_break": self.make_before_break().to_json(),
            "vehicles": vehicles,
        })
    }
}

/// Runs every vehicle's streams of `scenario` over `timeline` (recorded
/// with `make_before_break` on). `None` when the mode is off. Cost: one
/// small simulation per vehicle, O(messages × packets per message).
pub fn run(
    scenario: &Scenario,
    timeline: &ChannelTimeline,
) -> Result<Option<HandoverResult>, SimError> {
    let m = &scenario.model;
    let Some(v) = &m.vehicular else {
        return Ok(None);
    };
    let Some(overlap) = v.make_before_break else {
        return Ok(None);
    };
    let fail = |message: String| SimError {
        scenario: scenario.name(),
        seed: m.seed,
        message,
    };
    if timeline.attachments.len() != v.config.vehicles {
        return Err(fail(format!(
            "make_before_break: the channel timeline has attachments for {} vehicles, the scenario {}",
            timeline.attachments.len(),
            v.config.vehicles
        )));
    }
    let mut vehicles = Vec::with_capacity(v.config.vehicles);
    for i in 0..v.config.vehicles {
        let spec = &m.links[v.first_access_link + i];
        let limit = |d: usize| QueueLimit {
            packets: spec.dirs[d].queue.packets,
            bytes: spec.dirs[d].queue.bytes,
            floor_packets: spec.dirs[d].queue_floor_packets,
        };
        let handovers: Vec<HandoverSpan> = timeline
            .events
            .iter()
            .filter(|e| e.vehicle == i && e.kind == FailureKind::Handover)
            .map(|e| HandoverSpan {
                start: e.time,
                done: e.time + e.duration,
            })
            .collect();
        let flow = &m.flows[v.first_flow + i];
        let config = ConnectionConfig {
            cc: flow.cc.clone(),
            ack_policy: flow.ack_policy,
            idle_timeout: Duration::from_nanos(m.duration_ns.saturating_mul(2).max(60_000_000_000)),
            peer_death_timeouts: 0,
            ..ConnectionConfig::default()
        };
        let mut unicast_down = MmWaveLink::new(
            Arc::clone(&timeline.capacity[i]),
            Duration::from_nanos(spec.dirs[0].delay_ns),
            limit(0),
        );
        if v.handover_buffer == HandoverBuffer::Drop {
            unicast_down = unicast_down.with_flush_at(handovers.iter().map(|h| h.start).collect());
        }
        let mut links = vec![
            unicast_down,
            MmWaveLink::new(
                Arc::clone(&timeline.capacity[i]),
                Duration::from_nanos(spec.dirs[1].delay_ns),
                limit(1),
            ),
        ];
        for cap in &timeline.attachments[i].per_station {
            for d in 0..2 {
                links.push(MmWaveLink::new(
                    Arc::clone(cap),
                    Duration::from_nanos(spec.dirs[d].delay_ns),
                    limit(d),
                ));
            }
        }
        let setup = Setup {
            seed: m.seed,
            vehicle: i,
            end: Time::from_nanos(m.duration_ns),
            core_delay: Duration::from_nanos(v.config.core_delay.0),
            overlap,
            rate_bps: v.config.group_rate.0,
            message_bytes: v.config.payload_bytes,
            config,
        };
        let mut w = World::new(setup, links, timeline.attachments[i].per_station.len());
        for (t, c) in &timeline.attachments[i].changes {
            w.queue.push(*t, Ev::Change(*c));
        }
        w.run()
            .map_err(|e| fail(format!("make_before_break, vehicle {i}: {e}")))?;
        let stop = w.stop;
        let stats = w.group.stats().clone();
        w.mbb.duplicates_removed = w.rx.stats().duplicates;
        vehicles.push(VehicleHandover {
            vehicle: i,
            unicast: measure(&w.uni, &handovers, overlap, stop),
            make_before_break: measure(&w.mbb, &handovers, overlap, stop),
            handovers,
            joins: stats.joins,
            evictions: stats.evictions,
        });
    }
    Ok(Some(HandoverResult {
        overlap,
        rate_bps: v.config.group_rate.0,
        message_bytes: v.config.payload_bytes,
        vehicles,
    }))
}

#[derive(Debug)]
enum Ev {
    /// An endpoint's timer.
    Timer(usize),
    /// A link direction wants to move.
    LinkWake(usize),
    /// A packet reaches a link direction (after the core).
    Enter(usize, Packet),
    /// A packet reaches an endpoint.
    Arrive(usize, Packet),
    /// The channel changed the vehicle's association.
    Change(AssociationChange),
    /// Leave the old station (its generation, to ignore a cancelled one).
    Release(usize, u64),
    /// The streams' next message.
    Tick,
}

struct Setup {
    seed: u64,
    vehicle: usize,
    end: Time,
    core_delay: Duration,
    overlap: Duration,
    rate_bps: u64,
    message_bytes: u32,
    config: ConnectionConfig,
}

/// One station's radio on the vehicle.
#[derive(Default)]
struct Radio {
    conn: Option<ConnectionHandle>,
    joined: bool,
    leaving: bool,
    /// Bumped to cancel a pending release.
    release_gen: u64,
}

/// Endpoint indices: the server, the unicast receiver, then radio `j` at
/// `RADIO0 + j`. Link directions: `2p` down, `2p + 1` up, path `p = 0`
/// the unicast access link, `p = 1 + j` station `j`'s attachment.
const SERVER: usize = 0;
const UNICAST: usize = 1;
const RADIO0: usize = 2;

fn addr(e: usize) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 1, (e >> 8) as u8, e as u8)),
        4000,
    )
}

fn endpoint_of(a: &SocketAddr) -> Option<usize> {
    match a.ip() {
        IpAddr::V4(v4) if v4.octets()[..2] == [10, 1] => {
            let o = v4.octets();
            Some((usize::from(o[2]) << 8) | usize::from(o[3]))
        }
        _ => None,
    }
}

fn body(k: u64, bytes: u32) -> Vec<u8> {
    let mut b = vec![0u8; (bytes as usize).max(8)];
    b[..8].copy_from_slice(&k.to_be_bytes());
    b
}

fn number(b: &[u8]) -> Option<u64> {
    b.get(..8)
        .and_then(|s| <[u8; 8]>::try_from(s).ok())
        .map(u64::from_be_bytes)
}

struct World {
    s: Setup,
    now: Time,
    stop: Time,
    interval: Duration,
    queue: EventQueue<Ev>,
    eps: Vec<Endpoint>,
    armed: Vec<Option<Time>>,
    links: Vec<MmWaveLink>,
    wake: Vec<Option<Time>>,
    group: GroupSender,
    group_backlog: VecDeque<u64>,
    rx: GroupReceiver,
    radios: Vec<Radio>,
    serving: Option<usize>,
    unicast_conn: Option<ConnectionHandle>,
    unicast_backlog: VecDeque<u64>,
    uni: StreamTrace,
    mbb: StreamTrace,
    next_msg: u64,
    next_packet_id: u64,
    buf: Vec<u8>,
    out: LinkOutput,
}

impl World {
    fn new(s: Setup, links: Vec<MmWaveLink>, stations: usize) -> World {
        let seed_of = |e: usize| {
            crate::rng::component_rng(s.seed, &format!("handover/{}/endpoint/{e}", s.vehicle))
                .random::<u64>()
        };
        let mut eps = vec![Endpoint::new(
            EndpointConfig::server(s.config.clone()),
            seed_of(SERVER),
        )];
        for e in UNICAST..RADIO0 + stations {
            eps.push(Endpoint::new(EndpointConfig::default(), seed_of(e)));
        }
        let interval = Duration::from_nanos(
            (u64::from(s.message_bytes) * 8 * 1_000_000_000).div_ceil(s.rate_bps.max(1)),
        );
        let stop = Time::from_nanos(
            s.end
                .as_nanos()
                .saturating_sub(STOP_BEFORE_END.as_nanos() as u64),
        );
        let trace = StreamTrace {
            message_bytes: s.message_bytes,
            ..StreamTrace::default()
        };
        World {
            now: Time::ZERO,
            stop,
            interval,
            queue: EventQueue::new(),
            armed: vec![None; eps.len()],
            eps,
            wake: vec![None; links.len()],
            links,
            group: GroupSender::new(GroupConfig {
                group: GROUP,
                stream: GROUP_STREAM,
                max_queue_messages: 4096,
                member_window: 64,
                evict_after: Some(EVICT_AFTER),
            }),
            group_backlog: VecDeque::new(),
            rx: GroupReceiver::new(GROUP, 8192),
            radios: (0..stations).map(|_| Radio::default()).collect(),
            serving: None,
            unicast_conn: None,
            unicast_backlog: VecDeque::new(),
            uni: trace.clone(),
            mbb: trace,
            next_msg: 0,
            next_packet_id: 0,
            buf: Vec::new(),
            out: LinkOutput::default(),
            s,
        }
    }

    fn run(&mut self) -> Result<(), String> {
        self.queue.push(Time::ZERO + STREAM_START, Ev::Tick);
        // The vehicle's unicast endpoint connects; the server sends on
        // the connection it accepts.
        self.eps[UNICAST]
            .connect(Time::ZERO, addr(SERVER), self.s.config.clone())
            .map_err(|e| format!("unicast connect: {e}"))?;
        self.service(UNICAST)?;
        let limits = RunLimits::until(self.s.end, MAX_EVENTS_PER_INSTANT);
        vtime::run(self, limits, &mut |_, _| {})?;
        Ok(())
    }
}

/// The handover world is a world of the one host loop ([`vtime::run`]).
impl Host for World {
    type Event = Ev;
    type Error = String;

    fn queue(&mut self) -> &mut EventQueue<Ev> {
        &mut self.queue
    }

    fn livelock(&self, at: Time, _limit: u64) -> String {
        format!("livelock at {} ns", at.as_nanos())
    }

    fn handle(&mut self, now: Time, ev: Ev) -> Result<(), String> {
        self.now = now;
        match ev {
            Ev::Timer(e) => {
                if self.armed[e] == Some(now) {
                    self.armed[e] = None;
                    self.eps[e].handle_timeout(now);
                    self.service(e)?;
                }
            }
            Ev::LinkWake(l) => {
                if self.wake[l] == Some(now) {
                    self.wake[l] = None;
                    self.advance_link(l);
                }
            }
            Ev::Enter(l, p) => {
                // A full queue drops it, as the access link would.
                let _ = self.links[l].enqueue(now, p);
                self.advance_link(l);
            }
            Ev::Arrive(e, mut p) => {
                let from = addr(p.src);
                self.eps[e].handle_datagram(now, from, p.ecn, &mut p.payload);
                self.service(e)?;
            }
            Ev::Change(c) => self.on_change(c)?,
            Ev::Release(j, gen) => {
                if self.radios[j].release_gen == gen && self.serving != Some(j) {
                    self.leave(j)?;
                }
            }
            Ev::Tick => {
                let k = self.next_msg;
                self.next_msg += 1;
                self.uni.sent.push(now);
                self.mbb.sent.push(now);
                self.group_backlog.push_back(k);
                self.unicast_backlog.push_back(k);
                self.service(SERVER)?;
                let next = now + self.interval;
                if next < self.stop {
                    self.queue.push(next, Ev::Tick);
                }
            }
        }
        Ok(())
    }
}

impl World {
    /// The policy: see the module documentation.
    fn on_change(&mut self, c: AssociationChange) -> Result<(), String> {
        match c {
            AssociationChange::Associated(s) => {
                self.serving = Some(s);
                self.open(s)?;
            }
            AssociationChange::Candidate(k) => {
                let r = &mut self.radios[k];
                // Coming back to a station not yet left: keep it.
                r.release_gen += 1;
                if r.conn.is_none() {
                    self.open(k)?;
                }
            }
            AssociationChange::CandidateDropped(k) => {
                if self.serving != Some(k) {
                    self.leave(k)?;
                }
            }
            AssociationChange::HandoverDone { from, to } => {
                self.serving = Some(to);
                self.radios[to].release_gen += 1;
                if self.radios[to].conn.is_none() {
                    self.open(to)?;
                }
                let gen = self.radios[from].release_gen;
                self.queue
                    .push(self.now + self.s.overlap, Ev::Release(from, gen));
            }
        }
        Ok(())
    }

    fn open(&mut self, j: usize) -> Result<(), String> {
        let Some(r) = self.radios.get(j) else {
            return Err(format!("station {j} has no radio"));
        };
        if r.conn.is_some() {
            return Ok(());
        }
        let h = self.eps[RADIO0 + j]
            .connect(self.now, addr(SERVER), self.s.config.clone())
            .map_err(|e| format!("radio {j} connect: {e}"))?;
        self.radios[j] = Radio {
            conn: Some(h),
            joined: false,
            leaving: false,
            release_gen: self.radios[j].release_gen,
        };
        self.service(RADIO0 + j)
    }

    /// LEAVE the group over radio `j` (closed once confirmed), or close a
    /// connection that had not joined yet.
    fn leave(&mut self, j: usize) -> Result<(), String> {
        let now = self.now;
        let r = &mut self.radios[j];
        let Some(h) = r.conn else { return Ok(()) };
        if r.leaving {
            return Ok(());
        }
        if r.joined {
            r.leaving = true;
            self.eps[RADIO0 + j]
                .leave_group(h, now, GROUP)
                .map_err(|e| format!("radio {j} leave: {e}"))?;
        } else {
            r.conn = None;
            self.eps[RADIO0 + j].close(h, now);
        }
        self.service(RADIO0 + j)
    }

    /// Drain endpoint `e` after an input: events, the group and the
    /// streams' backlogs (server), datagrams out, the timer re-armed.
    fn service(&mut self, e: usize) -> Result<(), String> {
        let now = self.now;
        while let Some((h, ev)) = self.eps[e].poll_event() {
            match e {
                SERVER => {
                    if matches!(ev, Event::Connected)
                        && self.eps[SERVER].remote(h) == Some(addr(UNICAST))
                    {
                        self.unicast_conn = Some(h);
                    }
                    self.group.handle_event(now, h, &ev);
                }
                UNICAST => {
                    if let Event::MessageReceived { stream, bytes, .. } = &ev {
                        if *stream == UNICAST_STREAM {
                            self.uni.copies_received += 1;
                            if let Some(k) = number(bytes) {
                                self.uni.delivered.push((now, k));
                            }
                        }
                    }
                }
                _ => self.radio_event(e - RADIO0, h, ev)?,
            }
        }
        if e == SERVER {
            while let Some(&k) = self.group_backlog.front() {
                if self.group.send(&body(k, self.s.message_bytes)).is_err() {
                    break;
                }
                self.group_backlog.pop_front();
            }
            self.group.poll(&mut self.eps[SERVER], now);
            while self.group.poll_event().is_some() {}
            if let Some(h) = self.unicast_conn {
                while let Some(&k) = self.unicast_backlog.front() {
                    let b = body(k, self.s.message_bytes);
                    if self.eps[SERVER]
                        .send_message(h, now, UNICAST_STREAM, b)
                        .is_err()
                    {
                        break;
                    }
                    self.unicast_backlog.pop_front();
                }
            }
        }
        while let Some(tx) = self.eps[e].poll_transmit(now, &mut self.buf) {
            let Some(dst) = endpoint_of(&tx.destination) else {
                continue;
            };
            let pkt = Packet {
                id: self.next_packet_id,
                flow: 0,
                forward: e == SERVER,
                is_data: Packet::datagram_is_data(&self.buf[..tx.size]),
                src: e,
                dst,
                next_hop: dst,
                dst_port: tx.destination.port(),
                src_port: 4000,
                wire_bytes: tx.size as u32 + IP_UDP_BYTES,
                created: now,
                left_first_hop: false,
                hops: 0,
                ecn: tx.ecn,
                payload: self.buf[..tx.size].to_vec(),
            };
            self.next_packet_id += 1;
            if e == SERVER {
                // Down: through the core, then the path's downlink.
                if (UNICAST..self.eps.len()).contains(&dst) {
                    self.queue
                        .push(now + self.s.core_delay, Ev::Enter(2 * (dst - 1), pkt));
                }
            } else if dst == SERVER {
                let l = 2 * (e - 1) + 1;
                let _ = self.links[l].enqueue(now, pkt);
                self.advance_link(l);
            }
        }
        let mut t = self.eps[e].poll_timeout();
        if e == SERVER {
            t = match (t, self.group.poll_timeout()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        match t {
            Some(t) => {
                let t = t.max(now);
                if self.armed[e] != Some(t) {
                    self.armed[e] = Some(t);
                    self.queue.push(t, Ev::Timer(e));
                }
            }
            None => self.armed[e] = None,
        }
        Ok(())
    }

    fn radio_event(&mut self, j: usize, h: ConnectionHandle, ev: Event) -> Result<(), String> {
        let now = self.now;
        let mine = self.radios[j].conn == Some(h);
        match ev {
            Event::Connected if mine && !self.radios[j].leaving => {
                self.eps[RADIO0 + j]
                    .join_group(h, now, GROUP)
                    .map_err(|e| format!("radio {j} join: {e}"))?;
            }
            Event::GroupJoined { .. } if mine => self.radios[j].joined = true,
            Event::GroupLeft { .. } if mine => {
                self.radios[j] = Radio {
                    release_gen: self.radios[j].release_gen,
                    ..Radio::default()
                };
                self.eps[RADIO0 + j].close(h, now);
            }
            Event::Closed { .. } if mine => {
                self.radios[j] = Radio {
                    release_gen: self.radios[j].release_gen,
                    ..Radio::default()
                };
            }
            Event::MessageReceived { stream, bytes, .. } if stream == GROUP_STREAM => {
                self.mbb.copies_received += 1;
                // A malformed message is counted by the receiver.
                let _ = self.rx.on_message(&bytes);
                while let Some((_, b)) = self.rx.poll_message() {
                    if let Some(k) = number(&b) {
                        self.mbb.delivered.push((now, k));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Let link direction `l` move, route what it delivered, re-arm it.
    fn advance_link(&mut self, l: usize) {
        let now = self.now;
        self.links[l].advance(now, &mut self.out);
        for (at, p) in self.out.delivered.drain(..) {
            if l.is_multiple_of(2) {
                let dst = p.dst;
                self.queue.push(at, Ev::Arrive(dst, p));
            } else {
                self.queue
                    .push(at + self.s.core_delay, Ev::Arrive(SERVER, p));
            }
        }
        self.out.dropped.clear();
        self.out.processed.clear();
        self.out.hints.clear();
        if let Some(w) = self.links[l].next_wake(now) {
            let w = w.max(now);
            if self.wake[l] != Some(w) {
                self.wake[l] = Some(w);
                self.queue.push(w, Ev::LinkWake(l));
            }
        }
    }
}
