//! Link hints planned from a link's own outages (issue 38): what
//! `peregrine emu --hint-lead` announces to the command it runs, and what
//! a scenario link's `hints = { lead = … }` hands to the simulated flows
//! that cross the link — one plan, so the laboratory and the emulator
//! announce the same outages at the same times.
//!
//! A link direction's outages (scheduled windows and random on/off
//! periods) are drawn by [`Outages`] from a seeded generator, so the
//! link knows them in advance: [`HintPlan`] rebuilds each direction's
//! outages from the same configuration and the same generator names as
//! the link model (the very same windows), merges the two directions'
//! windows (traffic stops when either is down), and announces each
//! merged window `lead` before it begins:
//!
//! * each outage is **missed** (not announced) with probability `miss`;
//! * **false alarms** come as a Poisson process of `false_alarm_hz` per
//!   second: an announced outage, of the links' mean outage length, when
//!   nothing happens;
//! * draws come from `<prefix>` and `<prefix>/false_alarms` of the link's
//!   seed (`emu/hints` in the emulator, `link/<name>/hints` in the
//!   simulator), so a run's hints depend only on its settings and seed.
//!
//! A hint's receiver (the runtime's hint pump, the simulator's engine)
//! applies it when its outage begins, as a blockage with the announced
//! duration (`LinkHint::issued_at` = the window's start).

use crate::rng::{component_rng, SimRng};
use crate::units::Dur;
use crate::world::outage::{OutageConfig, Outages};
use peregrine_cc::{LinkHint, LinkHintKind, Time};
use rand::RngExt;
use serde::Deserialize;
use std::time::Duration;

/// `links.N.hints` in a scenario: announce the link's outages (either
/// direction's, merged) to the senders of the flows that cross it, as
/// `peregrine emu --hint-lead/--hint-miss/--hint-false-alarm` announces
/// them to the command it runs.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkHintsConfig {
    /// How far ahead of each outage its hint is sent (default 0). The
    /// receiver applies a hint when its outage begins, so the lead only
    /// decides whether the hint is there in time — always, in the
    /// simulator; in the runtime, if the feed's latency is below it.
    #[serde(default)]
    pub lead: Dur,
    /// Probability an outage is not announced, in [0, 1] (default 0).
    #[serde(default)]
    pub miss: f64,
    /// False alarms per second, in [0, 1000] (default 0).
    #[serde(default)]
    pub false_alarm: f64,
}

impl LinkHintsConfig {
    /// The plan's options.
    pub fn options(&self) -> HintOptions {
        HintOptions {
            lead: Duration::from_nanos(self.lead.0),
            miss: self.miss,
            false_alarm_hz: self.false_alarm,
        }
    }
}

/// A false alarm's announced length when the link has no outages to take
/// a mean from (the simulator's blockage prior, `HintPriors::blockage`).
pub const DEFAULT_ALARM: Duration = Duration::from_millis(100);

/// What to announce: the emulator's `--hint-lead/--hint-miss/
/// --hint-false-alarm`, a scenario link's `hints = { lead, miss,
/// false_alarm }`.
#[derive(Clone, Debug, PartialEq)]
pub struct HintOptions {
    /// How far ahead of each outage its hint is sent.
    pub lead: Duration,
    /// Probability an outage is not announced, in [0, 1].
    pub miss: f64,
    /// False alarms per second, in [0, 1000].
    pub false_alarm_hz: f64,
}

/// Which [`HintOptions`] field is out of range.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HintField {
    /// `miss`.
    Miss,
    /// `false_alarm_hz`.
    FalseAlarm,
}

impl HintOptions {
    /// Checks the values: the bad field and what is wrong with it (the
    /// caller names the field in its own syntax, a flag or a key).
    pub fn check(&self) -> Result<(), (HintField, String)> {
        if !(0.0..=1.0).contains(&self.miss) {
            return Err((
                HintField::Miss,
                format!("{} is not a probability in [0, 1]", self.miss),
            ));
        }
        if !(self.false_alarm_hz.is_finite() && (0.0..=1e3).contains(&self.false_alarm_hz)) {
            return Err((
                HintField::FalseAlarm,
                format!(
                    "{} is not a rate in [0, 1000] per second",
                    self.false_alarm_hz
                ),
            ));
        }
        Ok(())
    }
}

