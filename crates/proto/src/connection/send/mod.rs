//! The sending side's data: messages, their fragmentation into blocks,
//! the packetizer that fills DATA packets (coalescing small messages), and
//! the per-block retransmission state.
//!
//! A message of `n` bytes is cut into `max(1, ⌈n / block_size⌉)` blocks of
//! `block_size` bytes (the last one shorter), where `block_size` is the
//! data that fits a single-frame DATA packet of the negotiated size — with
//! path MTU discovery, the base size's, or a fraction of the discovered
//! size so that whole blocks fill it (`set_block_size`). Each message keeps
//! the cut it was first sent with (its own `block_size`). Every
//! block is one stream frame; a packet carries as many frames as fit, so
//! small messages share a datagram. Blocks, not packets, are what is
//! retransmitted: when a packet is lost, its blocks that are still
//! unacknowledged go back in the retransmission queue and leave in new
//! packets (new packet numbers, ST_RET set).
//!
//! Every stream has its own queues (unsent messages; lost blocks and skip
//! frames to send again). Which stream gives the next frame is the
//! connection's [`Scheduler`]'s decision, for new data and retransmissions
//! alike; a packet still carries either only first transmissions or only
//! retransmissions and skip frames (ST_RET). Messages past their deadline
//! and lost blocks of unreliable streams are abandoned here
//! ([`crate::streams`]).
//!
//! What a sender with a backlog does per message and per poll reads few
//! cache lines (issue 40: in a city of 200 flows each line a message or a
//! poll reads is an L2 miss in about half the events): queuing behind a
//! backlog finds its stream's membership of the `with_unsent` and `active`
//! sets in the stream's own flags, not in the trees; and `window_blocked`,
//! asked by every poll that sends nothing, answers from three scalars (the
//! unacknowledged bytes, the peer's window, the largest block size ever
//! cut) while a block of any size fits, scanning the streams only when the
//! peer's window is nearly full.

mod messages;
mod transmit;

use super::events::MessageId;
use crate::numbered::NumberedSlots;
use crate::recovery::{BlockList, BlockRef};
use crate::sched::{SchedContext, Scheduler, SchedulerConfig, StreamView};
use crate::streams::{AbandonReason, StreamConfig, StreamReliability, StreamStats};
use crate::wire::StreamFrame;
use bytes::Bytes;
use peregrine_cc::Time;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The block index that names a stream's skip frame in a [`BlockRef`]
/// (real blocks are numbered below 65,535).
pub const SKIP_BLOCK: u16 = u16::MAX;

/// Why `send_message` refused a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// No such connection (never existed, or closed and released).
    #[error("unknown connection")]
    UnknownConnection,
    /// The connection is closing or closed: no new message is accepted.
    #[error("the connection is closing or closed")]
    Closed,
    /// A stream configuration with a class above 3 or a weight of 0.
    #[error("invalid stream configuration for stream {0}")]
    InvalidStreamConfig(u16),
    /// The message is larger than the configured maximum.
    #[error("message of {size} bytes exceeds the maximum of {max}")]
    MessageTooLarge {
        /// The message's size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Too many messages, or too many bytes, are waiting for acknowledgement
    /// (on the connection or on this stream).
    #[error("send buffer full: wait for the peer to acknowledge")]
    BufferFull,
    /// The endpoint's buffer pool is at its ceiling
    /// (`EndpointConfig::memory_ceiling_bytes`): nothing was queued; wait
    /// for [`Event::Writable`](super::Event::Writable) and send again.
    #[error("buffer pool full ({in_use} of {ceiling} bytes in use): wait for Writable")]
    WouldBlock {
        /// Bytes of the pool in use.
        in_use: usize,
        /// The pool's ceiling.
        ceiling: usize,
    },
    /// The stream's 32-bit message numbers are used up.
    #[error("message numbers of this stream are exhausted")]
    MessageNumbersExhausted,
}

/// How full the buffers are that a new message on one stream must fit
/// in ([`Endpoint::send_room`](crate::Endpoint::send_room)): what a
/// runtime needs to wake a writer that `send_message` refused
/// (`BufferFull`) when it can send again — and, with a low-water mark
/// ([`writer_may_wake`](Self::writer_may_wake)), once a batch of messages
/// fits rather than at every acknowledgement.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SendRoom {
    /// The connection accepts messages (starting or connected).
    pub open: bool,
    /// Bytes of the connection's messages not yet acknowledged.
    pub connection_bytes: usize,
    /// The connection's limit (`ConnectionConfig::max_send_buffer_bytes`).
    pub connection_limit_bytes: usize,
    /// Bytes of the stream's messages not yet acknowledged.
    pub stream_bytes: usize,
    /// The stream's limit (`StreamConfig::max_buffered_bytes`).
    pub stream_limit_bytes: usize,
    /// Messages (and skip frames) outstanding on the connection.
    pub messages: usize,
    /// The connection's cap on them
    /// (`ConnectionConfig::max_outstanding_messages`).
    pub messages_limit: usize,
}

impl SendRoom {
    /// Whether `send_message` would take a message of `len` bytes now, as
    /// far as the send buffers go (the same test it applies; the pool's
    /// ceiling is not included). O(1).
    pub fn fits(&self, len: usize) -> bool {
        self.open
            && self.messages < self.messages_limit
            && self.connection_bytes.saturating_add(len) <= self.connection_limit_bytes
            && (self.stream_bytes == 0
                || self.stream_bytes.saturating_add(len) <= self.stream_limit_bytes)
    }

