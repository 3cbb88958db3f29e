//! ACK: which packets arrived, as QUIC-style descending ranges.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                     PACKET_NUMBER (32)                        |
//! +---------------------------------------------------------------+
//! |                   LARGEST_ACKED (64, full)                    |
//! |                                                               |
//! +---------------------------------------------------------------+
//! |                      ACK_DELAY_US (32)                        |
//! +---------------+-----------------------------------------------+
//! |  RANGE_COUNT  |              FIRST_RANGE (32)                 |
//! +---------------+-----------------------------------------------+
//! |  FIRST_RANGE  |  RANGE_COUNT × { GAP (32), LENGTH (32) }  ... //
//! +---------------+-----------------------------------------------+
//! ```
//!
//! The first range acknowledges `LARGEST_ACKED - FIRST_RANGE ..=
//! LARGEST_ACKED`. Each further range lies below the previous one: if the
//! previous range's smallest packet is `s`, the next range's largest is
//! `s - GAP - 2` and its smallest is that minus LENGTH (RFC 9000 §19.3.1).
//! No range may reach below packet number 0. The header's MESS_ACC_NO
//! carries the highest message number delivered in order (stream 0).
//!
//! An optional **credit section** may follow the ranges (per-stream flow
//! control, docs/protocol.md §6.5.1): CREDIT_COUNT (8) then
//! CREDIT_COUNT × { STREAM_ID (16), MAX_MESSAGE (32) }, stream ids strictly
//! ascending. No bytes after the ranges = no section (every ACK of earlier
//! builds reads the same). CREDIT_COUNT is ≥ 1 unless an **ACK-frequency
//! section** follows (§6.5.2): SEQUENCE (32), THRESHOLD (16, ≥ 1),
//! MAX_ACK_DELAY_US (32) — a data sender asking its peer to acknowledge
//! after THRESHOLD DATA packets or MAX_ACK_DELAY_US, whichever comes first
//! (draft-ietf-quic-ack-frequency). An ACK with a frequency section and no
//! credits carries CREDIT_COUNT = 0.
//!
//! An **ECN section** (§6.5.3) may follow the credit section, before the
//! frequency section: ECT0, ECT1, CE as three QUIC variable-length
//! integers (RFC 9000 §16; 3–24 bytes), the cumulative counts of DATA
//! packets received with each codepoint (QUIC's ACK_ECN). After the
//! credits, exactly 10 bytes are a frequency section alone; any other
//! non-zero length starts with an ECN section, which may be followed by
//! a frequency section and nothing else. So an ECN section is never
//! exactly 10 bytes: where the shortest forms would total 10, the encoder
//! writes the first count shorter than 8 bytes in its next longer form
//! (QUIC allows any form; this section takes only those the encoder
//! writes, so each ACK has one encoding). An ACK with an ECN section and no credits
//! carries CREDIT_COUNT = 0. [`AckEcnView`] is the checked view of the
//! section's bytes.

use crate::wire::cursor::{check_room, varint_len, varint_len_of_first, Reader, Writer};
use crate::wire::error::{Result, WireError};

/// One additional ACK range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AckRange {
    /// Unacknowledged packets between this range and the previous one, minus one.
    pub gap: u32,
    /// Packets in this range, minus one.
    pub length: u32,
}

/// One per-stream credit: the sender may send new blocks of `stream`'s
/// messages numbered below `max_message`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StreamCredit {
    /// The stream.
    pub stream: u16,
    /// First message number the receiver does not yet accept new data of.
    pub max_message: u32,
}

/// A data sender's request for how often its peer acknowledges (the
/// ACK-frequency section, docs/protocol.md §6.5.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AckFrequency {
    /// Increases with every new request; the receiver applies only a
    /// request newer than the last one it applied (ACKs may be reordered).
    pub sequence: u32,
    /// Acknowledge after this many DATA packets (≥ 1).
    pub threshold: u16,
    /// Acknowledge at the latest this long after the first unacknowledged
    /// DATA packet, microseconds.
    pub max_ack_delay_us: u32,
}

