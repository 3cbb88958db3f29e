//! Algorithm policies and the adapter that turns a policy plus the shared
//! [`Core`] into a [`CongestionController`].
//!
//! A policy implements only the kernel-like hooks it overrides (cc-spec §2.4
//! `CcPolicy`); [`PolicyController`] runs the normative per-ACK order of
//! §2.3 and the state machine actions of §2.2 around them. Congestion ops are
//! kept apart from loss recovery (PRR lives in the core) as ns-3 does.

use crate::controller::CongestionController;
use crate::core::{Core, CoreConfig, RecoveryMode};
use crate::types::{
    AckSample, CaState, CcStats, CongestionEvent, CongestionKind, CongestionResponse, CwndEvent,
    EcnResponse, EcnSample, LinkHint, PathInfo, SendGate, StartupMeasurement, SSTHRESH_INF,
};
use crate::Time;
use std::time::Duration;

/// The hooks of one congestion-control algorithm. Every hook has the core's
/// default behaviour except `on_cong_avoid`.
pub trait CcPolicy: Send {
    /// Registry name.
    fn name(&self) -> &'static str;
    /// Initialise after the core set `cwnd = IW`, `ssthresh = ∞`.
    fn init(&mut self, _core: &mut Core, _path: &PathInfo) {}
    /// Every ACK that acknowledges data or carries an RTT sample, in every state (§2.3 step 2).
    fn on_packets_acked(&mut self, _core: &mut Core, _ack: &AckSample, _path: &PathInfo) {}
    /// Window growth on an ACK that may raise cwnd (§2.3 step 4, Open/Disorder/Loss).
    fn on_cong_avoid(&mut self, core: &mut Core, ack: &AckSample, acked: u32, path: &PathInfo);
    /// The new `ssthresh` at the start of an episode (called once per episode).
    fn ssthresh(&mut self, core: &Core, _path: &PathInfo) -> u32 {
        core.reno_ssthresh()
    }
    /// The window to restore when an episode is undone.
    fn undo_cwnd(&mut self, core: &Core) -> u32 {
        core.reno_undo()
    }
    /// The congestion state changed.
    fn on_state(&mut self, _core: &mut Core, _new: CaState, _path: &PathInfo) {}
    /// A window event happened.
    fn on_event(&mut self, _core: &mut Core, _event: CwndEvent, _path: &PathInfo) {}
    /// Whether the policy sets cwnd itself on every ACK (BBR).
    fn full_control(&self) -> bool {
        false
    }
    /// Full-control window update (§2.3 step 4 for BBR).
    fn on_cong_control(&mut self, _core: &mut Core, _ack: &AckSample, _path: &PathInfo) {}
    /// The policy's own pacing rate, bytes/s; `None` falls back to the core's H9 rule.
    fn pacing_rate(&self, _core: &Core, _path: &PathInfo) -> Option<u64> {
        None
    }
    /// Classify a congestion event before the core reacts (RTW-TCP). Default: reduce.
    fn classify_congestion(
        &mut self,
        _core: &mut Core,
        _event: &CongestionEvent,
        _path: &PathInfo,
    ) -> CongestionResponse {
        CongestionResponse::Reduce
    }
    /// Classify an RTO before the core reacts (RTW-TCP). Default: reduce.
    fn classify_rto(&mut self, _core: &mut Core, _path: &PathInfo) -> CongestionResponse {
        CongestionResponse::Reduce
    }
    /// A link-layer hint arrived.
    fn on_link_hint(&mut self, _core: &mut Core, _hint: &LinkHint, _path: &PathInfo) {}
    /// Whether sending is allowed.
    fn send_gate(&self, _core: &Core, _now: Time) -> SendGate {
        SendGate::Normal
    }
    /// Timer to re-arm after a held RTO.
    fn held_rto_timeout(&self, _core: &Core, _now: Time) -> Option<Duration> {
        None
    }
    /// A packet was sent.
    fn on_packet_sent(&mut self, _core: &mut Core, _path: &PathInfo, _bytes: u32) {}
    /// Start from a measured window of `segs` segments (packet-pair start-up).
    /// Default: `cwnd = segs`, `ssthresh = segs` (congestion avoidance).
    fn on_initial_window(&mut self, core: &mut Core, segs: u32, _path: &PathInfo) {
        core.set_cwnd(segs);
        core.ssthresh = core.cwnd;
    }
    /// The packet-pair start-up measured `m` (data may be in flight);
    /// `segs` is `max(measured window, cwnd)` in segments. Default: the
    /// same as [`on_initial_window`](Self::on_initial_window).
    fn on_startup_measurement(
        &mut self,
        core: &mut Core,
        segs: u32,
        _m: &StartupMeasurement,
        path: &PathInfo,
    ) {
        self.on_initial_window(core, segs, path);
    }
    /// The algorithm's mode name, for stats.
    fn mode(&self) -> Option<&'static str> {
        None
    }
    /// The algorithm's bandwidth estimate, bytes/s, for stats.
    fn bandwidth_estimate_bytes_per_sec(&self) -> Option<u64> {
        None
    }
    /// How the algorithm answers CE marks (classic by default).
    fn ecn_response(&self) -> EcnResponse {
        EcnResponse::Classic
    }
    /// ECN counts of one ACK (see [`CongestionController::on_ecn`]).
    fn on_ecn(&mut self, _core: &mut Core, _sample: &EcnSample, _path: &PathInfo) {}
    /// The pacer's burst limit (see [`CongestionController::max_pacing_burst`]).
    fn max_pacing_burst(&self) -> Option<Duration> {
        None
    }
}

