//! `N` sans-IO nodes joined by pipes, driven in virtual time: [`Harness`].

use super::types::{HarnessError, LogEntry, NodeId, RunOutcome, StepEvent};
use super::{Pipe, PipeConfig};
use crate::vtime::EventQueue;
use crate::{EcnCodepoint, SansIo, Time};
use std::collections::BTreeMap;
use std::net::SocketAddr;

struct Slot<N> {
    addr: SocketAddr,
    node: N,
    timer: Option<Time>,
    timer_gen: u64,
    spins: u32,
    dirty: bool,
}

struct PipeSlot {
    from: NodeId,
    to: NodeId,
    pipe: Pipe,
    armed: Option<Time>,
    gen: u64,
}

/// What is due; the project's one [`EventQueue`] orders these by (time,
/// sequence number), so equal-time events run in the order they were
/// scheduled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum EventKind {
    Pipe { index: usize, gen: u64 },
    Timer { node: NodeId, gen: u64 },
}

/// Sans-IO nodes in memory, joined by seeded [`Pipe`]s, in virtual time.
///
/// The loop, one event at a time in (time, sequence) order: a due
/// datagram is handed to its receiver with `handle_datagram`, or a due
/// timer fires `handle_timeout`; after either, and after
/// [`add_node`](Self::add_node) or [`node_mut`](Self::node_mut), the node
/// is drained — `poll_transmit` until `None`, each datagram pushed into the
/// pipe to the node owning its destination address (datagrams to unknown
/// addresses are counted in [`unroutable`](Self::unroutable) and dropped) —
/// and its `poll_timeout` is (re)armed. A timeout in the past fires at the
/// current time. Time only moves forward, to the next event.
pub struct Harness<N: SansIo> {
    seed: u64,
    now: Time,
    nodes: Vec<Slot<N>>,
    by_addr: BTreeMap<SocketAddr, NodeId>,
    default_pipe: PipeConfig,
    overrides: BTreeMap<(NodeId, NodeId), PipeConfig>,
    pipe_index: BTreeMap<(NodeId, NodeId), usize>,
    pipes: Vec<PipeSlot>,
    events: EventQueue<EventKind>,
    any_dirty: bool,
    buf: Vec<u8>,
    timer_spin_limit: u32,
    instant_event_limit: u64,
    instant_events: u64,
    log: Option<Vec<LogEntry>>,
    unroutable: u64,
}

impl<N: SansIo> Harness<N> {
    /// Default for [`set_timer_spin_limit`](Self::set_timer_spin_limit).
    pub const DEFAULT_TIMER_SPIN_LIMIT: u32 = 1_000;
    /// Default for [`set_instant_event_limit`](Self::set_instant_event_limit).
    pub const DEFAULT_INSTANT_EVENT_LIMIT: u64 = 10_000_000;

    /// An empty harness at time zero whose pipes draw from `seed`; every
    /// pipe is perfect until configured.
    pub fn new(seed: u64) -> Self {
        Harness {
            seed,
            now: Time::ZERO,
            nodes: Vec::new(),
            by_addr: BTreeMap::new(),
            default_pipe: PipeConfig::default(),
            overrides: BTreeMap::new(),
            pipe_index: BTreeMap::new(),
            pipes: Vec::new(),
            events: EventQueue::new(),
            any_dirty: false,
            buf: Vec::with_capacity(2048),
            timer_spin_limit: Self::DEFAULT_TIMER_SPIN_LIMIT,
            instant_event_limit: Self::DEFAULT_INSTANT_EVENT_LIMIT,
            instant_events: 0,
            log: None,
            unroutable: 0,
        }
    }

    /// Adds a node reachable at `addr`; it is drained at the current time
    /// before the next event.
    ///
    /// # Panics
    /// If another node already has `addr`.
    pub fn add_node(&mut self, addr: SocketAddr, node: N) -> NodeId {
        let id = NodeId(self.nodes.len());
        if let Some(other) = self.by_addr.get(&addr) {
            panic!(
                "harness: {addr} already belongs to {other} (harness seed {})",
                self.seed
            );
        }
        self.by_addr.insert(addr, id);
        self.nodes.push(Slot {
            addr,
            node,
            timer: None,
            timer_gen: 0,
            spins: 0,
            dirty: true,
        });
        self.any_dirty = true;
        id
    }

    /// The node, for inspection.
    ///
    /// # Panics
    /// If `id` is not a node of this harness.
    pub fn node(&self, id: NodeId) -> &N {
        &self.slot(id).node
    }

