//! Node mobility: where every node is, and how fast it moves, at any
//! virtual time.
//!
//! A [`Mobility`] is a pure function of time driven forward by the engine:
//! the channel samples [`Mobility::position`] (and [`Mobility::velocity`],
//! for Doppler and angular speed) when it needs them, so a model costs
//! nothing between samples. Time never goes backwards between calls; a
//! model may keep internal state (the current leg, the last Gauss-Markov
//! step) that only moves forward.
//!
//! Scenario files describe a model with [`MobilityConfig`], a tagged enum
//! (`model = "gauss_markov"`, …) whose fields carry their unit in their name
//! and have documented defaults. [`MobilityConfig::build`] turns it into node
//! `node`'s model; its random choices come from
//! `component_rng(seed, "mobility/{node}")`, so a node's path depends only on
//! (seed, node, config) — adding a node never moves another one.
//!
//! Key choices (details in `docs/sim-parts/mobility.md`): every model except
//! traces keeps its node inside the simulation box (reflection, or wrapping
//! for constant velocity if asked); piecewise-linear models (random waypoint,
//! random direction, Manhattan) are walked leg by leg ([`leg`]); Gauss-Markov
//! follows seed 001 Eqs. 1–5 with a fixed update step and linear
//! interpolation between steps.
//!
//! ```
//! use peregrine_sim::world::geom::Bounds;
//! use peregrine_sim::world::mobility::MobilityConfig;
//! use peregrine_sim::Time;
//!
//! // As a scenario file would give it (any serde format; TOML in practice).
//! let cfg: MobilityConfig =
//!     serde_json::from_str(r#"{"model": "gauss_markov", "mean_speed_mps": 20.0}"#)?;
//! let area = Bounds::from_size(300.0, 300.0, 100.0);
//! let mut uav = cfg.build(3, area, 42)?;
//! let p = uav.position(Time::from_millis(1_500));
//! assert!(area.contains(p));
//! assert!(uav.velocity(Time::from_millis(1_500)).norm() > 0.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod constant_velocity;
mod gauss_markov;
mod leg;
mod manhattan;
mod random_direction;
mod random_waypoint;
mod static_model;
pub mod sumo_fcd;
mod trace;

pub use constant_velocity::{Boundary, ConstantVelocityConfig};
pub use gauss_markov::{GaussMarkov, GaussMarkovConfig};
pub use manhattan::{Manhattan, ManhattanConfig};
pub use random_direction::RandomDirectionConfig;
pub use random_waypoint::RandomWaypointConfig;
pub use static_model::StaticConfig;
pub use trace::{PositionTrace, TraceConfig, TraceFormat, TraceMobility};

use crate::rng::{component_rng, SimRng};
use crate::world::geom::{Bounds, Vec3};
use peregrine_cc::Time;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A node's motion. Time never goes backwards between calls (`t` is
/// [`peregrine_cc::Time`], nanoseconds since the start of the simulation).
pub trait Mobility: Send {
    /// Position at `t`, metres.
    fn position(&mut self, t: Time) -> Vec3;
    /// Velocity at `t`, m/s (for Doppler / angular speed).
    fn velocity(&mut self, t: Time) -> Vec3;
    /// The straight piece of motion `t` falls in, for a model that moves
    /// in such pieces: [`position`](Self::position) at any instant from
    /// `t` until [`Segment::until_s`] is [`Segment::position`] there, bit
    /// for bit. A caller sampling many nodes often (the swarm's DCF) keeps
    /// the segments side by side and runs the model only when one ends,
    /// instead of reaching into every node's model (issue 40). `None`
    /// (the default): ask `position`.
    fn segment(&mut self, _t: Time) -> Option<Segment> {
        None
    }
}

/// A straight line at constant velocity from `from` at `start_s`,
/// folded into `bounds` (the walls reflect), valid before `until_s`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// Position at `start_s`, m.
    pub from: Vec3,
    /// Velocity before reflections, m/s.
    pub velocity: Vec3,
    /// Start of the piece, seconds since the start of the simulation.
    pub start_s: f64,
    /// The piece holds for instants before this, seconds.
    pub until_s: f64,
    /// The box the motion is folded into.
    pub bounds: Bounds,
}

impl Segment {
    /// Position at `t` (from `start_s` on; earlier instants give `from`
    /// folded into the box). O(1).
    #[inline]
    pub fn position(&self, t: Time) -> Vec3 {
        let dt = (secs(t) - self.start_s).max(0.0);
        clamp_to(self.bounds, self.fold(dt).0)
    }

    /// The position `dt` seconds after `start_s`, folded into the box but
    /// not clamped, with the signs the velocity components have after
    /// the bounces.
    #[inline]
    pub(crate) fn fold(&self, dt: f64) -> (Vec3, [f64; 3]) {
        let free = self.from + self.velocity.scale(dt);
        let b = self.bounds;
        let (x, sx) = reflect(free.x, b.min.x, b.max.x);
        let (y, sy) = reflect(free.y, b.min.y, b.max.y);
        let (z, sz) = reflect(free.z, b.min.z, b.max.z);
        (Vec3::new(x, y, z), [sx, sy, sz])
    }
}

