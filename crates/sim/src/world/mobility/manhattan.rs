//! Manhattan grid mobility (Bai, Sadagopan & Helmy, INFOCOM 2003; seed 004
//! §4): vehicles drive on the streets of a square grid and choose, at every
//! intersection, to go straight, turn left or turn right.
//!
//! Streets run along `x = min.x + i·block_size_m` and `y = min.y +
//! j·block_size_m` for every such line inside the box. A vehicle starts at
//! a uniformly drawn point of a uniformly drawn street segment, heading
//! either way along it, at a speed drawn once uniformly in
//! `[speed_min_mps, speed_max_mps]` (seed 004: 5–30 m/s). At an
//! intersection it goes straight, left or right with the configured
//! probabilities (classic values 0.5 / 0.25 / 0.25), renormalised over the
//! choices that stay on the grid; it makes a U-turn only if none does. The
//! model is 2-D: `z` is the vehicle's antenna height.

use super::leg::{Leg, LegSource, Walker};
use super::{check, uniform, Mobility, MobilityConfig, MobilityError, MAX_SPEED_MPS};
use crate::rng::SimRng;
use crate::world::geom::{Bounds, Vec3};
use peregrine_cc::Time;
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// `model = "manhattan"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ManhattanConfig {
    /// Distance between parallel streets, metres, `>= 1`; default 25 (a
    /// 5 × 5 street grid in seed 004's 100 m × 100 m area).
    pub block_size_m: f64,
    /// Lowest vehicle speed, m/s, `> 0`; default 5 (seed 004).
    pub speed_min_mps: f64,
    /// Highest vehicle speed, m/s, `>= speed_min_mps`, `<= 1000`; default 30 (seed 004).
    pub speed_max_mps: f64,
    /// Probability of going straight at an intersection; default 0.5.
    pub turn_straight_prob: f64,
    /// Probability of turning left; default 0.25.
    pub turn_left_prob: f64,
    /// Probability of turning right; default 0.25.
    pub turn_right_prob: f64,
    /// Antenna height: the vehicles' constant `z`, metres (ground is
    /// `z = 0`); must lie in the box's z range; default 1.5.
    pub antenna_height_m: f64,
}

impl Default for ManhattanConfig {
    fn default() -> Self {
        ManhattanConfig {
            block_size_m: 25.0,
            speed_min_mps: 5.0,
            speed_max_mps: 30.0,
            turn_straight_prob: 0.5,
            turn_left_prob: 0.25,
            turn_right_prob: 0.25,
            antenna_height_m: 1.5,
        }
    }
}

/// Heading along a street: east, north, west, south (counter-clockwise, so
/// `+1` is a left turn and `+3` a right turn).
const HEADINGS: [(i64, i64); 4] = [(1, 0), (0, 1), (-1, 0), (0, -1)];

/// What a vehicle did at an intersection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    // `Back` is a U-turn.
    Straight = 0,
    Left = 1,
    Right = 2,
    Back = 3,
}

impl ManhattanConfig {
    pub(crate) fn validate(&self) -> Result<(), MobilityError> {
        check(
            self.block_size_m.is_finite() && self.block_size_m >= 1.0,
            "manhattan.block_size_m",
            self.block_size_m,
            "a finite length >= 1 m",
        )?;
        check(
            self.speed_min_mps.is_finite() && self.speed_min_mps > 0.0,
            "manhattan.speed_min_mps",
            self.speed_min_mps,
            "a finite speed > 0 m/s",
        )?;
        check(
            self.speed_max_mps <= MAX_SPEED_MPS && self.speed_max_mps >= self.speed_min_mps,
            "manhattan.speed_max_mps",
            self.speed_max_mps,
            "speed_min_mps <= speed_max_mps <= 1000 m/s",
        )?;
        for (p, field) in [
            (self.turn_straight_prob, "manhattan.turn_straight_prob"),
            (self.turn_left_prob, "manhattan.turn_left_prob"),
            (self.turn_right_prob, "manhattan.turn_right_prob"),
        ] {
            check(
                (0.0..=1.0).contains(&p),
                field,
                p,
                "a probability in [0, 1]",
            )?;
        }
        let sum = self.turn_straight_prob + self.turn_left_prob + self.turn_right_prob;
        check(
            (sum - 1.0).abs() <= 1e-9,
            "manhattan.turn_straight_prob",
            format!("{sum} (straight + left + right)"),
            "turn_straight_prob + turn_left_prob + turn_right_prob = 1",
        )?;
        check(
            self.antenna_height_m.is_finite(),
            "manhattan.antenna_height_m",
            self.antenna_height_m,
            "a finite height (m) inside the box's z range",
        )
    }

