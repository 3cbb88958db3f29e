//! H-TCP (cc-spec §3.4; Leith & Shorten, PFLDnet 2004; kernel `tcp_htcp.c`).
//!
//! H-TCP is a loss-based controller for high-speed, long-distance paths. Its
//! additive increase grows with the time Δ since the end of the last
//! congestion episode: Reno-like (`α = 1`) for Δ ≤ Δ_L = 1 s, then
//! quadratically faster, `α_Δ = 1 + 10(Δ−Δ_L) + ((Δ−Δ_L)/2)²` segments per
//! RTT, optionally scaled by `min_rtt / 100 ms` so flows with different RTTs
//! converge alike. The back-off factor β adapts to `min_rtt / max_rtt`
//! (clamped to [0.5, 0.8]) once the throughput measured between congestion
//! events is stable (±20 %), so a flow with an empty queue backs off less.
//! It suits long fat pipes and, per seed 001, lossy mobile paths.
//!
//! **Parameters** (all fields of [`HtcpConfig`]): Δ_L, the β clamp, RTT
//! scaling (reference RTT, ratio clamp), the bandwidth switch (tolerance),
//! the 20 ms max-RTT growth guard, the 0.95 max-RTT fade, the 10 ms minimum
//! RTT for adaptive β, and the optional Linux fixed-point mode.
//!
//! **Specified: kernel control structure with real-valued arithmetic.** α
//! and β are real numbers (the paper's formulas); `linux_compat` reproduces
//! the kernel's 7-bit fixed point and jiffy-resolution α_Δ instead.
//!
//! The spec marks no **[PROJECT CHOICE]** for H-TCP. **Resolutions where it
//! is silent** (fixed, not configurable):
//! * RTT samples of zero are ignored, as the kernel does (`rtt_us > 0`).
//! * The throughput estimator's threshold `cwnd − max(⌊α⌋, 1)` is evaluated
//!   with signed arithmetic (the spec's formula); the kernel's unsigned
//!   subtraction wraps when `⌊α⌋ > cwnd` and then never samples.
//! * The estimator's first interval starts at `init` (the kernel's
//!   zero-initialised `lasttime` is an arbitrary jiffy).
//! * `floor(cwnd·β)` absorbs errors below 1e-9 relative, so decimal
//!   constants such as β = 0.8 floor like exact rationals.
//! * α that is zero or not finite falls back to 1 (kernel `ALPHA_BASE`).
//! * The undo copies are taken when the episode's state is entered, i.e.
//!   after `ssthresh()` (kernel order), so an undo restores Δ's origin but
//!   `max_rtt`/`old_maxB` as that event's update left them.
//! * `linux_compat` quantises the formulas the spec lists (α_Δ, RTT scale,
//!   β, α, ssthresh); RTT tracking and the throughput estimator stay real.
//!
//! `set_initial_window` keeps the core default (`cwnd = ssthresh = segs`);
//! Δ then counts from `init`, as if the connection had started at the end of
//! a congestion episode. Idle periods do not stop Δ (kernel behaviour).
//!
//! The machinery is generic over a [`Shaping`] strategy so that S-HTCP
//! (cc-spec §3.15, `algos::shtcp`) reuses it and replaces only α and the
//! back-off.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, CaState, PathInfo};
use crate::Time;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::time::Duration;

mod params;
#[cfg(test)]
pub(crate) mod tests;

pub use params::{alpha_delta, alpha_delta_linux, HtcpParams};
use params::{beta128, htcp_alpha_linux, reset_beta, rtt_jiffies};
pub(crate) use params::{clamp_f64, finite_or, floor_scaled, htcp_alpha_real, ParamFields};

