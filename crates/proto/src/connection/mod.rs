//! # The connection state machine
//!
//! One [`Connection`] is one SLTP association seen from one side. It is
//! owned and driven by an [`Endpoint`](crate::endpoint::Endpoint), which
//! demultiplexes datagrams by connection id; applications talk to the
//! endpoint with a [`ConnectionHandle`](crate::endpoint::ConnectionHandle).
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
//! ## Layout
//!
//! * [`lifecycle`]: START / REJECT / END / FIN / REMOTE_RESET, idle timeout,
//!   keep-alives, SYNC_NO checks;
//! * [`send`]: messages, fragmentation, coalescing packetizer, per-block
//!   retransmission state;
//! * [`recv`]: received packets, ACK schedule, NACK generation, reassembly
//!   and in-order delivery;
//! * `transmit` (private): what `poll_transmit` sends next and the timers;
//! * [`window`]: the handover window, link hints, the pool hooks;
//! * [`path`]: address migration with path validation;
//! * [`group`]: JOIN/LEAVE of multicast groups;
//! * `admission` (private): the anti-amplification budget of an
//!   unvalidated peer address, the client's retry token and START padding;
//! * [`events`], [`stats`], [`config`]: what the application sees and sets.
//!
//! Loss recovery and congestion control live in [`crate::recovery`], the
//! packet-pair start-up in [`crate::probe`].

mod ack_frequency;
mod admission;
pub mod config;
mod dispatch;
pub mod events;
pub mod group;
pub mod lifecycle;
pub mod path;
pub mod range_set;
pub mod recv;
mod security;
pub mod send;
pub mod stats;
mod transmit;
pub mod window;

#[cfg(test)]
mod aead_tests;
#[cfg(test)]
mod data_tests;
#[cfg(test)]
mod e2e_tests;
#[cfg(test)]
mod flow_tests;
#[cfg(test)]
mod noise_tests;
#[cfg(test)]
mod path_tests;
#[cfg(test)]
mod security_tests;
#[cfg(test)]
pub(crate) mod testdriver;
#[cfg(test)]
mod tests;

pub use admission::{MAX_RETRIES, MIN_SECURE_START_LEN};
pub use config::{ConfigError, ConnectionConfig, EndpointConfig};
pub use events::{CloseReason, Event, MessageId, ViolationKind};
pub use group::GroupRequestError;
pub use lifecycle::StartParams;
pub use path::PathStats;
pub use send::{MessageData, SendError};
pub use stats::{ConnectionState, ConnectionStats};
pub use window::{WindowCounters, WindowTarget};

use crate::probe::PacketPair;
use crate::recovery::{Recovery, RecoveryConfig};
use crate::sched::SchedulerConfig;
use crate::streams::StreamConfig;
use crate::wire::{AckPayload, PacketType, StreamCredit};
use lifecycle::{CloseProgress, StartProgress};
use peregrine_cc::{CcConfig, Time};
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
/// [`Endpoint`](crate::endpoint::Endpoint).
///
/// Call order: feed datagrams, timeouts and application calls with `now`;
/// then drain the transmit queue; then read events and ask for the next
/// timeout. **Time never goes backwards**: an earlier `now` than the
/// latest seen is treated as the latest seen.
#[derive(Debug)]
pub struct Connection {
    config: ConnectionConfig,
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
    packet_size: u16,
    recovery: Recovery,
    /// Messages one DATA packet completed (reused: no list per packet).
    delivered: Vec<(MessageId, Vec<u8>)>,
    send: SendState,
    recv: RecvState,
    /// This side's ACK-frequency requests to its peer (as data sender).
    ack_policy: ack_frequency::AckFrequencyPolicy,
    probe: PacketPair,
    probe_sends: VecDeque<(PacketType, u32)>,
    echo_replies: VecDeque<(PacketType, u32, u64)>,
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
    /// Address migration (path.rs).
    path: path::PathState,
    /// JOIN/LEAVE (group.rs).
    groups: group::GroupState,
    /// Handshake and packet keys (`None`: unencrypted).
    security: Option<crate::crypto::SecurityState>,
    /// Anti-amplification budget and the client's retry token (admission.rs).
    admission: admission::AdmissionState,
}

fn recovery_config(config: &ConnectionConfig, packet_size: u16) -> RecoveryConfig {
    RecoveryConfig {
        mss: u32::from(packet_size),
        initial_rto: config.initial_rto,
        min_rto: config.min_rto,
        max_rto: config.max_rto,
        packet_threshold: config.packet_threshold,
        max_ack_delay: config.max_ack_delay,
    }
}

