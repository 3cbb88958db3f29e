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
use super::update::{
    next_secret, KeyUpdateConfig, Policy, CONFIDENTIALITY_LIMIT_REASON, INTEGRITY_LIMIT_REASON,
};
use crate::wire::header::patch_len_and_checksum;
use crate::wire::{expand_packet_number, Flags, AUTH_TAG_LEN, HEADER_LEN};
use peregrine_cc::Time;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, CHACHA20_POLY1305};
use std::time::Duration;

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

    /// Packets that may be sealed under one key (RFC 9001 §6.6: 2^23 for
    /// AES-128-GCM, about 12 GB at 1,452-byte datagrams; ChaCha20-Poly1305
    /// has none below 2^62). A connection updates its keys before; if it
    /// cannot, it closes rather than seal one more.
    pub const fn confidentiality_limit(self) -> u64 {
        match self {
            AeadAlgorithm::Aes128Gcm => 1 << 23,
            AeadAlgorithm::ChaCha20Poly1305 => 1 << 62,
        }
    }

    /// Failed openings tolerated under one key (RFC 9001 §6.6: 2^52 for
    /// AES-128-GCM, 2^36 for ChaCha20-Poly1305); at the limit the
    /// connection closes.
    pub const fn integrity_limit(self) -> u64 {
        match self {
            AeadAlgorithm::Aes128Gcm => 1 << 52,
            AeadAlgorithm::ChaCha20Poly1305 => 1 << 36,
        }
    }

    /// Packets sealed under one key before a key update by default: half
    /// the confidentiality limit for AES-128-GCM (2^22, about 6 GB at
    /// 1,452 bytes), 2^30 (about 1.5 TB) for ChaCha20-Poly1305, whose
    /// limit is out of reach: its keys still expire, so that a key taken
    /// from memory opens a bounded part of a long connection.
    pub const fn default_update_packets(self) -> u64 {
        match self {
            AeadAlgorithm::Aes128Gcm => 1 << 22,
            AeadAlgorithm::ChaCha20Poly1305 => 1 << 30,
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
    /// A key's AEAD usage limit was reached (docs/security.md, "AEAD
    /// limits"): the connection is closing and opens nothing more.
    KeyExhausted,
    /// Addressed to a connection ID this side retired after a rotation.
    RetiredId,
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

/// How a sealed datagram's clear header is rewritten for connection-ID
/// rotation (`crypto::rotation`): the IDs, the sender's SYNC_NO and the
/// wire packet number (the real one plus `pn_offset`, mod 2^32) of the
/// rotated sequence. The AEAD authenticates the rewritten bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rewrite {
    pub dest_id: u16,
    pub src_id: u16,
    pub sync_no: u16,
    pub pn_offset: u32,
}

impl Rewrite {
    /// Writes the IDs and SYNC_NO into the header `h` (≥ 20 bytes; the
    /// low 4 bits of byte 17 are WINDOW_SIZE's and stay).
    pub(crate) fn apply_ids(&self, h: &mut [u8]) {
        if h.len() < HEADER_LEN {
            return;
        }
        h[0..2].copy_from_slice(&self.dest_id.to_be_bytes());
        h[2..4].copy_from_slice(&self.src_id.to_be_bytes());
        let sync = (self.sync_no & 0x0fff) << 4;
        h[16] = (sync >> 8) as u8;
        h[17] = (h[17] & 0x0f) | (sync as u8 & 0xf0);
    }
}

/// One receive key and what was opened under it.
struct RecvKey {
    key: DirectionKey,
    /// Its 32-byte traffic secret (the next generation derives from it).
    secret: [u8; 32],
    /// The generation.
    generation: u64,
    /// The first packet number of this generation: the first one opened,
    /// or the boundary the peer announced (KEY_UPDATE).
    first_pn: Option<u64>,
    /// The largest packet number opened under it.
    largest_pn: Option<u64>,
    /// Failed openings under it (the integrity limit counts these).
    failed: u64,
    /// `first_pn` is the peer's announced boundary, not merely the first
    /// packet that arrived.
    exact: bool,
}

impl RecvKey {
    fn new(aead: AeadAlgorithm, secret: [u8; 32], iv: [u8; 12], generation: u64) -> Option<Self> {
        Some(RecvKey {
            key: DirectionKey::new(aead, &secret, iv)?,
            secret,
            generation,
            first_pn: None,
            largest_pn: None,
            failed: 0,
            exact: false,
        })
    }
}

/// Which receive key a packet is tried under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Prev,
    Cur,
    Next,
}

