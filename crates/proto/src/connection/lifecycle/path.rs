//! # Address migration with path validation (RFC 9000 §8.2, §9)
//!
//! A connection is named by its connection id (DEST_ID), not by the
//! peer's address: when a NAT rebinds the peer's port, or a vehicle's
//! modem gets a new address after a handover, the peer's packets keep
//! their DEST_ID and SYNC_NO but arrive from a new address. This module
//! decides when the connection follows them.
//!
//! ## Rules
//!
//! * A packet from an address other than the current one is considered
//!   only if it is **authentic** as far as this version can tell: it is a
//!   post-handshake packet of an established connection, carries the
//!   peer's SYNC_NO and a packet number never seen before. Anything else
//!   (START, REJECT, REMOTE_RESET, a wrong SYNC_NO, a duplicate — e.g. a
//!   genuine datagram replayed from a third address) is dropped and
//!   counted as a rejected address ([`PathStats::rejected_packets`]).
//! * An authentic packet is processed (its data delivered, its ACK
//!   applied) but **never redirects the connection by itself**. If it is
//!   the newest packet so far (highest packet number — a reordered old
//!   packet from the address the peer just left does not count), the
//!   address becomes a *candidate* and is sent a **PATH_CHALLENGE**: an
//!   ECHO (type 8) with REPLY_REQ, PROBE_ID [`PATH_PROBE_ID`] and 64 random
//!   bits in TIMESTAMP_NS (docs/protocol.md §6.7.1). Every peer already
//!   answers an ECHO by echoing both fields, so the answer is the
//!   **PATH_RESPONSE**; it proves the peer receives at the candidate.
//! * Until validated, nothing but challenges goes to a candidate, and at
//!   most [`AMPLIFICATION_FACTOR`] times the bytes received from it (RFC
//!   9000 §8: a spoofed source address cannot turn us into an amplifier).
//!   Data keeps flowing to the current address. A challenge unanswered
//!   after an RTO (doubling) is repeated up to [`MAX_CHALLENGES`] times,
//!   then the candidate is dropped ([`PathStats::failed_validations`]).
//! * When the response comes back from the candidate, the connection
//!   moves there ([`Event::PathMigrated`]). If the IP address changed, the
//!   new path shares nothing with the old one: the RTT estimator and the
//!   congestion controller restart from their initial state (RFC 9000
//!   §9.4). If only the port changed — a NAT rebinding, same network
//!   path — congestion and RTT state are kept, as RFC 9000 §9.4 allows.
//!   An immediate ACK tells the peer the new path works. ECN validation
//!   restarts on the new path in either case (RFC 9000 §13.4.2;
//!   `recovery/ecn.rs`): a path that bleached ECT does not keep ECN off
//!   on a clean one, and a clean old path does not vouch for the new.
//!
//! Key choice: the challenge reuses ECHO instead of a new payload, so the
//! wire format (and every decoder and fuzz target) is unchanged and any
//! version-1 peer answers it correctly.

use crate::connection::{Connection, ConnectionState, Event, ViolationKind};
use crate::rng::SeededRng;
use crate::send_helpers::{build, TxBuf, Written};
use crate::wire::{DatagramRepr, EchoPayload, Flags, PacketType, Payload, HEADER_LEN};
use peregrine_cc::Time;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// PROBE_ID of a PATH_CHALLENGE and its PATH_RESPONSE: ASCII "PATH". The
/// packet-pair prober uses ECHO_1/ECHO_2, never a plain ECHO, so the two
/// cannot be confused.
pub const PATH_PROBE_ID: u32 = 0x5041_5448;
/// Before validation, at most this many times the bytes received from a
/// candidate address are sent to it (RFC 9000 §8.1).
pub const AMPLIFICATION_FACTOR: u64 = 3;
/// Challenges sent to one candidate before it is given up.
pub const MAX_CHALLENGES: u32 = 4;
/// Candidate addresses validated at the same time; more are rejected.
pub const MAX_CANDIDATES: usize = 4;