    /// The low-water mark for a writer refused with `len` bytes: wake it
    /// when the message fits **and** each buffer (connection bytes, stream
    /// bytes, outstanding messages) is at most two thirds full — a third
    /// of it free, as Linux's `sk_stream_write_space` wakes a TCP writer —
    /// or when the connection no longer accepts messages (the writer must
    /// learn that). A saturating writer then queues a batch per wake-up
    /// instead of one message per acknowledgement, while the buffer still
    /// holds two thirds of its data to send. Always true again once the
    /// buffers drain, so a writer is never left waiting. O(1).
    pub fn writer_may_wake(&self, len: usize) -> bool {
        let at_most_two_thirds = |used: usize, limit: usize| used <= limit - limit / 3;
        !self.open
            || (self.fits(len)
                && at_most_two_thirds(self.connection_bytes, self.connection_limit_bytes)
                && (self.stream_bytes == 0
                    || at_most_two_thirds(self.stream_bytes, self.stream_limit_bytes))
                && at_most_two_thirds(self.messages, self.messages_limit))
    }
}

/// A message's bytes, as `send_message` takes them.
///
/// [`Bytes`] (and `Vec<u8>`, `String`, `Box<[u8]>`, which convert without
/// copying) are kept as they are: every block of the message is a slice of
/// them, and the only copy on the sending side is into the datagram. A
/// borrowed slice (`&[u8]`, `&Vec<u8>`, `&str`, …) is copied once, here.
/// Pass `Bytes` by value (cloning one is a reference count, not a copy)
/// rather than `&Bytes`, which goes through the copying borrowed case.
///
/// The conversion happens only once the message is accepted: a refused
/// borrowed message (`BufferFull`) is not copied.
pub trait MessageData {
    /// The message's length, bytes (checked against the limits first).
    fn message_len(&self) -> usize;
    /// The message as shared, immutable bytes. O(1) for owned data,
    /// O(n) (one copy) for borrowed data.
    fn into_message_bytes(self) -> Bytes;
}

impl MessageData for Bytes {
    fn message_len(&self) -> usize {
        self.len()
    }
    fn into_message_bytes(self) -> Bytes {
        self
    }
}

impl MessageData for Vec<u8> {
    fn message_len(&self) -> usize {
        self.len()
    }
    fn into_message_bytes(self) -> Bytes {
        Bytes::from(self)
    }
}

impl MessageData for Box<[u8]> {
    fn message_len(&self) -> usize {
        self.len()
    }
    fn into_message_bytes(self) -> Bytes {
        Bytes::from(self)
    }
}

impl MessageData for String {
    fn message_len(&self) -> usize {
        self.len()
    }
    fn into_message_bytes(self) -> Bytes {
        Bytes::from(self)
    }
}