impl Connection {
    fn new(
        now: Time,
        config: ConnectionConfig,
        local_id: u16,
        remote: SocketAddr,
        local_sync: u16,
        first_probe_id: u32,
    ) -> Connection {
        let packet_size = config.max_packet_size;
        let block = usize::from(packet_size).saturating_sub(config::DATA_OVERHEAD);
        let recovery = Recovery::new(recovery_config(&config, packet_size), config.cc.build());
        let scheduler = config.scheduler;
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
            path: path::PathState::default(),
            groups: group::GroupState::default(),
            security: None,
            admission: admission::AdmissionState::default(),
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
        let mut c = Connection::new(now, config, local_id, remote, local_sync, first_probe_id);
        c.start.pending = true;
        c
    }

    /// A responder for an accepted START: CONNECTED, with its answer due.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn accept(
        now: Time,
        config: ConnectionConfig,
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

    fn rebuild_recovery(&mut self) {
        self.recovery = Recovery::new(
            recovery_config(&self.config, self.packet_size),
            self.config.cc.build(),
        );
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

    /// Queue a message; see [`Endpoint::send_message`](crate::endpoint::Endpoint::send_message).
    pub(crate) fn send_message(
        &mut self,
        now: Time,
        stream: u16,
        bytes: impl MessageData,
        deadline: Option<Time>,
    ) -> Result<MessageId, SendError> {
        let now = self.tick(now);
        let len = bytes.message_len();
        if !matches!(
            self.state,
            ConnectionState::Starting | ConnectionState::Connected
        ) {
            return Err(SendError::Closed);
        }
        if len > self.config.max_message_size {
            return Err(SendError::MessageTooLarge {
                size: len,
                max: self.config.max_message_size,
            });
        }
        if self.send.outstanding_messages() >= self.config.max_outstanding_messages
            || self.send.buffered_bytes() + len > self.config.max_send_buffer_bytes
            || !self.send.stream_has_room(stream, len)
        {
            return Err(SendError::BufferFull);
        }
        self.send
            .enqueue(now, stream, bytes.into_message_bytes(), deadline)
    }

    /// Open or reconfigure a stream.
    pub(crate) fn configure_stream(
        &mut self,
        now: Time,
        stream: u16,
        config: StreamConfig,
    ) -> Result<(), SendError> {
        self.tick(now);
        if !config.is_valid() {
            return Err(SendError::InvalidStreamConfig(stream));
        }
        self.send.configure(stream, config);
        Ok(())
    }

    /// Replace the stream scheduler.
    pub(crate) fn set_scheduler(&mut self, now: Time, config: SchedulerConfig) {
        self.tick(now);
        self.config.scheduler = config;
        self.send.set_scheduler(config);
    }

    /// Abandon messages past their deadline and report every abandoned one.
    pub(crate) fn expire_messages(&mut self, now: Time) {
        self.send.expire(now);
        self.report_abandoned();
    }

    /// Turn abandoned messages into events.
    pub(crate) fn report_abandoned(&mut self) {
        while let Some((id, reason)) = self.send.pop_abandoned() {
            self.events
                .push_back(Event::MessageAbandoned { id, reason });
        }
    }

    /// The application closes the connection.
    pub(crate) fn app_close(&mut self, now: Time) {
        let now = self.tick(now);
        self.close(now);
    }

    /// The application aborts the connection.
    pub(crate) fn app_abort(&mut self, now: Time) {
        let now = self.tick(now);
        self.abort(now);
    }

    /// Replace the congestion controller.
    pub(crate) fn set_controller(&mut self, now: Time, cc: CcConfig) {
        let now = self.tick(now);
        self.config.cc = cc;
        if self.state == ConnectionState::Starting {
            self.rebuild_recovery();
        } else {
            self.recovery
                .replace_controller(now, self.config.cc.build());
        }
    }

    /// The next event for the application.
    /// O(1) amortized: a held stream's message is parked once, not
    /// rescanned at every call.
    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        while let Some(Event::MessageReceived { stream, .. }) = self.events.front() {
            if !self.held.contains(stream) {
                break;
            }
            let stream = *stream;
            let ev = self.events.pop_front()?;
            self.parked.entry(stream).or_default().push_back(ev);
        }
        // The end of the connection never overtakes a held message: an
        // application told "closed" must have been handed every message
        // first (the runtime reads "closed, inbox empty" as the end).
        if !self.parked.is_empty()
            && matches!(
                self.events.front(),
                Some(Event::PeerClosed | Event::Closed { .. })
            )
        {
            return None;
        }
        let ev = self.events.pop_front()?;
        if let Event::MessageReceived { id, .. } = &ev {
            self.on_app_read(*id);
        }
        if let Event::MessageReceived { bytes, .. } = &ev {
            let before = self.free_receive_bytes();
            self.recv.on_read(bytes.len());
            let half = self.config.max_receive_buffer_bytes / 2;
            if before < half && self.free_receive_bytes() >= half {
                // The window reopened: tell the sender without waiting.
                self.recv.request_ack_at(self.now);
            }
        }
        Some(ev)
    }

