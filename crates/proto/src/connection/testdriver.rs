//! A tiny in-memory driver for the connection tests: two or more
//! endpoints, virtual time, one-way delay, an optional serialisation rate
//! per direction, seeded Bernoulli loss and a per-packet hook that may drop
//! or CE-mark a datagram. (The reusable impairment harness is
//! `crate::harness`, behind the feature `harness`; this one only serves
//! these unit tests, several of which read private state — the endpoint's
//! `connections`, `send_helpers` — and so cannot yet move to `tests/`.)

use crate::connection::Event;
use crate::endpoint::{ConnectionHandle, Endpoint};
use crate::io::{EcnCodepoint, SansIo};
use crate::rng::SeededRng;
use crate::wire::{DatagramRepr, HeaderRepr};
use peregrine_cc::Time;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// What the hook decides for one datagram.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    Deliver,
    Drop,
    MarkCe,
}

/// A datagram that left a node, as the log records it.
#[derive(Clone, Debug)]
pub(crate) struct Sent {
    pub at: Time,
    pub from: usize,
    pub header: HeaderRepr,
    pub bytes: Vec<u8>,
    pub fate: Fate,
}

type Hook = Box<dyn FnMut(usize, &HeaderRepr, &[u8]) -> Fate>;
/// A datagram on its way: (destination node, source address, bytes, ECN).
type InFlight = (usize, SocketAddr, Vec<u8>, Option<EcnCodepoint>);

pub(crate) struct Sim {
    pub now: Time,
    pub eps: Vec<Endpoint>,
    pub addrs: Vec<SocketAddr>,
    pub events: Vec<Vec<(ConnectionHandle, Event)>>,
    pub log: Vec<Sent>,
    pub delay: Duration,
    pub rate_bps: u64,
    pub loss: f64,
    /// Uniform extra delay in `[0, jitter)` per datagram (reorders).
    pub jitter: Duration,
    /// Probability that a datagram is delivered twice.
    pub duplicate: f64,
    pub hook: Hook,
    /// Whether the application of each node reads its events.
    pub read_events: Vec<bool>,
    queue: BTreeMap<(Time, u64), InFlight>,
    link_free: Vec<Time>,
    seq: u64,
    rng: SeededRng,
    buf: Vec<u8>,
}

pub(crate) fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, (i + 1) as u8], 4000))
}

impl Sim {
    pub fn new(eps: Vec<Endpoint>, delay: Duration, seed: u64) -> Sim {
        let n = eps.len();
        Sim {
            now: Time::ZERO,
            addrs: (0..n).map(addr).collect(),
            events: vec![Vec::new(); n],
            eps,
            log: Vec::new(),
            delay,
            rate_bps: 0,
            loss: 0.0,
            jitter: Duration::ZERO,
            duplicate: 0.0,
            hook: Box::new(|_, _, _| Fate::Deliver),
            read_events: vec![true; n],
            queue: BTreeMap::new(),
            link_free: vec![Time::ZERO; n],
            seq: 0,
            rng: SeededRng::new(seed),
            buf: Vec::new(),
        }
    }

