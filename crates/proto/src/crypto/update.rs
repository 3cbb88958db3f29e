//! Key update and AEAD usage limits (docs/security.md, "Key update").
//!
//! Both directions ratchet their packet keys together, as QUIC's key
//! update does (RFC 9001 §6), adapted to Noise's transport keys: the
//! 32-byte traffic secret of a direction (generation 0: the secret
//! `noise::derive_keys` expands from the handshake) gives the next one by
//! HKDF-SHA256,
//!
//! ```text
//! secret[n+1] = HKDF-Expand(PRK = secret[n], info = "peregrine v1 key update", 32)
//! key[n]      = the first AeadAlgorithm::key_len() bytes of secret[n]
//! ```
//!
//! and the IV stays the generation 0 one (the packet number never repeats
//! in a connection, so a nonce never repeats under a key either). HKDF is
//! one-way: a key of generation n reveals nothing of generations below n.
//!
//! **No key phase on the wire.** SLTP's 20-byte header has no free bit (all
//! eight flags are SLTP's; a sealed datagram's CHKSUM is authenticated
//! zero) and the packet number is in the clear at full width, so the
//! generation is not written anywhere: each sender switches generation at
//! a packet number, packet numbers only grow, and a receiver picks the key
//! by packet number — older than the first packet it opened under the
//! current generation: the previous key; newer than every packet opened
//! under the current generation and not authenticating under it: the next
//! key (one extra AEAD open, only then). See [`crate::crypto::aead`] for
//! the state machine.

/// The HKDF info label of a key update.
pub const KEY_UPDATE_LABEL: &[u8] = b"peregrine v1 key update";

/// The smallest `key_update.bytes` accepted: below it a connection would
/// spend its round trips waiting for confirmations instead of data.
pub const MIN_KEY_UPDATE_BYTES: u64 = 64 * 1024;

/// The next generation's traffic secret: HKDF-Expand(PRK = `secret`,
/// [`KEY_UPDATE_LABEL`], 32 bytes). O(1).
pub fn next_secret(secret: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    // A 32-byte PRK is a valid SHA-256 PRK and 32 bytes a valid length:
    // neither call can fail.
    if let Ok(hk) = hkdf::Hkdf::<sha2::Sha256>::from_prk(secret) {
        let _ = hk.expand(KEY_UPDATE_LABEL, &mut out);
    }
    out
}

/// When a connection updates its packet keys, and the AEAD usage limits
/// it enforces (in [`ConnectionConfig::key_update`](crate::ConnectionConfig)).
///
/// A key is replaced once this side has sealed `packets` packets or
/// `bytes` bytes under it, whichever comes first; the application can
/// also ask (`Endpoint::update_keys`). The AEAD's own limits
/// ([`AeadAlgorithm::confidentiality_limit`](crate::crypto::AeadAlgorithm::confidentiality_limit),
/// [`AeadAlgorithm::integrity_limit`](crate::crypto::AeadAlgorithm::integrity_limit))
/// always apply; the two limit fields can only lower them (tests, or a
/// stricter policy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyUpdateConfig {
    /// Update after this many packets sealed under one key (`None`: the
    /// AEAD's default, [`AeadAlgorithm::default_update_packets`](crate::crypto::AeadAlgorithm::default_update_packets)).
    pub packets: Option<u64>,
    /// Update after this many bytes sealed under one key (`None`: no byte
    /// trigger). At least [`MIN_KEY_UPDATE_BYTES`]. A rate, not a floor:
    /// bytes sealed past it while the update waited for the peer's
    /// confirmation (up to as many again) count toward the next key, so a
    /// transfer makes about one update per this many bytes.
    pub bytes: Option<u64>,
    /// Lower the AEAD's confidentiality limit (packets sealed per key).
    pub confidentiality_limit: Option<u64>,
    /// Lower the AEAD's integrity limit (failed openings per key).
    pub integrity_limit: Option<u64>,
}