/// Why a mobility configuration cannot be used. Every variant names the bad
/// field (or trace line and column) and what would be accepted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MobilityError {
    /// A parameter is out of its allowed range.
    #[error("mobility field `{field}` = {value} is invalid: allowed {allowed}")]
    Field {
        /// `model.field`, e.g. `gauss_markov.alpha`.
        field: &'static str,
        /// The offending value, printed.
        value: String,
        /// The allowed range, in words.
        allowed: &'static str,
    },
    /// The simulation box cannot host the model.
    #[error("simulation bounds {bounds}: {reason}")]
    Bounds {
        /// The box, printed.
        bounds: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A trace file could not be read.
    #[error("mobility trace `{path}`: {message}")]
    TraceIo {
        /// The file.
        path: String,
        /// The I/O error, printed.
        message: String,
    },
    /// A trace row is malformed.
    #[error("mobility trace `{path}`, line {line}, column `{column}`: {message}")]
    TraceRow {
        /// The file (or `<inline>`).
        path: String,
        /// 1-based line number.
        line: usize,
        /// Column name (`time_s`, `node`, `x`, `y`, `z`, or `row`).
        column: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A SUMO FCD file is not what SUMO writes.
    #[error("mobility trace `{path}`, byte {offset}: {message}")]
    TraceXml {
        /// The file.
        path: String,
        /// Byte offset of the element at fault.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A SUMO FCD file has no sample of the vehicle asked for.
    #[error("mobility trace `{path}` has no samples for vehicle {vehicle}")]
    TraceVehicleMissing {
        /// The file.
        path: String,
        /// The vehicle looked for (`id "veh0"` or `number 3 …`).
        vehicle: String,
    },
    /// The trace has no row for the node.
    #[error("mobility trace `{path}` has no rows for node {node}")]
    TraceNodeMissing {
        /// The file (or `<inline>`).
        path: String,
        /// The node id looked for.
        node: u64,
    },
}

/// A mobility model as written in a scenario file, e.g.
/// `{ model = "gauss_markov", mean_speed_mps = 20.0 }`. Omitted fields take
/// the defaults documented on each config struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum MobilityConfig {
    /// Never moves.
    Static(StaticConfig),
    /// Straight line at a fixed velocity, reflecting or wrapping at the box.
    ConstantVelocity(ConstantVelocityConfig),
    /// Random waypoint (2-D or 3-D) with pauses.
    RandomWaypoint(RandomWaypointConfig),
    /// Gauss-Markov 3-D, seed 001 Eqs. 1–5.
    GaussMarkov(GaussMarkovConfig),
    /// Random direction: straight to a wall, pause, new inward direction.
    RandomDirection(RandomDirectionConfig),
    /// Replay of a `time_s,node,x,y,z` CSV trace or of SUMO's FCD XML
    /// (`format = "sumo-fcd"`).
    Trace(TraceConfig),
    /// Vehicles on the streets of a Manhattan grid.
    Manhattan(ManhattanConfig),
}

impl MobilityConfig {
    /// Check every field; the error names the bad field and its allowed range.
    /// (Checks that need the box, such as a given initial position lying in
    /// it, happen in [`MobilityConfig::build`].)
    pub fn validate(&self) -> Result<(), MobilityError> {
        match self {
            MobilityConfig::Static(c) => c.validate(),
            MobilityConfig::ConstantVelocity(c) => c.validate(),
            MobilityConfig::RandomWaypoint(c) => c.validate(),
            MobilityConfig::GaussMarkov(c) => c.validate(),
            MobilityConfig::RandomDirection(c) => c.validate(),
            MobilityConfig::Trace(c) => c.validate(),
            MobilityConfig::Manhattan(c) => c.validate(),
        }
    }

    /// Build node `node`'s model; the initial position is drawn uniformly in
    /// `bounds` unless the config gives one. Random choices come from
    /// `component_rng(seed, "mobility/{node}")`. A trace file is read here.
    pub fn build(
        &self,
        node: usize,
        bounds: Bounds,
        seed: u64,
    ) -> Result<Box<dyn Mobility>, MobilityError> {
        self.validate()?;
        check_bounds(bounds)?;
        let mut rng = component_rng(seed, &format!("mobility/{node}"));
        Ok(match self {
            MobilityConfig::Static(c) => Box::new(c.build(bounds, &mut rng)?),
            MobilityConfig::ConstantVelocity(c) => Box::new(c.build(bounds, &mut rng)?),
            MobilityConfig::RandomWaypoint(c) => Box::new(c.build(bounds, rng)?),
            MobilityConfig::GaussMarkov(c) => Box::new(c.build(bounds, rng)?),
            MobilityConfig::RandomDirection(c) => Box::new(c.build(bounds, rng)?),
            MobilityConfig::Trace(c) => Box::new(c.build(node)?),
            MobilityConfig::Manhattan(c) => Box::new(c.build(bounds, rng)?),
        })
    }

    /// Make a relative trace path relative to `base_dir` (the scenario
    /// file's directory); other models are unchanged.
    pub fn resolve_paths(&mut self, base_dir: &Path) {
        if let MobilityConfig::Trace(c) = self {
            let p = Path::new(&c.path);
            if p.is_relative() {
                c.path = base_dir.join(p).to_string_lossy().into_owned();
            }
        }
    }
}

/// The highest speed a model accepts, m/s: far above any vehicle or UAV,
/// low enough that legs cannot shrink to nothing and stall a simulation
/// on a mistyped scenario.
pub const MAX_SPEED_MPS: f64 = 1000.0;

/// `Err(Field)` unless `ok`.
pub(crate) fn check(
    ok: bool,
    field: &'static str,
    value: impl std::fmt::Display,
    allowed: &'static str,
) -> Result<(), MobilityError> {
    if ok {
        Ok(())
    } else {
        Err(MobilityError::Field {
            field,
            value: value.to_string(),
            allowed,
        })
    }
}

/// Whether `x` is finite and at least zero.
pub(crate) fn non_negative(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

/// The box must be finite and not inverted (a zero extent on an axis is
/// allowed: that axis is then fixed).
pub(crate) fn check_bounds(b: Bounds) -> Result<(), MobilityError> {
    let finite = [b.min.x, b.min.y, b.min.z, b.max.x, b.max.y, b.max.z]
        .iter()
        .all(|v| v.is_finite());
    if !finite || b.min.x > b.max.x || b.min.y > b.max.y || b.min.z > b.max.z {
        return Err(MobilityError::Bounds {
            bounds: format!("{b:?}"),
            reason: "every coordinate must be finite and min <= max on each axis".into(),
        });
    }
    Ok(())
}

/// `[x, y, z]` as a point.
pub(crate) fn vec3(a: [f64; 3]) -> Vec3 {
    Vec3::new(a[0], a[1], a[2])
}

/// Uniform in `[lo, hi]` (also when `lo == hi`).
pub(crate) fn uniform(rng: &mut SimRng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.random::<f64>()
}

/// A point drawn uniformly in the box.
pub(crate) fn uniform_in(rng: &mut SimRng, b: Bounds) -> Vec3 {
    Vec3::new(
        uniform(rng, b.min.x, b.max.x),
        uniform(rng, b.min.y, b.max.y),
        uniform(rng, b.min.z, b.max.z),
    )
}

/// `p` moved onto the box (rounding in interpolation can leave a point one
/// ulp outside).
#[inline]
pub(crate) fn clamp_to(b: Bounds, p: Vec3) -> Vec3 {
    Vec3::new(
        p.x.clamp(b.min.x, b.max.x),
        p.y.clamp(b.min.y, b.max.y),
        p.z.clamp(b.min.z, b.max.z),
    )
}

/// The configured initial position (checked to lie in the box) or one
/// drawn uniformly in it.
pub(crate) fn initial_position(
    given: Option<[f64; 3]>,
    field: &'static str,
    b: Bounds,
    rng: &mut SimRng,
) -> Result<Vec3, MobilityError> {
    match given {
        Some(p) => {
            let p = vec3(p);
            check(
                p.x.is_finite() && p.y.is_finite() && p.z.is_finite() && b.contains(p),
                field,
                format!("{p:?}"),
                "a point inside the simulation bounds",
            )?;
            Ok(p)
        }
        None => Ok(uniform_in(rng, b)),
    }
}

/// Reflect coordinate `x` into `[lo, hi]` as a ball bouncing between two
/// walls would be: returns the folded coordinate and the sign (+1 / −1)
/// the velocity along this axis has after the bounces.
#[inline]
pub(crate) fn reflect(x: f64, lo: f64, hi: f64) -> (f64, f64) {
    let w = hi - lo;
    if w <= 0.0 || !x.is_finite() {
        return (lo, 1.0);
    }
    // Inside the box (the common case): `rem_euclid` of a value in
    // [0, w] is that value exactly, so skipping it (an `fmod`, the bulk
    // of a Gauss-Markov position query) changes no bit (issue 40).
    let a = x - lo;
    if (0.0..=w).contains(&a) {
        return ((lo + a).clamp(lo, hi), 1.0);
    }
    let u = a.rem_euclid(2.0 * w);
    if u <= w {
        ((lo + u).clamp(lo, hi), 1.0)
    } else {
        ((lo + 2.0 * w - u).clamp(lo, hi), -1.0)
    }
}

/// Wrap coordinate `x` into `[lo, hi]` (a torus).
pub(crate) fn wrap(x: f64, lo: f64, hi: f64) -> f64 {
    let w = hi - lo;
    if w <= 0.0 || !x.is_finite() {
        return lo;
    }
    (lo + (x - lo).rem_euclid(w)).clamp(lo, hi)
}

/// Seconds since the start of the simulation.
pub(crate) fn secs(t: Time) -> f64 {
    t.as_secs_f64()
}

#[cfg(test)]
mod tests;
