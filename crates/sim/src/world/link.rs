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
use super::link_options::LinkOptions;
use super::loss::LossModel;
use super::outage::Outages;
use super::packet::Packet;
use super::queue::LinkQueue;
pub use super::queue::QueueLimit;
use super::trace::{MahimahiTrace, OPPORTUNITY_BYTES};
use crate::rng::SimRng;
use peregrine_cc::Time;
use peregrine_link::aqm::AqmConfig;
use peregrine_link::impair::{InOrder, Jitter, NetemReorder};
use peregrine_link::serialise::serialisation_ns;
use peregrine_link::uniform::RandSource;
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
    queue: LinkQueue,
    /// Rate server: the packet being serialized and when it finishes.
    in_service: Option<(Packet, Time)>,
    /// Trace server with a queue that cannot be peeked (CoDel, FQ-CoDel,
    /// DualPI2): the dequeued head being sent over opportunities.
    trace_head: Option<Packet>,
    /// Trace server: the next opportunity index, bytes left in the
    /// current one, bytes of the head packet already sent.
    next_opp: u64,
    opp_left: u32,
    head_sent: u32,
    loss: LossModel,
    outages: Outages,
    impair: Option<Impairments>,
    stats: LinkStats,
}

/// Delay jitter and netem reordering of one direction, each drawing from
/// its own generator.
#[derive(Debug)]
struct Impairments {
    jitter: Jitter,
    jitter_reorders: bool,
    jitter_rng: RandSource<SimRng>,
    in_order: InOrder,
    reorder: Option<(NetemReorder, RandSource<SimRng>)>,
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
            // Drop-tail draws nothing: the generator is never used.
            queue: LinkQueue::new(
                AqmConfig::DropTail,
                limit,
                None,
                crate::rng::component_rng(0, "unused"),
            ),
            in_service: None,
            trace_head: None,
            next_opp: 0,
            opp_left: 0,
            head_sent: 0,
            loss,
            outages,
            impair: None,
            stats: LinkStats::default(),
        }
    }

    /// Serve the queue under `aqm` (drop-tail by default), its random
    /// decisions drawn from `rng` (`link/<name>/<dir>/aqm`). Call before
    /// the first packet. O(1) (FQ-CoDel: O(flows)).
    pub fn with_aqm(mut self, aqm: AqmConfig, limit: QueueLimit, rng: SimRng) -> PointToPoint {
        let rate = match &self.server {
            Server::Rate(r) => Some(*r),
            Server::Trace(_) => None,
        };
        self.queue = LinkQueue::new(aqm, limit, rate, rng);
        self.stats.aqm = self.queue.aqm_name();
        self
    }

    /// Add delay jitter (`jitter_reorders`: whether a packet may overtake
    /// its predecessor; without it arrivals keep their order, like netem's
    /// rate with jitter) and netem's `reorder p gap` (a reordered packet
    /// skips the delay and jitter), each drawing from its own generator
    /// (`…/jitter`, `…/reorder`). O(1).
    pub fn with_impairments(
        mut self,
        jitter: Jitter,
        jitter_reorders: bool,
        jitter_rng: SimRng,
        reorder: Option<(NetemReorder, SimRng)>,
    ) -> PointToPoint {
        if jitter == Jitter::None && reorder.is_none() {
            return self;
        }
        self.impair = Some(Impairments {
            jitter,
            jitter_reorders,
            jitter_rng: RandSource(jitter_rng),
            in_order: InOrder::default(),
            reorder: reorder.map(|(r, g)| (r, RandSource(g))),
        });
        self
    }

    /// Apply a direction's validated [`LinkOptions`]: its queue discipline
    /// (with `limit`) and impairments, their generators named
    /// `<rng_name>/aqm`, `/jitter`, `/reorder` (new streams: the loss and
    /// outage draws are unchanged by them).
    pub fn with_options(
        self,
        o: &LinkOptions,
        limit: QueueLimit,
        seed: u64,
        rng_name: &str,
    ) -> PointToPoint {
        let rng = |part: &str| crate::rng::component_rng(seed, &format!("{rng_name}/{part}"));
        let p = if o.aqm == AqmConfig::DropTail {
            self
        } else {
            self.with_aqm(o.aqm, limit, rng("aqm"))
        };
        p.with_impairments(
            o.jitter,
            o.jitter_reorders,
            rng("jitter"),
            o.reorder.map(|r| (r, rng("reorder"))),
        )
    }

    /// When a packet that left the wire at `t` arrives at the far end.
    fn arrival(&mut self, t: Time) -> Time {
        let Some(im) = self.impair.as_mut() else {
            return t + self.delay;
        };
        if let Some((r, g)) = im.reorder.as_mut() {
            if r.sends_now(g) {
                return t;
            }
        }
        let jitter = Duration::from_nanos(im.jitter.draw_ns(&mut im.jitter_rng));
        im.in_order.due(t + self.delay + jitter, im.jitter_reorders)
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
            let at = self.arrival(t);
            out.delivered.push((at, p));
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
            let Some(p) = self.queue.pop(t, out, &mut self.stats) else {
                return;
            };
            let tx_ns = serialisation_ns(u64::from(p.wire_bytes), rate_bps);
            self.in_service = Some((p, t + Duration::from_nanos(tx_ns.max(1))));
        }
    }

    /// Whether packets wait (queued, or dequeued into the trace head).
    fn has_backlog(&self) -> bool {
        !self.queue.is_empty() || self.trace_head.is_some()
    }

    /// The size of the packet a trace opportunity serves next: the queue's
    /// head in place, or (a queue that cannot be peeked) the dequeued head.
    fn trace_head_bytes(&mut self, t: Time, out: &mut LinkOutput) -> Option<u32> {
        if self.queue.peekable() {
            return self.queue.front().map(|p| p.wire_bytes);
        }
        if self.trace_head.is_none() {
            self.trace_head = self.queue.pop(t, out, &mut self.stats);
        }
        self.trace_head.as_ref().map(|p| p.wire_bytes)
    }

    fn advance_trace(&mut self, now: Time, trace: &MahimahiTrace, out: &mut LinkOutput) {
        while self.has_backlog() {
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
                let Some(head_bytes) = self.trace_head_bytes(t, out) else {
                    break;
                };
                let need = head_bytes - self.head_sent;
                let used = need.min(self.opp_left);
                self.opp_left -= used;
                self.head_sent += used;
                if self.head_sent == head_bytes {
                    self.head_sent = 0;
                    let p = match self.trace_head.take() {
                        Some(p) => Some(p),
                        None => self.queue.pop(t, out, &mut self.stats),
                    };
                    if let Some(p) = p {
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
        let was_empty = !self.has_backlog();
        self.queue.push(now, pkt, &mut self.stats)?;
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
                if !self.has_backlog() {
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
        self.queue.flush_drops(out);
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
        let (packets, bytes) = self.queue.backlog();
        match &self.trace_head {
            Some(h) => (packets + 1, bytes + u64::from(h.wire_bytes)),
            None => (packets, bytes),
        }
    }

    fn stats(&self) -> &LinkStats {
        &self.stats
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