impl AckFrequency {
    /// Bytes of the section.
    pub const LEN: usize = 10;
}

/// The receiver's cumulative ECN counts (the ECN section, docs/protocol.md
/// §6.5.3; QUIC's ACK_ECN counts, RFC 9000 §19.3.2): DATA packets of the
/// connection received with each codepoint so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AckEcnCounts {
    /// DATA packets received with ECT(0).
    pub ect0: u64,
    /// DATA packets received with ECT(1).
    pub ect1: u64,
    /// DATA packets received with CE.
    pub ce: u64,
}

impl AckEcnCounts {
    /// The longest section, bytes (three 8-byte varints).
    pub const MAX_LEN: usize = 24;

    /// All packets the counts cover (saturating).
    pub fn total(&self) -> u64 {
        self.ect0.saturating_add(self.ect1).saturating_add(self.ce)
    }

    /// The varint form of each count, bytes: the shortest, except that a
    /// section whose shortest forms total 10 bytes (a frequency section's
    /// length) writes the first count shorter than 8 bytes in its next
    /// longer form (module docs). O(1).
    pub fn varint_lens(&self) -> [usize; 3] {
        let mut l = [
            varint_len(self.ect0),
            varint_len(self.ect1),
            varint_len(self.ce),
        ];
        if l.iter().sum::<usize>() == AckFrequency::LEN {
            if let Some(x) = l.iter_mut().find(|x| **x < 8) {
                *x *= 2;
            }
        }
        l
    }

    /// Bytes of the encoded section (3–24, never 10). O(1).
    pub fn encoded_len(&self) -> usize {
        self.varint_lens().iter().sum()
    }
}

/// A checked view of an ECN section: [`new_checked`](Self::new_checked)
/// accepts the bytes after an ACK's credit section only if they begin
/// with three whole varints; the view then covers exactly those, and its
/// getters cannot fail (smoltcp's `new_checked` pattern, as
/// [`Header`](crate::wire::Header)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckEcnView<'a> {
    bytes: &'a [u8],
    /// Where ECT1 and CE start.
    at: [usize; 2],
}

impl<'a> AckEcnView<'a> {
    /// The section at the start of `buffer` (more bytes may follow it); a
    /// varint cut short is [`WireError::Truncated`]. O(1).
    pub fn new_checked(buffer: &'a [u8]) -> Result<AckEcnView<'a>> {
        let mut at = 0usize;
        let mut starts = [0usize; 3];
        for s in &mut starts {
            *s = at;
            let first = buffer.get(at).copied().ok_or(WireError::Truncated {
                what: "ACK ECN counts",
                needed: 1,
                available: 0,
            })?;
            let len = varint_len_of_first(first);
            if buffer.len() < at + len {
                return Err(WireError::Truncated {
                    what: "ACK ECN counts",
                    needed: len,
                    available: buffer.len() - at,
                });
            }
            at += len;
        }
        Ok(AckEcnView {
            bytes: buffer.get(..at).unwrap_or_default(),
            at: [starts[1], starts[2]],
        })
    }

    /// Bytes of the section.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The length of each of the three varints as written, bytes.
    pub fn varint_lens(&self) -> [usize; 3] {
        [
            self.at[0],
            self.at[1] - self.at[0],
            self.bytes.len() - self.at[1],
        ]
    }

    /// Whether the section is empty (never: it holds three varints).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn varint_at(&self, start: usize, end: usize) -> u64 {
        // `new_checked` guarantees the bounds; the fallback is unreachable.
        let b = self.bytes.get(start..end).unwrap_or_default();
        b.iter().enumerate().fold(0u64, |v, (i, x)| {
            (v << 8) | u64::from(if i == 0 { x & 0x3f } else { *x })
        })
    }

    /// DATA packets received with ECT(0).
    pub fn ect0(&self) -> u64 {
        self.varint_at(0, self.at[0])
    }

