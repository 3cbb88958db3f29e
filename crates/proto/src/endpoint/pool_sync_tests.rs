//! The pool accounting that the receive path skips when nothing moved
//! (`Endpoint::pool_sync_swapped`): the skip is exact only if the stats
//! mirrored from the pool equal it after every call, and the pool counts
//! exactly what the connections hold. This test drives a sender whose
//! pool refuses messages and its receiver by hand, one datagram at a
//! time, and checks both after every call into either endpoint — and
//! that the refused sender is still told `Writable` and everything
//! arrives.

use super::integrity_tests::addr;
use super::Endpoint;
use crate::connection::{ConnectionConfig, EndpointConfig, Event, SendError};
use crate::io::SansIo;
use crate::wire::StartupMode;
use crate::Time;
use std::time::Duration;

/// The stats equal the pool, and the pool holds exactly what the
/// connections say they hold.
fn check_mirror(e: &Endpoint) {
    let s = &e.stats;
    assert_eq!(s.pool_bytes_in_use, e.pool.in_use() as u64);
    assert_eq!(s.pool_peak_bytes, e.pool.peak() as u64);
    assert_eq!(s.pool_ceiling_bytes, e.pool.ceiling() as u64);
    assert_eq!(s.pool_would_block, e.pool.would_block_count());
    let held: usize = e.connections.values().map(|c| c.pool_accounted()).sum();
    assert_eq!(held, e.pool.in_use());
}

/// Moves datagrams both ways one at a time at `now`, checking both
/// endpoints after each; how many moved.
fn pump_checked(a: &mut Endpoint, b: &mut Endpoint, now: Time) -> usize {
    let mut buf = Vec::new();
    let mut moved = 0;
    loop {
        let mut any = false;
        if let Some(t) = a.poll_transmit(now, &mut buf) {
            b.handle_datagram(now, addr(0), None, &mut buf[..t.size]);
            any = true;
        }
        if let Some(t) = b.poll_transmit(now, &mut buf) {
            a.handle_datagram(now, addr(1), None, &mut buf[..t.size]);
            any = true;
        }
        check_mirror(a);
        check_mirror(b);
        if !any {
            return moved;
        }
        moved += 1;
    }
}

#[test]
fn pool_stats_mirror_the_pool_after_every_datagram_and_writable_still_fires() {
    const CEILING: usize = 20_000;
    const MESSAGES: usize = 200;
    let cfg = ConnectionConfig {
        startup: StartupMode::SlowStart,
        ..ConnectionConfig::default()
    };
    let mut a = Endpoint::new(
        EndpointConfig {
            memory_ceiling_bytes: CEILING,
            ..EndpointConfig::default()
        },
        1,
    );
    let mut b = Endpoint::new(EndpointConfig::server(cfg.clone()), 2);
    let h = a.connect(Time::ZERO, addr(1), cfg).unwrap();
    let mut now = Time::ZERO;
    let (mut sent, mut refused, mut writable, mut received) = (0, 0, 0, 0);
    for _ in 0..2_000 {
        now += Duration::from_millis(1);
        a.handle_timeout(now);
        b.handle_timeout(now);
        while sent < MESSAGES {
            match a.send_message(h, now, 0, &[7; 1_000]) {
                Ok(_) => sent += 1,
                Err(SendError::WouldBlock { .. }) => {
                    refused += 1;
                    break;
                }
                Err(e) => panic!("send: {e:?}"),
            }
            check_mirror(&a);
        }
        pump_checked(&mut a, &mut b, now);
        writable += std::iter::from_fn(|| a.poll_event())
            .filter(|(_, e)| *e == Event::Writable)
            .count();
        received += std::iter::from_fn(|| b.poll_event())
            .filter(|(_, e)| matches!(e, Event::MessageReceived { .. }))
            .count();
        if received == MESSAGES {
            break;
        }
    }
    assert!(refused > 0, "the ceiling refused some sends");
    assert!(writable > 0, "a refused sender is told when room frees");
    assert_eq!(received, MESSAGES, "everything arrives");
}
