//! The lab's event loop: one bulk sender, one drop-tail bottleneck, an
//! immediate-ACK receiver. Events are ordered by (time, sequence number), so
//! a run is a pure function of the controller and the [`LabConfig`].
//!
//! The bottleneck is built from the simulator's link parts: its queue is
//! the world's [`DropTailQueue`] and its random loss the world's
//! [`LossModel`] (a Bernoulli model drawing from the core's SplitMix64
//! seeded with `LabConfig::seed`).

use super::trace::{LabEvent, LabSummary, LabTrace, TraceRow};
use super::{LabConfig, ScriptItem};
use crate::rng::SplitMix64;
use crate::scenario::model::LossSpec;
use crate::world::link_model::LinkStats;
use crate::world::loss::LossModel;
use crate::world::packet::Packet;
use crate::world::queue::{DropTailQueue, QueueLimit};
use peregrine_cc::rate::{DeliveryRateSampler, PacketRateInfo};
use peregrine_cc::types::{
    AckSample, CaState, CongestionEvent, CongestionKind, CongestionResponse, LinkHint,
    LinkHintKind, PathInfo, SendGate,
};
use peregrine_cc::{CongestionController, Time};
use peregrine_proto::recovery::RttEstimator;
use peregrine_proto::vtime::{self, EventQueue, Host, RunLimits};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

/// DupThresh: a packet is lost once one sent this many later is acknowledged.
const PACKET_THRESHOLD: u64 = 3;
/// RFC 6298 initial RTO.
const INITIAL_RTO: Duration = Duration::from_secs(1);
/// Upper bound on the backed-off RTO.
const MAX_RTO: Duration = Duration::from_secs(60);

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The bottleneck finished serialising the packet at the queue head.
    LinkDone,
    /// The ACK of packet `pn` reaches the sender.
    Ack(u64),
    /// The retransmission timer of generation `gen` fires.
    Rto(u64),
    /// Pacing or a probe allows sending again.
    SendWake,
    /// Script item `idx` starts.
    Script(usize),
    /// The blockage of script item `idx` ends.
    BlockageEnd(usize),
    /// Measure cwnd 300 ms after a blockage.
    MeasureAfterBlockage,
    /// Periodic trace row.
    Sample,
}

struct Outstanding {
    data_id: u64,
    sent: Time,
    rate: PacketRateInfo,
}

struct Lab<'a> {
    cfg: &'a LabConfig,
    cc: &'a mut dyn CongestionController,
    now: Time,
    events: EventQueue<Ev>,
    // Sender.
    next_pn: u64,
    next_data_id: u64,
    outstanding: BTreeMap<u64, Outstanding>,
    retransmit: VecDeque<u64>,
    delivered_data: Vec<bool>,
    bytes_delivered: u64,
    sampler: DeliveryRateSampler,
    /// RFC 6298: the transport's own estimator (its backoff unused: the
    /// lab backs off with `rto_backoff`, unbounded by `MAX_RTO`).
    rtt: RttEstimator,
    rto_backoff: u32,
    rto_gen: u64,
    rto_armed: bool,
    ca_state: CaState,
    recover: u64,
    next_send_at: Time,
    probe_sent_for: Option<Time>,
    last_activity: Time,
    round_end_pn: u64,
    wake_pending: Option<Time>,
    largest_acked: u64,
    max_in_flight_round: u32,
    max_in_flight_prev: u32,
    // Path.
    /// The bottleneck's queue (the packet in service stays at its head
    /// until it is through); a packet's `id` is its packet number.
    queue: DropTailQueue,
    /// The queue's counters (`push` keeps them; the lab reports drops
    /// as trace events instead).
    queue_stats: LinkStats,
    link_busy: bool,
    doomed: BTreeSet<u64>,
    blocked_until: Option<Time>,
    single_loss_at: Option<Time>,
    /// Independent random loss (`random_loss`), drawn before the queue.
    loss: LossModel<SplitMix64>,
    // Records.
    rows: Vec<TraceRow>,
    sample_cwnd_sum: f64,
    sample_count: u64,
    reductions: u32,
    holds: u32,
    rtos: u32,
    packets_lost: u64,
    rtt_sum: Duration,
    rtt_count: u32,
    cwnd_before_blockage: Option<u64>,
    cwnd_after_blockage: Option<u64>,
}

