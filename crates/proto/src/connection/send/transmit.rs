//! What the connection sends next, and its timers.
//!
//! `poll_transmit` writes at most one datagram per call, in this order of
//! urgency: an abort's reset; the handshake (START or its answer); ECHO
//! answers; ACK; NACK; the packet-pair probes; a CWIN; a STATUS answer; the close
//! handshake (FIN, END with REPLY, END with REPLY_REQ); DATA as the window,
//! the pacing rate and the controller's send gate allow; a STATUS poll of a
//! closed peer window; an IDLE keep-alive.
//!
//! A poll that finds nothing to send (an application's message joining a
//! backlog the congestion window holds) is the most common one in a large
//! simulation, so its checks read as few lines as they can: the queue
//! bound's sample is taken only when a datagram arrived since the last
//! poll, the ACK schedule is read before the largest packet number, and
//! the peer-window check is O(1) while the window has room (`send`).

use crate::config::AckPolicy;
use crate::connection::stats::ConnectionState;
use crate::connection::Connection;
use crate::recovery::Allowance;
use crate::sched::SchedContext;
use crate::send_helpers::{build, TxBuf, Written};
use crate::wire::header::WINDOW_SIZE_MAX;
use crate::wire::{
    AckFrequency, AckPayload, BarePayload, CwinPayload, DataPayload, EchoPayload, Flags,
    HeaderRepr, NackPayload, PacketType, Payload, Reliability, StartPayload, StreamFrame,
    HEADER_LEN,
};
use peregrine_cc::Time;

/// Frames of one DATA packet listed without allocating.
const STACK_FRAMES: usize = 16;

impl Connection {
    /// The base header every packet of this connection starts from.
    pub(crate) fn header(&self, pk_type: PacketType, flags: Flags) -> HeaderRepr {
        let mut h = HeaderRepr::new(pk_type);
        h.dest_id = self.peer_id;
        h.src_id = self.local_id;
        h.sync_no = self.local_sync;
        h.cn = 1;
        let mut f = flags | Flags::W_VAL;
        // Integrity once: a sealed packet's tag covers every byte, so it
        // carries no checksum (docs/protocol.md §1); a plain one is
        // checksummed once, by the encoder.
        if self.config.checksum && !self.seals(pk_type) {
            f = f | Flags::ST_CKS;
        }
        let free = self.advertised_window();
        h.window_size = u32::try_from(free >> self.local_scale)
            .unwrap_or(WINDOW_SIZE_MAX)
            .min(WINDOW_SIZE_MAX);
        if let Some(n) = self.send.last_message_number(0) {
            h.mess_seq_no = n as u16;
        }
        if let Some(n) = self.recv.last_delivered(0) {
            h.mess_acc_no = n as u16;
            f = f | Flags::EOM;
        }
        h.flags = f;
        h
    }

    /// Counts the packet `w` just built; passes its report on.
    pub(crate) fn sent(&mut self, now: Time, w: Written) -> Option<Written> {
        self.counters.packets_sent += 1;
        self.counters.bytes_sent += w.len() as u64;
        self.last_sent = now;
        self.keep_alive_pending = false;
        Some(w)
    }

    fn send_bare(
        &mut self,
        now: Time,
        buf: &mut TxBuf<'_>,
        t: PacketType,
        flags: Flags,
    ) -> Option<Written> {
        let pn = self.recovery.take_pn();
        let h = self.header(t, flags);
        let w = build(
            buf,
            h,
            Payload::Bare(BarePayload {
                packet_number: pn as u32,
            }),
            Some(pn),
        )?;
        self.sent(now, w)
    }

    /// The next datagram, written into `buf` (plaintext), which then
    /// holds exactly it; what was written. For tests: the endpoint builds
    /// with [`poll_transmit_into`](Self::poll_transmit_into).
    #[cfg(test)]
    pub(crate) fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Written> {
        let mut out = TxBuf::new(buf, 0);
        let w = self.poll_transmit_into(now, &mut out);
        out.truncate(w.map_or(0, |w| w.len()));
        w
    }