/// Both directions' keys of one connection, their generations (key
/// update, `crypto::update`) and the receive replay window.
///
/// Generations: `cur` is the receive key of the newest generation this
/// side has (keys of generation g seal and open what both sides send in
/// generation g); `prev` (g−1) is kept about three PTOs after `cur`
/// opened its first packet, for reordered packets, then dropped; `next`
/// (g+1) is derived once `cur` is confirmed, ready for the peer's update.
/// Generation g−2 is never held: its packets fail.
pub(crate) struct PacketKeys {
    aead: AeadAlgorithm,
    policy: Policy,
    seal: DirectionKey,
    seal_secret: [u8; 32],
    seal_iv: [u8; 12],
    /// The generation of the sealing key.
    seal_generation: u64,
    open_iv: [u8; 12],
    cur: RecvKey,
    prev: Option<RecvKey>,
    /// When `prev` is dropped (set once `cur` opened a packet).
    prev_until: Option<Time>,
    next: Option<RecvKey>,
    /// The peer announced that its packets from this number on are
    /// sealed under `next` (responder) — a KEY_UPDATE announcement.
    next_from: Option<u64>,
    /// A packet newer than everything failed under its primary key while
    /// another key was possible: the announcement may have been lost, so
    /// such packets are tried under both (a copy kept for the second try).
    suspect: bool,
    /// Reused copy of a ciphertext for a second try (no allocation per
    /// packet: it grows once to the largest datagram).
    scratch: Vec<u8>,
    sealed_packets: u64,
    sealed_bytes: u64,
    /// The application asked for an update, or the integrity limit is
    /// half used.
    update_requested: bool,
    /// The next sealed packet is the KEY_UPDATE announcement: switch the
    /// sealing key right after it.
    switch_armed: bool,
    /// Key updates this side initiated.
    pub(crate) updates_initiated: u64,
    /// A usage limit was reached: no more sealing or opening.
    pub(crate) exhausted: Option<&'static str>,
    /// Generations whose material the key log has not taken.
    pub(crate) unlogged: Vec<u64>,
    largest_sealed: Option<u64>,
    /// The first packet number sealed under the current sealing key.
    seal_first_pn: Option<u64>,
    /// The peer acknowledged a packet sealed under the current sealing
    /// key, so it holds that key: only then may this side initiate the
    /// next update (RFC 9001 §6.1). Receiving the peer's packets of the
    /// generation is not enough: when the peer initiated it, our own
    /// packets of it may all have been lost (sent to an address it left).
    seal_acked: bool,
    replay: ReplayWindow,
}

impl std::fmt::Debug for PacketKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No secret: generations and counters only.
        f.debug_struct("PacketKeys")
            .field("aead", &self.aead)
            .field("seal_generation", &self.seal_generation)
            .field("open_generation", &self.cur.generation)
            .field("sealed_packets", &self.sealed_packets)
            .finish()
    }
}

impl PacketKeys {
    /// Generation 0 for this side (`is_client`: seals with the client's
    /// key) from the handshake's derived secrets, running `aead` with the
    /// default update policy. `None` only if ring refused a key.
    pub(crate) fn new(
        aead: AeadAlgorithm,
        is_client: bool,
        keys: &super::noise::DerivedKeys,
    ) -> Option<PacketKeys> {
        let (seal_secret, seal_iv, open_secret, open_iv) = if is_client {
            (keys.c2s_key, keys.c2s_iv, keys.s2c_key, keys.s2c_iv)
        } else {
            (keys.s2c_key, keys.s2c_iv, keys.c2s_key, keys.c2s_iv)
        };
        Some(PacketKeys {
            aead,
            policy: Policy::new(&KeyUpdateConfig::default(), aead),
            seal: DirectionKey::new(aead, &seal_secret, seal_iv)?,
            seal_secret,
            seal_iv,
            seal_generation: 0,
            open_iv,
            cur: RecvKey::new(aead, open_secret, open_iv, 0)?,
            prev: None,
            prev_until: None,
            next: None,
            next_from: None,
            suspect: false,
            scratch: Vec::new(),
            sealed_packets: 0,
            sealed_bytes: 0,
            update_requested: false,
            switch_armed: false,
            updates_initiated: 0,
            exhausted: None,
            unlogged: Vec::new(),
            largest_sealed: None,
            seal_first_pn: None,
            seal_acked: false,
            replay: ReplayWindow::new(),
        })
    }

    /// The AEAD these keys run.
    pub(crate) fn aead(&self) -> AeadAlgorithm {
        self.aead
    }

    /// Apply a key-update configuration (thresholds, lowered limits).
    pub(crate) fn set_policy(&mut self, cfg: &KeyUpdateConfig) {
        self.policy = Policy::new(cfg, self.aead);
    }

    /// The newest generation this side has keys of (the number of key
    /// updates so far, initiated by either side).
    pub(crate) fn generation(&self) -> u64 {
        self.cur.generation.max(self.seal_generation)
    }

    /// Both directions' traffic secrets of generation `g`, if still
    /// derivable (`g` at or below the newest; (send, receive)). O(g).
    pub(crate) fn secrets_of(&self, g: u64) -> Option<([u8; 32], [u8; 32])> {
        let walk = |mut s: [u8; 32], from: u64| -> Option<[u8; 32]> {
            if g < from {
                return None;
            }
            for _ in from..g {
                s = next_secret(&s);
            }
            Some(s)
        };
        let send = walk(self.seal_secret, self.seal_generation)?;
        let recv = match &self.prev {
            Some(p) if g == p.generation => p.secret,
            _ => walk(self.cur.secret, self.cur.generation)?,
        };
        Some((send, recv))
    }

