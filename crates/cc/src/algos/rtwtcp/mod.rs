//! RTW-TCP, Real-Time Wireless TCP for mmWave connected vehicles (cc-spec
//! §3.16; seed 004 §3.2.5, Freeze-TCP, Veno's loss classifier).
//!
//! For vehicles on millimetre-wave links, where most losses come from
//! blockage, deafness, beam misalignment and handover rather than from
//! queues. Without losses RTW-TCP *is* CUBIC (it wraps the [`Cubic`]
//! policy and delegates every hook).
//!
//! **Seed 004 §3.2.5, as written (the default since issue 39).** On a loss
//! the sender asks the link layer: if it predicts a *short* blockage (or
//! another outage) — one that ends within the RTO — and the lost packet was
//! sent into that outage, the window is held (`Hold`: retransmit only);
//! if it predicts a long one, or predicts nothing, CUBIC reduces. "The
//! congestion response stays CUBIC's": a loss with no prediction is a
//! congestion signal, so with perfect hints a queue overflow is never
//! held. A loss is *attributed* to a hint only if the lost packet was sent
//! between the outage's start (less half the minimum RTT, the packet's
//! way to the radio link) and its predicted end
//! ([`CongestionEvent::lost_sent_at`]); a hint merely still fresh when a
//! queue overflows does not excuse it. An RTO inside a predicted short
//! outage is held (the seed's "prevents timeouts"): window, ssthresh and
//! RTO kept until the predicted end.
//!
//! **Extensions, off by default** (issue 11's design, kept for experiments
//! as [`RtwTcpConfig::with_extensions`]): Veno's backlog classifier for
//! losses without a hint (`hintless_classifier`), which held losses it
//! judged random — under a full queue after an outage it judged many
//! congestion losses random, the cause of RTW-TCP's 10–25× CUBIC's RTT in
//! `reproduce mmwave-cvn` —, a pro-active Freeze-TCP stop on a hint
//! (`freeze_on_hint`), a freeze on a short-outage loss (`freeze_on_loss`),
//! and the after-outage grace (`thaw_grace_srtts`).
//!
//! **Parameters** ([`RtwTcpConfig`], all [PROJECT CHOICE]s of the spec):
//! hint lifetime `max(2·SRTT, 200 ms)`; default outage durations
//! (beam misalignment 20 ms, deafness 20 ms, handover 50 ms); blockage
//! length `L_block = 5 m` divided by the speed (at least 1 m/s); `cqi_good =
//! 7`; guard SRTT after the predicted end; Veno threshold 3 segments;
//! random-verdict spacing 8·SRTT; first probe interval SRTT, doubling.
//!
//! **Further [PROJECT CHOICE]s.** (1) `freeze_on_hint` (default on): a
//! valid short-outage hint freezes pro-actively, before any loss
//! (Freeze-TCP: stop sending into a dead link); ACKs arriving before the
//! predicted outage end acknowledge pre-outage packets and do not end such a
//! freeze. (2) Wherever the spec says SRTT and none is known yet, the latest
//! RTT sample is used, else the RTO (the most recent estimate of the path).
//! (3) The fallback classifier answers Congestive when no RTT has been
//! measured (no evidence of randomness: be safe). (4) A blockage hint
//! without duration and speed (T = ∞) is valid only for the hint lifetime,
//! not forever (else one hint would classify every later loss). (5) An ACK
//! processed at the very instant a freeze began (the ACK that revealed the
//! loss) does not end it, whichever order the connection reports them in.
//! (6) An ECN mark at any time, or a loss while frozen at or after the
//! deadline, ends the freeze and reduces (a hint never masks ECN; a failed
//! prediction is treated like the spec's RTO at the deadline). (7) While
//! frozen the window does not grow (no ACK clock tells anything about the
//! path); leaving restores the saved values exactly. (8) Probe intervals are
//! at least 1 ms (no probe storm when SRTT is zero). (9) `thaw_grace_srtts`
//! (2): for two SRTTs after an ACK or a CongestionFree hint ended a freeze,
//! losses are outage after-effects and are held: packets sent into the dead
//! link before the hint arrived, and drops from the burst that refills the
//! drained pipe at the restored window (the window was valid before the
//! outage; one round later the Veno classifier judges again).

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;

