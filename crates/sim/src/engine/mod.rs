//! The discrete-event engine: scenario in, results out.
//!
//! Events are ordered by (instant, sequence number) in an
//! [`EventQueue`]; every instant is a [`Time`], every span a `Duration`. Each flow is one `peregrine_proto::Endpoint` pair — a
//! client at the flow's source node and a server at its destination, one
//! "socket" (address `10.x.y.z:port`) each — driven unmodified through
//! the sans-IO interface: after every input (`handle_datagram`,
//! `handle_timeout`, an application's `send_message`) the engine drains
//! `poll_transmit`, reads `poll_event`, and arms the one timer
//! `poll_timeout` asks for. The members of a `[[flow_groups]]` table
//! share one server endpoint per server node instead (`groups.rs`).
//! Datagrams become [`Packet`]s that hop from
//! node to node through [`LinkModel`]s chosen by a [`Router`].
//!
//! Determinism: nothing iterates a hash map; every random source is a
//! `component_rng(seed, name)`; timers and link wake-ups that are
//! superseded stay in the queue and are ignored when they fire (their
//! time no longer matches), which keeps the order of everything else
//! independent of how often a timer is re-armed.

pub(crate) mod build;
pub(crate) mod capture;
mod groups;
pub mod handover;
mod hint_lane;
mod in_flight;
mod link_hints;
pub mod olsr;
/// The event queue, shared with the proto harness (it moved there).
pub use peregrine_proto::vtime::queue;
pub mod routing;
mod security;
mod timer_lane;
pub(crate) mod vehicular;
pub mod wireless;

use crate::apps::{App, Offer};
use crate::metrics::{FlowMetrics, FlowSample, LossCause, LossRecord, SumCount};
use crate::world::link::{DropReason, LinkModel, LinkOutput};
use crate::world::packet::Packet;
use peregrine_cc::Time;
use peregrine_proto::vtime::{self, EndpointTimer, Firing, Host, RunLimits};
use peregrine_proto::{ConnectionHandle, Endpoint, Event, SansIo};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;
use thiserror::Error;

pub use queue::EventQueue;
pub use routing::{Hop, Router, StaticRoutes};

/// A simulation that could not run (or stopped): always with its seed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("simulation {scenario} failed (seed {seed}): {message}")]
pub struct SimError {
    /// The scenario's name.
    pub scenario: String,
    /// The seed, so the failure can be replayed.
    pub seed: u64,
    /// What went wrong.
    pub message: String,
}

/// Events between two calls of a progress observer ([`Sim::run_observed`]).
pub(crate) const PROGRESS_EVERY_EVENTS: u64 = 1 << 16;

/// Most events processed at one instant before the engine declares a
/// livelock (an endpoint whose timer never advances, …).
const MAX_EVENTS_PER_INSTANT: u64 = 5_000_000;

#[derive(Debug)]
pub(crate) enum Ev {
    FlowStart(usize),
    Timer(usize),
    LinkWake(usize),
    /// A packet (slot in `packets`) reaches a node.
    Arrive(usize, u32),
    App(usize),
    /// A link-layer hint reaches flow's sender.
    Hint(usize, Box<peregrine_cc::LinkHint>),
    /// The earliest hint of the vehicular world's [`hint_lane::HintLane`]
    /// reaches its flow's sender.
    LaneHint,
    /// The next hint of a link's hint plan (`link_hints.rs`) is due.
    PlannedHint(usize),
    Sample,
    /// Recompute the wireless world's routes (oracle) or sample them (OLSR).
    RouteTick,
    /// Some OLSR agent has a message to send or a tuple to expire.
    Olsr,
}