    /// The IVs (sending, receiving): every generation's.
    pub(crate) fn ivs(&self) -> ([u8; 12], [u8; 12]) {
        (self.seal_iv, self.open_iv)
    }

    /// The application asks for a key update (done at the next packet
    /// once the current generation is confirmed). O(1).
    pub(crate) fn request_update(&mut self) {
        self.update_requested = true;
    }

    /// Whether the current generation is confirmed: the peer has sealed a
    /// packet under it, so it has its keys (QUIC's rule before another
    /// update, RFC 9001 §6.1).
    fn confirmed(&self) -> bool {
        self.cur.largest_pn.is_some() && self.seal_generation == self.cur.generation
    }

    /// The generation a KEY_UPDATE announcement must announce now, if
    /// this side is due to switch its sealing key: it follows a peer's
    /// update, or a threshold was reached (or an update requested) and
    /// the current generation is confirmed. O(1).
    pub(crate) fn update_due(&self) -> Option<u64> {
        if self.switch_armed || self.exhausted.is_some() {
            return None;
        }
        if self.seal_generation < self.cur.generation {
            return Some(self.cur.generation);
        }
        let due = self.update_requested
            || self.sealed_packets >= self.policy.update_packets
            || self.sealed_bytes >= self.policy.update_bytes;
        (due && self.confirmed() && self.seal_acked).then_some(self.seal_generation + 1)
    }

    /// The peer acknowledged packets up to `largest_acked` (its ACK's
    /// largest): one sealed under the current key proves the peer can
    /// open it (see `seal_acked`). A value above anything sealed proves
    /// nothing. O(1).
    pub(crate) fn on_acked(&mut self, largest_acked: u64) {
        let sealed = self.largest_sealed.is_some_and(|l| largest_acked <= l);
        if sealed && self.seal_first_pn.is_some_and(|f| largest_acked >= f) {
            self.seal_acked = true;
        }
    }

    /// The next datagram sealed is the announcement: switch right after.
    pub(crate) fn arm_switch(&mut self) {
        self.switch_armed = true;
    }

    /// Switch the sealing key to the next generation (and, initiating,
    /// the receive keys: the peer's packets of the new generation will
    /// follow; the current ones stay as `prev`).
    fn switch(&mut self) {
        self.switch_armed = false;
        let secret = next_secret(&self.seal_secret);
        let Some(key) = DirectionKey::new(self.aead, &secret, self.seal_iv) else {
            self.exhausted = Some(CONFIDENTIALITY_LIMIT_REASON);
            return;
        };
        self.seal = key;
        self.seal_secret = secret;
        self.seal_generation += 1;
        self.seal_first_pn = None;
        self.seal_acked = false;
        self.sealed_packets = 0;
        // The byte trigger is a rate: an update that waited for the peer's
        // confirmation (RFC 9001 §6.1) past the threshold hands its excess,
        // up to one threshold, to the next key's count, so a transfer
        // of B bytes makes about B / `update_bytes` updates however long
        // the confirmations take (without it, one RTT of data per key was
        // lost to the wait: 12–19 updates per 20 MB at 1 MB on loopback).
        let threshold = self.policy.update_bytes;
        self.sealed_bytes = self.sealed_bytes.saturating_sub(threshold).min(threshold);
        self.update_requested = false;
        if self.seal_generation > self.cur.generation {
            // Initiating: receive keys move too.
            self.updates_initiated += 1;
            let next = match self.next.take() {
                Some(n) => Some(n),
                None => RecvKey::new(
                    self.aead,
                    next_secret(&self.cur.secret),
                    self.open_iv,
                    self.cur.generation + 1,
                ),
            };
            let Some(next) = next else {
                self.exhausted = Some(INTEGRITY_LIMIT_REASON);
                return;
            };
            self.prev = Some(std::mem::replace(&mut self.cur, next));
            // Held until the peer's first packet of the new generation,
            // then about three PTOs.
            self.prev_until = None;
            self.next_from = None;
            self.suspect = false;
            self.unlogged.push(self.seal_generation);
        }
    }

    /// The peer announced (KEY_UPDATE, opened as packet `pn`) that its
    /// packets after `pn` are sealed under `generation`. O(1).
    pub(crate) fn on_announcement(&mut self, pn: u64, generation: u64) {
        if generation == self.cur.generation + 1 && self.cur.largest_pn.is_some() {
            // The peer initiates: `next` from pn + 1.
            self.next_from = Some(pn + 1);
        } else if generation == self.cur.generation && self.cur.largest_pn.is_none() {
            // The peer follows our update: `cur` from pn + 1.
            self.cur.first_pn = Some(pn + 1);
            self.cur.exact = true;
        }
    }

