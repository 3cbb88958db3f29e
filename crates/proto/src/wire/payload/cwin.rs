//! CWIN: the receiver changes its window and says why (SLTP's
//! application-driven window for handover, seed 003 §III-E).
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                     PACKET_NUMBER (32)                        |
//! +---------------------------------------------------------------+
//! |                      WINDOW_BYTES (32)                        |
//! +---------------+-----------------------------------------------+
//! |    REASON     |
//! +---------------+
//! ```
//!
//! WINDOW_BYTES is the new receive window in bytes, unscaled. A zero
//! window obliges the sender to poll with STATUS until it opens again.

use crate::wire::cursor::{check_room, Reader, Writer};
use crate::wire::error::Result;

/// Why a CWIN changes the window. Codes without a name are carried as is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CwinReason(pub u8);

impl CwinReason {
    /// No reason given.
    pub const UNSPECIFIED: CwinReason = CwinReason(0);
    /// A handover is about to happen: the window closes.
    pub const HANDOVER_START: CwinReason = CwinReason(1);
    /// The handover is over: the window reopens.
    pub const HANDOVER_END: CwinReason = CwinReason(2);
    /// The receiver is short of buffer space.
    pub const BUFFER_PRESSURE: CwinReason = CwinReason(3);
    /// The application paused reading.
    pub const APP_PAUSE: CwinReason = CwinReason(4);
    /// The application resumed reading.
    pub const APP_RESUME: CwinReason = CwinReason(5);

    const NAMES: [&'static str; 6] = [
        "unspecified",
        "handover_start",
        "handover_end",
        "buffer_pressure",
        "app_pause",
        "app_resume",
    ];

    /// The reason's name, if the code has one.
    pub fn name(self) -> Option<&'static str> {
        Self::NAMES.get(usize::from(self.0)).copied()
    }

    /// The reason with this name.
    pub fn from_name(name: &str) -> Option<CwinReason> {
        let i = Self::NAMES.iter().position(|n| *n == name)?;
        u8::try_from(i).ok().map(CwinReason)
    }
}

/// Payload of CWIN.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CwinPayload {
    /// Low 32 bits of this packet's packet number.
    pub packet_number: u32,
    /// The new receive window in bytes.
    pub window_bytes: u32,
    /// Why.
    pub reason: CwinReason,
}

impl CwinPayload {
    /// Encoded length.
    pub const LEN: usize = 9;

    /// Decodes the whole of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<CwinPayload> {
        let mut r = Reader::new(bytes);
        let packet_number = r.u32("packet number")?;
        let window_bytes = r.u32("CWIN window")?;
        let reason = CwinReason(r.u8("CWIN reason")?);
        r.finish("CWIN")?;
        Ok(CwinPayload {
            packet_number,
            window_bytes,
            reason,
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
        w.u32(self.window_bytes)?;
        w.u8(self.reason.0)?;
        Ok(w.written())
    }
}
