//! OLSR in the engine (issue 22): one [`OlsrAgent`] per node, its HELLOs
//! and TCs sent as broadcast frames through the node's `WifiNic` (so they
//! take airtime, collide and get lost under the DCF), every OLSR packet a
//! node decodes handed to its agent, and a [`Router`] that forwards on
//! each node's own OLSR table.
//!
//! Key choices:
//! * The router does not look at the true connectivity: a packet whose
//!   table names a neighbour that has flown out of range is sent to it
//!   anyway and costs its MAC retries before the DCF drops it (reason
//!   `channel`). Only an empty table entry is a `no_route` drop.
//! * One engine event (`Ev::Olsr`) stands for every agent: it fires at
//!   the earliest instant some agent has a message to send or a tuple to
//!   expire ([`OlsrAgent::next_due`]); the agents due then are polled in
//!   node order. An index of (due instant, node) keeps that O(log nodes).
//! * OLSR packets are addressed to `dcf::BROADCAST` on UDP 698; the engine
//!   recognises them on arrival and on drop by that address
//!   ([`is_control`]) and keeps them out of every flow's counters.

use super::{Hop, Router, Sim};
use crate::world::dcf::BROADCAST;
use crate::world::link::DropReason;
use crate::world::medium::SharedMedium;
use crate::world::olsr::{OlsrAgent, OlsrConfig};
use crate::world::packet::Packet;
use peregrine_cc::Time;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

/// Whether `p` is OLSR control traffic (a broadcast to UDP 698).
pub(crate) fn is_control(p: &Packet) -> bool {
    p.dst == BROADCAST && p.dst_port == OlsrAgent::PORT
}

/// Every node's OLSR agent and what the engine counts about them.
#[derive(Debug)]
pub(crate) struct OlsrNet {
    agents: Vec<OlsrAgent>,
    /// (due instant, node) of every agent: the first is the next wake.
    due: BTreeSet<(Time, usize)>,
    /// Per node, its entry in `due`.
    due_of: Vec<Time>,
    /// OLSR packets decoded by some node.
    pub(crate) received: u64,
    /// OLSR packets dropped at a full transmit queue.
    pub(crate) queue_drops: u64,
}

/// The agents, shared by the engine (traffic) and the router (tables).
pub(crate) type SharedOlsr = Rc<RefCell<OlsrNet>>;

impl OlsrNet {
    /// Agents for `n` nodes; jitter from `olsr/node<i>` of `seed`. O(n log n).
    pub(crate) fn new(n: usize, cfg: &OlsrConfig, seed: u64) -> OlsrNet {
        let agents: Vec<OlsrAgent> = (0..n)
            .map(|i| OlsrAgent::new(i, cfg.clone(), seed))
            .collect();
        let due_of: Vec<Time> = agents.iter().map(OlsrAgent::next_due).collect();
        OlsrNet {
            due: due_of.iter().copied().zip(0..).collect(),
            due_of,
            agents,
            received: 0,
            queue_drops: 0,
        }
    }

    /// The earliest instant some agent has work. O(1).
    pub(crate) fn next_due(&self) -> Option<Time> {
        self.due.first().map(|&(t, _)| t)
    }

    fn refresh(&mut self, node: usize) {
        let t = self.agents[node].next_due();
        if t != self.due_of[node] {
            self.due.remove(&(self.due_of[node], node));
            self.due.insert((t, node));
            self.due_of[node] = t;
        }
    }

    /// Poll every agent due at or before `now`; (node, packet) to send
    /// go to `out`. O(due agents · (state + log nodes)).
    pub(crate) fn poll(&mut self, now: Time, out: &mut Vec<(usize, Packet)>) {
        let mut pkts = Vec::new();
        while let Some(&(t, node)) = self.due.first() {
            if t > now {
                break;
            }
            self.agents[node].poll(now, &mut pkts);
            out.extend(pkts.drain(..).map(|p| (node, p)));
            self.refresh(node);
            if self.due_of[node] <= now {
                // An agent never asks for the instant it was just polled at
                // (its timers move forward); guard against a livelock anyway.
                self.due.remove(&(self.due_of[node], node));
                let later = now + std::time::Duration::from_nanos(1);
                self.due.insert((later, node));
                self.due_of[node] = later;
            }
        }
    }

    /// Node `node` decoded OLSR packet `pkt` at `now`; TCs it forwards go
    /// to `out`. O(addresses + state + log nodes).
    pub(crate) fn receive(
        &mut self,
        now: Time,
        node: usize,
        pkt: &Packet,
        out: &mut Vec<(usize, Packet)>,
    ) {
        self.received += 1;
        let mut pkts = Vec::new();
        self.agents[node].receive(now, pkt, &mut pkts);
        out.extend(pkts.into_iter().map(|p| (node, p)));
        self.refresh(node);
    }