/// Run `cc` (fresh, not yet initialised) through `cfg` and return its trace.
pub fn run(cc: &mut dyn CongestionController, cfg: &LabConfig) -> LabTrace {
    let mut lab = Lab {
        cfg,
        cc,
        now: Time::ZERO,
        events: EventQueue::new(),
        next_pn: 0,
        next_data_id: 0,
        outstanding: BTreeMap::new(),
        retransmit: VecDeque::new(),
        delivered_data: Vec::new(),
        bytes_delivered: 0,
        sampler: DeliveryRateSampler::new(),
        rtt: RttEstimator::new(INITIAL_RTO, cfg.min_rto, MAX_RTO),
        rto_backoff: 1,
        rto_gen: 0,
        rto_armed: false,
        ca_state: CaState::Open,
        recover: 0,
        next_send_at: Time::ZERO,
        probe_sent_for: None,
        last_activity: Time::ZERO,
        round_end_pn: 0,
        wake_pending: None,
        largest_acked: 0,
        max_in_flight_round: 0,
        max_in_flight_prev: 0,
        queue: DropTailQueue::new(QueueLimit {
            packets: None,
            // A queue smaller than one packet still holds one.
            bytes: Some(cfg.queue_bytes.max(u64::from(cfg.mss.max(1)))),
            floor_packets: 0,
        }),
        queue_stats: LinkStats::default(),
        link_busy: false,
        doomed: BTreeSet::new(),
        blocked_until: None,
        single_loss_at: None,
        loss: LossModel::new(
            LossSpec::Bernoulli {
                p: cfg.random_loss,
                data_only: false,
            },
            SplitMix64::new(cfg.seed),
        ),
        rows: Vec::new(),
        sample_cwnd_sum: 0.0,
        sample_count: 0,
        reductions: 0,
        holds: 0,
        rtos: 0,
        packets_lost: 0,
        rtt_sum: Duration::ZERO,
        rtt_count: 0,
        cwnd_before_blockage: None,
        cwnd_after_blockage: None,
    };
    lab.run();
    lab.finish()
}

impl Lab<'_> {
    fn schedule(&mut self, at: Time, ev: Ev) {
        self.events.push(at, ev);
    }

    fn mss(&self) -> u32 {
        self.cfg.mss.max(1)
    }

    fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    fn snd_una(&self) -> u64 {
        self.outstanding
            .keys()
            .next()
            .copied()
            .unwrap_or(self.next_pn)
    }

    fn in_flight(&self) -> u32 {
        u32::try_from(self.outstanding.len()).unwrap_or(u32::MAX)
    }

    fn cwnd_pkts(&self) -> u32 {
        let c = self.cc.cwnd_bytes().div_ceil(self.mss() as u64);
        u32::try_from(c).unwrap_or(u32::MAX).max(1)
    }

    fn path(&self) -> PathInfo {
        let max_in_flight = self.max_in_flight_round.max(self.max_in_flight_prev);
        let cwnd = self.cwnd_pkts();
        let cwnd_limited = max_in_flight >= cwnd
            || (self.cc.in_slow_start() && cwnd < max_in_flight.saturating_mul(2));
        PathInfo {
            now: self.now,
            mss: self.mss(),
            srtt: self.rtt.srtt(),
            rttvar: self.rtt.rttvar(),
            rto: self.rto(),
            min_rtt: self.rtt.min_rtt(),
            latest_rtt: self.rtt.latest_rtt(),
            snd_una: self.snd_una(),
            snd_nxt: self.next_pn,
            delivered: self.sampler.delivered(),
            in_flight: self.in_flight(),
            cwnd_limited,
            ca_state: self.ca_state,
            app_limited: false,
        }
    }

    fn record(&mut self, event: Option<LabEvent>) {
        let stats = self.cc.stats();
        self.rows.push(TraceRow {
            time: self.now,
            cwnd_bytes: stats.cwnd_bytes,
            ssthresh_bytes: stats.ssthresh_bytes,
            pacing_rate_bps: stats.pacing_rate_bytes_per_sec.map(|r| r.saturating_mul(8)),
            event,
            queue_bytes: self.queue.backlog().1,
            in_flight_pkts: self.in_flight(),
            latest_rtt: self.rtt.latest_rtt(),
            mode: stats.mode,
            bandwidth_estimate_bytes_per_sec: stats.bandwidth_estimate_bytes_per_sec,
        });
    }

    fn run(&mut self) {
        let path = PathInfo::new(Time::ZERO, self.mss());
        self.cc.init(&path);
        for (idx, item) in self.cfg.script.iter().enumerate() {
            let at = match item {
                ScriptItem::SingleLoss { at }
                | ScriptItem::Blockage { at, .. }
                | ScriptItem::Rto { at } => *at,
            };
            self.schedule(Time::ZERO + at, Ev::Script(idx));
        }
        self.schedule(Time::ZERO, Ev::Sample);
        self.try_send();
        let end = Time::ZERO + self.cfg.duration;
        // No livelock check: every event of the lab moves time or ends.
        let limits = RunLimits::until(end, u64::MAX);
        match vtime::run(self, limits, &mut |_, _| {}) {
            Ok(_) => {}
            Err(never) => match never {},
        }
    }
}

