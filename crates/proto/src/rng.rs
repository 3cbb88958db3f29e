//! Peregrine's one seeded-randomness toolkit: the SplitMix64 generator, its
//! mixer, and the one derivation of a component's stream from a run seed.
//!
//! Everything random in the project derives from here, so a run is a pure
//! function of its seed:
//!
//! * [`SeededRng`] — SplitMix64 (Steele, Lea and Flood 2014): 64 bits of
//!   state, every seed valid. The core's own generator (SYNC_NO, local
//!   connection ids, probe ids — none of them secret in this version), and
//!   the controller lab's random-loss source.
//! * [`mix64`] — the SplitMix64 output function as a pure map: the value
//!   a generator in state `z` returns next. Random-access draws (the
//!   simulator's shadowing at a given link and time) hash their key with it.
//! * [`stream_seed`] — **the** derivation `(run seed, component name) →
//!   stream seed`. A component (a link direction, a node's mobility, a
//!   channel, a pipe of the test harness) names itself with a stable
//!   string (`"link/0/up/loss"`, `"mobility/node3"`) and gets a stream
//!   that depends only on (seed, name): adding, removing or reordering
//!   other components never changes its draws.
//! * [`stream_key`] — the stream seed spread into a 256-bit key by
//!   [`SeededRng`], for keyed generators (the simulator's ChaCha12
//!   `peregrine_sim::rng::component_rng`).
//!
//! No dependency: the core stays small and sans-IO.

// SplitMix64's increment and output function live in the lowest crate
// (`peregrine_cc::splitmix`, which BBR draws from too); one copy.
pub use peregrine_cc::splitmix::mix64;
use peregrine_cc::splitmix::GOLDEN_GAMMA;

/// FNV-1a's 64-bit offset basis and prime.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a (64 bit) of `bytes` continued from `basis`: a fixed,
/// platform-independent hash (std's hashers are randomly keyed or
/// unspecified across versions). O(len).
fn fnv1a64_from(basis: u64, bytes: &[u8]) -> u64 {
    let mut h = basis;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The seed of component `name`'s stream in a run seeded `seed`: the
/// run seed XOR the FNV-1a hash of the name rotated by 17 bits. Feed it
/// to [`SeededRng::new`] (or [`stream_key`] for a keyed generator); the
/// SplitMix64 output function then spreads it, so nearby seeds and
/// similar names give unrelated streams. O(len(name)).
///
/// This is the project's one `(seed, name)` derivation (the simulator's
/// since its first version); a change here changes every recorded run.
/// The name must be stable across runs: never an address in memory or a
/// hash map's iteration order.
pub fn stream_seed(seed: u64, name: &str) -> u64 {
    seed ^ fnv1a64_from(FNV_OFFSET, name.as_bytes()).rotate_left(17)
}

/// A 256-bit key for component `name` in a run seeded `seed`: the first
/// four outputs of `SeededRng::new(stream_seed(seed, name))`, each little
/// endian. For keyed generators (ChaCha). O(len(name)).
pub fn stream_key(seed: u64, name: &str) -> [u8; 32] {
    let mut rng = SeededRng::new(stream_seed(seed, name));
    let mut key = [0u8; 32];
    for chunk in key.chunks_exact_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    key
}

/// SplitMix64 (Steele, Lea and Flood 2014): 64 bits of state, every seed valid.
#[derive(Clone, Debug)]
pub struct SeededRng {
    state: u64,
}

impl SeededRng {
    /// A generator whose whole future output is fixed by `seed`.
    pub fn new(seed: u64) -> SeededRng {
        SeededRng { state: seed }
    }

    /// The next 64 random bits. O(1).
    pub fn next_u64(&mut self) -> u64 {
        let out = mix64(self.state);
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        out
    }

    /// A uniform draw in `[0, 1)` from the top 53 bits of [`next_u64`]
    /// (`(x >> 11) · 2⁻⁵³`, the same value `rand`'s `StandardUniform`
    /// gives for `f64`). O(1).
    ///
    /// [`next_u64`]: SeededRng::next_u64
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A fresh generator for a sub-component of a live stream: the next
    /// output of this one is the FNV-1a basis for `name`. Unlike
    /// [`stream_seed`] it consumes a draw, so forks depend on their order;
    /// the endpoint forks its fixed set of sub-generators once, in a fixed
    /// order, at creation. O(len(name)).
    pub fn fork(&mut self, name: &str) -> SeededRng {
        SeededRng::new(fnv1a64_from(self.next_u64(), name.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = SeededRng::new(7);
        let mut b = SeededRng::new(7);
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(SeededRng::new(8).next_u64(), xs[0]);
    }

    #[test]
    fn splitmix64_matches_the_reference_output() {
        // The reference implementation (Vigna's splitmix64.c) seeded with
        // 1234567: its first three outputs.
        let mut r = SeededRng::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
        assert_eq!(r.next_u64(), 9_817_491_932_198_370_423);
        assert_eq!(mix64(1_234_567), 6_457_827_717_110_365_317);
    }

    #[test]
    fn next_f64_is_the_top_53_bits() {
        let mut a = SeededRng::new(3);
        let mut b = SeededRng::new(3);
        for _ in 0..100 {
            let x = a.next_f64();
            assert!((0.0..1.0).contains(&x));
            assert_eq!(x, (b.next_u64() >> 11) as f64 * (0.5f64).powi(53));
        }
    }

    #[test]
    fn streams_depend_on_seed_and_name_only() {
        let k = stream_key(7, "link/0/up");
        assert_eq!(k, stream_key(7, "link/0/up"));
        assert_ne!(k, stream_key(7, "link/0/down"));
        assert_ne!(k, stream_key(8, "link/0/up"));
        // Pinned: a change here changes every simulation result.
        assert_eq!(stream_seed(1, "pin"), 0xec32_acc0_16a8_ef5f);
    }

    #[test]
    fn fork_is_the_fnv_walk_from_the_next_output() {
        let mut a = SeededRng::new(5);
        let first = SeededRng::new(5).next_u64();
        let mut h = first;
        for b in "path".bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        assert_eq!(a.fork("path").next_u64(), SeededRng::new(h).next_u64());
    }
}