    /// Seals the plaintext datagram `buf[..len]` in place: the clear
    /// header rewritten by `rw` (connection-ID rotation), TOTAL_LEN set to
    /// the sealed length, ST_CKS cleared and CHKSUM zeroed (the tag covers
    /// the datagram), the payload after the packet number encrypted, the
    /// tag appended (the buffer ends with it). Returns the new length, or
    /// `None` if `len` is too short to carry a packet number, would
    /// exceed 65,535 bytes sealed, or the key's usage limit is reached.
    /// O(len), no allocation beyond the tag's room in `buf`. The packet
    /// number is read from the header; [`Self::seal_in`] is told it.
    pub(crate) fn seal(
        &mut self,
        buf: &mut Vec<u8>,
        len: usize,
        rw: Option<&Rewrite>,
    ) -> Option<usize> {
        let tpn = truncated_pn(buf.get(..len)?)?;
        let pn = expand_packet_number(tpn, self.largest_sealed);
        buf.resize(len + AUTH_TAG_LEN, 0);
        self.seal_in(buf, len, pn, rw)
    }

    /// The full packet number of the plaintext datagram `datagram`, as
    /// [`Self::seal`] expands it (for a caller that is not told it).
    /// O(1).
    pub(crate) fn packet_number_of(&self, datagram: &[u8]) -> Option<u64> {
        let tpn = truncated_pn(datagram)?;
        Some(expand_packet_number(tpn, self.largest_sealed))
    }

    /// Seals the plaintext datagram `dg[..len]` in place, its tag written
    /// into `dg[len..len + 16]` (what lies beyond is not touched): the
    /// datagram is sealed where it was built, at any offset of the
    /// caller's buffer. `pn` is its full packet number, which the caller
    /// knows (the packet builder reports it): nothing is read back from
    /// the header. `dg[..len]` must carry `pn`'s low 32 bits, as every
    /// packet the builder writes does. Returns the sealed length; `None`
    /// as for [`Self::seal`] or if `dg` is shorter than `len + 16`.
    /// O(len), no allocation.
    pub(crate) fn seal_in(
        &mut self,
        dg: &mut [u8],
        len: usize,
        pn: u64,
        rw: Option<&Rewrite>,
    ) -> Option<usize> {
        if self.exhausted.is_some() {
            return None;
        }
        if self.sealed_packets >= self.policy.confidentiality_limit {
            self.exhausted = Some(CONFIDENTIALITY_LIMIT_REASON);
            return None;
        }
        let sealed_len = len + AUTH_TAG_LEN;
        if len < CLEAR_PREFIX_LEN || sealed_len > dg.len() {
            return None;
        }
        let tpn = pn as u32;
        let total = u16::try_from(sealed_len).ok()?;
        let (buf, rest) = dg.split_at_mut(len);
        patch_len_and_checksum(buf, total, 0);
        let flags = buf.get_mut(FLAGS_OFFSET)?;
        *flags &= !Flags::ST_CKS.bits();
        if let Some(rw) = rw {
            rw.apply_ids(buf);
            buf.get_mut(HEADER_LEN..CLEAR_PREFIX_LEN)?
                .copy_from_slice(&tpn.wrapping_add(rw.pn_offset).to_be_bytes());
        }
        // The clear prefix, as sent, is the associated data (no copy).
        let (ad, body) = buf.split_at_mut_checked(CLEAR_PREFIX_LEN)?;
        let tag = self
            .seal
            .key
            .seal_in_place_separate_tag(self.seal.nonce(pn), Aad::from(&*ad), body)
            .ok()?;
        rest.get_mut(..AUTH_TAG_LEN)?.copy_from_slice(tag.as_ref());
        self.largest_sealed = Some(self.largest_sealed.map_or(pn, |l| l.max(pn)));
        // Before a switch (the announcement is the old key's last packet).
        self.seal_first_pn.get_or_insert(pn);
        self.sealed_packets += 1;
        self.sealed_bytes += sealed_len as u64;
        if self.switch_armed {
            self.switch();
        }
        Some(sealed_len)
    }

    /// The receive key of `slot`.
    fn slot(&self, slot: Slot) -> Option<&RecvKey> {
        match slot {
            Slot::Prev => self.prev.as_ref(),
            Slot::Cur => Some(&self.cur),
            Slot::Next => self.next.as_ref(),
        }
    }

