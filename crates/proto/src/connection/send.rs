//! The sending side's data: messages, their fragmentation into blocks,
//! the packetizer that fills DATA packets (coalescing small messages), and
//! the per-block retransmission state.
//!
//! A message of `n` bytes is cut into `max(1, ⌈n / block_size⌉)` blocks of
//! `block_size` bytes (the last one shorter), where `block_size` is the
//! data that fits a single-frame DATA packet of the negotiated size. Every
//! block is one stream frame; a packet carries as many frames as fit, so
//! small messages share a datagram. Blocks, not packets, are what is
//! retransmitted: when a packet is lost, its blocks that are still
//! unacknowledged go back in the retransmission queue and leave in new
//! packets (new packet numbers, ST_RET set).
//!
//! Everything is keyed by stream id so the streams issue can add streams,
//! schedulers and reliability modes; today only stream 0 carries data.

use super::events::MessageId;
use crate::recovery::BlockRef;
use crate::wire::{Reliability, StreamFrame};
use std::collections::{BTreeMap, VecDeque};

/// Why `send_message` refused a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// No such connection (never existed, or closed and released).
    #[error("unknown connection")]
    UnknownConnection,
    /// The connection is closing or closed: no new message is accepted.
    #[error("the connection is closing or closed")]
    Closed,
    /// Only stream 0 exists in this version.
    #[error("stream {0} is not supported (only stream 0 exists yet)")]
    UnsupportedStream(u16),
    /// The message is larger than the configured maximum.
    #[error("message of {size} bytes exceeds the maximum of {max}")]
    MessageTooLarge {
        /// The message's size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Too many messages, or too many bytes, are waiting for acknowledgement.
    #[error("send buffer full: wait for the peer to acknowledge")]
    BufferFull,
    /// The stream's 32-bit message numbers are used up.
    #[error("message numbers of this stream are exhausted")]
    MessageNumbersExhausted,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum BlockState {
    Unsent,
    InFlight(u64),
    Lost,
    Acked,
}

#[derive(Debug)]
struct OutMessage {
    bytes: Vec<u8>,
    blocks: Vec<BlockState>,
    next_unsent: usize,
    acked: usize,
}

#[derive(Debug, Default)]
struct SendStream {
    next_number: u32,
    exhausted: bool,
    messages: BTreeMap<u32, OutMessage>,
    /// Messages with blocks never sent, oldest first.
    unsent: VecDeque<u32>,
}

/// Blocks chosen for one DATA packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The blocks, in frame order.
    pub blocks: Vec<BlockRef>,
    /// All of them were sent before (the packet carries ST_RET).
    pub retransmission: bool,
}

/// Counters of the sending side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SendCounters {
    /// Messages accepted.
    pub messages_sent: u64,
    /// Messages acknowledged completely.
    pub messages_acked: u64,
}

/// All messages of one connection's sending side.
#[derive(Debug)]
pub struct SendState {
    streams: BTreeMap<u16, SendStream>,
    retransmit: VecDeque<BlockRef>,
    block_size: usize,
    buffered_bytes: usize,
    outstanding_messages: usize,
    unacked_bytes: u64,
    peer_window: u64,
    counters: SendCounters,
}

fn block_count(len: usize, block_size: usize) -> usize {
    len.div_ceil(block_size.max(1)).max(1)
}

impl SendState {
    /// An empty sending side cutting messages into `block_size`-byte blocks.
    pub fn new(block_size: usize) -> SendState {
        SendState {
            streams: BTreeMap::new(),
            retransmit: VecDeque::new(),
            block_size: block_size.max(1),
            buffered_bytes: 0,
            outstanding_messages: 0,
            unacked_bytes: 0,
            peer_window: u64::MAX,
            counters: SendCounters::default(),
        }
    }

    /// The block size.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Change the block size; only before any block has been sent (the
    /// handshake fixes it from both sides' MAX_PACKET_SIZE).
    pub fn set_block_size(&mut self, block_size: usize) {
        self.block_size = block_size.max(1);
        for s in self.streams.values_mut() {
            for m in s.messages.values_mut() {
                if m.next_unsent == 0 {
                    m.blocks =
                        vec![BlockState::Unsent; block_count(m.bytes.len(), self.block_size)];
                }
            }
        }
    }

