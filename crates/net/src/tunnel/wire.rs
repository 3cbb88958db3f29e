//! The tunnel's own records, inside Peregrine messages.
//!
//! * **Control stream** ([`CONTROL_STREAM`], class 0, reliable, ordered):
//!   one [`Control`] record per message — `OPEN` (a flow's stream, its
//!   protocol, class, reliability, deadline and target), `OPENED`,
//!   `REFUSED` (with the reason in words) and `CLOSE`.
//! * **TCP flow streams**: every message starts with one marker byte —
//!   [`TCP_DATA`] (the rest is stream bytes), [`TCP_FIN`] (the sender shut
//!   its writing half: half-close) or [`TCP_RESET`] (the sender's side
//!   failed: abort). The stream is reliable and ordered, so a FIN arrives
//!   after every byte before it.
//! * **UDP flow streams**: a message *is* the datagram, with no header:
//!   its boundaries are the datagram's.
//!
//! Layout of a control record (network byte order):
//!
//! ```text
//! OPEN     1 | stream u16 | proto u8 (0 udp, 1 tcp) | class u8 | reliability u8
//!            | deadline_ms u32 (0: none) | target_len u8 | target (UTF-8 HOST:PORT)
//! OPENED   2 | stream u16
//! REFUSED  3 | stream u16 | reason (UTF-8, the rest)
//! CLOSE    4 | stream u16
//! ```

use super::spec::FlowProto;
use peregrine_proto::StreamReliability;
use std::time::Duration;

/// The stream that carries [`Control`] records.
pub const CONTROL_STREAM: u16 = 0;
/// TCP flow message marker: the rest of the message is stream bytes.
pub const TCP_DATA: u8 = 0;
/// TCP flow message marker: the sender shut its writing half.
pub const TCP_FIN: u8 = 1;
/// TCP flow message marker: the sender's connection failed; abort.
pub const TCP_RESET: u8 = 2;

/// Longest reason text a `REFUSED` record carries, bytes.
pub const MAX_REASON_BYTES: usize = 512;

/// A flow's parameters, as `OPEN` carries them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenFlow {
    /// The flow's stream (both directions use the same number).
    pub stream: u16,
    /// UDP or TCP.
    pub proto: FlowProto,
    /// Priority class, 0–3.
    pub class: u8,
    /// The stream's reliability.
    pub reliability: StreamReliability,
    /// Lifetime of each message (UDP), or `None`.
    pub deadline: Option<Duration>,
    /// `HOST:PORT` the server connects to (at most 255 bytes).
    pub target: String,
}

/// One control record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// Open a flow (client → server).
    Open(OpenFlow),
    /// The server reached the target (server → client).
    Opened {
        /// The flow's stream.
        stream: u16,
    },
    /// The server could not or would not open the flow.
    Refused {
        /// The flow's stream.
        stream: u16,
        /// Why, in words.
        reason: String,
    },
    /// Either side: the flow is over (UDP idle, or torn down).
    Close {
        /// The flow's stream.
        stream: u16,
    },
}

