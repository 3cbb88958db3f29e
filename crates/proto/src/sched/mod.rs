//! # Stream schedulers
//!
//! A [`Scheduler`] decides, one frame at a time, which stream the
//! packetizer takes its next block from — for new data and for
//! retransmissions alike (a stream with lost blocks is active, and when it
//! is chosen its retransmissions go first, as seed 002 §3 does: "the
//! prioritization covers both transmission and retransmission queues").
//!
//! The packetizer tells the scheduler when a stream becomes active
//! ([`Scheduler::activate`]), after every block it took from one
//! ([`Scheduler::on_sent`], with whether the stream has more), when the
//! packet being filled is complete ([`Scheduler::end_packet`]: round robin's
//! turn is a packetful, seed 002 Algorithm 1), and when a stream stops
//! being active for another reason ([`Scheduler::remove`]).
//! Every decision is O(log n) or better in the number of active streams.
//!
//! | file | scheduler | source | tie-break |
//! |---|---|---|---|
//! | [`rr`] | round robin: the head stream fills the packet, then goes to the back | seed 002 Algorithm 1 | activation order (FIFO) |
//! | [`wfq`] | weighted fair queuing (start-time fair queuing) | seed 002 §3, real WFQ | smaller start tag, then earlier activation |
//! | [`abs`] | absolute priority | seed 002 Algorithms 2–3 | lower class, then earlier activation |
//! | [`adaptive`] | RR above the target rate, ABS below | seed 002 Algorithm 4 | as RR / ABS |
//! | [`edf`] | earliest deadline first | ours | earlier deadline, lower class, least recently served |
//! | [`aging`] | ABS whose waiting streams age up (one class per eighth of the bound) | seed 002's future work | ABS wins a tie with the aged stream |
//!
//! Priority classes are 0 (most urgent) to 3, as the 2-bit PRI field of
//! the base header carries them.

pub mod abs;
pub mod adaptive;
pub mod aging;
pub mod edf;
pub mod registry;
pub mod rr;
pub mod wfq;

use peregrine_cc::Time;
use std::fmt::Debug;

pub use registry::{SchedulerConfig, SCHEDULERS};
use std::time::Duration;

/// What a scheduler may know about one active stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StreamView {
    /// The stream id.
    pub id: u16,
    /// Priority class, 0 (most urgent) to 3.
    pub class: u8,
    /// WFQ weight, ≥ 1.
    pub weight: u32,
    /// Deadline of the message the stream would send next, if it has one.
    pub head_deadline: Option<Time>,
    /// When the message the stream would send next was queued.
    pub head_enqueued: Time,
}

/// What the connection knows when a decision is made (Algorithm 4 reads
/// cwnd and sRTT; aging reads the clock).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SchedContext {
    /// Now.
    pub now: Time,
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Smoothed RTT, if measured.
    pub srtt: Option<Duration>,
}

impl SchedContext {
    /// A context at `now` with no congestion state (tests, benchmarks).
    pub fn at(now: Time) -> SchedContext {
        SchedContext {
            now,
            cwnd_bytes: 0,
            srtt: None,
        }
    }
}

/// One stream scheduler. Ids passed to `on_sent` and `remove` are of
/// active streams; `activate` of an active stream updates its view.
pub trait Scheduler: Debug + Send {
    /// Registry name (`rr`, `wfq`, `abs`, `adaptive`, `edf`, `aging`).
    fn name(&self) -> &'static str;
    /// `s` has data to send (again, or its next message changed).
    fn activate(&mut self, s: &StreamView);
    /// The stream is no longer active.
    fn remove(&mut self, id: u16);
    /// The stream to take the next block from.
    fn pick(&mut self, ctx: &SchedContext) -> Option<u16>;
    /// `bytes` of stream `s.id` were just put in a packet; `more` says
    /// whether it still has data (`s` then describes its next message).
    fn on_sent(&mut self, s: &StreamView, bytes: usize, more: bool);
    /// The packet being filled is complete (full, or nothing more can go
    /// in it). Round robin ends the head stream's turn here (seed 002
    /// Algorithm 1 fills a packet with the head stream's data before
    /// rotating); the other schedulers decide per block and ignore it.
    fn end_packet(&mut self) {}
    /// Whether [`on_sent`](Self::on_sent) reads the view's head fields
    /// (`head_deadline`, `head_enqueued`). One that reads only the id
    /// (round robin) is handed a view without them, and the packetizer
    /// skips looking up the stream's next message for every frame
    /// (issue 36). The default, `true`, is always correct.
    fn reads_heads(&self) -> bool {
        true
    }
    /// The adaptive scheduler's current policy (`"abs"` or `"rr"`).
    fn mode(&self) -> Option<&'static str> {
        None
    }
    /// How often the adaptive scheduler switched policy.
    fn switches(&self) -> u64 {
        0
    }
    /// The adaptive scheduler's latest `sBW` estimate, bits per second.
    fn estimate_bps(&self) -> Option<u64> {
        None
    }
    /// Active streams.
    fn len(&self) -> usize;
    /// Whether no stream is active.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A dense set of stream ids, O(1) membership: one bit per id up to the
/// highest inserted (a connection using streams 0–63 holds one word, not
/// the 8 KiB of all 65,536 ids: issue 20, memory per idle connection).
#[derive(Clone)]
pub(crate) struct IdSet(Vec<u64>);

impl Debug for IdSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IdSet")
    }
}

impl IdSet {
    pub(crate) fn new() -> IdSet {
        IdSet(Vec::new())
    }
    pub(crate) fn contains(&self, id: u16) -> bool {
        self.0
            .get(usize::from(id >> 6))
            .is_some_and(|w| w & (1 << (id & 63)) != 0)
    }
    /// Insert; whether it was new. Amortized O(1): grows to the word of
    /// `id` at most once.
    pub(crate) fn insert(&mut self, id: u16) -> bool {
        let word = usize::from(id >> 6);
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        let had = self.contains(id);
        self.0[word] |= 1 << (id & 63);
        !had
    }
    /// Remove; whether it was there.
    pub(crate) fn remove(&mut self, id: u16) -> bool {
        let had = self.contains(id);
        if let Some(w) = self.0.get_mut(usize::from(id >> 6)) {
            *w &= !(1 << (id & 63));
        }
        had
    }
}

#[cfg(test)]
mod id_set_tests {
    use super::IdSet;

    #[test]
    fn an_id_set_grows_to_its_highest_id_only() {
        let mut s = IdSet::new();
        assert!(!s.contains(0) && !s.contains(65_535));
        assert!(!s.remove(7));
        assert!(s.insert(3));
        assert!(!s.insert(3));
        assert_eq!(s.0.len(), 1, "streams 0-63 take one word");
        assert!(s.insert(65_535));
        assert_eq!(s.0.len(), 1024);
        assert!(s.contains(3) && s.contains(65_535) && !s.contains(64));
        assert!(s.remove(65_535));
        assert!(!s.contains(65_535));
    }
}

#[cfg(test)]
pub(crate) mod tests;
