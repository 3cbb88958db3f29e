//! Random waypoint (Johnson & Maltz 1996; Broch et al. 1998): pause, pick a
//! destination uniformly in the box, travel to it in a straight line at a
//! speed drawn uniformly in `[speed_min_mps, speed_max_mps]`, pause again.
//!
//! In 2-D the node keeps its initial altitude. The minimum speed must be
//! positive: with speeds near zero the average speed of the model decays
//! over time (Yoon, Liu & Noble, INFOCOM 2003).

use super::leg::{Leg, LegSource, Walker};
use super::{
    check, initial_position, non_negative, uniform, uniform_in, MobilityError, MAX_SPEED_MPS,
};
use crate::rng::SimRng;
use crate::world::geom::Bounds;
use serde::{Deserialize, Serialize};

/// `model = "random_waypoint"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RandomWaypointConfig {
    /// Initial position `[x, y, z]`, metres; default: uniform in the box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_position_m: Option<[f64; 3]>,
    /// 2 (waypoints at the initial altitude) or 3; default 3.
    pub dimensions: u8,
    /// Lowest travel speed, m/s, `> 0`; default 1.
    pub speed_min_mps: f64,
    /// Highest travel speed, m/s, `>= speed_min_mps`, `<= 1000`; default 20.
    pub speed_max_mps: f64,
    /// Pause at each waypoint (and at the start), seconds; default 1.
    pub pause_s: f64,
}

impl Default for RandomWaypointConfig {
    fn default() -> Self {
        RandomWaypointConfig {
            initial_position_m: None,
            dimensions: 3,
            speed_min_mps: 1.0,
            speed_max_mps: 20.0,
            pause_s: 1.0,
        }
    }
}

impl RandomWaypointConfig {
    pub(crate) fn validate(&self) -> Result<(), MobilityError> {
        check(
            self.dimensions == 2 || self.dimensions == 3,
            "random_waypoint.dimensions",
            self.dimensions,
            "2 or 3",
        )?;
        check(
            self.speed_min_mps.is_finite() && self.speed_min_mps > 0.0,
            "random_waypoint.speed_min_mps",
            self.speed_min_mps,
            "a finite speed > 0 m/s",
        )?;
        check(
            self.speed_max_mps <= MAX_SPEED_MPS && self.speed_max_mps >= self.speed_min_mps,
            "random_waypoint.speed_max_mps",
            self.speed_max_mps,
            "speed_min_mps <= speed_max_mps <= 1000 m/s",
        )?;
        check(
            non_negative(self.pause_s),
            "random_waypoint.pause_s",
            self.pause_s,
            "a finite duration >= 0 s",
        )
    }

    pub(crate) fn build(
        &self,
        b: Bounds,
        mut rng: SimRng,
    ) -> Result<Walker<RandomWaypoint>, MobilityError> {
        let start = initial_position(
            self.initial_position_m,
            "random_waypoint.initial_position_m",
            b,
            &mut rng,
        )?;
        // In a box with no room to move (a point, or a vertical segment in
        // 2-D) every leg would be empty: stand still for ever instead.
        let no_room = b.max.x == b.min.x
            && b.max.y == b.min.y
            && (self.dimensions == 2 || b.max.z == b.min.z);
        let first = Leg::pause(
            0.0,
            start,
            if no_room { f64::INFINITY } else { self.pause_s },
        );
        Ok(Walker::new(
            RandomWaypoint {
                cfg: self.clone(),
                bounds: b,
                rng,
            },
            first,
            b,
        ))
    }
}

/// The leg generator of a random-waypoint node.
pub(crate) struct RandomWaypoint {
    cfg: RandomWaypointConfig,
    bounds: Bounds,
    rng: SimRng,
}

impl LegSource for RandomWaypoint {
    fn next_leg(&mut self, prev: &Leg) -> Leg {
        if prev.from != prev.to {
            return Leg::pause(prev.t1, prev.to, self.cfg.pause_s);
        }
        let mut dest = uniform_in(&mut self.rng, self.bounds);
        if self.cfg.dimensions == 2 {
            dest.z = prev.to.z;
        }
        let speed = uniform(
            &mut self.rng,
            self.cfg.speed_min_mps,
            self.cfg.speed_max_mps,
        );
        Leg::travel(prev.t1, prev.to, dest, speed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::mobility::MobilityConfig;
    use peregrine_cc::Time;

    fn cfg(dimensions: u8) -> MobilityConfig {
        MobilityConfig::RandomWaypoint(RandomWaypointConfig {
            dimensions,
            speed_min_mps: 5.0,
            speed_max_mps: 10.0,
            pause_s: 2.0,
            ..Default::default()
        })
    }

    #[test]
    fn pauses_at_waypoints_and_respects_the_speed_range() {
        let b = Bounds::from_size(200.0, 200.0, 50.0);
        let mut m = cfg(3).build(4, b, 11).expect("valid");
        // The node is still during the initial pause.
        assert_eq!(m.velocity(Time::ZERO), crate::world::geom::Vec3::ZERO);
        // Sample every 10 ms for 300 s; measure pause runs and speeds.
        let (mut still_run_s, mut pauses, mut longest_pause) = (0.0f64, 0, 0.0f64);
        for i in 0..30_000u64 {
            let t = Time::from_millis(10 * i);
            let v = m.velocity(t).norm();
            assert!(b.contains(m.position(t)));
            if v == 0.0 {
                still_run_s += 0.01;
            } else {
                assert!((5.0 - 1e-9..=10.0 + 1e-9).contains(&v), "speed {v}");
                if still_run_s > 0.0 {
                    pauses += 1;
                    longest_pause = longest_pause.max(still_run_s);
                }
                still_run_s = 0.0;
            }
        }
        assert!(pauses >= 5, "only {pauses} pauses in 300 s");
        assert!(
            (longest_pause - 2.0).abs() <= 0.011,
            "pause lasted {longest_pause} s"
        );
    }

    #[test]
    fn two_d_keeps_altitude() {
        let b = Bounds::from_size(100.0, 100.0, 30.0);
        let mut m = cfg(2).build(0, b, 3).expect("valid");
        let z0 = m.position(Time::ZERO).z;
        for s in 0..200 {
            let p = m.position(Time::from_secs_f64(s as f64 * 0.7));
            assert_eq!(p.z, z0);
        }
    }

    #[test]
    fn bad_speeds_are_named() {
        let c = MobilityConfig::RandomWaypoint(RandomWaypointConfig {
            speed_min_mps: 0.0,
            ..Default::default()
        });
        let e = c.validate().expect_err("zero minimum speed");
        assert!(
            e.to_string().contains("random_waypoint.speed_min_mps"),
            "{e}"
        );
        let c = MobilityConfig::RandomWaypoint(RandomWaypointConfig {
            speed_max_mps: 0.5,
            ..Default::default()
        });
        let e = c.validate().expect_err("max below min");
        assert!(e.to_string().contains("speed_max_mps"), "{e}");
    }
}
