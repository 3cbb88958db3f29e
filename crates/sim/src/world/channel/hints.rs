//! Link hints: the link layer's knowledge of an outage, handed to the
//! sending connection (issue 11 item 3, cc-spec §2.4 `LinkHint`).
//!
//! A [`HintSource`] turns each [`FailureEvent`] of the mmWave channel into
//! at most one [`LinkHint`] delivered to the sender `delay` after the
//! outage began — the time the base station needs to notice it and the
//! report needs to reach the sender. How good the hint is, is the
//! experiment's knob ([`HintMode`]), so the value of hints can itself be
//! measured:
//!
//! * `perfect`: every outage is reported with its kind and its exact
//!   duration;
//! * `noisy`: each outage is missed with probability `p`; a reported one
//!   carries the right kind and a duration multiplied by `exp(σ·Z)`, `Z`
//!   standard normal (log-normal error, median-unbiased: half the
//!   predictions are too long, half too short, and a σ of 0.5 puts 68 % of
//!   them within a factor 1.65); its delivery is late by an extra
//!   uniform `[0, jitter]`;
//! * `absent`: nothing is ever reported (the sender must guess).
//!
//! **Hints with a path (issue 23).** The modes above, with the default
//! [`HintOrigin::Oracle`], read the duration off the outage event: in the
//! outage channel that is the channel's own future (the hint is
//! self-fulfilling), kept only so older outputs can be reproduced. A named
//! origin estimates instead, from what it could know when the outage
//! starts:
//!
//! * [`HintOrigin::BaseStation`] sees the SINR collapse: deafness and
//!   misalignment last the MAC's recovery bound, a handover its nominal
//!   interruption, a blockage the running mean of the blockages it has
//!   seen *end* (starting from a prior);
//! * [`HintOrigin::MobilityPredictor`] knows the vehicle's speed: a
//!   blockage lasts a typical blocker's length over that speed (clamped to
//!   the recovery bound and the horizon), the other kinds as above.
//!
//! With a named origin, `perfect` means zero signalling delay and no
//! misses (not foreknowledge); `noisy` adds the `hint_delay`, the jitter,
//! the misses and false alarms (Poisson, per vehicle, a blockage that is
//! not there) — the log-normal duration error applies to the oracle only.
//!
//! `issued_at` is the outage's start in every mode (the station stamps
//! the report when it sees the link drop; sender and station share the
//! simulator's clock), `cqi` is 0 (the link is out of range while down)
//! and `speed_mps` the vehicle's speed.

use super::mmwave::{FailureEvent, FailureKind};
use super::{check_range, ConfigError};
use crate::rng::{component_rng, SimRng};
use crate::Time;
use peregrine_cc::{LinkHint, LinkHintKind};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How accurate the hints are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum HintMode {
    /// Every outage, its exact kind and duration.
    Perfect,
    /// Outages missed, durations mispredicted, deliveries late: see the
    /// module documentation for the error model.
    Noisy {
        /// σ of the log-normal duration error (natural log), ≥ 0.
        duration_sigma: f64,
        /// Probability that an outage is not reported at all.
        miss_probability: f64,
        /// Largest extra delivery delay, ms (uniform from 0).
        delay_jitter_ms: f64,
        /// False alarms per second per vehicle (named origins only).
        #[serde(default)]
        false_alarm_rate_hz: f64,
    },
    /// No hints.
    Absent,
}

impl HintMode {
    /// The noisy mode used by the seed-004 reproduction: σ = 0.5, 10 %
    /// missed, up to 5 ms late.
    pub fn noisy_default() -> HintMode {
        HintMode::Noisy {
            duration_sigma: 0.5,
            miss_probability: 0.1,
            delay_jitter_ms: 5.0,
            false_alarm_rate_hz: 0.1,
        }
    }

