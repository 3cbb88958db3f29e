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
use std::collections::BTreeMap;
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
    pub blocks: Vec<BlockRef>,
    /// The delivery-rate sampler's snapshot at send time.
    pub rate: PacketRateInfo,
}

/// A packet declared lost, remembered so a late ACK can prove it spurious
/// and credit its blocks.
#[derive(Clone, Debug)]
struct LostRecord {
    size: u32,
    blocks: Vec<BlockRef>,
}

/// The scoreboard of outstanding DATA packets.
#[derive(Debug, Default)]
pub struct SentPackets {
    outstanding: BTreeMap<u64, SentPacket>,
    bytes_in_flight: u64,
    lost: BTreeMap<u64, LostRecord>,
    largest_acked: Option<u64>,
    loss_time: Option<Time>,
}

/// The result of applying one ACK to the scoreboard.
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

impl SentPackets {
    /// An empty scoreboard.
    pub fn new() -> SentPackets {
        SentPackets::default()
    }

    /// Track a packet just sent.
    pub fn on_sent(&mut self, pn: u64, packet: SentPacket) {
        self.bytes_in_flight += u64::from(packet.size);
        self.outstanding.insert(pn, packet);
    }

    /// Bytes of tracked packets neither acknowledged nor declared lost.
    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    /// Number of tracked packets outstanding.
    pub fn packets_in_flight(&self) -> usize {
        self.outstanding.len()
    }

    /// Whether nothing is outstanding.
    pub fn is_empty(&self) -> bool {
        self.outstanding.is_empty()
    }

    /// The largest packet number acknowledged so far.
    pub fn largest_acked(&self) -> Option<u64> {
        self.largest_acked
    }

    /// Lowest outstanding packet number, or `next_pn` if none.
    pub fn snd_una(&self, next_pn: u64) -> u64 {
        self.outstanding.keys().next().copied().unwrap_or(next_pn)
    }

    /// The oldest outstanding packet (what a send-gate probe retransmits).
    pub fn oldest(&self) -> Option<(u64, &SentPacket)> {
        self.outstanding.iter().next().map(|(k, v)| (*k, v))
    }

    /// When the time threshold will declare the next packet lost.
    pub fn loss_time(&self) -> Option<Time> {
        self.loss_time
    }

    /// Whether `pn` is outstanding (sent, neither acknowledged nor lost).
    pub fn is_outstanding(&self, pn: u64) -> bool {
        self.outstanding.contains_key(&pn)
    }

    /// Outstanding packet numbers in `lo..=hi`, ascending.
    pub fn outstanding_in(&self, lo: u64, hi: u64) -> Vec<u64> {
        if lo > hi {
            return Vec::new();
        }
        self.outstanding.range(lo..=hi).map(|(k, _)| *k).collect()
    }

    fn remove(&mut self, pn: u64) -> Option<SentPacket> {
        let p = self.outstanding.remove(&pn)?;
        self.bytes_in_flight = self.bytes_in_flight.saturating_sub(u64::from(p.size));
        Some(p)
    }

    /// Apply acknowledged ranges (inclusive `(lo, hi)` pairs, any order).
    /// The caller has checked that no range reaches past the packets sent.
    pub fn on_ack(&mut self, ranges: &[(u64, u64)]) -> AckedPackets {
        let mut out = AckedPackets::default();
        for &(lo, hi) in ranges {
            if lo > hi {
                continue;
            }
            self.largest_acked = Some(self.largest_acked.map_or(hi, |l| l.max(hi)));
            let pns: Vec<u64> = self.outstanding.range(lo..=hi).map(|(k, _)| *k).collect();
            for pn in pns {
                if let Some(p) = self.remove(pn) {
                    out.newly_acked.push((pn, p));
                }
            }
            let lost: Vec<u64> = self.lost.range(lo..=hi).map(|(k, _)| *k).collect();
            for pn in lost {
                if let Some(r) = self.lost.remove(&pn) {
                    out.spurious.push(pn);
                    out.spurious_bytes += u64::from(r.size);
                    out.spurious_blocks.extend(r.blocks);
                }
            }
        }
        out.newly_acked.sort_by_key(|(pn, _)| *pn);
        out.spurious.sort_unstable();
        out
    }

    /// Declare one packet lost (NACK, probe); `None` if it is not outstanding.
    pub fn declare_lost(&mut self, pn: u64) -> Option<SentPacket> {
        let p = self.remove(pn)?;
        self.remember_lost(pn, p.size, p.blocks.clone());
        Some(p)
    }

    /// Declare every outstanding packet lost (retransmission timeout).
    pub fn declare_all_lost(&mut self) -> Vec<(u64, SentPacket)> {
        let pns: Vec<u64> = self.outstanding.keys().copied().collect();
        self.loss_time = None;
        pns.into_iter()
            .filter_map(|pn| self.declare_lost(pn).map(|p| (pn, p)))
            .collect()
    }

    fn remember_lost(&mut self, pn: u64, size: u32, blocks: Vec<BlockRef>) {
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
        self.loss_time = None;
        let Some(largest) = self.largest_acked else {
            return Vec::new();
        };
        let mut lost = Vec::new();
        let mut next_loss_time: Option<Time> = None;
        for (&pn, p) in self.outstanding.range(..largest) {
            let by_packets = largest - pn >= packet_threshold;
            let by_time = loss_delay.is_some_and(|d| p.time_sent + d <= now);
            if by_packets || by_time {
                lost.push(pn);
            } else if let Some(d) = loss_delay {
                let t = p.time_sent + d;
                next_loss_time = Some(next_loss_time.map_or(t, |n| n.min(t)));
            }
        }
        self.loss_time = next_loss_time;
        lost.into_iter()
            .filter_map(|pn| self.declare_lost(pn).map(|p| (pn, p)))
            .collect()
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
            blocks: Vec::new(),
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
                blocks: vec![block],
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
