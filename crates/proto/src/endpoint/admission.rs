//! # Admission: who gets a connection, and how cheaply
//!
//! A listener must not become a reflector (answering a forged START with
//! more bytes than it received, towards a victim's address) nor a memory
//! sink (a flood of forged STARTs, each holding a connection). This module
//! is the endpoint's policy; `connection/lifecycle/admission.rs` keeps the
//! per-connection budget it sets.
//!
//! * **Stateless retry token** (as QUIC's Retry):
//!   `issued_at_ms: u32 BE ‖ HMAC-SHA256(key, issued_at_ms ‖ address ‖
//!   src_id ‖ sync_no)[..16]`, 20 bytes (the time in milliseconds modulo
//!   2^32, compared with wrapping arithmetic: 20 bytes keep the REJECT
//!   `retry`, 44 bytes, smaller than a default insecure START, 46 bytes), where `address` is `4 ‖ IPv4 ‖ port`
//!   or `6 ‖ IPv6 ‖ port` and `src_id`, `sync_no` are the START's (both u16
//!   BE; a client's START retransmissions keep them). The key is 32 bytes
//!   drawn at creation from the endpoint's seeded generator (the UDP
//!   runtime seeds it from OS entropy), hashed with SHA-256. A token is
//!   valid for `EndpointConfig::retry_token_lifetime` from the same
//!   address, connection id and SYNC_NO; it proves the client receives at
//!   its address. Nothing is stored per token (a token can be reused
//!   within its lifetime by the same client: the half-open cap bounds what
//!   that buys).
//! * **Half-open connections** (server side, START answered, nothing valid
//!   from the client since) are tracked with their expiry and their
//!   source's slots in the per-source table (`sources.rs`). Policy for a
//!   new START: without a valid token and at or above
//!   `retry_when_half_open_above` half-open, REJECT `retry` with a fresh
//!   token if that REJECT is no larger than the START, else drop (no
//!   state, no per-source accounting: spoofed sources cannot drain the
//!   table). Otherwise (it would create state), at or above the threshold
//!   only: with its source at `max_half_open_per_source` half-open, or
//!   over its source's START rate, drop. Then accept (address validated if the token was valid,
//!   else with the anti-amplification budget). An accepted START beyond
//!   the cap (`max_half_open`, and
//!   `max_half_open_bytes` / [`HALF_OPEN_ENTRY_BYTES`]) evicts the oldest
//!   half-open connection: a flood cannot lock newer clients out, it can
//!   only shorten how long a half-open connection may stay half-open.
//! * **Expiry**: a connection accepted without a token (no flood) stays
//!   half-open up to `half_open_timeout` (10 s: a quiet client's first
//!   keep-alive comes after 5 s); one accepted with a valid token (the
//!   listener is under a flood, or always asks for tokens) for 3 round
//!   trips as the token measured them (REJECT `retry` → START), clamped
//!   to [`half_open_min_timeout`, `half_open_timeout`].
//! * **Anti-amplification** (listeners in a secure mode, whose clients pad
//!   their STARTs): an accepted START without a valid token leaves its
//!   connection limited to as many bytes as it received; if even the
//!   START-REPLY is larger than the START, REJECT `retry` replaces it. An
//!   insecure listener keeps the seed's behaviour byte for byte (the
//!   simulator's golden runs): no budget, see docs/security.md.
//!
//! Time in tokens is the endpoint's own clock (`Time`, the sans-IO time
//! passed in), in milliseconds: tokens from another endpoint, or from a
//! restarted one, fail (new key).

use super::sources::{SourceSlots, SourceTable};
use super::timers::TimerQueue;
use super::{ConnectionHandle, Endpoint};
use crate::connection::Connection;
use crate::rng::SeededRng;
use crate::wire::{HeaderRepr, Payload, RejectPayload, RejectReason, Tlv};
use hmac::{Hmac, Mac};
use peregrine_cc::Time;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

// The half-open entry's cost is a setting's unit, so it lives with the
// settings (below both the endpoint and the connection).
pub use crate::config::HALF_OPEN_ENTRY_BYTES;

/// Half-open lifetime of a token-validated connection, in round trips.
const HALF_OPEN_RTTS: u32 = 3;

