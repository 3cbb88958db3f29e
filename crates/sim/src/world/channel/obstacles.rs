//! Obstacles that cut the line of sight: buildings, trees and vehicles.
//!
//! Every obstacle is a 2-D rectangular footprint (possibly rotated, for
//! vehicles that follow their heading) extruded from the ground `z = 0`
//! (or the vehicle's base) to its height: a box. A link has line of sight
//! when the straight segment between the two antennas crosses no box —
//! the usual geometric blockage model of mmWave system studies (e.g. 3GPP
//! TR 38.901 §7.6.4's blocking model B uses the same rectangle screens).
//! Reflections and diffraction are not traced: what a blocked link still
//! gets is the NLOS or attenuation term of the mmWave path-loss model.
//!
//! Fields are generated from densities per hectare with [`ObstacleDensity`]
//! presets for rural and urban areas (seed 004: obstacles 10–20 m on a
//! side, "few" in rural and "many" in urban areas), keeping clear of
//! rectangles the caller names (streets, base-station sites).

use super::{check_range, ConfigError};
use crate::rng::component_rng;
use crate::world::geom::{Bounds, Vec3};
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// What an obstacle is: it decides how much a crossing costs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObstacleKind {
    /// Opaque at 28 GHz: the link falls back to the NLOS path loss.
    Building,
    /// Foliage: a fixed extra loss.
    Tree,
    /// A vehicle body: a fixed extra loss.
    Vehicle,
}

/// An axis-aligned rectangle on the ground, metres.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    /// Smallest x.
    pub min_x: f64,
    /// Smallest y.
    pub min_y: f64,
    /// Largest x.
    pub max_x: f64,
    /// Largest y.
    pub max_y: f64,
}

impl Rect {
    /// Whether the two rectangles share any point.
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.min_x <= o.max_x
            && o.min_x <= self.max_x
            && self.min_y <= o.max_y
            && o.min_y <= self.max_y
    }

    /// The ground bounding rectangle of the segment `a → b`.
    pub fn spanning(a: Vec3, b: Vec3) -> Rect {
        Rect {
            min_x: a.x.min(b.x),
            min_y: a.y.min(b.y),
            max_x: a.x.max(b.x),
            max_y: a.y.max(b.y),
        }
    }

    /// The square of half-side `r` around `(x, y)`.
    pub fn around(x: f64, y: f64, r: f64) -> Rect {
        Rect {
            min_x: x - r,
            min_y: y - r,
            max_x: x + r,
            max_y: y + r,
        }
    }
}

/// One obstacle: a (rotated) rectangular footprint extruded vertically.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Obstacle {
    /// What it is.
    pub kind: ObstacleKind,
    /// Centre of the footprint, metres (z is the base height).
    pub center: Vec3,
    /// Half the extent along the heading, metres.
    pub half_length_m: f64,
    /// Half the extent across the heading, metres.
    pub half_width_m: f64,
    /// Direction of the length axis, radians from +x (0 = axis-aligned).
    pub heading_rad: f64,
    /// Height above the base, metres.
    pub height_m: f64,
}

impl Obstacle {
    /// An axis-aligned obstacle over `r` from the ground to `height_m`.
    pub fn from_rect(kind: ObstacleKind, r: Rect, height_m: f64) -> Obstacle {
        Obstacle {
            kind,
            center: Vec3::new((r.min_x + r.max_x) / 2.0, (r.min_y + r.max_y) / 2.0, 0.0),
            half_length_m: (r.max_x - r.min_x) / 2.0,
            half_width_m: (r.max_y - r.min_y) / 2.0,
            heading_rad: 0.0,
            height_m,
        }
    }

    /// Whether the segment `a → b` passes through the box (touching its
    /// surface counts). Slab test in the obstacle's own frame.
    pub fn blocks(&self, a: Vec3, b: Vec3) -> bool {
        let (s, c) = self.heading_rad.sin_cos();
        self.slab_test(s, c, a, b)
    }

