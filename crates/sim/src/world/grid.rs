//! A uniform spatial grid over node positions (issue 40): the swarm's
//! medium asks it for the nodes that may lie within some radius of a
//! transmitter instead of checking every node of the swarm.
//!
//! The grid is rebuilt from a snapshot of every node's position (O(nodes))
//! and answers [`candidates`](Grid::candidates) with every node of the
//! 3 × 3 × 3 cells around a point, in ascending node order (the caller
//! relies on node order for determinism: the result never depends on how
//! the cells are laid out or visited). With cells at least `radius` wide,
//! every node within `radius` of the point at the snapshot is among the
//! candidates; nodes that moved since the snapshot are covered by the
//! caller's margin (see `dcf`).

use super::geom::Vec3;

/// A uniform grid of cubic cells over a snapshot of node positions.
#[derive(Clone, Debug, Default)]
pub struct Grid {
    /// Cell side, m (> 0 once built).
    cell_m: f64,
    /// Corner of cell (0, 0, 0): the snapshot's minimum coordinates.
    origin: Vec3,
    /// Cells along x, y and z (each ≥ 1 once built).
    dims: [usize; 3],
    /// Node ids of cell `c` are `nodes[start[c]..start[c + 1]]`
    /// (counting sort: O(nodes + cells) to build, no per-cell allocation).
    start: Vec<u32>,
    nodes: Vec<u32>,
    /// The snapshot position of `nodes[i]` (same order: a cell's
    /// positions are contiguous, so a query reads them in sequence).
    at: Vec<Vec3>,
    /// The cell of each node in the snapshot (scratch for the sort).
    cell_of: Vec<u32>,
}

/// At most this many cells along one axis: a grid over a box much larger
/// than the cell side is capped (cells then grow wider than asked, which
/// keeps every query correct, only less selective).
const MAX_CELLS_PER_AXIS: usize = 1024;

impl Grid {
    /// An empty grid (every query returns nothing until [`rebuild`](Self::rebuild)).
    pub fn new() -> Grid {
        Grid::default()
    }

    /// Rebuild over `pos` (node `i` at `pos[i]`) with cells at least
    /// `cell_m` wide. O(nodes + cells).
    pub fn rebuild(&mut self, pos: &[Vec3], cell_m: f64) {
        let cell_m = if cell_m.is_finite() && cell_m > 0.0 {
            cell_m
        } else {
            f64::MAX
        };
        let (mut lo, mut hi) = (Vec3::ZERO, Vec3::ZERO);
        if let Some(first) = pos.first() {
            lo = *first;
            hi = *first;
        }
        for p in pos {
            lo = Vec3::new(lo.x.min(p.x), lo.y.min(p.y), lo.z.min(p.z));
            hi = Vec3::new(hi.x.max(p.x), hi.y.max(p.y), hi.z.max(p.z));
        }
        let mut cell = cell_m;
        let span = (hi.x - lo.x).max(hi.y - lo.y).max(hi.z - lo.z);
        if span / cell >= MAX_CELLS_PER_AXIS as f64 {
            cell = span / (MAX_CELLS_PER_AXIS - 1) as f64;
        }
        let axis = |extent: f64| ((extent / cell).floor() as usize + 1).min(MAX_CELLS_PER_AXIS);
        self.cell_m = cell;
        self.origin = lo;
        self.dims = [axis(hi.x - lo.x), axis(hi.y - lo.y), axis(hi.z - lo.z)];
        let cells = self.dims[0] * self.dims[1] * self.dims[2];
        self.start.clear();
        self.start.resize(cells + 1, 0);
        self.cell_of.clear();
        for p in pos {
            let c = self.cell_index(self.coords(*p));
            self.cell_of.push(c as u32);
            self.start[c + 1] += 1;
        }
        for c in 0..cells {
            self.start[c + 1] += self.start[c];
        }
        self.nodes.clear();
        self.nodes.resize(pos.len(), 0);
        self.at.clear();
        self.at.resize(pos.len(), Vec3::ZERO);
        // Filling in node order keeps each cell's list ascending.
        let mut fill: Vec<u32> = self.start[..cells].to_vec();
        for (i, &c) in self.cell_of.iter().enumerate() {
            let slot = &mut fill[c as usize];
            self.nodes[*slot as usize] = i as u32;
            self.at[*slot as usize] = pos[i];
            *slot += 1;
        }
    }

