//! The connection's hooks into the crypto seam (`crate::crypto`): the
//! Noise messages of its START exchange, sealing outgoing datagrams,
//! opening incoming ones, and the violation counting of failed
//! authentication.
//!
//! Everything here is a no-op when `ConnectionConfig::security` is `None`
//! (the default): the connection then sends exactly the bytes it sent
//! before packet protection existed.

use crate::connection::{Connection, ConnectionState, Event, ViolationKind};
use crate::crypto::noise::{ServerHandshake, SEED_LEN};
use crate::crypto::{
    binding, HandshakeError, NoisePattern, OpenError, PacketKeyMaterial, PublicKey, SecurityState,
    SecurityStats, AUTH_FAILURE_THRESHOLD, KEY_LEN,
};
use crate::send_helpers::{TxBuf, Written};
use crate::wire::{HeaderRepr, Tlv, AUTH_TAG_LEN};

impl Connection {
    /// Client: starts the handshake if the configuration asks for
    /// protection; `seed` seeds its ephemeral keys, `aes_hardware` orders
    /// an `Auto` AEAD offer.
    pub(crate) fn init_client_security(
        &mut self,
        seed: [u8; SEED_LEN],
        aes_hardware: bool,
    ) -> Result<(), HandshakeError> {
        if let Some(cfg) = &self.config.security {
            let mut sec = SecurityState::client(cfg, seed, aes_hardware)?;
            sec.set_key_update(self.config.key_update);
            self.security = Some(sec);
        }
        Ok(())
    }

    /// Server: adopts a handshake whose message 1 the endpoint has read. An
    /// XX server hears the client's key only with message 3: the
    /// application is told `Connected` then, not now.
    pub(crate) fn attach_server_security(&mut self, hs: ServerHandshake) {
        let mut sec = SecurityState::server(hs);
        sec.set_key_update(self.config.key_update);
        if sec.unannounced {
            self.events.retain(|e| !matches!(e, Event::Connected));
        }
        self.security = Some(sec);
    }

    /// Keep the raw packet keys for a key log when they are derived (no-op
    /// unprotected); `client_ephemeral` as in `SecurityState::keep_keys`.
    pub(crate) fn keep_packet_keys(&mut self, client_ephemeral: Option<[u8; KEY_LEN]>) {
        if let Some(sec) = self.security.as_mut() {
            sec.keep_keys(client_ephemeral);
        }
    }

    /// The key log's material, once (see `SecurityState::take_keys`).
    pub(crate) fn take_packet_keys(&mut self) -> Option<PacketKeyMaterial> {
        self.security.as_mut()?.take_keys()
    }

    /// Before a START or START-REPLY is written: pins a client's START
    /// window and writes this side's Noise message, bound to the header
    /// `h` and the TLVs the packet will carry.
    pub(crate) fn prepare_start_security(&mut self, h: &mut HeaderRepr) {
        let Some(sec) = self.security.as_mut() else {
            return;
        };
        if sec.is_client() {
            h.window_size = sec.pin_start_window(h.window_size);
        }
        let b = binding(h, &self.start_tlvs());
        if let Some(sec) = self.security.as_mut() {
            sec.prepare(b);
        }
    }

    /// Server: the START-REPLY exactly as first sent, copied into `buf`
    /// (a duplicate START gets the same bytes: no second Diffie-Hellman).
    pub(crate) fn resend_start_reply(&self, buf: &mut TxBuf<'_>) -> Option<Written> {
        let bytes = self.security.as_ref()?.sent_reply()?;
        buf.put(0, bytes);
        Written::of_copy(bytes)
    }

    /// Server: remembers the START-REPLY just written.
    pub(crate) fn keep_start_reply(&mut self, bytes: &[u8]) {
        if let Some(sec) = self.security.as_mut() {
            sec.keep_reply(bytes);
        }
    }

