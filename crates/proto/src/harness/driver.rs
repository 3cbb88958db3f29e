//! [`Driver`]: endpoints on the [`Harness`], the way the connection tests
//! want them — node `i` at [`addr(i)`](addr), every transmitted datagram
//! logged with its decoded header, a per-datagram [`Hook`] that may drop
//! or CE-mark it, and each node's events collected as they happen.
//!
//! This was `connection/testdriver.rs`, a second event loop of its own;
//! it is now a thin layer over the harness's one loop: the hook and the
//! log sit in each node's `poll_transmit` (a [`Peer`] wraps the
//! endpoint), delay, rate, jitter, duplication and loss are the default
//! [`PipeConfig`] of every pipe.

use super::{Harness, Jitter, NodeId, PipeConfig, RunOutcome};
use crate::connection::Event;
use crate::endpoint::{ConnectionHandle, Endpoint};
use crate::io::{EcnCodepoint, SansIo, Transmit};
use crate::wire::{DatagramRepr, Header, HeaderRepr};
use crate::Time;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

/// What the hook decides for one datagram.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Into the pipe, as sent.
    Deliver,
    /// Never leaves the sender (still logged).
    Drop,
    /// Into the pipe with the ECN codepoint set to CE.
    MarkCe,
}

/// A datagram that left a node, as the log records it.
#[derive(Clone, Debug)]
pub struct Sent {
    /// When it was sent.
    pub at: Time,
    /// The sending node's index.
    pub from: usize,
    /// Its header (decoded from the clear prefix when sealed).
    pub header: HeaderRepr,
    /// The datagram as sent.
    pub bytes: Vec<u8>,
    /// What the hook decided.
    pub fate: Fate,
}

/// The per-datagram hook: (sending node, header, bytes) → fate.
pub type Hook = Box<dyn FnMut(usize, &HeaderRepr, &[u8]) -> Fate>;

/// Node `i`'s address: `10.0.0.(i+1):4000`.
pub fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, (i + 1) as u8], 4000))
}

/// What the peers share with the driver while the harness runs (the
/// driver holds these in its public fields between runs).
struct Shared {
    hook: Hook,
    log: Vec<Sent>,
    events: Vec<Vec<(ConnectionHandle, Event)>>,
    read_events: Vec<bool>,
    /// Addresses of the nodes: datagrams to anything else are neither
    /// hooked nor logged (the harness counts them unroutable).
    addrs: Vec<SocketAddr>,
}

fn deliver_all() -> Hook {
    Box::new(|_, _, _| Fate::Deliver)
}

/// An endpoint as a harness node: applies the hook and logs on transmit,
/// reads the endpoint's events after its transmits.
pub struct Peer {
    ep: Endpoint,
    index: usize,
    shared: Rc<RefCell<Shared>>,
}

impl Peer {
    /// Reads the endpoint's events if the application of this node reads
    /// them; whether any were read.
    fn read_events(&mut self) -> bool {
        let mut sh = self.shared.borrow_mut();
        if !sh.read_events[self.index] {
            return false;
        }
        let mut any = false;
        while let Some(ev) = self.ep.poll_event() {
            sh.events[self.index].push(ev);
            any = true;
        }
        any
    }
}

