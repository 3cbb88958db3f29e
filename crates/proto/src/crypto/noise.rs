//! The Noise handshakes carried in START / START-REPLY: `Noise_IK`,
//! `Noise_XX`, `Noise_IKpsk2` and `Noise_NNpsk0` over `snow`, suite
//! `25519_ChaChaPoly_SHA256`.
//!
//! * The SECURITY TLV value is `[mode_byte, noise_message…]`
//!   ([`NoisePattern::mode_byte`]). START carries message 1, the accepting
//!   START-REPLY message 2; XX's message 3 ([`XX_MSG3_LEN`] bytes) rides
//!   behind the client's sealed datagrams (see `SecurityState`).
//! * Prologue: [`PROLOGUE`] ‖ mode byte, so both sides agree on the
//!   pattern or fail.
//! * Payload of messages 1 and 2: the 32-byte [`binding`] of the START /
//!   START-REPLY carrying it (its header fields and its other TLVs), so a
//!   genuine Noise message spliced into a packet with other parameters
//!   fails. Message 3's payload is empty.
//! * Randomness: `snow` draws ephemeral keys from a ChaCha20 keystream
//!   seeded per handshake with 32 bytes from the endpoint's seeded
//!   generator (a custom `CryptoResolver`), so the same seed gives the
//!   same handshake bytes and nothing here reads OS entropy.
//! * Keys: Peregrine does not use snow's transport mode (its nonce is a
//!   counter, ours the packet number). [`derive_keys`] expands
//!   HKDF-SHA256(salt = handshake hash, ikm = both split keys) into one
//!   `(key, iv)` pair per direction for `aead.rs`, for the AEAD the AEAD
//!   TLVs agreed on (the client's offer in START, the server's choice in
//!   START-REPLY; both bound, so the handshake hash covers them).
//!
//! Client-side failures never advance the handshake: snow restores its
//! symmetric state on a failed `read_message`, and a message 2 that
//! authenticates but fails a later check (binding, pinned key) rewinds the
//! client to "message 1 written" by rebuilding the state from the same
//! seed (message 1 is re-derived byte for byte).

use super::aead::{AeadAlgorithm, PacketKeys};
use super::keys::{NoiseConfig, NoisePattern, PublicKey, KEY_LEN};
use crate::wire::{HeaderRepr, RejectReason, StartPayload, Tlv};
use hkdf::Hkdf;
use sha2::{Digest, Sha256};
use snow::params::NoiseParams;
use snow::HandshakeState;

pub(crate) use super::noise_rng::HandshakeRng;
use super::noise_rng::SeededResolver;

/// The prologue every handshake starts from (followed by the mode byte).
pub const PROLOGUE: &[u8] = b"peregrine v1";
/// Length of the binding carried as the payload of messages 1 and 2.
pub const BINDING_LEN: usize = 32;
/// Length of XX message 3 with its empty payload: the client's static key
/// encrypted (32 + 16 tag) and the payload tag (16).
pub const XX_MSG3_LEN: usize = KEY_LEN + 16 + 16;
/// Bytes of seed each handshake's random generator starts from.
pub const SEED_LEN: usize = 32;
/// Length of a stateless-reset token (docs/security.md, "Stateless
/// reset"): it rides encrypted behind the binding in Noise message 2.
pub const RESET_TOKEN_LEN: usize = 16;
/// Domain separation of the binding hash.
const BINDING_LABEL: &[u8] = b"peregrine v1 binding";
/// Largest Noise message Peregrine's patterns produce (XX message 2 with
/// the binding: 32 + 48 + 48), with room to spare.
const MAX_MESSAGE: usize = 256;

/// Labels of the HKDF expansion (domain separation per key and direction).
const LABEL_C2S_KEY: &[u8] = b"peregrine v1 client key";
const LABEL_C2S_IV: &[u8] = b"peregrine v1 client iv";
const LABEL_S2C_KEY: &[u8] = b"peregrine v1 server key";
const LABEL_S2C_IV: &[u8] = b"peregrine v1 server iv";

