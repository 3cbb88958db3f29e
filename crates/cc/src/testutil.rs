//! Helpers for the controllers' unit tests: a path view and ACK samples
//! that satisfy the spec's vector conventions (cc-spec §5: cwnd-limited,
//! state Open, one segment per ACK unless stated).

#![cfg(test)]
#![allow(dead_code)] // helpers are shared by many test modules

use crate::types::{AckSample, CaState, PathInfo};
use crate::Time;
use std::time::Duration;

/// MSS used by the vectors unless they say otherwise.
pub const MSS: u32 = 1448;

/// A cwnd-limited, Open path at `now_ms` with an SRTT of `srtt_ms` (0 = unknown).
pub fn path(now_ms: u64, srtt_ms: u64) -> PathInfo {
    let mut p = PathInfo::new(Time::from_millis(now_ms), MSS);
    if srtt_ms > 0 {
        let srtt = Duration::from_millis(srtt_ms);
        p.srtt = Some(srtt);
        p.rttvar = Some(srtt / 4);
        p.rto = (srtt * 2).max(Duration::from_millis(200));
        p.min_rtt = Some(srtt);
        p.latest_rtt = Some(srtt);
    }
    p.snd_una = 1_000;
    p.snd_nxt = 1_100;
    p.in_flight = 100;
    p.cwnd_limited = true;
    p.ca_state = CaState::Open;
    p
}

/// An ACK that newly acknowledges `segs` segments and advances `snd_una`.
pub fn ack(segs: u32) -> AckSample {
    AckSample {
        acked_segs: segs,
        acked_bytes: segs as u64 * MSS as u64,
        una_advanced: segs > 0,
        ..AckSample::default()
    }
}

/// An ACK of `segs` segments carrying an RTT sample of `rtt_us` microseconds.
pub fn ack_rtt(segs: u32, rtt_us: u64) -> AckSample {
    AckSample {
        rtt: Some(Duration::from_micros(rtt_us)),
        ..ack(segs)
    }
}

/// A loss event at time zero with `in_flight` segments outstanding.
pub fn loss_event(in_flight: u32) -> crate::types::CongestionEvent {
    crate::types::CongestionEvent {
        kind: crate::types::CongestionKind::Loss,
        now: Time::ZERO,
        is_persistent: false,
        lost_segs: 1,
        in_flight,
        lost_sent_at: None,
    }
}

/// `c` initialised on `path(0, 100)`, then set to `cwnd` and `ssthresh` segments.
pub fn with_window<P: crate::policy::CcPolicy>(
    mut c: crate::policy::PolicyController<P>,
    cwnd: u32,
    ssthresh: u32,
) -> crate::policy::PolicyController<P> {
    use crate::controller::CongestionController;
    c.init(&path(0, 100));
    c.core_mut().cwnd = cwnd;
    c.core_mut().ssthresh = ssthresh;
    c
}

/// A small packet-level model of flows sharing one FIFO bottleneck, for
/// the behaviour tests of the newer controllers (BBRv3's transitions,
/// LEDBAT's target, Prague's marks). Each flow sends as its window and
/// pacing rate allow; the link serves `rate_segs_per_sec` full-sized
/// packets, drops arrivals beyond `buffer_segs` and, if `ce_threshold` is
/// set, marks CE on ECN-capable packets whose sojourn exceeds it (a step
/// AQM, DCTCP's K). Every packet is acknowledged at once, `base_rtt` after
/// it left the queue; without reordering a gap below an acknowledged
/// packet is a loss. The sender side follows the connection's contract:
/// delivery-rate samples (H11), one congestion episode per flight, ECN
/// counts through `on_ecn` before `on_ack`.
pub struct Bottleneck {
    /// The flows, in the order they were added.
    pub flows: Vec<Flow>,
    /// Link rate, full-sized packets per second.
    pub rate_segs_per_sec: f64,
    /// Queue capacity, packets.
    pub buffer_segs: usize,
    /// Round-trip propagation delay.
    pub base_rtt: Duration,
    /// Mark CE (ECN flows) when a packet waited longer than this.
    pub ce_threshold: Option<Duration>,
    /// The current time.
    pub now: Time,
    queue: std::collections::VecDeque<(usize, u64, Time)>,
    link_free_at: Time,
    acks: std::collections::VecDeque<(Time, usize, u64, bool)>,
    /// Sojourn time of every departed packet, µs (for percentiles).
    pub sojourn_us: Vec<u64>,
}

