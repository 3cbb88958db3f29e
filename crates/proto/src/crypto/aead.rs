//! Packet protection: ChaCha20-Poly1305 over every post-handshake datagram.
//!
//! Layout (docs/protocol.md §1): the 20-byte header and the 4-byte packet
//! number stay in the clear and are the associated data (with CHKSUM read
//! as zero, since the checksum is computed last, over the ciphertext and
//! tag); the rest of the payload is ciphertext; a 16-byte tag follows and
//! TOTAL_LEN counts it. The nonce is the direction's 12-byte IV XOR the
//! 64-bit packet number (big-endian, right-aligned), as in TLS 1.3 and
//! QUIC, so a nonce never repeats under one key. Keys and IVs come from
//! HKDF-SHA256 over the Noise handshake's split keys
//! (`noise::derive_keys`), one pair per direction.

use super::replay::ReplayWindow;
use crate::wire::header::patch_len_and_checksum;
use crate::wire::{datagram_checksum, expand_packet_number, Flags, AUTH_TAG_LEN, HEADER_LEN};
use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{ChaCha20Poly1305, Key, KeyInit, Nonce, Tag};

/// Bytes in the clear at the front of a protected datagram (header + PN).
pub const CLEAR_PREFIX_LEN: usize = HEADER_LEN + 4;

/// Offset of the flags byte in the header.
const FLAGS_OFFSET: usize = 5;
/// Offset of CHKSUM in the header.
const CHKSUM_OFFSET: usize = 6;
/// Offset of TOTAL_LEN in the header.
const TOTAL_LEN_OFFSET: usize = 8;

/// Why an incoming datagram was not opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Too short for header, packet number and tag, or TOTAL_LEN wrong.
    Malformed,
    /// ST_CKS set and the checksum does not match (corruption, not an
    /// attack: counted as a decode error).
    Checksum,
    /// The tag did not verify (forged, tampered or wrong key).
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
#[derive(Clone)]
pub(crate) struct DirectionKey {
    aead: ChaCha20Poly1305,
    iv: [u8; 12],
}

impl std::fmt::Debug for DirectionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DirectionKey(..)")
    }
}

impl DirectionKey {
    /// A key from 32 key bytes and a 12-byte IV.
    pub(crate) fn new(key: &[u8; 32], iv: [u8; 12]) -> DirectionKey {
        DirectionKey {
            aead: ChaCha20Poly1305::new(Key::from_slice(key)),
            iv,
        }
    }

    fn nonce(&self, pn: u64) -> Nonce {
        let mut n = self.iv;
        for (b, p) in n[4..].iter_mut().zip(pn.to_be_bytes()) {
            *b ^= p;
        }
        Nonce::from(n)
    }
}

/// The associated data of a datagram: header and packet number with
/// CHKSUM zeroed.
fn associated_data(datagram: &[u8]) -> Option<[u8; CLEAR_PREFIX_LEN]> {
    let mut ad = *datagram.first_chunk::<CLEAR_PREFIX_LEN>()?;
    ad[CHKSUM_OFFSET] = 0;
    ad[CHKSUM_OFFSET + 1] = 0;
    Some(ad)
}

fn checksummed(datagram: &[u8]) -> bool {
    datagram
        .get(FLAGS_OFFSET)
        .is_some_and(|f| Flags(*f).contains(Flags::ST_CKS))
}

fn truncated_pn(datagram: &[u8]) -> Option<u32> {
    datagram
        .get(HEADER_LEN..CLEAR_PREFIX_LEN)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
}

/// Both directions' keys of one connection and the receive replay window.
#[derive(Clone, Debug)]
pub(crate) struct PacketKeys {
    seal: DirectionKey,
    open: DirectionKey,
    largest_sealed: Option<u64>,
    replay: ReplayWindow,
}

impl PacketKeys {
    /// Keys for sending with `seal` and receiving with `open`.
    pub(crate) fn new(seal: DirectionKey, open: DirectionKey) -> PacketKeys {
        PacketKeys {
            seal,
            open,
            largest_sealed: None,
            replay: ReplayWindow::new(),
        }
    }