/// One direction's outages, as its link model draws them.
#[derive(Clone, Debug)]
pub struct OutageSource {
    /// The configuration.
    pub config: OutageConfig,
    /// The seed.
    pub seed: u64,
    /// The generator's component name (`emu/uplink/outage`, …).
    pub rng_name: String,
}

impl OutageSource {
    /// The direction's outages, drawn as its link model draws them.
    pub fn build(&self) -> Outages {
        Outages::new(&self.config, component_rng(self.seed, &self.rng_name))
    }

    /// The mean outage length this configuration asks for, if any.
    fn mean_length(&self) -> Option<Duration> {
        let c = &self.config;
        let windows: Vec<u64> = c
            .scheduled
            .iter()
            .map(|w| w.end.0.saturating_sub(w.start.0))
            .collect();
        let mut total = windows.iter().sum::<u64>() as f64;
        let mut n = windows.len() as f64;
        if let (Some(_), Some(d)) = (c.mean_up, c.mean_down) {
            total += d.0 as f64;
            n += 1.0;
        }
        (n > 0.0).then(|| Duration::from_nanos((total / n) as u64))
    }
}

/// A planned hint.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedHint {
    /// When it is sent (model time).
    pub send_at: Time,
    /// When the announced outage begins (model time).
    pub starts: Time,
    /// How long it is announced to last.
    pub duration: Duration,
    /// Nothing happens then (a false alarm).
    pub false_alarm: bool,
}

impl PlannedHint {
    /// The hint a receiver applies when the announced outage begins: a
    /// blockage of the announced duration, issued at its start — what the
    /// runtime's pump makes of the emulator's JSON line
    /// (`peregrine::hints::Hint::to_link_hint` for kind `outage`).
    pub fn link_hint(&self) -> LinkHint {
        LinkHint {
            kind: LinkHintKind::Blockage,
            issued_at: self.starts,
            predicted_duration: Some(self.duration),
            cqi: Some(0),
            speed_mps: None,
        }
    }
}

/// One direction's windows, in order (each window once; touching
/// windows come merged, as the model's `up_at` sees them).
struct Windows {
    outages: Outages,
    /// The end of the last window handed out (`None`: none yet). Time
    /// only moves forward here, as [`Outages`] requires.
    pos: Option<Time>,
    peeked: Option<(Time, Time)>,
}

impl Windows {
    fn next_window(&mut self) -> Option<(Time, Time)> {
        let start = match self.pos {
            None if self.outages.is_down(Time::ZERO) => Time::ZERO,
            None => self.outages.next_down_after(Time::ZERO)?,
            Some(p) => self.outages.next_down_after(p)?,
        };
        let end = self.outages.up_at(start);
        self.pos = Some(end);
        Some((start, end))
    }

    fn peek(&mut self) -> Option<(Time, Time)> {
        if self.peeked.is_none() {
            self.peeked = self.next_window();
        }
        self.peeked
    }
}

/// The hints of a link, in the order they are sent: pure and seeded (no
/// clock), so they can be checked without running anything.
pub struct HintPlan {
    opts: HintOptions,
    dirs: Vec<Windows>,
    miss_rng: SimRng,
    alarm_rng: SimRng,
    alarm_length: Duration,
    next_alarm: Option<Time>,
    next_outage: Option<PlannedHint>,
}

impl HintPlan {
    /// The plan for a link with these directions' outages, its draws from
    /// `seed` under the generator names `rng_prefix` (misses) and
    /// `rng_prefix/false_alarms`.
    pub fn new(opts: HintOptions, dirs: &[OutageSource], seed: u64, rng_prefix: &str) -> HintPlan {
        let lengths: Vec<Duration> = dirs.iter().filter_map(OutageSource::mean_length).collect();
        let alarm_length = if lengths.is_empty() {
            DEFAULT_ALARM
        } else {
            lengths.iter().sum::<Duration>() / lengths.len() as u32
        };
        let mut p = HintPlan {
            dirs: dirs
                .iter()
                .map(|d| Windows {
                    outages: d.build(),
                    pos: None,
                    peeked: None,
                })
                .collect(),
            miss_rng: component_rng(seed, rng_prefix),
            alarm_rng: component_rng(seed, &format!("{rng_prefix}/false_alarms")),
            alarm_length,
            next_alarm: None,
            next_outage: None,
            opts,
        };
        p.next_alarm = p.draw_alarm(Time::ZERO);
        p.next_outage = p.draw_outage();
        p
    }