/// One simulated socket: an endpoint at a node.
struct Slot {
    ep: Endpoint,
    node: usize,
    port: u16,
    flow: usize,
    client: bool,
    /// The endpoint's `poll_timeout`, with its one live event in the
    /// queue (an earlier request pushes a new event; a later one waits
    /// for this to fire).
    timer: EndpointTimer,
    /// The timer's queued events, only the earliest in the event queue
    /// ([`Sim::push_timer`]).
    timer_lane: timer_lane::TimerLane,
    handle: Option<ConnectionHandle>,
    /// A `[[flow_groups]]` server endpoint serving many flows (`flow` is
    /// then only its first member; see `groups.rs`).
    shared: bool,
    /// Whether its last datagram was long ([`LONG_DATAGRAM_BYTES`]): the
    /// stack of spare buffers it takes from first (`Sim::service`).
    sent_long: bool,
}

/// A datagram at least this long (bytes) is "long": its buffer, once the
/// receiver has read it, goes to the stack long datagrams are taken from
/// (`Sim::spare_payloads`).
const LONG_DATAGRAM_BYTES: usize = 512;

/// One application bound to a stream of a flow.
struct AppSlot {
    app: App,
    flow: usize,
    stream: u16,
    stream_index: usize,
    /// Each message's deadline after it is queued, if any.
    deadline: Option<Duration>,
    /// When the application starts.
    start: Time,
}

struct FlowRt {
    client: usize,
    server: usize,
    apps: Vec<usize>,
    /// Link directions of the forward path (for fairness per bottleneck).
    path: Vec<usize>,
    started: bool,
    config: peregrine_proto::ConnectionConfig,
    streams: Vec<(u16, peregrine_proto::StreamConfig)>,
}

/// The running world.
pub(crate) struct Sim {
    name: String,
    seed: u64,
    /// The end of the run.
    end: Time,
    /// Time between metric samples.
    interval: Duration,
    ip_overhead: u32,
    per_message: bool,
    queue: EventQueue<Ev>,
    links: Vec<Box<dyn LinkModel>>,
    /// Per link direction: the largest packet it carries (wire bytes) and
    /// the packets dropped for being larger.
    link_mtu: Vec<(Option<u32>, u64)>,
    link_wake: Vec<Option<Time>>,
    router: Box<dyn Router>,
    slots: Vec<Slot>,
    by_addr: BTreeMap<(usize, u16), usize>,
    flows: Vec<FlowRt>,
    apps: Vec<AppSlot>,
    metrics: Vec<FlowMetrics>,
    /// Per flow: (stream, message number) → (queued at, bytes) of its
    /// unfinished messages (`in_flight.rs`; issue 40: with 200 flows a
    /// shared B-tree, then one per flow, cost 7 % of city-200's CPU).
    in_flight_msgs: Vec<in_flight::InFlight>,
    /// Per-message rows: flow, stream, number, queued ns, latency ns, bytes.
    message_log: Vec<crate::metrics::MessageRecord>,
    next_packet_id: u64,
    /// Datagram buffers of packets that reached their endpoint, reused
    /// for the next datagrams (`Sim::service`), by whether the datagram
    /// they last carried was short or long ([`LONG_DATAGRAM_BYTES`]).
    spare_payloads: [Vec<Vec<u8>>; 2],
    offers: Vec<Offer>,
    out: LinkOutput,
    /// Zero bytes the applications send (content does not matter): one
    /// shared buffer, every message a slice of it (no copy per message).
    zeros: peregrine_proto::Bytes,
    /// Packets propagating (indexed by `Ev::Arrive`), and free slots.
    packets: Vec<Option<Packet>>,
    free_packets: Vec<u32>,
    /// `<link>/<up|down>` per link direction.
    link_names: Vec<String>,
    /// Per link direction, its state at every sample.
    link_samples: Vec<Vec<crate::metrics::output::LinkSample>>,
    /// The wireless world, if the scenario has one.
    wireless: Option<wireless::Wireless>,
    /// OLSR packets to send (reused buffer).
    olsr_out: Vec<(usize, Packet)>,
    /// The engine's clock: the instant of the event being handled.
    now: Time,
    /// `--pcap`: the captures of every link direction, if asked for.
    pub(crate) capture: Option<capture::LinkCapture>,
    /// The hint plans of links with `hints` (`link_hints.rs`).
    link_hints: Vec<link_hints::LinkHints>,
    /// The vehicular world's hints, known before the run, only the
    /// earliest in the event queue (`hint_lane.rs`).
    hint_lane: hint_lane::HintLane,
}

