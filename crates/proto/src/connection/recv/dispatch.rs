//! Incoming packets: checks (address, ST_CKS, SYNC_NO, duplicates) and
//! dispatch by packet type to the life cycle, the receiver, recovery and
//! the packet-pair prober.

use crate::connection::recv::{self, RecvLimits};
use crate::connection::{Connection, ConnectionState, Event, StartParams, ViolationKind};
use crate::recovery::BlockRef;
use crate::trace::LossTrigger;
use crate::wire::{
    expand_packet_number, DatagramRepr, EchoPayload, Flags, Frames, MissingPackets, PacketType,
    Payload, Reliability, StreamFrame,
};
use crate::EcnCodepoint;
use peregrine_cc::Time;
use std::net::SocketAddr;

/// Frames of one received DATA packet listed on the stack (more go to
/// the heap).
const STACK_FRAMES: usize = 16;

/// Most ECHO answers queued (a flood of probes cannot grow memory).
const MAX_ECHO_REPLIES: usize = 16;

impl Connection {
    /// One decoded datagram addressed to this connection.
    pub(crate) fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        dg: &DatagramRepr<'_>,
    ) {
        // The datagram's own arrival time (per datagram from the runtime,
        // e.g. a kernel receive timestamp): the packet pair measures the
        // gap between two arrivals, which the connection's monotonic
        // clock (`tick`) would flatten if another event came in between.
        let arrived = now;
        let now = self.tick(now);
        if self.state == ConnectionState::Closed {
            return;
        }
        // Another address: maybe the peer migrated (path.rs decides).
        let new_address = remote != self.remote;
        if new_address && !self.admit_from_new_address(dg) {
            return;
        }
        let h = &dg.header;
        // A side that checksums requires its peer's plain packets
        // checksummed: otherwise a corruption that clears ST_CKS would go
        // unnoticed. A sealed packet (only those reach here on a protected
        // connection) has no checksum: its tag was checked instead.
        if self.config.checksum && !h.flags.contains(Flags::ST_CKS) && !self.seals(h.pk_type) {
            self.counters.protocol_errors += 1;
            return;
        }
        match &dg.payload {
            Payload::Start(start) => {
                if !h.flags.contains(Flags::REPLY) {
                    self.on_duplicate_start(now, h.sync_no);
                } else if self.state == ConnectionState::Starting {
                    // Protected: an answer whose Noise message 2 fails is
                    // dropped (counted), never a reason to close.
                    if !self.read_start_reply(h, &start.tlvs) {
                        return;
                    }
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
                if h.sync_no != self.local_sync {
                    self.violation(ViolationKind::WrongSyncNo);
                } else if !self.on_retry(now, r) {
                    // REJECT `retry` went first (lifecycle/admission.rs).
                    self.on_reject(now, r.reason);
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
            if new_address {
                // A replayed genuine datagram from elsewhere.
                self.reject_new_address();
                return;
            }
            self.recv.on_duplicate();
            return;
        }
        let newest = self.recv.largest().is_none_or(|l| pn > l);
        if new_address {
            self.on_new_address_packet(now, remote, newest, h.total_len, &dg.payload);
        }
        // Our SYNC_NO-checked (or authenticated) packet: the address is proven.
        self.validate_address();
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
                // Its sojourn in the socket queue is taken at the next
                // poll (queue_bound.rs).
                // Class-0 data (PRI 0) engages the priority cap.
                self.queue_bound
                    .on_datagram(arrived, u64::from(h.total_len), h.pri == 0);
            }
            other => {
                self.recv.record(now, pn);
                self.on_control(now, arrived, h, other);
            }
        }
        self.note_received(now, h.total_len);
        self.recv.detect_missing(self.config.packet_threshold);
        self.check_close_progress(now);
    }

    /// Where the one frame `f` of a DATA datagram about to be handled
    /// would be appended (see [`recv::RecvState::stage_block`]): the
    /// endpoint copies it there while it verifies the checksum. `None`
    /// when it cannot be staged (the connection does not take data now,
    /// or the block is not its message's next one). Clear with
    /// [`clear_staged`](Self::clear_staged) after the datagram. O(log
    /// streams + log pending messages).
    pub(crate) fn stage_block(
        &mut self,
        f: &StreamFrame<'_>,
    ) -> Option<&mut [std::mem::MaybeUninit<u8>]> {
        if !self.data_state_receiving() {
            return None;
        }
        self.recv.stage_block(f)
    }

    /// Forget a staged block (see [`stage_block`](Self::stage_block)).
    /// O(1).
    pub(crate) fn clear_staged(&mut self) {
        self.recv.clear_staged();
    }

    /// Whether DATA is accepted in this state (what `on_data` checks
    /// first).
    fn data_state_receiving(&self) -> bool {
        matches!(
            self.state,
            ConnectionState::Connected
                | ConnectionState::EndLocal
                | ConnectionState::EndRemote
                | ConnectionState::TimedClose
        )
    }

    fn note_received(&mut self, _now: Time, len: u16) {
        self.counters.packets_received += 1;
        self.counters.bytes_received += u64::from(len);
    }

    pub(in crate::connection) fn on_peer_window(&mut self, bytes: u64) {
        self.send.set_peer_window(bytes);
        self.on_window_update(bytes);
        if !self.send.window_blocked() && !self.send.credit_blocked() {
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
        frames: &crate::wire::Frames<'_>,
    ) -> bool {
        if !self.data_state_receiving() {
            return false;
        }
        let limits = RecvLimits {
            max_buffer_bytes: self.config.max_receive_buffer_bytes,
            max_messages: self.config.max_reassembly_messages,
            max_message_size: self.config.max_message_size,
            // A guess at the peer's cut: this side's own (with path MTU
            // discovery, blocks that fill the size this side's search
            // found, never longer than the base size's; else the
            // negotiated packet size's). The peer's search may have found
            // another size: another cut only costs a copy per block.
            peer_block_size: self.send.block_size(),
        };
        if self.beyond_credit(frames) {
            // The peer sent new data past a credit we never gave: a
            // protocol error; the packet is dropped unacknowledged.
            let why = recv::DataRejection::Protocol("past the stream credit");
            self.counters.protocol_errors += 1;
            self.recv.on_rejected(why);
            return false;
        }
        // Decoded once: the checks, the store and the byte count read the
        // same list. Each pass over a received payload's frames
        // (`Frames::Wire`) decodes every frame header again, except a
        // lone frame's (kept as decoded). A bulk packet carries one frame
        // (listed as is); a few more are listed
        // on the stack, initialised only then; the heap beyond
        // [`STACK_FRAMES`]. O(frames), no allocation up to that.
        let one: [StreamFrame<'_>; 1];
        let mut stack: [StreamFrame<'_>; STACK_FRAMES];
        let heap: Vec<StreamFrame<'_>>;
        let list: &[StreamFrame<'_>] = match frames {
            Frames::Slice(l) => l,
            Frames::Owned(l) => l,
            Frames::Wire(_) => {
                let mut iter = frames.iter();
                match (iter.next(), iter.next()) {
                    (None, _) => &[],
                    (Some(f), None) => {
                        one = [f];
                        &one
                    }
                    (Some(a), Some(b)) => {
                        stack = [StreamFrame::skip(0, 0, Reliability::Reliable); STACK_FRAMES];
                        stack[0] = a;
                        stack[1] = b;
                        let mut n = 2;
                        for (slot, f) in stack.iter_mut().skip(2).zip(iter.by_ref()) {
                            *slot = f;
                            n += 1;
                        }
                        match iter.next() {
                            None => stack.get(..n).unwrap_or(&[]),
                            Some(_) => {
                                heap = frames.iter().collect();
                                &heap
                            }
                        }
                    }
                }
            }
        };
        if let Err(why) = self.recv.check_frames(list, &limits) {
            if matches!(why, recv::DataRejection::Protocol(_)) {
                self.counters.protocol_errors += 1;
            }
            self.recv.on_rejected(why);
            return false;
        }
        let in_order = self.recv.record(now, pn);
        let mut delivered = std::mem::take(&mut self.delivered);
        self.recv.store_frames_into(list, &limits, &mut delivered);
        for (id, bytes) in delivered.drain(..) {
            self.on_delivered(id);
            self.events.push_back(Event::MessageReceived {
                stream: id.stream,
                id,
                bytes,
            });
        }
        self.delivered = delivered;
        let h = &dg.header;
        let ce = ecn == Some(EcnCodepoint::Ce) || h.cn == 3;
        self.recv.count_ecn(ecn, ce);
        // Block bytes only: TCP's "full-size" is about segment payload.
        let data_bytes = list.iter().map(|f| f.data.len()).sum::<usize>();
        self.recv.on_data_packet(
            now,
            in_order,
            h.flags.contains(Flags::REPLY_REQ),
            ce,
            data_bytes,
            recv::AckSchedule {
                ack_after_bytes: self.queue_bound.ack_after_bytes(),
                ..recv::AckSchedule::of(&self.config)
            },
        );
        true
    }

    fn on_control(
        &mut self,
        now: Time,
        arrived: Time,
        h: &crate::wire::HeaderRepr,
        payload: &Payload<'_>,
    ) {
        match (h.pk_type, payload) {
            (PacketType::Ack, Payload::Ack(ack)) => {
                let out = self.recovery.on_ack(now, ack, h.cn == 3);
                self.apply(out, LossTrigger::Acknowledgement);
                // The next key update waits for the peer to acknowledge
                // a packet of the current key (crypto::aead).
                if let Some(sec) = self.security.as_mut() {
                    sec.on_acked(ack.largest_acked);
                }
                // ACK-of-ACK: what our acknowledged ACKs reported need not
                // be reported again.
                self.recv.on_peer_ack(now, ack);
                if let Some(request) = ack.frequency {
                    self.recv.on_ack_frequency(request);
                }
                if h.flags.contains(Flags::REPLY_REQ) {
                    // The peer wants to learn which of its ACKs arrived.
                    self.recv.request_ack_now();
                }
                self.update_ack_frequency(now);
                for c in &ack.credits {
                    self.send.raise_credit(c.stream, c.max_message);
                }
                if !self.send.window_blocked() && !self.send.credit_blocked() {
                    self.status_poll_at = None;
                    self.status_poll_pending = false;
                    self.status_backoff = 0;
                }
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
                self.apply(out, LossTrigger::Nack);
                self.maybe_reprobe(now);
            }
            (PacketType::Echo | PacketType::Echo1 | PacketType::Echo2, Payload::Echo(e)) => {
                self.note_path_echo(h.pk_type, h.flags, e);
                self.on_echo(now, arrived, h.pk_type, h.flags, e);
            }
            (PacketType::Status, _) if h.flags.contains(Flags::REPLY_REQ) => {
                self.status_reply_pending = true;
                if self.config.initial_stream_credit.is_some() {
                    // The sender may be waiting for credit: repeat it.
                    self.recv.request_ack_at(now);
                }
            }
            (PacketType::Cwin, Payload::Cwin(c)) => {
                self.on_cwin(c);
            }
            (PacketType::End, _) => {
                if h.flags.contains(Flags::REPLY) {
                    self.on_end(now, true);
                } else if h.flags.contains(Flags::REPLY_REQ) {
                    self.on_end(now, false);
                }
            }
            (PacketType::Fin, _) => self.on_fin(now),
            (PacketType::Join | PacketType::Leave, Payload::Group(g)) => {
                let pn = expand_packet_number(g.packet_number, self.recv.largest());
                self.on_group_packet(h.pk_type, h.flags, pn, g);
            }
            // IDLE only keeps the connection alive.
            _ => {}
        }
    }

    fn on_echo(
        &mut self,
        now: Time,
        arrived: Time,
        pk_type: PacketType,
        flags: Flags,
        e: &EchoPayload,
    ) {
        if self.on_key_control(pk_type, flags, e) {
            return;
        }
        if flags.contains(Flags::REPLY_REQ) {
            if self.echo_replies.len() < MAX_ECHO_REPLIES {
                // A packet-pair probe's answer says when the probe arrived
                // here (the datagram's own receive time): the prober
                // takes the dispersion from these, not from when the
                // answers reach it (crate::probe).
                let arrival = matches!(pk_type, PacketType::Echo1 | PacketType::Echo2)
                    .then(|| arrived.as_nanos());
                self.echo_replies
                    .push_back((pk_type, e.probe_id, e.timestamp_ns, arrival));
            }
        } else if flags.contains(Flags::REPLY) {
            if pk_type == PacketType::Echo && e.probe_id == crate::connection::pmtu::PMTU_PROBE_ID {
                self.on_pmtu_probe_answer(now, e.timestamp_ns);
                return;
            }
            if let Some(outcome) =
                self.probe
                    .on_answer(arrived, pk_type, e.probe_id, e.timestamp_ns, e.arrival_ns)
            {
                self.on_probe_outcome(now, outcome);
            }
        }
    }
}