    /// The next datagram, written (plaintext) at the start of `buf`,
    /// wherever that lies in the caller's vector (the bytes before it are
    /// not touched: see [`TxBuf`]); what was written, for the endpoint to
    /// seal and trace without reading it back. O(datagram) plus the
    /// scheduler's work.
    pub(crate) fn poll_transmit_into(&mut self, now: Time, buf: &mut TxBuf<'_>) -> Option<Written> {
        let now = self.tick(now);
        self.begin_transmit();
        // The datagrams handled since the last poll were processed by now:
        // their socket-queue sojourn (queue_bound.rs). Without one (an
        // application's call, a timer) the configuration and the RTT are
        // not read: lines an application event need not touch (issue 40).
        if self.queue_bound.has_sample() {
            let buffer = u64::try_from(self.config.max_receive_buffer_bytes).unwrap_or(u64::MAX);
            let srtt = self.recovery.rtt().srtt();
            self.queue_bound.on_poll(now, buffer, srtt);
        }
        if self.amplification_gate() == Some(false) {
            return None;
        }
        if self.closing.reset_pending {
            self.closing.reset_pending = false;
            return self.send_bare(now, buf, PacketType::Fin, Flags::REMOTE_RESET);
        }
        match self.state {
            ConnectionState::Closed => return None,
            ConnectionState::Starting => {
                if !self.start.pending {
                    return None;
                }
                let mut h = self.header(PacketType::Start, Flags::REPLY_REQ);
                self.prepare_start_security(&mut h);
                let w = build(
                    buf,
                    h,
                    Payload::Start(StartPayload {
                        tlvs: self.start_request_tlvs(),
                    }),
                    None,
                )?;
                self.on_start_sent(now);
                return self.sent(now, w);
            }
            _ => {}
        }
        if self.start_reply_pending {
            self.start_reply_pending = false;
            if let Some(w) = self.resend_start_reply(buf) {
                return self.sent(now, w);
            }
            let mut h = self.header(PacketType::Start, Flags::REPLY);
            self.prepare_start_security(&mut h);
            let w = build(
                buf,
                h,
                Payload::Start(StartPayload {
                    tlvs: self.start_tlvs(),
                }),
                None,
            )?;
            self.keep_start_reply(buf.get(0..w.len())?);
            return self.sent(now, w);
        }
        if !self.can_seal() {
            // An XX server before message 3: nothing could be sealed.
            return None;
        }
        if let Some((t, probe_id, timestamp_ns, arrival_ns)) = self.echo_replies.pop_front() {
            let pn = self.recovery.take_pn();
            let h = self.header(t, Flags::REPLY);
            // The answer to ECHO_2 is one byte longer than the answer to
            // ECHO_1: a runtime joins equal datagrams (the last may be
            // shorter) into one GSO send, and the two answers must leave
            // in separate sends so that they arrive as separate datagrams,
            // each with its own receive timestamp at the prober.
            let p = EchoPayload {
                packet_number: pn as u32,
                probe_id,
                timestamp_ns,
                arrival_ns,
                padding_len: u16::from(t == PacketType::Echo2),
            };
            let w = build(buf, h, Payload::Echo(p), Some(pn))?;
            return self.sent(now, w);
        }
        if let Some(w) = self.poll_path_challenge(buf) {
            return Some(w);
        }
        if let Some(w) = self.poll_key_control(now, buf) {
            return Some(w);
        }
        if self.recv.ack_due(now) {
            let pn = self.recovery.take_pn();
            // Only ever set when `request_ack_frequency` is on.
            let frequency = self.ack_policy.section();
            let room =
                usize::from(self.packet_size).saturating_sub(HEADER_LEN + AckPayload::FIXED_LEN);
            // Credits first (a handful of streams), ranges in the rest.
            let credits =
                self.credits_for_ack((room / 2).saturating_sub(1) / AckPayload::CREDIT_LEN);
            let room = room
                .saturating_sub(1 + credits.len() * AckPayload::CREDIT_LEN)
                .saturating_sub(frequency.map_or(0, |_| AckFrequency::LEN))
                .saturating_sub(self.recv.ecn_section_len());
            let policy_ranges = match self.config.ack_policy {
                // SACK's limit counts every range; `build_ack`'s, those
                // besides the first.
                AckPolicy::Tcp { .. } => AckPolicy::TCP_MAX_RANGES - 1,
                AckPolicy::Sltp => self.config.max_ack_ranges,
            };
            let max_ranges = (room / 8).min(policy_ranges);
            if let Some((mut ack, ce)) = self.recv.build_ack(now, pn, max_ranges) {
                ack.credits = credits;
                ack.frequency = frequency;
                let mut flags = Flags::EMPTY;
                if self.recv.wants_ack_of_ack(now, ack.ranges.len()) {
                    flags = flags | Flags::REPLY_REQ;
                    self.recv.on_ack_of_ack_requested(now, pn);
                }
                let mut h = self.header(PacketType::Ack, flags);
                if ce {
                    h.cn = 3;
                }
                let w = build(buf, h, Payload::Ack(ack), Some(pn))?;
                if frequency.is_some() {
                    self.ack_policy.on_sent(now);
                }
                self.counters.acks_sent += 1;
                return self.sent(now, w);
            }
        }
        if self.recv.nack_due() {
            let room =
                usize::from(self.packet_size).saturating_sub(HEADER_LEN + NackPayload::FIXED_LEN);
            let missing = self
                .recv
                .take_nack((room / 12).min(self.config.max_ack_ranges));
            if !missing.is_empty() {
                let pn = self.recovery.take_pn();
                let h = self.header(PacketType::Nack, Flags::EMPTY);
                let p = NackPayload {
                    packet_number: pn as u32,
                    missing_packets: missing,
                    missing_blocks: Vec::new(),
                };
                let w = build(buf, h, Payload::Nack(p), Some(pn))?;
                self.counters.nacks_sent += 1;
                return self.sent(now, w);
            }
        }
        if let Some((t, probe_id, size)) = self.probe_sends.pop_front() {
            let pn = self.recovery.take_pn();
            let h = self.header(t, Flags::REPLY_REQ);
            // Padded to the test's probe size (crate::probe).
            let padding = (size as usize).saturating_sub(HEADER_LEN + EchoPayload::FIXED_LEN);
            let p = EchoPayload {
                packet_number: pn as u32,
                probe_id,
                timestamp_ns: now.as_nanos(),
                arrival_ns: None,
                padding_len: u16::try_from(padding).unwrap_or(0),
            };
            let w = build(buf, h, Payload::Echo(p), Some(pn))?;
            return self.sent(now, w);
        }
        if let Some(w) = self.poll_pmtu_probe(now, buf) {
            return Some(w);
        }
        if let Some((window_bytes, reason)) = self.take_cwin() {
            let pn = self.recovery.take_pn();
            let h = self.header(PacketType::Cwin, Flags::EMPTY);
            let p = CwinPayload {
                packet_number: pn as u32,
                window_bytes,
                reason,
            };
            let w = build(buf, h, Payload::Cwin(p), Some(pn))?;
            return self.sent(now, w);
        }
        if let Some(w) = self.poll_group_packet(now, buf) {
            return Some(w);
        }
        if self.status_reply_pending {
            self.status_reply_pending = false;
            return self.send_bare(now, buf, PacketType::Status, Flags::REPLY);
        }
        if self.closing.fin_pending {
            self.closing.fin_pending = false;
            let w = self.send_bare(now, buf, PacketType::Fin, Flags::EMPTY);
            self.on_fin(now);
            return w;
        }
        if self.closing.end_reply_pending {
            self.closing.end_reply_pending = false;
            return self.send_bare(now, buf, PacketType::End, Flags::REPLY);
        }
        if self.closing.end_pending {
            let w = self.send_bare(now, buf, PacketType::End, Flags::REPLY_REQ);
            self.on_end_sent(now);
            return w;
        }
        if let Some(w) = self.send_data(now, buf) {
            return Some(w);
        }
        if (self.send.window_blocked() || self.send.credit_blocked())
            && self.data_ready
            && self.status_poll_at.is_none()
            && !self.status_poll_pending
        {
            self.status_poll_at = Some(now + self.status_poll_wait());
        }
        if self.status_poll_pending {
            self.status_poll_pending = false;
            self.status_backoff = self.status_backoff.saturating_add(1);
            self.on_status_poll_sent();
            return self.send_bare(now, buf, PacketType::Status, Flags::REPLY_REQ);
        }
        if self.keep_alive_pending {
            self.counters.keep_alives_sent += 1;
            return self.send_bare(now, buf, PacketType::Idle, Flags::EMPTY);
        }
        None
    }

