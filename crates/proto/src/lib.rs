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
//!
//! ## `harness`: bad links in memory
//!
//! [`harness`] runs any number of [`SansIo`] participants in virtual time
//! over seeded, impaired one-way pipes (rate and drop-tail queue, delay,
//! jitter, reordering, Bernoulli and Gilbert-Elliott loss, duplication,
//! corruption, outages). Same seed, same run, bit for bit. Tests, the
//! benchmark and simple simulations drive the protocol through it.

#![warn(missing_docs)]

pub mod harness;
pub mod io;
pub mod wire;

pub use io::{EcnCodepoint, SansIo, Transmit};

pub use peregrine_cc::Time;