/// Why a control record could not be read; names the bad field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tunnel control record: {0}")]
pub struct DecodeError(pub &'static str);

fn reliability_code(r: StreamReliability) -> u8 {
    match r {
        StreamReliability::ReliableOrdered => 0,
        StreamReliability::ReliableUnordered => 1,
        StreamReliability::Unreliable => 2,
    }
}

impl Control {
    /// The record's bytes. Strings longer than their field are cut at a
    /// character boundary (a target is checked to fit before it is sent).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        match self {
            Control::Open(o) => {
                out.push(1);
                out.extend_from_slice(&o.stream.to_be_bytes());
                out.push(match o.proto {
                    FlowProto::Udp => 0,
                    FlowProto::Tcp => 1,
                });
                out.push(o.class);
                out.push(reliability_code(o.reliability));
                let ms = o.deadline.map_or(0, |d| {
                    u32::try_from(d.as_millis()).unwrap_or(u32::MAX).max(1)
                });
                out.extend_from_slice(&ms.to_be_bytes());
                let t = truncate(&o.target, 255);
                out.push(t.len() as u8);
                out.extend_from_slice(t.as_bytes());
            }
            Control::Opened { stream } => {
                out.push(2);
                out.extend_from_slice(&stream.to_be_bytes());
            }
            Control::Refused { stream, reason } => {
                out.push(3);
                out.extend_from_slice(&stream.to_be_bytes());
                out.extend_from_slice(truncate(reason, MAX_REASON_BYTES).as_bytes());
            }
            Control::Close { stream } => {
                out.push(4);
                out.extend_from_slice(&stream.to_be_bytes());
            }
        }
        out
    }

    /// Read one record; O(length). Every malformed input is an error
    /// naming the field, never a panic.
    pub fn decode(b: &[u8]) -> Result<Control, DecodeError> {
        let (&kind, rest) = b.split_first().ok_or(DecodeError("empty record"))?;
        if rest.len() < 2 {
            return Err(DecodeError("stream: too short"));
        }
        let stream = u16::from_be_bytes([rest[0], rest[1]]);
        let rest = &rest[2..];
        match kind {
            1 => {
                if rest.len() < 8 {
                    return Err(DecodeError("OPEN: too short"));
                }
                let proto = match rest[0] {
                    0 => FlowProto::Udp,
                    1 => FlowProto::Tcp,
                    _ => return Err(DecodeError("OPEN proto: not 0 (udp) or 1 (tcp)")),
                };
                let class = rest[1];
                if class > 3 {
                    return Err(DecodeError("OPEN class: above 3"));
                }
                let reliability = match rest[2] {
                    0 => StreamReliability::ReliableOrdered,
                    1 => StreamReliability::ReliableUnordered,
                    2 => StreamReliability::Unreliable,
                    _ => return Err(DecodeError("OPEN reliability: unknown code")),
                };
                let ms = u32::from_be_bytes([rest[3], rest[4], rest[5], rest[6]]);
                let len = usize::from(rest[7]);
                let t = &rest[8..];
                if t.len() != len {
                    return Err(DecodeError("OPEN target: length does not match"));
                }
                let target = std::str::from_utf8(t)
                    .map_err(|_| DecodeError("OPEN target: not UTF-8"))?
                    .to_string();
                Ok(Control::Open(OpenFlow {
                    stream,
                    proto,
                    class,
                    reliability,
                    deadline: (ms > 0).then(|| Duration::from_millis(u64::from(ms))),
                    target,
                }))
            }
            2 | 4 if !rest.is_empty() => Err(DecodeError("OPENED/CLOSE: trailing bytes")),
            2 => Ok(Control::Opened { stream }),
            4 => Ok(Control::Close { stream }),
            3 => {
                if rest.len() > MAX_REASON_BYTES {
                    return Err(DecodeError("REFUSED reason: too long"));
                }
                let reason = std::str::from_utf8(rest)
                    .map_err(|_| DecodeError("REFUSED reason: not UTF-8"))?
                    .to_string();
                Ok(Control::Refused { stream, reason })
            }
            _ => Err(DecodeError("kind: unknown record type")),
        }
    }
}

/// `s` cut to at most `max` bytes at a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reliability() -> impl Strategy<Value = StreamReliability> {
        prop_oneof![
            Just(StreamReliability::ReliableOrdered),
            Just(StreamReliability::ReliableUnordered),
            Just(StreamReliability::Unreliable),
        ]
    }

    fn record() -> impl Strategy<Value = Control> {
        prop_oneof![
            (
                any::<u16>(),
                any::<bool>(),
                0u8..4,
                reliability(),
                proptest::option::of(1u64..4_000_000),
                "[a-z0-9.:\\[\\]]{0,255}"
            )
                .prop_map(|(stream, tcp, class, reliability, ms, target)| {
                    Control::Open(OpenFlow {
                        stream,
                        proto: if tcp { FlowProto::Tcp } else { FlowProto::Udp },
                        class,
                        reliability,
                        deadline: ms.map(Duration::from_millis),
                        target,
                    })
                }),
            any::<u16>().prop_map(|stream| Control::Opened { stream }),
            (any::<u16>(), "\\PC{0,100}")
                .prop_map(|(stream, reason)| Control::Refused { stream, reason }),
            any::<u16>().prop_map(|stream| Control::Close { stream }),
        ]
    }

    proptest! {
        #[test]
        fn records_round_trip(c in record()) {
            let bytes = c.encode();
            prop_assert_eq!(Control::decode(&bytes), Ok(c));
        }

        #[test]
        fn any_bytes_decode_or_fail_cleanly(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(c) = Control::decode(&b) {
                // What decodes re-encodes to the same bytes.
                prop_assert_eq!(c.encode(), b);
            }
        }
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(Control::decode(&[]).unwrap_err().0, "empty record");
        assert!(Control::decode(&[1, 0, 1, 7, 0, 0, 0, 0, 0, 0, 0])
            .unwrap_err()
            .0
            .contains("proto"));
        assert!(Control::decode(&[1, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0])
            .unwrap_err()
            .0
            .contains("class"));
        assert!(Control::decode(&[1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, b'a'])
            .unwrap_err()
            .0
            .contains("target"));
        assert!(Control::decode(&[9, 0, 1]).unwrap_err().0.contains("kind"));
    }
}
