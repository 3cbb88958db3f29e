//! HighSpeed TCP (cc-spec §3.3; RFC 3649; kernel `tcp_highspeed.c`).
//!
//! HighSpeed TCP is for single flows on high bandwidth-delay paths, where
//! Reno's +1 segment per RTT and halving take hours to recover. It keeps
//! Reno's behaviour up to 38 segments and above that adds `a(w)` segments per
//! RTT and cuts by `b(w)·w` on loss, following RFC 3649's response function
//! through the 72-row table of its Appendix B as the kernel uses it: row `i`
//! covers windows up to `W[i]` with `a = i + 1` and `b = MD[i]/256`. Slow
//! start is standard (H1). The controller lowers `cwnd_clamp` so that the
//! decrease arithmetic cannot overflow.
//!
//! **Parameters** (see [`HighSpeedConfig`]): `aimd_table` (the 72 kernel rows
//! of [`AIMD_TABLE`]), `cwnd_clamp_segs` (`0xffff_ffff/128`).
//!
//! **Kernel quirk kept:** the row index `ai` moves only in congestion
//! avoidance, and `ssthresh` uses the current (possibly stale) `ai`; a loss in
//! slow start therefore halves even a large window. `ai` is not reset on loss
//! or RTO, as in the kernel.
//!
//! **Departures from the kernel, for RFC 3649's "Reno below 38 segments"**
//! (issue 39; pinned by `highspeed_equals_newreno_below_38_segments` in
//! `tests/model_based.rs`): the increase credits `a(w)` per *acknowledged
//! segment* (the kernel credits per ACK, which under stretch ACKs grows
//! slower than Reno — the cause of 0.886 vs 1.117 Mbit/s on the 1 %-loss
//! dumbbell); the slow-start leftover carries into congestion avoidance as in
//! Reno; and row 0 cuts to Reno's `⌊cwnd/2⌋` (the kernel's
//! `cwnd − ⌊cwnd·128/256⌋` rounds odd windows up).
//!
//! **[PROJECT CHOICE]s.** `set_initial_window` keeps the core default
//! (`cwnd = ssthresh = segs`); `ai` catches up on the first congestion-
//! avoidance ACK. An empty `aimd_table` (only possible by configuration)
//! behaves as Reno (a = 1, b = 1/2) instead of failing.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// One row of the AIMD table: windows up to `max_cwnd_segs` use
/// `a = row index + 1` and `b = md_256 / 256`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct AimdRow {
    /// Upper window bound of the row, segments.
    pub max_cwnd_segs: u32,
    /// Multiplicative decrease `b`, in units of 1/256.
    pub md_256: u32,
}

const fn row(max_cwnd_segs: u32, md_256: u32) -> AimdRow {
    AimdRow {
        max_cwnd_segs,
        md_256,
    }
}

/// RFC 3649 Appendix B as used by the kernel (`hstcp_aimd_vals`), 72 rows.
pub const AIMD_TABLE: [AimdRow; 72] = [
    row(38, 128),
    row(118, 112),
    row(221, 104),
    row(347, 98),
    row(495, 93),
    row(663, 89),
    row(851, 86),
    row(1058, 83),
    row(1284, 81),
    row(1529, 78),
    row(1793, 76),
    row(2076, 74),
    row(2378, 72),
    row(2699, 71),
    row(3039, 69),
    row(3399, 68),
    row(3778, 66),
    row(4177, 65),
    row(4596, 64),
    row(5036, 62),
    row(5497, 61),
    row(5979, 60),
    row(6483, 59),
    row(7009, 58),
    row(7558, 57),
    row(8130, 56),
    row(8726, 55),
    row(9346, 54),
    row(9991, 53),
    row(10661, 52),
    row(11358, 52),
    row(12082, 51),
    row(12834, 50),
    row(13614, 49),
    row(14424, 48),
    row(15265, 48),
    row(16137, 47),
    row(17042, 46),
    row(17981, 45),
    row(18955, 45),
    row(19965, 44),
    row(21013, 43),
    row(22101, 43),
    row(23230, 42),
    row(24402, 41),
    row(25618, 41),
    row(26881, 40),
    row(28193, 39),
    row(29557, 39),
    row(30975, 38),
    row(32450, 38),
    row(33986, 37),
    row(35586, 36),
    row(37253, 36),
    row(38992, 35),
    row(40808, 35),
    row(42707, 34),
    row(44694, 33),
    row(46776, 33),
    row(48961, 32),
    row(51258, 32),
    row(53677, 31),
    row(56230, 30),
    row(58932, 30),
    row(61799, 29),
    row(64851, 28),
    row(68113, 28),
    row(71617, 27),
    row(75401, 26),
    row(79517, 26),
    row(84035, 25),
    row(89053, 24),
];

/// The row used when the table is empty: Reno (b = 1/2).
const RENO_ROW: AimdRow = row(u32::MAX, 128);

