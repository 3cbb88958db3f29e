//! The congestion-state machine of cc-spec §2.2: the glue between the
//! connection's loss recovery and its [`CongestionController`].
//!
//! The connection owns the state (`Open`, `Disorder`, `Cwr`, `Recovery`,
//! `Loss`) and the recovery point `recover`; the controller owns the
//! window. This module decides *when* to call the controller, following
//! the controller lab (`peregrine_cc::lab`):
//!
//! * a loss detected while `Open`/`Disorder` starts a recovery episode:
//!   `recover = snd_nxt` and one [`CongestionController::on_congestion_event`];
//!   further losses of the same flight belong to that episode (one reduction
//!   per flight, RFC 6582); the episode ends when `snd_una ≥ recover`
//!   ([`CongestionController::on_recovery_exit`]);
//! * an ECN echo while `Open`/`Disorder` starts a `Cwr` episode the same way;
//! * a retransmission timeout moves to `Loss` ([`CongestionController::on_rto`]);
//! * a `Hold` answer (RTW-TCP) keeps the window: the data is still
//!   retransmitted, an RTO is not backed off and its timer is re-armed at
//!   the controller's `held_rto_timeout`;
//! * when every packet declared lost in the current episode is later
//!   acknowledged, the episode was spurious and is undone
//!   ([`CongestionController::on_spurious_congestion`]).
//!
//! It also runs the delivery-rate sampler and round counter (cc-spec H11,
//! H12), tracks whether the sender is cwnd-limited (H3) or
//! application-limited, enforces the pacing rate through a token bucket
//! with burst credit ([`super::pacer`]), and honours the
//! controller's [`SendGate`] including its one-probe-at-a-time rule.

use super::pacer::{PaceInputs, Pacer};
use super::rtt::RttEstimator;
use peregrine_cc::rate::{DeliveryRateSampler, PacketRateInfo, RoundCounter};
use peregrine_cc::{
    AckSample, CaState, CcStats, CongestionController, CongestionEvent, CongestionKind,
    CongestionResponse, LinkHint, PathInfo, SendGate, StartupMeasurement, Time,
};
use std::collections::BTreeSet;
use std::time::Duration;

/// Most lost packets one episode remembers for the spurious-loss undo.
const EPISODE_MEMORY: usize = 1024;

/// Whether a packet of a given size may leave now.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Allowance {
    /// Yes.
    Send,
    /// Only one probe, and this is its moment (a `SendGate::ProbeOnly` gate).
    Probe,
    /// Not before this instant (pacing, or the gate's next probe).
    Wait(Time),
    /// Not until an acknowledgement or a timer changes things (window full,
    /// or the gate's probe already sent).
    Blocked,
}

/// The connection's view of the path, passed in to build [`PathInfo`].
#[derive(Copy, Clone, Debug)]
pub struct PathCtx<'a> {
    /// The current time.
    pub now: Time,
    /// The RTT estimator.
    pub rtt: &'a RttEstimator,
    /// Lowest outstanding packet number.
    pub snd_una: u64,
    /// Next packet number.
    pub snd_nxt: u64,
    /// Bytes of DATA packets in flight.
    pub bytes_in_flight: u64,
    /// Largest packet number acknowledged.
    pub largest_acked: Option<u64>,
}

/// Counters of the state machine's decisions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CongestionCounters {
    /// Loss episodes started (one per flight).
    pub loss_episodes: u64,
    /// ECN (`Cwr`) episodes started.
    pub ecn_episodes: u64,
    /// Episodes and RTOs the controller answered with `Reduce`.
    pub reductions: u64,
    /// Episodes and RTOs the controller answered with `Hold`.
    pub holds: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Episodes undone as spurious.
    pub undos: u64,
    /// Recovery/Cwr episodes that ended at `recover`.
    pub recovery_exits: u64,
    /// Idle restarts handed to the controller (first send after at least
    /// one RTO with nothing in flight).
    pub idle_restarts: u64,
}

