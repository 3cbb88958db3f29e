//! S-HTCP, Swarm H-TCP (cc-spec §3.15; Amponis et al., Simulation
//! Modelling Practice and Theory 2022 — seed 001, §4, Eq. 7–13).
//!
//! S-HTCP is seed 001's H-TCP variant for flying ad hoc networks (UAV
//! swarms). It is exactly H-TCP (`algos::htcp`: adaptive β, bandwidth
//! switch, max-RTT tracking, Δ from the end of the last episode, undo, slow
//! start) except that α and the back-off are shaped by exponentials of the
//! epoch length Δ and the minimum RTT: growth speeds up after long loss-free
//! epochs and slows down on long (multi-hop) paths,
//! `α_S = clamp(2(1−β)·α_Δ(Δ) · exp(Δ/λ1 − RTT_min/λ2), α_S_min, α_S_max·cwnd)`,
//! and a loss after a long epoch backs off harder,
//! `β_S = max(β · exp(−Δ_e/λ1), β_S_min)`, `ssthresh = max(⌊cwnd·β_S⌋, 2)`.
//!
//! **Parameters** ([`ShtcpConfig`]): λ1 = 25 s, λ2 = 70 (in the RTT unit),
//! every H-TCP parameter, and the project choices below.
//!
//! **[PROJECT CHOICE]s** (the paper is silent; cc-spec §3.15):
//! * U1 `rtt_unit = ms`: RTT_min in milliseconds in the exponent; in
//!   seconds the λ2 term would be inert (factor ≥ 0.9957 up to 300 ms).
//! * U2 `beta_s_min = 0.5`: a fast-retransmit loss never backs off harder
//!   than Reno; without a floor a loss after 60 s would cut to 7 % of cwnd.
//! * U3 `alpha_s_min = 0.1`, `alpha_s_max_cwnd_fraction = 0.5`: the cap
//!   limits growth to 1.5× per RTT (CUBIC's ceiling) since `exp(Δ/25)` on
//!   top of the quadratic α_Δ explodes; the floor avoids starvation on long
//!   paths (one segment per 10 RTTs at worst). If the cap falls below the
//!   floor, the cap wins.
//! * U4 `alpha_beta = htcp`: H-TCP's β enters `2(1−β)`, not β_S, which
//!   would add a second boost after long epochs.
//! * U5 `use_rtt_scaling = false`: the paper's α has no RTT scaling; with
//!   the ms reading it would make α peak at RTT = 70 ms.
//! * Inheriting H-TCP's β clamp [0.5, 0.8] and bandwidth switch (seed 001
//!   uses the raw `RTT_min/RTT_max`): `beta_min`, `beta_max` and
//!   `use_bandwidth_switch` make them adjustable.
//! * `alpha_form = htcp_scaled` (above); `paper_eq12` takes seed 001 Eq. 12
//!   literally: `exp(Δ/λ1 − RTT_min/λ2)·(Δ²/4 + 10Δ + 1)`, Δ not reduced by
//!   Δ_L, no `2(1−β)`, no RTT scaling, same bounds.
//! * β for `ssthresh` is H-TCP's β as updated at this event; before any
//!   RTT sample, RTT_min counts as 0 in the exponent.
//!
//! `set_initial_window` keeps the core default (`cwnd = ssthresh = segs`),
//! with Δ counted from `init` as in H-TCP.

use crate::algos::htcp::{
    clamp_f64, finite_or, floor_scaled, htcp_alpha_real, AlphaInputs, BackoffInputs, HtcpParams,
    HtcpPolicy, ParamFields, Shaping,
};
use crate::core::CoreConfig;
use crate::policy::PolicyController;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Unit of RTT_min in S-HTCP's exponent (U1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum RttUnit {
    /// Milliseconds (default): the λ2 term damps growth on long paths.
    #[default]
    Ms,
    /// Seconds: the λ2 term is nearly inert.
    S,
}

/// Which formula gives α_S.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum AlphaForm {
    /// H-TCP's α (`2(1−β)·α_Δ`, Δ_L branch, optional RTT scaling) times the exponential.
    #[default]
    HtcpScaled,
    /// Seed 001 Eq. 12 literally: `exp(Δ/λ1 − RTT_min/λ2)·(Δ²/4 + 10Δ + 1)`.
    PaperEq12,
}

