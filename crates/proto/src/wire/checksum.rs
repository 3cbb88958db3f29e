//! The Internet checksum (RFC 1071), as TCP uses it: the one's-complement
//! of the one's-complement sum of the data taken as big-endian 16-bit words,
//! an odd final byte padded with a zero byte.
//!
//! Fast form (RFC 1071 §2): the one's-complement sum does not depend on
//! byte order, so the words are summed in the machine's native order (no
//! byte swap per word) as 32-bit values into a 64-bit accumulator — a loop
//! the compiler vectorizes — and the folded 16-bit result is swapped once
//! at the end. Every piece summed starts at an even offset, so the 16-bit
//! word boundaries are those of the datagram. Only plain (unsealed)
//! datagrams are checksummed, once when encoded and once when decoded.

/// Bytes summed before the 64-bit accumulator is folded: 2^16 words of at
/// most 2^32 - 1 stay below 2^48, so the accumulator never overflows.
const BLOCK_BYTES: usize = 1 << 18;

// Checksums computed on this thread (unit tests count them: integrity
// once, docs/protocol.md §1).
#[cfg(test)]
thread_local! {
    static CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many checksums this thread has computed (unit tests only).
#[cfg(test)]
pub(crate) fn calls() -> u64 {
    CALLS.with(std::cell::Cell::get)
}

fn count() {
    #[cfg(test)]
    CALLS.with(|c| c.set(c.get() + 1));
}

/// The RFC 1071 checksum of `data`. O(len).
pub fn internet_checksum(data: &[u8]) -> u16 {
    count();
    !finish(sum_native(data, 0))
}

/// The checksum of a whole datagram, computed as if its CHKSUM field
/// (bytes 6–7) were zero, without copying the datagram. O(len).
pub fn datagram_checksum(datagram: &[u8]) -> u16 {
    count();
    let (head, tail) = datagram.split_at(datagram.len().min(6));
    let tail = tail.get(2..).unwrap_or(&[]);
    // `head` has an even length whenever `tail` is non-empty, so the words
    // of `tail` stay aligned as they are in the datagram.
    let sum = sum_native(head, 0);
    !finish(sum_native(tail, sum))
}

/// Adds the native-order 16-bit words of `data` (an odd last byte padded
/// with zero) to the folded partial sum `sum` (< 2^16 + 2^16); returns a
/// partial sum below 2^17.
fn sum_native(data: &[u8], mut sum: u64) -> u64 {
    for block in data.chunks(BLOCK_BYTES) {
        let mut words = block.chunks_exact(4);
        let mut acc = 0u64;
        for w in &mut words {
            acc += u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
        }
        match *words.remainder() {
            [a, b, c] => {
                acc += u64::from(u16::from_ne_bytes([a, b]));
                acc += u64::from(u16::from_ne_bytes([c, 0]));
            }
            [a, b] => acc += u64::from(u16::from_ne_bytes([a, b])),
            [a] => acc += u64::from(u16::from_ne_bytes([a, 0])),
            _ => {}
        }
        sum = u64::from(fold(acc + sum));
    }
    sum
}

/// Folds a native-order sum to 16 bits with end-around carry, then to
/// network order.
fn finish(sum: u64) -> u16 {
    u16::from_be(fold(sum))
}

fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-by-word RFC 1071 sum this module replaced: the oracle.
    fn reference(data: &[u8]) -> u16 {
        let mut sum = 0u64;
        let mut words = data.chunks_exact(2);
        for w in &mut words {
            sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [last] = words.remainder() {
            sum += u64::from(*last) << 8;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the sum of 0001 f203 f4f5 f6f7 is ddf2, checksum 220d.
        assert_eq!(
            internet_checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0x220d
        );
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(internet_checksum(&[0xab]), !0xab00);
        assert_eq!(internet_checksum(&[]), 0xffff);
    }

    #[test]
    fn fast_sum_equals_the_word_by_word_sum() {
        // Every length 0..=70 and a few large ones, all-ones data (the
        // carries) and a pseudo-random pattern.
        let mut x = 0x9e37_79b9_u32;
        let noise: Vec<u8> = (0..300_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let ones = vec![0xffu8; 300_000];
        for data in [&noise, &ones] {
            for len in (0..=70).chain([1_399, 1_400, 1_452, 65_535, 262_145, 300_000]) {
                let d = &data[..len];
                assert_eq!(internet_checksum(d), reference(d), "len {len}");
                let mut zeroed = d.to_vec();
                zeroed.iter_mut().skip(6).take(2).for_each(|b| *b = 0);
                assert_eq!(datagram_checksum(d), reference(&zeroed), "len {len}");
            }
        }
    }

    #[test]
    fn datagram_checksum_skips_the_field() {
        let mut d = [0x12u8; 23];
        d[6] = 0x55;
        d[7] = 0x66;
        let mut zeroed = d;
        zeroed[6] = 0;
        zeroed[7] = 0;
        assert_eq!(datagram_checksum(&d), internet_checksum(&zeroed));
        assert_eq!(datagram_checksum(&[1, 2, 3]), internet_checksum(&[1, 2, 3]));
    }
}
