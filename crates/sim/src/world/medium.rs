//! The shared 802.11b medium of a wireless world, and each node's network
//! interface on it (issue 10).
//!
//! One [`Medium`] holds what the nodes share: the [`WifiChannel`], every
//! node's mobility model (positions are sampled — once per instant, for
//! all nodes — only when the channel or routing needs them), the time
//! until which each node senses the medium busy, how many frames each
//! node has waiting (the contenders), the routing tables and the counters.
//! Each node has one [`WifiNic`], a [`LinkModel`] the engine drives like a
//! point-to-point direction: a drop-tail FIFO transmit queue whose head
//! goes on air when the node senses the medium idle.
//!
//! Key choices:
//! * One frame exchange is decided when it starts: `WifiChannel::attempt`
//!   folds backoff, Bianchi collisions (contenders = other nodes within
//!   carrier-sense range with a frame queued), frame errors and MAC
//!   retries into one outcome. The medium is then held busy for its
//!   `airtime` at the sender and every node within carrier-sense range;
//!   the frame reaches its next hop at the end of that airtime (the
//!   propagation delay, < 2 µs at 400 m, is neglected) or is dropped
//!   (reason `Channel`) when every attempt failed.
//! * Nodes whose medium becomes idle at the same instant take it in event
//!   order, the node that just transmitted last (1 ns later): successive
//!   frames alternate among the waiting nodes, as DCF shares the medium
//!   per frame among saturated stations; the contention among them is
//!   what the collision probability and the random backoff inside
//!   `airtime` stand for.
//! * Frames are sized by the packet's wire bytes (datagram + IP/UDP); the
//!   channel adds the MAC header, FCS and LLC/SNAP.

use super::channel::wifi::WifiChannel;
use super::channel::ConfigError;
use super::dcf::{Dcf, DcfConfig, Positions};
use super::geom::Vec3;
use super::link::{DropReason, LinkModel, LinkOutput, LinkStats};
use super::mobility::{Mobility, Segment};
use super::packet::Packet;
use super::queue::{DropTailQueue, QueueLimit};
use super::routing::Routing;
use peregrine_cc::Time;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// Counters of the wireless world.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MediumStats {
    /// Frames put on air (each with all its MAC attempts).
    pub frames: u64,
    /// MAC transmissions, retries included.
    pub attempts: u64,
    /// Attempts lost to collisions.
    pub collisions: u64,
    /// Frames lost after the last MAC retry.
    pub mac_drops: u64,
    /// Packets dropped because their destination was unreachable in the
    /// current routing tables.
    pub no_route_drops: u64,
    /// Packets dropped because the stale table's next hop was out of range
    /// (a broken route, until the next recomputation).
    pub broken_route_drops: u64,
    /// Packets dropped about to take hop `packet::MAX_HOPS` + 1 (a
    /// routing loop; OLSR only).
    pub hop_limit_drops: u64,
}

/// What the nodes of a wireless world share.
pub struct Medium {
    wifi: WifiChannel,
    mobility: Vec<Box<dyn Mobility>>,
    pos: Vec<Vec3>,
    /// Per node: the instant of its last sample in `pos` (nodes are
    /// sampled one by one, only when the channel needs them: a swarm's
    /// DCF asks for the nodes near each sender, issue 40).
    pos_at: Vec<Option<Time>>,
    /// Per node: its model's current straight piece of motion, if it
    /// moves in such pieces ([`Mobility::segment`]): side by side, so a
    /// sample reads this table instead of the node's boxed model.
    seg: Vec<Option<Segment>>,
    /// Per node: the medium is sensed busy until this instant.
    busy_until: Vec<Time>,
    /// Per node: frames queued or on air.
    backlog: Vec<u64>,
    routing: Routing,
    stats: MediumStats,
    /// The interference-based DCF, when selected (else the statistical
    /// MAC of `WifiChannel::attempt`).
    dcf: Option<Dcf>,
    /// The DCF event instant some interface (the second field) has asked
    /// the driver to wake it at, so the others do not ask for the same
    /// instant again.
    dcf_wake: Option<(Time, usize)>,
}

