//! OLSR (RFC 3626) as a pure state machine, one per node (issue 22,
//! deliverable 1), and [`OlsrAgent`], the same as traffic: the engine
//! (`engine::olsr`) runs one agent per node over the DCF's broadcast
//! frames when a scenario says `[wireless] routing = "olsr"`.
//!
//! A node learns only from the messages it receives:
//!
//! * **link sensing** (RFC 3626 §7.1.1, §8.1): a HELLO from a neighbour
//!   refreshes the link's asymmetric time; when the HELLO lists us, the
//!   link becomes symmetric for `NEIGHB_HOLD_TIME` (3 HELLO intervals);
//! * **2-hop neighbours** (§8.2) from the symmetric neighbours listed in
//!   a symmetric neighbour's HELLO;
//! * **MPR selection** (§8.3.1): the greedy heuristic — neighbours that
//!   are the only way to some 2-hop neighbour first, then the neighbour
//!   covering most uncovered 2-hop neighbours (ties: the lower address);
//! * **MPR selectors** (§8.4) from HELLOs that list us as MPR;
//! * **TC** (§9): a node with MPR selectors advertises them every TC
//!   interval with an ANSN that grows when the set changes; TCs are
//!   flooded by MPRs only (a node forwards a message first received from
//!   a neighbour that selected it as MPR, §3.4), once (duplicate set);
//!   the topology set keeps, per originator, the latest ANSN's entries for
//!   `TOP_HOLD_TIME`;
//! * **routes** (§10): breadth-first from the symmetric neighbours, then
//!   the 2-hop neighbours, then the topology set — hop count, ties by the
//!   lower next-hop address.
//!
//! Messages are encoded in RFC 3626's wire format (packet header, message
//! header, HELLO link codes, TC), IPv4 addresses being node indices, so
//! their sizes (airtime) are those of the RFC. Times are `Time`; validity
//! times are carried in the RFC's mantissa/exponent code (§18.3).
//! Jitter: [`OlsrConfig::jitter`] draws the emission delay the RFC
//! prescribes (§18.1: uniform in `[0, MAXJITTER)`, `MAXJITTER =
//! interval / 4`).
//!
//! Cost: receiving a HELLO is O(its addresses · log n); MPR selection and
//! route computation are O(n²) for n known nodes; run on change only.

use peregrine_cc::Time;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Link code: symmetric neighbour (RFC 3626 §6.1.1, neighbour type 1,
/// link type SYM_LINK 2).
const SYM: u8 = (1 << 2) | 2;
/// Link code: MPR neighbour on a symmetric link (neighbour type 2).
const MPR: u8 = (2 << 2) | 2;
/// Link code: asymmetric link (neighbour type NOT_NEIGH 0, ASYM_LINK 1).
const ASYM: u8 = 1;
/// HELLO_MESSAGE and TC_MESSAGE types.
const HELLO_TYPE: u8 = 1;
const TC_TYPE: u8 = 2;

/// OLSR timing (RFC 3626 §18.2 defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct OlsrConfig {
    /// HELLO_INTERVAL. Default 2 s.
    pub hello_interval: Duration,
    /// TC_INTERVAL. Default 5 s.
    pub tc_interval: Duration,
}

impl Default for OlsrConfig {
    fn default() -> OlsrConfig {
        OlsrConfig {
            hello_interval: Duration::from_secs(2),
            tc_interval: Duration::from_secs(5),
        }
    }
}

impl OlsrConfig {
    /// NEIGHB_HOLD_TIME = 3 × HELLO_INTERVAL.
    pub fn neighb_hold(&self) -> Duration {
        self.hello_interval * 3
    }
    /// TOP_HOLD_TIME = 3 × TC_INTERVAL.
    pub fn top_hold(&self) -> Duration {
        self.tc_interval * 3
    }
    /// DUP_HOLD_TIME = 30 s.
    pub fn dup_hold(&self) -> Duration {
        Duration::from_secs(30)
    }
    /// The emission delay of a message of period `interval`, from a
    /// uniform `u` in [0, 1): `u · interval / 4` (§18.1 MAXJITTER).
    pub fn jitter(interval: Duration, u: f64) -> Duration {
        interval.mul_f64(u.clamp(0.0, 1.0) / 4.0)
    }
}

/// One OLSR message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// HELLO: the sender's links and neighbours by link code.
    Hello {
        /// Originator.
        origin: u32,
        /// Message sequence number.
        seq: u16,
        /// Validity (NEIGHB_HOLD_TIME), encoded.
        vtime: u8,
        /// (link code, neighbour addresses).
        links: Vec<(u8, Vec<u32>)>,
    },
    /// TC: the originator's advertised neighbours (its MPR selectors).
    Tc {
        /// Originator.
        origin: u32,
        /// Message sequence number.
        seq: u16,
        /// Validity (TOP_HOLD_TIME), encoded.
        vtime: u8,
        /// Remaining hops.
        ttl: u8,
        /// Hops travelled.
        hops: u8,
        /// Advertised neighbour sequence number.
        ansn: u16,
        /// Advertised neighbours.
        advertised: Vec<u32>,
    },
}

/// RFC 3626 §18.3: a duration as `C·(1 + a/16)·2^b` with `C = 1/16 s`,
/// encoded `a·16 + b` (rounded up).
pub fn encode_vtime(d: Duration) -> u8 {
    let t = d.as_secs_f64();
    let c = 1.0 / 16.0;
    let mut b = 0u8;
    while b < 15 && t / c >= f64::from(1u32 << (b + 1)) {
        b += 1;
    }
    let a = (16.0 * (t / (c * f64::from(1u32 << b)) - 1.0)).ceil();
    let (a, b) = if a >= 16.0 {
        (0u8, (b + 1).min(15))
    } else {
        (a.max(0.0) as u8, b)
    };
    (a << 4) | b
}

/// RFC 3626 §18.3: the duration of an encoded validity time.
pub fn decode_vtime(v: u8) -> Duration {
    let (a, b) = (f64::from(v >> 4), i32::from(v & 0x0f));
    Duration::from_secs_f64((1.0 / 16.0) * (1.0 + a / 16.0) * 2f64.powi(b))
}