use crate::algos::cubic::{Cubic, CubicConfig};
use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::rate::SeqRound;
use crate::types::{
    AckSample, CaState, CongestionEvent, CongestionKind, CongestionResponse, CwndEvent, LinkHint,
    LinkHintKind, PathInfo, SendGate,
};
use crate::Time;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// RTW-TCP settings; every threshold is a [PROJECT CHOICE] of cc-spec §3.16.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct RtwTcpConfig {
    /// Shared core settings.
    pub core: CoreConfig,
    /// The CUBIC base algorithm's settings (§3.10). Its `core` is not used:
    /// the controller runs on `core` above.
    pub cubic: CubicConfig,
    /// [PROJECT CHOICE] hint lifetime in SRTTs: a hint is valid for
    /// `max(hint_ttl_srtts·SRTT, hint_ttl_min_us)` after it was issued (2).
    pub hint_ttl_srtts: u32,
    /// [PROJECT CHOICE] lower bound of the hint lifetime, µs (200 ms).
    pub hint_ttl_min_us: u64,
    /// [PROJECT CHOICE] outage length assumed for a beam-misalignment hint
    /// without a predicted duration, µs (20 ms).
    pub beam_misalignment_default_us: u64,
    /// [PROJECT CHOICE] the same for a deafness hint, µs (20 ms).
    pub deafness_default_us: u64,
    /// [PROJECT CHOICE] the same for a handover hint, µs (50 ms).
    pub handover_default_us: u64,
    /// [PROJECT CHOICE] `L_block`: obstacle length a vehicle must pass for a
    /// blockage hint without duration, metres (5 m): `T = L_block / speed`.
    pub l_block_m: f64,
    /// [PROJECT CHOICE] speed floor in `L_block / max(speed, floor)`, m/s (1).
    pub min_speed_mps: f64,
    /// [PROJECT CHOICE] a link-failure hint reporting a CQI of at least this
    /// is contradicted by the channel report and ignored (7).
    pub cqi_good: u8,
    /// [PROJECT CHOICE] guard after the predicted outage end before the
    /// first probe, in SRTTs (1).
    pub guard_srtts: u32,
    /// [PROJECT CHOICE] `N_thresh`: Veno backlog below which a hint-less
    /// loss is random, segments (3).
    pub n_thresh_segs: u32,
    /// [PROJECT CHOICE] a classifier-based random verdict within this many
    /// SRTTs of the previous one is treated as congestive (8).
    pub random_spacing_srtts: u32,
    /// [PROJECT CHOICE] first probe interval while frozen, in SRTTs; it
    /// doubles after each probe (1).
    pub probe_backoff_start_srtts: u32,
    /// [PROJECT CHOICE] freeze pro-actively when a valid short-outage hint
    /// arrives, before any loss (Freeze-TCP) (true).
    pub freeze_on_hint: bool,
    /// [PROJECT CHOICE] losses detected within this many SRTTs after a
    /// freeze ended by an ACK or a CongestionFree hint are after-effects of
    /// the outage and are held (2; 0 disables).
    pub thaw_grace_srtts: u32,
    /// [PROJECT CHOICE] extension: classify a loss without a valid
    /// blockage hint with Veno's backlog estimate (and a CongestionFree
    /// hint as random) and hold it when judged random (false: seed 004
    /// reduces on every loss without a prediction).
    pub hintless_classifier: bool,
    /// [PROJECT CHOICE] extension: a loss in a predicted short outage also
    /// freezes (nothing but probes until the predicted end) instead of
    /// only holding the window (false).
    pub freeze_on_loss: bool,
}

impl Default for RtwTcpConfig {
    fn default() -> Self {
        RtwTcpConfig {
            core: CoreConfig::default(),
            cubic: CubicConfig::default(),
            hint_ttl_srtts: 2,
            hint_ttl_min_us: 200_000,
            beam_misalignment_default_us: 20_000,
            deafness_default_us: 20_000,
            handover_default_us: 50_000,
            l_block_m: 5.0,
            min_speed_mps: 1.0,
            cqi_good: 7,
            guard_srtts: 1,
            n_thresh_segs: 3,
            random_spacing_srtts: 8,
            probe_backoff_start_srtts: 1,
            freeze_on_hint: false,
            thaw_grace_srtts: 0,
            hintless_classifier: false,
            freeze_on_loss: false,
        }
    }
}