impl SansIo for Peer {
    fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        datagram: &mut [u8],
    ) {
        self.ep.handle_datagram(now, remote, ecn, datagram);
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        loop {
            let Some(mut t) = self.ep.poll_transmit(now, buf) else {
                // Reading events may free buffers (the receive window):
                // give the endpoint another chance to send after it.
                if self.read_events() {
                    continue;
                }
                return None;
            };
            assert_eq!(t.size, buf.len());
            let mut sh = self.shared.borrow_mut();
            if !sh.addrs.contains(&t.destination) {
                return Some(t);
            }
            // Sealed datagrams (packet protection) decode only after
            // opening: check the whole datagram when it is in the clear,
            // only the header otherwise.
            let header = match DatagramRepr::decode(buf) {
                Ok(dg) => dg.header,
                Err(_) => Header::new_checked(&buf[..])
                    .and_then(|h| HeaderRepr::parse(&h))
                    .expect("the endpoint sends only well-formed headers"),
            };
            let fate = (sh.hook)(self.index, &header, buf);
            sh.log.push(Sent {
                at: now,
                from: self.index,
                header,
                bytes: buf.clone(),
                fate,
            });
            match fate {
                Fate::Drop => continue,
                Fate::MarkCe => t.ecn = Some(EcnCodepoint::Ce),
                Fate::Deliver => {}
            }
            return Some(t);
        }
    }

    fn poll_timeout(&mut self) -> Option<Time> {
        self.ep.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Time) {
        self.ep.handle_timeout(now);
    }
}

/// Endpoints `0..n` at [`addr(i)`](addr) on one [`Harness`], every pipe
/// configured from the public link fields. Between runs the driver holds
/// the endpoints, the log, the events and the hook in its public fields,
/// so a test reaches them directly (`driver.eps[0].send_message(h,
/// driver.now, …)`); a run ([`flush`](Self::flush),
/// [`inject`](Self::inject), [`run_until`](Self::run_until)) hands them to
/// the harness's nodes and takes them back, applying changed link fields
/// and addresses first. Test tooling: it panics on a harness error,
/// naming the seed.
pub struct Driver {
    /// The current virtual time.
    pub now: Time,
    /// The endpoints, node `i` at `eps[i]`.
    pub eps: Vec<Endpoint>,
    /// Node `i`'s address ([`addr(i)`](addr) unless a test moves it: a
    /// NAT rebinding; datagrams to the new address then reach it).
    pub addrs: Vec<SocketAddr>,
    /// Every datagram sent to a node so far, in order.
    pub log: Vec<Sent>,
    /// Node `i`'s events, in order (while `read_events[i]`).
    pub events: Vec<Vec<(ConnectionHandle, Event)>>,
    /// Whether the application of node `i` reads its events.
    pub read_events: Vec<bool>,
    /// Decides each datagram's fate (default: deliver).
    pub hook: Hook,
    /// One-way propagation delay of every pipe.
    pub delay: Duration,
    /// Serialisation rate of every pipe, bit/s (0: infinite).
    pub rate_bps: u64,
    /// Bernoulli loss probability of every pipe.
    pub loss: f64,
    /// Uniform extra delay in `[0, jitter]` per datagram (reorders).
    pub jitter: Duration,
    /// Probability that a datagram is delivered twice.
    pub duplicate: f64,
    net: Harness<Peer>,
    shared: Rc<RefCell<Shared>>,
    applied: PipeConfig,
}

/// What a node's endpoint slot holds while the driver has the endpoint:
/// an endpoint with no connection (no timer, nothing to send).
fn placeholder() -> Endpoint {
    Endpoint::new(crate::EndpointConfig::default(), 0)
}

impl Driver {
    /// `eps` as nodes `0..n`, every pipe `delay` long and otherwise
    /// perfect, the harness seeded with `seed`.
    pub fn new(eps: Vec<Endpoint>, delay: Duration, seed: u64) -> Driver {
        let n = eps.len();
        let addrs: Vec<SocketAddr> = (0..n).map(addr).collect();
        let shared = Rc::new(RefCell::new(Shared {
            hook: deliver_all(),
            log: Vec::new(),
            events: Vec::new(),
            read_events: Vec::new(),
            addrs: addrs.clone(),
        }));
        let mut net = Harness::new(seed);
        for (index, &a) in addrs.iter().enumerate() {
            let peer = Peer {
                ep: placeholder(),
                index,
                shared: shared.clone(),
            };
            net.add_node(a, peer);
        }
        let mut d = Driver {
            now: Time::ZERO,
            eps,
            addrs,
            log: Vec::new(),
            events: vec![Vec::new(); n],
            read_events: vec![true; n],
            hook: deliver_all(),
            delay,
            rate_bps: 0,
            loss: 0.0,
            jitter: Duration::ZERO,
            duplicate: 0.0,
            net,
            shared,
            applied: PipeConfig::default(),
        };
        d.apply_pipes();
        d
    }