/// The medium's mobility models and their last sample, as the DCF's
/// [`Positions`].
struct Sampler<'a> {
    mobility: &'a mut [Box<dyn Mobility>],
    pos: &'a mut [Vec3],
    pos_at: &'a mut [Option<Time>],
    seg: &'a mut [Option<Segment>],
}

/// Node `i`'s position at `t`, sampled at most once per instant (an
/// earlier `t` than its last sample returns that sample: models only move
/// forward). O(1) plus one model step when `t` is new.
fn sample(
    mobility: &mut [Box<dyn Mobility>],
    pos: &mut [Vec3],
    pos_at: &mut [Option<Time>],
    seg: &mut [Option<Segment>],
    t: Time,
    i: usize,
) -> Vec3 {
    if pos_at[i].is_none_or(|p| t > p) {
        pos[i] = match seg[i] {
            // Still in the piece the model gave: its position, bit for bit.
            Some(s) if t.as_secs_f64() < s.until_s => s.position(t),
            _ => {
                seg[i] = mobility[i].segment(t);
                match seg[i] {
                    Some(s) => s.position(t),
                    None => mobility[i].position(t),
                }
            }
        };
        pos_at[i] = Some(t);
    }
    pos[i]
}

impl Positions for Sampler<'_> {
    fn at(&mut self, t: Time) -> &[Vec3] {
        for i in 0..self.pos.len() {
            sample(self.mobility, self.pos, self.pos_at, self.seg, t, i);
        }
        self.pos
    }

    fn of(&mut self, t: Time, node: usize) -> Vec3 {
        sample(self.mobility, self.pos, self.pos_at, self.seg, t, node)
    }

    fn max_speed_mps(&mut self, t: Time) -> f64 {
        self.mobility
            .iter_mut()
            .map(|m| m.velocity(t).norm())
            .fold(0.0, f64::max)
    }
}

impl std::fmt::Debug for Medium {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Medium")
            .field("nodes", &self.mobility.len())
            .field("stats", &self.stats)
            .finish()
    }
}

/// A medium shared by the interfaces and the router of one simulation
/// (single-threaded: a simulation runs on one thread).
pub type SharedMedium = Rc<RefCell<Medium>>;

impl Medium {
    /// A medium for `mobility.len()` nodes.
    pub fn new(wifi: WifiChannel, mobility: Vec<Box<dyn Mobility>>, routing: Routing) -> Medium {
        let n = mobility.len();
        Medium {
            wifi,
            mobility,
            pos: vec![Vec3::ZERO; n],
            pos_at: vec![None; n],
            seg: vec![None; n],
            busy_until: vec![Time::ZERO; n],
            backlog: vec![0; n],
            routing,
            stats: MediumStats::default(),
            dcf: None,
            dcf_wake: None,
        }
    }

    /// Use the interference-based DCF (`world::dcf`) instead of the
    /// statistical MAC: every interface's queue of `queue_packets` lives
    /// in it; its draws come from `seed`.
    pub fn with_dcf(
        mut self,
        cfg: DcfConfig,
        queue_packets: u64,
        seed: u64,
    ) -> Result<Medium, ConfigError> {
        let n = self.mobility.len();
        self.dcf = Some(Dcf::new(cfg, self.wifi.config(), n, queue_packets, seed)?);
        Ok(self)
    }

    /// The DCF, when selected.
    pub fn dcf(&self) -> Option<&Dcf> {
        self.dcf.as_ref()
    }

    /// The DCF, when selected (mutable: e.g. to record attempts).
    pub fn dcf_mut(&mut self) -> Option<&mut Dcf> {
        self.dcf.as_mut()
    }

    /// Run the DCF up to `now` (no-op under the statistical MAC).
    fn dcf_run(&mut self, now: Time, out: &mut LinkOutput) {
        let Medium {
            dcf,
            wifi,
            mobility,
            pos,
            pos_at,
            seg,
            stats,
            ..
        } = self;
        let Some(dcf) = dcf.as_mut() else {
            return;
        };
        let mut sampler = Sampler {
            mobility,
            pos,
            pos_at,
            seg,
        };
        dcf.run_until(now, wifi, &mut sampler, out);
        let d = dcf.stats();
        stats.frames = d.frames;
        stats.attempts = d.attempts;
        stats.collisions = d.collisions;
        stats.mac_drops = d.mac_drops;
    }