impl RtwTcpConfig {
    /// The issue-11 design: seed 004 plus the Freeze-TCP and Veno
    /// extensions (pro-active freeze, freeze on a short-outage loss, the
    /// hint-less classifier, two SRTTs of after-outage grace).
    pub fn with_extensions() -> RtwTcpConfig {
        RtwTcpConfig {
            freeze_on_hint: true,
            thaw_grace_srtts: 2,
            hintless_classifier: true,
            freeze_on_loss: true,
            ..RtwTcpConfig::default()
        }
    }

    /// Build the controller.
    pub fn build(&self) -> PolicyController<RtwTcp> {
        PolicyController::new(self.core.clone(), RtwTcp::new(self))
    }
}

/// What caused a loss, in RTW-TCP's judgement (cc-spec §3.16).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LossClass {
    /// Congestion (ECN, or a growing queue): CUBIC reduction.
    Congestive,
    /// A link outage predicted to last `T ≤ RTO`: hold and freeze.
    ShortOutage(Duration),
    /// A link outage longer than the RTO: CUBIC reduction.
    LongOutage,
    /// A random (non-congestive) loss: retransmit only.
    Random,
    /// [PROJECT CHOICE] a loss detected just after a freeze ended: a packet
    /// sent into the dead link before the hint arrived, or one dropped from
    /// the burst that refills the drained pipe. Retransmit only.
    OutageAftermath,
}

/// The frozen state of an outage being ridden out.
#[derive(Clone, Debug, PartialEq)]
pub struct Frozen {
    /// When the freeze began.
    pub start: Time,
    /// Predicted outage end plus guard: the first probe may leave then.
    pub until: Time,
    /// Predicted outage end plus the saved RTO: an RTO from then on reduces.
    pub deadline: Time,
    /// cwnd when the freeze began, segments.
    pub saved_cwnd: u32,
    /// ssthresh when the freeze began, segments.
    pub saved_ssthresh: u32,
    /// RTO (without backoff) when the freeze began.
    pub saved_rto: Duration,
    /// When the next probe may be sent.
    pub next_probe_at: Time,
    /// Interval added after the next probe (doubles after each probe).
    pub probe_backoff: Duration,
    /// For a pro-active freeze, the predicted outage end: ACKs before it do
    /// not end the freeze.
    pub outage_end: Option<Time>,
}

/// The RTW-TCP policy: CUBIC plus loss classification and freezing.
#[derive(Clone, Debug)]
pub struct RtwTcp {
    cubic: Cubic,
    cfg: RtwTcpConfig,
    /// The most recent link hint.
    hint: Option<LinkHint>,
    frozen: Option<Frozen>,
    /// When the fallback classifier last said Random.
    last_random_at: Option<Time>,
    /// When the last freeze was ended by an ACK or a CongestionFree hint.
    thawed_at: Option<Time>,
    round: SeqRound,
    /// Minimum RTT sample of the current round (`RTT_recent`).
    round_min_rtt: Option<Duration>,
}

/// SRTT, or the latest sample, or the RTO when nothing was measured yet.
fn srtt_of(path: &PathInfo) -> Duration {
    path.srtt.or(path.latest_rtt).unwrap_or(path.rto)
}

impl RtwTcp {
    fn new(cfg: &RtwTcpConfig) -> RtwTcp {
        RtwTcp {
            cubic: cfg.cubic.policy(),
            cfg: cfg.clone(),
            hint: None,
            frozen: None,
            last_random_at: None,
            thawed_at: None,
            round: SeqRound::default(),
            round_min_rtt: None,
        }
    }

    /// The wrapped CUBIC policy.
    pub fn cubic(&self) -> &Cubic {
        &self.cubic
    }
    /// The frozen state, if an outage is being ridden out.
    pub fn frozen(&self) -> Option<&Frozen> {
        self.frozen.as_ref()
    }
    /// The most recent link hint.
    pub fn last_hint(&self) -> Option<&LinkHint> {
        self.hint.as_ref()
    }

    /// Predicted outage length `T` of a link-failure hint; `None` = ∞.
    pub fn outage_duration(&self, hint: &LinkHint) -> Option<Duration> {
        if let Some(d) = hint.predicted_duration {
            return Some(d);
        }
        let us = Duration::from_micros;
        match hint.kind {
            LinkHintKind::BeamMisalignment => Some(us(self.cfg.beam_misalignment_default_us)),
            LinkHintKind::Deafness => Some(us(self.cfg.deafness_default_us)),
            LinkHintKind::Handover => Some(us(self.cfg.handover_default_us)),
            LinkHintKind::CongestionFree => None,
            LinkHintKind::Blockage => {
                let speed = f64::from(hint.speed_mps?);
                if !speed.is_finite() {
                    return None;
                }
                let floor = if self.cfg.min_speed_mps.is_finite() {
                    self.cfg.min_speed_mps.max(1e-3)
                } else {
                    1.0
                };
                Duration::try_from_secs_f64(self.cfg.l_block_m / speed.max(floor)).ok()
            }
        }
    }