    /// The node, to act on it (send a message, close…). It is drained at
    /// the current time before the next event.
    ///
    /// # Panics
    /// If `id` is not a node of this harness.
    pub fn node_mut(&mut self, id: NodeId) -> &mut N {
        self.slot(id);
        self.any_dirty = true;
        let slot = &mut self.nodes[id.0];
        slot.dirty = true;
        &mut slot.node
    }

    /// The node's address.
    ///
    /// # Panics
    /// If `id` is not a node of this harness.
    pub fn addr(&self, id: NodeId) -> SocketAddr {
        self.slot(id).addr
    }

    /// Moves the node to `addr` (a NAT rebinding, or a new address after a
    /// handover): from now on datagrams to its old address are
    /// unroutable and its datagrams are delivered as coming from `addr` —
    /// including those already in flight, whose source is read at
    /// delivery. Datagrams already in flight *to* it still arrive.
    ///
    /// # Panics
    /// If `id` is not a node of this harness, or another node has `addr`.
    pub fn set_addr(&mut self, id: NodeId, addr: SocketAddr) {
        let old = self.slot(id).addr;
        if let Some(other) = self.by_addr.get(&addr).filter(|&&o| o != id) {
            panic!(
                "harness: {addr} already belongs to {other} (harness seed {})",
                self.seed
            );
        }
        self.by_addr.remove(&old);
        self.by_addr.insert(addr, id);
        self.nodes[id.0].addr = addr;
    }

    /// Hands `bytes` to node `to` at the current time as if they came
    /// from `from` (any address, a node's or not: a spoofer, a replay),
    /// then drains the node. Not recorded in the delivery log.
    ///
    /// # Panics
    /// If `to` is not a node of this harness.
    pub fn inject(
        &mut self,
        from: SocketAddr,
        to: NodeId,
        bytes: &[u8],
    ) -> Result<(), HarnessError> {
        self.slot(to);
        let now = self.now;
        // The node may decrypt in place: it gets a copy (injection is a
        // test path, not the delivery loop).
        let mut copy = bytes.to_vec();
        self.nodes[to.0]
            .node
            .handle_datagram(now, from, None, &mut copy);
        self.drain(to)?;
        Ok(())
    }

    /// The node owning `addr`, if any.
    pub fn node_at(&self, addr: SocketAddr) -> Option<NodeId> {
        self.by_addr.get(&addr).copied()
    }

    /// How many nodes there are.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The seed every pipe draws from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The current virtual time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Datagrams sent to addresses no node owns (dropped).
    pub fn unroutable(&self) -> u64 {
        self.unroutable
    }

    /// The configuration of every pipe without a per-pair override,
    /// including pipes that already exist.
    pub fn set_default_pipe(&mut self, config: PipeConfig) -> Result<(), HarnessError> {
        config
            .validate()
            .map_err(|source| HarnessError::InvalidPipe {
                from: None,
                to: None,
                source,
                seed: self.seed,
            })?;
        for p in &mut self.pipes {
            if !self.overrides.contains_key(&(p.from, p.to)) {
                p.pipe
                    .set_config(config.clone())
                    .map_err(|source| HarnessError::InvalidPipe {
                        from: None,
                        to: None,
                        source,
                        seed: self.seed,
                    })?;
            }
        }
        self.default_pipe = config;
        Ok(())
    }

    /// The configuration of the pipe carrying datagrams from `from` to
    /// `to`. Datagrams already in it keep their schedule.
    pub fn set_pipe(
        &mut self,
        from: NodeId,
        to: NodeId,
        config: PipeConfig,
    ) -> Result<(), HarnessError> {
        self.slot(from);
        self.slot(to);
        config
            .validate()
            .map_err(|source| HarnessError::InvalidPipe {
                from: Some(from),
                to: Some(to),
                source,
                seed: self.seed,
            })?;
        if let Some(&i) = self.pipe_index.get(&(from, to)) {
            self.pipes[i]
                .pipe
                .set_config(config.clone())
                .map_err(|source| HarnessError::InvalidPipe {
                    from: Some(from),
                    to: Some(to),
                    source,
                    seed: self.seed,
                })?;
        }
        self.overrides.insert((from, to), config);
        Ok(())
    }

    /// The pipe from `from` to `to`, once something has been sent on it.
    pub fn pipe(&self, from: NodeId, to: NodeId) -> Option<&Pipe> {
        self.pipe_index
            .get(&(from, to))
            .map(|&i| &self.pipes[i].pipe)
    }

    /// A node that fires a timer at or before now this many times in a
    /// row without progress is reported as [`HarnessError::TimerSpin`]
    /// (default [`DEFAULT_TIMER_SPIN_LIMIT`](Self::DEFAULT_TIMER_SPIN_LIMIT)).
    pub fn set_timer_spin_limit(&mut self, limit: u32) {
        self.timer_spin_limit = limit;
    }

