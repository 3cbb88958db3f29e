//! CUBIC (cc-spec §3.10; RFC 9438, kernel `tcp_cubic.c`) with HyStart++
//! (RFC 9406) or the kernel's HyStart as slow-start exit.
//!
//! CUBIC is the default controller of Linux, Windows and macOS, made for
//! long fat networks: after a loss the window follows a cubic curve of the
//! time since the loss, `W(t) = C·(t − K)³ + W_max`, which climbs quickly
//! back towards the window where the loss happened (`W_max`), plateaus
//! around it and then probes beyond it ever faster. The growth depends on
//! time, not on the RTT, so flows with different RTTs share fairly; in the
//! Reno-friendly region (short RTT, small windows) it grows at least as fast
//! as Reno would (`W_est`, with RFC 9438's switch of α from 0.53 to 1 once
//! `W_est` reaches the window before the last reduction).
//!
//! **Parameters** ([`CubicConfig`]): `C = 0.4` segments/s³, `β = 7/10`,
//! fast convergence, the Reno-friendly region, the kernel's initial growth
//! cap (`cnt ≤ 20` while no loss has been seen), the slow-start exit
//! (HyStart++ by default, Linux HyStart, or none), and which RTT the target
//! looks ahead by (SRTT per the RFC, or the minimum RTT as the kernel does).
//! The growth is realised per ACK with H2: one segment per `cnt`
//! acknowledged segments, `cnt = cwnd / (target − cwnd)`.
//!
//! **Choices.** The spec's "Specified" decisions (RFC 9438 where it is
//! normative; kernel for the `W_max = 0` case and the `cnt` realisation) are
//! the defaults. Interpretations where the sources are silent: before the
//! first congestion event `cwnd_prior` is 0, so `α = 1` (no reduction has
//! happened that α_cubic would compensate); HyStart++ runs in the initial
//! slow start only (RFC 9406 §4.1 SHOULD), Linux HyStart in every slow start
//! (kernel); Linux HyStart's delay test runs from the 9th sample of a round
//! (kernel `sample_cnt` logic); CSS rounds are counted at round ends, the
//! round in which CSS began counting as the first. `set_initial_window`
//! (packet-pair start-up) means `cwnd = ssthresh = segs` and the first ACK
//! starts a CUBIC epoch with `W_max` unknown (`K = 0`, origin = cwnd, and
//! the initial growth cap applies) — the measured pipe is not a loss point.
//! `on_startup_measurement` (packet pair measured while data flows) also
//! sets `W_max` to the measured window: the epoch plateaus there and the
//! initial growth cap is off.
//! The kernel's fixed-point mode (vector CU-7) is not implemented.

mod fixed;
mod hystart;
#[cfg(test)]
mod tests;

pub use hystart::{HyStartPlusPlusConfig, LinuxHyStartConfig};

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, CwndEvent, PathInfo, StartupMeasurement};
use crate::Time;
use hystart::{HyStartPlusPlus, LinuxHyStart};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// cc-spec §1: every `ssthresh` is at least 2 segments.
const MIN_SSTHRESH: u32 = 2;

/// How slow start ends before the first loss.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum SlowStartExit {
    /// RFC 9406 HyStart++ (spec default). In TOML: `"hystart_plus_plus"`.
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "hystart_plus_plus"))]
    HyStartPlusPlus,
    /// The kernel's HyStart: ack train and delay increase (kernel and ns-3
    /// default). In TOML: `"linux_hystart"`.
    #[cfg_attr(feature = "serde", serde(rename = "linux_hystart"))]
    LinuxHyStart,
    /// Plain slow start until the first loss.
    None,
}

/// Which RTT the CUBIC target looks ahead by (`W_cubic(t + RTT)`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum TargetRtt {
    /// Smoothed RTT (RFC 9438; spec default).
    #[default]
    Srtt,
    /// Minimum RTT sample (kernel and ns-3 `delay_min`).
    MinRtt,
}

