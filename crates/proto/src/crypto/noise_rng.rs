//! The seeded randomness of the Noise handshakes: a rand_core-0.6
//! generator over a ChaCha20 keystream (what `snow` takes), and a
//! `CryptoResolver` that hands it to `snow` with the default primitives.
//! Nothing here reads OS entropy: the seed decides every ephemeral key.

use super::noise::SEED_LEN;
use rand_chacha::rand_core::{Rng as _, SeedableRng as _};
use rand_chacha::ChaCha20Rng;
use snow::params::{CipherChoice, DHChoice, HashChoice};
use snow::resolvers::{CryptoResolver, DefaultResolver};
use snow::types::{Cipher, Dh, Hash, Random};

/// A rand_core-0.6 generator (what snow takes) over a ChaCha20 keystream.
pub(crate) struct HandshakeRng(ChaCha20Rng);

impl HandshakeRng {
    /// A generator whose whole output is fixed by `seed`.
    pub(crate) fn from_seed(seed: [u8; SEED_LEN]) -> HandshakeRng {
        HandshakeRng(ChaCha20Rng::from_seed(seed))
    }

    /// The next 32-byte seed (for one handshake).
    pub(crate) fn next_seed(&mut self) -> [u8; SEED_LEN] {
        let mut s = [0u8; SEED_LEN];
        self.0.fill_bytes(&mut s);
        s
    }
}

impl std::fmt::Debug for HandshakeRng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HandshakeRng(..)")
    }
}

impl rand_core_06::RngCore for HandshakeRng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core_06::Error> {
        self.0.fill_bytes(dest);
        Ok(())
    }
}

impl rand_core_06::CryptoRng for HandshakeRng {}
impl Random for HandshakeRng {}

/// snow's default primitives with a seeded random generator.
pub(crate) struct SeededResolver(pub(crate) [u8; SEED_LEN]);

impl CryptoResolver for SeededResolver {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        Some(Box::new(HandshakeRng::from_seed(self.0)))
    }
    fn resolve_dh(&self, choice: &DHChoice) -> Option<Box<dyn Dh>> {
        DefaultResolver.resolve_dh(choice)
    }
    fn resolve_hash(&self, choice: &HashChoice) -> Option<Box<dyn Hash>> {
        DefaultResolver.resolve_hash(choice)
    }
    fn resolve_cipher(&self, choice: &CipherChoice) -> Option<Box<dyn Cipher>> {
        DefaultResolver.resolve_cipher(choice)
    }
}
