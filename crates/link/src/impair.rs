//! Per-datagram impairments: delay jitter (and whether it may reorder),
//! netem-style reordering, corruption. Duplication is a
//! [`chance`](crate::uniform::chance) draw of its own stream.

use crate::uniform::Uniform;
use crate::Time;
use std::collections::BTreeSet;

/// Extra delay drawn per datagram, on top of propagation.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub enum Jitter {
    /// None.
    #[default]
    None,
    /// Uniform on `[0, max_ns]`.
    Uniform {
        /// Largest extra delay, ns.
        max_ns: u64,
    },
    /// Normal with mean and standard deviation in µs, clamped at zero (a
    /// negative draw adds nothing).
    Normal {
        /// Mean, µs.
        mean_us: f64,
        /// Standard deviation, µs.
        stdev_us: f64,
    },
    /// Pareto (heavy-tailed) with the given mean and standard deviation,
    /// µs: shape `α = 1 + √(1 + mean²/stdev²)` (> 2, so both are finite),
    /// scale `mean·(α−1)/α`; every draw is at least the scale.
    Pareto {
        /// Mean, µs.
        mean_us: f64,
        /// Standard deviation, µs (> 0).
        stdev_us: f64,
    },
}

impl Jitter {
    /// One draw, ns; `None` makes no draw. O(1).
    pub fn draw_ns(&self, u: &mut impl Uniform) -> u64 {
        let us = match *self {
            Jitter::None => return 0,
            Jitter::Uniform { max_ns } => return u.u64_inclusive(0, max_ns),
            Jitter::Normal { mean_us, stdev_us } => mean_us + stdev_us * u.standard_normal(),
            Jitter::Pareto { mean_us, stdev_us } => {
                if mean_us <= 0.0 {
                    return 0;
                }
                let (shape, scale) = pareto_shape_scale(mean_us, stdev_us);
                // Inverse CDF with 1 - u in (0, 1].
                scale / (1.0 - u.unit_f64()).powf(1.0 / shape)
            }
        };
        (us.max(0.0) * 1e3).round().min(u64::MAX as f64) as u64
    }
}

/// Pareto shape and scale for a mean and standard deviation (µs).
fn pareto_shape_scale(mean_us: f64, stdev_us: f64) -> (f64, f64) {
    let cv2 = (stdev_us / mean_us).powi(2);
    let shape = 1.0 + (1.0 + 1.0 / cv2.max(f64::MIN_POSITIVE)).sqrt();
    (shape, mean_us * (shape - 1.0) / shape)
}

/// Keeps arrivals in sending order when jitter must not reorder: a
/// datagram is never due before its predecessor (netem's behaviour with
/// a rate, and a FIFO link's).
#[derive(Copy, Clone, Debug, Default)]
pub struct InOrder {
    last_due: Time,
}

impl InOrder {
    /// The arrival time of a datagram computed as `due`: unchanged when
    /// `may_reorder`, else no earlier than the previous one's. O(1).
    pub fn due(&mut self, due: Time, may_reorder: bool) -> Time {
        if may_reorder {
            return due;
        }
        let due = due.max(self.last_due);
        self.last_due = due;
        due
    }
}

/// netem's `reorder p gap`: after every `gap − 1` datagrams delayed
/// normally, each further one is sent at once (without the link's delay
/// and jitter) with probability `p`, which restarts the count; `gap = 1`
/// makes every datagram a candidate. This is `sch_netem.c`'s
/// `q->counter < q->gap - 1 || q->reorder < random` test (correlation 0).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct NetemReorder {
    /// Probability that a candidate is sent at once.
    pub p: f64,
    /// Datagrams per reordering gap, ≥ 1.
    pub gap: u64,
    counter: u64,
}

impl NetemReorder {
    /// A reorderer (`gap` ≥ 1; 0 is taken as 1).
    pub fn new(p: f64, gap: u64) -> NetemReorder {
        NetemReorder {
            p,
            gap: gap.max(1),
            counter: 0,
        }
    }

    /// Whether this datagram skips the delay. Draws only for candidates.
    /// O(1).
    pub fn sends_now(&mut self, u: &mut impl Uniform) -> bool {
        if self.counter < self.gap - 1 || !crate::uniform::chance(u, self.p) {
            self.counter += 1;
            false
        } else {
            self.counter = 0;
            true
        }
    }
}

