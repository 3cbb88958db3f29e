//! Control messages carried in an ECHO (docs/protocol.md §6.7.2): the
//! server's spare connection IDs (NEW_CONNECTION_ID) and a sender's
//! key-update announcement (KEY_UPDATE).
//!
//! Like PATH_CHALLENGE (§6.7.1) they reuse ECHO's layout — PROBE_ID names
//! the message, the 8 bytes of TIMESTAMP_NS carry its value, no padding —
//! so no payload decoder changed and a version-1 peer that predates them
//! handles them harmlessly: it answers a NEW_CONNECTION_ID (REPLY_REQ) by
//! echoing it, which the server takes as the acknowledgement, and ignores
//! a KEY_UPDATE (neither REPLY_REQ nor REPLY). On a protected connection
//! both ride inside the AEAD: an observer sees an ECHO's length, nothing
//! of its content.
//!
//! ```text
//! NEW_CONNECTION_ID: ECHO, REPLY_REQ (the request) or REPLY (its echo)
//!   PROBE_ID     = 0x4e434944 ("NCID")
//!   TIMESTAMP_NS = SEQUENCE (32) | CONNECTION_ID (16) | RESERVED (16, zero)
//! KEY_UPDATE: ECHO, no REPLY_REQ, no REPLY
//!   PROBE_ID     = 0x4b455955 ("KEYU")
//!   TIMESTAMP_NS = GENERATION (64): the sender's packets after this one
//!                  are sealed under this key generation
//! ```
//!
//! Neither carries the optional ARRIVAL field (an answer to a packet-pair
//! probe, `payload/echo.rs`): a control ECHO with one is an error.

use super::{EchoPayload, Flags, PacketType, Result, WireError};

/// PROBE_ID of NEW_CONNECTION_ID: ASCII "NCID".
pub const NEW_CONNECTION_ID_PROBE_ID: u32 = 0x4e43_4944;
/// PROBE_ID of KEY_UPDATE: ASCII "KEYU".
pub const KEY_UPDATE_PROBE_ID: u32 = 0x4b45_5955;

/// A control message in an ECHO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// The server gives the client a spare connection ID: `id` is the
    /// server's DEST_ID for the client's packets of rotation `sequence`
    /// (≥ 1; 0 is the handshake's IDs). `ack`: the client's echo.
    NewConnectionId {
        /// The rotation sequence number.
        sequence: u32,
        /// The spare ID (never 0).
        id: u16,
        /// This is the echo (REPLY), not the request (REPLY_REQ).
        ack: bool,
    },
    /// The sender's packets after this one are sealed under key
    /// `generation` (≥ 1).
    KeyUpdate {
        /// The new key generation.
        generation: u64,
    },
}

fn bad(what: &'static str, problem: &'static str) -> WireError {
    WireError::BadControl { what, problem }
}

impl Control {
    /// The control message an ECHO carries: `Ok(None)` for every other
    /// ECHO (probes, PATH_CHALLENGE, PMTU probes) and every other packet
    /// type; an error for a control PROBE_ID with a bad value. O(1).
    pub fn from_echo(
        pk_type: PacketType,
        flags: Flags,
        e: &EchoPayload,
    ) -> Result<Option<Control>> {
        if pk_type != PacketType::Echo {
            return Ok(None);
        }
        let (req, rep) = (
            flags.contains(Flags::REPLY_REQ),
            flags.contains(Flags::REPLY),
        );
        match e.probe_id {
            NEW_CONNECTION_ID_PROBE_ID => {
                if req == rep {
                    return Err(bad(
                        "NEW_CONNECTION_ID flags",
                        "exactly one of REPLY_REQ and REPLY",
                    ));
                }
                if e.padding_len != 0 {
                    return Err(bad("NEW_CONNECTION_ID padding", "must be empty"));
                }
                if e.arrival_ns.is_some() {
                    return Err(bad("NEW_CONNECTION_ID arrival", "must be absent"));
                }
                let v = e.timestamp_ns;
                let sequence = (v >> 32) as u32;
                let id = (v >> 16) as u16;
                if v & 0xffff != 0 {
                    return Err(bad("NEW_CONNECTION_ID reserved", "must be zero"));
                }
                if sequence == 0 {
                    return Err(bad(
                        "NEW_CONNECTION_ID sequence",
                        "0 is the handshake's IDs",
                    ));
                }
                if id == 0 {
                    return Err(bad("NEW_CONNECTION_ID id", "0 names no connection"));
                }
                Ok(Some(Control::NewConnectionId {
                    sequence,
                    id,
                    ack: rep,
                }))
            }
            KEY_UPDATE_PROBE_ID => {
                if req || rep {
                    return Err(bad("KEY_UPDATE flags", "neither REPLY_REQ nor REPLY"));
                }
                if e.padding_len != 0 {
                    return Err(bad("KEY_UPDATE padding", "must be empty"));
                }
                if e.arrival_ns.is_some() {
                    return Err(bad("KEY_UPDATE arrival", "must be absent"));
                }
                if e.timestamp_ns == 0 {
                    return Err(bad("KEY_UPDATE generation", "must be at least 1"));
                }
                Ok(Some(Control::KeyUpdate {
                    generation: e.timestamp_ns,
                }))
            }
            _ => Ok(None),
        }
    }

