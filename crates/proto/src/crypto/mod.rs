//! Security: the handshake carried in the SECURITY TLV, packet protection
//! (AEAD on every post-handshake datagram) and the replay window.
//!
//! This module is the crypto seam of the sans-IO core. It never reads a
//! clock or the OS: the random bytes of a handshake come from the
//! endpoint's seeded generator (the simulator: reproducible runs) or, in
//! the UDP runtime, from a seed drawn from OS entropy by the caller.
//!
//! Handshakes ([`noise`]): the SECURITY TLV of START / START-REPLY carries
//! a Noise handshake (`Noise_IK`, `Noise_XX`, `Noise_IKpsk2`,
//! `Noise_NNpsk0`; [`SecurityConfig::PresharedKey`] is `Noise_NNpsk0`),
//! its first byte naming the pattern; the AEAD TLV next to it agrees on
//! the packet AEAD (AES-128-GCM or ChaCha20-Poly1305, both from `ring`).
//! The handshake yields one key and IV per direction ([`aead`]); a replay
//! window ([`replay`]) guards the packet numbers.
//!
//! Unencrypted mode (`ConnectionConfig::security = None`, the default in
//! proto and the simulator) sends no SECURITY TLV and is byte-identical to
//! the wire format without this module.

pub mod aead;
pub mod keylog;
pub mod keys;
pub mod noise;
mod noise_rng;
pub mod replay;
pub mod rotation;
pub mod update;

pub use keys::{
    AeadPreference, NoiseConfig, NoisePattern, PublicKey, SecurityConfig, StaticKeypair, KEY_LEN,
    PSK_LEN,
};

pub use aead::{AeadAlgorithm, OpenError};
pub use keylog::{KeyLogError, KeyLogLabel, KeyLogLine, PacketKeyMaterial};
pub use noise::{
    binding, derive_keys, DerivedKeys, HandshakeError, BINDING_LEN, RESET_TOKEN_LEN, XX_MSG3_LEN,
};
pub use update::{KeyUpdateConfig, MIN_KEY_UPDATE_BYTES};

use crate::send_helpers::TxBuf;
use crate::wire::AUTH_TAG_LEN;
use aead::PacketKeys;
use noise::{ClientHandshake, Established, ServerHandshake};
use peregrine_cc::Time;
use rotation::{BaseIds, Rotation};
use std::net::SocketAddr;
use std::time::Duration;

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
    /// The Noise pattern of the handshake (`None`: unencrypted).
    pub pattern: Option<NoisePattern>,
    /// The peer's static key, once the handshake revealed it (IK, IKpsk2,
    /// XX; never NNpsk0).
    pub peer_static_key: Option<PublicKey>,
    /// The packet AEAD the handshake agreed on (`None` until the keys
    /// exist, and unencrypted).
    pub aead: Option<AeadAlgorithm>,
    /// Datagrams sealed.
    pub packets_sealed: u64,
    /// Datagrams opened (authenticated).
    pub packets_opened: u64,
    /// Datagrams dropped because they did not authenticate (forged,
    /// tampered, or arriving before the keys).
    pub auth_failures: u64,
    /// Authentic-looking datagrams dropped by the replay window.
    pub replays_dropped: u64,
    /// Datagrams dropped before authentication for a malformed length or
    /// TOTAL_LEN, or ST_CKS set (a sealed datagram has no checksum).
    pub malformed_dropped: u64,
    /// Handshake messages dropped: a client's START-REPLY whose message 2
    /// failed (forged, wrong key, binding, no SECURITY TLV), a server's XX
    /// message 3 that failed.
    pub handshake_failures: u64,
    /// Key updates: the newest key generation (either side initiated).
    pub key_updates: u64,
    /// Of those, the ones this side initiated.
    pub key_updates_initiated: u64,
    /// Connection-ID changes: a client's switches to a spare ID, a
    /// server's clients seen switching.
    pub cid_changes: u64,
    /// Datagrams dropped because they were addressed to a retired
    /// connection ID.
    pub retired_id_dropped: u64,
}

/// The handshake side of one connection.
#[derive(Debug)]
enum Handshake {
    Client(Box<ClientHandshake>),
    Server(Box<ServerHandshake>),
}

