//! TCP Vegas (cc-spec §3.5; Brakmo & Peterson, IEEE JSAC 1995; kernel
//! `tcp_vegas.c`).
//!
//! Vegas is a delay-based controller for paths where the sender can measure
//! its own queueing: once per round it compares the window with the window
//! the minimum RTT of the round says the path carries, and steers the
//! estimated backlog `diff` (segments queued at the bottleneck) into
//! `[α, β]` by ±1 segment per round. In slow start it leaves early, as soon
//! as the backlog exceeds `γ`. It suits flows that must keep queues short;
//! it loses bandwidth to loss-based flows sharing the bottleneck. Losses are
//! answered as by Reno (`cwnd/2`, kernel).
//!
//! **Parameters** ([`VegasConfig`]): `alpha_segs` = 2, `beta_segs` = 4,
//! `gamma_segs` = 1 (backlog thresholds, segments), `min_rtt_samples` = 3
//! (samples a round needs before the delay rule is used; kernel
//! `cntRTT > 2`), and `diff_form`.
//!
//! **[PROJECT CHOICE]s.** `diff_form` selects the backlog formula: the
//! kernel's `floor(cwnd·(RTT − BaseRTT)/BaseRTT)` (default, the deployed
//! behaviour) or the paper's real-valued `cwnd·(RTT − BaseRTT)/RTT`
//! (compared exactly, as a rational). The spec recommends this switch
//! because the two differ by the factor RTT/BaseRTT (vector VG-4).
//!
//! **Implementation notes.** RTT samples are kept in whole microseconds
//! plus 1 µs (H13, never zero) and capped just below the kernel's
//! `0x7fffffff` µs "no sample" sentinel, so every product fits in 64 bits.
//! The kernel's ssthresh on loss (`cwnd/2`) and undo (H5) are the core's.
//!
//! **Packet-pair start-up** (`set_initial_window`): the default meaning —
//! `cwnd = ssthresh = segs`, congestion avoidance from the measured pipe;
//! Vegas then adjusts it by ±1 segment per round.
//!
//! This module also holds the pieces the Vegas family shares (YeAH reuses
//! them): the H13 per-round RTT aggregator `RttAggregator` (also used by
//! Veno) and `VegasState`, the kernel's `struct vegas` with its
//! `pkts_acked`, `set_state` and `cwnd_event` hooks.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::rate::SeqRound;
use crate::types::{AckSample, CaState, CwndEvent, PathInfo};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The kernel's "no sample" RTT value, µs (`0x7fffffff`), used as ∞.
pub(crate) const RTT_INF_US: u32 = 0x7fff_ffff;

/// H13 per-round RTT aggregator (Vegas, YeAH, Veno): every Karn-valid RTT
/// sample, plus 1 µs, updates the base RTT (lifetime minimum), the round
/// minimum and the sample count. RTTs are whole microseconds;
/// [`RTT_INF_US`] means "no sample".
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RttAggregator {
    /// Minimum of all samples since the last (re-)initialisation, µs (`baseRTT`).
    pub(crate) base_rtt_us: u32,
    /// Minimum of the samples since the last clear, µs (`minRTT`).
    pub(crate) round_min_us: u32,
    /// Samples since the last clear (`cntRTT`).
    pub(crate) cnt: u32,
}

impl RttAggregator {
    /// No samples yet.
    pub(crate) fn new() -> Self {
        RttAggregator {
            base_rtt_us: RTT_INF_US,
            round_min_us: RTT_INF_US,
            cnt: 0,
        }
    }

    /// Take one RTT sample: `v = rtt_us + 1` (never zero), capped below ∞.
    pub(crate) fn sample(&mut self, rtt: Duration) {
        let us = u32::try_from(rtt.as_micros()).unwrap_or(u32::MAX);
        let v = us.min(RTT_INF_US - 2) + 1;
        self.base_rtt_us = self.base_rtt_us.min(v);
        self.round_min_us = self.round_min_us.min(v);
        self.cnt = self.cnt.saturating_add(1);
    }

    /// Forget the round minimum only (Veno clears it after every ACK).
    pub(crate) fn clear_min(&mut self) {
        self.round_min_us = RTT_INF_US;
    }

    /// Start a new round: forget the round minimum and the sample count.
    pub(crate) fn clear_round(&mut self) {
        self.clear_min();
        self.cnt = 0;
    }

    /// Forget the base RTT (idle restart).
    pub(crate) fn forget_base(&mut self) {
        self.base_rtt_us = RTT_INF_US;
    }

