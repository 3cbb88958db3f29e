//! Idealized proactive multi-hop routing (issue 10 item 3).
//!
//! Every node knows a shortest path (in hops) to every other node on the
//! connectivity graph as it was at the last recomputation. Recomputation
//! happens every `recompute_interval_s` (default 1 s), modelling the
//! convergence time of a proactive protocol such as OLSR (RFC 3626: HELLO
//! every 2 s, topology control every 5 s; 1 s is an optimistic, tuned
//! setting) without simulating its control traffic. Between
//! recomputations the table is stale: the engine forwards a packet to
//! [`Routing::next_hop`] and drops it if that link is down
//! (`is_link_up(a, b)` is the engine's own question); a node that became
//! reachable is unreachable until the next recomputation.
//!
//! Key choices:
//! * Links are undirected: `connected(a, b)` is asked once per unordered
//!   pair (`a < b`) and means "a and b can exchange packets" (OLSR, too,
//!   routes over symmetric links only).
//! * Ties between equal-length paths go to the lexicographically smallest
//!   sequence of node ids (breadth-first search visiting neighbours in
//!   ascending id order). Suffixes of such paths are themselves the
//!   smallest, so hop-by-hop forwarding with [`Routing::next_hop`] follows
//!   exactly [`Routing::path`] — no loops, even on stale tables.
//! * A route change for a pair `(src, dst)` is counted when its path after
//!   a recomputation differs from the path before it, including becoming
//!   unreachable or reachable. The first recomputation establishes the
//!   routes and counts no change.

use peregrine_cc::Time;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::Duration;

/// No route.
const NONE: u32 = u32::MAX;

/// Routing parameters as written in a scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoutingConfig {
    /// Time between two route recomputations, seconds, `> 0`; default 1.
    pub recompute_interval_s: f64,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            recompute_interval_s: 1.0,
        }
    }
}

/// Why a routing configuration cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RoutingError {
    /// A parameter is out of its allowed range.
    #[error("routing field `{field}` = {value} is invalid: allowed {allowed}")]
    Field {
        /// The field, e.g. `routing.recompute_interval_s`.
        field: &'static str,
        /// The offending value, printed.
        value: String,
        /// The allowed range, in words.
        allowed: &'static str,
    },
}

impl RoutingConfig {
    /// Check the fields; the error names the bad one and its range.
    pub fn validate(&self) -> Result<(), RoutingError> {
        let s = self.recompute_interval_s;
        // At least 1 ns, at most ~584 years (what `Time` can count).
        if s.is_finite() && s >= 1e-9 && s <= u64::MAX as f64 / 1e9 {
            Ok(())
        } else {
            Err(RoutingError::Field {
                field: "routing.recompute_interval_s",
                value: s.to_string(),
                allowed: "a finite interval >= 1e-9 s",
            })
        }
    }

    /// The recomputation interval.
    pub fn recompute_interval(&self) -> Duration {
        Duration::from_nanos(Time::from_secs_f64(self.recompute_interval_s).as_nanos())
    }
}

/// The routing tables of all nodes, and route-change statistics.
#[derive(Debug, Clone)]
pub struct Routing {
    n: usize,
    interval: Duration,
    last: Option<Time>,
    recomputations: u64,
    /// `next[src * n + dst]`: first hop from `src` towards `dst`, or NONE.
    next: Vec<u32>,
    /// `hops[src * n + dst]`: path length in hops, or NONE.
    hops: Vec<u32>,
    /// Route changes per ordered pair.
    changes: Vec<u64>,
    total_changes: u64,
}

impl Routing {
    /// Tables for `n_nodes` nodes (ids `0..n_nodes`), empty until the first
    /// [`Routing::recompute`].
    pub fn new(n_nodes: usize, config: RoutingConfig) -> Result<Routing, RoutingError> {
        config.validate()?;
        let cells = n_nodes * n_nodes;
        Ok(Routing {
            n: n_nodes,
            interval: config.recompute_interval(),
            last: None,
            recomputations: 0,
            next: vec![NONE; cells],
            hops: vec![NONE; cells],
            changes: vec![0; cells],
            total_changes: 0,
        })
    }

    /// Number of nodes.
    pub fn n_nodes(&self) -> usize {
        self.n
    }