/// HighSpeed settings (defaults = cc-spec §3.3, kernel values).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct HighSpeedConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// The AIMD table, rows in increasing window order (default: the kernel's
    /// 72 rows; ns-3 adds a 73rd row `{94717, 23}` and has 53667 for 53677).
    pub aimd_table: Vec<AimdRow>,
    /// Upper bound on cwnd applied at `init` as `min(clamp, this)`, segments
    /// (kernel `0xffffffff/128` so that `cwnd·MD` fits 32 bits).
    pub cwnd_clamp_segs: u32,
}

impl Default for HighSpeedConfig {
    fn default() -> Self {
        HighSpeedConfig {
            core: CoreConfig::default(),
            aimd_table: AIMD_TABLE.to_vec(),
            cwnd_clamp_segs: u32::MAX / 128,
        }
    }
}

impl HighSpeedConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<HighSpeed> {
        PolicyController::new(
            self.core.clone(),
            HighSpeed {
                config: self.clone(),
                ai: 0,
            },
        )
    }
}

/// The HighSpeed policy.
#[derive(Clone, Debug)]
pub struct HighSpeed {
    config: HighSpeedConfig,
    /// Current row index: `W[ai−1] < cwnd ≤ W[ai]` after the last CA ACK.
    ai: usize,
}

impl HighSpeed {
    /// The current row index `ai` (additive increase `a = ai + 1`).
    pub fn ai(&self) -> usize {
        self.ai
    }

    fn row(&self, i: usize) -> AimdRow {
        self.config.aimd_table.get(i).copied().unwrap_or(RENO_ROW)
    }

    /// Move `ai` so that `W[ai−1] < cwnd ≤ W[ai]` (capped at the last row).
    fn update_ai(&mut self, cwnd: u32) {
        let last = self.config.aimd_table.len().saturating_sub(1);
        self.ai = self.ai.min(last);
        if cwnd > self.row(self.ai).max_cwnd_segs {
            while cwnd > self.row(self.ai).max_cwnd_segs && self.ai < last {
                self.ai += 1;
            }
        } else {
            while self.ai > 0 && cwnd <= self.row(self.ai - 1).max_cwnd_segs {
                self.ai -= 1;
            }
        }
    }
}

impl CcPolicy for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    fn init(&mut self, core: &mut Core, _path: &PathInfo) {
        self.ai = 0;
        core.cwnd_clamp = core.cwnd_clamp.min(self.config.cwnd_clamp_segs).max(1);
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        if !path.cwnd_limited {
            return;
        }
        let mut left = acked;
        if core.in_slow_start() {
            // The slow-start leftover carries into congestion avoidance, as
            // in Reno (H1): RFC 3649 makes HighSpeed Reno below Low_Window.
            left = core.slow_start(acked);
            if left == 0 {
                return;
            }
        }
        self.update_ai(core.cwnd);
        // a(w) segments per window of *acknowledged segments*, not per ACK:
        // with stretch ACKs (SLTP's ⌊cwnd/8⌋ ACK frequency) a per-ACK count
        // grows slower than Reno and breaks RFC 3649's a(w ≤ 38) = 1.
        let a = (self.ai as u32).saturating_add(1);
        let w = core.cwnd;
        core.cong_avoid_ai(w, left.saturating_mul(a));
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        if self.ai == 0 {
            // Reno's ⌊cwnd/2⌋ (H4): the kernel's `cwnd − ⌊cwnd·128/256⌋`
            // rounds up on odd windows, which is not Reno.
            return core.reno_ssthresh();
        }
        // Uses the current ai, not one re-derived from cwnd (kernel quirk).
        let md = self.row(self.ai).md_256 as u64;
        let cut = (core.cwnd as u64 * md) >> 8;
        (core.cwnd as u64).saturating_sub(cut).max(2) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::testutil::{ack, path};
    use crate::types::{CongestionEvent, SSTHRESH_INF};

    fn hs(cwnd: u32, ssthresh: u32) -> PolicyController<HighSpeed> {
        crate::testutil::with_window(HighSpeedConfig::default().build(), cwnd, ssthresh)
    }

    fn loss() -> CongestionEvent {
        crate::testutil::loss_event(100)
    }

    #[test]
    fn hs_table_is_the_kernel_table() {
        let t = &HighSpeedConfig::default().aimd_table;
        assert_eq!(t.len(), 72);
        assert_eq!(t[0], row(38, 128));
        assert_eq!(t[61], row(53677, 31));
        assert_eq!(t[71], row(89053, 24));
        // Windows increase, decreases shrink.
        for w in t.windows(2) {
            assert!(w[0].max_cwnd_segs < w[1].max_cwnd_segs);
            assert!(w[0].md_256 >= w[1].md_256);
        }
        let c = hs(10, SSTHRESH_INF);
        assert_eq!(c.core().cwnd_clamp, 0xffff_ffff / 128);
    }

