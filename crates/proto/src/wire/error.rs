//! The one error type of the wire format.
//!
//! Every malformed input maps to exactly one variant, and every message
//! names the field or structure that is wrong, so that `peregrine wire
//! decode` can print it as a one-line diagnosis.

use super::packet_type::PacketType;

/// Why a datagram could not be decoded or encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The datagram is shorter than the fixed 20-byte base header.
    #[error("datagram is {len} bytes, shorter than the 20-byte SLTP header")]
    ShorterThanHeader {
        /// Bytes received.
        len: usize,
    },
    /// PK_TYPE is 0, which SLTP reserves as invalid.
    #[error("PK_TYPE 0 is reserved (invalid packet type)")]
    ReservedPacketType,
    /// TOTAL_LEN does not equal the number of bytes in the datagram.
    #[error("TOTAL_LEN is {total_len} but the datagram is {actual} bytes")]
    TotalLenMismatch {
        /// The header's TOTAL_LEN.
        total_len: u16,
        /// The datagram's real length.
        actual: usize,
    },
    /// ST_CKS is set and CHKSUM is not the RFC 1071 checksum of the datagram.
    #[error("CHKSUM is {found:#06x} but the datagram's checksum is {computed:#06x}")]
    BadChecksum {
        /// The header's CHKSUM.
        found: u16,
        /// The checksum computed over the datagram.
        computed: u16,
    },
    /// The datagram is too short to hold the authentication tag it must carry.
    #[error("datagram has {available} bytes after the header, too few for a {tag_len}-byte authentication tag")]
    MissingAuthTag {
        /// Tag length negotiated for the connection.
        tag_len: usize,
        /// Bytes after the base header.
        available: usize,
    },
    /// A structure ended before one of its fields.
    #[error("truncated {what}: needs {needed} more bytes, {available} left")]
    Truncated {
        /// The field or structure that was cut short.
        what: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// Bytes are left over after a payload whose layout is complete.
    #[error("{count} trailing bytes after the {what} payload")]
    TrailingBytes {
        /// The payload.
        what: &'static str,
        /// How many bytes are left over.
        count: usize,
    },
    /// A TLV has type 0, which is reserved.
    #[error("TLV type 0 is reserved")]
    ReservedTlvType,
    /// A known TLV's value has the wrong length.
    #[error("{name} TLV has a {len}-byte value, expected {expected}")]
    BadTlvLength {
        /// TLV name.
        name: &'static str,
        /// Length found.
        len: usize,
        /// Length(s) allowed, in words.
        expected: &'static str,
    },
    /// A known TLV's value is not one the protocol allows.
    #[error("{name} TLV has an invalid value: {problem}")]
    BadTlvValue {
        /// TLV name.
        name: &'static str,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A known TLV appears twice.
    #[error("duplicate {name} TLV")]
    DuplicateTlv {
        /// TLV name.
        name: &'static str,
    },
    /// A DATA datagram carries no stream frame.
    #[error("DATA payload carries no stream frame")]
    NoFrames,
    /// A stream frame's reserved flag bits are not zero.
    #[error("stream frame flags {flags:#04x} set reserved bits")]
    ReservedFrameFlags {
        /// The flags byte.
        flags: u8,
    },
    /// A stream frame uses the reserved reliability code 3.
    #[error("stream frame uses reserved reliability code 3")]
    ReservedReliability,
    /// A stream frame's block index is not below its block count.
    #[error("stream frame block index {index} is not below block count {count}")]
    BadBlock {
        /// BLOCK_INDEX.
        index: u16,
        /// BLOCK_COUNT.
        count: u16,
    },
    /// A stream frame's end-of-message flag disagrees with its block index.
    #[error(
        "stream frame end-of-message flag is {flag} but block {index} of {count} {is} the last"
    )]
    EndOfMessageMismatch {
        /// The flag as received.
        flag: bool,
        /// BLOCK_INDEX.
        index: u16,
        /// BLOCK_COUNT.
        count: u16,
        /// "is" or "is not", for the message.
        is: &'static str,
    },
    /// An ACK range reaches below packet number 0.
    #[error("ACK range {range} reaches below packet number 0")]
    AckRangeUnderflow {
        /// Index of the range (0 = the first range).
        range: usize,
    },
    /// A NACK packet range is empty or runs past the largest packet number.
    #[error("NACK packet range starting at {first} with count {count} is empty or overflows")]
    BadNackRange {
        /// First missing packet number.
        first: u64,
        /// Number of missing packets.
        count: u32,
    },
    /// A NACK names neither missing packets nor missing blocks.
    #[error("NACK names no missing packet and no missing block")]
    EmptyNack,
    /// ECHO padding contains a non-zero byte.
    #[error("ECHO padding contains a non-zero byte")]
    NonZeroPadding,
    /// The payload given for encoding does not belong to the header's PK_TYPE.
    #[error("{payload} payload cannot be sent in a {pk_type} packet")]
    PayloadMismatch {
        /// The header's packet type.
        pk_type: PacketType,
        /// The payload family given.
        payload: &'static str,
    },
    /// An ECHO carrying a control message (NEW_CONNECTION_ID,
    /// KEY_UPDATE: `wire::control`) has a value the protocol does not allow.
    #[error("{what}: {problem}")]
    BadControl {
        /// The control message and field, e.g. `NEW_CONNECTION_ID id`.
        what: &'static str,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A value given for encoding does not fit its field.
    #[error("{field} is {value}, more than its maximum {max}")]
    FieldOutOfRange {
        /// Field name.
        field: &'static str,
        /// Value given.
        value: u64,
        /// Largest value the field holds.
        max: u64,
    },
    /// The encoded datagram would exceed the 65,535 bytes TOTAL_LEN can express.
    #[error("datagram would be {len} bytes, more than TOTAL_LEN's 65535")]
    DatagramTooLong {
        /// Length the datagram would have.
        len: usize,
    },
    /// The caller's buffer cannot hold the encoded form.
    #[error("buffer of {available} bytes is too small, {needed} needed")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
}

/// Result alias for the wire format.
pub type Result<T> = core::result::Result<T, WireError>;