    /// The application stops (`true`) or resumes reading `stream`: while
    /// held, its messages stay unread (and keep its credit from growing).
    pub(crate) fn hold_stream(&mut self, stream: u16, held: bool) {
        if held {
            self.held.insert(stream);
        } else {
            self.held.remove(&stream);
            // Its parked messages came before everything still queued.
            for ev in self.parked.remove(&stream).into_iter().flatten().rev() {
                self.events.push_front(ev);
            }
        }
    }

    /// Whether `poll_event` may have something (the endpoint's queue of
    /// connections with events).
    pub(crate) fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// A delivered message waits for the application.
    pub(crate) fn on_delivered(&mut self, id: MessageId) {
        if self.config.initial_stream_credit.is_some() {
            self.unread.entry(id.stream).or_default().insert(id.number);
        }
    }

    fn on_app_read(&mut self, id: MessageId) {
        let Some(credit) = self.config.initial_stream_credit else {
            return;
        };
        if let Some(set) = self.unread.get_mut(&id.stream) {
            set.remove(&id.number);
            if set.is_empty() {
                self.unread.remove(&id.stream);
            }
        }
        // Tell the sender without waiting once half the credit came back.
        let limit = self.credit_limit(id.stream, credit);
        let old = self.advertised.get(&id.stream).copied().unwrap_or(credit);
        if limit.saturating_sub(old) >= (credit / 2).max(1) {
            self.recv.request_ack_at(self.now);
        }
    }

    /// Whether a frame carries data of a message at or above our current
    /// credit (which is at least every credit we ever announced).
    pub(crate) fn beyond_credit(&self, frames: &crate::wire::Frames<'_>) -> bool {
        let Some(credit) = self.config.initial_stream_credit else {
            return false;
        };
        frames
            .iter()
            .any(|f| !f.is_skip() && f.message_number >= self.credit_limit(f.stream_id, credit))
    }

    /// Our credit for `stream`: the oldest message not yet read (or not yet
    /// delivered) plus the initial credit.
    fn credit_limit(&self, stream: u16, credit: u32) -> u32 {
        let mut base = self.recv.first_unfinished(stream);
        if let Some(&n) = self.unread.get(&stream).and_then(|s| s.first()) {
            base = base.min(n);
        }
        base.saturating_add(credit)
    }

    /// The credit section of the next ACK: up to `max` streams, taken
    /// round-robin from the streams data arrived on, ascending.
    pub(crate) fn credits_for_ack(&mut self, max: usize) -> Vec<StreamCredit> {
        let Some(credit) = self.config.initial_stream_credit else {
            return Vec::new();
        };
        let ids = self.recv.stream_ids();
        let max = max.min(AckPayload::MAX_CREDITS);
        if ids.is_empty() || max == 0 {
            return Vec::new();
        }
        let start = ids.partition_point(|&id| id < self.credit_cursor);
        let mut chosen: Vec<u16> = ids
            .iter()
            .cycle()
            .skip(start)
            .take(ids.len().min(max))
            .copied()
            .collect();
        if ids.len() > max {
            self.credit_cursor = chosen.last().map_or(0, |&id| id.wrapping_add(1));
        }
        chosen.sort_unstable();
        chosen
            .into_iter()
            .map(|stream| {
                let max_message = self.credit_limit(stream, credit);
                self.advertised.insert(stream, max_message);
                StreamCredit {
                    stream,
                    max_message,
                }
            })
            .collect()
    }

    fn free_receive_bytes(&self) -> usize {
        self.config
            .max_receive_buffer_bytes
            .saturating_sub(self.recv.buffered_bytes())
    }

    /// A duplicate START from the peer (our answer was lost): answer again.
    /// It is also the peer's sign of life: an initiator whose answers keep
    /// getting lost sends nothing else, and this side must not time out
    /// (with its queued messages) while the peer is still trying.
    pub(crate) fn on_duplicate_start(&mut self, now: Time, sync_no: u16) {
        let now = self.tick(now);
        if self.peer_sync == Some(sync_no) && self.state != ConnectionState::Closed {
            self.last_received = self.last_received.max(now);
            self.start_reply_pending = true;
        } else {
            self.violation(ViolationKind::WrongSyncNo);
        }
    }
}