/// One connection's security state.
#[derive(Debug)]
pub(crate) struct SecurityState {
    hs: Handshake,
    /// Boxed: an XX server's half-open connection has none yet, and the
    /// keys are most of this structure (docs/security.md, half-open bytes).
    keys: Option<Box<PacketKeys>>,
    /// XX client: message 3, appended to every datagram until one from the
    /// server opened.
    msg3: Option<Vec<u8>>,
    /// Server: the START-REPLY as first sent (re-sent byte for byte).
    reply: Option<Vec<u8>>,
    /// Client: the WINDOW_SIZE of its first START (every retransmission
    /// repeats it, so the binding stays valid).
    start_window: Option<u32>,
    /// Server XX: message 3 authenticated a key that is not authorized.
    pub(crate) refused: bool,
    /// Server XX awaiting message 3: the application has not been told.
    pub(crate) unannounced: bool,
    /// Client: the stateless-reset token the server gave in message 2.
    reset_token: Option<[u8; RESET_TOKEN_LEN]>,
    /// The key log's slot (`keep_keys`): `None` unless the driver asked
    /// for one, so the keys' raw material is then dropped at derivation.
    keylog: Option<Box<KeyLogSlot>>,
    /// Key update and usage limits (`ConnectionConfig::key_update`),
    /// applied when the keys are derived.
    key_update: KeyUpdateConfig,
    /// Connection-ID rotation (rotation.rs), once the keys exist.
    rotation: Option<Box<Rotation>>,
    pub(crate) stats: SecurityStats,
}

/// What a key log keeps of one connection until the driver takes it.
#[derive(Debug, Default)]
struct KeyLogSlot {
    /// Server: the client's ephemeral key, read from the START (a client
    /// reads its own from its message 1).
    client_ephemeral: Option<[u8; KEY_LEN]>,
    /// The material, once derived and until taken.
    material: Option<PacketKeyMaterial>,
    /// The client's ephemeral key once known (later generations' lines).
    ephemeral: Option<[u8; KEY_LEN]>,
}

impl SecurityState {
    /// The client's handshake (config validated for the client role);
    /// `aes_hardware` orders an `Auto` AEAD offer.
    pub(crate) fn client(
        config: &SecurityConfig,
        seed: [u8; noise::SEED_LEN],
        aes_hardware: bool,
    ) -> Result<SecurityState, HandshakeError> {
        let hs = ClientHandshake::new(&config.noise(), seed, aes_hardware)?;
        let pattern = hs.pattern();
        Ok(SecurityState::with(
            Handshake::Client(Box::new(hs)),
            pattern,
        ))
    }

    /// The server's handshake, message 1 already read.
    pub(crate) fn server(hs: ServerHandshake) -> SecurityState {
        let pattern = hs.pattern();
        let peer = hs.peer();
        let mut s = SecurityState::with(Handshake::Server(Box::new(hs)), pattern);
        s.stats.peer_static_key = peer;
        s.unannounced = pattern == NoisePattern::XX;
        s
    }

    fn with(hs: Handshake, pattern: NoisePattern) -> SecurityState {
        SecurityState {
            hs,
            keys: None,
            msg3: None,
            reply: None,
            start_window: None,
            refused: false,
            unannounced: false,
            reset_token: None,
            keylog: None,
            key_update: KeyUpdateConfig::default(),
            rotation: None,
            stats: SecurityStats {
                pattern: Some(pattern),
                ..SecurityStats::default()
            },
        }
    }

    /// Whether this is the initiator.
    pub(crate) fn is_client(&self) -> bool {
        matches!(self.hs, Handshake::Client(_))
    }

    /// Bytes each datagram carries beyond its plaintext: the tag, and for
    /// an XX client the message 3 it appends — until the server has shown
    /// it has the keys (the first datagram opened), from then on the tag
    /// only (`Connection::sync_overhead` gives the room back to data).
    pub(crate) fn overhead(&self) -> usize {
        match &self.hs {
            Handshake::Client(c)
                if c.pattern() == NoisePattern::XX
                    && (self.keys.is_none() || self.msg3.is_some()) =>
            {
                crate::wire::AUTH_TAG_LEN + XX_MSG3_LEN
            }
            _ => crate::wire::AUTH_TAG_LEN,
        }
    }

    /// Client: the window its STARTs carry (the first one's).
    pub(crate) fn pin_start_window(&mut self, window: u32) -> u32 {
        *self.start_window.get_or_insert(window)
    }

    /// Writes this side's handshake message for the START / START-REPLY
    /// whose binding is `b` (once; later calls change nothing).
    pub(crate) fn prepare(&mut self, b: [u8; BINDING_LEN]) {
        match &mut self.hs {
            Handshake::Client(c) => {
                let _ = c.start_value(b);
            }
            Handshake::Server(s) => match s.reply_value(b) {
                Ok(Some((keys, raw))) => self.established(keys, raw),
                Ok(None) => {}
                Err(_) => self.stats.handshake_failures += 1,
            },
        }
    }

