//! The endpoint's side of packet protection (docs/security.md): the
//! secrets it seeds (handshake ephemeral keys, the retry-token key), Noise
//! message 1 read from a START before any connection state exists, and the
//! opening of protected datagrams before they are decoded, with the
//! endpoint-wide counters of what failed.

use super::{ConnectionHandle, Endpoint};
use crate::connection::ConnectionConfig;
use crate::crypto::noise::{HandshakeRng, ServerHandshake};
use crate::crypto::{binding, AeadAlgorithm, NoisePattern, OpenError, PublicKey};
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
        ServerHandshake::accept(&sec.noise(), value, offer, binding(h, tlvs), seed)
            .map(Some)
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
    pub(super) fn unprotect(&mut self, bytes: &mut [u8]) -> Option<Option<usize>> {
        let view = Header::new_checked(&*bytes).ok()?;
        let (dest_id, pk_type) = (view.dest_id(), view.pk_type().ok()?);
        if dest_id == 0 || pk_type.is_handshake() {
            return None;
        }
        let handle = self.by_id.get(&dest_id).copied()?;
        let c = self.connections.get_mut(&handle)?;
        match c.open_incoming(bytes)? {
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
        }
    }
}