    /// Checks the error-model parameters, naming the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let HintMode::Noisy {
            duration_sigma,
            miss_probability,
            delay_jitter_ms,
            false_alarm_rate_hz,
        } = self
        {
            check_range("hints.false_alarm_rate_hz", *false_alarm_rate_hz, 0.0, 1e3)?;
            check_range("hints.duration_sigma", *duration_sigma, 0.0, 10.0)?;
            check_range("hints.miss_probability", *miss_probability, 0.0, 1.0)?;
            check_range("hints.delay_jitter_ms", *delay_jitter_ms, 0.0, 1e6)?;
        }
        Ok(())
    }
}

/// A hint and when it reaches the sender.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduledHint {
    /// When the sending connection gets it (`on_link_hint`).
    pub deliver_at: Time,
    /// The vehicle whose link failed (the engine maps it to connections).
    pub vehicle: usize,
    /// The hint.
    pub hint: LinkHint,
}

/// Who produces the hints, and so what their durations can be based on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HintOrigin {
    /// The outage event's own duration (foreknowledge; the pre-issue-23
    /// model).
    Oracle,
    /// The serving base station, from what it has observed.
    BaseStation,
    /// A mobility predictor, from the vehicle's speed.
    MobilityPredictor,
}

impl HintOrigin {
    /// The scenario-file name: `oracle`, `base_station` or `mobility`.
    pub fn as_str(self) -> &'static str {
        match self {
            HintOrigin::Oracle => "oracle",
            HintOrigin::BaseStation => "base_station",
            HintOrigin::MobilityPredictor => "mobility",
        }
    }

    /// Parses a scenario-file name.
    pub fn parse(s: &str) -> Option<HintOrigin> {
        match s {
            "oracle" => Some(HintOrigin::Oracle),
            "base_station" => Some(HintOrigin::BaseStation),
            "mobility" => Some(HintOrigin::MobilityPredictor),
            _ => None,
        }
    }
}

/// What a named origin knows before any outage: nominal durations.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct HintPriors {
    /// The MAC's recovery bound (deafness, misalignment).
    pub recovery: Duration,
    /// A handover's nominal interruption.
    pub handover: Duration,
    /// A blockage before any has been seen to end.
    pub blockage: Duration,
    /// Typical blocker length along the road, m (mobility predictor).
    pub blocker_length_m: f64,
    /// Longest predicted blockage.
    pub horizon: Duration,
}

impl Default for HintPriors {
    /// 10 ms recovery (seed 004 §3.2.5), 20 ms handover, 100 ms blockage,
    /// 15 m blockers (seed 004: 10–20 m obstacles), 2 s horizon.
    fn default() -> HintPriors {
        HintPriors {
            recovery: Duration::from_millis(10),
            handover: Duration::from_millis(20),
            blockage: Duration::from_millis(100),
            blocker_length_m: 15.0,
            horizon: Duration::from_secs(2),
        }
    }
}

/// Turns outages into hints of the chosen accuracy.
#[derive(Clone, Debug)]
pub struct HintSource {
    mode: HintMode,
    delay: Duration,
    rng: SimRng,
    origin: HintOrigin,
    priors: HintPriors,
    /// Base station: mean of the blockages seen to end, seconds, and how
    /// many; blockages still running, (end, length s).
    learned_s: f64,
    learned_n: u64,
    running: Vec<(Time, f64)>,
    seed: u64,
}

/// The hint kind of an outage kind.
pub fn hint_kind(kind: FailureKind) -> LinkHintKind {
    match kind {
        FailureKind::Blockage => LinkHintKind::Blockage,
        FailureKind::Deafness => LinkHintKind::Deafness,
        FailureKind::BeamMisalignment => LinkHintKind::BeamMisalignment,
        FailureKind::Handover => LinkHintKind::Handover,
    }
}

impl HintSource {
    /// A source in `mode` delivering `delay` after each outage starts,
    /// its draws from `seed`.
    pub fn new(mode: HintMode, delay: Duration, seed: u64) -> Result<HintSource, ConfigError> {
        mode.validate()?;
        Ok(HintSource {
            mode,
            delay,
            rng: component_rng(seed, "mmwave/hints"),
            origin: HintOrigin::Oracle,
            priors: HintPriors::default(),
            learned_s: 0.0,
            learned_n: 0,
            running: Vec::new(),
            seed,
        })
    }

