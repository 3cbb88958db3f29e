//! # The endpoint: many connections behind one socket
//!
//! An [`Endpoint`] owns every connection of one UDP socket (or simulated
//! node), demultiplexes incoming datagrams by DEST_ID (the local connection
//! id), answers STARTs (accepting them when it has a server configuration,
//! else with REJECT), and answers packets for connections it does not know
//! with a stateless reset. It implements [`SansIo`]: the UDP runtime, the
//! simulator and the test harnesses drive it identically.
//!
//! ## Call order
//!
//! ```text
//! loop {
//!     // 1. something happened:
//!     endpoint.handle_datagram(now, remote, ecn, &mut bytes); // or (opened in place)
//!     endpoint.handle_timeout(now);                          // or
//!     endpoint.send_message(handle, now, 0, b"...")?;        // or close(...)
//!     // 2. send what it wants sent:
//!     while let Some(t) = endpoint.poll_transmit(now, &mut buf) { socket.send_to(&buf[..t.size], t.destination) }
//!     // 3. read events and arm the one timer:
//!     while let Some((handle, event)) = endpoint.poll_event() { ... }
//!     timer = endpoint.poll_timeout();
//! }
//! ```
//!
//! **Time never goes backwards**: every `now` must be at least the
//! previous one; an earlier value is treated as the latest seen.
//! No method panics for any input bytes; malformed datagrams are counted
//! in [`EndpointStats`] and dropped.

use crate::connection::{
    ConfigError, Connection, ConnectionConfig, ConnectionState, ConnectionStats, EndpointConfig,
    Event, MessageData, MessageId, SendError, SendRoom, StartParams,
};
use crate::crypto::noise::{HandshakeRng, SEED_LEN};
use crate::io::{EcnCodepoint, SansIo, Transmit};
use crate::rng::SeededRng;
use crate::sched::SchedulerConfig;
use crate::send_helpers::{write, TxBuf};
use crate::streams::StreamConfig;
use crate::trace::{Role, TraceFactory, TraceTarget};
use crate::wire::checksum::datagram_checksum_copying;
use crate::wire::{
    datagram_checksum, BarePayload, DatagramRepr, Flags, HeaderRepr, PacketType, Payload,
    RejectPayload, RejectReason, Tlv, PROTOCOL_VERSION,
};
use peregrine_cc::{CcConfig, LinkHint, Time};
use pool::BufferPool;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

mod admission;
#[cfg(test)]
mod builder_tests;
mod failure;
#[cfg(test)]
mod integrity_tests;
pub mod pool;
#[cfg(test)]
mod pool_sync_tests;
mod pooled_send;
mod security;
mod set;
mod sources;
mod stats;
mod timers;
#[cfg(test)]
mod transmit_at_tests;

pub use stats::EndpointStats;

pub use admission::{HALF_OPEN_ENTRY_BYTES, RETRY_TOKEN_LEN};
pub use failure::RESET_DATAGRAM_LEN;

/// How many closed connections' final stats stay readable.
const CLOSED_STATS_KEPT: usize = 64;

/// Names one connection of an endpoint. Handles are never reused.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnectionHandle(pub u64);

/// Why `connect` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The configuration cannot work.
    #[error(transparent)]
    InvalidConfig(#[from] ConfigError),
    /// The endpoint already has `max_connections` connections (or no free id).
    #[error(
        "too many connections: the endpoint already holds max_connections \
         (close some, or raise EndpointConfig::max_connections)"
    )]
    TooManyConnections,
}

