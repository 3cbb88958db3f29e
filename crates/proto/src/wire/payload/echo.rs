//! ECHO, ECHO_1 and ECHO_2: RTT probes and SLTP's back-to-back packet pair.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                     PACKET_NUMBER (32)                        |
//! +---------------------------------------------------------------+
//! |                        PROBE_ID (32)                          |
//! +---------------------------------------------------------------+
//! |                     TIMESTAMP_NS (64)                         |
//! |                                                               |
//! +---------------------------------------------------------------+
//! |              zero PADDING up to the end of the payload   ... //
//! +---------------------------------------------------------------+
//! ```
//!
//! A probe is sent with REPLY_REQ; the answer has the same type, REPLY set,
//! and echoes PROBE_ID and TIMESTAMP_NS verbatim. ECHO_1 and ECHO_2 of one
//! pair share a PROBE_ID. Padding gives the probes the size the packet-pair
//! estimate needs; answers usually carry none.

use crate::wire::cursor::{check_room, Reader, Writer};
use crate::wire::error::{Result, WireError};

/// Payload of ECHO, ECHO_1 and ECHO_2.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct EchoPayload {
    /// Low 32 bits of this packet's packet number.
    pub packet_number: u32,
    /// Identifies the probe (shared by the two packets of a pair).
    pub probe_id: u32,
    /// The prober's send time (`peregrine_cc::Time` nanoseconds), echoed back.
    pub timestamp_ns: u64,
    /// Bytes of zero padding after the fixed fields.
    pub padding_len: u16,
}

impl EchoPayload {
    /// Length without padding.
    pub const FIXED_LEN: usize = 16;

    /// Decodes the whole of `bytes`; the padding must be zero.
    pub fn decode(bytes: &[u8]) -> Result<EchoPayload> {
        let mut r = Reader::new(bytes);
        let packet_number = r.u32("packet number")?;
        let probe_id = r.u32("ECHO probe id")?;
        let timestamp_ns = r.u64("ECHO timestamp")?;
        let padding = r.rest();
        if padding.iter().any(|&b| b != 0) {
            return Err(WireError::NonZeroPadding);
        }
        let padding_len = u16::try_from(padding.len())
            .map_err(|_| WireError::DatagramTooLong { len: bytes.len() })?;
        Ok(EchoPayload {
            packet_number,
            probe_id,
            timestamp_ns,
            padding_len,
        })
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        Self::FIXED_LEN + usize::from(self.padding_len)
    }

    /// Writes the payload at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        check_room(buf, self.buffer_len())?;
        let mut w = Writer::new(buf);
        w.u32(self.packet_number)?;
        w.u32(self.probe_id)?;
        w.u64(self.timestamp_ns)?;
        w.zeros(usize::from(self.padding_len))?;
        Ok(w.written())
    }
}
