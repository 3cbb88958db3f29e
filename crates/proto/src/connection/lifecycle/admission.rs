//! Admission seen from one connection: the anti-amplification byte budget
//! of a server-side connection whose peer address is not validated yet, and
//! the client's side of a stateless retry (the token it echoes, the padding
//! of a secure START).
//!
//! The endpoint (`endpoint/admission.rs`) decides who is admitted; this
//! module only keeps the per-connection state those decisions need:
//!
//! * **Budget.** An accepted START whose address is unproven (no valid
//!   retry token) leaves the connection *limited*: it may send at most as
//!   many bytes as it received from that address (the START and any
//!   duplicate STARTs). The first valid packet from the peer (its SYNC_NO
//!   and our connection id, or in a secure mode an authenticated packet)
//!   proves the address and lifts the limit for good. While limited,
//!   `poll_transmit` sends only what fits — in practice the START-REPLY —
//!   and holds everything else (probes, data) until validation.
//! * **Retry.** A client that receives REJECT `retry` with a token keeps
//!   it and resends START at once with a RETRY_TOKEN TLV, at most
//!   [`MAX_RETRIES`] times per connection.
//! * **Padding.** A client in a secure mode pads its START to
//!   [`MIN_SECURE_START_LEN`] bytes, so the server's answer (and a REJECT
//!   `retry`) never outgrows the request. Insecure STARTs are unchanged.

use crate::connection::{Connection, ConnectionState};
use crate::wire::tlv::{list_len, TLV_HEADER_LEN};
use crate::wire::{RejectPayload, RejectReason, Tlv, HEADER_LEN};
use peregrine_cc::Time;

/// Bytes a START of a client in a secure mode is padded to (PADDING TLV).
pub const MIN_SECURE_START_LEN: usize = 256;
/// Most REJECT `retry` a client follows per connection; a further one
/// closes it as rejected.
pub const MAX_RETRIES: u8 = 3;

/// The anti-amplification state of one connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct AdmissionState {
    /// Sending is limited by the byte budget (server side, address not
    /// validated yet).
    limited: bool,
    /// Bytes received from the unvalidated address.
    received: u64,
    /// Bytes sent to it.
    sent: u64,
    /// Held back since the last report (one per blocked episode).
    limited_events: u64,
    /// Currently holding something back (to count episodes, not polls).
    holding: bool,
    /// A valid packet arrived from the peer (ends the half-open state).
    heard: bool,
    /// Client: the token of the last REJECT `retry`.
    token: Option<Vec<u8>>,
    /// Client: REJECT `retry` followed so far.
    retries: u8,
}

impl Connection {
    /// Server side: this connection's address is unproven; `received` is
    /// the size of the START that created it.
    pub(crate) fn limit_amplification(&mut self, received: usize) {
        self.admission.limited = true;
        self.admission.received = received as u64;
    }

    /// Bytes received from the peer's address before it was validated
    /// (a duplicate START): they raise the budget.
    pub(crate) fn budget_received(&mut self, bytes: usize) {
        if self.admission.limited {
            self.admission.received += bytes as u64;
        }
    }

    /// Bytes that left for the peer (after sealing).
    pub(crate) fn budget_sent(&mut self, bytes: usize) {
        if self.admission.limited {
            self.admission.sent += bytes as u64;
        }
    }

    /// A valid packet arrived from the peer: its address is proven.
    pub(crate) fn validate_address(&mut self) {
        self.admission.limited = false;
        self.admission.holding = false;
        self.admission.heard = true;
    }

    /// Whether a valid packet ever arrived from the peer (a server-side
    /// connection is half-open until then).
    pub(crate) fn has_received_valid(&self) -> bool {
        self.admission.heard
    }

    /// The endpoint gave up on this half-open connection: close it without
    /// a word to the (perhaps forged) peer address.
    pub(crate) fn expire_half_open(&mut self, now: Time) {
        self.close_with(now, crate::connection::CloseReason::HandshakeTimeout);
    }

    /// Whether the peer's address is proven (always, for a client or a
    /// connection admitted with a valid token).
    pub(crate) fn address_validated(&self) -> bool {
        !self.admission.limited
    }

    /// Episodes of sending held back by the budget since the last call.
    pub(crate) fn take_amplification_limited(&mut self) -> u64 {
        std::mem::take(&mut self.admission.limited_events)
    }