/// Many connections, demultiplexed by connection id.
///
/// # Call order
///
/// 1. Tell it what happened: [`handle_datagram`](SansIo::handle_datagram),
///    [`handle_timeout`](SansIo::handle_timeout) when the instant from
///    [`poll_timeout`](SansIo::poll_timeout) comes, or an application call
///    ([`connect`](Self::connect), [`send_message`](Self::send_message),
///    [`close`](Self::close), …).
/// 2. Call [`poll_transmit`](SansIo::poll_transmit) until `None` and send
///    each datagram.
/// 3. Call [`poll_event`](Self::poll_event) until `None`, then
///    [`poll_timeout`](SansIo::poll_timeout) and arm that one timer.
///
/// **Time never goes backwards**: each `now` must be at least the previous
/// one; an earlier value is treated as the latest seen. No method panics
/// for any input bytes.
#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    rng: SeededRng,
    /// Seeds each connection's PATH_CHALLENGE generator (a separate
    /// stream, so ids and SYNC_NOs stay what they were).
    path_rng: SeededRng,
    /// Seeds of the Noise handshakes' ephemeral keys: a ChaCha20 keystream
    /// seeded from the endpoint seed (stream "handshake"), or with 32 bytes by
    /// [`seed_handshakes`](Self::seed_handshakes).
    handshake_rng: HandshakeRng,
    now: Time,
    next_handle: u64,
    /// The connections, with the queues of those that have something to
    /// send or report and their deadlines (set.rs).
    pub(crate) connections: set::ConnectionSet,
    by_id: BTreeMap<u16, ConnectionHandle>,
    by_peer: BTreeMap<(SocketAddr, u16), ConnectionHandle>,
    stateless: VecDeque<(SocketAddr, Vec<u8>)>,
    /// Connections due in `handle_timeout` (reused: no list per timer).
    due: Vec<ConnectionHandle>,
    closed_stats: VecDeque<(ConnectionHandle, ConnectionStats)>,
    stats: EndpointStats,
    pool: BufferPool,
    /// Retry tokens and half-open connections (admission.rs).
    admission: admission::Admission,
    /// Makes each new connection's trace sink (`set_trace_factory`).
    trace: TraceFactoryBox,
    /// `config.server`, shared by the connections it accepts (one copy,
    /// not one per half-open connection).
    server: Option<std::sync::Arc<ConnectionConfig>>,
    /// The secret of this endpoint's stateless-reset tokens (failure.rs).
    reset_secret: [u8; 32],
    /// `reset_secret` comes from the listener's static key.
    reset_secret_persistent: bool,
    /// New connections keep their raw packet keys for a key log
    /// (`set_key_log`).
    key_log: bool,
    /// Connections with a key generation for the key log
    /// (`take_updated_keys`).
    keylog_ready: std::collections::BTreeSet<ConnectionHandle>,
    /// The groups this endpoint accepts JOINs for, handed to every
    /// connection (`set_join_policy`, multicast/mod.rs).
    pub(crate) join_policy: std::sync::Arc<crate::connection::JoinPolicy>,
}

/// The optional trace factory (a newtype: `dyn TraceFactory` is not `Debug`).
#[derive(Default)]
struct TraceFactoryBox(Option<Box<dyn TraceFactory>>);

impl std::fmt::Debug for TraceFactoryBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Some(TraceFactory)"
        } else {
            "None"
        })
    }
}

impl Endpoint {
    /// An endpoint whose every random choice (connection ids, SYNC_NO,
    /// probe ids) derives from `seed`.
    ///
    /// Complexity: O(1).
    pub fn new(config: EndpointConfig, seed: u64) -> Endpoint {
        let mut ep = Endpoint {
            rng: SeededRng::new(seed).fork("endpoint"),
            path_rng: SeededRng::new(seed).fork("path"),
            handshake_rng: {
                let mut r = SeededRng::new(seed).fork("handshake");
                let mut s = [0u8; SEED_LEN];
                for c in s.chunks_mut(8) {
                    c.copy_from_slice(&r.next_u64().to_be_bytes());
                }
                HandshakeRng::from_seed(s)
            },
            now: Time::ZERO,
            next_handle: 0,
            connections: set::ConnectionSet::default(),
            by_id: BTreeMap::new(),
            by_peer: BTreeMap::new(),
            stateless: VecDeque::new(),
            due: Vec::new(),
            closed_stats: VecDeque::new(),
            stats: EndpointStats {
                pool_ceiling_bytes: config.memory_ceiling_bytes as u64,
                ..EndpointStats::default()
            },
            pool: BufferPool::new(config.memory_ceiling_bytes),
            admission: admission::Admission::new(&mut SeededRng::new(seed).fork("admission")),
            trace: TraceFactoryBox::default(),
            server: config.server.clone().map(std::sync::Arc::new),
            reset_secret: {
                let mut r = SeededRng::new(seed).fork("reset");
                let mut s = [0u8; 32];
                for c in s.chunks_mut(8) {
                    c.copy_from_slice(&r.next_u64().to_be_bytes());
                }
                failure::derive_secret(&s)
            },
            reset_secret_persistent: false,
            key_log: false,
            keylog_ready: std::collections::BTreeSet::new(),
            join_policy: std::sync::Arc::default(),
            config,
        };
        // Adopt the configured listener's static key as the reset secret.
        if let Some(server) = ep.config.server.clone() {
            ep.adopt_reset_secret(&server);
        }
        ep.note_half_open_bounds();
        ep
    }

    /// Traces every connection created from now on: `factory` is asked
    /// for a sink per connection (`crate::trace`; qlog files are
    /// `peregrine-trace`'s). Connections already open stay untraced.
    ///
    /// Complexity: O(1).
    pub fn set_trace_factory(&mut self, factory: Box<dyn TraceFactory>) {
        self.trace.0 = Some(factory);
    }

    pub(crate) fn tick(&mut self, now: Time) -> Time {
        self.now = self.now.max(now);
        self.now
    }

    /// Start accepting connections, configured as `server`.
    ///
    /// Complexity: O(1).
    pub fn accept(&mut self, server: ConnectionConfig) -> Result<(), ConfigError> {
        server.validate()?;
        server.validate_security(false)?;
        self.server = Some(std::sync::Arc::new(server.clone()));
        self.adopt_reset_secret(&server);
        self.config.server = Some(server);
        Ok(())
    }

