//! # Loss recovery: the connection's duties of cc-spec §2.1
//!
//! [`Recovery`] owns the sending side's packet numbers, the scoreboard of
//! outstanding DATA packets ([`loss`]), the RTT estimator ([`rtt`]) and
//! the congestion-state machine around the controller ([`congestion`]).
//! The connection tells it what was sent and what the peer acknowledged,
//! NACKed or left unanswered; it answers which blocks were delivered and
//! which must be retransmitted, when its timer must fire, and whether the
//! window, the pacing rate and the controller's send gate let a packet go.
//!
//! Per ACK it follows the order of cc-spec §2.3 and the controller lab:
//! scoreboard and delivery-rate sampler, RTT sample (never from a packet
//! that carried ST_RET), loss detection, round counting, timer restart,
//! spurious-loss undo, the state machine, then the controller's `on_ack`.

pub mod congestion;
pub mod ecn;
pub mod loss;
pub mod pacer;
pub mod queue_guard;
pub mod rtt;

#[cfg(test)]
mod tests;

pub use congestion::{Allowance, Congestion, CongestionCounters, PathCtx};
pub use ecn::{EcnCounters, EcnFailure, EcnSender};
pub use loss::{AckedPackets, BlockList, BlockRef, SentPacket, SentPackets};
pub use rtt::RttEstimator;

use crate::wire::{AckPayload, MissingPackets};
use peregrine_cc::{
    AckSample, CaState, CcStats, CongestionController, CongestionResponse, LinkHint, Time,
};
use std::time::Duration;

/// Settings of [`Recovery`], taken from the connection's configuration.
#[derive(Clone, Debug)]
pub struct RecoveryConfig {
    /// Full-sized packet, bytes: the controllers' segment.
    pub mss: u32,
    /// RTO before the first RTT sample.
    pub initial_rto: Duration,
    /// Lower bound on the RTO.
    pub min_rto: Duration,
    /// Upper bound on the (backed-off) RTO.
    pub max_rto: Duration,
    /// Packet-threshold loss detection distance.
    pub packet_threshold: u64,
    /// Largest ACK delay the peer may claim (longer claims are capped).
    pub max_ack_delay: Duration,
    /// Pace in one-packet releases instead of 1 ms bursts
    /// (`ConnectionConfig::pacing`; pacer.rs).
    pub fine_pacing: bool,
    /// Send DATA ECN-capable and validate the peer's ECN counts
    /// (`ConnectionConfig::ecn`; [`ecn`]).
    pub ecn: bool,
}

/// Counters kept by [`Recovery`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryCounters {
    /// DATA packets sent (new and retransmissions).
    pub data_packets_sent: u64,
    /// Bytes of those.
    pub data_bytes_sent: u64,
    /// DATA packets acknowledged.
    pub packets_acked: u64,
    /// Bytes of those.
    pub bytes_acked: u64,
    /// DATA packets declared lost.
    pub packets_lost: u64,
    /// Bytes of those.
    pub bytes_lost: u64,
    /// Losses later proven spurious by an acknowledgement.
    pub spurious_losses: u64,
    /// ACKs processed.
    pub acks_received: u64,
    /// ACKs ignored because they acknowledged packets never sent.
    pub invalid_acks: u64,
    /// ACKs that echoed an ECN-CE mark.
    pub ecn_echoes: u64,
}

/// What one ACK, NACK or timer told the sender about its data. Hand it
/// back with [`Recovery::recycle`] once applied: its buffers are reused for
/// the next one, so processing an ACK allocates nothing.
#[derive(Debug, Default)]
pub struct RecoveryOutcome {
    /// Blocks carried by newly acknowledged packets (including packets
    /// previously declared lost).
    pub acked_blocks: Vec<BlockRef>,
    /// Blocks carried by packets newly declared lost, with the packet number
    /// that carried them.
    pub lost_blocks: Vec<(u64, BlockRef)>,
    /// Number of packets newly declared lost.
    pub newly_lost: u32,
    /// The largest of the packets newly declared lost, bytes (0: none);
    /// path MTU discovery's black-hole detection reads it.
    pub largest_lost_bytes: u32,
    /// The largest of the packets newly acknowledged, bytes (0: none).
    pub largest_acked_bytes: u32,
}

