//! The member's side: one [`GroupReceiver`] per group, fed with the group
//! stream's messages of every connection the member receives the group
//! on; it delivers each group sequence number once, in order.
//!
//! Each connection delivers its part in order (a reliable-ordered
//! stream), so the only reordering comes from two paths running at
//! different speeds: a message ahead of the next expected one is held (up
//! to `max_pending` messages) until the slower path fills the gap. The
//! first message seen fixes where delivery starts, unless
//! [`GroupReceiver::expect_from`] said otherwise.

use super::{GroupFrameError, GroupMessage};
use std::collections::{BTreeMap, VecDeque};

/// Receiver counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupReceiverStats {
    /// Messages delivered (each sequence number once).
    pub delivered: u64,
    /// Copies dropped because that sequence number was already delivered
    /// or held (the other path's copy).
    pub duplicates: u64,
    /// Messages held because an earlier one had not arrived yet.
    pub reordered: u64,
    /// Messages that were not group messages of this group, or did not fit.
    pub rejected: u64,
}

/// De-duplicates and orders one group's messages from any number of
/// connections.
#[derive(Debug, Clone)]
pub struct GroupReceiver {
    group: u32,
    next: Option<u64>,
    pending: BTreeMap<u64, Vec<u8>>,
    max_pending: usize,
    ready: VecDeque<(u64, Vec<u8>)>,
    stats: GroupReceiverStats,
}

impl GroupReceiver {
    /// A receiver for `group` holding at most `max_pending` (at least 1)
    /// messages that arrived ahead of a gap.
    pub fn new(group: u32, max_pending: usize) -> GroupReceiver {
        GroupReceiver {
            group,
            next: None,
            pending: BTreeMap::new(),
            max_pending: max_pending.max(1),
            ready: VecDeque::new(),
            stats: GroupReceiverStats::default(),
        }
    }

    /// The group.
    pub fn group(&self) -> u32 {
        self.group
    }

    /// Deliver from `seq` on (e.g. the `first_seq` the source announced
    /// out of band); earlier messages count as duplicates.
    pub fn expect_from(&mut self, seq: u64) {
        self.next = Some(seq);
        self.pending.retain(|&s, _| s >= seq);
        self.release();
    }

    /// The next sequence number to deliver (`None` before the first
    /// message).
    pub fn next_seq(&self) -> Option<u64> {
        self.next
    }

    /// The counters.
    pub fn stats(&self) -> &GroupReceiverStats {
        &self.stats
    }

    /// A message that arrived on the group's stream of any connection.
    /// `Ok(true)` if it is new (delivered now or held), `Ok(false)` for a
    /// duplicate. Never panics.
    pub fn on_message(&mut self, bytes: &[u8]) -> Result<bool, GroupFrameError> {
        let m = match GroupMessage::decode(bytes) {
            Ok(m) if m.group == self.group => m,
            Ok(m) => {
                self.stats.rejected += 1;
                return Err(GroupFrameError::WrongGroup {
                    got: m.group,
                    expected: self.group,
                });
            }
            Err(e) => {
                self.stats.rejected += 1;
                return Err(e);
            }
        };
        let next = *self.next.get_or_insert(m.seq);
        if m.seq < next || self.pending.contains_key(&m.seq) {
            self.stats.duplicates += 1;
            return Ok(false);
        }
        if m.seq > next {
            if self.pending.len() >= self.max_pending {
                self.stats.rejected += 1;
                return Err(GroupFrameError::ReorderBufferFull { seq: m.seq, next });
            }
            self.stats.reordered += 1;
            self.pending.insert(m.seq, m.body.to_vec());
            return Ok(true);
        }
        self.ready.push_back((m.seq, m.body.to_vec()));
        self.stats.delivered += 1;
        self.next = Some(next + 1);
        self.release();
        Ok(true)
    }

    fn release(&mut self) {
        let Some(mut next) = self.next else { return };
        while let Some(body) = self.pending.remove(&next) {
            self.ready.push_back((next, body));
            self.stats.delivered += 1;
            next += 1;
        }
        self.next = Some(next);
    }

    /// The next message in group order: (sequence number, body).
    pub fn poll_message(&mut self) -> Option<(u64, Vec<u8>)> {
        self.ready.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(group: u32, seq: u64) -> Vec<u8> {
        GroupMessage {
            group,
            seq,
            body: &seq.to_be_bytes(),
        }
        .encode()
    }

    fn drain(r: &mut GroupReceiver) -> Vec<u64> {
        std::iter::from_fn(|| r.poll_message().map(|(s, _)| s)).collect()
    }

    #[test]
    fn two_paths_overlapping_deliver_each_seq_once_in_order() {
        let mut r = GroupReceiver::new(7, 16);
        // Old path: 0..6; new path joined at 3, runs ahead.
        for s in 0..3 {
            assert_eq!(r.on_message(&msg(7, s)), Ok(true));
        }
        for s in 3..8 {
            assert_eq!(r.on_message(&msg(7, s)), Ok(true));
        }
        for s in 3..6 {
            assert_eq!(r.on_message(&msg(7, s)), Ok(false));
        }
        assert_eq!(drain(&mut r), (0..8).collect::<Vec<_>>());
        assert_eq!(r.stats().duplicates, 3);
        assert_eq!(r.stats().delivered, 8);
    }

    #[test]
    fn a_faster_new_path_is_held_until_the_old_one_fills_the_gap() {
        let mut r = GroupReceiver::new(7, 16);
        r.on_message(&msg(7, 0)).unwrap();
        r.on_message(&msg(7, 3)).unwrap();
        r.on_message(&msg(7, 4)).unwrap();
        assert_eq!(drain(&mut r), [0]);
        r.on_message(&msg(7, 1)).unwrap();
        r.on_message(&msg(7, 2)).unwrap();
        assert_eq!(drain(&mut r), [1, 2, 3, 4]);
        assert_eq!(r.stats().reordered, 2);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let mut r = GroupReceiver::new(7, 2);
        assert_eq!(
            r.on_message(&msg(8, 0)),
            Err(GroupFrameError::WrongGroup {
                got: 8,
                expected: 7
            })
        );
        assert_eq!(
            r.on_message(&[1, 2, 3]),
            Err(GroupFrameError::TooShort { len: 3 })
        );
        r.expect_from(10);
        r.on_message(&msg(7, 12)).unwrap();
        r.on_message(&msg(7, 13)).unwrap();
        assert_eq!(
            r.on_message(&msg(7, 14)),
            Err(GroupFrameError::ReorderBufferFull { seq: 14, next: 10 })
        );
        assert_eq!(r.on_message(&msg(7, 9)), Ok(false));
        // Regression (fuzz): the reserved last sequence number, then the
        // one before it, never overflow.
        let mut max = GroupReceiver::new(7, 2);
        assert_eq!(
            max.on_message(&msg(7, u64::MAX)),
            Err(GroupFrameError::ReservedSeq)
        );
        assert_eq!(max.on_message(&msg(7, u64::MAX - 1)), Ok(true));
        assert_eq!(max.poll_message().map(|m| m.0), Some(u64::MAX - 1));
        assert_eq!(max.next_seq(), Some(u64::MAX));
        assert_eq!(r.stats().rejected, 3);
        assert!(drain(&mut r).is_empty());
    }
}
