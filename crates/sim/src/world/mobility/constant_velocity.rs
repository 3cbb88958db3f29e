//! Constant velocity: a straight line at a fixed velocity, kept in the box
//! by reflecting off the walls (a billiard ball; the default) or by
//! wrapping around (a torus, which keeps the velocity but jumps).
//!
//! The position is a closed form of time (`p0 + v·t` folded into the box),
//! so it costs the same whenever it is sampled and accumulates no error.

use super::{check, initial_position, reflect, secs, vec3, wrap, Mobility, MobilityError};
use crate::rng::SimRng;
use crate::world::geom::{Bounds, Vec3};
use peregrine_cc::Time;
use serde::{Deserialize, Serialize};

/// What happens at the walls of the box.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// Bounce: the velocity component normal to the wall flips.
    #[default]
    Reflect,
    /// Leave through one wall, re-enter through the opposite one.
    Wrap,
}

/// `model = "constant_velocity"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConstantVelocityConfig {
    /// Initial position `[x, y, z]`, metres; default: uniform in the box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_position_m: Option<[f64; 3]>,
    /// Velocity `[vx, vy, vz]`, m/s; default `[10, 0, 0]`.
    pub velocity_mps: [f64; 3],
    /// Behaviour at the walls; default `reflect`.
    pub boundary: Boundary,
}

impl Default for ConstantVelocityConfig {
    fn default() -> Self {
        ConstantVelocityConfig {
            initial_position_m: None,
            velocity_mps: [10.0, 0.0, 0.0],
            boundary: Boundary::Reflect,
        }
    }
}

impl ConstantVelocityConfig {
    pub(crate) fn validate(&self) -> Result<(), MobilityError> {
        let v = self.velocity_mps;
        check(
            v.iter().all(|c| c.is_finite()),
            "constant_velocity.velocity_mps",
            format!("{v:?}"),
            "three finite numbers (m/s)",
        )
    }

    pub(crate) fn build(
        &self,
        b: Bounds,
        rng: &mut SimRng,
    ) -> Result<ConstantVelocity, MobilityError> {
        let start = initial_position(
            self.initial_position_m,
            "constant_velocity.initial_position_m",
            b,
            rng,
        )?;
        Ok(ConstantVelocity {
            start,
            velocity: vec3(self.velocity_mps),
            boundary: self.boundary,
            bounds: b,
        })
    }
}

/// A node moving in a straight line from `start` at time zero.
pub(crate) struct ConstantVelocity {
    start: Vec3,
    velocity: Vec3,
    boundary: Boundary,
    bounds: Bounds,
}

impl ConstantVelocity {
    /// Position and velocity at `t` seconds.
    fn state(&self, t: f64) -> (Vec3, Vec3) {
        let free = self.start + self.velocity.scale(t);
        let (b, v) = (self.bounds, self.velocity);
        match self.boundary {
            Boundary::Wrap => (
                Vec3::new(
                    wrap(free.x, b.min.x, b.max.x),
                    wrap(free.y, b.min.y, b.max.y),
                    wrap(free.z, b.min.z, b.max.z),
                ),
                v,
            ),
            Boundary::Reflect => {
                let (x, sx) = reflect(free.x, b.min.x, b.max.x);
                let (y, sy) = reflect(free.y, b.min.y, b.max.y);
                let (z, sz) = reflect(free.z, b.min.z, b.max.z);
                // On a zero-width axis the node cannot move along it.
                let axis = |w: f64, c: f64, s: f64| if w > 0.0 { c * s } else { 0.0 };
                (
                    Vec3::new(x, y, z),
                    Vec3::new(
                        axis(b.max.x - b.min.x, v.x, sx),
                        axis(b.max.y - b.min.y, v.y, sy),
                        axis(b.max.z - b.min.z, v.z, sz),
                    ),
                )
            }
        }
    }
}

impl Mobility for ConstantVelocity {
    fn position(&mut self, t: Time) -> Vec3 {
        self.state(secs(t)).0
    }
    fn velocity(&mut self, t: Time) -> Vec3 {
        self.state(secs(t)).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::mobility::MobilityConfig;

    fn build(boundary: Boundary) -> Box<dyn Mobility> {
        MobilityConfig::ConstantVelocity(ConstantVelocityConfig {
            initial_position_m: Some([90.0, 50.0, 10.0]),
            velocity_mps: [10.0, 0.0, 0.0],
            boundary,
        })
        .build(0, Bounds::from_size(100.0, 100.0, 20.0), 1)
        .expect("valid config")
    }

    #[test]
    fn reflects_off_the_wall() {
        let mut m = build(Boundary::Reflect);
        let p = m.position(Time::from_millis(500));
        assert!((p.x - 95.0).abs() < 1e-9);
        let p = m.position(Time::from_secs_f64(1.5));
        assert!((p.x - 95.0).abs() < 1e-9, "bounced back: {p:?}");
        assert_eq!(m.velocity(Time::from_secs_f64(1.5)).x, -10.0);
        assert_eq!(p.y, 50.0);
    }

    #[test]
    fn wraps_around() {
        let mut m = build(Boundary::Wrap);
        let p = m.position(Time::from_secs_f64(1.5));
        assert!(
            (p.x - 5.0).abs() < 1e-9,
            "re-entered at the far side: {p:?}"
        );
        assert_eq!(m.velocity(Time::from_secs_f64(1.5)).x, 10.0);
    }

    #[test]
    fn non_finite_velocity_is_rejected() {
        let c = MobilityConfig::ConstantVelocity(ConstantVelocityConfig {
            velocity_mps: [f64::NAN, 0.0, 0.0],
            ..Default::default()
        });
        let e = c.validate().expect_err("NaN velocity");
        assert!(
            e.to_string().contains("constant_velocity.velocity_mps"),
            "{e}"
        );
    }
}
