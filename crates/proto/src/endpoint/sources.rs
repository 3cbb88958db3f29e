//! # Per-source admission limits in a table that cannot grow
//!
//! Two limits per source (an IPv4 address, or the /64 of an IPv6 one — a
//! host usually receives at a whole /64, so it could otherwise claim 2^64
//! sources): a token bucket of STARTs, and a count of half-open
//! connections. A map keyed by source would grow with every spoofed
//! address of a flood; instead each source is hashed (SHA-256 under a
//! secret key, so an attacker cannot aim at a victim's slots) to
//! [`HASHES`] of [`SLOTS`] fixed slots, as a count-min sketch:
//!
//! * **Half-open count**: each slot counts the half-open connections of
//!   every source that hashes to it; a source's count is the *smallest* of
//!   its slots (never below its true count). A legitimate source is held
//!   back only if every one of its slots is shared with a source at the
//!   limit.
//! * **START rate**: each slot is a token bucket; a START passes when any
//!   of its source's slots has a token, and takes one from each that has.
//!   A heavy source drains all its slots, so it gets at most [`HASHES`] ×
//!   the rate.
//!
//! Memory: [`SLOTS`] × 12 bytes (48 KiB), allocated on the first START a
//! listener sees (clients and simulated endpoints that never accept pay
//! nothing). Every operation is O([`HASHES`]), allocates nothing, and
//! iterates nothing.

use peregrine_cc::Time;
use sha2::{Digest, Sha256};
use std::net::{IpAddr, SocketAddr};

/// Slots of the table.
pub(crate) const SLOTS: usize = 4_096;
/// Slots per source.
pub(crate) const HASHES: usize = 2;
/// Milli-tokens per START (the bucket counts in thousandths, so a refill
/// of `rate` STARTs/s is `rate` milli-tokens per millisecond).
const MILLI: u64 = 1_000;

/// The slots a source hashes to.
pub(crate) type SourceSlots = [u16; HASHES];

/// One slot.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// Milli-tokens *missing* from the bucket (0: full; a zeroed slot is a
    /// full bucket, so the table needs no initialisation per source).
    deficit: u32,
    /// When the bucket was last refilled, ms of the endpoint clock mod 2^32.
    at_ms: u32,
    /// Half-open connections of the sources hashing here.
    half_open: u32,
}

/// The per-source table.
#[derive(Debug)]
pub(crate) struct SourceTable {
    key: [u8; 32],
    slots: Box<[Slot]>,
}

impl SourceTable {
    /// An empty table (every bucket full, every count zero) under `key`.
    pub(crate) fn new(key: [u8; 32]) -> SourceTable {
        SourceTable {
            key,
            slots: vec![Slot::default(); SLOTS].into_boxed_slice(),
        }
    }

