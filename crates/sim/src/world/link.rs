//! [`PointToPoint`], one direction of a wired (or trace-driven)
//! point-to-point link, a [`LinkModel`] (defined in `world::link_model`,
//! re-exported here with its values).
//!
//! [`PointToPoint`] is a drop-tail FIFO served either at a fixed rate
//! (a packet's serialization takes `wire_bytes · 8 / rate`) or by a
//! Mahimahi trace (per-opportunity byte accounting like `mm-link`: each
//! opportunity carries 1500 bytes, a packet may use parts of several, an
//! opportunity that finds the queue empty is wasted). The packet then
//! propagates for `delay`. Channel loss is drawn when a packet finishes
//! transmission; a packet finishing inside an outage is lost; during an
//! outage nothing starts transmission and the queue holds.

pub use super::link_model::{DropReason, LinkModel, LinkOutput, LinkStats};
use super::loss::LossModel;
use super::outage::Outages;
use super::packet::Packet;
use super::queue::DropTailQueue;
pub use super::queue::QueueLimit;
use super::trace::{MahimahiTrace, OPPORTUNITY_BYTES};
use peregrine_cc::Time;
use std::sync::Arc;
use std::time::Duration;

/// How a direction serves its queue.
#[derive(Debug)]
pub enum Server {
    /// A fixed rate, bits per second.
    Rate(u64),
    /// A Mahimahi trace.
    Trace(Arc<MahimahiTrace>),
}

/// One direction of a point-to-point link.
#[derive(Debug)]
pub struct PointToPoint {
    server: Server,
    delay: Duration,
    queue: DropTailQueue,
    /// Rate server: the packet being serialized and when it finishes.
    in_service: Option<(Packet, Time)>,
    /// Trace server: the next opportunity index, bytes left in the
    /// current one, bytes of the head packet already sent.
    next_opp: u64,
    opp_left: u32,
    head_sent: u32,
    loss: LossModel,
    outages: Outages,
    stats: LinkStats,
}

impl PointToPoint {
    /// A direction with the given server, propagation delay, queue
    /// limit, loss and outages.
    pub fn new(
        server: Server,
        delay: Duration,
        limit: QueueLimit,
        loss: LossModel,
        outages: Outages,
    ) -> PointToPoint {
        PointToPoint {
            server,
            delay,
            queue: DropTailQueue::new(limit),
            in_service: None,
            next_opp: 0,
            opp_left: 0,
            head_sent: 0,
            loss,
            outages,
            stats: LinkStats::default(),
        }
    }

    /// A packet finished transmission at `t`: lose it or send it on.
    fn finish(&mut self, t: Time, p: Packet, out: &mut LinkOutput) {
        if self.outages.is_down(t) {
            self.stats.outage_drops += 1;
            out.dropped.push((p, DropReason::Outage));
        } else if self.loss.lose(p.is_data) {
            self.stats.channel_drops += 1;
            out.dropped.push((p, DropReason::Channel));
        } else {
            self.stats.delivered_packets += 1;
            self.stats.delivered_bytes += u64::from(p.wire_bytes);
            out.delivered.push((t + self.delay, p));
        }
    }

    fn advance_rate(&mut self, now: Time, rate_bps: u64, out: &mut LinkOutput) {
        loop {
            let mut t = now;
            if let Some((_, fin)) = &self.in_service {
                if *fin > now {
                    return;
                }
                t = *fin;
                if let Some((p, fin)) = self.in_service.take() {
                    self.finish(fin, p, out);
                }
            }
            if self.queue.is_empty() || self.outages.is_down(t) {
                return;
            }
            let Some(p) = self.queue.pop(out) else { return };
            let tx_ns = (u64::from(p.wire_bytes) * 8 * 1_000_000_000).div_ceil(rate_bps);
            self.in_service = Some((p, t + Duration::from_nanos(tx_ns.max(1))));
        }
    }

    fn advance_trace(&mut self, now: Time, trace: &MahimahiTrace, out: &mut LinkOutput) {
        while !self.queue.is_empty() {
            let t = trace.opportunity(self.next_opp);
            if t > now {
                return;
            }
            if self.opp_left == 0 {
                self.opp_left = OPPORTUNITY_BYTES;
            }
            if self.outages.is_down(t) {
                // Nothing leaves while down: this opportunity is lost.
                self.opp_left = 0;
                self.next_opp += 1;
                continue;
            }
            while self.opp_left > 0 {
                let Some(head) = self.queue.front() else {
                    break;
                };
                let need = head.wire_bytes - self.head_sent;
                let used = need.min(self.opp_left);
                self.opp_left -= used;
                self.head_sent += used;
                if self.head_sent == head.wire_bytes {
                    self.head_sent = 0;
                    if let Some(p) = self.queue.pop(out) {
                        self.finish(t, p, out);
                    }
                }
            }
            // What is left of an opportunity when the queue empties is wasted.
            self.opp_left = 0;
            self.next_opp += 1;
        }
    }
}

impl LinkModel for PointToPoint {
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Result<(), (Packet, DropReason)> {
        let was_empty = self.queue.is_empty();
        self.queue.push(pkt, &mut self.stats)?;
        if was_empty {
            if let Server::Trace(t) = &self.server {
                // Opportunities that passed while the queue was empty were wasted.
                let first = t.first_at_or_after(now);
                if first > self.next_opp {
                    self.stats.wasted_opportunities += first - self.next_opp;
                    self.next_opp = first;
                    self.opp_left = 0;
                }
            }
        }
        Ok(())
    }

    fn next_wake(&mut self, now: Time) -> Option<Time> {
        match &self.server {
            Server::Rate(_) => {
                if let Some((_, fin)) = &self.in_service {
                    return Some(*fin);
                }
                if self.queue.is_empty() {
                    return None;
                }
                Some(self.outages.up_at(now))
            }
            Server::Trace(t) => {
                if self.queue.is_empty() {
                    return None;
                }
                let at = t.opportunity(self.next_opp).max(now);
                if self.outages.is_down(at) {
                    // Skip the opportunities of the outage in one step.
                    let up = self.outages.up_at(at);
                    let first = t.first_at_or_after(up);
                    self.next_opp = self.next_opp.max(first);
                    self.opp_left = 0;
                    return Some(t.opportunity(self.next_opp).max(now));
                }
                Some(at)
            }
        }
    }

    fn advance(&mut self, now: Time, out: &mut LinkOutput) {
        match &self.server {
            Server::Rate(r) => {
                let r = *r;
                self.advance_rate(now, r, out);
            }
            Server::Trace(t) => {
                let t = Arc::clone(t);
                self.advance_trace(now, &t, out);
            }
        }
    }

    fn backlog(&self) -> (u64, u64) {
        self.queue.backlog()
    }

    fn stats(&self) -> &LinkStats {
        &self.stats
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