    /// More events than this at one instant is reported as
    /// [`HarnessError::Stalled`] (default
    /// [`DEFAULT_INSTANT_EVENT_LIMIT`](Self::DEFAULT_INSTANT_EVENT_LIMIT)).
    pub fn set_instant_event_limit(&mut self, limit: u64) {
        self.instant_event_limit = limit;
    }

    /// Starts (or stops, discarding it) recording every delivered datagram.
    pub fn record_deliveries(&mut self, on: bool) {
        self.log = on.then(Vec::new);
    }

    /// The deliveries recorded so far (empty when not recording).
    pub fn delivery_log(&self) -> &[LogEntry] {
        self.log.as_deref().unwrap_or(&[])
    }

    /// When the next event is due, if any (after draining nodes touched
    /// through [`node_mut`](Self::node_mut)).
    pub fn next_event_time(&mut self) -> Result<Option<Time>, HarnessError> {
        self.drain_dirty()?;
        Ok(self.peek_live())
    }

    /// Runs every event due at or before `until`, then sets the time to
    /// `until` (if later than now).
    pub fn run_until(&mut self, until: Time) -> Result<(), HarnessError> {
        while self.next_event_time()?.is_some_and(|at| at <= until) {
            self.step()?;
        }
        self.advance(until);
        Ok(())
    }

    /// Runs until nothing is in flight and no timer is armed, or until the
    /// next event would be after `limit` (time is then set to `limit`).
    pub fn run_until_idle(&mut self, limit: Time) -> Result<RunOutcome, HarnessError> {
        loop {
            match self.next_event_time()? {
                None => return Ok(RunOutcome::Idle),
                Some(at) if at > limit => {
                    self.advance(limit);
                    return Ok(RunOutcome::LimitReached);
                }
                Some(_) => {
                    self.step()?;
                }
            }
        }
    }

    /// Runs the next event; `None` if there is none.
    pub fn step(&mut self) -> Result<Option<StepEvent>, HarnessError> {
        self.drain_dirty()?;
        loop {
            let Some((at, kind)) = self.pop_live() else {
                return Ok(None);
            };
            self.advance(at);
            self.tick()?;
            if let Some(done) = self.run_event(kind)? {
                return Ok(Some(done));
            }
        }
    }

    fn run_event(&mut self, kind: EventKind) -> Result<Option<StepEvent>, HarnessError> {
        let now = self.now;
        match kind {
            EventKind::Pipe { index, .. } => {
                let slot = &mut self.pipes[index];
                slot.armed = None;
                let (from, to) = (slot.from, slot.to);
                let delivered = slot.pipe.pop_due(now);
                self.arm_pipe(index);
                // A live pipe event always finds its datagram due; if not,
                // nothing happened and the caller moves on.
                let Some(mut d) = delivered else {
                    return Ok(None);
                };
                let remote = self.nodes[from.0].addr;
                let len = d.datagram.len();
                let slot = &mut self.nodes[to.0];
                slot.spins = 0;
                // The log keeps the bytes as they travelled (the node may
                // decrypt in place): copied only when logging.
                let logged = self.log.as_ref().map(|_| d.datagram.clone());
                slot.node
                    .handle_datagram(now, remote, d.ecn, &mut d.datagram);
                if let (Some(log), Some(datagram)) = (&mut self.log, logged) {
                    log.push(LogEntry {
                        at: now,
                        sent_at: d.sent_at,
                        from,
                        to,
                        ecn: d.ecn,
                        datagram,
                    });
                }
                self.drain(to)?;
                Ok(Some(StepEvent::Delivered {
                    at: now,
                    from,
                    to,
                    len,
                }))
            }
            EventKind::Timer { node, .. } => {
                self.nodes[node.0].timer = None;
                self.nodes[node.0].node.handle_timeout(now);
                let sent = self.drain(node)?;
                let slot = &mut self.nodes[node.0];
                if sent == 0 && slot.timer.is_some_and(|t| t <= now) {
                    slot.spins += 1;
                    if slot.spins > self.timer_spin_limit {
                        return Err(HarnessError::TimerSpin {
                            node,
                            at: now,
                            count: slot.spins,
                            seed: self.seed,
                        });
                    }
                } else {
                    slot.spins = 0;
                }
                Ok(Some(StepEvent::Timer { at: now, node }))
            }
        }
    }

    fn slot(&self, id: NodeId) -> &Slot<N> {
        match self.nodes.get(id.0) {
            Some(s) => s,
            None => panic!(
                "harness: no {id} (there are {}) (harness seed {})",
                self.nodes.len(),
                self.seed
            ),
        }
    }

    fn advance(&mut self, to: Time) {
        if to > self.now {
            self.now = to;
            self.instant_events = 0;
        }
    }

