//! The receiving side: which packets arrived (for ACKs), which are missing
//! (for NACKs), and the reassembly of blocks into messages delivered in
//! order per stream, exactly once.
//!
//! * **ACKs** (seed 003 §III-G): the sender asks for one with REPLY_REQ;
//!   besides, the receiver acknowledges on its own schedule — after
//!   `ack_frequency` DATA packets (or the threshold its peer asked for in
//!   an ACK-frequency request), at once when a packet arrives out of
//!   order, and at the latest `max_ack_delay` (or the requested delay)
//!   after the first unacknowledged DATA packet. An ACK reports at most
//!   `max_ack_ranges` ranges besides the first, newest first, and never a
//!   range the peer provably knows: when an ACK of ours is acknowledged,
//!   everything it reported is forgotten (ACK-of-ACK, RFC 9000 §13.2.4).
//!   An ACK that reports gaps asks for such an acknowledgement with
//!   REPLY_REQ, at most one request outstanding.
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

mod delivery;
mod dispatch;
pub(crate) mod queue_bound;
pub mod range_set;
pub mod window;

use super::events::MessageId;
use crate::config::AckPolicy;
use crate::streams::StreamReliability;
use crate::wire::{AckFrequency, AckPayload, AckRange, MissingPackets, StreamFrame};
use peregrine_cc::Time;
use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::mem::MaybeUninit;
use std::time::Duration;

pub use range_set::RangeSet;

/// Our recent ACKs remembered for ACK-of-ACK.
const SENT_ACK_HISTORY: usize = 64;
/// Most DATA packets a peer may ask this side to wait for before it
/// acknowledges.
pub const MAX_REQUESTED_THRESHOLD: u16 = 1024;
/// Longest a peer may ask this side to hold an ACK back.
pub const MAX_REQUESTED_ACK_DELAY: Duration = Duration::from_secs(1);
/// Most missing-packet ranges waiting to be NACKed.
const MAX_NACK_PENDING: usize = 255;

