//! What one pipe does to the datagrams it carries: [`PipeConfig`].
//!
//! Every knob defaults to "off", so `PipeConfig::default()` (and an empty
//! table in a scenario file) is a perfect pipe: infinite rate, no delay, no
//! loss, delivered at the instant it is sent. Times are whole microseconds
//! (`*_us`), rates bits per second (`*_bps`), sizes bytes (`*_bytes`),
//! probabilities plain fractions in `[0, 1]`. Serde reads every field with
//! its default when absent and rejects unknown fields, so a typo fails
//! loudly instead of silently giving a perfect link; call
//! [`PipeConfig::validate`] after reading (the harness does).

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A rejected [`PipeConfig`]: which field, and why.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invalid pipe config: `{field}` {reason}")]
pub struct ConfigError {
    /// Path of the offending field, as written in a scenario file
    /// (`"loss"`, `"gilbert_elliott.p_bg"`, `"outages[1].end_us"`).
    pub field: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// One direction of a link: rate, delay, queue and impairments.
///
/// The order in which a datagram meets them is documented on
/// [`Pipe`](super::Pipe).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PipeConfig {
    /// Serialisation rate, bits per second; 0 means infinite (a datagram
    /// takes no time to put on the wire, and the queue never builds).
    pub rate_bps: u64,
    /// One-way propagation delay added to every datagram, µs.
    pub delay_us: u64,
    /// Extra random delay per datagram on top of `delay_us`.
    pub jitter: Jitter,
    /// May jitter reorder datagrams? `false` (default): a datagram is never
    /// delivered before one sent earlier — jitter then behaves like a
    /// varying queue, as on a serial link. `true`: each datagram's delay is
    /// drawn independently, so a later one can overtake an earlier one.
    pub jitter_reorders: bool,
    /// Deliberate reordering, independent of jitter: a fraction of
    /// datagrams is held back so that later ones overtake them.
    pub reorder: Option<Reorder>,
    /// Drop-tail queue limit, bytes waiting for or in serialisation;
    /// `None` (default) is unbounded. Only meaningful with a finite
    /// `rate_bps`: at infinite rate nothing ever waits.
    pub queue_limit_bytes: Option<u64>,
    /// Independent (Bernoulli) loss probability per datagram.
    pub loss: f64,
    /// Bursty loss: a two-state Gilbert-Elliott channel, applied in
    /// addition to `loss`.
    pub gilbert_elliott: Option<GilbertElliott>,
    /// Probability that a datagram is delivered twice.
    pub duplicate: f64,
    /// Bit corruption of delivered datagrams.
    pub corruption: Option<Corruption>,
    /// Scheduled outages: `[start_us, end_us)` windows (µs since the
    /// epoch) during which the link drops everything.
    pub outages: Vec<Outage>,
    /// A repeating outage, in addition to `outages`.
    pub periodic_outage: Option<PeriodicOutage>,
}

/// Random extra delay on top of the propagation delay. Never negative: the
/// propagation delay is the floor, jitter models waiting (queues, MAC
/// retries), which only adds.
///
/// In a scenario file: `jitter = { kind = "uniform", max_us = 5000 }`.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Jitter {
    /// No jitter (default).
    #[default]
    None,
    /// Uniform on `[0, max_us]` µs.
    Uniform {
        /// Largest extra delay, µs.
        max_us: u64,
    },
    /// Normal with the given mean and standard deviation, µs, clamped at
    /// zero (a negative draw adds nothing).
    Normal {
        /// Mean extra delay, µs.
        mean_us: f64,
        /// Standard deviation, µs.
        std_dev_us: f64,
    },
}

/// Hold a fraction of datagrams back so that later ones overtake them.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Reorder {
    /// Probability that a datagram is held back.
    pub probability: f64,
    /// How long it is held back, µs, on top of its normal delay. Datagrams
    /// sent within this time after it arrive before it.
    pub extra_delay_us: u64,
}

/// The Gilbert-Elliott two-state loss channel: the project's one model
/// ([`peregrine_link::loss`]), shared with the simulator's links.
pub use crate::loss::GilbertElliott;

/// Bit errors in datagrams that are delivered.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Corruption {
    /// Probability that a datagram is corrupted.
    pub probability: f64,
    /// Which bits a corrupted datagram gets flipped.
    pub pattern: CorruptionPattern,
}

/// How a corrupted datagram is damaged: the link crate's one corruption
/// model ([`peregrine_link::impair::CorruptionPattern`]).
///
/// In a scenario file: `pattern = { kind = "burst", max_len_bits = 15 }`.
pub use peregrine_link::impair::CorruptionPattern;

/// A scheduled outage: the link is down on `[start_us, end_us)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Outage {
    /// First instant of the outage, µs since the epoch.
    pub start_us: u64,
    /// First instant after it, µs since the epoch; greater than `start_us`.
    pub end_us: u64,
}

/// A repeating outage: down on `[first_start_us + n·period_us,
/// first_start_us + n·period_us + duration_us)` for every `n ≥ 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PeriodicOutage {
    /// Start of the first outage, µs since the epoch.
    pub first_start_us: u64,
    /// Time between outage starts, µs; greater than zero.
    pub period_us: u64,
    /// Length of each outage, µs; at most `period_us`.
    pub duration_us: u64,
}

