//! Link outages: scheduled windows and random on/off periods.
//!
//! While a direction is down its queue holds (arrivals are still
//! enqueued up to the limit) and nothing is transmitted; a packet whose
//! transmission would complete inside an outage is lost on the channel.
//! Random outages alternate exponential up times (mean `mean_up`) and
//! exponential down times (mean `mean_down`), drawn lazily from the
//! direction's own generator (`link/<name>/<dir>/outage`) as time
//! advances, so a run's outages depend only on the seed and the name.

use crate::rng::SimRng;
use crate::scenario::config::OutageConfig;
use rand::RngExt;
use std::collections::VecDeque;

/// Down windows `[start, end)` in ns, generated as needed.
#[derive(Debug)]
pub struct Outages {
    scheduled: Vec<(u64, u64)>,
    random: Option<RandomOutages>,
}

#[derive(Debug)]
struct RandomOutages {
    mean_up_ns: f64,
    mean_down_ns: f64,
    rng: SimRng,
    windows: VecDeque<(u64, u64)>,
    generated_to: u64,
}

impl RandomOutages {
    fn exp(&mut self, mean: f64) -> u64 {
        let u: f64 = self.rng.random();
        // -ln(1-u) with u in [0,1): finite; at least 1 ns so time advances.
        ((-(1.0 - u).ln()) * mean).max(1.0) as u64
    }

    /// Generate windows until one ends after `t`.
    fn cover(&mut self, t: u64) {
        while self.generated_to <= t {
            let up = self.exp(self.mean_up_ns);
            let down = self.exp(self.mean_down_ns);
            let start = self.generated_to.saturating_add(up);
            let end = start.saturating_add(down);
            self.windows.push_back((start, end));
            self.generated_to = end;
        }
    }
}

impl Outages {
    /// Outages of `cfg`; random ones draw from `rng`.
    pub fn new(cfg: &OutageConfig, rng: SimRng) -> Outages {
        let mut scheduled: Vec<(u64, u64)> =
            cfg.scheduled.iter().map(|w| (w.start.0, w.end.0)).collect();
        scheduled.sort_unstable();
        let random = match (cfg.mean_up, cfg.mean_down) {
            (Some(u), Some(d)) => Some(RandomOutages {
                mean_up_ns: u.0 as f64,
                mean_down_ns: d.0 as f64,
                rng,
                windows: VecDeque::new(),
                generated_to: 0,
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

    /// Whether there are outages at all.
    pub fn is_empty(&self) -> bool {
        self.scheduled.is_empty() && self.random.is_none()
    }

    /// The window containing `t`, if any. Calls must come with
    /// non-decreasing `t` (old random windows are forgotten).
    fn containing(&mut self, t: u64) -> Option<(u64, u64)> {
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

    /// Whether the direction is down at `t`.
    pub fn is_down(&mut self, t: u64) -> bool {
        !self.is_empty() && self.containing(t).is_some()
    }

    /// When a direction down at `t` comes back up (`t` itself if it is up).
    pub fn up_at(&mut self, t: u64) -> u64 {
        let mut at = t;
        while let Some((_, end)) = self.containing(at) {
            at = end;
        }
        at
    }

    /// The start of the next outage strictly after `t`, if any.
    pub fn next_down_after(&mut self, t: u64) -> Option<u64> {
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
    use super::*;
    use crate::rng::component_rng;
    use crate::scenario::config::OutageWindow;
    use crate::scenario::units::Dur;

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
        assert!(!o.is_down(99));
        assert!(o.is_down(100));
        assert_eq!(o.up_at(150), 200);
        assert!(!o.is_down(200));
        assert_eq!(o.next_down_after(50), Some(100));
        assert_eq!(o.next_down_after(100), None);
    }

    #[test]
    fn random_outages_have_the_configured_duty_cycle() {
        let cfg = OutageConfig {
            mean_up: Some(Dur(900_000)),
            mean_down: Some(Dur(100_000)),
            ..OutageConfig::default()
        };
        let mut o = Outages::new(&cfg, component_rng(3, "o"));
        let down = (0..200_000u64).filter(|i| o.is_down(i * 1000)).count();
        let frac = down as f64 / 200_000.0;
        assert!((frac - 0.1).abs() < 0.02, "down fraction {frac}");
    }
}