/// H-TCP settings (cc-spec §3.4). Defaults are the spec's values.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct HtcpConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// Δ_L, milliseconds: low-speed period after a congestion episode during
    /// which α_Δ = 1 (spec: 1000 ms).
    pub delta_l_ms: u64,
    /// Lower clamp of the adaptive β, and β's reset value (spec: 0.5).
    pub beta_min: f64,
    /// Upper clamp of the adaptive β (spec: 0.8).
    pub beta_max: f64,
    /// Scale α_Δ by `min_rtt / rtt_scaling_ref_ms` (spec: on).
    pub use_rtt_scaling: bool,
    /// Reference RTT of the RTT scaling, milliseconds (spec: 100 ms).
    pub rtt_scaling_ref_ms: u64,
    /// Lower clamp of the RTT-scaling ratio (spec: 0.1).
    pub rtt_scaling_min: f64,
    /// Upper clamp of the RTT-scaling ratio (spec: 2.0).
    pub rtt_scaling_max: f64,
    /// Adapt β only while the measured throughput is stable (spec: on).
    pub use_bandwidth_switch: bool,
    /// Relative tolerance of the bandwidth switch: β adapts only if the
    /// new maximum throughput is within `±tolerance` of the old (spec: 0.2).
    pub bandwidth_switch_tolerance: f64,
    /// max-RTT growth guard, milliseconds: larger jumps are ignored as
    /// spikes (spec: 20 ms).
    pub max_rtt_guard_ms: u64,
    /// max-RTT fade factor applied at each congestion event (spec: 0.95).
    pub max_rtt_fade: f64,
    /// β adapts only when the minimum RTT exceeds this, milliseconds (spec: 10 ms).
    pub adaptive_beta_min_rtt_ms: u64,
    /// Reproduce the kernel's fixed-point arithmetic (7-bit α and β,
    /// jiffy-resolution α_Δ and RTT scale) instead of the real-valued
    /// formulas (spec §5: optional bit-compat mode; default off).
    pub linux_compat: bool,
    /// Kernel `HZ` for `linux_compat`, jiffies per second (default 1000).
    pub linux_hz: u32,
}

impl Default for HtcpConfig {
    fn default() -> Self {
        HtcpConfig {
            core: CoreConfig::default(),
            delta_l_ms: 1000,
            beta_min: 0.5,
            beta_max: 0.8,
            use_rtt_scaling: true,
            rtt_scaling_ref_ms: 100,
            rtt_scaling_min: 0.1,
            rtt_scaling_max: 2.0,
            use_bandwidth_switch: true,
            bandwidth_switch_tolerance: 0.2,
            max_rtt_guard_ms: 20,
            max_rtt_fade: 0.95,
            adaptive_beta_min_rtt_ms: 10,
            linux_compat: false,
            linux_hz: 1000,
        }
    }
}

impl HtcpConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Htcp> {
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
            linux_hz: self.linux_compat.then_some(self.linux_hz),
        });
        PolicyController::new(self.core.clone(), HtcpPolicy::new(params, HtcpShaping))
    }
}

/// What an α computation sees.
#[derive(Clone, Debug, PartialEq)]
pub struct AlphaInputs {
    /// Δ: time since the end of the last congestion episode.
    pub delta: Duration,
    /// H-TCP's current β.
    pub beta: f64,
    /// H-TCP's minimum RTT, if a sample was seen.
    pub min_rtt: Option<Duration>,
    /// Congestion window, segments.
    pub cwnd: u32,
}

/// What a back-off computation sees, after H-TCP's β update at the event.
#[derive(Clone, Debug, PartialEq)]
pub struct BackoffInputs {
    /// Δ_e: the epoch length (time since `last_cong`, before it is reset).
    pub delta_e: Duration,
    /// H-TCP's β as just updated for this event.
    pub beta: f64,
    /// Congestion window, segments.
    pub cwnd: u32,
}

/// How α and the back-off are shaped on top of the H-TCP machinery
/// (H-TCP itself: [`HtcpShaping`]; S-HTCP: `algos::shtcp::ShtcpShaping`).
pub trait Shaping: Clone + Debug + Send {
    /// Registry name of the resulting controller.
    fn name(&self) -> &'static str;
    /// The additive-increase parameter α, segments per RTT.
    fn alpha(&self, params: &HtcpParams, inputs: &AlphaInputs) -> f64;
    /// The new `ssthresh`, segments, at a congestion event.
    fn ssthresh(&mut self, params: &HtcpParams, inputs: &BackoffInputs) -> u32;
    /// Reset any private state at connection start.
    fn init(&mut self) {}
}

