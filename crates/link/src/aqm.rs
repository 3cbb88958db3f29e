//! Queue disciplines: drop-tail and the AQMs — CoDel (RFC 8289),
//! FQ-CoDel (RFC 8290), PIE (RFC 8033), RED (Floyd & Jacobson 1993) and
//! DualPI2 (RFC 9332) — with ECN marking.
//!
//! A [`Qdisc`] holds items that implement [`Queued`] (their size, their
//! ECN codepoint, a flow key) with their arrival time. [`Qdisc::enqueue`]
//! applies the hard limit (the link's [`QueueLimit`]) and the enqueue-time
//! AQMs (PIE, RED); [`Qdisc::dequeue`] applies the dequeue-time ones
//! (CoDel, FQ-CoDel, DualPI2). Where an AQM decides to signal congestion
//! on an ECN-capable item and its `ecn` switch is on, the item is marked
//! CE and sent on instead of dropped. Every periodic update (PIE's and
//! PI2's `t_update`) is caught up lazily from the `now` of each call, so
//! a qdisc is a pure value in virtual time like the rest of the crate,
//! and every random decision draws from the caller's
//! [`Uniform`](crate::uniform::Uniform) source.

use crate::fifo::{Fifo, QueueLimit, WireSize};
use crate::uniform::{chance, Uniform};
use crate::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// The ECN field of an IP header (RFC 3168, RFC 9331).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// Not ECN-capable (00).
    #[default]
    NotEct,
    /// ECN-capable, classic (10).
    Ect0,
    /// ECN-capable, L4S (01).
    Ect1,
    /// Congestion experienced (11).
    Ce,
}

impl Ecn {
    /// Whether the sender declared ECN capability (ECT(0), ECT(1) or CE).
    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
    /// The two ECN bits as they sit in the IP header.
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }
    /// From the two low bits of an IPv4 TOS / IPv6 traffic class byte.
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
}

/// What a queue discipline needs to know about an item.
pub trait Queued: WireSize {
    /// Its ECN codepoint.
    fn ecn(&self) -> Ecn;
    /// Mark it Congestion Experienced.
    fn set_ce(&mut self);
    /// Its flow (FQ-CoDel hashes it into a bucket): the 5-tuple, or the
    /// simulator's flow and direction.
    fn flow_key(&self) -> u64;
}

/// CoDel's parameters (RFC 8289 §4.2 and §5, Linux `tc codel` for `ecn`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CodelParams {
    /// Acceptable standing queue delay (default 5 ms).
    pub target: Duration,
    /// Sliding window over which the minimum delay is tracked (default
    /// 100 ms).
    pub interval: Duration,
    /// A queue of at most this many bytes is never dropped from (RFC
    /// 8289's MAXPACKET; default 1514).
    pub mtu_bytes: u64,
    /// Mark ECT packets instead of dropping (default false).
    pub ecn: bool,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            mtu_bytes: 1514,
            ecn: false,
        }
    }
}

/// FQ-CoDel's parameters (RFC 8290 §5 and §4.1).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct FqCodelParams {
    /// Each flow queue's CoDel (`ecn` defaults to true here, as in Linux).
    pub codel: CodelParams,
    /// Flow buckets (default 1024).
    pub flows: u32,
    /// DRR quantum, bytes (default 1514).
    pub quantum_bytes: u64,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams {
            codel: CodelParams {
                ecn: true,
                ..CodelParams::default()
            },
            flows: 1024,
            quantum_bytes: 1514,
        }
    }
}

/// PIE's parameters (RFC 8033 §4 and §5).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PieParams {
    /// QDELAY_REF, the target queue delay (default 15 ms).
    pub target: Duration,
    /// T_UPDATE, the update interval (default 15 ms).
    pub t_update: Duration,
    /// α, Hz (default 0.125).
    pub alpha: f64,
    /// β, Hz (default 1.25).
    pub beta: f64,
    /// MAX_BURST (default 150 ms).
    pub max_burst: Duration,
    /// Mark ECT packets instead of dropping while the drop probability is
    /// at most `mark_ecn_threshold` (default false).
    pub ecn: bool,
    /// Above this probability ECT packets are dropped too (default 0.1).
    pub mark_ecn_threshold: f64,
}

