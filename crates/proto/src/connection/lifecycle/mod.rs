//! The life cycle of seed 003 §IV: two-way START, END/END + FIN close,
//! REMOTE_RESET, idle timeout.
//!
//! ```text
//!  initiator                                   responder
//!  STARTING --START(REPLY_REQ, TLVs)------------>  (accept or REJECT)
//!           <-START(REPLY, TLVs)----------------- CONNECTED
//!  CONNECTED
//!    close() -> END_LOCAL: finish sending; once everything is acknowledged
//!           --END(REPLY_REQ, MESS_SEQ_NO=last)-->  END_REMOTE (PeerClosed):
//!                                                  finish sending; once acked
//!           <-END(REPLY)------------------------- TIMED_CLOSE
//!           --FIN------------------------------->  CLOSED (or on its timer)
//!  CLOSED
//! ```
//!
//! SYNC_NO: each side draws its own at START from the endpoint's seeded RNG
//! and repeats it in every packet it sends; every packet received must
//! carry the peer's (a REJECT or a stateless reset echoes the SYNC_NO of
//! the packet that provoked it). A packet with the wrong one is dropped and
//! counted, and reported as a [`Event::SecurityViolation`].
//!
//! Liveness: nothing received for `idle_timeout` closes the connection
//! ([`CloseReason::IdleTimeout`]); a side with nothing to send sends an
//! IDLE every `keep_alive_interval` so that a live peer never times out.
//! START and END are retransmitted with exponential backoff from the RTO.

pub(crate) mod admission;
pub(crate) mod failure;
pub mod group;
mod keys;
pub mod path;
mod security;

use super::events::{CloseReason, Event, ViolationKind};
use super::stats::ConnectionState;
use super::Connection;
use crate::wire::{StartupMode, Tlv, PROTOCOL_VERSION};
use peregrine_cc::Time;
use std::time::Duration;

/// How long a protected client keeps waiting for an authenticated answer
/// after an (unauthenticated) REJECT before it closes with that REJECT's
/// reason: a handful of START retransmission timeouts on most paths.
pub const PROTECTED_REJECT_GRACE: Duration = Duration::from_secs(1);

/// What a START (request or answer) asked for, from its TLVs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartParams {
    /// VERSION (1 if absent).
    pub version: u16,
    /// WINDOW_SCALE (0 if absent).
    pub window_scale: u8,
    /// MAX_PACKET_SIZE, if given.
    pub max_packet_size: Option<u16>,
    /// CONTROLLER, if given.
    pub controller: Option<String>,
    /// STARTUP_MODE, if given.
    pub startup: Option<StartupMode>,
    /// STREAM_CREDIT (TLV 7, u32): the sender's initial per-stream credit
    /// in messages; `None` if absent (or not 4 bytes, or 0).
    pub stream_credit: Option<u32>,
    /// Whether a SECURITY TLV was present.
    pub security: bool,
    /// The SECURITY TLV's value, if present (the handshake reads it).
    pub security_value: Option<Vec<u8>>,
    /// The RETRY_TOKEN TLV's value, if present (admission reads it).
    pub retry_token: Option<Vec<u8>>,
}

