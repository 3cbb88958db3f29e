//! The receiving side: which packets arrived (for ACKs), which are missing
//! (for NACKs), and the reassembly of blocks into messages delivered in
//! order per stream, exactly once.
//!
//! * **ACKs** (seed 003 §III-G): the sender asks for one with REPLY_REQ;
//!   besides, the receiver acknowledges on its own schedule — after
//!   `ack_frequency` DATA packets, at once when a packet arrives out of
//!   order, and at the latest `max_ack_delay` after the first
//!   unacknowledged DATA packet.
//! * **NACKs**: a packet number is reported missing once a packet
//!   `packet_threshold` numbers later has arrived (the same reordering
//!   allowance the sender's loss detection uses), once; the sender's
//!   timers cover a lost NACK. This receiver names missing *packets*; it
//!   honours block NACKs from peers that reassemble by message.
//! * **Reassembly** is bounded: the head-of-line message of a stream is
//!   always accepted (so the connection always progresses), other messages
//!   only within `max_reassembly_messages` and the receive buffer. A DATA
//!   packet any of whose frames cannot be stored is dropped whole and not
//!   acknowledged, so the sender retransmits it: nothing acknowledged is
//!   ever thrown away.

use super::events::MessageId;
use crate::streams::StreamReliability;
use crate::wire::{AckPayload, AckRange, MissingPackets, StreamFrame};
use peregrine_cc::Time;
use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Most ranges the received-packet set keeps (the ACK carries 256).
const MAX_RANGES: usize = 512;

/// A set of packet numbers as disjoint inclusive ranges.
#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    ranges: BTreeMap<u64, u64>,
    /// Everything below this was forgotten to bound memory.
    trimmed_below: u64,
}

impl RangeSet {
    /// Whether `v` is in the set.
    pub fn contains(&self, v: u64) -> bool {
        self.ranges
            .range(..=v)
            .next_back()
            .is_some_and(|(_, &end)| end >= v)
    }

    /// Insert `v`; returns whether it was new.
    pub fn insert(&mut self, v: u64) -> bool {
        if self.contains(v) {
            return false;
        }
        let mut start = v;
        let mut end = v;
        if let Some((&s, &e)) = self.ranges.range(..v).next_back() {
            if e.checked_add(1) == Some(v) {
                start = s;
                self.ranges.remove(&s);
            }
        }
        if let Some(next) = v.checked_add(1) {
            if let Some(e) = self.ranges.remove(&next) {
                end = e;
            }
        }
        self.ranges.insert(start, end);
        while self.ranges.len() > MAX_RANGES {
            if let Some((_, e)) = self.ranges.pop_first() {
                self.trimmed_below = self.trimmed_below.max(e.saturating_add(1));
            }
        }
        true
    }

    /// The ranges, highest first.
    pub fn descending(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().rev().map(|(&s, &e)| (s, e))
    }

    /// Numbers below this were forgotten (the oldest ranges are dropped
    /// beyond 512 ranges); they count as received.
    pub fn trimmed_below(&self) -> u64 {
        self.trimmed_below
    }

    /// Missing numbers in `from..=to`, as `(first, count)` runs, ascending.
    pub fn gaps(&self, from: u64, to: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        if from > to {
            return out;
        }
        let mut cursor = from;
        // A range that starts below `from` may cover its beginning.
        if let Some((_, &e)) = self.ranges.range(..from).next_back() {
            if e >= from {
                cursor = match e.checked_add(1) {
                    Some(c) => c,
                    None => return out,
                };
            }
        }
        for (&s, &e) in self.ranges.range(from..) {
            if cursor > to {
                break;
            }
            if s > cursor {
                let last = (s - 1).min(to);
                out.push((cursor, last - cursor + 1));
            }
            cursor = match e.checked_add(1) {
                Some(c) => c.max(cursor),
                None => return out,
            };
        }
        if cursor <= to {
            out.push((cursor, to - cursor + 1));
        }
        out
    }
}

/// One message being reassembled.
#[derive(Debug)]
struct InMessage {
    block_count: u16,
    /// Blocks stored so far.
    received: usize,
    /// Bytes stored so far.
    bytes: usize,
    assembly: Assembly,
}