/// Why a handshake step failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The peer sent no SECURITY TLV although this side requires one.
    #[error("peer sent no SECURITY TLV")]
    Missing,
    /// The SECURITY TLV is empty or names an unknown mode.
    #[error("SECURITY TLV is empty or names an unknown mode")]
    Malformed,
    /// The SECURITY TLV names a pattern this side does not run.
    #[error("SECURITY TLV names a Noise pattern this side does not accept")]
    NotAccepted,
    /// The Noise message did not authenticate (forged, corrupted, wrong
    /// pre-shared key or wrong static key).
    #[error("Noise message did not authenticate")]
    Unauthenticated,
    /// The Noise message authenticated but binds other START fields.
    #[error("Noise payload does not bind this packet's fields")]
    BindingMismatch,
    /// XX: the server's static key is not the pinned one.
    #[error("server static key is not the expected one")]
    WrongServerKey,
    /// The client's static key is not in `authorized_keys`.
    #[error("client static key is not authorized")]
    Unauthorized,
    /// Server: the START's AEAD TLV offers no AEAD this side accepts.
    #[error("no packet AEAD in common with the peer")]
    NoCommonAead,
    /// Client: the START-REPLY chose an AEAD it was not offered (or its
    /// AEAD TLV is not exactly one code).
    #[error("START-REPLY chose a packet AEAD that was not offered")]
    AeadMismatch,
    /// snow refused a step (should not happen with a validated config).
    #[error("handshake state error")]
    Internal,
}

impl HandshakeError {
    /// Whether the server answers this failure with a REJECT.
    pub fn answered(self) -> bool {
        self.reject_reason().is_some()
    }

    /// The REJECT reason a server answers this failure with:
    /// `security_required` for a missing or unsupported SECURITY TLV,
    /// `aead_unsupported` when no offered AEAD is accepted, `key_mismatch`
    /// when message 1 does not decrypt (the client pinned another server
    /// key, or the pre-shared keys differ: the client can then say so in
    /// a second instead of timing out; the REJECT is a few dozen bytes
    /// against a START padded to 256, so no amplification); `None` (no
    /// answer) otherwise.
    pub fn reject_reason(self) -> Option<RejectReason> {
        match self {
            HandshakeError::Missing | HandshakeError::Malformed | HandshakeError::NotAccepted => {
                Some(RejectReason::SECURITY_REQUIRED)
            }
            HandshakeError::NoCommonAead => Some(RejectReason::AEAD_UNSUPPORTED),
            HandshakeError::Unauthenticated => Some(RejectReason::KEY_MISMATCH),
            _ => None,
        }
    }
}

/// Whether a TLV is covered by the binding. SECURITY carries the Noise
/// message itself. TLVs an on-path party may legitimately change between
/// retransmissions of one START (the admission layer's PADDING and
/// RETRY_TOKEN) return `false` too: a START resent with a token after a
/// REJECT `retry` keeps its message 1.
fn bound(tlv: &Tlv<'_>) -> bool {
    match tlv {
        Tlv::Security(_) | Tlv::RetryToken(_) | Tlv::Padding(_) => false,
        Tlv::Version(_)
        | Tlv::WindowScale(_)
        | Tlv::MaxPacketSize(_)
        | Tlv::Controller(_)
        | Tlv::StartupMode(_)
        | Tlv::StreamCredit(_)
        | Tlv::Aead(_)
        | Tlv::StatelessReset
        | Tlv::Unknown { .. } => true,
    }
}

