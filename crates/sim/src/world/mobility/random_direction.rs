//! Random direction (Royer, Melliar-Smith & Moser, ICC 2001): pick a
//! direction and a speed, travel straight until the wall of the box, pause,
//! then pick a new direction pointing back into the box.
//!
//! Unlike random waypoint, nodes do not crowd the centre of the area: the
//! spatial distribution stays close to uniform. Directions are uniform on
//! the circle (2-D) or the sphere (3-D); at a wall the components pointing
//! outwards are mirrored, which keeps the draw uniform over the inward
//! half-space (or quarter, at an edge).

use super::leg::{Leg, LegSource, Walker};
use super::{check, initial_position, non_negative, uniform, MobilityError, MAX_SPEED_MPS};
use crate::rng::SimRng;
use crate::world::geom::{Bounds, Vec3};
use serde::{Deserialize, Serialize};
use std::f64::consts::TAU;

/// `model = "random_direction"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RandomDirectionConfig {
    /// Initial position `[x, y, z]`, metres; default: uniform in the box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_position_m: Option<[f64; 3]>,
    /// 2 (horizontal directions, constant altitude) or 3; default 3.
    pub dimensions: u8,
    /// Lowest speed, m/s, `> 0`; default 1.
    pub speed_min_mps: f64,
    /// Highest speed, m/s, `>= speed_min_mps`, `<= 1000`; default 20.
    pub speed_max_mps: f64,
    /// Pause at the wall before turning, seconds; default 1.
    pub pause_s: f64,
}

impl Default for RandomDirectionConfig {
    fn default() -> Self {
        RandomDirectionConfig {
            initial_position_m: None,
            dimensions: 3,
            speed_min_mps: 1.0,
            speed_max_mps: 20.0,
            pause_s: 1.0,
        }
    }
}

impl RandomDirectionConfig {
    pub(crate) fn validate(&self) -> Result<(), MobilityError> {
        check(
            self.dimensions == 2 || self.dimensions == 3,
            "random_direction.dimensions",
            self.dimensions,
            "2 or 3",
        )?;
        check(
            self.speed_min_mps.is_finite() && self.speed_min_mps > 0.0,
            "random_direction.speed_min_mps",
            self.speed_min_mps,
            "a finite speed > 0 m/s",
        )?;
        check(
            self.speed_max_mps <= MAX_SPEED_MPS && self.speed_max_mps >= self.speed_min_mps,
            "random_direction.speed_max_mps",
            self.speed_max_mps,
            "speed_min_mps <= speed_max_mps <= 1000 m/s",
        )?;
        check(
            non_negative(self.pause_s),
            "random_direction.pause_s",
            self.pause_s,
            "a finite duration >= 0 s",
        )
    }

    pub(crate) fn build(
        &self,
        b: Bounds,
        mut rng: SimRng,
    ) -> Result<Walker<RandomDirection>, MobilityError> {
        let start = initial_position(
            self.initial_position_m,
            "random_direction.initial_position_m",
            b,
            &mut rng,
        )?;
        let mut source = RandomDirection {
            cfg: self.clone(),
            bounds: b,
            rng,
        };
        // Start moving at once (a zero pause) from the initial position.
        let first = source.travel(0.0, start);
        Ok(Walker::new(source, first, b))
    }
}

/// The leg generator of a random-direction node.
pub(crate) struct RandomDirection {
    cfg: RandomDirectionConfig,
    bounds: Bounds,
    rng: SimRng,
}

impl RandomDirection {
    /// A unit direction, mirrored to point into the box at the walls `p`
    /// touches, with no component along an axis of zero width.
    fn direction(&mut self, p: Vec3) -> Vec3 {
        let az = uniform(&mut self.rng, 0.0, TAU);
        let (cz, sz) = if self.cfg.dimensions == 3 {
            let z = uniform(&mut self.rng, -1.0, 1.0);
            ((1.0 - z * z).max(0.0).sqrt(), z)
        } else {
            (1.0, 0.0)
        };
        let raw = [az.cos() * cz, az.sin() * cz, sz];
        let b = self.bounds;
        let lo = [b.min.x, b.min.y, b.min.z];
        let hi = [b.max.x, b.max.y, b.max.z];
        let at = [p.x, p.y, p.z];
        let mut d = [0.0; 3];
        for i in 0..3 {
            d[i] = if hi[i] <= lo[i] {
                0.0
            } else if at[i] <= lo[i] {
                raw[i].abs()
            } else if at[i] >= hi[i] {
                -raw[i].abs()
            } else {
                raw[i]
            };
        }
        let d = Vec3::new(d[0], d[1], d[2]);
        let n = d.norm();
        if n > 0.0 {
            d.scale(1.0 / n)
        } else {
            Vec3::ZERO
        }
    }

