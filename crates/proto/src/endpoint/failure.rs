//! Failures found in seconds (issue 21 item 4), the endpoint's side:
//! ICMP unreachables handed in by the runtime, and the authenticated
//! stateless reset of a protected listener (docs/security.md, "Stateless
//! reset").
//!
//! **Reset secret.** Every endpoint holds a 32-byte reset secret: drawn
//! from its seed (and from OS entropy through `seed_handshakes`), or —
//! when its listener has a static keypair — derived from that private key
//! with a label of its own, so a server restarted with the same key
//! (`--key FILE`) derives the same secret. The token of a connection is
//! HMAC-SHA256(secret, label ‖ server id ‖ client id ‖ client SYNC_NO)
//! cut to 16 bytes: every input is in the clear header of each packet the
//! client sends, so a restarted server can recompute it from the packet
//! alone. The server's id is unique among its live connections, so no
//! client can be handed the token of another live connection.
//!
//! **Reset datagram.** A FIN with REMOTE_RESET (no ST_CKS), DEST_ID = the
//! provoking packet's SRC_ID, SRC_ID = its DEST_ID, SYNC_NO echoed, a
//! 4-byte packet number 0 and the 16-byte token: 40 bytes, the shape of a
//! sealed empty FIN (header, packet number, tag), sent only in answer to
//! a datagram of at least 40 bytes (no amplification, and a reset never
//! answers a reset).

use super::Endpoint;
use crate::connection::{ConnectionConfig, Unreachable};
use crate::crypto::RESET_TOKEN_LEN;
use crate::wire::{Flags, Header, HeaderRepr, PacketType, HEADER_LEN};
use hmac::{Hmac, Mac};
use peregrine_cc::Time;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;

/// Length of an authenticated stateless reset: header, packet number, token.
pub const RESET_DATAGRAM_LEN: usize = HEADER_LEN + 4 + RESET_TOKEN_LEN;
/// Label of the reset-secret derivation from a static private key.
const SECRET_LABEL: &[u8] = b"peregrine v1 reset secret";
/// Label of the per-connection token.
const TOKEN_LABEL: &[u8] = b"peregrine v1 reset token";

/// The reset secret derived from `input` (a private key, or a seed).
pub(super) fn derive_secret(input: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(SECRET_LABEL);
    h.update(input);
    h.finalize().into()
}

/// The token of the connection whose server side has id `server_id`,
/// opened by the client with id `client_id` and SYNC_NO `client_sync`.
pub(super) fn token(
    secret: &[u8; 32],
    server_id: u16,
    client_id: u16,
    client_sync: u16,
) -> [u8; RESET_TOKEN_LEN] {
    // HMAC takes a key of any length: `new_from_slice` cannot fail.
    let mut out = [0u8; RESET_TOKEN_LEN];
    if let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) {
        mac.update(TOKEN_LABEL);
        mac.update(&server_id.to_be_bytes());
        mac.update(&client_id.to_be_bytes());
        mac.update(&client_sync.to_be_bytes());
        let full = mac.finalize().into_bytes();
        out.copy_from_slice(&full[..RESET_TOKEN_LEN]);
    }
    out
}

/// The reset secret a listener configured as `server` uses: from its
/// static private key when it has one (it survives a restart), else
/// `None` (the endpoint keeps its random one).
pub(super) fn persistent_secret(server: &ConnectionConfig) -> Option<[u8; 32]> {
    let noise = server.security.as_ref()?.noise();
    let kp = noise.keypair.as_ref()?;
    Some(derive_secret(kp.private_bytes()))
}

impl Endpoint {
    /// An ICMP (or ICMPv6) destination unreachable came back for a
    /// datagram sent to `remote` (the runtime reads these from the
    /// socket's error queue). A connection to `remote` still in its
    /// handshake closes at once with [`CloseReason::ConnectionRefused`]
    /// (port unreachable) or [`CloseReason::HostUnreachable`]; an
    /// established one only notes it — ICMP is not authenticated and may
    /// be transient (a server restarting, a route flapping), so a forged
    /// or stale one must not end a healthy connection; the peer-death rule
    /// decides, and its close reason mentions the ICMP.
    ///
    /// Complexity: O(n) over the connections held (ICMP errors are rare
    /// and rate-limited by the sending kernel).
    pub fn handle_unreachable(&mut self, now: Time, remote: SocketAddr, what: Unreachable) {
        let now = self.tick(now);
        self.stats.icmp_unreachable += 1;
        let hit: Vec<_> = self
            .connections
            .keys()
            .copied()
            .filter(|h| {
                self.connections
                    .get(h)
                    .is_some_and(|c| c.remote() == remote)
            })
            .collect();
        for h in hit {
            if let Some(c) = self.connections.get_mut(&h) {
                c.on_unreachable(now, what);
            }
            self.pool_sync(h);
        }
    }

