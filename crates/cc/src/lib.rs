//! # peregrine-cc — congestion controllers for Peregrine
//!
//! Nineteen congestion-control algorithms behind one sans-IO trait: sixteen
//! faithful to the reference implementations as `docs/cc-spec.md` (in
//! `../shared`) specifies them, plus BBRv3, Prague and LEDBAT++ (issue 41),
//! with the registry and their unit and model-based tests.
//!
//! ## A two-minute tour
//!
//! * [`CongestionController`] is what a connection talks to: it reports
//!   ACKs, congestion episodes, RTOs, idle restarts and link hints, and reads
//!   back `cwnd`, `ssthresh`, the pacing rate and a [`SendGate`]. Time is
//!   passed in as [`Time`]; nothing here reads a clock, opens a socket or
//!   draws an unseeded random number (clippy enforces it).
//! * Window-based algorithms are built from a shared [`core::Core`] (cwnd,
//!   ssthresh, PRR, undo, the kernel helpers H1–H9) and a small
//!   [`policy::CcPolicy`] with kernel-like hooks; [`policy::PolicyController`]
//!   runs the normative per-ACK order of cc-spec §2.3 around them. Loss
//!   recovery and rate sampling stay with the connection, as in ns-3.
//! * [`registry`] builds any controller from its name (`"cubic"`) or from a
//!   serialisable [`CcConfig`] whose fields are the spec's constants and
//!   **[PROJECT CHOICE]**s.
//! * [`filter`] (windowed min/max, H10) and [`rate`] (delivery-rate
//!   sampler H11, packet-timed rounds H12) are shared by the algorithms and
//!   by the connection.
//! * The controller lab (an ACK-clocked single-bottleneck model with a
//!   scripted loss, blockage and RTO, used by `peregrine cc trace|plot` and
//!   by the behaviour tests) is `peregrine_sim::cclab`: this crate holds no
//!   event loop.
//!
//! Windows are counted in segments internally and exposed in bytes.

#![warn(missing_docs)]

pub mod algos;
pub mod controller;
pub mod core;
pub mod filter;
pub mod policy;
pub mod rate;
pub mod registry;
pub mod splitmix;
mod testutil;
pub mod time;
pub mod types;

pub use controller::CongestionController;
pub use registry::{build, CcConfig, UnknownController, NAMES};
pub use time::Time;
pub use types::{
    AckSample, CaState, CcStats, CongestionEvent, CongestionKind, CongestionResponse, CwndEvent,
    EcnResponse, EcnSample, LinkHint, LinkHintKind, PathInfo, RateSample, SendGate,
    StartupMeasurement, SSTHRESH_INF,
};