    /// Whether `hint` is still trusted at `now`: issued within the hint
    /// lifetime, or its predicted outage window still covers `now`.
    pub fn hint_valid(&self, hint: &LinkHint, path: &PathInfo) -> bool {
        let srtts = srtt_of(path).saturating_mul(self.cfg.hint_ttl_srtts);
        let ttl = srtts.max(Duration::from_micros(self.cfg.hint_ttl_min_us));
        if path.now - hint.issued_at <= ttl {
            return true;
        }
        // Or the predicted outage window still covers now (finite T only).
        hint.kind.is_link_failure()
            && self
                .outage_duration(hint)
                .is_some_and(|t| hint.issued_at <= path.now && path.now <= hint.issued_at + t)
    }

    /// The most recent hint if it is a valid link-failure hint not
    /// contradicted by its CQI, with its outage length (`None` = ∞).
    fn failure_hint(&self, path: &PathInfo) -> Option<(Time, Option<Duration>)> {
        let h = self.hint.as_ref()?;
        self.predicted_outage().filter(|_| self.hint_valid(h, path))
    }

    /// The most recent hint if it is a link-failure hint not contradicted by
    /// its CQI, whatever its age: its start and outage length (`None` = ∞).
    /// Losses are matched to it by when the lost packet was sent.
    fn predicted_outage(&self) -> Option<(Time, Option<Duration>)> {
        let h = self.hint.as_ref()?;
        let contradicted = h.cqi.is_some_and(|c| c >= self.cfg.cqi_good);
        (h.kind.is_link_failure() && !contradicted).then(|| (h.issued_at, self.outage_duration(h)))
    }

    /// Whether a packet sent at `sent_at` went into the outage the hint
    /// issued at `issued_at` predicts to last `t` (`None` = ∞): sent no
    /// earlier than half a minimum RTT before the outage began (it reached
    /// the radio link after the start) and no later than its predicted end.
    fn sent_into_outage(
        &self,
        issued_at: Time,
        t: Option<Duration>,
        sent_at: Time,
        path: &PathInfo,
    ) -> bool {
        let one_way = path.min_rtt.unwrap_or_else(|| srtt_of(path)) / 2;
        let from = issued_at.saturating_sub(one_way);
        sent_at >= from && t.is_none_or(|t| sent_at <= issued_at + t)
    }

    /// Classify a congestion signal of `kind` (first match wins) whose
    /// newest lost packet was sent at `lost_sent_at` (if known). The second
    /// value tells whether a Random verdict came from the fallback classifier.
    pub fn classify(
        &self,
        core: &Core,
        kind: CongestionKind,
        lost_sent_at: Option<Time>,
        path: &PathInfo,
    ) -> (LossClass, bool) {
        if kind == CongestionKind::Ecn {
            return (LossClass::Congestive, false);
        }
        // With the lost packet's send time, the outage it was sent into
        // (however long ago it was predicted); without, a fresh hint.
        let outage = match lost_sent_at {
            Some(sent) => self
                .predicted_outage()
                .filter(|&(at, t)| self.sent_into_outage(at, t, sent, path)),
            None => self.failure_hint(path),
        };
        if let Some((_, t)) = outage {
            return match t {
                Some(t) if t <= path.rto => (LossClass::ShortOutage(t), false),
                _ => (LossClass::LongOutage, false),
            };
        }
        if !self.cfg.hintless_classifier {
            // Seed 004: no prediction, CUBIC's congestion response.
            return (LossClass::Congestive, false);
        }
        if let Some(h) = &self.hint {
            if h.kind == LinkHintKind::CongestionFree && self.hint_valid(h, path) {
                return (LossClass::Random, false);
            }
        }
        let grace = srtt_of(path).saturating_mul(self.cfg.thaw_grace_srtts);
        let in_grace = self.thawed_at.is_some_and(|t| path.now - t <= grace);
        if self.cfg.thaw_grace_srtts > 0 && in_grace {
            return (LossClass::OutageAftermath, false);
        }
        // Veno fallback: backlog N = cwnd·(RTT_recent − min_rtt)/RTT_recent.
        let recent = self.round_min_rtt.or(path.srtt);
        let (Some(recent), Some(min_rtt)) = (recent, path.min_rtt) else {
            return (LossClass::Congestive, false);
        };
        let thresh = u128::from(self.cfg.n_thresh_segs);
        let small_backlog = if recent.is_zero() {
            thresh > 0
        } else {
            let queue = recent.saturating_sub(min_rtt).as_nanos();
            u128::from(core.cwnd) * queue < thresh * recent.as_nanos()
        };
        let spacing = srtt_of(path).saturating_mul(self.cfg.random_spacing_srtts);
        let too_soon = self.last_random_at.is_some_and(|t| path.now - t < spacing);
        if small_backlog && !too_soon {
            (LossClass::Random, true)
        } else {
            (LossClass::Congestive, false)
        }
    }

