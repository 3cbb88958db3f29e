//! # The `endpoint` target's input format: a mode and a list of operations
//!
//! A fuzz input is read with [`arbitrary::Unstructured`], byte by byte, in
//! a layout simple enough to write by hand: the corpus generator builds
//! [`Script`]s and [`Script::encode`]s them, and decoding an encoded script
//! gives it back (tested below), so every committed seed means what its
//! name says. Only fixed-width integers (little-endian, as `arbitrary`
//! reads them; missing bytes read as zero) and length-prefixed byte
//! strings are used; a tag byte picks the operation modulo the number of
//! operations, so every byte string is *some* script.
//!
//! ```text
//! input  = mode:u8 op*                      (at most MAX_OPS ops)
//! op     = tag:u8 fields…                   (tag % 11 picks the kind)
//! 0 Raw     to:u8 from:u8 len:u16 bytes[min(len % 1501, rest)]
//! 1 Mutated index:u16 from:u8 n:u8 (pos:u16 xor:u8)[n % 9] truncate:u16
//! 2 Replay  index:u16 from:u8
//! 3 Forge   index:u16 kind:u8 from:u8 number:u32
//! 4 Deliver count:u8
//! 5 DropNext
//! 6 Swap
//! 7 Advance ms:u16
//! 8 Send    side:u8 stream:u8 len:u16
//! 9 Close   side:u8
//! 10 Abort  side:u8
//! ```

use arbitrary::Unstructured;

/// Most operations read from one input (keeps every run short).
pub const MAX_OPS: usize = 256;
/// Largest raw datagram an input can inject.
pub const MAX_RAW_LEN: usize = 1500;
/// Most byte mutations of one captured datagram.
pub const MAX_FLIPS: usize = 8;
/// Largest message an input can ask a side to send.
pub const MAX_SEND_LEN: usize = 5000;
/// Number of operation kinds (the tag byte is read modulo this).
const KINDS: u8 = 11;

/// One step of a fuzz run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Arbitrary bytes to side `to` (0 client, 1 server; taken modulo 2)
    /// from the address picked by `from` (see `World::source_addr`).
    Raw {
        /// Receiving side.
        to: u8,
        /// Source address selector.
        from: u8,
        /// The datagram.
        bytes: Vec<u8>,
    },
    /// A captured genuine datagram (`index` modulo the capture count), with
    /// byte `pos % len` xor-ed with `xor` for each flip, then cut to
    /// `truncate % len` bytes when `truncate` is not zero, delivered to its
    /// original receiver.
    Mutated {
        /// Capture selector.
        index: u16,
        /// Source address selector.
        from: u8,
        /// (position, xor mask) pairs.
        flips: Vec<(u16, u8)>,
        /// Truncation selector; 0 = keep the length.
        truncate: u16,
    },
    /// A captured genuine datagram delivered again, unchanged.
    Replay {
        /// Capture selector.
        index: u16,
        /// Source address selector.
        from: u8,
    },
    /// A well-formed forged packet (END, FIN + REMOTE_RESET, NACK, CWIN, …:
    /// `kind` picks) whose ids and SYNC_NO are copied from a captured
    /// datagram, with a valid checksum (and a garbage tag when the run is
    /// protected) — the forgery an on-path attacker of an unprotected link
    /// makes without solving anything.
    Forge {
        /// Capture selector (the header template).
        index: u16,
        /// What to forge (see `World::forge`).
        kind: u8,
        /// Source address selector.
        from: u8,
        /// Packet number / NACKed packet number.
        number: u32,
    },
    /// Deliver up to `count` genuine datagrams in flight, oldest first.
    Deliver {
        /// How many.
        count: u8,
    },
    /// Lose the oldest genuine datagram in flight.
    DropNext,
    /// Swap the two oldest genuine datagrams in flight (reordering).
    Swap,
    /// Let `ms` milliseconds pass, firing every timer on the way.
    Advance {
        /// Milliseconds.
        ms: u16,
    },
    /// The application of `side` sends a message of `len % (MAX_SEND_LEN+1)`
    /// bytes on stream `stream % 4`.
    Send {
        /// Sending side.
        side: u8,
        /// Stream selector.
        stream: u8,
        /// Length selector.
        len: u16,
    },
    /// The application of `side` closes its connection.
    Close {
        /// Side.
        side: u8,
    },
    /// The application of `side` aborts its connection.
    Abort {
        /// Side.
        side: u8,
    },
}

/// A whole input: the mode selector and the operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// Picks the security mode (modulo the number of modes).
    pub mode: u8,
    /// The operations, in order.
    pub ops: Vec<Op>,
}

impl Script {
    /// Reads a script from fuzz input; never fails (missing bytes are zero,
    /// extra operations past [`MAX_OPS`] are ignored).
    pub fn decode(data: &[u8]) -> Script {
        let mut u = Unstructured::new(data);
        let mode = byte(&mut u);
        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < MAX_OPS {
            ops.push(Op::decode(&mut u));
        }
        Script { mode, ops }
    }

