//! TCP Hybla (cc-spec §3.2; Caini & Firrincieli 2004; kernel `tcp_hybla.c`).
//!
//! Hybla is for long-RTT paths (satellite, intercontinental) that share
//! bottlenecks with short-RTT flows: it normalises window growth to a
//! reference RTT `rtt0` so that a flow whose RTT is `ρ = RTT/rtt0` times
//! longer grows per unit of *time* like a flow with RTT `rtt0`. Slow start
//! adds `2^ρ − 1` segments per ACK and congestion avoidance `ρ²/cwnd` per
//! ACK, in the kernel's fixed point (ρ with 3 fractional bits, increments in
//! 1/128 segment, a `2^(i/8)` fraction table and an exponent cap of 16).
//! ρ is recomputed from the SRTT whenever the SRTT reaches a new minimum.
//! At `init` the window is set to ρ and the clamp to 65535 segments; the
//! Hybla rules apply only in Open (other states use NewReno growth).
//!
//! **Parameters** (see [`HyblaConfig`]): `rtt0_ms` (25), `fraction_table`
//! (`[128,139,152,165,181,197,215,234]`), `max_exponent` (16),
//! `cwnd_clamp_segs` (65535); `ssthresh` is H4 (`cwnd/2`), undo H5.
//!
//! **[PROJECT CHOICE]s.**
//! * `learn_rho_after_unknown_srtt` (default true): when no SRTT is known at
//!   `init`, ρ = 1 and cwnd = 1 as the spec says, but the minimum SRTT is
//!   left *unset* so the first measured SRTT computes ρ. The kernel stores
//!   `min_srtt = 0` and would then never recompute ρ (it always has a
//!   handshake RTT, Peregrine may not).
//! * `set_initial_window` (packet-pair start-up) keeps the core default
//!   (`cwnd = ssthresh = segs`): a measured window replaces the ρ-sized
//!   initial window and the flow starts in congestion avoidance; ρ is not
//!   touched.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, CaState, PathInfo};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The kernel's `2^(i/8)·128` fraction table.
pub const FRACTIONS: [u32; 8] = [128, 139, 152, 165, 181, 197, 215, 234];

/// Hybla settings (defaults = cc-spec §3.2, kernel values).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct HyblaConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// Reference RTT `rtt0`, milliseconds (kernel module parameter: 25; ns-3: 50).
    pub rtt0_ms: u64,
    /// `2^(i/8)` in units of 1/128 for the fractional part `i` (0..7) of ρ (eighths).
    pub fraction_table: [u32; 8],
    /// Cap on the integer exponent of `2^ρ` in slow start (kernel: 16).
    pub max_exponent: u32,
    /// Upper bound on cwnd set at `init`, segments (kernel: 65535).
    pub cwnd_clamp_segs: u32,
    /// [PROJECT CHOICE] With no SRTT at `init`, leave the minimum SRTT unset so
    /// the first measured SRTT computes ρ (the kernel would keep ρ = 1 forever).
    pub learn_rho_after_unknown_srtt: bool,
}

impl Default for HyblaConfig {
    fn default() -> Self {
        HyblaConfig {
            core: CoreConfig::default(),
            rtt0_ms: 25,
            fraction_table: FRACTIONS,
            max_exponent: 16,
            cwnd_clamp_segs: 65535,
            learn_rho_after_unknown_srtt: true,
        }
    }
}

impl HyblaConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Hybla> {
        PolicyController::new(self.core.clone(), Hybla::new(self.clone()))
    }
}

/// The Hybla policy.
#[derive(Clone, Debug)]
pub struct Hybla {
    config: HyblaConfig,
    /// ρ with 3 fractional bits: `max(floor(8·srtt/rtt0), 8)`.
    rho8: u64,
    /// Integer part of ρ (≥ 1).
    rho: u64,
    /// ρ²·128 = `2·rho8²`.
    rho2_128: u64,
    /// Fractional-segment accumulator, units of 1/128 segment.
    cents: u64,
    /// Smallest SRTT seen (`None` = not known yet).
    min_srtt: Option<Duration>,
    /// Hybla rules are active (state is Open).
    enabled: bool,
}

impl Hybla {
    /// A Hybla policy with `config`, before `init` (ρ = 1).
    pub fn new(config: HyblaConfig) -> Hybla {
        Hybla {
            config,
            rho8: 8,
            rho: 1,
            rho2_128: 128,
            cents: 0,
            min_srtt: None,
            enabled: true,
        }
    }

    /// ρ with 3 fractional bits (ρ·8).
    pub fn rho8(&self) -> u64 {
        self.rho8
    }

    /// Kernel `hybla_recalc_param`: ρ from `srtt` (zero when unknown).
    fn recalc(&mut self, srtt: Duration) {
        let rtt0_ns = (self.config.rtt0_ms as u128)
            .saturating_mul(1_000_000)
            .max(1);
        let rho8 = (srtt.as_nanos().saturating_mul(8) / rtt0_ns).min(u32::MAX as u128) as u64;
        self.rho8 = rho8.max(8);
        self.rho = self.rho8 >> 3;
        self.rho2_128 = self.rho8.saturating_mul(self.rho8).saturating_mul(2);
    }

