//! # The connection state machine
//!
//! One [`Connection`] is one SLTP association seen from one side. It is
//! owned and driven by an [`Endpoint`](crate::Endpoint), which
//! demultiplexes datagrams by connection id; applications talk to the
//! endpoint with a [`ConnectionHandle`](crate::ConnectionHandle).
//!
//! ## Call order (the sans-IO contract)
//!
//! Like quinn-proto, nothing here reads a clock or touches a socket:
//!
//! 1. feed what happened: `handle_datagram(now, …)` for every datagram,
//!    `handle_timeout(now)` when the instant last returned by
//!    `poll_timeout()` has come, or an application call (`send_message`,
//!    `close`, …) with `now`;
//! 2. then call `poll_transmit(now, buf)` until it returns `None`, sending
//!    each datagram it writes;
//! 3. then `poll_event()` until `None`, and `poll_timeout()` to arm the one
//!    timer.
//!
//! **Time never goes backwards**: every `now` passed in must be at least
//! the previous one. An earlier `now` is treated as the latest seen
//! (so a clock hiccup cannot corrupt RTT samples or timers).
//!
//! ## Layout, by concern
//!
//! * send path — [`send`]: messages, fragmentation, coalescing packetizer,
//!   per-block retransmission state; `send::messages` (private): the
//!   application's `send_message`, stream and scheduler settings, expiry;
//!   `send::transmit` (private): what `poll_transmit` sends next and the
//!   timers;
//! * receive path — [`recv`]: received packets, ACK schedule, NACK
//!   generation, reassembly and in-order delivery; `recv::dispatch`
//!   (private): the checks of `handle_datagram` and dispatch by packet type;
//!   `recv::delivery` (private): `poll_event`, held streams, stream credit;
//!   [`window`] (`recv::window`): the handover window, link hints, the pool
//!   hooks; [`range_set`];
//! * life cycle — [`lifecycle`]: START / REJECT / END / FIN / REMOTE_RESET,
//!   idle timeout, keep-alives, SYNC_NO checks; `lifecycle::admission`
//!   (private): the anti-amplification budget of an unvalidated peer
//!   address, the client's retry token and START padding;
//!   `lifecycle::security` (private): the Noise handshake, sealing and
//!   opening; [`path`] (`lifecycle::path`): address migration with path
//!   validation; [`group`] (`lifecycle::group`): JOIN/LEAVE of multicast
//!   groups;
//! * recovery glue — `recovery_glue` (private): where ACK/NACK outcomes,
//!   the controller and the packet-pair outcome meet the connection, and
//!   the data sender's ACK-frequency requests;
//! * [`events`], [`stats`], [`config`]: what the application sees and sets.
//!
//! Loss recovery and congestion control live in [`crate::recovery`], the
//! packet-pair start-up in [`crate::probe`].

pub mod events;
pub mod lifecycle;
pub mod pmtu;
mod recovery_glue;
pub mod recv;
pub mod send;
pub mod stats;
mod trace;

// The public paths of the modules that moved under a concern
// (`connection::path`, `connection::group`, `connection::window`,
// `connection::range_set`) stay as they were.
use lifecycle::admission;
pub use lifecycle::{group, path};
use recovery_glue::ack_frequency;
pub use recv::queue_bound::QueueBoundStats;
pub use recv::{range_set, window};

pub use admission::{MAX_RETRIES, MIN_SECURE_START_LEN};
// The settings live in [`crate::config`], below both the connection and
// the endpoint; `connection::config` stays their old public path.
pub use crate::config;
pub use crate::config::{
    AckPolicy, ConfigError, ConnectionConfig, EndpointConfig, Pacing, PmtuDiscovery,
};
pub use events::{CloseReason, Event, HintEffect, MessageId, Unreachable, ViolationKind};
pub use group::{GroupRequestError, JoinPolicy};
pub use lifecycle::StartParams;
pub use path::PathStats;
pub use pmtu::PmtuStats;
pub use send::{MessageData, SendError, SendRoom};
pub use stats::{ConnectionState, ConnectionStats};
pub use window::{WindowCounters, WindowTarget};

use crate::probe::PacketPair;
use crate::recovery::Recovery;
use crate::wire::PacketType;
use lifecycle::{CloseProgress, StartProgress};
use peregrine_cc::Time;
use recv::RecvState;
use send::SendState;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::SocketAddr;