    /// The key a packet `pn` is tried under first, the one it may be
    /// tried under second, and whether that second try is always made
    /// (`false`: only while `suspect`).
    fn candidates(&self, pn: u64) -> (Slot, Option<Slot>, bool) {
        match self.cur.first_pn {
            Some(f) if pn < f => match (&self.prev, self.cur.exact) {
                (None, _) => (Slot::Cur, None, false),
                (Some(_), true) => (Slot::Prev, None, false),
                // The first packet opened under `cur` may not have been
                // its first one sent (reordering): rare, so both.
                (Some(_), false) => (Slot::Prev, Some(Slot::Cur), true),
            },
            Some(_) if self.next_from.is_some_and(|b| pn >= b) => (Slot::Next, None, false),
            Some(_) => {
                let newest = self.cur.largest_pn.is_none_or(|l| pn > l);
                let second = (newest && self.next.is_some()).then_some(Slot::Next);
                (Slot::Cur, second, false)
            }
            // `cur` awaits the peer's first packet (we initiated): the
            // peer's packets are `prev`'s until it follows.
            None if self.prev.is_some() => (Slot::Prev, Some(Slot::Cur), false),
            None => (Slot::Cur, None, false),
        }
    }

    /// Opens the protected datagram `buf` in place (`now`: for dropping
    /// the previous generation `hold` after the current one's first
    /// packet; `pn_offset`: the rotated sequence's packet-number offset,
    /// subtracted from the wire value, which is rewritten to the real
    /// one). On success the plaintext datagram is `buf[..n]` with the
    /// returned `n` (the tag dropped, TOTAL_LEN patched to `n`), ready for
    /// the ordinary decoder; on failure `buf`'s payload is unspecified.
    /// Order of checks: length and TOTAL_LEN, ST_CKS clear, replay window,
    /// tag. O(len), no allocation; one AEAD open, two (and a copy) only
    /// for a packet that may start a generation whose announcement was
    /// lost, and while `cur` awaits the peer's first packet.
    pub(crate) fn open(
        &mut self,
        buf: &mut [u8],
        now: Time,
        hold: Duration,
        pn_offset: u32,
    ) -> Result<usize, OpenError> {
        if self.exhausted.is_some() {
            return Err(OpenError::KeyExhausted);
        }
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
        if self.prev_until.is_some_and(|t| now >= t) {
            self.prev = None;
            self.prev_until = None;
        }
        let tpn = truncated_pn(buf)
            .ok_or(OpenError::Malformed)?
            .wrapping_sub(pn_offset);
        let pn = expand_packet_number(tpn, self.replay.largest());
        if !self.replay.is_fresh(pn) {
            return Err(OpenError::Replayed);
        }
        let (first, second, always) = self.candidates(pn);
        let second = second.filter(|_| always || self.suspect);
        if second.is_some() {
            self.scratch.clear();
            self.scratch.extend_from_slice(buf);
        }
        let mut opened = self.try_open(first, buf, pn).map(|_| first);
        if opened.is_none() {
            if let Some(s) = second {
                buf.copy_from_slice(&self.scratch);
                opened = self.try_open(s, buf, pn).map(|_| s);
            } else if self.candidates(pn).1.is_some() {
                // Maybe a generation whose announcement was lost: from now
                // on such packets get a second try.
                self.suspect = true;
            }
        }
        let Some(slot) = opened else {
            let failed = match first {
                Slot::Prev => self.prev.as_mut().map(|k| &mut k.failed),
                Slot::Cur => Some(&mut self.cur.failed),
                Slot::Next => self.next.as_mut().map(|k| &mut k.failed),
            };
            if let Some(f) = failed {
                *f += 1;
                if *f >= self.policy.integrity_limit {
                    self.exhausted = Some(INTEGRITY_LIMIT_REASON);
                } else if *f >= self.policy.integrity_limit / 2 {
                    self.update_requested = true;
                }
            }
            return Err(OpenError::Unauthenticated);
        };
        self.on_opened(slot, pn, now, hold);
        self.replay.insert(pn);
        if pn_offset != 0 {
            buf.get_mut(HEADER_LEN..CLEAR_PREFIX_LEN)
                .ok_or(OpenError::Malformed)?
                .copy_from_slice(&tpn.to_be_bytes());
        }
        let plain_len = len - AUTH_TAG_LEN;
        // `plain_len < len ≤ 65,535`: fits.
        let plain_total = u16::try_from(plain_len).map_err(|_| OpenError::Malformed)?;
        patch_len_and_checksum(buf, plain_total, 0);
        Ok(plain_len)
    }

    /// One AEAD open of `buf` under `slot`'s key. `Some(())`: it
    /// authenticated.
    fn try_open(&self, slot: Slot, buf: &mut [u8], pn: u64) -> Option<()> {
        let k = self.slot(slot)?;
        let (ad, body) = buf.split_at_mut_checked(CLEAR_PREFIX_LEN)?;
        k.key
            .key
            .open_in_place(k.key.nonce(pn), Aad::from(&*ad), body)
            .ok()
            .map(|_| ())
    }