/// The binding of a START or START-REPLY: SHA-256 over a label, PK_TYPE,
/// FLAGS, DEST_ID, SRC_ID, SYNC_NO, WINDOW_SIZE and the encoding of every
/// bound TLV in order (all but SECURITY).
pub fn binding(h: &HeaderRepr, tlvs: &[Tlv<'_>]) -> [u8; BINDING_LEN] {
    let mut d = Sha256::new();
    d.update(BINDING_LABEL);
    d.update([h.pk_type.code(), h.flags.bits()]);
    d.update(h.dest_id.to_be_bytes());
    d.update(h.src_id.to_be_bytes());
    d.update(h.sync_no.to_be_bytes());
    d.update(h.window_size.to_be_bytes());
    let mut buf = Vec::new();
    for t in tlvs.iter().filter(|t| bound(t)) {
        buf.clear();
        buf.resize(t.buffer_len(), 0);
        // A decoded or self-built TLV always re-encodes; if it somehow did
        // not, its code and length still enter the hash.
        let p = StartPayload { tlvs: vec![*t] };
        if p.emit(&mut buf).is_err() {
            buf.clear();
            buf.push(t.code());
        }
        d.update(&buf);
    }
    d.finalize().into()
}

/// Per-direction key material (client to server first).
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

impl std::fmt::Debug for DerivedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DerivedKeys(<redacted>)")
    }
}

