//! What one half-open entry costs (issue 21, item 7): the heap bytes a
//! Noise_XX listener really holds per answered START, counted by a global
//! allocator that tracks live bytes, against the core's own accounting
//! (`EndpointStats::half_open_bytes`) and the documented bound
//! (`docs/security.md`, `HALF_OPEN_ENTRY_BYTES`).
//!
//! One test per binary on purpose: the counter is process-wide, so
//! nothing else may allocate while it measures.

use peregrine_proto::crypto::{NoiseConfig, SecurityConfig, StaticKeypair};
use peregrine_proto::{ConnectionConfig, Endpoint, EndpointConfig, SansIo, Time};
use std::alloc::{GlobalAlloc, Layout, System};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting live bytes.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is
// only arithmetic on the sizes passed.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: `p` came from `alloc` with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ENTRIES: usize = 1_000;

fn server_config() -> EndpointConfig {
    EndpointConfig {
        // Accept every START without a token: the entries are what is
        // measured, not the retry round trip.
        retry_when_half_open_above: usize::MAX,
        ..EndpointConfig::server(ConnectionConfig {
            security: Some(SecurityConfig::Noise(NoiseConfig::server(
                StaticKeypair::from_private([0x5e; 32]),
            ))),
            ..ConnectionConfig::default()
        })
    }
}

/// `n` genuine Noise_XX STARTs (valid bindings), from fresh clients.
fn starts(n: usize) -> Vec<Vec<u8>> {
    let server: SocketAddr = "10.0.0.1:4433".parse().unwrap();
    (0..n)
        .map(|i| {
            let mut c = Endpoint::new(EndpointConfig::default(), 1_000 + i as u64);
            let cfg = ConnectionConfig {
                security: Some(SecurityConfig::Noise(NoiseConfig::xx(
                    StaticKeypair::from_private([0xc1; 32]),
                ))),
                ..ConnectionConfig::default()
            };
            c.connect(Time::ZERO, server, cfg).unwrap();
            let mut buf = Vec::new();
            let t = c.poll_transmit(Time::ZERO, &mut buf).unwrap();
            buf.truncate(t.size);
            buf
        })
        .collect()
}

#[test]
fn half_open_entry_bytes_are_measured_and_within_the_accounting() {
    let starts = starts(ENTRIES);
    let mut server = Endpoint::new(server_config(), 7);
    let mut buf = Vec::with_capacity(65_536);
    let mut dg = Vec::with_capacity(2_048);
    // Warm up (first-use allocations of the endpoint's own tables).
    let warm: SocketAddr = "172.16.0.1:1".parse().unwrap();
    dg.clear();
    dg.extend_from_slice(&starts[0]);
    server.handle_datagram(Time::ZERO, warm, None, &mut dg);
    while server.poll_transmit(Time::ZERO, &mut buf).is_some() {}
    while server.poll_event().is_some() {}
    let before = LIVE.load(Ordering::Relaxed);
    for (i, s) in starts.iter().enumerate().skip(1) {
        let from = SocketAddr::from(([172, 16, (i >> 8) as u8, i as u8], 2_000));
        dg.clear();
        dg.extend_from_slice(s);
        server.handle_datagram(Time::ZERO, from, None, &mut dg);
        // The START-REPLY leaves, as in a runtime's turn.
        while server.poll_transmit(Time::ZERO, &mut buf).is_some() {}
        while server.poll_event().is_some() {}
    }
    let after = LIVE.load(Ordering::Relaxed);
    let s = server.endpoint_stats().clone();
    assert_eq!(s.half_open as usize, ENTRIES);
    let per_entry = (after - before) as f64 / (ENTRIES - 1) as f64;
    eprintln!(
        "half-open Noise_XX entries: {ENTRIES}; heap bytes per entry {per_entry:.0} \
         (size_of Connection {}); memory_estimate per entry {}",
        std::mem::size_of::<peregrine_proto::connection::Connection>(),
        server.memory_estimate() / ENTRIES,
    );
    // The accounting's constant covers the real cost, and the bound holds.
    let entry = peregrine_proto::endpoint::HALF_OPEN_ENTRY_BYTES as f64;
    assert!(
        per_entry <= entry,
        "a half-open entry costs {per_entry:.0} bytes: raise HALF_OPEN_ENTRY_BYTES and docs/security.md"
    );
    assert_eq!(s.half_open_bytes, s.half_open * entry as u64);
    assert!(s.half_open_bytes_peak <= s.half_open_bytes_max);
    assert!(
        per_entry > entry / 2.0,
        "{per_entry:.0}: lower the constant"
    );
}