    /// The counters.
    pub fn counters(&self) -> &SendCounters {
        &self.counters
    }

    /// Messages accepted and not yet acknowledged.
    pub fn outstanding_messages(&self) -> usize {
        self.outstanding_messages
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

    /// Queue a message. Limits are checked by the caller except the
    /// per-stream number space.
    pub fn enqueue(&mut self, stream: u16, bytes: &[u8]) -> Result<MessageId, SendError> {
        let block_size = self.block_size;
        let s = self.streams.entry(stream).or_default();
        if s.exhausted {
            return Err(SendError::MessageNumbersExhausted);
        }
        let number = s.next_number;
        match s.next_number.checked_add(1) {
            Some(n) => s.next_number = n,
            None => s.exhausted = true,
        }
        s.messages.insert(
            number,
            OutMessage {
                bytes: bytes.to_vec(),
                blocks: vec![BlockState::Unsent; block_count(bytes.len(), block_size)],
                next_unsent: 0,
                acked: 0,
            },
        );
        s.unsent.push_back(number);
        self.buffered_bytes += bytes.len();
        self.outstanding_messages += 1;
        self.counters.messages_sent += 1;
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

    fn state_mut(&mut self, b: BlockRef) -> Option<&mut BlockState> {
        self.streams
            .get_mut(&b.stream)?
            .messages
            .get_mut(&b.message)?
            .blocks
            .get_mut(usize::from(b.block))
    }

    fn state(&self, b: BlockRef) -> Option<BlockState> {
        self.streams
            .get(&b.stream)?
            .messages
            .get(&b.message)?
            .blocks
            .get(usize::from(b.block))
            .copied()
    }

    /// The data and block count of a block, for building its frame.
    pub fn frame(&self, b: BlockRef) -> Option<StreamFrame<'_>> {
        let m = self.streams.get(&b.stream)?.messages.get(&b.message)?;
        let start = usize::from(b.block) * self.block_size;
        let end = (start + self.block_size).min(m.bytes.len());
        let data = m.bytes.get(start..end).unwrap_or(&[]);
        Some(StreamFrame {
            stream_id: b.stream,
            message_number: b.message,
            block_index: b.block,
            block_count: u16::try_from(m.blocks.len()).unwrap_or(u16::MAX),
            reliability: Reliability::Reliable,
            data,
        })
    }

    fn block_len(&self, b: BlockRef) -> usize {
        self.frame(b).map_or(0, |f| f.data.len())
    }

    /// Whether a retransmission is waiting.
    pub fn has_retransmission(&self) -> bool {
        self.retransmit
            .iter()
            .any(|b| self.state(*b) == Some(BlockState::Lost))
    }

    /// Whether a never-sent block is waiting.
    pub fn has_new_data(&self) -> bool {
        self.streams.values().any(|s| !s.unsent.is_empty())
    }

    /// Whether anything at all waits to be sent.
    pub fn has_pending(&self) -> bool {
        self.has_new_data() || self.has_retransmission()
    }

    fn next_new_block(&self) -> Option<BlockRef> {
        for (&stream, s) in &self.streams {
            if let Some(&message) = s.unsent.front() {
                let m = s.messages.get(&message)?;
                let block = u16::try_from(m.next_unsent).ok()?;
                return Some(BlockRef {
                    stream,
                    message,
                    block,
                });
            }
        }
        None
    }

    /// Whether new data waits but the peer's window has no room for it
    /// (the sender must poll with STATUS).
    pub fn window_blocked(&self) -> bool {
        self.next_new_block().is_some_and(|b| {
            self.unacked_bytes + self.block_len(b) as u64 > self.peer_window
                && !self.has_retransmission()
        })
    }

    fn mark_sent(&mut self, b: BlockRef, pn: u64) {
        let len = self.block_len(b) as u64;
        if let Some(st) = self.state_mut(b) {
            if *st == BlockState::Unsent {
                *st = BlockState::InFlight(pn);
                self.unacked_bytes += len;
            } else if *st != BlockState::Acked {
                *st = BlockState::InFlight(pn);
            }
        }
    }

    /// Choose the blocks of the next DATA packet `pn`, whose frames may take
    /// `room` bytes (after the packet number): retransmissions first, else
    /// new blocks within the peer's window. `None` if nothing fits.
    pub fn take_frames(&mut self, pn: u64, room: usize) -> Option<Taken> {
        let mut blocks = Vec::new();
        let mut used = 0usize;
        while let Some(&b) = self.retransmit.front() {
            if self.state(b) != Some(BlockState::Lost) {
                self.retransmit.pop_front();
                continue;
            }
            let need = StreamFrame::HEADER_LEN + self.block_len(b);
            if used + need > room {
                break;
            }
            self.retransmit.pop_front();
            used += need;
            blocks.push(b);
        }
        if !blocks.is_empty() {
            for b in &blocks {
                self.mark_sent(*b, pn);
            }
            return Some(Taken {
                blocks,
                retransmission: true,
            });
        }
        let mut planned = 0u64;
        while let Some(b) = self.next_new_block() {
            let len = self.block_len(b);
            let need = StreamFrame::HEADER_LEN + len;
            if used + need > room || self.unacked_bytes + planned + len as u64 > self.peer_window {
                break;
            }
            used += need;
            planned += len as u64;
            blocks.push(b);
            self.advance_unsent(b);
        }
        if blocks.is_empty() {
            return None;
        }
        for b in &blocks {
            self.mark_sent(*b, pn);
        }
        Some(Taken {
            blocks,
            retransmission: false,
        })
    }

    fn advance_unsent(&mut self, b: BlockRef) {
        let Some(s) = self.streams.get_mut(&b.stream) else {
            return;
        };
        let Some(m) = s.messages.get_mut(&b.message) else {
            return;
        };
        m.next_unsent += 1;
        if m.next_unsent >= m.blocks.len() {
            s.unsent.pop_front();
        }
    }

    /// Re-send `blocks` (a send-gate probe repeating the oldest packet) in
    /// packet `pn`; returns those still unacknowledged.
    pub fn take_specific(&mut self, pn: u64, blocks: &[BlockRef]) -> Vec<BlockRef> {
        let live: Vec<BlockRef> = blocks
            .iter()
            .copied()
            .filter(|b| {
                matches!(
                    self.state(*b),
                    Some(BlockState::InFlight(_) | BlockState::Lost)
                )
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
        for &b in blocks {
            let len = self.block_len(b) as u64;
            let Some(s) = self.streams.get_mut(&b.stream) else {
                continue;
            };
            let Some(m) = s.messages.get_mut(&b.message) else {
                continue;
            };
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
                s.messages.remove(&b.message);
                self.buffered_bytes = self.buffered_bytes.saturating_sub(size);
                self.outstanding_messages = self.outstanding_messages.saturating_sub(1);
                self.counters.messages_acked += 1;
                done.push(MessageId {
                    stream: b.stream,
                    number: b.message,
                });
            }
        }
        done
    }

    /// Blocks of packet `pn`, which was declared lost: those whose latest
    /// transmission was `pn` go back in the retransmission queue.
    pub fn on_lost(&mut self, lost: &[(u64, BlockRef)]) {
        for &(pn, b) in lost {
            if let Some(st) = self.state_mut(b) {
                if *st == BlockState::InFlight(pn) {
                    *st = BlockState::Lost;
                    self.retransmit.push_back(b);
                }
            }
        }
    }

    /// The packet that last carried `b`, if it is in flight.
    pub fn carrier(&self, b: BlockRef) -> Option<u64> {
        match self.state(b)? {
            BlockState::InFlight(pn) => Some(pn),
            _ => None,
        }
    }

    /// Every message the peer's application may not have received, in
    /// order (for `Closed`): on each stream, the oldest message not yet
    /// acknowledged and every message after it. A stream delivers in order,
    /// so a message queued behind an unacknowledged one was not delivered
    /// even if all its own blocks were acknowledged — the peer held them
    /// for reassembly and dropped them when the connection closed.
    pub fn undelivered(&self) -> Vec<MessageId> {
        self.streams
            .iter()
            .flat_map(|(&stream, s)| {
                let last = if s.exhausted {
                    Some(u32::MAX)
                } else {
                    s.next_number.checked_sub(1)
                };
                let numbers = match (s.messages.keys().next(), last) {
                    (Some(&first), Some(last)) => Some(first..=last),
                    _ => None,
                };
                numbers
                    .into_iter()
                    .flatten()
                    .map(move |number| MessageId { stream, number })
            })
            .collect()
    }

    /// Drop everything (the connection closed).
    pub fn clear(&mut self) {
        self.streams.clear();
        self.retransmit.clear();
        self.buffered_bytes = 0;
        self.outstanding_messages = 0;
        self.unacked_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn br(message: u32, block: u16) -> BlockRef {
        BlockRef {
            stream: 0,
            message,
            block,
        }
    }

    #[test]
    fn fragmentation_cuts_fixed_blocks_and_one_for_empty() {
        let mut s = SendState::new(100);
        s.enqueue(0, &[7u8; 250]).unwrap();
        s.enqueue(0, &[]).unwrap();
        let f = s.frame(br(0, 2)).unwrap();
        assert_eq!((f.block_count, f.data.len()), (3, 50));
        assert!(f.is_end_of_message());
        let f = s.frame(br(1, 0)).unwrap();
        assert_eq!((f.block_count, f.data.len()), (1, 0));
    }

    #[test]
    fn small_messages_coalesce_and_big_blocks_fill_packets() {
        let mut s = SendState::new(100);
        for _ in 0..5 {
            s.enqueue(0, &[1u8; 10]).unwrap();
        }
        // Room for 3 frames of 13 + 10 bytes.
        let t = s.take_frames(0, 3 * 23).unwrap();
        assert_eq!(t.blocks, [br(0, 0), br(1, 0), br(2, 0)]);
        assert!(!t.retransmission);
        let t = s.take_frames(1, 1000).unwrap();
        assert_eq!(t.blocks, [br(3, 0), br(4, 0)]);
        assert!(s.take_frames(2, 1000).is_none());
    }

    #[test]
    fn lost_blocks_are_retransmitted_first_and_acks_complete_messages() {
        let mut s = SendState::new(100);
        s.enqueue(0, &[1u8; 150]).unwrap();
        let a = s.take_frames(0, 113).unwrap();
        let b = s.take_frames(1, 113).unwrap();
        assert_eq!((a.blocks[0], b.blocks[0]), (br(0, 0), br(0, 1)));
        s.on_lost(&[(0, br(0, 0))]);
        // A stale loss report for a block re-sent since is ignored.
        let r = s.take_frames(2, 113).unwrap();
        assert!(r.retransmission);
        s.on_lost(&[(0, br(0, 0))]);
        assert!(!s.has_retransmission());
        assert!(s.on_acked(&[br(0, 1)]).is_empty());
        assert_eq!(
            s.on_acked(&[br(0, 0)]),
            [MessageId {
                stream: 0,
                number: 0
            }]
        );
        assert_eq!(s.outstanding_messages(), 0);
        assert!(s.undelivered().is_empty());
    }

    #[test]
    fn undelivered_runs_from_the_oldest_unacknowledged_message_on() {
        let mut s = SendState::new(100);
        for _ in 0..4 {
            s.enqueue(0, &[1u8; 10]).unwrap();
        }
        let t = s.take_frames(0, 1000).unwrap();
        assert_eq!(t.blocks.len(), 4);
        let id = |number| MessageId { stream: 0, number };
        // Messages 0 and 2 acknowledged, 1 not: 2 and 3 cannot have been
        // delivered in order yet, so 1, 2 and 3 are all undelivered.
        s.on_acked(&[br(0, 0), br(2, 0)]);
        assert_eq!(s.outstanding_messages(), 2);
        assert_eq!(s.undelivered(), [id(1), id(2), id(3)]);
        s.on_acked(&[br(1, 0)]);
        assert_eq!(s.undelivered(), [id(3)]);
        s.on_acked(&[br(3, 0)]);
        assert!(s.undelivered().is_empty());
    }

    #[test]
    fn peer_window_limits_new_data() {
        let mut s = SendState::new(100);
        s.enqueue(0, &[1u8; 300]).unwrap();
        s.set_peer_window(150);
        assert!(s.take_frames(0, 113).is_some());
        assert!(s.take_frames(1, 113).is_none());
        assert!(s.window_blocked());
        s.on_acked(&[br(0, 0)]);
        assert!(s.take_frames(1, 113).is_some());
    }
}
