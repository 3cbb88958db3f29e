//! The scenario's outages (`outages = { … }`, [`OutageConfig`]) on the
//! link crate's one outage implementation ([`peregrine_link::outage`]):
//! scheduled windows and random on/off periods.
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
use peregrine_link::outage as link;
use peregrine_link::uniform::RandSource;
use serde::Deserialize;
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

/// Down windows `[start, end)`, generated as needed: the link crate's
/// [`Outages`](peregrine_link::outage::Outages) built from a scenario's
/// [`OutageConfig`], its random windows drawn from the direction's
/// generator.
#[derive(Debug)]
pub struct Outages(link::Outages<RandSource<SimRng>>);

impl Outages {
    /// The outages of `cfg`, random ones drawn from `rng`.
    pub fn new(cfg: &OutageConfig, rng: SimRng) -> Outages {
        let scheduled = cfg
            .scheduled
            .iter()
            .map(|w| (Time::from_nanos(w.start.0), Time::from_nanos(w.end.0)))
            .collect();
        let random = match (cfg.mean_up, cfg.mean_down) {
            (Some(u), Some(d)) => Some(link::RandomOutages::new(
                Duration::from_nanos(u.0),
                Duration::from_nanos(d.0),
                RandSource(rng),
            )),
            _ => None,
        };
        Outages(link::Outages::new(
            link::Schedule::new(scheduled, None),
            random,
        ))
    }

    /// No outages.
    pub fn none() -> Outages {
        Outages(link::Outages::none())
    }

    /// Whether there are no outages at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the direction is down at `t`.
    pub fn is_down(&mut self, t: Time) -> bool {
        self.0.is_down(t)
    }

    /// The first instant at or after `t` at which the direction is up.
    pub fn up_at(&mut self, t: Time) -> Time {
        self.0.up_at(t)
    }

    /// The next instant after `t` at which an outage starts, if any.
    pub fn next_down_after(&mut self, t: Time) -> Option<Time> {
        self.0.next_down_after(t)
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