/// Which β enters `2(1−β)` in the `htcp_scaled` α (U4).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum AlphaBeta {
    /// H-TCP's adaptive β (default).
    #[default]
    Htcp,
    /// β_S of the last congestion event (H-TCP's β before the first).
    BetaS,
}

/// S-HTCP settings (cc-spec §3.15). Defaults are the spec's values.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct ShtcpConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// H-TCP Δ_L, milliseconds (1000 ms).
    pub delta_l_ms: u64,
    /// [PROJECT CHOICE] lower clamp and reset value of H-TCP's β (0.5; the paper has no clamp).
    pub beta_min: f64,
    /// [PROJECT CHOICE] upper clamp of H-TCP's β (0.8; the paper has no clamp).
    pub beta_max: f64,
    /// [PROJECT CHOICE] U5: H-TCP's RTT scaling of α_Δ (off).
    pub use_rtt_scaling: bool,
    /// Reference RTT of the RTT scaling, milliseconds (100 ms).
    pub rtt_scaling_ref_ms: u64,
    /// Lower clamp of the RTT-scaling ratio (0.1).
    pub rtt_scaling_min: f64,
    /// Upper clamp of the RTT-scaling ratio (2.0).
    pub rtt_scaling_max: f64,
    /// [PROJECT CHOICE] H-TCP's bandwidth switch (on; the paper has none).
    pub use_bandwidth_switch: bool,
    /// Relative tolerance of the bandwidth switch (0.2).
    pub bandwidth_switch_tolerance: f64,
    /// max-RTT growth guard, milliseconds (20 ms).
    pub max_rtt_guard_ms: u64,
    /// max-RTT fade factor per congestion event (0.95).
    pub max_rtt_fade: f64,
    /// β adapts only above this minimum RTT, milliseconds (10 ms).
    pub adaptive_beta_min_rtt_ms: u64,
    /// λ1, seconds: time constant of the Δ terms (25 s).
    pub lambda1_secs: f64,
    /// λ2, in `rtt_unit`: constant of the RTT_min term (70).
    pub lambda2: f64,
    /// [PROJECT CHOICE] U1: unit of RTT_min in the exponent (ms).
    pub rtt_unit: RttUnit,
    /// [PROJECT CHOICE] U2: floor of β_S (0.5).
    pub beta_s_min: f64,
    /// [PROJECT CHOICE] U3: floor of α_S, segments per RTT (0.1).
    pub alpha_s_min: f64,
    /// [PROJECT CHOICE] U3: cap of α_S as a fraction of cwnd (0.5).
    pub alpha_s_max_cwnd_fraction: f64,
    /// [PROJECT CHOICE] U4: the β in `2(1−β)` (H-TCP's).
    pub alpha_beta: AlphaBeta,
    /// The α_S formula (`htcp_scaled`).
    pub alpha_form: AlphaForm,
}

impl Default for ShtcpConfig {
    fn default() -> Self {
        ShtcpConfig {
            core: CoreConfig::default(),
            delta_l_ms: 1000,
            beta_min: 0.5,
            beta_max: 0.8,
            use_rtt_scaling: false,
            rtt_scaling_ref_ms: 100,
            rtt_scaling_min: 0.1,
            rtt_scaling_max: 2.0,
            use_bandwidth_switch: true,
            bandwidth_switch_tolerance: 0.2,
            max_rtt_guard_ms: 20,
            max_rtt_fade: 0.95,
            adaptive_beta_min_rtt_ms: 10,
            lambda1_secs: 25.0,
            lambda2: 70.0,
            rtt_unit: RttUnit::Ms,
            beta_s_min: 0.5,
            alpha_s_min: 0.1,
            alpha_s_max_cwnd_fraction: 0.5,
            alpha_beta: AlphaBeta::Htcp,
            alpha_form: AlphaForm::HtcpScaled,
        }
    }
}