/// Bytes of a retry token: 4 (issued_at_ms mod 2^32) + 16 (truncated HMAC).
pub const RETRY_TOKEN_LEN: usize = 20;
/// Bytes of the HMAC kept in a token.
const TAG_LEN: usize = 16;

/// The endpoint's admission state: the token key and the half-open set.
#[derive(Debug)]
pub(crate) struct Admission {
    key: [u8; 32],
    /// Half-open connections and when each expires, ordered by expiry
    /// (O(log n) to arm, clear, and find the due ones).
    half_open: TimerQueue<ConnectionHandle>,
    /// Half-open connections and their source's slots, by handle: handles
    /// ascend with age, so the first is the oldest (eviction). O(log n).
    entries: BTreeMap<ConnectionHandle, SourceSlots>,
    /// Per-source limits, allocated on the first START (sources.rs).
    sources: Option<SourceTable>,
}

/// What `Endpoint::admit` decided for a new START.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Accept; `validated`: the address is proven (valid token).
    Accept {
        /// The START carried a valid token.
        validated: bool,
        /// The round trip the token measured (REJECT `retry` to this
        /// START), ms resolution.
        rtt: Option<Duration>,
    },
    /// Answered (REJECT) or dropped; allocate nothing.
    Refuse,
}

impl Admission {
    /// A fresh key from `rng` (the endpoint's seeded generator).
    pub(crate) fn new(rng: &mut SeededRng) -> Admission {
        let mut h = Sha256::new();
        h.update(b"peregrine v1 retry token key");
        for _ in 0..4 {
            h.update(rng.next_u64().to_be_bytes());
        }
        Admission {
            key: h.finalize().into(),
            half_open: TimerQueue::default(),
            entries: BTreeMap::new(),
            sources: None,
        }
    }

    /// Replaces the token key with one derived from 32 secret bytes (the
    /// UDP runtime's OS entropy: a key drawn from the 64-bit endpoint seed
    /// alone has 64 bits of entropy). Tokens minted before fail.
    pub(crate) fn rekey(&mut self, secret: &[u8; 32]) {
        let mut h = Sha256::new();
        h.update(b"peregrine v1 retry token key");
        h.update(secret);
        self.key = h.finalize().into();
    }

    fn mac(
        &self,
        issued_at_ms: u32,
        remote: SocketAddr,
        src_id: u16,
        sync_no: u16,
    ) -> Hmac<Sha256> {
        // Any key length is accepted by HMAC.
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        m.update(&issued_at_ms.to_be_bytes());
        match remote {
            SocketAddr::V4(a) => {
                m.update(&[4]);
                m.update(&a.ip().octets());
            }
            SocketAddr::V6(a) => {
                m.update(&[6]);
                m.update(&a.ip().octets());
            }
        }
        m.update(&remote.port().to_be_bytes());
        m.update(&src_id.to_be_bytes());
        m.update(&sync_no.to_be_bytes());
        m
    }

    /// A token for a START from `remote` with `src_id` and `sync_no`.
    pub(crate) fn mint(
        &self,
        now: Time,
        remote: SocketAddr,
        src_id: u16,
        sync_no: u16,
    ) -> [u8; RETRY_TOKEN_LEN] {
        // Truncation to 32 bits is the format (wrapping compare in verify).
        let issued = (now.as_nanos() / 1_000_000) as u32;
        let tag = self
            .mac(issued, remote, src_id, sync_no)
            .finalize()
            .into_bytes();
        let mut t = [0u8; RETRY_TOKEN_LEN];
        t[..4].copy_from_slice(&issued.to_be_bytes());
        t[4..].copy_from_slice(&tag[..TAG_LEN]);
        t
    }

    /// Whether `token` was minted by us for this address, id and SYNC_NO,
    /// at most `lifetime_ms` ago (and not in the future). The age is
    /// computed modulo 2^32 ms (49.7 days): a token is also "fresh" again
    /// in later 49.7-day periods, which only matters to a client that kept
    /// its address, connection id and SYNC_NO that long.
    pub(crate) fn verify(
        &self,
        now: Time,
        lifetime_ms: u64,
        token: &[u8],
        remote: SocketAddr,
        src_id: u16,
        sync_no: u16,
    ) -> bool {
        let (Some(issued), Some(tag)) = (token.get(..4), token.get(4..)) else {
            return false;
        };
        if tag.len() != TAG_LEN {
            return false;
        }
        let mut b = [0u8; 4];
        b.copy_from_slice(issued);
        let issued = u32::from_be_bytes(b);
        let now_ms = (now.as_nanos() / 1_000_000) as u32;
        // A token "from the future" has a huge wrapped age: refused.
        if u64::from(now_ms.wrapping_sub(issued)) > lifetime_ms {
            return false;
        }
        // Constant-time comparison of the truncated tag.
        self.mac(issued, remote, src_id, sync_no)
            .verify_truncated_left(tag)
            .is_ok()
    }

