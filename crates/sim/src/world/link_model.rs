//! The link model seam: [`LinkModel`], the trait every link direction
//! implements (point-to-point and trace links in `world::link`, the 802.11
//! interface in `world::medium`, the mmWave access link in
//! `world::mmwave_link`), and the values it exchanges with its driver.
//!
//! A link model is a pure value in virtual time: it never reads a clock,
//! sleeps or draws unseeded randomness. Every instant it sees or returns
//! is a [`peregrine_cc::Time`] (the project's one time type, ns since an
//! epoch its driver chooses), every span a [`std::time::Duration`]. Its
//! driver owns time and calls, in non-decreasing `now`:
//!
//! 1. [`LinkModel::enqueue`] when a packet reaches the link (it is queued
//!    in the link's [`DropTailQueue`](super::queue::DropTailQueue) or
//!    handed back with the reason);
//! 2. [`LinkModel::next_wake`] to learn the next instant the link has
//!    work (the head's departure, the end of a transmission, the end of
//!    an outage), `None` when idle;
//! 3. [`LinkModel::advance`] at that instant (or any later one): the link
//!    serves its queue up to `now` and reports, in a [`LinkOutput`], what
//!    left, what was lost and what arrives at the far end and when.
//!
//! The simulator's engine is one driver: it turns `next_wake` into an
//! event and the arrivals into events at the next hop. A real-time
//! driver (the emulator) runs the same trait from a wall clock:
//!
//! * fix an epoch (a monotonic `Instant` at start) and pass
//!   `Time::from_nanos(elapsed since the epoch)` as `now` — never less
//!   than the previous call's;
//! * on each datagram, `advance(now)` first (to catch up on what fell
//!   due while it slept: a late timer must not leave departed packets
//!   in the queue when the new one is offered), then `enqueue(now,
//!   packet)`, then `advance(now)`;
//! * after every call, ask `next_wake(now)` and sleep until that instant
//!   (or the next datagram, whichever comes first), then `advance`;
//! * hold each packet of `LinkOutput::delivered` until its arrival time
//!   and hand it on then; drain the output's vectors after each
//!   `advance` (the model only appends).
//!
//! Waking late is allowed: `advance` does everything due at or before
//! `now` and stamps departures and arrivals at the instants they were
//! due, so a late timer delays the hand-over but not the model's own
//! timeline. Given the same arrivals at the same instants and the same
//! seeds, a real-time driver sees the drops and arrival times the
//! simulator computes. The trait has no `Send` bound (the 802.11 interfaces share
//! their medium through an `Rc`); the point-to-point, trace and mmWave
//! links are `Send` and can be moved into a driver thread or task.

use super::packet::Packet;
use peregrine_cc::Time;

/// Why a packet was dropped.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DropReason {
    /// The drop-tail queue was full.
    QueueFull,
    /// The channel lost it (loss model).
    Channel,
    /// It was on the wire when the link went down.
    Outage,
    /// No route to its destination.
    NoRoute,
    /// Larger than the link's `mtu`.
    TooBig,
    /// An AQM (CoDel, FQ-CoDel, PIE, RED, DualPI2) dropped it.
    Aqm,
}

impl DropReason {
    /// Whether this is a queue drop (else a channel-side drop).
    pub fn is_queue(self) -> bool {
        matches!(self, DropReason::QueueFull | DropReason::Aqm)
    }
    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue",
            DropReason::Channel => "channel",
            DropReason::Outage => "outage",
            DropReason::NoRoute => "no_route",
            DropReason::TooBig => "mtu",
            DropReason::Aqm => "aqm",
        }
    }
}

/// What a link did while advancing.
#[derive(Debug, Default)]
pub struct LinkOutput {
    /// Packets that reach their `next_hop` node, with their arrival times.
    pub delivered: Vec<(Time, Packet)>,
    /// Packets lost on the channel or to an outage.
    pub dropped: Vec<(Packet, DropReason)>,
    /// (flow, wire bytes) of forward DATA packets that left their
    /// sender's first-hop queue (seed 001's "processed load").
    pub processed: Vec<(usize, u32)>,
    /// Link-layer hints for a flow's sender: (deliver at, flow, hint).
    /// Wireless channels emit them; the engine hands each to the flow's
    /// client endpoint (`Endpoint::link_hint`) at that time.
    pub hints: Vec<(Time, usize, peregrine_cc::LinkHint)>,
}

/// Counters of one link direction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets accepted into the queue.
    pub enqueued_packets: u64,
    /// Packets dropped by the full queue.
    pub queue_drops: u64,
    /// Packets lost on the channel.
    pub channel_drops: u64,
    /// Packets lost to outages.
    pub outage_drops: u64,
    /// Packets delivered to the far end.
    pub delivered_packets: u64,
    /// Wire bytes delivered.
    pub delivered_bytes: u64,
    /// Largest queue seen, packets.
    pub max_queue_packets: u64,
    /// Trace opportunities wasted on an empty queue (trace links).
    pub wasted_opportunities: u64,
    /// Packets larger than the link's `mtu`, dropped before its queue
    /// (counted by the engine, which knows the link's `mtu`).
    pub mtu_drops: u64,
    /// The queue discipline when it is an AQM (`"codel"`, …); `None` for
    /// drop-tail.
    pub aqm: Option<&'static str>,
    /// Packets the AQM marked CE instead of dropping.
    pub ce_marked: u64,
    /// Packets the AQM dropped (its own decision, not a full queue).
    pub aqm_dropped: u64,
}

/// One direction of a link, as a driver (the simulator's engine, or a
/// real-time emulator — see the module documentation) runs it. Every
/// `now` is an instant since the driver's epoch and never decreases from
/// one call to the next.
///
/// Implementations keep their queue in a
/// [`DropTailQueue`](super::queue::DropTailQueue), draw channel loss from
/// [`LossModel`](super::loss::LossModel) and outages from
/// [`Outages`](super::outage::Outages) (or a recorded channel), each with
/// its own seeded generator, so a run depends only on the seed.
pub trait LinkModel {
    /// Offer `pkt` at `now`: queued, or handed back with the reason
    /// (the queue was full). O(1) amortized in the links here.
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Result<(), (Packet, DropReason)>;
    /// The next instant (≥ `now`) at which [`advance`](Self::advance) has
    /// work — the next departure or end of transmission — or `None` when
    /// the link is idle until the next `enqueue`. O(1) amortized (an
    /// outage or a trace gap is skipped in one step).
    fn next_wake(&mut self, now: Time) -> Option<Time>;
    /// Do everything due at or before `now`, appending to `out` what left
    /// the queue, what was lost and what arrives at the far end (with
    /// its arrival time, which may be later than `now`). O(packets
    /// served).
    fn advance(&mut self, now: Time, out: &mut LinkOutput);
    /// Packets and bytes waiting in the queue. O(1).
    fn backlog(&self) -> (u64, u64);
    /// Counters. O(1).
    fn stats(&self) -> &LinkStats;
}
