//! Security: the handshake carried in the SECURITY TLV, packet protection
//! (AEAD on every post-handshake datagram) and the replay window.
//!
//! This module is the crypto seam of the sans-IO core. It never reads a
//! clock or the OS: the random bytes of a handshake come from the
//! endpoint's seeded generator (the simulator: reproducible runs) or, in
//! the UDP runtime, from a seed drawn from OS entropy by the caller.
//!
//! Modes (the first byte of the SECURITY TLV value):
//!
//! * `1` **pre-shared key** ([`SecurityConfig::PresharedKey`]): both sides
//!   hold a 32-byte fleet secret. START carries `[1, client_random(16)]`,
//!   the accepting START-REPLY `[1, server_random(16)]`. Per-connection,
//!   per-direction keys are HKDF-SHA256(salt = client_random ‖
//!   server_random, ikm = secret) expanded with the labels of
//!   [`derive_keys`]. The fresh randoms make every connection's keys
//!   distinct, so packet numbers restarting at 0 never reuse a nonce.
//!
//! Unencrypted mode (`ConnectionConfig::security = None`, the default in
//! proto and the simulator) sends no SECURITY TLV and is byte-identical to
//! the wire format without this module.

pub mod aead;
pub mod keys;
pub mod replay;

pub use keys::{
    NoiseConfig, NoisePattern, PublicKey, SecurityConfig, StaticKeypair, KEY_LEN, PSK_LEN,
};

pub use aead::OpenError;
use aead::{DirectionKey, PacketKeys};
use hkdf::Hkdf;
use sha2::Sha256;

/// SECURITY TLV mode byte of the pre-shared-key handshake.
pub const MODE_PSK: u8 = 1;
/// Bytes of handshake randomness each side contributes.
pub const HELLO_RANDOM_LEN: usize = 16;
/// Authentication failures after which the first
/// [`Event::SecurityViolation`](crate::Event::SecurityViolation) is raised
/// (then again at every doubling). Failures never close the connection: a
/// forged packet must not be able to tear it down.
pub const AUTH_FAILURE_THRESHOLD: u64 = 4;

/// Security counters of one connection (in
/// [`ConnectionStats::security`](crate::ConnectionStats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SecurityStats {
    /// Whether packets are protected (keys established).
    pub encrypted: bool,
    /// Datagrams sealed.
    pub packets_sealed: u64,
    /// Datagrams opened (authenticated).
    pub packets_opened: u64,
    /// Datagrams dropped because they did not authenticate (forged,
    /// tampered, or arriving before the keys).
    pub auth_failures: u64,
    /// Authentic-looking datagrams dropped by the replay window.
    pub replays_dropped: u64,
    /// Datagrams dropped for a bad checksum or a malformed length before
    /// authentication.
    pub malformed_dropped: u64,
}

/// Why a handshake could not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The peer sent no SECURITY TLV although this side requires one.
    #[error("peer sent no SECURITY TLV")]
    Missing,
    /// The SECURITY TLV has an unknown mode or a wrong length.
    #[error("SECURITY TLV has an unknown mode or a wrong length")]
    Malformed,
}

/// Labels of the HKDF expansion (domain separation per key and direction).
const LABEL_C2S_KEY: &[u8] = b"peregrine v1 client key";
const LABEL_C2S_IV: &[u8] = b"peregrine v1 client iv";
const LABEL_S2C_KEY: &[u8] = b"peregrine v1 server key";
const LABEL_S2C_IV: &[u8] = b"peregrine v1 server iv";

/// The raw key material of both directions (client to server first).
#[derive(Clone, PartialEq, Eq)]
pub struct DerivedKeys {
    /// Client-to-server key.
    pub c2s_key: [u8; 32],
    /// Client-to-server IV.
    pub c2s_iv: [u8; 12],
    /// Server-to-client key.
    pub s2c_key: [u8; 32],
    /// Server-to-client IV.
    pub s2c_iv: [u8; 12],
}