impl RecoveryOutcome {
    /// Empty it, keeping the allocations.
    fn clear(&mut self) {
        self.acked_blocks.clear();
        self.lost_blocks.clear();
        self.newly_lost = 0;
        self.largest_lost_bytes = 0;
        self.largest_acked_bytes = 0;
    }
}

/// Loss recovery and congestion control for one connection's sending side.
#[derive(Debug)]
pub struct Recovery {
    config: RecoveryConfig,
    rtt: RttEstimator,
    sent: SentPackets,
    cong: Congestion,
    /// The queue guard, when the connection turned it on.
    guard: Option<queue_guard::QueueGuard>,
    next_pn: u64,
    rto_deadline: Option<Time>,
    counters: RecoveryCounters,
    /// Scratch buffers reused from ACK to ACK (no allocation per packet):
    /// the last outcome handed back, the scoreboard's answer, the packets
    /// just declared lost and their numbers.
    spare: RecoveryOutcome,
    /// Scratch: the ranges of the ACK being processed.
    ack_ranges: Vec<(u64, u64)>,
    acked: AckedPackets,
    lost: Vec<(u64, SentPacket)>,
    lost_pns: Vec<u64>,
    /// When the newest of `lost_pns` was sent (RTW-TCP's attribution).
    lost_sent_at: Option<Time>,
    /// ECN: the codepoint sent and the validation of the peer's counts.
    ecn: EcnSender,
}

impl Recovery {
    /// Recovery around a fresh (uninitialised) controller.
    pub fn new(config: RecoveryConfig, cc: Box<dyn CongestionController>) -> Recovery {
        let rtt = RttEstimator::new(config.initial_rto, config.min_rto, config.max_rto);
        let mut cong = Congestion::new(cc, config.mss);
        cong.set_fine_pacing(config.fine_pacing);
        let ecn = EcnSender::new(config.ecn);
        Recovery {
            config,
            rtt,
            sent: SentPackets::new(),
            guard: None,
            cong,
            next_pn: 0,
            rto_deadline: None,
            counters: RecoveryCounters::default(),
            spare: RecoveryOutcome::default(),
            ack_ranges: Vec::new(),
            acked: AckedPackets::default(),
            lost: Vec::new(),
            lost_pns: Vec::new(),
            lost_sent_at: None,
            ecn,
        }
    }

    /// The ECN codepoint this connection's datagrams carry now: the
    /// controller's ECT while ECN is on and validated, else `None`. O(1).
    pub fn ecn_codepoint(&self) -> Option<crate::EcnCodepoint> {
        self.ecn.codepoint(self.cong.ecn_response())
    }

    /// The sending side's ECN counters.
    pub fn ecn_counters(&self) -> &EcnCounters {
        self.ecn.counters()
    }

    /// The next packet number to be sent.
    pub fn next_pn(&self) -> u64 {
        self.next_pn
    }

    /// Take a packet number for a packet about to be sent (any type).
    pub fn take_pn(&mut self) -> u64 {
        let pn = self.next_pn;
        self.next_pn += 1;
        pn
    }

    /// The RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Feed an RTT sample that did not come from an ACK (handshake, ECHO).
    pub fn on_rtt_sample(&mut self, rtt: Duration) {
        self.rtt.on_sample(rtt, Duration::ZERO);
    }

    /// The congestion state machine (read-only).
    pub fn congestion(&self) -> &Congestion {
        &self.cong
    }

    /// The controller's snapshot.
    pub fn cc_stats(&self) -> CcStats {
        self.cong.cc_stats()
    }

    /// The congestion state.
    pub fn ca_state(&self) -> CaState {
        self.cong.state()
    }

    /// The counters.
    pub fn counters(&self) -> &RecoveryCounters {
        &self.counters
    }

    /// Bytes of DATA in flight.
    pub fn bytes_in_flight(&self) -> u64 {
        self.sent.bytes_in_flight()
    }

    /// Whether no DATA packet is outstanding.
    pub fn nothing_in_flight(&self) -> bool {
        self.sent.is_empty()
    }

    /// The blocks of the oldest outstanding DATA packet (what a send-gate
    /// probe repeats).
    pub fn oldest_blocks(&self) -> Option<BlockList> {
        self.sent.oldest().map(|(_, p)| p.blocks.clone())
    }