/// H-TCP's own shaping: α = 2·f·(1−β), ssthresh = max(⌊cwnd·β⌋, 2).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct HtcpShaping;

impl Shaping for HtcpShaping {
    fn name(&self) -> &'static str {
        "htcp"
    }

    fn alpha(&self, p: &HtcpParams, i: &AlphaInputs) -> f64 {
        match p.linux_hz {
            Some(hz) => htcp_alpha_linux(p, hz, i),
            None => htcp_alpha_real(p, i),
        }
    }

    fn ssthresh(&mut self, p: &HtcpParams, i: &BackoffInputs) -> u32 {
        let s = match p.linux_hz {
            Some(_) => u32::try_from((i.cwnd as u64 * beta128(i.beta)) >> 7).unwrap_or(u32::MAX),
            None => floor_scaled(i.cwnd, i.beta),
        };
        s.max(2)
    }
}

/// H-TCP's per-connection state (cc-spec §3.4 "State").
#[derive(Clone, Debug, PartialEq)]
pub struct HtcpState {
    /// Additive-increase parameter, segments per RTT.
    pub(crate) alpha: f64,
    /// Back-off factor.
    pub(crate) beta: f64,
    /// β may adapt (set at the first event with stable throughput).
    pub(crate) modeswitch: bool,
    /// End of the last congestion episode (start of the current one while in it).
    pub(crate) last_cong: Time,
    /// Minimum RTT sample seen.
    pub(crate) min_rtt: Option<Duration>,
    /// Maximum RTT (zero = unset).
    pub(crate) max_rtt: Duration,
    /// `last_cong` before the current episode (undo).
    pub(crate) undo_last_cong: Option<Time>,
    /// `max_rtt` before the current episode (undo).
    pub(crate) undo_max_rtt: Duration,
    /// `old_max_b` before the current episode (undo).
    pub(crate) undo_old_max_b: f64,
    /// Segments acknowledged by the last ACK in Open (credit per CA step).
    pub(crate) pkts_acked: u32,
    /// Throughput estimator: segments acknowledged since `lasttime`.
    pub(crate) packetcount: u32,
    /// Throughput estimator: start of the current interval.
    pub(crate) lasttime: Time,
    /// Smoothed throughput, segments per second.
    pub(crate) bi: f64,
    /// Minimum smoothed throughput, segments per second.
    pub(crate) min_b: f64,
    /// Maximum smoothed throughput, segments per second.
    pub(crate) max_b: f64,
    /// `max_b` at the previous congestion event, segments per second.
    pub(crate) old_max_b: f64,
    /// Packet size, bytes (for the bandwidth estimate in stats).
    pub(crate) mss: u32,
}

impl HtcpState {
    /// The state `htcp_init` sets up at `now`.
    pub(crate) fn new(now: Time, mss: u32) -> HtcpState {
        HtcpState {
            alpha: 1.0,
            beta: 0.5,
            modeswitch: false,
            last_cong: now,
            min_rtt: None,
            max_rtt: Duration::ZERO,
            undo_last_cong: None,
            undo_max_rtt: Duration::ZERO,
            undo_old_max_b: 0.0,
            pkts_acked: 1,
            packetcount: 0,
            lasttime: now,
            bi: 0.0,
            min_b: 0.0,
            max_b: 0.0,
            old_max_b: 0.0,
            mss,
        }
    }
}

/// The H-TCP machinery, parameterised by how α and the back-off are shaped.
#[derive(Clone, Debug)]
pub struct HtcpPolicy<S> {
    pub(crate) params: HtcpParams,
    pub(crate) shaping: S,
    pub(crate) st: HtcpState,
}

/// The H-TCP policy.
pub type Htcp = HtcpPolicy<HtcpShaping>;

impl<S: Shaping> HtcpPolicy<S> {
    /// A policy with validated `params` and a shaping strategy.
    pub fn new(params: HtcpParams, mut shaping: S) -> Self {
        shaping.init();
        let mut st = HtcpState::new(Time::ZERO, 1448);
        st.beta = reset_beta(&params);
        HtcpPolicy {
            params,
            shaping,
            st,
        }
    }

    /// Current α, segments per RTT.
    pub fn alpha(&self) -> f64 {
        self.st.alpha
    }

