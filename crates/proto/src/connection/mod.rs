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
//! * [`events`], [`stats`], [`config`]: what the application sees and sets.
//!
//! Loss recovery and congestion control live in [`crate::recovery`], the
//! packet-pair start-up in [`crate::probe`].

pub mod config;
pub mod events;
pub mod lifecycle;
pub mod recv;
pub mod send;
pub mod stats;
mod transmit;

#[cfg(test)]
mod e2e_tests;
#[cfg(test)]
pub(crate) mod testdriver;
#[cfg(test)]
mod tests;

pub use config::{ConfigError, ConnectionConfig, EndpointConfig};
pub use events::{CloseReason, Event, MessageId, ViolationKind};
pub use lifecycle::StartParams;
pub use send::SendError;
pub use stats::{ConnectionState, ConnectionStats};

use crate::probe::{PacketPair, ProbeOutcome};
use crate::recovery::{BlockRef, Recovery, RecoveryConfig, RecoveryOutcome};
use crate::wire::{
    expand_packet_number, DatagramRepr, EchoPayload, Flags, MissingPackets, PacketType, Payload,
    StartupMode,
};
use crate::EcnCodepoint;
use lifecycle::{CloseProgress, StartProgress};
use peregrine_cc::{CcConfig, LinkHint, Time};
use recv::{RecvLimits, RecvState};
use send::SendState;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

