//! The sent-packet scoreboard and loss detection (RFC 9002 §6.1 style).
//!
//! Only packets that count against the congestion window (DATA) are
//! tracked here. A tracked packet leaves the scoreboard when it is
//! acknowledged or declared lost; lost packets are remembered a little
//! longer (bounded) so that a late acknowledgement proves the loss spurious.
//!
//! A packet is declared lost once it is unacknowledged and either
//!
//! * **packet threshold**: a packet sent at least `packet_threshold` (3)
//!   packet numbers later has been acknowledged, or
//! * **time threshold**: it was sent more than `9/8 · max(SRTT, latest RTT)`
//!   before now and a later packet has been acknowledged,
//!
//! or when the peer NACKs it, or when the retransmission timer fires.

use peregrine_cc::rate::PacketRateInfo;
use peregrine_cc::Time;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// How many declared-lost packets are remembered for spurious-loss detection.
const LOST_MEMORY: usize = 4096;

/// One block of one message of one stream: the unit of retransmission.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockRef {
    /// The stream.
    pub stream: u16,
    /// The per-stream message number.
    pub message: u32,
    /// The block's index in the message.
    pub block: u16,
}

impl BlockRef {
    /// A placeholder (stream 0, message 0, block 0) for unused slots.
    pub const ZERO: BlockRef = BlockRef {
        stream: 0,
        message: 0,
        block: 0,
    };
}

/// How many blocks a [`BlockList`] holds without allocating.
const INLINE_BLOCKS: usize = 4;

/// The blocks one DATA packet carried, in frame order: up to four inline
/// (a full-size packet carries one block, a few small messages share one),
/// more on the heap. Recording a sent packet then allocates nothing.
#[derive(Clone)]
pub struct BlockList {
    len: usize,
    inline: [BlockRef; INLINE_BLOCKS],
    spill: Vec<BlockRef>,
}

impl BlockList {
    /// An empty list (no allocation).
    pub const fn new() -> BlockList {
        BlockList {
            len: 0,
            inline: [BlockRef::ZERO; INLINE_BLOCKS],
            spill: Vec::new(),
        }
    }

    /// Append `b`; O(1) amortised, allocates only past four blocks.
    pub fn push(&mut self, b: BlockRef) {
        if self.len < INLINE_BLOCKS {
            self.inline[self.len] = b;
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.inline);
            }
            self.spill.push(b);
        }
        self.len += 1;
    }

    /// The blocks, in frame order.
    pub fn as_slice(&self) -> &[BlockRef] {
        if self.len <= INLINE_BLOCKS {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }
}

impl Default for BlockList {
    fn default() -> BlockList {
        BlockList::new()
    }
}

impl std::ops::Deref for BlockList {
    type Target = [BlockRef];
    fn deref(&self) -> &[BlockRef] {
        self.as_slice()
    }
}