impl<T: AsRef<[u8]> + ?Sized> MessageData for &T {
    fn message_len(&self) -> usize {
        self.as_ref().len()
    }
    fn into_message_bytes(self) -> Bytes {
        Bytes::copy_from_slice(self.as_ref())
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum BlockState {
    Unsent,
    InFlight(u64),
    Lost,
    Acked,
}

/// The per-block states of one message: inline for a single-block
/// message (the common small message costs no allocation of its own).
#[derive(Debug)]
enum BlockStates {
    One(BlockState),
    Many(Vec<BlockState>),
}

impl BlockStates {
    fn unsent(count: usize) -> BlockStates {
        if count <= 1 {
            BlockStates::One(BlockState::Unsent)
        } else {
            BlockStates::Many(vec![BlockState::Unsent; count])
        }
    }

    fn len(&self) -> usize {
        match self {
            BlockStates::One(_) => 1,
            BlockStates::Many(v) => v.len(),
        }
    }

    fn get(&self, i: usize) -> Option<BlockState> {
        match self {
            BlockStates::One(s) => (i == 0).then_some(*s),
            BlockStates::Many(v) => v.get(i).copied(),
        }
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut BlockState> {
        match self {
            BlockStates::One(s) => (i == 0).then_some(s),
            BlockStates::Many(v) => v.get_mut(i),
        }
    }

    fn as_slice(&self) -> &[BlockState] {
        match self {
            BlockStates::One(s) => std::slice::from_ref(s),
            BlockStates::Many(v) => v,
        }
    }
}

#[derive(Debug)]
struct OutMessage {
    /// The application's bytes; blocks are slices of them.
    bytes: Bytes,
    /// This message's cut: every block but the last is this long. Fixed
    /// once a block has been sent (retransmissions and the peer's
    /// reassembly rely on it); until then it follows `set_block_size`.
    block_size: u32,
    blocks: BlockStates,
    next_unsent: usize,
    acked: usize,
    deadline: Option<Time>,
    enqueued: Time,
}

impl OutMessage {
    /// The length of block `block` under this message's cut (0 past its
    /// end): what [`SendState::frame`] would carry, without building the
    /// frame. O(1).
    fn block_len(&self, block: u16) -> usize {
        let block_size = self.block_size as usize;
        let start = usize::from(block) * block_size;
        let end = (start + block_size).min(self.bytes.len());
        end.saturating_sub(start)
    }
}

/// A stream's queued messages by number. Numbers are handed out in
/// order, so the messages live in a queue indexed by `number - base`
/// ([`NumberedSlots`]): queuing a message is a `push_back`, not a tree
/// insert, and finding one is O(1).
type MessageQueue = NumberedSlots<OutMessage>;

#[derive(Debug)]
struct SendStream {
    config: StreamConfig,
    next_number: u32,
    exhausted: bool,
    messages: MessageQueue,
    /// Messages with blocks never sent, oldest first.
    unsent: VecDeque<u32>,
    /// Lost blocks and skip frames waiting to be sent (stale entries are
    /// dropped when met).
    again: VecDeque<BlockRef>,
    /// Skip frames not yet acknowledged: their state and when the message
    /// was abandoned.
    skips: BTreeMap<u32, (BlockState, Time)>,
    buffered_bytes: usize,
    /// The peer's credit: new blocks only of messages numbered below it
    /// (`None`: unlimited).
    credit: Option<u32>,
    stats: StreamStats,
    /// Mirrors of this stream's membership of `SendState::with_unsent`
    /// and `SendState::active` (kept by every change of those sets): a
    /// message queued behind a backlog then reads no node of either tree
    /// (issue 40).
    in_with_unsent: bool,
    in_active: bool,
}

impl SendStream {
    fn new(id: u16, config: StreamConfig, credit: Option<u32>) -> SendStream {
        SendStream {
            credit,
            config,
            next_number: 0,
            exhausted: false,
            messages: MessageQueue::default(),
            unsent: VecDeque::new(),
            again: VecDeque::new(),
            skips: BTreeMap::new(),
            buffered_bytes: 0,
            in_with_unsent: false,
            in_active: false,
            stats: StreamStats {
                id,
                class: config.class,
                weight: config.weight,
                ..StreamStats::default()
            },
        }
    }

    fn state(&self, b: BlockRef) -> Option<BlockState> {
        if b.block == SKIP_BLOCK {
            return self.skips.get(&b.message).map(|s| s.0);
        }
        self.messages
            .get(b.message)?
            .blocks
            .get(usize::from(b.block))
    }

    /// Drop stale entries at the front of `again`; whether one is left.
    fn clean_again(&mut self) -> bool {
        while let Some(&b) = self.again.front() {
            if self.state(b) == Some(BlockState::Lost) || self.state(b) == Some(BlockState::Unsent)
            {
                return true;
            }
            self.again.pop_front();
        }
        false
    }

    fn has_sendable(&mut self) -> bool {
        self.clean_again() || self.new_allowed()
    }

    /// Whether the oldest unsent message is within the peer's credit.
    fn new_allowed(&self) -> bool {
        self.unsent
            .front()
            .is_some_and(|&m| self.credit.is_none_or(|c| m < c))
    }

    /// Whether new data waits but the peer's credit holds it back.
    fn credit_blocked(&self) -> bool {
        !self.unsent.is_empty() && !self.new_allowed()
    }

    /// The next item: a retransmission (or skip) first, else a new block.
    fn next_item(&self) -> Option<(BlockRef, bool)> {
        if let Some(&b) = self.again.front() {
            return Some((b, true));
        }
        if !self.new_allowed() {
            return None;
        }
        let &message = self.unsent.front()?;
        let m = self.messages.get(message)?;
        let block = u16::try_from(m.next_unsent).ok()?;
        Some((
            BlockRef {
                stream: self.stats.id,
                message,
                block,
            },
            false,
        ))
    }

    fn view(&self) -> StreamView {
        // The head item's message, looked up once (`next_item` and then
        // the message again was two look-ups per frame sent).
        let head =
            |m: Option<&OutMessage>| m.map_or((None, Time::ZERO), |m| (m.deadline, m.enqueued));
        let (deadline, enqueued) = if let Some(&b) = self.again.front() {
            if b.block == SKIP_BLOCK {
                (None, self.skips.get(&b.message).map_or(Time::ZERO, |s| s.1))
            } else {
                head(self.messages.get(b.message))
            }
        } else if self.new_allowed() {
            match self.unsent.front().and_then(|&n| self.messages.get(n)) {
                // `next_item` has no item for a block index past u16.
                Some(m) if u16::try_from(m.next_unsent).is_ok() => head(Some(m)),
                _ => (None, Time::ZERO),
            }
        } else {
            (None, Time::ZERO)
        };
        self.view_with(deadline, enqueued)
    }

    /// The view of a scheduler that reads no head fields
    /// ([`Scheduler::reads_heads`]): id, class and weight only. O(1).
    fn view_without_head(&self) -> StreamView {
        self.view_with(None, Time::ZERO)
    }

    fn view_with(&self, deadline: Option<Time>, enqueued: Time) -> StreamView {
        StreamView {
            id: self.stats.id,
            class: self.config.class,
            weight: self.config.weight,
            head_deadline: deadline,
            head_enqueued: enqueued,
        }
    }
}

/// Blocks chosen for one DATA packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The blocks, in frame order.
    pub blocks: BlockList,
    /// All of them were sent before, or are skip frames (the packet
    /// carries ST_RET).
    pub retransmission: bool,
}

/// Counters of the sending side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SendCounters {
    /// Messages accepted.
    pub messages_sent: u64,
    /// Messages acknowledged completely.
    pub messages_acked: u64,
    /// Messages abandoned (deadline passed, or unreliable and lost).
    pub messages_abandoned: u64,
    /// Skip frames sent (first transmissions and repeats).
    pub skips_sent: u64,
}

/// All messages of one connection's sending side.
#[derive(Debug)]
pub struct SendState {
    streams: BTreeMap<u16, SendStream>,
    scheduler: Box<dyn Scheduler>,
    scheduler_config: SchedulerConfig,
    /// Streams registered with the scheduler (they have something to send).
    active: BTreeSet<u16>,
    /// Streams with never-sent blocks, and with entries in their
    /// retransmission queue: `has_pending` and friends then need not look
    /// at every active stream.
    with_unsent: BTreeSet<u16>,
    with_again: BTreeSet<u16>,
    deadlines: BTreeSet<(Time, u16, u32)>,
    abandoned: VecDeque<(MessageId, AbandonReason)>,
    block_size: usize,
    /// The largest block size ever in use (`block_size` only grows it): no
    /// queued message is cut into longer blocks (`window_blocked`).
    max_block_size: usize,
    buffered_bytes: usize,
    outstanding_messages: usize,
    pending_skips: usize,
    unacked_bytes: u64,
    peer_window: u64,
    /// The peer's initial per-stream credit (TLV STREAM_CREDIT).
    initial_credit: Option<u32>,
    counters: SendCounters,
}

fn block_count(len: usize, block_size: usize) -> usize {
    len.div_ceil(block_size.max(1)).max(1)
}

impl SendState {
    /// An empty sending side cutting messages into `block_size`-byte
    /// blocks, scheduling streams round-robin.
    pub fn new(block_size: usize) -> SendState {
        SendState::with_scheduler(block_size, SchedulerConfig::default())
    }