impl Default for PieParams {
    fn default() -> Self {
        PieParams {
            target: Duration::from_millis(15),
            t_update: Duration::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: Duration::from_millis(150),
            ecn: false,
            mark_ecn_threshold: 0.1,
        }
    }
}

/// RED's parameters (Floyd & Jacobson 1993; Floyd's 1997 recommendations
/// for the defaults).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RedParams {
    /// Lower threshold of the average queue, packets (default 5).
    pub min_th_packets: f64,
    /// Upper threshold, packets (default 15, 3 × `min_th`).
    pub max_th_packets: f64,
    /// Marking probability at `max_th` (default 0.1).
    pub max_p: f64,
    /// EWMA weight of the average queue (default 0.002).
    pub w_q: f64,
    /// Mark ECT packets instead of dropping (default false).
    pub ecn: bool,
}

impl Default for RedParams {
    fn default() -> Self {
        RedParams {
            min_th_packets: 5.0,
            max_th_packets: 15.0,
            max_p: 0.1,
            w_q: 0.002,
            ecn: false,
        }
    }
}

/// DualPI2's parameters (RFC 9332; the defaults of Linux's `sch_dualpi2`,
/// its reference implementation).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct DualPi2Params {
    /// The classic queue's delay target (default 15 ms).
    pub target: Duration,
    /// PI2 update interval (default 16 ms).
    pub t_update: Duration,
    /// PI2 integral gain, Hz (default 0.16).
    pub alpha: f64,
    /// PI2 proportional gain, Hz (default 3.2).
    pub beta: f64,
    /// Coupling factor k (default 2): p_CL = k·p′, p_C = p′².
    pub k: f64,
    /// The L4S queue's step marking threshold on its sojourn time
    /// (default 1 ms). On a link of known rate it is at least two
    /// [`STEP_FLOOR_BYTES`]-byte packets' serialisation time (the FLOOR of
    /// DOCSIS 3.1's low-latency queue, as ns-3's DualQ model has it): at
    /// 20 Mbit/s one full packet takes 0.6 ms, so an L4S packet that only
    /// waited for a classic packet on the wire and one of its own would
    /// otherwise be marked as if a queue stood.
    pub step_thresh: Duration,
    /// Weight of the classic queue in the scheduler, percent (Linux's
    /// `c_protection`, default 10).
    pub c_protection_percent: u8,
    /// Mark ECT(0) packets of the classic queue instead of dropping
    /// (default true; the L4S queue always marks).
    pub ecn: bool,
}

impl Default for DualPi2Params {
    fn default() -> Self {
        DualPi2Params {
            target: Duration::from_millis(15),
            t_update: Duration::from_millis(16),
            alpha: 0.16,
            beta: 3.2,
            k: 2.0,
            step_thresh: Duration::from_millis(1),
            c_protection_percent: 10,
            ecn: true,
        }
    }
}

/// The packet size of DualPI2's step-threshold floor, bytes (an
/// Ethernet MTU-sized frame).
pub const STEP_FLOOR_BYTES: u64 = 1514;

/// Which discipline, with its parameters.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub enum AqmConfig {
    /// A drop-tail FIFO (the default).
    #[default]
    DropTail,
    /// CoDel.
    Codel(CodelParams),
    /// FQ-CoDel.
    FqCodel(FqCodelParams),
    /// PIE.
    Pie(PieParams),
    /// RED.
    Red(RedParams),
    /// DualPI2.
    DualPi2(DualPi2Params),
}

