//! Endpoint-wide counters (`Endpoint::endpoint_stats`): datagrams, decode
//! failures, admission, the buffer pool and packet protection.

/// Endpoint-wide counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams handed to `handle_datagram`.
    pub datagrams_received: u64,
    /// Datagrams that did not decode (bad length, checksum, payload, …).
    pub decode_errors: u64,
    /// Datagrams for a connection id this endpoint does not have.
    pub unknown_connection: u64,
    /// STARTs accepted.
    pub connections_accepted: u64,
    /// REJECTs sent.
    pub rejects_sent: u64,
    /// Stateless resets sent.
    pub resets_sent: u64,
    /// STARTs dropped because they lacked ST_CKS and the server checksums.
    pub unchecked_dropped: u64,
    /// Stateless answers dropped because their queue was full.
    pub stateless_dropped: u64,
    /// Buffer pool: bytes of message data held (queued or unacknowledged).
    pub pool_bytes_in_use: u64,
    /// Buffer pool: the most bytes held at once.
    pub pool_peak_bytes: u64,
    /// Buffer pool: its ceiling (`EndpointConfig::memory_ceiling_bytes`).
    pub pool_ceiling_bytes: u64,
    /// Buffer pool: sends refused with `SendError::WouldBlock`.
    pub pool_would_block: u64,
    /// Datagrams for a protected connection that failed authentication
    /// (forged, tampered, or before the keys) and were dropped.
    pub auth_failures: u64,
    /// Authenticated-looking datagrams dropped by a replay window.
    pub replays_dropped: u64,
    /// REJECT `retry` sent (each with a fresh token).
    pub retries_sent: u64,
    /// STARTs whose RETRY_TOKEN was valid.
    pub tokens_accepted: u64,
    /// STARTs whose RETRY_TOKEN was not (forged, expired, another address,
    /// id or SYNC_NO, another endpoint's).
    pub tokens_invalid: u64,
    /// Half-open connections now (START answered, nothing valid since).
    pub half_open: u64,
    /// The most half-open connections at once.
    pub half_open_peak: u64,
    /// Half-open connections dropped after `half_open_timeout` (or, when
    /// admitted with a retry token, after 3 round trips).
    pub half_open_expired: u64,
    /// The most half-open connections the endpoint keeps (`max_half_open`,
    /// lowered to fit `max_half_open_bytes`).
    pub half_open_max: u64,
    /// Bytes the half-open connections hold now, as accounted:
    /// `half_open` × `HALF_OPEN_ENTRY_BYTES`.
    pub half_open_bytes: u64,
    /// The most bytes they held at once.
    pub half_open_bytes_peak: u64,
    /// The bound of `half_open_bytes`: `half_open_max` ×
    /// `HALF_OPEN_ENTRY_BYTES` (docs/security.md).
    pub half_open_bytes_max: u64,
    /// Half-open connections closed (silently) to make room for a newer
    /// one at the cap.
    pub half_open_evicted: u64,
    /// STARTs dropped because their source (IPv4 address, IPv6 /64) was
    /// over its START rate (`start_rate_per_source`).
    pub starts_rate_limited: u64,
    /// STARTs dropped because their source already had
    /// `max_half_open_per_source` half-open connections.
    pub starts_source_limited: u64,
    /// STARTs dropped by admission: the REJECT (`retry` or `busy`) they
    /// would get is larger than they are, or the stateless queue is full.
    pub starts_dropped_flood: u64,
    /// Times the anti-amplification budget held sending back (a START-REPLY
    /// replaced by REJECT `retry`, or an unvalidated connection's datagrams
    /// held until its address was proven).
    pub amplification_limited: u64,
    /// Handshakes that failed on this endpoint's side: STARTs refused for
    /// their SECURITY TLV (missing, unsupported pattern, message 1 not
    /// authenticating, binding mismatch, client key not authorized — no
    /// state kept) and XX message 3 failures.
    pub handshake_failures: u64,
    /// STARTs answered with REJECT `busy` (the connection cap was reached).
    pub busy_rejects: u64,
    /// ICMP destination unreachables the runtime handed in
    /// (`Endpoint::handle_unreachable`).
    pub icmp_unreachable: u64,
    /// Stateless resets received that carried the right token and ended
    /// a protected connection (docs/security.md, "Stateless reset").
    pub resets_accepted: u64,
}