    /// An empty sending side with the given scheduler.
    pub fn with_scheduler(block_size: usize, scheduler: SchedulerConfig) -> SendState {
        SendState {
            streams: BTreeMap::new(),
            scheduler: scheduler.build(),
            scheduler_config: scheduler,
            active: BTreeSet::new(),
            with_unsent: BTreeSet::new(),
            with_again: BTreeSet::new(),
            deadlines: BTreeSet::new(),
            abandoned: VecDeque::new(),
            block_size: block_size.clamp(1, u32::MAX as usize),
            max_block_size: block_size.clamp(1, u32::MAX as usize),
            buffered_bytes: 0,
            outstanding_messages: 0,
            pending_skips: 0,
            unacked_bytes: 0,
            peer_window: u64::MAX,
            initial_credit: None,
            counters: SendCounters::default(),
        }
    }

    /// The block size.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Change the block size, at any time: the handshake sets it from
    /// both sides' MAX_PACKET_SIZE, path MTU discovery as the path's size
    /// moves. New messages are cut to it, and so are queued messages none
    /// of whose blocks has been sent; a message already (partly) sent keeps
    /// its cut, which its retransmissions and the peer's reassembly rely
    /// on. O(queued messages) when the size changes, O(1) when it does not.
    pub fn set_block_size(&mut self, block_size: usize) {
        let block_size = block_size.clamp(1, u32::MAX as usize);
        if block_size == self.block_size {
            return;
        }
        self.block_size = block_size;
        self.max_block_size = self.max_block_size.max(block_size);
        for s in self.streams.values_mut() {
            for m in s.messages.values_mut() {
                if m.next_unsent == 0 {
                    m.block_size = block_size as u32;
                    m.blocks = BlockStates::unsent(block_count(m.bytes.len(), block_size));
                }
            }
        }
    }

    /// Replace the scheduler (at any time): the active streams carry over.
    pub fn set_scheduler(&mut self, config: SchedulerConfig) {
        self.scheduler = config.build();
        self.scheduler_config = config;
        for id in &self.active {
            if let Some(s) = self.streams.get(id) {
                self.scheduler.activate(&s.view());
            }
        }
    }

    /// The scheduler in use.
    pub fn scheduler(&self) -> &dyn Scheduler {
        self.scheduler.as_ref()
    }

    /// The configuration of the scheduler in use.
    pub fn scheduler_config(&self) -> SchedulerConfig {
        self.scheduler_config
    }

    /// Configure (and open) a stream; may change a stream in use.
    pub fn configure(&mut self, id: u16, config: StreamConfig) {
        let s = self
            .streams
            .entry(id)
            .or_insert_with(|| SendStream::new(id, config, self.initial_credit));
        s.config = config;
        s.stats.class = config.class;
        s.stats.weight = config.weight;
        if self.active.contains(&id) {
            let v = s.view();
            // A class change must re-sort it: take it out and back in.
            self.scheduler.remove(id);
            self.scheduler.activate(&v);
        }
    }

    /// A stream's configuration (the default if never configured).
    pub fn stream_config(&self, id: u16) -> StreamConfig {
        self.streams.get(&id).map(|s| s.config).unwrap_or_default()
    }

    /// Per-stream counters, by stream id.
    pub fn stream_stats(&self) -> Vec<StreamStats> {
        self.streams
            .values()
            .map(|s| StreamStats {
                buffered_bytes: s.buffered_bytes,
                ..s.stats
            })
            .collect()
    }

    /// The counters.
    pub fn counters(&self) -> &SendCounters {
        &self.counters
    }

    /// Messages accepted and not yet acknowledged or abandoned, plus skip
    /// frames not yet acknowledged (the close waits for both).
    pub fn outstanding_messages(&self) -> usize {
        self.outstanding_messages + self.pending_skips
    }

    /// Bytes of messages accepted and not yet acknowledged.
    pub fn buffered_bytes(&self) -> usize {
        self.buffered_bytes
    }

    /// The peer's advertised receive window, bytes.
    pub fn peer_window(&self) -> u64 {
        self.peer_window
    }

    /// Record the peer's window (W_VAL, CWIN, STATUS reply).
    pub fn set_peer_window(&mut self, bytes: u64) {
        self.peer_window = bytes;
    }

    /// The peer's initial per-stream credit (from its START): applies to
    /// every stream, also those already open.
    pub fn set_initial_credit(&mut self, credit: Option<u32>) {
        self.initial_credit = credit;
        let ids: Vec<u16> = self.streams.keys().copied().collect();
        for id in ids {
            if let Some(s) = self.streams.get_mut(&id) {
                s.credit = credit;
            }
            self.reactivate(id);
        }
    }

    /// The peer raised `stream`'s credit to `max_message` (ACK credit
    /// section); a lower value than known is ignored.
    pub fn raise_credit(&mut self, stream: u16, max_message: u32) {
        let initial = self.initial_credit;
        let s = self
            .streams
            .entry(stream)
            .or_insert_with(|| SendStream::new(stream, StreamConfig::default(), initial));
        let Some(c) = s.credit else {
            return;
        };
        if max_message > c {
            s.credit = Some(max_message);
            self.reactivate(stream);
        }
    }

    /// The peer's credit of `stream` (`None`: unlimited).
    pub fn credit(&self, stream: u16) -> Option<u32> {
        self.streams
            .get(&stream)
            .map_or(self.initial_credit, |s| s.credit)
    }