/// Path-validation and migration counters, in
/// [`ConnectionStats::path`](crate::connection::ConnectionStats::path).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathStats {
    /// PATH_CHALLENGEs this side sent.
    pub challenges_sent: u64,
    /// PATH_CHALLENGEs this side received (and answered).
    pub challenges_received: u64,
    /// Valid PATH_RESPONSEs received.
    pub responses_received: u64,
    /// Times the connection moved to a validated address.
    pub migrations: u64,
    /// Of those, moves that reset RTT and congestion state (the IP
    /// address changed, not only the port).
    pub congestion_resets: u64,
    /// Packets from an address other than the current one that were
    /// dropped (not authentic: wrong SYNC_NO, duplicate/replayed, wrong
    /// type, or too many candidates).
    pub rejected_packets: u64,
    /// Candidates given up: no valid response after every challenge.
    pub failed_validations: u64,
    /// Bytes received from addresses while they were unvalidated candidates.
    pub unvalidated_bytes_received: u64,
    /// Bytes sent to addresses while they were unvalidated candidates
    /// (never more than [`AMPLIFICATION_FACTOR`] × the bytes received).
    pub unvalidated_bytes_sent: u64,
}

/// An address being validated.
#[derive(Clone, Debug)]
struct Candidate {
    challenge: u64,
    bytes_received: u64,
    bytes_sent: u64,
    /// Retry rounds elapsed without a valid response.
    rounds: u32,
    /// A challenge should leave now (first one, or a retry that is due).
    due: bool,
    retry_at: Time,
}

/// The migration state of one connection.
#[derive(Clone, Debug)]
pub(crate) struct PathState {
    rng: SeededRng,
    candidates: BTreeMap<SocketAddr, Candidate>,
    /// Where the datagram `poll_transmit` just wrote goes, when not to
    /// the current address.
    sent_to: Option<SocketAddr>,
    stats: PathStats,
}

impl Default for PathState {
    fn default() -> Self {
        PathState {
            rng: SeededRng::new(0),
            candidates: BTreeMap::new(),
            sent_to: None,
            stats: PathStats::default(),
        }
    }
}

impl PathState {
    /// Seed the challenge generator (the endpoint's random source).
    pub(crate) fn seed(&mut self, seed: u64) {
        self.rng = SeededRng::new(seed);
    }

    /// The counters.
    pub(crate) fn stats(&self) -> PathStats {
        self.stats.clone()
    }

    fn timeout(&self) -> Option<Time> {
        self.candidates.values().map(|c| c.retry_at).min()
    }
}

impl Connection {
    /// Seed the PATH_CHALLENGE generator; the endpoint calls it once.
    pub(crate) fn seed_path(&mut self, seed: u64) {
        self.path.seed(seed);
    }

    /// `poll_transmit` starts a datagram: to the current address unless
    /// [`poll_path_challenge`](Self::poll_path_challenge) says otherwise.
    pub(crate) fn begin_transmit(&mut self) {
        self.path.sent_to = None;
    }

    /// Where the datagram last written by `poll_transmit` must go.
    pub(crate) fn transmit_destination(&self) -> SocketAddr {
        self.path.sent_to.unwrap_or(self.remote)
    }

    /// The ECN codepoint of this connection's datagrams (`None`: not-ECT,
    /// ECN off or failed validation). O(1).
    pub(crate) fn transmit_ecn(&self) -> Option<crate::EcnCodepoint> {
        self.recovery.ecn_codepoint()
    }

    /// A datagram from `remote`, which is not the current address: whether
    /// it may go on to the normal checks. Drops (and counts) what can
    /// never be authentic from a new address.
    pub(crate) fn admit_from_new_address(&mut self, dg: &DatagramRepr<'_>) -> bool {
        let h = &dg.header;
        let established = matches!(
            self.state,
            ConnectionState::Connected
                | ConnectionState::EndLocal
                | ConnectionState::EndRemote
                | ConnectionState::TimedClose
        );
        let ok = established
            && dg.payload.packet_number().is_some()
            && !h.flags.contains(Flags::REMOTE_RESET)
            && self.peer_sync == Some(h.sync_no);
        if !ok {
            self.reject_new_address();
        }
        ok
    }

    /// A packet from another address was dropped.
    pub(crate) fn reject_new_address(&mut self) {
        self.path.stats.rejected_packets += 1;
        self.violation(ViolationKind::WrongAddress);
    }