// Blocks appended from a staged copy on this thread (unit tests check
// that the endpoint's fused checksum-and-copy path is taken).
#[cfg(test)]
thread_local! {
    static STAGED_STORES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many blocks this thread stored from a staged copy (unit tests only).
#[cfg(test)]
pub(crate) fn staged_stores() -> u64 {
    STAGED_STORES.with(std::cell::Cell::get)
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

    /// Where block `index` of `len` bytes would go if it were stored now
    /// and appended in place — the spare capacity of the strided buffer
    /// right after its last byte (the block is the next one, not stored
    /// yet, and of the stride's length unless it is the last) — with the
    /// buffer's address, which [`store`](Self::store) checks. `None` in
    /// every other case (out of order, irregular, no room). O(1).
    fn stage_target(&mut self, index: u16, len: usize) -> Option<(usize, &mut [MaybeUninit<u8>])> {
        if self.has(index) {
            return None;
        }
        let last = index.checked_add(1) == Some(self.block_count);
        let Assembly::Strided { buf, stride, .. } = &mut self.assembly else {
            return None;
        };
        if !last && len != *stride {
            return None;
        }
        if buf.len() != usize::from(index) * *stride {
            return None;
        }
        let address = buf.as_ptr() as usize;
        let spare = buf.spare_capacity_mut().get_mut(..len)?;
        Some((address, spare))
    }

    /// Store block `index` (not stored yet). `staged`: the address of the
    /// buffer whose spare capacity already holds exactly `data` at the
    /// block's place ([`RecvState::stage_block`]), so the block is
    /// appended without copying. O(len), nothing to copy when staged,
    /// plus a one-time conversion if the block breaks the stride.
    fn store(&mut self, index: u16, data: &[u8], staged: Option<usize>) {
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
                    if staged == Some(buf.as_ptr() as usize) && buf.capacity() >= end {
                        // SAFETY: `end` is within the capacity (checked),
                        // and bytes `off..end` were initialised — with
                        // `data` itself — by the staging copy into this
                        // very buffer (same address: not reallocated
                        // since), whose length has been `off` ever since
                        // (the token is taken by this packet's store and
                        // cleared after every datagram).
                        unsafe { buf.set_len(end) };
                        #[cfg(test)]
                        STAGED_STORES.with(|c| c.set(c.get() + 1));
                    } else {
                        buf.extend_from_slice(data);
                    }
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
    /// The block size this side expects of the peer: the stride of a
    /// message whose first block to arrive is its last (any other block
    /// tells the peer's real cut, see [`block_stride`]).
    pub peer_block_size: usize,
}

/// The fewest bytes a message can hold given one of its frames: a block
/// other than the last shows the sender's block size, so the blocks before
/// the last are all that long; the last block shows only itself (every
/// other block holds at least one byte). Only this evidence bounds a
/// message's size, never this side's own block size: the two sides may cut
/// differently (an XX initiator's blocks leave room for handshake message
/// 3, 64 bytes less than its responder's), and a bound from our own cut
/// refused a legal message of the peer's within 3 % of
/// `max_message_size`. O(1).
fn min_message_bytes(f: &StreamFrame<'_>) -> usize {
    let count = usize::from(f.block_count.max(1));
    if f.block_index.saturating_add(1) < f.block_count {
        (count - 1) * f.data.len() + 1
    } else {
        (count - 1) + f.data.len()
    }
}

/// The stride of a message's reassembly buffer: the length of its first
/// block to arrive unless that is the last block, which may be short. So a
/// peer that cuts differently from this side still reassembles in place
/// (one buffer, no allocation per block). O(1).
fn block_stride(f: &StreamFrame<'_>, limits: &RecvLimits) -> usize {
    if f.block_index.saturating_add(1) < f.block_count {
        f.data.len().max(1)
    } else {
        limits.peer_block_size.max(1)
    }
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
    /// DATA packets received with ECT(0).
    pub ecn_ect0_received: u64,
    /// DATA packets received with ECT(1).
    pub ecn_ect1_received: u64,
}

/// This side's own ACK schedule, as the connection's configuration sets it
/// (a peer's ACK-frequency request replaces the SLTP part).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AckSchedule {
    /// SLTP: acknowledge at once after this many DATA packets.
    pub ack_frequency: u32,
    /// SLTP: longest an acknowledgement is held back.
    pub max_ack_delay: Duration,
    /// The policy; [`AckPolicy::Tcp`] overrides the two fields above.
    pub policy: AckPolicy,
    /// Acknowledge at once after this many block bytes, whatever the
    /// policy or the peer's request (the receive-queue bound's cap is in
    /// force: a sender held to a few datagrams must not wait for the
    /// delayed-ACK timer); `None`: no byte trigger.
    pub ack_after_bytes: Option<usize>,
}

impl AckSchedule {
    /// The schedule of `config`. O(1).
    pub fn of(config: &crate::config::ConnectionConfig) -> AckSchedule {
        AckSchedule {
            ack_frequency: config.ack_frequency,
            max_ack_delay: config.max_ack_delay,
            policy: config.ack_policy,
            ack_after_bytes: None,
        }
    }
}

/// A block copied into its message's buffer ahead of its store, while
/// its datagram's checksum was verified ([`RecvState::stage_block`]):
/// which block, which bytes (the frame's data: address and length) and
/// which buffer (address), so that the store appends it without a second
/// copy — only if all of these match.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct StagedBlock {
    stream: u16,
    message: u32,
    index: u16,
    data_address: usize,
    len: usize,
    buffer_address: usize,
}

impl StagedBlock {
    /// Whether `f` is the frame staged.
    fn is(&self, f: &StreamFrame<'_>) -> bool {
        self.stream == f.stream_id
            && self.message == f.message_number
            && self.index == f.block_index
            && self.data_address == f.data.as_ptr() as usize
            && self.len == f.data.len()
    }
}

