//! # Virtual time: the one event queue
//!
//! [`EventQueue`] lives in this crate, the lowest one that needs it (the
//! harness), so the simulator and the laboratory reuse it.

pub mod queue;

pub use queue::EventQueue;