    /// Node `at`'s next hop towards `dst` in its own table. O(log n).
    pub(crate) fn next_hop(&self, at: usize, dst: usize) -> Option<usize> {
        let d = u32::try_from(dst).ok()?;
        self.agents.get(at)?.olsr().next_hop(d).map(|n| n as usize)
    }

    /// Wire bytes (IP/UDP included) and packets of every OLSR
    /// transmission by any node (forwarded TCs included). O(n).
    pub(crate) fn sent(&self) -> (u64, u64) {
        self.agents.iter().fold((0, 0), |(b, p), a| {
            (b + a.sent_bytes(), p + a.sent_packets())
        })
    }

    /// OLSR packets sent by each node. O(n).
    pub(crate) fn sent_by_node(&self) -> Vec<u64> {
        self.agents.iter().map(OlsrAgent::sent_packets).collect()
    }

    /// Routing-table entries changed, over all nodes. O(n).
    pub(crate) fn route_changes(&self) -> u64 {
        self.agents.iter().map(|a| a.olsr().route_changes()).sum()
    }
}

/// Forwards on every node's OLSR table, never on the true connectivity.
pub struct OlsrRouter {
    pub(crate) olsr: SharedOlsr,
    pub(crate) medium: SharedMedium,
}

impl Router for OlsrRouter {
    fn next_hop(&mut self, _now: Time, at: usize, dst: usize) -> Option<Hop> {
        match self.olsr.borrow().next_hop(at, dst) {
            Some(next) => Some(Hop {
                link: at,
                node: next,
            }),
            None => {
                self.medium.borrow_mut().count_route_drop(false);
                None
            }
        }
    }
}

impl Sim {
    /// `Ev::Olsr` at the current instant: the agents due send their
    /// messages. O(due agents · state).
    pub(super) fn olsr_due(&mut self) {
        let now = self.now;
        let Some(w) = self.wireless.as_mut() else {
            return;
        };
        if w.olsr_wake != Some(now) {
            return; // superseded by an earlier wake
        }
        w.olsr_wake = None;
        let Some(net) = w.olsr.clone() else {
            return;
        };
        let mut out = std::mem::take(&mut self.olsr_out);
        net.borrow_mut().poll(now, &mut out);
        self.olsr_send(&mut out);
        self.olsr_out = out;
        self.olsr_schedule();
    }

    /// Node `node` decoded OLSR packet `pkt`. O(addresses + state).
    pub(super) fn olsr_arrive(&mut self, node: usize, pkt: Packet) {
        let Some(net) = self.wireless.as_ref().and_then(|w| w.olsr.clone()) else {
            return;
        };
        let mut out = std::mem::take(&mut self.olsr_out);
        net.borrow_mut().receive(self.now, node, &pkt, &mut out);
        self.olsr_send(&mut out);
        self.olsr_out = out;
        self.olsr_schedule();
    }

    /// Queue each (node, packet) at the node's interface.
    fn olsr_send(&mut self, pkts: &mut Vec<(usize, Packet)>) {
        for (node, p) in pkts.drain(..) {
            // `--pcap`: control traffic is on the air too (UDP 698 to
            // 10.255.255.255, which Wireshark decodes as OLSR).
            if let Some(c) = self.capture.as_mut() {
                c.record(node, self.now, &p);
            }
            match self.links[node].enqueue(self.now, p) {
                Ok(()) => self.advance_link(node),
                Err((p, reason)) => self.drop_packet(&p, reason),
            }
        }
    }

    /// Count a dropped OLSR packet (never a flow's drop).
    pub(super) fn olsr_drop(&mut self, reason: DropReason) {
        if let Some(net) = self.wireless.as_ref().and_then(|w| w.olsr.as_ref()) {
            if reason.is_queue() {
                net.borrow_mut().queue_drops += 1;
            }
            // Channel drops cannot happen: broadcasts have no retries and
            // are simply not decoded where they are lost.
        }
    }

    /// Push the `Ev::Olsr` wake if the agents' next work moved earlier.
    pub(super) fn olsr_schedule(&mut self) {
        let Some(w) = self.wireless.as_mut() else {
            return;
        };
        let Some(next) = w.olsr.as_ref().and_then(|n| n.borrow().next_due()) else {
            return;
        };
        let next = next.max(self.now);
        if next <= self.end && w.olsr_wake.is_none_or(|t| next < t) {
            w.olsr_wake = Some(next);
            self.queue.push(next, super::Ev::Olsr);
        }
    }
}
