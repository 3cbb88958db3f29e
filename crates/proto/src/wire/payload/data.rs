//! DATA: a packet number, then one or more stream frames, so one datagram
//! can carry several small messages of several streams.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                     PACKET_NUMBER (32)                        |
//! +---------------------------------------------------------------+
//! |  stream frame  |  stream frame  | ...          (at least one)
//! +----------------+----------------+---
//!
//! stream frame (13 bytes + LENGTH):
//! +-------------------------------+-+---+---------+---------------+
//! |          STREAM_ID            |E| R | reservd |  MESSAGE_NO   |
//! +-------------------------------+-+---+---------+---------------+
//! |       MESSAGE_NO (cont.)                      |  BLOCK_INDEX  |
//! +---------------+-------------------------------+---------------+
//! | BLOCK_INDEX   |          BLOCK_COUNT          |    LENGTH     |
//! +---------------+-------------------------------+---------------+
//! |    LENGTH     |  DATA (LENGTH bytes)                      ... //
//! +---------------+-----------------------------------------------+
//! ```
//!
//! E (0x80) is end-of-message and must equal `BLOCK_INDEX == BLOCK_COUNT-1`;
//! R (0x60) is the reliability; the low five bits are reserved (zero).
//! A frame with BLOCK_COUNT 0 (then BLOCK_INDEX 0, LENGTH 0, E clear) is a
//! skip frame: message MESSAGE_NO was abandoned by the sender.

use crate::wire::cursor::{check_room, Reader, Writer};
use crate::wire::error::{Result, WireError};

const FLAG_END: u8 = 0x80;
const RELIABILITY_SHIFT: u8 = 5;
const RELIABILITY_MASK: u8 = 0x60;
const RESERVED_MASK: u8 = 0x1f;

/// How hard the sender tries to deliver a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Reliability {
    /// Retransmitted until acknowledged.
    #[default]
    Reliable,
    /// Retransmitted within the stream's limit (deadline or attempts), then dropped.
    Partial,
    /// Never retransmitted.
    Unreliable,
    /// Retransmitted until acknowledged, delivered as soon as complete
    /// (not in order).
    ReliableUnordered,
}

impl Reliability {
    /// 2-bit wire code.
    pub const fn code(self) -> u8 {
        match self {
            Reliability::Reliable => 0,
            Reliability::Partial => 1,
            Reliability::Unreliable => 2,
            Reliability::ReliableUnordered => 3,
        }
    }
    /// The reliability with this code (0–3).
    pub fn from_code(code: u8) -> Result<Reliability> {
        match code {
            0 => Ok(Reliability::Reliable),
            1 => Ok(Reliability::Partial),
            2 => Ok(Reliability::Unreliable),
            3 => Ok(Reliability::ReliableUnordered),
            _ => Err(WireError::ReservedReliability),
        }
    }
    /// JSON name.
    pub const fn name(self) -> &'static str {
        match self {
            Reliability::Reliable => "reliable",
            Reliability::Partial => "partial",
            Reliability::Unreliable => "unreliable",
            Reliability::ReliableUnordered => "reliable_unordered",
        }
    }
    /// The reliability with this JSON name.
    pub fn from_name(name: &str) -> Option<Reliability> {
        [
            Reliability::Reliable,
            Reliability::Partial,
            Reliability::Unreliable,
            Reliability::ReliableUnordered,
        ]
        .into_iter()
        .find(|r| r.name() == name)
    }
}

/// One block of one message of one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamFrame<'a> {
    /// The stream.
    pub stream_id: u16,
    /// Per-stream message number (starts at 0, +1 per message).
    pub message_number: u32,
    /// Which block of the message this is, `< block_count`.
    pub block_index: u16,
    /// How many blocks the message has, ≥ 1.
    pub block_count: u16,
    /// Delivery guarantee of the message.
    pub reliability: Reliability,
    /// The block's bytes (at most 65,535).
    pub data: &'a [u8],
}

impl<'a> StreamFrame<'a> {
    /// Bytes before DATA.
    pub const HEADER_LEN: usize = 13;

    /// Whether this block ends its message (the E bit).
    pub fn is_end_of_message(&self) -> bool {
        self.block_count > 0 && self.block_index == self.block_count - 1
    }

    /// Whether this is a skip frame (BLOCK_COUNT 0): the sender abandoned
    /// message `message_number`; the receiver must not wait for it.
    pub fn is_skip(&self) -> bool {
        self.block_count == 0
    }