    fn data_state(&self) -> bool {
        self.data_ready
            && matches!(
                self.state,
                ConnectionState::Connected | ConnectionState::EndLocal | ConnectionState::EndRemote
            )
    }

    fn send_data(&mut self, now: Time, buf: &mut TxBuf<'_>) -> Option<Written> {
        if !self.data_state() {
            return None;
        }
        self.expire_messages(now);
        let mps = u64::from(self.packet_size);
        if !self.send.has_pending() {
            if self.recovery.allowance(now, mps) == Allowance::Send {
                self.recovery.on_app_limited();
            }
            return None;
        }
        let probe = match self.recovery.allowance(now, mps) {
            Allowance::Send => false,
            Allowance::Probe => true,
            Allowance::Blocked => {
                self.recovery.on_cwnd_limited();
                return None;
            }
            Allowance::Wait(_) => return None,
        };
        let pn = self.recovery.next_pn();
        let room = usize::from(self.packet_size).saturating_sub(HEADER_LEN + 4);
        let mut taken = None;
        if probe && !self.send.has_retransmission() {
            if let Some(mut blocks) = self.recovery.oldest_blocks() {
                // The oldest packet may predate a smaller PMTU.
                self.send.fit_blocks(&mut blocks, room);
                let live = self.send.take_specific(pn, &blocks);
                if !live.is_empty() {
                    taken = Some(crate::connection::send::Taken {
                        blocks: live,
                        retransmission: true,
                    });
                }
            }
        }
        let taken = match taken {
            Some(t) => t,
            None => {
                let ctx = SchedContext {
                    now,
                    cwnd_bytes: self.recovery.congestion().cwnd_bytes(),
                    srtt: self.recovery.rtt().srtt(),
                };
                self.send.take_frames(pn, room, &ctx)?
            }
        };
        let taken_pn = self.recovery.take_pn();
        debug_assert_eq!(taken_pn, pn);
        // The frames are views of the queued messages: a full-size packet's
        // one frame as it is (no array to fill first), a few listed on the
        // stack (a packet rarely carries more than a few), on the heap
        // beyond.
        let single: Option<StreamFrame<'_>>;
        let mut stack: [StreamFrame<'_>; STACK_FRAMES];
        let heap: Vec<StreamFrame<'_>>;
        let frames: &[StreamFrame<'_>] = if let [b] = taken.blocks.as_slice() {
            single = self.send.frame(*b);
            single.as_slice()
        } else if taken.blocks.len() <= STACK_FRAMES {
            stack = [StreamFrame::skip(0, 0, Reliability::Reliable); STACK_FRAMES];
            let mut n = 0;
            for f in taken.blocks.iter().filter_map(|b| self.send.frame(*b)) {
                if let Some(slot) = stack.get_mut(n) {
                    *slot = f;
                    n += 1;
                }
            }
            stack.get(..n).unwrap_or(&[])
        } else {
            heap = taken
                .blocks
                .iter()
                .filter_map(|b| self.send.frame(*b))
                .collect();
            &heap
        };
        let payload = DataPayload {
            packet_number: pn as u32,
            frames: frames.into(),
        };
        // REPLY_REQ marks the last packet before the data runs out, so the
        // tail is acknowledged at once. A full window needs no request:
        // the peer's ACK schedule (every 2nd packet, or the frequency this
        // side asked for) clocks it, and asking would add an ACK per window.
        let last = !self.send.has_pending();
        // Under path MTU discovery a datagram can be as large as half the
        // window (64 KB on loopback against a young 120 KB window): then
        // the window holds one datagram, the second waits for an ACK, and
        // the receiver's ACK schedule (every 2nd packet) would hold that
        // ACK for its full delay — one datagram per 25 ms, 21 Mbit/s on
        // loopback. Ask for the ACK at once while the window holds fewer
        // than two datagrams. Without discovery nothing changes.
        let lone = self.pmtud.is_enabled()
            && self.recovery.congestion().cwnd_bytes() < 2 * u64::from(self.packet_size);
        let mut flags = Flags::ST_RTR;
        if taken.retransmission {
            flags = flags | Flags::ST_RET;
        }
        if last || lone {
            flags = flags | Flags::REPLY_REQ;
        }
        let mut h = self.header(PacketType::Data, flags);
        // PRI: the most urgent class among the frames (protocol.md §6.4).
        h.pri = taken
            .blocks
            .iter()
            .map(|b| self.send.class_of(b.stream))
            .min()
            .unwrap_or(0)
            .min(3);
        if h.pri == 0 {
            self.recovery.on_priority_sent(now);
        }
        let summary = payload.header_summary();
        h.mess_seq_no = summary.mess_seq_no;
        h.pblock = summary.pblock;
        h.tblock = summary.tblock;
        let w = build(buf, h, Payload::Data(payload), Some(pn))?;
        let size = u32::try_from(w.len()).unwrap_or(u32::MAX);
        self.recovery
            .on_data_sent(now, pn, size, taken.retransmission, taken.blocks, probe);
        if taken.retransmission {
            self.counters.packets_retransmitted += 1;
            self.counters.bytes_retransmitted += u64::from(size);
        }
        self.sent(now, w)
    }

    /// When `handle_timeout` must next run.
    pub(crate) fn poll_timeout(&self) -> Option<Time> {
        let mut t: Option<Time> = None;
        let mut arm = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y: Time| y.min(x)));
            }
        };
        match self.state {
            ConnectionState::Closed => return None,
            ConnectionState::Starting => {
                arm(self.start.retx_at);
                arm(Some(self.start.deadline));
                return t;
            }
            _ => {}
        }
        arm(Some(self.last_received + self.config.idle_timeout));
        if !self.keep_alive_pending {
            arm(Some(self.keep_alive_at()));
        }
        arm(self.recovery.timeout());
        arm(self.recv.ack_deadline());
        arm(self.probe.timeout());
        arm(self.pmtud.timeout());
        arm(self.closing.end_retx_at);
        arm(self.closing.timed_close_at);
        arm(self.status_poll_at);
        arm(self.path_timeout());
        arm(self.key_control_timeout());
        arm(self.group_timeout());
        arm(self.icmp_death_at());
        arm(self.death_deadline());
        arm(self.send.next_deadline());
        if self.data_state() && self.send.has_pending() {
            if let Allowance::Wait(at) = self
                .recovery
                .allowance(self.now, u64::from(self.packet_size))
            {
                arm(Some(at));
            }
        }
        t
    }

    /// Run every timer that is due at `now`.
    pub(crate) fn handle_timeout(&mut self, now: Time) {
        let now = self.tick(now);
        self.on_start_timer(now);
        self.on_liveness_timers(now);
        if matches!(
            self.state,
            ConnectionState::Closed | ConnectionState::Starting
        ) {
            return;
        }
        let backoff = self.recovery.rtt().backoff_exponent();
        let rto = self.recovery.rtt().backed_off_rto();
        let out = self.recovery.on_timeout(now);
        self.apply(out, crate::trace::LossTrigger::Timeout);
        // The retransmission timer expired and backed off: one more
        // probe timeout without an answer (lifecycle/failure.rs).
        if self.recovery.rtt().backoff_exponent() > backoff {
            self.count_probe_timeout(now, rto);
        }
        self.expire_messages(now);
        if let Some(outcome) = self.probe.on_timeout(now) {
            self.on_probe_outcome(now, outcome);
        }
        self.pmtud.on_timeout(now);
        self.on_path_timer(now);
        self.on_group_timer(now);
        self.on_icmp_timer(now);
        self.on_death_timer(now);
        if self.status_poll_at.is_some_and(|t| t <= now) {
            self.status_poll_at = None;
            self.status_poll_pending = self.send.window_blocked() || self.send.credit_blocked();
        }
    }
}
