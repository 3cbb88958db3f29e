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
//! ## `endpoint`: the sans-IO face
//!
//! [`endpoint::Endpoint`] holds every connection of one socket or simulated
//! node and implements [`SansIo`]: `handle_datagram` / `handle_timeout` in,
//! `poll_transmit` / `poll_timeout` / `poll_event` out, in that order, with
//! a `now` that never goes backwards. It demultiplexes by connection id,
//! opens connections (`connect`), accepts or REJECTs STARTs, answers
//! packets of unknown connections with a stateless REMOTE_RESET, and is
//! where applications send messages, close, and read stats.
//!
//! ## `connection`: the SLTP state machine
//!
//! [`connection`] is one association: the life cycle of seed 003 §IV
//! (two-way START with TLV negotiation, REJECT, END_LOCAL / END_REMOTE /
//! TIMED_CLOSE, END/END + FIN, REMOTE_RESET, idle timeout with IDLE
//! keep-alives, SYNC_NO checked on every packet), messages of any size
//! fragmented into blocks and reassembled in order per stream (small ones
//! coalesced into one datagram), the receive window, ACKs on REPLY_REQ and
//! on the receiver's schedule, NACKs, the events (Connected,
//! MessageReceived, PeerClosed, Closed, SecurityViolation, NetworkReset,
//! Writable, PathMigrated, the JOIN/LEAVE ones) and a stats snapshot.
//! Every buffer is bounded by configuration. The peer's address may
//! change: the connection validates the new path with a PATH_CHALLENGE
//! before it follows (`connection::path`).
//!
//! ## `recovery`: what the connection owes the controllers
//!
//! [`recovery`] is cc-spec §2.1–§2.2 for a packet-numbered transport: RFC
//! 6298 RTT and RTO (minimum 200 ms by default, exponential backoff; never
//! a sample from an ST_RET packet), packet- and time-threshold loss
//! detection, the congestion-state machine around a
//! `peregrine_cc::CongestionController` (one reduction per flight,
//! recovery exit, `Hold`, spurious-loss undo, ECN), the delivery-rate
//! sampler and round counter, cwnd-limited tracking, pacing and the
//! controller's send gate.
//!
//! ## `probe`: packet-pair start-up
//!
//! [`probe`] is SLTP's ECHO_1/ECHO_2 test (seed 003 §III-D): latency,
//! bandwidth and burst from two back-to-back probes, handed to the
//! controller as its initial window (capped) before the first DATA packet;
//! repeated after a burst of NACKs. `StartupMode::SlowStart` skips it.
//!
//! ## `streams` and `sched`: many prioritized streams
//!
//! [`streams`] is what an application configures per stream (priority
//! class 0–3, WFQ weight, reliability mode, send-buffer limit) and the
//! per-stream stats; messages may carry a deadline, after which the
//! sender drops them and tells the receiver to skip them. [`sched`] holds
//! the `Scheduler` trait and its six implementations (RR, WFQ, ABS,
//! adaptive, EDF, ABS with aging), chosen per connection and switchable at
//! run time; the packetizer asks it which stream sends each next block.
//!
//! ## Things that move: handover window, link hints, bounded memory
//!
//! The application closes this side's receive window before a handover
//! (`Endpoint::set_receive_window`, CWIN with a reason); the peer's sender
//! then pauses without counting it as loss or congestion and polls with
//! STATUS. Link hints reach the controller, whose send gate decides what
//! the sender does in a predicted outage ([`connection::window`]). Message
//! buffers of an endpoint are bounded by a [`pool`] with a ceiling: at the
//! ceiling `send_message` says `WouldBlock` and `Event::Writable` follows.
//!
//! ## `multicast`: make-before-break groups
//!
//! [`multicast`] builds a group on its members' connections (JOIN/LEAVE
//! on each, a group sequence number in every message): the
//! `GroupSender` fans out, tracks per-member acknowledgements, paces the
//! group to its slowest member and evicts silent ones; a `GroupReceiver`
//! de-duplicates a member attached through two paths at once. Address
//! migration (the peer's address changes, the connection validates the
//! new path and follows) lives in `connection::path`.
//!
//! ## `rng`
//!
//! [`rng`] is the core's one random source, a SplitMix64 seeded by whoever
//! creates the endpoint, so every run is reproducible. It also holds the
//! project's one `(seed, component name) → stream` derivation
//! ([`rng::stream_seed`], [`rng::stream_key`]) and the SplitMix64 mixer
//! ([`rng::mix64`]), which the simulator and the test harness build on.
//!
//! ## `harness`: bad links in memory (feature `harness`)
//!
//! `harness` (behind the non-default Cargo feature `harness`) runs any number of [`SansIo`] participants in virtual time
//! over seeded, impaired one-way pipes (rate and drop-tail queue, delay,
//! jitter, reordering, Bernoulli and Gilbert-Elliott loss, duplication,
//! corruption, outages). Same seed, same run, bit for bit. It is test
//! tooling — it panics on misuse and needs `serde` and `rand` — so the
//! normal build leaves it out; its pipes are built from the link crate's
//! primitives (`peregrine_link`: queue, outages, loss, impairments), the
//! same the simulator's links use; this crate's
//! integration tests and benches turn it on through a dev-dependency on
//! the crate itself. `harness::driver` is the endpoint driver of the
//! connection tests (`tests/connection/`) on the same event loop.

#![warn(missing_docs)]

pub mod config;
pub mod connection;
pub mod crypto;
pub mod endpoint;
#[cfg(feature = "harness")]
pub mod harness;
pub mod io;
pub mod loss;
pub mod multicast;
pub mod numbered;
pub mod pmtud;
pub mod probe;
pub mod recovery;
pub mod rng;
pub mod sched;
mod send_helpers;
pub mod streams;
pub mod trace;
pub mod vtime;
pub mod wire;

/// The shared byte buffer messages are sent from (`bytes::Bytes`).
pub use bytes::Bytes;
pub use connection::{
    AckPolicy, CloseReason, ConnectionConfig, ConnectionState, ConnectionStats, EndpointConfig,
    Event, HintEffect, MessageData, MessageId, Pacing, PmtuDiscovery, SendError, SendRoom,
    Unreachable, WindowCounters, WindowTarget,
};
pub use endpoint::{pool, ConnectionHandle, Endpoint};
pub use io::{EcnCodepoint, SansIo, Transmit};
pub use sched::{Scheduler, SchedulerConfig};
pub use streams::{
    AbandonReason, StreamConfig, StreamReliability, StreamStats, DEFAULT_STREAM_SEND_BUFFER_BYTES,
};

pub use peregrine_cc::Time;