impl StartParams {
    /// Read the TLVs (already validated by the wire decoder; unknown ones
    /// are skipped).
    pub fn from_tlvs(tlvs: &[Tlv<'_>]) -> StartParams {
        let mut p = StartParams {
            version: 1,
            window_scale: 0,
            max_packet_size: None,
            controller: None,
            startup: None,
            stream_credit: None,
            security: false,
            security_value: None,
            retry_token: None,
        };
        for t in tlvs {
            match *t {
                Tlv::Version(v) => p.version = v,
                Tlv::WindowScale(s) => p.window_scale = s,
                Tlv::MaxPacketSize(s) => p.max_packet_size = Some(s),
                Tlv::Controller(c) => p.controller = Some(c.to_string()),
                Tlv::StartupMode(m) => p.startup = Some(m),
                Tlv::Security(v) => {
                    p.security = true;
                    p.security_value = Some(v.to_vec());
                }
                // The decoder guarantees c ≥ 1.
                Tlv::StreamCredit(c) => p.stream_credit = Some(c),
                Tlv::RetryToken(t) => p.retry_token = Some(t.to_vec()),
                // The handshake reads AEAD (crypto::noise).
                Tlv::Padding(_) | Tlv::Aead(_) | Tlv::StatelessReset | Tlv::Unknown { .. } => {}
            }
        }
        p
    }
}

/// Progress of the close handshake.
#[derive(Clone, Debug, Default)]
pub(crate) struct CloseProgress {
    /// `close()` was called (or END_LOCAL entered) before the peer's END.
    pub local_first: bool,
    /// The peer's END with REPLY_REQ arrived.
    pub peer_end: bool,
    /// Our END with REPLY_REQ: due to be sent.
    pub end_pending: bool,
    /// Our END with REPLY_REQ was sent at least once.
    pub end_sent: bool,
    /// When to resend our END.
    pub end_retx_at: Option<Time>,
    /// Backoff exponent of the END retransmissions.
    pub end_backoff: u32,
    /// Our END with REPLY: due.
    pub end_reply_pending: bool,
    /// Our FIN: due (then the connection closes).
    pub fin_pending: bool,
    /// A FIN with REMOTE_RESET: due (abort, already closed).
    pub reset_pending: bool,
    /// TIMED_CLOSE expiry.
    pub timed_close_at: Option<Time>,
}

impl Connection {
    /// Enter CONNECTED: start the controller and the start-up probe.
    pub(crate) fn enter_connected(&mut self, now: Time) {
        self.state = ConnectionState::Connected;
        self.last_received = now;
        self.last_sent = now;
        // Under path MTU discovery the connection starts with base-size
        // datagrams but will send up to the search's maximum: the
        // controller counts its window in segments of that maximum, as it
        // would without discovery. Counted in base-size segments, a few
        // larger datagrams never fill a small window (six 1,452-byte
        // datagrams leave 888 bytes of an eight-segment 9,600-byte window
        // unused), so the window never looks cwnd-limited and never grows
        // — CUBIC at 1 % loss stuck at 9,600 bytes, half the goodput of
        // the same link without discovery (docs/validation.md).
        let mss = self
            .pmtud
            .is_enabled()
            .then(|| u32::from(self.pmtud.max().saturating_sub(self.tag_overhead())));
        self.recovery.init_controller_with_mss(now, mss);
        self.pmtud.start();
        self.events.push_back(Event::Connected);
        // Data starts at once with the controller's initial window; the
        // packet pair (sent ahead of it) refines the controller's state
        // when its answers are back — no extra RTT before data.
        self.data_ready = true;
        if self.config.startup == StartupMode::PacketPair {
            self.start_probe(now, true);
        }
    }

    /// The packet-pair timer: at most the configured probe timeout, shorter
    /// once an RTT is known.
    fn probe_timeout(&self) -> Duration {
        let cap = self.config.probe_timeout;
        match self.recovery.rtt().srtt() {
            Some(s) => (s * 4).max(Duration::from_millis(10)).min(cap),
            None => cap,
        }
    }

    pub(crate) fn start_probe(&mut self, now: Time, initial: bool) {
        let timeout = self.probe_timeout();
        let size = u32::from(self.packet_size);
        let id = self.probe.start(now, timeout, initial, size);
        self.probe_sends.clear();
        // PAIRS pairs back to back, all of the packet size: equal sizes
        // let the runtime hand the six to the kernel in one GSO send, so
        // they leave back to back (crate::probe, "Equal sizes").
        for k in 0..crate::probe::PAIRS {
            for t in [
                crate::wire::PacketType::Echo1,
                crate::wire::PacketType::Echo2,
            ] {
                self.probe_sends
                    .push_back((t, id.wrapping_add(k as u32), size));
            }
        }
    }

