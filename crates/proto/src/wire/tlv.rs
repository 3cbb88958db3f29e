//! Extension TLVs carried by START (and its REPLY) and REJECT.
//!
//! ```text
//! +---------------+-------------------------------+----------------//
//! |     TYPE      |            LENGTH             |  VALUE (LENGTH bytes)
//! +---------------+-------------------------------+----------------//
//! ```
//!
//! TYPE 0 is reserved. Known types have a fixed value shape that is
//! checked; unknown types are skipped by the protocol but kept, in order,
//! as [`Tlv::Unknown`] so a decoded list re-encodes to the same bytes.
//! A known type may appear at most once.

use super::cursor::{Reader, Writer};
use super::error::{Result, WireError};

/// Bytes of TYPE and LENGTH before each value.
pub const TLV_HEADER_LEN: usize = 3;
/// The protocol version this crate speaks (the payload layouts of docs/protocol.md).
pub const PROTOCOL_VERSION: u16 = 1;
/// Largest WINDOW_SCALE: WINDOW_SIZE (20 bits) << 12 spans 4 GiB.
pub const WINDOW_SCALE_MAX: u8 = 12;
/// Smallest MAX_PACKET_SIZE a peer may announce.
pub const MIN_MAX_PACKET_SIZE: u16 = 64;
/// Longest CONTROLLER name.
pub const CONTROLLER_NAME_MAX: usize = 32;

/// TLV type codes (the registry of docs/protocol.md).
pub mod code {
    /// Protocol version, u16.
    pub const VERSION: u8 = 1;
    /// Receive-window scale shift, u8.
    pub const WINDOW_SCALE: u8 = 2;
    /// Maximum datagram size the sender accepts, u16.
    pub const MAX_PACKET_SIZE: u8 = 3;
    /// Congestion controller name, ASCII, or `any`.
    pub const CONTROLLER: u8 = 4;
    /// Start-up mode, u8.
    pub const STARTUP_MODE: u8 = 5;
    /// Reserved for the security handshake; opaque bytes.
    pub const SECURITY: u8 = 6;
    /// Initial per-stream credit in messages, u32 ≥ 1 (§6.5.1).
    pub const STREAM_CREDIT: u8 = 7;
    /// A stateless retry token (opaque bytes, 1–255): REJECT `retry` carries
    /// one, the client's next START echoes it.
    pub const RETRY_TOKEN: u8 = 8;
    /// Zero bytes that pad a secure START to `MIN_SECURE_START_LEN`.
    pub const PADDING: u8 = 9;
    /// Packet AEADs: the codes a client offers (preferred first) or the
    /// one its peer chose.
    pub const AEAD: u8 = 10;
    /// Authenticated stateless reset, empty value: in START, "give me a
    /// reset token"; in START-REPLY, "the token follows the binding in the
    /// payload of Noise message 2" (docs/security.md).
    pub const STATELESS_RESET: u8 = 11;
    /// The highest known code.
    pub(crate) const LAST_KNOWN: u8 = STATELESS_RESET;
}

/// Most codes in an AEAD TLV.
pub const AEAD_CODES_MAX: usize = 8;

/// Longest RETRY_TOKEN value.
pub const RETRY_TOKEN_MAX: usize = 255;

/// How a connection ramps up its sending after the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StartupMode {
    /// The controller's own slow start.
    SlowStart,
    /// SLTP's packet pair: an ECHO_1/ECHO_2 probe sizes the first window.
    PacketPair,
}

impl StartupMode {
    /// Wire code.
    pub const fn code(self) -> u8 {
        match self {
            StartupMode::SlowStart => 0,
            StartupMode::PacketPair => 1,
        }
    }
    /// The mode with this wire code.
    pub fn from_code(code: u8) -> Option<StartupMode> {
        match code {
            0 => Some(StartupMode::SlowStart),
            1 => Some(StartupMode::PacketPair),
            _ => None,
        }
    }
    /// Name used in JSON: `slow_start` or `packet_pair`.
    pub const fn name(self) -> &'static str {
        match self {
            StartupMode::SlowStart => "slow_start",
            StartupMode::PacketPair => "packet_pair",
        }
    }
    /// The mode with this name: `slow_start`/`slow-start` or
    /// `packet_pair`/`packet-pair` (JSON and scenarios use `_`, command
    /// lines `-`; both name the same two modes).
    pub fn from_name(name: &str) -> Option<StartupMode> {
        [StartupMode::SlowStart, StartupMode::PacketPair]
            .into_iter()
            .find(|m| m.name() == name || m.name().replace('_', "-") == name)
    }
}