    /// Half-open connections now.
    pub(crate) fn half_open(&self) -> usize {
        self.half_open.len()
    }

    /// The per-source table, made on first use under a key derived from
    /// the token key (a later `rekey` leaves an existing table alone: its
    /// counts refer to its slots).
    fn sources(&mut self) -> &mut SourceTable {
        let key = self.key;
        self.sources.get_or_insert_with(|| {
            let mut h = Sha256::new();
            h.update(b"peregrine v1 source table key");
            h.update(key);
            SourceTable::new(h.finalize().into())
        })
    }

    /// The age of a token already verified, ms (its round trip).
    fn token_age(now: Time, token: &[u8]) -> Option<Duration> {
        let b: [u8; 4] = token.get(..4)?.try_into().ok()?;
        let now_ms = (now.as_nanos() / 1_000_000) as u32;
        Some(Duration::from_millis(u64::from(
            now_ms.wrapping_sub(u32::from_be_bytes(b)),
        )))
    }

    /// Stop tracking `handle` as half-open; whether it was. O(log n).
    fn untrack(&mut self, handle: ConnectionHandle) -> bool {
        self.half_open.remove(handle);
        let Some(slots) = self.entries.remove(&handle) else {
            return false;
        };
        if let Some(t) = self.sources.as_mut() {
            t.remove_half_open(slots);
        }
        true
    }
}

impl Endpoint {
    /// Admission of a new START of `start_len` bytes (no connection yet):
    /// checks its token, the retry threshold and its source's limits, and
    /// answers it (REJECT `retry`) or drops it when it is refused.
    /// O(log n) plus an HMAC (token) and a SHA-256 block (source slots).
    pub(super) fn admit(
        &mut self,
        now: Time,
        remote: SocketAddr,
        h: &HeaderRepr,
        start_len: usize,
        token: Option<&[u8]>,
    ) -> Admit {
        let lifetime_ms =
            u64::try_from(self.config.retry_token_lifetime.as_millis()).unwrap_or(u64::MAX);
        let token_ok = token.is_some_and(|t| {
            let ok = self
                .admission
                .verify(now, lifetime_ms, t, remote, h.src_id, h.sync_no);
            if ok {
                self.stats.tokens_accepted += 1;
            } else {
                self.stats.tokens_invalid += 1;
            }
            ok
        });
        // Under a flood (or with tokens always required): the regime in
        // which tokens are asked for, and the per-source limits apply.
        let flood = self.admission.half_open() >= self.config.retry_when_half_open_above;
        if !token_ok && flood {
            // Stateless and no larger than the START: not rate limited,
            // so a spoofed flood cannot drain the buckets of genuine
            // sources (only a START that would create state takes a
            // token: a spoofer cannot get past the retry).
            self.send_retry(now, remote, h, start_len);
            return Admit::Refuse;
        }
        // The per-source limits, for a START about to create state, under
        // a flood only: below the threshold every START is admitted as
        // before (many connections opened at once from one address — a
        // benchmark, a simulated node, a NAT — are not throttled).
        if !flood {
            return Admit::Accept {
                validated: token_ok,
                rtt: token
                    .filter(|_| token_ok)
                    .and_then(|t| Admission::token_age(now, t)),
            };
        }
        let (rate, burst) = (
            self.config.start_rate_per_source,
            self.config.start_burst_per_source,
        );
        let max_per_source = self.config.max_half_open_per_source;
        let sources = self.admission.sources();
        let slots = sources.slots_of(remote);
        if sources.half_open(slots) as usize >= max_per_source {
            // Unanswered, as below: the source's entries expire soon.
            self.stats.starts_source_limited += 1;
            return Admit::Refuse;
        }
        if !sources.take_start(slots, now, rate, burst) {
            // Unanswered: an answer would spend what the limit saves; a
            // genuine client resends its START after its RTO.
            self.stats.starts_rate_limited += 1;
            return Admit::Refuse;
        }
        // No refusal at the global cap: `track_half_open` evicts the
        // oldest half-open connection instead.
        Admit::Accept {
            validated: token_ok,
            rtt: token
                .filter(|_| token_ok)
                .and_then(|t| Admission::token_age(now, t)),
        }
    }

