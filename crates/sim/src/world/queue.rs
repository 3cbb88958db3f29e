//! [`DropTailQueue`]: the one transmit queue of every link model
//! (point-to-point, trace, 802.11 interface, mmWave access link) and of
//! the controller lab's bottleneck (`cclab`).
//!
//! A FIFO of packets with a [`QueueLimit`] checked on arrival: a packet
//! the limit refuses is handed back (tail drop), never an older one. The
//! queue keeps its byte count so a limit in bytes and the link's backlog
//! cost O(1), and it does the accounting every link did for itself before:
//! the queue counters of [`LinkStats`] on arrival, and on departure the
//! "processed load" of a forward DATA packet leaving its first hop.
//! How the head is served (rate, trace, medium access, channel capacity)
//! stays with the link model.

use super::link::{DropReason, LinkOutput, LinkStats};
use super::packet::Packet;
use crate::units::Dur;
use serde::Deserialize;
use std::collections::VecDeque;

/// A queue size: exactly one of `packets`, `bytes`, `bdp`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// Limit in packets.
    #[serde(default)]
    pub packets: Option<u64>,
    /// Limit in bytes (wire bytes).
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Limit in multiples of the bandwidth-delay product.
    #[serde(default)]
    pub bdp: Option<f64>,
    /// The round-trip time the BDP is computed with (default: twice this
    /// link's one-way delay).
    #[serde(default)]
    pub rtt: Option<Dur>,
    /// Floor for a BDP-sized queue, packets (default `net.queue_floor_packets`).
    #[serde(default)]
    pub min_packets: Option<u64>,
}

impl QueueConfig {
    /// A queue of `bdp` × the bandwidth-delay product. O(1).
    pub fn bdp(bdp: f64) -> QueueConfig {
        QueueConfig {
            bdp: Some(bdp),
            ..QueueConfig::default()
        }
    }
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

    /// Whether a queue holding `packets` packets and `bytes` bytes takes
    /// one more of `size` bytes. A packet limit, when set, wins over a
    /// byte limit. O(1).
    pub fn admits(&self, packets: u64, bytes: u64, size: u32) -> bool {
        if let Some(p) = self.packets {
            return packets < p;
        }
        if let Some(b) = self.bytes {
            return packets < self.floor_packets || bytes + u64::from(size) <= b;
        }
        true
    }
}

/// A drop-tail FIFO of packets with its byte count.
#[derive(Debug)]
pub struct DropTailQueue {
    limit: QueueLimit,
    packets: VecDeque<Packet>,
    bytes: u64,
}

impl DropTailQueue {
    /// An empty queue with `limit`.
    pub fn new(limit: QueueLimit) -> DropTailQueue {
        DropTailQueue {
            limit,
            packets: VecDeque::new(),
            bytes: 0,
        }
    }

    /// Append `pkt` if the limit admits it (counting `enqueued_packets`
    /// and `max_queue_packets` in `stats`), else hand it back as
    /// [`DropReason::QueueFull`] (counting `queue_drops`). O(1) amortized.
    pub fn push(&mut self, pkt: Packet, stats: &mut LinkStats) -> Result<(), (Packet, DropReason)> {
        if !self
            .limit
            .admits(self.packets.len() as u64, self.bytes, pkt.wire_bytes)
        {
            stats.queue_drops += 1;
            return Err((pkt, DropReason::QueueFull));
        }
        self.bytes += u64::from(pkt.wire_bytes);
        self.packets.push_back(pkt);
        stats.enqueued_packets += 1;
        stats.max_queue_packets = stats.max_queue_packets.max(self.packets.len() as u64);
        Ok(())
    }

    /// Take the head: a forward DATA packet leaving its first hop is
    /// recorded in `out.processed` (once: it is then marked as having
    /// left). O(1).
    pub fn pop(&mut self, out: &mut LinkOutput) -> Option<Packet> {
        let mut p = self.pop_front()?;
        if p.forward && p.is_data && !p.left_first_hop {
            out.processed.push((p.flow, p.wire_bytes));
        }
        p.left_first_hop = true;
        Some(p)
    }

    /// Take the head without the processed-load accounting of
    /// [`pop`](Self::pop), for drivers that have none (the controller
    /// lab's bottleneck). O(1).
    pub fn pop_front(&mut self) -> Option<Packet> {
        let p = self.packets.pop_front()?;
        self.bytes -= u64::from(p.wire_bytes);
        Some(p)
    }

    /// Empty the queue (a route flush), handing back what it held in
    /// order. O(packets held).
    pub fn drain(&mut self) -> impl Iterator<Item = Packet> + '_ {
        self.bytes = 0;
        self.packets.drain(..)
    }

    /// The head packet, if any. O(1).
    pub fn front(&self) -> Option<&Packet> {
        self.packets.front()
    }

    /// Whether the queue is empty. O(1).
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// Packets and bytes waiting. O(1).
    pub fn backlog(&self) -> (u64, u64) {
        (self.packets.len() as u64, self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use peregrine_cc::Time;

    fn pkt(id: u64, wire_bytes: u32) -> Packet {
        Packet {
            id,
            flow: 3,
            forward: true,
            is_data: true,
            src: 0,
            dst: 1,
            next_hop: 1,
            dst_port: 1,
            src_port: 1,
            wire_bytes,
            created: Time::ZERO,
            left_first_hop: false,
            hops: 0,
            payload: Vec::new(),
        }
    }

    #[test]
    fn a_packet_limit_drops_the_arrival_and_counts_it() {
        let mut q = DropTailQueue::new(QueueLimit::packets(2));
        let mut s = LinkStats::default();
        assert!(q.push(pkt(0, 100), &mut s).is_ok());
        assert!(q.push(pkt(1, 100), &mut s).is_ok());
        let (p, why) = q.push(pkt(2, 100), &mut s).unwrap_err();
        assert_eq!((p.id, why), (2, DropReason::QueueFull));
        assert_eq!(
            (s.enqueued_packets, s.queue_drops, s.max_queue_packets),
            (2, 1, 2)
        );
        assert_eq!(q.backlog(), (2, 200));
    }

    #[test]
    fn a_byte_limit_keeps_its_floor_and_the_head_leaves_first() {
        let limit = QueueLimit {
            packets: None,
            bytes: Some(1000),
            floor_packets: 2,
        };
        let mut q = DropTailQueue::new(limit);
        let mut s = LinkStats::default();
        // Two packets above the byte limit still fit under the floor.
        assert!(q.push(pkt(0, 1500), &mut s).is_ok());
        assert!(q.push(pkt(1, 1500), &mut s).is_ok());
        assert!(q.push(pkt(2, 10), &mut s).is_err());
        let mut out = LinkOutput::default();
        let head = q.pop(&mut out).expect("head");
        assert_eq!(head.id, 0);
        assert!(head.left_first_hop);
        assert_eq!(out.processed, vec![(3, 1500)]);
        assert_eq!(q.front().map(|p| p.id), Some(1));
        assert_eq!(q.backlog(), (1, 1500));
    }
}