    /// Whether `pn` is an outstanding DATA packet.
    pub fn is_outstanding(&self, pn: u64) -> bool {
        self.sent.is_outstanding(pn)
    }

    /// Start the controller.
    pub fn init_controller(&mut self, now: Time) {
        self.init_controller_with_mss(now, None);
    }

    /// [`init_controller`](Self::init_controller), counting the window in
    /// segments of `mss` bytes when given (path MTU discovery: the
    /// search's largest datagram, not the base size the connection starts
    /// with). O(1).
    pub fn init_controller_with_mss(&mut self, now: Time, mss: Option<u32>) {
        if let Some(mss) = mss {
            self.config.mss = mss.max(1);
            self.cong.set_mss(mss);
        }
        let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
        self.cong.init(&ctx);
    }

    /// Hand the controller the packet-pair window.
    pub fn set_initial_window(&mut self, now: Time, bytes: u64) {
        let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
        self.cong.set_initial_window(bytes, &ctx);
    }

    /// Hand the controller the packet pair's measurement (start-up ends;
    /// data may already be in flight).
    pub fn on_startup_measurement(&mut self, now: Time, m: &peregrine_cc::StartupMeasurement) {
        let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
        self.cong.on_startup_measurement(m, &ctx);
    }

    /// Swap the controller.
    pub fn replace_controller(&mut self, now: Time, cc: Box<dyn CongestionController>) {
        let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
        self.cong.replace_controller(cc, &ctx);
    }

    /// The connection moved to a new path: ECN is validated there afresh
    /// from the next packet on, even if it failed on the old one (RFC
    /// 9000 §13.4.2). O(1).
    pub fn restart_ecn_validation(&mut self) {
        self.ecn.restart_path(self.next_pn);
    }

    /// The connection moved to a new network path (RFC 9000 §9.4): the
    /// RTT estimator and the controller restart from their initial state;
    /// packets in flight stay tracked for loss detection.
    pub fn reset_path(&mut self, now: Time, cc: Box<dyn CongestionController>) {
        self.rtt = RttEstimator::new(
            self.config.initial_rto,
            self.config.min_rto,
            self.config.max_rto,
        );
        self.replace_controller(now, cc);
    }

    /// Forward a link hint to the controller.
    pub fn on_link_hint(&mut self, now: Time, hint: &LinkHint) {
        let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
        self.cong.on_link_hint(hint, &ctx);
    }

    /// The peer's window held the sender for `paused` until `now`: that
    /// time is not idleness for the controller's idle-restart rule.
    pub fn exclude_idle(&mut self, now: Time, paused: Duration) {
        self.cong.exclude_idle(now, paused);
    }

    /// Whether a DATA packet of `size` bytes may be sent now: the
    /// controller's answer, or Blocked while the queue guard's cap is
    /// reached.
    pub fn allowance(&self, now: Time, size: u64) -> Allowance {
        let in_flight = self.sent.bytes_in_flight();
        if let Some(cap) = self.guard.as_ref().and_then(|g| g.cap_bytes_at(now)) {
            if in_flight > 0 && in_flight + size > cap {
                return Allowance::Blocked;
            }
        }
        self.cong.allowance(now, size, in_flight)
    }

    /// Turn the queue guard on (`Some`) or off.
    pub fn set_queue_guard(&mut self, guard: Option<queue_guard::QueueGuard>) {
        self.guard = guard;
    }

    /// The connection's full packets are now `bytes` long (path MTU
    /// discovery moved the size): the queue guard, if on, measures its
    /// packet time and floor in them. The controller keeps the segment
    /// size it was started with. O(1).
    pub fn set_packet_size(&mut self, bytes: u32) {
        if let Some(g) = &mut self.guard {
            g.set_mss(u64::from(bytes));
        }
    }

    /// A packet carrying class-0 data was sent at `now`: the queue
    /// guard (if on) applies for the next [`queue_guard::HOLD`].
    pub fn on_priority_sent(&mut self, now: Time) {
        if let Some(g) = &mut self.guard {
            g.on_priority_sent(now);
        }
    }

    /// The sender had room but nothing to send.
    pub fn on_app_limited(&mut self) {
        let b = self.sent.bytes_in_flight();
        self.cong.on_app_limited(b);
    }