    /// The application closes: END_LOCAL (or immediate close before the
    /// connection is established).
    pub(crate) fn close(&mut self, now: Time) {
        match self.state {
            ConnectionState::Starting => self.close_with(now, CloseReason::Local),
            ConnectionState::Connected => {
                self.state = ConnectionState::EndLocal;
                self.closing.local_first = true;
                self.check_close_progress(now);
            }
            _ => {}
        }
    }

    /// The application aborts: a FIN with REMOTE_RESET, then closed.
    pub(crate) fn abort(&mut self, now: Time) {
        if self.state == ConnectionState::Closed {
            return;
        }
        if self.peer_sync.is_some() {
            self.closing.reset_pending = true;
        }
        self.close_with(now, CloseReason::Aborted);
    }

    /// Move the close handshake on once this side's data is all acknowledged.
    pub(crate) fn check_close_progress(&mut self, now: Time) {
        let drained = self.send.outstanding_messages() == 0;
        match self.state {
            ConnectionState::EndLocal if drained && !self.closing.end_sent => {
                self.closing.end_pending = true;
            }
            ConnectionState::EndRemote if drained => {
                self.closing.end_reply_pending = true;
                self.state = ConnectionState::TimedClose;
                self.closing.timed_close_at = Some(now + self.timed_close_delay());
            }
            _ => {}
        }
    }

    fn timed_close_delay(&self) -> Duration {
        (self.recovery.rtt().rto() * 3).max(Duration::from_millis(100))
    }

    /// The END with REPLY_REQ left: arm its retransmission.
    pub(crate) fn on_end_sent(&mut self, now: Time) {
        self.closing.end_pending = false;
        self.closing.end_sent = true;
        let rto = self.recovery.rtt().rto();
        let backoff = 1u32 << self.closing.end_backoff.min(16);
        self.closing.end_retx_at = Some(now + rto.saturating_mul(backoff).min(self.config.max_rto));
        self.closing.end_backoff += 1;
    }

    /// An END arrived (`reply`: it answers ours).
    pub(crate) fn on_end(&mut self, now: Time, reply: bool) {
        if reply {
            if self.closing.end_sent || self.state == ConnectionState::TimedClose {
                self.closing.fin_pending = true;
                self.closing.end_retx_at = None;
            }
            return;
        }
        if !self.closing.peer_end {
            self.closing.peer_end = true;
            self.events.push_back(Event::PeerClosed);
        }
        match self.state {
            ConnectionState::Connected | ConnectionState::EndLocal => {
                self.state = ConnectionState::EndRemote;
                self.check_close_progress(now);
            }
            // Our END with REPLY was lost: answer again.
            ConnectionState::TimedClose => self.closing.end_reply_pending = true,
            _ => {}
        }
    }

    /// A FIN arrived.
    pub(crate) fn on_fin(&mut self, now: Time) {
        let reason = if self.closing.local_first {
            CloseReason::Local
        } else {
            CloseReason::Remote
        };
        self.close_with(now, reason);
    }

    /// A packet with REMOTE_RESET arrived (its SYNC_NO already checked).
    pub(crate) fn on_reset(&mut self, now: Time) {
        if self.state == ConnectionState::Closed {
            return;
        }
        // After our END was sent everything we sent had been acknowledged:
        // a peer that already forgot the connection ends it normally.
        if self.closing.end_sent && self.send.outstanding_messages() == 0 {
            self.close_with(now, CloseReason::Local);
            return;
        }
        // In TIMED_CLOSE both directions are fully acknowledged and the
        // peer has our END with REPLY: it sent FIN and forgot the
        // connection, and the FIN was lost (a packet of ours, a keep-alive
        // say, then drew its stateless reset). That is a normal close.
        if self.state == ConnectionState::TimedClose {
            self.close_with(now, CloseReason::Remote);
            return;
        }
        self.events.push_back(Event::NetworkReset);
        self.close_with(now, CloseReason::Reset);
    }