    /// The slab test with the heading's sine and cosine given.
    fn slab_test(&self, s: f64, c: f64, a: Vec3, b: Vec3) -> bool {
        let local = |p: Vec3| {
            let d = p - self.center;
            Vec3::new(d.x * c + d.y * s, -d.x * s + d.y * c, d.z)
        };
        let (la, lb) = (local(a), local(b));
        let dir = lb - la;
        let mut t0 = 0.0f64;
        let mut t1 = 1.0f64;
        let slabs = [
            (la.x, dir.x, -self.half_length_m, self.half_length_m),
            (la.y, dir.y, -self.half_width_m, self.half_width_m),
            (la.z, dir.z, 0.0, self.height_m),
        ];
        for (p, d, lo, hi) in slabs {
            if d.abs() < 1e-12 {
                if p < lo || p > hi {
                    return false;
                }
            } else {
                let (mut ta, mut tb) = ((lo - p) / d, (hi - p) / d);
                if ta > tb {
                    std::mem::swap(&mut ta, &mut tb);
                }
                t0 = t0.max(ta);
                t1 = t1.min(tb);
                if t0 > t1 {
                    return false;
                }
            }
        }
        true
    }

    /// Axis-aligned bounding rectangle of the footprint.
    pub fn bounding_rect(&self) -> Rect {
        let (s, c) = self.heading_rad.sin_cos();
        let ex = (self.half_length_m * c).abs() + (self.half_width_m * s).abs();
        let ey = (self.half_length_m * s).abs() + (self.half_width_m * c).abs();
        Rect {
            min_x: self.center.x - ex,
            min_y: self.center.y - ey,
            max_x: self.center.x + ex,
            max_y: self.center.y + ey,
        }
    }

    fn validate(&self, i: usize) -> Result<(), ConfigError> {
        let f = |name: &str| format!("obstacles[{i}].{name}");
        for (name, v) in [
            ("center.x", self.center.x),
            ("center.y", self.center.y),
            ("center.z", self.center.z),
            ("heading_rad", self.heading_rad),
        ] {
            check_range(&f(name), v, -1e7, 1e7)?;
        }
        check_range(&f("half_length_m"), self.half_length_m, 0.0, 1e5)?;
        check_range(&f("half_width_m"), self.half_width_m, 0.0, 1e5)?;
        check_range(&f("height_m"), self.height_m, 0.0, 1e4)?;
        Ok(())
    }
}

/// An obstacle prepared for many line-of-sight tests: its rotation and
/// bounding rectangle computed once.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Blocker {
    obstacle: Obstacle,
    rect: Rect,
    sin: f64,
    cos: f64,
}

impl Blocker {
    /// Prepares `obstacle`.
    pub fn new(obstacle: Obstacle) -> Blocker {
        let (sin, cos) = obstacle.heading_rad.sin_cos();
        Blocker {
            obstacle,
            rect: obstacle.bounding_rect(),
            sin,
            cos,
        }
    }

    /// The obstacle.
    pub fn obstacle(&self) -> &Obstacle {
        &self.obstacle
    }

    /// [`Obstacle::blocks`], after a cheap bounding-rectangle rejection
    /// against `seg`, the segment's own bounding rectangle.
    fn blocks_within(&self, seg: &Rect, a: Vec3, b: Vec3) -> bool {
        self.rect.overlaps(seg) && self.obstacle.slab_test(self.sin, self.cos, a, b)
    }
}

/// Blockers indexed by a uniform grid of their bounding rectangles
/// (issue 40): a line-of-sight test visits only the cells the segment's
/// ground projection passes through, not every blocker. A city of 200
/// vehicles and 45 base stations tests 9,000 links per 1 ms channel step,
/// each against hundreds of buildings, trees and vehicle bodies; through
/// the grid each link looks at the few blockers along it.
///
/// The result is exactly the full scan's: a blocker that cuts the segment
/// has a point of its footprint on the segment's projection, so it is
/// registered in a visited cell, and the same test
/// (`Blocker::blocks_within`) decides. Each blocker is tested once: in the
/// first visited cell it is registered in (the visited cells of a segment
/// form a monotone staircase of rows, so "first" needs only the previous
/// row's range).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockerIndex {
    blockers: Vec<Blocker>,
    /// Per blocker, its cells: [x0, y0, x1, y1] (inclusive).
    cells_of: Vec<[i32; 4]>,
    origin_x: f64,
    origin_y: f64,
    cell_m: f64,
    nx: i32,
    ny: i32,
    /// Compressed rows: the blockers of cell `c` are
    /// `items[start[c]..start[c + 1]]`, ascending.
    start: Vec<u32>,
    items: Vec<u32>,
    /// Blockers with a non-finite footprint (a vehicle at a nonsense
    /// position): not in the grid, tested by every query.
    loose: Vec<u32>,
}