/// A [`CongestionController`] made of the shared core and one policy.
#[derive(Clone, Debug)]
pub struct PolicyController<P> {
    core: Core,
    policy: P,
}

impl<P: CcPolicy> PolicyController<P> {
    /// A controller running `policy` on a core configured by `config`.
    pub fn new(config: CoreConfig, policy: P) -> Self {
        PolicyController {
            core: Core::new(config),
            policy,
        }
    }
    /// The shared window state (for tests and diagnostics).
    pub fn core(&self) -> &Core {
        &self.core
    }
    /// Mutable access to the shared window state (for tests that set up a vector).
    pub fn core_mut(&mut self) -> &mut Core {
        &mut self.core
    }
    /// The algorithm policy.
    pub fn policy(&self) -> &P {
        &self.policy
    }
    /// Mutable access to the policy (for tests that set up a vector).
    pub fn policy_mut(&mut self) -> &mut P {
        &mut self.policy
    }
    /// Core and policy together, for tests that call a policy hook directly.
    pub fn parts_mut(&mut self) -> (&mut Core, &mut P) {
        (&mut self.core, &mut self.policy)
    }

    fn set_state(&mut self, new: CaState, path: &PathInfo) {
        if self.core.ca_state != new {
            self.core.ca_state = new;
            self.policy.on_state(&mut self.core, new, path);
        }
    }

    /// Follow the transitions the connection makes without a dedicated call:
    /// Open ↔ Disorder, and Loss → Open/Disorder once the episode is over.
    fn sync_state(&mut self, path: &PathInfo) {
        let ours = self.core.ca_state;
        let theirs = path.ca_state;
        let silent = matches!(ours, CaState::Open | CaState::Disorder | CaState::Loss)
            && matches!(theirs, CaState::Open | CaState::Disorder);
        if silent && ours != theirs {
            if ours == CaState::Loss && path.snd_una < self.core.recover {
                return;
            }
            self.set_state(theirs, path);
        }
    }

    fn update_pacing(&mut self, path: &PathInfo) {
        self.core.pacing_rate = self
            .policy
            .pacing_rate(&self.core, path)
            .or_else(|| self.core.default_pacing_rate(path));
    }

    fn in_episode(&self, path: &PathInfo) -> bool {
        matches!(
            self.core.ca_state,
            CaState::Cwr | CaState::Recovery | CaState::Loss
        ) && path.snd_una < self.core.recover
    }

    /// Keep the window within `[1, clamp]` whatever a policy did.
    fn enforce_bounds(&mut self) {
        self.core.cwnd_clamp = self.core.cwnd_clamp.max(1);
        let c = self.core.cwnd;
        self.core.set_cwnd(c);
        self.core.ssthresh = self.core.ssthresh.max(1);
    }
}