    /// Stop accepting connections (STARTs are rejected with `refused`).
    ///
    /// Complexity: O(1).
    pub fn stop_accepting(&mut self) {
        self.config.server = None;
        self.server = None;
    }

    /// Open a connection to `remote`: its START leaves at the next
    /// `poll_transmit`. Messages may be queued at once.
    ///
    /// Complexity: O(log n) (n: connections held), plus the handshake's first key
    /// operations for a protected connection.
    pub fn connect(
        &mut self,
        now: Time,
        remote: SocketAddr,
        config: ConnectionConfig,
    ) -> Result<ConnectionHandle, ConnectError> {
        let now = self.tick(now);
        config.validate()?;
        config.validate_security(true)?;
        if self.connections.len() >= self.config.max_connections {
            return Err(ConnectError::TooManyConnections);
        }
        let id = self.alloc_id().ok_or(ConnectError::TooManyConnections)?;
        let sync = self.sync_no();
        let probe_id = self.rng.next_u64() as u32;
        let mut conn = Connection::connect(now, config, id, remote, sync, probe_id);
        if conn
            .init_client_security(self.handshake_rng.next_seed(), self.config.aes_hardware)
            .is_err()
        {
            return Err(ConnectError::InvalidConfig(ConfigError {
                field: "security",
                problem: "could not start its Noise handshake",
            }));
        }
        if self.key_log {
            conn.keep_packet_keys(None);
        }
        Ok(self.insert(id, None, conn))
    }

    fn insert(
        &mut self,
        id: u16,
        peer: Option<(SocketAddr, u16)>,
        mut conn: Connection,
    ) -> ConnectionHandle {
        conn.seed_path(self.path_rng.next_u64());
        conn.set_join_policy(self.join_policy.clone());
        if let Some(f) = self.trace.0.as_mut() {
            let target = TraceTarget {
                role: if peer.is_some() {
                    Role::Server
                } else {
                    Role::Client
                },
                local_id: id,
                remote: conn.remote(),
                created: self.now,
            };
            if let Some(sink) = f.sink(&target) {
                conn.set_trace_sink(sink);
            }
        }
        let handle = ConnectionHandle(self.next_handle);
        self.next_handle += 1;
        self.by_id.insert(id, handle);
        if let Some(p) = peer {
            self.by_peer.insert(p, handle);
        }
        self.connections.insert(handle, conn, peer);
        handle
    }

    fn sync_no(&mut self) -> u16 {
        (self.rng.next_u64() & 0x0fff) as u16
    }

    fn alloc_id(&mut self) -> Option<u16> {
        for _ in 0..32 {
            let id = (self.rng.next_u64() & 0xffff) as u16;
            if id != 0 && !self.by_id.contains_key(&id) {
                return Some(id);
            }
        }
        (1..=u16::MAX).find(|id| !self.by_id.contains_key(id))
    }

    /// Queue a message on `stream`; it is fragmented, scheduled among the
    /// connection's streams and delivered as the stream's reliability mode
    /// says (reliable-ordered by default: exactly once, in order). A
    /// stream never configured with [`open_stream`](Self::open_stream) has
    /// [`StreamConfig::default`].
    ///
    /// `bytes` is any [`MessageData`]: a `bytes::Bytes` (or `Vec<u8>`) is
    /// kept without a copy, its blocks sent as slices of it; a borrowed
    /// slice is copied once, when accepted. O(log n + log streams + log
    /// messages), n: connections held.
    pub fn send_message(
        &mut self,
        handle: ConnectionHandle,
        now: Time,
        stream: u16,
        bytes: impl MessageData,
    ) -> Result<MessageId, SendError> {
        self.send_message_with_deadline(handle, now, stream, bytes, None)
    }

    /// Queue a message that is useless after `deadline`: if the peer has
    /// not acknowledged all of it by then, it is dropped, reported with
    /// [`Event::MessageAbandoned`] and skipped by the receiver.
    ///
    /// Complexity: O(log n + log streams + log messages).
    pub fn send_message_with_deadline(
        &mut self,
        handle: ConnectionHandle,
        now: Time,
        stream: u16,
        bytes: impl MessageData,
        deadline: Option<Time>,
    ) -> Result<MessageId, SendError> {
        let now = self.tick(now);
        self.send_pooled(handle, now, stream, bytes, deadline)
    }

    /// How full the buffers are that a new message on `stream` of
    /// `handle` must fit in (`None`: no such connection): a runtime wakes
    /// a writer refused with `BufferFull` by it
    /// ([`SendRoom::writer_may_wake`]). A query: nothing changes.
    ///
    /// Complexity: O(log n + log streams).
    pub fn send_room(&self, handle: ConnectionHandle, stream: u16) -> Option<SendRoom> {
        self.connections.get(&handle).map(|c| c.send_room(stream))
    }

