//! Forwarding: which link direction a node sends a packet on.
//!
//! The engine asks a [`Router`] at every hop, so a dynamic router (one
//! that recomputes routes from a moving topology) plugs in beside
//! [`StaticRoutes`], the shortest-path (by propagation delay, then hop
//! count) routes of a fixed wired topology computed once.

use crate::scenario::model::LinkSpec;
use peregrine_cc::Time;

/// One forwarding decision: enqueue on link model `link`, addressed to
/// neighbour `node` (a point-to-point direction always delivers to its
/// far end; a shared medium delivers to whichever neighbour is named).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// Index of the link model (for point-to-point links `2 · link + dir`,
    /// dir 0 = `a → b`).
    pub link: usize,
    /// The neighbour the packet is addressed to.
    pub node: usize,
}

/// Chooses the next hop.
pub trait Router {
    /// The hop node `at` uses towards `dst` at `now`, or `None`
    /// without a route (the packet is dropped, reason `no_route`).
    fn next_hop(&mut self, now: Time, at: usize, dst: usize) -> Option<Hop>;
}

/// Shortest paths on a fixed topology (Dijkstra from every node; ties
/// broken by the lower link index, so routes are deterministic).
#[derive(Clone, Debug)]
pub struct StaticRoutes {
    /// `next[at][dst]`.
    next: Vec<Vec<Option<Hop>>>,
}

impl StaticRoutes {
    /// Routes over `links` between `nodes` nodes.
    pub fn new(nodes: usize, links: &[LinkSpec]) -> StaticRoutes {
        // Adjacency: (neighbour, link direction, cost).
        let far = |d: usize| {
            if d.is_multiple_of(2) {
                links[d / 2].b
            } else {
                links[d / 2].a
            }
        };
        let mut adj: Vec<Vec<(usize, usize, u64)>> = vec![Vec::new(); nodes];
        for (i, l) in links.iter().enumerate() {
            adj[l.a].push((l.b, 2 * i, l.dirs[0].delay_ns.saturating_add(1)));
            adj[l.b].push((l.a, 2 * i + 1, l.dirs[1].delay_ns.saturating_add(1)));
        }
        let mut next = vec![vec![None; nodes]; nodes];
        for (src, row) in next.iter_mut().enumerate() {
            // dist, first hop
            let mut dist: Vec<Option<(u64, usize)>> = vec![None; nodes];
            let mut done = vec![false; nodes];
            // Dijkstra's priority queue over path costs (delay + 1 per hop),
            // not an event queue: the simulator's one time-ordered event
            // queue is `peregrine_proto::vtime`.
            let mut heap = std::collections::BinaryHeap::new();
            for &(n, d, c) in &adj[src] {
                if dist[n].is_none_or(|(x, h)| (c, d) < (x, h)) {
                    dist[n] = Some((c, d));
                    heap.push(std::cmp::Reverse((c, d, n)));
                }
            }
            done[src] = true;
            while let Some(std::cmp::Reverse((c, first, n))) = heap.pop() {
                if done[n] || dist[n] != Some((c, first)) {
                    continue;
                }
                done[n] = true;
                for &(m, _, w) in &adj[n] {
                    let cand = (c.saturating_add(w), first);
                    if !done[m] && dist[m].is_none_or(|x| cand < x) {
                        dist[m] = Some(cand);
                        heap.push(std::cmp::Reverse((cand.0, first, m)));
                    }
                }
            }
            for (dst, slot) in row.iter_mut().enumerate() {
                if dst != src {
                    *slot = dist[dst].map(|(_, h)| Hop {
                        link: h,
                        node: far(h),
                    });
                }
            }
        }
        StaticRoutes { next }
    }

    /// The link directions a packet crosses from `src` to `dst`.
    pub fn path(&self, links: &[LinkSpec], src: usize, dst: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = src;
        while at != dst && out.len() <= links.len() {
            let Some(hop) = self.next[at][dst] else {
                return Vec::new();
            };
            out.push(hop.link);
            at = hop.node;
        }
        out
    }
}

impl Router for StaticRoutes {
    fn next_hop(&mut self, _now: Time, at: usize, dst: usize) -> Option<Hop> {
        self.next.get(at)?.get(dst).copied().flatten()
    }
}
