//! A set of packet (or message) numbers as sorted, disjoint inclusive
//! ranges in one vector — quinn's `ArrayRangeSet` idea.
//!
//! The receiver inserts every packet number it accepts. Almost always the
//! number extends the highest range by one, which is O(1) here (the last
//! element of the vector); a number that fills or opens a gap costs a
//! binary search and, rarely, a shift of the ranges above it. Thanks to
//! ACK-of-ACK pruning ([`RangeSet::forget_through`]) a receiver holds a
//! handful of ranges, not hundreds, so the shifts stay short.

/// Most ranges a set keeps; inserting beyond this forgets the oldest range
/// (its numbers then count as seen, see [`RangeSet::trimmed_below`]).
pub(crate) const MAX_RANGES: usize = 512;

/// A set of numbers as disjoint, non-adjacent inclusive ranges, ascending.
#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    /// `(start, end)` pairs, ascending, with a gap of at least one number
    /// between neighbours.
    ranges: Vec<(u64, u64)>,
    /// Everything below this was forgotten (to bound memory, or because
    /// the peer provably knows it); it counts as seen.
    trimmed_below: u64,
}

impl RangeSet {
    /// Index of the first range starting above `v`. O(log n).
    fn after(&self, v: u64) -> usize {
        self.ranges.partition_point(|&(s, _)| s <= v)
    }

    /// Whether `v` is in the set (not counting forgotten numbers). O(log n).
    pub fn contains(&self, v: u64) -> bool {
        let i = self.after(v);
        i > 0 && self.ranges[i - 1].1 >= v
    }

    /// Insert `v`; returns whether it was new. O(1) when `v` extends the
    /// highest range or starts a new highest one, else O(log n) plus a
    /// shift of the ranges above `v`.
    pub fn insert(&mut self, v: u64) -> bool {
        if let Some(last) = self.ranges.last_mut() {
            if last.1.checked_add(1) == Some(v) {
                last.1 = v;
                return true;
            }
            if last.1.checked_add(1).is_some_and(|next| v > next) {
                self.ranges.push((v, v));
                self.bound();
                return true;
            }
        } else {
            self.ranges.push((v, v));
            return true;
        }
        let i = self.after(v);
        if i > 0 && self.ranges[i - 1].1 >= v {
            return false;
        }
        let joins_prev = i > 0 && self.ranges[i - 1].1 + 1 == v;
        let joins_next = i < self.ranges.len() && v.checked_add(1) == Some(self.ranges[i].0);
        match (joins_prev, joins_next) {
            (true, true) => {
                self.ranges[i - 1].1 = self.ranges[i].1;
                self.ranges.remove(i);
            }
            (true, false) => self.ranges[i - 1].1 = v,
            (false, true) => self.ranges[i].0 = v,
            (false, false) => self.ranges.insert(i, (v, v)),
        }
        self.bound();
        true
    }

    /// Forget the oldest range beyond [`MAX_RANGES`].
    fn bound(&mut self) {
        if self.ranges.len() > MAX_RANGES {
            let (_, e) = self.ranges.remove(0);
            self.trimmed_below = self.trimmed_below.max(e.saturating_add(1));
        }
    }

    /// The ranges, highest first. O(1) per item.
    pub fn descending(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().rev().copied()
    }

    /// How many ranges the set holds.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the set holds no range.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Numbers below this were forgotten; they count as seen.
    pub fn trimmed_below(&self) -> u64 {
        self.trimmed_below
    }

    /// The first number at or above `v` that is not in the set (`v` itself
    /// when `v` is missing). O(log n).
    pub fn next_missing(&self, v: u64) -> u64 {
        let i = self.after(v);
        match self.ranges.get(i.wrapping_sub(1)) {
            Some(&(_, e)) if i > 0 && e >= v => e.saturating_add(1),
            _ => v,
        }
    }

    /// Forget every range that ends at or below `limit`, except the
    /// highest range (an ACK always reports the largest number received).
    /// Numbers below what remains then count as seen: the peer provably
    /// knows what was reported up to `limit` (ACK-of-ACK, RFC 9000
    /// §13.2.4). O(number of ranges forgotten + ranges kept).
    pub fn forget_through(&mut self, limit: u64) {
        let keep_from = self
            .ranges
            .partition_point(|&(_, e)| e <= limit)
            .min(self.ranges.len().saturating_sub(1));
        self.ranges.drain(..keep_from);
        if let Some(&(s, _)) = self.ranges.first() {
            let floor = s.min(limit.saturating_add(1));
            self.trimmed_below = self.trimmed_below.max(floor);
        }
    }