    /// Enter Frozen for an outage predicted to end at `outage_end`.
    fn freeze(&mut self, core: &Core, path: &PathInfo, outage_end: Time, proactive: bool) {
        let srtt = srtt_of(path);
        let until = outage_end + srtt.saturating_mul(self.cfg.guard_srtts);
        let backoff = srtt
            .saturating_mul(self.cfg.probe_backoff_start_srtts)
            .max(Duration::from_millis(1));
        self.frozen = Some(Frozen {
            start: path.now,
            until,
            deadline: outage_end + path.rto,
            saved_cwnd: core.cwnd,
            saved_ssthresh: core.ssthresh,
            saved_rto: path.rto,
            next_probe_at: until,
            probe_backoff: backoff,
            outage_end: proactive.then_some(outage_end),
        });
    }

    /// Leave Frozen: restore cwnd and ssthresh, and shift the CUBIC epoch by
    /// the frozen time so the curve does not jump. `link_back` (an ACK or a
    /// CongestionFree hint ended it) starts the after-effect grace.
    fn thaw(&mut self, core: &mut Core, path: &PathInfo, link_back: bool) {
        if let Some(f) = self.frozen.take() {
            if link_back {
                self.thawed_at = Some(path.now);
            }
            core.set_cwnd(f.saved_cwnd);
            core.ssthresh = f.saved_ssthresh.max(1);
            self.cubic.shift_epoch(path.now - f.start, path.now);
        }
    }
}