    /// The peer rejected our START. In a protected mode a REJECT is not
    /// authenticated: remember it, keep trying, close with it only at the
    /// handshake timeout.
    pub(crate) fn on_reject(&mut self, now: Time, reason: crate::wire::RejectReason) {
        if self.state == ConnectionState::Starting {
            if self.security.is_some() {
                // Unauthenticated: a genuine START-REPLY arriving within
                // the grace still wins over a forged REJECT that raced it,
                // but a real one (a wrong --peer-key: `key_mismatch`) is
                // reported in about a second, not at the handshake timeout.
                // `busy` is not final (room may free up): retry until the
                // handshake timeout as before.
                self.start.rejected = Some(reason);
                if reason != crate::wire::RejectReason::BUSY {
                    self.start.deadline = self.start.deadline.min(now + PROTECTED_REJECT_GRACE);
                }
                return;
            }
            self.close_with(now, CloseReason::Rejected(reason));
        }
    }

    /// Close now: the `Closed` event lists what the peer never acknowledged,
    /// and every buffer is released.
    pub(crate) fn close_with(&mut self, _now: Time, reason: CloseReason) {
        if self.state == ConnectionState::Closed {
            return;
        }
        self.state = ConnectionState::Closed;
        let undelivered = self.send.undelivered();
        // A connection the application never heard of (an XX server
        // awaiting message 3) closes silently.
        if !self.unannounced() {
            self.events.push_back(Event::Closed {
                reason,
                undelivered,
            });
        }
        self.send.clear();
        // Buffers go, counters stay (stats after the close report them).
        self.recv.release();
        self.probe_sends.clear();
        self.echo_replies.clear();
        self.closing.end_pending = false;
        self.closing.end_reply_pending = false;
        self.closing.fin_pending = false;
    }

    /// Count a security violation; report the 1st, 2nd, 4th, 8th, … one.
    pub(crate) fn violation(&mut self, kind: ViolationKind) {
        let count = match kind {
            ViolationKind::WrongSyncNo => {
                self.counters.wrong_sync_no += 1;
                self.counters.wrong_sync_no
            }
            ViolationKind::WrongAddress => {
                self.counters.wrong_address += 1;
                self.counters.wrong_address
            }
            // Counted by the crypto layer, reported past a threshold.
            ViolationKind::Unauthenticated => {
                self.note_unauthenticated();
                return;
            }
        };
        if count.is_power_of_two() {
            self.events
                .push_back(Event::SecurityViolation { kind, count });
        }
    }

    /// The TLVs of our START or its answer.
    pub(crate) fn start_tlvs(&self) -> Vec<Tlv<'_>> {
        let mut tlvs = vec![
            Tlv::Version(PROTOCOL_VERSION),
            Tlv::WindowScale(self.local_scale),
            Tlv::MaxPacketSize(self.config.max_packet_size),
            Tlv::Controller(self.recovery.congestion().controller_name()),
            Tlv::StartupMode(self.config.startup),
        ];
        if let Some(credit) = self.config.initial_stream_credit {
            tlvs.push(Tlv::StreamCredit(credit));
        }
        if let Some(aead) = self.security.as_ref().and_then(|s| s.aead_tlv()) {
            tlvs.push(Tlv::Aead(aead));
        }
        if self
            .security
            .as_ref()
            .is_some_and(|s| s.stateless_reset_tlv())
        {
            tlvs.push(Tlv::StatelessReset);
        }
        if let Some(hello) = self.security_hello() {
            tlvs.push(Tlv::Security(hello));
        }
        tlvs
    }