    /// The most half-open connections at once: `max_half_open`, lowered so
    /// that they hold at most `max_half_open_bytes`. O(1).
    pub(super) fn half_open_cap(&self) -> usize {
        self.config
            .max_half_open
            .min(self.config.max_half_open_bytes / HALF_OPEN_ENTRY_BYTES)
            .max(1)
    }

    /// The connection for an admitted START is built: limit it to the
    /// START's bytes if its address is unproven, or answer REJECT `retry`
    /// instead when even its START-REPLY would be larger than the START.
    /// Whether to keep the connection.
    pub(super) fn admit_reply(
        &mut self,
        now: Time,
        remote: SocketAddr,
        h: &HeaderRepr,
        start_len: usize,
        validated: bool,
        conn: &mut Connection,
    ) -> bool {
        // Only secure STARTs are padded (to 256 bytes): an insecure
        // listener keeps the seed's behaviour, byte for byte.
        let secure = self
            .config
            .server
            .as_ref()
            .is_some_and(|s| s.security.is_some());
        if validated || !secure {
            return true;
        }
        if conn.start_reply_len() > start_len {
            self.stats.amplification_limited += 1;
            self.send_retry(now, remote, h, start_len);
            return false;
        }
        conn.limit_amplification(start_len);
        true
    }

    /// Track a just accepted connection from `remote` as half-open, for
    /// 3 × `rtt` (clamped) if its token measured one, else for
    /// `half_open_timeout`; beyond the cap, evict the oldest half-open
    /// connection. O(log n).
    pub(super) fn track_half_open(
        &mut self,
        now: Time,
        handle: ConnectionHandle,
        remote: SocketAddr,
        rtt: Option<Duration>,
    ) {
        let max = self.config.half_open_timeout;
        let life = rtt.map_or(max, |r| {
            r.saturating_mul(HALF_OPEN_RTTS)
                .max(self.config.half_open_min_timeout)
                .min(max)
        });
        self.admission.half_open.set(handle, Some(now + life));
        let sources = self.admission.sources();
        let slots = sources.slots_of(remote);
        sources.add_half_open(slots);
        self.admission.entries.insert(handle, slots);
        while self.admission.half_open() > self.half_open_cap() {
            let Some((&oldest, _)) = self.admission.entries.first_key_value() else {
                break;
            };
            self.evict_half_open(now, oldest);
        }
        self.note_half_open();
    }

    /// Close a half-open connection to make room, silently (as expiry).
    fn evict_half_open(&mut self, now: Time, handle: ConnectionHandle) {
        self.admission.untrack(handle);
        self.stats.half_open_evicted += 1;
        self.connections.visit();
        if let Some(c) = self.connections.get_mut(&handle) {
            c.expire_half_open(now);
        }
        self.pool_sync(handle);
    }

    /// After a datagram reached `handle`: a connection that received a
    /// valid packet is no longer half-open.
    pub(super) fn check_half_open(&mut self, handle: ConnectionHandle) {
        if !self.admission.half_open.contains(handle) {
            return;
        }
        let done = self
            .connections
            .get(&handle)
            .is_none_or(|c| c.has_received_valid());
        if done {
            self.admission.untrack(handle);
            self.note_half_open();
        }
    }

    /// A connection is gone: forget it.
    pub(super) fn forget_half_open(&mut self, handle: ConnectionHandle) {
        if self.admission.untrack(handle) {
            self.note_half_open();
        }
    }

    /// The earliest half-open expiry. O(log n).
    pub(super) fn half_open_timeout(&self) -> Option<Time> {
        self.admission.half_open.next().map(|(t, _)| t)
    }