    /// Client: reads the START-REPLY's Noise message 2. `false`: the
    /// answer does not authenticate (forged, wrong key, altered fields, or
    /// no SECURITY TLV at all): it is dropped and counted, and the client
    /// keeps waiting and retransmitting START. Always `true` unprotected.
    pub(crate) fn read_start_reply(&mut self, h: &HeaderRepr, tlvs: &[Tlv<'_>]) -> bool {
        let Some(sec) = self.security.as_mut() else {
            return true;
        };
        let value = tlvs.iter().find_map(|t| match t {
            Tlv::Security(v) => Some(*v),
            _ => None,
        });
        let aead = tlvs.iter().find_map(|t| match t {
            Tlv::Aead(v) => Some(*v),
            _ => None,
        });
        sec.read_reply(value, aead, binding(h, tlvs)).is_ok()
    }

    /// Our SECURITY TLV value, if this connection is protected.
    pub(crate) fn security_hello(&self) -> Option<&[u8]> {
        self.security.as_ref().and_then(SecurityState::hello)
    }

    /// Whether this connection may send protected packets now (always when
    /// unprotected; an XX server only once message 3 arrived).
    pub(crate) fn can_seal(&self) -> bool {
        self.security.as_ref().is_none_or(SecurityState::has_keys)
    }

    /// Whether the application has not been told about this connection
    /// (an XX server awaiting message 3): closing it then says nothing.
    pub(crate) fn unannounced(&self) -> bool {
        self.security.as_ref().is_some_and(|s| s.unannounced)
    }

    /// Bytes of each datagram beyond its plaintext: the tag (and an XX
    /// client's message 3).
    pub(crate) fn tag_overhead(&self) -> u16 {
        match (&self.security, &self.config.security) {
            (Some(s), _) => s.overhead() as u16,
            (None, Some(_)) => AUTH_TAG_LEN as u16,
            (None, None) => 0,
        }
    }

    /// Security counters for `ConnectionStats`.
    pub(crate) fn security_stats(&self) -> SecurityStats {
        self.security
            .as_ref()
            .map(SecurityState::stats)
            .unwrap_or_default()
    }

    /// The peer's static key, once the handshake revealed it.
    pub(crate) fn peer_static_key(&self) -> Option<PublicKey> {
        self.security.as_ref()?.stats.peer_static_key
    }

    /// The Noise pattern of the handshake (`None`: unprotected).
    pub(crate) fn security_pattern(&self) -> Option<NoisePattern> {
        self.security.as_ref()?.stats.pattern
    }

    /// Whether a packet of type `t` leaves this connection sealed (and so
    /// without a checksum): every type but START and REJECT once the
    /// connection is protected.
    pub(crate) fn seals(&self, t: crate::wire::PacketType) -> bool {
        self.security.is_some() && !t.is_handshake()
    }

    /// Seals the datagram `w` that `poll_transmit` just wrote into `buf`,
    /// with the type and packet number the builder reports (nothing is
    /// read back from the bytes). Returns its new length; `None` means it
    /// must not leave (no keys yet): the loss machinery treats it as lost.
    /// O(datagram) protected, O(1) otherwise.
    pub(crate) fn seal_outgoing(&mut self, buf: &mut TxBuf<'_>, w: &Written) -> Option<usize> {
        let len = w.len();
        if self.security.is_none() || w.pk_type().is_handshake() {
            return Some(len);
        }
        let dest = self.transmit_destination();
        let sec = self.security.as_mut()?;
        // Every type but START and REJECT carries a number; should one
        // come without, the sealer reads it from the header.
        let n = sec.seal_at(buf, len, w.packet_number, dest);
        self.check_key_limits();
        n
    }

    /// Close if a packet key reached its usage limit with no update
    /// possible (docs/security.md, "AEAD limits").
    fn check_key_limits(&mut self) {
        if let Some(what) = self.security.as_ref().and_then(SecurityState::exhausted) {
            if self.state != ConnectionState::Closed {
                self.close_with(self.now, crate::connection::CloseReason::KeyLimit(what));
            }
        }
    }

    /// Opens a protected datagram in place: `Ok(n)`, the plaintext
    /// datagram is `bytes[..n]`. `None`: this connection is not protected
    /// (decode `bytes` as they are). Failures are counted and reported
    /// past a threshold, never acted upon otherwise — except an XX message
    /// 3 that authenticates a key the server does not authorize: the
    /// connection then closes without a word. O(len), no copy.
    pub(crate) fn open_incoming(
        &mut self,
        bytes: &mut [u8],
        now: peregrine_cc::Time,
        remote: std::net::SocketAddr,
    ) -> Option<Result<usize, OpenError>> {
        // Old keys and IDs stay usable about three PTOs (RFC 9001 §6.5).
        let hold = self.recovery.rtt().rto().saturating_mul(3);
        let sec = self.security.as_mut()?;
        let overhead = sec.overhead();
        let r = sec.open(bytes, now, hold, remote);
        let shrank = sec.overhead() < overhead;
        if r.is_ok() && sec.unannounced {
            sec.unannounced = false;
            self.events.push_back(Event::Connected);
        }
        if sec.refused && self.state != ConnectionState::Closed {
            self.close_with(
                self.now,
                crate::connection::CloseReason::ProtocolViolation(
                    "client static key not authorized",
                ),
            );
        }
        if let Err(OpenError::Unauthenticated | OpenError::NoKeys | OpenError::Replayed) = r {
            self.violation(ViolationKind::Unauthenticated);
        }
        self.check_key_limits();
        if shrank {
            self.sync_overhead();
        }
        Some(r)
    }

    /// Counts an unauthenticated (or replayed) datagram: the first
    /// [`Event::SecurityViolation`] at [`AUTH_FAILURE_THRESHOLD`], then at
    /// every doubling. Returns the count.
    pub(crate) fn note_unauthenticated(&mut self) -> u64 {
        let count = self
            .security
            .as_ref()
            .map_or(0, |s| s.stats.auth_failures + s.stats.replays_dropped);
        if count >= AUTH_FAILURE_THRESHOLD
            && (count / AUTH_FAILURE_THRESHOLD).is_power_of_two()
            && count.is_multiple_of(AUTH_FAILURE_THRESHOLD)
        {
            self.events.push_back(Event::SecurityViolation {
                kind: ViolationKind::Unauthenticated,
                count,
            });
        }
        count
    }
}