    /// The skip frame announcing that `message_number` of `stream_id` was
    /// abandoned.
    pub fn skip(
        stream_id: u16,
        message_number: u32,
        reliability: Reliability,
    ) -> StreamFrame<'static> {
        StreamFrame {
            stream_id,
            message_number,
            block_index: 0,
            block_count: 0,
            reliability,
            data: &[],
        }
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        Self::HEADER_LEN + self.data.len()
    }

    fn check_blocks(&self) -> Result<()> {
        if self.is_skip() {
            if self.block_index != 0 {
                return Err(WireError::BadBlock {
                    index: self.block_index,
                    count: 0,
                });
            }
            if !self.data.is_empty() {
                return Err(WireError::FieldOutOfRange {
                    field: "skip frame length",
                    value: self.data.len() as u64,
                    max: 0,
                });
            }
            return Ok(());
        }
        if self.block_index >= self.block_count {
            return Err(WireError::BadBlock {
                index: self.block_index,
                count: self.block_count,
            });
        }
        Ok(())
    }

    fn decode(r: &mut Reader<'a>) -> Result<StreamFrame<'a>> {
        let stream_id = r.u16("stream frame header")?;
        let flags = r.u8("stream frame header")?;
        let message_number = r.u32("stream frame header")?;
        let block_index = r.u16("stream frame header")?;
        let block_count = r.u16("stream frame header")?;
        let len = r.u16("stream frame header")?;
        if flags & RESERVED_MASK != 0 {
            return Err(WireError::ReservedFrameFlags { flags });
        }
        let reliability = Reliability::from_code((flags & RELIABILITY_MASK) >> RELIABILITY_SHIFT)?;
        let data = r.take(usize::from(len), "stream frame data")?;
        let frame = StreamFrame {
            stream_id,
            message_number,
            block_index,
            block_count,
            reliability,
            data,
        };
        frame.check_blocks()?;
        let flag = flags & FLAG_END != 0;
        if flag != frame.is_end_of_message() {
            return Err(WireError::EndOfMessageMismatch {
                flag,
                index: block_index,
                count: block_count,
                is: if frame.is_end_of_message() {
                    "is"
                } else {
                    "is not"
                },
            });
        }
        Ok(frame)
    }

    fn emit(&self, w: &mut Writer<'_>) -> Result<()> {
        self.check_blocks()?;
        let len = u16::try_from(self.data.len()).map_err(|_| WireError::FieldOutOfRange {
            field: "stream frame length",
            value: self.data.len() as u64,
            max: u16::MAX.into(),
        })?;
        let end = if self.is_end_of_message() {
            FLAG_END
        } else {
            0
        };
        w.u16(self.stream_id)?;
        w.u8(end | (self.reliability.code() << RELIABILITY_SHIFT))?;
        w.u32(self.message_number)?;
        w.u16(self.block_index)?;
        w.u16(self.block_count)?;
        w.u16(len)?;
        w.put(self.data)
    }
}

/// What the base header's MESS_SEQ_NO, PBLOCK and TBLOCK should say about
/// a DATA datagram (see docs/protocol.md, "Header fields of a DATA datagram").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DataHeaderSummary {
    /// Low 16 bits of the first frame's message number.
    pub mess_seq_no: u16,
    /// The first frame's block index, if its message has at most 255 blocks; else 0.
    pub pblock: u8,
    /// The first frame's block count, if at most 255; else 0.
    pub tblock: u8,
}

/// The encoded frames of a received DATA payload, every one checked by
/// [`DataPayload::decode`]: iterating them decodes each frame header again
/// (13 bytes, no allocation) instead of keeping a list per packet — except
/// for a payload of one frame (every bulk datagram), whose frame is kept
/// as decoded, so the receiver's passes over it decode nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CheckedFrames<'a> {
    bytes: &'a [u8],
    /// The frame, when it is the only one.
    only: Option<StreamFrame<'a>>,
}

impl<'a> CheckedFrames<'a> {
    /// The encoded frames.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// The frames of a DATA payload: as received (a checked view of the
/// datagram) or as built by a sender (a list, borrowed or owned).
#[derive(Clone)]
pub enum Frames<'a> {
    /// Decoded from the wire; see [`CheckedFrames`].
    Wire(CheckedFrames<'a>),
    /// Built in memory, in frame order, borrowed (a sender's list).
    Slice(&'a [StreamFrame<'a>]),
    /// Built in memory, in frame order, owned (tests, the JSON encoder).
    Owned(Vec<StreamFrame<'a>>),
}

impl<'a> Frames<'a> {
    /// The frames in order. O(1) to create; each step decodes one frame
    /// header of a received payload.
    pub fn iter(&self) -> FrameIter<'_, 'a> {
        match self {
            Frames::Wire(c) => FrameIter(match c.only {
                Some(f) => IterInner::One(Some(f)),
                None => IterInner::Wire(Reader::new(c.bytes)),
            }),
            Frames::Slice(l) => FrameIter(IterInner::List(l.iter())),
            Frames::Owned(l) => FrameIter(IterInner::List(l.iter())),
        }
    }