    /// Number of blocks along an axis of length `len`.
    fn blocks(&self, len: f64) -> i64 {
        // A hair of tolerance so that 100 m / 25 m gives 4 blocks, not 3.
        ((len / self.block_size_m) + 1e-9).floor() as i64
    }

    pub(crate) fn build(&self, b: Bounds, mut rng: SimRng) -> Result<Manhattan, MobilityError> {
        let nx = self.blocks(b.max.x - b.min.x);
        let ny = self.blocks(b.max.y - b.min.y);
        if nx < 1 || ny < 1 {
            return Err(MobilityError::Bounds {
                bounds: format!("{b:?}"),
                reason: format!(
                    "the box must be at least one block (manhattan.block_size_m = {} m) wide in x and y",
                    self.block_size_m
                ),
            });
        }
        check(
            (b.min.z..=b.max.z).contains(&self.antenna_height_m),
            "manhattan.antenna_height_m",
            self.antenna_height_m,
            "a height inside the box's z range",
        )?;
        let speed = uniform(&mut rng, self.speed_min_mps, self.speed_max_mps);
        // A uniform point on the streets: pick one of the undirected segments
        // (all have length block_size_m), a direction and a fraction.
        let horizontal = nx * (ny + 1);
        let vertical = ny * (nx + 1);
        let k = rng.random_range(0..horizontal + vertical);
        let (from, heading) = if k < horizontal {
            ((k % nx, k / nx), 0usize)
        } else {
            let k = k - horizontal;
            ((k / ny, k % ny), 1usize)
        };
        let forward = rng.random_bool(0.5);
        let (from, heading) = if forward {
            (from, heading)
        } else {
            let (dx, dy) = HEADINGS[heading];
            ((from.0 + dx, from.1 + dy), heading + 2)
        };
        let frac = rng.random::<f64>();
        let mut src = ManhattanSource {
            cfg: self.clone(),
            bounds: b,
            rng,
            nx,
            ny,
            speed,
            heading,
            target: (0, 0),
            counts: [0; 4],
            interior_counts: [0; 3],
        };
        let (dx, dy) = HEADINGS[heading];
        src.target = (from.0 + dx, from.1 + dy);
        let a = src.point(from);
        let start = a.lerp(src.point(src.target), frac);
        let first = Leg::travel(0.0, start, src.point(src.target), speed);
        Ok(Manhattan(Walker::new(src, first, b)))
    }
}

/// The leg generator of a Manhattan vehicle: one leg per block.
pub(crate) struct ManhattanSource {
    cfg: ManhattanConfig,
    bounds: Bounds,
    rng: SimRng,
    /// Blocks along x and y (streets: `nx + 1` and `ny + 1`).
    nx: i64,
    ny: i64,
    speed: f64,
    /// Index into [`HEADINGS`] of the current leg.
    heading: usize,
    /// The intersection the current leg ends at.
    target: (i64, i64),
    /// Decisions taken: straight, left, right, U-turn.
    counts: [u64; 4],
    /// Decisions taken where all of straight, left and right were possible.
    interior_counts: [u64; 3],
}

impl ManhattanSource {
    /// Intersection `(i, j)` in metres.
    fn point(&self, (i, j): (i64, i64)) -> Vec3 {
        let b = self.cfg.block_size_m;
        Vec3::new(
            self.bounds.min.x + i as f64 * b,
            self.bounds.min.y + j as f64 * b,
            self.cfg.antenna_height_m,
        )
    }