impl Message {
    /// The message in RFC 3626 wire format (message header included,
    /// packet header not). O(addresses).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let (ty, vtime, origin, ttl, hops, seq) = match self {
            Message::Hello {
                origin, seq, vtime, ..
            } => (HELLO_TYPE, *vtime, *origin, 1u8, 0u8, *seq),
            Message::Tc {
                origin,
                seq,
                vtime,
                ttl,
                hops,
                ..
            } => (TC_TYPE, *vtime, *origin, *ttl, *hops, *seq),
        };
        out.extend_from_slice(&[ty, vtime, 0, 0]);
        out.extend_from_slice(&origin.to_be_bytes());
        out.extend_from_slice(&[ttl, hops]);
        out.extend_from_slice(&seq.to_be_bytes());
        match self {
            Message::Hello { links, .. } => {
                // Reserved, Htime (encoded HELLO interval, unused here),
                // Willingness (WILL_DEFAULT 3).
                out.extend_from_slice(&[0, 0, 0, 3]);
                for (code, addrs) in links {
                    let size = 4 + 4 * addrs.len();
                    out.extend_from_slice(&[*code, 0]);
                    out.extend_from_slice(&(size as u16).to_be_bytes());
                    for a in addrs {
                        out.extend_from_slice(&a.to_be_bytes());
                    }
                }
            }
            Message::Tc {
                ansn, advertised, ..
            } => {
                out.extend_from_slice(&ansn.to_be_bytes());
                out.extend_from_slice(&[0, 0]);
                for a in advertised {
                    out.extend_from_slice(&a.to_be_bytes());
                }
            }
        }
        let size = (out.len() - start) as u16;
        out[start + 2..start + 4].copy_from_slice(&size.to_be_bytes());
    }

    /// Bytes of [`encode`](Self::encode)'s output. O(link groups).
    pub fn wire_len(&self) -> usize {
        12 + match self {
            Message::Hello { links, .. } => {
                4 + links.iter().map(|(_, a)| 4 + 4 * a.len()).sum::<usize>()
            }
            Message::Tc { advertised, .. } => 4 + 4 * advertised.len(),
        }
    }

    /// Decode one message from `b`; `None` if malformed. Returns the
    /// message and the bytes it used. O(addresses).
    pub fn decode(b: &[u8]) -> Option<(Message, usize)> {
        if b.len() < 12 {
            return None;
        }
        let size = usize::from(u16::from_be_bytes([b[2], b[3]]));
        if size < 12 || size > b.len() {
            return None;
        }
        let origin = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        let (ttl, hops) = (b[8], b[9]);
        let seq = u16::from_be_bytes([b[10], b[11]]);
        let body = &b[12..size];
        let addr = |c: &[u8]| u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        let msg = match b[0] {
            HELLO_TYPE => {
                if body.len() < 4 {
                    return None;
                }
                let mut links = Vec::new();
                let mut rest = &body[4..];
                while !rest.is_empty() {
                    if rest.len() < 4 {
                        return None;
                    }
                    let n = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
                    if n < 4 || n > rest.len() || !(n - 4).is_multiple_of(4) {
                        return None;
                    }
                    links.push((rest[0], rest[4..n].chunks(4).map(addr).collect()));
                    rest = &rest[n..];
                }
                Message::Hello {
                    origin,
                    seq,
                    vtime: b[1],
                    links,
                }
            }
            TC_TYPE => {
                if body.len() < 4 || !(body.len() - 4).is_multiple_of(4) {
                    return None;
                }
                Message::Tc {
                    origin,
                    seq,
                    vtime: b[1],
                    ttl,
                    hops,
                    ansn: u16::from_be_bytes([body[0], body[1]]),
                    advertised: body[4..].chunks(4).map(addr).collect(),
                }
            }
            _ => return None,
        };
        Some((msg, size))
    }
}

/// What a node does with a received TC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TcAction {
    /// Nothing more (duplicate, or not to be forwarded).
    Done,
    /// Re-broadcast this (TTL − 1, hops + 1): we are an MPR of the
    /// neighbour we got it from.
    Forward(Message),
}

#[derive(Clone, Debug, Default)]
struct Link {
    sym_until: Time,
    asym_until: Time,
    until: Time,
}

/// One node's OLSR state.
#[derive(Clone, Debug)]
pub struct Olsr {
    me: u32,
    cfg: OlsrConfig,
    links: BTreeMap<u32, Link>,
    /// (neighbour, 2-hop node) → valid until.
    two_hop: BTreeMap<(u32, u32), Time>,
    mprs: BTreeSet<u32>,
    /// MPR selector → valid until.
    selectors: BTreeMap<u32, Time>,
    /// (originator, advertised) → (ansn, valid until).
    topology: BTreeMap<(u32, u32), (u16, Time)>,
    /// (originator, seq) → (valid until, retransmitted).
    dup: BTreeMap<(u32, u16), (Time, bool)>,
    /// dst → (next hop, hops), as of the last recomputation: routes are
    /// recomputed lazily, at the first lookup after the state that shapes
    /// them changed (issue 40), not after every message.
    routes: RefCell<BTreeMap<u32, (u32, u32)>>,
    /// The instant of the last change to the state that shapes the
    /// routes, while `routes` does not reflect it yet.
    dirty_at: Cell<Option<Time>>,
    /// Every tuple that shapes the routes, by its expiry instant (a link
    /// has two: its `sym_until` and its `until`): the first one at or
    /// after `now` is [`next_expiry`](Olsr::next_expiry) in O(log state),
    /// and [`expire`](Olsr::expire) removes exactly the tuples that have
    /// expired — ns-3's per-tuple expiry timers, not a scan of every
    /// tuple (issue 40).
    expiries: BTreeSet<(Time, Tuple)>,
    /// The duplicate set by expiry instant, one entry per tuple (a copy
    /// received again moves its tuple's entry).
    dup_exp: BTreeSet<(Time, (u32, u16))>,
    /// The symmetric neighbourhood or the 2-hop set changed since the MPRs
    /// were last selected.
    mpr_dirty: bool,
    seq: u16,
    ansn: u16,
    advertised: BTreeSet<u32>,
    /// Routing-table entries that changed (added, removed, or a new next
    /// hop or hop count) over all recomputations.
    route_changes: Cell<u64>,
}

/// A tuple of the state that shapes the routes, as the expiry index
/// names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tuple {
    /// The link to this neighbour stops being symmetric.
    LinkSym(u32),
    /// The link to this neighbour is forgotten.
    Link(u32),
    /// (neighbour, 2-hop node).
    TwoHop(u32, u32),
    /// An MPR selector.
    Selector(u32),
    /// (originator, advertised) of the topology set.
    Topology(u32, u32),
}

/// Tuple `k` expires at `t`.
fn exp_add(exp: &mut BTreeSet<(Time, Tuple)>, t: Time, k: Tuple) {
    exp.insert((t, k));
}