    /// Whether a message queued now on `stream` of `handle` would only
    /// join data that already waits to be sent, on a stream of priority
    /// class 1–3. Such a connection sends when its congestion window,
    /// its pacer or the peer's window lets it — an acknowledgement or a
    /// timer that a runtime's driver already waits for — so a driver need
    /// not be woken for the message: it leaves in the same turn it would
    /// have anyway. `false` for a class-0 stream (a priority message goes
    /// first at once), a connection with nothing waiting (its driver has
    /// no timer for it) and an unknown connection. A message with a
    /// deadline adds a timer: wake the driver for it whatever this says.
    ///
    /// Complexity: O(log n + log streams).
    pub fn send_joins_pending(&self, handle: ConnectionHandle, stream: u16) -> bool {
        self.connections
            .get(&handle)
            .is_some_and(|c| c.send_joins_pending(stream))
    }

    /// Open a stream with `config`, or change an open one (priority class
    /// 0–3, weight, reliability mode, buffer limit). Either side may open
    /// streams; the receiver needs no configuration.
    ///
    /// Complexity: O(log n + log streams).
    pub fn open_stream(
        &mut self,
        handle: ConnectionHandle,
        now: Time,
        stream: u16,
        config: StreamConfig,
    ) -> Result<(), SendError> {
        let now = self.tick(now);
        let conn = self
            .connections
            .get_mut(&handle)
            .ok_or(SendError::UnknownConnection)?;
        conn.configure_stream(now, stream, config)?;
        conn.trace_stream_opened(now, stream);
        Ok(())
    }

    /// Switch the connection's stream scheduler; queued data carries over.
    /// Returns false for an unknown connection.
    ///
    /// Complexity: O(log n) plus the scheduler's rebuild over the connection's streams.
    pub fn set_scheduler(
        &mut self,
        handle: ConnectionHandle,
        now: Time,
        config: SchedulerConfig,
    ) -> bool {
        let now = self.tick(now);
        match self.connections.get_mut(&handle) {
            Some(c) => {
                c.set_scheduler(now, config);
                true
            }
            None => false,
        }
    }

    /// Close gracefully: finish sending, then END / END + FIN.
    ///
    /// Complexity: O(log n).
    pub fn close(&mut self, handle: ConnectionHandle, now: Time) {
        let now = self.tick(now);
        if let Some(c) = self.connections.get_mut(&handle) {
            c.app_close(now);
        }
        self.pool_sync(handle);
    }

    /// Abort: tell the peer with REMOTE_RESET and close at once.
    ///
    /// Complexity: O(log n).
    pub fn abort(&mut self, handle: ConnectionHandle, now: Time) {
        let now = self.tick(now);
        if let Some(c) = self.connections.get_mut(&handle) {
            c.app_abort(now);
        }
        self.pool_sync(handle);
    }

    /// Replace the congestion controller of a connection (it restarts from
    /// its initial window). Returns `false` for an unknown handle.
    ///
    /// Complexity: O(log n).
    pub fn set_controller(&mut self, handle: ConnectionHandle, now: Time, cc: CcConfig) -> bool {
        let now = self.tick(now);
        match self.connections.get_mut(&handle) {
            Some(c) => {
                c.set_controller(now, cc);
                true
            }
            None => false,
        }
    }

    /// Hand a link-layer hint (blockage, handover, …) to a connection's controller.
    ///
    /// Complexity: O(log n).
    pub fn link_hint(&mut self, handle: ConnectionHandle, now: Time, hint: &LinkHint) {
        let now = self.tick(now);
        if let Some(c) = self.connections.get_mut(&handle) {
            c.handle_link_hint(now, hint);
            c.trace_link_hint(now, hint);
        }
    }

    /// A snapshot of a connection (also for the last closed ones).
    ///
    /// Complexity: O(log n) (+ the 64 closed ones kept).
    pub fn stats(&self, handle: ConnectionHandle) -> Option<ConnectionStats> {
        self.live_or_closed(handle, Connection::stats, ConnectionStats::clone)
    }

    /// A connection's congestion window, bytes: the `cwnd_bytes` of
    /// [`stats`](Self::stats) (also for the last closed ones) without
    /// building the whole snapshot — a caller that reads it after every
    /// input (the simulator's cwnd series) touches only the controller,
    /// not every counter of the connection (issue 40).
    ///
    /// Complexity: O(log n) (+ the 64 closed ones kept).
    pub fn cwnd_bytes(&self, handle: ConnectionHandle) -> Option<u64> {
        self.live_or_closed(handle, Connection::cwnd_bytes, |s| s.cwnd_bytes)
    }

    /// `live` of the connection `handle` if it is held, else `closed` of
    /// its last stats if it is one of the closed ones kept: the one lookup
    /// [`stats`](Self::stats) and [`cwnd_bytes`](Self::cwnd_bytes) share.
    ///
    /// Complexity: O(log n) (+ the 64 closed ones kept).
    fn live_or_closed<T>(
        &self,
        handle: ConnectionHandle,
        live: impl FnOnce(&Connection) -> T,
        closed: impl FnOnce(&ConnectionStats) -> T,
    ) -> Option<T> {
        if let Some(c) = self.connections.get(&handle) {
            return Some(live(c));
        }
        self.closed_stats
            .iter()
            .find(|(h, _)| *h == handle)
            .map(|(_, s)| closed(s))
    }