    /// The bytes that [`decode`](Self::decode) reads back as this script
    /// (for the corpus generator; fields are written as decoded, so values
    /// out of range are written reduced).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![self.mode];
        for op in &self.ops {
            op.encode(&mut out);
        }
        out
    }
}

fn byte(u: &mut Unstructured<'_>) -> u8 {
    u.arbitrary().unwrap_or(0)
}

fn word(u: &mut Unstructured<'_>) -> u16 {
    u.arbitrary().unwrap_or(0)
}

fn long(u: &mut Unstructured<'_>) -> u32 {
    u.arbitrary().unwrap_or(0)
}

impl Op {
    fn decode(u: &mut Unstructured<'_>) -> Op {
        match byte(u) % KINDS {
            0 => {
                let (to, from) = (byte(u), byte(u));
                let want = usize::from(word(u)) % (MAX_RAW_LEN + 1);
                let n = want.min(u.len());
                let bytes = u.bytes(n).map(<[u8]>::to_vec).unwrap_or_default();
                Op::Raw { to, from, bytes }
            }
            1 => {
                let (index, from) = (word(u), byte(u));
                let n = usize::from(byte(u)) % (MAX_FLIPS + 1);
                let flips = (0..n).map(|_| (word(u), byte(u))).collect();
                let truncate = word(u);
                Op::Mutated {
                    index,
                    from,
                    flips,
                    truncate,
                }
            }
            2 => Op::Replay {
                index: word(u),
                from: byte(u),
            },
            3 => Op::Forge {
                index: word(u),
                kind: byte(u),
                from: byte(u),
                number: long(u),
            },
            4 => Op::Deliver { count: byte(u) },
            5 => Op::DropNext,
            6 => Op::Swap,
            7 => Op::Advance { ms: word(u) },
            8 => Op::Send {
                side: byte(u),
                stream: byte(u),
                len: word(u),
            },
            9 => Op::Close { side: byte(u) },
            _ => Op::Abort { side: byte(u) },
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let w = |out: &mut Vec<u8>, v: u16| out.extend_from_slice(&v.to_le_bytes());
        match self {
            Op::Raw { to, from, bytes } => {
                let bytes = &bytes[..bytes.len().min(MAX_RAW_LEN)];
                out.extend_from_slice(&[0, *to, *from]);
                // The length fits: MAX_RAW_LEN < u16::MAX.
                w(out, bytes.len() as u16);
                out.extend_from_slice(bytes);
            }
            Op::Mutated {
                index,
                from,
                flips,
                truncate,
            } => {
                out.push(1);
                w(out, *index);
                let flips = &flips[..flips.len().min(MAX_FLIPS)];
                out.extend_from_slice(&[*from, flips.len() as u8]);
                for (pos, xor) in flips {
                    w(out, *pos);
                    out.push(*xor);
                }
                w(out, *truncate);
            }
            Op::Replay { index, from } => {
                out.push(2);
                w(out, *index);
                out.push(*from);
            }
            Op::Forge {
                index,
                kind,
                from,
                number,
            } => {
                out.push(3);
                w(out, *index);
                out.extend_from_slice(&[*kind, *from]);
                out.extend_from_slice(&number.to_le_bytes());
            }
            Op::Deliver { count } => out.extend_from_slice(&[4, *count]),
            Op::DropNext => out.push(5),
            Op::Swap => out.push(6),
            Op::Advance { ms } => {
                out.push(7);
                w(out, *ms);
            }
            Op::Send { side, stream, len } => {
                out.extend_from_slice(&[8, *side, *stream]);
                w(out, *len);
            }
            Op::Close { side } => out.extend_from_slice(&[9, *side]),
            Op::Abort { side } => out.extend_from_slice(&[10, *side]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_scripts_decode_to_themselves() {
        let script = Script {
            mode: 1,
            ops: vec![
                Op::Raw {
                    to: 1,
                    from: 7,
                    bytes: vec![1, 2, 3],
                },
                Op::Mutated {
                    index: 300,
                    from: 0,
                    flips: vec![(4, 0x80), (19, 1)],
                    truncate: 0,
                },
                Op::Replay { index: 2, from: 1 },
                Op::Forge {
                    index: 5,
                    kind: 3,
                    from: 0,
                    number: 77,
                },
                Op::Deliver { count: 9 },
                Op::DropNext,
                Op::Swap,
                Op::Advance { ms: 1234 },
                Op::Send {
                    side: 0,
                    stream: 2,
                    len: 4000,
                },
                Op::Close { side: 1 },
                Op::Abort { side: 0 },
            ],
        };
        assert_eq!(Script::decode(&script.encode()), script);
    }

    #[test]
    fn any_bytes_decode_and_truncated_raw_takes_what_is_left() {
        let s = Script::decode(&[0, 0, 1, 1, 0xff, 0x00, 9, 9]);
        assert_eq!(
            s.ops,
            vec![Op::Raw {
                to: 1,
                from: 1,
                bytes: vec![9, 9]
            }]
        );
        assert_eq!(Script::decode(&[]).ops, vec![]);
    }
}
