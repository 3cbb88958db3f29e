//! # The endpoint's timer queue
//!
//! Each connection (and each half-open entry) has at most one deadline:
//! the instant its own `poll_timeout` returned when the endpoint last
//! touched it. The queue keeps them ordered so the endpoint's
//! `poll_timeout` is the first entry and `handle_timeout` visits only the
//! due ones — not a minimum over, or a walk through, every connection.
//!
//! An ordered set of `(deadline, key)` ([`TimerOrder`]; the caller keeps
//! each key's armed deadline, or [`TimerQueue`] keeps them in a map):
//! re-arming and `pop_due` are O(log n), `next` is O(log n) (the
//! B-tree's first leaf), and a key is never in the order twice, so no
//! stale entries pile up (a binary heap with lazy deletion would need
//! periodic rebuilding; quinn-proto's per-connection timer table and
//! s2n-quic's timer wheel solve the same problem).

use peregrine_cc::Time;
use std::collections::{BTreeMap, BTreeSet};

/// Keys ordered by deadline (ties by key), each armed at most once; the
/// caller keeps each key's armed deadline (a connection keeps it in its
/// slot, so re-arming an unchanged deadline costs no tree operation).
#[derive(Debug, Clone)]
pub(crate) struct TimerOrder<K> {
    order: BTreeSet<(Time, K)>,
}

impl<K: Ord + Copy> Default for TimerOrder<K> {
    fn default() -> Self {
        TimerOrder {
            order: BTreeSet::new(),
        }
    }
}

impl<K: Ord + Copy> TimerOrder<K> {
    /// Move `key` from the deadline it was armed with (`old`, as the
    /// caller recorded it) to `new` (`None`: disarmed). O(log n) when they
    /// differ, O(1) when not.
    pub(crate) fn rearm(&mut self, key: K, old: Option<Time>, new: Option<Time>) {
        if old == new {
            return;
        }
        if let Some(o) = old {
            self.order.remove(&(o, key));
        }
        if let Some(t) = new {
            self.order.insert((t, key));
        }
    }

    /// The earliest deadline and its key. O(log n).
    pub(crate) fn next(&self) -> Option<(Time, K)> {
        self.order.first().copied()
    }

    /// Take off and return a key whose deadline is at or before `now`
    /// (earliest first); the caller records it as disarmed. O(log n).
    pub(crate) fn pop_due(&mut self, now: Time) -> Option<K> {
        let &(t, key) = self.order.first()?;
        if t > now {
            return None;
        }
        self.order.pop_first();
        Some(key)
    }

    /// Keys armed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }
}

/// Deadlines by key, ordered by time: a [`TimerOrder`] that also keeps
/// each key's deadline (for callers with no slot of their own, as the
/// half-open set).
#[derive(Debug, Clone)]
pub(crate) struct TimerQueue<K> {
    order: TimerOrder<K>,
    at: BTreeMap<K, Time>,
}

impl<K: Ord + Copy> Default for TimerQueue<K> {
    fn default() -> Self {
        TimerQueue {
            order: TimerOrder::default(),
            at: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Copy> TimerQueue<K> {
    /// Arm `key` at `deadline`, or disarm it (`None`). O(log n); nothing
    /// changes in the order when the deadline is the one already armed.
    pub(crate) fn set(&mut self, key: K, deadline: Option<Time>) {
        let old = match deadline {
            Some(t) => self.at.insert(key, t),
            None => self.at.remove(&key),
        };
        self.order.rearm(key, old, deadline);
    }

    /// Disarm `key`. O(log n).
    pub(crate) fn remove(&mut self, key: K) {
        self.set(key, None);
    }

    /// The deadline armed for `key`. O(log n).
    #[cfg(test)]
    pub(crate) fn get(&self, key: K) -> Option<Time> {
        self.at.get(&key).copied()
    }

    /// Whether `key` is armed. O(log n).
    pub(crate) fn contains(&self, key: K) -> bool {
        self.at.contains_key(&key)
    }

    /// The earliest deadline and its key. O(log n).
    pub(crate) fn next(&self) -> Option<(Time, K)> {
        self.order.next()
    }

    /// Disarm and return a key whose deadline is at or before `now`
    /// (earliest first). O(log n).
    pub(crate) fn pop_due(&mut self, now: Time) -> Option<K> {
        let key = self.order.pop_due(now)?;
        self.at.remove(&key);
        Some(key)
    }

    /// Keys armed.
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn t(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn due_keys_come_out_earliest_first_and_rearming_moves_a_key() {
        let mut q = TimerQueue::default();
        q.set(1u64, Some(t(30)));
        q.set(2, Some(t(10)));
        q.set(3, Some(t(20)));
        q.set(1, Some(t(5)));
        assert_eq!(q.len(), 3);
        assert_eq!(q.next(), Some((t(5), 1)));
        assert_eq!(q.pop_due(t(15)), Some(1));
        assert_eq!(q.pop_due(t(15)), Some(2));
        assert_eq!(q.pop_due(t(15)), None, "3 is due at 20");
        q.remove(3);
        assert_eq!(q.next(), None);
        assert_eq!(q.len(), 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(u8, Option<u16>),
        Pop(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<u8>(), proptest::option::of(0u16..500)).prop_map(|(k, d)| Op::Set(k % 32, d)),
            (0u16..500).prop_map(Op::Pop),
        ]
    }

    proptest! {
        /// Against a naive model (a map scanned for its minimum): the same
        /// next deadline, the same due keys in the same order, the same size.
        #[test]
        fn matches_a_naive_model(ops in proptest::collection::vec(op(), 0..200)) {
            let mut q = TimerQueue::default();
            let mut model: BTreeMap<u8, Time> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Set(k, d) => {
                        let d = d.map(|ms| t(u64::from(ms)));
                        q.set(k, d);
                        match d {
                            Some(d) => { model.insert(k, d); }
                            None => { model.remove(&k); }
                        }
                    }
                    Op::Pop(now) => {
                        let now = t(u64::from(now));
                        loop {
                            let want = model
                                .iter()
                                .map(|(k, d)| (*d, *k))
                                .min()
                                .filter(|(d, _)| *d <= now)
                                .map(|(_, k)| k);
                            let got = q.pop_due(now);
                            prop_assert_eq!(got, want);
                            match got {
                                Some(k) => { model.remove(&k); }
                                None => break,
                            }
                        }
                    }
                }
                let want_next = model.iter().map(|(k, d)| (*d, *k)).min();
                prop_assert_eq!(q.next(), want_next);
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.order.len(), model.len(), "no stale entries");
                for (k, d) in &model {
                    prop_assert_eq!(q.get(*k), Some(*d));
                }
            }
        }
    }
}