/// Connection-level counters (the rest live in recovery, send and recv).
#[derive(Clone, Debug, Default)]
pub(crate) struct Counters {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub packets_received: u64,
    pub bytes_received: u64,
    pub acks_sent: u64,
    pub nacks_sent: u64,
    pub nacks_received: u64,
    pub keep_alives_sent: u64,
    pub packets_retransmitted: u64,
    pub bytes_retransmitted: u64,
    pub wrong_sync_no: u64,
    pub wrong_address: u64,
    pub protocol_errors: u64,
}

/// One side of one connection, driven through its
/// [`Endpoint`](crate::Endpoint).
///
/// Call order: feed datagrams, timeouts and application calls with `now`;
/// then drain the transmit queue; then read events and ask for the next
/// timeout. **Time never goes backwards**: an earlier `now` than the
/// latest seen is treated as the latest seen.
#[derive(Debug)]
pub struct Connection {
    /// Shared by every connection a listener accepts (a half-open entry
    /// must stay small: docs/security.md); copied on write (`set_controller`,
    /// `set_scheduler`).
    config: std::sync::Arc<ConnectionConfig>,
    state: ConnectionState,
    now: Time,
    local_id: u16,
    peer_id: u16,
    remote: SocketAddr,
    local_sync: u16,
    peer_sync: Option<u16>,
    local_scale: u8,
    peer_scale: u8,
    /// Per stream: numbers of delivered messages the application has not
    /// read yet.
    unread: BTreeMap<u16, BTreeSet<u32>>,
    /// Per stream: the credit last put in an ACK.
    advertised: BTreeMap<u16, u32>,
    /// Streams whose messages the application does not read for now.
    held: BTreeSet<u16>,
    /// Messages of held streams taken off `events` by `poll_event` (so
    /// it never rescans them), per stream in order; back at the front of
    /// `events` when their stream is released.
    parked: BTreeMap<u16, VecDeque<Event>>,
    /// Where the next ACK's credit section starts (rotation).
    credit_cursor: u16,
    /// The largest packet to build now, bytes before packet protection:
    /// the current PMTU less the tag (fixed without path MTU discovery).
    packet_size: u16,
    /// Path MTU discovery of this side's sending direction (pmtud.rs).
    pmtud: crate::pmtud::Pmtud,
    recovery: Recovery,
    /// Messages one DATA packet completed (reused: no list per packet).
    delivered: Vec<(MessageId, Vec<u8>)>,
    send: SendState,
    recv: RecvState,
    /// This side's ACK-frequency requests to its peer (as data sender).
    ack_policy: ack_frequency::AckFrequencyPolicy,
    probe: PacketPair,
    /// Packet-pair probes due: type, probe id, datagram size.
    probe_sends: VecDeque<(PacketType, u32, u32)>,
    /// ECHO answers due: type, probe id, echoed timestamp, the probe's
    /// arrival time here (ECHO_1/ECHO_2 only).
    echo_replies: VecDeque<(PacketType, u32, u64, Option<u64>)>,
    data_ready: bool,
    initial_window: Option<u64>,
    last_received: Time,
    last_sent: Time,
    keep_alive_pending: bool,
    start_reply_pending: bool,
    status_reply_pending: bool,
    status_poll_pending: bool,
    status_poll_at: Option<Time>,
    status_backoff: u32,
    start: StartProgress,
    closing: CloseProgress,
    events: VecDeque<Event>,
    counters: Counters,
    window: window::WindowState,
    /// The receive-queue bound (recv/queue_bound.rs).
    queue_bound: recv::queue_bound::QueueBound,
    /// Address migration (path.rs).
    path: path::PathState,
    /// JOIN/LEAVE (group.rs).
    groups: group::GroupState,
    /// Handshake and packet keys (`None`: unencrypted).
    security: Option<crate::crypto::SecurityState>,
    /// The trace sink, if this connection is traced (trace.rs).
    tracer: Option<trace::Tracer>,
    /// Anti-amplification budget and the client's retry token (lifecycle/admission.rs).
    admission: admission::AdmissionState,
    /// ICMP hints, the peer-death count, expected outages (lifecycle/failure.rs).
    failure: lifecycle::failure::FailureState,
}

