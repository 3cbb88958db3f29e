//! Failures found in seconds (issue 21 item 4), the connection's side:
//!
//! * **ICMP unreachable** ([`Connection::on_unreachable`]): a connection
//!   still in its handshake closes at once (`ConnectionRefused` /
//!   `HostUnreachable`); an established one keeps it as a hint for the
//!   peer-death close reason. ICMP is unauthenticated and often transient
//!   (a server restarting, a route flapping): closing an established
//!   connection on it would hand an off-path attacker who guesses the
//!   port a way to end it.
//! * **Peer death** ([`Connection::count_probe_timeout`]): with data
//!   outstanding, `ConnectionConfig::peer_death_timeouts` retransmission
//!   timeouts in a row with nothing heard from the peer, and then one more
//!   (un-backed-off) RTO for the retransmission the last timeout sent,
//!   close the connection (`PeerDead`): 0.2 + 0.4 + 0.8 + 1.6 + 0.2 = 3.2 s
//!   with the 200 ms minimum RTO. That last call matters: without it the
//!   last probe would leave at 1.4 s, and any outage ending between 1.4 s
//!   and 3 s would be fatal although the path was back. Not while an
//!   outage is expected: a link-failure
//!   hint not yet over, the controller holding through a predicted outage
//!   (RTW-TCP answers the RTO with `Hold`: no backoff, so no count), or
//!   the peer's handover window closed to 0.
//! * **ICMP and silence** ([`Connection::icmp_death_at`]): a side with
//!   nothing outstanding (a bulk receiver) runs no RTO; when an ICMP
//!   unreachable for its peer arrives it asks the peer for a sign of life
//!   (a STATUS poll, which every peer answers) and declares it dead if
//!   nothing at all is heard for the span the RTO rule would have waited
//!   (the RTO × 2^n: 3.2 s by default). A forged ICMP cannot end a
//!   connection whose peer answers.
//! * **Authenticated stateless reset** ([`Connection::check_reset`]): a
//!   protected client that got a reset token in the handshake accepts a
//!   40-byte FIN + REMOTE_RESET whose last 16 bytes are that token, and
//!   nothing else (docs/security.md, "Stateless reset").

use super::super::events::{CloseReason, Unreachable};
use super::super::stats::ConnectionState;
use super::super::Connection;
use crate::crypto::RESET_TOKEN_LEN;
use crate::wire::{Flags, Header, PacketType, HEADER_LEN};
use peregrine_cc::{LinkHint, Time};
use std::time::Duration;

/// What the failure rules remember of one connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct FailureState {
    /// Retransmission timeouts in a row with nothing heard from the peer.
    timeouts: u32,
    /// `last_received` when the current run of timeouts started: anything
    /// heard since ends the run.
    heard_at: Time,
    /// When the oldest data of the current run was sent (its first
    /// timeout minus that timeout's RTO).
    waiting_since: Time,
    /// An outage is expected until then (a link-failure hint with a
    /// predicted duration).
    outage_until: Option<Time>,
    /// A link-failure hint without a predicted duration: an outage is
    /// expected until the peer is heard again (`last_received` passes this).
    outage_open_since: Option<Time>,
    /// The last ICMP unreachable for the peer's address, if any.
    icmp: Option<Unreachable>,
    /// When it arrived (an established connection: anything heard from
    /// the peer later clears it).
    icmp_at: Option<Time>,
    /// The count is reached: the peer is dead unless heard before then.
    last_call: Option<Time>,
}

impl Connection {
    /// An ICMP destination unreachable for this connection's peer address
    /// arrived (see the module comment). O(1).
    pub(crate) fn on_unreachable(&mut self, now: Time, what: Unreachable) {
        let now = self.tick(now);
        self.failure.icmp = Some(what);
        if self.failure.icmp_at.is_none() && self.state != ConnectionState::Starting {
            // Ask for a sign of life: a live peer answers the poll.
            self.failure.icmp_at = Some(now);
            self.status_poll_pending = true;
        }
        if self.state == ConnectionState::Starting {
            let peer = self.remote;
            let reason = match what {
                Unreachable::Port => CloseReason::ConnectionRefused { peer },
                Unreachable::Host => CloseReason::HostUnreachable { peer },
            };
            self.close_with(now, reason);
        }
    }

    /// A link hint reached the connection: a link failure makes an outage
    /// expected until its predicted end (or, without a prediction, until
    /// the peer is heard again). O(1).
    pub(crate) fn note_link_hint_outage(&mut self, now: Time, hint: &LinkHint) {
        if !hint.kind.is_link_failure() {
            return;
        }
        match hint.predicted_duration {
            Some(d) => {
                let end = hint.issued_at.max(now) + d;
                self.failure.outage_until =
                    Some(self.failure.outage_until.map_or(end, |t| t.max(end)));
            }
            None => self.failure.outage_open_since = Some(now),
        }
    }

    /// Whether an outage is expected now (no peer-death count).
    fn outage_expected(&mut self, now: Time) -> bool {
        if self
            .failure
            .outage_open_since
            .is_some_and(|t| self.last_received > t)
        {
            self.failure.outage_open_since = None;
        }
        self.failure.outage_open_since.is_some()
            || self.failure.outage_until.is_some_and(|t| now < t)
            || self.send.peer_window() == 0
    }