    /// Current β.
    pub fn beta(&self) -> f64 {
        self.st.beta
    }

    /// `htcp_alpha_update`: recompute α for Δ = `now − last_cong`.
    pub(crate) fn update_alpha(&mut self, now: Time, cwnd: u32) {
        let inputs = AlphaInputs {
            delta: now - self.st.last_cong,
            beta: self.st.beta,
            min_rtt: self.st.min_rtt,
            cwnd,
        };
        let a = self.shaping.alpha(&self.params, &inputs);
        self.st.alpha = if a.is_finite() && a > 0.0 {
            a
        } else if a == f64::INFINITY {
            f64::MAX
        } else {
            1.0
        };
    }

    /// `measure_rtt`: min RTT always, max RTT in Open with the spike guard.
    fn measure_rtt(&mut self, r: Duration, open: bool) {
        let st = &mut self.st;
        if !matches!(st.min_rtt, Some(m) if m <= r) {
            st.min_rtt = Some(r);
        }
        if open {
            let min = st.min_rtt.unwrap_or(r);
            if st.max_rtt < min {
                st.max_rtt = min;
            }
            if r > st.max_rtt && r <= st.max_rtt.saturating_add(self.params.max_rtt_guard) {
                st.max_rtt = r;
            }
        }
    }

    /// `measure_achieved_throughput` (after the RTT part).
    fn measure_throughput(&mut self, core: &Core, acked: u32, now: Time) {
        let st = &mut self.st;
        if !matches!(core.ca_state, CaState::Open | CaState::Disorder) {
            st.packetcount = 0;
            st.lasttime = now;
            return;
        }
        st.packetcount = st.packetcount.saturating_add(acked);
        let Some(min_rtt) = st.min_rtt.filter(|m| !m.is_zero()) else {
            return;
        };
        let threshold = core.cwnd as i64 - (st.alpha.floor() as i64).max(1);
        let elapsed = now - st.lasttime;
        if (st.packetcount as i64) < threshold || elapsed < min_rtt {
            return;
        }
        // elapsed ≥ min_rtt > 0, so the division is finite.
        let cur = st.packetcount as f64 / elapsed.as_secs_f64();
        let ccount = (now - st.last_cong).as_nanos() / min_rtt.as_nanos();
        if ccount <= 3 {
            // Just after a back-off.
            st.min_b = cur;
            st.max_b = cur;
            st.bi = cur;
        } else {
            st.bi = (3.0 * st.bi + cur) / 4.0;
            if st.bi > st.max_b {
                st.max_b = st.bi;
            }
            if st.min_b > st.max_b {
                st.min_b = st.max_b;
            }
        }
        st.packetcount = 0;
        st.lasttime = now;
    }

    /// `htcp_beta_update`.
    fn update_beta(&mut self) {
        let p = &self.params;
        let st = &mut self.st;
        if p.use_bandwidth_switch {
            let m = st.max_b;
            let o = st.old_max_b;
            st.old_max_b = m;
            let stable = (1.0 - p.bw_tolerance) * o <= m && m <= (1.0 + p.bw_tolerance) * o;
            if !stable {
                st.beta = reset_beta(p);
                st.modeswitch = false;
                return;
            }
        }
        let min_rtt = st.min_rtt.unwrap_or(Duration::ZERO);
        if st.modeswitch && min_rtt > p.adaptive_beta_min_rtt && !st.max_rtt.is_zero() {
            st.beta = match p.linux_hz {
                Some(hz) => {
                    let min_j = rtt_jiffies(min_rtt, hz) as u128;
                    let max_j = (rtt_jiffies(st.max_rtt, hz) as u128).max(1);
                    let lo = (p.beta_min * 128.0).floor() as u128;
                    let hi = ((p.beta_max * 128.0).floor() as u128).max(lo);
                    ((min_j << 7) / max_j).clamp(lo, hi) as f64 / 128.0
                }
                None => clamp_f64(
                    min_rtt.as_secs_f64() / st.max_rtt.as_secs_f64(),
                    p.beta_min,
                    p.beta_max,
                ),
            };
        } else {
            st.beta = reset_beta(p);
            st.modeswitch = true;
        }
    }

