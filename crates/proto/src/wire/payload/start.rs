//! START (and its REPLY) and REJECT: the handshake payloads.
//!
//! START is a list of extension TLVs (see [`crate::wire::tlv`]), possibly
//! empty. REJECT is a one-byte reason code followed by TLVs (e.g. the
//! VERSION the rejecting side speaks).
//!
//! ```text
//! START:   | TLV | TLV | ...                     (0 or more)
//! REJECT:  | REASON (8) | TLV | TLV | ...
//! ```
//!
//! Handshake packets carry no packet number and never an authentication tag.

use crate::wire::cursor::{check_room, Reader, Writer};
use crate::wire::error::Result;
use crate::wire::tlv::{self, Tlv};

/// Payload of START (request with REPLY_REQ, answer with REPLY).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct StartPayload<'a> {
    /// Extension TLVs in wire order, unknown ones included.
    pub tlvs: Vec<Tlv<'a>>,
}

impl<'a> StartPayload<'a> {
    /// Decodes the whole of `bytes` as a TLV list.
    pub fn decode(bytes: &'a [u8]) -> Result<StartPayload<'a>> {
        let tlvs = tlv::decode_list(&mut Reader::new(bytes))?;
        Ok(StartPayload { tlvs })
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        tlv::list_len(&self.tlvs)
    }

    /// Writes the payload at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        check_room(buf, self.buffer_len())?;
        let mut w = Writer::new(buf);
        tlv::emit_list(&self.tlvs, &mut w)?;
        Ok(w.written())
    }
}

/// Why a connection request was rejected. Codes without a name are carried as is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RejectReason(pub u8);

impl RejectReason {
    /// No reason given.
    pub const UNSPECIFIED: RejectReason = RejectReason(0);
    /// No common protocol version (a VERSION TLV says which one the rejecter speaks).
    pub const VERSION_UNSUPPORTED: RejectReason = RejectReason(1);
    /// The listener has no room for another connection.
    pub const BUSY: RejectReason = RejectReason(2);
    /// The requested congestion controller is not available.
    pub const CONTROLLER_UNSUPPORTED: RejectReason = RejectReason(3);
    /// A START parameter is unacceptable.
    pub const BAD_PARAMETERS: RejectReason = RejectReason(4);
    /// The listener requires the security handshake.
    pub const SECURITY_REQUIRED: RejectReason = RejectReason(5);
    /// The application refused the connection.
    pub const REFUSED: RejectReason = RejectReason(6);
    /// Prove you can receive at your address: resend START with the
    /// RETRY_TOKEN this REJECT carries (stateless address validation).
    pub const RETRY: RejectReason = RejectReason(7);
    /// The START's AEAD TLV offers no packet AEAD the listener accepts.
    pub const AEAD_UNSUPPORTED: RejectReason = RejectReason(8);
    /// The START's Noise message 1 did not decrypt: the client pinned
    /// another server key (`Noise_IK`), or the pre-shared keys differ
    /// (`Noise_IKpsk2`, `Noise_NNpsk0`). Sent only by a listener that
    /// requires security; unauthenticated, like every REJECT.
    pub const KEY_MISMATCH: RejectReason = RejectReason(9);

    const NAMES: [&'static str; 10] = [
        "unspecified",
        "version_unsupported",
        "busy",
        "controller_unsupported",
        "bad_parameters",
        "security_required",
        "refused",
        "retry",
        "aead_unsupported",
        "key_mismatch",
    ];

    /// The reason's name, if the code has one.
    pub fn name(self) -> Option<&'static str> {
        Self::NAMES.get(usize::from(self.0)).copied()
    }

    /// The reason with this name.
    pub fn from_name(name: &str) -> Option<RejectReason> {
        let i = Self::NAMES.iter().position(|n| *n == name)?;
        u8::try_from(i).ok().map(RejectReason)
    }
}

impl std::fmt::Display for RejectReason {
    /// What the rejection means for the person who asked, and what to do.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match *self {
            RejectReason::UNSPECIFIED => "the server rejected the connection without a reason",
            RejectReason::VERSION_UNSUPPORTED => {
                "the server speaks another protocol version: upgrade the older side"
            }
            RejectReason::BUSY => {
                "server busy: too many connections being set up; try again in a moment"
            }
            RejectReason::CONTROLLER_UNSUPPORTED => {
                "the server does not run the requested congestion controller: choose another --cc"
            }
            RejectReason::BAD_PARAMETERS => {
                "the server refused a connection parameter (packet size, window or stream credit)"
            }
            RejectReason::SECURITY_REQUIRED => "the server requires encryption: drop --insecure",
            RejectReason::REFUSED => "the server refused the connection: it is not accepting",
            RejectReason::RETRY => {
                "the server kept asking to validate this address (retry): check for NAT rebinding"
            }
            RejectReason::AEAD_UNSUPPORTED => {
                "no packet cipher in common with the server: change --aead"
            }
            RejectReason::KEY_MISMATCH => {
                "the server's key does not match --peer-key (or the pre-shared keys differ)"
            }
            RejectReason(code) => {
                return write!(
                    f,
                    "the server rejected the connection with reason {code}, unknown to this version"
                )
            }
        };
        f.write_str(text)
    }
}

/// Payload of REJECT.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RejectPayload<'a> {
    /// Reason code.
    pub reason: RejectReason,
    /// Extension TLVs in wire order.
    pub tlvs: Vec<Tlv<'a>>,
}

impl<'a> RejectPayload<'a> {
    /// Decodes the whole of `bytes`.
    pub fn decode(bytes: &'a [u8]) -> Result<RejectPayload<'a>> {
        let mut r = Reader::new(bytes);
        let reason = RejectReason(r.u8("REJECT reason")?);
        let tlvs = tlv::decode_list(&mut r)?;
        Ok(RejectPayload { reason, tlvs })
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        1 + tlv::list_len(&self.tlvs)
    }

    /// Writes the payload at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        check_room(buf, self.buffer_len())?;
        let mut w = Writer::new(buf);
        w.u8(self.reason.0)?;
        tlv::emit_list(&self.tlvs, &mut w)?;
        Ok(w.written())
    }
}
