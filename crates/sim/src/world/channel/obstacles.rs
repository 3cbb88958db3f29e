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
    blockers: Vec<Blocker>,
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
        let blockers = obstacles.iter().copied().map(Blocker::new).collect();
        ObstacleField {
            obstacles,
            blockers,
        }
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

    /// What the segment `a → b` crosses among these obstacles and `extra`
    /// (moving vehicles), skipping `extra[i]` for every `i` in `skip` (a
    /// vehicle's own body).
    pub fn crossings(&self, a: Vec3, b: Vec3, extra: &[Blocker], skip: &[usize]) -> Crossings {
        let mut c = Crossings::default();
        let seg = Rect {
            min_x: a.x.min(b.x),
            min_y: a.y.min(b.y),
            max_x: a.x.max(b.x),
            max_y: a.y.max(b.y),
        };
        for o in &self.blockers {
            if o.blocks_within(&seg, a, b) {
                c.add(o.obstacle.kind);
            }
        }
        for (i, o) in extra.iter().enumerate() {
            if !skip.contains(&i) && o.blocks_within(&seg, a, b) {
                c.add(o.obstacle.kind);
            }
        }
        c
    }
}

#[cfg(test)]
mod tests;