fn addr(node: usize, port: u16) -> SocketAddr {
    let n = node as u32;
    let ip = std::net::Ipv4Addr::new(10, (n >> 16) as u8, (n >> 8) as u8, n as u8);
    SocketAddr::new(std::net::IpAddr::V4(ip), port)
}

fn node_of(a: &SocketAddr) -> usize {
    match a.ip() {
        std::net::IpAddr::V4(v4) => {
            let o = v4.octets();
            (usize::from(o[1]) << 16) | (usize::from(o[2]) << 8) | usize::from(o[3])
        }
        std::net::IpAddr::V6(_) => usize::MAX,
    }
}

impl Sim {
    fn fail(&self, message: impl Into<String>) -> SimError {
        SimError {
            scenario: self.name.clone(),
            seed: self.seed,
            message: message.into(),
        }
    }

    /// A link-layer hint reaches flow `f`'s sender now: recorded (outage
    /// kinds) and handed to its endpoint. O(log connections).
    fn deliver_hint(&mut self, f: usize, hint: &peregrine_cc::LinkHint) -> Result<(), SimError> {
        if hint.kind.is_link_failure() {
            self.metrics[f].hints.push((
                hint.issued_at.as_nanos(),
                hint.predicted_duration
                    .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            ));
        }
        let c = self.flows[f].client;
        if let Some(h) = self.slots[c].handle {
            self.slots[c].ep.link_hint(h, self.now, hint);
            self.service(c)?;
        }
        Ok(())
    }

    /// Run until the end; returns the number of events processed.
    pub(crate) fn run(&mut self) -> Result<u64, SimError> {
        self.run_observed(&mut |_, _| {})
    }

    /// [`Sim::run`], calling `progress(simulated time, events so far)`
    /// every [`PROGRESS_EVERY_EVENTS`] events (one counter test per event;
    /// the observer cannot change the run).
    pub(crate) fn run_observed(
        &mut self,
        progress: &mut dyn FnMut(Time, u64),
    ) -> Result<u64, SimError> {
        let limits = RunLimits {
            end: Some(self.end),
            max_events_per_instant: MAX_EVENTS_PER_INSTANT,
            progress_every_events: PROGRESS_EVERY_EVENTS,
        };
        vtime::run(self, limits, progress)?;
        self.now = self.end;
        if self
            .wireless
            .as_ref()
            .is_some_and(|w| w.medium.borrow().dcf().is_some())
        {
            // Under the DCF any interface runs the whole medium, so each
            // copies its counters out of it when asked: ask every one once
            // more, so the results see the last events.
            for l in &mut self.links {
                l.next_wake(self.end);
            }
        }
        Ok(self.queue.processed())
    }
}

/// The engine is a world of the one host loop ([`vtime::run`]).
impl Host for Sim {
    type Event = Ev;
    type Error = SimError;

    fn queue(&mut self) -> &mut EventQueue<Ev> {
        &mut self.queue
    }

    fn livelock(&self, at: Time, limit: u64) -> SimError {
        self.fail(format!(
            "livelock: over {limit} events at t = {} ns",
            at.as_nanos()
        ))
    }

