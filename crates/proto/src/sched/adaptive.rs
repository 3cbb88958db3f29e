//! The adaptive scheduler, seed 002 Algorithm 4: estimate the shared
//! capacity as `sBW = 5/4 · cwnd · 8 / sRTT` (bits per second) before every
//! decision; if `sBW > target` use RR (no stream needs protecting), else
//! ABS (protect the priority streams).
//!
//! Both policies' queues are kept up to date all the time, so a switch
//! costs nothing and loses no stream. Before the first RTT sample there is
//! no estimate and the scheduler stays in ABS (the safe side for the
//! priority stream). The current policy and the number of switches are in
//! the connection's stats.
//!
//! **Tie-break**: `sBW == target` is ABS (Algorithm 4 switches to RR only
//! when `sBW > target`); within a policy, that policy's rule.

use super::abs::Abs;
use super::rr::RoundRobin;
use super::{SchedContext, Scheduler, StreamView};

/// The adaptive scheduler.
#[derive(Debug)]
pub struct Adaptive {
    target_bps: u64,
    rr: RoundRobin,
    abs: Abs,
    use_rr: bool,
    switches: u64,
    last_estimate_bps: Option<u64>,
}

impl Adaptive {
    /// ABS until the estimate exceeds `target_bps`.
    pub fn new(target_bps: u64) -> Adaptive {
        Adaptive {
            target_bps,
            rr: RoundRobin::new(),
            abs: Abs::new(),
            use_rr: false,
            switches: 0,
            last_estimate_bps: None,
        }
    }

    /// Algorithm 4, line 1: `5/4 · cwnd · 8 / sRTT`, bits per second.
    pub fn estimate_bps(ctx: &SchedContext) -> Option<u64> {
        let srtt = ctx.srtt?;
        let ns = srtt.as_nanos();
        if ns == 0 {
            return None;
        }
        let bps = u128::from(ctx.cwnd_bytes) * 8 * 5 * 1_000_000_000 / (4 * ns);
        Some(u64::try_from(bps).unwrap_or(u64::MAX))
    }

    /// The latest estimate.
    pub fn last_estimate_bps(&self) -> Option<u64> {
        self.last_estimate_bps
    }
}

impl Scheduler for Adaptive {
    fn name(&self) -> &'static str {
        "adaptive"
    }
    fn activate(&mut self, s: &StreamView) {
        self.rr.activate(s);
        self.abs.activate(s);
    }
    fn remove(&mut self, id: u16) {
        self.rr.remove(id);
        self.abs.remove(id);
    }
    fn pick(&mut self, ctx: &SchedContext) -> Option<u16> {
        let estimate = Self::estimate_bps(ctx);
        self.last_estimate_bps = estimate;
        let use_rr = estimate.is_some_and(|bw| bw > self.target_bps);
        if use_rr != self.use_rr {
            self.use_rr = use_rr;
            self.switches += 1;
        }
        if self.use_rr {
            self.rr.pick(ctx)
        } else {
            self.abs.pick(ctx)
        }
    }
    fn on_sent(&mut self, s: &StreamView, bytes: usize, more: bool) {
        if self.use_rr {
            self.rr.on_sent(s, bytes, more);
            if more {
                self.abs.activate(s);
            } else {
                self.abs.remove(s.id);
            }
        } else {
            self.abs.on_sent(s, bytes, more);
            if !more {
                self.rr.remove(s.id);
            }
        }
    }
    fn end_packet(&mut self) {
        // Only RR has turns that span a packet; outside RR mode it has
        // nothing being served and this is a no-op.
        self.rr.end_packet();
    }
    fn mode(&self) -> Option<&'static str> {
        Some(if self.use_rr { "rr" } else { "abs" })
    }
    fn switches(&self) -> u64 {
        self.switches
    }
    fn estimate_bps(&self) -> Option<u64> {
        self.last_estimate_bps
    }
    fn len(&self) -> usize {
        self.abs.len()
    }
}
