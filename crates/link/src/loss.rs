//! Channel loss: Bernoulli and the project's one Gilbert–Elliott channel.
//!
//! [`GilbertElliott`] is the two-state bursty-loss model of every link:
//! the harness's pipes (`peregrine_proto::harness`, which re-exports it as
//! `peregrine_proto::loss::GilbertElliott`), the simulator's links through
//! [`LossModel`], hence the controller lab and the live emulator.

use crate::uniform::{chance, Uniform};

/// The Gilbert–Elliott two-state loss channel.
///
/// A Markov chain between a good and a bad state, moved once per
/// datagram that reaches the channel (first a state transition, then a
/// loss draw in the new state): from good to bad with probability `p_gb`,
/// from bad to good with `p_bg`; a datagram is lost with `loss_good` or
/// `loss_bad` by state. The mean burst (time in the bad state) is
/// `1 / p_bg` datagrams; with `loss_good = 0` and `loss_bad = 1` the mean
/// loss rate is `p_gb / (p_gb + p_bg)`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct GilbertElliott {
    /// Probability of moving from the good to the bad state, per datagram.
    pub p_gb: f64,
    /// Probability of moving from the bad to the good state, per datagram.
    pub p_bg: f64,
    /// Loss probability in the good state.
    pub loss_good: f64,
    /// Loss probability in the bad state.
    pub loss_bad: f64,
}

impl Default for GilbertElliott {
    /// Never enters the bad state (`p_gb = 0`); if put there, leaves it at
    /// once (`p_bg = 1`) and loses everything while in it (`loss_bad = 1`).
    fn default() -> Self {
        GilbertElliott {
            p_gb: 0.0,
            p_bg: 1.0,
            loss_good: 0.0,
            loss_bad: 1.0,
        }
    }
}

impl GilbertElliott {
    /// One datagram through the channel: moves the state `bad` (one
    /// uniform draw), then decides the loss in the new state (a second
    /// draw, skipped when that state's loss probability is 0). `uniform`
    /// returns values uniform on `[0, 1)`. O(1).
    pub fn lose(&self, bad: &mut bool, mut uniform: impl FnMut() -> f64) -> bool {
        let u = uniform();
        if *bad {
            if u < self.p_bg {
                *bad = false;
            }
        } else if u < self.p_gb {
            *bad = true;
        }
        let p = if *bad { self.loss_bad } else { self.loss_good };
        p > 0.0 && uniform() < p
    }
}

/// A channel-loss model, validated.
#[derive(Clone, Debug, PartialEq)]
pub enum LossSpec {
    /// No loss.
    None,
    /// Independent loss with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
        /// Spare non-DATA packets.
        data_only: bool,
    },
    /// Bursty loss ([`GilbertElliott`]).
    GilbertElliott {
        /// Good → bad transition probability.
        p_gb: f64,
        /// Bad → good transition probability.
        p_bg: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
        /// Spare non-DATA packets.
        data_only: bool,
    },
}

/// A [`LossSpec`] with its state and its own random source.
#[derive(Debug)]
pub struct LossModel<U> {
    spec: LossSpec,
    bad: bool,
    uniform: U,
}

impl<U: Uniform> LossModel<U> {
    /// A model drawing from `uniform`.
    pub fn new(spec: LossSpec, uniform: U) -> LossModel<U> {
        LossModel {
            spec,
            bad: false,
            uniform,
        }
    }

    /// The model.
    pub fn spec(&self) -> &LossSpec {
        &self.spec
    }

    /// Whether the channel loses this packet (`is_data`: an SLTP DATA
    /// packet; `data_only` models spare the others without a draw). O(1).
    pub fn lose(&mut self, is_data: bool) -> bool {
        match self.spec {
            LossSpec::None => false,
            LossSpec::Bernoulli { p, data_only } => {
                if data_only && !is_data {
                    return false;
                }
                chance(&mut self.uniform, p)
            }
            LossSpec::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
                data_only,
            } => {
                if data_only && !is_data {
                    return false;
                }
                let ge = GilbertElliott {
                    p_gb,
                    p_bg,
                    loss_good,
                    loss_bad,
                };
                let u = &mut self.uniform;
                ge.lose(&mut self.bad, || u.unit_f64())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uniform::SplitMix;

    #[test]
    fn bursts_last_one_over_p_bg_and_the_rate_matches() {
        let ge = GilbertElliott {
            p_gb: 0.02,
            p_bg: 0.25,
            ..GilbertElliott::default()
        };
        let (mut bad, mut u) = (false, SplitMix(7));
        let lost: Vec<bool> = (0..200_000)
            .map(|_| ge.lose(&mut bad, || u.unit_f64()))
            .collect();
        let rate = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
        let expected = 0.02 / (0.02 + 0.25);
        assert!((rate - expected).abs() < 0.01, "rate {rate}");
        let bursts = lost.windows(2).filter(|w| w[0] && !w[1]).count();
        let mean = lost.iter().filter(|&&l| l).count() as f64 / bursts as f64;
        assert!((mean - 4.0).abs() < 0.4, "mean burst {mean}");
    }

    #[test]
    fn draws_one_uniform_in_a_loss_free_state_and_two_otherwise() {
        let ge = GilbertElliott::default();
        let mut draws = 0;
        let mut bad = false;
        assert!(!ge.lose(&mut bad, || {
            draws += 1;
            0.5
        }));
        assert_eq!(draws, 1);
        let always = GilbertElliott {
            p_gb: 1.0,
            ..GilbertElliott::default()
        };
        draws = 0;
        assert!(always.lose(&mut bad, || {
            draws += 1;
            0.5
        }));
        assert!(bad);
        assert_eq!(draws, 2);
    }

    #[test]
    fn bernoulli_rate_is_close_to_p_and_data_only_spares_control() {
        let spec = LossSpec::Bernoulli {
            p: 0.05,
            data_only: true,
        };
        let mut m = LossModel::new(spec, SplitMix(3));
        let lost = (0..40_000).filter(|_| m.lose(true)).count();
        assert!((lost as f64 / 40_000.0 - 0.05).abs() < 0.005);
        assert!((0..1000).all(|_| !m.lose(false)));
    }
}
