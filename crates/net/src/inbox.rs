//! # A connection's inbox: one store, two ways to read it
//!
//! Delivered messages wait here until the application reads them, either
//! with `Connection::recv` (the oldest message of any stream) or with
//! `Connection::recv_on(stream)` (the oldest message of that stream). A
//! message is handed out once, to whichever read takes it first.
//!
//! Each stream has its own queue (so `recv_on` is O(log streams)); an
//! arrival-order list of `(stream, sequence)` gives `recv` the oldest
//! message of all. A message taken by `recv_on` leaves its entry in the
//! order list behind (stale): `recv` skips stale entries as it meets
//! them, and the list is compacted once stale entries outnumber live ones
//! (so it stays O(messages held) even when only `recv_on` reads). A
//! stream's queue stays in the map when it empties, with its capacity, so
//! a reader that keeps up causes no allocation per message; empty queues
//! are dropped once they outnumber the others (plus 64). Every operation
//! is amortized O(log streams).

use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

/// Messages of one stream, oldest first, with their arrival sequence.
#[derive(Debug, Default)]
struct StreamQueue {
    queue: VecDeque<(u64, Bytes)>,
    bytes: usize,
}

/// Delivered messages not yet read (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    streams: BTreeMap<u16, StreamQueue>,
    /// Arrival order; entries of messages taken by `pop_stream` are stale
    /// until `pop_any` skips them or a compaction drops them.
    order: VecDeque<(u16, u64)>,
    next_seq: u64,
    /// Streams whose queue is not empty.
    nonempty: usize,
    /// Messages held (live entries).
    len: usize,
    /// Bytes held.
    bytes: usize,
}

impl Inbox {
    /// Add a delivered message. O(log streams).
    pub(crate) fn push(&mut self, stream: u16, bytes: Bytes) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let q = self.streams.entry(stream).or_default();
        if q.queue.is_empty() {
            self.nonempty += 1;
        }
        q.bytes += bytes.len();
        self.bytes += bytes.len();
        q.queue.push_back((seq, bytes));
        self.order.push_back((stream, seq));
        self.len += 1;
    }

    /// The oldest message of any stream. Amortized O(log streams).
    pub(crate) fn pop_any(&mut self) -> Option<(u16, Bytes)> {
        while let Some((stream, seq)) = self.order.pop_front() {
            if self.is_live(stream, seq) {
                let bytes = self.take_front(stream)?;
                return Some((stream, bytes));
            }
        }
        None
    }

    /// The oldest message of `stream`. Amortized O(log streams).
    pub(crate) fn pop_stream(&mut self, stream: u16) -> Option<Bytes> {
        let bytes = self.take_front(stream)?;
        // Its order entry is stale now. Drop stale entries at the front
        // at once; compact when stale ones dominate.
        while let Some(&(s, seq)) = self.order.front() {
            if self.is_live(s, seq) {
                break;
            }
            self.order.pop_front();
        }
        if self.order.len() > 2 * self.len + 64 {
            let streams = &self.streams;
            self.order.retain(|&(s, seq)| live_in(streams, s, seq));
        }
        Some(bytes)
    }

    /// Bytes held, all streams.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes held of `stream`. O(log streams).
    pub(crate) fn stream_bytes(&self, stream: u16) -> usize {
        self.streams.get(&stream).map_or(0, |q| q.bytes)
    }

    /// Messages held, all streams.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Forget everything (the application let go of the connection).
    pub(crate) fn clear(&mut self) {
        *self = Inbox {
            next_seq: self.next_seq,
            ..Inbox::default()
        };
    }

    fn is_live(&self, stream: u16, seq: u64) -> bool {
        live_in(&self.streams, stream, seq)
    }

    fn take_front(&mut self, stream: u16) -> Option<Bytes> {
        let q = self.streams.get_mut(&stream)?;
        let (_, bytes) = q.queue.pop_front()?;
        q.bytes -= bytes.len();
        if q.queue.is_empty() {
            self.nonempty -= 1;
            if self.streams.len() > 2 * self.nonempty + 64 {
                self.streams.retain(|_, q| !q.queue.is_empty());
            }
        }
        self.bytes -= bytes.len();
        self.len -= 1;
        Some(bytes)
    }
}

