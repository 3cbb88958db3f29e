//! Packet protection: AES-128-GCM or ChaCha20-Poly1305 (from `ring`) over
//! every post-handshake datagram, sealed and opened in place.
//!
//! Layout (docs/protocol.md §1): the 20-byte header and the 4-byte packet
//! number stay in the clear and are the associated data, exactly as sent;
//! the rest of the payload is ciphertext; a 16-byte tag follows and
//! TOTAL_LEN counts it. A sealed datagram carries no checksum: ST_CKS is
//! clear and CHKSUM zero, both authenticated (the tag covers every byte;
//! docs/security.md).
//! The nonce is the direction's 12-byte IV XOR the 64-bit packet number
//! (big-endian, right-aligned), as in TLS 1.3 and QUIC, so a nonce never
//! repeats under one key. Keys and IVs come from HKDF-SHA256 over the
//! Noise handshake's split keys (`noise::derive_keys`), one pair per
//! direction; the AEAD is the one the handshake agreed on (AEAD TLV).

use super::replay::ReplayWindow;
use crate::wire::header::patch_len_and_checksum;
use crate::wire::{expand_packet_number, Flags, AUTH_TAG_LEN, HEADER_LEN};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, CHACHA20_POLY1305};

/// Bytes in the clear at the front of a protected datagram (header + PN).
pub const CLEAR_PREFIX_LEN: usize = HEADER_LEN + 4;

/// Offset of the flags byte in the header.
const FLAGS_OFFSET: usize = 5;
/// Offset of TOTAL_LEN in the header.
const TOTAL_LEN_OFFSET: usize = 8;

/// A packet AEAD Peregrine negotiates in the AEAD TLV (docs/protocol.md
/// §6.1). Both have a 16-byte tag and a 12-byte nonce, so the choice never
/// changes a datagram's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AeadAlgorithm {
    /// AES-128-GCM: the fastest where the CPU accelerates AES and carry-less
    /// multiplication (x86 AES-NI + PCLMULQDQ, ARMv8 crypto extensions).
    Aes128Gcm,
    /// ChaCha20-Poly1305: the fastest without AES hardware, constant-time
    /// everywhere; the only AEAD of peers that send no AEAD TLV.
    ChaCha20Poly1305,
}

impl AeadAlgorithm {
    /// Every AEAD, in code order.
    pub const ALL: [AeadAlgorithm; 2] = [AeadAlgorithm::Aes128Gcm, AeadAlgorithm::ChaCha20Poly1305];

    /// The AEAD TLV code.
    pub const fn code(self) -> u8 {
        match self {
            AeadAlgorithm::Aes128Gcm => 1,
            AeadAlgorithm::ChaCha20Poly1305 => 2,
        }
    }

    /// The AEAD of a TLV code (`None`: unknown to this version).
    pub fn from_code(code: u8) -> Option<AeadAlgorithm> {
        AeadAlgorithm::ALL.into_iter().find(|a| a.code() == code)
    }

    /// The code as a one-byte AEAD TLV value (a START-REPLY's choice).
    pub(crate) const fn choice(self) -> &'static [u8] {
        match self {
            AeadAlgorithm::Aes128Gcm => &[1],
            AeadAlgorithm::ChaCha20Poly1305 => &[2],
        }
    }

    /// The name in configuration, CLI flags and reports.
    pub const fn name(self) -> &'static str {
        match self {
            AeadAlgorithm::Aes128Gcm => "aes-128-gcm",
            AeadAlgorithm::ChaCha20Poly1305 => "chacha20-poly1305",
        }
    }

    /// The AEAD of a name ([`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<AeadAlgorithm> {
        AeadAlgorithm::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Key length in bytes (16 for AES-128-GCM, 32 for ChaCha20-Poly1305).
    pub const fn key_len(self) -> usize {
        match self {
            AeadAlgorithm::Aes128Gcm => 16,
            AeadAlgorithm::ChaCha20Poly1305 => 32,
        }
    }

    fn ring(self) -> &'static ring::aead::Algorithm {
        match self {
            AeadAlgorithm::Aes128Gcm => &AES_128_GCM,
            AeadAlgorithm::ChaCha20Poly1305 => &CHACHA20_POLY1305,
        }
    }
}