/// Tuple `k` no longer expires at `t` (refreshed or removed).
fn exp_del(exp: &mut BTreeSet<(Time, Tuple)>, t: Time, k: Tuple) {
    exp.remove(&(t, k));
}

impl Olsr {
    /// The state of node `me`.
    pub fn new(me: u32, cfg: OlsrConfig) -> Olsr {
        Olsr {
            me,
            cfg,
            links: BTreeMap::new(),
            two_hop: BTreeMap::new(),
            mprs: BTreeSet::new(),
            selectors: BTreeMap::new(),
            topology: BTreeMap::new(),
            dup: BTreeMap::new(),
            routes: RefCell::new(BTreeMap::new()),
            dirty_at: Cell::new(None),
            expiries: BTreeSet::new(),
            dup_exp: BTreeSet::new(),
            mpr_dirty: false,
            seq: 0,
            ansn: 0,
            advertised: BTreeSet::new(),
            route_changes: Cell::new(0),
        }
    }

    /// The first instant at which a tuple that shapes the routes (a link
    /// or its symmetric status, a 2-hop tuple, an MPR selector, a topology
    /// tuple) has expired, if any: the driver calls [`expire`](Self::expire)
    /// then, as ns-3's per-tuple expiry timers do, so a route whose link
    /// stopped hearing HELLOs disappears after NEIGHB_HOLD_TIME and not
    /// only at the next HELLO emission. Duplicate tuples do not count
    /// (they shape no route). O(log state).
    pub fn next_expiry(&self, now: Time) -> Option<Time> {
        // A tuple valid "until t" is still valid at t (`>= now` tests).
        self.expiries
            .range((now, Tuple::LinkSym(0))..)
            .next()
            .map(|(t, _)| *t + Duration::from_nanos(1))
    }

    /// Routing-table entries that changed over the run (an entry appears,
    /// disappears, or gets another next hop or hop count), counted at each
    /// recomputation — which happens lazily, at the first lookup after a
    /// change, so a change undone before the next lookup is not counted.
    /// O(1) when the routes are up to date, else one recomputation.
    pub fn route_changes(&self) -> u64 {
        self.refresh();
        self.route_changes.get()
    }

    /// Recompute the routes if the state that shapes them changed since
    /// the last recomputation (as of the instant of that change, so the
    /// table is the one an eager recomputation after every message would
    /// hold). O(1) when up to date, else see `compute_routes`.
    fn refresh(&self) {
        if let Some(t) = self.dirty_at.take() {
            self.compute_routes(t);
        }
    }

    /// The state that shapes the routes changed at `now`.
    fn touch(&self, now: Time) {
        self.dirty_at.set(Some(now));
    }

