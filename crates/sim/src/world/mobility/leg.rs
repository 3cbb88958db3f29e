//! Piecewise-linear motion, walked leg by leg.
//!
//! Random waypoint, random direction and Manhattan move in straight legs
//! (`from` at `t0` to `to` at `t1`, a pause being a leg with `from == to`).
//! A [`LegSource`] makes the next leg when the current one ends; the
//! [`Walker`] asks for legs lazily as time advances, so a model costs
//! nothing between samples and its random draws happen in a fixed order
//! (leg after leg), whatever the sampling times.

use super::{clamp_to, secs, Mobility};
use crate::world::geom::{Bounds, Vec3};
use peregrine_cc::Time;

/// Shortest leg, seconds: a source that returns a zero-length leg still
/// advances time, so walking never stalls.
const MIN_LEG_S: f64 = 1e-9;

/// A straight move from `from` at `t0` to `to` at `t1` (seconds).
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct Leg {
    /// Start time, seconds.
    pub t0: f64,
    /// End time, seconds (`f64::INFINITY` for "forever").
    pub t1: f64,
    /// Position at `t0`, metres.
    pub from: Vec3,
    /// Position at `t1`, metres.
    pub to: Vec3,
}

impl Leg {
    /// A leg from `from` at `t0` to `to` at speed `speed_mps` (`> 0`).
    pub fn travel(t0: f64, from: Vec3, to: Vec3, speed_mps: f64) -> Leg {
        let d = from.distance(to);
        Leg {
            t0,
            t1: t0 + d / speed_mps,
            from,
            to,
        }
    }

    /// Standing at `at` from `t0` for `pause_s` seconds.
    pub fn pause(t0: f64, at: Vec3, pause_s: f64) -> Leg {
        Leg {
            t0,
            t1: t0 + pause_s,
            from: at,
            to: at,
        }
    }

    /// Position at `t` (clamped to the leg's span).
    pub fn at(&self, t: f64) -> Vec3 {
        if !self.t1.is_finite() || self.t1 <= self.t0 {
            return if t >= self.t1 { self.to } else { self.from };
        }
        let f = ((t - self.t0) / (self.t1 - self.t0)).clamp(0.0, 1.0);
        if f >= 1.0 {
            self.to
        } else {
            self.from.lerp(self.to, f)
        }
    }

    /// Velocity along the leg, m/s.
    pub fn velocity(&self) -> Vec3 {
        let dt = self.t1 - self.t0;
        if !dt.is_finite() || dt <= 0.0 {
            Vec3::ZERO
        } else {
            (self.to - self.from).scale(1.0 / dt)
        }
    }
}

/// What makes the next leg of a piecewise-linear model.
pub(crate) trait LegSource: Send {
    /// The leg that starts where and when `prev` ends.
    fn next_leg(&mut self, prev: &Leg) -> Leg;
}

/// A [`Mobility`] that walks the legs of a [`LegSource`].
pub(crate) struct Walker<S> {
    /// The leg generator.
    pub source: S,
    leg: Leg,
    bounds: Bounds,
}

impl<S: LegSource> Walker<S> {
    /// Start with leg `first`; positions are kept inside `bounds`.
    pub fn new(source: S, first: Leg, bounds: Bounds) -> Walker<S> {
        Walker {
            source,
            leg: first,
            bounds,
        }
    }

    /// Advance to the leg containing `t` (a leg is left at its end time).
    fn advance(&mut self, t: f64) {
        while t >= self.leg.t1 {
            let mut next = self.source.next_leg(&self.leg);
            let min_end = (next.t0 + MIN_LEG_S).max(next.t0.next_up());
            if next.t1.is_nan() || next.t1 < min_end {
                next.t1 = min_end;
            }
            self.leg = next;
        }
    }
}

impl<S: LegSource> Mobility for Walker<S> {
    fn position(&mut self, t: Time) -> Vec3 {
        let t = secs(t);
        self.advance(t);
        clamp_to(self.bounds, self.leg.at(t))
    }

    fn velocity(&mut self, t: Time) -> Vec3 {
        self.advance(secs(t));
        self.leg.velocity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Back and forth between two points at 1 m/s, pausing 1 s at each end.
    struct PingPong;
    impl LegSource for PingPong {
        fn next_leg(&mut self, prev: &Leg) -> Leg {
            if prev.from == prev.to {
                let dest = if prev.to.x == 0.0 {
                    Vec3::new(2.0, 0.0, 0.0)
                } else {
                    Vec3::ZERO
                };
                Leg::travel(prev.t1, prev.to, dest, 1.0)
            } else {
                Leg::pause(prev.t1, prev.to, 1.0)
            }
        }
    }

    #[test]
    fn walker_follows_legs_and_pauses() {
        let b = Bounds::from_size(2.0, 0.0, 0.0);
        let mut w = Walker::new(PingPong, Leg::pause(0.0, Vec3::ZERO, 1.0), b);
        let at = |w: &mut Walker<PingPong>, s: f64| w.position(Time::from_secs_f64(s)).x;
        assert_eq!(at(&mut w, 0.5), 0.0);
        assert!((at(&mut w, 2.0) - 1.0).abs() < 1e-12);
        assert_eq!(w.velocity(Time::from_secs_f64(2.0)).x, 1.0);
        assert_eq!(at(&mut w, 3.5), 2.0); // pausing at the far end
        assert_eq!(w.velocity(Time::from_secs_f64(3.5)), Vec3::ZERO);
        assert!((at(&mut w, 4.5) - 1.5).abs() < 1e-12); // on the way back
        assert!(w.velocity(Time::from_secs_f64(4.5)).x < 0.0);
    }

    #[test]
    fn zero_length_legs_still_advance_time() {
        struct Stuck;
        impl LegSource for Stuck {
            fn next_leg(&mut self, prev: &Leg) -> Leg {
                Leg::pause(prev.t1, prev.to, 0.0)
            }
        }
        let mut w = Walker::new(
            Stuck,
            Leg::pause(0.0, Vec3::ZERO, 0.0),
            Bounds::from_size(1.0, 1.0, 1.0),
        );
        // Terminates (1 µs / 1 ns = 1000 legs) and stays put.
        assert_eq!(w.position(Time::from_micros(1)), Vec3::ZERO);
    }
}