impl std::fmt::Display for AeadAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an incoming datagram was not opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Too short for header, packet number and tag, TOTAL_LEN wrong, or
    /// ST_CKS set (a sealed datagram carries no checksum).
    Malformed,
    /// The tag did not verify (forged, tampered, corrupted or wrong key).
    Unauthenticated,
    /// Authentic-looking packet number already accepted or too old.
    Replayed,
    /// The connection has no keys yet (handshake incomplete).
    NoKeys,
    /// The XX message 3 riding behind the datagram did not complete the
    /// handshake (forged, or the client's key is not authorized).
    Handshake,
}

/// One direction's AEAD key and IV.
pub(crate) struct DirectionKey {
    key: LessSafeKey,
    iv: [u8; 12],
}

impl std::fmt::Debug for DirectionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DirectionKey({:?})", self.key.algorithm())
    }
}

impl DirectionKey {
    /// A key for `aead` from the first [`AeadAlgorithm::key_len`] of the
    /// 32 derived key bytes (HKDF-Expand to 16 bytes is exactly that
    /// prefix) and a 12-byte IV. `None` only if ring refused the key
    /// (a wrong length, which `key_len` rules out).
    pub(crate) fn new(aead: AeadAlgorithm, key: &[u8; 32], iv: [u8; 12]) -> Option<DirectionKey> {
        let unbound = UnboundKey::new(aead.ring(), key.get(..aead.key_len())?).ok()?;
        Some(DirectionKey {
            key: LessSafeKey::new(unbound),
            iv,
        })
    }

    fn nonce(&self, pn: u64) -> Nonce {
        let mut n = self.iv;
        for (b, p) in n[4..].iter_mut().zip(pn.to_be_bytes()) {
            *b ^= p;
        }
        Nonce::assume_unique_for_key(n)
    }
}

fn truncated_pn(datagram: &[u8]) -> Option<u32> {
    datagram
        .get(HEADER_LEN..CLEAR_PREFIX_LEN)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
}

/// Both directions' keys of one connection and the receive replay window.
#[derive(Debug)]
pub(crate) struct PacketKeys {
    aead: AeadAlgorithm,
    seal: DirectionKey,
    open: DirectionKey,
    largest_sealed: Option<u64>,
    replay: ReplayWindow,
}

impl PacketKeys {
    /// Keys for sending with `seal` and receiving with `open`, both `aead`.
    pub(crate) fn new(aead: AeadAlgorithm, seal: DirectionKey, open: DirectionKey) -> PacketKeys {
        PacketKeys {
            aead,
            seal,
            open,
            largest_sealed: None,
            replay: ReplayWindow::new(),
        }
    }

    /// The AEAD these keys run.
    pub(crate) fn aead(&self) -> AeadAlgorithm {
        self.aead
    }

    /// Seals the plaintext datagram `buf[..len]` in place: TOTAL_LEN set to
    /// the sealed length, ST_CKS cleared and CHKSUM zeroed (the tag covers
    /// the datagram), the payload after the packet number encrypted, the
    /// tag appended (the buffer grows by 16). Returns the new length, or
    /// `None` if `len` is too short to carry a packet number or would
    /// exceed 65,535 bytes sealed. O(len), no allocation beyond the tag's
    /// room in `buf`.
    pub(crate) fn seal(&mut self, buf: &mut Vec<u8>, len: usize) -> Option<usize> {
        let tpn = truncated_pn(buf.get(..len)?)?;
        let pn = expand_packet_number(tpn, self.largest_sealed);
        let sealed_len = len + AUTH_TAG_LEN;
        let total = u16::try_from(sealed_len).ok()?;
        buf.truncate(len);
        patch_len_and_checksum(buf, total, 0);
        let flags = buf.get_mut(FLAGS_OFFSET)?;
        *flags &= !Flags::ST_CKS.bits();
        // The clear prefix, as sent, is the associated data (no copy).
        let (ad, body) = buf.split_at_mut_checked(CLEAR_PREFIX_LEN)?;
        let tag = self
            .seal
            .key
            .seal_in_place_separate_tag(self.seal.nonce(pn), Aad::from(&*ad), body)
            .ok()?;
        buf.extend_from_slice(tag.as_ref());
        self.largest_sealed = Some(self.largest_sealed.map_or(pn, |l| l.max(pn)));
        Some(sealed_len)
    }