    /// The life-cycle state of a connection still held.
    ///
    /// Complexity: O(log n).
    pub fn state(&self, handle: ConnectionHandle) -> Option<ConnectionState> {
        self.connections.get(&handle).map(Connection::state)
    }

    /// The peer address of a connection still held.
    ///
    /// Complexity: O(log n).
    pub fn remote(&self, handle: ConnectionHandle) -> Option<SocketAddr> {
        self.connections.get(&handle).map(Connection::remote)
    }

    /// Connections held (closed ones are released once their events are read).
    ///
    /// Complexity: O(1).
    pub fn connection_count(&self) -> usize {
        self.connections.len()
    }

    /// Handles of the connections held, ascending.
    ///
    /// Complexity: O(n): it lists them all.
    pub fn handles(&self) -> Vec<ConnectionHandle> {
        self.connections.keys().copied().collect()
    }

    /// Endpoint-wide counters.
    ///
    /// Complexity: O(1).
    pub fn endpoint_stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// Stop (`held = true`) or resume reading `stream` of a connection:
    /// while held, `poll_event` does not return that stream's messages, so
    /// they count as unread and the stream's credit (if the connection has
    /// `initial_stream_credit`) stops growing; nor the connection's
    /// `PeerClosed` / `Closed` queued behind them (the end of a connection
    /// never overtakes a message). Whether the connection exists.
    ///
    /// Complexity: O(log n + log streams); releasing a stream moves its parked
    /// messages back, O(their count).
    pub fn hold_stream(&mut self, handle: ConnectionHandle, stream: u16, held: bool) -> bool {
        match self.connections.get_mut(&handle) {
            Some(c) => {
                c.hold_stream(stream, held);
                true
            }
            None => false,
        }
    }

    /// The next event of any connection: those of one connection in
    /// order, connections in the order they came to have events.
    /// O(log n) amortized: only connections with events are visited (a
    /// queue of them, kept as connections change), never a scan of all.
    pub fn poll_event(&mut self) -> Option<(ConnectionHandle, Event)> {
        // Deadlines are re-read by `poll_timeout` (set.rs).
        self.connections.settle_queues();
        while let Some(h) = self.connections.front_ev() {
            let ev = self
                .connections
                .get_mut(&h)
                .and_then(Connection::poll_event);
            match ev {
                Some(ev) => {
                    if let Some(c) = self.connections.get_untracked(&h) {
                        c.trace_app_event(&ev);
                    }
                    self.reap(h);
                    return Some((h, ev));
                }
                None => self.connections.done_ev(),
            }
        }
        None
    }

    /// Connections visited so far by the loops of `poll_transmit`,
    /// `handle_timeout`, `poll_event` and `poll_timeout` (a test-only
    /// figure: a turn with one active connection must visit O(1) of them,
    /// whatever the count held).
    #[doc(hidden)]
    pub fn connections_visited(&self) -> u64 {
        self.connections.visited
    }

    fn reap(&mut self, handle: ConnectionHandle) {
        let drained = self
            .connections
            .get(&handle)
            .is_some_and(Connection::is_drained);
        if !drained {
            return;
        }
        self.pool_sync(handle);
        self.forget_half_open(handle);
        if let Some((c, peer)) = self.connections.remove(&handle) {
            self.pool_release(handle, c.pool_accounted());
            self.by_id.remove(&c.local_id());
            for id in c.extra_local_ids() {
                if self.by_id.get(&id) == Some(&handle) {
                    self.by_id.remove(&id);
                }
            }
            self.keylog_ready.remove(&handle);
            if let Some(p) = peer {
                // Only if it still names this connection (a later one
                // from the same peer and id may have replaced it).
                if self.by_peer.get(&p) == Some(&handle) {
                    self.by_peer.remove(&p);
                }
            }
            self.closed_stats.push_back((handle, c.stats()));
            while self.closed_stats.len() > CLOSED_STATS_KEPT {
                self.closed_stats.pop_front();
            }
        }
    }

    fn queue_stateless(
        &mut self,
        to: SocketAddr,
        header: HeaderRepr,
        payload: Payload<'_>,
    ) -> bool {
        if self.stateless.len() >= self.config.max_stateless_queue {
            self.stats.stateless_dropped += 1;
            return false;
        }
        let mut buf = Vec::new();
        if write(&mut buf, header, payload).is_some() {
            self.stateless.push_back((to, buf));
            true
        } else {
            false
        }
    }

    /// The header of a REJECT answering `start`.
    pub(crate) fn reject_header(start: &HeaderRepr) -> HeaderRepr {
        let mut h = HeaderRepr::new(PacketType::Reject);
        h.dest_id = start.src_id;
        h.src_id = 0;
        // The rejecter has no SYNC_NO of its own: it echoes the START's.
        h.sync_no = start.sync_no;
        h.flags = Flags::REPLY | Flags::ST_CKS;
        h
    }