/// HKDF-SHA256 with salt = the handshake hash and ikm = both split keys
/// (`k1` ‖ `k2`), expanded with the four direction labels.
pub fn derive_keys(handshake_hash: &[u8], k1: &[u8; 32], k2: &[u8; 32]) -> DerivedKeys {
    let mut ikm = [0u8; 64];
    ikm[..32].copy_from_slice(k1);
    ikm[32..].copy_from_slice(k2);
    let hk = Hkdf::<Sha256>::new(Some(handshake_hash), &ikm);
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

/// The packet keys of a finished handshake, for this side, running
/// `aead` (AES-128-GCM takes the first 16 bytes of each derived key), and
/// the raw material they were made from: ring's keys cannot be read back,
/// so a key log (`SecurityState::keep_keys`) keeps this copy — or drops
/// it, which is all that happens without one.
fn packet_keys(
    state: &mut HandshakeState,
    is_client: bool,
    aead: AeadAlgorithm,
) -> Result<(PacketKeys, DerivedKeys), HandshakeError> {
    let (k1, k2) = state.dangerously_get_raw_split();
    let k = derive_keys(state.get_handshake_hash(), &k1, &k2);
    let keys = PacketKeys::new(aead, is_client, &k).ok_or(HandshakeError::Internal)?;
    Ok((keys, k))
}

fn remote_static(state: &HandshakeState) -> Option<PublicKey> {
    state
        .get_remote_static()
        .and_then(|k| <[u8; KEY_LEN]>::try_from(k).ok())
        .map(PublicKey)
}

/// A snow handshake state for `pattern` as `cfg` describes this side.
fn build(
    pattern: NoisePattern,
    cfg: &NoiseConfig,
    initiator: bool,
    seed: [u8; SEED_LEN],
) -> Result<HandshakeState, HandshakeError> {
    let params: NoiseParams = pattern
        .protocol_name()
        .parse()
        .map_err(|_| HandshakeError::Internal)?;
    let mut prologue = PROLOGUE.to_vec();
    prologue.push(pattern.mode_byte());
    let mut b =
        snow::Builder::with_resolver(params, Box::new(SeededResolver(seed))).prologue(&prologue);
    if pattern.needs_keypair() {
        let kp = cfg.keypair.as_ref().ok_or(HandshakeError::Internal)?;
        b = b.local_private_key(kp.private_bytes());
    }
    let server_key = cfg.peer_key.map(|k| k.0);
    if initiator && pattern.needs_server_key() {
        let k = server_key.as_ref().ok_or(HandshakeError::Internal)?;
        b = b.remote_public_key(k);
    }
    if pattern.needs_psk() {
        let psk = cfg.psk.as_ref().ok_or(HandshakeError::Internal)?;
        let location = if pattern == NoisePattern::NNpsk0 {
            0
        } else {
            2
        };
        b = b.psk(location, psk);
    }
    let r = if initiator {
        b.build_initiator()
    } else {
        b.build_responder()
    };
    r.map_err(|_| HandshakeError::Internal)
}

fn split_value(value: Option<&[u8]>) -> Result<(NoisePattern, &[u8]), HandshakeError> {
    let (mode, msg) = value
        .ok_or(HandshakeError::Missing)?
        .split_first()
        .ok_or(HandshakeError::Malformed)?;
    let p = NoisePattern::from_mode_byte(*mode).ok_or(HandshakeError::Malformed)?;
    Ok((p, msg))
}

/// What a finished (client) or answered (server) handshake step yields.
pub(crate) struct Established {
    /// Packet keys, once the handshake is complete on this side.
    pub keys: PacketKeys,
    /// The raw material of `keys` (for a key log; dropped otherwise).
    pub raw: DerivedKeys,
    /// The peer's static key, if the pattern has one.
    pub peer: Option<PublicKey>,
    /// XX client: message 3, to append to its datagrams.
    pub msg3: Option<Vec<u8>>,
    /// Client: the stateless-reset token the server gave in message 2.
    pub reset_token: Option<[u8; RESET_TOKEN_LEN]>,
}

/// The initiator's side: message 1 out, message 2 in (and XX message 3).
pub(crate) struct ClientHandshake {
    pattern: NoisePattern,
    config: NoiseConfig,
    seed: [u8; SEED_LEN],
    state: HandshakeState,
    /// `[mode, message 1]` once written.
    value: Vec<u8>,
    /// The binding message 1 carried (to rebuild it identically).
    start_binding: [u8; BINDING_LEN],
    /// The AEAD TLV value of START: the offered codes, preferred first.
    offer: &'static [u8],
}

impl ClientHandshake {
    /// A handshake for the client configuration `cfg` (validated);
    /// `aes_hardware` orders an `Auto` AEAD offer.
    pub(crate) fn new(
        cfg: &NoiseConfig,
        seed: [u8; SEED_LEN],
        aes_hardware: bool,
    ) -> Result<ClientHandshake, HandshakeError> {
        let pattern = *cfg.patterns.first().ok_or(HandshakeError::Internal)?;
        Ok(ClientHandshake {
            pattern,
            state: build(pattern, cfg, true, seed)?,
            config: cfg.clone(),
            seed,
            value: Vec::new(),
            start_binding: [0; BINDING_LEN],
            offer: cfg.aead.offer(aes_hardware),
        })
    }

    /// The AEAD TLV value START carries (the offer).
    pub(crate) fn offer(&self) -> &'static [u8] {
        self.offer
    }

    /// The AEAD a START-REPLY's AEAD TLV value chose, if it is exactly one
    /// offered code (no TLV: ChaCha20-Poly1305, if offered).
    fn chosen(&self, reply: Option<&[u8]>) -> Result<AeadAlgorithm, HandshakeError> {
        let code = match reply {
            None => AeadAlgorithm::ChaCha20Poly1305.code(),
            Some([c]) => *c,
            Some(_) => return Err(HandshakeError::AeadMismatch),
        };
        if !self.offer.contains(&code) {
            return Err(HandshakeError::AeadMismatch);
        }
        AeadAlgorithm::from_code(code).ok_or(HandshakeError::AeadMismatch)
    }

    /// The pattern this client runs.
    pub(crate) fn pattern(&self) -> NoisePattern {
        self.pattern
    }

    /// The SECURITY value of START, writing message 1 (bound to
    /// `start_binding`) the first time; later calls return the same bytes.
    pub(crate) fn start_value(&mut self, start_binding: [u8; BINDING_LEN]) -> Option<&[u8]> {
        if self.value.is_empty() {
            let mut msg = [0u8; MAX_MESSAGE];
            let n = self.state.write_message(&start_binding, &mut msg).ok()?;
            self.value.push(self.pattern.mode_byte());
            self.value.extend_from_slice(msg.get(..n)?);
            self.start_binding = start_binding;
        }
        Some(&self.value)
    }

    /// The SECURITY value already written, if any.
    pub(crate) fn value(&self) -> Option<&[u8]> {
        (!self.value.is_empty()).then_some(&self.value[..])
    }

    /// Back to "message 1 written": rebuild from the same seed and rewrite
    /// message 1 (the same bytes, the generator being seeded).
    fn rewind(&mut self) -> Result<(), HandshakeError> {
        let mut state = build(self.pattern, &self.config, true, self.seed)?;
        let mut msg = [0u8; MAX_MESSAGE];
        let n = state
            .write_message(&self.start_binding, &mut msg)
            .map_err(|_| HandshakeError::Internal)?;
        if msg.get(..n) != self.value.get(1..) {
            return Err(HandshakeError::Internal);
        }
        self.state = state;
        Ok(())
    }

    /// Reads the START-REPLY's SECURITY value and its AEAD TLV value
    /// `aead` (`reply_binding`: the binding of that START-REPLY, which
    /// covers the AEAD TLV). On failure nothing changed: the client keeps
    /// waiting for the genuine answer.
    pub(crate) fn read_reply(
        &mut self,
        value: Option<&[u8]>,
        aead: Option<&[u8]>,
        reply_binding: [u8; BINDING_LEN],
    ) -> Result<Established, HandshakeError> {
        if self.value.is_empty() {
            return Err(HandshakeError::Internal);
        }
        let aead = self.chosen(aead)?;
        let (p, msg) = split_value(value)?;
        if p != self.pattern {
            return Err(HandshakeError::NotAccepted);
        }
        let mut payload = [0u8; MAX_MESSAGE];
        // On a failed read snow restores its symmetric state (and the
        // remote keys are rewritten by the next read): nothing to undo.
        let n = self
            .state
            .read_message(msg, &mut payload)
            .map_err(|_| HandshakeError::Unauthenticated)?;
        // The payload is the binding, then (a server that was asked) the
        // stateless-reset token: encrypted and authenticated by Noise.
        let reset_token = payload
            .get(BINDING_LEN..n)
            .and_then(|t| <[u8; RESET_TOKEN_LEN]>::try_from(t).ok());
        let shape_ok = n == BINDING_LEN || reset_token.is_some();
        let checked = if !shape_ok || payload.get(..BINDING_LEN) != Some(&reply_binding[..]) {
            Err(HandshakeError::BindingMismatch)
        } else if self.pattern == NoisePattern::XX
            && self
                .config
                .peer_key
                .is_some_and(|k| remote_static(&self.state) != Some(k))
        {
            Err(HandshakeError::WrongServerKey)
        } else {
            Ok(())
        };
        if let Err(e) = checked {
            // The message authenticated, so snow moved on: rewind.
            self.rewind()?;
            return Err(e);
        }
        let msg3 = if self.pattern == NoisePattern::XX {
            let mut m = [0u8; MAX_MESSAGE];
            let n = self
                .state
                .write_message(&[], &mut m)
                .map_err(|_| HandshakeError::Internal)?;
            Some(m.get(..n).ok_or(HandshakeError::Internal)?.to_vec())
        } else {
            None
        };
        let (keys, raw) = packet_keys(&mut self.state, true, aead)?;
        Ok(Established {
            peer: remote_static(&self.state),
            keys,
            raw,
            msg3,
            reset_token,
        })
    }
}