    /// The base RTT as a duration, if any sample was taken since it was forgotten.
    pub(crate) fn base_rtt(&self) -> Option<Duration> {
        (self.base_rtt_us < RTT_INF_US).then(|| Duration::from_micros(self.base_rtt_us as u64))
    }
}

/// The kernel's `struct vegas` and the hooks Vegas and YeAH share
/// (`tcp_vegas_init`, `tcp_vegas_pkts_acked`, `tcp_vegas_state`,
/// `tcp_vegas_cwnd_event`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VegasState {
    /// H13 RTT samples.
    pub(crate) rtt: RttAggregator,
    /// H12 sequence-form round (`beg_snd_nxt`).
    pub(crate) round: SeqRound,
    /// `doing_vegas_now`: the delay rule is active (state Open).
    pub(crate) doing: bool,
}

impl VegasState {
    /// Zeroed state, before `init`.
    pub(crate) fn new() -> Self {
        VegasState {
            rtt: RttAggregator::new(),
            round: SeqRound::default(),
            doing: false,
        }
    }

    /// `tcp_vegas_init`: forget the base RTT, then enable.
    pub(crate) fn init(&mut self, path: &PathInfo) {
        self.rtt.forget_base();
        self.enable(path);
    }

    /// `vegas_enable`: a fresh round starting at `snd_nxt`.
    pub(crate) fn enable(&mut self, path: &PathInfo) {
        self.doing = true;
        self.round.beg_snd_nxt = path.snd_nxt;
        self.rtt.clear_round();
    }

    /// `tcp_vegas_pkts_acked`: H13 on the ACK's RTT sample, if it has one.
    pub(crate) fn on_packets_acked(&mut self, ack: &AckSample) {
        if let Some(rtt) = ack.rtt {
            self.rtt.sample(rtt);
        }
    }

    /// `tcp_vegas_state`: Open enables, every other state disables.
    pub(crate) fn on_state(&mut self, new: CaState, path: &PathInfo) {
        if new == CaState::Open {
            self.enable(path);
        } else {
            self.doing = false;
        }
    }

    /// `tcp_vegas_cwnd_event`: an idle restart is a full re-init (the base
    /// RTT is forgotten: the path may have changed while idle).
    pub(crate) fn on_event(&mut self, event: CwndEvent, path: &PathInfo) {
        if let CwndEvent::TxStart { .. } = event {
            self.init(path);
        }
    }

    /// H12: whether this ACK ends the round (`snd_una > beg_snd_nxt`); if
    /// so the next round begins at `snd_nxt`.
    pub(crate) fn end_of_round(&mut self, path: &PathInfo) -> bool {
        self.round.end_of_round(path.snd_una, path.snd_nxt)
    }

    /// Enough samples this round for the delay rule (kernel `cntRTT > 2`).
    pub(crate) fn enough_samples(&self, min_samples: u32) -> bool {
        self.rtt.cnt >= min_samples
    }
}

/// Keep a window within `[2, clamp]` (kernel: `< 2 → 2`, `> clamp → clamp`).
pub(crate) fn bound_window(cwnd: u32, clamp: u32) -> u32 {
    cwnd.max(2).min(clamp.max(1))
}

/// How Vegas estimates the backlog `diff` (cc-spec §3.5 "Diff formula").
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum DiffForm {
    /// Kernel: `floor(cwnd·(RTT − BaseRTT)/BaseRTT)` (default, deployed behaviour).
    #[default]
    Kernel,
    /// Paper: `(Expected − Actual)·BaseRTT = cwnd·(RTT − BaseRTT)/RTT`, real-valued.
    Paper,
}

/// Vegas settings (cc-spec §3.5).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct VegasConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// α: below this backlog (segments) cwnd grows by 1 per round.
    pub alpha_segs: u32,
    /// β: above this backlog (segments) cwnd shrinks by 1 per round.
    pub beta_segs: u32,
    /// γ: above this backlog (segments) slow start ends.
    pub gamma_segs: u32,
    /// RTT samples a round needs before the delay rule is used; rounds with
    /// fewer grow as NewReno (kernel `cntRTT <= 2`: probably delayed ACKs only).
    pub min_rtt_samples: u32,
    /// [PROJECT CHOICE] backlog formula: kernel (default) or paper (the spec
    /// recommends the switch; ns-3's integer-target form is not offered).
    pub diff_form: DiffForm,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig {
            core: CoreConfig::default(),
            alpha_segs: 2,
            beta_segs: 4,
            gamma_segs: 1,
            min_rtt_samples: 3,
            diff_form: DiffForm::Kernel,
        }
    }
}