    /// An authentic, non-duplicate packet `pn` arrived from `remote` (not
    /// the current address); `newest` if no higher packet number was seen.
    pub(crate) fn on_new_address_packet(
        &mut self,
        now: Time,
        remote: SocketAddr,
        newest: bool,
        len: u16,
        payload: &Payload<'_>,
    ) {
        if !self.path.candidates.contains_key(&remote) {
            if !newest {
                // A late packet from an address the peer left: processed,
                // but no reason to go back there.
                return;
            }
            if self.path.candidates.len() >= MAX_CANDIDATES {
                self.path.stats.rejected_packets += 1;
                return;
            }
            let challenge = self.path.rng.next_u64();
            let retry_at = now + self.recovery.rtt().rto();
            self.path.candidates.insert(
                remote,
                Candidate {
                    challenge,
                    bytes_received: 0,
                    bytes_sent: 0,
                    rounds: 0,
                    due: true,
                    retry_at,
                },
            );
        }
        let Some(c) = self.path.candidates.get_mut(&remote) else {
            return;
        };
        c.bytes_received += u64::from(len);
        self.path.stats.unvalidated_bytes_received += u64::from(len);
        if let Payload::Echo(e) = payload {
            let is_response = e.probe_id == PATH_PROBE_ID && e.timestamp_ns == c.challenge;
            if is_response {
                self.path.stats.responses_received += 1;
                self.migrate(now, remote);
            }
        }
    }

    /// Count a PATH_CHALLENGE received (it is answered like any ECHO).
    pub(crate) fn note_path_echo(&mut self, pk_type: PacketType, flags: Flags, e: &EchoPayload) {
        if pk_type == PacketType::Echo
            && e.probe_id == PATH_PROBE_ID
            && flags.contains(Flags::REPLY_REQ)
        {
            self.path.stats.challenges_received += 1;
        }
    }

    fn migrate(&mut self, now: Time, to: SocketAddr) {
        self.path.candidates.remove(&to);
        let from = self.remote;
        self.remote = to;
        let congestion_reset = from.ip() != to.ip();
        // ECN is validated per path (RFC 9000 §13.4.2), a NAT rebinding
        // included: the new 4-tuple may cross other middleboxes.
        self.recovery.restart_ecn_validation();
        if congestion_reset {
            self.recovery.reset_path(now, self.config.cc.build());
            self.path.stats.congestion_resets += 1;
        }
        self.path.stats.migrations += 1;
        self.recv.request_ack_at(now);
        self.events.push_back(Event::PathMigrated {
            from,
            to,
            congestion_reset,
        });
    }

    /// A due PATH_CHALLENGE, if the amplification limit lets it leave.
    pub(crate) fn poll_path_challenge(&mut self, buf: &mut TxBuf<'_>) -> Option<Written> {
        let size = (HEADER_LEN + EchoPayload::FIXED_LEN) as u64;
        let (&to, c) = self.path.candidates.iter().find(|(_, c)| {
            c.due && c.bytes_sent + size <= AMPLIFICATION_FACTOR * c.bytes_received
        })?;
        let challenge = c.challenge;
        let pn = self.recovery.take_pn();
        let h = self.header(PacketType::Echo, Flags::REPLY_REQ);
        let p = EchoPayload {
            packet_number: pn as u32,
            probe_id: PATH_PROBE_ID,
            timestamp_ns: challenge,
            arrival_ns: None,
            padding_len: 0,
        };
        let w = build(buf, h, Payload::Echo(p), Some(pn))?;
        if let Some(c) = self.path.candidates.get_mut(&to) {
            c.bytes_sent += w.len() as u64;
            c.due = false;
        }
        self.path.stats.challenges_sent += 1;
        self.path.stats.unvalidated_bytes_sent += w.len() as u64;
        self.path.sent_to = Some(to);
        self.counters.packets_sent += 1;
        self.counters.bytes_sent += w.len() as u64;
        Some(w)
    }

    /// The path timer (challenge retries), for `poll_timeout`.
    pub(crate) fn path_timeout(&self) -> Option<Time> {
        self.path.timeout()
    }

    /// Run the path timer: repeat unanswered challenges (the RTO,
    /// doubling each round), give up after [`MAX_CHALLENGES`] rounds.
    pub(crate) fn on_path_timer(&mut self, now: Time) {
        let mut failed = 0;
        let rto = self.recovery.rtt().rto();
        self.path.candidates.retain(|_, c| {
            if c.retry_at > now {
                return true;
            }
            c.rounds += 1;
            if c.rounds >= MAX_CHALLENGES {
                failed += 1;
                return false;
            }
            c.due = true;
            c.retry_at = now + rto.saturating_mul(1 << c.rounds.min(6));
            true
        });
        self.path.stats.failed_validations += failed;
    }
}