/// One flow of a [`Bottleneck`].
pub struct Flow {
    /// Its controller.
    pub cc: Box<dyn crate::CongestionController>,
    /// Its connection view.
    pub path: PathInfo,
    /// Whether its packets are ECN-capable.
    pub ecn: bool,
    sampler: crate::rate::DeliveryRateSampler,
    outstanding: std::collections::BTreeMap<u64, crate::rate::PacketRateInfo>,
    next_send_at: Time,
    recover: u64,
    /// Starts sending at this time.
    pub start_at: Time,
    /// Packets acknowledged.
    pub acked: u64,
    /// Packets declared lost.
    pub lost: u64,
    /// Packets that arrived CE-marked.
    pub ce: u64,
}

impl Bottleneck {
    /// An empty bottleneck.
    pub fn new(rate_segs_per_sec: f64, base_rtt: Duration, buffer_segs: usize) -> Bottleneck {
        Bottleneck {
            flows: Vec::new(),
            rate_segs_per_sec,
            buffer_segs,
            base_rtt,
            ce_threshold: None,
            now: Time::ZERO,
            queue: Default::default(),
            link_free_at: Time::ZERO,
            acks: Default::default(),
            sojourn_us: Vec::new(),
        }
    }

    /// Add a flow running `cc`, starting at `start_at`.
    pub fn add(&mut self, mut cc: Box<dyn crate::CongestionController>, ecn: bool, start_at: Time) {
        let mut path = PathInfo::new(start_at, MSS);
        path.srtt = Some(self.base_rtt);
        path.rttvar = Some(self.base_rtt / 2);
        path.min_rtt = None;
        path.rto = (self.base_rtt * 3).max(Duration::from_millis(200));
        cc.init(&path);
        self.flows.push(Flow {
            cc,
            path,
            ecn,
            sampler: crate::rate::DeliveryRateSampler::new(),
            outstanding: Default::default(),
            next_send_at: start_at,
            recover: 0,
            start_at,
            acked: 0,
            lost: 0,
            ce: 0,
        });
    }

    /// Run until `until`, in steps of 100 µs; `each_ms` is called once per
    /// millisecond (to watch a controller).
    pub fn run(&mut self, until: Time, mut each_ms: impl FnMut(&Bottleneck)) {
        let step = Duration::from_micros(100);
        let service = Duration::from_secs_f64(1.0 / self.rate_segs_per_sec);
        let mut tick = 0u64;
        while self.now < until {
            self.now += step;
            tick += 1;
            // The link.
            while let Some(&(f, pn, enq)) = self.queue.front() {
                let start = self.link_free_at.max(enq);
                let done = start + service;
                if done > self.now {
                    break;
                }
                self.queue.pop_front();
                self.link_free_at = done;
                let sojourn = done.saturating_duration_since(enq);
                self.sojourn_us.push(sojourn.as_micros() as u64);
                let ce = self.flows[f].ecn && self.ce_threshold.is_some_and(|k| sojourn > k);
                self.acks.push_back((done + self.base_rtt, f, pn, ce));
            }
            // ACKs.
            while let Some(&(at, f, pn, ce)) = self.acks.front() {
                if at > self.now {
                    break;
                }
                self.acks.pop_front();
                self.on_ack(f, pn, ce);
            }
            // Senders.
            for f in 0..self.flows.len() {
                self.send(f);
            }
            if tick.is_multiple_of(10) {
                each_ms(self);
            }
        }
    }

