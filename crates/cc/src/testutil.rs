//! Helpers for the controllers' unit tests: a path view and ACK samples
//! that satisfy the spec's vector conventions (cc-spec §5: cwnd-limited,
//! state Open, one segment per ACK unless stated).

#![cfg(test)]
#![allow(dead_code)] // helpers are shared by many test modules

use crate::types::{AckSample, CaState, PathInfo};
use crate::Time;
use std::time::Duration;

/// MSS used by the vectors unless they say otherwise.
pub const MSS: u32 = 1448;

/// A cwnd-limited, Open path at `now_ms` with an SRTT of `srtt_ms` (0 = unknown).
pub fn path(now_ms: u64, srtt_ms: u64) -> PathInfo {
    let mut p = PathInfo::new(Time::from_millis(now_ms), MSS);
    if srtt_ms > 0 {
        let srtt = Duration::from_millis(srtt_ms);
        p.srtt = Some(srtt);
        p.rttvar = Some(srtt / 4);
        p.rto = (srtt * 2).max(Duration::from_millis(200));
        p.min_rtt = Some(srtt);
        p.latest_rtt = Some(srtt);
    }
    p.snd_una = 1_000;
    p.snd_nxt = 1_100;
    p.in_flight = 100;
    p.cwnd_limited = true;
    p.ca_state = CaState::Open;
    p
}

/// An ACK that newly acknowledges `segs` segments and advances `snd_una`.
pub fn ack(segs: u32) -> AckSample {
    AckSample {
        acked_segs: segs,
        acked_bytes: segs as u64 * MSS as u64,
        una_advanced: segs > 0,
        ..AckSample::default()
    }
}

/// An ACK of `segs` segments carrying an RTT sample of `rtt_us` microseconds.
pub fn ack_rtt(segs: u32, rtt_us: u64) -> AckSample {
    AckSample {
        rtt: Some(Duration::from_micros(rtt_us)),
        ..ack(segs)
    }
}

/// A loss event at time zero with `in_flight` segments outstanding.
pub fn loss_event(in_flight: u32) -> crate::types::CongestionEvent {
    crate::types::CongestionEvent {
        kind: crate::types::CongestionKind::Loss,
        now: Time::ZERO,
        is_persistent: false,
        lost_segs: 1,
        in_flight,
        lost_sent_at: None,
    }
}

/// `c` initialised on `path(0, 100)`, then set to `cwnd` and `ssthresh` segments.
pub fn with_window<P: crate::policy::CcPolicy>(
    mut c: crate::policy::PolicyController<P>,
    cwnd: u32,
    ssthresh: u32,
) -> crate::policy::PolicyController<P> {
    use crate::controller::CongestionController;
    c.init(&path(0, 100));
    c.core_mut().cwnd = cwnd;
    c.core_mut().ssthresh = ssthresh;
    c
}