    /// Whether new data of some stream waits only for the peer's credit
    /// and nothing else can be sent (the sender must poll).
    pub fn credit_blocked(&self) -> bool {
        !self.has_pending() && self.streams.values().any(SendStream::credit_blocked)
    }

    /// Bytes `stream` holds unacknowledged and its limit (a stream not
    /// opened yet: nothing, and the default limit). O(log streams).
    pub fn stream_buffer(&self, stream: u16) -> (usize, usize) {
        self.streams
            .get(&stream)
            .map_or((0, StreamConfig::default().max_buffered_bytes), |s| {
                (s.buffered_bytes, s.config.max_buffered_bytes)
            })
    }

    /// Whether `stream` can take `len` more bytes (its own buffer limit;
    /// a stream holding nothing takes one message of any size, so no
    /// limit makes a message unsendable). O(log streams).
    pub fn stream_has_room(&self, stream: u16, len: usize) -> bool {
        self.streams.get(&stream).is_none_or(|s| {
            s.buffered_bytes == 0
                || s.buffered_bytes.saturating_add(len) <= s.config.max_buffered_bytes
        })
    }

    /// Bring `with_unsent` / `with_again` up to date for stream `id`.
    fn sync(&mut self, id: u16) {
        let Some(s) = self.streams.get_mut(&id) else {
            self.with_unsent.remove(&id);
            self.with_again.remove(&id);
            return;
        };
        s.clean_again();
        if !s.new_allowed() {
            if std::mem::take(&mut s.in_with_unsent) {
                self.with_unsent.remove(&id);
            }
        } else if !s.in_with_unsent {
            s.in_with_unsent = true;
            self.with_unsent.insert(id);
        }
        if s.again.is_empty() {
            self.with_again.remove(&id);
        } else {
            self.with_again.insert(id);
        }
    }

    fn reactivate(&mut self, id: u16) {
        self.sync(id);
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if s.has_sendable() {
            self.scheduler.activate(&s.view());
            s.in_active = true;
            self.active.insert(id);
        } else if std::mem::take(&mut s.in_active) {
            self.active.remove(&id);
            self.scheduler.remove(id);
        }
    }

    /// Take stream `id` out of `active` (and its mirror).
    fn deactivate(&mut self, id: u16) {
        self.active.remove(&id);
        if let Some(s) = self.streams.get_mut(&id) {
            s.in_active = false;
        }
    }

    /// Queue a message with an optional deadline. Limits are checked by
    /// the caller except the per-stream number space. `Bytes` are kept,
    /// not copied; O(log streams + log messages of the stream).
    pub fn enqueue(
        &mut self,
        now: Time,
        stream: u16,
        bytes: impl MessageData,
        deadline: Option<Time>,
    ) -> Result<MessageId, SendError> {
        let bytes = bytes.into_message_bytes();
        let block_size = self.block_size;
        let s = self.streams.entry(stream).or_insert_with(|| {
            SendStream::new(stream, StreamConfig::default(), self.initial_credit)
        });
        if s.exhausted {
            return Err(SendError::MessageNumbersExhausted);
        }
        let number = s.next_number;
        match s.next_number.checked_add(1) {
            Some(n) => s.next_number = n,
            None => s.exhausted = true,
        }
        let len = bytes.len();
        s.messages.insert(
            number,
            OutMessage {
                block_size: block_size as u32,
                blocks: BlockStates::unsent(block_count(len, block_size)),
                bytes,
                next_unsent: 0,
                acked: 0,
                deadline,
                enqueued: now,
            },
        );
        s.unsent.push_back(number);
        s.buffered_bytes += len;
        s.stats.messages_queued += 1;
        let was_active = s.in_active;
        if let Some(d) = deadline {
            self.deadlines.insert((d, stream, number));
        }
        self.buffered_bytes += len;
        self.outstanding_messages += 1;
        self.counters.messages_sent += 1;
        self.sync(stream);
        // `sync` leaves `active` as it was.
        if !was_active {
            self.reactivate(stream);
        }
        Ok(MessageId { stream, number })
    }

    /// The last message number handed out on `stream`, if any.
    pub fn last_message_number(&self, stream: u16) -> Option<u32> {
        let s = self.streams.get(&stream)?;
        if s.exhausted {
            Some(u32::MAX)
        } else {
            s.next_number.checked_sub(1)
        }
    }

    fn state(&self, b: BlockRef) -> Option<BlockState> {
        self.streams.get(&b.stream)?.state(b)
    }

    /// The priority class of `stream` (for the header's PRI).
    pub fn class_of(&self, stream: u16) -> u8 {
        self.streams.get(&stream).map_or(2, |s| s.config.class)
    }

    /// The frame of a block (or skip frame) to send.
    pub fn frame(&self, b: BlockRef) -> Option<StreamFrame<'_>> {
        let s = self.streams.get(&b.stream)?;
        if b.block == SKIP_BLOCK {
            s.skips.get(&b.message)?;
            return Some(StreamFrame::skip(
                b.stream,
                b.message,
                s.config.reliability.wire(true),
            ));
        }
        let m = s.messages.get(b.message)?;
        let block_size = m.block_size as usize;
        let start = usize::from(b.block) * block_size;
        let end = (start + block_size).min(m.bytes.len());
        let data = m.bytes.get(start..end).unwrap_or(&[]);
        Some(StreamFrame {
            stream_id: b.stream,
            message_number: b.message,
            block_index: b.block,
            block_count: u16::try_from(m.blocks.len()).unwrap_or(u16::MAX),
            reliability: s.config.reliability.wire(m.deadline.is_some()),
            data,
        })
    }

    /// The data length of `b`'s frame (0 for a skip frame or a block
    /// no longer queued), without building the frame. O(log streams).
    fn block_len(&self, b: BlockRef) -> usize {
        if b.block == SKIP_BLOCK {
            return 0;
        }
        self.streams
            .get(&b.stream)
            .and_then(|s| s.messages.get(b.message))
            .map_or(0, |m| m.block_len(b.block))
    }

