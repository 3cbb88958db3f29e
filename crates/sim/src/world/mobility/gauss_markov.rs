//! Gauss-Markov mobility in 3-D, exactly per seed 001 Eqs. 1–5 (after Liang
//! & Haas, INFOCOM 1999, and ns-3's `GaussMarkovMobilityModel`).
//!
//! Every `update_interval_s` (seed 001: 0.1 s) the speed `s`, direction `d`
//! (azimuth) and pitch `p` are updated from their previous values, their
//! means and Gaussian innovations:
//!
//! ```text
//! s_n = α s_{n−1} + (1 − α) s̄ + √(1 − α²) σ_s x_n        (Eq. 1)
//! d_n = α d_{n−1} + (1 − α) d̄ + √(1 − α²) σ_d y_n        (Eq. 2)
//! p_n = α p_{n−1} + (1 − α) p̄ + √(1 − α²) σ_p z_n        (Eq. 3)
//! v_n = s_n (cos d_n cos p_n, sin d_n cos p_n, sin p_n)   (Eqs. 4–5)
//! ```
//!
//! with `x_n, y_n, z_n ~ N(0, 1)` independent. The node moves in a straight
//! line at `v_n` until the next update, so positions are linear in time
//! between updates. `σ` is the stationary standard deviation of each
//! process (its variance is `α² Var + (1 − α²) σ² = σ²` at equilibrium).
//!
//! Walls reflect: within a step the path is folded back into the box, and
//! a component of the velocity that bounced an odd number of times flips,
//! which is the same as mirroring the angles (`d → π − d` for x, `d → −d`
//! for y, `p → −p` for z). The means are mirrored with them, as in ns-3, so
//! that the process does not keep steering into the wall it just left.
//! Before each update the mean direction is moved by whole turns next to
//! the current direction, so that averaging 179° with −179° gives 180°, not
//! 0°.

use super::{check, initial_position, non_negative, secs, uniform, MobilityError, MAX_SPEED_MPS};
use super::{Mobility, MobilityConfig, Segment};
use crate::rng::SimRng;
use crate::world::geom::{Bounds, Vec3};
use peregrine_cc::Time;
use rand::RngExt;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};
use std::f64::consts::{PI, TAU};

/// `model = "gauss_markov"`. Defaults follow seed 001 where it gives a value
/// (20 m/s mean speed, 0.1 s step); the rest are project choices documented
/// in `docs/sim-parts/mobility.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GaussMarkovConfig {
    /// Initial position `[x, y, z]`, metres; default: uniform in the box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_position_m: Option<[f64; 3]>,
    /// Memory α in `[0, 1]`: 1 keeps the velocity forever, 0 is memoryless;
    /// default 0.85 (ns-3's default).
    pub alpha: f64,
    /// Mean speed s̄, m/s, in `[0, 1000]`; default 20 (seed 001).
    pub mean_speed_mps: f64,
    /// Each node's s̄ is drawn uniformly in `mean_speed_mps ± this`, m/s
    /// (seed 001: "mean velocity … randomly defined between two
    /// thresholds"); `<= mean_speed_mps`; default 0 (all nodes alike).
    pub mean_speed_spread_mps: f64,
    /// Stationary standard deviation σ_s of the speed, m/s; default 2.
    pub speed_std_mps: f64,
    /// Mean direction d̄ (azimuth from +x towards +y), degrees; default:
    /// drawn uniformly in `[0, 360)` per node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_direction_deg: Option<f64>,
    /// Standard deviation σ_d of the direction, degrees; default 30.
    pub direction_std_deg: f64,
    /// Mean pitch p̄ (above the horizontal), degrees, in `[−90, 90]`;
    /// default 0.
    pub mean_pitch_deg: f64,
    /// Standard deviation σ_p of the pitch, degrees; default 10.
    pub pitch_std_deg: f64,
    /// Time between updates, seconds, `>= 0.001`; default 0.1 (seed 001).
    pub update_interval_s: f64,
}

impl Default for GaussMarkovConfig {
    fn default() -> Self {
        GaussMarkovConfig {
            initial_position_m: None,
            alpha: 0.85,
            mean_speed_mps: 20.0,
            mean_speed_spread_mps: 0.0,
            speed_std_mps: 2.0,
            mean_direction_deg: None,
            direction_std_deg: 30.0,
            mean_pitch_deg: 0.0,
            pitch_std_deg: 10.0,
            update_interval_s: 0.1,
        }
    }
}