    /// Number of nodes.
    pub fn n_nodes(&self) -> usize {
        self.mobility.len()
    }

    /// Every node's position at `now` (sampled at most once per instant;
    /// an earlier `now` than the last sample returns the last sample, as
    /// models only move forward). O(nodes).
    pub fn positions(&mut self, now: Time) -> &[Vec3] {
        for i in 0..self.pos.len() {
            sample(
                &mut self.mobility,
                &mut self.pos,
                &mut self.pos_at,
                &mut self.seg,
                now,
                i,
            );
        }
        &self.pos
    }

    /// Whether `a` and `b` can exchange frames at `now` (the channel's
    /// routing criterion, shadowing included).
    pub fn link_up(&mut self, now: Time, a: usize, b: usize) -> bool {
        self.positions(now);
        let (pa, pb) = (self.pos[a], self.pos[b]);
        self.wifi.in_range(now, pa, pb, WifiChannel::link_id(a, b))
    }

    /// Recompute the routing tables from the connectivity at `now`.
    pub fn recompute_routes(&mut self, now: Time) {
        self.positions(now);
        let t = now;
        let (wifi, pos) = (&self.wifi, &self.pos);
        self.routing.recompute(t, |a, b| {
            wifi.in_range(t, pos[a], pos[b], WifiChannel::link_id(a, b))
        });
    }

    /// The routing tables.
    pub fn routing(&self) -> &Routing {
        &self.routing
    }

    /// The counters.
    pub fn stats(&self) -> &MediumStats {
        &self.stats
    }

    /// Count a packet dropped by the router (`broken`: the next hop was
    /// out of range; else no route at all).
    pub fn count_route_drop(&mut self, broken: bool) {
        if broken {
            self.stats.broken_route_drops += 1;
        } else {
            self.stats.no_route_drops += 1;
        }
    }

    /// Count a packet dropped at the hop limit (a routing loop).
    pub fn count_hop_limit_drop(&mut self) {
        self.stats.hop_limit_drops += 1;
    }

    /// Put a frame of `bytes` from `from` to `to` on air at `now`: returns
    /// (delivered, end of the exchange) and holds the medium busy until
    /// then around `from`.
    fn transmit(&mut self, now: Time, from: usize, to: usize, bytes: usize) -> (bool, Time) {
        self.positions(now);
        let pf = self.pos[from];
        let others = (0..self.pos.len())
            .filter(|&j| j != from && self.backlog[j] > 0)
            .map(|j| self.pos[j]);
        let contenders = self.wifi.contenders(pf, others);
        let out = self.wifi.attempt(
            now,
            pf,
            self.pos[to],
            WifiChannel::link_id(from, to),
            bytes,
            contenders,
        );
        let airtime = out.airtime.max(Duration::from_nanos(1));
        let end = now + airtime;
        let range = self.wifi.carrier_sense_range_m();
        for j in 0..self.pos.len() {
            if j == from || self.pos[j].distance(pf) <= range {
                self.busy_until[j] = self.busy_until[j].max(end);
            }
        }
        // The sender yields to the nodes already waiting for the medium
        // to free at `end` (they go first, in event order): DCF's
        // per-frame fairness among saturated stations, instead of the
        // sender capturing the medium with its whole queue.
        self.busy_until[from] = self.busy_until[from].max(end + Duration::from_nanos(1));
        self.stats.frames += 1;
        self.stats.attempts += u64::from(out.attempts);
        self.stats.collisions += u64::from(out.collisions);
        if !out.delivered {
            self.stats.mac_drops += 1;
        }
        (out.delivered, end)
    }
}

/// One node's interface on the shared medium: its transmit queue.
#[derive(Debug)]
pub struct WifiNic {
    node: usize,
    medium: SharedMedium,
    queue: DropTailQueue,
    /// The frame on air: (packet, delivered, end of the exchange).
    on_air: Option<(Packet, bool, Time)>,
    stats: LinkStats,
}