/// The receiving side of one connection.
#[derive(Debug, Default)]
pub struct RecvState {
    received: RangeSet,
    largest: Option<u64>,
    largest_at: Time,
    unacked_data: u32,
    /// Block bytes of the DATA packets not yet acknowledged (the TCP
    /// policy's trigger, and the receive-queue bound's).
    unacked_data_bytes: usize,
    /// The largest block bytes one DATA packet carried: TCP's receiver
    /// MSS estimate (Linux `rcv_mss`), the "full size".
    rcv_mss_bytes: usize,
    ack_deadline: Option<Time>,
    ack_now: bool,
    /// The peer's newest ACK-frequency request, applied.
    peer_request: Option<AckFrequency>,
    /// Our recent ACKs: (packet number, largest acknowledged it reported),
    /// ascending, at most [`SENT_ACK_HISTORY`].
    sent_acks: VecDeque<(u64, u64)>,
    /// Our ACK that asked for an acknowledgement (REPLY_REQ): its packet
    /// number, the largest acknowledged it reported, and when it left. Kept
    /// apart from `sent_acks`, which a fast receiver cycles within an RTT.
    ack_request: Option<(u64, u64, Time)>,
    /// How long the last answered request took.
    ack_request_rtt: Option<Duration>,
    nack_floor: u64,
    nack_pending: Vec<MissingPackets>,
    ce_pending: bool,
    /// Whether any DATA packet arrived with an ECN codepoint: from then on
    /// every ACK carries the ECN section (docs/protocol.md §6.5.3).
    ecn_seen: bool,
    streams: BTreeMap<u16, RecvStream>,
    reassembly_bytes: usize,
    reassembly_messages: usize,
    unread_bytes: usize,
    counters: RecvCounters,
    /// The block of the datagram being handled copied ahead of its store
    /// (cleared after every datagram).
    staged: Option<StagedBlock>,
}

impl RecvState {
    /// A receiver that has seen nothing.
    pub fn new() -> RecvState {
        RecvState::default()
    }

    /// Count the ECN codepoint a new DATA packet arrived with (`ce`: CE,
    /// by the IP codepoint or the header's CN field). O(1).
    pub fn count_ecn(&mut self, codepoint: Option<crate::EcnCodepoint>, ce: bool) {
        use crate::EcnCodepoint as E;
        let c = &mut self.counters;
        match (ce, codepoint) {
            (true, _) => {} // counted by `on_data_packet`
            (false, Some(E::Ect0)) => c.ecn_ect0_received += 1,
            (false, Some(E::Ect1)) => c.ecn_ect1_received += 1,
            (false, Some(E::Ce)) | (false, None) => return,
        }
        self.ecn_seen = true;
    }

    /// The cumulative counts the next ACK reports, once any DATA packet
    /// arrived ECN-marked (`None` before). O(1).
    pub fn ecn_counts(&self) -> Option<crate::wire::AckEcnCounts> {
        let c = &self.counters;
        (self.ecn_seen || c.ecn_ce_received > 0).then_some(crate::wire::AckEcnCounts {
            ect0: c.ecn_ect0_received,
            ect1: c.ecn_ect1_received,
            ce: c.ecn_ce_received,
        })
    }

