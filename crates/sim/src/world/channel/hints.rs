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
        }
    }

    /// Checks the error-model parameters, naming the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let HintMode::Noisy {
            duration_sigma,
            miss_probability,
            delay_jitter_ms,
        } = self
        {
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

/// Turns outages into hints of the chosen accuracy.
#[derive(Clone, Debug)]
pub struct HintSource {
    mode: HintMode,
    delay: Duration,
    rng: SimRng,
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
        })
    }

    /// The mode.
    pub fn mode(&self) -> &HintMode {
        &self.mode
    }

    /// The hint for one outage, if this source reports it.
    pub fn on_event(&mut self, ev: &FailureEvent) -> Option<ScheduledHint> {
        let mut hint = LinkHint {
            kind: hint_kind(ev.kind),
            issued_at: ev.time,
            predicted_duration: Some(ev.duration),
            cqi: Some(0),
            speed_mps: Some(ev.speed_mps as f32),
        };
        let mut deliver_at = ev.time + self.delay;
        match self.mode {
            HintMode::Absent => return None,
            HintMode::Perfect => {}
            HintMode::Noisy {
                duration_sigma,
                miss_probability,
                delay_jitter_ms,
            } => {
                // Three draws per event whatever the outcome, so one
                // event's fate does not shift the next one's draws.
                let miss: f64 = self.rng.random();
                let z: f64 = StandardNormal.sample(&mut self.rng);
                let jitter: f64 = self.rng.random();
                if miss < miss_probability {
                    return None;
                }
                let factor = (duration_sigma * z).exp();
                // A huge factor saturates rather than overflowing Duration.
                let predicted = Duration::try_from_secs_f64(ev.duration.as_secs_f64() * factor)
                    .unwrap_or(Duration::MAX);
                hint.predicted_duration = Some(predicted);
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
}