impl WifiNic {
    /// Node `node`'s interface, with a drop-tail queue of `limit_packets`.
    pub fn new(node: usize, medium: SharedMedium, limit_packets: u64) -> WifiNic {
        WifiNic {
            node,
            medium,
            queue: DropTailQueue::new(QueueLimit::packets(limit_packets)),
            on_air: None,
            stats: LinkStats::default(),
        }
    }

    fn finish(&mut self, p: Packet, delivered: bool, end: Time, out: &mut LinkOutput) {
        self.medium.borrow_mut().backlog[self.node] -= 1;
        if delivered {
            self.stats.delivered_packets += 1;
            self.stats.delivered_bytes += u64::from(p.wire_bytes);
            out.delivered.push((end, p));
        } else {
            self.stats.channel_drops += 1;
            out.dropped.push((p, DropReason::Channel));
        }
    }
}

impl WifiNic {
    /// Copy this node's counters out of the DCF (they change whenever any
    /// interface advances the shared medium).
    fn sync_stats(&mut self) {
        if let Some(d) = self.medium.borrow().dcf.as_ref() {
            self.stats = d.link_stats(self.node).clone();
        }
    }

    fn has_dcf(&self) -> bool {
        self.medium.borrow().dcf.is_some()
    }
}

impl LinkModel for WifiNic {
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Result<(), (Packet, DropReason)> {
        if self.has_dcf() {
            let r = {
                let mut m = self.medium.borrow_mut();
                let dcf = m.dcf.as_mut().expect("checked");
                dcf.enqueue(now, self.node, pkt)
            };
            self.sync_stats();
            return r;
        }
        self.queue.push(pkt, &mut self.stats)?;
        self.medium.borrow_mut().backlog[self.node] += 1;
        Ok(())
    }

    fn next_wake(&mut self, now: Time) -> Option<Time> {
        if self.has_dcf() {
            // Any interface runs the whole medium. The first interface
            // asked after the medium's next event changed asks to be woken
            // then; the others do not (one driver wake per event instant).
            // A registered wake is always live: the driver replaces an
            // interface's wake only when that interface names another
            // instant, which registers that one.
            self.sync_stats();
            let mut m = self.medium.borrow_mut();
            let next = m.dcf.as_ref().and_then(|d| d.next_event())?.max(now);
            if m.dcf_wake
                .is_some_and(|(t, by)| t == next && by != self.node)
            {
                return None;
            }
            m.dcf_wake = Some((next, self.node));
            return Some(next);
        }
        if let Some((_, _, end)) = &self.on_air {
            return Some(*end);
        }
        if self.queue.is_empty() {
            return None;
        }
        Some(self.medium.borrow().busy_until[self.node].max(now))
    }

    fn advance(&mut self, now: Time, out: &mut LinkOutput) {
        if self.has_dcf() {
            self.medium.borrow_mut().dcf_run(now, out);
            self.sync_stats();
            return;
        }
        loop {
            let mut t = now;
            if let Some((_, _, end)) = &self.on_air {
                if *end > now {
                    return;
                }
                t = *end;
                if let Some((p, ok, end)) = self.on_air.take() {
                    self.finish(p, ok, end, out);
                }
            }
            if self.queue.is_empty() || self.medium.borrow().busy_until[self.node] > t {
                return;
            }
            let Some(p) = self.queue.pop(out) else {
                return;
            };
            let (ok, end) =
                self.medium
                    .borrow_mut()
                    .transmit(t, self.node, p.next_hop, p.wire_bytes as usize);
            self.on_air = Some((p, ok, end));
        }
    }

    fn backlog(&self) -> (u64, u64) {
        if let Some(d) = self.medium.borrow().dcf.as_ref() {
            return d.backlog(self.node);
        }
        self.queue.backlog()
    }

    fn stats(&self) -> &LinkStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::channel::wifi::WifiConfig;
    use crate::world::geom::Bounds;
    use crate::world::mobility::MobilityConfig;
    use crate::world::routing::RoutingConfig;