    /// Sets the reset secret from a listener's static key (`accept`).
    pub(super) fn adopt_reset_secret(&mut self, server: &ConnectionConfig) {
        if let Some(s) = persistent_secret(server) {
            self.reset_secret = s;
            self.reset_secret_persistent = true;
        }
    }

    /// The token of a connection this endpoint accepts.
    pub(super) fn reset_token(&self, server_id: u16, client_id: u16, client_sync: u16) -> [u8; 16] {
        token(&self.reset_secret, server_id, client_id, client_sync)
    }

    /// A datagram of `len` bytes for an unknown connection reached a
    /// protected listener: answer with an authenticated stateless reset
    /// if it is a post-handshake packet (whose clear header names the
    /// connection) and not itself a reset. `true`: it was a candidate (the
    /// caller must not decode the sealed bytes as plaintext).
    pub(super) fn protected_stateless_reset(&mut self, remote: SocketAddr, bytes: &[u8]) -> bool {
        let protected = self
            .config
            .server
            .as_ref()
            .is_some_and(|s| s.security.is_some());
        if !protected {
            return false;
        }
        let Ok(view) = Header::new_checked(bytes) else {
            return false;
        };
        let Ok(pk_type) = view.pk_type() else {
            return false;
        };
        let dest_id = view.dest_id();
        if dest_id == 0 || pk_type.is_handshake() || self.by_id.contains_key(&dest_id) {
            return false;
        }
        self.stats.unknown_connection += 1;
        let flags = view.flags();
        if flags.contains(Flags::REMOTE_RESET)
            || pk_type == PacketType::Fin
            || bytes.len() < RESET_DATAGRAM_LEN
        {
            return true;
        }
        let (client_id, client_sync) = (view.src_id(), view.sync_no());
        let mut h = HeaderRepr::new(PacketType::Fin);
        h.dest_id = client_id;
        h.src_id = dest_id;
        h.sync_no = client_sync;
        h.flags = Flags::REMOTE_RESET;
        h.total_len = RESET_DATAGRAM_LEN as u16;
        let mut buf = vec![0u8; RESET_DATAGRAM_LEN];
        if h.emit(&mut buf[..HEADER_LEN]).is_err() {
            return true;
        }
        let t = self.reset_token(dest_id, client_id, client_sync);
        buf[HEADER_LEN + 4..].copy_from_slice(&t);
        if self.stateless.len() >= self.config.max_stateless_queue {
            self.stats.stateless_dropped += 1;
            return true;
        }
        self.stateless.push_back((remote, buf));
        self.stats.resets_sent += 1;
        true
    }

    /// Whether the reset secret came from a static key (survives a
    /// restart with the same key).
    ///
    /// Complexity: O(1).
    pub fn reset_secret_is_persistent(&self) -> bool {
        self.reset_secret_persistent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{NoiseConfig, SecurityConfig, StaticKeypair};

    fn keyed(private: [u8; 32]) -> ConnectionConfig {
        let kp = StaticKeypair::from_private(private);
        ConnectionConfig {
            security: Some(SecurityConfig::Noise(NoiseConfig::server(kp))),
            ..ConnectionConfig::default()
        }
    }

    #[test]
    fn the_secret_survives_a_restart_only_with_the_same_key() {
        let a = persistent_secret(&keyed([7; 32])).expect("a keypair");
        let again = persistent_secret(&keyed([7; 32])).expect("a keypair");
        let other = persistent_secret(&keyed([8; 32])).expect("a keypair");
        assert_eq!(a, again);
        assert_ne!(a, other);
        // No static key (unprotected, or a PSK every client knows): none.
        assert_eq!(persistent_secret(&ConnectionConfig::default()), None);
        let psk = ConnectionConfig {
            security: Some(SecurityConfig::PresharedKey([1; 32])),
            ..ConnectionConfig::default()
        };
        assert_eq!(persistent_secret(&psk), None);
        // Two endpoints accepting with the same key derive the same tokens.
        let mut e1 = Endpoint::new(crate::EndpointConfig::default(), 1);
        let mut e2 = Endpoint::new(crate::EndpointConfig::default(), 2);
        assert_ne!(e1.reset_token(5, 6, 7), e2.reset_token(5, 6, 7));
        e1.accept(keyed([7; 32])).expect("valid");
        e2.accept(keyed([7; 32])).expect("valid");
        e2.seed_handshakes([9; 32]);
        assert!(e1.reset_secret_is_persistent() && e2.reset_secret_is_persistent());
        assert_eq!(e1.reset_token(5, 6, 7), e2.reset_token(5, 6, 7));
    }

    #[test]
    fn a_token_names_one_connection() {
        let s = derive_secret(b"seed");
        let t = token(&s, 1, 2, 3);
        assert_eq!(t, token(&s, 1, 2, 3));
        for other in [token(&s, 9, 2, 3), token(&s, 1, 9, 3), token(&s, 1, 2, 9)] {
            assert_ne!(t, other);
        }
        assert_ne!(t, token(&derive_secret(b"other"), 1, 2, 3));
    }
}