    fn handle(&mut self, t: Time, ev: Ev) -> Result<(), SimError> {
        self.now = t;
        match ev {
            Ev::FlowStart(f) => self.start_flow(f)?,
            Ev::Timer(s) => {
                if let Some((at, seq)) = self.slots[s].timer_lane.popped(t) {
                    self.queue.push_reserved(at, seq, Ev::Timer(s));
                }
                match self.slots[s].timer.fire(t) {
                    Firing::Due => {
                        self.slots[s].ep.handle_timeout(t);
                        self.service(s)?;
                    }
                    // Re-armed later since this event was pushed.
                    Firing::Later(a) => self.push_timer(s, a),
                    Firing::Stale => {}
                }
            }
            Ev::LinkWake(l) => {
                if self.link_wake[l] == Some(t) {
                    self.link_wake[l] = None;
                    self.advance_link(l);
                }
            }
            Ev::Arrive(node, slot) => {
                let pkt = self.take_packet(slot);
                self.arrive(node, pkt)?;
            }
            Ev::App(a) => self.fire_app(a)?,
            Ev::Hint(f, hint) => self.deliver_hint(f, &hint)?,
            Ev::LaneHint => {
                if let Some(((f, hint), next)) = self.hint_lane.popped(t) {
                    // The next hint takes the popped one's place at once,
                    // under its reserved number: nothing after it can pop
                    // first.
                    if let Some((at, seq)) = next {
                        self.queue.push_reserved(at, seq, Ev::LaneHint);
                    }
                    self.deliver_hint(f, &hint)?;
                }
            }
            Ev::PlannedHint(k) => self.planned_hint(k)?,
            Ev::Sample => self.sample(),
            Ev::RouteTick => {
                if let Some(w) = self.wireless.as_mut() {
                    let next = w.tick(t);
                    if next <= self.end {
                        self.queue.push(next, Ev::RouteTick);
                    }
                }
            }
            Ev::Olsr => self.olsr_due(),
        }
        Ok(())
    }
}

impl Sim {
    fn start_flow(&mut self, f: usize) -> Result<(), SimError> {
        let now = self.now;
        let (c, srv) = (self.flows[f].client, self.flows[f].server);
        let remote = addr(self.slots[srv].node, self.slots[srv].port);
        let h = self.slots[c]
            .ep
            .connect(now, remote, self.flows[f].config.clone())
            .map_err(|e| self.fail(format!("flows.{f}: cannot open the connection: {e}")))?;
        self.slots[c].handle = Some(h);
        for (id, cfg) in self.flows[f].streams.clone() {
            self.slots[c]
                .ep
                .open_stream(h, now, id, cfg)
                .map_err(|e| self.fail(format!("flows.{f}: stream {id}: {e}")))?;
        }
        self.flows[f].started = true;
        let apps = self.flows[f].apps.clone();
        for a in apps {
            let at = self.apps[a].start.max(self.now);
            self.queue.push(at, Ev::App(a));
        }
        self.service(c)
    }