impl<P: CcPolicy> CongestionController for PolicyController<P> {
    fn name(&self) -> &'static str {
        self.policy.name()
    }

    fn init(&mut self, path: &PathInfo) {
        self.core.reset(path);
        self.policy.init(&mut self.core, path);
        self.enforce_bounds();
        self.update_pacing(path);
    }

    fn set_initial_window(&mut self, window_bytes: u64, path: &PathInfo) {
        let mss = self.core.mss.max(1) as u64;
        let segs = window_bytes.div_ceil(mss).clamp(2, u32::MAX as u64) as u32;
        self.policy.on_initial_window(&mut self.core, segs, path);
        self.enforce_bounds();
        self.update_pacing(path);
    }

    fn on_startup_measurement(&mut self, m: &StartupMeasurement, path: &PathInfo) {
        let mss = self.core.mss.max(1) as u64;
        let segs = m
            .window_bytes
            .div_ceil(mss)
            .max(u64::from(self.core.cwnd))
            .clamp(2, u32::MAX as u64) as u32;
        // A measurement may raise the window, never lower ssthresh below
        // where slow start had it (infinite before the first loss): a
        // wrong estimate then costs at most one round trip — too low, and
        // slow start goes on from the larger of the two windows; too
        // high, and the first loss ends it as it would have anyway.
        let ssthresh_before = self.core.ssthresh;
        self.policy
            .on_startup_measurement(&mut self.core, segs, m, path);
        self.core.ssthresh = self.core.ssthresh.max(ssthresh_before);
        // A capped window is not the pipe: slow start continues up to the
        // pipe the pair measured.
        let pipe_segs = m.pipe_bytes.div_ceil(mss).min(u64::from(SSTHRESH_INF)) as u32;
        if pipe_segs > self.core.cwnd {
            self.core.ssthresh = self.core.ssthresh.max(pipe_segs);
        }
        self.enforce_bounds();
        self.update_pacing(path);
    }

    fn on_packet_sent(&mut self, path: &PathInfo, bytes: u32) {
        if matches!(self.core.ca_state, CaState::Cwr | CaState::Recovery) && !self.core.held {
            self.core.prr_out = self.core.prr_out.saturating_add(1);
        }
        self.policy.on_packet_sent(&mut self.core, path, bytes);
    }

    fn on_ack(&mut self, ack: &AckSample, path: &PathInfo) {
        self.sync_state(path);
        // §2.3 step 2.
        if ack.acked_segs > 0 || ack.rtt.is_some() {
            self.policy.on_packets_acked(&mut self.core, ack, path);
        }
        // §2.3 step 4.
        if self.policy.full_control() {
            self.policy.on_cong_control(&mut self.core, ack, path);
        } else if matches!(self.core.ca_state, CaState::Cwr | CaState::Recovery) {
            if !self.core.held {
                match self.core.config.recovery_mode {
                    RecoveryMode::Prr => self.core.prr_step(ack, path),
                    RecoveryMode::ClassicNewReno => self.core.classic_recovery_step(ack),
                }
            }
        } else if ack.una_advanced {
            // Kernel `tcp_may_raise_cwnd`: only an ACK that advanced snd_una grows the window.
            self.policy
                .on_cong_avoid(&mut self.core, ack, ack.acked_segs, path);
        }
        self.enforce_bounds();
        // §2.3 step 5.
        self.update_pacing(path);
    }

    fn on_congestion_event(
        &mut self,
        event: &CongestionEvent,
        path: &PathInfo,
    ) -> CongestionResponse {
        if event.is_persistent {
            return self.on_rto(path);
        }
        if self.in_episode(path) {
            // One reduction per flight (RFC 6582): this loss belongs to the current episode.
            return CongestionResponse::Reduce;
        }
        let response = self.policy.classify_congestion(&mut self.core, event, path);
        self.core.recover = path.snd_nxt;
        let new_state = match event.kind {
            CongestionKind::Loss => CaState::Recovery,
            CongestionKind::Ecn => CaState::Cwr,
        };
        match response {
            CongestionResponse::Reduce => {
                self.core.prior_cwnd = self.core.cwnd;
                self.core.prior_ssthresh = self.core.current_ssthresh();
                let ssthresh = self.policy.ssthresh(&self.core, path);
                self.core.ssthresh = ssthresh.max(1);
                self.core.prr_init();
                self.core.cwnd_cnt = 0;
                self.core.held = false;
                self.core.undone = false;
                self.core.undo_available = true;
                if event.kind == CongestionKind::Loss
                    && self.core.config.recovery_mode == RecoveryMode::ClassicNewReno
                {
                    let cwnd = self.core.ssthresh.saturating_add(3);
                    self.core.set_cwnd(cwnd);
                }
                self.set_state(new_state, path);
                if event.kind == CongestionKind::Ecn {
                    self.policy.on_event(&mut self.core, CwndEvent::EcnCe, path);
                }
            }
            CongestionResponse::Hold => {
                self.core.held = true;
                self.core.undone = false;
                self.set_state(new_state, path);
            }
        }
        self.enforce_bounds();
        self.update_pacing(path);
        response
    }

    fn on_recovery_exit(&mut self, path: &PathInfo) {
        if !matches!(self.core.ca_state, CaState::Cwr | CaState::Recovery) {
            return;
        }
        if !self.core.held {
            // Full-control policies (BBR) own cwnd: the kernel skips this step for them.
            if !self.policy.full_control() && !self.core.undone && self.core.ssthresh < SSTHRESH_INF
            {
                let s = self.core.ssthresh;
                self.core.set_cwnd(s);
            }
            self.policy
                .on_event(&mut self.core, CwndEvent::CompleteCwr, path);
        }
        self.core.held = false;
        self.set_state(CaState::Open, path);
        self.enforce_bounds();
        self.update_pacing(path);
    }

    fn on_rto(&mut self, path: &PathInfo) -> CongestionResponse {
        let response = self.policy.classify_rto(&mut self.core, path);
        if response == CongestionResponse::Hold {
            self.enforce_bounds();
            return response;
        }
        let state = self.core.ca_state;
        let new_episode = state <= CaState::Disorder
            || path.snd_una >= self.core.recover
            || (state == CaState::Loss && self.core.loss_rtos == 0)
            || self.core.held;
        if new_episode {
            self.core.prior_ssthresh = self.core.current_ssthresh();
            self.core.prior_cwnd = self.core.cwnd;
            let ssthresh = self.policy.ssthresh(&self.core, path);
            self.core.ssthresh = ssthresh.max(1);
            self.policy.on_event(&mut self.core, CwndEvent::Loss, path);
            self.core.undo_available = true;
            self.core.loss_rtos = 0;
        }
        self.core.loss_rtos = self.core.loss_rtos.saturating_add(1);
        self.core.set_cwnd(path.in_flight.saturating_add(1));
        self.core.cwnd_cnt = 0;
        self.core.recover = path.snd_nxt;
        self.core.held = false;
        self.core.undone = false;
        self.set_state(CaState::Loss, path);
        self.enforce_bounds();
        self.update_pacing(path);
        response
    }

    fn on_spurious_congestion(&mut self, path: &PathInfo) {
        if !self.core.undo_available {
            return;
        }
        let cwnd = self.policy.undo_cwnd(&self.core);
        self.core.set_cwnd(cwnd);
        self.core.ssthresh = self.core.ssthresh.max(self.core.prior_ssthresh);
        self.core.undone = true;
        self.core.undo_available = false;
        self.core.held = false;
        self.core.loss_rtos = 0;
        self.set_state(CaState::Open, path);
        self.enforce_bounds();
        self.update_pacing(path);
    }

    fn on_idle_restart(&mut self, path: &PathInfo, idle: Duration) {
        self.policy
            .on_event(&mut self.core, CwndEvent::TxStart { idle }, path);
        self.enforce_bounds();
        self.update_pacing(path);
    }

    fn on_link_hint(&mut self, hint: &LinkHint, path: &PathInfo) {
        self.policy.on_link_hint(&mut self.core, hint, path);
        self.enforce_bounds();
    }

    fn cwnd_bytes(&self) -> u64 {
        self.core.cwnd as u64 * self.core.mss as u64
    }

    fn ssthresh_bytes(&self) -> Option<u64> {
        (self.core.ssthresh < SSTHRESH_INF)
            .then(|| self.core.ssthresh as u64 * self.core.mss as u64)
    }

    fn pacing_rate_bytes_per_sec(&self) -> Option<u64> {
        self.core.pacing_rate
    }

    fn in_slow_start(&self) -> bool {
        self.core.in_slow_start()
    }

    fn send_gate(&self, now: Time) -> SendGate {
        self.policy.send_gate(&self.core, now)
    }

    fn held_rto_timeout(&self, now: Time) -> Option<Duration> {
        self.policy.held_rto_timeout(&self.core, now)
    }

    fn stats(&self) -> CcStats {
        CcStats {
            cwnd_bytes: self.cwnd_bytes(),
            ssthresh_bytes: self.ssthresh_bytes(),
            cwnd_clamp_bytes: self.core.cwnd_clamp as u64 * self.core.mss as u64,
            pacing_rate_bytes_per_sec: self.core.pacing_rate,
            ca_state: self.core.ca_state,
            mode: self.policy.mode(),
            bandwidth_estimate_bytes_per_sec: self.policy.bandwidth_estimate_bytes_per_sec(),
        }
    }

    fn ecn_response(&self) -> EcnResponse {
        self.policy.ecn_response()
    }

    fn on_ecn(&mut self, sample: &EcnSample, path: &PathInfo) {
        self.policy.on_ecn(&mut self.core, sample, path);
        self.enforce_bounds();
    }

    fn max_pacing_burst(&self) -> Option<Duration> {
        self.policy.max_pacing_burst()
    }
}