    /// How many frames. O(frames).
    pub fn len(&self) -> usize {
        match self {
            Frames::Wire(c) if c.only.is_some() => 1,
            Frames::Wire(_) => self.iter().count(),
            Frames::Slice(l) => l.len(),
            Frames::Owned(l) => l.len(),
        }
    }

    /// Whether there is no frame (a valid DATA payload has one).
    pub fn is_empty(&self) -> bool {
        match self {
            Frames::Wire(c) => c.bytes.is_empty(),
            Frames::Slice(l) => l.is_empty(),
            Frames::Owned(l) => l.is_empty(),
        }
    }

    /// The first frame.
    pub fn first(&self) -> Option<StreamFrame<'a>> {
        self.iter().next()
    }

    /// Encoded length of the frames.
    pub fn buffer_len(&self) -> usize {
        match self {
            Frames::Wire(c) => c.bytes.len(),
            Frames::Slice(l) => l.iter().map(StreamFrame::buffer_len).sum(),
            Frames::Owned(l) => l.iter().map(StreamFrame::buffer_len).sum(),
        }
    }
}

/// Iterator over [`Frames`].
#[derive(Clone)]
pub struct FrameIter<'s, 'a>(IterInner<'s, 'a>);

#[derive(Clone)]
enum IterInner<'s, 'a> {
    /// Decoding a checked payload (stops at the end; a checked payload
    /// has no bad frame, and a bad one would end the iteration, never panic).
    Wire(Reader<'a>),
    /// Walking a list.
    List(std::slice::Iter<'s, StreamFrame<'a>>),
    /// The one frame of a checked payload, as decoded.
    One(Option<StreamFrame<'a>>),
}

impl<'a> Iterator for FrameIter<'_, 'a> {
    type Item = StreamFrame<'a>;
    fn next(&mut self) -> Option<StreamFrame<'a>> {
        match &mut self.0 {
            IterInner::Wire(r) => {
                if r.is_empty() {
                    return None;
                }
                match StreamFrame::decode(r) {
                    Ok(f) => Some(f),
                    Err(_) => {
                        *r = Reader::new(&[]);
                        None
                    }
                }
            }
            IterInner::List(i) => i.next().copied(),
            IterInner::One(f) => f.take(),
        }
    }
}

impl Default for Frames<'_> {
    fn default() -> Self {
        Frames::Slice(&[])
    }
}

impl<'a> From<Vec<StreamFrame<'a>>> for Frames<'a> {
    fn from(v: Vec<StreamFrame<'a>>) -> Frames<'a> {
        Frames::Owned(v)
    }
}

impl<'a> From<&'a [StreamFrame<'a>]> for Frames<'a> {
    fn from(v: &'a [StreamFrame<'a>]) -> Frames<'a> {
        Frames::Slice(v)
    }
}

impl std::fmt::Debug for Frames<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Frames are equal when they list the same frames, however held.
impl PartialEq for Frames<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Frames<'_> {}

impl std::hash::Hash for Frames<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        for f in self.iter() {
            f.hash(state);
        }
    }
}

/// Payload of DATA.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DataPayload<'a> {
    /// Low 32 bits of this packet's packet number.
    pub packet_number: u32,
    /// The frames, in the order the scheduler packed them (at least one).
    pub frames: Frames<'a>,
}