/// `floor(v)` clamped to `[-1, n]` (NaN: −1), without a libm call: the
/// truncation of a non-negative `v` is its floor.
fn cell_of(v: f64, n: i32) -> i32 {
    if v >= 0.0 {
        (v as i64).min(i64::from(n)) as i32
    } else {
        -1
    }
}

/// Slack of the segment's x-range in a row, metres: rounding in the
/// row-boundary crossings never drops a cell the segment touches.
const INDEX_EPS_M: f64 = 1e-6;

impl BlockerIndex {
    /// Indexes `blockers`. Cells are twice the mean footprint side, or
    /// `√(2 · area / blockers)` if wider — about where the cells a segment
    /// visits (∝ 1/side) and the blockers it finds in them (∝ side) cost
    /// the same — and at least 1/1024 of the extent, so the grid stays
    /// below ~10⁶ cells. O(blockers + cells).
    pub fn new(blockers: Vec<Blocker>) -> BlockerIndex {
        let finite = |b: &Blocker| {
            let r = b.rect;
            r.min_x.is_finite() && r.min_y.is_finite() && r.max_x.is_finite() && r.max_y.is_finite()
        };
        let loose: Vec<u32> = (0..blockers.len() as u32)
            .filter(|&i| !finite(&blockers[i as usize]))
            .collect();
        if loose.len() == blockers.len() {
            return BlockerIndex {
                blockers,
                loose,
                ..BlockerIndex::default()
            };
        }
        let (mut lo_x, mut lo_y) = (f64::INFINITY, f64::INFINITY);
        let (mut hi_x, mut hi_y) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        let mut side = 0.0;
        for b in blockers.iter().filter(|b| finite(b)) {
            lo_x = lo_x.min(b.rect.min_x);
            lo_y = lo_y.min(b.rect.min_y);
            hi_x = hi_x.max(b.rect.max_x);
            hi_y = hi_y.max(b.rect.max_y);
            side += (b.rect.max_x - b.rect.min_x).max(b.rect.max_y - b.rect.min_y);
        }
        let extent = (hi_x - lo_x).max(hi_y - lo_y);
        let indexed = (blockers.len() - loose.len()) as f64;
        let cell_m = (2.0 * side / indexed)
            .max((2.0 * (hi_x - lo_x) * (hi_y - lo_y) / indexed).sqrt())
            .max(extent / 1024.0)
            .max(1e-3);
        let nx = ((hi_x - lo_x) / cell_m).floor() as i32 + 1;
        let ny = ((hi_y - lo_y) / cell_m).floor() as i32 + 1;
        let mut idx = BlockerIndex {
            origin_x: lo_x,
            origin_y: lo_y,
            cell_m,
            nx,
            ny,
            ..BlockerIndex::default()
        };
        // A loose blocker gets an empty cell range (x0 > x1).
        idx.cells_of = blockers
            .iter()
            .map(|b| {
                if !finite(b) {
                    return [0, 0, -1, -1];
                }
                [
                    idx.col(b.rect.min_x),
                    idx.row(b.rect.min_y),
                    idx.col(b.rect.max_x),
                    idx.row(b.rect.max_y),
                ]
            })
            .collect();
        let n_cells = (nx as usize) * (ny as usize);
        let mut count = vec![0u32; n_cells + 1];
        for c in &idx.cells_of {
            for y in c[1]..=c[3] {
                for x in c[0]..=c[2] {
                    count[(y * nx + x) as usize + 1] += 1;
                }
            }
        }
        for i in 1..count.len() {
            count[i] += count[i - 1];
        }
        let mut fill = count.clone();
        let mut items = vec![0u32; count[n_cells] as usize];
        for (i, c) in idx.cells_of.iter().enumerate() {
            for y in c[1]..=c[3] {
                for x in c[0]..=c[2] {
                    let k = (y * nx + x) as usize;
                    items[fill[k] as usize] = i as u32;
                    fill[k] += 1;
                }
            }
        }
        idx.start = count;
        idx.items = items;
        idx.blockers = blockers;
        idx.loose = loose;
        idx
    }