    fn reject(&mut self, to: SocketAddr, start: &HeaderRepr, reason: RejectReason) {
        let h = Self::reject_header(start);
        let p = RejectPayload {
            reason,
            tlvs: vec![Tlv::Version(PROTOCOL_VERSION)],
        };
        if self.queue_stateless(to, h, Payload::Reject(p)) {
            self.stats.rejects_sent += 1;
            if reason == RejectReason::BUSY {
                self.stats.busy_rejects += 1;
            }
        }
    }

    fn on_start(&mut self, now: Time, remote: SocketAddr, dg: &DatagramRepr<'_>, len: usize) {
        let h = dg.header;
        if let Some(handle) = self.by_peer.get(&(remote, h.src_id)).copied() {
            if let Some(c) = self.connections.get_mut(&handle) {
                c.budget_received(len);
                c.on_duplicate_start(now, h.sync_no);
            }
            return;
        }
        let Payload::Start(start) = &dg.payload else {
            return;
        };
        let params = StartParams::from_tlvs(&start.tlvs);
        let Some(mut cfg) = self.server.clone() else {
            self.reject(remote, &h, RejectReason::REFUSED);
            return;
        };
        if cfg.checksum && !h.flags.contains(Flags::ST_CKS) {
            self.stats.unchecked_dropped += 1;
            return;
        }
        let token = params.retry_token.as_deref();
        let admission::Admit::Accept { validated, rtt } = self.admit(now, remote, &h, len, token)
        else {
            return;
        };
        if self.connections.len() >= self.config.max_connections {
            self.reject(remote, &h, RejectReason::BUSY);
            return;
        }
        if self.config.adopt_peer_controller {
            if let Some(name) = params.controller.as_deref().filter(|n| *n != "any") {
                match CcConfig::from_name(name) {
                    Ok(cc) => std::sync::Arc::make_mut(&mut cfg).cc = cc,
                    Err(_) => {
                        self.reject(remote, &h, RejectReason::CONTROLLER_UNSUPPORTED);
                        return;
                    }
                }
            }
        }
        let handshake = match self.read_start_handshake(&cfg, &h, &start.tlvs) {
            Ok(hs) => hs,
            Err(answer) => {
                if let Some(reason) = answer {
                    self.reject(remote, &h, reason);
                }
                return;
            }
        };
        let Some(id) = self.alloc_id() else {
            self.reject(remote, &h, RejectReason::BUSY);
            return;
        };
        let mut handshake = handshake;
        if let Some(hs) = handshake.as_mut().filter(|hs| hs.reset_asked()) {
            hs.set_reset_token(self.reset_token(id, h.src_id, h.sync_no));
        }
        let sync = self.sync_no();
        let probe_id = self.rng.next_u64() as u32;
        let window = h.flags.contains(Flags::W_VAL).then_some(h.window_size);
        match Connection::accept(
            now, cfg, id, remote, sync, probe_id, h.src_id, h.sync_no, window, &params,
        ) {
            Ok(mut conn) => {
                if let Some(hs) = handshake {
                    conn.attach_server_security(hs);
                    if self.key_log {
                        conn.keep_packet_keys(security::client_ephemeral(&start.tlvs));
                    }
                }
                if !self.admit_reply(now, remote, &h, len, validated, &mut conn) {
                    return;
                }
                self.stats.connections_accepted += 1;
                let handle = self.insert(id, Some((remote, h.src_id)), conn);
                self.track_half_open(now, handle, remote, rtt);
            }
            Err(reason) => self.reject(remote, &h, reason),
        }
    }

    fn stateless_reset(&mut self, remote: SocketAddr, h: &HeaderRepr) {
        let provokes = match h.pk_type {
            PacketType::Data
            | PacketType::Echo
            | PacketType::Echo1
            | PacketType::Echo2
            | PacketType::Status
            | PacketType::Idle => true,
            PacketType::End => h.flags.contains(Flags::REPLY_REQ),
            _ => false,
        };
        // Only a checksum-verified packet may provoke a reset: a corrupted
        // DEST_ID must not end a healthy connection.
        if !provokes || h.flags.contains(Flags::REMOTE_RESET) || !h.flags.contains(Flags::ST_CKS) {
            return;
        }
        let mut r = HeaderRepr::new(PacketType::Fin);
        r.dest_id = h.src_id;
        r.src_id = h.dest_id;
        // Echo the provoking packet's SYNC_NO: proof we saw it.
        r.sync_no = h.sync_no;
        r.flags = Flags::REMOTE_RESET | Flags::ST_CKS;
        if self.queue_stateless(remote, r, Payload::Bare(BarePayload { packet_number: 0 })) {
            self.stats.resets_sent += 1;
        }
    }
}