    /// … with ECT(1).
    pub fn ect1(&self) -> u64 {
        self.varint_at(self.at[0], self.at[1])
    }

    /// … with CE.
    pub fn ce(&self) -> u64 {
        self.varint_at(self.at[1], self.bytes.len())
    }

    /// The counts.
    pub fn counts(&self) -> AckEcnCounts {
        AckEcnCounts {
            ect0: self.ect0(),
            ect1: self.ect1(),
            ce: self.ce(),
        }
    }
}

/// Payload of ACK.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct AckPayload {
    /// Low 32 bits of this packet's own packet number.
    pub packet_number: u32,
    /// The largest packet number being acknowledged (full 64 bits).
    pub largest_acked: u64,
    /// How long the receiver held the ACK back after receiving `largest_acked`, µs.
    pub ack_delay_us: u32,
    /// Packets below `largest_acked` acknowledged with it.
    pub first_range: u32,
    /// Further ranges, descending (at most 255).
    pub ranges: Vec<AckRange>,
    /// Per-stream credits (the optional credit section; empty = absent),
    /// stream ids strictly ascending, at most 255.
    pub credits: Vec<StreamCredit>,
    /// The sender's ACK-frequency request (the optional section after the
    /// credits; `None` = absent).
    pub frequency: Option<AckFrequency>,
    /// The receiver's cumulative ECN counts (the optional last section;
    /// `None` = absent).
    pub ecn: Option<AckEcnCounts>,
}

impl AckPayload {
    /// Length without the additional ranges.
    pub const FIXED_LEN: usize = 21;
    /// Most additional ranges one ACK carries.
    pub const MAX_RANGES: usize = 255;
    /// Most credits one ACK carries.
    pub const MAX_CREDITS: usize = 255;
    /// Bytes of one credit entry.
    pub const CREDIT_LEN: usize = 6;

    /// The acknowledged packet numbers as inclusive `(smallest, largest)`
    /// pairs, largest first; fails if a range reaches below 0.
    pub fn acked_ranges(&self) -> Result<Vec<(u64, u64)>> {
        let mut out = Vec::with_capacity(self.ranges.len() + 1);
        self.walk(|lo, hi| out.push((lo, hi)))?;
        Ok(out)
    }

    /// Visits the acknowledged packet numbers as inclusive `(smallest,
    /// largest)` pairs, largest first, without allocating, until `visit`
    /// returns `false`; fails if a range reaches below 0 (ranges visited
    /// before the bad one were visited). O(ranges).
    pub fn for_each_range(&self, mut visit: impl FnMut(u64, u64) -> bool) -> Result<()> {
        let mut hi = self.largest_acked;
        let mut lo = hi
            .checked_sub(self.first_range.into())
            .ok_or(WireError::AckRangeUnderflow { range: 0 })?;
        if !visit(lo, hi) {
            return Ok(());
        }
        for (i, r) in self.ranges.iter().enumerate() {
            let err = WireError::AckRangeUnderflow { range: i + 1 };
            hi = lo
                .checked_sub(u64::from(r.gap))
                .and_then(|v| v.checked_sub(2))
                .ok_or(err.clone())?;
            lo = hi.checked_sub(r.length.into()).ok_or(err)?;
            if !visit(lo, hi) {
                return Ok(());
            }
        }
        Ok(())
    }

    fn walk(&self, mut visit: impl FnMut(u64, u64)) -> Result<()> {
        self.for_each_range(|lo, hi| {
            visit(lo, hi);
            true
        })
    }

