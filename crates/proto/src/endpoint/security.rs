//! The endpoint's side of packet protection (docs/security.md): the
//! secrets it seeds (handshake ephemeral keys, the retry-token key), Noise
//! message 1 read from a START before any connection state exists, and the
//! opening of protected datagrams before they are decoded, with the
//! endpoint-wide counters of what failed.

use super::{ConnectionHandle, Endpoint};
use crate::connection::ConnectionConfig;
use crate::crypto::noise::{HandshakeRng, ServerHandshake};
use crate::crypto::{
    binding, AeadAlgorithm, NoisePattern, OpenError, PacketKeyMaterial, PublicKey, KEY_LEN,
};
use crate::wire::{Header, HeaderRepr, RejectReason, Tlv};

impl Endpoint {
    /// Reseeds the endpoint's secrets with 32 bytes: the generator of the
    /// Noise handshakes' ephemeral keys and the retry-token key (the UDP
    /// runtime passes OS entropy: the 64-bit endpoint seed alone would
    /// bound their entropy to 64 bits). Two secrets are derived with
    /// separate labels, so neither reveals the other.
    ///
    /// Complexity: O(1).
    pub fn seed_handshakes(&mut self, seed: [u8; 32]) {
        let derive = |label: &[u8]| -> [u8; 32] {
            use sha2::Digest;
            let mut h = sha2::Sha256::new();
            h.update(label);
            h.update(seed);
            h.finalize().into()
        };
        self.handshake_rng = HandshakeRng::from_seed(derive(b"peregrine v1 handshake seed"));
        self.admission.rekey(&derive(b"peregrine v1 token secret"));
        // A secret from the listener's static key survives restarts: keep it.
        if !self.reset_secret_persistent {
            self.reset_secret = super::failure::derive_secret(&derive(b"peregrine v1 reset seed"));
        }
    }

    /// The peer's static key of a connection, once its handshake revealed
    /// it (`Noise_IK`, `Noise_XX`, `Noise_IKpsk2`; `None` for
    /// `Noise_NNpsk0` and unprotected connections).
    ///
    /// Complexity: O(log n).
    pub fn peer_static_key(&self, handle: ConnectionHandle) -> Option<PublicKey> {
        self.connections.get(&handle)?.peer_static_key()
    }

    /// The Noise pattern a connection's handshake runs (`None`: unprotected).
    ///
    /// Complexity: O(log n).
    pub fn security_pattern(&self, handle: ConnectionHandle) -> Option<NoisePattern> {
        self.connections.get(&handle)?.security_pattern()
    }

    /// The packet AEAD a connection's handshake agreed on (`None`:
    /// unprotected, or keys not yet established).
    ///
    /// Complexity: O(log n).
    pub fn security_aead(&self, handle: ConnectionHandle) -> Option<AeadAlgorithm> {
        self.connections.get(&handle)?.security_stats().aead
    }

    /// Key log: every connection created from now on keeps its raw packet
    /// keys (key and IV per direction) when its handshake derives them,
    /// for [`take_packet_keys`](Self::take_packet_keys). Off by default;
    /// off, nothing is kept and nothing is checked per packet. The UDP
    /// runtime turns it on for `PEREGRINE_KEYLOG` (docs/observability.md).
    ///
    /// Complexity: O(1).
    pub fn set_key_log(&mut self, on: bool) {
        self.key_log = on;
    }

    /// A connection's packet key material for the key log, once: `None`
    /// before its keys exist (a client until START-REPLY, a server until
    /// it writes START-REPLY or, with `Noise_XX`, reads message 3), after
    /// it was taken, for unprotected connections, and without
    /// [`set_key_log`](Self::set_key_log). The driver writes
    /// [`PacketKeyMaterial::key_log_lines`].
    ///
    /// Complexity: O(log n).
    pub fn take_packet_keys(&mut self, handle: ConnectionHandle) -> Option<PacketKeyMaterial> {
        // Untracked: taking the copy changes nothing the endpoint's
        // queues depend on.
        self.connections.get_untracked(&handle)?.take_packet_keys()
    }

