//! # peregrine-proto — the sans-IO transport core
//!
//! The SLTP-derived wire format, the connection state machine, streams,
//! schedulers and loss recovery. No sockets, clocks, threads or unseeded
//! randomness: datagrams and time are passed in, datagrams and timers come
//! out (ARCHITECTURE.md, "The one rule").

#![warn(missing_docs)]

pub use peregrine_cc::Time;