    /// Sends everything every node wants sent, and reads events.
    pub fn flush(&mut self) {
        self.enter();
        let r = self.net.next_event_time();
        self.leave();
        self.check(r);
    }

    /// Inject raw bytes into node `to` as if from `from` (a copy: the
    /// endpoint may decrypt in place), then flush.
    pub fn inject(&mut self, to: usize, from: SocketAddr, bytes: &[u8]) {
        self.enter();
        let r = self
            .net
            .inject(from, NodeId(to), bytes)
            .and_then(|()| self.net.next_event_time());
        self.leave();
        self.check(r);
    }

    /// Runs until `deadline` or until nothing is left to do (time then
    /// stays at the last event).
    pub fn run_until(&mut self, deadline: Time) {
        self.enter();
        let r = self.net.run_until_idle(deadline);
        self.leave();
        let _: RunOutcome = self.check(r);
    }

    /// Runs for `d` of virtual time (see [`run_until`](Self::run_until)).
    pub fn run_for(&mut self, d: Duration) {
        let deadline = self.now + d;
        self.run_until(deadline);
    }

    /// Messages node `i` received, in arrival order.
    pub fn received(&self, i: usize) -> Vec<(u32, Vec<u8>)> {
        self.events[i]
            .iter()
            .filter_map(|(_, e)| match e {
                Event::MessageReceived { id, bytes, .. } => Some((id.number, bytes.to_vec())),
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

    fn check<T>(&self, r: Result<T, super::HarnessError>) -> T {
        r.unwrap_or_else(|e| panic!("driver: {e}"))
    }

    /// The pipe configuration the link fields describe.
    fn pipe_config(&self) -> PipeConfig {
        PipeConfig {
            rate_bps: self.rate_bps,
            delay_us: self.delay.as_micros() as u64,
            jitter: if self.jitter.is_zero() {
                Jitter::None
            } else {
                Jitter::Uniform {
                    max_us: self.jitter.as_micros() as u64,
                }
            },
            jitter_reorders: true,
            loss: self.loss,
            duplicate: self.duplicate,
            ..PipeConfig::default()
        }
    }

    fn apply_pipes(&mut self) {
        let config = self.pipe_config();
        if config != self.applied {
            let r = self.net.set_default_pipe(config.clone());
            self.check(r);
            self.applied = config;
        }
    }

    /// Hands the public fields to the harness and the peers for a run;
    /// every node is drained (its transmits sent, its timer re-armed, its
    /// events read) before the next event.
    fn enter(&mut self) {
        self.apply_pipes();
        {
            let mut sh = self.shared.borrow_mut();
            sh.hook = std::mem::replace(&mut self.hook, deliver_all());
            sh.log = std::mem::take(&mut self.log);
            sh.events = std::mem::take(&mut self.events);
            sh.read_events = self.read_events.clone();
            sh.addrs = self.addrs.clone();
        }
        for (i, ep) in self.eps.iter_mut().enumerate() {
            let id = NodeId(i);
            if self.net.addr(id) != self.addrs[i] {
                self.net.set_addr(id, self.addrs[i]);
            }
            std::mem::swap(ep, &mut self.net.node_mut(id).ep);
        }
    }

    /// Takes the public fields back after a run.
    fn leave(&mut self) {
        for (i, ep) in self.eps.iter_mut().enumerate() {
            std::mem::swap(ep, &mut self.net.node_mut(NodeId(i)).ep);
        }
        self.now = self.net.now();
        let mut sh = self.shared.borrow_mut();
        self.hook = std::mem::replace(&mut sh.hook, deliver_all());
        self.log = std::mem::take(&mut sh.log);
        self.events = std::mem::take(&mut sh.events);
    }
}
