//! Values keyed by a number that is handed out in order: a stream's
//! messages in the sender, the simulator's records of unfinished messages.
//!
//! Numbers arrive mostly in order and leave mostly in order, so the values
//! live in a queue indexed by `number - base`: a value that leaves leaves a
//! hole, and holes are dropped once they reach the front. Adding the next
//! number is a `push_back` and finding one an index, where an ordered map
//! would pay a tree walk for each. A number that never leaves keeps the
//! slots of every later one until it does.

use std::collections::VecDeque;

/// Values by `u32` number, stored in a queue from the oldest present.
#[derive(Clone, Debug)]
pub struct NumberedSlots<T> {
    base: u32,
    slots: VecDeque<Option<T>>,
}

impl<T> Default for NumberedSlots<T> {
    fn default() -> Self {
        NumberedSlots {
            base: 0,
            slots: VecDeque::new(),
        }
    }
}

impl<T> NumberedSlots<T> {
    fn index(&self, n: u32) -> Option<usize> {
        n.checked_sub(self.base).map(|i| i as usize)
    }

    /// The value of number `n`. O(1).
    pub fn get(&self, n: u32) -> Option<&T> {
        self.slots.get(self.index(n)?)?.as_ref()
    }

    /// The value of number `n`, mutably. O(1).
    pub fn get_mut(&mut self, n: u32) -> Option<&mut T> {
        let i = self.index(n)?;
        self.slots.get_mut(i)?.as_mut()
    }

    /// Whether number `n` has a value. O(1).
    pub fn contains(&self, n: u32) -> bool {
        self.get(n).is_some()
    }

    /// Set number `n`'s value (replacing any). Amortized O(1) for the number
    /// after the newest; O(gap) for any other.
    pub fn insert(&mut self, n: u32, value: T) {
        if self.slots.is_empty() {
            self.base = n;
        }
        while n < self.base {
            self.slots.push_front(None);
            self.base -= 1;
        }
        let i = (n - self.base) as usize;
        if self.slots.len() <= i {
            if self.slots.len() < i {
                self.slots.resize_with(i, || None);
            }
            // The next number, the usual case: one `push_back`, not a
            // generic `resize_with` by one (issue 40, tenth session: that
            // was 50 instructions per event in the city).
            self.slots.push_back(Some(value));
        } else {
            self.slots[i] = Some(value);
        }
    }

    /// Take number `n`'s value out, dropping the holes that reach the
    /// front. O(1) plus the holes dropped.
    pub fn remove(&mut self, n: u32) -> Option<T> {
        let i = self.index(n)?;
        let value = self.slots.get_mut(i)?.take();
        while self.slots.front().is_some_and(Option::is_none) {
            self.slots.pop_front();
            self.base = self.base.wrapping_add(1);
        }
        value
    }

    /// The numbers that have values, ascending. O(slots).
    pub fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        let base = self.base;
        self.slots
            .iter()
            .zip(0u32..)
            .filter(|(v, _)| v.is_some())
            .map(move |(_, i)| base.wrapping_add(i))
    }

    /// Every value, mutably, in number order. O(slots).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        self.slots.iter_mut().filter_map(Option::as_mut)
    }

    /// Slots held, holes included (the memory it keeps). O(1).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Values held. O(slots).
    pub fn len(&self) -> usize {
        self.slots.iter().filter(|v| v.is_some()).count()
    }

    /// Whether no value is held. O(slots).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drop every value.
    pub fn clear(&mut self) {
        self.slots.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    proptest::proptest! {
        /// Inserts and removes in any order answer what an ordered map
        /// answers, keys in the same order.
        #[test]
        fn answers_like_an_ordered_map(
            ops in proptest::collection::vec((0u32..40, proptest::bool::ANY), 0..300)
        ) {
            let mut q = NumberedSlots::default();
            let mut map = BTreeMap::new();
            for (k, (n, insert)) in ops.into_iter().enumerate() {
                if insert {
                    q.insert(n, k);
                    map.insert(n, k);
                } else {
                    proptest::prop_assert_eq!(q.remove(n), map.remove(&n));
                }
                proptest::prop_assert_eq!(q.len(), map.len());
                proptest::prop_assert_eq!(q.get(n), map.get(&n));
                proptest::prop_assert!(q.keys().eq(map.keys().copied()));
            }
        }
    }

    #[test]
    fn values_leaving_in_order_leave_no_slots_behind() {
        let mut q = NumberedSlots::default();
        for n in 0..1000u32 {
            q.insert(n, n * 2);
            if n >= 10 {
                assert_eq!(q.remove(n - 10), Some((n - 10) * 2));
            }
        }
        assert_eq!((q.len(), q.slots()), (10, 10));
        assert_eq!(q.remove(3), None);
        *q.get_mut(995).expect("present") += 1;
        assert_eq!(q.get(995), Some(&1991));
        assert!(q.contains(999) && !q.contains(1000));
    }
}