impl GaussMarkovConfig {
    pub(crate) fn validate(&self) -> Result<(), MobilityError> {
        check(
            (0.0..=1.0).contains(&self.alpha),
            "gauss_markov.alpha",
            self.alpha,
            "0 <= alpha <= 1",
        )?;
        check(
            non_negative(self.mean_speed_mps) && self.mean_speed_mps <= MAX_SPEED_MPS,
            "gauss_markov.mean_speed_mps",
            self.mean_speed_mps,
            "0 <= speed <= 1000 m/s",
        )?;
        check(
            non_negative(self.mean_speed_spread_mps)
                && self.mean_speed_spread_mps <= self.mean_speed_mps,
            "gauss_markov.mean_speed_spread_mps",
            self.mean_speed_spread_mps,
            "0 <= spread <= mean_speed_mps",
        )?;
        check(
            non_negative(self.speed_std_mps),
            "gauss_markov.speed_std_mps",
            self.speed_std_mps,
            "a finite value >= 0 m/s",
        )?;
        if let Some(d) = self.mean_direction_deg {
            check(
                d.is_finite(),
                "gauss_markov.mean_direction_deg",
                d,
                "a finite angle in degrees",
            )?;
        }
        check(
            non_negative(self.direction_std_deg),
            "gauss_markov.direction_std_deg",
            self.direction_std_deg,
            "a finite value >= 0 degrees",
        )?;
        check(
            (-90.0..=90.0).contains(&self.mean_pitch_deg),
            "gauss_markov.mean_pitch_deg",
            self.mean_pitch_deg,
            "-90 <= pitch <= 90 degrees",
        )?;
        check(
            non_negative(self.pitch_std_deg),
            "gauss_markov.pitch_std_deg",
            self.pitch_std_deg,
            "a finite value >= 0 degrees",
        )?;
        check(
            self.update_interval_s.is_finite() && self.update_interval_s >= 1e-3,
            "gauss_markov.update_interval_s",
            self.update_interval_s,
            "a finite interval >= 0.001 s",
        )
    }

    pub(crate) fn build(&self, b: Bounds, mut rng: SimRng) -> Result<GaussMarkov, MobilityError> {
        let start = initial_position(
            self.initial_position_m,
            "gauss_markov.initial_position_m",
            b,
            &mut rng,
        )?;
        let mean_speed = uniform(
            &mut rng,
            self.mean_speed_mps - self.mean_speed_spread_mps,
            self.mean_speed_mps + self.mean_speed_spread_mps,
        );
        let mean_direction = match self.mean_direction_deg {
            Some(d) => d.to_radians(),
            None => uniform(&mut rng, 0.0, TAU),
        };
        let mean_pitch = self.mean_pitch_deg.to_radians();
        let mut gm = GaussMarkov {
            cfg: self.clone(),
            bounds: b,
            rng,
            mean_speed,
            mean_direction,
            mean_pitch,
            // ns-3 starts every process at its mean.
            speed: mean_speed,
            direction: mean_direction,
            pitch: mean_pitch,
            step_index: 0,
            step_start_s: 0.0,
            step_from: start,
            step_velocity: Vec3::ZERO,
        };
        gm.step_velocity = gm.velocity_now();
        Ok(gm)
    }
}

/// A Gauss-Markov node. Besides [`Mobility`], it exposes its current
/// process values for tests and traces.
pub struct GaussMarkov {
    cfg: GaussMarkovConfig,
    bounds: Bounds,
    rng: SimRng,
    mean_speed: f64,
    mean_direction: f64,
    mean_pitch: f64,
    speed: f64,
    direction: f64,
    pitch: f64,
    /// Number of the current step (from 0).
    step_index: u64,
    /// Start of the current step, seconds (`step_index · interval`, not
    /// accumulated, so it does not drift).
    step_start_s: f64,
    /// Position at the start of the current step.
    step_from: Vec3,
    /// Velocity over the current step (before reflections within it).
    step_velocity: Vec3,
}

impl GaussMarkov {
    /// Build from a config (the same as [`MobilityConfig::build`] but with
    /// the concrete type, for callers that want [`GaussMarkov::speed_mps`]).
    pub fn new(
        cfg: &GaussMarkovConfig,
        node: usize,
        bounds: Bounds,
        seed: u64,
    ) -> Result<GaussMarkov, MobilityError> {
        MobilityConfig::GaussMarkov(cfg.clone()).validate()?;
        super::check_bounds(bounds)?;
        cfg.build(
            bounds,
            crate::rng::component_rng(seed, &format!("mobility/{node}")),
        )
    }

    /// The current speed process value `s_n`, m/s (may be negative: Eq. 1
    /// is not truncated; the node then moves backwards along `d_n`).
    pub fn speed_mps(&self) -> f64 {
        self.speed
    }