    /// The answer to our START arrived: adopt the peer's parameters.
    pub(crate) fn on_start_reply(
        &mut self,
        now: Time,
        peer_id: u16,
        peer_sync: u16,
        params: &StartParams,
    ) {
        if self.state != ConnectionState::Starting {
            return;
        }
        if params.version != PROTOCOL_VERSION {
            self.close_with(
                now,
                CloseReason::ProtocolViolation("START answer chose an unknown version"),
            );
            return;
        }
        self.peer_id = peer_id;
        self.peer_sync = Some(peer_sync);
        self.peer_scale = params.window_scale;
        self.send.set_initial_credit(params.stream_credit);
        if let Err(why) = self.negotiate_packet_size(params.max_packet_size) {
            self.close_with(now, CloseReason::ProtocolViolation(why));
            return;
        }
        // Karn: a sample only if START went once.
        if !self.start.retransmitted {
            if let Some(sent) = self.start.first_sent_at {
                self.recovery
                    .on_rtt_sample(now.saturating_duration_since(sent));
            }
        }
        self.start.pending = false;
        self.start.retx_at = None;
        self.enter_connected(now);
        // Answer the START-REPLY at once: the server's side stays
        // half-open (amplification-limited, expired after a few RTTs)
        // until a valid packet of ours arrives. Data or packet-pair probes
        // usually go first and clear this; with slow start and nothing to
        // send, this IDLE is the only thing that proves our address.
        self.keep_alive_pending = true;
    }