    /// Whether a retransmission (or skip frame) is waiting.
    pub fn has_retransmission(&self) -> bool {
        self.with_again.iter().any(|id| {
            self.streams.get(id).is_some_and(|s| {
                s.again
                    .iter()
                    .any(|b| matches!(s.state(*b), Some(BlockState::Lost | BlockState::Unsent)))
            })
        })
    }

    /// Whether a never-sent block is waiting.
    pub fn has_new_data(&self) -> bool {
        !self.with_unsent.is_empty()
    }

    /// Whether anything at all waits to be sent.
    pub fn has_pending(&self) -> bool {
        !self.active.is_empty() && (self.has_new_data() || self.has_retransmission())
    }

    fn new_fits(&self, len: usize, planned: u64) -> bool {
        self.unacked_bytes + planned + len as u64 <= self.peer_window
    }

    /// Whether new data waits but the peer's window has no room for any of
    /// it (the sender must poll with STATUS). O(1) while the window has
    /// room for a block of the largest size ever cut (the common case:
    /// every `poll_transmit` of a sender with a backlog asks);
    /// otherwise O(streams with unsent data × log).
    pub fn window_blocked(&self) -> bool {
        // No block is longer than `max_block_size`: if one that long fits,
        // the scan below returns `false` at the first stream with new data
        // (or finds none), whatever the streams hold. Answering from these
        // three scalars spares reading the stream tree, the stream and its
        // queues — heap lines a blocked sender's every poll missed in the
        // city (issue 40).
        if self.new_fits(self.max_block_size, 0) {
            return false;
        }
        self.window_blocked_scan()
    }

    /// [`window_blocked`](Self::window_blocked) by looking at every
    /// stream with unsent data (its reference answer in the tests).
    fn window_blocked_scan(&self) -> bool {
        if self.has_retransmission() {
            return false;
        }
        let mut any = false;
        for id in &self.with_unsent {
            let Some(s) = self.streams.get(id) else {
                continue;
            };
            if let Some((b, false)) = s.next_item() {
                any = true;
                if self.new_fits(self.block_len(b), 0) {
                    return false;
                }
            }
        }
        any
    }

    fn mark_sent(&mut self, b: BlockRef, pn: u64) {
        let Some(s) = self.streams.get_mut(&b.stream) else {
            return;
        };
        if b.block == SKIP_BLOCK {
            if let Some(st) = s.skips.get_mut(&b.message) {
                if st.0 != BlockState::Acked {
                    st.0 = BlockState::InFlight(pn);
                    self.counters.skips_sent += 1;
                }
            }
            return;
        }
        // The length from the message fetched here (`block_len` would
        // look the stream and the message up again).
        let Some(m) = s.messages.get_mut(b.message) else {
            return;
        };
        let len = m.block_len(b.block) as u64;
        let Some(st) = m.blocks.get_mut(usize::from(b.block)) else {
            return;
        };
        if *st == BlockState::Unsent {
            *st = BlockState::InFlight(pn);
            self.unacked_bytes += len;
            s.stats.bytes_sent += len;
        } else if *st != BlockState::Acked {
            *st = BlockState::InFlight(pn);
            s.stats.bytes_retransmitted += len;
        }
    }

    /// Take `item` out of its stream's queue.
    fn consume(&mut self, b: BlockRef, again: bool) {
        let Some(s) = self.streams.get_mut(&b.stream) else {
            return;
        };
        if again {
            s.again.pop_front();
            return;
        }
        let Some(m) = s.messages.get_mut(b.message) else {
            return;
        };
        m.next_unsent += 1;
        if m.next_unsent >= m.blocks.len() {
            s.unsent.pop_front();
        }
    }

    /// Choose the blocks of the next DATA packet `pn`, whose frames may take
    /// `room` bytes (after the packet number): the scheduler picks a stream
    /// per frame and is told when the packet is complete
    /// ([`Scheduler::end_packet`]); a stream gives its retransmissions and skip frames before
    /// new blocks, new blocks only within the peer's window. A packet holds
    /// only one of the two kinds. `None` if nothing fits.
    pub fn take_frames(&mut self, pn: u64, room: usize, ctx: &SchedContext) -> Option<Taken> {
        let mut blocks = BlockList::new();
        let mut used = 0usize;
        let mut planned = 0u64;
        let mut kind: Option<bool> = None;
        // Every stream picked either gives a frame or ends the packet, so
        // the loop is bounded by the frames that fit plus stale streams.
        while let Some(id) = self.scheduler.pick(ctx) {
            let item = match self.streams.get_mut(&id) {
                Some(s) => {
                    if s.has_sendable() {
                        s.next_item()
                    } else {
                        None
                    }
                }
                None => None,
            };
            let Some((b, again)) = item else {
                self.deactivate(id);
                self.scheduler.remove(id);
                continue;
            };
            if kind.is_some_and(|k| k != again) {
                break;
            }
            let len = self.block_len(b);
            let need = StreamFrame::HEADER_LEN + len;
            if used + need > room || (!again && !self.new_fits(len, planned)) {
                break;
            }
            kind = Some(again);
            used += need;
            if !again {
                planned += len as u64;
            }
            self.consume(b, again);
            self.sync(id);
            blocks.push(b);
            let heads = self.scheduler.reads_heads();
            let (more, view) = match self.streams.get_mut(&id) {
                Some(s) if heads => (s.has_sendable(), s.view()),
                Some(s) => (s.has_sendable(), s.view_without_head()),
                None => (
                    false,
                    StreamView {
                        id,
                        class: 0,
                        weight: 1,
                        head_deadline: None,
                        head_enqueued: Time::ZERO,
                    },
                ),
            };
            self.scheduler.on_sent(&view, need, more);
            if !more {
                self.deactivate(id);
            }
        }
        // The packet is complete: round robin rotates the stream that
        // filled it (seed 002 Algorithm 1).
        self.scheduler.end_packet();
        if blocks.is_empty() {
            // The stream the scheduler wants may be held by the peer's
            // window while another has retransmissions: those need no
            // window, so they go.
            return self.take_any_retransmission(pn, room);
        }
        for b in &blocks {
            self.mark_sent(*b, pn);
        }
        Some(Taken {
            blocks,
            retransmission: kind == Some(true),
        })
    }