/// Most ECHO answers queued (a flood of probes cannot grow memory).
const MAX_ECHO_REPLIES: usize = 16;

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
    packet_size: u16,
    recovery: Recovery,
    send: SendState,
    recv: RecvState,
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
        Connection {
            local_scale: config.window_scale(),
            start: StartProgress {
                pending: false,
                first_sent_at: None,
                retransmitted: false,
                retx_at: None,
                backoff: 0,
                deadline: now + config.handshake_timeout,
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
            send: SendState::new(block),
            recv: RecvState::new(),
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
        bytes: &[u8],
    ) -> Result<MessageId, SendError> {
        self.tick(now);
        if !matches!(
            self.state,
            ConnectionState::Starting | ConnectionState::Connected
        ) {
            return Err(SendError::Closed);
        }
        if stream != 0 {
            return Err(SendError::UnsupportedStream(stream));
        }
        if bytes.len() > self.config.max_message_size {
            return Err(SendError::MessageTooLarge {
                size: bytes.len(),
                max: self.config.max_message_size,
            });
        }
        if self.send.outstanding_messages() >= self.config.max_outstanding_messages
            || self.send.buffered_bytes() + bytes.len() > self.config.max_send_buffer_bytes
        {
            return Err(SendError::BufferFull);
        }
        self.send.enqueue(stream, bytes)
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

    /// Hand a link-layer hint to the controller.
    pub(crate) fn link_hint(&mut self, now: Time, hint: &LinkHint) {
        let now = self.tick(now);
        self.recovery.on_link_hint(now, hint);
    }

    /// The next event for the application.
    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        let ev = self.events.pop_front()?;
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

    fn free_receive_bytes(&self) -> usize {
        self.config
            .max_receive_buffer_bytes
            .saturating_sub(self.recv.buffered_bytes())
    }

    /// A duplicate START from the peer (our answer was lost): answer again.
    pub(crate) fn on_duplicate_start(&mut self, now: Time, sync_no: u16) {
        self.tick(now);
        if self.peer_sync == Some(sync_no) && self.state != ConnectionState::Closed {
            self.start_reply_pending = true;
        } else {
            self.violation(ViolationKind::WrongSyncNo);
        }
    }

    /// One decoded datagram addressed to this connection.
    pub(crate) fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        dg: &DatagramRepr<'_>,
    ) {
        let now = self.tick(now);
        if self.state == ConnectionState::Closed {
            return;
        }
        if remote != self.remote {
            self.violation(ViolationKind::WrongAddress);
            return;
        }
        let h = &dg.header;
        // A side that checksums requires its peer's packets checksummed:
        // otherwise a corruption that clears ST_CKS would go unnoticed.
        if self.config.checksum && !h.flags.contains(Flags::ST_CKS) {
            self.counters.protocol_errors += 1;
            return;
        }
        match &dg.payload {
            Payload::Start(start) => {
                if !h.flags.contains(Flags::REPLY) {
                    self.on_duplicate_start(now, h.sync_no);
                } else if self.state == ConnectionState::Starting {
                    let params = StartParams::from_tlvs(&start.tlvs);
                    if h.flags.contains(Flags::W_VAL) {
                        let scale = params.window_scale.min(12);
                        self.send.set_peer_window(u64::from(h.window_size) << scale);
                    }
                    self.note_received(now, h.total_len);
                    self.on_start_reply(now, h.src_id, h.sync_no, &params);
                } else if self.peer_sync != Some(h.sync_no) {
                    self.violation(ViolationKind::WrongSyncNo);
                }
                return;
            }
            Payload::Reject(r) => {
                if h.sync_no == self.local_sync {
                    self.on_reject(now, r.reason);
                } else {
                    self.violation(ViolationKind::WrongSyncNo);
                }
                return;
            }
            _ => {}
        }
        if h.flags.contains(Flags::REMOTE_RESET) {
            if h.sync_no == self.local_sync || self.peer_sync == Some(h.sync_no) {
                self.on_reset(now);
            } else {
                self.violation(ViolationKind::WrongSyncNo);
            }
            return;
        }
        let Some(peer_sync) = self.peer_sync else {
            // Before the START answer nothing can be checked: drop.
            self.counters.protocol_errors += 1;
            return;
        };
        if h.sync_no != peer_sync {
            self.violation(ViolationKind::WrongSyncNo);
            return;
        }
        let Some(truncated) = dg.payload.packet_number() else {
            return;
        };
        let pn = expand_packet_number(truncated, self.recv.largest());
        if self.recv.is_duplicate(pn) {
            self.recv.on_duplicate();
            return;
        }
        let newest = self.recv.largest().map_or(true, |l| pn > l);
        self.last_received = now;
        if newest && h.flags.contains(Flags::W_VAL) {
            let bytes = u64::from(h.window_size) << self.peer_scale.min(12);
            self.on_peer_window(bytes);
        }
        match &dg.payload {
            Payload::Data(d) => {
                if !self.on_data(now, pn, dg, ecn, &d.frames) {
                    return;
                }
            }
            other => {
                self.recv.record(now, pn);
                self.on_control(now, h, other);
            }
        }
        self.note_received(now, h.total_len);
        self.recv.detect_missing(self.config.packet_threshold);
        self.check_close_progress(now);
    }

    fn note_received(&mut self, _now: Time, len: u16) {
        self.counters.packets_received += 1;
        self.counters.bytes_received += u64::from(len);
    }

    fn on_peer_window(&mut self, bytes: u64) {
        self.send.set_peer_window(bytes);
        if !self.send.window_blocked() {
            self.status_poll_at = None;
            self.status_poll_pending = false;
            self.status_backoff = 0;
        }
    }

    fn on_data(
        &mut self,
        now: Time,
        pn: u64,
        dg: &DatagramRepr<'_>,
        ecn: Option<EcnCodepoint>,
        frames: &[crate::wire::StreamFrame<'_>],
    ) -> bool {
        if !matches!(
            self.state,
            ConnectionState::Connected
                | ConnectionState::EndLocal
                | ConnectionState::EndRemote
                | ConnectionState::TimedClose
        ) {
            return false;
        }
        let limits = RecvLimits {
            max_buffer_bytes: self.config.max_receive_buffer_bytes,
            max_messages: self.config.max_reassembly_messages,
            max_message_size: self.config.max_message_size,
            peer_block_size: usize::from(self.packet_size).saturating_sub(config::DATA_OVERHEAD),
        };
        if let Err(why) = self.recv.check_frames(frames, &limits) {
            if matches!(why, recv::DataRejection::Protocol(_)) {
                self.counters.protocol_errors += 1;
            }
            self.recv.on_rejected(why);
            return false;
        }
        let in_order = self.recv.record(now, pn);
        for (id, bytes) in self.recv.store_frames(frames) {
            self.events.push_back(Event::MessageReceived {
                stream: id.stream,
                id,
                bytes,
            });
        }
        let h = &dg.header;
        let ce = ecn == Some(EcnCodepoint::Ce) || h.cn == 3;
        self.recv.on_data_packet(
            now,
            in_order,
            h.flags.contains(Flags::REPLY_REQ),
            ce,
            self.config.ack_frequency,
            self.config.max_ack_delay,
        );
        true
    }

    fn on_control(&mut self, now: Time, h: &crate::wire::HeaderRepr, payload: &Payload<'_>) {
        match (h.pk_type, payload) {
            (PacketType::Ack, Payload::Ack(ack)) => {
                let out = self.recovery.on_ack(now, ack, h.cn == 3);
                self.apply(out);
            }
            (PacketType::Nack, Payload::Nack(nack)) => {
                self.counters.nacks_received += 1;
                let mut missing = nack.missing_packets.clone();
                for b in &nack.missing_blocks {
                    let block = BlockRef {
                        stream: b.stream_id,
                        message: b.message_number,
                        block: b.block_index,
                    };
                    if let Some(pn) = self.send.carrier(block) {
                        missing.push(MissingPackets {
                            first: pn,
                            count: 1,
                        });
                    }
                }
                let out = self.recovery.on_nack(now, &missing);
                self.apply(out);
                self.maybe_reprobe(now);
            }
            (PacketType::Echo | PacketType::Echo1 | PacketType::Echo2, Payload::Echo(e)) => {
                self.on_echo(now, h.pk_type, h.flags, e);
            }
            (PacketType::Status, _) if h.flags.contains(Flags::REPLY_REQ) => {
                self.status_reply_pending = true;
            }
            (PacketType::Cwin, Payload::Cwin(c)) => {
                self.on_peer_window(u64::from(c.window_bytes));
            }
            (PacketType::End, _) => {
                if h.flags.contains(Flags::REPLY) {
                    self.on_end(now, true);
                } else if h.flags.contains(Flags::REPLY_REQ) {
                    self.on_end(now, false);
                }
            }
            (PacketType::Fin, _) => self.on_fin(now),
            // IDLE only keeps the connection alive; JOIN/LEAVE (multicast)
            // come with a later issue.
            _ => {}
        }
    }

    fn apply(&mut self, out: RecoveryOutcome) {
        self.send.on_acked(&out.acked_blocks);
        self.send.on_lost(&out.lost_blocks);
    }

    fn maybe_reprobe(&mut self, now: Time) {
        if self.config.startup != StartupMode::PacketPair
            || !matches!(self.state, ConnectionState::Connected)
        {
            return;
        }
        let window = self
            .recovery
            .rtt()
            .srtt()
            .unwrap_or(Duration::from_millis(100));
        if self.probe.on_nack(
            now,
            self.config.reprobe_nack_burst,
            window,
            self.config.reprobe_min_interval,
        ) {
            self.start_probe(now, false);
        }
    }

    fn on_echo(&mut self, now: Time, pk_type: PacketType, flags: Flags, e: &EchoPayload) {
        if flags.contains(Flags::REPLY_REQ) {
            if self.echo_replies.len() < MAX_ECHO_REPLIES {
                self.echo_replies
                    .push_back((pk_type, e.probe_id, e.timestamp_ns));
            }
        } else if flags.contains(Flags::REPLY) {
            if let Some(outcome) = self
                .probe
                .on_answer(now, pk_type, e.probe_id, e.timestamp_ns)
            {
                self.on_probe_outcome(now, outcome);
            }
        }
    }

    fn on_probe_outcome(&mut self, now: Time, outcome: ProbeOutcome) {
        match outcome {
            ProbeOutcome::Measured {
                result,
                initial,
                rtts,
            } => {
                for r in rtts {
                    self.recovery.on_rtt_sample(r);
                }
                if initial {
                    let window = result.burst_bytes.min(self.config.max_initial_window_bytes);
                    self.recovery.set_initial_window(now, window);
                    self.initial_window = Some(window);
                    self.data_ready = true;
                }
            }
            ProbeOutcome::TimedOut { initial } => {
                if initial {
                    self.data_ready = true;
                }
            }
        }
    }

    /// A snapshot of the connection.
    pub(crate) fn stats(&self) -> ConnectionStats {
        let cc = self.recovery.cc_stats();
        let rtt = self.recovery.rtt();
        let rc = self.recovery.counters();
        let cg = self.recovery.congestion().counters();
        let rx = self.recv.counters();
        let tx = self.send.counters();
        let c = &self.counters;
        ConnectionStats {
            state: self.state,
            controller: self.recovery.congestion().controller_name(),
            controller_mode: cc.mode,
            bandwidth_estimate_bytes_per_sec: cc.bandwidth_estimate_bytes_per_sec,
            cwnd_bytes: cc.cwnd_bytes,
            ssthresh_bytes: cc.ssthresh_bytes,
            pacing_rate_bytes_per_sec: cc.pacing_rate_bytes_per_sec,
            ca_state: self.recovery.ca_state(),
            srtt: rtt.srtt(),
            min_rtt: rtt.min_rtt(),
            rttvar: rtt.rttvar(),
            latest_rtt: rtt.latest_rtt(),
            rto: rtt.rto(),
            bytes_in_flight: self.recovery.bytes_in_flight(),
            peer_window_bytes: self.send.peer_window(),
            packets_sent: c.packets_sent,
            bytes_sent: c.bytes_sent,
            packets_received: c.packets_received,
            bytes_received: c.bytes_received,
            data_packets_sent: rc.data_packets_sent,
            packets_acked: rc.packets_acked,
            bytes_acked: rc.bytes_acked,
            packets_lost: rc.packets_lost,
            bytes_lost: rc.bytes_lost,
            packets_retransmitted: c.packets_retransmitted,
            bytes_retransmitted: c.bytes_retransmitted,
            spurious_losses: rc.spurious_losses,
            undos: cg.undos,
            loss_episodes: cg.loss_episodes,
            ecn_episodes: cg.ecn_episodes,
            rtos: cg.rtos,
            holds: cg.holds,
            messages_sent: tx.messages_sent,
            messages_acked: tx.messages_acked,
            messages_delivered: rx.messages_delivered,
            acks_sent: c.acks_sent,
            acks_received: rc.acks_received,
            nacks_sent: c.nacks_sent,
            nacks_received: c.nacks_received,
            keep_alives_sent: c.keep_alives_sent,
            duplicate_packets: rx.duplicate_packets,
            wrong_sync_no: c.wrong_sync_no,
            wrong_address: c.wrong_address,
            protocol_errors: c.protocol_errors,
            ecn_ce_received: rx.ecn_ce_received,
            ecn_echoes_received: rc.ecn_echoes,
            probes_started: self.probe.started(),
            probes_completed: self.probe.completed(),
            last_probe: self.probe.last(),
            initial_window_bytes: self.initial_window,
        }
    }
}