impl Host for Lab<'_> {
    type Event = Ev;
    type Error = std::convert::Infallible;

    fn queue(&mut self) -> &mut EventQueue<Ev> {
        &mut self.events
    }

    fn livelock(&self, _: Time, _: u64) -> Self::Error {
        unreachable!("the lab runs without a livelock limit")
    }

    fn handle(&mut self, at: Time, ev: Ev) -> Result<(), Self::Error> {
        self.now = at;
        match ev {
            Ev::LinkDone => self.link_done(),
            Ev::Ack(pn) => self.on_ack(pn),
            Ev::Rto(gen) if gen == self.rto_gen && self.rto_armed => self.on_rto(false),
            Ev::Rto(_) => {}
            Ev::SendWake => {
                if self.wake_pending == Some(at) {
                    self.wake_pending = None;
                }
            }
            Ev::Script(idx) => self.on_script(idx),
            Ev::BlockageEnd(_) => {
                self.blocked_until = None;
                self.record(Some(LabEvent::BlockageEnd));
                self.schedule(
                    self.now + Duration::from_millis(300),
                    Ev::MeasureAfterBlockage,
                );
            }
            Ev::MeasureAfterBlockage => {
                if self.cwnd_after_blockage.is_none() {
                    self.cwnd_after_blockage = Some(self.cc.cwnd_bytes());
                }
            }
            Ev::Sample => {
                self.record(None);
                self.sample_cwnd_sum += self.cc.cwnd_bytes() as f64;
                self.sample_count += 1;
                self.schedule(
                    self.now + self.cfg.sample_interval.max(Duration::from_micros(100)),
                    Ev::Sample,
                );
            }
        }
        self.try_send();
        Ok(())
    }
}

