//! Test drivers shared by the Vegas-family test modules (Vegas, Veno, YeAH).

use crate::controller::CongestionController;
use crate::policy::{CcPolicy, PolicyController};
use crate::testutil::{ack, ack_rtt, path};
use crate::types::{AckSample, CongestionEvent, CongestionKind, PathInfo};
use crate::Time;
use std::time::Duration;

/// The path for an ACK that moves `snd_una` to `una` with `snd_nxt` at `nxt`.
pub(crate) fn at(una: u64, nxt: u64) -> PathInfo {
    let mut p = path(0, 100);
    p.snd_una = una;
    p.snd_nxt = nxt;
    p
}

/// Set up one spec vector through the public trait: a first round
/// establishes `base_ms` (and ends with too few samples), then a round of
/// `samples` RTT samples of `round_ms` is ended by an ACK carrying the
/// last of them, with `cwnd`/`ssthresh` (and `cwnd_cnt = 0`) in force
/// just before that last ACK. `init` must have been called at [`at`]`(1000, 1100)`.
pub(crate) fn drive_round<P: CcPolicy>(
    c: &mut PolicyController<P>,
    base_ms: u64,
    round_ms: u64,
    samples: u32,
    cwnd: u32,
    ssthresh: u32,
) {
    c.on_ack(&ack_rtt(1, base_ms * 1000), &at(1050, 1100));
    c.on_ack(&ack(1), &at(1101, 1200)); // round end, 1 sample
    for _ in 1..samples {
        c.on_ack(&ack_rtt(1, round_ms * 1000), &at(1150, 1200));
    }
    let core = c.core_mut();
    core.cwnd = cwnd;
    core.ssthresh = ssthresh;
    core.cwnd_cnt = 0;
    c.on_ack(&ack_rtt(1, round_ms * 1000), &at(1201, 1300)); // round end
}

/// A loss event (one segment lost).
pub(crate) fn loss() -> CongestionEvent {
    CongestionEvent {
        kind: CongestionKind::Loss,
        now: Time::ZERO,
        is_persistent: false,
        lost_segs: 1,
        in_flight: 10,
        lost_sent_at: None,
    }
}

/// Throw a long deterministic pseudo-random sequence of calls with
/// extreme values at `c`; every call must return and keep the window
/// within `[1, clamp]`. `observe` sees the controller after every call (for
/// coverage checks).
pub(crate) fn stress<P: CcPolicy>(
    c: &mut PolicyController<P>,
    seed: u64,
    mut observe: impl FnMut(&PolicyController<P>),
) {
    let mut x = seed.wrapping_mul(2).wrapping_add(1);
    let mut next = move || {
        // xorshift64: a seeded test-only generator.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut p = path(0, 100);
    c.init(&p);
    let mut now_ms = 0u64;
    for _ in 0..20_000 {
        let r = next();
        now_ms += r % 50;
        p.now = Time::from_millis(now_ms);
        p.snd_una += r % 3;
        p.snd_nxt = p.snd_nxt.max(p.snd_una + (r >> 8) % 40);
        p.in_flight = ((r >> 16) % 300) as u32;
        p.cwnd_limited = (r >> 24) % 4 != 0;
        let rtt = match (r >> 28) % 64 {
            0 => None,
            1 => Some(Duration::ZERO),
            2 => Some(Duration::MAX),
            3 => Some(Duration::from_secs(u32::MAX as u64 / 7)),
            _ => Some(Duration::from_micros((r >> 32) % 400_000)),
        };
        match (r >> 40) % 61 {
            0 => {
                c.on_congestion_event(&loss(), &p);
            }
            1 => {
                let mut e = loss();
                e.kind = CongestionKind::Ecn;
                c.on_congestion_event(&e, &p);
            }
            2 => c.on_recovery_exit(&p),
            3 => {
                c.on_rto(&p);
            }
            4 => c.on_spurious_congestion(&p),
            5 => c.on_idle_restart(&p, Duration::from_secs(3)),
            6 => c.set_initial_window((r >> 44) % 10_000_000_000, &p),
            7 => c.on_packet_sent(&p, 1448),
            _ => {
                let segs = match (r >> 44) % 5 {
                    0 => u32::MAX,
                    1 => 0,
                    _ => ((r >> 48) % 64) as u32,
                };
                let a = AckSample {
                    acked_segs: segs,
                    acked_bytes: segs as u64 * 1448,
                    rtt,
                    una_advanced: (r >> 52) % 8 != 0,
                    is_dup_ack: (r >> 52) % 8 == 0,
                    ..AckSample::default()
                };
                c.on_ack(&a, &p);
            }
        }
        let stats = c.stats();
        assert!(c.cwnd_bytes() >= 1448, "cwnd below one segment");
        assert!(c.cwnd_bytes() <= stats.cwnd_clamp_bytes, "cwnd above clamp");
        observe(c);
    }
}

/// Congestion avoidance with every RTT sample equal to the minimum:
/// `cwnd` must never shrink over many rounds of 1-segment ACKs.
pub(crate) fn never_shrinks_at_min_rtt<P: CcPolicy>(c: &mut PolicyController<P>) {
    c.init(&at(1000, 1100));
    c.core_mut().ssthresh = 5;
    let mut una = 1000u64;
    let mut last = c.core().cwnd;
    for _ in 0..5_000 {
        una += 1;
        c.on_ack(&ack_rtt(1, 40_000), &at(una, una + last as u64));
        let cwnd = c.core().cwnd;
        assert!(cwnd >= last, "cwnd shrank from {last} to {cwnd}");
        last = cwnd;
    }
}