    /// Decodes the whole of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<AckPayload> {
        let mut r = Reader::new(bytes);
        let packet_number = r.u32("packet number")?;
        let largest_acked = r.u64("ACK largest acked")?;
        let ack_delay_us = r.u32("ACK delay")?;
        let count = r.u8("ACK range count")?;
        let first_range = r.u32("ACK first range")?;
        let mut ranges = Vec::with_capacity(usize::from(count).min(r.remaining() / 8));
        for _ in 0..count {
            ranges.push(AckRange {
                gap: r.u32("ACK range")?,
                length: r.u32("ACK range")?,
            });
        }
        let mut credits = Vec::new();
        let mut frequency = None;
        let mut ecn = None;
        if r.remaining() > 0 {
            let n = r.u8("ACK credit count")?;
            credits.reserve(usize::from(n).min(r.remaining() / Self::CREDIT_LEN));
            for _ in 0..n {
                credits.push(StreamCredit {
                    stream: r.u16("ACK credit")?,
                    max_message: r.u32("ACK credit")?,
                });
            }
            // After the credits: exactly 10 bytes are a frequency section
            // alone; anything else non-empty starts with the ECN section
            // (docs/protocol.md §6.5.3), then at most a frequency section.
            let rest = r.remaining();
            let has_ecn = rest > 0 && rest != AckFrequency::LEN;
            if has_ecn {
                let view = AckEcnView::new_checked(r.peek())?;
                let counts = view.counts();
                // One encoding per ACK: only the forms the encoder writes,
                // count by count (equal totals are not enough: a long form
                // may sit on another count than the encoder's widening).
                if view.varint_lens() != counts.varint_lens() {
                    return Err(WireError::FieldOutOfRange {
                        field: "ACK ECN counts (not in their canonical varint forms)",
                        value: view.len() as u64,
                        max: counts.encoded_len() as u64,
                    });
                }
                ecn = Some(counts);
                r.take(view.len(), "ACK ECN counts")?;
            }
            if r.remaining() > 0 {
                let f = AckFrequency {
                    sequence: r.u32("ACK frequency")?,
                    threshold: r.u16("ACK frequency")?,
                    max_ack_delay_us: r.u32("ACK frequency")?,
                };
                frequency = Some(f);
            } else if n == 0 && !has_ecn {
                // An empty credit section must announce a section after it.
                return Err(WireError::FieldOutOfRange {
                    field: "ACK credit count",
                    value: 0,
                    max: Self::MAX_CREDITS as u64,
                });
            }
        }
        r.finish("ACK")?;
        let ack = AckPayload {
            packet_number,
            largest_acked,
            ack_delay_us,
            first_range,
            ranges,
            credits,
            frequency,
            ecn,
        };
        ack.walk(|_, _| ())?;
        ack.check_credits()?;
        ack.check_frequency()?;
        Ok(ack)
    }

    /// Credit section rules: at most 255 entries, stream ids strictly
    /// ascending (so each ACK has one encoding).
    fn check_credits(&self) -> Result<()> {
        if self.credits.len() > Self::MAX_CREDITS {
            return Err(WireError::FieldOutOfRange {
                field: "ACK credit count",
                value: self.credits.len() as u64,
                max: Self::MAX_CREDITS as u64,
            });
        }
        for pair in self.credits.windows(2) {
            if pair[1].stream <= pair[0].stream {
                return Err(WireError::FieldOutOfRange {
                    field: "ACK credit stream order",
                    value: u64::from(pair[1].stream),
                    max: u64::from(pair[0].stream),
                });
            }
        }
        Ok(())
    }

    /// A frequency section asks for an ACK after at least one packet.
    fn check_frequency(&self) -> Result<()> {
        match self.frequency {
            Some(f) if f.threshold == 0 => Err(WireError::FieldOutOfRange {
                field: "ACK frequency threshold",
                value: 0,
                max: u64::from(u16::MAX),
            }),
            _ => Ok(()),
        }
    }

    /// Length of the credit section (0 when absent; the count byte alone
    /// when only a frequency or ECN section follows).
    pub fn credits_len(&self) -> usize {
        if self.credits.is_empty() && self.frequency.is_none() && self.ecn.is_none() {
            0
        } else {
            1 + Self::CREDIT_LEN * self.credits.len()
        }
    }

    /// Length of the ACK-frequency section (0 when absent).
    pub fn frequency_len(&self) -> usize {
        if self.frequency.is_some() {
            AckFrequency::LEN
        } else {
            0
        }
    }

    /// Length of the ECN section (0 when absent, else 3–24).
    pub fn ecn_len(&self) -> usize {
        self.ecn.map_or(0, |e| e.encoded_len())
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        Self::FIXED_LEN
            + 8 * self.ranges.len()
            + self.credits_len()
            + self.frequency_len()
            + self.ecn_len()
    }

    /// Writes the payload at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let count = u8::try_from(self.ranges.len()).map_err(|_| WireError::FieldOutOfRange {
            field: "ACK range count",
            value: self.ranges.len() as u64,
            max: Self::MAX_RANGES as u64,
        })?;
        self.walk(|_, _| ())?;
        self.check_credits()?;
        self.check_frequency()?;
        check_room(buf, self.buffer_len())?;
        let mut w = Writer::new(buf);
        w.u32(self.packet_number)?;
        w.u64(self.largest_acked)?;
        w.u32(self.ack_delay_us)?;
        w.u8(count)?;
        w.u32(self.first_range)?;
        for r in &self.ranges {
            w.u32(r.gap)?;
            w.u32(r.length)?;
        }
        if self.credits_len() > 0 {
            // check_credits bounds the count by 255.
            w.u8(u8::try_from(self.credits.len()).unwrap_or(u8::MAX))?;
            for c in &self.credits {
                w.u16(c.stream)?;
                w.u32(c.max_message)?;
            }
        }
        if let Some(e) = self.ecn {
            let [l0, l1, l2] = e.varint_lens();
            w.varint("ACK ECN ECT0", e.ect0, l0)?;
            w.varint("ACK ECN ECT1", e.ect1, l1)?;
            w.varint("ACK ECN CE", e.ce, l2)?;
        }
        if let Some(f) = self.frequency {
            w.u32(f.sequence)?;
            w.u16(f.threshold)?;
            w.u32(f.max_ack_delay_us)?;
        }
        Ok(w.written())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_credit_section_round_trips_and_is_checked() {
        let ack = AckPayload {
            packet_number: 7,
            largest_acked: 9,
            credits: vec![
                StreamCredit {
                    stream: 1,
                    max_message: 4,
                },
                StreamCredit {
                    stream: 3,
                    max_message: 70_000,
                },
            ],
            ..AckPayload::default()
        };
        let mut buf = [0u8; 64];
        let n = ack.emit(&mut buf).unwrap();
        assert_eq!(n, AckPayload::FIXED_LEN + 13);
        assert_eq!(AckPayload::decode(&buf[..n]).unwrap(), ack);
        // Every truncation is an error, never a panic.
        for cut in AckPayload::FIXED_LEN + 1..n {
            assert!(AckPayload::decode(&buf[..cut]).is_err());
        }
        // A present but empty section is malformed.
        let mut zero = buf[..AckPayload::FIXED_LEN + 1].to_vec();
        zero[AckPayload::FIXED_LEN] = 0;
        assert!(AckPayload::decode(&zero).is_err());
        // Unsorted or repeated stream ids are malformed.
        let mut bad = ack.clone();
        bad.credits.swap(0, 1);
        assert!(bad.emit(&mut buf).is_err());
        bad.credits[0].stream = 1;
        bad.credits[1].stream = 1;
        assert!(bad.emit(&mut buf).is_err());
    }

    #[test]
    fn ranges_descend_like_quic() {
        let ack = AckPayload {
            packet_number: 1,
            largest_acked: 100,
            ack_delay_us: 0,
            first_range: 2,
            ranges: vec![
                AckRange { gap: 0, length: 1 },
                AckRange { gap: 3, length: 0 },
            ],
            credits: Vec::new(),
            frequency: None,
            ecn: None,
        };
        // 98..=100; 97 missing; 95..=96; 91..=94 missing; 90.
        assert_eq!(ack.acked_ranges().unwrap(), [(98, 100), (95, 96), (90, 90)]);
        let mut buf = [0u8; 64];
        let n = ack.emit(&mut buf).unwrap();
        assert_eq!(AckPayload::decode(&buf[..n]).unwrap(), ack);
    }

    #[test]
    fn underflow_is_an_error() {
        let ack = AckPayload {
            largest_acked: 3,
            first_range: 1,
            ranges: vec![
                AckRange { gap: 0, length: 0 },
                AckRange { gap: 0, length: 0 },
            ],
            ..AckPayload::default()
        };
        // 2..=3, then 0..=0, then below zero.
        assert_eq!(
            ack.acked_ranges(),
            Err(WireError::AckRangeUnderflow { range: 2 })
        );
        assert!(ack.emit(&mut [0u8; 64]).is_err());
    }

    #[test]
    fn frequency_section_round_trips_with_and_without_credits() {
        let f = AckFrequency {
            sequence: 3,
            threshold: 10,
            max_ack_delay_us: 5_000,
        };
        let alone = AckPayload {
            largest_acked: 9,
            frequency: Some(f),
            ..AckPayload::default()
        };
        let mut buf = [0u8; 64];
        let n = alone.emit(&mut buf).unwrap();
        assert_eq!(n, AckPayload::FIXED_LEN + 1 + AckFrequency::LEN);
        assert_eq!(buf[AckPayload::FIXED_LEN], 0, "empty credit section");
        assert_eq!(AckPayload::decode(&buf[..n]).unwrap(), alone);
        // A cut frequency section may read as ECN counts (§6.5.3: the
        // datagram's TOTAL_LEN, not the payload, guards against cuts);
        // never a panic, and too few bytes for three varints are an error.
        for cut in AckPayload::FIXED_LEN + 1..n {
            let r = AckPayload::decode(&buf[..cut]);
            if cut < AckPayload::FIXED_LEN + 1 + 3 {
                assert!(r.is_err(), "{cut}");
            }
        }
        let both = AckPayload {
            credits: vec![StreamCredit {
                stream: 2,
                max_message: 8,
            }],
            ..alone.clone()
        };
        let n = both.emit(&mut buf).unwrap();
        assert_eq!(n, AckPayload::FIXED_LEN + 7 + AckFrequency::LEN);
        assert_eq!(AckPayload::decode(&buf[..n]).unwrap(), both);
        // A zero threshold is malformed both ways.
        let mut zero = alone;
        zero.frequency = Some(AckFrequency { threshold: 0, ..f });
        assert!(zero.emit(&mut buf).is_err());
        let n = both.emit(&mut buf).unwrap();
        buf[n - 6] = 0;
        buf[n - 5] = 0;
        assert!(AckPayload::decode(&buf[..n]).is_err());
    }

    #[test]
    fn ecn_section_round_trips_alone_and_before_the_frequency_section() {
        // ECT1 needs the 8-byte form; the shortest forms would total 10
        // bytes (a frequency section's length), so ECT0 takes 2.
        let counts = AckEcnCounts {
            ect0: 1,
            ect1: 0x0102_0304_0506_0708,
            ce: 3,
        };
        assert_eq!(counts.varint_lens(), [2, 8, 1]);
        let section = [0x40, 0x01, 0xc1, 2, 3, 4, 5, 6, 7, 8, 0x03];
        let freq = AckFrequency {
            sequence: 5,
            threshold: 2,
            max_ack_delay_us: 25_000,
        };
        let credit = StreamCredit {
            stream: 1,
            max_message: 9,
        };
        for (credits, frequency) in [
            (vec![], None),
            (vec![], Some(freq)),
            (vec![credit], None),
            (vec![credit], Some(freq)),
        ] {
            let ack = AckPayload {
                packet_number: 7,
                largest_acked: 9,
                credits,
                frequency,
                ecn: Some(counts),
                ..AckPayload::default()
            };
            let mut buf = [0u8; 128];
            let n = ack.emit(&mut buf).unwrap();
            assert_eq!(n, ack.buffer_len());
            assert_eq!(AckPayload::decode(&buf[..n]).unwrap(), ack);
            // The section follows the credits, before any frequency section.
            let at = AckPayload::FIXED_LEN + ack.credits_len();
            assert_eq!(&buf[at..at + section.len()], &section);
            // Every truncation and every extra byte is an error, never a panic.
            for cut in AckPayload::FIXED_LEN + 1..n {
                let _ = AckPayload::decode(&buf[..cut]);
            }
            assert!(AckPayload::decode(&buf[..n + 1]).is_err());
        }
    }

    #[test]
    fn a_bulk_transfers_counts_take_six_bytes_not_twenty_four() {
        // 50,000 ECT(0) packets, 20 of them CE: 4 + 1 + 1 bytes.
        let c = AckEcnCounts {
            ect0: 50_000,
            ect1: 0,
            ce: 20,
        };
        assert_eq!(c.encoded_len(), 6);
        let ack = AckPayload {
            largest_acked: 60_000,
            ecn: Some(c),
            ..AckPayload::default()
        };
        // One byte of empty credit section, six of counts.
        assert_eq!(ack.buffer_len(), AckPayload::FIXED_LEN + 1 + 6);
        // The largest counts still fit (8-byte forms), and one past the
        // varint range is refused by name.
        let max = AckEcnCounts {
            ect0: (1 << 62) - 1,
            ect1: (1 << 62) - 1,
            ce: (1 << 62) - 1,
        };
        assert_eq!(max.encoded_len(), AckEcnCounts::MAX_LEN);
        let mut buf = [0u8; 64];
        let big = AckPayload {
            ecn: Some(max),
            ..AckPayload::default()
        };
        let n = big.emit(&mut buf).unwrap();
        assert_eq!(AckPayload::decode(&buf[..n]).unwrap(), big);
        let over = AckPayload {
            ecn: Some(AckEcnCounts { ce: 1 << 62, ..max }),
            ..AckPayload::default()
        };
        assert!(matches!(
            over.emit(&mut buf),
            Err(WireError::FieldOutOfRange {
                field: "ACK ECN CE",
                ..
            })
        ));
    }

    #[test]
    fn a_widened_count_on_another_count_than_the_encoders_is_refused() {
        // Found by the `ack` fuzz target (2026-12-06). Counts ECT0 = 0,
        // ECT1 = 0 and an 8-byte CE: their shortest forms total 10 bytes,
        // so the encoder widens the first count (ECT0) to two bytes. The
        // input widened ECT1 instead — 11 bytes either way — and decoded,
        // then re-encoded differently.
        let fuzzed = [
            0, 32, 0, 0, 5, 0, 255, 255, 255, 255, 255, 255, 255, 1, 0, 65, 0, 0, 0, 0, 5, 0, 0,
            64, 0, 250, 1, 0, 42, 0, 35, 255, 250,
        ];
        assert!(matches!(
            AckPayload::decode(&fuzzed),
            Err(WireError::FieldOutOfRange { .. })
        ));
        // The encoder's own form of those counts decodes and round-trips.
        let canonical = [
            0, 32, 0, 0, 5, 0, 255, 255, 255, 255, 255, 255, 255, 1, 0, 65, 0, 0, 0, 0, 5, 0, 64,
            0, 0, 250, 1, 0, 42, 0, 35, 255, 250,
        ];
        let p = AckPayload::decode(&canonical).expect("canonical form decodes");
        let mut out = vec![0u8; p.buffer_len()];
        let n = p.emit(&mut out).unwrap();
        assert_eq!(&out[..n], &canonical[..]);
    }

    #[test]
    fn varints_follow_rfc_9000_appendix_a() {
        // RFC 9000 §A.1's examples, each in its shortest form.
        for (v, bytes) in [
            (37u64, &[0x25u8][..]),
            (15_293, &[0x7b, 0xbd]),
            (494_878_333, &[0x9d, 0x7f, 0x3e, 0x7d]),
            (
                151_288_809_941_952_652,
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
            ),
        ] {
            let mut buf = [0u8; 8];
            let mut w = Writer::new(&mut buf);
            w.varint("v", v, varint_len(v)).unwrap();
            assert_eq!(&buf[..bytes.len()], bytes);
            assert_eq!(Reader::new(bytes).varint("v").unwrap(), v);
        }
        // 37 in its two-byte form reads the same (RFC 9000 §16).
        assert_eq!(Reader::new(&[0x40, 0x25]).varint("v").unwrap(), 37);
        // A form too short for the value is refused.
        let mut buf = [0u8; 8];
        assert!(Writer::new(&mut buf).varint("v", 64, 1).is_err());
        assert!(Reader::new(&[0x7b]).varint("v").is_err());
    }

    #[test]
    fn acks_without_ecn_read_as_before() {
        // CREDIT_COUNT 0 followed by nothing is still malformed, and a
        // frequency section alone is still a frequency section.
        let mut buf = [0u8; 64];
        let plain = AckPayload {
            largest_acked: 3,
            ..AckPayload::default()
        };
        let n = plain.emit(&mut buf).unwrap();
        assert_eq!(n, AckPayload::FIXED_LEN);
        buf[n] = 0;
        assert!(AckPayload::decode(&buf[..n + 1]).is_err());
        // Three zero bytes after an empty credit section are ECN counts.
        let e = AckPayload::decode(&buf[..n + 1 + 3]).unwrap();
        assert_eq!(e.ecn, Some(AckEcnCounts::default()));
        assert_eq!(e.frequency, None);
        // Ten bytes are a frequency section (a zero threshold: malformed).
        assert!(AckPayload::decode(&buf[..n + 1 + 10]).is_err());
        buf[n + 1 + 5] = 1;
        let f = AckPayload::decode(&buf[..n + 1 + 10]).unwrap();
        assert_eq!((f.ecn, f.frequency.map(|f| f.threshold)), (None, Some(1)));
        // ECN counts then anything but nothing or a frequency section:
        // malformed.
        buf[n + 1 + 5] = 0;
        for extra in [1, 2, 4, 9, 11, 12, 14, 23] {
            assert!(
                AckPayload::decode(&buf[..n + 1 + 3 + extra]).is_err(),
                "{extra}"
            );
        }
        // Only the encoder's forms: 0 in two bytes is refused.
        buf[n + 1] = 0x40;
        assert!(matches!(
            AckPayload::decode(&buf[..n + 1 + 4]),
            Err(WireError::FieldOutOfRange { .. })
        ));
        // A varint cut short is Truncated.
        buf[n + 1] = 0xc0;
        assert!(matches!(
            AckPayload::decode(&buf[..n + 1 + 3]),
            Err(WireError::Truncated { .. })
        ));
    }

    proptest::proptest! {
        /// Any counts round-trip, the section is never a frequency
        /// section's 10 bytes, and the checked view reads what was written.
        #[test]
        fn any_counts_round_trip(
            ect0 in 0u64..(1 << 62),
            ect1 in 0u64..(1 << 62),
            ce in 0u64..(1 << 62),
            shift in 0u32..62,
            freq in proptest::bool::ANY,
        ) {
            let counts = AckEcnCounts { ect0: ect0 >> shift, ect1: ect1 >> (61 - shift), ce: ce >> shift };
            proptest::prop_assert_ne!(counts.encoded_len(), AckFrequency::LEN);
            let ack = AckPayload {
                largest_acked: 1,
                ecn: Some(counts),
                frequency: freq.then_some(AckFrequency { sequence: 1, threshold: 1, max_ack_delay_us: 1 }),
                ..AckPayload::default()
            };
            let mut buf = [0u8; 80];
            let n = ack.emit(&mut buf).unwrap();
            proptest::prop_assert_eq!(AckPayload::decode(&buf[..n]).unwrap(), ack);
            let at = AckPayload::FIXED_LEN + 1;
            let view = AckEcnView::new_checked(&buf[at..n]).unwrap();
            proptest::prop_assert_eq!(view.counts(), counts);
            proptest::prop_assert_eq!(view.len(), counts.encoded_len());
        }
    }
}