    /// Seals the plaintext datagram `buf[..len]` in place (the buffer grows
    /// by the tag); returns the new length, or `None` if `len` is too short
    /// to carry a packet number or would exceed 65,535 bytes sealed.
    pub(crate) fn seal(&mut self, buf: &mut Vec<u8>, len: usize) -> Option<usize> {
        let tpn = truncated_pn(buf.get(..len)?)?;
        let pn = expand_packet_number(tpn, self.largest_sealed);
        let sealed_len = len + AUTH_TAG_LEN;
        let total = u16::try_from(sealed_len).ok()?;
        buf.truncate(len);
        patch_len_and_checksum(buf, total, 0);
        let ad = associated_data(buf)?;
        let tag = self
            .seal
            .aead
            .encrypt_in_place_detached(&self.seal.nonce(pn), &ad, buf.get_mut(CLEAR_PREFIX_LEN..)?)
            .ok()?;
        buf.extend_from_slice(&tag);
        if checksummed(buf) {
            let c = datagram_checksum(buf);
            patch_len_and_checksum(buf, total, c);
        }
        self.largest_sealed = Some(self.largest_sealed.map_or(pn, |l| l.max(pn)));
        Some(sealed_len)
    }

    /// Opens a protected datagram into `plain`: on success `plain` holds the
    /// datagram as it was before sealing (no tag, TOTAL_LEN and CHKSUM as
    /// an unencrypted datagram), ready for the ordinary decoder.
    pub(crate) fn open(&mut self, bytes: &[u8], plain: &mut Vec<u8>) -> Result<(), OpenError> {
        let len = bytes.len();
        if len < CLEAR_PREFIX_LEN + AUTH_TAG_LEN {
            return Err(OpenError::Malformed);
        }
        let total = bytes
            .get(TOTAL_LEN_OFFSET..TOTAL_LEN_OFFSET + 2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])));
        if total != Some(len) {
            return Err(OpenError::Malformed);
        }
        if checksummed(bytes) {
            let found = bytes
                .get(CHKSUM_OFFSET..CHKSUM_OFFSET + 2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]));
            if found != Some(datagram_checksum(bytes)) {
                return Err(OpenError::Checksum);
            }
        }
        let tpn = truncated_pn(bytes).ok_or(OpenError::Malformed)?;
        let pn = expand_packet_number(tpn, self.replay.largest());
        if !self.replay.is_fresh(pn) {
            return Err(OpenError::Replayed);
        }
        let ad = associated_data(bytes).ok_or(OpenError::Malformed)?;
        let (body, tag) = bytes.split_at(len - AUTH_TAG_LEN);
        plain.clear();
        plain.extend_from_slice(body);
        let ct = plain
            .get_mut(CLEAR_PREFIX_LEN..)
            .ok_or(OpenError::Malformed)?;
        self.open
            .aead
            .decrypt_in_place_detached(&self.open.nonce(pn), &ad, ct, Tag::from_slice(tag))
            .map_err(|_| OpenError::Unauthenticated)?;
        self.replay.insert(pn);
        // `body.len() < len ≤ 65,535`: fits.
        let plain_len = u16::try_from(plain.len()).map_err(|_| OpenError::Malformed)?;
        patch_len_and_checksum(plain, plain_len, 0);
        if checksummed(plain) {
            let c = datagram_checksum(plain);
            patch_len_and_checksum(plain, plain_len, c);
        }
        Ok(())
    }
}

/// Benchmark hook for `benches/packet.rs` (seal + open of one packet per
/// AEAD); not part of the API.
#[doc(hidden)]
pub mod bench {
    use super::{DirectionKey, PacketKeys};
    use crate::wire::{Flags, HEADER_LEN};

    /// The AEADs this build can seal with, by name.
    pub const ALGORITHMS: &[&str] = &["chacha20-poly1305"];

    /// A sealing side and an opening side sharing one key.
    pub struct SealOpen {
        tx: PacketKeys,
        rx: PacketKeys,
        pn: u32,
        plain: Vec<u8>,
    }

    impl SealOpen {
        /// Keys for the AEAD `name` (one of [`ALGORITHMS`]).
        pub fn new(name: &str) -> Option<SealOpen> {
            if !ALGORITHMS.contains(&name) {
                return None;
            }
            let k = || DirectionKey::new(&[0x42; 32], [7; 12]);
            Some(SealOpen {
                tx: PacketKeys::new(k(), k()),
                rx: PacketKeys::new(k(), k()),
                pn: 0,
                plain: Vec::new(),
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
                           // What a protected connection sent before this issue: ST_CKS.
            buf[5] = (Flags::ST_CKS | Flags::W_VAL).bits();
            self.pn = self.pn.wrapping_add(1);
            buf[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&self.pn.to_be_bytes());
            let plain_len = len - crate::wire::AUTH_TAG_LEN;
            let Some(n) = self.tx.seal(buf, plain_len) else {
                return false;
            };
            self.rx.open(&buf[..n], &mut self.plain).is_ok()
        }
    }
}