/// Where a message's blocks are kept until it is complete.
#[derive(Debug)]
enum Assembly {
    /// Every block but the last is `stride` bytes (the block size both
    /// sides derive from the negotiated packet size), so block `i` is
    /// copied straight to `i · stride` of the message buffer, which is the
    /// delivered message once complete: one copy out of the datagram. The
    /// buffer's capacity is reserved from BLOCK_COUNT, bounded by the
    /// largest message and the receive buffer (a hostile count reserves no
    /// more than a real message could take).
    Strided {
        buf: Vec<u8>,
        stride: usize,
        /// One bit per block received.
        have: Vec<u64>,
        /// The last block's length, once received.
        last_len: usize,
    },
    /// Blocks of other sizes (a peer cutting messages differently): kept
    /// apart and joined on completion.
    Irregular(BTreeMap<u16, Vec<u8>>),
}

impl InMessage {
    fn new(block_count: u16, stride: usize, limits: &RecvLimits) -> InMessage {
        let count = usize::from(block_count);
        let reserve = count
            .saturating_mul(stride)
            .min(limits.max_message_size)
            .min(limits.max_buffer_bytes);
        InMessage {
            block_count,
            received: 0,
            bytes: 0,
            assembly: Assembly::Strided {
                buf: Vec::with_capacity(reserve),
                stride,
                have: vec![0; count.div_ceil(64)],
                last_len: 0,
            },
        }
    }

    /// Whether block `index` is stored.
    fn has(&self, index: u16) -> bool {
        match &self.assembly {
            Assembly::Strided { have, .. } => {
                let i = usize::from(index);
                have.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
            }
            Assembly::Irregular(blocks) => blocks.contains_key(&index),
        }
    }

    fn is_complete(&self) -> bool {
        self.received == usize::from(self.block_count)
    }

    /// Store block `index` (not stored yet). O(len), plus a one-time
    /// conversion if the block breaks the stride.
    fn store(&mut self, index: u16, data: &[u8]) {
        let last = index.checked_add(1) == Some(self.block_count);
        if let Assembly::Strided { stride, .. } = &self.assembly {
            if !last && data.len() != *stride {
                self.make_irregular();
            }
        }
        match &mut self.assembly {
            Assembly::Strided {
                buf,
                stride,
                have,
                last_len,
            } => {
                let i = usize::from(index);
                let off = i * *stride;
                let end = off + data.len();
                if buf.len() == off {
                    buf.extend_from_slice(data);
                } else {
                    // A block ahead of a missing one: the gap is zeroed
                    // until its block arrives.
                    if buf.len() < end {
                        buf.resize(end, 0);
                    }
                    if let Some(dst) = buf.get_mut(off..end) {
                        dst.copy_from_slice(data);
                    }
                }
                if let Some(w) = have.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
                if last {
                    *last_len = data.len();
                }
            }
            Assembly::Irregular(blocks) => {
                blocks.insert(index, data.to_vec());
            }
        }
        self.received += 1;
        self.bytes += data.len();
    }

    /// Switch to keeping blocks apart (a block of another size arrived).
    fn make_irregular(&mut self) {
        let Assembly::Strided {
            buf,
            stride,
            last_len,
            ..
        } = &self.assembly
        else {
            return;
        };
        let mut blocks = BTreeMap::new();
        for index in 0..self.block_count {
            if !self.has(index) {
                continue;
            }
            let off = usize::from(index) * stride;
            let len = if index.checked_add(1) == Some(self.block_count) {
                *last_len
            } else {
                *stride
            };
            let block = buf.get(off..off + len).unwrap_or(&[]);
            blocks.insert(index, block.to_vec());
        }
        self.assembly = Assembly::Irregular(blocks);
    }

    /// The complete message's bytes: the strided buffer itself, or the
    /// irregular blocks joined.
    fn into_bytes(self) -> Vec<u8> {
        match self.assembly {
            Assembly::Strided { buf, .. } => buf,
            Assembly::Irregular(blocks) => {
                let mut bytes = Vec::with_capacity(self.bytes);
                for b in blocks.values() {
                    bytes.extend_from_slice(b);
                }
                bytes
            }
        }
    }
}