/// Complexities (n: connections held): `handle_datagram` O(log n) plus the
/// connection's own work; `poll_transmit` O(log n) per connection it
/// visits, and it visits only those touched since they last had nothing
/// to send; `poll_timeout` O(log n) after settling the touched
/// connections (O(log n) each); `handle_timeout` O(log n) per due
/// connection (and per expired half-open one), none for the others.
impl SansIo for Endpoint {
    fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        bytes: &mut [u8],
    ) {
        // The datagram's own arrival time goes to its connection as it
        // is (the connection keeps it for the packet pair and ticks its
        // clock itself); the endpoint's clock never goes back.
        let arrived = now;
        let now = self.tick(now);
        self.stats.datagrams_received += 1;
        if self.protected_stateless_reset(remote, bytes) {
            return;
        }
        match self.unprotect(bytes, remote) {
            None => self.handle_plain(now, arrived, remote, ecn, bytes),
            // Opened in place: the plaintext datagram is the prefix.
            Some(Some(n)) => {
                let plain = bytes.get(..n).unwrap_or_default();
                self.handle_plain(now, arrived, remote, ecn, plain);
            }
            Some(None) => {}
        }
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        // The one code path, at offset 0; the vector then holds exactly
        // the datagram, as the contract says.
        let t = self.poll_transmit_inner(now, buf, 0);
        buf.truncate(t.as_ref().map_or(0, |t| t.size));
        t
    }

    fn poll_transmit_at(&mut self, now: Time, buf: &mut Vec<u8>, start: usize) -> Option<Transmit> {
        self.poll_transmit_inner(now, buf, start)
    }

    fn poll_timeout(&mut self) -> Option<Time> {
        self.poll_timeout_inner()
    }

    fn handle_timeout(&mut self, now: Time) {
        self.handle_timeout_inner(now)
    }
}

impl Endpoint {
    /// A datagram in the clear (never protected, or just opened), which
    /// arrived at `arrived` (at or before `now`).
    fn handle_plain(
        &mut self,
        now: Time,
        arrived: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        bytes: &[u8],
    ) {
        // The checksum is verified before anything acts on the datagram,
        // as `DatagramRepr::decode` would — but, for a DATA block that
        // its message takes next, while copying the block there
        // (`verify_checksum`).
        let Ok((dg, checksum_due)) = DatagramRepr::decode_deferring_checksum(bytes) else {
            self.stats.decode_errors += 1;
            return;
        };
        let h = dg.header;
        let handle = match h.dest_id {
            0 => None,
            id => self.by_id.get(&id).copied(),
        };
        if checksum_due && !self.verify_checksum(handle, &dg, bytes) {
            self.stats.decode_errors += 1;
            return;
        }
        if h.dest_id == 0 {
            let request = h.pk_type == PacketType::Start
                && h.flags.contains(Flags::REPLY_REQ)
                && !h.flags.contains(Flags::REPLY);
            if request {
                self.on_start(now, remote, &dg, bytes.len());
            } else {
                self.stats.unknown_connection += 1;
            }
            return;
        }
        match handle {
            Some(handle) => {
                // The connection is looked up once for the datagram and
                // its pool accounting (`pool_sync` would look it up again).
                let swapped = self.connections.get_mut(&handle).map(|c| {
                    c.trace_received(now, &dg, bytes.len());
                    c.handle_datagram(arrived, remote, ecn, &dg);
                    c.trace_metrics(now);
                    c.clear_staged();
                    c.pool_swap()
                });
                self.check_half_open(handle);
                self.pool_sync_swapped(swapped);
            }
            None => {
                self.stats.unknown_connection += 1;
                self.stateless_reset(remote, &h);
            }
        }
    }

    /// Whether the checksum of plain datagram `bytes` (decoded as `dg`,
    /// for connection `handle` if one has its id) is right. A DATA
    /// datagram of one frame whose block its message takes next
    /// (`Connection::stage_block`) is summed while its block is copied
    /// into the message's buffer, where the store then finds it: the
    /// bytes are read once, not once to check and once to copy. Any
    /// other datagram is summed as `DatagramRepr::decode` sums it. Nothing
    /// observable changes either way: the connection is not marked
    /// touched, and a staged copy is taken only by the store of this very
    /// datagram. O(len).
    fn verify_checksum(
        &mut self,
        handle: Option<ConnectionHandle>,
        dg: &DatagramRepr<'_>,
        bytes: &[u8],
    ) -> bool {
        let want = dg.header.chksum;
        if let (Some(handle), Payload::Data(d)) = (handle, &dg.payload) {
            let mut frames = d.frames.iter();
            if let (Some(f), None) = (frames.next(), frames.next()) {
                // The frame's data lies in `bytes` (it was decoded from
                // them): its offset, from the two addresses.
                let start = (f.data.as_ptr() as usize).checked_sub(bytes.as_ptr() as usize);
                if let (Some(start), Some(c)) = (start, self.connections.get_untracked(&handle)) {
                    if let Some(dst) = c.stage_block(&f) {
                        let end = start + f.data.len();
                        match datagram_checksum_copying(bytes, start..end, dst) {
                            Some(sum) if sum == want => return true,
                            Some(_) => {
                                c.clear_staged();
                                return false;
                            }
                            None => c.clear_staged(),
                        }
                    }
                }
            }
        }
        datagram_checksum(bytes) == want
    }