    /// Cell coordinates of `p` (clamped into the grid).
    fn coords(&self, p: Vec3) -> [usize; 3] {
        let f = |v: f64, o: f64, n: usize| -> usize {
            let i = ((v - o) / self.cell_m).floor();
            if i <= 0.0 {
                0
            } else {
                (i as usize).min(n - 1)
            }
        };
        [
            f(p.x, self.origin.x, self.dims[0]),
            f(p.y, self.origin.y, self.dims[1]),
            f(p.z, self.origin.z, self.dims[2]),
        ]
    }

    fn cell_index(&self, c: [usize; 3]) -> usize {
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }

    /// Every node of the 3 × 3 × 3 cells around `p`, ascending, into `out`
    /// (cleared first). A point outside the snapshot's extent is clamped
    /// to the border cell, which still finds every node within one cell
    /// side of it. O(candidates · log candidates).
    pub fn candidates(&self, p: Vec3, out: &mut Vec<u32>) {
        self.candidates_within(p, f64::INFINITY, out);
    }

    /// The [`candidates`](Self::candidates) whose snapshot position lies
    /// within `radius_m` of `p`, ascending, into `out` (cleared first).
    /// The 3 × 3 × 3 cells hold every node within one cell side of `p`;
    /// this keeps the sphere inside them (in a flat swarm a third of the
    /// cells' nodes), so the caller samples the current position of only
    /// those (issue 40). O(candidates · log candidates).
    pub fn candidates_within(&self, p: Vec3, radius_m: f64, out: &mut Vec<u32>) {
        out.clear();
        if self.start.is_empty() {
            return;
        }
        let c = self.coords(p);
        let range = |i: usize, n: usize| i.saturating_sub(1)..=(i + 1).min(n - 1);
        let all = radius_m == f64::INFINITY;
        let r2 = radius_m * radius_m;
        for z in range(c[2], self.dims[2]) {
            for y in range(c[1], self.dims[1]) {
                for x in range(c[0], self.dims[0]) {
                    let k = self.cell_index([x, y, z]);
                    let (a, b) = (self.start[k] as usize, self.start[k + 1] as usize);
                    if all {
                        out.extend_from_slice(&self.nodes[a..b]);
                        continue;
                    }
                    for (&n, q) in self.nodes[a..b].iter().zip(&self.at[a..b]) {
                        let d = *q - p;
                        if d.x * d.x + d.y * d.y + d.z * d.z <= r2 {
                            out.push(n);
                        }
                    }
                }
            }
        }
        out.sort_unstable();
    }

    /// Heap bytes held. O(1).
    pub fn heap_bytes(&self) -> usize {
        (self.start.capacity() + self.nodes.capacity() + self.cell_of.capacity()) * 4
            + self.at.capacity() * std::mem::size_of::<Vec3>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every node within one cell side of the query point is a
        /// candidate, and the candidates are ascending and distinct.
        #[test]
        fn candidates_cover_every_node_within_a_cell_side(
            pts in proptest::collection::vec((0.0..2000.0f64, 0.0..2000.0f64, 0.0..100.0f64), 1..200),
            q in (-100.0..2100.0f64, -100.0..2100.0f64, -20.0..120.0f64),
            cell in 10.0..800.0f64,
        ) {
            let pos: Vec<Vec3> = pts.iter().map(|&(x, y, z)| Vec3::new(x, y, z)).collect();
            let mut g = Grid::new();
            g.rebuild(&pos, cell);
            let q = Vec3::new(q.0, q.1, q.2);
            let mut out = Vec::new();
            g.candidates(q, &mut out);
            prop_assert!(out.windows(2).all(|w| w[0] < w[1]));
            for (i, p) in pos.iter().enumerate() {
                if p.distance(q) <= cell {
                    prop_assert!(out.contains(&(i as u32)), "node {} at {:?}", i, p);
                }
            }
        }
    }

    #[test]
    fn far_nodes_are_not_candidates() {
        let pos = [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(50.0, 0.0, 0.0),
            Vec3::new(1000.0, 0.0, 0.0),
        ];
        let mut g = Grid::new();
        g.rebuild(&pos, 100.0);
        let mut out = Vec::new();
        g.candidates(Vec3::new(10.0, 0.0, 0.0), &mut out);
        assert_eq!(out, [0, 1]);
        g.candidates(Vec3::new(990.0, 0.0, 0.0), &mut out);
        assert_eq!(out, [2]);
    }
}
