//! AEAD backends for packet protection, side by side (issue 36): ring
//! 0.17 against aws-lc-rs, AES-128-GCM and ChaCha20-Poly1305, on the
//! calls the packet path makes (`crypto::aead`): seal in place with the
//! tag returned apart, and open in place with the tag at the end.
//!
//! * `aead_backend/seal/<aead>/<backend>/<n>B` — seal `n` bytes of payload
//!   behind a 24-byte clear prefix (the 20-byte header and the 4-byte
//!   packet number: the associated data of a real datagram), nonce = IV
//!   XOR a packet number that counts up, as `DirectionKey::nonce` builds
//!   it. Each iteration encrypts the previous one's ciphertext again
//!   (the cost does not depend on the bytes).
//! * `aead_backend/open/<aead>/<backend>/<n>B` — open one sealed datagram
//!   of `n` payload bytes in place. Opening decrypts in place, so each
//!   iteration first restores the sealed bytes: a copy of `n + 40` bytes
//!   (tens of nanoseconds, the same for every backend) is inside the
//!   figure.
//!
//! Sizes: 1,147 bytes (a block of a sealed datagram at path MTU
//! discovery's 1,200-byte base) and 1,412 bytes (the encrypted part of a
//! 1,452-byte datagram, the size `bench/peers.sh` pins). Throughput is
//! in payload bytes.
//!
//! `cargo bench -p peregrine-proto --bench aead_backends --features
//! aead-backends-bench` (the feature brings aws-lc-rs in; off by default).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

/// Clear prefix (header + packet number): the associated data.
const AD_LEN: usize = 24;
/// Tag length of both AEADs.
const TAG_LEN: usize = 16;
/// Payload sizes, bytes.
const SIZES: [usize; 2] = [1_147, 1_412];
const IV: [u8; 12] = [7; 12];

fn nonce_bytes(pn: u64) -> [u8; 12] {
    let mut n = IV;
    for (b, p) in n[4..].iter_mut().zip(pn.to_be_bytes()) {
        *b ^= p;
    }
    n
}

/// The two calls the packet path makes, over either crate's key (the
/// crates share ring's API, so one macro implements both).
trait Key {
    /// Seals `body` in place under `nonce` with associated data `ad`;
    /// the tag.
    fn seal(&self, nonce: [u8; 12], ad: &[u8], body: &mut [u8]) -> [u8; TAG_LEN];
    /// Opens `body` (ciphertext and tag) in place; the plaintext length.
    fn open(&self, nonce: [u8; 12], ad: &[u8], body: &mut [u8]) -> Option<usize>;
}

macro_rules! key_impl {
    ($aead:ident) => {
        impl Key for $aead::aead::LessSafeKey {
            fn seal(&self, nonce: [u8; 12], ad: &[u8], body: &mut [u8]) -> [u8; TAG_LEN] {
                let tag = self
                    .seal_in_place_separate_tag(
                        $aead::aead::Nonce::assume_unique_for_key(nonce),
                        $aead::aead::Aad::from(ad),
                        body,
                    )
                    .expect("seal");
                let mut t = [0; TAG_LEN];
                t.copy_from_slice(tag.as_ref());
                t
            }
            fn open(&self, nonce: [u8; 12], ad: &[u8], body: &mut [u8]) -> Option<usize> {
                self.open_in_place(
                    $aead::aead::Nonce::assume_unique_for_key(nonce),
                    $aead::aead::Aad::from(ad),
                    body,
                )
                .ok()
                .map(|p| p.len())
            }
        }
    };
}

key_impl!(ring);
key_impl!(aws_lc_rs);

/// Seals `buf` (prefix, `n` payload bytes, tag room) as packet `pn`.
fn seal_datagram<K: Key>(key: &K, buf: &mut [u8], n: usize, pn: u64) {
    buf[20..24].copy_from_slice(&(pn as u32).to_be_bytes());
    let (ad, rest) = buf.split_at_mut(AD_LEN);
    let (body, tag_room) = rest.split_at_mut(n);
    let tag = key.seal(nonce_bytes(pn), ad, body);
    tag_room.copy_from_slice(&tag);
}

/// Seal and open benchmarks of one key, named by AEAD and backend.
fn bench_key<K: Key>(c: &mut Criterion, key: &K, name: &str, backend: &str, n: usize) {
    let mut group = c.benchmark_group("aead_backend");
    group.throughput(Throughput::Bytes(n as u64));
    let mut buf = vec![0x5au8; AD_LEN + n + TAG_LEN];
    buf[4] = 0x30;
    let mut pn = 0u64;
    group.bench_function(format!("seal/{name}/{backend}/{n}B"), |b| {
        b.iter(|| {
            pn += 1;
            seal_datagram(key, &mut buf, n, pn);
            black_box(&buf);
        })
    });
    // One sealed datagram (packet number 1), opened again and again from
    // a pristine copy.
    let mut sealed = vec![0x5au8; AD_LEN + n + TAG_LEN];
    seal_datagram(key, &mut sealed, n, 1);
    let mut work = sealed.clone();
    group.bench_function(format!("open/{name}/{backend}/{n}B"), |b| {
        b.iter(|| {
            work.copy_from_slice(&sealed);
            let (ad, body) = work.split_at_mut(AD_LEN);
            black_box(key.open(nonce_bytes(1), ad, body).expect("authentic"))
        })
    });
    group.finish();
}

/// Both backends, interleaved per AEAD and size (so drift of a shared
/// machine hits both alike), after checking that they agree byte for
/// byte: the comparison is of one wire format.
fn benches(c: &mut Criterion) {
    let key_bytes = [0x42u8; 32];
    for (name, len) in [("aes-128-gcm", 16), ("chacha20-poly1305", 32)] {
        let (r_alg, w_alg) = if len == 16 {
            (&ring::aead::AES_128_GCM, &aws_lc_rs::aead::AES_128_GCM)
        } else {
            (
                &ring::aead::CHACHA20_POLY1305,
                &aws_lc_rs::aead::CHACHA20_POLY1305,
            )
        };
        let r = ring::aead::LessSafeKey::new(
            ring::aead::UnboundKey::new(r_alg, &key_bytes[..len]).expect("key length"),
        );
        let w = aws_lc_rs::aead::LessSafeKey::new(
            aws_lc_rs::aead::UnboundKey::new(w_alg, &key_bytes[..len]).expect("key length"),
        );
        let mut a = vec![0x5au8; AD_LEN + 1_412 + TAG_LEN];
        let mut b = a.clone();
        seal_datagram(&r, &mut a, 1_412, 9);
        seal_datagram(&w, &mut b, 1_412, 9);
        assert_eq!(a, b, "{name}: ring and aws-lc-rs disagree");
        for n in SIZES {
            bench_key(c, &r, name, "ring", n);
            bench_key(c, &w, name, "aws-lc-rs", n);
        }
    }
}

criterion_group! {
    name = group;
    // Short runs: 16 benchmarks on a shared 2-core machine.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(group);