    /// Whether the tables should be recomputed at `now` (never computed,
    /// or an interval has passed since the last recomputation).
    pub fn due(&self, now: Time) -> bool {
        now >= self.next_due()
    }

    /// When the next recomputation is due ([`Time::ZERO`] before the first).
    pub fn next_due(&self) -> Time {
        match self.last {
            None => Time::ZERO,
            Some(t) => t + self.interval,
        }
    }

    /// When the tables were last recomputed.
    pub fn last_recompute(&self) -> Option<Time> {
        self.last
    }

    /// How many times the tables were recomputed.
    pub fn recomputations(&self) -> u64 {
        self.recomputations
    }

    /// Recompute every table at `now` from the current connectivity:
    /// `connected(a, b)` (asked once per pair, `a < b`) says whether `a`
    /// and `b` can exchange packets now. Counts route changes.
    pub fn recompute(&mut self, now: Time, mut connected: impl FnMut(usize, usize) -> bool) {
        let n = self.n;
        // Adjacency lists come out sorted: `a` ascending, then `b` ascending.
        let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
        for a in 0..n {
            for b in a + 1..n {
                if connected(a, b) {
                    adj[a].push(b as u32);
                    adj[b].push(a as u32);
                }
            }
        }
        let mut next = vec![NONE; n * n];
        let mut hops = vec![NONE; n * n];
        let mut queue = VecDeque::with_capacity(n);
        for s in 0..n {
            let row = s * n;
            hops[row + s] = 0;
            queue.clear();
            queue.push_back(s);
            while let Some(u) = queue.pop_front() {
                let du = hops[row + u];
                for &v in &adj[u] {
                    let v = v as usize;
                    if hops[row + v] == NONE {
                        hops[row + v] = du + 1;
                        // The first hop is inherited from the discoverer.
                        next[row + v] = if u == s { v as u32 } else { next[row + u] };
                        queue.push_back(v);
                    }
                }
            }
        }
        if self.last.is_some() {
            for s in 0..n {
                for d in 0..n {
                    if s != d && path_differs(n, &self.next, &next, s, d) {
                        self.changes[s * n + d] += 1;
                        self.total_changes += 1;
                    }
                }
            }
        }
        self.next = next;
        self.hops = hops;
        self.last = Some(now);
        self.recomputations += 1;
    }

    /// The neighbour `src` forwards to for `dst`, per the (possibly stale)
    /// table; `None` if `dst` is unreachable, `src == dst`, or an id is out
    /// of range.
    pub fn next_hop(&self, src: usize, dst: usize) -> Option<usize> {
        if src >= self.n || dst >= self.n || src == dst {
            return None;
        }
        match self.next[src * self.n + dst] {
            NONE => None,
            h => Some(h as usize),
        }
    }

    /// Path length in hops (`Some(0)` for `src == dst`), per the table.
    pub fn hops(&self, src: usize, dst: usize) -> Option<u32> {
        if src >= self.n || dst >= self.n {
            return None;
        }
        match self.hops[src * self.n + dst] {
            NONE => None,
            h => Some(h),
        }
    }

    /// The whole path `src, …, dst` per the table (`[src]` for `src ==
    /// dst`); `None` if unreachable or an id is out of range.
    pub fn path(&self, src: usize, dst: usize) -> Option<Vec<usize>> {
        if src >= self.n || dst >= self.n {
            return None;
        }
        let mut path = vec![src];
        let mut cur = src;
        while cur != dst {
            cur = self.next_hop(cur, dst)?;
            path.push(cur);
            if path.len() > self.n {
                // Unreachable by construction (tables are loop-free); refuse
                // rather than spin.
                return None;
            }
        }
        Some(path)
    }

    /// How many times the route from `src` to `dst` changed.
    pub fn route_changes(&self, src: usize, dst: usize) -> u64 {
        if src >= self.n || dst >= self.n {
            return 0;
        }
        self.changes[src * self.n + dst]
    }

    /// Route changes summed over all ordered pairs.
    pub fn total_route_changes(&self) -> u64 {
        self.total_changes
    }
}

