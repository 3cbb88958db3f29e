//! One endpoint's timer events kept beside the event queue, only the
//! earliest in it (issue 40).
//!
//! An endpoint's [`EndpointTimer`](peregrine_proto::vtime::EndpointTimer)
//! never cancels: a timer moved earlier leaves its event queued, stale.
//! A receiver re-arms its keep-alive (an instant seconds ahead) after
//! every acknowledgement delay, so with 200 connections the stale events
//! were 95 % of the queue (60,000 of 62,000 after 5 simulated seconds)
//! and every event paid for the deeper heap. Here each slot's timer
//! events wait in their own small heap under the sequence numbers the
//! queue reserved for them ([`EventQueue::reserve`]); only the lane's
//! earliest is also in the queue. The queue therefore pops them in
//! exactly the (time, sequence) order it would have if all were queued:
//! the same events, in the same order, stale ones included.

use peregrine_cc::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[cfg(doc)]
use peregrine_proto::vtime::EventQueue;

/// A slot's queued timer events: (time, sequence number, whether it is
/// also in the event queue). Invariant: the earliest is in the queue (the
/// ones that were the earliest when pushed stay there too).
#[derive(Debug, Default)]
pub(crate) struct TimerLane {
    waiting: BinaryHeap<Reverse<(Time, u64, bool)>>,
}

impl TimerLane {
    /// An event at `at` under the reserved `seq` joins the lane; whether
    /// it must also go into the queue now (it is the lane's earliest).
    /// O(log lane).
    pub(crate) fn push(&mut self, at: Time, seq: u64) -> bool {
        let earliest = self
            .waiting
            .peek()
            .is_none_or(|Reverse(e)| (at, seq) < (e.0, e.1));
        self.waiting.push(Reverse((at, seq, earliest)));
        earliest
    }

    /// The lane's earliest event popped from the queue (at `at`): it
    /// leaves the lane, and the next earliest, if it is not in the queue
    /// yet, is returned to be pushed there (under its own sequence
    /// number, so it sorts where it always would have). O(log lane).
    pub(crate) fn popped(&mut self, at: Time) -> Option<(Time, u64)> {
        let first = self.waiting.pop();
        debug_assert!(
            first.is_some_and(|Reverse(e)| e.0 == at && e.2),
            "the queue pops a lane's earliest event"
        );
        let mut next = self.waiting.peek_mut()?;
        let Reverse((t, seq, queued)) = &mut *next;
        if *queued {
            return None;
        }
        *queued = true;
        Some((*t, *seq))
    }

    /// Events waiting in the lane (in the queue or not).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use peregrine_proto::vtime::EventQueue;

    proptest::proptest! {
        /// Events of several lanes, pushed and popped in any mix, come out
        /// of a queue holding only each lane's earliest in exactly the
        /// order of a queue holding them all.
        #[test]
        fn lanes_pop_in_the_order_of_one_queue(
            ops in proptest::collection::vec((0usize..3, 0u64..30, 0u8..3), 1..300)
        ) {
            let mut all: EventQueue<usize> = EventQueue::new();
            let mut some: EventQueue<usize> = EventQueue::new();
            let mut lanes: Vec<TimerLane> = (0..3).map(|_| TimerLane::default()).collect();
            let mut now = 0u64;
            let (mut got, mut want) = (Vec::new(), Vec::new());
            let mut pop = |all: &mut EventQueue<usize>, some: &mut EventQueue<usize>,
                           lanes: &mut Vec<TimerLane>, now: &mut u64| {
                if let Some((t, l)) = all.pop() {
                    want.push((t.as_nanos(), l));
                    *now = t.as_nanos();
                }
                if let Some((t, l)) = some.pop() {
                    got.push((t.as_nanos(), l));
                    if let Some((nt, seq)) = lanes[l].popped(t) {
                        some.push_reserved(nt, seq, l);
                    }
                }
            };
            for (lane, ahead, kind) in ops {
                if kind == 0 {
                    pop(&mut all, &mut some, &mut lanes, &mut now);
                } else {
                    // Never in the past: events are pushed at or after now.
                    let at = Time::from_nanos(now + ahead);
                    all.push(at, lane);
                    let seq = some.reserve();
                    if lanes[lane].push(at, seq) {
                        some.push_reserved(at, seq, lane);
                    }
                }
            }
            while !all.is_empty() || !some.is_empty() {
                pop(&mut all, &mut some, &mut lanes, &mut now);
            }
            proptest::prop_assert_eq!(&got, &want);
            proptest::prop_assert!(lanes.iter().all(|l| l.len() == 0));
            proptest::prop_assert_eq!(all.processed(), some.processed());
        }
    }
}