    fn chance(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Send everything every node wants sent, then read events.
    pub fn flush(&mut self) {
        for i in 0..self.eps.len() {
            while let Some(t) = self.eps[i].poll_transmit(self.now, &mut self.buf) {
                assert_eq!(t.size, self.buf.len());
                let bytes = self.buf.clone();
                let Some(to) = self.addrs.iter().position(|a| *a == t.destination) else {
                    continue;
                };
                // Sealed datagrams (packet protection) decode only after
                // opening: check the whole datagram when it is in the
                // clear, only the header otherwise.
                let header = match DatagramRepr::decode(&bytes) {
                    Ok(dg) => dg.header,
                    Err(_) => crate::wire::Header::new_checked(&bytes[..])
                        .and_then(|h| HeaderRepr::parse(&h))
                        .expect("the endpoint sends only well-formed headers"),
                };
                let mut fate = (self.hook)(i, &header, &bytes);
                if fate != Fate::Drop && self.loss > 0.0 && self.chance() < self.loss {
                    fate = Fate::Drop;
                }
                self.log.push(Sent {
                    at: self.now,
                    from: i,
                    header,
                    bytes: bytes.clone(),
                    fate,
                });
                // Serialisation on the sender's link, then propagation.
                let mut depart = self.now;
                if let Some(ns) =
                    (bytes.len() as u64 * 8 * 1_000_000_000).checked_div(self.rate_bps)
                {
                    let ser = Duration::from_nanos(ns);
                    depart = self.link_free[i].max(self.now) + ser;
                    self.link_free[i] = depart;
                }
                if fate == Fate::Drop {
                    continue;
                }
                let ecn = if fate == Fate::MarkCe {
                    Some(EcnCodepoint::Ce)
                } else {
                    t.ecn
                };
                let copies = if self.duplicate > 0.0 && self.chance() < self.duplicate {
                    2
                } else {
                    1
                };
                for _ in 0..copies {
                    let extra = self.jitter.mul_f64(self.chance());
                    self.seq += 1;
                    self.queue.insert(
                        (depart + self.delay + extra, self.seq),
                        (to, self.addrs[i], bytes.clone(), ecn),
                    );
                }
            }
        }
        for i in 0..self.eps.len() {
            if !self.read_events[i] {
                continue;
            }
            while let Some(ev) = self.eps[i].poll_event() {
                self.events[i].push(ev);
            }
        }
    }

    /// Inject raw bytes into node `to` as if from `from` (a copy: the
    /// endpoint may decrypt in place).
    pub fn inject(&mut self, to: usize, from: SocketAddr, bytes: &[u8]) {
        self.eps[to].handle_datagram(self.now, from, None, &mut bytes.to_vec());
        self.flush();
    }

    /// Run until `deadline` or until nothing is left to do.
    pub fn run_until(&mut self, deadline: Time) {
        let mut same_instant = 0u32;
        loop {
            self.flush();
            let next_delivery = self.queue.keys().next().map(|(t, _)| *t);
            let next_timer = self.eps.iter_mut().filter_map(|e| e.poll_timeout()).min();
            let next = match (next_delivery, next_timer) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => return,
                },
            };
            if next > deadline {
                self.now = deadline;
                return;
            }
            if next <= self.now {
                same_instant += 1;
                assert!(same_instant < 100_000, "timers spin at {:?}", self.now);
            } else {
                same_instant = 0;
            }
            self.now = self.now.max(next);
            while let Some(entry) = self.queue.first_entry() {
                if entry.key().0 > self.now {
                    break;
                }
                let (to, from, mut bytes, ecn) = entry.remove();
                self.eps[to].handle_datagram(self.now, from, ecn, &mut bytes);
            }
            for ep in &mut self.eps {
                if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                    ep.handle_timeout(self.now);
                }
            }
        }
    }

    pub fn run_for(&mut self, d: Duration) {
        let deadline = self.now + d;
        self.run_until(deadline);
    }

    /// Messages node `i` received, in arrival order.
    pub fn received(&self, i: usize) -> Vec<(u32, Vec<u8>)> {
        self.events[i]
            .iter()
            .filter_map(|(_, e)| match e {
                Event::MessageReceived { id, bytes, .. } => Some((id.number, bytes.clone())),
                _ => None,
            })
            .collect()
    }

    /// Whether node `i` saw an event matching `f`.
    pub fn saw(&self, i: usize, f: impl Fn(&Event) -> bool) -> bool {
        self.events[i].iter().any(|(_, e)| f(e))
    }

    /// Node `i`'s `Closed` event, if any.
    pub fn closed(&self, i: usize) -> Option<Event> {
        self.events[i]
            .iter()
            .find(|(_, e)| matches!(e, Event::Closed { .. }))
            .map(|(_, e)| e.clone())
    }
}