    fn draw_alarm(&mut self, after: Time) -> Option<Time> {
        if self.opts.false_alarm_hz <= 0.0 {
            return None;
        }
        let u: f64 = self.alarm_rng.random();
        let gap = -(1.0 - u).ln() / self.opts.false_alarm_hz;
        Some(after + Duration::from_secs_f64(gap.min(1e9)))
    }

    /// The next merged outage that is announced (not missed).
    /// O(windows merged).
    fn draw_outage(&mut self) -> Option<PlannedHint> {
        loop {
            let first = (0..self.dirs.len())
                .filter_map(|i| self.dirs[i].peek().map(|w| (w, i)))
                .min()?;
            let ((start, mut end), i) = first;
            self.dirs[i].peeked = None;
            // Merge every window (of either direction) that overlaps or
            // touches the merged one, until none does.
            loop {
                let mut grew = false;
                for d in &mut self.dirs {
                    while let Some((s, e)) = d.peek().filter(|(s, _)| *s <= end) {
                        debug_assert!(s >= start);
                        if e > end {
                            end = e;
                            grew = true;
                        }
                        d.peeked = None;
                    }
                }
                if !grew {
                    break;
                }
            }
            let u: f64 = self.miss_rng.random();
            if u < self.opts.miss {
                continue;
            }
            return Some(PlannedHint {
                send_at: start - self.opts.lead,
                starts: start,
                duration: end - start,
                false_alarm: false,
            });
        }
    }