/// How a corrupted datagram is damaged.
///
/// In a scenario file: `pattern = { kind = "burst", max_len_bits = 15 }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)
)]
pub enum CorruptionPattern {
    /// Flip exactly `count` distinct bits chosen uniformly over the
    /// datagram (all of them if it is shorter than `count` bits).
    Bits {
        /// How many bits to flip, at least 1.
        count: u32,
    },
    /// A burst error: a span of `L` contiguous bits, `L` uniform on
    /// `[1, max_len_bits]` (capped at the datagram's length), placed
    /// uniformly; its first and last bits are flipped and each bit between
    /// them with probability ½ — the textbook burst of length `L`. The
    /// Internet checksum detects every burst of at most 15 bits.
    Burst {
        /// Longest burst, bits, at least 1.
        max_len_bits: u32,
    },
}

impl Default for CorruptionPattern {
    /// One flipped bit.
    fn default() -> Self {
        CorruptionPattern::Bits { count: 1 }
    }
}

fn flip(bytes: &mut [u8], bit: usize) {
    bytes[bit / 8] ^= 0x80 >> (bit % 8);
}

/// Flips bits of `bytes` as `pattern` says (nothing for an empty
/// datagram). O(bits flipped · log) for `Bits`, O(burst) for `Burst`.
pub fn corrupt(u: &mut impl Uniform, bytes: &mut [u8], pattern: CorruptionPattern) {
    let n_bits = bytes.len() * 8;
    if n_bits == 0 {
        return;
    }
    match pattern {
        CorruptionPattern::Bits { count } => {
            // Floyd's algorithm: `k` distinct positions in O(k log k).
            let k = (count as usize).min(n_bits);
            let mut chosen = BTreeSet::new();
            for j in n_bits - k..n_bits {
                let t = u.usize_inclusive(0, j);
                if !chosen.insert(t) {
                    chosen.insert(j);
                }
            }
            for bit in chosen {
                flip(bytes, bit);
            }
        }
        CorruptionPattern::Burst { max_len_bits } => {
            let len = u.usize_inclusive(1, (max_len_bits as usize).clamp(1, n_bits));
            let start = u.usize_inclusive(0, n_bits - len);
            flip(bytes, start);
            if len > 1 {
                flip(bytes, start + len - 1);
            }
            for bit in start + 1..start + len.saturating_sub(1) {
                if u.coin() {
                    flip(bytes, bit);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uniform::SplitMix;

    #[test]
    fn pareto_and_normal_jitter_have_their_mean() {
        let mut u = SplitMix(11);
        for j in [
            Jitter::Normal {
                mean_us: 5000.0,
                stdev_us: 1000.0,
            },
            Jitter::Pareto {
                mean_us: 5000.0,
                stdev_us: 2000.0,
            },
        ] {
            let n = 100_000;
            let mean = (0..n).map(|_| j.draw_ns(&mut u) as f64).sum::<f64>() / n as f64;
            assert!((mean / 5e6 - 1.0).abs() < 0.03, "{j:?}: mean {mean} ns");
        }
        assert_eq!(Jitter::None.draw_ns(&mut u), 0);
    }

    #[test]
    fn in_order_never_lets_a_datagram_overtake() {
        let mut o = InOrder::default();
        let t = Time::from_nanos;
        assert_eq!(o.due(t(50), false), t(50));
        assert_eq!(o.due(t(40), false), t(50));
        assert_eq!(o.due(t(30), true), t(30));
        assert_eq!(o.due(t(60), false), t(60));
    }

    #[test]
    fn netem_reorder_picks_candidates_after_each_gap() {
        // p = 1, gap 5: every 5th datagram goes at once.
        let mut r = NetemReorder::new(1.0, 5);
        let mut u = SplitMix(1);
        let now: Vec<bool> = (0..10).map(|_| r.sends_now(&mut u)).collect();
        assert_eq!(
            now,
            [false, false, false, false, true, false, false, false, false, true]
        );
        // gap 1: the rate of early sends is p.
        let mut r = NetemReorder::new(0.25, 1);
        let n = (0..40_000).filter(|_| r.sends_now(&mut u)).count();
        assert!((n as f64 / 40_000.0 - 0.25).abs() < 0.01);
    }

    #[test]
    fn corruption_flips_exactly_count_bits() {
        let mut u = SplitMix(5);
        let mut b = vec![0u8; 100];
        corrupt(&mut u, &mut b, CorruptionPattern::Bits { count: 7 });
        assert_eq!(b.iter().map(|x| x.count_ones()).sum::<u32>(), 7);
        let mut b = vec![0u8; 1];
        corrupt(&mut u, &mut b, CorruptionPattern::Bits { count: 70 });
        assert_eq!(b[0], 0xff);
    }
}
