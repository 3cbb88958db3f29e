//! The one channel-loss module of every link kind: Bernoulli and
//! Gilbert-Elliott — the link crate's models ([`peregrine_link::loss`],
//! which the harness's pipes use too) — each drawing from its own seeded
//! generator, optionally sparing non-DATA packets; and the scenario's
//! `loss = { … }` table ([`LossConfig`]).
//!
//! Point-to-point and trace links draw from a ChaCha12 stream named
//! `link/<name>/<dir>/loss` ([`component_rng`](crate::rng::component_rng));
//! the controller lab (`cclab`) draws its random loss from the core's
//! SplitMix64 ([`SplitMix64`](crate::rng::SplitMix64)) — hence the
//! generator parameter.

use crate::rng::SimRng;
use peregrine_link::uniform::RandSource;
use rand::Rng;
use serde::Deserialize;

/// A loss model.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LossConfig {
    /// `none`, `bernoulli` or `gilbert_elliott`.
    pub model: String,
    /// Bernoulli: loss probability per packet.
    #[serde(default)]
    pub p: Option<f64>,
    /// Gilbert-Elliott: P(good → bad) per packet.
    #[serde(default)]
    pub p_gb: Option<f64>,
    /// Gilbert-Elliott: P(bad → good) per packet.
    #[serde(default)]
    pub p_bg: Option<f64>,
    /// Gilbert-Elliott: loss probability in the good state (default 0).
    #[serde(default)]
    pub loss_good: Option<f64>,
    /// Gilbert-Elliott: loss probability in the bad state (default 1).
    #[serde(default)]
    pub loss_bad: Option<f64>,
    /// Only DATA packets can be lost (ACKs and control always pass).
    #[serde(default)]
    pub data_only: bool,
}

impl LossConfig {
    /// Bernoulli loss: each packet lost with probability `p`. O(1).
    pub fn bernoulli(p: f64) -> LossConfig {
        LossConfig {
            model: "bernoulli".to_string(),
            p: Some(p),
            p_gb: None,
            p_bg: None,
            loss_good: None,
            loss_bad: None,
            data_only: false,
        }
    }
}

/// A validated loss model: the link crate's ([`peregrine_link::loss::LossSpec`]).
pub use peregrine_link::loss::LossSpec;

/// A loss model with its state, drawing from a generator of type `R`: the
/// link crate's [`LossModel`](peregrine_link::loss::LossModel) fed by the
/// `rand` generator through [`RandSource`] (the same draws as before the
/// model moved there).
#[derive(Debug)]
pub struct LossModel<R = SimRng>(peregrine_link::loss::LossModel<RandSource<R>>);

impl<R: Rng> LossModel<R> {
    /// A model drawing from `rng`.
    pub fn new(spec: LossSpec, rng: R) -> LossModel<R> {
        LossModel(peregrine_link::loss::LossModel::new(spec, RandSource(rng)))
    }

    /// Whether the channel loses this packet (`is_data`: an SLTP DATA
    /// packet, which `data_only` models alone may lose). O(1).
    pub fn lose(&mut self, is_data: bool) -> bool {
        self.0.lose(is_data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::component_rng;

    #[test]
    fn bernoulli_rate_is_close_to_p() {
        let mut m = LossModel::new(
            LossSpec::Bernoulli {
                p: 0.05,
                data_only: false,
            },
            component_rng(1, "t"),
        );
        let lost = (0..40_000).filter(|_| m.lose(true)).count();
        let rate = lost as f64 / 40_000.0;
        assert!((rate - 0.05).abs() < 0.005, "rate {rate}");
    }

    #[test]
    fn data_only_spares_control_packets() {
        let mut m = LossModel::new(
            LossSpec::Bernoulli {
                p: 1.0,
                data_only: true,
            },
            component_rng(1, "t"),
        );
        assert!(!m.lose(false));
        assert!(m.lose(true));
    }

    #[test]
    fn gilbert_elliott_has_bursts_of_the_expected_mean_length() {
        let mut m = LossModel::new(
            LossSpec::GilbertElliott {
                p_gb: 0.01,
                p_bg: 0.25,
                loss_good: 0.0,
                loss_bad: 1.0,
                data_only: false,
            },
            component_rng(2, "ge"),
        );
        let seq: Vec<bool> = (0..200_000).map(|_| m.lose(true)).collect();
        let mut bursts = Vec::new();
        let mut run = 0;
        for l in seq {
            if l {
                run += 1;
            } else if run > 0 {
                bursts.push(run);
                run = 0;
            }
        }
        let mean = bursts.iter().sum::<usize>() as f64 / bursts.len() as f64;
        // Mean sojourn in the bad state is 1 / p_bg = 4 packets.
        assert!((mean - 4.0).abs() < 0.4, "mean burst {mean}");
    }
}