    /// Close half-open connections whose time is up. They never said
    /// anything valid: no packet goes to their (perhaps forged) address.
    /// O(log n) per expired one; nothing when none is due.
    pub(super) fn expire_half_open(&mut self, now: Time) {
        let mut any = false;
        while let Some(handle) = self.admission.half_open.pop_due(now) {
            self.admission.untrack(handle);
            any = true;
            self.connections.visit();
            self.stats.half_open_expired += 1;
            if let Some(c) = self.connections.get_mut(&handle) {
                c.expire_half_open(now);
            }
            self.pool_sync(handle);
        }
        if any {
            self.note_half_open();
        }
    }

    fn note_half_open(&mut self) {
        let n = self.admission.half_open() as u64;
        let s = &mut self.stats;
        s.half_open = n;
        s.half_open_peak = s.half_open_peak.max(n);
        s.half_open_bytes = n * HALF_OPEN_ENTRY_BYTES as u64;
        s.half_open_bytes_peak = s.half_open_bytes_peak.max(s.half_open_bytes);
    }

    /// The half-open bounds in the counters (at creation).
    pub(super) fn note_half_open_bounds(&mut self) {
        let cap = self.half_open_cap() as u64;
        self.stats.half_open_max = cap;
        self.stats.half_open_bytes_max = cap * HALF_OPEN_ENTRY_BYTES as u64;
    }

    /// Bytes sent to a connection's peer (for its budget) and the held
    /// episodes it reports.
    pub(super) fn note_sent(&mut self, handle: ConnectionHandle, size: usize) {
        if let Some(c) = self.connections.get_mut(&handle) {
            c.budget_sent(size);
            self.stats.amplification_limited += c.take_amplification_limited();
        }
    }

    /// Held episodes of a connection that sent nothing this time.
    pub(super) fn note_held(&mut self, handle: ConnectionHandle) {
        if let Some(c) = self.connections.get_mut(&handle) {
            self.stats.amplification_limited += c.take_amplification_limited();
        }
    }

    /// REJECT `retry` with a fresh token, if no larger than the START.
    fn send_retry(&mut self, now: Time, remote: SocketAddr, h: &HeaderRepr, start_len: usize) {
        let token = self.admission.mint(now, remote, h.src_id, h.sync_no);
        if self.reject_bounded(remote, h, start_len, RejectReason::RETRY, Some(&token)) {
            self.stats.retries_sent += 1;
        }
    }

    /// A REJECT with `reason` (and `token`) if it is no larger than the
    /// `start_len`-byte START it answers; else the START is dropped
    /// (counted in `starts_dropped_flood`). Whether it was queued.
    fn reject_bounded(
        &mut self,
        to: SocketAddr,
        start: &HeaderRepr,
        start_len: usize,
        reason: RejectReason,
        token: Option<&[u8]>,
    ) -> bool {
        let h = Self::reject_header(start);
        let p = RejectPayload {
            reason,
            tlvs: token.map(Tlv::RetryToken).into_iter().collect(),
        };
        if crate::wire::HEADER_LEN + p.buffer_len() > start_len {
            self.stats.starts_dropped_flood += 1;
            return false;
        }
        if self.queue_stateless(to, h, Payload::Reject(p)) {
            self.stats.rejects_sent += 1;
            true
        } else {
            self.stats.starts_dropped_flood += 1;
            false
        }
    }

    /// Whether a connection's peer address is proven (`None`: unknown
    /// handle). Only a server-side connection accepted without a valid
    /// retry token starts unproven; its first valid packet proves it.
    ///
    /// Complexity: O(log n).
    pub fn address_validated(&self, handle: ConnectionHandle) -> Option<bool> {
        self.connections
            .get(&handle)
            .map(Connection::address_validated)
    }