    /// Drain an endpoint after an input: applications top up, datagrams
    /// go out, events are read, the timer is re-armed.
    fn service(&mut self, s: usize) -> Result<(), SimError> {
        let now = self.now;
        let flow = self.slots[s].flow;
        if self.slots[s].client && self.flows[flow].started {
            self.top_up(flow);
        }
        loop {
            // Written straight into the packet's buffer, a spare one while
            // there are any: no allocation and no copy per packet (issue
            // 40; the copy into a fresh allocation also missed the L2 on
            // most of its lines in the city). A slot takes first a buffer
            // that last carried a datagram as long as its own last one,
            // the last such a receiver read, hoping it is still in cache:
            // cachegrind says mostly not (docs/performance.md).
            let k = usize::from(self.slots[s].sent_long);
            let (mut payload, from) = match self.spare_payloads[k].pop() {
                Some(b) => (b, k),
                None => match self.spare_payloads[1 - k].pop() {
                    Some(b) => (b, 1 - k),
                    None => (Vec::with_capacity(2048), k),
                },
            };
            let Some(tx) = self.slots[s].ep.poll_transmit(now, &mut payload) else {
                self.spare_payloads[from].push(payload);
                break;
            };
            payload.truncate(tx.size);
            self.slots[s].sent_long = tx.size >= LONG_DATAGRAM_BYTES;
            let dst = node_of(&tx.destination);
            let is_data = Packet::datagram_is_data(&payload);
            let slot = &self.slots[s];
            let flow = if slot.shared {
                self.flow_of_peer(tx.destination).unwrap_or(flow)
            } else {
                flow
            };
            let pkt = Packet {
                id: self.next_packet_id,
                flow,
                forward: slot.client,
                is_data,
                src: slot.node,
                dst,
                next_hop: dst,
                dst_port: tx.destination.port(),
                src_port: slot.port,
                wire_bytes: tx.size as u32 + self.ip_overhead,
                created: now,
                left_first_hop: false,
                hops: 0,
                ecn: tx.ecn,
                payload,
            };
            self.next_packet_id += 1;
            if pkt.forward && is_data {
                self.metrics[flow].c.tx_packets += 1;
                self.metrics[flow].c.tx_bytes += u64::from(pkt.wire_bytes);
            }
            let node = self.slots[s].node;
            self.forward(node, pkt);
        }
        while let Some((h, ev)) = self.slots[s].ep.poll_event() {
            self.on_event(s, h, ev);
        }
        if self.slots[s].client {
            if let Some(h) = self.slots[s].handle {
                // The window alone: a whole `stats` snapshot per input
                // touched every counter of the connection (issue 40).
                if let Some(cwnd) = self.slots[s].ep.cwnd_bytes(h) {
                    self.metrics[flow].observe_cwnd(cwnd);
                }
            }
        }
        let want = self.slots[s].ep.poll_timeout();
        if let Some(t) = self.slots[s].timer.arm(want, now) {
            self.push_timer(s, t);
        }
        Ok(())
    }

    /// Queue slot `s`'s timer event at `t`: in its lane, and in the
    /// event queue only if it is the lane's earliest (`timer_lane.rs`:
    /// the order of events is exactly that of queuing them all). O(log
    /// lane + log events).
    fn push_timer(&mut self, s: usize, t: Time) {
        let seq = self.queue.reserve();
        if self.slots[s].timer_lane.push(t, seq) {
            self.queue.push_reserved(t, seq, Ev::Timer(s));
        }
    }

    fn top_up(&mut self, flow: usize) {
        let Some(h) = self.slots[self.flows[flow].client].handle else {
            return;
        };
        let c = self.flows[flow].client;
        for i in 0..self.flows[flow].apps.len() {
            let a = self.flows[flow].apps[i];
            if !self.apps[a].app.is_buffer_filling() || self.apps[a].start > self.now {
                continue;
            }
            while let Some(offer) = self.apps[a].app.top_up(self.now) {
                if !self.send(c, h, a, offer) {
                    break;
                }
                self.apps[a].app.accepted(offer);
            }
        }
    }

    /// Queue one message of app `a`; whether the transport took it.
    fn send(&mut self, c: usize, h: ConnectionHandle, a: usize, offer: Offer) -> bool {
        let now = self.now;
        let (stream, si, flow) = (
            self.apps[a].stream,
            self.apps[a].stream_index,
            self.apps[a].flow,
        );
        let n = offer.bytes as usize;
        if self.zeros.len() < n {
            self.zeros = peregrine_proto::Bytes::from(vec![0; n]);
        }
        let deadline = self.apps[a].deadline.map(|d| now + d);
        match self.slots[c].ep.send_message_with_deadline(
            h,
            now,
            stream,
            self.zeros.slice(..n),
            deadline,
        ) {
            Ok(id) => {
                self.in_flight_msgs[flow].insert(id.stream, id.number, now, offer.bytes);
                let sm = &mut self.metrics[flow].streams[si];
                sm.messages_sent += 1;
                sm.bytes_sent += u64::from(offer.bytes);
                true
            }
            Err(_) => false,
        }
    }