    fn established(&mut self, mut keys: PacketKeys, raw: DerivedKeys) {
        self.stats.aead = Some(keys.aead());
        keys.set_policy(&self.key_update);
        self.rotation = Some(Box::new(Rotation::new(
            rotation::rotation_key(&raw.c2s_key, &raw.s2c_key),
            self.is_client(),
        )));
        if let Some(slot) = self.keylog.as_deref_mut() {
            // Message 1 starts with the client's ephemeral key in every
            // pattern (NNpsk0's psk token writes no bytes).
            let own = match &self.hs {
                Handshake::Client(c) => c
                    .value()
                    .and_then(|v| v.get(1..1 + KEY_LEN))
                    .and_then(|e| <[u8; KEY_LEN]>::try_from(e).ok()),
                Handshake::Server(_) => None,
            };
            if let Some(e) = own.or(slot.client_ephemeral) {
                slot.material = Some(PacketKeyMaterial::new(keys.aead(), e, raw));
                slot.ephemeral = Some(e);
            }
        }
        self.keys = Some(Box::new(keys));
        self.stats.encrypted = true;
    }

    /// Keep this connection's raw packet keys for a key log when they are
    /// derived. `client_ephemeral`: a server's copy of the client's
    /// ephemeral key from the START (a client knows its own). O(1).
    pub(crate) fn keep_keys(&mut self, client_ephemeral: Option<[u8; KEY_LEN]>) {
        self.keylog = Some(Box::new(KeyLogSlot {
            client_ephemeral,
            material: None,
            ephemeral: None,
        }));
    }

    /// The key log's material, each generation once: generation 0 when
    /// the keys are derived, then each key update's. `None` before the
    /// keys exist, when every generation was taken, and without
    /// `keep_keys`. O(generation) per update (its secrets are re-derived).
    pub(crate) fn take_keys(&mut self) -> Option<PacketKeyMaterial> {
        let slot = self.keylog.as_deref_mut()?;
        if let Some(m) = slot.material.take() {
            return Some(m);
        }
        let e = slot.ephemeral?;
        let keys = self.keys.as_deref_mut()?;
        while !keys.unlogged.is_empty() {
            let g = keys.unlogged.remove(0);
            let Some((send, recv)) = keys.secrets_of(g) else {
                continue;
            };
            let (send_iv, recv_iv) = keys.ivs();
            let (c2s_key, c2s_iv, s2c_key, s2c_iv) = if matches!(self.hs, Handshake::Client(_)) {
                (send, send_iv, recv, recv_iv)
            } else {
                (recv, recv_iv, send, send_iv)
            };
            let raw = DerivedKeys {
                c2s_key,
                c2s_iv,
                s2c_key,
                s2c_iv,
            };
            return Some(PacketKeyMaterial::generation(keys.aead(), e, g, raw));
        }
        None
    }

    /// Whether the key log has material to take (O(1)).
    pub(crate) fn has_keys_to_log(&self) -> bool {
        self.keylog.as_deref().is_some_and(|s| {
            s.material.is_some()
                || (s.ephemeral.is_some()
                    && self.keys.as_ref().is_some_and(|k| !k.unlogged.is_empty()))
        })
    }

    /// Use `cfg` for key updates and limits (before the keys exist).
    pub(crate) fn set_key_update(&mut self, cfg: KeyUpdateConfig) {
        self.key_update = cfg;
        if let Some(k) = self.keys.as_deref_mut() {
            k.set_policy(&cfg);
        }
    }

    /// Counters, with the key generation and ID changes.
    pub(crate) fn stats(&self) -> SecurityStats {
        let mut s = self.stats;
        if let Some(k) = &self.keys {
            s.key_updates = k.generation();
            s.key_updates_initiated = k.updates_initiated;
        }
        s.cid_changes = self.rotation.as_ref().map_or(0, |r| r.changes);
        s
    }