/// The state machine and the controller it drives.
pub struct Congestion {
    cc: Box<dyn CongestionController>,
    mss: u32,
    state: CaState,
    recover: u64,
    sampler: DeliveryRateSampler,
    rounds: RoundCounter,
    round_end_pn: u64,
    max_in_flight_round: u32,
    max_in_flight_prev: u32,
    pacer: Pacer,
    /// One-packet pacing releases (pacer.rs, "Fine pacing").
    fine_pacing: bool,
    /// A controller that does not pace is paced at the packet pair's
    /// bandwidth until this instant (one RTT after the measurement), so
    /// the measured window is spread over the RTT instead of sent in one
    /// burst: `(rate_bytes_per_sec, until)`.
    startup_pace: Option<(u64, Time)>,
    probe_sent_for: Option<Time>,
    last_send: Option<Time>,
    ack_carry: u64,
    app_limited: bool,
    episode_lost: BTreeSet<u64>,
    episode_overflow: bool,
    episode_undoable: bool,
    counters: CongestionCounters,
}

impl std::fmt::Debug for Congestion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Congestion")
            .field("controller", &self.cc.name())
            .field("state", &self.state)
            .field("recover", &self.recover)
            .field("cwnd_bytes", &self.cc.cwnd_bytes())
            .finish_non_exhaustive()
    }
}

impl Congestion {
    /// A state machine around `cc` (not yet initialised) for `mss`-byte packets.
    pub fn new(cc: Box<dyn CongestionController>, mss: u32) -> Congestion {
        Congestion {
            cc,
            mss: mss.max(1),
            state: CaState::Open,
            recover: 0,
            sampler: DeliveryRateSampler::new(),
            rounds: RoundCounter::default(),
            round_end_pn: 0,
            max_in_flight_round: 0,
            max_in_flight_prev: 0,
            pacer: Pacer::new(),
            fine_pacing: false,
            startup_pace: None,
            probe_sent_for: None,
            last_send: None,
            ack_carry: 0,
            app_limited: false,
            episode_lost: BTreeSet::new(),
            episode_overflow: false,
            episode_undoable: false,
            counters: CongestionCounters::default(),
        }
    }

