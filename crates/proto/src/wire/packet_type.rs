//! PK_TYPE: the 4-bit packet type (seed 003 Table II, codes fixed by
//! ARCHITECTURE.md).

use core::fmt;

use super::error::{Result, WireError};

/// The type of an SLTP packet. Code 0 is reserved and never decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum PacketType {
    /// First packet of a connection (with REPLY_REQ) and its answer (with REPLY).
    Start = 1,
    /// The connection request has been rejected.
    Reject = 2,
    /// Stream data.
    Data = 3,
    /// Acknowledgement.
    Ack = 4,
    /// Selective retransmission request.
    Nack = 5,
    /// Close a connection.
    End = 6,
    /// Final packet sent on a connection.
    Fin = 7,
    /// Round-trip-time probe.
    Echo = 8,
    /// First packet of a back-to-back probe pair.
    Echo1 = 9,
    /// Second packet of a back-to-back probe pair.
    Echo2 = 10,
    /// Flow-control poll while the peer's window is closed.
    Status = 11,
    /// Sent when there is no data to send.
    Idle = 12,
    /// Change the receive window, with a reason.
    Cwin = 13,
    /// Join a multicast group.
    Join = 14,
    /// Leave a multicast group.
    Leave = 15,
}

impl PacketType {
    /// Every packet type, in code order.
    pub const ALL: [PacketType; 15] = [
        PacketType::Start,
        PacketType::Reject,
        PacketType::Data,
        PacketType::Ack,
        PacketType::Nack,
        PacketType::End,
        PacketType::Fin,
        PacketType::Echo,
        PacketType::Echo1,
        PacketType::Echo2,
        PacketType::Status,
        PacketType::Idle,
        PacketType::Cwin,
        PacketType::Join,
        PacketType::Leave,
    ];

    /// The type with this 4-bit code; 0 is [`WireError::ReservedPacketType`].
    /// Codes above 15 cannot come from the header and are reported the same way.
    pub fn from_code(code: u8) -> Result<PacketType> {
        match code {
            1..=15 => PacketType::ALL
                .get(usize::from(code) - 1)
                .copied()
                .ok_or(WireError::ReservedPacketType),
            _ => Err(WireError::ReservedPacketType),
        }
    }

    /// The 4-bit code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The SLTP name, e.g. `"ECHO_1"`.
    pub const fn name(self) -> &'static str {
        match self {
            PacketType::Start => "START",
            PacketType::Reject => "REJECT",
            PacketType::Data => "DATA",
            PacketType::Ack => "ACK",
            PacketType::Nack => "NACK",
            PacketType::End => "END",
            PacketType::Fin => "FIN",
            PacketType::Echo => "ECHO",
            PacketType::Echo1 => "ECHO_1",
            PacketType::Echo2 => "ECHO_2",
            PacketType::Status => "STATUS",
            PacketType::Idle => "IDLE",
            PacketType::Cwin => "CWIN",
            PacketType::Join => "JOIN",
            PacketType::Leave => "LEAVE",
        }
    }

    /// The type with this SLTP name (case-sensitive, as [`PacketType::name`] prints it).
    pub fn from_name(name: &str) -> Option<PacketType> {
        PacketType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether packets of this type belong to the handshake and so carry no
    /// packet number and never an authentication tag (START and REJECT).
    pub const fn is_handshake(self) -> bool {
        matches!(self, PacketType::Start | PacketType::Reject)
    }
}

impl fmt::Display for PacketType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_architecture_ones() {
        for (i, t) in PacketType::ALL.iter().enumerate() {
            assert_eq!(usize::from(t.code()), i + 1);
            assert_eq!(PacketType::from_code(t.code()), Ok(*t));
            assert_eq!(PacketType::from_name(t.name()), Some(*t));
        }
        assert_eq!(PacketType::Echo2.code(), 10);
        assert_eq!(PacketType::Leave.code(), 15);
        assert_eq!(PacketType::from_code(0), Err(WireError::ReservedPacketType));
        assert_eq!(
            PacketType::from_code(16),
            Err(WireError::ReservedPacketType)
        );
    }
}
