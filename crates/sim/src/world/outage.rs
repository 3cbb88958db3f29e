//! The one link-outage module: scheduled windows and random on/off
//! periods.
//!
//! While a direction is down its queue holds (arrivals are still
//! enqueued up to the limit) and nothing is transmitted; a packet whose
//! transmission would complete inside an outage is lost on the channel.
//! Random outages alternate exponential up times (mean `mean_up`) and
//! exponential down times (mean `mean_down`), drawn lazily from the
//! direction's own generator (`link/<name>/<dir>/outage`) as time
//! advances, so a run's outages depend only on the seed and the name.
//! (The mmWave access link's outages are not drawn here: they come from
//! its recorded channel, a capacity of 0 in its `CapacitySteps`.)

use crate::rng::SimRng;
use crate::units::Dur;
use peregrine_cc::Time;
use rand::RngExt;
use serde::Deserialize;
use std::collections::VecDeque;
use std::time::Duration;

/// One scheduled outage window `[start, end)`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OutageWindow {
    /// When the link goes down.
    pub start: Dur,
    /// When it comes back.
    pub end: Dur,
}

/// Outages of one link direction.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OutageConfig {
    /// Fixed windows.
    #[serde(default)]
    pub scheduled: Vec<OutageWindow>,
    /// Random on/off: exponential up times of mean `mean_up`, exponential
    /// down times of mean `mean_down`.
    #[serde(default)]
    pub mean_up: Option<Dur>,
    /// See `mean_up`.
    #[serde(default)]
    pub mean_down: Option<Dur>,
}

/// Down windows `[start, end)`, generated as needed.
#[derive(Debug)]
pub struct Outages {
    scheduled: Vec<(Time, Time)>,
    random: Option<RandomOutages>,
}

#[derive(Debug)]
struct RandomOutages {
    mean_up_ns: f64,
    mean_down_ns: f64,
    rng: SimRng,
    windows: VecDeque<(Time, Time)>,
    generated_to: Time,
}

impl RandomOutages {
    fn exp(&mut self, mean_ns: f64) -> Duration {
        let u: f64 = self.rng.random();
        // -ln(1-u) with u in [0,1): finite; at least 1 ns so time advances.
        Duration::from_nanos(((-(1.0 - u).ln()) * mean_ns).max(1.0) as u64)
    }

    /// Generate windows until one ends after `t`.
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
}

impl Outages {
    /// Outages of `cfg`; random ones draw from `rng`. O(windows log windows).
    pub fn new(cfg: &OutageConfig, rng: SimRng) -> Outages {
        let mut scheduled: Vec<(Time, Time)> = cfg
            .scheduled
            .iter()
            .map(|w| (Time::from_nanos(w.start.0), Time::from_nanos(w.end.0)))
            .collect();
        scheduled.sort_unstable();
        let random = match (cfg.mean_up, cfg.mean_down) {
            (Some(u), Some(d)) => Some(RandomOutages {
                mean_up_ns: u.0 as f64,
                mean_down_ns: d.0 as f64,
                rng,
                windows: VecDeque::new(),
                generated_to: Time::ZERO,
            }),
            _ => None,
        };
        Outages { scheduled, random }
    }

    /// No outage ever.
    pub fn none() -> Outages {
        Outages {
            scheduled: Vec::new(),
            random: None,
        }
    }

    /// Whether there are outages at all. O(1).
    pub fn is_empty(&self) -> bool {
        self.scheduled.is_empty() && self.random.is_none()
    }

    /// The window containing `t`, if any. Calls must come with
    /// non-decreasing `t` (old random windows are forgotten).
    fn containing(&mut self, t: Time) -> Option<(Time, Time)> {
        if let Some(w) = self.scheduled.iter().find(|(s, e)| *s <= t && t < *e) {
            return Some(*w);
        }
        if let Some(r) = self.random.as_mut() {
            r.cover(t);
            while r.windows.front().is_some_and(|(_, e)| *e <= t) && r.windows.len() > 1 {
                r.windows.pop_front();
            }
            return r.windows.iter().find(|(s, e)| *s <= t && t < *e).copied();
        }
        None
    }

    /// Whether the direction is down at `t`. O(scheduled windows) plus
    /// the random windows generated up to `t`, amortized.
    pub fn is_down(&mut self, t: Time) -> bool {
        !self.is_empty() && self.containing(t).is_some()
    }

    /// When a direction down at `t` comes back up (`t` itself if it is
    /// up). Cost as [`is_down`](Self::is_down), per window crossed.
    pub fn up_at(&mut self, t: Time) -> Time {
        let mut at = t;
        while let Some((_, end)) = self.containing(at) {
            at = end;
        }
        at
    }

    /// The start of the next outage strictly after `t`, if any. Cost as
    /// [`is_down`](Self::is_down).
    pub fn next_down_after(&mut self, t: Time) -> Option<Time> {
        let s = self
            .scheduled
            .iter()
            .map(|(s, _)| *s)
            .filter(|s| *s > t)
            .min();
        let r = self.random.as_mut().and_then(|r| {
            r.cover(t);
            if r.windows.iter().all(|(s, _)| *s <= t) {
                r.cover(r.generated_to);
            }
            r.windows.iter().map(|(s, _)| *s).find(|s| *s > t)
        });
        match (s, r) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OutageWindow;
    use super::*;
    use crate::rng::component_rng;
    use crate::units::Dur;

    #[test]
    fn scheduled_windows_are_half_open() {
        let cfg = OutageConfig {
            scheduled: vec![OutageWindow {
                start: Dur(100),
                end: Dur(200),
            }],
            ..OutageConfig::default()
        };
        let mut o = Outages::new(&cfg, component_rng(1, "o"));
        let t = Time::from_nanos;
        assert!(!o.is_down(t(99)));
        assert!(o.is_down(t(100)));
        assert_eq!(o.up_at(t(150)), t(200));
        assert!(!o.is_down(t(200)));
        assert_eq!(o.next_down_after(t(50)), Some(t(100)));
        assert_eq!(o.next_down_after(t(100)), None);
    }

    #[test]
    fn random_outages_have_the_configured_duty_cycle() {
        let cfg = OutageConfig {
            mean_up: Some(Dur(900_000)),
            mean_down: Some(Dur(100_000)),
            ..OutageConfig::default()
        };
        let mut o = Outages::new(&cfg, component_rng(3, "o"));
        let down = (0..200_000u64)
            .filter(|i| o.is_down(Time::from_micros(*i)))
            .count();
        let frac = down as f64 / 200_000.0;
        assert!((frac - 0.1).abs() < 0.02, "down fraction {frac}");
    }
}