    /// A bound of the memory the endpoint holds for its connections and
    /// queues, bytes: every connection's
    /// structure, buffers and pending events, the stateless queue and the
    /// half-open set. For flood tests and monitoring; not exact.
    ///
    /// Complexity: O(n): it visits every connection (monitoring, not a hot path).
    pub fn memory_estimate(&self) -> usize {
        let conns: usize = self
            .connections
            .values()
            .map(Connection::memory_estimate)
            .sum();
        let map_entry = std::mem::size_of::<(ConnectionHandle, Time)>()
            + std::mem::size_of::<(ConnectionHandle, SourceSlots)>()
            + 32;
        let stateless: usize = self
            .stateless
            .iter()
            .map(|(_, b)| b.capacity() + std::mem::size_of::<(SocketAddr, Vec<u8>)>())
            .sum();
        let ids = (self.by_id.len() + self.by_peer.len()) * 64;
        std::mem::size_of::<Endpoint>()
            + conns
            + stateless
            + ids
            + self.admission.half_open() * map_entry
            + self
                .admission
                .sources
                .as_ref()
                .map_or(0, SourceTable::bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], port))
    }

    #[test]
    fn a_token_is_bound_to_address_id_sync_no_key_and_lifetime() {
        let a = Admission::new(&mut SeededRng::new(1).fork("admission"));
        let t0 = Time::ZERO + Duration::from_secs(100);
        let tok = a.mint(t0, addr(1), 0x0a01, 0x5a3);
        assert_eq!(tok.len(), 20);
        assert_eq!(&tok[..4], &100_000u32.to_be_bytes(), "issued_at_ms first");
        let life = 10_000;
        let later = t0 + Duration::from_millis(9_999);
        assert!(a.verify(later, life, &tok, addr(1), 0x0a01, 0x5a3));
        assert!(a.verify(
            t0 + Duration::from_secs(10),
            life,
            &tok,
            addr(1),
            0x0a01,
            0x5a3
        ));
        // Expired, or issued "in the future".
        assert!(!a.verify(
            t0 + Duration::from_millis(10_001),
            life,
            &tok,
            addr(1),
            0x0a01,
            0x5a3
        ));
        assert!(!a.verify(Time::ZERO, life, &tok, addr(1), 0x0a01, 0x5a3));
        // Another port, IP family, id or SYNC_NO.
        assert!(!a.verify(later, life, &tok, addr(2), 0x0a01, 0x5a3));
        let v6 = SocketAddr::from(([0u16, 0, 0, 0, 0, 0xffff, 0xc000, 0x0201], 1));
        assert!(!a.verify(later, life, &tok, v6, 0x0a01, 0x5a3));
        assert!(!a.verify(later, life, &tok, addr(1), 0x0a02, 0x5a3));
        assert!(!a.verify(later, life, &tok, addr(1), 0x0a01, 0x5a4));
        // Another endpoint's key.
        let b = Admission::new(&mut SeededRng::new(2).fork("admission"));
        assert!(!b.verify(later, life, &tok, addr(1), 0x0a01, 0x5a3));
        // Tampered: the time (to extend the lifetime), the tag, the length.
        let mut t = tok;
        t[3] ^= 1;
        assert!(!a.verify(later, life, &t, addr(1), 0x0a01, 0x5a3));
        let mut t = tok;
        t[16] ^= 0x80;
        assert!(!a.verify(later, life, &t, addr(1), 0x0a01, 0x5a3));
        assert!(!a.verify(later, life, &tok[..19], addr(1), 0x0a01, 0x5a3));
        assert!(!a.verify(later, life, &[], addr(1), 0x0a01, 0x5a3));
        let mut long = tok.to_vec();
        long.push(0);
        assert!(!a.verify(later, life, &long, addr(1), 0x0a01, 0x5a3));
    }

    #[test]
    fn rekeying_with_a_secret_invalidates_seed_derived_tokens() {
        let mut a = Admission::new(&mut SeededRng::new(9).fork("admission"));
        let t = Time::ZERO + Duration::from_millis(1234);
        let before = a.mint(t, addr(1), 1, 2);
        a.rekey(&[5; 32]);
        let after = a.mint(t, addr(1), 1, 2);
        assert_ne!(before, after);
        assert!(!a.verify(t, 10_000, &before, addr(1), 1, 2));
        assert!(a.verify(t, 10_000, &after, addr(1), 1, 2));
        let mut b = Admission::new(&mut SeededRng::new(10).fork("admission"));
        b.rekey(&[5; 32]);
        assert_eq!(
            b.mint(t, addr(1), 1, 2),
            after,
            "the key is the secret's alone"
        );
    }

    #[test]
    fn the_same_seed_mints_the_same_tokens() {
        let a = Admission::new(&mut SeededRng::new(9).fork("admission"));
        let b = Admission::new(&mut SeededRng::new(9).fork("admission"));
        let t = Time::ZERO + Duration::from_millis(1234);
        assert_eq!(a.mint(t, addr(1), 1, 2), b.mint(t, addr(1), 1, 2));
    }
}