    fn fire_app(&mut self, a: usize) -> Result<(), SimError> {
        let flow = self.apps[a].flow;
        let c = self.flows[flow].client;
        if self.apps[a].app.is_buffer_filling() {
            return self.service(c);
        }
        let Some(h) = self.slots[c].handle else {
            return Ok(());
        };
        let mut offers = std::mem::take(&mut self.offers);
        offers.clear();
        let next = self.apps[a].app.fire(self.now, &mut offers);
        for o in offers.iter() {
            // A timed application whose message the transport refuses
            // (buffer full) loses that message: it does not wait.
            self.send(c, h, a, *o);
        }
        self.offers = offers;
        if let Some(t) = next {
            self.queue.push(t, Ev::App(a));
        }
        self.service(c)
    }

    fn on_event(&mut self, s: usize, h: ConnectionHandle, ev: Event) {
        let flow = if self.slots[s].shared {
            // One endpoint, many flows: the connection's peer names the flow.
            match self.slots[s]
                .ep
                .remote(h)
                .and_then(|a| self.flow_of_peer(a))
            {
                Some(f) => f,
                None => return,
            }
        } else {
            self.slots[s].flow
        };
        match ev {
            Event::Connected if self.slots[s].client => {
                self.metrics[flow]
                    .connected_ns
                    .get_or_insert(self.now.as_nanos());
            }
            Event::MessageReceived { id, bytes, .. } => {
                let m = &mut self.metrics[flow];
                m.c.goodput_bytes += bytes.len() as u64;
                m.c.messages_delivered += 1;
                if let Some((queued, size)) = self.in_flight_msgs[flow].remove(id.stream, id.number)
                {
                    let lat = self.now.as_nanos() - queued.as_nanos();
                    if let Some(si) = m.streams.iter().position(|x| x.id == id.stream) {
                        let sm = &mut m.streams[si];
                        sm.messages_delivered += 1;
                        sm.bytes_delivered += u64::from(size);
                        sm.latencies_ns.push(lat);
                        if sm.finite && sm.messages_delivered == sm.messages_sent {
                            let done = self.flows[flow].apps.iter().any(|&a| {
                                self.apps[a].stream == id.stream && self.apps[a].app.is_done()
                            });
                            if done {
                                sm.completed_ns = Some(self.now.as_nanos());
                            }
                        }
                    }
                    if self.per_message {
                        self.message_log.push(crate::metrics::MessageRecord {
                            flow,
                            stream: id.stream,
                            number: id.number,
                            queued_ns: queued.as_nanos(),
                            latency_ns: lat,
                            bytes: size,
                        });
                    }
                }
            }
            Event::MessageAbandoned { id, .. } => {
                let m = &mut self.metrics[flow];
                if let Some(sm) = m.streams.iter_mut().find(|x| x.id == id.stream) {
                    sm.messages_abandoned += 1;
                }
                self.in_flight_msgs[flow].remove(id.stream, id.number);
            }
            _ => {}
        }
    }

    /// Send `pkt` from `node` towards its destination.
    fn forward(&mut self, node: usize, pkt: Packet) {
        if node == pkt.dst {
            // Loopback: deliver at once.
            let slot = self.store_packet(pkt);
            self.queue.push(self.now, Ev::Arrive(node, slot));
            return;
        }
        if pkt.hops >= crate::world::packet::MAX_HOPS {
            // A routing loop (only possible on OLSR's disagreeing tables).
            if let Some(w) = self.wireless.as_ref() {
                w.medium.borrow_mut().count_hop_limit_drop();
            }
            self.drop_packet(&pkt, DropReason::NoRoute);
            return;
        }
        let Some(hop) = self.router.next_hop(self.now, node, pkt.dst) else {
            self.drop_packet(&pkt, DropReason::NoRoute);
            return;
        };
        let l = hop.link;
        if let Some((Some(mtu), drops)) = self.link_mtu.get_mut(l) {
            if pkt.wire_bytes > *mtu {
                *drops += 1;
                self.drop_packet(&pkt, DropReason::TooBig);
                return;
            }
        }
        let mut pkt = pkt;
        pkt.next_hop = hop.node;
        pkt.hops += 1;
        if let Some(c) = self.capture.as_mut() {
            c.record(l, self.now, &pkt);
        }
        match self.links[l].enqueue(self.now, pkt) {
            Ok(()) => self.advance_link(l),
            Err((p, reason)) => self.drop_packet(&p, reason),
        }
    }

