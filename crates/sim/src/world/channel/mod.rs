//! Radio channels: what a transmission between two positions experiences.
//!
//! Two models, both pure values driven in virtual time by the engine,
//! which passes positions (and velocities) in as plain [`Vec3`]s:
//!
//! * [`wifi`]: an 802.11b-like ad hoc channel for the drone swarm (seed
//!   001): log-distance path loss with log-normal shadowing → SNR → packet
//!   error rate per PHY rate, and a shared medium with DCF airtime,
//!   Bianchi-style collisions and MAC retries folded into one
//!   [`wifi::TxOutcome`].
//! * [`mmwave`]: a 28 GHz vehicle ↔ road-side base station channel (seed
//!   004): capacity from SNR, line of sight from [`obstacles`], and three
//!   distinct failure kinds (blockage, deafness, beam misalignment) plus
//!   handovers, each an outage with a duration known when it starts, so
//!   that [`hints`] can turn them into `LinkHint`s of chosen accuracy.
//!
//! Every random draw comes from [`component_rng`](crate::rng::component_rng)
//! streams named after the channel and the link or vehicle, so a run is
//! reproducible bit for bit and adding a node does not perturb the others.
//!
//! [`Vec3`]: crate::world::geom::Vec3

pub mod hints;
pub mod mmwave;
pub mod obstacles;
pub mod wifi;

use thiserror::Error;

/// A rejected channel configuration: which field, and why.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invalid channel config: `{field}` {reason}")]
pub struct ConfigError {
    /// Name of the offending field as written in a scenario file
    /// (`"path_loss_exponent"`, `"density.buildings_per_ha"`).
    pub field: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl ConfigError {
    pub(crate) fn new(field: &str, reason: &'static str) -> ConfigError {
        ConfigError {
            field: field.to_string(),
            reason,
        }
    }
}

/// Checks that `v` is finite and within `[lo, hi]`, naming `field` if not.
pub(crate) fn check_range(field: &str, v: f64, lo: f64, hi: f64) -> Result<(), ConfigError> {
    if !v.is_finite() {
        return Err(ConfigError::new(field, "must be a finite number"));
    }
    if v < lo || v > hi {
        return Err(ConfigError::new(field, "is out of its allowed range"));
    }
    Ok(())
}

/// dB → linear power ratio.
pub fn db_to_linear(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

/// Linear power ratio → dB (−∞ for 0).
pub fn linear_to_db(x: f64) -> f64 {
    10.0 * x.log10()
}

/// Thermal noise power in dBm over `bandwidth_hz` at 290 K, plus the
/// receiver's noise figure: `−174 dBm/Hz + 10·log10(B) + NF`.
pub fn noise_floor_dbm(bandwidth_hz: f64, noise_figure_db: f64) -> f64 {
    -174.0 + 10.0 * bandwidth_hz.log10() + noise_figure_db
}

/// SplitMix64's mixer (the project's one, [`peregrine_proto::rng::mix64`]):
/// random-access draws (shadowing at a given link and time) hash a key
/// that itself comes from a component generator.
pub(crate) use peregrine_proto::rng::mix64;

/// A standard normal deviate that is a pure function of `h` (Box–Muller on
/// two 53-bit uniforms derived from it).
pub(crate) fn normal_from_hash(h: u64) -> f64 {
    let a = mix64(h);
    let b = mix64(a ^ 0x5851_f42d_4c95_7f2d);
    // (0, 1]: never 0, so the logarithm is finite.
    let u1 = ((a >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let u2 = (b >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_conversions_round_trip_and_noise_floor_is_thermal() {
        assert!((linear_to_db(db_to_linear(7.3)) - 7.3).abs() < 1e-12);
        // 22 MHz, NF 7 dB: −174 + 73.42 + 7.
        assert!((noise_floor_dbm(22e6, 7.0) - (-93.58)).abs() < 0.01);
    }

    #[test]
    fn hashed_normals_have_unit_moments() {
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|i| normal_from_hash(i as u64)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "var {var}");
    }
}