impl CcPolicy for RtwTcp {
    fn name(&self) -> &'static str {
        "rtwtcp"
    }

    fn init(&mut self, core: &mut Core, path: &PathInfo) {
        self.hint = None;
        self.frozen = None;
        self.last_random_at = None;
        self.thawed_at = None;
        self.round = SeqRound {
            beg_snd_nxt: path.snd_nxt,
        };
        self.round_min_rtt = None;
        self.cubic.init(core, path);
    }

    fn on_packets_acked(&mut self, core: &mut Core, ack: &AckSample, path: &PathInfo) {
        if self.round.end_of_round(path.snd_una, path.snd_nxt) {
            self.round_min_rtt = None;
        }
        if let Some(rtt) = ack.rtt {
            self.round_min_rtt = Some(self.round_min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        if let Some(f) = &self.frozen {
            let delivered = ack.una_advanced || ack.acked_segs > 0;
            let after_outage = f.outage_end.is_none_or(|end| path.now >= end);
            if delivered && after_outage && path.now > f.start {
                self.thaw(core, path, true);
            }
        }
        self.cubic.on_packets_acked(core, ack, path);
    }

    fn on_cong_avoid(&mut self, core: &mut Core, ack: &AckSample, acked: u32, path: &PathInfo) {
        if self.frozen.is_none() {
            self.cubic.on_cong_avoid(core, ack, acked, path);
        }
    }

    fn ssthresh(&mut self, core: &Core, path: &PathInfo) -> u32 {
        self.cubic.ssthresh(core, path)
    }

    fn undo_cwnd(&mut self, core: &Core) -> u32 {
        self.cubic.undo_cwnd(core)
    }

    fn on_state(&mut self, core: &mut Core, new: CaState, path: &PathInfo) {
        self.cubic.on_state(core, new, path);
    }

    fn on_event(&mut self, core: &mut Core, event: CwndEvent, path: &PathInfo) {
        self.cubic.on_event(core, event, path);
    }

    fn pacing_rate(&self, core: &Core, path: &PathInfo) -> Option<u64> {
        self.cubic.pacing_rate(core, path)
    }

    fn classify_congestion(
        &mut self,
        core: &mut Core,
        event: &CongestionEvent,
        path: &PathInfo,
    ) -> CongestionResponse {
        if let Some(f) = &self.frozen {
            if event.kind == CongestionKind::Loss && path.now < f.deadline {
                return CongestionResponse::Hold;
            }
            // ECN (never masked by a hint) or a failed prediction: CUBIC reduces.
            self.thaw(core, path, false);
            return CongestionResponse::Reduce;
        }
        let (class, from_classifier) = self.classify(core, event.kind, event.lost_sent_at, path);
        match class {
            LossClass::Congestive | LossClass::LongOutage => CongestionResponse::Reduce,
            LossClass::Random => {
                if from_classifier {
                    self.last_random_at = Some(path.now);
                }
                CongestionResponse::Hold
            }
            LossClass::OutageAftermath => CongestionResponse::Hold,
            LossClass::ShortOutage(t) => {
                if self.cfg.freeze_on_loss {
                    let issued_at = self.failure_hint(path).map_or(path.now, |(at, _)| at);
                    self.freeze(core, path, issued_at + t, false);
                }
                CongestionResponse::Hold
            }
        }
    }

    fn classify_rto(&mut self, core: &mut Core, path: &PathInfo) -> CongestionResponse {
        if let Some(f) = &self.frozen {
            if path.now < f.deadline {
                return CongestionResponse::Hold;
            }
            // The prediction failed: CUBIC's RTO response from the saved window.
            self.thaw(core, path, false);
            return CongestionResponse::Reduce;
        }
        if let Some((issued_at, Some(t))) = self.failure_hint(path) {
            let end = issued_at + t;
            // A short predicted outage only: a long one is CUBIC's RTO.
            if t <= path.rto && end > path.now {
                self.freeze(core, path, end, false);
                return CongestionResponse::Hold;
            }
        }
        // The outage is over, and the packets sent into it were all lost
        // (no duplicate ACKs): a timer firing within an RTO (and an SRTT)
        // of its end is the outage's, not congestion's (seed 004: RTW-TCP
        // "prevents timeouts").
        if let Some((issued_at, Some(t))) = self.predicted_outage() {
            let end = issued_at + t;
            if t <= path.rto && issued_at <= path.now && path.now <= end + path.rto + srtt_of(path)
            {
                return CongestionResponse::Hold;
            }
        }
        CongestionResponse::Reduce
    }

    fn on_link_hint(&mut self, core: &mut Core, hint: &LinkHint, path: &PathInfo) {
        self.hint = Some(hint.clone());
        if hint.kind == LinkHintKind::CongestionFree {
            if self.hint_valid(hint, path) {
                self.thaw(core, path, true);
            }
            return;
        }
        if !self.cfg.freeze_on_hint || self.frozen.is_some() {
            return;
        }
        if let Some((issued_at, Some(t))) = self.failure_hint(path) {
            let end = issued_at + t;
            if t <= path.rto && end > path.now {
                self.freeze(core, path, end, true);
            }
        }
    }

    fn send_gate(&self, _core: &Core, _now: Time) -> SendGate {
        match &self.frozen {
            Some(f) => SendGate::ProbeOnly {
                next_probe_at: f.next_probe_at,
            },
            None => SendGate::Normal,
        }
    }

    fn held_rto_timeout(&self, _core: &Core, now: Time) -> Option<Duration> {
        self.frozen
            .as_ref()
            .map(|f| f.saved_rto.min(f.deadline - now))
    }

    fn on_packet_sent(&mut self, core: &mut Core, path: &PathInfo, bytes: u32) {
        if let Some(f) = &mut self.frozen {
            if path.now >= f.next_probe_at {
                f.next_probe_at = path.now + f.probe_backoff;
                f.probe_backoff = f.probe_backoff.checked_mul(2).unwrap_or(Duration::MAX);
            }
        }
        self.cubic.on_packet_sent(core, path, bytes);
    }

    fn on_initial_window(&mut self, core: &mut Core, segs: u32, path: &PathInfo) {
        self.cubic.on_initial_window(core, segs, path);
    }

    fn mode(&self) -> Option<&'static str> {
        Some(if self.frozen.is_some() {
            "frozen"
        } else {
            "normal"
        })
    }

    fn bandwidth_estimate_bytes_per_sec(&self) -> Option<u64> {
        self.cubic.bandwidth_estimate_bytes_per_sec()
    }
}
