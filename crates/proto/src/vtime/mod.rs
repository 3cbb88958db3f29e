//! # Virtual time: the one event queue and the one host loop
//!
//! Every virtual-time loop of the project — the harness here, and in
//! `peregrine-sim` the engine, the handover world, the controller lab
//! and the 802.11 DCF, in `peregrine-lab` the endpoint benchmark, and the
//! fuzz world — is built from three pieces that live here, in the lowest
//! crate that needs them (the harness), so the others reuse them and
//! dependencies point down only:
//!
//! * [`EventQueue`]: events ordered by (time, sequence number), so events
//!   at the same instant run in the order they were scheduled whatever
//!   the heap's layout (turmoil/madsim-style determinism);
//! * [`Host`] and [`run`]: the loop — pop the earliest event, stop after
//!   the end, refuse more than a limit of events at one instant (a
//!   livelock), report progress, hand the event to the host;
//! * [`EndpointTimer`]: the one timer a sans-IO endpoint asks for
//!   (`poll_timeout`), kept in the queue without a cancel operation:
//!   superseded events stay queued and are recognised as stale when they
//!   fire, so the order of everything else does not depend on how often
//!   a timer is re-armed.

pub mod queue;

pub use queue::EventQueue;

use peregrine_cc::Time;

/// A world driven by [`run`]: it owns its queue and handles one event at
/// a time, scheduling more into the queue.
pub trait Host {
    /// What is scheduled.
    type Event;
    /// Why handling an event can fail (and a livelock is reported).
    type Error;

    /// The world's event queue.
    fn queue(&mut self) -> &mut EventQueue<Self::Event>;

    /// Handle `event`, due at `now` (time never goes backwards).
    fn handle(&mut self, now: Time, event: Self::Event) -> Result<(), Self::Error>;

    /// The error for more than `limit` events at the instant `at`.
    fn livelock(&self, at: Time, limit: u64) -> Self::Error;

    /// Whether the world has reached its goal: [`run`] returns after the
    /// event that made this true (default: never, run to the end).
    fn done(&self) -> bool {
        false
    }
}

/// How far [`run`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLimits {
    /// Events after this instant are left in the queue (`None`: run
    /// until the queue is empty).
    pub end: Option<Time>,
    /// More events than this at one instant is a livelock
    /// ([`Host::livelock`]); `u64::MAX` turns the check off.
    pub max_events_per_instant: u64,
    /// `progress` is called every this many events (0: never).
    pub progress_every_events: u64,
}

impl RunLimits {
    /// Up to and including `end`, at most `max_events_per_instant` events
    /// at one instant, no progress reports.
    pub fn until(end: Time, max_events_per_instant: u64) -> RunLimits {
        RunLimits {
            end: Some(end),
            max_events_per_instant,
            progress_every_events: 0,
        }
    }
}

/// The one host loop: pops events in (time, sequence) order and hands
/// each to `host` until the queue is empty, the next event is after
/// `limits.end` or the host is [`done`](Host::done), calling `progress(time, events popped so far)` every
/// `limits.progress_every_events` events (the observer cannot change the
/// run). Returns the time of the last event handled (`None` if none).
/// O(log events) per event plus the host's work.
pub fn run<H: Host>(
    host: &mut H,
    limits: RunLimits,
    progress: &mut dyn FnMut(Time, u64),
) -> Result<Option<Time>, H::Error> {
    let mut last: Option<Time> = None;
    // Events at the instant `last_t` so far (the first event at a later
    // instant counts 0, one at time zero 1: the engine's count, kept so
    // that a livelock is reported exactly where it always was).
    let (mut last_t, mut same_instant) = (Time::ZERO, 0u64);
    let mut until_report = limits.progress_every_events;
    loop {
        let queue = host.queue();
        match (queue.peek_time(), limits.end) {
            (None, _) => break,
            (Some(t), Some(end)) if t > end => break,
            _ => {}
        }
        let Some((t, event)) = queue.pop() else {
            break;
        };
        if until_report > 0 {
            until_report -= 1;
            if until_report == 0 {
                until_report = limits.progress_every_events;
                progress(t, queue.processed());
            }
        }
        if t == last_t {
            same_instant += 1;
            if same_instant > limits.max_events_per_instant {
                return Err(host.livelock(t, limits.max_events_per_instant));
            }
        } else {
            (last_t, same_instant) = (t, 0);
        }
        last = Some(t);
        host.handle(t, event)?;
        if host.done() {
            break;
        }
    }
    Ok(last)
}

/// The one timer a sans-IO endpoint asks for, scheduled in an
/// [`EventQueue`] without cancelling: [`arm`](Self::arm) after every
/// call into the endpoint, [`fire`](Self::fire) when the timer's event
/// pops. At most one event per endpoint is live; earlier stale ones are
/// skipped when they fire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointTimer {
    /// The instant the endpoint last asked for.
    armed: Option<Time>,
    /// The instant of the one live event in the queue for it (an earlier
    /// stale one may be queued too; a later one is re-pushed on firing).
    scheduled: Option<Time>,
}

/// What to do when a timer event pops ([`EndpointTimer::fire`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Firing {
    /// Call the endpoint's `handle_timeout`, then [`EndpointTimer::arm`].
    Due,
    /// The timer moved later since the event was pushed: push an event
    /// at this instant instead.
    Later(Time),
    /// A superseded event, or a timer since disarmed: nothing to do.
    Stale,
}

