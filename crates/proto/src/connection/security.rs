//! The connection's hooks into the crypto seam (`crate::crypto`): the
//! SECURITY TLV of its START exchange, sealing outgoing datagrams, opening
//! incoming ones, and the violation counting of failed authentication.
//!
//! Everything here is a no-op when `ConnectionConfig::security` is `None`
//! (the default): the connection then sends exactly the bytes it sent
//! before packet protection existed.

use super::{Connection, Event, ViolationKind};
use crate::crypto::{
    HandshakeError, OpenError, SecurityState, SecurityStats, AUTH_FAILURE_THRESHOLD,
    HELLO_RANDOM_LEN,
};
use crate::wire::{Header, HeaderRepr, AUTH_TAG_LEN};

impl Connection {
    /// Starts this side's handshake if the configuration asks for
    /// protection; `random` is fresh randomness from the endpoint.
    pub(crate) fn init_security(&mut self, is_client: bool, random: [u8; HELLO_RANDOM_LEN]) {
        if let Some(cfg) = &self.config.security {
            self.security = Some(SecurityState::new(cfg.clone(), is_client, random));
        }
    }

    /// Completes the handshake with the peer's SECURITY TLV value. A side
    /// that requires protection fails when the peer offered none (no
    /// silent downgrade); a side without protection ignores the TLV.
    pub(crate) fn complete_security(&mut self, peer: Option<&[u8]>) -> Result<(), HandshakeError> {
        match self.security.as_mut() {
            Some(s) => s.complete(peer),
            None => Ok(()),
        }
    }

    /// Our SECURITY TLV value, if this connection is protected.
    pub(crate) fn security_hello(&self) -> Option<&[u8]> {
        self.security.as_ref().map(SecurityState::hello)
    }

    /// Bytes of each datagram taken by the authentication tag.
    pub(crate) fn tag_overhead(&self) -> u16 {
        if self.config.security.is_some() {
            AUTH_TAG_LEN as u16
        } else {
            0
        }
    }

    /// Security counters for `ConnectionStats`.
    pub(crate) fn security_stats(&self) -> SecurityStats {
        self.security.as_ref().map(|s| s.stats).unwrap_or_default()
    }

    /// Seals the datagram `buf[..len]` just produced by `poll_transmit`.
    /// Returns its new length; `None` means it must not leave (no keys
    /// yet): the loss machinery treats it as lost.
    pub(crate) fn seal_outgoing(&mut self, buf: &mut Vec<u8>, len: usize) -> Option<usize> {
        let Some(sec) = self.security.as_mut() else {
            return Some(len);
        };
        let handshake = buf
            .get(..len)
            .and_then(|b| Header::new_checked(b).ok())
            .and_then(|h| HeaderRepr::parse(&h).ok())
            .is_some_and(|h| h.pk_type.is_handshake());
        if handshake {
            return Some(len);
        }
        sec.seal(buf, len)
    }

    /// Opens a protected datagram into `plain`. `None`: this connection is
    /// not protected (decode `bytes` as they are). Failures are counted and
    /// reported past a threshold, never acted upon otherwise.
    pub(crate) fn open_incoming(
        &mut self,
        bytes: &[u8],
        plain: &mut Vec<u8>,
    ) -> Option<Result<(), OpenError>> {
        let sec = self.security.as_mut()?;
        let r = sec.open(bytes, plain);
        if let Err(OpenError::Unauthenticated | OpenError::NoKeys | OpenError::Replayed) = r {
            self.violation(ViolationKind::Unauthenticated);
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