    fn send(&mut self, f: usize) {
        let now = self.now;
        let flow = &mut self.flows[f];
        if now < flow.start_at {
            return;
        }
        loop {
            let cwnd_segs = (flow.cc.cwnd_bytes() / u64::from(MSS)).max(1) as u32;
            if flow.path.in_flight >= cwnd_segs || flow.next_send_at > now {
                return;
            }
            flow.path.now = now;
            let pn = flow.path.snd_nxt;
            let info = flow.sampler.on_packet_sent(now, flow.path.in_flight == 0);
            flow.outstanding.insert(pn, info);
            flow.path.snd_nxt += 1;
            flow.path.in_flight += 1;
            flow.cc.on_packet_sent(&flow.path, MSS);
            if let Some(rate) = flow.cc.pacing_rate_bytes_per_sec() {
                let gap = Duration::from_secs_f64(f64::from(MSS) / rate.max(1) as f64);
                flow.next_send_at = flow.next_send_at.max(now) + gap;
            }
            if self.queue.len() < self.buffer_segs {
                self.queue.push_back((f, pn, now));
            }
        }
    }

    fn on_ack(&mut self, f: usize, pn: u64, ce: bool) {
        let now = self.now;
        let flow = &mut self.flows[f];
        let Some(info) = flow.outstanding.remove(&pn) else {
            return;
        };
        flow.path.now = now;
        let prior_in_flight = flow.path.in_flight;
        // FIFO without reordering: everything older is lost.
        let lost: Vec<u64> = flow.outstanding.range(..pn).map(|(&p, _)| p).collect();
        for p in &lost {
            flow.outstanding.remove(p);
        }
        let losses = lost.len() as u32;
        flow.lost += u64::from(losses);
        flow.acked += 1;
        flow.path.in_flight = flow.path.in_flight.saturating_sub(1 + losses);
        flow.path.delivered += 1;
        let rtt = now.saturating_duration_since(info.sent_time);
        flow.path.latest_rtt = Some(rtt);
        flow.path.min_rtt = Some(flow.path.min_rtt.map_or(rtt, |m| m.min(rtt)));
        flow.path.srtt = Some(flow.path.srtt.map_or(rtt, |s| s * 7 / 8 + rtt / 8));
        flow.path.snd_una = flow
            .outstanding
            .keys()
            .next()
            .copied()
            .unwrap_or(flow.path.snd_nxt);
        flow.sampler.begin_ack();
        flow.sampler.on_packet_acked(now, &info);
        let rs = flow
            .sampler
            .end_ack(flow.path.min_rtt, losses, prior_in_flight, 1);
        if flow.ecn {
            if ce {
                flow.ce += 1;
            }
            flow.cc.on_ecn(
                &crate::types::EcnSample {
                    newly_ect_packets: 1,
                    newly_ce_packets: u64::from(ce),
                    acked_bytes: u64::from(MSS),
                },
                &flow.path,
            );
        }
        let open = matches!(flow.path.ca_state, CaState::Open | CaState::Disorder);
        if open && (losses > 0 || ce) {
            let kind = if losses > 0 {
                crate::types::CongestionKind::Loss
            } else {
                crate::types::CongestionKind::Ecn
            };
            let ev = crate::types::CongestionEvent {
                kind,
                now,
                is_persistent: false,
                lost_segs: losses,
                in_flight: flow.path.in_flight,
                lost_sent_at: None,
            };
            flow.cc.on_congestion_event(&ev, &flow.path);
            flow.recover = flow.path.snd_nxt;
            flow.path.ca_state = if losses > 0 {
                CaState::Recovery
            } else {
                CaState::Cwr
            };
        }
        let ack = AckSample {
            acked_segs: 1,
            acked_bytes: u64::from(MSS),
            rtt: Some(rtt),
            prior_in_flight,
            una_advanced: true,
            is_dup_ack: false,
            newly_lost: losses,
            ecn_ce_count: u32::from(ce),
            rate: Some(rs),
        };
        flow.cc.on_ack(&ack, &flow.path);
        if matches!(flow.path.ca_state, CaState::Recovery | CaState::Cwr)
            && flow.path.snd_una >= flow.recover
        {
            flow.path.ca_state = CaState::Open;
            flow.cc.on_recovery_exit(&flow.path);
        }
    }

    /// Sojourn-time percentile `p` (0–100) of the packets that left the
    /// queue after `skip` departures, ms.
    pub fn sojourn_percentile_ms(&self, skip: usize, p: f64) -> f64 {
        let mut v: Vec<u64> = self.sojourn_us.iter().skip(skip).copied().collect();
        if v.is_empty() {
            return 0.0;
        }
        v.sort_unstable();
        let i = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
        v[i] as f64 / 1000.0
    }
}
