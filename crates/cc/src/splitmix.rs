//! SplitMix64's output function (Steele, Lea and Flood 2014), the
//! project's one copy. It lives in this, the lowest crate, so that the
//! controllers' own seeded draws (BBR's PROBE_BW phase) and every crate
//! above share it; `peregrine_proto::rng` builds its generator on it and
//! re-exports [`mix64`].

/// SplitMix64's increment, the odd integer nearest 2⁶⁴/φ.
pub const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output for state `z`: `z + γ` through Stafford's "mix13"
/// finaliser. A bijection on `u64`; a SplitMix64 generator in state `z`
/// returns `mix64(z)` and moves to `z + γ`. O(1).
pub const fn mix64(z: u64) -> u64 {
    let mut z = z.wrapping_add(GOLDEN_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
