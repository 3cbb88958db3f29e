//! RTW-TCP's controller-lab acceptance scenario (moved from
//! `peregrine-cc`, which keeps no event loop), on a small test-only model: a
//! 10 Mbit/s bottleneck with a 1-BDP drop-tail queue, 40 ms base RTT, one
//! ACK per packet, DupThresh 3 (in packet numbers), RFC 6298 RTO with a
//! 200 ms minimum. At 20 s a hint {Blockage, predicted 150 ms} arrives and
//! every packet sent during [20 s, 20.15 s) is lost. RTW-TCP's cwnd 300 ms
//! after the blockage must be ≥ 90 % of its value just before, CUBIC's ≤ 80 %.
//!
//! Packets are never renumbered: a retransmission is a new packet number,
//! so `snd_una` is the lowest packet neither acknowledged nor declared lost.

use peregrine_cc::algos::cubic::CubicConfig;
use peregrine_cc::algos::rtwtcp::RtwTcpConfig;
use peregrine_cc::*;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::time::Duration;

const MSS: u32 = 1448;
const TX_NS: u64 = 1_158_400; // 1448 B at 10 Mbit/s
const BASE_RTT: Duration = Duration::from_millis(40);
const QUEUE_PKTS: usize = 34; // 1 BDP = 50,000 B
const MIN_RTO: Duration = Duration::from_millis(200);

struct Sim {
    cc: Box<dyn CongestionController>,
    now: Time,
    /// Outstanding packets: number → send time.
    outstanding: BTreeMap<u64, Time>,
    acked: Vec<bool>,
    snd_nxt: u64,
    largest_acked: u64,
    delivered: u64,
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    min_rtt: Option<Duration>,
    latest_rtt: Option<Duration>,
    backoff: u32,
    rto_at: Option<Time>,
    state: CaState,
    recover: u64,
    link_free_at: Time,
    queue: VecDeque<Time>,
    acks: BinaryHeap<Reverse<(Time, u64)>>,
    blackout: (Time, Time),
    /// Delay of the hint after the blackout starts.
    hint_delay: Duration,
    /// Report the ACK before the congestion event it reveals.
    ack_first: bool,
    trace: Vec<(Time, u64)>,
}

impl Sim {
    fn new(cc: Box<dyn CongestionController>) -> Sim {
        Sim {
            cc,
            now: Time::ZERO,
            outstanding: BTreeMap::new(),
            acked: Vec::new(),
            snd_nxt: 0,
            largest_acked: 0,
            delivered: 0,
            srtt: None,
            rttvar: Duration::ZERO,
            rto: Duration::from_secs(1),
            min_rtt: None,
            latest_rtt: None,
            backoff: 1,
            rto_at: None,
            state: CaState::Open,
            recover: 0,
            link_free_at: Time::ZERO,
            queue: VecDeque::new(),
            acks: BinaryHeap::new(),
            blackout: (Time::from_millis(20_000), Time::from_millis(20_150)),
            hint_delay: Duration::ZERO,
            ack_first: false,
            trace: Vec::new(),
        }
    }

    fn in_flight(&self) -> u32 {
        self.outstanding.len() as u32
    }

    fn snd_una(&self) -> u64 {
        self.outstanding
            .keys()
            .next()
            .copied()
            .unwrap_or(self.snd_nxt)
    }

    fn path(&self) -> PathInfo {
        let mut p = PathInfo::new(self.now, MSS);
        p.srtt = self.srtt;
        p.rttvar = self.srtt.map(|_| self.rttvar);
        p.rto = self.rto;
        p.min_rtt = self.min_rtt;
        p.latest_rtt = self.latest_rtt;
        p.snd_una = self.snd_una();
        p.snd_nxt = self.snd_nxt;
        p.delivered = self.delivered;
        p.in_flight = self.in_flight();
        p.cwnd_limited = true;
        p.ca_state = self.state;
        p
    }

    fn send_one(&mut self) {
        let pn = self.snd_nxt;
        self.snd_nxt += 1;
        self.acked.push(false);
        self.outstanding.insert(pn, self.now);
        let path = self.path();
        self.cc.on_packet_sent(&path, MSS);
        if self.rto_at.is_none() {
            self.rto_at = Some(self.now + self.rto * self.backoff);
        }
        if self.now >= self.blackout.0 && self.now < self.blackout.1 {
            return;
        }
        while self.queue.front().is_some_and(|&d| d <= self.now) {
            self.queue.pop_front();
        }
        if self.queue.len() > QUEUE_PKTS {
            return; // drop-tail: 1 in service + QUEUE_PKTS waiting
        }
        let depart = self.now.max(self.link_free_at) + Duration::from_nanos(TX_NS);
        self.link_free_at = depart;
        self.queue.push_back(depart);
        self.acks.push(Reverse((depart + BASE_RTT, pn)));
    }

