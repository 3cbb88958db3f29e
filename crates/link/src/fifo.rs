//! The byte-counted FIFO every link queue is built on, and its drop-tail
//! limit.
//!
//! [`Fifo`] keeps its items in arrival order with their total size, so a
//! limit in bytes and a link's backlog cost O(1). The simulator's queues
//! hold packets in it (`peregrine_sim::world::queue::DropTailQueue`); the
//! harness's pipes hold only what a serialiser needs to know about the
//! datagrams ahead (when each leaves the wire, its size) — a virtual queue.

use std::collections::VecDeque;

/// Anything that occupies a queue: its size on the wire.
pub trait WireSize {
    /// Bytes counted against a queue limit and a serialiser.
    fn wire_bytes(&self) -> u64;
}

/// The drop-tail limit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct QueueLimit {
    /// At most this many packets (if set).
    pub packets: Option<u64>,
    /// At most this many bytes (if set) — but a queue holding fewer than
    /// `floor_packets` packets always accepts one more.
    pub bytes: Option<u64>,
    /// The floor (BDP-sized queues).
    pub floor_packets: u64,
}

impl QueueLimit {
    /// A limit of `n` packets, no byte limit.
    pub fn packets(n: u64) -> QueueLimit {
        QueueLimit {
            packets: Some(n),
            bytes: None,
            floor_packets: 0,
        }
    }

    /// A limit of `n` bytes, no packet limit and no floor.
    pub fn bytes(n: u64) -> QueueLimit {
        QueueLimit {
            packets: None,
            bytes: Some(n),
            floor_packets: 0,
        }
    }

    /// No limit.
    pub fn unlimited() -> QueueLimit {
        QueueLimit {
            packets: None,
            bytes: None,
            floor_packets: 0,
        }
    }

    /// Whether a queue holding `packets` packets and `bytes` bytes takes
    /// one more of `size` bytes. A packet limit, when set, wins over a
    /// byte limit. O(1).
    pub fn admits(&self, packets: u64, bytes: u64, size: u64) -> bool {
        if let Some(p) = self.packets {
            return packets < p;
        }
        if let Some(b) = self.bytes {
            return packets < self.floor_packets || bytes.saturating_add(size) <= b;
        }
        true
    }
}

/// A FIFO with its byte count.
#[derive(Clone, Debug)]
pub struct Fifo<T> {
    items: VecDeque<T>,
    bytes: u64,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo {
            items: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl<T: WireSize> Fifo<T> {
    /// An empty FIFO.
    pub fn new() -> Fifo<T> {
        Fifo::default()
    }

    /// Whether `limit` admits `item` now. O(1).
    pub fn admits(&self, limit: &QueueLimit, item: &T) -> bool {
        limit.admits(self.items.len() as u64, self.bytes, item.wire_bytes())
    }

    /// Append. O(1) amortized.
    pub fn push(&mut self, item: T) {
        self.bytes += item.wire_bytes();
        self.items.push_back(item);
    }

    /// Take the head. O(1).
    pub fn pop(&mut self) -> Option<T> {
        let item = self.items.pop_front()?;
        self.bytes -= item.wire_bytes();
        Some(item)
    }

    /// The head. O(1).
    pub fn front(&self) -> Option<&T> {
        self.items.front()
    }

    /// The tail. O(1).
    pub fn back(&self) -> Option<&T> {
        self.items.back()
    }

    /// Take the head while `leaves` says so. O(items taken).
    pub fn pop_while(&mut self, mut leaves: impl FnMut(&T) -> bool) {
        while self.items.front().is_some_and(&mut leaves) {
            self.pop();
        }
    }

    /// Empty the FIFO, handing back its items in order. O(items).
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.bytes = 0;
        self.items.drain(..)
    }

    /// Whether it is empty. O(1).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Items held. O(1).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Bytes held. O(1).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The items, head first. O(1).
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl WireSize for u64 {
        fn wire_bytes(&self) -> u64 {
            *self
        }
    }

    #[test]
    fn counts_bytes_and_applies_the_limit() {
        let mut f: Fifo<u64> = Fifo::new();
        let limit = QueueLimit {
            packets: None,
            bytes: Some(1000),
            floor_packets: 2,
        };
        assert!(f.admits(&limit, &1500));
        f.push(1500);
        f.push(1500);
        assert!(!f.admits(&limit, &10), "over the byte limit, at the floor");
        assert_eq!((f.len(), f.bytes()), (2, 3000));
        assert_eq!(f.pop(), Some(1500));
        f.pop_while(|_| true);
        assert!(f.is_empty() && f.bytes() == 0);
        assert!(QueueLimit::packets(1).admits(0, 0, 9) && !QueueLimit::packets(1).admits(1, 0, 9));
    }
}