#[derive(Debug, Default)]
struct RecvStream {
    /// Ordered delivery: the next message number to deliver.
    next_deliver: u32,
    pending: BTreeMap<u32, InMessage>,
    /// Ordered delivery: abandoned messages at or above `next_deliver`.
    skipped: BTreeSet<u32>,
    /// Unordered delivery: messages delivered or skipped.
    done: RangeSet,
}

impl RecvStream {
    /// Whether a frame of message `n` is of no use any more.
    fn finished(&self, n: u32, ordered: bool) -> bool {
        if ordered {
            n < self.next_deliver || self.skipped.contains(&n)
        } else {
            self.done.contains(u64::from(n)) || u64::from(n) < self.done.trimmed_below()
        }
    }
}

/// Limits on what the receiver stores.
#[derive(Copy, Clone, Debug)]
pub struct RecvLimits {
    /// Receive buffer, bytes (reassembly plus unread messages).
    pub max_buffer_bytes: usize,
    /// Most incomplete or out-of-order messages.
    pub max_messages: usize,
    /// Largest message, bytes.
    pub max_message_size: usize,
    /// The peer's block size (bounds a message's block count).
    pub peer_block_size: usize,
}

/// Why a DATA packet was dropped without acknowledgement.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DataRejection {
    /// No room to store one of its frames.
    NoBuffer,
    /// A frame contradicts the protocol (stream unsupported, block count
    /// changed, message too large).
    Protocol(&'static str),
}

/// Counters of the receiving side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecvCounters {
    /// Packets whose number had been seen already.
    pub duplicate_packets: u64,
    /// Messages delivered to the application.
    pub messages_delivered: u64,
    /// Messages the sender abandoned (skip frames that took effect).
    pub messages_skipped: u64,
    /// DATA packets dropped for lack of buffer.
    pub dropped_no_buffer: u64,
    /// DATA packets dropped for breaking the protocol.
    pub dropped_protocol: u64,
    /// CE-marked DATA packets.
    pub ecn_ce_received: u64,
}

/// The receiving side of one connection.
#[derive(Debug, Default)]
pub struct RecvState {
    received: RangeSet,
    largest: Option<u64>,
    largest_at: Time,
    unacked_data: u32,
    ack_deadline: Option<Time>,
    ack_now: bool,
    nack_floor: u64,
    nack_pending: Vec<MissingPackets>,
    ce_pending: bool,
    streams: BTreeMap<u16, RecvStream>,
    reassembly_bytes: usize,
    reassembly_messages: usize,
    unread_bytes: usize,
    counters: RecvCounters,
}

impl RecvState {
    /// A receiver that has seen nothing.
    pub fn new() -> RecvState {
        RecvState::default()
    }

    /// Release every buffer (the connection closed) but keep the
    /// counters: stats taken after the close still report what was
    /// received and delivered.
    pub fn release(&mut self) {
        let counters = std::mem::take(&mut self.counters);
        *self = RecvState {
            counters,
            ..RecvState::default()
        };
    }

    /// The counters.
    pub fn counters(&self) -> &RecvCounters {
        &self.counters
    }

    /// The largest packet number received.
    pub fn largest(&self) -> Option<u64> {
        self.largest
    }

    /// Whether `pn` was received before (or is too old to tell, which
    /// counts as received: its data was acknowledged long ago).
    pub fn is_duplicate(&self, pn: u64) -> bool {
        self.received.contains(pn) || pn < self.received.trimmed_below()
    }

    /// Count a duplicate packet.
    pub fn on_duplicate(&mut self) {
        self.counters.duplicate_packets += 1;
    }

    /// Record the arrival of packet `pn` (any type) once its payload was
    /// accepted. Returns whether it arrived in order (one above the largest).
    pub fn record(&mut self, now: Time, pn: u64) -> bool {
        let in_order = match self.largest {
            None => pn == 0,
            Some(l) => l.checked_add(1) == Some(pn),
        };
        self.received.insert(pn);
        if self.largest.is_none_or(|l| pn > l) {
            self.largest = Some(pn);
            self.largest_at = now;
        }
        in_order
    }

    /// A DATA packet was accepted: schedule its acknowledgement.
    /// `in_order` is false when it filled or opened a gap.
    pub fn on_data_packet(
        &mut self,
        now: Time,
        in_order: bool,
        reply_req: bool,
        ce: bool,
        ack_frequency: u32,
        max_ack_delay: Duration,
    ) {
        self.unacked_data += 1;
        if ce {
            self.ce_pending = true;
            self.counters.ecn_ce_received += 1;
        }
        if reply_req || !in_order || ce || self.unacked_data >= ack_frequency {
            self.ack_now = true;
        } else if self.ack_deadline.is_none() {
            self.ack_deadline = Some(now + max_ack_delay);
        }
    }