    /// The same source with hints from `origin`, estimating from `priors`.
    pub fn with_origin(mut self, origin: HintOrigin, priors: HintPriors) -> HintSource {
        self.origin = origin;
        self.priors = priors;
        self
    }

    /// The origin.
    pub fn origin(&self) -> HintOrigin {
        self.origin
    }

    /// The duration `origin` predicts for `ev` from what it knows at
    /// `ev.time`; never reads `ev.duration` except as the oracle, and the
    /// base station only once the outage has ended. O(blockages running).
    fn estimate(&mut self, ev: &FailureEvent) -> Duration {
        let p = self.priors;
        if self.origin == HintOrigin::Oracle {
            return ev.duration;
        }
        // The base station learns every blockage that has ended by now.
        let now = ev.time;
        let (mut sum, mut n) = (self.learned_s * self.learned_n as f64, self.learned_n);
        self.running.retain(|(end, len)| {
            if *end <= now {
                sum += len;
                n += 1;
                false
            } else {
                true
            }
        });
        if n > 0 {
            self.learned_s = sum / n as f64;
            self.learned_n = n;
        }
        match ev.kind {
            FailureKind::Deafness | FailureKind::BeamMisalignment => p.recovery,
            FailureKind::Handover => p.handover,
            FailureKind::Blockage => {
                if self.origin == HintOrigin::BaseStation {
                    self.running
                        .push((ev.time + ev.duration, ev.duration.as_secs_f64()));
                    if self.learned_n == 0 {
                        p.blockage
                    } else {
                        Duration::from_secs_f64(self.learned_s).min(p.horizon)
                    }
                } else {
                    let speed = if ev.speed_mps.is_finite() {
                        ev.speed_mps.max(0.1)
                    } else {
                        0.1
                    };
                    Duration::from_secs_f64(p.blocker_length_m / speed)
                        .clamp(p.recovery, p.horizon.max(p.recovery))
                }
            }
        }
    }

    /// False alarms (named origins, `noisy` mode): for each of `vehicles`
    /// a Poisson process of blockage hints that no outage is behind, over
    /// `[0, end]`, each delivered after the signalling delay. Its own
    /// stream, so outages' hints do not shift. O(alarms).
    pub fn false_alarms(&self, vehicles: usize, end: Time) -> Vec<ScheduledHint> {
        let HintMode::Noisy {
            false_alarm_rate_hz,
            ..
        } = self.mode
        else {
            return Vec::new();
        };
        if self.origin == HintOrigin::Oracle || false_alarm_rate_hz <= 0.0 {
            return Vec::new();
        }
        let mut rng = component_rng(self.seed, "mmwave/hints/false_alarms");
        let mut out = Vec::new();
        for vehicle in 0..vehicles {
            let mut t = 0.0f64;
            loop {
                let u: f64 = rng.random();
                t += -(1.0 - u).ln() / false_alarm_rate_hz;
                let at = Time::from_nanos((t * 1e9) as u64);
                if at > end {
                    break;
                }
                out.push(ScheduledHint {
                    deliver_at: at + self.delay,
                    vehicle,
                    hint: LinkHint {
                        kind: LinkHintKind::Blockage,
                        issued_at: at,
                        predicted_duration: Some(self.priors.blockage),
                        cqi: Some(0),
                        speed_mps: None,
                    },
                });
            }
        }
        out.sort_by_key(|h| h.deliver_at);
        out
    }

    /// The mode.
    pub fn mode(&self) -> &HintMode {
        &self.mode
    }

