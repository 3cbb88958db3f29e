//! Payloads of our own design, one file per family. Each family has a
//! `decode(&[u8])` that consumes the whole payload (trailing bytes are an
//! error), a `buffer_len()` and an `emit(&mut [u8])`.
//!
//! Every post-handshake payload starts with the 32-bit truncated packet
//! number ([`crate::wire::packet_number`]); START and REJECT do not.

pub mod ack;
pub mod bare;
pub mod cwin;
pub mod data;
pub mod echo;
pub mod group;
pub mod nack;
pub mod start;

pub use ack::{AckEcnCounts, AckFrequency, AckPayload, AckRange, StreamCredit};
pub use bare::BarePayload;
pub use cwin::{CwinPayload, CwinReason};
pub use data::{
    CheckedFrames, DataHeaderSummary, DataPayload, FrameIter, Frames, Reliability, StreamFrame,
};
pub use echo::EchoPayload;
pub use group::GroupPayload;
pub use nack::{MissingBlock, MissingPackets, NackPayload};
pub use start::{RejectPayload, RejectReason, StartPayload};

use super::error::{Result, WireError};
use super::packet_type::PacketType;

/// A decoded payload. Which variant a packet type takes is fixed:
/// see [`Payload::decode`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Payload<'a> {
    /// START.
    Start(StartPayload<'a>),
    /// REJECT.
    Reject(RejectPayload<'a>),
    /// DATA.
    Data(DataPayload<'a>),
    /// ACK.
    Ack(AckPayload),
    /// NACK.
    Nack(NackPayload),
    /// ECHO, ECHO_1, ECHO_2.
    Echo(EchoPayload),
    /// CWIN.
    Cwin(CwinPayload),
    /// JOIN, LEAVE.
    Group(GroupPayload),
    /// END, FIN, IDLE, STATUS.
    Bare(BarePayload),
}

impl<'a> Payload<'a> {
    /// Decodes `bytes` (the payload only, no header and no tag) as the
    /// payload family of `pk_type`.
    pub fn decode(pk_type: PacketType, bytes: &'a [u8]) -> Result<Payload<'a>> {
        use PacketType as T;
        Ok(match pk_type {
            T::Start => Payload::Start(StartPayload::decode(bytes)?),
            T::Reject => Payload::Reject(RejectPayload::decode(bytes)?),
            T::Data => Payload::Data(DataPayload::decode(bytes)?),
            T::Ack => Payload::Ack(AckPayload::decode(bytes)?),
            T::Nack => Payload::Nack(NackPayload::decode(bytes)?),
            T::Echo | T::Echo1 | T::Echo2 => Payload::Echo(EchoPayload::decode(bytes)?),
            T::Cwin => Payload::Cwin(CwinPayload::decode(bytes)?),
            T::Join | T::Leave => Payload::Group(GroupPayload::decode(bytes)?),
            T::End | T::Fin | T::Idle | T::Status => Payload::Bare(BarePayload::decode(bytes)?),
        })
    }

    /// The family's name, for messages.
    pub const fn family(&self) -> &'static str {
        match self {
            Payload::Start(_) => "START",
            Payload::Reject(_) => "REJECT",
            Payload::Data(_) => "DATA",
            Payload::Ack(_) => "ACK",
            Payload::Nack(_) => "NACK",
            Payload::Echo(_) => "ECHO",
            Payload::Cwin(_) => "CWIN",
            Payload::Group(_) => "JOIN/LEAVE",
            Payload::Bare(_) => "END/FIN/IDLE/STATUS",
        }
    }

    /// Whether this payload is the one `pk_type` carries.
    pub fn fits(&self, pk_type: PacketType) -> bool {
        use PacketType as T;
        matches!(
            (self, pk_type),
            (Payload::Start(_), T::Start)
                | (Payload::Reject(_), T::Reject)
                | (Payload::Data(_), T::Data)
                | (Payload::Ack(_), T::Ack)
                | (Payload::Nack(_), T::Nack)
                | (Payload::Echo(_), T::Echo | T::Echo1 | T::Echo2)
                | (Payload::Cwin(_), T::Cwin)
                | (Payload::Group(_), T::Join | T::Leave)
                | (Payload::Bare(_), T::End | T::Fin | T::Idle | T::Status)
        )
    }

    /// An empty payload for `pk_type`: what a payload left out of
    /// `peregrine wire encode` means (packet number 0, no TLVs). `None` for
    /// DATA and NACK, which cannot be empty.
    pub fn empty(pk_type: PacketType) -> Option<Payload<'static>> {
        use PacketType as T;
        Some(match pk_type {
            T::Start => Payload::Start(StartPayload::default()),
            T::Reject => Payload::Reject(RejectPayload::default()),
            T::Data | T::Nack => return None,
            T::Ack => Payload::Ack(AckPayload::default()),
            T::Echo | T::Echo1 | T::Echo2 => Payload::Echo(EchoPayload::default()),
            T::Cwin => Payload::Cwin(CwinPayload::default()),
            T::Join | T::Leave => Payload::Group(GroupPayload::default()),
            T::End | T::Fin | T::Idle | T::Status => Payload::Bare(BarePayload::default()),
        })
    }

    /// The truncated packet number, for post-handshake payloads.
    pub fn packet_number(&self) -> Option<u32> {
        match self {
            Payload::Start(_) | Payload::Reject(_) => None,
            Payload::Data(p) => Some(p.packet_number),
            Payload::Ack(p) => Some(p.packet_number),
            Payload::Nack(p) => Some(p.packet_number),
            Payload::Echo(p) => Some(p.packet_number),
            Payload::Cwin(p) => Some(p.packet_number),
            Payload::Group(p) => Some(p.packet_number),
            Payload::Bare(p) => Some(p.packet_number),
        }
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        match self {
            Payload::Start(p) => p.buffer_len(),
            Payload::Reject(p) => p.buffer_len(),
            Payload::Data(p) => p.buffer_len(),
            Payload::Ack(p) => p.buffer_len(),
            Payload::Nack(p) => p.buffer_len(),
            Payload::Echo(p) => p.buffer_len(),
            Payload::Cwin(p) => p.buffer_len(),
            Payload::Group(p) => p.buffer_len(),
            Payload::Bare(p) => p.buffer_len(),
        }
    }

    /// Writes the payload at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        match self {
            Payload::Start(p) => p.emit(buf),
            Payload::Reject(p) => p.emit(buf),
            Payload::Data(p) => p.emit(buf),
            Payload::Ack(p) => p.emit(buf),
            Payload::Nack(p) => p.emit(buf),
            Payload::Echo(p) => p.emit(buf),
            Payload::Cwin(p) => p.emit(buf),
            Payload::Group(p) => p.emit(buf),
            Payload::Bare(p) => p.emit(buf),
        }
    }

    /// Fails with [`WireError::PayloadMismatch`] unless the payload fits `pk_type`.
    pub fn check_fits(&self, pk_type: PacketType) -> Result<()> {
        if self.fits(pk_type) {
            Ok(())
        } else {
            Err(WireError::PayloadMismatch {
                pk_type,
                payload: self.family(),
            })
        }
    }
}