    /// Ask for an ACK by `at` (a window update). Armed as the ACK timer,
    /// so a driver that only watches `poll_timeout` still sends it.
    pub fn request_ack_at(&mut self, at: Time) {
        self.ack_deadline = Some(self.ack_deadline.map_or(at, |t| t.min(at)));
    }

    /// Whether an ACK must be sent now.
    pub fn ack_due(&self, now: Time) -> bool {
        self.largest.is_some() && (self.ack_now || self.ack_deadline.is_some_and(|t| t <= now))
    }

    /// The delayed-ACK timer (none before anything arrived).
    pub fn ack_deadline(&self) -> Option<Time> {
        self.largest.and(self.ack_deadline)
    }

    /// Build the ACK to send now and reset the ACK schedule. The second
    /// value says whether to echo a CE mark.
    pub fn build_ack(
        &mut self,
        now: Time,
        pn: u32,
        max_ranges: usize,
    ) -> Option<(AckPayload, bool)> {
        let largest = self.largest?;
        let mut iter = self.received.descending();
        let (top_lo, top_hi) = iter.next()?;
        let first_range = u32::try_from(top_hi - top_lo).unwrap_or(u32::MAX);
        let mut lo = top_hi - u64::from(first_range);
        let mut ranges = Vec::new();
        if u64::from(first_range) == top_hi - top_lo {
            for (s, e) in iter.take(max_ranges.min(AckPayload::MAX_RANGES)) {
                // `lo - gap - 2 = e`, and e < lo - 1 since ranges are disjoint
                // and not adjacent.
                let Some(gap) = lo.checked_sub(e + 2) else {
                    break;
                };
                let (Ok(gap), Ok(length)) = (u32::try_from(gap), u32::try_from(e - s)) else {
                    break;
                };
                ranges.push(AckRange { gap, length });
                lo = s;
            }
        }
        let delay = now.saturating_duration_since(self.largest_at);
        let ack = AckPayload {
            packet_number: pn,
            largest_acked: largest,
            ack_delay_us: u32::try_from(delay.as_micros()).unwrap_or(u32::MAX),
            first_range,
            ranges,
            credits: Vec::new(),
        };
        self.unacked_data = 0;
        self.ack_deadline = None;
        self.ack_now = false;
        let ce = std::mem::take(&mut self.ce_pending);
        Some((ack, ce))
    }

    /// After a packet arrived: find packet numbers now `threshold` behind
    /// the largest that are still missing and not yet reported.
    pub fn detect_missing(&mut self, threshold: u64) {
        let Some(largest) = self.largest else { return };
        let Some(limit) = largest.checked_sub(threshold) else {
            return;
        };
        let from = self.nack_floor.max(self.received.trimmed_below());
        if from > limit {
            return;
        }
        for (first, count) in self.received.gaps(from, limit) {
            if self.nack_pending.len() >= 255 {
                break;
            }
            self.nack_pending.push(MissingPackets {
                first,
                count: u32::try_from(count).unwrap_or(u32::MAX),
            });
        }
        self.nack_floor = limit + 1;
    }

    /// Missing ranges waiting to be NACKed.
    pub fn nack_due(&self) -> bool {
        !self.nack_pending.is_empty()
    }

    /// Take up to `max` missing ranges for one NACK (the rest stay due).
    pub fn take_nack(&mut self, max: usize) -> Vec<MissingPackets> {
        let n = max.min(255).min(self.nack_pending.len());
        self.nack_pending.drain(..n).collect()
    }

    /// Bytes held: reassembly plus delivered-but-unread messages.
    pub fn buffered_bytes(&self) -> usize {
        self.reassembly_bytes + self.unread_bytes
    }

    /// The application read a message of `len` bytes.
    pub fn on_read(&mut self, len: usize) {
        self.unread_bytes = self.unread_bytes.saturating_sub(len);
    }

