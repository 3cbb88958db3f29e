//! # Measurements the invariants of [`World`](crate::world::World) compare
//!
//! Which counters must never decrease, which ones count a dropped
//! datagram, and a fingerprint to recognise a datagram seen before.

use peregrine_proto::endpoint::EndpointStats;
use peregrine_proto::wire::{Header, HeaderRepr};
use peregrine_proto::{ConnectionStats, Endpoint};

/// The counters of a connection checked for monotonicity.
pub fn counters(s: &ConnectionStats) -> [u64; 12] {
    [
        s.packets_sent,
        s.bytes_sent,
        s.packets_received,
        s.bytes_received,
        s.data_packets_sent,
        s.packets_acked,
        s.packets_lost,
        s.messages_sent,
        s.messages_acked,
        s.messages_delivered,
        s.acks_sent,
        s.rtos,
    ]
}

/// The endpoint counters checked for monotonicity.
pub fn endpoint_counters(ep: &Endpoint) -> [u64; 12] {
    let s = ep.endpoint_stats();
    [
        s.datagrams_received,
        s.decode_errors,
        s.unknown_connection,
        s.connections_accepted,
        s.rejects_sent,
        s.resets_sent,
        s.unchecked_dropped,
        s.stateless_dropped,
        s.pool_peak_bytes,
        s.pool_would_block,
        s.auth_failures,
        s.replays_dropped,
    ]
}

/// The drop counters: a datagram an endpoint refuses raises exactly one
/// (bad length / checksum / payload, unknown connection, failed
/// authentication, replay).
pub fn drops(s: &EndpointStats) -> u64 {
    s.decode_errors + s.unknown_connection + s.auth_failures + s.replays_dropped
}

/// FNV-1a of the bytes and their length (to recognise a datagram without
/// keeping it).
pub fn fingerprint(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Whether the bytes carry a START or REJECT header (sent in the clear).
pub fn is_handshake(bytes: &[u8]) -> bool {
    Header::new_checked(bytes)
        .ok()
        .and_then(|h| HeaderRepr::parse(&h).ok())
        .is_some_and(|h| h.pk_type.is_handshake())
}