    /// The hint for one outage, if this source reports it.
    pub fn on_event(&mut self, ev: &FailureEvent) -> Option<ScheduledHint> {
        let predicted = self.estimate(ev);
        let mut hint = LinkHint {
            kind: hint_kind(ev.kind),
            issued_at: ev.time,
            predicted_duration: Some(predicted),
            cqi: Some(0),
            speed_mps: Some(ev.speed_mps as f32),
        };
        let mut deliver_at = ev.time + self.delay;
        match self.mode {
            HintMode::Absent => return None,
            // A named origin's perfect signalling is instant.
            HintMode::Perfect if self.origin != HintOrigin::Oracle => deliver_at = ev.time,
            HintMode::Perfect => {}
            HintMode::Noisy {
                duration_sigma,
                miss_probability,
                delay_jitter_ms,
                ..
            } => {
                // Three draws per event whatever the outcome, so one
                // event's fate does not shift the next one's draws.
                let miss: f64 = self.rng.random();
                let z: f64 = StandardNormal.sample(&mut self.rng);
                let jitter: f64 = self.rng.random();
                if miss < miss_probability {
                    return None;
                }
                if self.origin == HintOrigin::Oracle {
                    let factor = (duration_sigma * z).exp();
                    // A huge factor saturates rather than overflowing Duration.
                    let predicted = Duration::try_from_secs_f64(predicted.as_secs_f64() * factor)
                        .unwrap_or(Duration::MAX);
                    hint.predicted_duration = Some(predicted);
                }
                deliver_at += Duration::from_secs_f64(jitter * delay_jitter_ms * 1e-3);
            }
        }
        Some(ScheduledHint {
            deliver_at,
            vehicle: ev.vehicle,
            hint,
        })
    }