    /// Lowest message number of `stream` not yet delivered or skipped (in
    /// order for an ordered stream; the first gap of an unordered one).
    pub fn first_unfinished(&self, stream: u16) -> u32 {
        let Some(s) = self.streams.get(&stream) else {
            return 0;
        };
        let mut unordered = s.done.trimmed_below();
        while s.done.contains(unordered) {
            match s.done.ranges.range(..=unordered).next_back() {
                Some((_, &end)) => unordered = end + 1,
                None => break,
            }
        }
        let unordered = u32::try_from(unordered).unwrap_or(u32::MAX);
        s.next_deliver.max(unordered)
    }

    /// The streams data arrived on, ascending.
    pub fn stream_ids(&self) -> Vec<u16> {
        self.streams.keys().copied().collect()
    }

    /// Highest message number delivered in order on `stream`.
    pub fn last_delivered(&self, stream: u16) -> Option<u32> {
        self.streams.get(&stream)?.next_deliver.checked_sub(1)
    }

    /// Check that every frame of a DATA packet can be stored.
    pub fn check_frames<'f, I>(&self, frames: I, limits: &RecvLimits) -> Result<(), DataRejection>
    where
        I: IntoIterator,
        I::Item: Borrow<StreamFrame<'f>>,
    {
        let mut extra_bytes = 0usize;
        let mut extra_messages = 0usize;
        let max_blocks = limits
            .max_message_size
            .div_ceil(limits.peer_block_size.max(1))
            .max(1);
        for f in frames {
            let f = f.borrow();
            if f.is_skip() {
                continue; // Takes no buffer; frees some.
            }
            if usize::from(f.block_count) > max_blocks {
                return Err(DataRejection::Protocol("message larger than accepted"));
            }
            let ordered = StreamReliability::ordered(f.reliability);
            let s = self.streams.get(&f.stream_id);
            let next = s.map_or(0, |s| s.next_deliver);
            if s.is_some_and(|s| s.finished(f.message_number, ordered)) {
                continue; // Delivered or skipped already: a duplicate.
            }
            let existing = s.and_then(|s| s.pending.get(&f.message_number));
            if let Some(m) = existing {
                if m.block_count != f.block_count {
                    return Err(DataRejection::Protocol("block count changed"));
                }
                if m.has(f.block_index) {
                    continue;
                }
                if m.bytes + f.data.len() > limits.max_message_size {
                    return Err(DataRejection::Protocol("message larger than accepted"));
                }
            } else {
                extra_messages += 1;
            }
            // The head of an ordered stream, or (unordered) a message that
            // completes at once or is already being reassembled.
            let head = if ordered {
                f.message_number == next
            } else {
                f.block_count == 1 || existing.is_some()
            };
            extra_bytes += f.data.len();
            let full = if head {
                // The head of the stream only competes with what the
                // application has not read yet, so reassembly never
                // deadlocks, yet an application that stops reading stops
                // the peer.
                let so_far = existing.map_or(0, |m| m.bytes);
                self.unread_bytes + so_far + extra_bytes > limits.max_buffer_bytes
            } else {
                self.reassembly_messages + extra_messages > limits.max_messages
                    || self.buffered_bytes() + extra_bytes > limits.max_buffer_bytes
            };
            if full {
                return Err(DataRejection::NoBuffer);
            }
        }
        Ok(())
    }

