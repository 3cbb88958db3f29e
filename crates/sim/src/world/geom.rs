//! Points and vectors in metres, and the simulation box.

use serde::{Deserialize, Serialize};

/// A point or vector in 3-D space, in metres (x east, y north, z up).
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Vec3 {
    /// East, metres.
    pub x: f64,
    /// North, metres.
    pub y: f64,
    /// Up, metres.
    pub z: f64,
}

impl Vec3 {
    /// The vector (x, y, z).
    pub const fn new(x: f64, y: f64, z: f64) -> Vec3 {
        Vec3 { x, y, z }
    }

    /// The zero vector.
    pub const ZERO: Vec3 = Vec3::new(0.0, 0.0, 0.0);

    /// Euclidean length.
    pub fn norm(self) -> f64 {
        (self.x * self.x + self.y * self.y + self.z * self.z).sqrt()
    }

    /// Distance to `other`, metres.
    pub fn distance(self, other: Vec3) -> f64 {
        (self - other).norm()
    }

    /// `self * k`.
    pub fn scale(self, k: f64) -> Vec3 {
        Vec3::new(self.x * k, self.y * k, self.z * k)
    }

    /// Dot product.
    pub fn dot(self, other: Vec3) -> f64 {
        self.x * other.x + self.y * other.y + self.z * other.z
    }

    /// Linear interpolation: `self` at `t = 0`, `other` at `t = 1`.
    pub fn lerp(self, other: Vec3, t: f64) -> Vec3 {
        self + (other - self).scale(t)
    }
}

impl std::ops::Add for Vec3 {
    type Output = Vec3;
    fn add(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl std::ops::Sub for Vec3 {
    type Output = Vec3;
    fn sub(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

/// An axis-aligned box `[min, max]` in metres: the simulation area.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    /// The corner with the smallest coordinates.
    pub min: Vec3,
    /// The corner with the largest coordinates.
    pub max: Vec3,
}

impl Bounds {
    /// The box from the origin to `(x, y, z)`.
    pub fn from_size(x: f64, y: f64, z: f64) -> Bounds {
        Bounds {
            min: Vec3::ZERO,
            max: Vec3::new(x, y, z),
        }
    }

    /// Whether `p` lies inside (edges included).
    pub fn contains(&self, p: Vec3) -> bool {
        (self.min.x..=self.max.x).contains(&p.x)
            && (self.min.y..=self.max.y).contains(&p.y)
            && (self.min.z..=self.max.z).contains(&p.z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_and_lerp() {
        let a = Vec3::new(0.0, 0.0, 0.0);
        let b = Vec3::new(3.0, 4.0, 12.0);
        assert_eq!(a.distance(b), 13.0);
        assert_eq!(a.lerp(b, 0.5), Vec3::new(1.5, 2.0, 6.0));
        assert!(Bounds::from_size(3.0, 4.0, 12.0).contains(b));
        assert!(!Bounds::from_size(3.0, 4.0, 11.0).contains(b));
    }
}