impl KeyUpdateConfig {
    /// Checks the values; the error names the bad field.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.packets == Some(0) {
            return Err("key_update.packets: must be at least 1");
        }
        if self.bytes.is_some_and(|b| b < MIN_KEY_UPDATE_BYTES) {
            return Err("key_update.bytes: must be at least 65536 (64 KiB)");
        }
        if self.confidentiality_limit == Some(0) {
            return Err("key_update.confidentiality_limit: must be at least 1");
        }
        if self.integrity_limit == Some(0) {
            return Err("key_update.integrity_limit: must be at least 1");
        }
        Ok(())
    }
}

/// The thresholds one connection's keys run with (the configuration
/// resolved against the agreed AEAD).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Update after this many packets sealed under one key.
    pub update_packets: u64,
    /// Update after this many bytes sealed under one key.
    pub update_bytes: u64,
    /// Never seal more packets than this under one key.
    pub confidentiality_limit: u64,
    /// Stop opening after this many failures under one key.
    pub integrity_limit: u64,
}

impl Policy {
    /// `cfg` for `aead`: the update threshold is kept below the limit.
    pub(crate) fn new(cfg: &KeyUpdateConfig, aead: super::AeadAlgorithm) -> Policy {
        let confidentiality_limit = cfg
            .confidentiality_limit
            .map_or(aead.confidentiality_limit(), |l| {
                l.min(aead.confidentiality_limit())
            });
        let integrity_limit = cfg
            .integrity_limit
            .map_or(aead.integrity_limit(), |l| l.min(aead.integrity_limit()));
        Policy {
            update_packets: cfg
                .packets
                .unwrap_or(aead.default_update_packets())
                .min(confidentiality_limit / 2)
                .max(1),
            update_bytes: cfg.bytes.unwrap_or(u64::MAX),
            confidentiality_limit,
            integrity_limit,
        }
    }
}

/// A usage limit reached with no key update possible: the connection
/// closes with this reason.
pub(crate) const CONFIDENTIALITY_LIMIT_REASON: &str =
    "AEAD confidentiality limit reached: key update not confirmed by the peer";
/// The integrity limit reached: the connection closes with this reason.
pub(crate) const INTEGRITY_LIMIT_REASON: &str =
    "AEAD integrity limit reached: too many packets failed authentication under one key";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_secret_is_hkdf_expand_and_one_way_chained() {
        let s0 = [0x11u8; 32];
        let s1 = next_secret(&s0);
        let s2 = next_secret(&s1);
        assert_ne!(s0, s1);
        assert_ne!(s1, s2);
        // HKDF-Expand with a single output block is HMAC(PRK, info || 0x01).
        use hmac::{Hmac, Mac};
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&s0).unwrap();
        mac.update(KEY_UPDATE_LABEL);
        mac.update(&[1]);
        let expect: [u8; 32] = mac.finalize().into_bytes().into();
        assert_eq!(s1, expect);
    }

    #[test]
    fn validate_names_the_field() {
        assert!(KeyUpdateConfig::default().validate().is_ok());
        let e = KeyUpdateConfig {
            bytes: Some(10),
            ..KeyUpdateConfig::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.starts_with("key_update.bytes"));
        let e = KeyUpdateConfig {
            packets: Some(0),
            ..KeyUpdateConfig::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.starts_with("key_update.packets"));
    }

    #[test]
    fn policy_keeps_the_update_below_the_limit() {
        let p = Policy::new(
            &KeyUpdateConfig {
                packets: Some(1 << 40),
                ..KeyUpdateConfig::default()
            },
            super::super::AeadAlgorithm::Aes128Gcm,
        );
        assert_eq!(p.confidentiality_limit, 1 << 23);
        assert_eq!(p.update_packets, 1 << 22);
        let p = Policy::new(
            &KeyUpdateConfig {
                confidentiality_limit: Some(10),
                integrity_limit: Some(1 << 60),
                ..KeyUpdateConfig::default()
            },
            super::super::AeadAlgorithm::ChaCha20Poly1305,
        );
        assert_eq!((p.confidentiality_limit, p.update_packets), (10, 5));
        assert_eq!(p.integrity_limit, 1 << 36);
    }
}