    /// Server: reads the AEAD offer and Noise message 1 from a START
    /// before any state exists. `Err(Some(reason))`: answer REJECT with it
    /// (`security_required`: no or unsupported SECURITY TLV;
    /// `aead_unsupported`: no offered AEAD accepted); `Err(None)`: drop
    /// silently (it did not authenticate).
    pub(super) fn read_start_handshake(
        &mut self,
        cfg: &ConnectionConfig,
        h: &HeaderRepr,
        tlvs: &[Tlv<'_>],
    ) -> Result<Option<ServerHandshake>, Option<RejectReason>> {
        let Some(sec) = &cfg.security else {
            return Ok(None);
        };
        let value = tlvs.iter().find_map(|t| match t {
            Tlv::Security(v) => Some(*v),
            _ => None,
        });
        let offer = tlvs.iter().find_map(|t| match t {
            Tlv::Aead(v) => Some(*v),
            _ => None,
        });
        let seed = self.handshake_rng.next_seed();
        let asks_reset = tlvs.iter().any(|t| matches!(t, Tlv::StatelessReset));
        ServerHandshake::accept(&sec.noise(), value, offer, binding(h, tlvs), seed)
            .map(|mut hs| {
                if asks_reset {
                    hs.ask_reset_token();
                }
                Some(hs)
            })
            .map_err(|e| {
                self.stats.handshake_failures += 1;
                e.reject_reason()
            })
    }

    /// Opens `bytes` in place if they are a post-handshake datagram for a
    /// protected connection. `Some(Some(n))`: opened, decode `bytes[..n]`;
    /// `Some(None)`: dropped and counted; `None`: not protected (decode
    /// `bytes` as they are). Reads only DEST_ID and PK_TYPE before the
    /// connection's keys; O(len), no copy.
    pub(super) fn unprotect(
        &mut self,
        bytes: &mut [u8],
        remote: std::net::SocketAddr,
    ) -> Option<Option<usize>> {
        let view = Header::new_checked(&*bytes).ok()?;
        let (dest_id, pk_type) = (view.dest_id(), view.pk_type().ok()?);
        if dest_id == 0 || pk_type.is_handshake() {
            return None;
        }
        let handle = self.by_id.get(&dest_id).copied()?;
        let now = self.now;
        let c = self.connections.get_mut(&handle)?;
        // Before opening: a failed open leaves the payload unspecified.
        // (Resets still arriving after the first closed it are dropped.)
        let open = c.state() != crate::connection::ConnectionState::Closed;
        if c.check_reset(now, bytes) {
            if open {
                self.stats.resets_accepted += 1;
            }
            return Some(None);
        }
        let opened = c.open_incoming(bytes, now, remote)?;
        if c.has_key_work(self.key_log) {
            self.after_key_work(handle);
        }
        match opened {
            Ok(n) => Some(Some(n)),
            Err(OpenError::Unauthenticated | OpenError::NoKeys) => {
                self.stats.auth_failures += 1;
                Some(None)
            }
            Err(OpenError::Replayed) => {
                self.stats.replays_dropped += 1;
                Some(None)
            }
            Err(OpenError::Malformed) => {
                self.stats.decode_errors += 1;
                Some(None)
            }
            Err(OpenError::Handshake) => {
                self.stats.handshake_failures += 1;
                Some(None)
            }
            Err(OpenError::RetiredId | OpenError::KeyExhausted) => {
                self.stats.auth_failures += 1;
                Some(None)
            }
        }
    }

    /// After a connection opened or sealed: forget the IDs it retired,
    /// issue the spare IDs it wants (while the ID space is less than half
    /// used: docs/security.md, "Connection-ID rotation"), note a key
    /// generation for the key log. O(log n) per ID; O(1) when none.
    pub(super) fn after_key_work(&mut self, handle: ConnectionHandle) {
        let Some(c) = self.connections.get_untracked(&handle) else {
            return;
        };
        while let Some(id) = c.take_released_id() {
            if self.by_id.get(&id) == Some(&handle) {
                self.by_id.remove(&id);
            }
        }
        if self.key_log && c.has_keys_to_log() {
            self.keylog_ready.insert(handle);
        }
        while self.by_id.len() < SPARE_ID_CEILING
            && self
                .connections
                .get_untracked(&handle)
                .is_some_and(|c| c.wants_spare_id())
        {
            let Some(id) = self.alloc_id() else {
                break;
            };
            self.by_id.insert(id, handle);
            // Tracked: the connection now has a NEW_CONNECTION_ID to send.
            if let Some(c) = self.connections.get_mut(&handle) {
                c.add_spare_id(id);
            }
        }
    }

    /// Client: switch a protected connection to the next spare connection
    /// ID its server issued, with a fresh ID of ours (docs/security.md,
    /// "Connection-ID rotation"): from its next packet, an observer sees
    /// new IDs, SYNC_NOs and packet numbers. The runtime calls it for
    /// every connection at `rebind`. `false`: no spare yet (or unprotected,
    /// or a server's connection). Old IDs are retired about three PTOs
    /// after the peer's first packet with the new ones.
    ///
    /// Complexity: O(log n).
    pub fn rotate_connection_id(&mut self, handle: ConnectionHandle) -> bool {
        if !self
            .connections
            .get(&handle)
            .is_some_and(|c| c.has_spare_id())
        {
            return false;
        }
        let Some(id) = self.alloc_id() else {
            return false;
        };
        let rotated = self
            .connections
            .get_mut(&handle)
            .is_some_and(|c| c.rotate_id(id));
        if rotated {
            self.by_id.insert(id, handle);
        }
        rotated
    }

    /// Ask a protected connection to update its packet keys now (done at
    /// its next packet once the current generation is confirmed; the peer
    /// follows). `false`: no keys (unprotected, or before the handshake).
    ///
    /// Complexity: O(log n).
    pub fn update_keys(&mut self, handle: ConnectionHandle) -> bool {
        self.connections
            .get_mut(&handle)
            .is_some_and(|c| c.request_key_update())
    }

    /// Key log: the material of a key generation some connection reached
    /// since the last call (generation 0 included, if
    /// [`take_packet_keys`](Self::take_packet_keys) has not taken it). The
    /// driver writes [`PacketKeyMaterial::key_log_lines`] until `None`.
    /// Only with [`set_key_log`](Self::set_key_log).
    ///
    /// Complexity: O(log n) per call.
    pub fn take_updated_keys(&mut self) -> Option<PacketKeyMaterial> {
        while let Some(&h) = self.keylog_ready.iter().next() {
            let m = self
                .connections
                .get_untracked(&h)
                .and_then(|c| c.take_packet_keys());
            match m {
                Some(m) => return Some(m),
                None => {
                    self.keylog_ready.remove(&h);
                }
            }
        }
        None
    }
}

/// Spare connection IDs are issued only while fewer IDs than this are in
/// use: half the 16-bit space, so rotation never takes the last IDs new
/// connections need (docs/security.md).
pub const SPARE_ID_CEILING: usize = 1 << 15;

/// The client's Noise ephemeral public key in a START's SECURITY TLV: the
/// 32 bytes after the mode byte (message 1 starts with it in every
/// pattern), the key log's name of the connection. O(TLVs).
pub(super) fn client_ephemeral(tlvs: &[Tlv<'_>]) -> Option<[u8; KEY_LEN]> {
    tlvs.iter().find_map(|t| match t {
        Tlv::Security(v) => v
            .get(1..1 + KEY_LEN)
            .and_then(|e| <[u8; KEY_LEN]>::try_from(e).ok()),
        _ => None,
    })
}
