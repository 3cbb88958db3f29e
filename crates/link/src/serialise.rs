//! Serialisation: how long `len` bytes occupy a wire of a given rate.

/// Time to put `len` bytes on a `rate_bps` wire, rounded up to whole
/// nanoseconds; 0 for an infinitely fast wire (`rate_bps == 0`), and
/// `u64::MAX` when the result does not fit. O(1).
pub fn serialisation_ns(len: u64, rate_bps: u64) -> u64 {
    if rate_bps == 0 {
        return 0;
    }
    let ns = (u128::from(len) * 8 * 1_000_000_000).div_ceil(u128::from(rate_bps));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_and_treats_zero_rate_as_infinite() {
        // 1500 B at 12 Mbit/s: exactly 1 ms.
        assert_eq!(serialisation_ns(1500, 12_000_000), 1_000_000);
        // 1 B at 3 bit/s: 8/3 s, rounded up.
        assert_eq!(serialisation_ns(1, 3), 2_666_666_667);
        assert_eq!(serialisation_ns(1500, 0), 0);
        assert_eq!(serialisation_ns(u64::MAX, 1), u64::MAX);
    }
}