    /// Store the frames of an accepted DATA packet; returns the messages it
    /// completed, in delivery order.
    pub fn store_frames<'f, I>(
        &mut self,
        frames: I,
        limits: &RecvLimits,
    ) -> Vec<(MessageId, Vec<u8>)>
    where
        I: IntoIterator,
        I::Item: Borrow<StreamFrame<'f>>,
    {
        let mut delivered = Vec::new();
        self.store_frames_into(frames, limits, &mut delivered);
        delivered
    }

    /// [`store_frames`](Self::store_frames), appending the completed
    /// messages to `delivered` (a buffer the caller reuses). A message of
    /// one block that can be delivered at once is copied once, out of the
    /// datagram into its own buffer, and never enters reassembly; longer
    /// ones are copied once into their message buffer. O(frames · log
    /// pending messages + bytes).
    pub fn store_frames_into<'f, I>(
        &mut self,
        frames: I,
        limits: &RecvLimits,
        delivered: &mut Vec<(MessageId, Vec<u8>)>,
    ) where
        I: IntoIterator,
        I::Item: Borrow<StreamFrame<'f>>,
    {
        let stride = limits.peer_block_size.max(1);
        for f in frames {
            let f = f.borrow();
            let ordered = StreamReliability::ordered(f.reliability);
            let stream = f.stream_id;
            let s = self.streams.entry(stream).or_default();
            if s.finished(f.message_number, ordered) {
                continue;
            }
            if f.is_skip() {
                // The sender abandoned it: drop what we have of it and never
                // wait for it.
                if let Some(m) = s.pending.remove(&f.message_number) {
                    self.reassembly_messages = self.reassembly_messages.saturating_sub(1);
                    self.reassembly_bytes = self.reassembly_bytes.saturating_sub(m.bytes);
                }
                if ordered {
                    s.skipped.insert(f.message_number);
                } else {
                    s.done.insert(u64::from(f.message_number));
                }
                self.counters.messages_skipped += 1;
            } else if f.block_count == 1
                && (!ordered || f.message_number == s.next_deliver)
                && !s.pending.contains_key(&f.message_number)
            {
                // A whole message that is deliverable now: straight out.
                let number = f.message_number;
                if ordered {
                    match s.next_deliver.checked_add(1) {
                        Some(n) => s.next_deliver = n,
                        None => {
                            // The last number: delivered, and the stream
                            // stays there (as the loop below does).
                        }
                    }
                } else {
                    s.done.insert(u64::from(number));
                }
                self.unread_bytes += f.data.len();
                self.counters.messages_delivered += 1;
                delivered.push((MessageId { stream, number }, f.data.to_vec()));
                if !ordered || number == u32::MAX {
                    continue;
                }
            } else {
                let m = s.pending.entry(f.message_number).or_insert_with(|| {
                    self.reassembly_messages += 1;
                    InMessage::new(f.block_count, stride, limits)
                });
                if m.block_count != f.block_count || m.has(f.block_index) {
                    continue;
                }
                m.store(f.block_index, f.data);
                self.reassembly_bytes += f.data.len();
                if !ordered {
                    if m.is_complete() {
                        s.done.insert(u64::from(f.message_number));
                        if let Some(done) = s.pending.remove(&f.message_number) {
                            let bytes = self.complete(done);
                            delivered.push((
                                MessageId {
                                    stream,
                                    number: f.message_number,
                                },
                                bytes,
                            ));
                        }
                    }
                    continue;
                }
            }
            if !ordered {
                continue;
            }
            // Deliver every complete message at the head of the stream,
            // stepping over skipped ones.
            loop {
                let s = self.streams.entry(stream).or_default();
                let number = s.next_deliver;
                if !s.skipped.remove(&number) {
                    let complete = s.pending.get(&number).is_some_and(InMessage::is_complete);
                    if !complete {
                        break;
                    }
                    let Some(done) = s.pending.remove(&number) else {
                        break;
                    };
                    let bytes = self.complete(done);
                    delivered.push((MessageId { stream, number }, bytes));
                }
                let s = self.streams.entry(stream).or_default();
                match s.next_deliver.checked_add(1) {
                    Some(n) => s.next_deliver = n,
                    None => break,
                }
            }
        }
    }

    fn complete(&mut self, done: InMessage) -> Vec<u8> {
        let len = done.bytes;
        self.reassembly_messages = self.reassembly_messages.saturating_sub(1);
        self.reassembly_bytes = self.reassembly_bytes.saturating_sub(len);
        self.unread_bytes += len;
        self.counters.messages_delivered += 1;
        done.into_bytes()
    }

    /// Count a dropped DATA packet.
    pub fn on_rejected(&mut self, why: DataRejection) {
        match why {
            DataRejection::NoBuffer => self.counters.dropped_no_buffer += 1,
            DataRejection::Protocol(_) => self.counters.dropped_protocol += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Reliability;

    fn frame(
        message_number: u32,
        block_index: u16,
        block_count: u16,
        data: &[u8],
    ) -> StreamFrame<'_> {
        StreamFrame {
            stream_id: 0,
            message_number,
            block_index,
            block_count,
            reliability: Reliability::Reliable,
            data,
        }
    }

    const LIMITS: RecvLimits = RecvLimits {
        max_buffer_bytes: 1000,
        max_messages: 2,
        max_message_size: 500,
        peer_block_size: 100,
    };

    #[test]
    fn range_set_merges_and_finds_gaps() {
        let mut r = RangeSet::default();
        for v in [0, 1, 2, 5, 7, 6, 10] {
            assert!(r.insert(v));
        }
        assert!(!r.insert(6));
        assert_eq!(
            r.descending().collect::<Vec<_>>(),
            [(10, 10), (5, 7), (0, 2)]
        );
        assert_eq!(r.gaps(0, 10), [(3, 2), (8, 2)]);
        assert_eq!(r.gaps(4, 8), [(4, 1), (8, 1)]);
        assert_eq!(r.gaps(11, 12), [(11, 2)]);
    }

    #[test]
    fn early_reordering_is_not_taken_for_duplicates() {
        let mut rx = RecvState::new();
        rx.record(Time::ZERO, 5);
        assert!(!rx.is_duplicate(0));
        assert!(rx.is_duplicate(5));
        let mut r = RangeSet::default();
        for v in 0..2000u64 {
            r.insert(v * 2);
        }
        assert!(r.trimmed_below() > 0, "bounded");
        assert!(r.descending().count() <= 512);
    }

    #[test]
    fn ack_ranges_describe_the_received_set() {
        let mut rx = RecvState::new();
        for pn in [0, 1, 2, 5, 6, 9] {
            rx.record(Time::ZERO, pn);
        }
        let (ack, ce) = rx.build_ack(Time::from_millis(1), 0, 255).unwrap();
        assert!(!ce);
        assert_eq!(ack.largest_acked, 9);
        assert_eq!(ack.acked_ranges().unwrap(), [(9, 9), (5, 6), (0, 2)]);
        assert_eq!(ack.ack_delay_us, 1000);
    }

    #[test]
    fn missing_packets_are_nacked_once_past_the_threshold() {
        let mut rx = RecvState::new();
        for pn in [0, 2, 3] {
            rx.record(Time::ZERO, pn);
            rx.detect_missing(3);
        }
        assert!(!rx.nack_due(), "1 is only 2 behind the largest");
        rx.record(Time::ZERO, 4);
        rx.detect_missing(3);
        assert_eq!(rx.take_nack(255), [MissingPackets { first: 1, count: 1 }]);
        rx.record(Time::ZERO, 5);
        rx.detect_missing(3);
        assert!(!rx.nack_due(), "reported once");
    }

    #[test]
    fn reassembly_delivers_in_order_exactly_once() {
        let mut rx = RecvState::new();
        let a = [frame(1, 0, 1, b"second")];
        assert_eq!(rx.check_frames(&a, &LIMITS), Ok(()));
        assert!(
            rx.store_frames(&a, &LIMITS).is_empty(),
            "waits for message 0"
        );
        let b = [frame(0, 1, 2, b"lo"), frame(0, 0, 2, b"hel")];
        rx.check_frames(&b, &LIMITS).unwrap();
        let got = rx.store_frames(&b, &LIMITS);
        let numbers: Vec<u32> = got.iter().map(|(id, _)| id.number).collect();
        assert_eq!(numbers, [0, 1]);
        assert_eq!(got[0].1, b"hello");
        assert!(
            rx.store_frames(&b, &LIMITS).is_empty(),
            "duplicates are not delivered"
        );
        assert_eq!(rx.last_delivered(0), Some(1));
    }

    #[test]
    fn strided_reassembly_is_one_buffer_in_any_order() {
        // Blocks of the negotiated block size land at index · stride.
        let limits = RecvLimits {
            peer_block_size: 4,
            ..LIMITS
        };
        let mut rx = RecvState::new();
        let f = |i, d| frame(0, i, 3, d);
        assert!(rx.store_frames(&[f(2, b"xy")], &limits).is_empty());
        assert!(rx.store_frames(&[f(0, b"abcd")], &limits).is_empty());
        assert!(
            rx.store_frames(&[f(2, b"xy")], &limits).is_empty(),
            "a duplicate block is ignored"
        );
        let got = rx.store_frames(&[f(1, b"efgh")], &limits);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, b"abcdefghxy");
        assert_eq!(rx.buffered_bytes(), 10, "all of it unread now");
        assert_eq!(rx.reassembly_bytes, 0);
        // A block of another size switches that message to separate blocks.
        let g = |i, d| frame(1, i, 3, d);
        rx.store_frames(&[g(0, b"abcd"), g(2, b"z")], &limits);
        let got = rx.store_frames(&[g(1, b"ef")], &limits);
        assert_eq!(got[0].1, b"abcdefz");
    }

    #[test]
    fn a_hostile_block_count_reserves_no_more_than_the_limits() {
        let m = InMessage::new(u16::MAX, 1_000, &LIMITS);
        let Assembly::Strided { buf, .. } = &m.assembly else {
            panic!("strided");
        };
        assert!(buf.capacity() <= LIMITS.max_message_size);
    }

    #[test]
    fn limits_drop_out_of_order_but_never_the_head() {
        let mut rx = RecvState::new();
        for n in 1..=2 {
            let f = [frame(n, 0, 2, b"x")];
            rx.check_frames(&f, &LIMITS).unwrap();
            rx.store_frames(&f, &LIMITS);
        }
        let f = [frame(3, 0, 2, b"x")];
        assert_eq!(rx.check_frames(&f, &LIMITS), Err(DataRejection::NoBuffer));
        let head = [frame(0, 0, 1, b"x")];
        assert_eq!(rx.check_frames(&head, &LIMITS), Ok(()));
        let big = [frame(9, 0, 6, b"x")];
        assert!(matches!(
            rx.check_frames(&big, &LIMITS),
            Err(DataRejection::Protocol(_))
        ));
        let other = [StreamFrame {
            stream_id: 1,
            ..frame(0, 0, 1, b"x")
        }];
        assert_eq!(rx.check_frames(&other, &LIMITS), Ok(()), "any stream");
    }

    #[test]
    fn a_skip_frame_unblocks_an_ordered_stream() {
        let mut rx = RecvState::new();
        let partial = |n, d| StreamFrame {
            reliability: Reliability::Partial,
            ..frame(n, 0, 2, d)
        };
        // Half of message 0, then message 1: 1 waits.
        assert!(rx.store_frames(&[partial(0, b"ha")], &LIMITS).is_empty());
        assert!(rx
            .store_frames(&[frame(1, 0, 1, b"one")], &LIMITS)
            .is_empty());
        assert_eq!(rx.reassembly_messages, 2);
        let got = rx.store_frames(&[StreamFrame::skip(0, 0, Reliability::Partial)], &LIMITS);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.number, 1);
        assert_eq!(rx.reassembly_messages, 0, "the partial message is dropped");
        assert!(
            rx.store_frames(&[partial(0, b"lf")], &LIMITS).is_empty(),
            "never delivered"
        );
        // A skip announced ahead of time is stepped over when reached.
        assert!(rx
            .store_frames(&[StreamFrame::skip(0, 3, Reliability::Partial)], &LIMITS)
            .is_empty());
        let got = rx.store_frames(&[frame(4, 0, 1, b"4"), frame(2, 0, 1, b"2")], &LIMITS);
        let numbers: Vec<u32> = got.iter().map(|g| g.0.number).collect();
        assert_eq!(numbers, [2, 4]);
        assert_eq!(rx.counters().messages_skipped, 2);
    }

    #[test]
    fn unordered_streams_deliver_on_completion_at_most_once() {
        let mut rx = RecvState::new();
        let u = |n, i, c, d| StreamFrame {
            stream_id: 7,
            reliability: Reliability::Unreliable,
            ..frame(n, i, c, d)
        };
        assert_eq!(rx.store_frames(&[u(5, 0, 1, b"five")], &LIMITS).len(), 1);
        assert!(
            rx.store_frames(&[u(5, 0, 1, b"five")], &LIMITS).is_empty(),
            "once"
        );
        assert!(rx.store_frames(&[u(2, 0, 2, b"t")], &LIMITS).is_empty());
        rx.store_frames(&[StreamFrame::skip(7, 2, Reliability::Unreliable)], &LIMITS);
        assert!(
            rx.store_frames(&[u(2, 1, 2, b"wo")], &LIMITS).is_empty(),
            "skipped"
        );
        assert_eq!(rx.store_frames(&[u(0, 0, 1, b"zero")], &LIMITS).len(), 1);
    }
}