    /// A usage limit reached with no update possible: the close reason.
    pub(crate) fn exhausted(&self) -> Option<&'static str> {
        self.keys.as_ref()?.exhausted
    }

    /// The application asks for a key update. Whether the keys exist.
    pub(crate) fn request_update(&mut self) -> bool {
        self.keys.as_mut().map(|k| k.request_update()).is_some()
    }

    /// The generation a KEY_UPDATE must announce now (see
    /// `PacketKeys::update_due`). O(1).
    pub(crate) fn update_due(&self) -> Option<u64> {
        self.keys.as_ref()?.update_due()
    }

    /// The next sealed datagram is the KEY_UPDATE: switch after it.
    pub(crate) fn arm_switch(&mut self) {
        if let Some(k) = self.keys.as_mut() {
            k.arm_switch();
        }
    }

    /// The peer acknowledged our packets up to `largest_acked` (see
    /// `PacketKeys::on_acked`). O(1).
    pub(crate) fn on_acked(&mut self, largest_acked: u64) {
        if let Some(k) = self.keys.as_mut() {
            k.on_acked(largest_acked);
        }
    }

    /// The peer's KEY_UPDATE, opened as packet `pn`.
    pub(crate) fn on_key_update(&mut self, pn: u64, generation: u64) {
        if let Some(k) = self.keys.as_mut() {
            k.on_announcement(pn, generation);
        }
    }

    /// The rotation state, once the keys exist, told the handshake IDs.
    pub(crate) fn rotation(&mut self, base: BaseIds) -> Option<&mut Rotation> {
        let r = self.rotation.as_deref_mut()?;
        r.set_base(base);
        Some(r)
    }

    /// The rotation state, as it is.
    pub(crate) fn rotation_ref(&self) -> Option<&Rotation> {
        self.rotation.as_deref()
    }

    /// Our AEAD TLV value: the client's offer, or the server's choice when
    /// the START carried an offer.
    pub(crate) fn aead_tlv(&self) -> Option<&'static [u8]> {
        match &self.hs {
            Handshake::Client(c) => Some(c.offer()),
            Handshake::Server(s) => s.answer(),
        }
    }

    /// The length of our SECURITY TLV value, before or after it is
    /// written (the anti-amplification budget needs it before).
    pub(crate) fn hello_len(&self) -> usize {
        if let Some(v) = self.hello() {
            return v.len();
        }
        let Some(p) = self.stats.pattern else {
            return 0;
        };
        match &self.hs {
            Handshake::Client(_) => p.start_value_len(),
            Handshake::Server(s) if s.gives_reset_token() => p.reply_value_len() + RESET_TOKEN_LEN,
            Handshake::Server(_) => p.reply_value_len(),
        }
    }

    /// Whether our START / START-REPLY carries the empty STATELESS_RESET
    /// TLV: a client always asks for a token; a server says so when its
    /// message 2 carries one.
    pub(crate) fn stateless_reset_tlv(&self) -> bool {
        match &self.hs {
            Handshake::Client(_) => true,
            Handshake::Server(s) => s.gives_reset_token(),
        }
    }

    /// Client: the stateless-reset token the server gave, once the
    /// handshake completed with a server that gives one.
    pub(crate) fn reset_token(&self) -> Option<&[u8; RESET_TOKEN_LEN]> {
        self.reset_token.as_ref()
    }

    /// Our SECURITY TLV value, once written.
    pub(crate) fn hello(&self) -> Option<&[u8]> {
        match &self.hs {
            Handshake::Client(c) => c.value(),
            Handshake::Server(s) => s.value(),
        }
    }

    /// Client: reads the START-REPLY's SECURITY and AEAD values. A failure
    /// is counted and changes nothing else.
    pub(crate) fn read_reply(
        &mut self,
        value: Option<&[u8]>,
        aead: Option<&[u8]>,
        b: [u8; BINDING_LEN],
    ) -> Result<(), HandshakeError> {
        let r = match &mut self.hs {
            Handshake::Client(c) if self.keys.is_none() => c.read_reply(value, aead, b),
            _ => Err(HandshakeError::Internal),
        };
        match r {
            Ok(Established {
                keys,
                raw,
                peer,
                msg3,
                reset_token,
            }) => {
                self.established(keys, raw);
                self.stats.peer_static_key = peer;
                self.msg3 = msg3;
                self.reset_token = reset_token;
                Ok(())
            }
            Err(e) => {
                self.stats.handshake_failures += 1;
                Err(e)
            }
        }
    }

    /// Server: the START-REPLY bytes first sent, if any.
    pub(crate) fn sent_reply(&self) -> Option<&[u8]> {
        self.reply.as_deref()
    }

    /// Server: remembers the START-REPLY just sent.
    pub(crate) fn keep_reply(&mut self, bytes: &[u8]) {
        if self.reply.is_none() && !self.is_client() {
            self.reply = Some(bytes.to_vec());
        }
    }

    /// Whether packets can be sealed (keys established).
    pub(crate) fn has_keys(&self) -> bool {
        self.keys.is_some()
    }

    /// Seals an outgoing datagram `buf[..len]` (`None`: keys missing or
    /// unsealable; the caller drops it), the packet number read from its
    /// header; `buf` then holds exactly the sealed datagram. An XX client
    /// appends message 3 until the server has shown it has the keys.
    #[cfg(test)]
    pub(crate) fn seal(
        &mut self,
        buf: &mut Vec<u8>,
        len: usize,
        dest: SocketAddr,
    ) -> Option<usize> {
        let mut out = TxBuf::new(buf, 0);
        let n = self.seal_at(&mut out, len, None, dest)?;
        out.truncate(n);
        Some(n)
    }

    /// Seals the datagram of `len` bytes built at the start of `out`, in
    /// place (the bytes before it are not touched): told its full packet
    /// number `pn` (the packet builder's report) or, `None`, reading it
    /// from the header. The tag (and an XX client's message 3) follows
    /// it. Its sealed length; `None`: keys missing or unsealable, the
    /// caller drops it. O(len).
    pub(crate) fn seal_at(
        &mut self,
        out: &mut TxBuf<'_>,
        len: usize,
        pn: Option<u64>,
        dest: SocketAddr,
    ) -> Option<usize> {
        let rw = self.rotation.as_ref().and_then(|r| r.send_rewrite(dest));
        let keys = self.keys.as_mut()?;
        let plain = out.get(0..len)?;
        let pn = match pn {
            Some(pn) => pn,
            None => keys.packet_number_of(plain)?,
        };
        let n = keys.seal_in(out.window(len + AUTH_TAG_LEN), len, pn, rw.as_ref())?;
        Some(self.after_seal(out, n))
    }

    /// After a datagram was sealed to `n` bytes: an XX client's message 3
    /// behind it, the count. Its new length.
    fn after_seal(&mut self, out: &mut TxBuf<'_>, n: usize) -> usize {
        let mut n = n;
        if let Some(m) = &self.msg3 {
            out.put(n, m);
            n += m.len();
        }
        self.stats.packets_sealed += 1;
        n
    }

    /// Opens an incoming datagram in place, counting the outcome; the
    /// plaintext datagram is `bytes[..n]` for the returned `n`. A server
    /// awaiting XX message 3 takes it from behind the datagram first (and
    /// ignores the copies that keep coming until the client hears from
    /// it). `now`, `hold` (how long an old key generation or connection ID
    /// stays usable: about 3 PTOs) and `remote` (the sender's address,
    /// for connection-ID rotation). O(len), no copy.
    pub(crate) fn open(
        &mut self,
        bytes: &mut [u8],
        now: Time,
        hold: Duration,
        remote: SocketAddr,
    ) -> Result<usize, OpenError> {
        let mut bytes = bytes;
        if let Handshake::Server(s) = &mut self.hs {
            let total = bytes
                .get(8..10)
                .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])));
            if s.pattern() == NoisePattern::XX && bytes.len() == total + XX_MSG3_LEN {
                let (dg, msg3) = std::mem::take(&mut bytes).split_at_mut(total);
                bytes = dg;
                if self.keys.is_none() {
                    match s.read_msg3(msg3) {
                        Ok((keys, raw)) => {
                            self.stats.peer_static_key = s.peer();
                            self.established(keys, raw);
                        }
                        Err(e) => {
                            self.stats.handshake_failures += 1;
                            self.refused |= e == HandshakeError::Unauthorized;
                            return Err(OpenError::Handshake);
                        }
                    }
                }
            }
        }
        let incoming = match self.rotation.as_deref_mut() {
            Some(r) => {
                r.expire(now);
                let dest = bytes
                    .get(0..2)
                    .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
                r.incoming(dest)
            }
            None => Some(rotation::Incoming {
                seq: 0,
                pn_offset: 0,
            }),
        };
        let r = match (self.keys.as_mut(), incoming) {
            (_, None) => Err(OpenError::RetiredId),
            (Some(k), Some(inc)) => k.open(bytes, now, hold, inc.pn_offset),
            (None, _) => Err(OpenError::NoKeys),
        };
        if let (Ok(_), Some(inc), Some(rot)) = (&r, incoming, self.rotation.as_deref_mut()) {
            rot.on_received(inc.seq, remote, bytes, now, hold);
        }
        match r {
            Ok(_) => {
                self.stats.packets_opened += 1;
                // The server has our message 3: stop appending it.
                self.msg3 = None;
            }
            Err(OpenError::Unauthenticated | OpenError::NoKeys) => self.stats.auth_failures += 1,
            Err(OpenError::Replayed) => self.stats.replays_dropped += 1,
            Err(OpenError::Malformed) => self.stats.malformed_dropped += 1,
            Err(OpenError::Handshake) => self.stats.handshake_failures += 1,
            Err(OpenError::RetiredId) => self.stats.retired_id_dropped += 1,
            Err(OpenError::KeyExhausted) => self.stats.auth_failures += 1,
        }
        r
    }
}

#[cfg(test)]
mod tests;