    /// The slow-start increment `2^ρ − 1` in units of 1/128 segment.
    fn slow_start_increment(&self) -> u64 {
        let frac = (self.rho8 - 8 * self.rho) as usize; // 0..=7: rho = rho8 >> 3
        let f = self.config.fraction_table.get(frac).copied().unwrap_or(128) as u64;
        let exp = self.rho.min(self.config.max_exponent as u64).min(40);
        (1u64 << exp).saturating_mul(f).saturating_sub(128)
    }
}

/// `cwnd + n`, saturating at `u32::MAX`.
fn add_segs(cwnd: u32, n: u64) -> u32 {
    (cwnd as u64).saturating_add(n).min(u32::MAX as u64) as u32
}

impl CcPolicy for Hybla {
    fn name(&self) -> &'static str {
        "hybla"
    }

    fn init(&mut self, core: &mut Core, path: &PathInfo) {
        self.cents = 0;
        self.enabled = true;
        core.cwnd_clamp = self.config.cwnd_clamp_segs.max(1);
        self.recalc(path.srtt.unwrap_or(Duration::ZERO));
        self.min_srtt = match path.srtt {
            Some(srtt) => Some(srtt),
            None if self.config.learn_rho_after_unknown_srtt => None,
            None => Some(Duration::ZERO),
        };
        core.set_cwnd(self.rho.min(u32::MAX as u64) as u32);
    }

    fn on_state(&mut self, _core: &mut Core, new: CaState, _path: &PathInfo) {
        self.enabled = new == CaState::Open;
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        // 1. Recompute ρ only when the SRTT reaches a new minimum.
        if let Some(srtt) = path.srtt {
            let new_min = match self.min_srtt {
                Some(min) => srtt < min,
                None => true,
            };
            if new_min {
                self.recalc(srtt);
                self.min_srtt = Some(srtt);
            }
        }
        // 2.
        if !path.cwnd_limited {
            return;
        }
        if !self.enabled {
            core.reno_growth(acked);
            return;
        }
        // 3–4. The number of segments acknowledged is ignored (kernel).
        let slow_start = core.in_slow_start();
        let inc = if slow_start {
            self.slow_start_increment()
        } else {
            let inc = self.rho2_128 / core.cwnd.max(1) as u64;
            if inc < 128 {
                core.cwnd_cnt = core.cwnd_cnt.saturating_add(1);
            }
            inc
        };
        // 5.
        let mut cwnd = add_segs(core.cwnd, inc >> 7);
        self.cents += inc % 128;
        while self.cents >= 128 {
            cwnd = add_segs(cwnd, 1);
            self.cents -= 128;
            core.cwnd_cnt = 0;
        }
        // 6. Reno floor for very large windows.
        if inc == 0 && core.cwnd_cnt >= cwnd {
            cwnd = add_segs(cwnd, 1);
            core.cwnd_cnt = 0;
        }
        // 7.
        if slow_start {
            cwnd = cwnd.min(core.ssthresh);
        }
        core.cwnd = cwnd.min(core.cwnd_clamp).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::testutil::{ack, path};
    use crate::types::SSTHRESH_INF;

    fn hybla(srtt_ms: u64) -> PolicyController<Hybla> {
        let mut c = HyblaConfig::default().build();
        c.init(&path(0, srtt_ms));
        c
    }

    fn set(c: &mut PolicyController<Hybla>, cwnd: u32, ssthresh: u32) {
        c.core_mut().cwnd = cwnd;
        c.core_mut().ssthresh = ssthresh;
        c.core_mut().cwnd_cnt = 0;
        c.policy_mut().cents = 0;
    }

    fn rho(c: &PolicyController<Hybla>) -> (u64, u64, u64) {
        let p = c.policy();
        (p.rho8, p.rho, p.rho2_128)
    }

    #[test]
    fn hy1_rho_and_slow_start_clamped_to_ssthresh() {
        let mut c = hybla(100);
        assert_eq!(rho(&c), (32, 4, 2048));
        assert_eq!(c.core().cwnd, 4);
        assert_eq!(c.core().cwnd_clamp, 65535);
        assert_eq!(c.policy().slow_start_increment(), 1920);
        set(&mut c, 10, 20);
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!(c.core().cwnd, 20);
        // SRTT 600 ms => cwnd 24 at init.
        assert_eq!(hybla(600).core().cwnd, 24);
    }

    #[test]
    fn hy2_fractional_rho() {
        let mut c = hybla(60);
        assert_eq!(rho(&c), (19, 2, 722));
        assert_eq!(c.policy().rho8 - 8 * c.policy().rho, 3);
        assert_eq!(c.policy().slow_start_increment(), 532);
        set(&mut c, 10, SSTHRESH_INF);
        c.on_ack(&ack(1), &path(0, 60));
        assert_eq!(c.core().cwnd, 14);
        assert_eq!(c.policy().cents, 20);
    }

    #[test]
    fn hy3_congestion_avoidance_cents() {
        let mut c = hybla(100);
        set(&mut c, 100, 50);
        for i in 1..=6 {
            c.on_ack(&ack(1), &path(0, 100));
            assert_eq!(c.core().cwnd, 100);
            assert_eq!(c.policy().cents, 20 * i);
        }
        assert_eq!(c.policy().cents, 120);
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!(c.core().cwnd, 101);
        assert_eq!(c.policy().cents, 12);
        assert_eq!(c.core().cwnd_cnt, 0);
    }

    #[test]
    fn hy4_reno_floor_for_large_windows() {
        let mut c = hybla(100);
        set(&mut c, 4000, 50);
        for _ in 0..3999 {
            c.on_ack(&ack(1), &path(0, 100));
        }
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (4000, 3999));
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (4001, 0));
        assert_eq!(c.policy().cents, 0);
    }

    #[test]
    fn hy5_short_rtt_is_reno() {
        let mut c = hybla(10);
        assert_eq!(rho(&c), (8, 1, 128));
        assert_eq!(c.core().cwnd, 1);
        // Slow start: +1 per ACK.
        set(&mut c, 10, SSTHRESH_INF);
        for want in 11..=15 {
            c.on_ack(&ack(1), &path(0, 10));
            assert_eq!(c.core().cwnd, want);
        }
        // CA: inc = 128/cwnd; with cwnd 64, +1 after exactly 64 ACKs.
        set(&mut c, 64, 10);
        for _ in 0..63 {
            c.on_ack(&ack(1), &path(0, 10));
        }
        assert_eq!((c.core().cwnd, c.policy().cents), (64, 126));
        c.on_ack(&ack(1), &path(0, 10));
        assert_eq!((c.core().cwnd, c.policy().cents), (65, 0));
        // cwnd 10: inc = 12 (floor of 12.8), so +1 after 11 ACKs.
        set(&mut c, 10, 5);
        for _ in 0..10 {
            c.on_ack(&ack(1), &path(0, 10));
        }
        assert_eq!((c.core().cwnd, c.policy().cents), (10, 120));
        c.on_ack(&ack(1), &path(0, 10));
        assert_eq!((c.core().cwnd, c.policy().cents), (11, 4));
    }

    #[test]
    fn rho_follows_the_minimum_srtt_only() {
        let mut c = hybla(100);
        set(&mut c, 10, SSTHRESH_INF);
        // A larger SRTT does not change ρ.
        c.on_ack(&ack(1), &path(0, 200));
        assert_eq!(rho(&c), (32, 4, 2048));
        // A smaller one does.
        c.on_ack(&ack(1), &path(0, 50));
        assert_eq!(rho(&c), (16, 2, 512));
    }

    #[test]
    fn unknown_srtt_at_init_learns_rho_later() {
        let mut c = hybla(0);
        assert_eq!((rho(&c), c.core().cwnd), ((8, 1, 128), 1));
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!(rho(&c), (32, 4, 2048));
        // Kernel behaviour when the choice is off: min SRTT 0, ρ stays 1.
        let mut c = HyblaConfig {
            learn_rho_after_unknown_srtt: false,
            ..Default::default()
        }
        .build();
        c.init(&path(0, 0));
        c.on_ack(&ack(1), &path(0, 100));
        assert_eq!(rho(&c), (8, 1, 128));
    }

    #[test]
    fn reno_growth_outside_open() {
        let mut c = hybla(100);
        set(&mut c, 20, SSTHRESH_INF);
        let mut p = path(0, 100);
        p.in_flight = 0;
        c.on_rto(&p);
        assert_eq!((c.core().cwnd, c.core().ssthresh), (1, 10));
        // Loss state: Reno slow start counts segments (2), not 2^ρ − 1.
        let mut p = path(0, 100);
        p.ca_state = CaState::Loss;
        p.snd_una = 0;
        c.on_ack(&ack(2), &p);
        assert_eq!(c.core().cwnd, 3);
        // Back in Open: Hybla slow start (+15, clamped to ssthresh 10).
        p.ca_state = CaState::Open;
        p.snd_una = 2_000;
        c.on_ack(&ack(1), &p);
        assert_eq!(c.core().cwnd, 10);
    }

    #[test]
    fn not_cwnd_limited_does_not_grow() {
        let mut c = hybla(100);
        set(&mut c, 10, SSTHRESH_INF);
        let mut p = path(0, 100);
        p.cwnd_limited = false;
        c.on_ack(&ack(1), &p);
        assert_eq!(c.core().cwnd, 10);
    }

    #[test]
    fn huge_srtt_stays_bounded() {
        let mut c = hybla(10_000_000);
        assert_eq!(c.core().cwnd, 65535);
        set(&mut c, 100, SSTHRESH_INF);
        c.on_ack(&ack(1), &path(0, 10_000_000));
        assert_eq!(c.core().cwnd, 65535);
        set(&mut c, 100, 50);
        c.on_ack(&ack(1), &path(0, 10_000_000));
        assert_eq!(c.core().cwnd, 65535);
    }
}