    fn take_any_retransmission(&mut self, pn: u64, room: usize) -> Option<Taken> {
        // Rare (the window holds new data back): a list of ids is fine.
        let ids: Vec<u16> = self.with_again.iter().copied().collect();
        let mut blocks = BlockList::new();
        let mut used = 0usize;
        for id in ids {
            while let Some(s) = self.streams.get_mut(&id) {
                if !s.clean_again() {
                    break;
                }
                let Some(&b) = s.again.front() else { break };
                let need = StreamFrame::HEADER_LEN + self.block_len(b);
                if used + need > room {
                    break;
                }
                used += need;
                self.consume(b, true);
                blocks.push(b);
            }
            self.reactivate(id);
        }
        if blocks.is_empty() {
            return None;
        }
        for b in &blocks {
            self.mark_sent(*b, pn);
        }
        Some(Taken {
            blocks,
            retransmission: true,
        })
    }

    /// Keep the longest prefix of `blocks` whose frames fit `room` bytes
    /// (a packet sent before the path MTU shrank may not fit any more).
    /// O(blocks); allocates only when it shortens a long list.
    pub fn fit_blocks(&self, blocks: &mut BlockList, room: usize) {
        let mut used = 0usize;
        let mut keep = 0usize;
        for b in blocks.iter() {
            let need = StreamFrame::HEADER_LEN + self.block_len(*b);
            if used + need > room {
                break;
            }
            used += need;
            keep += 1;
        }
        if keep < blocks.len() {
            let mut kept = BlockList::new();
            for b in blocks.iter().take(keep) {
                kept.push(*b);
            }
            *blocks = kept;
        }
    }

    /// Re-send `blocks` (a send-gate probe repeating the oldest packet) in
    /// packet `pn`; returns those still unacknowledged (never blocks of
    /// unreliable streams, which are not retransmitted).
    pub fn take_specific(&mut self, pn: u64, blocks: &[BlockRef]) -> BlockList {
        let live: BlockList = blocks
            .iter()
            .copied()
            .filter(|b| {
                matches!(
                    self.state(*b),
                    Some(BlockState::InFlight(_) | BlockState::Lost)
                ) && (b.block == SKIP_BLOCK
                    || self.stream_config(b.stream).reliability != StreamReliability::Unreliable)
            })
            .collect();
        for b in &live {
            self.mark_sent(*b, pn);
        }
        live
    }

    /// Blocks of acknowledged packets. Returns the messages this completed.
    pub fn on_acked(&mut self, blocks: &[BlockRef]) -> Vec<MessageId> {
        let mut done = Vec::new();
        self.on_acked_with(blocks, |id| done.push(id));
        done
    }

    /// [`on_acked`](Self::on_acked), calling `done` for every message
    /// completed instead of listing them (no allocation). O(b·log m) for
    /// b blocks.
    pub fn on_acked_with(&mut self, blocks: &[BlockRef], mut done: impl FnMut(MessageId)) {
        for &b in blocks {
            let Some(s) = self.streams.get_mut(&b.stream) else {
                continue;
            };
            if b.block == SKIP_BLOCK {
                if s.skips.remove(&b.message).is_some() {
                    self.pending_skips = self.pending_skips.saturating_sub(1);
                }
                continue;
            }
            let Some(m) = s.messages.get_mut(b.message) else {
                continue;
            };
            let len = m.block_len(b.block) as u64;
            let Some(st) = m.blocks.get_mut(usize::from(b.block)) else {
                continue;
            };
            if *st == BlockState::Acked || *st == BlockState::Unsent {
                continue;
            }
            *st = BlockState::Acked;
            m.acked += 1;
            self.unacked_bytes = self.unacked_bytes.saturating_sub(len);
            if m.acked == m.blocks.len() {
                let size = m.bytes.len();
                if let Some(d) = m.deadline {
                    self.deadlines.remove(&(d, b.stream, b.message));
                }
                s.messages.remove(b.message);
                s.buffered_bytes = s.buffered_bytes.saturating_sub(size);
                s.stats.messages_acked += 1;
                self.buffered_bytes = self.buffered_bytes.saturating_sub(size);
                self.outstanding_messages = self.outstanding_messages.saturating_sub(1);
                self.counters.messages_acked += 1;
                done(MessageId {
                    stream: b.stream,
                    number: b.message,
                });
            }
        }
    }

    /// Blocks of packets declared lost (with the packet that carried
    /// them): those whose latest transmission was that packet go back in
    /// their stream's queue — except blocks of unreliable streams, which
    /// abandon their message instead.
    pub fn on_lost(&mut self, now: Time, lost: &[(u64, BlockRef)]) {
        for &(pn, b) in lost {
            let Some(s) = self.streams.get_mut(&b.stream) else {
                continue;
            };
            if s.state(b) != Some(BlockState::InFlight(pn)) {
                continue;
            }
            if b.block != SKIP_BLOCK && s.config.reliability == StreamReliability::Unreliable {
                self.abandon(now, b.stream, b.message, AbandonReason::Lost);
                continue;
            }
            if b.block == SKIP_BLOCK {
                if let Some(st) = s.skips.get_mut(&b.message) {
                    st.0 = BlockState::Lost;
                }
            } else if let Some(st) = s
                .messages
                .get_mut(b.message)
                .and_then(|m| m.blocks.get_mut(usize::from(b.block)))
            {
                *st = BlockState::Lost;
            }
            s.again.push_back(b);
            self.reactivate(b.stream);
        }
    }