/// Whether the path `s → d` differs between two loop-free next-hop tables.
/// Both chains are walked together while they agree.
fn path_differs(n: usize, old: &[u32], new: &[u32], s: usize, d: usize) -> bool {
    let mut cur = s;
    for _ in 0..n {
        let (o, w) = (old[cur * n + d], new[cur * n + d]);
        if o != w {
            return true;
        }
        if o == NONE || o as usize == d {
            return false;
        }
        cur = o as usize;
    }
    // A chain longer than n nodes cannot happen; call it a change.
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Connectivity from an undirected edge list.
    fn graph(edges: &[(usize, usize)]) -> impl Fn(usize, usize) -> bool + '_ {
        move |a, b| {
            edges
                .iter()
                .any(|&(x, y)| (x, y) == (a, b) || (y, x) == (a, b))
        }
    }

    fn routing(n: usize) -> Routing {
        Routing::new(n, RoutingConfig::default()).expect("default config is valid")
    }

    const LINE: [(usize, usize); 3] = [(0, 1), (1, 2), (2, 3)];

    #[test]
    fn line() {
        let mut r = routing(4);
        r.recompute(Time::ZERO, graph(&LINE));
        assert_eq!(r.path(0, 3), Some(vec![0, 1, 2, 3]));
        assert_eq!(r.path(3, 0), Some(vec![3, 2, 1, 0]));
        assert_eq!(r.next_hop(0, 3), Some(1));
        assert_eq!(r.next_hop(2, 0), Some(1));
        assert_eq!(r.hops(0, 3), Some(3));
        assert_eq!(r.path(2, 2), Some(vec![2]));
        assert_eq!(r.hops(2, 2), Some(0));
        assert_eq!(r.next_hop(2, 2), None);
        // Out-of-range ids are answered, not panicked on.
        assert_eq!(r.next_hop(0, 4), None);
        assert_eq!(r.path(9, 0), None);
        assert_eq!(r.route_changes(9, 9), 0);
    }

    #[test]
    fn broken_line() {
        let mut r = routing(4);
        r.recompute(Time::ZERO, graph(&[(0, 1), (2, 3)]));
        assert_eq!(r.path(0, 1), Some(vec![0, 1]));
        assert_eq!(r.path(0, 3), None);
        assert_eq!(r.next_hop(0, 3), None);
        assert_eq!(r.hops(1, 2), None);
        assert_eq!(r.next_hop(3, 2), Some(2));
    }

    #[test]
    fn ties_go_to_the_lowest_ids() {
        // A ring of six: two 3-hop paths between opposite nodes.
        let ring = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)];
        let mut r = routing(6);
        r.recompute(Time::ZERO, graph(&ring));
        assert_eq!(r.path(0, 3), Some(vec![0, 1, 2, 3]));
        assert_eq!(r.path(3, 0), Some(vec![3, 2, 1, 0]));
        assert_eq!(r.path(1, 4), Some(vec![1, 0, 5, 4]));
        assert_eq!(r.path(4, 1), Some(vec![4, 3, 2, 1]));
        // A diamond: 0 reaches 3 through 1 or 2.
        let mut r = routing(4);
        r.recompute(Time::ZERO, graph(&[(0, 2), (2, 3), (0, 1), (1, 3)]));
        assert_eq!(r.path(0, 3), Some(vec![0, 1, 3]));
        assert_eq!(r.path(3, 0), Some(vec![3, 1, 0]));
    }

    #[test]
    fn route_changes_are_counted_per_pair() {
        let mut r = routing(4);
        r.recompute(Time::ZERO, graph(&LINE));
        assert_eq!(
            r.total_route_changes(),
            0,
            "establishing routes is no change"
        );
        r.recompute(Time::from_millis(1_000), graph(&LINE));
        assert_eq!(r.total_route_changes(), 0, "same graph, same routes");
        // Break 1-2: the 8 ordered pairs across the cut become unreachable.
        r.recompute(Time::from_millis(2_000), graph(&[(0, 1), (2, 3)]));
        assert_eq!(r.total_route_changes(), 8);
        assert_eq!(r.route_changes(0, 3), 1);
        assert_eq!(r.route_changes(3, 0), 1);
        assert_eq!(r.route_changes(0, 1), 0);
        // Heal it through a detour 1-4-2: reachable again (another 8), and
        // the pairs involving 4 (unreachable before) change too.
        let mut r5 = routing(5);
        r5.recompute(Time::ZERO, graph(&LINE));
        r5.recompute(
            Time::from_millis(1_000),
            graph(&[(0, 1), (1, 4), (4, 2), (2, 3)]),
        );
        // Paths across 1-2 now go via 4 (0-2, 0-3, 1-2, 1-3 and reverses:
        // 8) and node 4 became reachable from 0..3 and back (8).
        assert_eq!(r5.total_route_changes(), 16);
        assert_eq!(r5.path(0, 3), Some(vec![0, 1, 4, 2, 3]));
        assert_eq!(r5.route_changes(0, 3), 1);
        assert_eq!(r5.route_changes(2, 3), 0);
        assert_eq!(r5.recomputations(), 2);
    }

    #[test]
    fn tables_are_stale_between_recomputations() {
        let mut r = routing(3);
        assert!(r.due(Time::ZERO), "never computed");
        assert_eq!(
            r.next_hop(0, 2),
            None,
            "no routes before the first recomputation"
        );
        r.recompute(Time::ZERO, graph(&[(0, 1), (1, 2)]));
        assert!(!r.due(Time::from_millis(999)));
        assert!(r.due(Time::from_millis(1_000)));
        assert_eq!(r.next_due(), Time::from_millis(1_000));
        // The link 1-2 breaks now, but the table still says "via 1": the
        // engine finds the link down and drops the packet.
        assert_eq!(r.next_hop(0, 2), Some(1));
        r.recompute(Time::from_millis(1_000), graph(&[(0, 1)]));
        assert_eq!(r.next_hop(0, 2), None);
        assert_eq!(r.last_recompute(), Some(Time::from_millis(1_000)));
    }

    #[test]
    fn config_is_checked_and_has_a_default() {
        let c: RoutingConfig = serde_json::from_str("{}").expect("all defaults");
        assert_eq!(c.recompute_interval(), Duration::from_secs(1));
        let c: RoutingConfig =
            serde_json::from_str(r#"{"recompute_interval_s":0.25}"#).expect("valid");
        assert_eq!(c.recompute_interval(), Duration::from_millis(250));
        assert!(serde_json::from_str::<RoutingConfig>(r#"{"interval_s":1}"#).is_err());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = Routing::new(
                3,
                RoutingConfig {
                    recompute_interval_s: bad,
                },
            )
            .expect_err("invalid interval");
            assert!(
                e.to_string().contains("routing.recompute_interval_s"),
                "{e}"
            );
        }
    }

    /// Reference: the lexicographically smallest shortest path, built
    /// greedily from hop distances to `d` (independent of the BFS tree).
    fn reference_path(n: usize, adj: &[Vec<bool>], s: usize, d: usize) -> Option<Vec<usize>> {
        let mut dist = vec![usize::MAX; n];
        dist[d] = 0;
        let mut frontier = vec![d];
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for &u in &frontier {
                for v in 0..n {
                    if adj[u][v] && dist[v] == usize::MAX {
                        dist[v] = dist[u] + 1;
                        next.push(v);
                    }
                }
            }
            frontier = next;
        }
        if dist[s] == usize::MAX {
            return None;
        }
        let mut path = vec![s];
        let mut cur = s;
        while cur != d {
            cur = (0..n).find(|&v| adj[cur][v] && dist[v] + 1 == dist[cur])?;
            path.push(cur);
        }
        Some(path)
    }

    proptest! {
        #[test]
        fn paths_are_the_smallest_shortest_paths(
            n in 1usize..9,
            bits in prop::collection::vec(any::<bool>(), 36),
        ) {
            // Pair (a, b), a < b, is bit a·n − a(a+1)/2 + (b − a − 1).
            let edge = |a: usize, b: usize| {
                let (a, b) = (a.min(b), a.max(b));
                a != b && bits[a * n - a * (a + 1) / 2 + (b - a - 1)]
            };
            let adj: Vec<Vec<bool>> =
                (0..n).map(|a| (0..n).map(|b| edge(a, b)).collect()).collect();
            let mut r = routing(n);
            r.recompute(Time::ZERO, |a, b| adj[a][b]);
            for s in 0..n {
                for d in 0..n {
                    let want = reference_path(n, &adj, s, d);
                    let got = r.path(s, d);
                    prop_assert_eq!(&got, &want, "{} -> {}", s, d);
                    if let Some(p) = got {
                        prop_assert_eq!(r.hops(s, d), Some(p.len() as u32 - 1));
                    }
                }
            }
        }
    }
}