    /// Bookkeeping after `pn` opened under `slot`: the first packet of the
    /// current generation confirms it (the previous key's hold starts, the
    /// next key is derived); one under `next` is the peer's update.
    fn on_opened(&mut self, slot: Slot, pn: u64, now: Time, hold: Duration) {
        match slot {
            Slot::Prev => {
                if let Some(p) = self.prev.as_mut() {
                    p.largest_pn = Some(p.largest_pn.map_or(pn, |l| l.max(pn)));
                }
            }
            Slot::Cur => {
                if self.cur.largest_pn.is_none() {
                    self.confirm(pn, now, hold);
                } else if !self.cur.exact {
                    self.cur.first_pn = self.cur.first_pn.map(|f| f.min(pn));
                }
                self.cur.largest_pn = Some(self.cur.largest_pn.map_or(pn, |l| l.max(pn)));
                if self.cur.largest_pn == Some(pn) {
                    self.suspect = false;
                }
            }
            Slot::Next => {
                let Some(mut next) = self.next.take() else {
                    return;
                };
                if let Some(b) = self.next_from {
                    next.first_pn = Some(b);
                    next.exact = true;
                }
                self.prev = Some(std::mem::replace(&mut self.cur, next));
                self.next_from = None;
                self.suspect = false;
                self.confirm(pn, now, hold);
                self.cur.largest_pn = Some(pn);
                self.unlogged.push(self.cur.generation);
            }
        }
    }

    /// `cur` opened its first packet, `pn`.
    fn confirm(&mut self, pn: u64, now: Time, hold: Duration) {
        let first = self.cur.first_pn.map_or(pn, |f| f.min(pn));
        self.cur.first_pn = Some(first);
        if self.prev.is_some() {
            self.prev_until = Some(now + hold);
        }
        self.next = RecvKey::new(
            self.aead,
            next_secret(&self.cur.secret),
            self.open_iv,
            self.cur.generation + 1,
        );
    }
}

/// Benchmark hook for `benches/packet.rs` (seal + open of one packet per
/// AEAD); not part of the API.
#[doc(hidden)]
pub mod bench {
    use super::{AeadAlgorithm, PacketKeys};
    use crate::wire::{Flags, HEADER_LEN};
    use peregrine_cc::Time;
    use std::time::Duration;

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
            let k = crate::crypto::DerivedKeys {
                c2s_key: [0x42; 32],
                c2s_iv: [7; 12],
                s2c_key: [0x43; 32],
                s2c_iv: [8; 12],
            };
            Some(SealOpen {
                tx: PacketKeys::new(a, true, &k)?,
                rx: PacketKeys::new(a, false, &k)?,
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
            let Some(n) = self.tx.seal(buf, plain_len, None) else {
                return false;
            };
            buf.get_mut(..n).is_some_and(|b| {
                self.rx
                    .open(b, Time::ZERO, Duration::ZERO, 0)
                    .is_ok_and(|m| m == plain_len)
            })
        }
    }
}

#[cfg(test)]
mod update_tests {
    //! Key update at the packet-key level: both directions ratchet, the
    //! previous generation is held for reordered packets and then
    //! dropped, generation n−2 never opens, a lost announcement costs one
    //! packet, and the usage limits close.

    use super::*;
    use crate::crypto::noise::DerivedKeys;

    const HOLD: Duration = Duration::from_secs(1);

    fn material() -> DerivedKeys {
        DerivedKeys {
            c2s_key: [0x11; 32],
            c2s_iv: [0x22; 12],
            s2c_key: [0x33; 32],
            s2c_iv: [0x44; 12],
        }
    }

    fn side(client: bool) -> PacketKeys {
        PacketKeys::new(AeadAlgorithm::Aes128Gcm, client, &material()).unwrap()
    }