    /// The retransmission timer just fired with data outstanding and
    /// backed off (`rto` was the timeout that expired): count it, and
    /// declare the peer dead at the configured count. O(1).
    pub(crate) fn count_probe_timeout(&mut self, now: Time, rto: Duration) {
        let limit = self.config.peer_death_timeouts;
        if limit == 0 || self.state == ConnectionState::Closed {
            return;
        }
        let heard = self.last_received > self.failure.heard_at;
        if self.failure.timeouts == 0 || heard || self.outage_expected(now) {
            // A new run: from this timeout on, or after the outage.
            self.failure.timeouts = 0;
            self.failure.last_call = None;
            self.failure.heard_at = self.last_received;
            self.failure.waiting_since = Time::from_nanos(
                now.as_nanos()
                    .saturating_sub(u64::try_from(rto.as_nanos()).unwrap_or(u64::MAX)),
            );
            if self.outage_expected(now) {
                return;
            }
        }
        self.failure.timeouts += 1;
        if self.failure.timeouts >= limit && self.failure.last_call.is_none() {
            // The retransmission this timeout just sent gets one RTO.
            self.failure.last_call = Some(now + self.recovery.rtt().rto());
        }
    }

    /// When the peer-death rule's last call ends, if it is running. O(1).
    pub(crate) fn death_deadline(&self) -> Option<Time> {
        self.failure.last_call
    }

    /// The last call ended: dead unless the peer was heard meanwhile. O(1).
    pub(crate) fn on_death_timer(&mut self, now: Time) {
        if self.failure.last_call.is_none_or(|t| t > now) {
            return;
        }
        self.failure.last_call = None;
        if self.last_received > self.failure.heard_at
            || self.state == ConnectionState::Closed
            || self.outage_expected(now)
        {
            self.failure.timeouts = 0;
            return;
        }
        let reason = CloseReason::PeerDead {
            peer: self.remote,
            silent_for: now.saturating_duration_since(self.failure.waiting_since),
            icmp: self.failure.icmp,
        };
        self.close_with(now, reason);
    }

    /// How long the peer-death rule waits in all: the current RTO times
    /// 2^n (n = `peer_death_timeouts`: 2^n − 1 for the backed-off
    /// timeouts, 1 for the last call), at most the idle timeout.
    fn death_span(&self) -> Duration {
        let n = self.config.peer_death_timeouts.min(16);
        self.recovery
            .rtt()
            .rto()
            .saturating_mul(1u32 << n)
            .min(self.config.idle_timeout)
    }

    /// When an ICMP unreachable followed by silence makes the peer dead
    /// (see the module comment); `None` without one, or once the peer was
    /// heard after it. O(1).
    pub(crate) fn icmp_death_at(&self) -> Option<Time> {
        let at = self.failure.icmp_at?;
        if self.config.peer_death_timeouts == 0 || self.last_received > at {
            return None;
        }
        Some(at + self.death_span())
    }

    /// The ICMP timer: close if it expired with nothing heard, forget the
    /// ICMP if the peer spoke since. O(1).
    pub(crate) fn on_icmp_timer(&mut self, now: Time) {
        let Some(at) = self.failure.icmp_at else {
            return;
        };
        if self.last_received > at {
            self.failure.icmp_at = None;
            self.failure.icmp = None;
            return;
        }
        if self.state == ConnectionState::Closed {
            return;
        }
        if self.outage_expected(now) {
            // Wait the whole span again once the outage is over.
            self.failure.icmp_at = Some(now);
            return;
        }
        if self.icmp_death_at().is_some_and(|t| t <= now) {
            let reason = CloseReason::PeerDead {
                peer: self.remote,
                silent_for: now.saturating_duration_since(self.last_received.max(at)),
                icmp: self.failure.icmp,
            };
            self.close_with(now, reason);
        }
    }

    /// Whether `bytes`, which failed to open on this protected connection,
    /// is an authenticated stateless reset for it: 40 bytes, FIN with
    /// REMOTE_RESET, ending in the token the server gave in the handshake
    /// (compared in constant time). If so the connection is reset (its
    /// `Closed` event says `Reset`). O(1).
    pub(crate) fn check_reset(&mut self, now: Time, bytes: &[u8]) -> bool {
        let Some(token) = self
            .security
            .as_ref()
            .and_then(|s| s.reset_token())
            .copied()
        else {
            return false;
        };
        if bytes.len() != HEADER_LEN + 4 + RESET_TOKEN_LEN {
            return false;
        }
        let Ok(h) = Header::new_checked(bytes) else {
            return false;
        };
        if h.pk_type().ok() != Some(PacketType::Fin) || !h.flags().contains(Flags::REMOTE_RESET) {
            return false;
        }
        let got = &bytes[HEADER_LEN + 4..];
        let diff = got
            .iter()
            .zip(token.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff != 0 {
            return false;
        }
        let now = self.tick(now);
        self.on_reset(now);
        true
    }
}