    /// Use the smaller of both sides' packet sizes; fails if messages of
    /// the configured maximum would need more than 65,535 blocks.
    ///
    /// With path MTU discovery on, the smaller maximum is the upper bound
    /// of the search, packets start at the base size (1,200 bytes), and
    /// messages are cut into blocks that fit base-size packets, so a
    /// block never has to be re-cut when the PMTU shrinks (a larger
    /// datagram carries several; once the search has a size, blocks are
    /// cut to fill it, see `sync_packet_size`). The
    /// controller counts in segments of the search's maximum from
    /// `enter_connected` on. O(1), plus O(queued messages) to re-cut.
    pub(crate) fn negotiate_packet_size(&mut self, peer: Option<u16>) -> Result<(), &'static str> {
        let max = peer
            .unwrap_or(self.config.max_packet_size)
            .min(self.config.max_packet_size);
        let tag = self.tag_overhead();
        self.pmtud = match self.config.pmtu_discovery {
            super::config::PmtuDiscovery::On => crate::pmtud::Pmtud::enabled(max),
            _ => crate::pmtud::Pmtud::disabled(max),
        };
        let size = self.pmtud.current().saturating_sub(tag);
        let block = self.base_block_bytes();
        if block == 0 || self.config.max_message_size > block * usize::from(u16::MAX) {
            return Err("peer's MAX_PACKET_SIZE too small for the maximum message size");
        }
        if size != self.packet_size {
            self.packet_size = size;
            self.rebuild_recovery();
        }
        self.send.set_block_size(block);
        Ok(())
    }

    /// The data of a one-frame DATA packet of the base size: the largest
    /// block every packet this connection may fall back to can carry. O(1).
    fn base_block_bytes(&self) -> usize {
        let packet = self.pmtud.base().saturating_sub(self.tag_overhead());
        usize::from(packet).saturating_sub(super::config::DATA_OVERHEAD)
    }

    /// Follow the path MTU search: the packet size is the current PMTU
    /// less the tag, the queue guard measures in packets of that size
    /// (the controller keeps the segments of the search's maximum it was
    /// started with), and new messages are cut into blocks that fill it
    /// ([`fitted_block_bytes`]). O(1), plus O(queued messages) when the
    /// block size changes.
    pub(crate) fn sync_packet_size(&mut self) {
        if self.pmtud.is_enabled() {
            self.packet_size = self.pmtud.current().saturating_sub(self.tag_overhead());
            self.recovery.set_packet_size(u32::from(self.packet_size));
            let base = self.base_block_bytes();
            let fitted = fitted_block_bytes(usize::from(self.packet_size), base);
            // Smaller blocks must still cut the largest message into at
            // most 65,535 of them (checked for the base size at the
            // handshake).
            let block = if self.config.max_message_size > fitted * usize::from(u16::MAX) {
                base
            } else {
                fitted
            };
            self.send.set_block_size(block);
        }
    }

    /// The bytes sealing adds to each datagram shrank: an XX client's
    /// message 3, appended behind every datagram until the server showed
    /// it has the keys, is no longer sent. Its 64 bytes go back to data —
    /// the packet size grows by them, and messages not yet sent are cut
    /// into blocks that fill the larger packet (those already sent keep
    /// their cut) — instead of every datagram of the connection's life
    /// staying 64 bytes short of the path's size (4.4 % more datagrams,
    /// and per-datagram work, per byte at 1,452 bytes; issue 36). As a
    /// path MTU step up does, with path MTU discovery on. O(1), plus
    /// O(queued messages) to re-cut.
    pub(crate) fn sync_overhead(&mut self) {
        if self.pmtud.is_enabled() {
            self.sync_packet_size();
            return;
        }
        self.packet_size = self.pmtud.current().saturating_sub(self.tag_overhead());
        self.recovery.set_packet_size(u32::from(self.packet_size));
        let block = self.base_block_bytes();
        self.send.set_block_size(block);
    }

    /// Handshake timers: START retransmission and the handshake timeout.
    pub(crate) fn on_start_timer(&mut self, now: Time) {
        if self.state != ConnectionState::Starting {
            return;
        }
        if now >= self.start.deadline {
            let reason = self
                .start
                .rejected
                .map_or(CloseReason::HandshakeTimeout, CloseReason::Rejected);
            self.close_with(now, reason);
            return;
        }
        if self.start.retx_at.is_some_and(|t| t <= now) {
            self.start.pending = true;
            self.start.retransmitted = true;
            self.start.retx_at = None;
        }
    }

    /// START left: arm its retransmission with backoff.
    pub(crate) fn on_start_sent(&mut self, now: Time) {
        self.start.pending = false;
        if self.start.first_sent_at.is_none() {
            self.start.first_sent_at = Some(now);
        }
        let backoff = 1u32 << self.start.backoff.min(16);
        let rto = self
            .config
            .initial_rto
            .saturating_mul(backoff)
            .min(self.config.max_rto);
        self.start.retx_at = Some(now + rto);
        self.start.backoff += 1;
    }

    /// Idle timeout, keep-alive, END retransmission and TIMED_CLOSE timers.
    pub(crate) fn on_liveness_timers(&mut self, now: Time) {
        if matches!(
            self.state,
            ConnectionState::Starting | ConnectionState::Closed
        ) {
            return;
        }
        if now >= self.last_received + self.config.idle_timeout {
            self.close_with(now, CloseReason::IdleTimeout);
            return;
        }
        if self.closing.timed_close_at.is_some_and(|t| t <= now) {
            self.closing.timed_close_at = None;
            self.close_with(now, CloseReason::Remote);
            return;
        }
        if self.closing.end_retx_at.is_some_and(|t| t <= now) {
            self.closing.end_retx_at = None;
            self.closing.end_pending = true;
        }
        if now >= self.keep_alive_at() {
            self.keep_alive_pending = true;
        }
    }

    /// When the next keep-alive is due: `keep_alive_interval` after the
    /// last datagram sent, rounded up to a grid of 1/16 of the interval
    /// (less if the idle timeout is close) counted from time zero, so the
    /// keep-alives of an endpoint's idle connections fall due together —
    /// one endpoint turn and one send batch for many — instead of one
    /// turn each (issue 20: timers coalesced).
    pub(crate) fn keep_alive_at(&self) -> Time {
        let interval = self.config.keep_alive_interval;
        let due = self.last_sent + interval;
        let slack = self.config.idle_timeout.saturating_sub(interval) / 4;
        let grid = u64::try_from((interval / 16).min(slack).as_nanos()).unwrap_or(u64::MAX);
        if grid == 0 {
            return due;
        }
        Time::from_nanos(due.as_nanos().div_ceil(grid).saturating_mul(grid))
    }
}

/// Progress of the START exchange (initiator).
#[derive(Clone, Debug)]
pub(crate) struct StartProgress {
    pub pending: bool,
    pub first_sent_at: Option<Time>,
    pub retransmitted: bool,
    pub retx_at: Option<Time>,
    pub backoff: u32,
    pub deadline: Time,
    /// Protected modes: the reason of an (unauthenticated) REJECT seen.
    pub rejected: Option<crate::wire::RejectReason>,
}

