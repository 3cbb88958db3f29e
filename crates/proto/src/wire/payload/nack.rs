//! NACK: what is missing, by packet number ranges and/or by
//! (stream, message, block).
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                     PACKET_NUMBER (32)                        |
//! +---------------+---------------+-------------------------------+
//! |  RANGE_COUNT  |  BLOCK_COUNT  |
//! +---------------+---------------+
//! RANGE_COUNT × missing packets (12 bytes):
//! +---------------------------------------------------------------+
//! |                       FIRST (64, full)                        |
//! |                                                               |
//! +---------------------------------------------------------------+
//! |                          COUNT (32)                           |
//! +---------------------------------------------------------------+
//! BLOCK_COUNT × missing blocks (8 bytes):
//! +-------------------------------+-------------------------------+
//! |           STREAM_ID           |        MESSAGE_NO (32) ...    |
//! +-------------------------------+-------------------------------+
//! |        ... MESSAGE_NO         |          BLOCK_INDEX          |
//! +-------------------------------+-------------------------------+
//! ```
//!
//! A packet range names `FIRST ..= FIRST + COUNT - 1`; COUNT ≥ 1. A NACK
//! names at least one missing packet or block.

use crate::wire::cursor::{check_room, Reader, Writer};
use crate::wire::error::{Result, WireError};

/// A run of missing packets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MissingPackets {
    /// First missing packet number (full 64 bits).
    pub first: u64,
    /// How many consecutive packets are missing, ≥ 1.
    pub count: u32,
}

impl MissingPackets {
    /// The last missing packet number, or an error if the range is empty
    /// or runs past `u64::MAX`.
    pub fn last(&self) -> Result<u64> {
        self.count
            .checked_sub(1)
            .and_then(|c| self.first.checked_add(c.into()))
            .ok_or(WireError::BadNackRange {
                first: self.first,
                count: self.count,
            })
    }
}

/// A missing block of a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MissingBlock {
    /// The stream.
    pub stream_id: u16,
    /// The message's per-stream number.
    pub message_number: u32,
    /// The missing block.
    pub block_index: u16,
}

/// Payload of NACK.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NackPayload {
    /// Low 32 bits of this packet's own packet number.
    pub packet_number: u32,
    /// Missing packet ranges (at most 255).
    pub missing_packets: Vec<MissingPackets>,
    /// Missing blocks (at most 255).
    pub missing_blocks: Vec<MissingBlock>,
}

impl NackPayload {
    /// Length without the lists.
    pub const FIXED_LEN: usize = 6;

    fn validate(&self) -> Result<()> {
        if self.missing_packets.is_empty() && self.missing_blocks.is_empty() {
            return Err(WireError::EmptyNack);
        }
        for m in &self.missing_packets {
            m.last()?;
        }
        Ok(())
    }

    /// Decodes the whole of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<NackPayload> {
        let mut r = Reader::new(bytes);
        let packet_number = r.u32("packet number")?;
        let n_ranges = r.u8("NACK range count")?;
        let n_blocks = r.u8("NACK block count")?;
        let mut missing_packets = Vec::with_capacity(usize::from(n_ranges).min(r.remaining() / 12));
        for _ in 0..n_ranges {
            missing_packets.push(MissingPackets {
                first: r.u64("NACK packet range")?,
                count: r.u32("NACK packet range")?,
            });
        }
        let mut missing_blocks = Vec::with_capacity(usize::from(n_blocks).min(r.remaining() / 8));
        for _ in 0..n_blocks {
            missing_blocks.push(MissingBlock {
                stream_id: r.u16("NACK block")?,
                message_number: r.u32("NACK block")?,
                block_index: r.u16("NACK block")?,
            });
        }
        r.finish("NACK")?;
        let nack = NackPayload {
            packet_number,
            missing_packets,
            missing_blocks,
        };
        nack.validate()?;
        Ok(nack)
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        Self::FIXED_LEN + 12 * self.missing_packets.len() + 8 * self.missing_blocks.len()
    }

    /// Writes the payload at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let count = |field, len: usize| {
            u8::try_from(len).map_err(|_| WireError::FieldOutOfRange {
                field,
                value: len as u64,
                max: 255,
            })
        };
        let n_ranges = count("NACK range count", self.missing_packets.len())?;
        let n_blocks = count("NACK block count", self.missing_blocks.len())?;
        self.validate()?;
        check_room(buf, self.buffer_len())?;
        let mut w = Writer::new(buf);
        w.u32(self.packet_number)?;
        w.u8(n_ranges)?;
        w.u8(n_blocks)?;
        for m in &self.missing_packets {
            w.u64(m.first)?;
            w.u32(m.count)?;
        }
        for b in &self.missing_blocks {
            w.u16(b.stream_id)?;
            w.u32(b.message_number)?;
            w.u16(b.block_index)?;
        }
        Ok(w.written())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_overflowing_ranges_are_errors() {
        assert_eq!(
            NackPayload::decode(&[0, 0, 0, 1, 0, 0]),
            Err(WireError::EmptyNack)
        );
        let bad = NackPayload {
            packet_number: 0,
            missing_packets: vec![MissingPackets {
                first: u64::MAX,
                count: 2,
            }],
            missing_blocks: vec![],
        };
        assert!(matches!(
            bad.emit(&mut [0u8; 64]),
            Err(WireError::BadNackRange { .. })
        ));
        let ok = NackPayload {
            missing_packets: vec![MissingPackets { first: 5, count: 3 }],
            missing_blocks: vec![MissingBlock {
                stream_id: 2,
                message_number: 7,
                block_index: 1,
            }],
            ..bad
        };
        let mut buf = [0u8; 64];
        let n = ok.emit(&mut buf).unwrap();
        assert_eq!(n, 6 + 12 + 8);
        assert_eq!(NackPayload::decode(&buf[..n]).unwrap(), ok);
        assert_eq!(ok.missing_packets[0].last(), Ok(7));
    }
}
