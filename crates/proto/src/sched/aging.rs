//! ABS with aging, the extension seed 002 proposes as future work: a
//! waiting stream's effective class falls (its priority rises) with how
//! long it has waited — one class per eighth of the configured `bound` —
//! so a low class cannot be starved: once a stream has waited half the
//! bound, even a class-3 stream's effective class is below 0 and it is
//! served before any ABS choice; the other half of the bound is the margin
//! for waiting for congestion-window space and for other aged streams.
//!
//! **What "waited" means**: the time since the later of its oldest queued
//! message's arrival and the stream's last service. A stream that is
//! being served is not starving, however deep its own queue: a bulk
//! stream whose application keeps 100 ms of data queued has a head
//! message 100 ms old all the time, and aging by the head's age alone
//! promoted it above every fresh class-0 message for as long as the
//! transfer lasted (the priority stream then waited about the bulk
//! stream's whole queue: p50 164 ms on loopback, against ~15 ms with ABS).
//! A stream that is never served still ages from its head message.
//!
//! Each decision compares ABS's choice with the stream (other than that
//! choice) that has waited longest — the one closest to the bound —
//! O(log n): effective class `class − ⌊8 · wait / bound⌋`. A stream served
//! because of its wait sends one block, then the comparison is made again.
//!
//! **Tie-break**: if the oldest stream's effective class equals ABS's
//! choice's class, ABS's choice wins; among equally old streams, the lower
//! stream id.

use super::abs::Abs;
use super::{SchedContext, Scheduler, StreamView};
use peregrine_cc::Time;
use std::collections::BTreeMap;
use std::time::Duration;

/// The ABS-with-aging scheduler.
#[derive(Debug)]
pub struct Aging {
    bound: Duration,
    abs: Abs,
    by_age: BTreeMap<(Time, u16), u8>,
    age_key: BTreeMap<u16, Time>,
    aged_picks: u64,
    /// `now` of the latest decision: a stream sent after it was served then.
    last_pick: Time,
}

impl Aging {
    /// ABS, with every stream's wait bounded by `bound`.
    pub fn new(bound: Duration) -> Aging {
        Aging {
            bound: bound.max(Duration::from_micros(8)),
            abs: Abs::new(),
            by_age: BTreeMap::new(),
            age_key: BTreeMap::new(),
            aged_picks: 0,
            last_pick: Time::ZERO,
        }
    }

    /// Decisions where an aged stream overtook ABS's choice.
    pub fn aged_picks(&self) -> u64 {
        self.aged_picks
    }

    fn effective_class(&self, class: u8, enqueued: Time, now: Time) -> i64 {
        let age = now.saturating_duration_since(enqueued).as_nanos();
        let steps = age * 8 / self.bound.as_nanos();
        i64::from(class) - i64::try_from(steps).unwrap_or(i64::MAX / 2)
    }

    /// Index `s` by the start of its wait: its head message's arrival, or
    /// `served_at` when it was served later than that.
    fn set_age(&mut self, s: &StreamView, served_at: Time) {
        let since = s.head_enqueued.max(served_at);
        if let Some(old) = self.age_key.insert(s.id, since) {
            self.by_age.remove(&(old, s.id));
        }
        self.by_age.insert((since, s.id), s.class);
    }
}

impl Scheduler for Aging {
    fn name(&self) -> &'static str {
        "aging"
    }
    fn activate(&mut self, s: &StreamView) {
        self.abs.activate(s);
        self.set_age(s, Time::ZERO);
    }
    fn remove(&mut self, id: u16) {
        self.abs.remove(id);
        if let Some(t) = self.age_key.remove(&id) {
            self.by_age.remove(&(t, id));
        }
    }
    fn pick(&mut self, ctx: &SchedContext) -> Option<u16> {
        self.last_pick = self.last_pick.max(ctx.now);
        let (abs_class, abs_id) = self.abs.head()?;
        // The oldest stream other than ABS's own choice (which needs no
        // promotion): the first or second entry of the age index.
        let oldest = self
            .by_age
            .iter()
            .take(2)
            .find(|((_, id), _)| *id != abs_id);
        if let Some((&(enqueued, id), &class)) = oldest {
            if self.effective_class(class, enqueued, ctx.now) < i64::from(abs_class) {
                self.aged_picks += 1;
                return Some(id);
            }
        }
        Some(abs_id)
    }
    fn on_sent(&mut self, s: &StreamView, bytes: usize, more: bool) {
        self.abs.on_sent(s, bytes, more);
        if more {
            self.set_age(s, self.last_pick);
        } else if let Some(t) = self.age_key.remove(&s.id) {
            self.by_age.remove(&(t, s.id));
        }
    }
    fn len(&self) -> usize {
        self.abs.len()
    }
}