impl EndpointTimer {
    /// A disarmed timer.
    pub const fn new() -> EndpointTimer {
        EndpointTimer {
            armed: None,
            scheduled: None,
        }
    }

    /// The endpoint now asks for `want` (its `poll_timeout`; an instant
    /// before `now` is due at `now`). Returns the instant to push an
    /// event at, if one is needed: only when it is earlier than the live
    /// one, so re-arming later costs no queue entry. O(1).
    pub fn arm(&mut self, want: Option<Time>, now: Time) -> Option<Time> {
        let next = want.map(|t| t.max(now));
        self.armed = next;
        let t = next?;
        if self.scheduled.is_none_or(|s| t < s) {
            self.scheduled = Some(t);
            return Some(t);
        }
        None
    }

    /// A timer event pushed for instant `at` popped at `at`. O(1).
    pub fn fire(&mut self, at: Time) -> Firing {
        if self.scheduled != Some(at) {
            return Firing::Stale;
        }
        self.scheduled = None;
        match self.armed {
            Some(a) if a <= at => {
                self.armed = None;
                Firing::Due
            }
            Some(a) => {
                self.scheduled = Some(a);
                Firing::Later(a)
            }
            None => Firing::Stale,
        }
    }

    /// The instant the endpoint asked for, if armed.
    pub fn armed(&self) -> Option<Time> {
        self.armed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes `fanout` events at `now + step` for each event, up to a depth.
    struct Tree {
        q: EventQueue<u32>,
        seen: Vec<(u64, u32)>,
        step_ns: u64,
    }

    impl Host for Tree {
        type Event = u32;
        type Error = String;
        fn queue(&mut self) -> &mut EventQueue<u32> {
            &mut self.q
        }
        fn handle(&mut self, now: Time, depth: u32) -> Result<(), String> {
            self.seen.push((now.as_nanos(), depth));
            if depth < 3 {
                let at = Time::from_nanos(now.as_nanos() + self.step_ns);
                self.q.push(at, depth + 1);
                self.q.push(at, depth + 1);
            }
            Ok(())
        }
        fn livelock(&self, at: Time, limit: u64) -> String {
            format!("{limit} at {}", at.as_nanos())
        }
    }

    fn tree(step_ns: u64) -> Tree {
        let mut q = EventQueue::new();
        q.push(Time::ZERO, 0);
        Tree {
            q,
            seen: Vec::new(),
            step_ns,
        }
    }

    #[test]
    fn runs_in_time_order_up_to_the_end_inclusive() {
        let mut t = tree(10);
        let mut reports = Vec::new();
        let limits = RunLimits {
            progress_every_events: 2,
            ..RunLimits::until(Time::from_nanos(20), 100)
        };
        let last = run(&mut t, limits, &mut |at, n| {
            reports.push((at.as_nanos(), n))
        })
        .unwrap();
        assert_eq!(last, Some(Time::from_nanos(20)));
        let times: Vec<u64> = t.seen.iter().map(|s| s.0).collect();
        assert_eq!(times, [0, 10, 10, 20, 20, 20, 20]);
        // Depth 3 (at 30 ns) stays queued.
        assert_eq!(t.q.len(), 8);
        assert_eq!(reports, [(10, 2), (20, 4), (20, 6)]);
    }

    #[test]
    fn too_many_events_at_one_instant_is_a_livelock() {
        // Every generation at time zero: 1 + 2 + 4 events, limit 6.
        let mut t = tree(0);
        let e = run(&mut t, RunLimits::until(Time::ZERO, 6), &mut |_, _| {}).unwrap_err();
        assert_eq!(e, "6 at 0");
        let mut t = tree(0);
        assert!(run(&mut t, RunLimits::until(Time::ZERO, 15), &mut |_, _| {}).is_ok());
    }

    #[test]
    fn an_endpoint_timer_keeps_one_live_event() {
        let t = Time::from_millis;
        let mut q: EventQueue<()> = EventQueue::new();
        let mut timer = EndpointTimer::new();
        // Armed at 10, moved earlier to 5 (a new event), then later to 8
        // (no new event: the one at 5 re-pushes on firing).
        for (want, pushed) in [(10, Some(10)), (5, Some(5)), (8, None)] {
            let at = timer.arm(Some(t(want)), t(0));
            assert_eq!(at, pushed.map(t));
            if let Some(at) = at {
                q.push(at, ());
            }
        }
        let (at, ()) = q.pop().unwrap();
        assert_eq!(timer.fire(at), Firing::Later(t(8)));
        q.push(t(8), ());
        let (at, ()) = q.pop().unwrap();
        assert_eq!(timer.fire(at), Firing::Due);
        // The stale event at 10 does nothing.
        let (at, ()) = q.pop().unwrap();
        assert_eq!(timer.fire(at), Firing::Stale);
        // An instant in the past is due now; disarming leaves nothing due.
        assert_eq!(timer.arm(Some(t(1)), t(20)), Some(t(20)));
        assert_eq!(timer.arm(None, t(20)), None);
        assert_eq!(timer.fire(t(20)), Firing::Stale);
    }
}
