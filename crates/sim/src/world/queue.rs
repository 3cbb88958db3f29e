//! [`DropTailQueue`]: the one transmit queue of every link model
//! (point-to-point, trace, 802.11 interface, mmWave access link) and of
//! the controller lab's bottleneck (`cclab`).
//!
//! A FIFO of packets (the link crate's byte-counted [`Fifo`]) with a
//! [`QueueLimit`] checked on arrival: a packet the limit refuses is handed
//! back (tail drop), never an older one. The queue keeps its byte count so a limit in bytes and the link's backlog
//! cost O(1), and it does the accounting every link did for itself before:
//! the queue counters of [`LinkStats`] on arrival, and on departure the
//! "processed load" of a forward DATA packet leaving its first hop.
//! How the head is served (rate, trace, medium access, channel capacity)
//! stays with the link model. [`LinkQueue`] is the same for the
//! point-to-point and trace links, whose queue may be an AQM.

use super::link::{DropReason, LinkOutput, LinkStats};
use super::packet::Packet;
use crate::rng::SimRng;
use crate::units::Dur;
use peregrine_cc::Time;
use peregrine_link::aqm::{AqmConfig, Qdisc, Refused};
use peregrine_link::fifo::Fifo;
use peregrine_link::uniform::RandSource;
use serde::Deserialize;

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

    /// The drop-tail limit this size means on a direction of mean rate
    /// `rate_bps` and one-way delay `delay_ns`: `packets` or `bytes` as
    /// given (no floor); otherwise `bdp` (default 1) × the rate × the RTT
    /// (`rtt`, default twice the one-way delay), keeping at least
    /// `floor_packets`. The one rule of the simulator's link builder and
    /// the emulator's links (`peregrine emu`), so both size a queue alike.
    /// O(1).
    pub fn limit(&self, rate_bps: f64, delay_ns: u64, floor_packets: u64) -> QueueLimit {
        if let Some(p) = self.packets {
            QueueLimit::packets(p)
        } else if let Some(b) = self.bytes {
            QueueLimit {
                packets: None,
                bytes: Some(b),
                floor_packets: 0,
            }
        } else {
            let rtt_ns = self.rtt.map_or(2 * delay_ns, |r| r.0);
            let bdp_bytes = self.bdp.unwrap_or(1.0) * rate_bps * rtt_ns as f64 / 8e9;
            QueueLimit {
                packets: None,
                bytes: Some(bdp_bytes.max(0.0) as u64),
                floor_packets,
            }
        }
    }
}

/// The drop-tail limit: the link crate's ([`peregrine_link::fifo::QueueLimit`]).
pub use peregrine_link::fifo::QueueLimit;

/// A drop-tail FIFO of packets with its byte count.
#[derive(Debug)]
pub struct DropTailQueue {
    limit: QueueLimit,
    packets: Fifo<Packet>,
}

impl DropTailQueue {
    /// An empty queue with `limit`.
    pub fn new(limit: QueueLimit) -> DropTailQueue {
        DropTailQueue {
            limit,
            packets: Fifo::new(),
        }
    }

    /// Append `pkt` if the limit admits it (counting `enqueued_packets`
    /// and `max_queue_packets` in `stats`), else hand it back as
    /// [`DropReason::QueueFull`] (counting `queue_drops`). O(1) amortized.
    pub fn push(&mut self, pkt: Packet, stats: &mut LinkStats) -> Result<(), (Packet, DropReason)> {
        if !self.packets.admits(&self.limit, &pkt) {
            stats.queue_drops += 1;
            return Err((pkt, DropReason::QueueFull));
        }
        self.packets.push(pkt);
        stats.enqueued_packets += 1;
        stats.max_queue_packets = stats.max_queue_packets.max(self.packets.len() as u64);
        Ok(())
    }

    /// Take the head: a forward DATA packet leaving its first hop is
    /// recorded in `out.processed` (once: it is then marked as having
    /// left). O(1).
    pub fn pop(&mut self, out: &mut LinkOutput) -> Option<Packet> {
        self.pop_front().map(|p| leave_queue(p, out))
    }

    /// Take the head without the processed-load accounting of
    /// [`pop`](Self::pop), for drivers that have none (the controller
    /// lab's bottleneck). O(1).
    pub fn pop_front(&mut self) -> Option<Packet> {
        self.packets.pop()
    }

    /// Empty the queue (a route flush), handing back what it held in
    /// order. O(packets held).
    pub fn drain(&mut self) -> impl Iterator<Item = Packet> + '_ {
        self.packets.drain()
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
        (self.packets.len() as u64, self.packets.bytes())
    }
}

/// A packet leaves a queue for service: a forward DATA packet leaving its
/// first hop is recorded in `out.processed` (once: it is then marked as
/// having left). O(1).
fn leave_queue(mut p: Packet, out: &mut LinkOutput) -> Packet {
    if p.forward && p.is_data && !p.left_first_hop {
        out.processed.push((p.flow, p.wire_bytes));
    }
    p.left_first_hop = true;
    p
}