/// What rebuilds an XX responder: its configuration, seed and message 1.
type Replay = (NoiseConfig, [u8; SEED_LEN], Vec<u8>);

/// The responder's side: message 1 read (before any connection state
/// exists), message 2 written with the START-REPLY, XX message 3 read.
pub(crate) struct ServerHandshake {
    pattern: NoisePattern,
    state: HandshakeState,
    authorized: Option<Vec<PublicKey>>,
    /// `[mode, message 2]` once written.
    value: Vec<u8>,
    /// XX: what rebuilds the state after a failed message 3 (snow does not
    /// restore its cipher key then): the configuration, the seed and
    /// message 1.
    replay: Option<Box<Replay>>,
    /// The binding message 2 carried.
    reply_binding: [u8; BINDING_LEN],
    /// The AEAD chosen from the client's offer.
    aead: AeadAlgorithm,
    /// Whether the START carried an AEAD TLV (the REPLY then names the
    /// choice; a START without one gets none back).
    answer_aead: bool,
    /// Whether the START asked for a stateless-reset token (TLV
    /// STATELESS_RESET), and the token message 2 carries once set.
    reset_asked: bool,
    reset_token: Option<[u8; RESET_TOKEN_LEN]>,
}

impl ServerHandshake {
    /// Reads message 1 from a START's SECURITY value. `cfg` is the server's
    /// configuration, `offer` the START's AEAD TLV value, `start_binding`
    /// the binding of that START (which covers the offer: an offer edited
    /// on the path fails message 1, or message 2 for XX).
    pub(crate) fn accept(
        cfg: &NoiseConfig,
        value: Option<&[u8]>,
        offer: Option<&[u8]>,
        start_binding: [u8; BINDING_LEN],
        seed: [u8; SEED_LEN],
    ) -> Result<ServerHandshake, HandshakeError> {
        let (pattern, msg) = split_value(value)?;
        if !cfg.patterns.contains(&pattern) {
            return Err(HandshakeError::NotAccepted);
        }
        let aead = cfg.aead.select(offer).ok_or(HandshakeError::NoCommonAead)?;
        let mut state = build(pattern, cfg, false, seed)?;
        let mut payload = [0u8; MAX_MESSAGE];
        let n = state
            .read_message(msg, &mut payload)
            .map_err(|_| HandshakeError::Unauthenticated)?;
        if payload.get(..n) != Some(&start_binding[..]) {
            return Err(HandshakeError::BindingMismatch);
        }
        let hs = ServerHandshake {
            pattern,
            authorized: cfg.authorized_keys.clone(),
            state,
            value: Vec::new(),
            replay: (pattern == NoisePattern::XX)
                .then(|| Box::new((cfg.clone(), seed, msg.to_vec()))),
            reply_binding: [0; BINDING_LEN],
            aead,
            answer_aead: offer.is_some(),
            reset_asked: false,
            reset_token: None,
        };
        // IK / IKpsk2 reveal the client's key in message 1.
        if let Some(k) = remote_static(&hs.state) {
            hs.check_authorized(k)?;
        }
        Ok(hs)
    }