    fn drop_packet(&mut self, p: &Packet, reason: DropReason) {
        // Per packet: `trace` only (a level check when nobody listens).
        tracing::trace!(
            t_ns = self.now.as_nanos(),
            flow = p.flow,
            reason = reason.name(),
            bytes = p.wire_bytes,
            "packet dropped"
        );
        if olsr::is_control(p) {
            self.olsr_drop(reason);
            return;
        }
        let m = &mut self.metrics[p.flow];
        if reason.is_queue() {
            m.c.queue_drops += 1;
        } else {
            m.c.channel_drops += 1;
        }
        if p.is_data && p.forward {
            let cause = match reason {
                // An AQM's drop is the queue's decision: `queue_overflow`
                // in `losses.csv` too.
                DropReason::QueueFull | DropReason::Aqm => Some(LossCause::QueueOverflow),
                DropReason::Channel => Some(LossCause::Fade),
                DropReason::Outage => Some(LossCause::Blockage),
                // Routing and size drops are not the channel's doing.
                DropReason::NoRoute | DropReason::TooBig => None,
            };
            if let Some(cause) = cause {
                m.losses.push(LossRecord {
                    at_ns: self.now.as_nanos(),
                    cause,
                });
            }
        }
    }

    fn advance_link(&mut self, l: usize) {
        let mut out = std::mem::take(&mut self.out);
        self.links[l].advance(self.now, &mut out);
        for (flow, bytes) in out.processed.drain(..) {
            self.metrics[flow].c.processed_bytes += u64::from(bytes);
        }
        for (p, reason) in out.dropped.drain(..) {
            self.drop_packet(&p, reason);
        }
        for (at, p) in out.delivered.drain(..) {
            let to = p.next_hop;
            let slot = self.store_packet(p);
            self.queue.push(at, Ev::Arrive(to, slot));
        }
        for (at, flow, hint) in out.hints.drain(..) {
            self.queue
                .push(at.max(self.now), Ev::Hint(flow, Box::new(hint)));
        }
        self.out = out;
        if let Some(w) = self.links[l].next_wake(self.now) {
            if self.link_wake[l] != Some(w) {
                self.link_wake[l] = Some(w);
                self.queue.push(w, Ev::LinkWake(l));
            }
        }
    }

    fn arrive(&mut self, node: usize, mut pkt: Packet) -> Result<(), SimError> {
        if olsr::is_control(&pkt) {
            self.olsr_arrive(node, pkt);
            return Ok(());
        }
        if node != pkt.dst {
            self.forward(node, pkt);
            return Ok(());
        }
        let Some(&s) = self.by_addr.get(&(node, pkt.dst_port)) else {
            return Ok(());
        };
        if pkt.forward && pkt.is_data {
            self.metrics[pkt.flow].on_data_received(
                pkt.created.as_nanos(),
                self.now.as_nanos(),
                pkt.wire_bytes,
            );
        }
        let from = addr(pkt.src, pkt.src_port);
        self.slots[s]
            .ep
            .handle_datagram(self.now, from, pkt.ecn, &mut pkt.payload);
        // Just read by the receiver (dropped packets' buffers, not read
        // since they were written, are left to the allocator).
        let k = usize::from(pkt.payload.len() >= LONG_DATAGRAM_BYTES);
        self.spare_payloads[k].push(pkt.payload);
        self.service(s)
    }

