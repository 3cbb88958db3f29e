//! The harness's vocabulary: node handles, errors, run outcomes, the
//! delivery log.

use super::ConfigError;
use crate::{EcnCodepoint, Time};
use std::fmt;
use thiserror::Error;

/// A node's handle in a [`Harness`](super::Harness): its index in order of
/// [`add_node`](super::Harness::add_node).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub usize);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.0)
    }
}

/// Why a run stopped early. Every message names the harness seed.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum HarnessError {
    /// A node kept asking for a timer at or before the current time, and
    /// firing it neither sent a datagram nor moved the timer into the
    /// future, more times in a row than the limit
    /// ([`set_timer_spin_limit`](super::Harness::set_timer_spin_limit)).
    #[error("{node} spins on its timer: asked for a timeout at or before now ({at:?}) {count} times in a row without progress (harness seed {seed})")]
    TimerSpin {
        /// The spinning node.
        node: NodeId,
        /// The instant time is stuck at.
        at: Time,
        /// Consecutive fruitless firings.
        count: u32,
        /// The harness seed.
        seed: u64,
    },
    /// More events (deliveries, timer firings, transmits) happened at one
    /// instant than the limit
    /// ([`set_instant_event_limit`](super::Harness::set_instant_event_limit)):
    /// nodes are livelocked, e.g. echoing each other over zero-delay pipes.
    #[error("time is stuck at {at:?}: more than {limit} events without time advancing (harness seed {seed})")]
    Stalled {
        /// The instant time is stuck at.
        at: Time,
        /// The limit that was exceeded.
        limit: u64,
        /// The harness seed.
        seed: u64,
    },
    /// A pipe configuration failed validation.
    #[error("{}: {source} (harness seed {seed})", pipe_label(.from, .to))]
    InvalidPipe {
        /// Sending end (`None` for the default pipe).
        from: Option<NodeId>,
        /// Receiving end (`None` for the default pipe).
        to: Option<NodeId>,
        /// What is wrong.
        source: ConfigError,
        /// The harness seed.
        seed: u64,
    },
    /// A node's `poll_transmit` claimed more bytes than it wrote.
    #[error(
        "{node} returned a Transmit of {size} bytes but wrote {written} (harness seed {seed})"
    )]
    BadTransmit {
        /// The node.
        node: NodeId,
        /// `Transmit::size`.
        size: usize,
        /// Bytes actually in the buffer.
        written: usize,
        /// The harness seed.
        seed: u64,
    },
}

fn pipe_label(from: &Option<NodeId>, to: &Option<NodeId>) -> String {
    match (from, to) {
        (Some(f), Some(t)) => format!("pipe {f} -> {t}"),
        _ => "default pipe".to_owned(),
    }
}

/// How [`run_until_idle`](super::Harness::run_until_idle) ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// No datagram in flight and no timer armed.
    Idle,
    /// Events remain after the limit; time now stands at the limit.
    LimitReached,
}

/// What one [`step`](super::Harness::step) did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StepEvent {
    /// A datagram was handed to `to`.
    Delivered {
        /// When.
        at: Time,
        /// Sender.
        from: NodeId,
        /// Receiver.
        to: NodeId,
        /// Its length in bytes.
        len: usize,
    },
    /// `node`'s timer fired.
    Timer {
        /// When.
        at: Time,
        /// Whose.
        node: NodeId,
    },
}

/// A delivered datagram, as recorded when
/// [`record_deliveries`](super::Harness::record_deliveries) is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// When it was delivered.
    pub at: Time,
    /// When it was sent.
    pub sent_at: Time,
    /// Sender.
    pub from: NodeId,
    /// Receiver.
    pub to: NodeId,
    /// ECN codepoint.
    pub ecn: Option<EcnCodepoint>,
    /// The bytes as delivered (after any corruption).
    pub datagram: Vec<u8>,
}