    /// The slots of `remote`'s source. O(1): one SHA-256 block.
    pub(crate) fn slots_of(&self, remote: SocketAddr) -> SourceSlots {
        let mut h = Sha256::new();
        h.update(self.key);
        match remote.ip() {
            IpAddr::V4(a) => {
                h.update([4]);
                h.update(a.octets());
            }
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => {
                    h.update([4]);
                    h.update(v4.octets());
                }
                None => {
                    h.update([6]);
                    h.update(&a.octets()[..8]);
                }
            },
        }
        let d = h.finalize();
        let mut out = [0u16; HASHES];
        for (i, o) in out.iter_mut().enumerate() {
            let v = u16::from_be_bytes([d[2 * i], d[2 * i + 1]]);
            // SLOTS is a power of two.
            *o = v & (SLOTS as u16 - 1);
        }
        out
    }

    /// Whether a START from the source may pass the rate limit of `rate`
    /// STARTs/s with bursts of `burst`; takes its token if so. O(1).
    pub(crate) fn take_start(&mut self, s: SourceSlots, now: Time, rate: u32, burst: u32) -> bool {
        if rate == 0 {
            return true;
        }
        let now_ms = (now.as_nanos() / 1_000_000) as u32;
        let depth = u64::from(burst) * MILLI;
        let mut any = false;
        let mut fills = [0u64; HASHES];
        for (i, &k) in s.iter().enumerate() {
            let slot = &mut self.slots[usize::from(k)];
            let elapsed = u64::from(now_ms.wrapping_sub(slot.at_ms));
            let refill = elapsed.saturating_mul(u64::from(rate));
            let deficit = u64::from(slot.deficit).saturating_sub(refill);
            slot.deficit = deficit as u32;
            slot.at_ms = now_ms;
            fills[i] = deficit;
            any |= deficit + MILLI <= depth;
        }
        if !any {
            return false;
        }
        for (i, &k) in s.iter().enumerate() {
            if fills[i] + MILLI <= depth {
                let slot = &mut self.slots[usize::from(k)];
                slot.deficit = (fills[i] + MILLI) as u32;
            }
        }
        true
    }

    /// The source's half-open connections (an upper bound). O(1).
    pub(crate) fn half_open(&self, s: SourceSlots) -> u32 {
        s.iter()
            .map(|&k| self.slots[usize::from(k)].half_open)
            .min()
            .unwrap_or(0)
    }

    /// One more half-open connection from the source. O(1).
    pub(crate) fn add_half_open(&mut self, s: SourceSlots) {
        for &k in &s {
            let slot = &mut self.slots[usize::from(k)];
            slot.half_open = slot.half_open.saturating_add(1);
        }
    }

    /// One half-open connection of the source less. O(1).
    pub(crate) fn remove_half_open(&mut self, s: SourceSlots) {
        for &k in &s {
            let slot = &mut self.slots[usize::from(k)];
            slot.half_open = slot.half_open.saturating_sub(1);
        }
    }

    /// Bytes the table holds.
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of::<SourceTable>() + SLOTS * std::mem::size_of::<Slot>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn a(ip: [u8; 4], port: u16) -> SocketAddr {
        SocketAddr::from((ip, port))
    }

    #[test]
    fn a_source_is_its_address_or_its_ipv6_slash_64_not_its_port() {
        let t = SourceTable::new([1; 32]);
        assert_eq!(
            t.slots_of(a([10, 0, 0, 1], 1)),
            t.slots_of(a([10, 0, 0, 1], 2))
        );
        let v6 =
            |last: u16, net: u16| SocketAddr::from(([0x2001, 0xdb8, net, 0, 0, 0, 0, last], 9));
        assert_eq!(t.slots_of(v6(1, 0)), t.slots_of(v6(0xffff, 0)));
        let mapped = SocketAddr::from(([0, 0, 0, 0, 0, 0xffff, 0x0a00, 0x0001], 7));
        assert_eq!(t.slots_of(mapped), t.slots_of(a([10, 0, 0, 1], 1)));
        // Another key, other slots (with overwhelming probability).
        let u = SourceTable::new([2; 32]);
        let many: Vec<_> = (0..64u8).map(|i| t.slots_of(a([10, 0, 1, i], 1))).collect();
        let other: Vec<_> = (0..64u8).map(|i| u.slots_of(a([10, 0, 1, i], 1))).collect();
        assert_ne!(many, other);
    }

    #[test]
    fn the_bucket_passes_a_burst_then_the_rate() {
        let mut t = SourceTable::new([3; 32]);
        let s = t.slots_of(a([192, 0, 2, 1], 1));
        let t0 = Time::ZERO + Duration::from_secs(5);
        let passed = (0..30).filter(|_| t.take_start(s, t0, 10, 20)).count();
        assert_eq!(passed, 20, "the burst");
        // 10/s: one more every 100 ms.
        assert!(!t.take_start(s, t0 + Duration::from_millis(50), 10, 20));
        assert!(t.take_start(s, t0 + Duration::from_millis(100), 10, 20));
        assert!(!t.take_start(s, t0 + Duration::from_millis(150), 10, 20));
        // A long quiet spell refills it to the burst, no more.
        let later = t0 + Duration::from_secs(60);
        let passed = (0..30).filter(|_| t.take_start(s, later, 10, 20)).count();
        assert_eq!(passed, 20);
        // Rate 0: no limit.
        assert!((0..1000).all(|_| t.take_start(s, later, 0, 0)));
    }

    #[test]
    fn half_open_counts_are_per_source_and_a_light_source_is_not_held_back() {
        let mut t = SourceTable::new([4; 32]);
        let heavy = t.slots_of(a([198, 51, 100, 1], 1));
        for _ in 0..64 {
            t.add_half_open(heavy);
        }
        assert_eq!(t.half_open(heavy), 64);
        // 200 other sources: each sees (nearly always) zero, and never
        // more than the heavy one's count.
        let mut clear = 0;
        for i in 0..200u8 {
            let s = t.slots_of(a([203, 0, 113, i], 1));
            let n = t.half_open(s);
            assert!(n == 0 || n == 64);
            clear += usize::from(n == 0);
        }
        assert!(clear >= 199, "{clear}");
        for _ in 0..64 {
            t.remove_half_open(heavy);
        }
        assert_eq!(t.half_open(heavy), 0);
        t.remove_half_open(heavy);
        assert_eq!(t.half_open(heavy), 0, "never below zero");
    }
}
