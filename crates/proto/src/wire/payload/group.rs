//! JOIN and LEAVE: join or leave a multicast group.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                     PACKET_NUMBER (32)                        |
//! +---------------------------------------------------------------+
//! |                        GROUP_ID (32)                          |
//! +---------------------------------------------------------------+
//! ```

use crate::wire::cursor::{check_room, Reader, Writer};
use crate::wire::error::Result;

/// Payload of JOIN and LEAVE.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GroupPayload {
    /// Low 32 bits of this packet's packet number.
    pub packet_number: u32,
    /// The multicast group.
    pub group_id: u32,
}

impl GroupPayload {
    /// Encoded length.
    pub const LEN: usize = 8;

    /// Decodes the whole of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<GroupPayload> {
        let mut r = Reader::new(bytes);
        let packet_number = r.u32("packet number")?;
        let group_id = r.u32("JOIN/LEAVE group id")?;
        r.finish("JOIN/LEAVE")?;
        Ok(GroupPayload {
            packet_number,
            group_id,
        })
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the payload at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        check_room(buf, Self::LEN)?;
        let mut w = Writer::new(buf);
        w.u32(self.packet_number)?;
        w.u32(self.group_id)?;
        Ok(w.written())
    }
}
