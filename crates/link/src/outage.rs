//! Outage windows: scheduled, periodic and random.
//!
//! A [`Schedule`] holds fixed windows and an optional periodic outage and
//! is a pure function of time; [`RandomOutages`] alternates exponential up
//! and down times drawn lazily from the caller's source as time advances;
//! [`Outages`] is both. Every window is half-open, `[start, end)`. What a
//! link does while down (hold its queue, lose what finishes, drop what
//! would start) is the link's choice, not this module's.

use crate::uniform::Uniform;
use crate::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// A repeating outage: down on `[first_start + n·period, first_start +
/// n·period + duration)` for every `n ≥ 0`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Periodic {
    /// Start of the first outage.
    pub first_start: Time,
    /// Time between outage starts, ns (0: never down).
    pub period_ns: u64,
    /// Length of each outage, ns.
    pub duration_ns: u64,
}

/// Fixed and periodic outage windows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    windows: Vec<(Time, Time)>,
    periodic: Option<Periodic>,
}

impl Schedule {
    /// Windows `[start, end)` (sorted here) and an optional periodic outage.
    pub fn new(mut windows: Vec<(Time, Time)>, periodic: Option<Periodic>) -> Schedule {
        windows.sort_unstable();
        Schedule { windows, periodic }
    }

    /// Whether there is no window at all.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty() && self.periodic.is_none_or(|p| p.period_ns == 0)
    }

    /// The window containing `t`, if any (the first fixed one, else the
    /// periodic one). O(windows).
    pub fn containing(&self, t: Time) -> Option<(Time, Time)> {
        if let Some(w) = self.windows.iter().find(|(s, e)| *s <= t && t < *e) {
            return Some(*w);
        }
        let p = self.periodic?;
        let (t, first) = (t.as_nanos(), p.first_start.as_nanos());
        if t < first || p.period_ns == 0 {
            return None;
        }
        let into = (t - first) % p.period_ns;
        (into < p.duration_ns).then(|| {
            let start = t - into;
            (
                Time::from_nanos(start),
                Time::from_nanos(start.saturating_add(p.duration_ns)),
            )
        })
    }

    /// Whether the link is down at `t`. O(windows).
    pub fn is_down(&self, t: Time) -> bool {
        self.containing(t).is_some()
    }

    /// The first window start strictly after `t`. O(windows).
    pub fn next_start_after(&self, t: Time) -> Option<Time> {
        let fixed = self.windows.iter().map(|(s, _)| *s).find(|s| *s > t);
        let periodic = self.periodic.filter(|p| p.period_ns > 0).map(|p| {
            let (tn, first) = (t.as_nanos(), p.first_start.as_nanos());
            if tn < first {
                p.first_start
            } else {
                let n = (tn - first) / p.period_ns + 1;
                Time::from_nanos(first.saturating_add(n.saturating_mul(p.period_ns)))
            }
        });
        match (fixed, periodic) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Random outages: exponential up times (mean `mean_up`) alternating with
/// exponential down times (mean `mean_down`), generated lazily.
#[derive(Debug)]
pub struct RandomOutages<U> {
    mean_up_ns: f64,
    mean_down_ns: f64,
    uniform: U,
    windows: VecDeque<(Time, Time)>,
    generated_to: Time,
}

impl<U: Uniform> RandomOutages<U> {
    /// Outages with the given mean up and down times, drawn from `uniform`.
    pub fn new(mean_up: Duration, mean_down: Duration, uniform: U) -> RandomOutages<U> {
        RandomOutages {
            mean_up_ns: mean_up.as_nanos() as f64,
            mean_down_ns: mean_down.as_nanos() as f64,
            uniform,
            windows: VecDeque::new(),
            generated_to: Time::ZERO,
        }
    }

    fn exp(&mut self, mean_ns: f64) -> Duration {
        let u = self.uniform.unit_f64();
        // -ln(1-u) with u in [0,1): finite; at least 1 ns so time advances.
        Duration::from_nanos(((-(1.0 - u).ln()) * mean_ns).max(1.0) as u64)
    }

    fn cover(&mut self, t: Time) {
        while self.generated_to <= t {
            let up = self.exp(self.mean_up_ns);
            let down = self.exp(self.mean_down_ns);
            let start = self.generated_to + up;
            let end = start + down;
            self.windows.push_back((start, end));
            self.generated_to = end;
        }
    }

    /// The window containing `t`, generating up to `t`; windows that ended
    /// before `t` are forgotten (time only moves forward). O(1) amortized.
    pub fn containing(&mut self, t: Time) -> Option<(Time, Time)> {
        self.cover(t);
        while self.windows.front().is_some_and(|(_, e)| *e <= t) && self.windows.len() > 1 {
            self.windows.pop_front();
        }
        self.windows
            .iter()
            .find(|(s, e)| *s <= t && t < *e)
            .copied()
    }

    /// The first window start strictly after `t`. O(1) amortized.
    pub fn next_start_after(&mut self, t: Time) -> Option<Time> {
        self.cover(t);
        if self.windows.iter().all(|(s, _)| *s <= t) {
            self.cover(self.generated_to);
        }
        self.windows.iter().map(|(s, _)| *s).find(|s| *s > t)
    }
}

/// A [`Schedule`] and optional [`RandomOutages`]: a link direction's outages.
#[derive(Debug)]
pub struct Outages<U> {
    schedule: Schedule,
    random: Option<RandomOutages<U>>,
}

impl<U: Uniform> Outages<U> {
    /// Both kinds.
    pub fn new(schedule: Schedule, random: Option<RandomOutages<U>>) -> Outages<U> {
        Outages { schedule, random }
    }

    /// Never down.
    pub fn none() -> Outages<U> {
        Outages {
            schedule: Schedule::default(),
            random: None,
        }
    }

    /// Whether no outage is configured.
    pub fn is_empty(&self) -> bool {
        self.schedule.is_empty() && self.random.is_none()
    }

    fn containing(&mut self, t: Time) -> Option<(Time, Time)> {
        if let Some(w) = self.schedule.containing(t) {
            return Some(w);
        }
        self.random.as_mut().and_then(|r| r.containing(t))
    }

    /// Whether the direction is down at `t`. O(scheduled windows) plus O(1)
    /// amortized for the random ones.
    pub fn is_down(&mut self, t: Time) -> bool {
        !self.is_empty() && self.containing(t).is_some()
    }

    /// The first instant at or after `t` at which the direction is up.
    pub fn up_at(&mut self, t: Time) -> Time {
        let mut at = t;
        while let Some((_, end)) = self.containing(at) {
            at = end;
        }
        at
    }

    /// The next instant after `t` at which an outage starts, if any.
    pub fn next_down_after(&mut self, t: Time) -> Option<Time> {
        let s = self.schedule.next_start_after(t);
        let r = self.random.as_mut().and_then(|r| r.next_start_after(t));
        match (s, r) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uniform::SplitMix;

    #[test]
    fn scheduled_windows_are_half_open() {
        let t = Time::from_nanos;
        let mut o: Outages<SplitMix> =
            Outages::new(Schedule::new(vec![(t(100), t(200))], None), None);
        assert!(!o.is_down(t(99)));
        assert!(o.is_down(t(100)));
        assert_eq!(o.up_at(t(150)), t(200));
        assert!(!o.is_down(t(200)));
        assert_eq!(o.next_down_after(t(50)), Some(t(100)));
        assert_eq!(o.next_down_after(t(100)), None);
    }

    #[test]
    fn periodic_windows_repeat() {
        let t = Time::from_nanos;
        let p = Periodic {
            first_start: t(1000),
            period_ns: 100,
            duration_ns: 10,
        };
        let s = Schedule::new(Vec::new(), Some(p));
        assert!(!s.is_down(t(999)));
        assert_eq!(s.containing(t(1205)), Some((t(1200), t(1210))));
        assert!(!s.is_down(t(1210)));
        assert_eq!(s.next_start_after(t(1200)), Some(t(1300)));
        assert_eq!(s.next_start_after(t(5)), Some(t(1000)));
    }

    #[test]
    fn random_outages_have_the_configured_duty_cycle() {
        let r = RandomOutages::new(
            Duration::from_nanos(900_000),
            Duration::from_nanos(100_000),
            SplitMix(3),
        );
        let mut o = Outages::new(Schedule::default(), Some(r));
        let down = (0..200_000u64)
            .filter(|i| o.is_down(Time::from_micros(*i)))
            .count();
        let frac = down as f64 / 200_000.0;
        assert!((frac - 0.1).abs() < 0.02, "down fraction {frac}");
    }
}