    /// This node's mean speed s̄, m/s.
    pub fn mean_speed_mps(&self) -> f64 {
        self.mean_speed
    }

    /// Eq. 4: the velocity of the current process values.
    fn velocity_now(&self) -> Vec3 {
        let (s, d, p) = (self.speed, self.direction, self.pitch);
        Vec3::new(s * d.cos() * p.cos(), s * d.sin() * p.cos(), s * p.sin())
    }

    /// Position (folded into the box) and velocity (with bounced components
    /// flipped) `dt` seconds into the current step, plus which axes bounced
    /// an odd number of times.
    fn within_step(&self, dt: f64) -> (Vec3, Vec3, [bool; 3]) {
        // The step's segment folds the path, as `position` does (one
        // implementation, so a cached segment gives the same bits).
        let (p, [sx, sy, sz]) = self.segment_now().fold(dt);
        let b = self.bounds;
        let v = self.step_velocity;
        let flat = |lo: f64, hi: f64| hi <= lo;
        let comp = |c: f64, s: f64, lo: f64, hi: f64| if flat(lo, hi) { 0.0 } else { c * s };
        (
            p,
            Vec3::new(
                comp(v.x, sx, b.min.x, b.max.x),
                comp(v.y, sy, b.min.y, b.max.y),
                comp(v.z, sz, b.min.z, b.max.z),
            ),
            [sx < 0.0, sy < 0.0, sz < 0.0],
        )
    }

    /// Move to the end of the current step, mirror angles for the walls hit,
    /// and apply Eqs. 1–5 for the next step.
    fn step(&mut self) {
        let dt = self.cfg.update_interval_s;
        let (end, _, flipped) = self.within_step(dt);
        if flipped[0] {
            self.direction = PI - self.direction;
            self.mean_direction = PI - self.mean_direction;
        }
        if flipped[1] {
            self.direction = -self.direction;
            self.mean_direction = -self.mean_direction;
        }
        if flipped[2] {
            self.pitch = -self.pitch;
            self.mean_pitch = -self.mean_pitch;
        }
        // Keep both angles in (−π, π] and the mean on the direction's branch.
        self.direction = wrap_pi(self.direction);
        self.mean_direction = self.direction + wrap_pi(self.mean_direction - self.direction);

        let a = self.cfg.alpha;
        let k = (1.0 - a * a).max(0.0).sqrt();
        let (x, y, z): (f64, f64, f64) = (
            self.rng.sample(StandardNormal),
            self.rng.sample(StandardNormal),
            self.rng.sample(StandardNormal),
        );
        self.speed = a * self.speed + (1.0 - a) * self.mean_speed + k * self.cfg.speed_std_mps * x;
        self.direction = a * self.direction
            + (1.0 - a) * self.mean_direction
            + k * self.cfg.direction_std_deg.to_radians() * y;
        self.pitch = a * self.pitch
            + (1.0 - a) * self.mean_pitch
            + k * self.cfg.pitch_std_deg.to_radians() * z;

        self.step_index += 1;
        self.step_start_s = self.step_index as f64 * dt;
        self.step_from = end;
        self.step_velocity = self.velocity_now();
    }

    /// The current step as a [`Segment`]: it ends where
    /// [`advance`](Self::advance) would take the next step.
    fn segment_now(&self) -> Segment {
        Segment {
            from: self.step_from,
            velocity: self.step_velocity,
            start_s: self.step_start_s,
            until_s: (self.step_index + 1) as f64 * self.cfg.update_interval_s,
            bounds: self.bounds,
        }
    }

    /// Run the process up to the step containing `t` seconds.
    fn advance(&mut self, t: f64) {
        while t >= (self.step_index + 1) as f64 * self.cfg.update_interval_s {
            self.step();
        }
    }
}

/// `a` moved by whole turns into `(−π, π]`.
fn wrap_pi(a: f64) -> f64 {
    let r = (a + PI).rem_euclid(TAU) - PI;
    if r <= -PI {
        r + TAU
    } else {
        r
    }
}

impl Mobility for GaussMarkov {
    fn position(&mut self, t: Time) -> Vec3 {
        self.advance(secs(t));
        self.segment_now().position(t)
    }

    fn velocity(&mut self, t: Time) -> Vec3 {
        let t = secs(t);
        self.advance(t);
        self.within_step((t - self.step_start_s).max(0.0)).1
    }

    fn segment(&mut self, t: Time) -> Option<Segment> {
        self.advance(secs(t));
        Some(self.segment_now())
    }
}

#[cfg(test)]
#[path = "gauss_markov_tests.rs"]
mod tests;