impl<'a> DataPayload<'a> {
    /// Decodes the whole of `bytes`: every frame is checked, none is
    /// copied or listed (the payload keeps a view of them; a lone frame
    /// is kept as decoded). O(frames), no allocation.
    pub fn decode(bytes: &'a [u8]) -> Result<DataPayload<'a>> {
        let mut r = Reader::new(bytes);
        let packet_number = r.u32("packet number")?;
        let rest = r.clone().rest();
        if r.is_empty() {
            return Err(WireError::NoFrames);
        }
        let first = StreamFrame::decode(&mut r)?;
        let only = r.is_empty().then_some(first);
        while !r.is_empty() {
            StreamFrame::decode(&mut r)?;
        }
        Ok(DataPayload {
            packet_number,
            frames: Frames::Wire(CheckedFrames { bytes: rest, only }),
        })
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        4 + self.frames.buffer_len()
    }

    /// Writes the payload at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.frames.is_empty() {
            return Err(WireError::NoFrames);
        }
        check_room(buf, self.buffer_len())?;
        let mut w = Writer::new(buf);
        w.u32(self.packet_number)?;
        match &self.frames {
            Frames::Wire(c) => w.put(c.bytes)?,
            Frames::Slice(_) | Frames::Owned(_) => {
                for f in self.frames.iter() {
                    f.emit(&mut w)?;
                }
            }
        }
        Ok(w.written())
    }

    /// The header summary the packetizer writes for this payload: the base
    /// header describes the first frame, so a single-frame datagram of a
    /// message of ≤ 255 blocks reads exactly as SLTP.
    pub fn header_summary(&self) -> DataHeaderSummary {
        let Some(first) = self.frames.first() else {
            return DataHeaderSummary::default();
        };
        let (pblock, tblock) = match (
            u8::try_from(first.block_index),
            u8::try_from(first.block_count),
        ) {
            (Ok(p), Ok(t)) => (p, t),
            _ => (0, 0),
        };
        DataHeaderSummary {
            mess_seq_no: first.message_number as u16,
            pblock,
            tblock,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(index: u16, count: u16) -> StreamFrame<'static> {
        StreamFrame {
            stream_id: 1,
            message_number: 0x0001_0002,
            block_index: index,
            block_count: count,
            reliability: Reliability::Partial,
            data: b"hi",
        }
    }

    #[test]
    fn flags_byte_and_summary() {
        let p = DataPayload {
            packet_number: 9,
            frames: vec![frame(2, 3)].into(),
        };
        let mut buf = [0u8; 64];
        let n = p.emit(&mut buf).unwrap();
        assert_eq!(n, 4 + 13 + 2);
        assert_eq!(buf[6], 0x80 | 0x20);
        assert_eq!(DataPayload::decode(&buf[..n]).unwrap(), p);
        let s = p.header_summary();
        assert_eq!((s.mess_seq_no, s.pblock, s.tblock), (2, 2, 3));
    }

    #[test]
    fn decoded_frames_are_a_view_that_iterates_like_the_list() {
        let frames = vec![
            frame(0, 3),
            StreamFrame::skip(4, 7, Reliability::Partial),
            frame(2, 3),
        ];
        let p = DataPayload {
            packet_number: 5,
            frames: frames.clone().into(),
        };
        let mut buf = [0u8; 128];
        let n = p.emit(&mut buf).unwrap();
        let d = DataPayload::decode(&buf[..n]).unwrap();
        assert!(matches!(d.frames, Frames::Wire(_)), "no list per packet");
        assert_eq!(d.frames.iter().collect::<Vec<_>>(), frames);
        assert_eq!(d.frames.len(), 3);
        assert_eq!(d.buffer_len(), n);
        assert_eq!(d, p, "equal however held");
        let mut again = [0u8; 128];
        assert_eq!(d.emit(&mut again), Ok(n));
        assert_eq!(again[..n], buf[..n]);
    }

    #[test]
    fn malformed_frames() {
        assert_eq!(DataPayload::decode(&[0, 0, 0, 1]), Err(WireError::NoFrames));
        let mut buf = [0u8; 64];
        let n = DataPayload {
            packet_number: 1,
            frames: vec![frame(0, 2)].into(),
        }
        .emit(&mut buf)
        .unwrap();
        let mut bad = buf;
        bad[6] |= 0x80;
        assert!(matches!(
            DataPayload::decode(&bad[..n]),
            Err(WireError::EndOfMessageMismatch { flag: true, .. })
        ));
        bad = buf;
        bad[6] |= 0x60;
        assert_eq!(
            DataPayload::decode(&bad[..n])
                .unwrap()
                .frames
                .first()
                .unwrap()
                .reliability,
            Reliability::ReliableUnordered,
            "R = 3 is reliable-unordered"
        );
        bad = buf;
        bad[6] |= 0x01;
        assert!(matches!(
            DataPayload::decode(&bad[..n]),
            Err(WireError::ReservedFrameFlags { .. })
        ));
        bad = buf;
        bad[13] = 0; // block_count = 0: a skip frame, which carries no data
        bad[14] = 0;
        assert!(matches!(
            DataPayload::decode(&bad[..n]),
            Err(WireError::FieldOutOfRange { .. })
        ));
        assert!(matches!(
            DataPayload::decode(&buf[..n - 1]),
            Err(WireError::Truncated {
                what: "stream frame data",
                ..
            })
        ));
    }
}