/// An order entry is live while its message is still queued: a stream's
/// queue is consumed from the front, so every sequence at or after the
/// front's is still there.
fn live_in(streams: &BTreeMap<u16, StreamQueue>, stream: u16, seq: u64) -> bool {
    streams
        .get(&stream)
        .and_then(|q| q.queue.front())
        .is_some_and(|&(front, _)| front <= seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn b(x: u8) -> Bytes {
        Bytes::from(vec![x; usize::from(x) + 1])
    }

    #[test]
    fn any_and_per_stream_reads_share_one_store() {
        let mut i = Inbox::default();
        i.push(1, b(10));
        i.push(2, b(20));
        i.push(1, b(11));
        i.push(2, b(21));
        assert_eq!(i.pop_stream(2), Some(b(20)));
        assert_eq!(i.pop_any(), Some((1, b(10))));
        assert_eq!(i.pop_any(), Some((1, b(11))));
        assert_eq!(i.pop_stream(1), None);
        assert_eq!(i.pop_any(), Some((2, b(21))));
        assert_eq!(i.pop_any(), None);
        assert_eq!((i.len(), i.bytes()), (0, 0));
    }

    #[test]
    fn only_per_stream_reads_keep_the_order_list_bounded() {
        let mut i = Inbox::default();
        // Stream 1's one message is never read; stream 2 streams through.
        i.push(1, b(1));
        for _ in 0..10_000 {
            i.push(2, b(2));
            assert_eq!(i.pop_stream(2), Some(b(2)));
        }
        assert!(i.order.len() <= 2 * i.len() + 65, "{}", i.order.len());
        assert_eq!(i.pop_any(), Some((1, b(1))));
    }

    #[test]
    fn empty_stream_queues_are_kept_for_reuse_but_bounded() {
        let mut i = Inbox::default();
        for s in 0..1000u16 {
            i.push(s, b(1));
            assert_eq!(i.pop_any(), Some((s, b(1))));
            assert!(
                i.streams.len() <= 2 * i.nonempty + 65,
                "{}",
                i.streams.len()
            );
        }
        // One stream read as it arrives keeps its queue: no allocation.
        i.push(7, b(1));
        let cap = i.streams.get(&7).map(|q| q.queue.capacity());
        assert_eq!(i.pop_stream(7), Some(b(1)));
        assert_eq!(i.streams.get(&7).map(|q| q.queue.capacity()), cap);
    }

    proptest! {
        /// Against a model (one list in arrival order): every message is
        /// read exactly once; `pop_any` returns the oldest left,
        /// `pop_stream` the oldest of its stream; the byte counts agree.
        #[test]
        fn matches_a_single_list_model(ops in proptest::collection::vec((0u8..4, 0u16..4), 0..400)) {
            let mut i = Inbox::default();
            let mut model: Vec<(u16, Bytes)> = Vec::new();
            let mut n = 0u8;
            for (op, s) in ops {
                match op {
                    0 | 1 => {
                        n = n.wrapping_add(1);
                        i.push(s, b(n));
                        model.push((s, b(n)));
                    }
                    2 => {
                        let want = (!model.is_empty()).then(|| model.remove(0));
                        prop_assert_eq!(i.pop_any(), want);
                    }
                    _ => {
                        let want = model.iter().position(|m| m.0 == s).map(|p| model.remove(p).1);
                        prop_assert_eq!(i.pop_stream(s), want);
                    }
                }
                prop_assert_eq!(i.len(), model.len());
                prop_assert_eq!(i.nonempty, i.streams.values().filter(|q| !q.queue.is_empty()).count());
                prop_assert_eq!(i.bytes(), model.iter().map(|m| m.1.len()).sum::<usize>());
                prop_assert_eq!(i.stream_bytes(s), model.iter().filter(|m| m.0 == s).map(|m| m.1.len()).sum::<usize>());
            }
        }
    }
}