    /// Bytes the ECN section adds to the next ACK (0, or 3–24: three
    /// QUIC varints, docs/protocol.md §6.5.3). O(1).
    pub fn ecn_section_len(&self) -> usize {
        self.ecn_counts().map_or(0, |c| c.encoded_len())
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
    /// `in_order` is false when it filled or opened a gap. `ack_frequency`
    /// and `max_ack_delay` are this side's own schedule, which a request
    /// of the peer replaces. O(1).
    pub fn on_data_packet(
        &mut self,
        now: Time,
        in_order: bool,
        reply_req: bool,
        ce: bool,
        data_bytes: usize,
        schedule: AckSchedule,
    ) {
        self.unacked_data += 1;
        if ce {
            self.ce_pending = true;
            self.counters.ecn_ce_received += 1;
        }
        self.unacked_data_bytes = self.unacked_data_bytes.saturating_add(data_bytes);
        let bytes_due = schedule
            .ack_after_bytes
            .is_some_and(|b| self.unacked_data_bytes >= b);
        let (count_due, delay) = match (schedule.policy, self.peer_request) {
            (AckPolicy::Tcp { delayed_ack }, _) => {
                // Linux `__tcp_ack_snd_check`: more than one full-size
                // packet's worth unacknowledged, i.e. every second
                // full-size packet (small ones count by their bytes).
                self.rcv_mss_bytes = self.rcv_mss_bytes.max(data_bytes);
                (self.unacked_data_bytes > self.rcv_mss_bytes, delayed_ack)
            }
            (AckPolicy::Sltp, Some(r)) => (
                self.unacked_data >= u32::from(r.threshold),
                Duration::from_micros(u64::from(r.max_ack_delay_us)),
            ),
            (AckPolicy::Sltp, None) => (
                self.unacked_data >= schedule.ack_frequency,
                schedule.max_ack_delay,
            ),
        };
        if reply_req || !in_order || ce || count_due || bytes_due {
            self.ack_now = true;
        } else if self.ack_deadline.is_none() {
            self.ack_deadline = Some(now + delay);
        }
    }

    /// The peer's ACK-frequency request arrived: apply it unless an equal
    /// or newer one was applied already (ACKs may be reordered). The
    /// threshold is capped at [`MAX_REQUESTED_THRESHOLD`] packets and the
    /// delay at [`MAX_REQUESTED_ACK_DELAY`], so a peer cannot silence this
    /// side. Returns whether it was applied. O(1).
    pub fn on_ack_frequency(&mut self, request: AckFrequency) -> bool {
        if self
            .peer_request
            .is_some_and(|r| request.sequence <= r.sequence)
        {
            return false;
        }
        let max_delay_us = MAX_REQUESTED_ACK_DELAY.as_micros() as u32;
        self.peer_request = Some(AckFrequency {
            sequence: request.sequence,
            threshold: request.threshold.clamp(1, MAX_REQUESTED_THRESHOLD),
            max_ack_delay_us: request.max_ack_delay_us.min(max_delay_us),
        });
        true
    }

    /// The peer's ACK-frequency request in force, if any.
    pub fn peer_ack_frequency(&self) -> Option<AckFrequency> {
        self.peer_request
    }

    /// Acknowledge at once (the peer's ACK asked for it with REPLY_REQ,
    /// or this side has an ACK-frequency request to send). O(1).
    pub fn request_ack_now(&mut self) {
        self.ack_now = true;
    }

    /// An ACK of the peer arrived: every ACK of ours it acknowledges shows
    /// what the peer knows, so the ranges those reported are forgotten
    /// (ACK-of-ACK). O(ranges of `ack` + our recent ACKs).
    pub fn on_peer_ack(&mut self, now: Time, ack: &AckPayload) {
        // The newest of our ACKs that `ack` covers: (packet number,
        // largest acknowledged it reported).
        let mut known: Option<(u64, u64)> = None;
        if let Some((asked, largest, at)) = self.ack_request {
            let mut covered = false;
            let _ = ack.for_each_range(|lo, hi| {
                covered = (lo..=hi).contains(&asked);
                !covered && lo > asked
            });
            if covered {
                known = Some((asked, largest));
                self.ack_request = None;
                self.ack_request_rtt = Some(now.saturating_duration_since(at));
            }
        }
        if let Some(&(oldest, _)) = self.sent_acks.front() {
            let mut i = self.sent_acks.len();
            let _ = ack.for_each_range(|lo, hi| {
                if hi < oldest {
                    return false;
                }
                while i > 0 {
                    let (pn, largest) = self.sent_acks[i - 1];
                    if pn > hi {
                        i -= 1;
                    } else if pn >= lo {
                        if known.is_none_or(|(k, _)| pn > k) {
                            known = Some((pn, largest));
                        }
                        return false;
                    } else {
                        break;
                    }
                }
                i > 0
            });
        }
        let Some((pn, largest)) = known else { return };
        while self.sent_acks.front().is_some_and(|&(p, _)| p <= pn) {
            self.sent_acks.pop_front();
        }
        self.received.forget_through(largest);
        if self.ack_request.is_some_and(|(asked, _, _)| asked <= pn) {
            // An older request is answered by the newer ACK's receipt.
            self.ack_request = None;
        }
    }

    /// Whether the ACK about to be sent should ask for an acknowledgement
    /// (REPLY_REQ): it reports gaps the peer may already know, and no
    /// request is outstanding (or the outstanding one looks lost: older
    /// than twice the last answer's round trip, or 200 ms before any). O(1).
    pub fn wants_ack_of_ack(&self, now: Time, extra_ranges: usize) -> bool {
        if extra_ranges == 0 {
            return false;
        }
        match self.ack_request {
            None => true,
            Some((_, _, at)) => {
                let wait = self
                    .ack_request_rtt
                    .map_or(Duration::from_millis(200), |rtt| {
                        (2 * rtt).max(Duration::from_millis(10))
                    });
                now.saturating_duration_since(at) >= wait
            }
        }
    }

    /// Our ACK `pn` (just built by [`build_ack`](Self::build_ack)) left
    /// with REPLY_REQ.
    pub fn on_ack_of_ack_requested(&mut self, now: Time, pn: u64) {
        let largest = self
            .sent_acks
            .back()
            .filter(|&&(p, _)| p == pn)
            .map_or(0, |&(_, l)| l);
        self.ack_request = Some((pn, largest, now));
    }

    /// Ask for an ACK by `at` (a window update). Armed as the ACK timer,
    /// so a driver that only watches `poll_timeout` still sends it.
    pub fn request_ack_at(&mut self, at: Time) {
        self.ack_deadline = Some(self.ack_deadline.map_or(at, |t| t.min(at)));
    }

    /// Whether an ACK must be sent now.
    pub fn ack_due(&self, now: Time) -> bool {
        // The schedule first: with no ACK due (most polls) `largest` is
        // not read, one line fewer per poll (issue 40).
        (self.ack_now || self.ack_deadline.is_some_and(|t| t <= now)) && self.largest.is_some()
    }

    /// The delayed-ACK timer (none before anything arrived).
    pub fn ack_deadline(&self) -> Option<Time> {
        // As `largest.and(ack_deadline)`, reading `largest` only when a
        // deadline is set.
        let t = self.ack_deadline?;
        self.largest.map(|_| t)
    }

    /// Build the ACK to send now (packet number `pn`, at most `max_ranges`
    /// ranges besides the first, the newest first) and reset the ACK
    /// schedule. The second value says whether to echo a CE mark.
    /// O(`max_ranges`).
    pub fn build_ack(
        &mut self,
        now: Time,
        pn: u64,
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
            packet_number: pn as u32,
            largest_acked: largest,
            ack_delay_us: u32::try_from(delay.as_micros()).unwrap_or(u32::MAX),
            first_range,
            ranges,
            credits: Vec::new(),
            frequency: None,
            ecn: self.ecn_counts(),
        };
        if self.sent_acks.len() == SENT_ACK_HISTORY {
            self.sent_acks.pop_front();
        }
        self.sent_acks.push_back((pn, largest));
        self.unacked_data = 0;
        self.unacked_data_bytes = 0;
        self.ack_deadline = None;
        self.ack_now = false;
        let ce = std::mem::take(&mut self.ce_pending);
        Some((ack, ce))
    }