    fn pkt(id: u64, next_hop: usize) -> Packet {
        Packet {
            id,
            flow: 0,
            forward: true,
            is_data: true,
            src: 0,
            dst: next_hop,
            next_hop,
            dst_port: 1,
            src_port: 1,
            wire_bytes: 600,
            created: Time::ZERO,
            left_first_hop: false,
            hops: 0,
            ecn: None,
            payload: Vec::new(),
        }
    }

    /// Static nodes at the given x positions (m), no shadowing.
    fn medium(xs: &[f64]) -> SharedMedium {
        let cfg = WifiConfig {
            shadowing_sigma_db: 0.0,
            ..WifiConfig::default()
        };
        let wifi = WifiChannel::new(cfg, 3).expect("valid");
        let bounds = Bounds::from_size(1000.0, 10.0, 10.0);
        let mobility = xs
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let m: MobilityConfig = serde_json::from_str(&format!(
                    r#"{{"model": "static", "position_m": [{x}, 5.0, 5.0]}}"#
                ))
                .expect("config");
                m.build(i, bounds, 3).expect("model")
            })
            .collect();
        let routing = Routing::new(xs.len(), RoutingConfig::default()).expect("routing");
        Rc::new(RefCell::new(Medium::new(wifi, mobility, routing)))
    }

    /// Advance `nic` from wake to wake until idle; (arrival ns, id).
    fn drain(nic: &mut WifiNic) -> (Vec<(u64, u64)>, usize) {
        let mut out = LinkOutput::default();
        let mut now = Time::ZERO;
        while let Some(w) = nic.next_wake(now) {
            now = w;
            nic.advance(now, &mut out);
        }
        let got = out
            .delivered
            .iter()
            .map(|(t, p)| (t.as_nanos(), p.id))
            .collect();
        (got, out.dropped.len())
    }

    #[test]
    fn frames_leave_in_order_one_airtime_apart_and_the_queue_is_drop_tail() {
        let m = medium(&[0.0, 50.0]);
        let mut nic = WifiNic::new(0, Rc::clone(&m), 3);
        for id in 0..4 {
            let r = nic.enqueue(Time::ZERO, pkt(id, 1));
            assert_eq!(r.is_ok(), id < 3, "packet {id}");
        }
        assert_eq!(nic.stats().queue_drops, 1);
        assert_eq!(nic.backlog().0, 3);
        let (got, dropped) = drain(&mut nic);
        assert_eq!(dropped, 0, "50 m at 5 Mbit/s is a clean link");
        assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), [0, 1, 2]);
        // One 600 + 36 byte frame at 5 Mbit/s with its PLCP is > 1 ms.
        let mut prev = 0;
        for (t, _) in &got {
            assert!(*t >= prev + 1_000_000, "{t} after {prev}");
            prev = *t;
        }
        assert_eq!(m.borrow().stats().frames, 3);
        assert_eq!(m.borrow().backlog[0], 0);
    }

    #[test]
    fn a_node_out_of_range_is_not_reached_and_a_neighbour_defers() {
        // 0 and 1 close, 2 at 600 m: beyond range and carrier sense.
        let m = medium(&[0.0, 50.0, 600.0]);
        assert!(m.borrow_mut().link_up(Time::ZERO, 0, 1));
        assert!(!m.borrow_mut().link_up(Time::ZERO, 0, 2));
        let mut far = WifiNic::new(0, Rc::clone(&m), 10);
        far.enqueue(Time::ZERO, pkt(9, 2)).expect("queued");
        let (got, dropped) = drain(&mut far);
        assert!(got.is_empty());
        assert_eq!(dropped, 1);
        assert_eq!(m.borrow().stats().mac_drops, 1);
        assert_eq!(m.borrow().stats().attempts, 7, "every MAC retry spent");
        // Node 0 on air holds the medium for node 1 (carrier sense), not 2.
        let mut a = WifiNic::new(0, Rc::clone(&m), 10);
        let one_s = Time::from_millis(1_000);
        a.enqueue(one_s, pkt(1, 1)).expect("queued");
        let mut out = LinkOutput::default();
        a.advance(one_s, &mut out);
        let busy = m.borrow().busy_until.clone();
        assert!(busy[1] > one_s && busy[0] > busy[1]);
        assert!(busy[2] < one_s);
    }
}
