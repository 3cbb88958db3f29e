//! The random source a link draws from, handed in by its caller.
//!
//! Every draw of the crate goes through [`Uniform`]. Its provided methods
//! derive each kind of draw from [`Uniform::next_u64`]; a caller that
//! already draws from a `rand` generator uses [`RandSource`] (feature
//! `rand`), whose methods are `rand`'s own, so a link built on this crate
//! makes, bit for bit, the draws the caller's code made before.

/// A source of uniform random numbers.
pub trait Uniform {
    /// 64 uniform bits.
    fn next_u64(&mut self) -> u64;

    /// Uniform on `[0, 1)`: the top 53 bits of [`next_u64`](Self::next_u64).
    fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform on `[lo, hi]` (`lo ≤ hi`), by Lemire's multiply-and-reject.
    fn u64_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        let span = hi.wrapping_sub(lo).wrapping_add(1);
        if span == 0 {
            return self.next_u64();
        }
        let zone = span.wrapping_neg() % span;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(span);
            if (m as u64) >= zone {
                return lo + (m >> 64) as u64;
            }
        }
    }

    /// Uniform on `[lo, hi]` (`lo ≤ hi`), for indices.
    fn usize_inclusive(&mut self, lo: usize, hi: usize) -> usize {
        self.u64_inclusive(lo as u64, hi as u64) as usize
    }

    /// A fair coin.
    fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// A standard normal variate (Box–Muller).
    fn standard_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit_f64(); // (0, 1]: ln is finite
        let u2 = self.unit_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// True with probability `p`; no draw is made when the outcome is
/// certain (`p ≤ 0` or `p ≥ 1`), so a knob at 0 or 1 leaves its stream
/// untouched. O(1).
pub fn chance(u: &mut impl Uniform, p: f64) -> bool {
    if p <= 0.0 {
        false
    } else if p >= 1.0 {
        true
    } else {
        u.unit_f64() < p
    }
}

/// SplitMix64 as a [`Uniform`] source: the core's mixer
/// ([`peregrine_cc::splitmix`]), for callers and tests without `rand`.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl Uniform for SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(peregrine_cc::splitmix::GOLDEN_GAMMA);
        peregrine_cc::splitmix::mix64(self.0)
    }
}

/// A `rand` generator as a [`Uniform`] source: every method is `rand`'s
/// own draw (`random::<f64>()`, `random_range`, `random::<bool>()`,
/// `rand_distr::StandardNormal`).
#[cfg(feature = "rand")]
#[derive(Clone, Debug)]
pub struct RandSource<R>(pub R);

#[cfg(feature = "rand")]
impl<R: rand::Rng> Uniform for RandSource<R> {
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn unit_f64(&mut self) -> f64 {
        rand::RngExt::random::<f64>(&mut self.0)
    }
    fn u64_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        rand::RngExt::random_range(&mut self.0, lo..=hi)
    }
    fn usize_inclusive(&mut self, lo: usize, hi: usize) -> usize {
        // rand samples a usize range its own (portable) way: keep it.
        rand::RngExt::random_range(&mut self.0, lo..=hi)
    }
    fn coin(&mut self) -> bool {
        rand::RngExt::random::<bool>(&mut self.0)
    }
    fn standard_normal(&mut self) -> f64 {
        rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provided_draws_stay_in_range_and_are_balanced() {
        let mut u = SplitMix(7);
        let mut sum = 0.0;
        for _ in 0..10_000 {
            let x = u.unit_f64();
            assert!((0.0..1.0).contains(&x));
            sum += x;
            let k = u.u64_inclusive(3, 5);
            assert!((3..=5).contains(&k));
        }
        assert!((sum / 10_000.0 - 0.5).abs() < 0.02);
        let n: Vec<f64> = (0..20_000).map(|_| u.standard_normal()).collect();
        let mean = n.iter().sum::<f64>() / n.len() as f64;
        let var = n.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n.len() as f64;
        assert!(
            mean.abs() < 0.03 && (var - 1.0).abs() < 0.05,
            "{mean} {var}"
        );
    }

    #[test]
    fn chance_draws_nothing_when_certain() {
        let mut a = SplitMix(1);
        assert!(!chance(&mut a, 0.0));
        assert!(chance(&mut a, 1.0));
        assert_eq!(a.0, 1, "no draw was made");
        assert!(chance(&mut a, 0.999_999_9) || a.0 != 1);
    }
}