impl AqmConfig {
    /// The registered model names, as scenario files and `--aqm` spell them.
    pub const NAMES: &'static [&'static str] =
        &["drop_tail", "codel", "fq_codel", "pie", "red", "dualpi2"];

    /// The model's name.
    pub fn name(&self) -> &'static str {
        match self {
            AqmConfig::DropTail => "drop_tail",
            AqmConfig::Codel(_) => "codel",
            AqmConfig::FqCodel(_) => "fq_codel",
            AqmConfig::Pie(_) => "pie",
            AqmConfig::Red(_) => "red",
            AqmConfig::DualPi2(_) => "dualpi2",
        }
    }

    /// The model `name` with its defaults, or `None` for an unknown name.
    pub fn defaults(name: &str) -> Option<AqmConfig> {
        Some(match name {
            "drop_tail" => AqmConfig::DropTail,
            "codel" => AqmConfig::Codel(CodelParams::default()),
            "fq_codel" => AqmConfig::FqCodel(FqCodelParams::default()),
            "pie" => AqmConfig::Pie(PieParams::default()),
            "red" => AqmConfig::Red(RedParams::default()),
            "dualpi2" => AqmConfig::DualPi2(DualPi2Params::default()),
            _ => return None,
        })
    }
}

/// Counters of a queue discipline.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AqmStats {
    /// Items marked CE instead of dropped.
    pub ce_marked: u64,
    /// Items dropped by the AQM's decision (not by the hard limit).
    pub aqm_dropped: u64,
    /// Items FQ-CoDel dropped from its fattest flow at the hard limit
    /// (handed back by [`Qdisc::enqueue`] in `dropped`; the other
    /// disciplines refuse the arrival instead, [`Refused::Full`]).
    pub overlimit_dropped: u64,
}

/// Why [`Qdisc::enqueue`] refused an item.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The hard limit (the queue is full).
    Full,
    /// An enqueue-time AQM (PIE, RED) dropped it.
    Aqm,
}

/// An item with its arrival time.
#[derive(Debug)]
struct Stamped<T> {
    item: T,
    at: Time,
}

impl<T: WireSize> WireSize for Stamped<T> {
    fn wire_bytes(&self) -> u64 {
        self.item.wire_bytes()
    }
}

fn sojourn(now: Time, at: Time) -> Duration {
    now.saturating_duration_since(at)
}

/// CoDel's state (RFC 8289 §5's `codel_queue_t` variables).
#[derive(Clone, Debug, Default)]
struct CodelState {
    first_above_time: Option<Time>,
    drop_next: Time,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

fn control_law(t: Time, interval: Duration, count: u32) -> Time {
    t + interval.div_f64(f64::from(count.max(1)).sqrt())
}

impl CodelState {
    /// RFC 8289's `dodequeue`: the head and whether it may be dropped.
    fn dodequeue<T: WireSize>(
        &mut self,
        now: Time,
        q: &mut Fifo<Stamped<T>>,
        p: &CodelParams,
    ) -> Option<(Stamped<T>, bool)> {
        let Some(s) = q.pop() else {
            self.first_above_time = None;
            return None;
        };
        let mut ok_to_drop = false;
        if sojourn(now, s.at) < p.target || q.bytes() <= p.mtu_bytes {
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                None => self.first_above_time = Some(now + p.interval),
                Some(t) if now >= t => ok_to_drop = true,
                _ => {}
            }
        }
        Some((s, ok_to_drop))
    }

    /// RFC 8289's `dequeue`, with Linux's ECN: a packet CoDel would drop
    /// is marked instead when ECT and `ecn` is on, and the mark ends this
    /// dequeue's drop loop.
    fn dequeue<T: Queued>(
        &mut self,
        now: Time,
        q: &mut Fifo<Stamped<T>>,
        p: &CodelParams,
        dropped: &mut Vec<T>,
        stats: &mut AqmStats,
    ) -> Option<T> {
        let Some((mut s, mut ok)) = self.dodequeue(now, q, p) else {
            self.dropping = false;
            return None;
        };
        if self.dropping {
            if !ok {
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                self.count += 1;
                if p.ecn && s.item.ecn().is_ect() {
                    s.item.set_ce();
                    stats.ce_marked += 1;
                    self.drop_next = control_law(self.drop_next, p.interval, self.count);
                    return Some(s.item);
                }
                stats.aqm_dropped += 1;
                dropped.push(s.item);
                match self.dodequeue(now, q, p) {
                    None => {
                        self.dropping = false;
                        return None;
                    }
                    Some((next, next_ok)) => {
                        s = next;
                        ok = next_ok;
                    }
                }
                if !ok {
                    self.dropping = false;
                } else {
                    self.drop_next = control_law(self.drop_next, p.interval, self.count);
                }
            }
        } else if ok {
            let kept = if p.ecn && s.item.ecn().is_ect() {
                s.item.set_ce();
                stats.ce_marked += 1;
                Some(s.item)
            } else {
                stats.aqm_dropped += 1;
                dropped.push(s.item);
                None
            };
            self.dropping = true;
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = 1;
            if delta > 1 && now.saturating_duration_since(self.drop_next) < p.interval * 16 {
                self.count = delta;
            }
            self.drop_next = control_law(now, p.interval, self.count);
            self.lastcount = self.count;
            if kept.is_some() {
                return kept;
            }
            return match self.dodequeue(now, q, p) {
                Some((next, _)) => Some(next.item),
                None => {
                    self.dropping = false;
                    None
                }
            };
        }
        Some(s.item)
    }
}