    /// The ECHO's flags and payload for this message in packet
    /// `packet_number` (low 32 bits). O(1).
    pub fn to_echo(&self, packet_number: u32) -> (Flags, EchoPayload) {
        let (flags, probe_id, timestamp_ns) = match *self {
            Control::NewConnectionId { sequence, id, ack } => (
                if ack { Flags::REPLY } else { Flags::REPLY_REQ },
                NEW_CONNECTION_ID_PROBE_ID,
                u64::from(sequence) << 32 | u64::from(id) << 16,
            ),
            Control::KeyUpdate { generation } => (Flags::EMPTY, KEY_UPDATE_PROBE_ID, generation),
        };
        (
            flags,
            EchoPayload {
                packet_number,
                probe_id,
                timestamp_ns,
                // ARRIVAL answers a packet-pair probe only; a control
                // message never carries one (`from_echo` refuses it).
                arrival_ns: None,
                padding_len: 0,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo(probe_id: u32, timestamp_ns: u64, padding_len: u16) -> EchoPayload {
        EchoPayload {
            packet_number: 7,
            probe_id,
            timestamp_ns,
            arrival_ns: None,
            padding_len,
        }
    }

    #[test]
    fn round_trips() {
        for c in [
            Control::NewConnectionId {
                sequence: 1,
                id: 0xbeef,
                ack: false,
            },
            Control::NewConnectionId {
                sequence: u32::MAX,
                id: 1,
                ack: true,
            },
            Control::KeyUpdate { generation: 1 },
            Control::KeyUpdate {
                generation: u64::MAX,
            },
        ] {
            let (f, e) = c.to_echo(9);
            assert_eq!(Control::from_echo(PacketType::Echo, f, &e), Ok(Some(c)));
        }
    }

    #[test]
    fn other_echoes_are_not_control() {
        let e = echo(0x5041_5448, 5, 0);
        assert_eq!(
            Control::from_echo(PacketType::Echo, Flags::REPLY_REQ, &e),
            Ok(None)
        );
        let e = echo(KEY_UPDATE_PROBE_ID, 5, 0);
        assert_eq!(
            Control::from_echo(PacketType::Echo1, Flags::EMPTY, &e),
            Ok(None)
        );
    }

    #[test]
    fn bad_values_name_the_field() {
        let cases = [
            (
                NEW_CONNECTION_ID_PROBE_ID,
                Flags::EMPTY,
                1u64 << 32 | 5 << 16,
                0,
                "flags",
            ),
            (
                NEW_CONNECTION_ID_PROBE_ID,
                Flags::REPLY_REQ,
                1 << 32 | 5 << 16 | 1,
                0,
                "reserved",
            ),
            (
                NEW_CONNECTION_ID_PROBE_ID,
                Flags::REPLY_REQ,
                5 << 16,
                0,
                "sequence",
            ),
            (
                NEW_CONNECTION_ID_PROBE_ID,
                Flags::REPLY_REQ,
                1 << 32,
                0,
                " id",
            ),
            (
                NEW_CONNECTION_ID_PROBE_ID,
                Flags::REPLY,
                1 << 32 | 5 << 16,
                3,
                "padding",
            ),
            (KEY_UPDATE_PROBE_ID, Flags::REPLY_REQ, 1, 0, "flags"),
            (KEY_UPDATE_PROBE_ID, Flags::EMPTY, 0, 0, "generation"),
            (KEY_UPDATE_PROBE_ID, Flags::EMPTY, 1, 1, "padding"),
        ];
        for (probe, flags, v, pad, field) in cases {
            let e = Control::from_echo(PacketType::Echo, flags, &echo(probe, v, pad)).unwrap_err();
            assert!(e.to_string().contains(field), "{e} should name {field}");
        }
    }

    #[test]
    fn a_control_echo_with_an_arrival_is_refused() {
        // ARRIVAL belongs to answers to packet-pair probes; on a control
        // message it would be a second, unchecked value in the ECHO.
        for c in [
            Control::NewConnectionId {
                sequence: 3,
                id: 0x1234,
                ack: false,
            },
            Control::NewConnectionId {
                sequence: 3,
                id: 0x1234,
                ack: true,
            },
            Control::KeyUpdate { generation: 2 },
        ] {
            let (f, mut e) = c.to_echo(9);
            assert_eq!(e.arrival_ns, None, "to_echo never writes an arrival");
            e.arrival_ns = Some(42);
            let err = Control::from_echo(PacketType::Echo, f, &e).unwrap_err();
            assert!(
                err.to_string().contains("arrival"),
                "{err} should name arrival"
            );
            // Through the wire too: the encoded ECHO decodes with the
            // arrival and is still refused.
            let mut buf = [0u8; 64];
            let n = e.emit(&mut buf).unwrap();
            let back = EchoPayload::decode(&buf[..n]).unwrap();
            assert_eq!(back.arrival_ns, Some(42));
            assert!(Control::from_echo(PacketType::Echo, f, &back).is_err());
        }
    }
}