    fn sample(&mut self) {
        for (l, link) in self.links.iter().enumerate() {
            let (packets, bytes) = link.backlog();
            self.link_samples[l].push(crate::metrics::output::LinkSample {
                time_ns: self.now.as_nanos(),
                backlog_packets: packets,
                backlog_bytes: bytes,
                stats: link.stats().clone(),
            });
        }
        for f in 0..self.flows.len() {
            let c = self.flows[f].client;
            let st = self.slots[c].handle.and_then(|h| self.slots[c].ep.stats(h));
            let m = &mut self.metrics[f];
            let delta = crate::metrics::output::delta(&m.c, &m.last);
            m.last = m.c.clone();
            let SumCount { sum, count: n } = std::mem::take(&mut m.interval_delay_ns);
            let cma = m.cwnd_cma();
            m.samples.push(FlowSample {
                time_ns: self.now.as_nanos(),
                delta,
                cwnd_bytes: st.as_ref().map_or(0, |s| s.cwnd_bytes),
                ssthresh_bytes: st.as_ref().and_then(|s| s.ssthresh_bytes),
                srtt_ns: st
                    .as_ref()
                    .and_then(|s| s.srtt)
                    .map(|d| d.as_nanos() as u64),
                cwnd_cma_bytes: cma,
                delay_mean_ns: (n > 0).then(|| sum as f64 / n as f64),
                retransmissions: st.as_ref().map_or(0, |s| s.packets_retransmitted),
                rtos: st.as_ref().map_or(0, |s| s.rtos),
            });
            for sm in m.streams.iter_mut() {
                sm.series_bytes.push(sm.bytes_delivered);
            }
        }
        let next = self.now + self.interval;
        if next <= self.end {
            self.queue.push(next, Ev::Sample);
        }
    }

    /// Opens a capture per link direction in `dir` (`--pcap`).
    pub(crate) fn capture_into(&mut self, dir: &std::path::Path) -> Result<(), SimError> {
        let c = capture::LinkCapture::create(dir, &self.link_names).map_err(|e| self.fail(e))?;
        self.capture = Some(c);
        Ok(())
    }

    /// Traces every connection of the run as qlog into `dir` (`--qlog`):
    /// one `.sqlog` per connection endpoint, named after its flow (the
    /// flow's index too when flow names repeat) or, for a
    /// `[[flow_groups]]` server, `<node>-shared`.
    pub(crate) fn trace_into(
        &mut self,
        dir: &std::path::Path,
        flow_names: &[String],
    ) -> Result<(), SimError> {
        let unique = flow_names
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            == flow_names.len();
        for i in 0..self.slots.len() {
            let slot = &self.slots[i];
            let label = if slot.shared {
                format!("node{}-shared", slot.node)
            } else if unique {
                flow_names[slot.flow].clone()
            } else {
                format!("{}-{}", slot.flow, flow_names[slot.flow])
            };
            let factory = peregrine_trace::qlog::QlogDir::new(dir, &label)
                .map_err(|e| self.fail(format!("--qlog: cannot create {}: {e}", dir.display())))?;
            self.slots[i].ep.set_trace_factory(Box::new(factory));
        }
        Ok(())
    }

    /// Flushes the captures, if any; returns the files written.
    pub(crate) fn close_capture(&mut self) -> Result<Vec<std::path::PathBuf>, SimError> {
        match self.capture.take() {
            None => Ok(Vec::new()),
            Some(c) => c.finish().map_err(|e| self.fail(e)),
        }
    }

    /// Park a packet while it propagates (events stay small: the heap
    /// moves indices, not packets).
    fn store_packet(&mut self, p: Packet) -> u32 {
        match self.free_packets.pop() {
            Some(i) => {
                self.packets[i as usize] = Some(p);
                i
            }
            None => {
                self.packets.push(Some(p));
                (self.packets.len() - 1) as u32
            }
        }
    }

    fn take_packet(&mut self, i: u32) -> Packet {
        self.free_packets.push(i);
        // Every Arrive event names a slot filled by `store_packet` and
        // is popped exactly once.
        self.packets[i as usize]
            .take()
            .expect("a stored packet is taken once")
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