/// One FQ-CoDel flow queue.
#[derive(Debug)]
struct FlowQueue<T> {
    q: Fifo<Stamped<T>>,
    codel: CodelState,
    deficit: i64,
    listed: bool,
}

/// PIE's state (RFC 8033 §4 and §5).
#[derive(Clone, Debug)]
struct PieState {
    drop_prob: f64,
    qdelay_old: Duration,
    burst_allowance: Duration,
    next_update: Time,
}

/// RED's state.
#[derive(Clone, Debug)]
struct RedState {
    avg: f64,
    count: i64,
    idle_since: Option<Time>,
}

/// DualPI2's state.
#[derive(Clone, Debug)]
struct DualPi2State {
    /// The step threshold in force: `step_thresh`, raised to the floor.
    step: Duration,
    p_prime: f64,
    prev_q: Duration,
    next_update: Time,
    credit: i64,
}

#[derive(Debug)]
enum Kind<T> {
    Fifo(Fifo<Stamped<T>>),
    Codel(Fifo<Stamped<T>>, CodelState),
    FqCodel {
        flows: Vec<FlowQueue<T>>,
        new_flows: VecDeque<usize>,
        old_flows: VecDeque<usize>,
    },
    Pie(Fifo<Stamped<T>>, PieState),
    Red(Fifo<Stamped<T>>, RedState),
    DualPi2 {
        l: Fifo<Stamped<T>>,
        c: Fifo<Stamped<T>>,
        s: DualPi2State,
    },
}

/// A queue discipline: a hard limit, an [`AqmConfig`] and the items.
#[derive(Debug)]
pub struct Qdisc<T> {
    config: AqmConfig,
    limit: QueueLimit,
    /// Time to send a 1500-byte packet (RED's idle decay); 1 ms if the
    /// rate is unknown.
    packet_time: Duration,
    kind: Kind<T>,
    packets: u64,
    bytes: u64,
    stats: AqmStats,
}