    /// Bytes still allowed to an unvalidated address (`None`: unlimited).
    fn budget_left(&self) -> Option<u64> {
        self.admission
            .limited
            .then(|| self.admission.received.saturating_sub(self.admission.sent))
    }

    /// Length of our START-REPLY as it would leave now.
    pub(crate) fn start_reply_len(&self) -> usize {
        // The Noise message 2 is written only when the START-REPLY is
        // (it binds that packet's header): count it before that too.
        let unwritten_security = match (&self.security, self.security_hello()) {
            (Some(sec), None) => crate::wire::tlv::TLV_HEADER_LEN + sec.hello_len(),
            _ => 0,
        };
        HEADER_LEN + list_len(&self.start_tlvs()) + unwritten_security
    }

    /// The gate of `poll_transmit` for a limited connection: `None` when
    /// not limited (send as usual); `Some(true)` when the next datagram may
    /// go (the START-REPLY, which fits the budget); `Some(false)` when
    /// everything is held until the address is validated.
    pub(crate) fn amplification_gate(&mut self) -> Option<bool> {
        let left = self.budget_left()?;
        let reply_fits = self.start_reply_pending && self.start_reply_len() as u64 <= left;
        if reply_fits {
            return Some(true);
        }
        if self.wants_to_send() && !self.admission.holding {
            self.admission.holding = true;
            self.admission.limited_events += 1;
        }
        Some(false)
    }