    fn try_send(&mut self) {
        loop {
            match self.cc.send_gate(self.now) {
                SendGate::Normal => {
                    let cwnd = self.cc.cwnd_bytes() / u64::from(MSS);
                    if u64::from(self.in_flight()) >= cwnd {
                        return;
                    }
                    self.send_one();
                }
                SendGate::ProbeOnly { next_probe_at } => {
                    if self.now >= next_probe_at {
                        self.send_one();
                    }
                    return;
                }
            }
        }
    }

    fn on_ack(&mut self, pn: u64) {
        if self.acked[pn as usize] {
            return;
        }
        self.acked[pn as usize] = true;
        self.delivered += 1;
        let prior_in_flight = self.in_flight();
        let prior_una = self.snd_una();
        let mut rtt = None;
        if let Some(sent) = self.outstanding.remove(&pn) {
            let r = self.now - sent;
            rtt = Some(r);
            match self.srtt {
                None => {
                    self.srtt = Some(r);
                    self.rttvar = r / 2;
                }
                Some(s) => {
                    let diff = s.abs_diff(r);
                    self.rttvar = self.rttvar * 3 / 4 + diff / 4;
                    self.srtt = Some(s * 7 / 8 + r / 8);
                }
            }
            let srtt = self.srtt.unwrap_or(r);
            self.rto = (srtt + self.rttvar * 4).max(MIN_RTO);
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
            self.latest_rtt = Some(r);
            self.backoff = 1;
        }
        self.largest_acked = self.largest_acked.max(pn);
        let lost: Vec<u64> = self
            .outstanding
            .range(..self.largest_acked.saturating_sub(2))
            .map(|(&k, _)| k)
            .collect();
        // The connection tells the controller when the newest lost packet left.
        let lost_sent_at = lost
            .iter()
            .filter_map(|k| self.outstanding.get(k))
            .max()
            .copied();
        for k in &lost {
            self.outstanding.remove(k);
        }
        let ack = AckSample {
            acked_segs: 1,
            acked_bytes: u64::from(MSS),
            rtt,
            prior_in_flight,
            una_advanced: self.snd_una() > prior_una,
            is_dup_ack: false,
            newly_lost: lost.len() as u32,
            ..AckSample::default()
        };
        let snd_una = self.snd_una();
        if self.ack_first {
            let path = self.path();
            self.cc.on_ack(&ack, &path);
        }
        if !lost.is_empty() && self.state == CaState::Open {
            let path = self.path();
            let ev = CongestionEvent {
                kind: CongestionKind::Loss,
                now: self.now,
                is_persistent: false,
                lost_segs: lost.len() as u32,
                in_flight: self.in_flight(),
                lost_sent_at,
            };
            self.cc.on_congestion_event(&ev, &path);
            self.state = CaState::Recovery;
            self.recover = self.snd_nxt;
        } else if self.state != CaState::Open && snd_una >= self.recover {
            if self.state == CaState::Recovery {
                let path = self.path();
                self.cc.on_recovery_exit(&path);
            }
            self.state = CaState::Open;
        }
        if !self.ack_first {
            let path = self.path();
            self.cc.on_ack(&ack, &path);
        }
        self.rto_at = (self.in_flight() > 0).then(|| self.now + self.rto * self.backoff);
    }

    fn on_rto(&mut self) {
        self.outstanding.clear();
        let path = self.path();
        match self.cc.on_rto(&path) {
            CongestionResponse::Reduce => {
                self.state = CaState::Loss;
                self.recover = self.snd_nxt;
                self.backoff = (self.backoff * 2).min(64);
                self.rto_at = None;
            }
            CongestionResponse::Hold => {
                let t = self.cc.held_rto_timeout(self.now).unwrap_or(self.rto);
                self.rto_at = Some(self.now + t);
            }
        }
    }

    /// Run until `end_ms`; `hint` delivers the blockage hint at 20 s.
    fn run(&mut self, end_ms: u64, hint: bool) {
        let end = Time::from_millis(end_ms);
        let mut hint_at = hint.then_some(self.blackout.0 + self.hint_delay);
        self.cc.init(&self.path());
        self.try_send();
        loop {
            let probe = match self.cc.send_gate(self.now) {
                SendGate::ProbeOnly { next_probe_at } => Some(next_probe_at.max(self.now)),
                SendGate::Normal => None,
            };
            let next_ack = self.acks.peek().map(|Reverse((t, _))| *t);
            let candidates = [hint_at, next_ack, self.rto_at, probe];
            let Some(t) = candidates.into_iter().flatten().min() else {
                break;
            };
            if t > end {
                break;
            }
            self.now = t;
            if hint_at == Some(t) {
                hint_at = None;
                let h = LinkHint {
                    kind: LinkHintKind::Blockage,
                    issued_at: self.blackout.0,
                    predicted_duration: Some(Duration::from_millis(150)),
                    cqi: None,
                    speed_mps: None,
                };
                let path = self.path();
                self.cc.on_link_hint(&h, &path);
            } else if next_ack == Some(t) {
                let Some(Reverse((_, pn))) = self.acks.pop() else {
                    break;
                };
                self.on_ack(pn);
            } else if self.rto_at == Some(t) {
                self.rto_at = None;
                self.on_rto();
            }
            self.try_send();
            self.trace
                .push((self.now, self.cc.cwnd_bytes() / u64::from(MSS)));
        }
    }

