//! # The one Gilbert–Elliott loss channel, re-exported
//!
//! The two-state bursty-loss model of the project lives in the link
//! crate, [`peregrine_link::loss`], with the rest of the link primitives
//! (queue, outages, impairments) the harness's pipes ([`crate::harness`]),
//! the simulator's links (`peregrine_sim::world::loss::LossModel`) and
//! through them the controller lab and the live emulator are built from.
//! It is re-exported here so that `peregrine_proto::loss::GilbertElliott`
//! keeps working.

pub use peregrine_link::loss::GilbertElliott;
