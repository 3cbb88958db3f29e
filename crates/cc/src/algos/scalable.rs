//! Scalable TCP (cc-spec §3.6; Kelly, ACM CCR 2003; kernel `tcp_scalable.c`).
//!
//! Scalable TCP is for bulk transfers on high bandwidth-delay paths: above
//! 100 segments it grows by 1 % of the window per RTT (one segment per 100
//! acknowledged segments) and on loss it cuts only 1/8 of the window, so
//! recovery time after a loss is independent of the window size. Below 100
//! segments the additive-increase divisor is `cwnd`, i.e. exactly Reno.
//! Slow start is standard (H1); growth counts acknowledged segments.
//!
//! **Parameters** (see [`ScalableConfig`]): `ai_cnt` (100: `a = 0.01`),
//! `md_shift` (3: `b = 1/8`). Undo is H5.
//!
//! **[PROJECT CHOICE]s.** None beyond the spec; the paper's legacy-switch
//! window (16) is not used, as in the kernel (`min(cwnd, ai_cnt)` gives Reno
//! behaviour at small windows). `set_initial_window` keeps the core default
//! (`cwnd = ssthresh = segs`). For ns-3 comparisons set `ai_cnt = 50`.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Scalable TCP settings (defaults = cc-spec §3.6, kernel values).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct ScalableConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// Acknowledged segments per +1 segment once cwnd ≥ this (kernel
    /// `TCP_SCALABLE_AI_CNT` = 100, i.e. a = 0.01; ns-3 and older kernels: 50).
    pub ai_cnt: u32,
    /// Loss decrease as a right shift: `ssthresh = cwnd − (cwnd >> md_shift)`
    /// (kernel `TCP_SCALABLE_MD_SCALE` = 3, i.e. b = 1/8).
    pub md_shift: u32,
}

impl Default for ScalableConfig {
    fn default() -> Self {
        ScalableConfig {
            core: CoreConfig::default(),
            ai_cnt: 100,
            md_shift: 3,
        }
    }
}

impl ScalableConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Scalable> {
        PolicyController::new(
            self.core.clone(),
            Scalable {
                ai_cnt: self.ai_cnt.max(1),
                md_shift: self.md_shift,
            },
        )
    }
}

/// The Scalable TCP policy.
#[derive(Clone, Debug)]
pub struct Scalable {
    ai_cnt: u32,
    md_shift: u32,
}

impl CcPolicy for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        if !path.cwnd_limited {
            return;
        }
        let mut acked = acked;
        if core.in_slow_start() {
            acked = core.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let w = core.cwnd.min(self.ai_cnt);
        core.cong_avoid_ai(w, acked);
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        let cut = core.cwnd.checked_shr(self.md_shift).unwrap_or(0);
        (core.cwnd - cut).max(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::testutil::{ack, path};
    use crate::types::{CongestionEvent, SSTHRESH_INF};

    fn scalable(cwnd: u32, ssthresh: u32) -> PolicyController<Scalable> {
        crate::testutil::with_window(ScalableConfig::default().build(), cwnd, ssthresh)
    }

    fn loss() -> CongestionEvent {
        crate::testutil::loss_event(100)
    }

    #[test]
    fn sc1_one_percent_per_window() {
        let mut c = scalable(1000, 2);
        for _ in 0..99 {
            c.on_ack(&ack(1), &path(0, 100));
        }
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (1000, 99));
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (1001, 0));
        // A full window of 1000 segments: +10 (1 %), one segment per ACK ...
        let mut c = scalable(1000, 2);
        for _ in 0..1000 {
            c.on_ack(&ack(1), &path(0, 100));
        }
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (1010, 0));
        // ... or as stretch ACKs.
        let mut c = scalable(1000, 2);
        for _ in 0..10 {
            c.on_ack(&ack(100), &path(0, 100));
        }
        assert_eq!(c.core().cwnd, 1010);
    }

    #[test]
    fn sc2_reno_below_ai_cnt() {
        let mut c = scalable(50, 2);
        for _ in 0..49 {
            c.on_ack(&ack(1), &path(0, 100));
        }
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (50, 49));
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (51, 0));
    }

    #[test]
    fn sc3_ssthresh() {
        for (cwnd, want) in [(1000, 875), (15, 14), (7, 7), (1, 2)] {
            let mut c = scalable(cwnd, SSTHRESH_INF);
            c.on_congestion_event(&loss(), &path(0, 100));
            assert_eq!(c.core().ssthresh, want, "cwnd {cwnd}");
        }
    }

    #[test]
    fn slow_start_leftover_goes_to_ai() {
        let mut c = scalable(10, 11);
        c.on_ack(&ack(3), &path(0, 100));
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (11, 2));
    }

    #[test]
    fn extreme_config_does_not_panic() {
        let mut c = ScalableConfig {
            ai_cnt: 0,
            md_shift: 40,
            ..Default::default()
        }
        .build();
        c.init(&path(0, 100));
        c.core_mut().ssthresh = 2;
        c.on_ack(&ack(1), &path(0, 100));
        c.on_congestion_event(&loss(), &path(0, 100));
        assert!(c.core().ssthresh >= 2);
    }
}