    /// The blockers, in the order given.
    pub fn blockers(&self) -> &[Blocker] {
        &self.blockers
    }

    /// Column of `x`, clamped to the grid.
    fn col(&self, x: f64) -> i32 {
        cell_of((x - self.origin_x) / self.cell_m, self.nx)
    }

    /// Row of `y`, clamped to the grid.
    fn row(&self, y: f64) -> i32 {
        cell_of((y - self.origin_y) / self.cell_m, self.ny)
    }

    /// Calls `f` once with the index of every blocker registered in a
    /// cell the ground projection of `a → b` passes through (a superset
    /// of those that cut it). O(cells visited + blockers there).
    fn candidates(&self, a: Vec3, b: Vec3, mut f: impl FnMut(usize)) {
        for &i in &self.loose {
            f(i as usize);
        }
        if self.nx == 0 {
            return;
        }
        let (ylo, yhi) = (a.y.min(b.y), a.y.max(b.y));
        let r0 = self.row(ylo).max(0);
        let r1 = self.row(yhi).min(self.ny - 1);
        let (dx, dy) = (b.x - a.x, b.y - a.y);
        let x_at = |y: f64| a.x + (y - a.y) * dx / dy;
        let mut prev: Option<(i32, i32)> = None;
        for cy in r0..=r1 {
            let y_lo = (self.origin_y + f64::from(cy) * self.cell_m).max(ylo);
            let y_hi = (self.origin_y + f64::from(cy + 1) * self.cell_m).min(yhi);
            let (xa, xb) = if dy != 0.0 {
                (x_at(y_lo), x_at(y_hi))
            } else {
                (a.x, b.x)
            };
            let c0 = self.col(xa.min(xb) - INDEX_EPS_M).max(0);
            let c1 = self.col(xa.max(xb) + INDEX_EPS_M).min(self.nx - 1);
            if c0 > c1 {
                prev = None;
                continue;
            }
            for cx in c0..=c1 {
                let k = (cy * self.nx + cx) as usize;
                for &i in &self.items[self.start[k] as usize..self.start[k + 1] as usize] {
                    let o = self.cells_of[i as usize];
                    // Only in the first visited cell of the blocker: the
                    // first in this row, and the previous row missed it.
                    if cx != o[0].max(c0) {
                        continue;
                    }
                    let seen_before =
                        cy > o[1] && prev.is_some_and(|(p0, p1)| p0 <= o[2] && p1 >= o[0]);
                    if !seen_before {
                        f(i as usize);
                    }
                }
            }
            prev = Some((c0, c1));
        }
    }

    /// Adds to `c` what `a → b` crosses among these blockers, skipping
    /// those whose index is in `skip`. O(cells visited + blockers there).
    fn add_crossings(&self, c: &mut Crossings, a: Vec3, b: Vec3, skip: &[usize]) {
        let seg = Rect::spanning(a, b);
        self.candidates(a, b, |i| {
            let o = &self.blockers[i];
            if !skip.contains(&i) && o.blocks_within(&seg, a, b) {
                c.add(o.obstacle.kind);
            }
        });
    }
}

/// How many obstacles cut one segment, by kind.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Crossings {
    /// Buildings crossed.
    pub buildings: u32,
    /// Trees crossed.
    pub trees: u32,
    /// Vehicles crossed.
    pub vehicles: u32,
}