    #[test]
    fn hs_table_rows() {
        // (cwnd, table a, table MD, ssthresh)
        let rows = [
            (38, 1, 128, 19),
            (39, 2, 112, 22),
            (100, 2, 112, 57),
            (1000, 8, 83, 676),
            (1059, 9, 81, 724),
            (10000, 30, 52, 7969),
            (83000, 71, 25, 74895),
            (100000, 72, 24, 90625),
        ];
        for (cwnd, a, md, ssthresh) in rows {
            let mut c = hs(cwnd, 2);
            c.on_ack(&ack(1), &path(0, 100));
            let ai = c.policy().ai();
            assert_eq!(ai + 1, a, "cwnd {cwnd}");
            assert_eq!(c.policy().row(ai).md_256, md, "cwnd {cwnd}");
            assert_eq!(c.core().cwnd, cwnd, "cwnd {cwnd} must not grow on one ACK");
            c.on_congestion_event(&loss(), &path(0, 100));
            assert_eq!(c.core().ssthresh, ssthresh, "cwnd {cwnd}");
        }
    }

    #[test]
    fn hs_table_rows_rfc_columns() {
        // The informative RFC 3649 a(w), b(w) columns of the vector table.
        fn b(w: f64) -> f64 {
            if w <= 38.0 {
                return 0.5;
            }
            (0.1 - 0.5) * (w.ln() - 38f64.ln()) / (83000f64.ln() - 38f64.ln()) + 0.5
        }
        fn a(w: f64) -> f64 {
            if w <= 38.0 {
                return 1.0;
            }
            let p = 0.078 / w.powf(1.2);
            w * w * p * 2.0 * b(w) / (2.0 - b(w))
        }
        let rows = [
            (38.0, 1.000, 0.500),
            (39.0, 0.971, 0.499),
            (100.0, 1.801, 0.450),
            (1000.0, 7.740, 0.330),
            (1059.0, 8.015, 0.327),
            (10000.0, 29.02, 0.210),
            (83000.0, 70.73, 0.100),
            (100000.0, 73.77, 0.090),
        ];
        for (w, want_a, want_b) in rows {
            assert!((a(w) - want_a).abs() < 0.006, "a({w}) = {}", a(w));
            assert!((b(w) - want_b).abs() < 0.0006, "b({w}) = {}", b(w));
        }
    }

    #[test]
    fn hs_per_ack() {
        let mut c = hs(1000, 2);
        for i in 1..=124 {
            c.on_ack(&ack(1), &path(0, 100));
            assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (1000, 8 * i));
        }
        assert_eq!(c.policy().ai(), 7);
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (1001, 0));
    }

    #[test]
    fn increment_counts_segments_acked() {
        // A stretch ACK of 5 segments credits 5·a(w), as Reno credits 5.
        let mut c = hs(1000, 2);
        c.on_ack(&ack(5), &path(0, 100));
        assert_eq!(c.core().cwnd_cnt, 40);
    }

    #[test]
    fn stale_ai_in_slow_start_halves() {
        // Slow start never moves ai: a loss at 10000 segments uses b = 1/2.
        let mut c = hs(10000, SSTHRESH_INF);
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!((c.core().cwnd, c.policy().ai()), (10001, 0));
        c.on_congestion_event(&loss(), &path(0, 100));
        // ai = 0 is Reno's row: floor(10001/2).
        assert_eq!(c.core().ssthresh, 5000);
    }

    #[test]
    fn ai_moves_down_after_a_reduction() {
        let mut c = hs(10000, 2);
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!(c.policy().ai(), 29);
        c.core_mut().cwnd = 100;
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!(c.policy().ai(), 1);
    }

    #[test]
    fn slow_start_leftover_carries_over_as_in_reno() {
        let mut c = hs(10, 11);
        c.on_ack(&ack(3), &path(0, 100));
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (11, 2));
    }

    #[test]
    fn odd_window_below_38_halves_as_reno() {
        let mut c = hs(9, 2);
        c.on_ack(&ack(1), &path(0, 100));
        c.on_congestion_event(&loss(), &path(0, 100));
        assert_eq!(c.core().ssthresh, 4);
    }

    #[test]
    fn empty_table_is_reno_like() {
        let mut c = HighSpeedConfig {
            aimd_table: Vec::new(),
            ..Default::default()
        }
        .build();
        c.init(&path(0, 100));
        c.core_mut().cwnd = 100;
        c.core_mut().ssthresh = 2;
        for _ in 0..100 {
            c.on_ack(&ack(1), &path(0, 100));
        }
        assert_eq!(c.core().cwnd, 101);
        c.on_congestion_event(&loss(), &path(0, 100));
        assert_eq!(c.core().ssthresh, 50);
    }
}