/// The application's close and abort, and a repeated START.
impl Connection {
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

/// The block size that fills a DATA packet of `packet_bytes` (the datagram
/// less its tag) with whole blocks none of which is longer than
/// `base_block_bytes` (what a base-size packet carries), so that a block
/// cut for the discovered path MTU is still sent, alone, in a base-size
/// packet if the path shrinks (RFC 8899's black hole) — blocks are never
/// re-cut. `k` blocks of `b` bytes take `DATA_OVERHEAD + k·b + (k − 1)·13`
/// bytes (one stream-frame header each), so the fewest blocks that fit are
/// `k = ⌈(room + 13) / (base + 13)⌉` with `room = packet − DATA_OVERHEAD`,
/// each `(room + 13) / k − 13` long. On a 1,500-byte Ethernet path (1,472
/// or 1,452 bytes of UDP payload) two blocks fill a datagram where a
/// base-size block (1,200-byte packets) would leave a fifth of it empty;
/// on loopback (65,507) 56 blocks of 1,156 bytes (plain) instead of 55 of
/// the base's 1,163. O(1).
pub(crate) fn fitted_block_bytes(packet_bytes: usize, base_block_bytes: usize) -> usize {
    let frame = crate::wire::StreamFrame::HEADER_LEN;
    let room = packet_bytes.saturating_sub(super::config::DATA_OVERHEAD);
    if base_block_bytes == 0 || room <= base_block_bytes {
        return room.min(base_block_bytes).max(1);
    }
    let k = (room + frame).div_ceil(base_block_bytes + frame);
    ((room + frame) / k).saturating_sub(frame).max(1)
}

#[cfg(test)]
mod block_fit_tests {
    use super::fitted_block_bytes;
    use crate::config::DATA_OVERHEAD;
    use crate::wire::StreamFrame;

    /// Bytes a DATA packet takes with `k` blocks of `b` bytes.
    fn packet_len(k: usize, b: usize) -> usize {
        DATA_OVERHEAD + k * b + (k - 1) * StreamFrame::HEADER_LEN
    }

    #[test]
    fn the_base_size_keeps_its_block() {
        assert_eq!(fitted_block_bytes(1_200, 1_163), 1_163);
        assert_eq!(fitted_block_bytes(1_100, 1_163), 1_063);
    }

    #[test]
    fn ethernet_and_loopback_paths() {
        // 1,472 bytes of UDP payload, plain: two blocks of 711.
        assert_eq!(fitted_block_bytes(1_472, 1_163), 711);
        assert_eq!(packet_len(2, 711), 1_472);
        // Encrypted (16-byte tag): 1,456 and 1,184 − 37 = 1,147.
        assert_eq!(fitted_block_bytes(1_456, 1_147), 703);
        // Loopback: 65,507 bytes, 56 blocks of 1,156 (55 of 1,163 before).
        assert_eq!(fitted_block_bytes(65_507, 1_163), 1_156);
        assert!(packet_len(56, 1_156) <= 65_507);
    }

    proptest::proptest! {
        /// The fewest blocks no longer than the base's that fill the
        /// packet: k of them fit, and k − 1 base-size blocks would not.
        #[test]
        fn fewest_blocks_that_fill(packet in 100usize..70_000, base in 50usize..2_000) {
            let b = fitted_block_bytes(packet, base);
            let room = packet.saturating_sub(DATA_OVERHEAD);
            proptest::prop_assert!(b >= 1 && b <= base.max(1));
            if room > base {
                let k = (room + StreamFrame::HEADER_LEN).div_ceil(base + StreamFrame::HEADER_LEN);
                proptest::prop_assert!(packet_len(k, b) <= packet);
                // One byte more per block no longer fits, or breaks the base bound.
                proptest::prop_assert!(packet_len(k, b + 1) > packet || b + 1 > base);
                // k − 1 blocks of the base size do not fill the packet's room.
                proptest::prop_assert!(k == 1 || packet_len(k - 1, base) < packet);
            } else {
                proptest::prop_assert_eq!(b, room.min(base).max(1));
            }
        }
    }
}