impl Crossings {
    /// Nothing in the way: line of sight.
    pub fn is_clear(&self) -> bool {
        self.buildings == 0 && self.trees == 0 && self.vehicles == 0
    }

    fn add(&mut self, kind: ObstacleKind) {
        match kind {
            ObstacleKind::Building => self.buildings += 1,
            ObstacleKind::Tree => self.trees += 1,
            ObstacleKind::Vehicle => self.vehicles += 1,
        }
    }
}

/// Obstacle densities and sizes for generating a field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ObstacleDensity {
    /// Buildings per hectare (10 000 m²).
    pub buildings_per_ha: f64,
    /// Trees per hectare.
    pub trees_per_ha: f64,
    /// Building side lengths, uniform in `[min, max]` m (seed 004: 10–20).
    pub building_side_m: [f64; 2],
    /// Building heights, uniform in `[min, max]` m.
    pub building_height_m: [f64; 2],
    /// Tree canopy side, uniform in `[min, max]` m.
    pub tree_side_m: [f64; 2],
    /// Tree heights, uniform in `[min, max]` m.
    pub tree_height_m: [f64; 2],
}

impl Default for ObstacleDensity {
    fn default() -> ObstacleDensity {
        ObstacleDensity::urban()
    }
}

impl ObstacleDensity {
    /// Rural: a few farm buildings and scattered trees (1 building and 4
    /// trees per hectare).
    pub fn rural() -> ObstacleDensity {
        ObstacleDensity {
            buildings_per_ha: 1.0,
            trees_per_ha: 4.0,
            ..ObstacleDensity::urban()
        }
    }

    /// Urban: blocks of buildings and street trees (8 buildings and 12
    /// trees per hectare — about a quarter of the ground built up with
    /// 10–20 m buildings).
    pub fn urban() -> ObstacleDensity {
        ObstacleDensity {
            buildings_per_ha: 8.0,
            trees_per_ha: 12.0,
            building_side_m: [10.0, 20.0],
            building_height_m: [8.0, 30.0],
            tree_side_m: [3.0, 6.0],
            tree_height_m: [5.0, 10.0],
        }
    }

    /// Checks every field, naming the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_range(
            "density.buildings_per_ha",
            self.buildings_per_ha,
            0.0,
            1000.0,
        )?;
        check_range("density.trees_per_ha", self.trees_per_ha, 0.0, 1000.0)?;
        for (name, [lo, hi]) in [
            ("density.building_side_m", self.building_side_m),
            ("density.building_height_m", self.building_height_m),
            ("density.tree_side_m", self.tree_side_m),
            ("density.tree_height_m", self.tree_height_m),
        ] {
            check_range(name, lo, 0.0, 1e4)?;
            check_range(name, hi, lo, 1e4)?;
        }
        Ok(())
    }
}

/// The static obstacles of a scenario. In a scenario file, a list of
/// [`Obstacle`]s (validated when read).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Obstacle>", into = "Vec<Obstacle>")]
pub struct ObstacleField {
    obstacles: Vec<Obstacle>,
    /// The obstacles prepared and indexed for line-of-sight tests.
    index: BlockerIndex,
}

impl TryFrom<Vec<Obstacle>> for ObstacleField {
    type Error = ConfigError;
    fn try_from(obstacles: Vec<Obstacle>) -> Result<ObstacleField, ConfigError> {
        ObstacleField::new(obstacles)
    }
}

impl From<ObstacleField> for Vec<Obstacle> {
    fn from(field: ObstacleField) -> Vec<Obstacle> {
        field.obstacles
    }
}

impl ObstacleField {
    /// A field from an explicit list (scenario files), validated.
    pub fn new(obstacles: Vec<Obstacle>) -> Result<ObstacleField, ConfigError> {
        for (i, o) in obstacles.iter().enumerate() {
            o.validate(i)?;
        }
        Ok(ObstacleField::prepared(obstacles))
    }

    fn prepared(obstacles: Vec<Obstacle>) -> ObstacleField {
        let index = BlockerIndex::new(obstacles.iter().copied().map(Blocker::new).collect());
        ObstacleField { obstacles, index }
    }