    /// Fade max RTT towards min RTT: `max = min + fade·(max − min)`.
    fn fade_max_rtt(&mut self) {
        let st = &mut self.st;
        let Some(min) = st.min_rtt.filter(|m| !m.is_zero()) else {
            return;
        };
        if st.max_rtt > min {
            let span = (st.max_rtt - min).as_nanos() as f64 * self.params.max_rtt_fade;
            let span = Duration::from_nanos(span.round().min(u64::MAX as f64) as u64);
            st.max_rtt = min.saturating_add(span);
        }
    }

    /// The estimated throughput in bytes per second (`Bi · mss`), if measured.
    fn bandwidth_bytes_per_sec(&self) -> Option<u64> {
        let b = self.st.bi * self.st.mss as f64;
        (b.is_finite() && b > 0.0).then(|| b.min(u64::MAX as f64) as u64)
    }
}

impl<S: Shaping> CcPolicy for HtcpPolicy<S> {
    fn name(&self) -> &'static str {
        self.shaping.name()
    }

    fn init(&mut self, core: &mut Core, path: &PathInfo) {
        self.shaping.init();
        self.st = HtcpState::new(path.now, core.mss);
        self.st.beta = reset_beta(&self.params);
    }

    fn on_packets_acked(&mut self, core: &mut Core, ack: &AckSample, path: &PathInfo) {
        let open = core.ca_state == CaState::Open;
        if open {
            self.st.pkts_acked = ack.acked_segs;
        }
        if let Some(r) = ack.rtt.filter(|r| !r.is_zero()) {
            self.measure_rtt(r, open);
        }
        if self.params.use_bandwidth_switch {
            self.measure_throughput(core, ack.acked_segs, path.now);
        }
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        if !path.cwnd_limited {
            return;
        }
        if core.in_slow_start() {
            // Leftover discarded (kernel `htcp_cong_avoid`).
            core.slow_start(acked);
            return;
        }
        // In theory cwnd += α/cwnd per acknowledged segment; at most +1 per ACK.
        if core.cwnd_cnt as f64 * self.st.alpha >= core.cwnd as f64 {
            if core.cwnd < core.cwnd_clamp {
                core.cwnd += 1;
            }
            core.cwnd_cnt = 0;
            self.update_alpha(path.now, core.cwnd);
        } else {
            core.cwnd_cnt = core.cwnd_cnt.saturating_add(self.st.pkts_acked);
        }
        self.st.pkts_acked = 1;
    }

    fn ssthresh(&mut self, core: &Core, path: &PathInfo) -> u32 {
        let delta_e = path.now - self.st.last_cong;
        // htcp_param_update: β, then α, then the max-RTT fade.
        self.update_beta();
        self.update_alpha(path.now, core.cwnd);
        self.fade_max_rtt();
        let inputs = BackoffInputs {
            delta_e,
            beta: self.st.beta,
            cwnd: core.cwnd,
        };
        self.shaping.ssthresh(&self.params, &inputs).max(2)
    }

    fn undo_cwnd(&mut self, core: &Core) -> u32 {
        if let Some(t) = self.st.undo_last_cong.take() {
            self.st.last_cong = t;
            self.st.max_rtt = self.st.undo_max_rtt;
            self.st.old_max_b = self.st.undo_old_max_b;
        }
        core.reno_undo()
    }

    fn on_state(&mut self, _core: &mut Core, new: CaState, path: &PathInfo) {
        let st = &mut self.st;
        match new {
            CaState::Open => {
                // Δ is measured from the end of the episode.
                if st.undo_last_cong.take().is_some() {
                    st.last_cong = path.now;
                }
            }
            CaState::Cwr | CaState::Recovery | CaState::Loss => {
                st.undo_last_cong = Some(st.last_cong);
                st.undo_max_rtt = st.max_rtt;
                st.undo_old_max_b = st.old_max_b;
                st.last_cong = path.now;
            }
            CaState::Disorder => {}
        }
    }

    fn bandwidth_estimate_bytes_per_sec(&self) -> Option<u64> {
        self.bandwidth_bytes_per_sec()
    }
}