    /// Client: the TLVs of our START request: our parameters, the retry
    /// token if a REJECT `retry` gave one, then PADDING up to
    /// [`MIN_SECURE_START_LEN`] in a secure mode.
    pub(crate) fn start_request_tlvs(&self) -> Vec<Tlv<'_>> {
        let mut tlvs = self.start_tlvs();
        if let Some(t) = self.admission.token.as_deref() {
            tlvs.push(Tlv::RetryToken(t));
        }
        let len = HEADER_LEN + list_len(&tlvs);
        if self.config.security.is_some() && len < MIN_SECURE_START_LEN {
            // Within 2 bytes of the target the empty TLV overshoots a little.
            let pad = MIN_SECURE_START_LEN.saturating_sub(len + TLV_HEADER_LEN);
            tlvs.push(Tlv::Padding(u16::try_from(pad).unwrap_or(u16::MAX)));
        }
        tlvs
    }

    /// Client: a REJECT whose SYNC_NO is ours arrived. Handles reason
    /// `retry` (store the token, resend START at once); returns `false`
    /// for every other REJECT, and for a `retry` it will not follow (no
    /// token, or [`MAX_RETRIES`] reached), which then closes as rejected.
    pub(crate) fn on_retry(&mut self, now: Time, reject: &RejectPayload<'_>) -> bool {
        if reject.reason != RejectReason::RETRY {
            return false;
        }
        if self.state != ConnectionState::Starting {
            return true;
        }
        let token = reject.tlvs.iter().find_map(|t| match t {
            Tlv::RetryToken(v) => Some(*v),
            _ => None,
        });
        let Some(token) = token else {
            return false;
        };
        if self.admission.retries >= MAX_RETRIES {
            return false;
        }
        self.admission.retries += 1;
        self.admission.token = Some(token.to_vec());
        // The REJECT answered our first START: a clean RTT sample (Karn);
        // the answer to the resent START will not be one.
        if !self.start.retransmitted {
            if let Some(sent) = self.start.first_sent_at {
                self.recovery
                    .on_rtt_sample(now.saturating_duration_since(sent));
            }
        }
        self.start.retransmitted = true;
        self.start.pending = true;
        self.start.retx_at = None;
        true
    }

    /// Whether anything waits to be sent (for counting held episodes).
    fn wants_to_send(&self) -> bool {
        self.start_reply_pending
            || self.keep_alive_pending
            || self.closing.reset_pending
            || !self.probe_sends.is_empty()
            || !self.echo_replies.is_empty()
            || (self.data_ready && self.send.has_pending())
    }

    /// REJECT `retry` this connection followed.
    #[cfg(test)]
    pub(crate) fn retries_followed(&self) -> u8 {
        self.admission.retries
    }

    /// A rough bound of the memory this connection holds, bytes: the
    /// structure, its message buffers and its pending events.
    pub(crate) fn memory_estimate(&self) -> usize {
        std::mem::size_of::<Connection>()
            + self.send.buffered_bytes()
            + self.recv.buffered_bytes()
            + self.events.len() * std::mem::size_of::<crate::connection::Event>()
            + self.admission.token.as_ref().map_or(0, Vec::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::ConnectionConfig;
    use crate::crypto::SecurityConfig;
    use crate::wire::{DatagramRepr, Payload};
    use std::net::SocketAddr;

    fn addr() -> SocketAddr {
        "10.0.0.2:4000".parse().unwrap()
    }

    fn client(config: ConnectionConfig) -> Connection {
        Connection::connect(Time::ZERO, config, 0x0a01, addr(), 0x5a3, 1)
    }

    fn first_start(c: &mut Connection) -> Vec<u8> {
        let mut buf = Vec::new();
        let n = c.poll_transmit(Time::ZERO, &mut buf).unwrap();
        buf.truncate(n.len());
        buf
    }

    #[test]
    fn secure_start_is_padded_to_256_and_insecure_is_not() {
        let mut secure = client(ConnectionConfig {
            security: Some(SecurityConfig::PresharedKey([7; 32])),
            ..ConnectionConfig::default()
        });
        secure
            .init_client_security([1; crate::crypto::noise::SEED_LEN], false)
            .expect("a valid client configuration");
        let bytes = first_start(&mut secure);
        assert_eq!(bytes.len(), MIN_SECURE_START_LEN);
        let dg = DatagramRepr::decode(&bytes).unwrap();
        let Payload::Start(s) = dg.payload else {
            panic!("not a START")
        };
        assert!(matches!(s.tlvs.last(), Some(Tlv::Padding(_))));

        let mut plain = client(ConnectionConfig::default());
        let bytes = first_start(&mut plain);
        assert!(bytes.len() < MIN_SECURE_START_LEN);
        let dg = DatagramRepr::decode(&bytes).unwrap();
        let Payload::Start(s) = dg.payload else {
            panic!("not a START")
        };
        assert!(!s.tlvs.iter().any(|t| matches!(t, Tlv::Padding(_))));
    }

    #[test]
    fn retry_stores_the_token_and_resends_at_most_three_times() {
        let mut c = client(ConnectionConfig::default());
        let _ = first_start(&mut c);
        let token = [9u8; 24];
        let retry = RejectPayload {
            reason: RejectReason::RETRY,
            tlvs: vec![Tlv::RetryToken(&token)],
        };
        for i in 1..=MAX_RETRIES {
            assert!(c.on_retry(Time::from_nanos(u64::from(i) * 1000), &retry));
            let mut buf = Vec::new();
            let n = c.poll_transmit(Time::from_nanos(u64::from(i) * 1000), &mut buf);
            let dg = DatagramRepr::decode(&buf[..n.unwrap().len()]).unwrap();
            let Payload::Start(s) = dg.payload else {
                panic!("not a START")
            };
            assert!(s.tlvs.contains(&Tlv::RetryToken(&token)));
        }
        assert_eq!(c.retries_followed(), MAX_RETRIES);
        // A fourth is not followed: the caller closes as rejected.
        assert!(!c.on_retry(Time::from_nanos(9000), &retry));
        // Other reasons, and a retry without a token, are not ours.
        let busy = RejectPayload {
            reason: RejectReason::BUSY,
            tlvs: vec![],
        };
        assert!(!c.on_retry(Time::ZERO, &busy));
        let mut d = client(ConnectionConfig::default());
        let bare = RejectPayload {
            reason: RejectReason::RETRY,
            tlvs: vec![],
        };
        assert!(!d.on_retry(Time::ZERO, &bare));
    }

    #[test]
    fn the_budget_counts_received_and_sent_bytes_until_validation() {
        let mut c = client(ConnectionConfig::default());
        assert!(c.address_validated());
        assert_eq!(c.amplification_gate(), None);
        c.limit_amplification(50);
        assert!(!c.address_validated());
        assert_eq!(c.budget_left(), Some(50));
        c.budget_sent(30);
        c.budget_received(10);
        assert_eq!(c.budget_left(), Some(30));
        c.validate_address();
        assert!(c.address_validated());
        assert_eq!(c.budget_left(), None);
    }
}