    fn check_authorized(&self, k: PublicKey) -> Result<(), HandshakeError> {
        match &self.authorized {
            Some(list) if !list.contains(&k) => Err(HandshakeError::Unauthorized),
            _ => Ok(()),
        }
    }

    /// The pattern the client chose.
    pub(crate) fn pattern(&self) -> NoisePattern {
        self.pattern
    }

    /// The AEAD TLV value the START-REPLY carries (the choice), if the
    /// START carried an offer.
    pub(crate) fn answer(&self) -> Option<&'static [u8]> {
        self.answer_aead.then(|| self.aead.choice())
    }

    /// The START asked for a stateless-reset token.
    pub(crate) fn ask_reset_token(&mut self) {
        self.reset_asked = true;
    }

    /// Whether the START asked for a stateless-reset token.
    pub(crate) fn reset_asked(&self) -> bool {
        self.reset_asked
    }

    /// The token message 2 carries behind the binding (set before it is
    /// written; ignored unless the START asked).
    pub(crate) fn set_reset_token(&mut self, token: [u8; RESET_TOKEN_LEN]) {
        if self.reset_asked {
            self.reset_token = Some(token);
        }
    }

    /// Whether message 2 carries a token (its START-REPLY then says so
    /// with an empty STATELESS_RESET TLV).
    pub(crate) fn gives_reset_token(&self) -> bool {
        self.reset_token.is_some()
    }

    /// The client's static key, once known.
    pub(crate) fn peer(&self) -> Option<PublicKey> {
        remote_static(&self.state)
    }

    /// The SECURITY value of START-REPLY, writing message 2 (bound to
    /// `reply_binding`) the first time. With every pattern but XX the
    /// handshake is then complete and the keys are returned (with their
    /// raw material, for a key log).
    pub(crate) fn reply_value(
        &mut self,
        reply_binding: [u8; BINDING_LEN],
    ) -> Result<Option<(PacketKeys, DerivedKeys)>, HandshakeError> {
        if !self.value.is_empty() {
            return Ok(None);
        }
        let mut msg = [0u8; MAX_MESSAGE];
        let mut payload = [0u8; BINDING_LEN + RESET_TOKEN_LEN];
        payload[..BINDING_LEN].copy_from_slice(&reply_binding);
        let payload_len = match self.reset_token {
            Some(t) => {
                payload[BINDING_LEN..].copy_from_slice(&t);
                BINDING_LEN + RESET_TOKEN_LEN
            }
            None => BINDING_LEN,
        };
        let n = self
            .state
            .write_message(&payload[..payload_len], &mut msg)
            .map_err(|_| HandshakeError::Internal)?;
        self.value.push(self.pattern.mode_byte());
        self.value
            .extend_from_slice(msg.get(..n).ok_or(HandshakeError::Internal)?);
        self.reply_binding = reply_binding;
        if !self.state.is_handshake_finished() {
            return Ok(None);
        }
        packet_keys(&mut self.state, false, self.aead).map(Some)
    }

    /// The SECURITY value already written, if any.
    pub(crate) fn value(&self) -> Option<&[u8]> {
        (!self.value.is_empty()).then_some(&self.value[..])
    }

    /// Whether XX message 3 is still awaited.
    pub(crate) fn awaits_msg3(&self) -> bool {
        !self.value.is_empty() && !self.state.is_handshake_finished()
    }

    /// Back to "message 2 written": rebuild from the seed, re-read message
    /// 1 and rewrite message 2 (the same bytes, the generator being seeded).
    fn rewind(&mut self) -> Result<(), HandshakeError> {
        let (cfg, seed, msg1) = self.replay.as_deref().ok_or(HandshakeError::Internal)?;
        let mut state = build(self.pattern, cfg, false, *seed)?;
        let mut buf = [0u8; MAX_MESSAGE];
        state
            .read_message(msg1, &mut buf)
            .map_err(|_| HandshakeError::Internal)?;
        let mut payload = self.reply_binding.to_vec();
        payload.extend(self.reset_token.iter().flatten());
        let n = state
            .write_message(&payload, &mut buf)
            .map_err(|_| HandshakeError::Internal)?;
        if buf.get(..n) != self.value.get(1..) {
            return Err(HandshakeError::Internal);
        }
        self.state = state;
        Ok(())
    }

    /// Reads XX message 3 and checks the client's key; the packet keys
    /// and their raw material (for a key log).
    pub(crate) fn read_msg3(
        &mut self,
        msg3: &[u8],
    ) -> Result<(PacketKeys, DerivedKeys), HandshakeError> {
        if !self.awaits_msg3() {
            return Err(HandshakeError::Internal);
        }
        let mut payload = [0u8; MAX_MESSAGE];
        if self.state.read_message(msg3, &mut payload).is_err() {
            // A failure before the client's key decrypted changed nothing;
            // after it, snow has moved its cipher key on: rebuild.
            if self.peer().is_some() {
                self.rewind()?;
            }
            return Err(HandshakeError::Unauthenticated);
        }
        let k = self.peer().ok_or(HandshakeError::Internal)?;
        self.check_authorized(k)?;
        packet_keys(&mut self.state, false, self.aead)
    }
}

impl std::fmt::Debug for ClientHandshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientHandshake({:?})", self.pattern)
    }
}

impl std::fmt::Debug for ServerHandshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerHandshake({:?})", self.pattern)
    }
}