    fn next_seq(&mut self) -> u16 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    fn sym_neighbours(&self, now: Time) -> impl Iterator<Item = u32> + '_ {
        self.links
            .iter()
            .filter(move |(_, l)| l.sym_until >= now)
            .map(|(&a, _)| a)
    }

    /// Drop the tuples expired by `now` (valid "until t" means valid at
    /// t), then select the MPRs again if the neighbourhood changed (the
    /// routes at the next lookup). O(expired · log state), plus the MPR
    /// selection when it runs.
    pub fn expire(&mut self, now: Time) {
        let mut routes_changed = false;
        while let Some(&(t, k)) = self.expiries.first() {
            if t >= now {
                break;
            }
            self.expiries.pop_first();
            routes_changed = true;
            match k {
                // The link stays (asymmetric) until its `until`.
                Tuple::LinkSym(_) => self.mpr_dirty = true,
                Tuple::Link(a) => {
                    if self.links.get(&a).is_some_and(|l| l.until == t) {
                        self.links.remove(&a);
                    }
                    self.mpr_dirty = true;
                }
                Tuple::TwoHop(a, b) => {
                    if self.two_hop.get(&(a, b)) == Some(&t) {
                        self.two_hop.remove(&(a, b));
                    }
                    self.mpr_dirty = true;
                }
                Tuple::Selector(a) => {
                    if self.selectors.get(&a) == Some(&t) {
                        self.selectors.remove(&a);
                    }
                }
                Tuple::Topology(o, d) => {
                    if self.topology.get(&(o, d)).is_some_and(|x| x.1 == t) {
                        self.topology.remove(&(o, d));
                    }
                }
            }
        }
        while let Some(&(t, key)) = self.dup_exp.first() {
            if t >= now {
                break;
            }
            self.dup_exp.pop_first();
            self.dup.remove(&key);
        }
        if self.mpr_dirty {
            self.mpr_dirty = false;
            self.select_mprs(now);
        }
        if routes_changed {
            self.touch(now);
        }
    }

    /// Records duplicate tuple `key` valid until `until` (now + DUP_HOLD_TIME).
    /// O(log duplicates).
    fn dup_insert(&mut self, key: (u32, u16), until: Time, retransmitted: bool) {
        if let Some((old, _)) = self.dup.insert(key, (until, retransmitted)) {
            self.dup_exp.remove(&(old, key));
        }
        self.dup_exp.insert((until, key));
    }

    /// The HELLO to send at `now`. O(neighbours).
    pub fn hello(&mut self, now: Time) -> Message {
        self.expire(now);
        let (mut sym, mut mpr, mut asym) = (Vec::new(), Vec::new(), Vec::new());
        for (&a, l) in &self.links {
            if l.sym_until >= now {
                if self.mprs.contains(&a) {
                    mpr.push(a);
                } else {
                    sym.push(a);
                }
            } else if l.asym_until >= now {
                asym.push(a);
            }
        }
        let links = [(SYM, sym), (MPR, mpr), (ASYM, asym)]
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .collect();
        Message::Hello {
            origin: self.me,
            seq: self.next_seq(),
            vtime: encode_vtime(self.cfg.neighb_hold()),
            links,
        }
    }

    /// The TC to send at `now`, if this node has MPR selectors (or had
    /// some within TOP_HOLD_TIME: §9.3 keeps sending an empty set then;
    /// simplified here to "has selectors"). O(selectors).
    pub fn tc(&mut self, now: Time) -> Option<Message> {
        self.expire(now);
        let adv: BTreeSet<u32> = self.selectors.keys().copied().collect();
        if adv != self.advertised {
            self.ansn = self.ansn.wrapping_add(1);
            self.advertised = adv;
        }
        if self.advertised.is_empty() {
            return None;
        }
        let seq = self.next_seq();
        self.dup_insert((self.me, seq), now + self.cfg.dup_hold(), true);
        Some(Message::Tc {
            origin: self.me,
            seq,
            vtime: encode_vtime(self.cfg.top_hold()),
            ttl: 255,
            hops: 0,
            ansn: self.ansn,
            advertised: self.advertised.iter().copied().collect(),
        })
    }

    /// Process a HELLO received at `now` from neighbour `from`. The MPRs
    /// are selected again before the next HELLO this node sends (the only
    /// place they are used), the routes at the next lookup.
    /// O(addresses · log n).
    pub fn on_hello(&mut self, now: Time, from: u32, links: &[(u8, Vec<u32>)], vtime: u8) {
        let hold = decode_vtime(vtime);
        let old = self.links.get(&from).map(|l| (l.sym_until, l.until));
        let l = self.links.entry(from).or_default();
        l.asym_until = now + hold;
        let mut lists_me = false;
        let mut me_as_mpr = false;
        for (code, addrs) in links {
            if addrs.contains(&self.me) {
                lists_me = true;
                me_as_mpr |= *code == MPR;
            }
        }
        let was_sym = l.sym_until >= now;
        if lists_me {
            l.sym_until = now + hold;
        }
        l.until = l.until.max(l.asym_until).max(l.sym_until);
        let sym = l.sym_until >= now;
        let new = (l.sym_until, l.until);
        // A new link, or one that became symmetric: the MPRs may change.
        self.mpr_dirty |= old.is_none() || (sym && !was_sym);
        let exp = &mut self.expiries;
        if let Some((s, u)) = old {
            exp_del(exp, s, Tuple::LinkSym(from));
            exp_del(exp, u, Tuple::Link(from));
        }
        // A link never symmetric has no symmetric time to expire.
        if new.0 > Time::ZERO {
            exp_add(exp, new.0, Tuple::LinkSym(from));
        }
        exp_add(exp, new.1, Tuple::Link(from));
        if sym {
            for (code, addrs) in links {
                for &a in addrs {
                    if a == self.me {
                        continue;
                    }
                    let key = (from, a);
                    if *code == SYM || *code == MPR {
                        match self.two_hop.insert(key, now + hold) {
                            Some(t) => exp_del(exp, t, Tuple::TwoHop(from, a)),
                            None => self.mpr_dirty = true,
                        }
                        exp_add(exp, now + hold, Tuple::TwoHop(from, a));
                    } else if let Some(t) = self.two_hop.remove(&key) {
                        // §8.2.1: a neighbour that lists `a` as NOT_NEIGH
                        // no longer reaches it.
                        exp_del(exp, t, Tuple::TwoHop(from, a));
                        self.mpr_dirty = true;
                    }
                }
            }
            let old = if me_as_mpr {
                exp_add(exp, now + hold, Tuple::Selector(from));
                self.selectors.insert(from, now + hold)
            } else {
                self.selectors.remove(&from)
            };
            if let Some(t) = old {
                // Refreshed to the same instant: keep the entry just added.
                if !(me_as_mpr && t == now + hold) {
                    exp_del(exp, t, Tuple::Selector(from));
                }
            }
        }
        self.touch(now);
    }

    /// Process a TC received at `now` from neighbour `from`. O(advertised
    /// · log n) plus routes.
    pub fn on_tc(&mut self, now: Time, from: u32, msg: &Message) -> TcAction {
        let Message::Tc {
            origin,
            seq,
            vtime,
            ttl,
            ansn,
            advertised,
            ..
        } = msg
        else {
            return TcAction::Done;
        };
        // §3.4: only from a symmetric neighbour. The content is
        // processed once per (origin, seq); the message is retransmitted
        // once, when it comes from a neighbour that selected us as MPR
        // (possibly on a later copy than the first).
        let from_sym = self.links.get(&from).is_some_and(|l| l.sym_until >= now);
        if !from_sym || *origin == self.me {
            return TcAction::Done;
        }
        let seen = self.dup.get(&(*origin, *seq)).copied();
        if seen.is_none() {
            self.process_tc(now, *origin, *vtime, *ansn, advertised);
        }
        let retransmitted = seen.is_some_and(|(_, r)| r);
        let selected_me = self.selectors.get(&from).is_some_and(|t| *t >= now);
        let forward = !retransmitted && selected_me && *ttl > 1;
        self.dup_insert(
            (*origin, *seq),
            now + self.cfg.dup_hold(),
            retransmitted || forward,
        );
        if forward {
            let mut fwd = msg.clone();
            if let Message::Tc { ttl, hops, .. } = &mut fwd {
                *ttl -= 1;
                *hops = hops.saturating_add(1);
            }
            return TcAction::Forward(fwd);
        }
        TcAction::Done
    }

    /// §9.5: a TC's content into the topology set.
    fn process_tc(&mut self, now: Time, origin: u32, vtime: u8, ansn: u16, advertised: &[u32]) {
        // An older ANSN is ignored; a newer one replaces the entries.
        let newest = self
            .topology
            .range((origin, 0)..=(origin, u32::MAX))
            .map(|(_, (a, _))| *a)
            .max_by(|a, b| ansn_cmp(*a, *b));
        if newest.is_some_and(|n| ansn_cmp(n, ansn) == std::cmp::Ordering::Greater) {
            return;
        }
        let exp = &mut self.expiries;
        let of_origin = (origin, 0)..=(origin, u32::MAX);
        let stale: Vec<(u32, u32)> = self
            .topology
            .range(of_origin)
            .filter(|(_, (a, _))| *a != ansn)
            .map(|(k, _)| *k)
            .collect();
        for k in stale {
            if let Some((_, t)) = self.topology.remove(&k) {
                exp_del(exp, t, Tuple::Topology(k.0, k.1));
            }
        }
        let until = now + decode_vtime(vtime);
        for &d in advertised {
            if let Some((_, t)) = self.topology.insert((origin, d), (ansn, until)) {
                exp_del(exp, t, Tuple::Topology(origin, d));
            }
            exp_add(exp, until, Tuple::Topology(origin, d));
        }
        self.touch(now);
    }

    /// §8.3.1's greedy MPR heuristic over the current symmetric
    /// neighbours and 2-hop set. O(n²).
    fn select_mprs(&mut self, now: Time) {
        let n1: BTreeSet<u32> = self.sym_neighbours(now).collect();
        let mut cover: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        for (&(via, two), t) in &self.two_hop {
            if *t >= now && n1.contains(&via) && !n1.contains(&two) && two != self.me {
                cover.entry(via).or_default().insert(two);
            }
        }
        let mut uncovered: BTreeSet<u32> = cover.values().flatten().copied().collect();
        let mut mprs = BTreeSet::new();
        // Neighbours that are the only way to some 2-hop node.
        for &two in &uncovered {
            let vias: Vec<u32> = cover
                .iter()
                .filter(|(_, s)| s.contains(&two))
                .map(|(&v, _)| v)
                .collect();
            if vias.len() == 1 {
                mprs.insert(vias[0]);
            }
        }
        for m in &mprs {
            if let Some(s) = cover.get(m) {
                for x in s {
                    uncovered.remove(x);
                }
            }
        }
        while !uncovered.is_empty() {
            let best = cover
                .iter()
                .filter(|(v, _)| !mprs.contains(*v))
                .map(|(&v, s)| (s.intersection(&uncovered).count(), std::cmp::Reverse(v)))
                .max();
            let Some((k, std::cmp::Reverse(v))) = best else {
                break;
            };
            if k == 0 {
                break;
            }
            mprs.insert(v);
            for x in &cover[&v] {
                uncovered.remove(x);
            }
        }
        self.mprs = mprs;
    }

    /// §10: hop-count routes from the symmetric neighbours, the 2-hop set
    /// and the topology set, valid at `now`, breadth first over the
    /// topology set (each level scans only its nodes' topology tuples):
    /// O((routes + topology) · log state). Among equal hop counts the
    /// smallest next hop wins.
    fn compute_routes(&self, now: Time) {
        let mut routes: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
        let mut level: Vec<u32> = Vec::new();
        for n in self.sym_neighbours(now) {
            routes.insert(n, (n, 1));
        }
        let mut next: Vec<u32> = Vec::new();
        for (&(via, two), t) in &self.two_hop {
            if *t >= now && two != self.me && routes.get(&via).is_some_and(|r| r.1 == 1) {
                let cand = (via, 2);
                match routes.get_mut(&two) {
                    None => {
                        routes.insert(two, cand);
                        next.push(two);
                    }
                    Some(e) => {
                        if e.1 > 2 || (e.1 == 2 && via < e.0) {
                            *e = cand;
                        }
                    }
                }
            }
        }
        level.extend(routes.iter().filter(|(_, r)| r.1 == 1).map(|(&d, _)| d));
        // Extend hop by hop over the topology set (last → dest): the
        // nodes at `h` hops reach theirs at `h + 1`.
        let mut h = 1;
        while !level.is_empty() {
            for &last in &level {
                let Some(&(nh, hops)) = routes.get(&last) else {
                    continue;
                };
                if hops != h {
                    continue;
                }
                for (&(_, dest), (_, t)) in self.topology.range((last, 0)..=(last, u32::MAX)) {
                    if *t < now || dest == self.me {
                        continue;
                    }
                    match routes.get_mut(&dest) {
                        None => {
                            routes.insert(dest, (nh, h + 1));
                            next.push(dest);
                        }
                        Some(e) => {
                            if e.1 > h + 1 || (e.1 == h + 1 && nh < e.0) {
                                *e = (nh, h + 1);
                            }
                        }
                    }
                }
            }
            level.clear();
            std::mem::swap(&mut level, &mut next);
            level.sort_unstable();
            level.dedup();
            h += 1;
        }
        // Count the entries that changed: O(n) merge of two sorted maps.
        let mut changed = 0u64;
        let old = self.routes.borrow();
        let (mut a, mut b) = (old.iter().peekable(), routes.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (None, None) => break,
                (Some(_), None) => {
                    changed += 1;
                    a.next();
                }
                (None, Some(_)) => {
                    changed += 1;
                    b.next();
                }
                (Some((ka, va)), Some((kb, vb))) => match ka.cmp(kb) {
                    std::cmp::Ordering::Less => {
                        changed += 1;
                        a.next();
                    }
                    std::cmp::Ordering::Greater => {
                        changed += 1;
                        b.next();
                    }
                    std::cmp::Ordering::Equal => {
                        changed += u64::from(va != vb);
                        a.next();
                        b.next();
                    }
                },
            }
        }
        drop(old);
        self.route_changes.set(self.route_changes.get() + changed);
        *self.routes.borrow_mut() = routes;
    }

    /// The next hop towards `dst`, if routed (routes recomputed first if
    /// the state changed). O(log n) when up to date.
    pub fn next_hop(&self, dst: u32) -> Option<u32> {
        self.refresh();
        self.routes.borrow().get(&dst).map(|r| r.0)
    }

    /// Hops to `dst`, if routed (routes recomputed first if the state
    /// changed). O(log n) when up to date.
    pub fn hops(&self, dst: u32) -> Option<u32> {
        self.refresh();
        self.routes.borrow().get(&dst).map(|r| r.1)
    }

    /// The current MPR set.
    pub fn mprs(&self) -> &BTreeSet<u32> {
        &self.mprs
    }
}