    /// The window stopped a send. When the queue guard's cap stopped it
    /// while the controller's own window had room for a full packet, the
    /// sender is limited by the cap, not by the network's window: the
    /// controller is told so as it would be of an application limit.
    pub fn on_cwnd_limited(&mut self) {
        let in_flight = self.sent.bytes_in_flight();
        if self.guard.as_ref().is_some_and(|g| g.cap_bytes().is_some())
            && in_flight + u64::from(self.config.mss) <= self.cong.cwnd_bytes()
        {
            // Limited by the cap, as by an application: BBR keeps its
            // bandwidth estimate from samples the cap did not hold back.
            self.cong.on_app_limited(in_flight);
            return;
        }
        self.cong.on_cwnd_limited();
    }

    /// The window the sender may fill, bytes: the controller's, or the
    /// queue guard's cap when that is smaller. O(1).
    pub fn window_bytes(&self) -> u64 {
        let cwnd = self.cong.cwnd_bytes();
        self.guard.as_ref().map_or(cwnd, |g| g.window_bytes(cwnd))
    }

    /// A DATA packet `pn` of `size` bytes left now.
    pub fn on_data_sent(
        &mut self,
        now: Time,
        pn: u64,
        size: u32,
        retransmission: bool,
        blocks: BlockList,
        probe: bool,
    ) {
        let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
        let rate = self.cong.before_send(&ctx);
        self.sent.on_sent(
            pn,
            SentPacket {
                time_sent: now,
                size,
                retransmission,
                blocks,
                rate,
            },
        );
        self.counters.data_packets_sent += 1;
        self.counters.data_bytes_sent += u64::from(size);
        self.ecn.on_data_sent();
        let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
        self.cong.after_send(&ctx, size, probe);
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.backed_off_rto());
        }
    }

    /// When [`on_timeout`](Self::on_timeout) must run: the time-threshold
    /// loss timer or the retransmission timer, whichever is first.
    pub fn timeout(&self) -> Option<Time> {
        match (self.sent.loss_time(), self.rto_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The retransmission timer's deadline alone.
    pub fn rto_deadline(&self) -> Option<Time> {
        self.rto_deadline
    }

    /// A fresh outcome, reusing the buffers of the last one handed back.
    fn outcome(&mut self) -> RecoveryOutcome {
        let mut out = std::mem::take(&mut self.spare);
        out.clear();
        out
    }

    /// Hand back an applied outcome: its buffers serve the next ACK.
    pub fn recycle(&mut self, out: RecoveryOutcome) {
        self.spare = out;
    }

    /// Count the packets in `self.lost`, list their blocks in `out` and
    /// their numbers in `self.lost_pns`; empties `self.lost`.
    fn collect_lost(&mut self, out: &mut RecoveryOutcome) {
        self.lost_pns.clear();
        self.lost_sent_at = None;
        for (pn, p) in self.lost.drain(..) {
            self.lost_pns.push(pn);
            self.lost_sent_at = self.lost_sent_at.max(Some(p.time_sent));
            self.counters.packets_lost += 1;
            self.counters.bytes_lost += u64::from(p.size);
            out.largest_lost_bytes = out.largest_lost_bytes.max(p.size);
            out.lost_blocks.extend(p.blocks.iter().map(|b| (pn, *b)));
        }
        out.newly_lost = u32::try_from(self.lost_pns.len()).unwrap_or(u32::MAX);
    }

    /// Process one ACK (`ecn_echo`: its CN field said congestion
    /// experienced). Its ECN section, when present and valid, is a second
    /// and exact CE signal: the controller gets the counts (`on_ecn`)
    /// before anything else of the ACK, and newly reported CE starts a CWR
    /// episode as the echo does (at most one per flight, RFC 3168).
    /// An ACK of a packet number never sent is ignored and counted.
    pub fn on_ack(&mut self, now: Time, ack: &AckPayload, ecn_echo: bool) -> RecoveryOutcome {
        let mut out = self.outcome();
        // The ranges, in a buffer reused from ACK to ACK.
        let mut ranges = std::mem::take(&mut self.ack_ranges);
        ranges.clear();
        let walked = ack.for_each_range(|lo, hi| {
            ranges.push((lo, hi));
            true
        });
        if walked.is_err() {
            self.ack_ranges = ranges;
            self.counters.invalid_acks += 1;
            return out;
        }
        if ack.largest_acked >= self.next_pn {
            self.ack_ranges = ranges;
            self.counters.invalid_acks += 1;
            return out;
        }
        self.counters.acks_received += 1;
        if ecn_echo {
            self.counters.ecn_echoes += 1;
        }
        let prior_bytes = self.sent.bytes_in_flight();
        let prior_in_flight = self.cong.segs(prior_bytes);
        let una_before = self.sent.snd_una(self.next_pn);
        let mut acked = std::mem::take(&mut self.acked);
        self.sent.on_ack_into(&ranges, &mut acked);
        self.ack_ranges = ranges;
        if acked.newly_acked.is_empty() && acked.spurious.is_empty() && self.sent.is_empty() {
            // Nothing in flight and nothing new: an ACK of our ACKs (or a
            // late duplicate). The controller has nothing to learn from it,
            // and must not count it as a duplicate ACK.
            self.acked = acked;
            return out;
        }
        // Scoreboard and delivery-rate sampler.
        let sampler = self.cong.sampler_mut();
        sampler.begin_ack();
        let mut acked_bytes = 0u64;
        for (_, p) in &acked.newly_acked {
            sampler.on_packet_acked(now, &p.rate);
            acked_bytes += u64::from(p.size);
            out.largest_acked_bytes = out.largest_acked_bytes.max(p.size);
            out.acked_blocks.extend_from_slice(&p.blocks);
        }
        self.counters.packets_acked += acked.newly_acked.len() as u64;
        self.counters.bytes_acked += acked_bytes;
        // Validation is per path: only the current path's packets must
        // show up in the counts (ecn.rs).
        let path_first_pn = self.ecn.path_first_pn();
        let newly_on_path = (acked.newly_acked.iter())
            .filter(|(pn, _)| *pn >= path_first_pn)
            .count();
        let ecn_sample = self.ecn.on_ack(
            ack,
            newly_on_path as u64,
            acked_bytes,
            self.cong.ecn_response(),
        );
        let ce_reported = ecn_sample.map_or(0, |s| s.newly_ce_packets);
        // RTT: from the most recently sent packet newly acknowledged, never
        // from a retransmission (Karn).
        let mut rtt_sample = None;
        let mut guard_rtt = None;
        if let Some((pn, p)) = acked.newly_acked.last() {
            if !p.retransmission {
                let rtt = now.saturating_duration_since(p.time_sent);
                let delay = if *pn == ack.largest_acked {
                    Duration::from_micros(u64::from(ack.ack_delay_us))
                        .min(self.config.max_ack_delay)
                } else {
                    Duration::ZERO
                };
                self.rtt.on_sample(rtt, delay);
                rtt_sample = Some(rtt);
                // The queue guard compares RTT with min RTT as the
                // estimator does: the peer's ACK delay removed, unless
                // that would go below min RTT (RFC 9002 §5.3).
                guard_rtt =
                    self.rtt
                        .min_rtt()
                        .map(|m| if rtt >= m + delay { rtt - delay } else { rtt });
            }
        }
        // Late acknowledgements of packets declared lost: their blocks were
        // delivered (a retransmission may still be in flight, or lost).
        self.counters.spurious_losses += acked.spurious.len() as u64;
        out.acked_blocks.extend_from_slice(&acked.spurious_blocks);
        // Loss detection.
        self.lost.clear();
        self.sent.detect_lost_into(
            now,
            self.rtt.loss_delay(),
            self.config.packet_threshold,
            &mut self.lost,
        );
        self.collect_lost(&mut out);
        let acked_segs = self.cong.acked_segs(acked_bytes);
        let rate = self.cong.sampler_mut().end_ack(
            self.rtt.min_rtt(),
            out.newly_lost,
            prior_in_flight,
            acked_segs,
        );
        // Retransmission timer (RFC 6298 (5.2), (5.3)).
        if !acked.newly_acked.is_empty() {
            self.rtt.reset_backoff();
            self.rto_deadline = if self.sent.is_empty() {
                None
            } else {
                Some(now + self.rtt.rto())
            };
        }
        let cong = &mut self.cong;
        let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
        if let Some((pn, _)) = acked.newly_acked.last() {
            cong.on_round_progress(*pn, &ctx, rate.prior_delivered);
        }
        if !acked.spurious.is_empty() {
            cong.on_spurious(&ctx, &acked.spurious);
        }
        if let Some(s) = &ecn_sample {
            cong.on_ecn(s, &ctx);
        }
        cong.update_state(
            &ctx,
            &self.lost_pns,
            self.lost_sent_at,
            ecn_echo || ce_reported > 0,
        );
        let una_after = ctx.snd_una;
        let sample = AckSample {
            acked_segs,
            acked_bytes,
            rtt: rtt_sample,
            prior_in_flight,
            una_advanced: una_after > una_before,
            is_dup_ack: una_after <= una_before,
            newly_lost: out.newly_lost,
            ecn_ce_count: u32::try_from(ce_reported)
                .unwrap_or(u32::MAX)
                .max(u32::from(ecn_echo)),
            rate: Some(rate).filter(|_| !acked.newly_acked.is_empty()),
        };
        cong.on_ack(&sample, &ctx);
        if let Some(g) = &mut self.guard {
            let ack = queue_guard::GuardAck {
                acked_bytes,
                rtt: guard_rtt,
                min_rtt: self.rtt.min_rtt(),
                prior_in_flight_bytes: prior_bytes,
                cwnd_bytes: self.cong.cwnd_bytes(),
            };
            g.on_ack(now, &ack);
        }
        self.acked = acked;
        out
    }

    /// The peer NACKed these packet ranges: the outstanding ones are lost.
    pub fn on_nack(&mut self, now: Time, missing: &[MissingPackets]) -> RecoveryOutcome {
        let mut out = self.outcome();
        let mut lost = std::mem::take(&mut self.lost);
        lost.clear();
        for m in missing {
            let Ok(last) = m.last() else { continue };
            if m.first >= self.next_pn {
                continue;
            }
            for pn in self.sent.outstanding_in(m.first, last) {
                if let Some(p) = self.sent.declare_lost(pn) {
                    lost.push((pn, p));
                }
            }
        }
        self.lost = lost;
        if self.lost.is_empty() {
            return out;
        }
        self.collect_lost(&mut out);
        if self.sent.is_empty() {
            self.rto_deadline = None;
        }
        let cong = &mut self.cong;
        let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
        cong.update_state(&ctx, &self.lost_pns, self.lost_sent_at, false);
        out
    }

    /// Run the loss timer or the retransmission timer if due.
    pub fn on_timeout(&mut self, now: Time) -> RecoveryOutcome {
        let mut out = self.outcome();
        if self.sent.loss_time().is_some_and(|t| t <= now) {
            self.lost.clear();
            self.sent.detect_lost_into(
                now,
                self.rtt.loss_delay(),
                self.config.packet_threshold,
                &mut self.lost,
            );
            self.collect_lost(&mut out);
            if self.sent.is_empty() {
                self.rto_deadline = None;
            }
            let cong = &mut self.cong;
            let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
            cong.update_state(&ctx, &self.lost_pns, self.lost_sent_at, false);
            return out;
        }
        if self.rto_deadline.is_none_or(|t| t > now) {
            return out;
        }
        self.rto_deadline = None;
        self.lost.clear();
        self.sent.declare_all_lost_into(&mut self.lost);
        self.collect_lost(&mut out);
        let cong = &mut self.cong;
        let ctx = path_ctx(now, &self.rtt, &self.sent, self.next_pn);
        let response = cong.on_rto(&ctx, &self.lost_pns);
        match response {
            CongestionResponse::Reduce => self.rtt.back_off(),
            CongestionResponse::Hold => {
                // The held timer is the controller's deadline to give up on
                // its prediction, so it is armed even with nothing in flight.
                let after = cong
                    .held_rto_timeout(now)
                    .unwrap_or_else(|| self.rtt.rto())
                    .max(Duration::from_millis(1));
                self.rto_deadline = Some(now + after);
            }
        }
        out
    }
}

fn path_ctx<'a>(now: Time, rtt: &'a RttEstimator, sent: &SentPackets, next_pn: u64) -> PathCtx<'a> {
    PathCtx {
        now,
        rtt,
        snd_una: sent.snd_una(next_pn),
        snd_nxt: next_pn,
        bytes_in_flight: sent.bytes_in_flight(),
        largest_acked: sent.largest_acked(),
    }
}
