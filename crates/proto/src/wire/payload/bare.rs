//! END, FIN, IDLE and STATUS: a packet number and nothing else.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                     PACKET_NUMBER (32)                        |
//! +---------------------------------------------------------------+
//! ```
//!
//! What these packets mean lives in the header: REPLY_REQ/REPLY for the
//! END handshake and the STATUS poll, WINDOW_SIZE with W_VAL in a STATUS
//! reply, MESS_SEQ_NO in END (last message sent).

use crate::wire::cursor::{check_room, Reader, Writer};
use crate::wire::error::Result;

/// Payload of END, FIN, IDLE and STATUS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BarePayload {
    /// Low 32 bits of this packet's packet number.
    pub packet_number: u32,
}

impl BarePayload {
    /// Encoded length.
    pub const LEN: usize = 4;

    /// Decodes the whole of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<BarePayload> {
        let mut r = Reader::new(bytes);
        let packet_number = r.u32("packet number")?;
        r.finish("END/FIN/IDLE/STATUS")?;
        Ok(BarePayload { packet_number })
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
        Ok(w.written())
    }
}