/// RFC 3626 §19 sequence-number comparison (wrap-around).
fn ansn_cmp(a: u16, b: u16) -> std::cmp::Ordering {
    if a == b {
        std::cmp::Ordering::Equal
    } else if b.wrapping_sub(a) < 0x8000 {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Greater
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lossless synchronous rounds on a fixed graph: every node sends a
    /// HELLO, then every node with selectors a TC, flooded by MPRs.
    fn converge(n: u32, adj: impl Fn(u32, u32) -> bool, rounds: u32) -> Vec<Olsr> {
        let mut nodes: Vec<Olsr> = (0..n)
            .map(|i| Olsr::new(i, OlsrConfig::default()))
            .collect();
        let mut now = Time::ZERO;
        for _ in 0..rounds {
            now += Duration::from_secs(1);
            let hellos: Vec<Message> = nodes.iter_mut().map(|o| o.hello(now)).collect();
            for (from, h) in hellos.iter().enumerate() {
                let Message::Hello { links, vtime, .. } = h else {
                    unreachable!()
                };
                for to in 0..n {
                    if to != from as u32 && adj(from as u32, to) {
                        nodes[to as usize].on_hello(now, from as u32, links, *vtime);
                    }
                }
            }
            let mut frontier: Vec<(u32, Message)> = nodes
                .iter_mut()
                .filter_map(|o| o.tc(now).map(|m| (o.me, m)))
                .collect();
            while let Some((from, m)) = frontier.pop() {
                for to in 0..n {
                    if to != from && adj(from, to) {
                        if let TcAction::Forward(f) = nodes[to as usize].on_tc(now, from, &m) {
                            frontier.push((to, f));
                        }
                    }
                }
            }
        }
        nodes
    }

    #[test]
    fn a_line_converges_to_hop_by_hop_routes() {
        let adj = |a: u32, b: u32| a.abs_diff(b) == 1;
        let nodes = converge(6, adj, 4);
        for (i, o) in nodes.iter().enumerate() {
            let i = i as u32;
            for d in 0..6u32 {
                if d == i {
                    continue;
                }
                let step = if d > i { i + 1 } else { i - 1 };
                assert_eq!(o.next_hop(d), Some(step), "{i} → {d}");
                assert_eq!(o.hops(d), Some(i.abs_diff(d)));
            }
        }
        // Inner nodes of a line are each other's MPRs.
        assert_eq!(nodes[2].mprs().iter().copied().collect::<Vec<_>>(), [1, 3]);
    }

    #[test]
    fn mprs_cover_every_two_hop_neighbour() {
        // A star of three relays 1, 2, 3 around 0; 4 and 5 behind 1, 6
        // behind 2 and 3.
        let edges = [(0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (2, 6), (3, 6)];
        let adj = |a: u32, b: u32| edges.contains(&(a, b)) || edges.contains(&(b, a));
        let nodes = converge(7, adj, 5);
        let m = nodes[0].mprs();
        assert!(m.contains(&1), "{m:?}");
        assert_eq!(m.len(), 2, "one of 2, 3 suffices for 6: {m:?}");
        assert_eq!(nodes[0].hops(6), Some(2));
        assert_eq!(nodes[4].hops(6), Some(4));
    }

    #[test]
    fn routes_expire_without_messages() {
        let adj = |a: u32, b: u32| a.abs_diff(b) == 1;
        let mut nodes = converge(3, adj, 3);
        assert_eq!(nodes[0].next_hop(2), Some(1));
        // 7 s of silence: beyond NEIGHB_HOLD_TIME (6 s).
        nodes[0].expire(Time::from_millis(3_000) + Duration::from_secs(7));
        assert_eq!(nodes[0].next_hop(2), None);
        assert_eq!(nodes[0].next_hop(1), None);
    }

    /// The messages of a packet, decoded.
    fn messages_of(p: &crate::world::packet::Packet) -> Vec<Message> {
        let mut rest = &p.payload[4..];
        let mut v = Vec::new();
        while let Some((m, used)) = Message::decode(rest) {
            v.push(m);
            rest = &rest[used..];
        }
        assert!(rest.is_empty());
        v
    }

    /// Issue 40: TCs to forward wait a jitter (at most HELLO_INTERVAL / 4)
    /// and go out together in one packet (RFC 3626 §3.4, as ns-3 queues
    /// them), each with TTL − 1 and hops + 1; a duplicate is not forwarded
    /// again.
    #[test]
    fn forwarded_messages_are_jittered_and_packed_together() {
        let cfg = OlsrConfig::default();
        let mut a = OlsrAgent::new(0, cfg.clone(), 1);
        let mut b = OlsrAgent::new(1, cfg.clone(), 1);
        let t0 = Time::from_millis(100);
        // Node 1 hears 0 and selects it as MPR: a symmetric link, 1 a selector.
        let hello = Message::Hello {
            origin: 1,
            seq: 1,
            vtime: encode_vtime(cfg.neighb_hold()),
            links: vec![(MPR, vec![0])],
        };
        let id = b.id();
        let hp = b.packet(t0, &[hello], id);
        let mut out = Vec::new();
        a.receive(t0, &hp, &mut out);
        assert!(out.is_empty());
        let tc = |origin: u32| Message::Tc {
            origin,
            seq: 7,
            vtime: encode_vtime(cfg.top_hold()),
            ttl: 255,
            hops: 0,
            ansn: 1,
            advertised: vec![origin + 100],
        };
        let t1 = Time::from_millis(200);
        let msgs = [tc(5), tc(6), tc(7)];
        let id = b.id();
        let tp = b.packet(t1, &msgs, id);
        a.receive(t1, &tp, &mut out);
        let due = a.next_due();
        assert!(out.len() <= 1);
        if out.is_empty() {
            assert!(due >= t1 && due < t1 + cfg.hello_interval / 4, "{due:?}");
            a.poll(due, &mut out);
        }
        assert_eq!(out.len(), 1, "one packet for the three TCs");
        // (With this node's own HELLO, if it fell due first: piggybacked.)
        let fwd: Vec<Message> = messages_of(&out[0])
            .into_iter()
            .filter(|m| matches!(m, Message::Tc { .. }))
            .collect();
        assert_eq!(fwd.len(), 3);
        for (m, origin) in fwd.iter().zip([5, 6, 7]) {
            let Message::Tc {
                origin: o,
                ttl,
                hops,
                ..
            } = m
            else {
                panic!("{m:?}");
            };
            assert_eq!((*o, *ttl, *hops), (origin, 254, 1));
        }
        // The same TCs again: duplicates, not forwarded.
        out.clear();
        let later = Time::from_millis(300).max(due);
        a.receive(later, &tp, &mut out);
        assert!(out.is_empty() && a.pending.is_empty());
    }

    /// Expiry removes exactly the tuples that expired, in time order,
    /// without a scan: a topology tuple lives TOP_HOLD_TIME, then goes.
    #[test]
    fn tuples_expire_by_their_own_time() {
        let cfg = OlsrConfig::default();
        let mut o = Olsr::new(0, cfg.clone());
        let t0 = Time::from_millis(10);
        let hold = encode_vtime(cfg.neighb_hold());
        o.on_hello(t0, 1, &[(MPR, vec![0]), (SYM, vec![2])], hold);
        let tc = Message::Tc {
            origin: 2,
            seq: 1,
            vtime: encode_vtime(cfg.top_hold()),
            ttl: 255,
            hops: 1,
            ansn: 1,
            advertised: vec![3],
        };
        assert!(matches!(
            o.on_tc(t0, 1, &tc),
            TcAction::Done | TcAction::Forward(_)
        ));
        assert_eq!(o.next_hop(3), Some(1));
        // The link (6 s) expires before the topology tuple (15 s).
        o.expire(t0 + Duration::from_secs(7));
        assert_eq!(o.next_hop(1), None);
        assert!(o.topology.contains_key(&(2, 3)));
        o.expire(t0 + Duration::from_secs(16));
        assert!(o.topology.is_empty() && o.two_hop.is_empty() && o.links.is_empty());
        assert!(o.expiries.is_empty());
        // The duplicate set empties after DUP_HOLD_TIME.
        o.expire(t0 + Duration::from_secs(31));
        assert!(o.dup.is_empty() && o.dup_exp.is_empty());
    }

    #[test]
    fn messages_round_trip_in_rfc_3626_format() {
        let h = Message::Hello {
            origin: 7,
            seq: 9,
            vtime: encode_vtime(Duration::from_secs(6)),
            links: vec![(SYM, vec![1, 2]), (MPR, vec![3])],
        };
        let t = Message::Tc {
            origin: 4,
            seq: 1,
            vtime: encode_vtime(Duration::from_secs(15)),
            ttl: 255,
            hops: 0,
            ansn: 3,
            advertised: vec![5, 6, 8],
        };
        for m in [h, t] {
            let mut b = Vec::new();
            m.encode(&mut b);
            let (back, used) = Message::decode(&b).expect("decodes");
            assert_eq!(back, m);
            assert_eq!(used, b.len());
        }
        // HELLO: 12 header + 4 + (4 + 8) + (4 + 4) = 36 bytes.
        let mut b = Vec::new();
        Message::Hello {
            origin: 0,
            seq: 0,
            vtime: 0,
            links: vec![(SYM, vec![1, 2]), (MPR, vec![3])],
        }
        .encode(&mut b);
        assert_eq!(b.len(), 36);
        assert!(Message::decode(&b[..20]).is_none());
        // Validity times: 6 s and 15 s survive the code within 1/16.
        for s in [2.0, 6.0, 15.0, 30.0] {
            let d = decode_vtime(encode_vtime(Duration::from_secs_f64(s))).as_secs_f64();
            assert!(d >= s && d <= s * 1.07, "{s} → {d}");
        }
        assert_eq!(
            OlsrConfig::jitter(Duration::from_secs(2), 0.5),
            Duration::from_millis(250)
        );
    }

    /// Hop counts by breadth-first search on the true graph.
    fn bfs(n: u32, adj: &dyn Fn(u32, u32) -> bool, src: u32) -> Vec<Option<u32>> {
        let mut d = vec![None; n as usize];
        d[src as usize] = Some(0);
        let mut q = std::collections::VecDeque::from([src]);
        while let Some(a) = q.pop_front() {
            for b in 0..n {
                if b != a && adj(a, b) && d[b as usize].is_none() {
                    d[b as usize] = Some(d[a as usize].unwrap_or(0) + 1);
                    q.push_back(b);
                }
            }
        }
        d
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// On a random static graph with lossless delivery, OLSR learns
        /// shortest hop counts to every reachable node and no route to the
        /// others, and every next hop is a neighbour one hop closer.
        #[test]
        fn olsr_converges_to_shortest_paths(
            n in 2u32..12,
            bits in proptest::collection::vec(proptest::prelude::any::<bool>(), 66),
        ) {
            let edge = |a: u32, b: u32| {
                let (lo, hi) = (a.min(b), a.max(b));
                let i = (hi * (hi - 1) / 2 + lo) as usize;
                a != b && bits[i % bits.len()]
            };
            let nodes = converge(n, edge, 2 + n);
            for s in 0..n {
                let d = bfs(n, &edge, s);
                for t in 0..n {
                    if s == t {
                        continue;
                    }
                    proptest::prop_assert_eq!(nodes[s as usize].hops(t), d[t as usize], "{} → {}", s, t);
                    if let Some(nh) = nodes[s as usize].next_hop(t) {
                        proptest::prop_assert!(edge(s, nh));
                        let dn = bfs(n, &edge, nh)[t as usize];
                        proptest::prop_assert_eq!(dn.map(|x| x + 1), d[t as usize]);
                    }
                }
            }
        }
    }
}

/// One node's OLSR as traffic: the [`Olsr`] state, HELLO/TC emission
/// timers with the RFC's jitter, and the packets that carry the messages
/// (UDP port 698, broadcast, in RFC 3626 packet format). The driver (the
/// engine, or a test) queues what [`poll`](Self::poll) and
/// [`receive`](Self::receive) emit as broadcast frames at this node's
/// interface and hands every received OLSR packet to `receive`.
#[derive(Debug)]
pub struct OlsrAgent {
    node: usize,
    olsr: Olsr,
    cfg: OlsrConfig,
    next_hello: Time,
    next_tc: Time,
    rng: crate::rng::SimRng,
    pkt_seq: u16,
    sent_bytes: u64,
    sent_packets: u64,
    /// When the protocol state next has a tuple to expire.
    next_expiry: Option<Time>,
    /// Messages to forward, waiting for [`flush_at`](Self) (or for the
    /// next HELLO or TC, which carries them along): RFC 3626 §3.4 packs
    /// several messages into one packet, and ns-3 queues every forwarded
    /// message for a jitter before sending the queue as one packet.
    pending: Vec<Message>,
    /// When the pending messages go out (a forwarding jitter after the
    /// first was queued).
    flush_at: Option<Time>,
    /// The forwarding jitter's own stream (the HELLO/TC emission jitter
    /// keeps `rng`'s).
    fwd_rng: crate::rng::SimRng,
}

impl OlsrAgent {
    /// OLSR's UDP port (RFC 3626 §3.1).
    pub const PORT: u16 = 698;
    /// IPv4 + UDP header bytes around an OLSR packet.
    pub const IP_UDP_BYTES: u32 = 28;
    /// Most messages in one packet (ns-3's `OLSR_MAX_MSGS`).
    pub const MAX_MESSAGES: usize = 64;
    /// Largest OLSR packet, wire bytes (an Ethernet-sized IP MTU).
    pub const MAX_PACKET_BYTES: usize = 1500;

    /// Node `node`'s agent; jitter draws from `olsr/node<node>` of `seed`.
    /// The first HELLO and TC go out after one jitter.
    pub fn new(node: usize, cfg: OlsrConfig, seed: u64) -> OlsrAgent {
        use rand::RngExt;
        let mut rng = crate::rng::component_rng(seed, &format!("olsr/node{node}"));
        let h = OlsrConfig::jitter(cfg.hello_interval, rng.random::<f64>());
        let t = OlsrConfig::jitter(cfg.tc_interval, rng.random::<f64>());
        OlsrAgent {
            node,
            olsr: Olsr::new(node as u32, cfg.clone()),
            cfg,
            next_hello: Time::ZERO + h,
            next_tc: Time::ZERO + t,
            rng,
            pkt_seq: 0,
            sent_bytes: 0,
            sent_packets: 0,
            next_expiry: None,
            pending: Vec::new(),
            flush_at: None,
            fwd_rng: crate::rng::component_rng(seed, &format!("olsr/node{node}/forward")),
        }
    }

    /// The protocol state (routes, MPRs).
    pub fn olsr(&self) -> &Olsr {
        &self.olsr
    }

    /// Wire bytes of every OLSR packet this node sent (IP/UDP included).
    pub fn sent_bytes(&self) -> u64 {
        self.sent_bytes
    }

    /// OLSR packets this node sent (its own and forwarded TCs).
    pub fn sent_packets(&self) -> u64 {
        self.sent_packets
    }

    /// When [`poll`](Self::poll) next has something to do: a HELLO or TC
    /// to send, or a tuple to expire (see [`Olsr::next_expiry`]). O(1).
    pub fn next_due(&self) -> Time {
        let due = self.next_hello.min(self.next_tc);
        let due = self.flush_at.map_or(due, |f| f.min(due));
        self.next_expiry.map_or(due, |e| e.min(due))
    }

    /// One packet carrying `msgs` (RFC 3626 §3.3 header, then each
    /// message). O(bytes).
    fn packet(&mut self, now: Time, msgs: &[Message], id: u64) -> super::packet::Packet {
        // RFC 3626 §3.3 packet header: length, sequence number.
        let mut payload = vec![0u8; 4];
        for msg in msgs {
            msg.encode(&mut payload);
        }
        self.pkt_seq = self.pkt_seq.wrapping_add(1);
        let len = payload.len() as u16;
        payload[0..2].copy_from_slice(&len.to_be_bytes());
        payload[2..4].copy_from_slice(&self.pkt_seq.to_be_bytes());
        let wire_bytes = payload.len() as u32 + Self::IP_UDP_BYTES;
        self.sent_bytes += u64::from(wire_bytes);
        self.sent_packets += 1;
        super::packet::Packet {
            id,
            flow: 0,
            forward: false,
            is_data: false,
            src: self.node,
            dst: super::dcf::BROADCAST,
            next_hop: super::dcf::BROADCAST,
            dst_port: Self::PORT,
            src_port: Self::PORT,
            wire_bytes,
            created: now,
            left_first_hop: true,
            hops: 0,
            ecn: None,
            payload,
        }
    }

    /// `msgs` as packets of at most [`MAX_MESSAGES`](Self::MAX_MESSAGES)
    /// messages and [`MAX_PACKET_BYTES`](Self::MAX_PACKET_BYTES) wire
    /// bytes each, into `out`. O(bytes).
    fn send(&mut self, now: Time, msgs: &[Message], out: &mut Vec<super::packet::Packet>) {
        let mut start = 0;
        let mut bytes = 4 + Self::IP_UDP_BYTES as usize;
        for (i, m) in msgs.iter().enumerate() {
            let size = m.wire_len();
            let full = i - start == Self::MAX_MESSAGES || bytes + size > Self::MAX_PACKET_BYTES;
            if i > start && full {
                let id = self.id();
                out.push(self.packet(now, &msgs[start..i], id));
                start = i;
                bytes = 4 + Self::IP_UDP_BYTES as usize;
            }
            bytes += size;
        }
        if start < msgs.len() {
            let id = self.id();
            out.push(self.packet(now, &msgs[start..], id));
        }
    }

    fn id(&self) -> u64 {
        // Distinct from the engine's packet ids (which count up from 0).
        (1u64 << 63) | ((self.node as u64) << 32) | u64::from(self.pkt_seq.wrapping_add(1))
    }

    /// Expire the tuples due at `now`, then emit the HELLO and/or TC due
    /// at `now` into `out`, with the forwarded messages waiting (in one
    /// packet), or those alone when their jitter is up; the next HELLO and
    /// TC are due one interval minus a fresh jitter later (§18.1).
    /// O(state expired + messages).
    pub fn poll(&mut self, now: Time, out: &mut Vec<super::packet::Packet>) {
        use rand::RngExt;
        if self.next_expiry.is_some_and(|e| e <= now) {
            self.olsr.expire(now);
        }
        let mut msgs = Vec::new();
        if self.next_hello <= now {
            msgs.push(self.olsr.hello(now));
            let j = OlsrConfig::jitter(self.cfg.hello_interval, self.rng.random::<f64>());
            self.next_hello = now + self.cfg.hello_interval - j;
        }
        if self.next_tc <= now {
            if let Some(m) = self.olsr.tc(now) {
                msgs.push(m);
            }
            let j = OlsrConfig::jitter(self.cfg.tc_interval, self.rng.random::<f64>());
            self.next_tc = now + self.cfg.tc_interval - j;
        }
        if !self.pending.is_empty() && (!msgs.is_empty() || self.flush_at.is_some_and(|f| f <= now))
        {
            msgs.append(&mut self.pending);
            self.flush_at = None;
        }
        if !msgs.is_empty() {
            self.send(now, &msgs, out);
        }
        self.next_expiry = self.olsr.next_expiry(now);
    }

    /// Process an OLSR packet received at `now` from neighbour `pkt.src`;
    /// TCs to re-broadcast go to `out`. Malformed packets are ignored.
    /// O(addresses).
    pub fn receive(
        &mut self,
        now: Time,
        pkt: &super::packet::Packet,
        out: &mut Vec<super::packet::Packet>,
    ) {
        let from = pkt.src as u32;
        let mut rest = pkt.payload.get(4..).unwrap_or(&[]);
        while let Some((msg, used)) = Message::decode(rest) {
            rest = &rest[used..];
            match &msg {
                Message::Hello { links, vtime, .. } => {
                    self.olsr.on_hello(now, from, links, *vtime);
                }
                Message::Tc { .. } => {
                    if let TcAction::Forward(f) = self.olsr.on_tc(now, from, &msg) {
                        // Forwarded after a jitter (RFC 3626 §3.4, as
                        // ns-3 does), with whatever else is queued then.
                        use rand::RngExt;
                        if self.flush_at.is_none() {
                            let u = self.fwd_rng.random::<f64>();
                            self.flush_at =
                                Some(now + OlsrConfig::jitter(self.cfg.hello_interval, u));
                        }
                        self.pending.push(f);
                    }
                }
            }
        }
        // A zero jitter: out at once.
        if self.flush_at.is_some_and(|f| f <= now) {
            let msgs = std::mem::take(&mut self.pending);
            self.flush_at = None;
            self.send(now, &msgs, out);
        }
        self.next_expiry = self.olsr.next_expiry(now);
    }
}