/// CUBIC settings; the defaults are the spec's.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct CubicConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// `C`, the cubic scaling constant, segments/s³ (0.4). Non-positive or
    /// non-finite values fall back to 0.4.
    pub c_segs_per_sec3: f64,
    /// Numerator of `β_cubic`, the multiplicative decrease factor (7 of 7/10).
    pub beta_numerator: u32,
    /// Denominator of `β_cubic` (10 of 7/10); `β` is capped at 1.
    pub beta_denominator: u32,
    /// Fast convergence: after a loss below the previous `W_max`, remember
    /// `cwnd·(1+β)/2` instead of `cwnd`, releasing bandwidth to newer flows.
    pub fast_convergence: bool,
    /// Reno-friendly region: grow at least as fast as the Reno estimate `W_est`.
    pub reno_friendly: bool,
    /// Cap on `cnt` (acknowledged segments per +1) while no loss has been
    /// seen (`W_max = 0`): 20, i.e. at least 5 % growth per RTT (kernel, ns-3).
    pub initial_growth_cap_cnt: u32,
    /// Lower bound on `cnt`: 2, i.e. at most 1.5× growth per RTT (RFC 9438 §4.2).
    pub min_cnt: u32,
    /// `cnt = factor·cwnd` when the target is not above cwnd (kernel: 100).
    pub no_growth_cnt_factor: u32,
    /// The target is clamped to `[cwnd, factor·cwnd]` (RFC 9438: 1.5).
    pub target_cap_factor: f64,
    /// Slow-start exit algorithm.
    pub slow_start_exit: SlowStartExit,
    /// RTT used in the target (RFC: SRTT; kernel: minimum RTT).
    pub target_rtt: TargetRtt,
    /// RTT samples within this time after a CA epoch start do not update the
    /// minimum RTT nor Linux HyStart, µs (kernel: 1 s, "right after fast recovery").
    pub delay_min_holdoff_us: u64,
    /// HyStart++ constants (RFC 9406).
    pub hystart_plus_plus: HyStartPlusPlusConfig,
    /// Linux HyStart constants (kernel).
    pub linux_hystart: LinuxHyStartConfig,
    /// [PROJECT CHOICE] compute `K` and the target in the kernel's fixed point
    /// (C = 410/1024, time in 1/1024 s, integer windows; cc-spec CU-7) for
    /// bit-compatible comparisons with Linux traces. Off: the RFC's real-valued
    /// curve with `c_segs_per_sec3`.
    pub kernel_fixed_point: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            core: CoreConfig::default(),
            c_segs_per_sec3: 0.4,
            beta_numerator: 7,
            beta_denominator: 10,
            fast_convergence: true,
            reno_friendly: true,
            initial_growth_cap_cnt: 20,
            min_cnt: 2,
            no_growth_cnt_factor: 100,
            target_cap_factor: 1.5,
            slow_start_exit: SlowStartExit::HyStartPlusPlus,
            target_rtt: TargetRtt::Srtt,
            delay_min_holdoff_us: 1_000_000,
            hystart_plus_plus: HyStartPlusPlusConfig::default(),
            linux_hystart: LinuxHyStartConfig::default(),
            kernel_fixed_point: false,
        }
    }
}

impl CubicConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Cubic> {
        PolicyController::new(self.core.clone(), self.policy())
    }

    /// The CUBIC policy alone (its `core` settings are not used), for
    /// algorithms built on CUBIC (RTW-TCP).
    pub fn policy(&self) -> Cubic {
        Cubic::new(self)
    }
}

/// The state RFC 9438 §4.9 restores when a congestion event proves spurious.
#[derive(Clone, Debug, PartialEq)]
struct UndoSnapshot {
    w_max: f64,
    k_secs: f64,
    origin: f64,
    w_est: f64,
    cwnd_prior: u32,
    t_epoch: Option<Time>,
}

/// The CUBIC policy.
#[derive(Clone, Debug)]
pub struct Cubic {
    // Parameters (sanitised).
    c: f64,
    beta_num: u32,
    beta_den: u32,
    alpha_cubic: f64,
    fast_convergence: bool,
    reno_friendly: bool,
    initial_growth_cap_cnt: u32,
    min_cnt: u32,
    no_growth_cnt_factor: u32,
    target_cap_factor: f64,
    slow_start_exit: SlowStartExit,
    target_rtt: TargetRtt,
    delay_min_holdoff: Duration,
    /// Kernel fixed-point curve (CU-7).
    fixed_point: bool,
    // State.
    /// Window before the last reduction, segments; 0 = unknown.
    w_max: f64,
    /// The plateau of the current curve, segments.
    origin: f64,
    /// Time from the epoch start to the plateau, seconds.
    k_secs: f64,
    /// Start of the current congestion-avoidance epoch.
    t_epoch: Option<Time>,
    /// Reno-friendly window estimate, segments.
    w_est: f64,
    /// cwnd when ssthresh was last set by a congestion event, segments.
    cwnd_prior: u32,
    /// The last computed `cnt`.
    cnt: u32,
    undo: Option<UndoSnapshot>,
    /// Minimum RTT sample (kernel `delay_min`), ≥ 1 µs.
    delay_min: Option<Duration>,
    hspp: HyStartPlusPlus,
    linux: LinuxHyStart,
}