    /// The controller's registry name.
    pub fn controller_name(&self) -> &'static str {
        self.cc.name()
    }
    /// The congestion state.
    pub fn state(&self) -> CaState {
        self.state
    }
    /// The recovery point.
    pub fn recover(&self) -> u64 {
        self.recover
    }
    /// The decision counters.
    pub fn counters(&self) -> &CongestionCounters {
        &self.counters
    }
    /// The controller's snapshot.
    pub fn cc_stats(&self) -> CcStats {
        self.cc.stats()
    }
    /// Congestion window, bytes.
    pub fn cwnd_bytes(&self) -> u64 {
        self.cc.cwnd_bytes()
    }
    /// Whether the controller holds its window at `now`: its send gate
    /// lets nothing but probes leave (RTW-TCP riding out a predicted
    /// outage). O(1).
    pub fn window_held(&self, now: Time) -> bool {
        matches!(self.cc.send_gate(now), SendGate::ProbeOnly { .. })
    }
    /// Packet-timed rounds completed (H12).
    pub fn round_count(&self) -> u64 {
        self.rounds.round_count
    }
    /// Segments delivered so far (H11).
    pub fn delivered(&self) -> u64 {
        self.sampler.delivered()
    }

    /// The segment size the controller counts its window in, bytes: set
    /// before [`init`](Self::init) (the controller reads it once there).
    /// O(1).
    pub fn set_mss(&mut self, mss: u32) {
        self.mss = mss.max(1);
    }

    /// Segments for `bytes` of packets, rounded up.
    pub fn segs(&self, bytes: u64) -> u32 {
        u32::try_from(bytes.div_ceil(u64::from(self.mss))).unwrap_or(u32::MAX)
    }

    /// The [`PathInfo`] the controller is shown.
    pub fn path(&self, ctx: &PathCtx<'_>) -> PathInfo {
        let max_in_flight = self.max_in_flight_round.max(self.max_in_flight_prev);
        let cwnd = self.segs(self.cc.cwnd_bytes()).max(1);
        let cwnd_limited = max_in_flight >= cwnd
            || (self.cc.in_slow_start() && cwnd < max_in_flight.saturating_mul(2));
        PathInfo {
            now: ctx.now,
            mss: self.mss,
            srtt: ctx.rtt.srtt(),
            rttvar: ctx.rtt.rttvar(),
            rto: ctx.rtt.rto(),
            min_rtt: ctx.rtt.min_rtt(),
            latest_rtt: ctx.rtt.latest_rtt(),
            snd_una: ctx.snd_una,
            snd_nxt: ctx.snd_nxt,
            delivered: self.sampler.delivered(),
            in_flight: self.segs(ctx.bytes_in_flight),
            cwnd_limited,
            ca_state: self.state,
            app_limited: self.app_limited,
        }
    }

    /// Start the controller (connection established).
    pub fn init(&mut self, ctx: &PathCtx<'_>) {
        let path = self.path(ctx);
        self.cc.init(&path);
    }

    /// Hand the controller a measured initial window (packet-pair start-up).
    pub fn set_initial_window(&mut self, window_bytes: u64, ctx: &PathCtx<'_>) {
        let path = self.path(ctx);
        self.cc.set_initial_window(window_bytes, &path);
    }

    /// The packet pair measured the path (data may be in flight): the
    /// controller leaves start-up with its state set from it
    /// ([`CongestionController::on_startup_measurement`]); a controller
    /// that does not pace is paced at the measured bandwidth for one RTT,
    /// so the larger window goes out spread over the RTT, not as a burst.
    pub fn on_startup_measurement(&mut self, m: &StartupMeasurement, ctx: &PathCtx<'_>) {
        let path = self.path(ctx);
        self.cc.on_startup_measurement(m, &path);
        if self.cc.pacing_rate_bytes_per_sec().is_none() {
            self.startup_pace = Some((m.bandwidth_bytes_per_sec, ctx.now + m.rtt));
        }
    }

    /// Replace the controller mid-connection; the new one starts from its
    /// initial window in the current state.
    pub fn replace_controller(&mut self, cc: Box<dyn CongestionController>, ctx: &PathCtx<'_>) {
        self.cc = cc;
        self.state = CaState::Open;
        self.episode_lost.clear();
        self.episode_undoable = false;
        let path = self.path(ctx);
        self.cc.init(&path);
    }

    /// Forward a link-layer hint.
    pub fn on_link_hint(&mut self, hint: &LinkHint, ctx: &PathCtx<'_>) {
        let path = self.path(ctx);
        self.cc.on_link_hint(hint, &path);
    }

    /// Whether a packet of `size` bytes may be sent now.
    pub fn allowance(&self, now: Time, size: u64, bytes_in_flight: u64) -> Allowance {
        match self.cc.send_gate(now) {
            SendGate::ProbeOnly { next_probe_at } => {
                if now < next_probe_at {
                    Allowance::Wait(next_probe_at)
                } else if self.probe_sent_for != Some(next_probe_at) {
                    Allowance::Probe
                } else {
                    Allowance::Blocked
                }
            }
            SendGate::Normal => {
                if bytes_in_flight > 0 && bytes_in_flight + size > self.cc.cwnd_bytes() {
                    return Allowance::Blocked;
                }
                // Paced: the bucket decides (a burst while it holds
                // tokens, then a wait of at least 1 ms at the rate).
                match self
                    .pace_inputs(now)
                    .and_then(|p| self.pacer.next_release(now, size, &p))
                {
                    Some(t) => Allowance::Wait(t),
                    None => Allowance::Send,
                }
            }
        }
    }

    /// What the pacer works from at `now`, when the controller paces (or
    /// the packet pair's window is being paced).
    fn pace_inputs(&self, now: Time) -> Option<PaceInputs> {
        let rate = self
            .cc
            .pacing_rate_bytes_per_sec()
            .filter(|r| *r > 0)
            .or_else(|| {
                self.startup_pace
                    .filter(|(r, until)| *r > 0 && now < *until)
                    .map(|(r, _)| r)
            })?;
        Some(PaceInputs {
            rate_bytes_per_sec: rate,
            cwnd_bytes: self.cc.cwnd_bytes(),
            mss_bytes: u64::from(self.mss),
            fine: self.fine_pacing,
            max_burst: self.cc.max_pacing_burst(),
        })
    }

    /// Pace in one-packet releases (`true`) or 1 ms bursts (pacer.rs).
    pub fn set_fine_pacing(&mut self, fine: bool) {
        self.fine_pacing = fine;
    }

    /// The sender had room to send but no data.
    pub fn on_app_limited(&mut self, bytes_in_flight: u64) {
        if !self.app_limited {
            self.app_limited = true;
            self.sampler
                .on_app_limited(u64::from(self.segs(bytes_in_flight)));
        }
    }

    /// The window stopped a send: the sender is not application-limited.
    pub fn on_cwnd_limited(&mut self) {
        self.app_limited = false;
    }

    /// Before a DATA packet leaves: idle restart (cc-spec: first send after
    /// at least one RTO with nothing in flight) and the sampler's snapshot.
    /// `ctx` is the state before the packet is added.
    pub fn before_send(&mut self, ctx: &PathCtx<'_>) -> PacketRateInfo {
        let nothing_in_flight = ctx.bytes_in_flight == 0;
        if let Some(last) = self.last_send {
            let idle = ctx.now.saturating_duration_since(last);
            if nothing_in_flight && idle >= ctx.rtt.rto() {
                let path = self.path(ctx);
                self.cc.on_idle_restart(&path, idle);
                self.counters.idle_restarts += 1;
            }
        }
        self.sampler.on_packet_sent(ctx.now, nothing_in_flight)
    }

    /// The sender was held by a closed peer window for `paused` (a
    /// handover, not idleness): move the last send forward by that much
    /// (never past `now`), so the pause does not count toward the
    /// idle-restart rule.
    pub fn exclude_idle(&mut self, now: Time, paused: Duration) {
        if let Some(last) = self.last_send {
            self.last_send = Some((last + paused).min(now));
        }
    }

    /// After a DATA packet of `size` bytes left (`ctx` includes it);
    /// `probe` says it was the send gate's probe.
    pub fn after_send(&mut self, ctx: &PathCtx<'_>, size: u32, probe: bool) {
        let now = ctx.now;
        self.last_send = Some(now);
        // Sending again: application-limited only if the sender runs out
        // of data once more (then `on_app_limited` marks the sampler again).
        self.app_limited = false;
        if probe {
            if let SendGate::ProbeOnly { next_probe_at } = self.cc.send_gate(now) {
                self.probe_sent_for = Some(next_probe_at);
            }
        }
        let in_flight = self.segs(ctx.bytes_in_flight);
        self.max_in_flight_round = self.max_in_flight_round.max(in_flight);
        if let Some(p) = self.pace_inputs(now) {
            self.pacer.on_sent(now, u64::from(size), &p);
        }
        let path = self.path(ctx);
        self.cc.on_packet_sent(&path, size);
    }

    /// The delivery-rate sampler, for the per-ACK bookkeeping in `recovery`.
    pub(crate) fn sampler_mut(&mut self) -> &mut DeliveryRateSampler {
        &mut self.sampler
    }

    /// Convert newly acknowledged bytes into segments, keeping the carry
    /// (cc-spec §1).
    pub fn acked_segs(&mut self, acked_bytes: u64) -> u32 {
        let total = acked_bytes + self.ack_carry;
        let mss = u64::from(self.mss);
        self.ack_carry = total % mss;
        u32::try_from(total / mss).unwrap_or(u32::MAX)
    }

    /// End-of-round bookkeeping for the cwnd-limited test and H12, given the
    /// largest packet this ACK newly acknowledged and the rate sample.
    pub fn on_round_progress(
        &mut self,
        largest_newly_acked: u64,
        ctx: &PathCtx<'_>,
        prior_delivered: u64,
    ) {
        if largest_newly_acked >= self.round_end_pn {
            self.round_end_pn = ctx.snd_nxt;
            self.max_in_flight_prev = self.max_in_flight_round;
            self.max_in_flight_round = self.segs(ctx.bytes_in_flight);
        }
        let delivered = self.sampler.delivered();
        self.rounds.update(prior_delivered, delivered);
    }

    /// cc-spec §2.2 after an ACK or NACK: recovery exit, a new loss or ECN
    /// episode, or the Open/Disorder distinction. `lost` are the packet
    /// numbers this event newly declared lost, `lost_sent_at` when the
    /// newest of them was sent.
    pub fn update_state(
        &mut self,
        ctx: &PathCtx<'_>,
        lost: &[u64],
        lost_sent_at: Option<Time>,
        ecn_echo: bool,
    ) {
        match self.state {
            CaState::Recovery | CaState::Cwr if ctx.snd_una >= self.recover => {
                self.state = CaState::Open;
                self.counters.recovery_exits += 1;
                let path = self.path(ctx);
                self.cc.on_recovery_exit(&path);
            }
            CaState::Loss if ctx.snd_una >= self.recover => self.state = CaState::Open,
            _ => {}
        }
        // Losses of packets sent before `recover` belong to the episode that
        // set it, even when this same ACK ended it (RFC 6582: one reduction
        // per flight).
        let new_flight = lost.iter().any(|pn| *pn >= self.recover);
        if !lost.is_empty() {
            if self.state <= CaState::Disorder && new_flight {
                self.start_episode(ctx, CongestionKind::Loss, lost, lost_sent_at);
            } else {
                self.remember_episode_losses(lost);
            }
        } else if ecn_echo && self.state <= CaState::Disorder {
            self.start_episode(ctx, CongestionKind::Ecn, &[], None);
        } else if self.state <= CaState::Disorder {
            let holes = ctx.largest_acked.is_some_and(|l| ctx.snd_una < l);
            self.state = if holes {
                CaState::Disorder
            } else {
                CaState::Open
            };
        }
    }

    fn remember_episode_losses(&mut self, lost: &[u64]) {
        for pn in lost {
            if self.episode_lost.len() >= EPISODE_MEMORY {
                self.episode_overflow = true;
                break;
            }
            self.episode_lost.insert(*pn);
        }
    }

    fn start_episode(
        &mut self,
        ctx: &PathCtx<'_>,
        kind: CongestionKind,
        lost: &[u64],
        lost_sent_at: Option<Time>,
    ) {
        self.recover = ctx.snd_nxt;
        self.state = match kind {
            CongestionKind::Loss => CaState::Recovery,
            CongestionKind::Ecn => CaState::Cwr,
        };
        match kind {
            CongestionKind::Loss => self.counters.loss_episodes += 1,
            CongestionKind::Ecn => self.counters.ecn_episodes += 1,
        }
        let event = CongestionEvent {
            kind,
            now: ctx.now,
            is_persistent: false,
            lost_segs: u32::try_from(lost.len()).unwrap_or(u32::MAX),
            in_flight: self.segs(ctx.bytes_in_flight),
            lost_sent_at,
        };
        let path = self.path(ctx);
        let response = self.cc.on_congestion_event(&event, &path);
        self.count_response(response);
        self.episode_lost.clear();
        self.episode_overflow = false;
        self.episode_undoable =
            kind == CongestionKind::Loss && response == CongestionResponse::Reduce;
        self.remember_episode_losses(lost);
    }

    fn count_response(&mut self, response: CongestionResponse) {
        match response {
            CongestionResponse::Reduce => self.counters.reductions += 1,
            CongestionResponse::Hold => self.counters.holds += 1,
        }
    }

    /// The retransmission timer fired; the caller already declared `lost`
    /// lost (`ctx` reflects that). Returns the controller's answer.
    pub fn on_rto(&mut self, ctx: &PathCtx<'_>, lost: &[u64]) -> CongestionResponse {
        self.counters.rtos += 1;
        let path = self.path(ctx);
        let response = self.cc.on_rto(&path);
        self.count_response(response);
        if response == CongestionResponse::Reduce {
            self.state = CaState::Loss;
            self.recover = ctx.snd_nxt;
            self.episode_lost.clear();
            self.episode_overflow = false;
            self.episode_undoable = true;
            self.remember_episode_losses(lost);
        } else {
            self.remember_episode_losses(lost);
        }
        response
    }

    /// Packets declared lost were acknowledged after all. If that clears
    /// every loss of the current episode, undo it. Returns whether it did.
    pub fn on_spurious(&mut self, ctx: &PathCtx<'_>, pns: &[u64]) -> bool {
        for pn in pns {
            self.episode_lost.remove(pn);
        }
        let undo = self.episode_undoable
            && !self.episode_overflow
            && self.episode_lost.is_empty()
            && matches!(self.state, CaState::Recovery | CaState::Loss);
        if undo {
            self.episode_undoable = false;
            self.counters.undos += 1;
            self.state = CaState::Open;
            let path = self.path(ctx);
            self.cc.on_spurious_congestion(&path);
        }
        undo
    }

    /// How the controller answers CE (which ECT the connection sends). O(1).
    pub fn ecn_response(&self) -> peregrine_cc::EcnResponse {
        self.cc.ecn_response()
    }

    /// Hand the controller an ACK's validated ECN counts (before the ACK's
    /// state update and `on_ack`). O(1).
    pub fn on_ecn(&mut self, sample: &peregrine_cc::EcnSample, ctx: &PathCtx<'_>) {
        let path = self.path(ctx);
        self.cc.on_ecn(sample, &path);
    }

    /// Hand the controller one processed ACK (cc-spec §2.3 steps 2 and 4).
    pub fn on_ack(&mut self, sample: &AckSample, ctx: &PathCtx<'_>) {
        let path = self.path(ctx);
        self.cc.on_ack(sample, &path);
    }

    /// After a held RTO: the controller's own re-arm delay, if any.
    pub fn held_rto_timeout(&self, now: Time) -> Option<Duration> {
        self.cc.held_rto_timeout(now)
    }
}

#[cfg(test)]
mod idle_tests {
    use super::*;
    use peregrine_cc::CcConfig;

    #[test]
    fn handover_pause_is_taken_out_of_the_idle_time() {
        let cc = CcConfig::from_name("cubic").expect("registered").build();
        let mut c = Congestion::new(cc, 1200);
        // Nothing sent yet: nothing to move.
        c.exclude_idle(Time::from_millis(10), Duration::from_millis(5));
        assert_eq!(c.last_send, None);
        c.last_send = Some(Time::from_millis(100));
        // Paused 2 s of the 2.05 s since the last send: 50 ms idle remain.
        c.exclude_idle(Time::from_millis(2_150), Duration::from_secs(2));
        assert_eq!(c.last_send, Some(Time::from_millis(2_100)));
        // Never past now.
        c.exclude_idle(Time::from_millis(2_200), Duration::from_secs(5));
        assert_eq!(c.last_send, Some(Time::from_millis(2_200)));
    }
}