    /// Give up message `number` of `stream`: forget it, report it, and
    /// queue a skip frame if the receiver could be waiting for it (an
    /// ordered stream, or some of its blocks were sent).
    fn abandon(&mut self, now: Time, stream: u16, number: u32, reason: AbandonReason) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        let Some(m) = s.messages.remove(number) else {
            return;
        };
        // The message's own cut: it may predate the current block size.
        let block_size = m.block_size as usize;
        let mut unacked = 0u64;
        for (i, st) in m.blocks.as_slice().iter().enumerate() {
            if matches!(st, BlockState::InFlight(_) | BlockState::Lost) {
                let start = i * block_size;
                let end = (start + block_size).min(m.bytes.len());
                unacked += end.saturating_sub(start) as u64;
            }
        }
        self.unacked_bytes = self.unacked_bytes.saturating_sub(unacked);
        if m.next_unsent < m.blocks.len() {
            s.unsent.retain(|&n| n != number);
        }
        if let Some(d) = m.deadline {
            self.deadlines.remove(&(d, stream, number));
        }
        let size = m.bytes.len();
        s.buffered_bytes = s.buffered_bytes.saturating_sub(size);
        s.stats.messages_abandoned += 1;
        self.buffered_bytes = self.buffered_bytes.saturating_sub(size);
        self.outstanding_messages = self.outstanding_messages.saturating_sub(1);
        self.counters.messages_abandoned += 1;
        let ordered = s.config.reliability == StreamReliability::ReliableOrdered;
        if ordered || m.next_unsent > 0 {
            s.skips.insert(number, (BlockState::Unsent, now));
            s.again.push_back(BlockRef {
                stream,
                message: number,
                block: SKIP_BLOCK,
            });
            self.pending_skips += 1;
        }
        self.abandoned
            .push_back((MessageId { stream, number }, reason));
        self.reactivate(stream);
    }

    /// Abandon every message whose deadline is at or before `now`.
    pub fn expire(&mut self, now: Time) {
        while let Some(&(d, stream, number)) = self.deadlines.first() {
            if d > now {
                break;
            }
            self.deadlines.pop_first();
            self.abandon(now, stream, number, AbandonReason::DeadlineExpired);
        }
    }

    /// The earliest deadline of a message not yet acknowledged.
    pub fn next_deadline(&self) -> Option<Time> {
        self.deadlines.first().map(|d| d.0)
    }

    /// The next abandoned message to report.
    pub fn pop_abandoned(&mut self) -> Option<(MessageId, AbandonReason)> {
        self.abandoned.pop_front()
    }

    /// The packet that last carried `b`, if it is in flight.
    pub fn carrier(&self, b: BlockRef) -> Option<u64> {
        match self.state(b)? {
            BlockState::InFlight(pn) => Some(pn),
            _ => None,
        }
    }

    /// Whether message `id` was queued and nothing of it is left to send:
    /// every block acknowledged (or the message abandoned and its skip
    /// acknowledged). Multicast reads its per-member ACK state from this.
    pub fn is_settled(&self, id: MessageId) -> bool {
        self.streams.get(&id.stream).is_some_and(|s| {
            (s.exhausted || id.number < s.next_number)
                && !s.messages.contains(id.number)
                && !s.skips.contains_key(&id.number)
        })
    }

    /// Every message the peer's application may not have received, in
    /// order (for `Closed`). On a reliable-ordered stream: the oldest
    /// message not yet acknowledged (or whose skip frame is not yet
    /// acknowledged) and every message after it — the stream delivers in
    /// order, so a message queued behind an unacknowledged one was not
    /// delivered even if all its own blocks were acknowledged: the peer held
    /// them for reassembly and dropped them when the connection closed. On
    /// unordered and unreliable streams a message is delivered when it is
    /// complete, so only the messages not fully acknowledged.
    pub fn undelivered(&self) -> Vec<MessageId> {
        self.streams
            .iter()
            .flat_map(|(&stream, s)| {
                let numbers: Vec<u32> =
                    if s.config.reliability == StreamReliability::ReliableOrdered {
                        let last = if s.exhausted {
                            Some(u32::MAX)
                        } else {
                            s.next_number.checked_sub(1)
                        };
                        let first = match (s.messages.keys().next(), s.skips.keys().next()) {
                            (Some(m), Some(&k)) => Some(m.min(k)),
                            (Some(m), None) => Some(m),
                            (None, Some(&k)) => Some(k),
                            (None, None) => None,
                        };
                        match (first, last) {
                            (Some(first), Some(last)) => (first..=last).collect(),
                            _ => Vec::new(),
                        }
                    } else {
                        s.messages.keys().collect()
                    };
                numbers
                    .into_iter()
                    .map(move |number| MessageId { stream, number })
            })
            .collect()
    }

    /// Drop everything (the connection closed).
    pub fn clear(&mut self) {
        for s in self.streams.values_mut() {
            s.messages.clear();
            s.unsent.clear();
            s.again.clear();
            s.skips.clear();
            s.buffered_bytes = 0;
            s.in_with_unsent = false;
            s.in_active = false;
        }
        for id in std::mem::take(&mut self.active) {
            self.scheduler.remove(id);
        }
        self.with_unsent.clear();
        self.with_again.clear();
        self.deadlines.clear();
        self.buffered_bytes = 0;
        self.outstanding_messages = 0;
        self.pending_skips = 0;
        self.unacked_bytes = 0;
    }
}

#[cfg(test)]
mod tests;