impl Cubic {
    fn new(cfg: &CubicConfig) -> Cubic {
        let c = if cfg.c_segs_per_sec3.is_finite() && cfg.c_segs_per_sec3 > 0.0 {
            cfg.c_segs_per_sec3
        } else {
            0.4
        };
        let beta_den = cfg.beta_denominator.max(1);
        let beta_num = cfg.beta_numerator.min(beta_den);
        let alpha_cubic =
            3.0 * f64::from(beta_den - beta_num) / (f64::from(beta_den) + f64::from(beta_num));
        let target_cap_factor = if cfg.target_cap_factor.is_finite() {
            cfg.target_cap_factor.clamp(1.0, 1e6)
        } else {
            1.5
        };
        Cubic {
            c,
            beta_num,
            beta_den,
            alpha_cubic,
            fast_convergence: cfg.fast_convergence,
            reno_friendly: cfg.reno_friendly,
            initial_growth_cap_cnt: cfg.initial_growth_cap_cnt.max(1),
            min_cnt: cfg.min_cnt.max(1),
            no_growth_cnt_factor: cfg.no_growth_cnt_factor.max(1),
            target_cap_factor,
            slow_start_exit: cfg.slow_start_exit,
            target_rtt: cfg.target_rtt,
            delay_min_holdoff: Duration::from_micros(cfg.delay_min_holdoff_us),
            fixed_point: cfg.kernel_fixed_point,
            w_max: 0.0,
            origin: 0.0,
            k_secs: 0.0,
            t_epoch: None,
            w_est: 0.0,
            cwnd_prior: 0,
            cnt: 0,
            undo: None,
            delay_min: None,
            hspp: HyStartPlusPlus::new(cfg.hystart_plus_plus.clone()),
            linux: LinuxHyStart::new(cfg.linux_hystart.clone()),
        }
    }

