//! The vehicular world's link hints, known before the run, kept beside
//! the event queue with only the earliest in it (issue 40).
//!
//! The channel is recorded before the traffic runs, so every hint of the
//! run (one per outage with perfect hints) is known at the start. Pushed
//! into the event queue all at once, they sat there for the whole run:
//! in a 30 s city of 200 vehicles they outnumber the live events many
//! times over, and every pop of every event walked the deeper heap. Here
//! they wait in a vector sorted by (time, sequence number), each under a
//! number reserved from the queue ([`EventQueue::reserve`]) in the order
//! they used to be pushed; only the earliest is in the queue, and when it
//! pops the next takes its place under its own number — so the queue pops
//! the same events in exactly the same (time, sequence) order.

use peregrine_cc::{LinkHint, Time};

#[cfg(doc)]
use peregrine_proto::vtime::EventQueue;

/// What [`HintLane::popped`] answers: the popped hint's (flow, hint),
/// and the next hint's (time, sequence number), if any.
pub(crate) type Popped = ((usize, LinkHint), Option<(Time, u64)>);

/// Hints for flows: (deliver at, reserved sequence number, flow, hint),
/// sorted by (time, sequence number); `next` is the first not yet popped.
#[derive(Debug, Default)]
pub(crate) struct HintLane {
    hints: Vec<(Time, u64, usize, LinkHint)>,
    next: usize,
}

impl HintLane {
    /// A lane of `hints` (each under a distinct reserved number), in any
    /// order. O(hints · log hints).
    pub(crate) fn new(mut hints: Vec<(Time, u64, usize, LinkHint)>) -> HintLane {
        hints.sort_unstable_by_key(|h| (h.0, h.1));
        HintLane { hints, next: 0 }
    }

    /// The earliest hint's (time, sequence number): the one to have in
    /// the queue. O(1).
    pub(crate) fn first(&self) -> Option<(Time, u64)> {
        self.hints.get(self.next).map(|h| (h.0, h.1))
    }

    /// The earliest hint popped from the queue at `at`: its (flow, hint),
    /// and the next hint's (time, sequence number) to push in its place.
    /// O(1).
    pub(crate) fn popped(&mut self, at: Time) -> Option<Popped> {
        let (t, _, flow, hint) = self.hints.get(self.next)?;
        debug_assert_eq!(*t, at, "the queue pops the lane's earliest hint");
        let out = (*flow, hint.clone());
        self.next += 1;
        Some((out, self.first()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use peregrine_cc::LinkHintKind;
    use peregrine_proto::vtime::EventQueue;

    fn hint(ms: u64) -> LinkHint {
        LinkHint {
            kind: LinkHintKind::Blockage,
            issued_at: Time::from_nanos(ms * 1_000_000),
            predicted_duration: None,
            cqi: None,
            speed_mps: None,
        }
    }

    proptest::proptest! {
        /// Hints queued at the start among other events, popped from a
        /// queue that holds only the lane's earliest, come out in exactly
        /// the order of a queue that holds them all.
        #[test]
        fn a_lane_pops_in_the_order_of_one_queue(
            hints in proptest::collection::vec(0u64..50, 0..40),
            others in proptest::collection::vec((0u64..50, 0u64..20), 0..60),
        ) {
            #[derive(Debug, Clone, PartialEq)]
            enum E { Hint(usize, u64), Lane, Other(usize) }
            let t = |ms: u64| Time::from_nanos(ms * 1_000_000);
            let mut all = EventQueue::new();
            let mut one = EventQueue::new();
            let mut lane = Vec::new();
            // The hints are pushed (reserved) first, as `vehicular::attach`
            // does, then the other events, some of which push more when
            // they pop.
            for (k, &ms) in hints.iter().enumerate() {
                all.push(t(ms), E::Hint(k, ms));
                let seq = one.reserve();
                lane.push((t(ms), seq, k, hint(ms)));
            }
            let mut lane = HintLane::new(lane);
            if let Some((at, seq)) = lane.first() {
                one.push_reserved(at, seq, E::Lane);
            }
            for (k, &(ms, _)) in others.iter().enumerate() {
                all.push(t(ms), E::Other(k));
                one.push(t(ms), E::Other(k));
            }
            let mut got_all = Vec::new();
            while let Some((at, e)) = all.pop() {
                if let E::Other(k) = e {
                    if k < 1000 && others[k].1 > 0 {
                        all.push(at + std::time::Duration::from_millis(others[k].1), E::Other(k + 1000));
                    }
                }
                got_all.push((at, e));
            }
            let mut got_one = Vec::new();
            while let Some((at, e)) = one.pop() {
                let e = match e {
                    E::Lane => {
                        let ((k, h), next) = lane.popped(at).expect("a hint waits");
                        if let Some((nt, ns)) = next {
                            one.push_reserved(nt, ns, E::Lane);
                        }
                        proptest::prop_assert_eq!(h.issued_at, at);
                        E::Hint(k, hints[k])
                    }
                    E::Other(k) => {
                        if k < 1000 && others[k].1 > 0 {
                            one.push(at + std::time::Duration::from_millis(others[k].1), E::Other(k + 1000));
                        }
                        E::Other(k)
                    }
                    e => e,
                };
                got_one.push((at, e));
            }
            proptest::prop_assert_eq!(got_all, got_one);
        }
    }
}