impl Lab<'_> {
    fn on_script(&mut self, idx: usize) {
        let Some(item) = self.cfg.script.get(idx).cloned() else {
            return;
        };
        match item {
            ScriptItem::SingleLoss { .. } => self.single_loss_at = Some(self.now),
            ScriptItem::Blockage { duration, .. } => {
                if self.cwnd_before_blockage.is_none() {
                    self.cwnd_before_blockage = Some(self.cc.cwnd_bytes());
                }
                self.blocked_until = Some(self.now + duration);
                let hint = LinkHint {
                    kind: LinkHintKind::Blockage,
                    issued_at: self.now,
                    predicted_duration: Some(duration),
                    cqi: Some(0),
                    speed_mps: Some(15.0),
                };
                let path = self.path();
                self.cc.on_link_hint(&hint, &path);
                self.record(Some(LabEvent::BlockageStart));
                self.schedule(self.now + duration, Ev::BlockageEnd(idx));
            }
            ScriptItem::Rto { .. } => {
                // A route flush: nothing in the pipe arrives; then the timer fires.
                for p in self.queue.drain() {
                    self.doomed.insert(p.id);
                }
                let in_pipe: Vec<u64> = self.outstanding.keys().copied().collect();
                self.doomed.extend(in_pipe);
                self.on_rto(true);
            }
        }
    }

    fn try_send(&mut self) {
        // Bounded: each iteration sends one packet or stops.
        loop {
            match self.cc.send_gate(self.now) {
                SendGate::ProbeOnly { next_probe_at } => {
                    if self.now >= next_probe_at && self.probe_sent_for != Some(next_probe_at) {
                        self.probe_sent_for = Some(next_probe_at);
                        self.send_one();
                        self.record(Some(LabEvent::Probe));
                    } else if next_probe_at > self.now {
                        self.wake_at(next_probe_at);
                    }
                    return;
                }
                SendGate::Normal => {
                    if self.in_flight() >= self.cwnd_pkts() {
                        return;
                    }
                    if let Some(rate) = self.cc.pacing_rate_bytes_per_sec().filter(|r| *r > 0) {
                        if self.now < self.next_send_at {
                            self.wake_at(self.next_send_at);
                            return;
                        }
                        let gap_ns = self.mss() as u128 * 1_000_000_000 / rate as u128;
                        let gap = Duration::from_nanos(u64::try_from(gap_ns).unwrap_or(u64::MAX));
                        self.next_send_at = self.now.max(self.next_send_at) + gap;
                    }
                    self.send_one();
                }
            }
        }
    }

    /// Schedule a send wake-up at `at` unless one is already due by then
    /// (one pending wake-up at a time keeps the event count linear).
    fn wake_at(&mut self, at: Time) {
        if self.wake_pending.is_some_and(|w| w <= at && w >= self.now) {
            return;
        }
        self.wake_pending = Some(at);
        self.schedule(at, Ev::SendWake);
    }

    fn send_one(&mut self) {
        let idle = self.outstanding.is_empty()
            && self.now.saturating_duration_since(self.last_activity) >= self.rto()
            && self.next_pn > 0;
        if idle {
            let path = self.path();
            let gap = self.now.saturating_duration_since(self.last_activity);
            self.cc.on_idle_restart(&path, gap);
        }
        let data_id = self.retransmit.pop_front().unwrap_or_else(|| {
            self.next_data_id += 1;
            self.next_data_id - 1
        });
        let pn = self.next_pn;
        self.next_pn += 1;
        let rate = self
            .sampler
            .on_packet_sent(self.now, self.outstanding.is_empty());
        self.outstanding.insert(
            pn,
            Outstanding {
                data_id,
                sent: self.now,
                rate,
            },
        );
        self.last_activity = self.now;
        self.max_in_flight_round = self.max_in_flight_round.max(self.in_flight());
        let path = self.path();
        self.cc.on_packet_sent(&path, self.mss());
        if !self.rto_armed {
            self.arm_rto(self.rto().saturating_mul(self.rto_backoff));
        }
        // Where does the packet go?
        if self.blocked_until.is_some_and(|t| self.now < t) {
            return;
        }
        if self.single_loss_at.is_some_and(|t| self.now >= t) {
            self.single_loss_at = None;
            self.record(Some(LabEvent::ScriptedLoss));
            return;
        }
        if self.loss.lose(true) {
            self.record(Some(LabEvent::RandomLoss));
            return;
        }
        let pkt = Packet {
            id: pn,
            flow: 0,
            forward: true,
            is_data: true,
            src: 0,
            dst: 1,
            next_hop: 1,
            dst_port: 0,
            src_port: 0,
            wire_bytes: self.mss(),
            created: self.now,
            left_first_hop: false,
            hops: 0,
            ecn: None,
            payload: Vec::new(),
        };
        if self.queue.push(pkt, &mut self.queue_stats).is_err() {
            self.record(Some(LabEvent::QueueDrop));
            return;
        }
        if !self.link_busy {
            self.start_transmission();
        }
    }

    fn serialisation_time(&self) -> Duration {
        let ns = self.mss() as u128 * 8 * 1_000_000_000 / self.cfg.rate_bps.max(1) as u128;
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    fn start_transmission(&mut self) {
        self.link_busy = true;
        let at = self.now + self.serialisation_time();
        self.schedule(at, Ev::LinkDone);
    }

    fn link_done(&mut self) {
        if let Some(p) = self.queue.pop_front() {
            self.schedule(self.now + self.cfg.base_rtt, Ev::Ack(p.id));
        }
        self.link_busy = false;
        if !self.queue.is_empty() {
            self.start_transmission();
        }
    }

    fn arm_rto(&mut self, after: Duration) {
        self.rto_gen += 1;
        self.rto_armed = true;
        let at = self.now + after;
        self.schedule(at, Ev::Rto(self.rto_gen));
    }

    fn on_rtt_sample(&mut self, rtt: Duration) {
        // No ACK delay: the lab's receiver acknowledges at once.
        self.rtt.on_sample(rtt, Duration::ZERO);
        self.rtt_sum += rtt;
        self.rtt_count += 1;
    }

    fn on_ack(&mut self, pn: u64) {
        if self.doomed.remove(&pn) {
            return;
        }
        self.last_activity = self.now;
        let Some(pkt) = self.outstanding.remove(&pn) else {
            return; // Acknowledges a packet already declared lost.
        };
        let prior_in_flight = self.in_flight() + 1;
        self.largest_acked = self.largest_acked.max(pn);
        let una_before = self.snd_una().min(pn);
        if let Some(done) = self.delivered_data.get_mut(pkt.data_id as usize) {
            if !*done {
                *done = true;
                self.bytes_delivered += self.mss() as u64;
            }
        } else {
            self.delivered_data.resize(pkt.data_id as usize + 1, false);
            self.delivered_data[pkt.data_id as usize] = true;
            self.bytes_delivered += self.mss() as u64;
        }
        self.sampler.begin_ack();
        self.sampler.on_packet_acked(self.now, &pkt.rate);
        let rtt = self.now.saturating_duration_since(pkt.sent);
        self.on_rtt_sample(rtt);
        // Packet-threshold loss detection.
        let lost: Vec<u64> = self
            .outstanding
            .range(..pn.saturating_sub(PACKET_THRESHOLD - 1))
            .map(|(k, _)| *k)
            .collect();
        let newly_lost = u32::try_from(lost.len()).unwrap_or(u32::MAX);
        // The newest send time among them: the simulator's recovery
        // passes the same (`CongestionEvent::lost_sent_at`), so a
        // controller attributes losses by send time here as there.
        let mut lost_sent_at = None;
        for k in lost {
            if let Some(p) = self.outstanding.remove(&k) {
                lost_sent_at = lost_sent_at.max(Some(p.sent));
                self.retransmit.push_back(p.data_id);
                self.packets_lost += 1;
            }
        }
        // Rounds, for the cwnd-limited test.
        if pn >= self.round_end_pn {
            self.round_end_pn = self.next_pn;
            self.max_in_flight_prev = self.max_in_flight_round;
            self.max_in_flight_round = self.in_flight();
        }
        let una_after = self.snd_una();
        let rate = self
            .sampler
            .end_ack(self.rtt.min_rtt(), newly_lost, prior_in_flight, 1);
        let sample = AckSample {
            acked_segs: 1,
            acked_bytes: self.mss() as u64,
            rtt: Some(rtt),
            prior_in_flight,
            una_advanced: una_after > una_before,
            is_dup_ack: una_after <= una_before,
            newly_lost,
            ecn_ce_count: 0,
            rate: Some(rate),
        };
        // Retransmission timer: restart on new data acknowledged.
        self.rto_backoff = 1;
        if self.outstanding.is_empty() {
            self.rto_armed = false;
            self.rto_gen += 1;
        } else {
            self.arm_rto(self.rto());
        }
        // State machine (cc-spec §2.3 step 3), then the window update.
        self.update_state(newly_lost, lost_sent_at);
        let path = self.path();
        self.cc.on_ack(&sample, &path);
    }

    /// The recovery state machine after an ACK that declared `newly_lost`
    /// packets lost, the newest of them sent at `lost_sent_at`.
    fn update_state(&mut self, newly_lost: u32, lost_sent_at: Option<Time>) {
        let una = self.snd_una();
        match self.ca_state {
            CaState::Recovery | CaState::Cwr if una >= self.recover => {
                self.ca_state = CaState::Open;
                let path = self.path();
                self.cc.on_recovery_exit(&path);
                self.record(Some(LabEvent::RecoveryExit));
            }
            CaState::Loss if una >= self.recover => {
                self.ca_state = CaState::Open;
                self.record(Some(LabEvent::RecoveryExit));
            }
            _ => {}
        }
        if newly_lost > 0 && self.ca_state <= CaState::Disorder {
            self.ca_state = CaState::Recovery;
            self.recover = self.next_pn;
            let path = self.path();
            let event = CongestionEvent {
                kind: CongestionKind::Loss,
                now: self.now,
                is_persistent: false,
                lost_segs: newly_lost,
                in_flight: self.in_flight(),
                lost_sent_at,
            };
            match self.cc.on_congestion_event(&event, &path) {
                CongestionResponse::Reduce => {
                    self.reductions += 1;
                    self.record(Some(LabEvent::RecoveryStart));
                }
                CongestionResponse::Hold => {
                    self.holds += 1;
                    self.record(Some(LabEvent::Hold));
                }
            }
        } else if self.ca_state <= CaState::Disorder {
            // Holes below the highest acknowledged packet mean reordering or loss to come.
            let holes = self
                .outstanding
                .keys()
                .next()
                .is_some_and(|first| *first < self.largest_acked);
            self.ca_state = if holes {
                CaState::Disorder
            } else {
                CaState::Open
            };
        }
    }

    fn on_rto(&mut self, scripted: bool) {
        self.rtos += 1;
        // Everything outstanding is declared lost and queued for retransmission.
        let lost: Vec<(u64, u64)> = self
            .outstanding
            .iter()
            .map(|(k, p)| (*k, p.data_id))
            .collect();
        for (pn, data_id) in lost.iter().rev() {
            self.outstanding.remove(pn);
            self.retransmit.push_front(*data_id);
        }
        self.packets_lost += lost.len() as u64;
        let path = self.path();
        let response = self.cc.on_rto(&path);
        self.rto_armed = false;
        self.rto_gen += 1;
        match response {
            CongestionResponse::Reduce => {
                self.reductions += 1;
                self.ca_state = CaState::Loss;
                self.recover = self.next_pn;
                self.rto_backoff = self.rto_backoff.saturating_mul(2).min(64);
                self.record(Some(if scripted {
                    LabEvent::ScriptedRto
                } else {
                    LabEvent::Rto
                }));
            }
            CongestionResponse::Hold => {
                self.holds += 1;
                let after = self
                    .cc
                    .held_rto_timeout(self.now)
                    .unwrap_or_else(|| self.rto());
                // Re-armed even with nothing outstanding: the held timer is the
                // controller's deadline to give up on its prediction.
                self.arm_rto(after.max(Duration::from_millis(1)));
                self.record(Some(if scripted {
                    LabEvent::ScriptedRto
                } else {
                    LabEvent::RtoHold
                }));
            }
        }
    }

    fn finish(mut self) -> LabTrace {
        self.now = Time::ZERO + self.cfg.duration;
        self.record(None);
        let mean_cwnd_bytes = if self.sample_count > 0 {
            self.sample_cwnd_sum / self.sample_count as f64
        } else {
            0.0
        };
        let summary = LabSummary {
            controller: self.cc.name().to_string(),
            bytes_delivered: self.bytes_delivered,
            mean_cwnd_bytes,
            reductions: self.reductions,
            holds: self.holds,
            rtos: self.rtos,
            packets_lost: self.packets_lost,
            cwnd_before_blockage_bytes: self.cwnd_before_blockage,
            cwnd_after_blockage_bytes: self.cwnd_after_blockage,
            mean_rtt: (self.rtt_count > 0).then(|| self.rtt_sum / self.rtt_count),
        };
        LabTrace {
            rows: self.rows,
            summary,
        }
    }
}