    /// `W_max`, segments (0 = no loss remembered).
    pub fn w_max_segs(&self) -> f64 {
        self.w_max
    }
    /// `K`, seconds from the epoch start to the plateau.
    pub fn k_secs(&self) -> f64 {
        self.k_secs
    }
    /// The plateau of the current curve, segments.
    pub fn origin_segs(&self) -> f64 {
        self.origin
    }
    /// Start of the current congestion-avoidance epoch, if one is running.
    pub fn epoch_start(&self) -> Option<Time> {
        self.t_epoch
    }
    /// The Reno-friendly estimate `W_est`, segments.
    pub fn w_est_segs(&self) -> f64 {
        self.w_est
    }
    /// cwnd at the last congestion event, segments (0 = none yet).
    pub fn cwnd_prior_segs(&self) -> u32 {
        self.cwnd_prior
    }
    /// The `cnt` of the last congestion-avoidance step (segments per +1).
    pub fn cnt(&self) -> u32 {
        self.cnt
    }
    /// Whether HyStart++ is in Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.hspp.in_css
    }

    /// `W_cubic(τ) = C·(τ − K)³ + origin`, segments, τ in seconds since the epoch start.
    pub fn w_cubic(&self, tau_secs: f64) -> f64 {
        if self.fixed_point {
            let k_fp = (self.k_secs * 1024.0).round() as u64;
            return fixed::target_segs(self.origin as u64, k_fp, fixed::secs_to_fp(tau_secs))
                as f64;
        }
        self.c * (tau_secs - self.k_secs).powi(3) + self.origin
    }

    /// Shift the epoch start later by `by`, but not past `now`, so the curve
    /// resumes where it stopped (idle restart; RTW-TCP after a freeze).
    pub fn shift_epoch(&mut self, by: Duration, now: Time) {
        if let Some(t) = self.t_epoch {
            self.t_epoch = Some((t + by).min(now));
        }
    }

    /// Step 1: a new congestion-avoidance epoch starts at `now` with `cwnd`.
    fn start_epoch(&mut self, cwnd: f64, now: Time) {
        self.t_epoch = Some(now);
        self.w_est = cwnd;
        if self.w_max <= cwnd {
            self.k_secs = 0.0;
            self.origin = cwnd;
        } else if self.fixed_point {
            self.origin = self.w_max.floor();
            self.k_secs = fixed::k_fp(self.origin as u64, cwnd as u64) as f64 / 1024.0;
        } else {
            self.k_secs = ((self.w_max - cwnd) / self.c).cbrt();
            self.origin = self.w_max;
        }
    }

    fn target_rtt_secs(&self, path: &PathInfo) -> f64 {
        let rtt = match self.target_rtt {
            TargetRtt::Srtt => path.srtt.or(path.latest_rtt).or(self.delay_min),
            TargetRtt::MinRtt => self.delay_min.or(path.min_rtt),
        };
        rtt.map_or(0.0, |d| d.as_secs_f64())
    }

    /// Steps 1–8: congestion-avoidance growth for `acked` segments.
    fn cong_avoid(&mut self, core: &mut Core, acked: u32, path: &PathInfo) {
        let cwnd_segs = core.cwnd.max(1);
        let cwnd = f64::from(cwnd_segs);
        let t_epoch = match self.t_epoch {
            Some(t) => t,
            None => {
                self.start_epoch(cwnd, path.now);
                path.now
            }
        };
        let t = (path.now - t_epoch).as_secs_f64();
        // Step 3 (NaN and ±∞ land inside the clamp).
        let target = self
            .w_cubic(t + self.target_rtt_secs(path))
            .max(cwnd)
            .min(cwnd * self.target_cap_factor);
        // Step 4.
        let alpha = if self.w_est < f64::from(self.cwnd_prior) {
            self.alpha_cubic
        } else {
            1.0
        };
        self.w_est += alpha * f64::from(acked) / cwnd;
        // Step 5 (`as` saturates: a tiny difference gives u32::MAX).
        let mut cnt = if target > cwnd {
            (cwnd / (target - cwnd)).floor() as u32
        } else {
            cwnd_segs.saturating_mul(self.no_growth_cnt_factor)
        };
        // Step 6.
        if self.w_max <= 0.0 {
            cnt = cnt.min(self.initial_growth_cap_cnt);
        }
        // Step 7.
        if self.reno_friendly && self.w_cubic(t) < self.w_est && self.w_est > cwnd {
            cnt = cnt.min((cwnd / (self.w_est - cwnd)).floor() as u32);
        }
        // Step 8.
        cnt = cnt.max(self.min_cnt);
        self.cnt = cnt;
        core.cong_avoid_ai(cnt, acked);
    }

    fn snapshot(&self) -> UndoSnapshot {
        UndoSnapshot {
            w_max: self.w_max,
            k_secs: self.k_secs,
            origin: self.origin,
            w_est: self.w_est,
            cwnd_prior: self.cwnd_prior,
            t_epoch: self.t_epoch,
        }
    }

    /// RTO: forget the curve, the minimum RTT and the HyStart measurements
    /// (RFC 9438 §4.8; kernel `bictcp_reset` on entering Loss). `cwnd_prior`
    /// keeps the window at which this ssthresh was set (RFC 9438 definition).
    fn reset_after_rto(&mut self, path: &PathInfo) {
        self.w_max = 0.0;
        self.k_secs = 0.0;
        self.origin = 0.0;
        self.t_epoch = None;
        self.w_est = 0.0;
        self.cnt = 0;
        self.delay_min = None;
        self.hspp.reset(path.snd_nxt);
        self.linux.reset(path.now, path.snd_nxt);
    }

    /// The H9 rate the kernel keeps in `sk_pacing_rate` even when pacing is
    /// not enforced, bytes/s (for Linux HyStart's ack-delay cushion).
    fn h9_rate_bytes_per_sec(core: &Core, path: &PathInfo) -> Option<u64> {
        let srtt = path.srtt.filter(|d| !d.is_zero())?;
        let ratio = if u64::from(core.cwnd) < u64::from(core.ssthresh) / 2 {
            2.0
        } else {
            1.2
        };
        let segs = f64::from(core.cwnd.max(path.in_flight));
        let rate = ratio * f64::from(core.mss) * segs / srtt.as_secs_f64();
        let mut rate = rate.min(u64::MAX as f64) as u64;
        if let Some(max) = core.config.max_pacing_rate_bytes_per_sec {
            rate = rate.min(max);
        }
        Some(rate.max(1))
    }
}

