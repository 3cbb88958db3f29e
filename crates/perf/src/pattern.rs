//! The deterministic byte stream of `perf client --bytes N` and its
//! check at the server.
//!
//! Byte `o` of the stream is byte `o mod 8` (little-endian) of
//! `mix64(⌊o / 8⌋)` (SplitMix64's output function,
//! `peregrine_proto::rng::mix64`): any chunk can be generated from its offset
//! alone (no state carried between messages), it costs a multiply-xorshift
//! per 8 bytes, and a shifted, dropped, duplicated or reordered block
//! fails the comparison (neighbouring words differ). Both sides also
//! hash the bytes with SHA-256, and the client compares the digests.

use peregrine_proto::rng::mix64;
use sha2::{Digest, Sha256};

/// Write the stream's bytes `[offset, offset + out.len())` into `out`.
/// O(len).
pub(super) fn fill(offset: u64, out: &mut [u8]) {
    let mut o = offset;
    let mut i = 0;
    while i < out.len() {
        let word = mix64(o >> 3).to_le_bytes();
        let start = (o & 7) as usize;
        let n = (8 - start).min(out.len() - i);
        out[i..i + n].copy_from_slice(&word[start..start + n]);
        i += n;
        o += n as u64;
    }
}

/// Lower-case hex of a digest.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The receiving side's check: every byte against the pattern at its
/// offset, and the SHA-256 of all of them.
pub(super) struct Verifier {
    expected_bytes: u64,
    offset: u64,
    mismatch_at: Option<u64>,
    hasher: Sha256,
    scratch: Vec<u8>,
}

impl Verifier {
    /// A check of a stream of `expected_bytes`.
    pub(super) fn new(expected_bytes: u64) -> Verifier {
        Verifier {
            expected_bytes,
            offset: 0,
            mismatch_at: None,
            hasher: Sha256::new(),
            scratch: Vec::new(),
        }
    }

    /// The next bytes, in stream order. O(len).
    pub(super) fn update(&mut self, data: &[u8]) {
        self.scratch.resize(data.len(), 0);
        fill(self.offset, &mut self.scratch);
        if self.mismatch_at.is_none() && self.scratch[..] != *data {
            let at = data
                .iter()
                .zip(&self.scratch)
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            self.mismatch_at = Some(self.offset + at as u64);
        }
        self.hasher.update(data);
        self.offset += data.len() as u64;
    }

    /// Bytes seen so far.
    pub(super) fn bytes(&self) -> u64 {
        self.offset
    }

    /// Whether every expected byte has arrived.
    pub(super) fn complete(&self) -> bool {
        self.offset >= self.expected_bytes
    }

    /// The first offset that differed from the pattern.
    pub(super) fn mismatch_at(&self) -> Option<u64> {
        self.mismatch_at
    }

    /// Whether exactly the expected bytes arrived and all matched.
    pub(super) fn verified(&self) -> bool {
        self.mismatch_at.is_none() && self.offset == self.expected_bytes
    }

    /// The SHA-256 of the bytes so far, hex.
    pub(super) fn sha256(&self) -> String {
        hex(&self.hasher.clone().finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_chunking_gives_the_same_stream() {
        let mut whole = vec![0u8; 1000];
        fill(0, &mut whole);
        let mut parts = vec![0u8; 1000];
        for (start, end) in [(0, 3), (3, 17), (17, 500), (500, 1000)] {
            fill(start as u64, &mut parts[start..end]);
        }
        assert_eq!(whole, parts);
        assert_ne!(whole[..8], whole[8..16], "words differ");
    }

    #[test]
    fn the_verifier_catches_a_changed_byte_and_a_short_stream() {
        let mut data = vec![0u8; 4096];
        fill(0, &mut data);
        let mut v = Verifier::new(4096);
        v.update(&data[..1000]);
        v.update(&data[1000..]);
        assert!(v.verified() && v.complete());
        let mut bad = data.clone();
        bad[2049] ^= 1;
        let mut w = Verifier::new(4096);
        w.update(&bad);
        assert_eq!((w.verified(), w.mismatch_at()), (false, Some(2049)));
        assert_ne!(v.sha256(), w.sha256());
        let mut short = Verifier::new(4096);
        short.update(&data[..4000]);
        assert!(!short.verified() && !short.complete());
    }
}