    /// Missing numbers in `from..=to`, as `(first, count)` runs, ascending,
    /// handed to `visit` (which returns `false` to stop). O(log n + runs).
    pub fn for_each_gap(&self, from: u64, to: u64, mut visit: impl FnMut(u64, u64) -> bool) {
        if from > to {
            return;
        }
        let mut cursor = self.next_missing(from);
        let mut i = self.after(from);
        while cursor <= to {
            match self.ranges.get(i) {
                Some(&(s, e)) if s <= to => {
                    if s > cursor && !visit(cursor, s - cursor) {
                        return;
                    }
                    match e.checked_add(1) {
                        Some(c) => cursor = c.max(cursor),
                        None => return,
                    }
                    i += 1;
                }
                _ => {
                    visit(cursor, to - cursor + 1);
                    return;
                }
            }
        }
    }

    /// Whether the highest range holds all of `from..=to` (then nothing
    /// in it is missing). O(1): the receiver's per-packet check that the
    /// numbers it has just passed arrived, which in order they almost
    /// always did; `false` says nothing (look with
    /// [`for_each_gap`](Self::for_each_gap)).
    pub fn highest_covers(&self, from: u64, to: u64) -> bool {
        self.ranges
            .last()
            .is_some_and(|&(s, e)| s <= from && to <= e)
    }

    /// Missing numbers in `from..=to`, as `(first, count)` runs, ascending
    /// (tests; the receiver walks them with `for_each_gap`).
    #[cfg(test)]
    pub fn gaps(&self, from: u64, to: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        self.for_each_gap(from, to, |first, count| {
            out.push((first, count));
            true
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn merges_and_finds_gaps() {
        let mut r = RangeSet::default();
        for v in [0, 1, 2, 5, 7, 6, 10] {
            assert!(r.insert(v));
        }
        assert!(!r.insert(6));
        assert_eq!(
            r.descending().collect::<Vec<_>>(),
            [(10, 10), (5, 7), (0, 2)]
        );
        assert_eq!(r.gaps(0, 10), [(3, 2), (8, 2)]);
        assert_eq!(r.gaps(4, 8), [(4, 1), (8, 1)]);
        assert_eq!(r.gaps(11, 12), [(11, 2)]);
        assert_eq!(r.next_missing(0), 3);
        assert_eq!(r.next_missing(3), 3);
        assert_eq!(r.next_missing(6), 8);
    }

    #[test]
    fn forgetting_keeps_the_highest_range_and_counts_the_rest_as_seen() {
        let mut r = RangeSet::default();
        for v in [0, 1, 4, 5, 9, 12, 13] {
            r.insert(v);
        }
        r.forget_through(9);
        assert_eq!(r.descending().collect::<Vec<_>>(), [(12, 13)]);
        // 10 and 11 were never reported as missing-then-known: they stay
        // missing; everything up to 9 counts as seen.
        assert_eq!(r.trimmed_below(), 10);
        assert_eq!(r.gaps(10, 13), [(10, 2)]);
        // Everything at or below the limit, but the top range stays.
        r.forget_through(20);
        assert_eq!(r.descending().collect::<Vec<_>>(), [(12, 13)]);
        assert_eq!(r.trimmed_below(), 12);
    }

    #[test]
    fn the_oldest_range_is_dropped_beyond_the_bound() {
        let mut r = RangeSet::default();
        for i in 0..=MAX_RANGES as u64 {
            r.insert(2 * i);
        }
        assert_eq!(r.len(), MAX_RANGES);
        assert_eq!(r.trimmed_below(), 1);
        assert!(r.contains(2) && !r.contains(0));
    }

    proptest! {
        /// The set answers like a `BTreeSet` model: membership, gaps and
        /// the descending ranges, for any insertion order.
        #[test]
        fn behaves_like_a_set(values in proptest::collection::vec(0u64..300, 0..200)) {
            let mut r = RangeSet::default();
            let mut model = BTreeSet::new();
            for v in values {
                prop_assert_eq!(r.insert(v), model.insert(v));
            }
            for v in 0..310 {
                prop_assert_eq!(r.contains(v), model.contains(&v));
            }
            let mut expect_gaps = Vec::new();
            let mut run: Option<(u64, u64)> = None;
            for v in 0..=305u64 {
                if model.contains(&v) {
                    if let Some(g) = run.take() { expect_gaps.push(g); }
                } else {
                    run = Some(run.map_or((v, 1), |(f, c)| (f, c + 1)));
                }
            }
            if let Some(g) = run { expect_gaps.push(g); }
            prop_assert_eq!(r.gaps(0, 305), expect_gaps);
            let flat: Vec<u64> = r.descending().flat_map(|(s, e)| (s..=e).rev()).collect();
            let want: Vec<u64> = model.iter().rev().copied().collect();
            prop_assert_eq!(flat, want);
        }

        /// `highest_covers` never claims a range with a gap in it.
        #[test]
        fn highest_covers_only_gapless_ranges(
            values in proptest::collection::vec(0u64..100, 0..80),
            from in 0u64..110,
            len in 0u64..20,
        ) {
            let mut r = RangeSet::default();
            for v in values {
                r.insert(v);
            }
            let to = from + len;
            if r.highest_covers(from, to) {
                prop_assert!(r.gaps(from, to).is_empty());
            }
        }
    }
}