    /// After a packet arrived: find packet numbers now `threshold` behind
    /// the largest that are still missing and not yet reported. O(1) when
    /// they all arrived (the usual case), else O(log ranges + gaps).
    pub fn detect_missing(&mut self, threshold: u64) {
        let Some(largest) = self.largest else { return };
        let Some(limit) = largest.checked_sub(threshold) else {
            return;
        };
        let from = self.nack_floor.max(self.received.trimmed_below());
        if from > limit {
            return;
        }
        // In order, as packets almost always come: the numbers just
        // passed are in the highest range, no gap to look for (the walk
        // below would find none). O(1) instead of two binary searches.
        if self.received.highest_covers(from, limit) {
            self.nack_floor = limit + 1;
            return;
        }
        let pending = &mut self.nack_pending;
        self.received.for_each_gap(from, limit, |first, count| {
            if pending.len() >= MAX_NACK_PENDING {
                return false;
            }
            pending.push(MissingPackets {
                first,
                count: u32::try_from(count).unwrap_or(u32::MAX),
            });
            true
        });
        self.nack_floor = limit + 1;
    }

    /// Missing ranges waiting to be NACKed.
    pub fn nack_due(&self) -> bool {
        !self.nack_pending.is_empty()
    }

    /// Take up to `max` missing ranges for one NACK, the oldest first (the
    /// rest stay due for the next NACK). O(`max`).
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
        let unordered = s.done.next_missing(s.done.trimmed_below());
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