    /// Counts one event at the current instant against the livelock limit.
    fn tick(&mut self) -> Result<(), HarnessError> {
        self.instant_events += 1;
        if self.instant_events > self.instant_event_limit {
            return Err(HarnessError::Stalled {
                at: self.now,
                limit: self.instant_event_limit,
                seed: self.seed,
            });
        }
        Ok(())
    }

    fn schedule(&mut self, at: Time, kind: EventKind) {
        self.events.push(at, kind);
    }

    fn is_live(&self, kind: EventKind) -> bool {
        match kind {
            EventKind::Pipe { index, gen } => self.pipes[index].gen == gen,
            EventKind::Timer { node, gen } => self.nodes[node.0].timer_gen == gen,
        }
    }

    fn peek_live(&mut self) -> Option<Time> {
        loop {
            let (at, &kind) = self.events.peek()?;
            if self.is_live(kind) {
                return Some(at);
            }
            self.events.pop();
        }
    }

    fn pop_live(&mut self) -> Option<(Time, EventKind)> {
        loop {
            let (at, kind) = self.events.pop()?;
            if self.is_live(kind) {
                return Some((at, kind));
            }
        }
    }

    fn drain_dirty(&mut self) -> Result<(), HarnessError> {
        if !self.any_dirty {
            return Ok(());
        }
        self.any_dirty = false;
        for i in 0..self.nodes.len() {
            if self.nodes[i].dirty {
                self.drain(NodeId(i))?;
            }
        }
        Ok(())
    }

    /// Pushes everything `id` wants to send into pipes and re-arms its
    /// timer; returns how many datagrams it sent.
    fn drain(&mut self, id: NodeId) -> Result<usize, HarnessError> {
        self.nodes[id.0].dirty = false;
        let mut buf = std::mem::take(&mut self.buf);
        let mut sent = 0;
        let result = loop {
            buf.clear();
            let Some(t) = self.nodes[id.0].node.poll_transmit(self.now, &mut buf) else {
                break Ok(sent);
            };
            if t.size > buf.len() {
                break Err(HarnessError::BadTransmit {
                    node: id,
                    size: t.size,
                    written: buf.len(),
                    seed: self.seed,
                });
            }
            if let Err(e) = self.tick() {
                break Err(e);
            }
            sent += 1;
            match self.by_addr.get(&t.destination) {
                Some(&to) => {
                    if let Err(e) = self.send(id, to, buf[..t.size].to_vec(), t.ecn) {
                        break Err(e);
                    }
                }
                None => self.unroutable += 1,
            }
        };
        self.buf = buf;
        let sent = result?;
        let slot = &mut self.nodes[id.0];
        let timer = slot.node.poll_timeout();
        if timer != slot.timer {
            slot.timer = timer;
            slot.timer_gen += 1;
            let gen = slot.timer_gen;
            if let Some(at) = timer {
                self.schedule(at.max(self.now), EventKind::Timer { node: id, gen });
            }
        }
        Ok(sent)
    }

    fn send(
        &mut self,
        from: NodeId,
        to: NodeId,
        datagram: Vec<u8>,
        ecn: Option<EcnCodepoint>,
    ) -> Result<(), HarnessError> {
        let index = match self.pipe_index.get(&(from, to)) {
            Some(&i) => i,
            None => {
                let config = self
                    .overrides
                    .get(&(from, to))
                    .unwrap_or(&self.default_pipe)
                    .clone();
                let name = format!(
                    "pipe:{}->{}",
                    self.nodes[from.0].addr, self.nodes[to.0].addr
                );
                let pipe = Pipe::new(config, self.seed, &name).map_err(|source| {
                    HarnessError::InvalidPipe {
                        from: Some(from),
                        to: Some(to),
                        source,
                        seed: self.seed,
                    }
                })?;
                self.pipes.push(PipeSlot {
                    from,
                    to,
                    pipe,
                    armed: None,
                    gen: 0,
                });
                self.pipe_index.insert((from, to), self.pipes.len() - 1);
                self.pipes.len() - 1
            }
        };
        self.pipes[index].pipe.push(self.now, datagram, ecn);
        self.arm_pipe(index);
        Ok(())
    }

    /// Makes sure an event is queued for the pipe's earliest due datagram.
    fn arm_pipe(&mut self, index: usize) {
        let slot = &mut self.pipes[index];
        let Some(due) = slot.pipe.next_delivery() else {
            return;
        };
        if slot.armed.is_some_and(|a| a <= due) {
            return;
        }
        slot.armed = Some(due);
        slot.gen += 1;
        let gen = slot.gen;
        self.schedule(due.max(self.now), EventKind::Pipe { index, gen });
    }
}