impl Connection {
    fn new(
        now: Time,
        config: std::sync::Arc<ConnectionConfig>,
        local_id: u16,
        remote: SocketAddr,
        local_sync: u16,
        first_probe_id: u32,
    ) -> Connection {
        let packet_size = config.max_packet_size;
        let block = usize::from(packet_size).saturating_sub(config::DATA_OVERHEAD);
        let recovery = recovery_glue::new_recovery(&config, packet_size);
        let scheduler = config.scheduler;
        let queue_bound = recv::queue_bound::QueueBound::new(config.receive_queue_target);
        Connection {
            local_scale: config.window_scale(),
            unread: BTreeMap::new(),
            delivered: Vec::new(),
            advertised: BTreeMap::new(),
            held: BTreeSet::new(),
            parked: BTreeMap::new(),
            credit_cursor: 0,
            start: StartProgress {
                pending: false,
                first_sent_at: None,
                retransmitted: false,
                retx_at: None,
                backoff: 0,
                deadline: now + config.handshake_timeout,
                rejected: None,
            },
            config,
            state: ConnectionState::Starting,
            now,
            local_id,
            peer_id: 0,
            remote,
            local_sync,
            peer_sync: None,
            peer_scale: 0,
            packet_size,
            pmtud: crate::pmtud::Pmtud::disabled(packet_size),
            recovery,
            send: SendState::with_scheduler(block, scheduler),
            recv: RecvState::new(),
            ack_policy: ack_frequency::AckFrequencyPolicy::default(),
            probe: PacketPair::new(first_probe_id),
            probe_sends: VecDeque::new(),
            echo_replies: VecDeque::new(),
            data_ready: false,
            initial_window: None,
            last_received: now,
            last_sent: now,
            keep_alive_pending: false,
            start_reply_pending: false,
            status_reply_pending: false,
            status_poll_pending: false,
            status_poll_at: None,
            status_backoff: 0,
            closing: CloseProgress::default(),
            events: VecDeque::new(),
            counters: Counters::default(),
            window: window::WindowState::default(),
            queue_bound,
            path: path::PathState::default(),
            groups: group::GroupState::default(),
            security: None,
            tracer: None,
            admission: admission::AdmissionState::default(),
            failure: lifecycle::failure::FailureState::default(),
        }
    }

    /// An initiator: STARTING, with its START due.
    pub(crate) fn connect(
        now: Time,
        config: ConnectionConfig,
        local_id: u16,
        remote: SocketAddr,
        local_sync: u16,
        first_probe_id: u32,
    ) -> Connection {
        let mut c = Connection::new(
            now,
            config.into(),
            local_id,
            remote,
            local_sync,
            first_probe_id,
        );
        c.start.pending = true;
        c
    }

    /// A responder for an accepted START: CONNECTED, with its answer due.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn accept(
        now: Time,
        config: std::sync::Arc<ConnectionConfig>,
        local_id: u16,
        remote: SocketAddr,
        local_sync: u16,
        first_probe_id: u32,
        peer_id: u16,
        peer_sync: u16,
        peer_window: Option<u32>,
        params: &StartParams,
    ) -> Result<Connection, crate::wire::RejectReason> {
        let mut c = Connection::new(now, config, local_id, remote, local_sync, first_probe_id);
        c.peer_id = peer_id;
        c.peer_sync = Some(peer_sync);
        c.peer_scale = params.window_scale;
        c.send.set_initial_credit(params.stream_credit);
        if let Some(w) = peer_window {
            c.send
                .set_peer_window(u64::from(w) << params.window_scale.min(12));
        }
        c.negotiate_packet_size(params.max_packet_size)
            .map_err(|_| crate::wire::RejectReason::BAD_PARAMETERS)?;
        c.start_reply_pending = true;
        c.enter_connected(now);
        Ok(c)
    }

    /// Clamp `now` so time never goes backwards.
    fn tick(&mut self, now: Time) -> Time {
        self.now = self.now.max(now);
        self.now
    }

    /// This side's connection id.
    pub fn local_id(&self) -> u16 {
        self.local_id
    }
    /// The peer's connection id (0 until the START answer).
    pub fn peer_id(&self) -> u16 {
        self.peer_id
    }
    /// The peer's address.
    pub fn remote(&self) -> SocketAddr {
        self.remote
    }
    /// The life-cycle state.
    pub fn state(&self) -> ConnectionState {
        self.state
    }
    /// Whether the connection is closed and has nothing more to say: the
    /// endpoint may forget it.
    pub(crate) fn is_drained(&self) -> bool {
        self.state == ConnectionState::Closed
            && self.events.is_empty()
            && !self.closing.reset_pending
    }
}