impl<T: Queued> Qdisc<T> {
    /// An empty discipline. `rate_bps` (if known) sets RED's typical
    /// packet time for the idle decay of its average and the floor of
    /// DualPI2's step threshold.
    pub fn new(config: AqmConfig, limit: QueueLimit, rate_bps: Option<u64>) -> Qdisc<T> {
        let kind = match config {
            AqmConfig::DropTail => Kind::Fifo(Fifo::new()),
            AqmConfig::Codel(_) => Kind::Codel(Fifo::new(), CodelState::default()),
            AqmConfig::FqCodel(p) => Kind::FqCodel {
                flows: (0..p.flows.max(1))
                    .map(|_| FlowQueue {
                        q: Fifo::new(),
                        codel: CodelState::default(),
                        deficit: 0,
                        listed: false,
                    })
                    .collect(),
                new_flows: VecDeque::new(),
                old_flows: VecDeque::new(),
            },
            AqmConfig::Pie(p) => Kind::Pie(
                Fifo::new(),
                PieState {
                    drop_prob: 0.0,
                    qdelay_old: Duration::ZERO,
                    burst_allowance: p.max_burst,
                    next_update: Time::ZERO + p.t_update,
                },
            ),
            AqmConfig::Red(_) => Kind::Red(
                Fifo::new(),
                RedState {
                    avg: 0.0,
                    count: -1,
                    idle_since: Some(Time::ZERO),
                },
            ),
            AqmConfig::DualPi2(p) => Kind::DualPi2 {
                l: Fifo::new(),
                c: Fifo::new(),
                s: DualPi2State {
                    step: p.step_thresh.max(match rate_bps {
                        Some(r) if r > 0 => Duration::from_nanos(
                            2 * crate::serialise::serialisation_ns(STEP_FLOOR_BYTES, r),
                        ),
                        _ => Duration::ZERO,
                    }),
                    p_prime: 0.0,
                    prev_q: Duration::ZERO,
                    next_update: Time::ZERO + p.t_update,
                    credit: 0,
                },
            },
        };
        let packet_time = match rate_bps {
            Some(r) if r > 0 => {
                Duration::from_nanos(crate::serialise::serialisation_ns(1500, r).max(1))
            }
            _ => Duration::from_millis(1),
        };
        Qdisc {
            config,
            limit,
            packet_time,
            kind,
            packets: 0,
            bytes: 0,
            stats: AqmStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AqmConfig {
        &self.config
    }
    /// Counters.
    pub fn stats(&self) -> &AqmStats {
        &self.stats
    }
    /// Packets and bytes held. O(1).
    pub fn backlog(&self) -> (u64, u64) {
        (self.packets, self.bytes)
    }
    /// Whether nothing is held. O(1).
    pub fn is_empty(&self) -> bool {
        self.packets == 0
    }

    /// The head a plain FIFO would send next (drop-tail and the
    /// single-queue AQMs; `None` for FQ-CoDel and DualPI2, whose next item
    /// is only known at dequeue). O(1).
    pub fn front(&self) -> Option<&T> {
        match &self.kind {
            Kind::Fifo(q) | Kind::Codel(q, _) | Kind::Pie(q, _) | Kind::Red(q, _) => {
                q.front().map(|s| &s.item)
            }
            _ => None,
        }
    }

    /// Offer `item` at `now`. Refused by the hard limit (FQ-CoDel instead
    /// drops from the head of its fattest flow, handed back in `dropped`),
    /// or by PIE's or RED's early drop; an item those would drop is marked
    /// CE instead when it is ECT and `ecn` is on. O(1), but O(flows) for
    /// FQ-CoDel when the limit is hit.
    pub fn enqueue(
        &mut self,
        now: Time,
        mut item: T,
        u: &mut impl Uniform,
        dropped: &mut Vec<T>,
    ) -> Result<(), (T, Refused)> {
        let size = item.wire_bytes();
        let full = !self.limit.admits(self.packets, self.bytes, size);
        let config = self.config;
        match (&mut self.kind, config) {
            (Kind::FqCodel { .. }, AqmConfig::FqCodel(_)) => {}
            _ if full => return Err((item, Refused::Full)),
            (Kind::Pie(q, s), AqmConfig::Pie(p)) => {
                pie_update(now, q, s, &p);
                if pie_drop_early(q, s, &p, u) {
                    if p.ecn && item.ecn().is_ect() && s.drop_prob <= p.mark_ecn_threshold {
                        item.set_ce();
                        self.stats.ce_marked += 1;
                    } else {
                        self.stats.aqm_dropped += 1;
                        return Err((item, Refused::Aqm));
                    }
                }
            }
            (Kind::Red(q, s), AqmConfig::Red(p)) => {
                let signal = red_signals(now, q.len(), s, &p, self.packet_time, u);
                if signal {
                    if p.ecn && item.ecn().is_ect() {
                        item.set_ce();
                        self.stats.ce_marked += 1;
                    } else {
                        self.stats.aqm_dropped += 1;
                        return Err((item, Refused::Aqm));
                    }
                }
            }
            (Kind::DualPi2 { c, s, .. }, AqmConfig::DualPi2(p)) => {
                pi2_update(now, c, s, &p);
            }
            _ => {}
        }
        let stamped = Stamped { item, at: now };
        match &mut self.kind {
            Kind::Fifo(q) | Kind::Codel(q, _) | Kind::Pie(q, _) | Kind::Red(q, _) => {
                q.push(stamped)
            }
            Kind::FqCodel {
                flows,
                new_flows,
                old_flows: _,
            } => {
                let AqmConfig::FqCodel(p) = config else {
                    unreachable!("kind follows config")
                };
                let i = bucket(stamped.item.flow_key(), flows.len());
                let f = &mut flows[i];
                f.q.push(stamped);
                if !f.listed {
                    f.listed = true;
                    f.deficit = p.quantum_bytes as i64;
                    new_flows.push_back(i);
                }
                self.packets += 1;
                self.bytes += size;
                if full {
                    // RFC 8290 §4.1.2: drop from the head of the fattest flow.
                    let fat = (0..flows.len())
                        .max_by_key(|&j| (flows[j].q.bytes(), std::cmp::Reverse(j)))
                        .unwrap_or(i);
                    if let Some(s) = flows[fat].q.pop() {
                        self.packets -= 1;
                        self.bytes -= s.item.wire_bytes();
                        self.stats.overlimit_dropped += 1;
                        dropped.push(s.item);
                    }
                }
                return Ok(());
            }
            Kind::DualPi2 { l, c, .. } => {
                if stamped.item.ecn() == Ecn::Ect1 || stamped.item.ecn() == Ecn::Ce {
                    l.push(stamped)
                } else {
                    c.push(stamped)
                }
            }
        }
        self.packets += 1;
        self.bytes += size;
        Ok(())
    }

    /// The next item to send at `now`, if any; items the AQM drops on the
    /// way are appended to `dropped`. O(1) amortized (FQ-CoDel: O(1) per
    /// flow visited).
    pub fn dequeue(&mut self, now: Time, u: &mut impl Uniform, dropped: &mut Vec<T>) -> Option<T> {
        let before = dropped.len();
        let out = self.dequeue_inner(now, u, dropped);
        for d in &dropped[before..] {
            self.packets -= 1;
            self.bytes -= d.wire_bytes();
        }
        if let Some(t) = &out {
            self.packets -= 1;
            self.bytes -= t.wire_bytes();
        }
        out
    }

    fn dequeue_inner(
        &mut self,
        now: Time,
        u: &mut impl Uniform,
        dropped: &mut Vec<T>,
    ) -> Option<T> {
        let config = self.config;
        let stats = &mut self.stats;
        match (&mut self.kind, config) {
            (Kind::Fifo(q), _) => q.pop().map(|s| s.item),
            (Kind::Codel(q, st), AqmConfig::Codel(p)) => st.dequeue(now, q, &p, dropped, stats),
            (Kind::Pie(q, s), AqmConfig::Pie(p)) => {
                pie_update(now, q, s, &p);
                q.pop().map(|s| s.item)
            }
            (Kind::Red(q, s), _) => {
                let out = q.pop().map(|s| s.item);
                if q.is_empty() {
                    s.idle_since = Some(now);
                }
                out
            }
            (
                Kind::FqCodel {
                    flows,
                    new_flows,
                    old_flows,
                },
                AqmConfig::FqCodel(p),
            ) => loop {
                // RFC 8290 §4.2: new flows first, then old ones, by DRR.
                let from_new = !new_flows.is_empty();
                let i = *(if from_new { &*new_flows } else { &*old_flows }).front()?;
                let f = &mut flows[i];
                if f.deficit <= 0 {
                    f.deficit += p.quantum_bytes as i64;
                    if from_new {
                        new_flows.pop_front();
                    } else {
                        old_flows.pop_front();
                    }
                    old_flows.push_back(i);
                    continue;
                }
                match f.codel.dequeue(now, &mut f.q, &p.codel, dropped, stats) {
                    Some(item) => {
                        f.deficit -= item.wire_bytes() as i64;
                        return Some(item);
                    }
                    None => {
                        if from_new {
                            new_flows.pop_front();
                        } else {
                            old_flows.pop_front();
                        }
                        // An emptied new flow goes to the old list (so it
                        // cannot jump the line again at once) while old
                        // flows wait; otherwise it leaves the lists.
                        if from_new && !old_flows.is_empty() {
                            old_flows.push_back(i);
                        } else {
                            f.listed = false;
                        }
                    }
                }
            },
            (Kind::DualPi2 { l, c, s }, AqmConfig::DualPi2(p)) => {
                pi2_update(now, c, s, &p);
                loop {
                    let take_l = !l.is_empty() && (c.is_empty() || s.credit <= 0);
                    if take_l {
                        let mut st = l.pop()?;
                        if !c.is_empty() {
                            s.credit +=
                                i64::from(p.c_protection_percent) * st.item.wire_bytes() as i64;
                        }
                        // L4S: step marking on the sojourn, or the coupled
                        // probability k·p′, whichever says mark.
                        let step = sojourn(now, st.at) >= s.step;
                        if step || chance(u, (p.k * s.p_prime).min(1.0)) {
                            if st.item.ecn() != Ecn::Ce {
                                st.item.set_ce();
                            }
                            stats.ce_marked += 1;
                        }
                        return Some(st.item);
                    }
                    let mut st = c.pop()?;
                    if !l.is_empty() {
                        s.credit -= i64::from(100 - p.c_protection_percent.min(100))
                            * st.item.wire_bytes() as i64;
                    }
                    // Classic: p_C = p′², drop (or mark if ECT) with it.
                    if chance(u, (s.p_prime * s.p_prime).min(1.0)) {
                        if p.ecn && st.item.ecn().is_ect() {
                            st.item.set_ce();
                            stats.ce_marked += 1;
                        } else {
                            stats.aqm_dropped += 1;
                            dropped.push(st.item);
                            continue;
                        }
                    }
                    return Some(st.item);
                }
            }
            _ => unreachable!("kind follows config"),
        }
    }

    /// Empty the discipline (a route flush), handing back what it held.
    /// O(items + flows).
    pub fn drain(&mut self) -> Vec<T> {
        self.packets = 0;
        self.bytes = 0;
        match &mut self.kind {
            Kind::Fifo(q) | Kind::Codel(q, _) | Kind::Pie(q, _) | Kind::Red(q, _) => {
                q.drain().map(|s| s.item).collect()
            }
            Kind::FqCodel {
                flows,
                new_flows,
                old_flows,
            } => {
                new_flows.clear();
                old_flows.clear();
                let mut all: Vec<Stamped<T>> = Vec::new();
                for f in flows.iter_mut() {
                    f.listed = false;
                    all.extend(f.q.drain());
                }
                all.sort_by_key(|s| s.at);
                all.into_iter().map(|s| s.item).collect()
            }
            Kind::DualPi2 { l, c, .. } => {
                let mut all: Vec<Stamped<T>> = l.drain().chain(c.drain()).collect();
                all.sort_by_key(|s| s.at);
                all.into_iter().map(|s| s.item).collect()
            }
        }
    }

    /// The current drop probability of PIE or DualPI2's p′ (for tests and
    /// traces); `None` for the others.
    pub fn probability(&self) -> Option<f64> {
        match &self.kind {
            Kind::Pie(_, s) => Some(s.drop_prob),
            Kind::DualPi2 { s, .. } => Some(s.p_prime),
            _ => None,
        }
    }

    /// PIE's burst allowance left (for tests).
    pub fn burst_allowance(&self) -> Option<Duration> {
        match &self.kind {
            Kind::Pie(_, s) => Some(s.burst_allowance),
            _ => None,
        }
    }
}

fn bucket(key: u64, n: usize) -> usize {
    (peregrine_cc::splitmix::mix64(key) % n as u64) as usize
}

fn head_delay<T>(now: Time, q: &Fifo<Stamped<T>>) -> Duration
where
    T: WireSize,
{
    q.front().map_or(Duration::ZERO, |s| sojourn(now, s.at))
}

/// RFC 8033 §4.2: the periodic drop-probability update, caught up to `now`.
fn pie_update<T: WireSize>(now: Time, q: &Fifo<Stamped<T>>, s: &mut PieState, p: &PieParams) {
    while now >= s.next_update {
        let at = s.next_update;
        s.next_update = at + p.t_update;
        let qdelay = head_delay(at, q);
        let secs = |d: Duration| d.as_secs_f64();
        let mut delta = p.alpha * (secs(qdelay) - secs(p.target))
            + p.beta * (secs(qdelay) - secs(s.qdelay_old));
        // Auto-tuning: small probabilities move in small steps.
        let scale = match s.drop_prob {
            x if x < 0.000_001 => 1.0 / 2048.0,
            x if x < 0.000_01 => 1.0 / 512.0,
            x if x < 0.000_1 => 1.0 / 128.0,
            x if x < 0.001 => 1.0 / 32.0,
            x if x < 0.01 => 1.0 / 8.0,
            x if x < 0.1 => 1.0 / 2.0,
            _ => 1.0,
        };
        delta *= scale;
        if s.drop_prob >= 0.1 && delta > 0.02 {
            delta = 0.02;
        }
        s.drop_prob += delta;
        if qdelay > Duration::from_millis(250) {
            s.drop_prob += 0.02;
        }
        if qdelay.is_zero() && s.qdelay_old.is_zero() {
            s.drop_prob *= 0.98;
        }
        s.drop_prob = s.drop_prob.clamp(0.0, 1.0);
        s.burst_allowance = s.burst_allowance.saturating_sub(p.t_update);
        if s.drop_prob == 0.0 && qdelay < p.target / 2 && s.qdelay_old < p.target / 2 {
            s.burst_allowance = p.max_burst;
        }
        s.qdelay_old = qdelay;
    }
}

/// RFC 8033 §4.1's `drop_early`.
fn pie_drop_early<T: WireSize>(
    q: &Fifo<Stamped<T>>,
    s: &PieState,
    p: &PieParams,
    u: &mut impl Uniform,
) -> bool {
    if !s.burst_allowance.is_zero() {
        return false;
    }
    if s.qdelay_old < p.target / 2 && s.drop_prob < 0.2 {
        return false;
    }
    if q.bytes() <= 2 * 1500 {
        return false;
    }
    chance(u, s.drop_prob)
}

/// RED's arrival decision (Floyd & Jacobson 1993, Fig. 2): update the
/// average (decayed over an idle period as if `m` small packets had been
/// sent), then mark with `p_a = p_b / (1 − count·p_b)` between the
/// thresholds, always above.
fn red_signals(
    now: Time,
    q_len: usize,
    s: &mut RedState,
    p: &RedParams,
    packet_time: Duration,
    u: &mut impl Uniform,
) -> bool {
    match s.idle_since.take() {
        Some(since) if q_len == 0 => {
            let m = now.saturating_duration_since(since).as_secs_f64() / packet_time.as_secs_f64();
            s.avg *= (1.0 - p.w_q).powf(m);
        }
        _ => s.avg = (1.0 - p.w_q) * s.avg + p.w_q * q_len as f64,
    }
    if s.avg < p.min_th_packets {
        s.count = -1;
        return false;
    }
    if s.avg >= p.max_th_packets {
        s.count = 0;
        return true;
    }
    s.count += 1;
    let p_b = p.max_p * (s.avg - p.min_th_packets) / (p.max_th_packets - p.min_th_packets);
    let denom = 1.0 - s.count as f64 * p_b;
    let p_a = if denom <= 0.0 { 1.0 } else { p_b / denom };
    if chance(u, p_a) {
        s.count = 0;
        true
    } else {
        false
    }
}

/// RFC 9332 §2.4 / Appendix A: PI2's update of p′ from the classic
/// queue's delay, caught up to `now`.
fn pi2_update<T: WireSize>(
    now: Time,
    c: &Fifo<Stamped<T>>,
    s: &mut DualPi2State,
    p: &DualPi2Params,
) {
    while now >= s.next_update {
        let at = s.next_update;
        s.next_update = at + p.t_update;
        let curq = head_delay(at, c);
        let secs = |d: Duration| d.as_secs_f64();
        s.p_prime +=
            p.alpha * (secs(curq) - secs(p.target)) + p.beta * (secs(curq) - secs(s.prev_q));
        s.p_prime = s.p_prime.clamp(0.0, 1.0);
        s.prev_q = curq;
    }
}

#[cfg(test)]
#[path = "aqm_tests.rs"]
mod tests;