    /// Both `poll_transmit`s: the next datagram, built and sealed at
    /// `buf[start..]` (see [`TxBuf`]).
    fn poll_transmit_inner(
        &mut self,
        now: Time,
        buf: &mut Vec<u8>,
        start: usize,
    ) -> Option<Transmit> {
        let now = self.tick(now);
        let mut out = TxBuf::new(buf, start);
        if let Some((destination, bytes)) = self.stateless.pop_front() {
            out.put(0, &bytes);
            return Some(Transmit {
                destination,
                ecn: None,
                size: bytes.len(),
            });
        }
        // Only connections touched since they last had nothing to send
        // are visited, round robin (one that sent goes to the back). Their
        // deadlines wait for `poll_timeout`: a sender touches its
        // connection with every datagram (set.rs). A connection sending
        // alone is taken back without settling the queues (`pop_tx_alone`:
        // the same connection, the same set afterwards).
        let mut next = self.connections.pop_tx_alone();
        if next.is_none() {
            self.connections.settle_queues();
        }
        while let Some(handle) = next.take().or_else(|| self.connections.pop_tx()) {
            let sent = self
                .connections
                .get_untracked(&handle)
                .and_then(|c| c.poll_transmit_into(now, &mut out));
            if let Some(written) = sent {
                if self.key_log {
                    match self.sent_keylogged(now, handle, &mut out, &written) {
                        Some(t) => return Some(t),
                        None => continue,
                    }
                }
                // Its deadline and events are re-keyed at the next settle.
                // Traced and sealed with the builder's report of what it
                // wrote: neither reads the header back. Then what
                // `note_sent` and `pool_sync` read of it, in the same
                // visit (one lookup, not four).
                let Some(c) = self.connections.get_mut(&handle) else {
                    continue;
                };
                c.trace_sent(now, &out, &written);
                let sealed = c.seal_outgoing(&mut out, &written);
                let sent = sealed.map(|size| {
                    c.budget_sent(size);
                    let limited = c.take_amplification_limited();
                    (size, c.transmit_destination(), c.transmit_ecn(), limited)
                });
                let (before, after) = c.pool_swap();
                let drained = c.is_drained();
                self.pool.update(before, after);
                self.wake_writers();
                let Some((size, destination, ecn, limited)) = sent else {
                    // No keys yet: the datagram cannot leave (recovery
                    // treats it as lost). Try the next one.
                    continue;
                };
                self.stats.amplification_limited += limited;
                // It may have more: back of the queue.
                self.connections.requeue_tx(handle);
                if drained {
                    self.reap(handle);
                }
                return Some(Transmit {
                    destination,
                    ecn,
                    size,
                });
            }
            // Nothing to send: off the queue until something touches it;
            // its deadline and events are re-keyed here.
            self.note_held(handle);
            self.pool_sync(handle);
            self.reap(handle);
            self.connections.refresh(handle, false);
            self.connections.untouch(handle);
        }
        None
    }

    /// The sent path of `poll_transmit_inner` step by step, for an
    /// endpoint that keeps a key log (the key work comes between the seal
    /// and the accounting): the transmit, or `None` when the datagram
    /// could not be sealed.
    fn sent_keylogged(
        &mut self,
        now: Time,
        handle: ConnectionHandle,
        out: &mut TxBuf<'_>,
        written: &crate::send_helpers::Written,
    ) -> Option<Transmit> {
        let sealed = self.connections.get_mut(&handle).and_then(|c| {
            c.trace_sent(now, out, written);
            c.seal_outgoing(out, written)
                .map(|n| (n, c.transmit_destination(), c.transmit_ecn()))
        });
        self.after_key_work(handle);
        let Some((size, destination, ecn)) = sealed else {
            self.pool_sync(handle);
            return None;
        };
        self.connections.requeue_tx(handle);
        self.note_sent(handle, size);
        self.pool_sync(handle);
        self.reap(handle);
        Some(Transmit {
            destination,
            ecn,
            size,
        })
    }

    fn poll_timeout_inner(&mut self) -> Option<Time> {
        self.connections.settle();
        let conn = self.connections.timers.next().map(|(t, _)| t);
        let half_open = self.half_open_timeout();
        match (conn, half_open) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout_inner(&mut self, now: Time) {
        let now = self.tick(now);
        self.connections.settle();
        self.expire_half_open(now);
        // Only the due connections, each once (a connection whose timer is
        // still due after its handler runs waits for the next call).
        let mut due = std::mem::take(&mut self.due);
        while let Some(handle) = self.connections.pop_due(now) {
            due.push(handle);
        }
        for handle in due.drain(..) {
            self.connections.visit();
            if let Some(c) = self.connections.get_mut(&handle) {
                c.handle_timeout(now);
                c.trace_metrics(now);
            }
            self.pool_sync(handle);
        }
        self.due = due;
    }
}
