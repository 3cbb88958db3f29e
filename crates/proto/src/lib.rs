//! # peregrine-proto — the sans-IO transport core
//!
//! The SLTP-derived wire format, the connection state machine, streams,
//! schedulers and loss recovery. No sockets, clocks, threads or unseeded
//! randomness: datagrams and time are passed in, datagrams and timers come
//! out (ARCHITECTURE.md, "The one rule").
//!
//! ## `wire`: the bytes
//!
//! [`wire`] decodes and encodes single datagrams: SLTP's 20-byte base
//! header exactly as seed 003 fixes it, and payloads of our own design —
//! START/REJECT with extension TLVs, DATA with a 32-bit packet number and
//! one or more stream frames (so one datagram carries small messages of
//! several streams), ACK/NACK with ranges, ECHO probes, CWIN, JOIN/LEAVE
//! and the bare END/FIN/IDLE/STATUS. Decoding never panics and returns a
//! typed [`wire::WireError`] for every malformed input; encoding writes
//! into the caller's buffer without allocating. `docs/protocol.md` is the
//! byte-level specification and holds the test vectors;
//! `peregrine wire decode|encode` is the command-line view of this module.

#![warn(missing_docs)]

pub mod connection;
pub mod endpoint;
pub mod io;
pub mod probe;
pub mod recovery;
pub mod rng;
mod send_helpers;
pub mod wire;

pub use io::{EcnCodepoint, SansIo, Transmit};

pub use peregrine_cc::Time;