impl PipeConfig {
    /// A perfect pipe: the same as `PipeConfig::default()`.
    pub fn perfect() -> Self {
        PipeConfig::default()
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        probability("loss", self.loss)?;
        probability("duplicate", self.duplicate)?;
        if let Jitter::Normal {
            mean_us,
            std_dev_us,
        } = self.jitter
        {
            non_negative("jitter.mean_us", mean_us)?;
            non_negative("jitter.std_dev_us", std_dev_us)?;
        }
        if let Some(r) = &self.reorder {
            probability("reorder.probability", r.probability)?;
        }
        if let Some(ge) = &self.gilbert_elliott {
            probability("gilbert_elliott.p_gb", ge.p_gb)?;
            probability("gilbert_elliott.p_bg", ge.p_bg)?;
            probability("gilbert_elliott.loss_good", ge.loss_good)?;
            probability("gilbert_elliott.loss_bad", ge.loss_bad)?;
        }
        if let Some(c) = &self.corruption {
            probability("corruption.probability", c.probability)?;
            match c.pattern {
                CorruptionPattern::Bits { count: 0 } => {
                    return Err(bad("corruption.pattern.count", "must be at least 1"))
                }
                CorruptionPattern::Burst { max_len_bits: 0 } => {
                    return Err(bad("corruption.pattern.max_len_bits", "must be at least 1"))
                }
                _ => {}
            }
        }
        for (i, o) in self.outages.iter().enumerate() {
            if o.end_us <= o.start_us {
                return Err(ConfigError {
                    field: format!("outages[{i}].end_us"),
                    reason: "must be greater than start_us",
                });
            }
        }
        if let Some(p) = &self.periodic_outage {
            if p.period_us == 0 {
                return Err(bad("periodic_outage.period_us", "must be greater than 0"));
            }
            if p.duration_us > p.period_us {
                return Err(bad(
                    "periodic_outage.duration_us",
                    "must not exceed period_us",
                ));
            }
        }
        Ok(())
    }
}

fn bad(field: &str, reason: &'static str) -> ConfigError {
    ConfigError {
        field: field.to_owned(),
        reason,
    }
}

fn probability(field: &str, p: f64) -> Result<(), ConfigError> {
    if !p.is_finite() {
        Err(bad(field, "must be finite"))
    } else if !(0.0..=1.0).contains(&p) {
        Err(bad(field, "must be a probability in [0, 1]"))
    } else {
        Ok(())
    }
}

fn non_negative(field: &str, x: f64) -> Result<(), ConfigError> {
    if !x.is_finite() {
        Err(bad(field, "must be finite"))
    } else if x < 0.0 {
        Err(bad(field, "must not be negative"))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(cfg: &PipeConfig) -> String {
        cfg.validate().expect_err("should be rejected").field
    }

    #[test]
    fn default_is_perfect_and_valid() {
        let c = PipeConfig::default();
        assert_eq!(c, PipeConfig::perfect());
        assert_eq!(c.rate_bps, 0);
        assert_eq!(c.delay_us, 0);
        assert_eq!(c.loss, 0.0);
        assert_eq!(c.jitter, Jitter::None);
        assert!(c.outages.is_empty() && c.periodic_outage.is_none());
        c.validate().unwrap();
    }

    #[test]
    fn probabilities_must_be_finite_and_in_unit_interval() {
        for bad_p in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
            let c = PipeConfig {
                loss: bad_p,
                ..Default::default()
            };
            assert_eq!(field_of(&c), "loss");
            let c = PipeConfig {
                duplicate: bad_p,
                ..Default::default()
            };
            assert_eq!(field_of(&c), "duplicate");
            let c = PipeConfig {
                gilbert_elliott: Some(GilbertElliott {
                    p_bg: bad_p,
                    ..Default::default()
                }),
                ..Default::default()
            };
            assert_eq!(field_of(&c), "gilbert_elliott.p_bg");
            let c = PipeConfig {
                reorder: Some(Reorder {
                    probability: bad_p,
                    extra_delay_us: 1,
                }),
                ..Default::default()
            };
            assert_eq!(field_of(&c), "reorder.probability");
            let c = PipeConfig {
                corruption: Some(Corruption {
                    probability: bad_p,
                    ..Default::default()
                }),
                ..Default::default()
            };
            assert_eq!(field_of(&c), "corruption.probability");
        }
        let nan = PipeConfig {
            loss: f64::NAN,
            ..Default::default()
        };
        assert_eq!(nan.validate().unwrap_err().reason, "must be finite");
    }

    #[test]
    fn other_fields_are_checked() {
        let c = PipeConfig {
            jitter: Jitter::Normal {
                mean_us: 10.0,
                std_dev_us: -1.0,
            },
            ..Default::default()
        };
        assert_eq!(field_of(&c), "jitter.std_dev_us");
        let c = PipeConfig {
            corruption: Some(Corruption {
                probability: 0.5,
                pattern: CorruptionPattern::Bits { count: 0 },
            }),
            ..Default::default()
        };
        assert_eq!(field_of(&c), "corruption.pattern.count");
        let c = PipeConfig {
            outages: vec![
                Outage {
                    start_us: 0,
                    end_us: 5,
                },
                Outage {
                    start_us: 9,
                    end_us: 9,
                },
            ],
            ..Default::default()
        };
        assert_eq!(field_of(&c), "outages[1].end_us");
        let c = PipeConfig {
            periodic_outage: Some(PeriodicOutage {
                first_start_us: 0,
                period_us: 10,
                duration_us: 11,
            }),
            ..Default::default()
        };
        assert_eq!(field_of(&c), "periodic_outage.duration_us");
        let msg = c.validate().unwrap_err().to_string();
        assert!(msg.contains("`periodic_outage.duration_us`"), "{msg}");
    }
}