    /// Where the data of `f` (the one frame of a DATA datagram not yet
    /// handled) would be appended if the datagram is accepted: the spare
    /// capacity after the last block of its message's buffer, when `f`
    /// is that message's next block in order. The caller copies the data
    /// there while verifying the datagram's checksum (one pass over the
    /// bytes, [`crate::wire::checksum::datagram_checksum_copying`]); the
    /// store then only extends the buffer over the copy. Nothing else
    /// changes: whether the packet is accepted and stored is decided later
    /// as for any packet, and a copy the store does not take is never
    /// read. Clear the token with [`clear_staged`](Self::clear_staged)
    /// once the datagram is handled (or failed its checksum). `None`: copy
    /// as usual. O(log streams + log pending messages).
    pub fn stage_block(&mut self, f: &StreamFrame<'_>) -> Option<&mut [MaybeUninit<u8>]> {
        self.staged = None;
        if f.is_skip() {
            return None;
        }
        let m = self
            .streams
            .get_mut(&f.stream_id)?
            .pending
            .get_mut(&f.message_number)?;
        if m.block_count != f.block_count {
            return None;
        }
        let (buffer_address, spare) = m.stage_target(f.block_index, f.data.len())?;
        self.staged = Some(StagedBlock {
            stream: f.stream_id,
            message: f.message_number,
            index: f.block_index,
            data_address: f.data.as_ptr() as usize,
            len: f.data.len(),
            buffer_address,
        });
        Some(spare)
    }

    /// Forget the staged block, if any (its datagram was handled, or
    /// failed its checksum). O(1).
    pub fn clear_staged(&mut self) {
        self.staged = None;
    }