    fn on_grid(&self, (i, j): (i64, i64)) -> bool {
        (0..=self.nx).contains(&i) && (0..=self.ny).contains(&j)
    }

    /// Choose the next heading at intersection `self.target`.
    fn choose(&mut self) -> (usize, Turn) {
        let at = self.target;
        let options = [
            (Turn::Straight, self.heading, self.cfg.turn_straight_prob),
            (Turn::Left, (self.heading + 1) % 4, self.cfg.turn_left_prob),
            (
                Turn::Right,
                (self.heading + 3) % 4,
                self.cfg.turn_right_prob,
            ),
        ];
        let feasible: Vec<(Turn, usize, f64)> = options
            .iter()
            .copied()
            .filter(|&(_, h, _)| {
                let (dx, dy) = HEADINGS[h];
                self.on_grid((at.0 + dx, at.1 + dy))
            })
            .collect();
        if feasible.is_empty() {
            // A dead end (only on a degenerate grid): turn around.
            return ((self.heading + 2) % 4, Turn::Back);
        }
        let total: f64 = feasible.iter().map(|o| o.2).sum();
        let pick = if total > 0.0 {
            // Renormalised over the feasible choices.
            let mut u = self.rng.random::<f64>() * total;
            // Rounding can leave u just above the last bucket: fall back to
            // the last choice that has a probability.
            let mut pick = *feasible
                .iter()
                .rev()
                .find(|o| o.2 > 0.0)
                .unwrap_or(&feasible[0]);
            for o in &feasible {
                if o.2 > 0.0 && u < o.2 {
                    pick = *o;
                    break;
                }
                u -= o.2;
            }
            pick
        } else {
            // Every allowed choice has probability 0 (say straight = 1 at
            // the edge of the grid): pick one uniformly.
            feasible[self.rng.random_range(0..feasible.len())]
        };
        if feasible.len() == 3 {
            self.interior_counts[pick.0 as usize] += 1;
        }
        (pick.1, pick.0)
    }
}

impl LegSource for ManhattanSource {
    fn next_leg(&mut self, prev: &Leg) -> Leg {
        let (heading, turn) = self.choose();
        self.counts[turn as usize] += 1;
        self.heading = heading;
        let (dx, dy) = HEADINGS[heading];
        let from = self.target;
        self.target = (from.0 + dx, from.1 + dy);
        // Start exactly on the intersection, not on the rounded leg end.
        Leg::travel(
            prev.t1,
            self.point(from),
            self.point(self.target),
            self.speed,
        )
    }
}

/// A Manhattan vehicle. Besides [`Mobility`], it reports its turns.
pub struct Manhattan(Walker<ManhattanSource>);

impl Manhattan {
    /// Build from a config (the same as [`MobilityConfig::build`] but with
    /// the concrete type).
    pub fn new(
        cfg: &ManhattanConfig,
        node: usize,
        bounds: Bounds,
        seed: u64,
    ) -> Result<Manhattan, MobilityError> {
        MobilityConfig::Manhattan(cfg.clone()).validate()?;
        super::check_bounds(bounds)?;
        cfg.build(
            bounds,
            crate::rng::component_rng(seed, &format!("mobility/{node}")),
        )
    }

    /// Decisions so far: `[straight, left, right, u_turn]`.
    pub fn turn_counts(&self) -> [u64; 4] {
        self.0.source.counts
    }

    /// Decisions at intersections where straight, left and right were all
    /// possible: `[straight, left, right]` (their frequencies estimate the
    /// configured probabilities).
    pub fn interior_turn_counts(&self) -> [u64; 3] {
        self.0.source.interior_counts
    }

    /// This vehicle's speed, m/s.
    pub fn speed_mps(&self) -> f64 {
        self.0.source.speed
    }
}

impl Mobility for Manhattan {
    fn position(&mut self, t: Time) -> Vec3 {
        self.0.position(t)
    }
    fn velocity(&mut self, t: Time) -> Vec3 {
        self.0.velocity(t)
    }
}

#[cfg(test)]
#[path = "manhattan_tests.rs"]
mod tests;