    /// Opens the protected datagram `buf` in place. On success the
    /// plaintext datagram is `buf[..n]` with the returned `n` (the tag
    /// dropped, TOTAL_LEN patched to `n`), ready for the ordinary decoder;
    /// on failure `buf`'s payload is unspecified. Order of checks: length
    /// and TOTAL_LEN, ST_CKS clear, replay window, tag. O(len), no copy.
    pub(crate) fn open(&mut self, buf: &mut [u8]) -> Result<usize, OpenError> {
        let len = buf.len();
        if len < CLEAR_PREFIX_LEN + AUTH_TAG_LEN {
            return Err(OpenError::Malformed);
        }
        let total = buf
            .get(TOTAL_LEN_OFFSET..TOTAL_LEN_OFFSET + 2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])));
        if total != Some(len) {
            return Err(OpenError::Malformed);
        }
        // A sealed datagram has no checksum; ST_CKS is authenticated, so
        // a set flag is corruption or a sender breaking the rule.
        if buf
            .get(FLAGS_OFFSET)
            .is_none_or(|f| Flags(*f).contains(Flags::ST_CKS))
        {
            return Err(OpenError::Malformed);
        }
        let tpn = truncated_pn(buf).ok_or(OpenError::Malformed)?;
        let pn = expand_packet_number(tpn, self.replay.largest());
        if !self.replay.is_fresh(pn) {
            return Err(OpenError::Replayed);
        }
        let (ad, body) = buf
            .split_at_mut_checked(CLEAR_PREFIX_LEN)
            .ok_or(OpenError::Malformed)?;
        self.open
            .key
            .open_in_place(self.open.nonce(pn), Aad::from(&*ad), body)
            .map_err(|_| OpenError::Unauthenticated)?;
        self.replay.insert(pn);
        let plain_len = len - AUTH_TAG_LEN;
        // `plain_len < len ≤ 65,535`: fits.
        let plain_total = u16::try_from(plain_len).map_err(|_| OpenError::Malformed)?;
        patch_len_and_checksum(buf, plain_total, 0);
        Ok(plain_len)
    }
}

/// Benchmark hook for `benches/packet.rs` (seal + open of one packet per
/// AEAD); not part of the API.
#[doc(hidden)]
pub mod bench {
    use super::{AeadAlgorithm, DirectionKey, PacketKeys};
    use crate::wire::{Flags, HEADER_LEN};

    /// The AEADs this build can seal with, by name.
    pub const ALGORITHMS: &[&str] = &["aes-128-gcm", "chacha20-poly1305"];

    /// A sealing side and an opening side sharing one key.
    pub struct SealOpen {
        tx: PacketKeys,
        rx: PacketKeys,
        pn: u32,
    }

    impl SealOpen {
        /// Keys for the AEAD `name` (one of [`ALGORITHMS`]).
        pub fn new(name: &str) -> Option<SealOpen> {
            let a = AeadAlgorithm::from_name(name)?;
            let k = || DirectionKey::new(a, &[0x42; 32], [7; 12]);
            Some(SealOpen {
                tx: PacketKeys::new(a, k()?, k()?),
                rx: PacketKeys::new(a, k()?, k()?),
                pn: 0,
            })
        }

        /// Writes a header and the next packet number into `buf` (whose
        /// length, tag included, is the datagram's), seals and opens it.
        /// Whether it opened. O(len).
        pub fn round_trip(&mut self, buf: &mut Vec<u8>, len: usize) -> bool {
            buf.resize(len, 0);
            buf[..HEADER_LEN].fill(0);
            buf[0] = 1;
            buf[4] = 0x30; // DATA (PK_TYPE 3)
                           // What a protected connection sends: no ST_CKS (sealing would
                           // clear it anyway).
            buf[5] = Flags::W_VAL.bits();
            self.pn = self.pn.wrapping_add(1);
            buf[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&self.pn.to_be_bytes());
            let plain_len = len - crate::wire::AUTH_TAG_LEN;
            let Some(n) = self.tx.seal(buf, plain_len) else {
                return false;
            };
            buf.get_mut(..n)
                .is_some_and(|b| self.rx.open(b).is_ok_and(|m| m == plain_len))
        }
    }
}