impl CcPolicy for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn init(&mut self, _core: &mut Core, path: &PathInfo) {
        self.reset_after_rto(path);
        self.cwnd_prior = 0;
        self.undo = None;
        self.hspp.done = false;
    }

    fn on_packets_acked(&mut self, core: &mut Core, ack: &AckSample, path: &PathInfo) {
        if self.slow_start_exit == SlowStartExit::HyStartPlusPlus && self.hspp.active(core) {
            self.hspp.on_ack(core, ack.rtt, path);
        }
        let Some(rtt) = ack.rtt else { return };
        // Kernel: discard delay samples right after an epoch start (fast recovery).
        if self
            .t_epoch
            .is_some_and(|t0| path.now - t0 < self.delay_min_holdoff)
        {
            return;
        }
        let delay = rtt.max(Duration::from_micros(1));
        let delay_min = self.delay_min.map_or(delay, |m| m.min(delay));
        self.delay_min = Some(delay_min);
        if self.slow_start_exit == SlowStartExit::LinuxHyStart && self.linux.active(core) {
            let rate = Cubic::h9_rate_bytes_per_sec(core, path);
            let ack_delay_us = self.linux.cfg.ack_delay_us(rate);
            let delay_us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
            let min_us = u64::try_from(delay_min.as_micros()).unwrap_or(u64::MAX);
            self.linux
                .update(core, delay_us, min_us, ack_delay_us, path);
        }
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        if !path.cwnd_limited {
            return;
        }
        let mut n = acked;
        if core.in_slow_start() {
            if self.slow_start_exit == SlowStartExit::HyStartPlusPlus && self.hspp.active(core) {
                let g = self.hspp.growth(n, core.config.pacing);
                n = core.slow_start(g);
            } else {
                n = core.slow_start(n);
            }
            if n == 0 {
                return;
            }
        }
        self.cong_avoid(core, n, path);
    }

    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        self.hspp.done = true;
        self.hspp.in_css = false;
        self.undo = Some(self.snapshot());
        self.t_epoch = None;
        let cwnd = core.cwnd;
        self.w_max = if self.fast_convergence && f64::from(cwnd) < self.w_max {
            // cwnd·(1+β)/2 with β = num/den; the numerator is an exact integer.
            (u128::from(cwnd) * (u128::from(self.beta_den) + u128::from(self.beta_num))) as f64
                / (2 * u128::from(self.beta_den)) as f64
        } else {
            f64::from(cwnd)
        };
        self.cwnd_prior = cwnd;
        let s = u64::from(cwnd) * u64::from(self.beta_num) / u64::from(self.beta_den);
        (s as u32).max(MIN_SSTHRESH)
    }

    fn undo_cwnd(&mut self, core: &Core) -> u32 {
        if let Some(s) = self.undo.take() {
            self.w_max = s.w_max;
            self.k_secs = s.k_secs;
            self.origin = s.origin;
            self.w_est = s.w_est;
            self.cwnd_prior = s.cwnd_prior;
            self.t_epoch = s.t_epoch;
        }
        core.reno_undo()
    }

    fn on_event(&mut self, _core: &mut Core, event: CwndEvent, path: &PathInfo) {
        match event {
            CwndEvent::Loss => self.reset_after_rto(path),
            CwndEvent::TxStart { idle } => self.shift_epoch(idle, path.now),
            CwndEvent::CompleteCwr | CwndEvent::EcnCe => {}
        }
    }

    fn on_initial_window(&mut self, core: &mut Core, segs: u32, _path: &PathInfo) {
        core.set_cwnd(segs);
        core.ssthresh = core.cwnd;
        // A measured pipe, not a loss point: W_max unknown, epoch starts on the first CA ACK.
        self.w_max = 0.0;
        self.k_secs = 0.0;
        self.origin = 0.0;
        self.w_est = 0.0;
        self.t_epoch = None;
        self.hspp.done = true;
    }

    fn on_startup_measurement(
        &mut self,
        core: &mut Core,
        segs: u32,
        m: &StartupMeasurement,
        path: &PathInfo,
    ) {
        self.on_initial_window(core, segs, path);
        // The pair measured the pipe while the initial window was out:
        // that is where CUBIC should plateau, so it is `W_max` — the first
        // epoch starts at the plateau (`K = 0`, origin = cwnd) without the
        // initial growth cap, instead of creeping up ≈ 5 % per RTT from an
        // unknown `W_max`. A capped window slow-starts up to the pipe
        // first (the controller wrapper sets ssthresh).
        let mss = u64::from(core.mss.max(1));
        let pipe_segs = m.pipe_bytes.div_ceil(mss).min(u64::from(u32::MAX)) as u32;
        self.w_max = f64::from(core.cwnd.max(pipe_segs));
    }
}