/// One extension TLV; values borrow from the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tlv<'a> {
    /// Protocol version the sender speaks (START) or chose (REPLY); ≥ 1.
    Version(u16),
    /// WINDOW_SIZE is in units of 2^scale bytes for the sender's window; ≤ 12.
    WindowScale(u8),
    /// Largest datagram the sender will accept, in bytes; ≥ 64.
    MaxPacketSize(u16),
    /// Congestion controller the sender asks for or uses; `any` = no preference.
    Controller(&'a str),
    /// Start-up mode.
    StartupMode(StartupMode),
    /// Reserved for the security handshake (a later issue); opaque here.
    Security(&'a [u8]),
    /// The sender's initial per-stream credit in messages; ≥ 1.
    StreamCredit(u32),
    /// A stateless retry token: opaque, 1 to 255 bytes (only the server
    /// that minted it can read it).
    RetryToken(&'a [u8]),
    /// PADDING: this many zero bytes (they carry nothing).
    Padding(u16),
    /// AEAD: packet-AEAD codes (1 AES-128-GCM, 2 ChaCha20-Poly1305; others
    /// unknown), 1 to 8 distinct non-zero bytes: START offers them in
    /// preference order, START-REPLY names the one chosen.
    Aead(&'a [u8]),
    /// STATELESS_RESET (empty): the client asks for a stateless-reset
    /// token, or the server says one rides in its Noise message 2.
    StatelessReset,
    /// A TLV this version does not know: skipped, but kept for re-encoding.
    Unknown {
        /// TYPE code (never 0 nor a known code).
        tlv_type: u8,
        /// VALUE.
        value: &'a [u8],
    },
}

impl<'a> Tlv<'a> {
    /// TYPE code.
    pub const fn code(&self) -> u8 {
        match self {
            Tlv::Version(_) => code::VERSION,
            Tlv::WindowScale(_) => code::WINDOW_SCALE,
            Tlv::MaxPacketSize(_) => code::MAX_PACKET_SIZE,
            Tlv::Controller(_) => code::CONTROLLER,
            Tlv::StartupMode(_) => code::STARTUP_MODE,
            Tlv::Security(_) => code::SECURITY,
            Tlv::StreamCredit(_) => code::STREAM_CREDIT,
            Tlv::RetryToken(_) => code::RETRY_TOKEN,
            Tlv::Padding(_) => code::PADDING,
            Tlv::Aead(_) => code::AEAD,
            Tlv::StatelessReset => code::STATELESS_RESET,
            Tlv::Unknown { tlv_type, .. } => *tlv_type,
        }
    }

    /// Name used in messages and JSON.
    pub const fn name(&self) -> &'static str {
        match self {
            Tlv::Version(_) => "VERSION",
            Tlv::WindowScale(_) => "WINDOW_SCALE",
            Tlv::MaxPacketSize(_) => "MAX_PACKET_SIZE",
            Tlv::Controller(_) => "CONTROLLER",
            Tlv::StartupMode(_) => "STARTUP_MODE",
            Tlv::Security(_) => "SECURITY",
            Tlv::StreamCredit(_) => "STREAM_CREDIT",
            Tlv::RetryToken(_) => "RETRY_TOKEN",
            Tlv::Padding(_) => "PADDING",
            Tlv::Aead(_) => "AEAD",
            Tlv::StatelessReset => "STATELESS_RESET",
            Tlv::Unknown { .. } => "unknown",
        }
    }

    fn value_len(&self) -> usize {
        match self {
            Tlv::Version(_) | Tlv::MaxPacketSize(_) => 2,
            Tlv::WindowScale(_) | Tlv::StartupMode(_) => 1,
            Tlv::StreamCredit(_) => 4,
            Tlv::StatelessReset => 0,
            Tlv::Controller(name) => name.len(),
            Tlv::Padding(n) => usize::from(*n),
            Tlv::Security(v)
            | Tlv::RetryToken(v)
            | Tlv::Aead(v)
            | Tlv::Unknown { value: v, .. } => v.len(),
        }
    }

    /// Encoded length including TYPE and LENGTH.
    pub fn buffer_len(&self) -> usize {
        TLV_HEADER_LEN + self.value_len()
    }

    /// Checks the value against the registry's rules (decode and encode
    /// apply the same ones).
    pub fn validate(&self) -> Result<()> {
        let bad = |problem| {
            Err(WireError::BadTlvValue {
                name: self.name(),
                problem,
            })
        };
        match *self {
            Tlv::Version(0) => bad("version 0 does not exist"),
            Tlv::StreamCredit(0) => bad("credit 0 would block every stream"),
            Tlv::WindowScale(s) if s > WINDOW_SCALE_MAX => bad("scale above 12"),
            Tlv::MaxPacketSize(s) if s < MIN_MAX_PACKET_SIZE => bad("size below 64 bytes"),
            Tlv::Controller(name) => {
                if name.is_empty() || name.len() > CONTROLLER_NAME_MAX {
                    bad("name must be 1 to 32 bytes")
                } else if !name.bytes().all(|b| b.is_ascii_graphic()) {
                    bad("name must be printable ASCII without spaces")
                } else {
                    Ok(())
                }
            }
            Tlv::Security(v) if v.len() > usize::from(u16::MAX) => bad("longer than 65535 bytes"),
            Tlv::RetryToken(v) if v.is_empty() || v.len() > RETRY_TOKEN_MAX => {
                bad("token must be 1 to 255 bytes")
            }
            Tlv::Aead(v) if v.is_empty() || v.len() > AEAD_CODES_MAX => {
                bad("must list 1 to 8 AEAD codes")
            }
            Tlv::Aead(v) if v.contains(&0) => bad("AEAD code 0 is reserved"),
            Tlv::Aead(v) if v.iter().enumerate().any(|(i, c)| v[..i].contains(c)) => {
                bad("an AEAD code appears twice")
            }
            Tlv::Unknown { tlv_type, value } => {
                if tlv_type == 0 {
                    Err(WireError::ReservedTlvType)
                } else if tlv_type <= code::LAST_KNOWN {
                    bad("type code belongs to a known TLV")
                } else if value.len() > usize::from(u16::MAX) {
                    bad("longer than 65535 bytes")
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    fn decode(r: &mut Reader<'a>) -> Result<Tlv<'a>> {
        let tlv_type = r.u8("TLV type")?;
        let len = usize::from(r.u16("TLV length")?);
        let value = r.take(len, "TLV value")?;
        let fixed = |name: &'static str, want: usize, expected: &'static str| {
            if len == want {
                Ok(())
            } else {
                Err(WireError::BadTlvLength {
                    name,
                    len,
                    expected,
                })
            }
        };
        let mut v = Reader::new(value);
        let tlv = match tlv_type {
            0 => return Err(WireError::ReservedTlvType),
            code::VERSION => {
                fixed("VERSION", 2, "2")?;
                Tlv::Version(v.u16("VERSION")?)
            }
            code::WINDOW_SCALE => {
                fixed("WINDOW_SCALE", 1, "1")?;
                Tlv::WindowScale(v.u8("WINDOW_SCALE")?)
            }
            code::MAX_PACKET_SIZE => {
                fixed("MAX_PACKET_SIZE", 2, "2")?;
                Tlv::MaxPacketSize(v.u16("MAX_PACKET_SIZE")?)
            }
            code::CONTROLLER => match core::str::from_utf8(value) {
                Ok(name) => Tlv::Controller(name),
                Err(_) => {
                    return Err(WireError::BadTlvValue {
                        name: "CONTROLLER",
                        problem: "name is not UTF-8",
                    })
                }
            },
            code::STARTUP_MODE => {
                fixed("STARTUP_MODE", 1, "1")?;
                let c = v.u8("STARTUP_MODE")?;
                Tlv::StartupMode(StartupMode::from_code(c).ok_or(WireError::BadTlvValue {
                    name: "STARTUP_MODE",
                    problem: "unknown mode code",
                })?)
            }
            code::SECURITY => Tlv::Security(value),
            code::STREAM_CREDIT => {
                fixed("STREAM_CREDIT", 4, "4")?;
                Tlv::StreamCredit(v.u32("STREAM_CREDIT")?)
            }
            code::RETRY_TOKEN => Tlv::RetryToken(value),
            code::AEAD => Tlv::Aead(value),
            code::STATELESS_RESET => {
                fixed("STATELESS_RESET", 0, "0")?;
                Tlv::StatelessReset
            }
            code::PADDING => {
                if value.iter().any(|&b| b != 0) {
                    return Err(WireError::BadTlvValue {
                        name: "PADDING",
                        problem: "padding bytes must be zero",
                    });
                }
                // `len` came from a u16 field.
                Tlv::Padding(u16::try_from(len).unwrap_or(u16::MAX))
            }
            _ => Tlv::Unknown { tlv_type, value },
        };
        tlv.validate()?;
        Ok(tlv)
    }

    fn emit(&self, w: &mut Writer<'_>) -> Result<()> {
        self.validate()?;
        w.u8(self.code())?;
        // validate() bounds every variable-length value by u16::MAX.
        w.u16(u16::try_from(self.value_len()).unwrap_or(u16::MAX))?;
        match self {
            Tlv::Version(x) | Tlv::MaxPacketSize(x) => w.u16(*x),
            Tlv::WindowScale(x) => w.u8(*x),
            Tlv::StartupMode(m) => w.u8(m.code()),
            Tlv::StreamCredit(c) => w.u32(*c),
            Tlv::Controller(name) => w.put(name.as_bytes()),
            Tlv::Padding(n) => w.zeros(usize::from(*n)),
            Tlv::StatelessReset => Ok(()),
            Tlv::Security(v)
            | Tlv::RetryToken(v)
            | Tlv::Aead(v)
            | Tlv::Unknown { value: v, .. } => w.put(v),
        }
    }
}

/// Decodes TLVs until `r` is empty. Rejects type 0, malformed known values
/// and a known type seen twice.
pub(crate) fn decode_list<'a>(r: &mut Reader<'a>) -> Result<Vec<Tlv<'a>>> {
    let mut seen: u16 = 0;
    let mut out = Vec::new();
    while !r.is_empty() {
        let tlv = Tlv::decode(r)?;
        check_duplicate(&mut seen, &tlv)?;
        out.push(tlv);
    }
    Ok(out)
}

fn check_duplicate(seen: &mut u16, tlv: &Tlv<'_>) -> Result<()> {
    if matches!(tlv, Tlv::Unknown { .. }) {
        return Ok(());
    }
    // Known codes are 1..=LAST_KNOWN (< 16), so the bit fits a u16.
    let bit = 1u16.checked_shl(u32::from(tlv.code())).unwrap_or(0);
    if *seen & bit != 0 {
        return Err(WireError::DuplicateTlv { name: tlv.name() });
    }
    *seen |= bit;
    Ok(())
}

/// Encoded length of a TLV list.
pub(crate) fn list_len(tlvs: &[Tlv<'_>]) -> usize {
    tlvs.iter().map(Tlv::buffer_len).sum()
}

/// Encodes a TLV list, applying the same rules as decoding.
pub(crate) fn emit_list(tlvs: &[Tlv<'_>], w: &mut Writer<'_>) -> Result<()> {
    let mut seen = 0u16;
    for tlv in tlvs {
        check_duplicate(&mut seen, tlv)?;
        tlv.emit(w)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aead_codes_round_trip_and_reject_bad_lists() {
        let tlvs = [Tlv::Aead(&[1, 2]), Tlv::Version(1)];
        let mut buf = [0u8; 16];
        let mut w = Writer::new(&mut buf);
        emit_list(&tlvs, &mut w).unwrap();
        let n = w.written();
        assert_eq!(&buf[..5], &[10, 0, 2, 1, 2]);
        assert_eq!(decode(&buf[..n]).unwrap(), tlvs);
        // Unknown codes are carried (a later version's AEAD).
        assert_eq!(decode(&[10, 0, 1, 77]).unwrap(), [Tlv::Aead(&[77])]);
        for bad in [&[10u8, 0, 0][..], &[10, 0, 1, 0], &[10, 0, 2, 1, 1]] {
            assert!(
                matches!(
                    decode(bad),
                    Err(WireError::BadTlvValue { name: "AEAD", .. })
                ),
                "{bad:?}"
            );
        }
        let mut long = vec![10, 0, 9];
        long.extend(1..=9u8);
        assert!(decode(&long).is_err());
        assert!(Tlv::Aead(&[]).validate().is_err());
    }

    fn decode(bytes: &[u8]) -> Result<Vec<Tlv<'_>>> {
        decode_list(&mut Reader::new(bytes))
    }

    #[test]
    fn known_and_unknown_round_trip() {
        let tlvs = [
            Tlv::Version(1),
            Tlv::Unknown {
                tlv_type: 200,
                value: &[9, 9],
            },
            Tlv::Controller("any"),
            Tlv::StartupMode(StartupMode::PacketPair),
            Tlv::StreamCredit(3),
        ];
        let mut buf = [0u8; 64];
        let mut w = Writer::new(&mut buf);
        emit_list(&tlvs, &mut w).unwrap();
        let n = w.written();
        assert_eq!(n, list_len(&tlvs));
        assert_eq!(decode(&buf[..n]).unwrap(), tlvs);
    }

    #[test]
    fn malformed_tlvs_are_typed_errors() {
        assert_eq!(decode(&[0, 0, 0]), Err(WireError::ReservedTlvType));
        assert!(matches!(
            decode(&[7, 0, 2, 0, 1]),
            Err(WireError::BadTlvLength {
                name: "STREAM_CREDIT",
                ..
            })
        ));
        assert!(matches!(
            decode(&[7, 0, 4, 0, 0, 0, 0]),
            Err(WireError::BadTlvValue {
                name: "STREAM_CREDIT",
                ..
            })
        ));
        assert!(matches!(
            decode(&[1, 0, 1, 5]),
            Err(WireError::BadTlvLength {
                name: "VERSION",
                ..
            })
        ));
        assert!(matches!(
            decode(&[2, 0, 1, 13]),
            Err(WireError::BadTlvValue {
                name: "WINDOW_SCALE",
                ..
            })
        ));
        assert!(matches!(
            decode(&[4, 0, 5, b'c']),
            Err(WireError::Truncated {
                what: "TLV value",
                ..
            })
        ));
        assert!(matches!(
            decode(&[4, 0, 1, 0xff]),
            Err(WireError::BadTlvValue {
                name: "CONTROLLER",
                ..
            })
        ));
        assert!(matches!(
            decode(&[5, 0, 1, 7]),
            Err(WireError::BadTlvValue {
                name: "STARTUP_MODE",
                ..
            })
        ));
        assert_eq!(
            decode(&[1, 0, 2, 0, 1, 1, 0, 2, 0, 1]),
            Err(WireError::DuplicateTlv { name: "VERSION" })
        );
        assert!(decode(&[1, 0]).is_err());
    }

    #[test]
    fn retry_token_and_padding_round_trip_and_reject_bad_values() {
        let tlvs = [
            Tlv::Version(1),
            Tlv::RetryToken(&[1, 2, 3]),
            Tlv::Padding(5),
        ];
        let mut buf = [0u8; 32];
        let mut w = Writer::new(&mut buf);
        emit_list(&tlvs, &mut w).unwrap();
        let n = w.written();
        assert_eq!(n, list_len(&tlvs));
        assert_eq!(&buf[5..17], &[8, 0, 3, 1, 2, 3, 9, 0, 5, 0, 0, 0]);
        assert_eq!(decode(&buf[..n]).unwrap(), tlvs);
        // Empty padding is allowed; non-zero padding is not.
        assert_eq!(decode(&[9, 0, 0]).unwrap(), [Tlv::Padding(0)]);
        assert!(matches!(
            decode(&[9, 0, 2, 0, 1]),
            Err(WireError::BadTlvValue {
                name: "PADDING",
                ..
            })
        ));
        // A token is 1 to 255 bytes.
        assert!(matches!(
            decode(&[8, 0, 0]),
            Err(WireError::BadTlvValue {
                name: "RETRY_TOKEN",
                ..
            })
        ));
        let mut long = vec![8, 1, 0];
        long.extend([7u8; 256]);
        assert!(matches!(
            decode(&long),
            Err(WireError::BadTlvValue {
                name: "RETRY_TOKEN",
                ..
            })
        ));
        // Known codes 8 and 9 are no longer "unknown", and may appear once.
        assert_eq!(
            decode(&[9, 0, 0, 9, 0, 0]),
            Err(WireError::DuplicateTlv { name: "PADDING" })
        );
        assert!(Tlv::Unknown {
            tlv_type: 9,
            value: &[]
        }
        .validate()
        .is_err());
        assert!(Tlv::Unknown {
            tlv_type: 12,
            value: &[]
        }
        .validate()
        .is_ok());
        // STATELESS_RESET (11) is known and empty.
        assert_eq!(decode(&[11, 0, 0]), Ok(vec![Tlv::StatelessReset]));
        assert!(matches!(
            decode(&[11, 0, 1, 7]),
            Err(WireError::BadTlvLength {
                name: "STATELESS_RESET",
                ..
            })
        ));
    }
}
