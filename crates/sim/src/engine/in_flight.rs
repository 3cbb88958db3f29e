//! The messages of one flow that were queued and are not yet delivered
//! or abandoned: when each was queued and its size, by (stream, number).
//!
//! A stream numbers its messages in order and they mostly finish in
//! order, so each stream's records live in a queue indexed by
//! `number - base`, a finished message leaving a hole that is dropped
//! once it reaches the front: recording a message is a `push_back` and
//! finding it an index, where the B-tree this replaces cost 7 % of
//! city-200's CPU (200 flows with about 4,000 messages queued each;
//! issue 40). A message that never finishes keeps the slots of every
//! later one (16 bytes each) until the run ends. The queue is
//! [`NumberedSlots`], the type that holds a sending stream's messages.

use peregrine_cc::Time;
use peregrine_proto::numbered::NumberedSlots;

/// One flow's unfinished messages.
#[derive(Clone, Debug, Default)]
pub(crate) struct InFlight {
    /// Per stream id (a flow has a few): its records.
    streams: Vec<(u16, Numbered)>,
}

/// One stream's records (when queued, bytes) by message number.
type Numbered = NumberedSlots<(Time, u32)>;

impl InFlight {
    /// Message `number` of `stream` was queued at `queued`, `bytes` long
    /// (replacing any record of that number). O(streams) and amortized
    /// O(1) for the stream's next number; O(gap) for any other.
    pub(crate) fn insert(&mut self, stream: u16, number: u32, queued: Time, bytes: u32) {
        let i = match self.streams.iter().position(|(id, _)| *id == stream) {
            Some(i) => i,
            None => {
                self.streams.push((stream, Numbered::default()));
                self.streams.len() - 1
            }
        };
        self.streams[i].1.insert(number, (queued, bytes));
    }

    /// Message `number` of `stream` finished: its record (queued at,
    /// bytes), if it has one. O(streams + holes dropped at the front).
    pub(crate) fn remove(&mut self, stream: u16, number: u32) -> Option<(Time, u32)> {
        let (_, q) = self.streams.iter_mut().find(|(id, _)| *id == stream)?;
        q.remove(number)
    }

    /// Messages recorded.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.streams.iter().map(|(_, q)| q.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    proptest::proptest! {
        /// Inserts and removes in any order answer what a map answers.
        #[test]
        fn answers_like_a_map(
            ops in proptest::collection::vec((0u16..3, 0u32..40, proptest::bool::ANY), 0..300)
        ) {
            let mut q = InFlight::default();
            let mut map: BTreeMap<(u16, u32), (Time, u32)> = BTreeMap::new();
            for (k, (stream, number, insert)) in ops.into_iter().enumerate() {
                if insert {
                    let v = (Time::from_nanos(k as u64), number * 3);
                    q.insert(stream, number, v.0, v.1);
                    map.insert((stream, number), v);
                } else {
                    proptest::prop_assert_eq!(
                        q.remove(stream, number),
                        map.remove(&(stream, number))
                    );
                }
                proptest::prop_assert_eq!(q.len(), map.len());
            }
        }
    }

    #[test]
    fn messages_finishing_in_order_leave_nothing_behind() {
        let mut q = InFlight::default();
        for n in 0..1000 {
            q.insert(4, n, Time::from_nanos(u64::from(n)), 100);
            if n >= 10 {
                assert_eq!(
                    q.remove(4, n - 10),
                    Some((Time::from_nanos(u64::from(n - 10)), 100))
                );
            }
        }
        assert_eq!(q.len(), 10);
        assert_eq!(q.streams[0].1.slots(), 10);
        assert_eq!(q.remove(4, 3), None);
    }
}