impl ShtcpConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Shtcp> {
        let params = HtcpParams::from_fields(ParamFields {
            delta_l_ms: self.delta_l_ms,
            beta_min: self.beta_min,
            beta_max: self.beta_max,
            use_rtt_scaling: self.use_rtt_scaling,
            rtt_scaling_ref_ms: self.rtt_scaling_ref_ms,
            rtt_scaling_min: self.rtt_scaling_min,
            rtt_scaling_max: self.rtt_scaling_max,
            use_bandwidth_switch: self.use_bandwidth_switch,
            bandwidth_switch_tolerance: self.bandwidth_switch_tolerance,
            max_rtt_guard_ms: self.max_rtt_guard_ms,
            max_rtt_fade: self.max_rtt_fade,
            adaptive_beta_min_rtt_ms: self.adaptive_beta_min_rtt_ms,
            linux_hz: None,
        });
        PolicyController::new(self.core.clone(), HtcpPolicy::new(params, self.shaping()))
    }

    /// The validated S-HTCP shaping (non-finite or out-of-range values fall back to the defaults).
    pub fn shaping(&self) -> ShtcpShaping {
        let positive = |x: f64, d: f64| if x.is_finite() && x > 0.0 { x } else { d };
        ShtcpShaping {
            lambda1_secs: positive(self.lambda1_secs, 25.0),
            lambda2: positive(self.lambda2, 70.0),
            rtt_unit: self.rtt_unit,
            beta_s_min: clamp_f64(finite_or(self.beta_s_min, 0.5), 0.0, 1.0),
            alpha_s_min: finite_or(self.alpha_s_min, 0.1).max(0.0),
            alpha_s_max_fraction: positive(self.alpha_s_max_cwnd_fraction, 0.5),
            alpha_beta: self.alpha_beta,
            alpha_form: self.alpha_form,
            last_beta_s: None,
        }
    }
}

/// The S-HTCP policy: the H-TCP machinery with S-HTCP's shaping.
pub type Shtcp = HtcpPolicy<ShtcpShaping>;

/// S-HTCP's α and back-off shaping on top of H-TCP.
#[derive(Clone, Debug, PartialEq)]
pub struct ShtcpShaping {
    lambda1_secs: f64,
    lambda2: f64,
    rtt_unit: RttUnit,
    beta_s_min: f64,
    alpha_s_min: f64,
    alpha_s_max_fraction: f64,
    alpha_beta: AlphaBeta,
    alpha_form: AlphaForm,
    /// β_S of the last congestion event (for `alpha_beta = beta_s`).
    last_beta_s: Option<f64>,
}

impl ShtcpShaping {
    /// `exp(Δ/λ1 − RTT_min/λ2)` with RTT_min in the configured unit (0 if unknown).
    pub fn growth_factor(&self, delta: Duration, min_rtt: Option<Duration>) -> f64 {
        let rtt = min_rtt.map_or(0.0, |r| match self.rtt_unit {
            RttUnit::Ms => r.as_secs_f64() * 1000.0,
            RttUnit::S => r.as_secs_f64(),
        });
        (delta.as_secs_f64() / self.lambda1_secs - rtt / self.lambda2).exp()
    }

    /// `β_S = max(β · exp(−Δ_e/λ1), β_S_min)`.
    pub fn beta_s(&self, beta: f64, delta_e: Duration) -> f64 {
        (beta * (-delta_e.as_secs_f64() / self.lambda1_secs).exp()).max(self.beta_s_min)
    }

    /// β_S of the last congestion event, if there was one.
    pub fn last_beta_s(&self) -> Option<f64> {
        self.last_beta_s
    }
}

