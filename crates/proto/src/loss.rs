//! # The one Gilbert–Elliott loss channel
//!
//! The two-state bursty-loss model of the project, used by the harness's
//! pipes ([`crate::harness`]), the simulator's links
//! (`peregrine_sim::world::loss::LossModel`) and through them the
//! controller lab and the live emulator (`peregrine emu`). It lives here,
//! in the lowest crate that needs it, with no random-number dependency:
//! the caller hands in its own uniform source, so each user keeps its own
//! seeded generator (ChaCha streams in the harness and the simulator,
//! SplitMix64 in the controller lab).

/// The Gilbert–Elliott two-state loss channel.
///
/// The channel is in the good or the bad state; before each datagram it
/// moves good → bad with probability `p_gb` and bad → good with
/// probability `p_bg`, then the datagram is lost with the loss probability
/// of the state it is in. It starts in the good state. The bad state lasts
/// `1 / p_bg` datagrams on average, and with `loss_bad = 1`,
/// `loss_good = 0` that is the mean loss-burst length; the long-run loss
/// rate is `(p_gb·loss_bad + p_bg·loss_good) / (p_gb + p_bg)`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(
    feature = "harness",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct GilbertElliott {
    /// Probability of moving from good to bad, per datagram.
    pub p_gb: f64,
    /// Probability of moving from bad to good, per datagram.
    pub p_bg: f64,
    /// Loss probability in the good state (default 0).
    pub loss_good: f64,
    /// Loss probability in the bad state (default 1).
    pub loss_bad: f64,
}

impl Default for GilbertElliott {
    /// Never enters the bad state until configured; a bad state loses all.
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
    /// Whether the next datagram is lost, moving the channel state `bad`
    /// first. `uniform` draws from `[0, 1)`: one draw for the state
    /// transition, then one for the loss when the state's loss
    /// probability is above zero (so a loss-free state costs one draw).
    /// O(1).
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A SplitMix64 in [0, 1): enough for a statistical check.
    fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut s = seed;
        move || {
            s = s.wrapping_add(peregrine_cc::splitmix::GOLDEN_GAMMA);
            (crate::rng::mix64(s) >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    #[test]
    fn bursts_last_one_over_p_bg_and_the_rate_matches() {
        let ge = GilbertElliott {
            p_gb: 0.02,
            p_bg: 0.25,
            ..GilbertElliott::default()
        };
        let (mut bad, mut u) = (false, uniform(7));
        let lost: Vec<bool> = (0..200_000).map(|_| ge.lose(&mut bad, &mut u)).collect();
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
}