    /// The hints of a batch of outages (as drained from the channel), in
    /// the same order.
    pub fn on_events(&mut self, events: &[FailureEvent]) -> Vec<ScheduledHint> {
        events.iter().filter_map(|e| self.on_event(e)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(i: u64) -> FailureEvent {
        FailureEvent {
            time: Time::from_millis(1000 + 37 * i),
            vehicle: (i % 7) as usize,
            bs: Some(1),
            kind: FailureKind::ALL[(i % 4) as usize],
            duration: Duration::from_millis(5 + i % 300),
            speed_mps: 12.5,
        }
    }

    #[test]
    fn perfect_hints_carry_the_exact_kind_and_duration() {
        let mut src = HintSource::new(HintMode::Perfect, Duration::from_millis(3), 1).unwrap();
        let events: Vec<FailureEvent> = (0..100).map(event).collect();
        let hints = src.on_events(&events);
        assert_eq!(hints.len(), 100);
        for (h, e) in hints.iter().zip(&events) {
            assert_eq!(h.vehicle, e.vehicle);
            assert_eq!(h.deliver_at, e.time + Duration::from_millis(3));
            assert_eq!(h.hint.issued_at, e.time);
            assert_eq!(h.hint.kind, hint_kind(e.kind));
            assert!(h.hint.kind.is_link_failure());
            assert_eq!(h.hint.predicted_duration, Some(e.duration));
            assert_eq!(h.hint.cqi, Some(0));
            assert_eq!(h.hint.speed_mps, Some(12.5));
        }
    }

    #[test]
    fn absent_hints_are_never_delivered() {
        let mut src = HintSource::new(HintMode::Absent, Duration::ZERO, 1).unwrap();
        let events: Vec<FailureEvent> = (0..100).map(event).collect();
        assert!(src.on_events(&events).is_empty());
    }

    #[test]
    fn noisy_hints_follow_the_stated_error_model() {
        let (sigma, p, jitter_ms) = (0.5, 0.2, 4.0);
        let mode = HintMode::Noisy {
            duration_sigma: sigma,
            miss_probability: p,
            delay_jitter_ms: jitter_ms,
            false_alarm_rate_hz: 0.0,
        };
        let delay = Duration::from_millis(2);
        let mut src = HintSource::new(mode, delay, 9).unwrap();
        let n = 20_000;
        let events: Vec<FailureEvent> = (0..n).map(event).collect();
        let mut logs = Vec::new();
        let mut lates = Vec::new();
        let mut delivered = 0usize;
        for e in &events {
            if let Some(h) = src.on_event(e) {
                delivered += 1;
                assert_eq!(h.hint.kind, hint_kind(e.kind), "kinds are never confused");
                let pred = h.hint.predicted_duration.unwrap().as_secs_f64();
                logs.push((pred / e.duration.as_secs_f64()).ln());
                let late = h.deliver_at.saturating_duration_since(e.time) - delay;
                assert!(late <= Duration::from_secs_f64(jitter_ms * 1e-3));
                lates.push(late.as_secs_f64() * 1e3);
            }
        }
        let missed = 1.0 - delivered as f64 / n as f64;
        // Binomial sd ≈ 0.003: 4 sd.
        assert!((missed - p).abs() < 0.012, "missed {missed}");
        let m = logs.iter().sum::<f64>() / logs.len() as f64;
        let sd = (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
        assert!(m.abs() < 0.02, "log-error mean {m}");
        assert!((sd - sigma).abs() < 0.02, "log-error sd {sd}");
        let mean_late = lates.iter().sum::<f64>() / lates.len() as f64;
        assert!((mean_late - jitter_ms / 2.0).abs() < 0.1, "{mean_late}");
    }

    #[test]
    fn noisy_hints_are_deterministic_per_seed() {
        let run = |seed| {
            let mut src =
                HintSource::new(HintMode::noisy_default(), Duration::from_millis(1), seed).unwrap();
            src.on_events(&(0..500).map(event).collect::<Vec<_>>())
        };
        assert_eq!(run(4), run(4));
        assert_ne!(run(4), run(5));
    }

    #[test]
    fn bad_error_models_are_named_and_modes_read_from_files() {
        let bad = HintMode::Noisy {
            duration_sigma: 0.5,
            miss_probability: 1.5,
            delay_jitter_ms: 0.0,
            false_alarm_rate_hz: 0.0,
        };
        let err = HintSource::new(bad, Duration::ZERO, 1).unwrap_err();
        assert_eq!(err.field, "hints.miss_probability");
        let m: HintMode = serde_json::from_str(
            r#"{"mode": "noisy", "duration_sigma": 0.3, "miss_probability": 0.05, "delay_jitter_ms": 2.0}"#,
        )
        .unwrap();
        assert!(matches!(m, HintMode::Noisy { duration_sigma, .. } if duration_sigma == 0.3));
        let m: HintMode = serde_json::from_str(r#"{"mode": "perfect"}"#).unwrap();
        assert_eq!(m, HintMode::Perfect);
        assert!(serde_json::from_str::<HintMode>(r#"{"mode": "psychic"}"#).is_err());
    }

    fn named(origin: HintOrigin, mode: HintMode, delay_ms: u64) -> HintSource {
        HintSource::new(mode, Duration::from_millis(delay_ms), 11)
            .unwrap()
            .with_origin(origin, HintPriors::default())
    }

    #[test]
    fn named_origins_deliver_with_the_configured_delay_and_misses() {
        let events: Vec<FailureEvent> = (0..20_000).map(event).collect();
        for origin in [HintOrigin::BaseStation, HintOrigin::MobilityPredictor] {
            // Perfect: every outage, at once.
            let hints = named(origin, HintMode::Perfect, 3).on_events(&events);
            assert_eq!(hints.len(), events.len());
            for (h, e) in hints.iter().zip(&events) {
                assert_eq!(h.deliver_at, e.time, "perfect is zero delay");
            }
            // Noisy: 30 % missed, 3 ms + up to 2 ms late.
            let mode = HintMode::Noisy {
                duration_sigma: 0.5,
                miss_probability: 0.3,
                delay_jitter_ms: 2.0,
                false_alarm_rate_hz: 0.0,
            };
            let mut src = named(origin, mode, 3);
            let mut delivered = 0;
            for e in &events {
                if let Some(h) = src.on_event(e) {
                    delivered += 1;
                    let late = h.deliver_at.saturating_duration_since(e.time);
                    assert!(late >= Duration::from_millis(3));
                    assert!(late <= Duration::from_millis(5));
                }
            }
            let missed = 1.0 - f64::from(delivered) / events.len() as f64;
            assert!((missed - 0.3).abs() < 0.015, "{origin:?}: missed {missed}");
        }
    }

    #[test]
    fn no_named_hint_carries_the_channels_future_duration() {
        // Change the durations of events k.. only: every hint of an event
        // that started before event k ended is unchanged, and in
        // particular no event's own hint depends on its own duration.
        let events: Vec<FailureEvent> = (0..400).map(event).collect();
        for origin in [HintOrigin::BaseStation, HintOrigin::MobilityPredictor] {
            let base = named(origin, HintMode::Perfect, 0).on_events(&events);
            for k in [0usize, 57, 399] {
                let mut changed = events.clone();
                for e in &mut changed[k..] {
                    e.duration = e.duration * 7 + Duration::from_millis(3);
                }
                let other = named(origin, HintMode::Perfect, 0).on_events(&changed);
                // Before any changed event has ended (in either run).
                let first_end = events[k..]
                    .iter()
                    .map(|e| e.time + e.duration)
                    .min()
                    .unwrap();
                for j in 0..events.len() {
                    let unaffected = j <= k
                        || origin == HintOrigin::MobilityPredictor
                        || events[j].time < first_end;
                    if unaffected {
                        assert_eq!(
                            base[j], other[j],
                            "{origin:?}: hint {j} after change at {k}"
                        );
                    }
                }
            }
            // And the hints are not the durations (they are estimates).
            let same = base
                .iter()
                .zip(&events)
                .filter(|(h, e)| h.hint.predicted_duration == Some(e.duration))
                .count();
            assert!(same < events.len() / 10, "{origin:?}: {same} exact");
        }
        // The mobility predictor: a faster vehicle, a shorter blockage.
        let mut src = named(HintOrigin::MobilityPredictor, HintMode::Perfect, 0);
        let mut e = event(0);
        e.kind = FailureKind::Blockage;
        e.speed_mps = 5.0;
        let slow = src.on_event(&e).unwrap().hint.predicted_duration.unwrap();
        e.speed_mps = 25.0;
        let fast = src.on_event(&e).unwrap().hint.predicted_duration.unwrap();
        // 15 m at 5 m/s is 3 s, clamped to the 2 s horizon.
        assert_eq!(slow, Duration::from_secs(2));
        assert_eq!(fast, Duration::from_millis(600));
    }

    #[test]
    fn false_alarms_come_at_the_configured_rate_and_only_from_named_origins() {
        let mode = HintMode::Noisy {
            duration_sigma: 0.5,
            miss_probability: 0.0,
            delay_jitter_ms: 0.0,
            false_alarm_rate_hz: 2.0,
        };
        let end = Time::from_millis(100_000);
        let alarms = named(HintOrigin::BaseStation, mode.clone(), 4).false_alarms(10, end);
        // 10 vehicles × 100 s × 2 Hz = 2000 ± 45 (Poisson sd).
        assert!(
            (alarms.len() as f64 - 2000.0).abs() < 180.0,
            "{}",
            alarms.len()
        );
        for a in &alarms {
            assert_eq!(a.deliver_at, a.hint.issued_at + Duration::from_millis(4));
            assert!(a.vehicle < 10 && a.hint.issued_at <= end);
        }
        let oracle = HintSource::new(mode, Duration::ZERO, 1).unwrap();
        assert!(oracle.false_alarms(10, end).is_empty());
        for o in [
            HintOrigin::Oracle,
            HintOrigin::BaseStation,
            HintOrigin::MobilityPredictor,
        ] {
            assert_eq!(HintOrigin::parse(o.as_str()), Some(o));
        }
    }
}
