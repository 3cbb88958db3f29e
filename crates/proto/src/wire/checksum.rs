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
//!
//! The loop is compiled twice on x86-64: for the baseline target (SSE2,
//! which widens four words per two unpacks) and under
//! `#[target_feature(enable = "avx2")]` (`vpmovzxdq` widens four words per
//! instruction into 256-bit lanes). [`is_x86_feature_detected!`] picks one
//! at run time (a cached atomic load after the first call); both give the
//! same sum. Other architectures keep the portable loop.

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
    datagram_checksum_with(datagram, block_sum)
}

/// [`datagram_checksum`] with the block loop given.
#[inline(always)]
fn datagram_checksum_with(datagram: &[u8], block: impl Fn(&[u8]) -> u64 + Copy) -> u16 {
    let (head, tail) = datagram.split_at(datagram.len().min(6));
    let tail = tail.get(2..).unwrap_or(&[]);
    // `head` has an even length whenever `tail` is non-empty, so the words
    // of `tail` stay aligned as they are in the datagram.
    let sum = sum_blocks(head, 0, block);
    !finish(sum_blocks(tail, sum, block))
}

/// [`datagram_checksum`] of `datagram`, copying `datagram[range]` into
/// `dst` on the way (`dst.len()` must equal the range's): the receiver's
/// reassembly copy and the integrity check read those bytes once instead
/// of twice. The range is copied and summed a slice of [`FUSED_SLICE`]
/// bytes at a time, each slice summed right after it was copied, while it
/// is still in the L1 cache — the datagram itself is read from memory (or
/// the L2/L3 cache the kernel's copy left it in) once. The sum equals
/// [`datagram_checksum`]'s: a piece at an odd offset of the datagram is
/// summed as if at an even one and its folded sum byte-swapped (RFC 1071
/// §2(B)). `None` (nothing copied) when the range does not lie in the
/// datagram past the CHKSUM field or `dst` has another length.
/// O(len).
pub fn datagram_checksum_copying(
    datagram: &[u8],
    range: std::ops::Range<usize>,
    dst: &mut [std::mem::MaybeUninit<u8>],
) -> Option<u16> {
    let start = range.start;
    let end = range.end;
    if start < 8 || start > end || end > datagram.len() || dst.len() != end - start {
        return None;
    }
    count();
    let (head, rest) = datagram.split_at(6);
    let between = rest.get(2..start - 6)?;
    let copied = datagram.get(start..end)?;
    let after = datagram.get(end..)?;
    let mut sum = u64::from(fold(sum_blocks(head, 0, block_sum)));
    sum += u64::from(fold(sum_blocks(between, 0, block_sum)));
    let mut at = start;
    for (src, out) in copied.chunks(FUSED_SLICE).zip(dst.chunks_mut(FUSED_SLICE)) {
        let n = src.len().min(out.len());
        // SAFETY: `src` and `out` are both `n` bytes long or longer (the
        // same chunking of two slices of equal length) and cannot overlap
        // (`out` is borrowed mutably, `src` shared); `MaybeUninit<u8>` has
        // the layout of `u8`, and writing initialises those bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), out.as_mut_ptr().cast::<u8>(), n);
        }
        sum += at_offset(fold(block_sum(src)), at);
        at += src.len();
    }
    sum += at_offset(fold(sum_blocks(after, 0, block_sum)), end);
    Some(!finish(sum))
}

/// Bytes copied then summed at a time by [`datagram_checksum_copying`]:
/// small enough to stay in the L1 cache between the copy and the sum,
/// even (so every slice after the first starts at the parity of the one
/// before plus an even length), large enough that each call's overhead is
/// small.
pub const FUSED_SLICE: usize = 512;

/// A folded native-order sum of a piece that starts at byte `offset` of
/// the datagram, as the datagram's word alignment sees it: a piece at an
/// odd offset was summed with its words shifted by one byte, which swaps
/// the bytes of its folded sum (RFC 1071 §2(B), byte-order independence).
fn at_offset(folded: u16, offset: usize) -> u64 {
    if offset.is_multiple_of(2) {
        u64::from(folded)
    } else {
        u64::from(folded.swap_bytes())
    }
}