/// The queue of a point-to-point or trace link direction: the link crate's
/// [`Qdisc`] (drop-tail or an AQM) with the accounting of
/// [`DropTailQueue`] — the same counters on arrival, the same processed
/// load on departure — plus the AQM's CE marks and drops, which it draws
/// from the direction's own generator (`link/<name>/<dir>/aqm`). With
/// [`AqmConfig::DropTail`] it behaves exactly as a [`DropTailQueue`].
#[derive(Debug)]
pub struct LinkQueue {
    qdisc: Qdisc<Packet>,
    uniform: RandSource<SimRng>,
    /// Dropped inside the qdisc, not yet reported.
    dropped: Vec<Packet>,
}

impl LinkQueue {
    /// An empty queue with `limit` under `aqm`; `rate_bps` is the link's
    /// rate if fixed (RED's idle decay).
    pub fn new(aqm: AqmConfig, limit: QueueLimit, rate_bps: Option<u64>, rng: SimRng) -> LinkQueue {
        LinkQueue {
            qdisc: Qdisc::new(aqm, limit, rate_bps),
            uniform: RandSource(rng),
            dropped: Vec::new(),
        }
    }

    /// Whether the head can be looked at before it is dequeued (drop-tail,
    /// and the AQMs that decide on arrival): a trace server serves it in
    /// place. O(1).
    pub fn peekable(&self) -> bool {
        matches!(
            self.qdisc.config(),
            AqmConfig::DropTail | AqmConfig::Pie(_) | AqmConfig::Red(_)
        )
    }

    /// Offer `pkt` at `now`, counting as [`DropTailQueue::push`] does; an
    /// AQM's refusal is [`DropReason::Aqm`]. FQ-CoDel's drops from its
    /// fattest flow at the limit are reported (as [`DropReason::QueueFull`])
    /// by the next [`pop`](Self::pop) or [`flush_drops`](Self::flush_drops).
    /// O(1) amortized.
    pub fn push(
        &mut self,
        now: Time,
        pkt: Packet,
        stats: &mut LinkStats,
    ) -> Result<(), (Packet, DropReason)> {
        let before = self.dropped.len();
        let r = self
            .qdisc
            .enqueue(now, pkt, &mut self.uniform, &mut self.dropped);
        stats.queue_drops += (self.dropped.len() - before) as u64;
        self.sync(stats);
        match r {
            Ok(()) => {
                stats.enqueued_packets += 1;
                stats.max_queue_packets = stats.max_queue_packets.max(self.qdisc.backlog().0);
                Ok(())
            }
            Err((p, Refused::Full)) => {
                stats.queue_drops += 1;
                Err((p, DropReason::QueueFull))
            }
            Err((p, Refused::Aqm)) => Err((p, DropReason::Aqm)),
        }
    }

    /// Take the next packet to serve at `now` (processed load as
    /// [`DropTailQueue::pop`]); what the AQM drops on the way goes to
    /// `out.dropped`. O(1) amortized.
    pub fn pop(
        &mut self,
        now: Time,
        out: &mut LinkOutput,
        stats: &mut LinkStats,
    ) -> Option<Packet> {
        self.flush_drops(out);
        let p = self
            .qdisc
            .dequeue(now, &mut self.uniform, &mut self.dropped);
        for d in self.dropped.drain(..) {
            out.dropped.push((d, DropReason::Aqm));
        }
        self.sync(stats);
        p.map(|p| leave_queue(p, out))
    }

    /// Report FQ-CoDel's overflow drops (as [`DropReason::QueueFull`]).
    pub fn flush_drops(&mut self, out: &mut LinkOutput) {
        for d in self.dropped.drain(..) {
            out.dropped.push((d, DropReason::QueueFull));
        }
    }

    fn sync(&self, stats: &mut LinkStats) {
        let s = self.qdisc.stats();
        stats.ce_marked = s.ce_marked;
        stats.aqm_dropped = s.aqm_dropped;
    }

    /// The head, if [`peekable`](Self::peekable). O(1).
    pub fn front(&self) -> Option<&Packet> {
        self.qdisc.front()
    }

    /// Whether the queue is empty. O(1).
    pub fn is_empty(&self) -> bool {
        self.qdisc.is_empty()
    }

    /// Packets and bytes waiting. O(1).
    pub fn backlog(&self) -> (u64, u64) {
        self.qdisc.backlog()
    }

    /// The AQM's name, `None` for drop-tail.
    pub fn aqm_name(&self) -> Option<&'static str> {
        match self.qdisc.config() {
            AqmConfig::DropTail => None,
            c => Some(c.name()),
        }
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
            ecn: None,
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