impl VegasConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Vegas> {
        PolicyController::new(
            self.core.clone(),
            Vegas {
                alpha_segs: self.alpha_segs,
                beta_segs: self.beta_segs,
                gamma_segs: self.gamma_segs,
                min_rtt_samples: self.min_rtt_samples,
                diff_form: self.diff_form,
                state: VegasState::new(),
                last_diff: None,
            },
        )
    }
}

/// A backlog estimate in segments as an exact non-negative rational
/// `num/den` (`den ≥ 1`), so the paper form compares without rounding.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Backlog {
    num: u64,
    den: u64,
}

impl Backlog {
    fn gt(self, segs: u32) -> bool {
        self.num as u128 > segs as u128 * self.den as u128
    }
    fn lt(self, segs: u32) -> bool {
        (self.num as u128) < segs as u128 * self.den as u128
    }
    fn as_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

/// The Vegas policy.
#[derive(Clone, Debug)]
pub struct Vegas {
    alpha_segs: u32,
    beta_segs: u32,
    gamma_segs: u32,
    min_rtt_samples: u32,
    diff_form: DiffForm,
    /// Shared Vegas-family state.
    pub(crate) state: VegasState,
    last_diff: Option<Backlog>,
}

impl Vegas {
    /// The current backlog estimate `diff`, segments: the value computed at
    /// the last round end that had enough RTT samples (kernel form: the
    /// floored integer; paper form: real-valued). `None` before the first
    /// such round and after `init`.
    pub fn diff_segs(&self) -> Option<f64> {
        self.last_diff.map(Backlog::as_f64)
    }

    /// The base RTT (minimum sample + 1 µs since the last (re-)init), if any.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.state.rtt.base_rtt()
    }

    /// Whether the delay rule is active (`doing_vegas_now`: state Open).
    pub fn is_active(&self) -> bool {
        self.state.doing
    }

    /// The once-per-round adjustment with enough samples.
    fn adjust(&mut self, core: &mut Core, acked: u32) {
        let rtt = self.state.rtt.round_min_us.max(1) as u64;
        let base = self.state.rtt.base_rtt_us.max(1) as u64;
        let cwnd = core.cwnd as u64;
        let queue_delay = rtt.saturating_sub(base);
        // cwnd < 2^32 and RTTs < 2^31 µs: the products fit in u64.
        let target = cwnd * base / rtt;
        let diff = match self.diff_form {
            DiffForm::Kernel => Backlog {
                num: cwnd * queue_delay / base,
                den: 1,
            },
            DiffForm::Paper => Backlog {
                num: cwnd * queue_delay,
                den: rtt,
            },
        };
        self.last_diff = Some(diff);
        if diff.gt(self.gamma_segs) && core.in_slow_start() {
            // Going too fast: match the actual rate (+1 for truncation), leave slow start.
            let target = u32::try_from(target.saturating_add(1)).unwrap_or(u32::MAX);
            core.cwnd = core.cwnd.min(target);
            core.ssthresh = core.ssthresh.min(core.cwnd);
        } else if core.in_slow_start() {
            core.slow_start(acked);
        } else if diff.gt(self.beta_segs) {
            core.cwnd = core.cwnd.saturating_sub(1);
            core.ssthresh = core.ssthresh.min(core.cwnd);
        } else if diff.lt(self.alpha_segs) {
            core.cwnd = core.cwnd.saturating_add(1);
        }
        core.cwnd = bound_window(core.cwnd, core.cwnd_clamp);
        core.ssthresh = core.current_ssthresh();
    }
}

impl CcPolicy for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn init(&mut self, _core: &mut Core, path: &PathInfo) {
        self.state = VegasState::new();
        self.state.init(path);
        self.last_diff = None;
    }

    fn on_packets_acked(&mut self, _core: &mut Core, ack: &AckSample, _path: &PathInfo) {
        self.state.on_packets_acked(ack);
    }

    fn on_state(&mut self, _core: &mut Core, new: CaState, path: &PathInfo) {
        self.state.on_state(new, path);
    }

    fn on_event(&mut self, _core: &mut Core, event: CwndEvent, path: &PathInfo) {
        self.state.on_event(event, path);
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        if !self.state.doing {
            core.reno_cong_avoid(acked, path);
            return;
        }
        if self.state.end_of_round(path) {
            if self.state.enough_samples(self.min_rtt_samples) {
                self.adjust(core, acked);
            } else {
                core.reno_cong_avoid(acked, path);
            }
            self.state.rtt.clear_round();
        } else if core.in_slow_start() {
            // No congestion-avoidance growth inside a round: at most ±1 per round.
            core.slow_start(acked);
        }
    }
}

/// Test drivers shared by the Vegas-family test modules (Vegas, Veno, YeAH).
#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
mod tests;