    /// The straight leg from `p` at `t0` to the first wall in a fresh
    /// direction; the coordinate that hits the wall is snapped onto it.
    fn travel(&mut self, t0: f64, p: Vec3) -> Leg {
        let d = self.direction(p);
        let speed = uniform(
            &mut self.rng,
            self.cfg.speed_min_mps,
            self.cfg.speed_max_mps,
        );
        let b = self.bounds;
        let axes = [
            (d.x, p.x, b.min.x, b.max.x),
            (d.y, p.y, b.min.y, b.max.y),
            (d.z, p.z, b.min.z, b.max.z),
        ];
        // Distance along `d` to the first wall, and which axis hits it.
        let mut best = (f64::INFINITY, usize::MAX, 0.0);
        for (i, &(di, pi, lo, hi)) in axes.iter().enumerate() {
            if di != 0.0 {
                let wall = if di > 0.0 { hi } else { lo };
                let s = ((wall - pi) / di).max(0.0);
                if s < best.0 {
                    best = (s, i, wall);
                }
            }
        }
        let (dist, axis, wall) = best;
        if !dist.is_finite() {
            // A zero-size box: nowhere to go.
            return Leg::pause(t0, p, f64::INFINITY);
        }
        let mut to = super::clamp_to(b, p + d.scale(dist));
        match axis {
            0 => to.x = wall,
            1 => to.y = wall,
            _ => to.z = wall,
        }
        Leg::travel(t0, p, to, speed)
    }
}

impl LegSource for RandomDirection {
    fn next_leg(&mut self, prev: &Leg) -> Leg {
        if prev.from != prev.to {
            Leg::pause(prev.t1, prev.to, self.cfg.pause_s)
        } else {
            self.travel(prev.t1, prev.to)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::mobility::MobilityConfig;
    use peregrine_cc::Time;

    #[test]
    fn travels_wall_to_wall_and_pauses_there() {
        let b = Bounds::from_size(100.0, 80.0, 40.0);
        let c = MobilityConfig::RandomDirection(RandomDirectionConfig {
            pause_s: 0.5,
            ..Default::default()
        });
        let mut m = c.build(2, b, 9).expect("valid");
        let mut walls_at_pause = 0;
        let mut prev_moving = true;
        for i in 0..20_000u64 {
            let t = Time::from_millis(5 * i);
            let p = m.position(t);
            assert!(b.contains(p));
            let moving = m.velocity(t).norm() > 0.0;
            if prev_moving && !moving {
                let on_wall = [p.x, p.y, p.z]
                    .iter()
                    .zip([(0.0, 100.0), (0.0, 80.0), (0.0, 40.0)])
                    .any(|(&c, (lo, hi))| c == lo || c == hi);
                assert!(on_wall, "paused off the walls at {p:?}");
                walls_at_pause += 1;
            }
            prev_moving = moving;
        }
        assert!(walls_at_pause >= 5, "{walls_at_pause} wall stops");
    }

    #[test]
    fn two_d_stays_at_its_altitude_in_a_flat_box() {
        let b = Bounds::from_size(50.0, 50.0, 0.0);
        let c = MobilityConfig::RandomDirection(RandomDirectionConfig {
            dimensions: 3, // a flat box forces 2-D motion anyway
            pause_s: 0.0,
            ..Default::default()
        });
        let mut m = c.build(0, b, 5).expect("valid");
        for i in 0..5_000u64 {
            let p = m.position(Time::from_millis(20 * i));
            assert_eq!(p.z, 0.0);
            assert!(b.contains(p));
        }
    }
}