    /// A plaintext END (type 6) with packet number `pn` and 8 payload bytes.
    fn sealed(k: &mut PacketKeys, pn: u32) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; CLEAR_PREFIX_LEN + 8];
        buf[0..4].copy_from_slice(&[0, 1, 0, 2]);
        buf[4] = 0x60;
        buf[5] = Flags::W_VAL.bits();
        buf[HEADER_LEN..CLEAR_PREFIX_LEN].copy_from_slice(&pn.to_be_bytes());
        buf[CLEAR_PREFIX_LEN..].copy_from_slice(b"payload!");
        let len = buf.len();
        k.seal(&mut buf, len, None)?;
        Some(buf)
    }

    fn open(k: &mut PacketKeys, wire: &[u8], now: Time) -> Result<usize, OpenError> {
        let mut b = wire.to_vec();
        let n = k.open(&mut b, now, HOLD, 0)?;
        assert_eq!(&b[CLEAR_PREFIX_LEN..n], b"payload!");
        Ok(n)
    }

    /// One key update initiated by `a` (which sends `pa`, `pa + 1`), the
    /// peer `b` following (sending `pb`, `pb + 1`).
    fn update(a: &mut PacketKeys, b: &mut PacketKeys, pa: u32, pb: u32, now: Time) {
        let g = a.generation() + 1;
        a.request_update();
        // The peer acknowledged a's latest packet, of the current key.
        a.on_acked(a.largest_sealed.expect("a sealed before"));
        assert_eq!(a.update_due(), Some(g));
        a.arm_switch();
        let announce = sealed(a, pa).unwrap();
        open(b, &announce, now).unwrap();
        b.on_announcement(u64::from(pa), g);
        let first = sealed(a, pa + 1).unwrap();
        open(b, &first, now).unwrap();
        assert_eq!(b.generation(), g, "the peer promoted");
        assert_eq!(b.update_due(), Some(g), "and follows");
        b.arm_switch();
        let follow = sealed(b, pb).unwrap();
        open(a, &follow, now).unwrap();
        a.on_announcement(u64::from(pb), g);
        let reply = sealed(b, pb + 1).unwrap();
        open(a, &reply, now).unwrap();
        assert_eq!((a.generation(), b.generation()), (g, g));
        assert_eq!(a.update_due(), None, "nothing due right after");
    }

    #[test]
    fn both_directions_ratchet_and_generation_n_minus_2_is_rejected() {
        let (mut c, mut s) = (side(true), side(false));
        let mut stale = side(true); // still seals under generation 0
        let t = Time::from_millis(10);
        open(&mut s, &sealed(&mut c, 0).unwrap(), t).unwrap();
        open(&mut c, &sealed(&mut s, 0).unwrap(), t).unwrap();
        let never_delivered_gen0 = sealed(&mut c, 1).unwrap();
        // Generation 1, initiated by the client.
        update(&mut c, &mut s, 2, 1, t);
        let late_gen1 = sealed(&mut c, 4).unwrap();
        let later_gen1 = sealed(&mut c, 5).unwrap();
        open(&mut s, &sealed(&mut c, 6).unwrap(), t).unwrap();
        open(&mut c, &sealed(&mut s, 3).unwrap(), t).unwrap();
        // Generation 2, initiated by the server this time.
        update(&mut s, &mut c, 4, 7, t);
        assert_eq!(c.updates_initiated, 1);
        assert_eq!(s.updates_initiated, 1);
        // Generation 1 (n−1) still opens, reordered, within the hold.
        open(&mut s, &late_gen1, t).unwrap();
        // Generation 0 (n−2) never does: neither a fresh packet number
        // nor an old one that was never delivered.
        let fresh_gen0 = sealed(&mut stale, 100).unwrap();
        assert_eq!(
            open(&mut s, &fresh_gen0, t),
            Err(OpenError::Unauthenticated)
        );
        assert_eq!(
            open(&mut s, &never_delivered_gen0, t),
            Err(OpenError::Unauthenticated)
        );
        // After the hold, generation 1 is dropped too.
        assert_eq!(
            open(&mut s, &later_gen1, t + Duration::from_secs(2)),
            Err(OpenError::Unauthenticated)
        );
        // And generation 2 goes on.
        open(
            &mut s,
            &sealed(&mut c, 9).unwrap(),
            t + Duration::from_secs(2),
        )
        .unwrap();
    }

    #[test]
    fn a_lost_announcement_costs_one_packet() {
        let (mut c, mut s) = (side(true), side(false));
        let t = Time::ZERO;
        open(&mut s, &sealed(&mut c, 0).unwrap(), t).unwrap();
        open(&mut c, &sealed(&mut s, 0).unwrap(), t).unwrap();
        c.request_update();
        c.arm_switch();
        let _lost = sealed(&mut c, 1).unwrap();
        let first = sealed(&mut c, 2).unwrap();
        assert_eq!(open(&mut s, &first, t), Err(OpenError::Unauthenticated));
        assert_eq!(s.generation(), 0);
        let second = sealed(&mut c, 3).unwrap();
        open(&mut s, &second, t).unwrap();
        assert_eq!(s.generation(), 1, "found by the second try");
        // A retransmission of the lost data under a new number opens.
        open(&mut s, &sealed(&mut c, 4).unwrap(), t).unwrap();
    }

    #[test]
    fn no_update_before_confirmation_and_the_confidentiality_limit_closes() {
        let mut c = side(true);
        c.set_policy(&KeyUpdateConfig {
            confidentiality_limit: Some(10),
            ..KeyUpdateConfig::default()
        });
        for pn in 0..10 {
            assert!(sealed(&mut c, pn).is_some());
            // Nothing heard from the peer: the generation is not confirmed.
            assert_eq!(c.update_due(), None);
        }
        assert!(sealed(&mut c, 10).is_none(), "the 11th packet is refused");
        assert_eq!(c.exhausted, Some(CONFIDENTIALITY_LIMIT_REASON));
    }

    #[test]
    fn the_packet_threshold_triggers_an_update_when_confirmed() {
        let (mut c, mut s) = (side(true), side(false));
        c.set_policy(&KeyUpdateConfig {
            packets: Some(3),
            ..KeyUpdateConfig::default()
        });
        open(&mut c, &sealed(&mut s, 0).unwrap(), Time::ZERO).unwrap();
        for pn in 0..3 {
            assert_eq!(c.update_due(), None);
            open(&mut s, &sealed(&mut c, pn).unwrap(), Time::ZERO).unwrap();
        }
        assert_eq!(c.update_due(), None, "no packet of the key acknowledged");
        c.on_acked(2);
        assert_eq!(c.update_due(), Some(1));
    }

    #[test]
    fn bytes_sealed_past_the_byte_threshold_count_toward_the_next_key() {
        let threshold = super::super::update::MIN_KEY_UPDATE_BYTES;
        let (mut c, mut s) = (side(true), side(false));
        c.set_policy(&KeyUpdateConfig {
            bytes: Some(threshold),
            ..KeyUpdateConfig::default()
        });
        let t = Time::ZERO;
        open(&mut c, &sealed(&mut s, 0).unwrap(), t).unwrap();
        // Half a threshold more is sealed while no packet of the key is
        // acknowledged (the update waits for the peer).
        let mut pn = 0;
        while c.sealed_bytes < threshold * 3 / 2 {
            open(&mut s, &sealed(&mut c, pn).unwrap(), t).unwrap();
            pn += 1;
        }
        let excess = c.sealed_bytes - threshold;
        let packet = c.sealed_bytes / u64::from(pn);
        update(&mut c, &mut s, pn, 1, t);
        // The announcement (old key) and one packet of the new key were
        // sealed by `update`: the new key starts from the excess.
        assert_eq!(c.sealed_bytes, excess + 2 * packet);
        // So the next update is due after the rest of a threshold, not a
        // whole one; and the carry never exceeds one threshold.
        let mut more = 0;
        let mut pn = pn + 2;
        while c.sealed_bytes < threshold {
            open(&mut s, &sealed(&mut c, pn).unwrap(), t).unwrap();
            pn += 1;
            more += packet;
        }
        assert!(
            more < threshold / 2 + packet,
            "{more} bytes to the next update"
        );
        c.on_acked(u64::from(pn - 1));
        assert_eq!(c.update_due(), Some(2));
    }

    #[test]
    fn the_next_update_waits_for_an_ack_of_the_current_key() {
        // The client initiates generation 1; the server follows, but every
        // packet it seals under generation 1 is lost (the client moved).
        // Having received the client's generation-1 packets is not
        // enough: the server must not start generation 2, which the
        // client — still waiting for the server's first generation-1
        // packet — could never open.
        let (mut c, mut s) = (side(true), side(false));
        s.set_policy(&KeyUpdateConfig {
            packets: Some(2),
            ..KeyUpdateConfig::default()
        });
        let t = Time::ZERO;
        open(&mut s, &sealed(&mut c, 0).unwrap(), t).unwrap();
        open(&mut c, &sealed(&mut s, 0).unwrap(), t).unwrap();
        c.on_acked(0);
        s.on_acked(0);
        c.request_update();
        c.arm_switch();
        open(&mut s, &sealed(&mut c, 1).unwrap(), t).unwrap();
        s.on_announcement(1, 1);
        open(&mut s, &sealed(&mut c, 2).unwrap(), t).unwrap();
        assert_eq!(s.update_due(), Some(1), "the server follows");
        s.arm_switch();
        let _lost_announcement = sealed(&mut s, 1).unwrap();
        let _lost = [sealed(&mut s, 2).unwrap(), sealed(&mut s, 3).unwrap()];
        open(&mut s, &sealed(&mut c, 3).unwrap(), t).unwrap();
        // Past its packet threshold, generation 1 confirmed by the
        // client's packets — and still nothing due.
        assert_eq!(s.update_due(), None);
        // An acknowledgement of its last generation-0 packet (the
        // announcement) proves nothing about generation 1, nor does one
        // of a packet never sealed.
        s.on_acked(1);
        s.on_acked(99);
        assert_eq!(s.update_due(), None);
        // The client acknowledges a generation-1 packet: now it may.
        s.on_acked(3);
        assert_eq!(s.update_due(), Some(2));
    }

    #[test]
    fn the_integrity_limit_closes() {
        let (mut c, mut s) = (side(true), side(false));
        s.set_policy(&KeyUpdateConfig {
            integrity_limit: Some(4),
            ..KeyUpdateConfig::default()
        });
        open(&mut s, &sealed(&mut c, 0).unwrap(), Time::ZERO).unwrap();
        for pn in 1..5u32 {
            let mut forged = sealed(&mut c, pn).unwrap();
            let last = forged.len() - 1;
            forged[last] ^= 1;
            assert_eq!(
                open(&mut s, &forged, Time::ZERO),
                Err(OpenError::Unauthenticated)
            );
            if pn == 2 {
                assert!(
                    s.update_requested,
                    "an update is asked for at half the limit"
                );
            }
        }
        assert_eq!(s.exhausted, Some(INTEGRITY_LIMIT_REASON));
        let good = sealed(&mut c, 9).unwrap();
        assert_eq!(
            open(&mut s, &good, Time::ZERO),
            Err(OpenError::KeyExhausted)
        );
    }
}
