//! # The SLTP wire format
//!
//! Bytes in, typed values out, and back. This module knows nothing of
//! connections: it turns one datagram into a [`DatagramRepr`] (base
//! [`HeaderRepr`] + [`Payload`] + authentication-tag area) and writes one
//! back. `docs/protocol.md` is the byte-by-byte specification, with test
//! vectors that `tests/vectors.rs` checks both ways.
//!
//! ## The never-panic contract
//!
//! Datagrams come from the network, so decoding treats every byte as
//! hostile. Modelled on smoltcp's `wire`:
//!
//! * Every read goes through a bounds-checked cursor (`cursor::Reader`);
//!   nothing indexes input without a prior length check, and arithmetic on
//!   values taken from the input is checked (`checked_sub`, `try_from`).
//! * Every malformed input is a [`WireError`] variant whose message names
//!   the field at fault; decoding never panics, whatever the bytes
//!   (property tests and one cargo-fuzz target per decoder check it).
//! * Decoders consume their whole input: trailing bytes are an error, so
//!   there is exactly one encoding of each value and
//!   `emit(decode(x)) == x` for every datagram that decodes.
//! * Encoders write into the caller's `&mut [u8]` and return the length or
//!   [`WireError::BufferTooSmall`]; they never allocate. Decoded forms
//!   borrow byte strings from the input and hold small `Vec`s of frames,
//!   ranges and TLVs (one allocation each per datagram at most).
//!
//! ## Layout
//!
//! * [`header`]: the 20-byte base header ([`Header`] checked view,
//!   [`HeaderRepr`] parsed form), [`packet_type`], [`flags`], [`checksum`].
//! * [`payload`]: one module per payload family; [`tlv`] for the START
//!   extensions; [`packet_number`] for the 32-bit truncation rule.
//! * [`datagram`]: whole-datagram decode and encode, TOTAL_LEN, CHKSUM and
//!   the tag area.

pub mod checksum;
pub mod control;
pub(crate) mod cursor;
pub mod datagram;
pub mod error;
pub mod flags;
pub mod header;
pub mod packet_number;
pub mod packet_type;
pub mod payload;
pub mod tlv;

pub use checksum::{datagram_checksum, internet_checksum};
pub use control::Control;
pub use datagram::{peek_packet_number, DatagramRepr, AUTH_TAG_LEN, MAX_DATAGRAM_LEN};
pub use error::{Result, WireError};
pub use flags::Flags;
pub use header::{Header, HeaderRepr, HEADER_LEN};
pub use packet_number::{expand_packet_number, truncate_packet_number};
pub use packet_type::PacketType;
pub use payload::{
    AckEcnCounts, AckFrequency, AckPayload, AckRange, BarePayload, CheckedFrames, CwinPayload,
    CwinReason, DataHeaderSummary, DataPayload, EchoPayload, FrameIter, Frames, GroupPayload,
    MissingBlock, MissingPackets, NackPayload, Payload, RejectPayload, RejectReason, Reliability,
    StartPayload, StreamCredit, StreamFrame,
};
pub use tlv::{StartupMode, Tlv, PROTOCOL_VERSION, RETRY_TOKEN_MAX};