impl std::fmt::Debug for BlockList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl PartialEq for BlockList {
    fn eq(&self, other: &BlockList) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for BlockList {}

impl<const N: usize> PartialEq<[BlockRef; N]> for BlockList {
    fn eq(&self, other: &[BlockRef; N]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<BlockRef>> for BlockList {
    fn eq(&self, other: &Vec<BlockRef>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<'a> IntoIterator for &'a BlockList {
    type Item = &'a BlockRef;
    type IntoIter = std::slice::Iter<'a, BlockRef>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl FromIterator<BlockRef> for BlockList {
    fn from_iter<I: IntoIterator<Item = BlockRef>>(iter: I) -> BlockList {
        let mut l = BlockList::new();
        for b in iter {
            l.push(b);
        }
        l
    }
}

impl From<Vec<BlockRef>> for BlockList {
    fn from(v: Vec<BlockRef>) -> BlockList {
        v.into_iter().collect()
    }
}

/// What the scoreboard remembers about one sent DATA packet.
#[derive(Clone, Debug)]
pub struct SentPacket {
    /// When it was sent.
    pub time_sent: Time,
    /// Datagram length, bytes.
    pub size: u32,
    /// It carried ST_RET: it takes no RTT sample (Karn).
    pub retransmission: bool,
    /// The blocks it carried.
    pub blocks: BlockList,
    /// The delivery-rate sampler's snapshot at send time.
    pub rate: PacketRateInfo,
}

/// A packet declared lost, remembered so a late ACK can prove it spurious
/// and credit its blocks.
#[derive(Clone, Debug)]
struct LostRecord {
    size: u32,
    blocks: BlockList,
}

/// One sent DATA packet in the scoreboard's queue; `None` once it was
/// acknowledged or declared lost (a hole until the front passes it).
#[derive(Debug)]
struct Slot {
    pn: u64,
    packet: Option<SentPacket>,
}

/// The scoreboard of outstanding DATA packets.
///
/// Sent packets are kept in a queue in packet-number order (packets are
/// sent in that order, so recording one is a `push_back`; other packet
/// types take numbers too, so a packet is found by binary search, not by
/// subtraction). Acknowledged and lost packets leave holes that are
/// dropped as soon as they reach the front, so the front is always the
/// oldest outstanding packet. Declared-lost packets are remembered apart
/// (losses are rare; the memory is bounded).
#[derive(Debug, Default)]
pub struct SentPackets {
    queue: VecDeque<Slot>,
    /// Slots of `queue` that hold a packet.
    outstanding: usize,
    bytes_in_flight: u64,
    lost: BTreeMap<u64, LostRecord>,
    largest_acked: Option<u64>,
    loss_time: Option<Time>,
}

/// The result of applying one ACK to the scoreboard (reused from ACK to
/// ACK: [`SentPackets::on_ack_into`] clears it, keeping its capacity).
#[derive(Debug, Default)]
pub struct AckedPackets {
    /// Packets acknowledged for the first time, ascending.
    pub newly_acked: Vec<(u64, SentPacket)>,
    /// Packets that had been declared lost and are acknowledged now.
    pub spurious: Vec<u64>,
    /// Bytes of `spurious`.
    pub spurious_bytes: u64,
    /// The blocks `spurious` carried: the peer has them after all, even if
    /// their retransmission is lost too.
    pub spurious_blocks: Vec<BlockRef>,
}

impl AckedPackets {
    /// Empty it, keeping the allocations.
    pub fn clear(&mut self) {
        self.newly_acked.clear();
        self.spurious.clear();
        self.spurious_bytes = 0;
        self.spurious_blocks.clear();
    }
}

impl SentPackets {
    /// An empty scoreboard.
    pub fn new() -> SentPackets {
        SentPackets::default()
    }

    /// The queue index of `pn`'s slot, if it has one. O(log n).
    fn index_of(&self, pn: u64) -> Option<usize> {
        let i = self.queue.partition_point(|s| s.pn < pn);
        (self.queue.get(i)?.pn == pn).then_some(i)
    }

    /// Drop the holes at the front. O(holes dropped).
    fn trim_front(&mut self) {
        while self.queue.front().is_some_and(|s| s.packet.is_none()) {
            self.queue.pop_front();
        }
    }

    /// Track a packet just sent. O(1) amortised for packet numbers sent in
    /// ascending order (always, from [`Recovery`](super::Recovery)); a
    /// packet number already tracked is replaced.
    pub fn on_sent(&mut self, pn: u64, packet: SentPacket) {
        self.bytes_in_flight += u64::from(packet.size);
        if self.queue.back().is_none_or(|s| s.pn < pn) {
            self.queue.push_back(Slot {
                pn,
                packet: Some(packet),
            });
            self.outstanding += 1;
            return;
        }
        // Out of order (never in practice): keep the queue sorted.
        let i = self.queue.partition_point(|s| s.pn < pn);
        match self.queue.get_mut(i) {
            Some(s) if s.pn == pn => match s.packet.replace(packet) {
                Some(old) => {
                    self.bytes_in_flight = self.bytes_in_flight.saturating_sub(u64::from(old.size));
                }
                None => self.outstanding += 1,
            },
            _ => {
                self.queue.insert(
                    i,
                    Slot {
                        pn,
                        packet: Some(packet),
                    },
                );
                self.outstanding += 1;
            }
        }
    }

    /// Bytes of tracked packets neither acknowledged nor declared lost.
    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    /// Number of tracked packets outstanding.
    pub fn packets_in_flight(&self) -> usize {
        self.outstanding
    }

    /// Whether nothing is outstanding.
    pub fn is_empty(&self) -> bool {
        self.outstanding == 0
    }

    /// The largest packet number acknowledged so far.
    pub fn largest_acked(&self) -> Option<u64> {
        self.largest_acked
    }

    /// Lowest outstanding packet number, or `next_pn` if none. O(1).
    pub fn snd_una(&self, next_pn: u64) -> u64 {
        self.queue.front().map_or(next_pn, |s| s.pn)
    }

    /// The oldest outstanding packet (what a send-gate probe retransmits). O(1).
    pub fn oldest(&self) -> Option<(u64, &SentPacket)> {
        let s = self.queue.front()?;
        Some((s.pn, s.packet.as_ref()?))
    }

    /// When the time threshold will declare the next packet lost.
    pub fn loss_time(&self) -> Option<Time> {
        self.loss_time
    }

    /// Whether `pn` is outstanding (sent, neither acknowledged nor lost). O(log n).
    pub fn is_outstanding(&self, pn: u64) -> bool {
        self.index_of(pn)
            .is_some_and(|i| self.queue.get(i).is_some_and(|s| s.packet.is_some()))
    }

    /// Outstanding packet numbers in `lo..=hi`, ascending. O(log n + k).
    pub fn outstanding_in(&self, lo: u64, hi: u64) -> Vec<u64> {
        if lo > hi {
            return Vec::new();
        }
        let from = self.queue.partition_point(|s| s.pn < lo);
        self.queue
            .range(from..)
            .take_while(|s| s.pn <= hi)
            .filter(|s| s.packet.is_some())
            .map(|s| s.pn)
            .collect()
    }

    /// Take the packet out of slot `i` (no trimming).
    fn take_at(&mut self, i: usize) -> Option<SentPacket> {
        let p = self.queue.get_mut(i)?.packet.take()?;
        self.outstanding -= 1;
        self.bytes_in_flight = self.bytes_in_flight.saturating_sub(u64::from(p.size));
        Some(p)
    }

    fn remove(&mut self, pn: u64) -> Option<SentPacket> {
        let i = self.index_of(pn)?;
        let p = self.take_at(i);
        self.trim_front();
        p
    }

    /// Apply acknowledged ranges (inclusive `(lo, hi)` pairs, any order).
    /// The caller has checked that no range reaches past the packets sent.
    pub fn on_ack(&mut self, ranges: &[(u64, u64)]) -> AckedPackets {
        let mut out = AckedPackets::default();
        self.on_ack_into(ranges, &mut out);
        out
    }

    /// [`on_ack`](Self::on_ack) into a reused `out` (cleared first): no
    /// allocation once `out` has grown. O(r·log n + k log k) for r ranges
    /// acknowledging k packets.
    pub fn on_ack_into(&mut self, ranges: &[(u64, u64)], out: &mut AckedPackets) {
        out.clear();
        for &(lo, hi) in ranges {
            if lo > hi {
                continue;
            }
            self.largest_acked = Some(self.largest_acked.map_or(hi, |l| l.max(hi)));
            let mut i = self.queue.partition_point(|s| s.pn < lo);
            while let Some(pn) = self.queue.get(i).map(|s| s.pn).filter(|&pn| pn <= hi) {
                if let Some(p) = self.take_at(i) {
                    out.newly_acked.push((pn, p));
                }
                i += 1;
            }
            self.trim_front();
            while let Some(pn) = self.lost.range(lo..=hi).next().map(|(k, _)| *k) {
                if let Some(r) = self.lost.remove(&pn) {
                    out.spurious.push(pn);
                    out.spurious_bytes += u64::from(r.size);
                    out.spurious_blocks.extend_from_slice(&r.blocks);
                }
            }
        }
        // Unstable sorts do not allocate; packet numbers are unique.
        if !out.newly_acked.is_sorted_by_key(|(pn, _)| *pn) {
            out.newly_acked.sort_unstable_by_key(|(pn, _)| *pn);
        }
        out.spurious.sort_unstable();
    }

    /// Declare one packet lost (NACK, probe); `None` if it is not outstanding.
    pub fn declare_lost(&mut self, pn: u64) -> Option<SentPacket> {
        let p = self.remove(pn)?;
        self.remember_lost(pn, p.size, p.blocks.clone());
        Some(p)
    }

    /// Declare every outstanding packet lost (retransmission timeout).
    pub fn declare_all_lost(&mut self) -> Vec<(u64, SentPacket)> {
        let mut out = Vec::new();
        self.declare_all_lost_into(&mut out);
        out
    }

    /// [`declare_all_lost`](Self::declare_all_lost), appending to `out`. O(n).
    pub fn declare_all_lost_into(&mut self, out: &mut Vec<(u64, SentPacket)>) {
        self.loss_time = None;
        for i in 0..self.queue.len() {
            let Some(pn) = self.queue.get(i).map(|s| s.pn) else {
                break;
            };
            if let Some(p) = self.take_at(i) {
                self.remember_lost(pn, p.size, p.blocks.clone());
                out.push((pn, p));
            }
        }
        self.queue.clear();
    }

    fn remember_lost(&mut self, pn: u64, size: u32, blocks: BlockList) {
        self.lost.insert(pn, LostRecord { size, blocks });
        while self.lost.len() > LOST_MEMORY {
            self.lost.pop_first();
        }
    }

    /// Packet- and time-threshold detection after an ACK or when the loss
    /// timer fires. `loss_delay` is `None` before the first RTT sample
    /// (then only the packet threshold applies). Sets the loss timer for
    /// the earliest packet that is not yet lost but may become so by time.
    pub fn detect_lost(
        &mut self,
        now: Time,
        loss_delay: Option<Duration>,
        packet_threshold: u64,
    ) -> Vec<(u64, SentPacket)> {
        let mut out = Vec::new();
        self.detect_lost_into(now, loss_delay, packet_threshold, &mut out);
        out
    }

    /// [`detect_lost`](Self::detect_lost), appending the lost packets to
    /// `out` (ascending). O(outstanding packets below the largest acknowledged).
    pub fn detect_lost_into(
        &mut self,
        now: Time,
        loss_delay: Option<Duration>,
        packet_threshold: u64,
        out: &mut Vec<(u64, SentPacket)>,
    ) {
        self.loss_time = None;
        let Some(largest) = self.largest_acked else {
            return;
        };
        let mut next_loss_time: Option<Time> = None;
        let mut i = 0;
        while let Some(slot) = self.queue.get(i) {
            let pn = slot.pn;
            if pn >= largest {
                break;
            }
            i += 1;
            let Some(p) = &slot.packet else { continue };
            let by_packets = largest - pn >= packet_threshold;
            let by_time = loss_delay.is_some_and(|d| p.time_sent + d <= now);
            if by_packets || by_time {
                if let Some(p) = self.take_at(i - 1) {
                    self.remember_lost(pn, p.size, p.blocks.clone());
                    out.push((pn, p));
                }
            } else if let Some(d) = loss_delay {
                let t = p.time_sent + d;
                next_loss_time = Some(next_loss_time.map_or(t, |n| n.min(t)));
            }
        }
        self.trim_front();
        self.loss_time = next_loss_time;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(ms: u64) -> SentPacket {
        SentPacket {
            time_sent: Time::from_millis(ms),
            size: 1000,
            retransmission: false,
            blocks: BlockList::new(),
            rate: PacketRateInfo::default(),
        }
    }

    #[test]
    fn packet_threshold_declares_the_third_older_packet_lost() {
        let mut s = SentPackets::new();
        for pn in 0..6 {
            s.on_sent(pn, pkt(pn));
        }
        // Packet 0 missing; 1..=2 acknowledged: 0 is only 2 behind.
        let a = s.on_ack(&[(1, 2)]);
        assert_eq!(a.newly_acked.len(), 2);
        assert!(s.detect_lost(Time::from_millis(7), None, 3).is_empty());
        // 3 acknowledged: 0 is 3 behind and lost; 1, 2 were acknowledged.
        s.on_ack(&[(3, 3)]);
        let lost = s.detect_lost(Time::from_millis(7), None, 3);
        assert_eq!(lost.iter().map(|(pn, _)| *pn).collect::<Vec<_>>(), [0]);
        assert_eq!(s.bytes_in_flight(), 2000);
        assert_eq!(s.snd_una(6), 4);
    }

    #[test]
    fn time_threshold_declares_old_packets_lost_and_arms_the_timer() {
        let mut s = SentPackets::new();
        s.on_sent(0, pkt(0));
        s.on_sent(1, pkt(10));
        s.on_sent(2, pkt(20));
        s.on_ack(&[(2, 2)]);
        let delay = Duration::from_millis(15);
        // At 16 ms packet 0 (sent at 0) is overdue; packet 1 becomes so at 25 ms.
        let lost = s.detect_lost(Time::from_millis(16), Some(delay), 3);
        assert_eq!(lost.iter().map(|(pn, _)| *pn).collect::<Vec<_>>(), [0]);
        assert_eq!(s.loss_time(), Some(Time::from_millis(25)));
        let lost = s.detect_lost(Time::from_millis(25), Some(delay), 3);
        assert_eq!(lost.iter().map(|(pn, _)| *pn).collect::<Vec<_>>(), [1]);
        assert_eq!(s.loss_time(), None);
    }

    #[test]
    fn late_ack_of_a_lost_packet_is_reported_spurious() {
        let mut s = SentPackets::new();
        let block = BlockRef {
            stream: 0,
            message: 7,
            block: 1,
        };
        s.on_sent(
            0,
            SentPacket {
                blocks: [block].into_iter().collect(),
                ..pkt(0)
            },
        );
        s.on_sent(1, pkt(1));
        assert!(s.declare_lost(0).is_some());
        assert!(s.declare_lost(0).is_none());
        let a = s.on_ack(&[(0, 1)]);
        assert_eq!(a.spurious, [0]);
        assert_eq!(
            a.spurious_blocks,
            [block],
            "the late ACK credits its blocks"
        );
        assert_eq!(a.newly_acked.len(), 1);
        assert!(s.is_empty());
    }
}