    /// The next hint to send, in order of sending. O(1) amortized per
    /// outage.
    pub fn next_hint(&mut self) -> Option<PlannedHint> {
        let alarm_send = self.next_alarm.map(|a| a - self.opts.lead);
        let outage_send = self.next_outage.as_ref().map(|h| h.send_at);
        let take_alarm = match (alarm_send, outage_send) {
            (Some(a), Some(o)) => a < o,
            (Some(_), None) => true,
            _ => false,
        };
        if take_alarm {
            let at = self.next_alarm?;
            self.next_alarm = self.draw_alarm(at);
            return Some(PlannedHint {
                send_at: at - self.opts.lead,
                starts: at,
                duration: self.alarm_length,
                false_alarm: true,
            });
        }
        let h = self.next_outage.take()?;
        self.next_outage = self.draw_outage();
        Some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Dur;
    use crate::world::outage::OutageWindow;

    fn every(period_ms: u64, down_ms: u64, until_ms: u64) -> OutageConfig {
        OutageConfig {
            scheduled: (1..)
                .map(|k| k * period_ms)
                .take_while(|s| *s < until_ms)
                .map(|s| OutageWindow {
                    start: Dur(s * 1_000_000),
                    end: Dur((s + down_ms) * 1_000_000),
                })
                .collect(),
            ..OutageConfig::default()
        }
    }

    fn src(config: OutageConfig, name: &str) -> OutageSource {
        OutageSource {
            config,
            seed: 1,
            rng_name: name.into(),
        }
    }

    fn opts(lead_ms: u64, miss: f64, fa: f64) -> HintOptions {
        HintOptions {
            lead: Duration::from_millis(lead_ms),
            miss,
            false_alarm_hz: fa,
        }
    }

    fn all(p: &mut HintPlan) -> Vec<PlannedHint> {
        std::iter::from_fn(|| p.next_hint()).collect()
    }

    #[test]
    fn each_scheduled_outage_is_announced_lead_ahead() {
        // 300 ms every 5 s for 60 s, the same on both directions.
        let c = every(5000, 300, 60_000);
        let mut p = HintPlan::new(
            opts(100, 0.0, 0.0),
            &[src(c.clone(), "u"), src(c, "d")],
            1,
            "h",
        );
        let hints = all(&mut p);
        assert_eq!(hints.len(), 11, "{hints:?}");
        for (k, h) in hints.iter().enumerate() {
            let start = Time::from_millis(5000 * (k as u64 + 1));
            assert_eq!(h.starts, start);
            assert_eq!(h.send_at, start - Duration::from_millis(100));
            assert_eq!(h.duration, Duration::from_millis(300));
            assert!(!h.false_alarm);
        }
    }

    #[test]
    fn overlapping_directions_merge_and_random_outages_match_the_model() {
        let up = OutageConfig {
            scheduled: vec![OutageWindow {
                start: Dur(1_000_000_000),
                end: Dur(1_200_000_000),
            }],
            ..OutageConfig::default()
        };
        let down = OutageConfig {
            scheduled: vec![OutageWindow {
                start: Dur(1_100_000_000),
                end: Dur(1_500_000_000),
            }],
            ..OutageConfig::default()
        };
        let hints = all(&mut HintPlan::new(
            opts(50, 0.0, 0.0),
            &[src(up, "u"), src(down, "d")],
            1,
            "h",
        ));
        assert_eq!(hints.len(), 1);
        assert_eq!(hints[0].starts, Time::from_millis(1000));
        assert_eq!(hints[0].duration, Duration::from_millis(500));
        // Random outages: the plan's windows are the link model's own.
        let random = OutageConfig {
            mean_up: Some(Dur(2_000_000_000)),
            mean_down: Some(Dur(200_000_000)),
            ..OutageConfig::default()
        };
        let s = src(random, "emu/uplink/outage");
        let mut p = HintPlan::new(opts(100, 0.0, 0.0), std::slice::from_ref(&s), 1, "h");
        let mut model = s.build();
        for _ in 0..20 {
            let h = p.next_hint().expect("random outages never end");
            assert!(model.is_down(h.starts), "{h:?}");
            assert_eq!(model.up_at(h.starts), h.starts + h.duration);
            if h.starts > Time::ZERO {
                assert!(!model.is_down(h.starts - Duration::from_nanos(1)));
            }
        }
    }

    #[test]
    fn misses_and_false_alarms_follow_their_rates() {
        let c = every(1000, 100, 2_000_001);
        let hints = all(&mut HintPlan::new(
            opts(100, 0.3, 0.0),
            &[src(c, "u")],
            7,
            "h",
        ));
        let frac = hints.len() as f64 / 2000.0;
        assert!((frac - 0.7).abs() < 0.04, "announced {frac}");
        // 2 false alarms per second over 1000 s, no outages.
        let mut p = HintPlan::new(opts(100, 0.0, 2.0), &[], 7, "h");
        let alarms: Vec<_> = std::iter::from_fn(|| p.next_hint())
            .take_while(|h| h.starts < Time::from_millis(1_000_000))
            .collect();
        assert!(
            (alarms.len() as f64 - 2000.0).abs() < 180.0,
            "{}",
            alarms.len()
        );
        assert!(alarms
            .iter()
            .all(|h| h.false_alarm && h.duration == DEFAULT_ALARM));
        assert!(alarms.windows(2).all(|w| w[0].send_at <= w[1].send_at));
        // Both together stay in order of sending, and replay per seed.
        let mk = || {
            let mut p = HintPlan::new(
                opts(100, 0.1, 0.5),
                &[src(every(1000, 100, 30_000), "u")],
                3,
                "h",
            );
            // False alarms never end: the first 40 s.
            std::iter::from_fn(|| p.next_hint())
                .take_while(|h| h.starts < Time::from_millis(40_000))
                .collect::<Vec<_>>()
        };
        let a = mk();
        assert!(a.windows(2).all(|w| w[0].send_at <= w[1].send_at));
        assert!(a.iter().any(|h| h.false_alarm) && a.iter().any(|h| !h.false_alarm));
        assert_eq!(a, mk());
        assert_eq!(opts(1, 1.5, 0.0).check().unwrap_err().0, HintField::Miss);
        assert_eq!(
            opts(1, 0.0, -1.0).check().unwrap_err().0,
            HintField::FalseAlarm
        );
    }
}
