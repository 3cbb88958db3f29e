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
//! |  optional: ARRIVAL tag (8) = 1, ARRIVAL_NS (64)             ... //
//! +---------------------------------------------------------------+
//! |              zero PADDING up to the end of the payload   ... //
//! +---------------------------------------------------------------+
//! ```
//!
//! A probe is sent with REPLY_REQ; the answer has the same type, REPLY set,
//! and echoes PROBE_ID and TIMESTAMP_NS verbatim. ECHO_1 and ECHO_2 of one
//! pair share a PROBE_ID. Padding gives the probes the size the packet-pair
//! estimate needs; answers usually carry none.
//!
//! An answer to ECHO_1 or ECHO_2 also carries ARRIVAL_NS, the probe's
//! arrival time at the answering side (its own clock, nanoseconds; the
//! kernel's per-datagram receive time in the runtime), after a one-byte
//! tag of value 1: the prober takes the pair's dispersion from the two
//! arrivals, so nothing on the return path moves it (docs/protocol.md §6).
//! The byte after the fixed fields is 0 (padding) or 1 (ARRIVAL); any
//! other value is an error, so older all-zero padding decodes unchanged.

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
    /// In an answer to ECHO_1/ECHO_2: when the probe arrived at the
    /// answering side (its clock, nanoseconds).
    pub arrival_ns: Option<u64>,
    /// Bytes of zero padding after the fixed fields.
    pub padding_len: u16,
}

impl EchoPayload {
    /// Length without ARRIVAL and padding.
    pub const FIXED_LEN: usize = 16;
    /// Length of the ARRIVAL field with its tag.
    pub const ARRIVAL_LEN: usize = 9;
    /// The tag byte that introduces ARRIVAL_NS.
    const ARRIVAL_TAG: u8 = 1;

    /// Decodes the whole of `bytes`; the padding must be zero.
    pub fn decode(bytes: &[u8]) -> Result<EchoPayload> {
        let mut r = Reader::new(bytes);
        let packet_number = r.u32("packet number")?;
        let probe_id = r.u32("ECHO probe id")?;
        let timestamp_ns = r.u64("ECHO timestamp")?;
        let mut arrival_ns = None;
        if bytes.get(Self::FIXED_LEN) == Some(&Self::ARRIVAL_TAG) {
            r.u8("ECHO arrival tag")?;
            arrival_ns = Some(r.u64("ECHO arrival")?);
        }
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
            arrival_ns,
            padding_len,
        })
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        Self::FIXED_LEN
            + self.arrival_ns.map_or(0, |_| Self::ARRIVAL_LEN)
            + usize::from(self.padding_len)
    }

    /// Writes the payload at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        check_room(buf, self.buffer_len())?;
        let mut w = Writer::new(buf);
        w.u32(self.packet_number)?;
        w.u32(self.probe_id)?;
        w.u64(self.timestamp_ns)?;
        if let Some(t) = self.arrival_ns {
            w.u8(Self::ARRIVAL_TAG)?;
            w.u64(t)?;
        }
        w.zeros(usize::from(self.padding_len))?;
        Ok(w.written())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_round_trips_and_old_padding_still_decodes() {
        let p = EchoPayload {
            packet_number: 7,
            probe_id: 3,
            timestamp_ns: 11,
            arrival_ns: Some(0x0102_0304_0506_0708),
            padding_len: 1,
        };
        let mut buf = [0u8; 64];
        let n = p.emit(&mut buf).unwrap();
        assert_eq!(n, EchoPayload::FIXED_LEN + EchoPayload::ARRIVAL_LEN + 1);
        assert_eq!(buf[16], 1);
        assert_eq!(EchoPayload::decode(&buf[..n]).unwrap(), p);
        // Plain padding: no arrival.
        let plain = EchoPayload {
            arrival_ns: None,
            padding_len: 20,
            ..p
        };
        let n = plain.emit(&mut buf).unwrap();
        assert_eq!(EchoPayload::decode(&buf[..n]).unwrap(), plain);
        // A tag without its 8 bytes, or another tag, is an error.
        let mut short = [0u8; 20];
        short[16] = 1;
        assert!(EchoPayload::decode(&short).is_err());
        let mut other = [0u8; 20];
        other[16] = 2;
        assert!(EchoPayload::decode(&other).is_err());
    }
}
