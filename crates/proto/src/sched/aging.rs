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
//! **Who gives way when the bound cannot hold for everyone.** Aged
//! streams used to overtake ABS's choice whatever that choice's own wait.
//! When more streams are aged than the link can serve within the bound —
//! seed 002's Fig. 5, nine saturating class-3 bulk streams beside the
//! class-0 MAVLink stream at 1 Mbit/s: each bulk stream gets one packet
//! per nine packet times (~105 ms) while the bound promotes it after
//! 50 ms — the aged bulk streams took turns ahead of the control stream
//! indefinitely and it delivered 70 of 8,190 messages. Now ABS's choice
//! is *late* once its head message has waited half the bound, and while
//! it is late aged streams overtake it at most once per half bound: the
//! most urgent stream's backlog then drains at nearly link rate (one aged
//! block per half bound aside), so its messages wait about half the bound
//! plus the few packet times of that backlog, within the bound; the low
//! classes absorb the shortfall when the bound is infeasible for all.
//! With a feasible load nothing changes (the urgent stream is never
//! late), and a most-urgent stream that is itself saturating (a deep
//! queue, always late) still yields one block per half bound, so no
//! stream starves.
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

/// Eighths of the bound after which ABS's own choice (its head message)
/// is late: from then on aged streams overtake it at most once per half
/// bound. Half the bound leaves the other half as the margin for draining
/// what queued behind the aged streams (one packet per packet time, less
/// one aged block per half bound).
const LATE_EIGHTHS: u128 = 4;

/// The ABS-with-aging scheduler.
#[derive(Debug)]
pub struct Aging {
    bound: Duration,
    abs: Abs,
    by_age: BTreeMap<(Time, u16), u8>,
    /// Per active stream: the start of its wait (the `by_age` key) and
    /// when its head message was queued.
    age_key: BTreeMap<u16, (Time, Time)>,
    /// The latest aged pick over a late ABS choice (see [`LATE_EIGHTHS`]).
    last_late_overtake: Time,
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
            last_late_overtake: Time::ZERO,
            aged_picks: 0,
            last_pick: Time::ZERO,
        }
    }

    /// Decisions where an aged stream overtook ABS's choice.
    pub fn aged_picks(&self) -> u64 {
        self.aged_picks
    }

    /// Whole eighths of the bound from `since` to `now`.
    fn eighths(&self, since: Time, now: Time) -> u128 {
        now.saturating_duration_since(since).as_nanos() * 8 / self.bound.as_nanos()
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
        if let Some((old, _)) = self.age_key.insert(s.id, (since, s.head_enqueued)) {
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
        if let Some((t, _)) = self.age_key.remove(&id) {
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
        // ABS's choice is the most urgent stream. Once its head message
        // has waited half the bound it is late, and aged streams may then
        // overtake it only once per half bound: otherwise a set of aged
        // streams the link cannot serve within the bound (nine saturating
        // bulk streams: one packet each per ~105 ms at 1 Mbit/s) takes
        // turns ahead of it for ever, and it is the one that starves.
        let head = self.age_key.get(&abs_id).map_or(ctx.now, |&(_, head)| head);
        let late = self.eighths(head, ctx.now) >= LATE_EIGHTHS;
        let half =
            Duration::from_nanos(u64::try_from(self.bound.as_nanos() / 2).unwrap_or(u64::MAX));
        if late && ctx.now < self.last_late_overtake.saturating_add(half) {
            return Some(abs_id);
        }
        if let Some((&(enqueued, id), &class)) = oldest {
            if self.effective_class(class, enqueued, ctx.now) < i64::from(abs_class) {
                self.aged_picks += 1;
                if late {
                    self.last_late_overtake = ctx.now;
                }
                return Some(id);
            }
        }
        Some(abs_id)
    }
    fn on_sent(&mut self, s: &StreamView, bytes: usize, more: bool) {
        self.abs.on_sent(s, bytes, more);
        if more {
            self.set_age(s, self.last_pick);
        } else if let Some((t, _)) = self.age_key.remove(&s.id) {
            self.by_age.remove(&(t, s.id));
        }
    }
    fn len(&self) -> usize {
        self.abs.len()
    }
}