/// Benchmark hook for `benches/packet.rs` (the portable loop beside the
/// one chosen at run time); not part of the API.
#[doc(hidden)]
pub mod bench {
    /// [`super::datagram_checksum`] with the baseline target's loop,
    /// whatever the CPU. O(len).
    pub fn datagram_checksum_portable(datagram: &[u8]) -> u16 {
        super::datagram_checksum_with(datagram, super::block_sum_portable)
    }
}

/// Adds the native-order 16-bit words of `data` (an odd last byte padded
/// with zero) to the folded partial sum `sum` (< 2^16 + 2^16); returns a
/// partial sum below 2^17.
fn sum_native(data: &[u8], sum: u64) -> u64 {
    sum_blocks(data, sum, block_sum)
}

/// [`sum_native`] with the block loop given (the tests run each variant).
#[inline(always)]
fn sum_blocks(data: &[u8], mut sum: u64, block: impl Fn(&[u8]) -> u64) -> u64 {
    for b in data.chunks(BLOCK_BYTES) {
        sum = u64::from(fold(block(b) + sum));
    }
    sum
}

/// The unfolded sum of one block (at most [`BLOCK_BYTES`]) with the best
/// loop this CPU runs. O(len).
#[inline]
fn block_sum(block: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: `block_sum_avx2` only needs the CPU to execute AVX2
        // instructions, and the run-time check just above found that it
        // does. It reads `block` through safe slice methods only.
        return unsafe { block_sum_avx2(block) };
    }
    block_sum_portable(block)
}

/// [`block_words`] for the baseline target. O(len).
fn block_sum_portable(block: &[u8]) -> u64 {
    block_words(block)
}

/// [`block_words`] compiled with AVX2 enabled (the same loop, vectorized
/// on 256-bit lanes). O(len).
///
/// # Safety
///
/// The CPU must support AVX2 (`is_x86_feature_detected!("avx2")`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_sum_avx2(block: &[u8]) -> u64 {
    block_words(block)
}

