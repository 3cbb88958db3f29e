//! The static model: a node that never moves (a base station, a parked
//! vehicle, a hovering relay).

use super::{initial_position, Mobility, MobilityError};
use crate::rng::SimRng;
use crate::world::geom::{Bounds, Vec3};
use peregrine_cc::Time;
use serde::{Deserialize, Serialize};

/// `model = "static"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StaticConfig {
    /// Position `[x, y, z]`, metres; default: drawn uniformly in the box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position_m: Option<[f64; 3]>,
}

impl StaticConfig {
    /// No field can be out of range without the box; see `build`.
    pub(crate) fn validate(&self) -> Result<(), MobilityError> {
        Ok(())
    }

    pub(crate) fn build(&self, b: Bounds, rng: &mut SimRng) -> Result<Fixed, MobilityError> {
        Ok(Fixed(initial_position(
            self.position_m,
            "static.position_m",
            b,
            rng,
        )?))
    }
}

/// A node standing at one point.
pub(crate) struct Fixed(pub Vec3);

impl Mobility for Fixed {
    fn position(&mut self, _t: Time) -> Vec3 {
        self.0
    }
    fn velocity(&mut self, _t: Time) -> Vec3 {
        Vec3::ZERO
    }
}