impl Shaping for ShtcpShaping {
    fn name(&self) -> &'static str {
        "shtcp"
    }

    fn alpha(&self, params: &HtcpParams, i: &AlphaInputs) -> f64 {
        let growth = self.growth_factor(i.delta, i.min_rtt);
        let raw = match self.alpha_form {
            AlphaForm::HtcpScaled => {
                let beta = match self.alpha_beta {
                    AlphaBeta::Htcp => i.beta,
                    AlphaBeta::BetaS => self.last_beta_s.unwrap_or(i.beta),
                };
                let inputs = AlphaInputs { beta, ..i.clone() };
                htcp_alpha_real(params, &inputs) * growth
            }
            AlphaForm::PaperEq12 => {
                // No Δ_L reduction, no low-speed branch, no 2(1−β), no RTT scaling.
                let d = i.delta.as_secs_f64();
                growth * (d * d / 4.0 + 10.0 * d + 1.0)
            }
        };
        let cap = self.alpha_s_max_fraction * i.cwnd as f64;
        clamp_f64(raw, self.alpha_s_min, cap)
    }

    fn ssthresh(&mut self, _params: &HtcpParams, i: &BackoffInputs) -> u32 {
        let beta_s = self.beta_s(i.beta, i.delta_e);
        self.last_beta_s = Some(beta_s);
        floor_scaled(i.cwnd, beta_s).max(2)
    }

    fn init(&mut self) {
        self.last_beta_s = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::core::Core;
    use crate::testutil::{ack, path};
    use crate::types::{CaState, CongestionEvent, CongestionKind};
    use crate::Time;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn secs(v: f64) -> Duration {
        Duration::from_secs_f64(v)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-300)
    }

    fn params(cfg: &ShtcpConfig) -> HtcpParams {
        cfg.build().policy().params.clone()
    }

    /// α_S for Δ, RTT_min, H-TCP β and cwnd under `cfg`.
    fn alpha_s(cfg: &ShtcpConfig, delta_s: f64, rtt_ms: u64, beta: f64, cwnd: u32) -> f64 {
        let inputs = AlphaInputs {
            delta: secs(delta_s),
            beta,
            min_rtt: Some(ms(rtt_ms)),
            cwnd,
        };
        cfg.shaping().alpha(&params(cfg), &inputs)
    }

    fn seconds_reading() -> ShtcpConfig {
        ShtcpConfig {
            rtt_unit: RttUnit::S,
            ..Default::default()
        }
    }

    const BIG: u32 = 1_000_000; // a window whose cap is not binding

    #[test]
    fn sh1_long_epoch_medium_rtt() {
        let cfg = ShtcpConfig::default();
        let factor = cfg.shaping().growth_factor(secs(10.0), Some(ms(50)));
        assert!(close(factor, (0.4f64 - 50.0 / 70.0).exp()));
        assert!(close(factor, ((14.0 * 10.0 - 5.0 * 50.0) / 350.0f64).exp()));
        assert!((factor - 0.7303).abs() < 5e-5);
        let a = alpha_s(&cfg, 10.0, 50, 0.5, BIG);
        assert!(close(a, 111.25 * factor), "{a}");
        assert!((a - 81.25).abs() < 0.005);
        // At cwnd 500: +0.1625 segment per acknowledged segment.
        let a500 = alpha_s(&cfg, 10.0, 50, 0.5, 500);
        assert!((a500 / 500.0 - 0.1625).abs() < 5e-5);
        let s = alpha_s(&seconds_reading(), 10.0, 50, 0.5, BIG);
        assert!(close(s, 111.25 * (0.4f64 - 0.05 / 70.0).exp()));
        assert!((s - 165.85).abs() < 0.005);
    }

    #[test]
    fn sh2_short_epoch() {
        let a = alpha_s(&ShtcpConfig::default(), 0.5, 50, 0.5, BIG);
        assert!(close(a, (0.02f64 - 50.0 / 70.0).exp()));
        assert!((a - 0.4994).abs() < 5e-5);
        let s = alpha_s(&seconds_reading(), 0.5, 50, 0.5, BIG);
        assert!((s - 1.0195).abs() < 5e-5);
    }

    #[test]
    fn sh3_cap_at_half_cwnd() {
        let cfg = ShtcpConfig::default();
        let raw = 2.0 * 0.2 * 501.25 * (1.2f64 - 20.0 / 70.0).exp();
        assert!((2.0 * 0.2 * 501.25f64 - 200.5).abs() < 1e-9);
        assert!(((1.2f64 - 20.0 / 70.0).exp() - 2.4950).abs() < 5e-5);
        let a = alpha_s(&cfg, 30.0, 20, 0.8, BIG);
        assert!(close(a, raw) && (a - 500.25).abs() < 0.005, "{a}");
        assert_eq!(alpha_s(&cfg, 30.0, 20, 0.8, 600), 300.0);
    }

    #[test]
    fn sh4_cap_after_a_minute() {
        let cfg = ShtcpConfig::default();
        let factor = (2.4f64 - 100.0 / 70.0).exp();
        assert!((factor - 2.6417).abs() < 5e-5);
        let a = alpha_s(&cfg, 60.0, 100, 0.5, BIG);
        assert!(
            close(a, 1461.25 * factor) && (a - 3860.2).abs() < 0.05,
            "{a}"
        );
        assert_eq!(alpha_s(&cfg, 60.0, 100, 0.5, 2000), 1000.0);
    }

    #[test]
    fn sh5_beta_s_floor_table() {
        // (β, Δ_e s, raw β_S, ssthresh from cwnd 1000 with floors 0 / 0.5 / 0.25).
        let rows = [
            (0.8, 10.0, 0.5363, [536, 536, 536]),
            (0.8, 30.0, 0.2410, [240, 500, 250]),
            (0.8, 60.0, 0.0726, [72, 500, 250]),
            (0.5, 10.0, 0.3352, [335, 500, 335]),
            (0.5, 30.0, 0.1506, [150, 500, 250]),
            (0.5, 60.0, 0.0454, [45, 500, 250]),
        ];
        for (beta, de, raw, ssthresh) in rows {
            for (floor, want) in [0.0, 0.5, 0.25].into_iter().zip(ssthresh) {
                let cfg = ShtcpConfig {
                    beta_s_min: floor,
                    ..Default::default()
                };
                let mut sh = cfg.shaping();
                let b = BackoffInputs {
                    delta_e: secs(de),
                    beta,
                    cwnd: 1000,
                };
                let exact = beta * (-de / 25.0f64).exp();
                assert!((exact - raw).abs() < 5e-5, "raw β_S {exact}");
                assert!(close(sh.beta_s(beta, secs(de)), exact.max(floor)));
                assert_eq!(
                    sh.ssthresh(&params(&cfg), &b),
                    want,
                    "β {beta} Δe {de} floor {floor}"
                );
                assert!(close(
                    sh.last_beta_s().unwrap_or(f64::NAN),
                    exact.max(floor)
                ));
            }
        }
    }

    #[test]
    fn sh5_through_the_controller() {
        // β = 0.8 (adaptive, clamped), Δ_e = 30 s, cwnd 1000 → ssthresh 500.
        let mut c = ShtcpConfig::default().build();
        c.init(&path(0, 100));
        {
            let (core, p) = c.parts_mut();
            core.cwnd = 1000;
            p.st.modeswitch = true;
            p.st.min_rtt = Some(ms(100));
            p.st.max_rtt = ms(105);
        }
        let ev = CongestionEvent {
            kind: CongestionKind::Loss,
            now: Time::from_millis(30_000),
            is_persistent: false,
            lost_segs: 1,
            in_flight: 1000,
            lost_sent_at: None,
        };
        c.on_congestion_event(&ev, &path(30_000, 100));
        assert!(close(c.policy().beta(), 0.8));
        assert_eq!(c.core().ssthresh, 500);
        assert_eq!(c.policy().st.last_cong, Time::from_millis(30_000));
        // α was recomputed at the event with Δ = 30 s and the new β = 0.8.
        let want = 2.0 * 0.2 * 501.25 * (1.2f64 - 100.0 / 70.0).exp();
        assert!(close(c.policy().alpha(), want));
        // Recovery ends at 31 s: Δ restarts there.
        c.on_recovery_exit(&path(31_000, 100));
        assert_eq!(c.policy().st.last_cong, Time::from_millis(31_000));
    }

    #[test]
    fn sh6_alpha_floor() {
        let cfg = ShtcpConfig::default();
        let raw = (0.02f64 - 300.0 / 70.0).exp();
        assert!((raw - 0.0140).abs() < 5e-5);
        assert_eq!(alpha_s(&cfg, 0.5, 300, 0.5, BIG), 0.1);
    }

    #[test]
    fn sh7_paper_eq12() {
        let cfg = ShtcpConfig {
            alpha_form: AlphaForm::PaperEq12,
            ..Default::default()
        };
        let factor = ((140.0 - 250.0) / 350.0f64).exp();
        let a = alpha_s(&cfg, 10.0, 50, 0.5, 500);
        assert!(close(a, 126.0 * factor) && (a - 92.02).abs() < 0.005, "{a}");
        assert!((a / 500.0 - 0.1840).abs() < 5e-5);
        // β does not enter Eq. 12.
        assert_eq!(a, alpha_s(&cfg, 10.0, 50, 0.8, 500));
        let s_cfg = ShtcpConfig {
            rtt_unit: RttUnit::S,
            ..cfg.clone()
        };
        let s = alpha_s(&s_cfg, 10.0, 50, 0.5, BIG);
        assert!(close(s, 126.0 * (139.75 / 350.0f64).exp()) && (s - 187.84).abs() < 0.005);
        // Eq. 12 has no Δ ≤ Δ_L branch: Δ = 0.5 s uses 0.0625 + 5 + 1.
        let short = alpha_s(&cfg, 0.5, 50, 0.5, BIG);
        assert!(close(short, 6.0625 * (0.02f64 - 50.0 / 70.0).exp()));
    }

    #[test]
    fn sh_u1_rtt_unit_table() {
        let rows = [
            (10, 0.8669, 0.99986),
            (50, 0.4895, 0.99929),
            (70, 0.3679, 0.99900),
            (100, 0.2397, 0.99857),
            (200, 0.0574, 0.99715),
            (300, 0.0138, 0.99572),
        ];
        let ms_sh = ShtcpConfig::default().shaping();
        let s_sh = seconds_reading().shaping();
        for (rtt, f_ms, f_s) in rows {
            let a = ms_sh.growth_factor(Duration::ZERO, Some(ms(rtt)));
            let b = s_sh.growth_factor(Duration::ZERO, Some(ms(rtt)));
            assert!(
                (a - f_ms).abs() < 5e-5 && (b - f_s).abs() < 5e-6,
                "{rtt}: {a} {b}"
            );
        }
    }

    #[test]
    fn u4_beta_s_enters_alpha_when_chosen() {
        let cfg = ShtcpConfig {
            alpha_beta: AlphaBeta::BetaS,
            beta_s_min: 0.0,
            ..Default::default()
        };
        let p = params(&cfg);
        let mut sh = cfg.shaping();
        let inputs = AlphaInputs {
            delta: secs(60.0),
            beta: 0.8,
            min_rtt: Some(ms(50)),
            cwnd: BIG,
        };
        // Before any event: H-TCP's β.
        let before = sh.alpha(&p, &inputs);
        let b = BackoffInputs {
            delta_e: secs(60.0),
            beta: 0.8,
            cwnd: 1000,
        };
        sh.ssthresh(&p, &b);
        let beta_s = 0.8 * (-60.0 / 25.0f64).exp();
        let after = sh.alpha(&p, &inputs);
        // 2(1−0.073) = 1.85 instead of 0.4.
        assert!(close(after / before, (1.0 - beta_s) / 0.2));
        assert!((2.0 * (1.0 - beta_s) - 1.85).abs() < 0.005);
    }

    #[test]
    fn u5_rtt_scaling_off_by_default_and_available() {
        let a = alpha_s(&ShtcpConfig::default(), 10.0, 50, 0.5, BIG);
        let scaled_cfg = ShtcpConfig {
            use_rtt_scaling: true,
            ..Default::default()
        };
        let b = alpha_s(&scaled_cfg, 10.0, 50, 0.5, BIG);
        assert!(close(b, a * 0.5));
    }

    #[test]
    fn growth_uses_alpha_s_and_never_shrinks_at_min_rtt() {
        let mut c = ShtcpConfig::default().build();
        c.init(&path(0, 50));
        c.core_mut().ssthresh = 10;
        let mut last = c.core().cwnd;
        for k in 0..20_000u64 {
            let mut a = ack(1);
            a.rtt = Some(ms(50));
            c.on_ack(&a, &path(k, 50));
            assert!(c.core().cwnd >= last);
            last = c.core().cwnd;
            let cap = 0.5 * c.core().cwnd as f64;
            assert!(c.policy().alpha() <= cap.max(0.1) + 1e-9);
        }
        assert!(last > 10);
        assert_eq!(c.core().ca_state, CaState::Open);
    }

    #[test]
    fn arbitrary_sequences_do_not_panic() {
        let configs = [
            ShtcpConfig::default(),
            ShtcpConfig {
                alpha_form: AlphaForm::PaperEq12,
                rtt_unit: RttUnit::S,
                alpha_beta: AlphaBeta::BetaS,
                use_rtt_scaling: true,
                beta_s_min: 0.0,
                alpha_s_min: 0.0,
                ..Default::default()
            },
        ];
        for (seed, cfg) in configs.into_iter().enumerate() {
            crate::algos::htcp::tests::drive_arbitrary(&mut cfg.build(), seed as u64 + 11, 20_000);
        }
    }

    #[test]
    fn bad_values_are_sanitised() {
        let cfg = ShtcpConfig {
            lambda1_secs: 0.0,
            lambda2: f64::NAN,
            beta_s_min: f64::INFINITY,
            alpha_s_min: -3.0,
            alpha_s_max_cwnd_fraction: -1.0,
            ..Default::default()
        };
        let want = ShtcpConfig {
            alpha_s_min: 0.0,
            ..Default::default()
        };
        assert_eq!(cfg.shaping(), want.shaping());
        let mut c = cfg.build();
        let (core, p): (&mut Core, _) = c.parts_mut();
        core.cwnd = 10;
        p.update_alpha(Time::MAX, 10);
        assert!(p.alpha() > 0.0 && p.alpha() <= 5.0);
    }
}