    /// cwnd (segments) after the last event before `at_ms` (inclusive if `incl`).
    fn cwnd_at(&self, at_ms: u64, incl: bool) -> u64 {
        let at = Time::from_millis(at_ms);
        self.trace
            .iter()
            .take_while(|(t, _)| *t < at || (incl && *t == at))
            .last()
            .map_or(0, |&(_, c)| c)
    }
}

fn scenario(
    cc: Box<dyn CongestionController>,
    hint_delay: Duration,
    ack_first: bool,
) -> (u64, u64, Sim) {
    let mut sim = Sim::new(cc);
    sim.hint_delay = hint_delay;
    sim.ack_first = ack_first;
    sim.run(21_000, true);
    let before = sim.cwnd_at(20_000, false);
    let after = sim.cwnd_at(20_450, true);
    assert!(before >= 20, "warm-up too small: {before}");
    (before, after, sim)
}

/// The scenario as specified, plus a hint arriving 5 or 20 ms late (the
/// packets sent in between are lost) and both orders in which a connection
/// may report an ACK and the congestion event it reveals.
const VARIANTS: [(u64, bool); 6] = [
    (0, false),
    (0, true),
    (5_000, false),
    (5_000, true),
    (20_000, false),
    (20_000, true),
];

/// The issue-11 acceptance (cc-spec §3.16: ≥ 90 % of the window 300 ms
/// after the blockage) holds with the Freeze-TCP/Veno extensions, which
/// also hold the queue overflow of the refill burst.
#[test]
fn lab_blockage_rtwtcp_keeps_its_window() {
    for (delay_us, ack_first) in VARIANTS {
        let cc = Box::new(RtwTcpConfig::with_extensions().build());
        let (before, after, _) = scenario(cc, Duration::from_micros(delay_us), ack_first);
        assert!(
            after * 10 >= before * 9,
            "RTW-TCP cwnd {before} → {after} (hint +{delay_us} µs, ack first {ack_first})"
        );
    }
}

/// Seed 004 as written (the default): the blockage's losses and the RTO
/// after it are held, but the refill burst's queue overflow is CUBIC's
/// (one multiplicative decrease, not CUBIC's RTO collapse).
#[test]
fn lab_blockage_seed004_holds_the_outage_and_reduces_on_the_overflow() {
    for (delay_us, ack_first) in VARIANTS {
        let d = Duration::from_micros(delay_us);
        let (before, after, _) = scenario(Box::new(RtwTcpConfig::default().build()), d, ack_first);
        let (c_before, c_after, _) =
            scenario(Box::new(CubicConfig::default().build()), d, ack_first);
        eprintln!("hint +{delay_us} µs, ack first {ack_first}: RTW-TCP {before} → {after}, CUBIC {c_before} → {c_after}");
        assert!(
            after > c_after && after * 10 >= before * 7,
            "RTW-TCP {before} → {after} vs CUBIC {c_before} → {c_after} (hint +{delay_us} µs, ack first {ack_first})"
        );
    }
}

#[test]
fn lab_blockage_cubic_collapses() {
    for (delay_us, ack_first) in VARIANTS {
        let cc = Box::new(CubicConfig::default().build());
        let (before, after, _) = scenario(cc, Duration::from_micros(delay_us), ack_first);
        assert!(
            after * 10 <= before * 8,
            "CUBIC cwnd {before} → {after} (hint +{delay_us} µs, ack first {ack_first})"
        );
    }
}

#[test]
fn lab_blockage_extensions_keep_the_window_without_the_proactive_freeze() {
    // Loss-triggered freezing only: the RTO comes after the hint expired,
    // but it fires within an RTO of the predicted outage's end and is held
    // since issue 39, so the pro-active freeze is no longer needed here.
    let reactive = RtwTcpConfig {
        freeze_on_hint: false,
        ..RtwTcpConfig::with_extensions()
    };
    let (before, after, _) = scenario(Box::new(reactive.build()), Duration::ZERO, false);
    assert!(after * 10 >= before * 9, "reactive {before} → {after}");
}

#[test]
fn lab_rtwtcp_is_cubic_under_congestion() {
    // Before the blockage every loss is a queue overflow: RTW-TCP must reduce
    // exactly as CUBIC does (seed 004: no prediction, no hold).
    let (_, _, rtw) = scenario(
        Box::new(RtwTcpConfig::default().build()),
        Duration::ZERO,
        false,
    );
    let (_, _, cubic) = scenario(
        Box::new(CubicConfig::default().build()),
        Duration::ZERO,
        false,
    );
    let until = Time::from_millis(20_000);
    let a: Vec<_> = rtw.trace.iter().filter(|(t, _)| *t < until).collect();
    let b: Vec<_> = cubic.trace.iter().filter(|(t, _)| *t < until).collect();
    assert_eq!(a, b);
}