    /// A random field over the ground of `area` with `density`, keeping the
    /// footprints off every rectangle of `keep_clear` (streets, base
    /// stations). Each obstacle gets up to 200 placement tries; one that
    /// finds no free spot is left out, so a crowded area holds fewer
    /// obstacles than the density asks ([`ObstacleField::len`] tells).
    pub fn generate(
        density: &ObstacleDensity,
        area: Bounds,
        keep_clear: &[Rect],
        seed: u64,
    ) -> Result<ObstacleField, ConfigError> {
        density.validate()?;
        let mut rng = component_rng(seed, "mmwave/obstacles");
        let (w, h) = (area.max.x - area.min.x, area.max.y - area.min.y);
        if !(w.is_finite() && h.is_finite() && w > 0.0 && h > 0.0) {
            return Err(ConfigError::new(
                "area",
                "must have a positive, finite ground extent",
            ));
        }
        let hectares = w * h / 10_000.0;
        let mut obstacles = Vec::new();
        let plan = [
            (
                ObstacleKind::Building,
                density.buildings_per_ha,
                density.building_side_m,
                density.building_height_m,
            ),
            (
                ObstacleKind::Tree,
                density.trees_per_ha,
                density.tree_side_m,
                density.tree_height_m,
            ),
        ];
        let draw = |rng: &mut crate::rng::SimRng, [lo, hi]: [f64; 2]| {
            if hi > lo {
                rng.random_range(lo..=hi)
            } else {
                lo
            }
        };
        for (kind, per_ha, side, height) in plan {
            let count = (per_ha * hectares).round() as usize;
            for _ in 0..count {
                for _try in 0..200 {
                    let sx = draw(&mut rng, side).min(w);
                    let sy = draw(&mut rng, side).min(h);
                    let x0 = area.min.x + rng.random::<f64>() * (w - sx);
                    let y0 = area.min.y + rng.random::<f64>() * (h - sy);
                    let r = Rect {
                        min_x: x0,
                        min_y: y0,
                        max_x: x0 + sx,
                        max_y: y0 + sy,
                    };
                    let hgt = draw(&mut rng, height);
                    if keep_clear.iter().all(|k| !k.overlaps(&r)) {
                        obstacles.push(Obstacle::from_rect(kind, r, hgt));
                        break;
                    }
                }
            }
        }
        Ok(ObstacleField::prepared(obstacles))
    }

    /// The obstacles.
    pub fn obstacles(&self) -> &[Obstacle] {
        &self.obstacles
    }

    /// Number of obstacles.
    pub fn len(&self) -> usize {
        self.obstacles.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.obstacles.is_empty()
    }

    /// Number of obstacles of `kind`.
    pub fn count(&self, kind: ObstacleKind) -> usize {
        self.obstacles.iter().filter(|o| o.kind == kind).count()
    }

    /// What the segment `a → b` crosses among these obstacles (through
    /// the grid index) and `extra` (moving vehicles, scanned), skipping
    /// `extra[i]` for every `i` in `skip` (a vehicle's own body).
    /// O(cells along the segment + extra).
    pub fn crossings(&self, a: Vec3, b: Vec3, extra: &[Blocker], skip: &[usize]) -> Crossings {
        let mut c = Crossings::default();
        self.index.add_crossings(&mut c, a, b, &[]);
        let seg = Rect::spanning(a, b);
        for (i, o) in extra.iter().enumerate() {
            if !skip.contains(&i) && o.blocks_within(&seg, a, b) {
                c.add(o.obstacle.kind);
            }
        }
        c
    }

    /// [`crossings`](Self::crossings) with the moving blockers indexed
    /// too (built once per channel step). O(cells along the segment +
    /// blockers in them).
    pub fn crossings_indexed(
        &self,
        a: Vec3,
        b: Vec3,
        extra: &BlockerIndex,
        skip: &[usize],
    ) -> Crossings {
        let mut c = Crossings::default();
        self.index.add_crossings(&mut c, a, b, &[]);
        extra.add_crossings(&mut c, a, b, skip);
        c
    }
}

#[cfg(test)]
mod tests;