    /// Check that every frame of a DATA packet can be stored.
    pub fn check_frames<'f, I>(&self, frames: I, limits: &RecvLimits) -> Result<(), DataRejection>
    where
        I: IntoIterator,
        I::Item: Borrow<StreamFrame<'f>>,
    {
        let mut extra_bytes = 0usize;
        let mut extra_messages = 0usize;
        for f in frames {
            let f = f.borrow();
            if f.is_skip() {
                continue; // Takes no buffer; frees some.
            }
            if min_message_bytes(f) > limits.max_message_size {
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
                    InMessage::new(f.block_count, block_stride(f, limits), limits)
                });
                if m.block_count != f.block_count || m.has(f.block_index) {
                    continue;
                }
                let staged = self
                    .staged
                    .take()
                    .filter(|t| t.is(f))
                    .map(|t| t.buffer_address);
                m.store(f.block_index, f.data, staged);
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

    /// SLTP's own schedule: every `packets` DATA packets, within `delay_ms`.
    fn sched(packets: u32, delay_ms: u64) -> AckSchedule {
        AckSchedule {
            ack_frequency: packets,
            max_ack_delay: Duration::from_millis(delay_ms),
            policy: AckPolicy::Sltp,
            ack_after_bytes: None,
        }
    }

    #[test]
    fn the_byte_trigger_acknowledges_whatever_the_peer_asked_for() {
        let mut rx = RecvState::new();
        // The peer asked for an ACK every 64 packets.
        rx.on_ack_frequency(AckFrequency {
            sequence: 1,
            threshold: 64,
            max_ack_delay_us: 25_000,
        });
        let s = AckSchedule {
            ack_after_bytes: Some(4_000),
            ..sched(2, 25)
        };
        let t = Time::ZERO;
        for pn in 0..2 {
            rx.record(t, pn);
            rx.on_data_packet(t, true, false, false, 1_400, s);
        }
        assert!(!rx.ack_due(t), "2,800 bytes: not yet");
        rx.record(t, 2);
        rx.on_data_packet(t, true, false, false, 1_400, s);
        assert!(rx.ack_due(t), "4,200 bytes: at once");
        // Without the trigger the peer's 64 packets rule.
        let mut rx = RecvState::new();
        rx.on_ack_frequency(AckFrequency {
            sequence: 1,
            threshold: 64,
            max_ack_delay_us: 25_000,
        });
        for pn in 0..3 {
            rx.record(t, pn);
            rx.on_data_packet(t, true, false, false, 1_400, sched(2, 25));
        }
        assert!(!rx.ack_due(t));
    }

    fn tcp_sched() -> AckSchedule {
        AckSchedule {
            policy: AckPolicy::tcp(),
            ..sched(2, 25)
        }
    }

    #[test]
    fn tcp_acknowledges_every_second_full_size_packet() {
        let mut rx = RecvState::new();
        // A peer's request is ignored under TCP's policy.
        rx.on_ack_frequency(AckFrequency {
            sequence: 1,
            threshold: 16,
            max_ack_delay_us: 5_000,
        });
        let mut acks = 0;
        for pn in 0..20u64 {
            rx.record(Time::ZERO, pn);
            rx.on_data_packet(Time::ZERO, true, false, false, 1000, tcp_sched());
            if rx.ack_due(Time::ZERO) {
                acks += 1;
                assert_eq!(pn % 2, 1, "the second of each pair");
                rx.build_ack(Time::ZERO, 100 + pn, 3);
            }
        }
        assert_eq!(acks, 10);
        // One full packet alone waits for the 40 ms timer, not 25 ms.
        rx.record(Time::ZERO, 20);
        rx.on_data_packet(Time::ZERO, true, false, false, 1000, tcp_sched());
        assert!(!rx.ack_due(Time::from_millis(39)));
        assert_eq!(rx.ack_deadline(), Some(Time::from_millis(40)));
        rx.build_ack(Time::ZERO, 200, 3);
        // Small packets count by their bytes: three of 400 exceed one full size.
        for pn in 21..24u64 {
            rx.record(Time::ZERO, pn);
            rx.on_data_packet(Time::ZERO, true, false, false, 400, tcp_sched());
            assert_eq!(rx.ack_due(Time::ZERO), pn == 23, "packet {pn}");
        }
        // A gap gets an immediate ACK.
        rx.build_ack(Time::ZERO, 201, 3);
        rx.record(Time::ZERO, 30);
        rx.on_data_packet(Time::ZERO, false, false, false, 1000, tcp_sched());
        assert!(rx.ack_due(Time::ZERO));
    }

    const LIMITS: RecvLimits = RecvLimits {
        max_buffer_bytes: 1000,
        max_messages: 2,
        max_message_size: 500,
        peer_block_size: 100,
    };

    #[test]
    fn an_acknowledged_ack_prunes_what_it_reported() {
        let mut rx = RecvState::new();
        let t = Time::from_millis;
        for pn in [0, 1, 3, 4, 6] {
            rx.record(t(0), pn);
        }
        // Our ACK 100 reports 6, 3..=4 and 0..=1: two gaps.
        let (ack, _) = rx.build_ack(t(1), 100, 32).unwrap();
        assert_eq!(ack.ranges.len(), 2);
        assert!(rx.wants_ack_of_ack(t(1), ack.ranges.len()));
        rx.on_ack_of_ack_requested(t(1), 100);
        // Only one request outstanding, until it looks lost.
        assert!(!rx.wants_ack_of_ack(t(50), 2));
        assert!(rx.wants_ack_of_ack(t(201), 2));
        for pn in [7, 9] {
            rx.record(t(2), pn);
        }
        rx.build_ack(t(3), 101, 32).unwrap();
        // The peer acknowledges our ACK 100 (and not 101).
        let peer = AckPayload {
            largest_acked: 100,
            ..AckPayload::default()
        };
        rx.on_peer_ack(t(41), &peer);
        assert_eq!(rx.ack_request, None);
        assert_eq!(rx.ack_request_rtt, Some(Duration::from_millis(40)));
        // Everything up to 6 is forgotten; the gap at 8 is new to the peer.
        let (ack, _) = rx.build_ack(t(42), 102, 32).unwrap();
        assert_eq!(ack.acked_ranges().unwrap(), [(9, 9), (6, 7)]);
        // Packets below what the peer knows count as duplicates now.
        assert!(rx.is_duplicate(2) && rx.is_duplicate(5));
        assert!(!rx.is_duplicate(8));
    }

    #[test]
    fn a_request_is_remembered_beyond_the_ack_history() {
        let mut rx = RecvState::new();
        for pn in [0, 2] {
            rx.record(Time::ZERO, pn);
        }
        rx.build_ack(Time::ZERO, 1000, 32).unwrap();
        rx.on_ack_of_ack_requested(Time::ZERO, 1000);
        // A fast receiver sends more ACKs within one RTT than it keeps.
        for i in 0..2 * SENT_ACK_HISTORY as u64 {
            rx.record(Time::ZERO, 3 + i);
            rx.build_ack(Time::ZERO, 1001 + i, 32).unwrap();
        }
        let peer = AckPayload {
            largest_acked: 1000,
            ..AckPayload::default()
        };
        rx.on_peer_ack(Time::from_millis(30), &peer);
        assert_eq!(rx.ack_request, None);
        let (ack, _) = rx.build_ack(Time::from_millis(30), 5000, 32).unwrap();
        assert!(ack.ranges.is_empty(), "the gap at 1 is pruned: {ack:?}");
    }

    #[test]
    fn at_most_max_ranges_are_reported_newest_first() {
        let mut rx = RecvState::new();
        for i in 0..50u64 {
            rx.record(Time::ZERO, 2 * i);
        }
        let (ack, _) = rx.build_ack(Time::ZERO, 200, 5).unwrap();
        assert_eq!(ack.ranges.len(), 5);
        assert_eq!(ack.acked_ranges().unwrap()[5], (88, 88));
    }

    #[test]
    fn a_frequency_request_changes_the_schedule_once_per_sequence() {
        let mut rx = RecvState::new();
        let req = |sequence, threshold| AckFrequency {
            sequence,
            threshold,
            max_ack_delay_us: 5_000,
        };
        assert!(rx.on_ack_frequency(req(2, 4)));
        assert!(!rx.on_ack_frequency(req(1, 50)), "an older request");
        for pn in 0..3 {
            rx.record(Time::ZERO, pn);
            rx.on_data_packet(Time::ZERO, true, false, false, 1000, sched(2, 25));
        }
        assert!(!rx.ack_due(Time::ZERO), "3 of 4 packets");
        assert_eq!(rx.ack_deadline(), Some(Time::from_millis(5)));
        rx.record(Time::ZERO, 3);
        rx.on_data_packet(Time::ZERO, true, false, false, 1000, sched(2, 25));
        assert!(rx.ack_due(Time::ZERO));
        // A hostile request cannot silence the receiver.
        assert!(rx.on_ack_frequency(AckFrequency {
            sequence: 3,
            threshold: u16::MAX,
            max_ack_delay_us: u32::MAX,
        }));
        let applied = rx.peer_ack_frequency().unwrap();
        assert_eq!(applied.threshold, MAX_REQUESTED_THRESHOLD);
        assert_eq!(
            u128::from(applied.max_ack_delay_us),
            MAX_REQUESTED_ACK_DELAY.as_micros()
        );
        // A gap still gets an immediate ACK.
        rx.build_ack(Time::ZERO, 9, 32);
        rx.record(Time::ZERO, 5);
        rx.on_data_packet(Time::ZERO, false, false, false, 1000, sched(2, 25));
        assert!(rx.ack_due(Time::ZERO));
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
    fn a_peer_cutting_smaller_blocks_is_bounded_by_bytes_and_reassembled_in_place() {
        // LIMITS expects 100-byte blocks; this peer cuts 90 (as an XX
        // initiator does, its blocks 64 bytes under its responder's). A
        // 499-byte message is six blocks: more than 500 / 100 rounded up,
        // but within `max_message_size`, so it must be accepted.
        let mut rx = RecvState::new();
        let msg: Vec<u8> = (0..499u32).map(|i| i as u8).collect();
        let blocks: Vec<&[u8]> = msg.chunks(90).collect();
        assert_eq!(blocks.len(), 6);
        // The last block first: the stride falls back to the expected one
        // until a full block shows the real cut.
        let mut got = Vec::new();
        for i in [5usize, 0, 1, 2, 3, 4] {
            let f = [frame(0, i as u16, 6, blocks[i])];
            rx.check_frames(&f, &LIMITS).expect("a legal message");
            got.extend(rx.store_frames(&f, &LIMITS));
        }
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, msg);
        // In order from block 0: one strided buffer, no block kept apart.
        let f0 = frame(1, 0, 6, blocks[0]);
        rx.store_frames(&[f0], &LIMITS);
        let m = &rx.streams[&0].pending[&1];
        assert!(matches!(m.assembly, Assembly::Strided { stride: 90, .. }));
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
        // Five full blocks of 100 bytes and a last one: past 500 bytes.
        let big = [frame(9, 0, 6, &[0; 100])];
        assert!(matches!(
            rx.check_frames(&big, &LIMITS),
            Err(DataRejection::Protocol(_))
        ));
        // Its last block alone can show it too: five bytes at least before.
        let big_tail = [frame(9, 5, 6, &[0; 496])];
        assert!(matches!(
            rx.check_frames(&big_tail, &LIMITS),
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