/// The loop itself: native-order 32-bit words into a 64-bit accumulator
/// (a final 1–3 bytes as 16-bit words, an odd byte padded with zero).
/// Always inlined, so each caller above compiles it for its own target
/// features. At most [`BLOCK_BYTES`], so the sum stays below 2^48.
#[inline(always)]
fn block_words(block: &[u8]) -> u64 {
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
    acc
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

    /// The checksum of `data` with one block loop, as `internet_checksum`
    /// computes it.
    fn checksum_with(data: &[u8], block: impl Fn(&[u8]) -> u64) -> u16 {
        !finish(sum_blocks(data, 0, block))
    }

    /// A block loop, by name.
    type Variant = (&'static str, fn(&[u8]) -> u64);

    /// Each variant this CPU runs.
    fn variants() -> Vec<Variant> {
        #[allow(unused_mut)]
        let mut v: Vec<Variant> = vec![("portable", block_sum_portable), ("dispatched", block_sum)];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 was just detected on this CPU.
            v.push(("avx2", |b| unsafe { block_sum_avx2(b) }));
        }
        v
    }

    #[test]
    fn every_variant_equals_the_reference_on_carries_and_block_edges() {
        let ones = vec![0xffu8; 2 * BLOCK_BYTES + 7];
        for (name, f) in variants() {
            for len in [
                0,
                1,
                2,
                3,
                4,
                5,
                31,
                32,
                33,
                1_452,
                BLOCK_BYTES,
                BLOCK_BYTES + 3,
            ] {
                for offset in 0..4 {
                    let d = &ones[offset..offset + len];
                    assert_eq!(checksum_with(d, f), reference(d), "{name} len {len}");
                }
            }
        }
    }

    proptest::proptest! {
        /// Random data at random lengths and offsets (the slice's start
        /// alignment): every variant, and both public functions, agree
        /// with the word-by-word reference.
        #[test]
        fn variants_equal_the_reference(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4_200),
            offset in 0usize..64,
        ) {
            let d = &data[offset.min(data.len())..];
            let want = reference(d);
            for (name, f) in variants() {
                proptest::prop_assert_eq!(checksum_with(d, f), want, "{}", name);
            }
            proptest::prop_assert_eq!(internet_checksum(d), want);
            let mut zeroed = d.to_vec();
            zeroed.iter_mut().skip(6).take(2).for_each(|b| *b = 0);
            proptest::prop_assert_eq!(datagram_checksum(d), reference(&zeroed));
        }
    }

    /// [`datagram_checksum_copying`] with a fresh destination: the
    /// checksum and the bytes copied (`None`: refused).
    fn copying(d: &[u8], start: usize, end: usize) -> Option<(u16, Vec<u8>)> {
        let len = end.saturating_sub(start);
        let mut dst = vec![std::mem::MaybeUninit::new(0xa5u8); len];
        let c = datagram_checksum_copying(d, start..end, &mut dst)?;
        // SAFETY: every element was initialised above (and overwritten).
        let bytes = dst.iter().map(|b| unsafe { b.assume_init() }).collect();
        Some((c, bytes))
    }

    #[test]
    fn copying_checksum_refuses_ranges_outside_the_datagram_or_the_field() {
        let d = [0x11u8; 40];
        assert!(copying(&d, 7, 20).is_none(), "overlaps CHKSUM");
        assert!(copying(&d, 20, 41).is_none(), "past the end");
        let mut dst = vec![std::mem::MaybeUninit::new(0u8); 3];
        assert!(datagram_checksum_copying(&d, 8..10, &mut dst).is_none());
        assert_eq!(copying(&d, 40, 40), Some((datagram_checksum(&d), vec![])));
    }

    #[test]
    fn copying_checksum_on_carries_and_slice_edges() {
        let ones = vec![0xffu8; 3 * FUSED_SLICE + 64];
        for len in [9, 37, 38, 1_452, ones.len()] {
            let d = &ones[..len];
            for start in [8, 9, 36, 37, len.min(40)] {
                for end in [start, start + 1, len - 1, len] {
                    if end < start || end > len {
                        continue;
                    }
                    let (c, bytes) = copying(d, start, end).expect("valid range");
                    assert_eq!(c, datagram_checksum(d), "len {len} {start}..{end}");
                    assert_eq!(bytes, &d[start..end]);
                }
            }
        }
    }

    proptest::proptest! {
        /// Any datagram and any range past CHKSUM: the same checksum as
        /// [`datagram_checksum`], and the range's bytes copied.
        #[test]
        fn copying_checksum_equals_the_checksum_and_copies(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 8..4_200),
            a in 0usize..4_200,
            b in 0usize..4_200,
        ) {
            let len = data.len();
            let (start, end) = (8 + a % (len - 7), 8 + b % (len - 7));
            let (start, end) = (start.min(end), start.max(end));
            let (c, bytes) = copying(&data, start, end).expect("valid range");
            proptest::prop_assert_eq!(c, datagram_checksum(&data));
            proptest::prop_assert_eq!(&bytes[..], &data[start..end]);
        }

        /// Any range at all, any destination length: never a panic, and a
        /// result only for a valid range.
        #[test]
        fn copying_checksum_never_panics(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..100),
            start in 0usize..120,
            end in 0usize..120,
            dst_len in 0usize..120,
        ) {
            let mut dst = vec![std::mem::MaybeUninit::new(0u8); dst_len];
            let got = datagram_checksum_copying(&data, start..end, &mut dst);
            let valid = start >= 8 && start <= end && end <= data.len() && dst_len == end - start;
            proptest::prop_assert_eq!(got.is_some(), valid);
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