/// HKDF-SHA256 key derivation of the pre-shared-key mode.
pub fn derive_keys(
    psk: &[u8; PSK_LEN],
    client_random: &[u8; HELLO_RANDOM_LEN],
    server_random: &[u8; HELLO_RANDOM_LEN],
) -> DerivedKeys {
    let mut salt = [0u8; 2 * HELLO_RANDOM_LEN];
    salt[..HELLO_RANDOM_LEN].copy_from_slice(client_random);
    salt[HELLO_RANDOM_LEN..].copy_from_slice(server_random);
    let hk = Hkdf::<Sha256>::new(Some(&salt), psk);
    let mut k = DerivedKeys {
        c2s_key: [0; 32],
        c2s_iv: [0; 12],
        s2c_key: [0; 32],
        s2c_iv: [0; 12],
    };
    // HKDF-SHA256 can expand up to 8,160 bytes; these are ≤ 32.
    let _ = hk.expand(LABEL_C2S_KEY, &mut k.c2s_key);
    let _ = hk.expand(LABEL_C2S_IV, &mut k.c2s_iv);
    let _ = hk.expand(LABEL_S2C_KEY, &mut k.s2c_key);
    let _ = hk.expand(LABEL_S2C_IV, &mut k.s2c_iv);
    k
}

/// Reads a peer's SECURITY TLV value of the pre-shared-key mode.
pub fn parse_hello(value: &[u8]) -> Result<[u8; HELLO_RANDOM_LEN], HandshakeError> {
    match value.split_first() {
        Some((&MODE_PSK, rest)) => rest.try_into().map_err(|_| HandshakeError::Malformed),
        _ => Err(HandshakeError::Malformed),
    }
}

/// One connection's security state.
#[derive(Clone, Debug)]
pub(crate) struct SecurityState {
    config: SecurityConfig,
    is_client: bool,
    /// Our SECURITY TLV value.
    hello: [u8; 1 + HELLO_RANDOM_LEN],
    keys: Option<PacketKeys>,
    pub(crate) stats: SecurityStats,
}

impl SecurityState {
    /// A handshake in progress; `random` is this side's fresh randomness.
    pub(crate) fn new(
        config: SecurityConfig,
        is_client: bool,
        random: [u8; HELLO_RANDOM_LEN],
    ) -> SecurityState {
        let mut hello = [MODE_PSK; 1 + HELLO_RANDOM_LEN];
        hello[1..].copy_from_slice(&random);
        SecurityState {
            config,
            is_client,
            hello,
            keys: None,
            stats: SecurityStats::default(),
        }
    }

    /// Our SECURITY TLV value.
    pub(crate) fn hello(&self) -> &[u8] {
        &self.hello
    }

    /// Completes the handshake with the peer's SECURITY TLV value.
    pub(crate) fn complete(&mut self, peer: Option<&[u8]>) -> Result<(), HandshakeError> {
        let peer_random = parse_hello(peer.ok_or(HandshakeError::Missing)?)?;
        let mut ours = [0u8; HELLO_RANDOM_LEN];
        ours.copy_from_slice(&self.hello[1..]);
        // Placeholder until the Noise handshake lands: only the
        // pre-shared-key shorthand runs (the old HKDF mode 1).
        let SecurityConfig::PresharedKey(psk) = &self.config else {
            return Err(HandshakeError::Malformed);
        };
        let (c, s) = if self.is_client {
            (&ours, &peer_random)
        } else {
            (&peer_random, &ours)
        };
        let k = derive_keys(psk, c, s);
        let c2s = DirectionKey::new(&k.c2s_key, k.c2s_iv);
        let s2c = DirectionKey::new(&k.s2c_key, k.s2c_iv);
        self.keys = Some(if self.is_client {
            PacketKeys::new(c2s, s2c)
        } else {
            PacketKeys::new(s2c, c2s)
        });
        self.stats.encrypted = true;
        Ok(())
    }

    /// Seals an outgoing datagram (`None`: keys missing or unsealable; the
    /// caller drops it).
    pub(crate) fn seal(&mut self, buf: &mut Vec<u8>, len: usize) -> Option<usize> {
        let n = self.keys.as_mut()?.seal(buf, len)?;
        self.stats.packets_sealed += 1;
        Some(n)
    }

    /// Opens an incoming datagram into `plain`, counting the outcome.
    pub(crate) fn open(&mut self, bytes: &[u8], plain: &mut Vec<u8>) -> Result<(), OpenError> {
        let r = match self.keys.as_mut() {
            Some(k) => k.open(bytes, plain),
            None => Err(OpenError::NoKeys),
        };
        match r {
            Ok(()) => self.stats.packets_opened += 1,
            Err(OpenError::Unauthenticated | OpenError::NoKeys) => self.stats.auth_failures += 1,
            Err(OpenError::Replayed) => self.stats.replays_dropped += 1,
            Err(OpenError::Malformed | OpenError::Checksum) => self.stats.malformed_dropped += 1,
        }
        r
    }
}

#[cfg(test)]
mod tests;
