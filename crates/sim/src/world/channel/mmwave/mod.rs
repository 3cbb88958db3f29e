//! A 28 GHz vehicle ↔ road-side base station channel (seed 004, issue 11).
//!
//! **Radio.** Path loss from the NYU 28 GHz measurements (M. R. Akdeniz et
//! al., "Millimeter wave channel modeling and cellular capacity
//! evaluation", IEEE JSAC 32(6), 2014, Table I): `PL = α + 10·β·log10(d)`
//! with `α = 61.4, β = 2.0` in line of sight and `α = 72.0, β = 2.92`
//! when a building cuts it; a tree or a vehicle in the way adds a fixed
//! loss instead. `SNR = P_tx + G_bf − PL − N`, `N = −174 + 10·log10(B) + NF`.
//! Capacity is Shannon with an implementation gap, capped:
//! `C = min(cap, B·log2(1 + SNR/Γ))`, zero below the minimum SNR.
//!
//! **Association.** Each vehicle is served by one base station: the best
//! SNR at first sight, then a handover when another one is better by the
//! hysteresis for the time-to-trigger; a handover interrupts the link.
//!
//! **Failures** are outages with a duration fixed when they start (so
//! that a perfect hint can announce it), three kinds plus handovers:
//! see [`FailureKind`] and `docs/sim-parts/mmwave.md`. Deafness and beam
//! misalignment are recovered by the MAC within `link_recovery_ms`
//! (10 ms, seed 004 §3.2.5); a blockage lasts until line of sight returns,
//! another base station in line of sight takes over, or the beam is
//! re-acquired on the blocked (NLOS) path, whichever comes first.

mod channel;

pub use channel::{Association, MmWaveChannel};

use super::obstacles::ObstacleDensity;
use super::{check_range, noise_floor_dbm, ConfigError};
use crate::Time;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Parameters of the mmWave channel. Absent fields take the documented
/// default (the urban preset); unknown fields are rejected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MmWaveConfig {
    /// System bandwidth, Hz. Default 1 GHz (seed 004).
    pub bandwidth_hz: f64,
    /// Transmit power, dBm. Default 30 dBm (seed 004).
    pub tx_power_dbm: f64,
    /// Transmit plus receive beamforming gain, dB. Default 12 dB (4 × 4
    /// antennas, seed 004: 10·log10(4) on each side).
    pub beamforming_gain_db: f64,
    /// Receiver noise figure, dB. Default 7 dB.
    pub noise_figure_db: f64,
    /// LOS path loss at 1 m, dB. Default 61.4 (Akdeniz et al. 2014).
    pub los_alpha_db: f64,
    /// LOS path-loss exponent. Default 2.0.
    pub los_beta: f64,
    /// NLOS (building in the way) path loss at 1 m, dB. Default 72.0.
    pub nlos_alpha_db: f64,
    /// NLOS path-loss exponent. Default 2.92.
    pub nlos_beta: f64,
    /// Extra loss per tree crossed, dB. Default 15 dB (foliage at 28 GHz:
    /// a few dB per metre of canopy, ITU-R P.833).
    pub tree_loss_db: f64,
    /// Extra loss per vehicle crossed, dB. Default 15 dB (vehicle
    /// blockage losses of 10–20 dB are typical at mmWave).
    pub vehicle_loss_db: f64,
    /// Shannon implementation gap Γ, dB. Default 3 dB.
    pub implementation_gap_db: f64,
    /// Capacity cap, bit/s. Default 2 Gbit/s (the highest load of seed 004).
    pub capacity_cap_bps: u64,
    /// Below this SNR the link carries nothing, dB. Default −5 dB.
    pub min_snr_db: f64,
    /// Base-station antenna height, m. Default 5 m (road-side unit).
    pub bs_height_m: f64,
    /// Vehicle antenna height above the vehicle's position, m. Default 1.5.
    pub vehicle_antenna_height_m: f64,
    /// Vehicle body length, m (a moving blocker). Default 4.5.
    pub vehicle_length_m: f64,
    /// Vehicle body width, m. Default 1.8.
    pub vehicle_width_m: f64,
    /// Vehicle body height, m. Default 2.0 (a mix of cars and vans).
    pub vehicle_height_m: f64,
    /// Handover hysteresis, dB. Default 3.
    pub handover_hysteresis_db: f64,
    /// Handover time-to-trigger, ms. Default 40 (a 3GPP value).
    pub time_to_trigger_ms: f64,
    /// Link interruption of a handover, ms. Default 20.
    pub handover_interruption_ms: f64,
    /// Time to re-acquire a beam on the blocked (NLOS) path of the serving
    /// base station, ms (beam-failure recovery). Default 100.
    pub nlos_recovery_ms: f64,
    /// How far ahead a blockage's end is predicted, ms; also the longest
    /// blockage event. Default 2000.
    pub blockage_horizon_ms: f64,
    /// Step of the blockage-end prediction, ms. Default 5.
    pub prediction_step_ms: f64,
    /// Deafness events per second per other vehicle served by the same
    /// base station. Default 0.2.
    pub deafness_rate_per_peer_hz: f64,
    /// Time a base station's beam dwells on one served vehicle, ms: a
    /// deafness lasts until the beam comes back. Default 2.
    pub beam_dwell_ms: f64,
    /// Beam width (half-power), degrees. Default 30 (seed 004 Fig. 5).
    pub beamwidth_deg: f64,
    /// Fraction of beam-width crossings that beam tracking misses, each
    /// missed one a misalignment. Default 0.1.
    pub misalignment_factor: f64,
    /// The MAC recovers deafness and misalignment within this, ms.
    /// Default 10 (seed 004 §3.2.5).
    pub link_recovery_ms: f64,
    /// Shortest transient outage, ms. Default 0.5.
    pub min_outage_ms: f64,
    /// Obstacle densities for generated fields (the preset's difference).
    pub density: ObstacleDensity,
    /// The fading channel of issue 23 instead of on/off outages: shadowing,
    /// interference from other stations' beams, blockage as an attenuation
    /// (counted, not a switch), misalignment loss from the geometry; the
    /// capacity is continuous in SINR. Default false (the issue-11 model,
    /// so older outputs are unchanged).
    pub fading: bool,
    /// Log-normal shadowing σ in line of sight, dB. Default 5.8 (Akdeniz
    /// et al. 2014, Table I, 28 GHz LOS).
    pub los_shadowing_db: f64,
    /// Log-normal shadowing σ behind a building, dB. Default 8.7 (NLOS).
    pub nlos_shadowing_db: f64,
    /// Distance over which shadowing decorrelates, m (Gudmundson's
    /// exponential model). Default 10.
    pub shadowing_decorrelation_m: f64,
    /// Largest beam-pattern attenuation off boresight, dB (3GPP TR 38.901
    /// pattern `min(12·(θ/θ3dB)², A_m)`). Default 20.
    pub sidelobe_db: f64,
    /// Beam tracking refreshes the beam every so often, ms; in between the
    /// pointing error grows with the angular speed. Default 20.
    pub beam_tracking_period_ms: f64,
}

impl Default for MmWaveConfig {
    fn default() -> MmWaveConfig {
        MmWaveConfig::urban()
    }
}

impl MmWaveConfig {
    /// The urban preset: many buildings and trees.
    pub fn urban() -> MmWaveConfig {
        MmWaveConfig {
            bandwidth_hz: 1e9,
            tx_power_dbm: 30.0,
            beamforming_gain_db: 12.0,
            noise_figure_db: 7.0,
            los_alpha_db: 61.4,
            los_beta: 2.0,
            nlos_alpha_db: 72.0,
            nlos_beta: 2.92,
            tree_loss_db: 15.0,
            vehicle_loss_db: 15.0,
            implementation_gap_db: 3.0,
            capacity_cap_bps: 2_000_000_000,
            min_snr_db: -5.0,
            bs_height_m: 5.0,
            vehicle_antenna_height_m: 1.5,
            vehicle_length_m: 4.5,
            vehicle_width_m: 1.8,
            vehicle_height_m: 2.0,
            handover_hysteresis_db: 3.0,
            time_to_trigger_ms: 40.0,
            handover_interruption_ms: 20.0,
            nlos_recovery_ms: 100.0,
            blockage_horizon_ms: 2000.0,
            prediction_step_ms: 5.0,
            deafness_rate_per_peer_hz: 0.2,
            beam_dwell_ms: 2.0,
            beamwidth_deg: 30.0,
            misalignment_factor: 0.1,
            link_recovery_ms: 10.0,
            min_outage_ms: 0.5,
            density: ObstacleDensity::urban(),
            fading: false,
            los_shadowing_db: 5.8,
            nlos_shadowing_db: 8.7,
            shadowing_decorrelation_m: 10.0,
            sidelobe_db: 20.0,
            beam_tracking_period_ms: 20.0,
        }
    }

    /// The rural preset: the urban radio with few obstacles.
    pub fn rural() -> MmWaveConfig {
        MmWaveConfig {
            density: ObstacleDensity::rural(),
            ..MmWaveConfig::urban()
        }
    }

    /// Checks every field, naming the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let checks: [(&str, f64, f64, f64); 31] = [
            ("bandwidth_hz", self.bandwidth_hz, 1.0, 1e12),
            ("tx_power_dbm", self.tx_power_dbm, -50.0, 80.0),
            ("beamforming_gain_db", self.beamforming_gain_db, 0.0, 60.0),
            ("noise_figure_db", self.noise_figure_db, 0.0, 30.0),
            ("los_alpha_db", self.los_alpha_db, 0.0, 200.0),
            ("los_beta", self.los_beta, 0.5, 8.0),
            ("nlos_alpha_db", self.nlos_alpha_db, 0.0, 200.0),
            ("nlos_beta", self.nlos_beta, 0.5, 8.0),
            ("tree_loss_db", self.tree_loss_db, 0.0, 200.0),
            ("vehicle_loss_db", self.vehicle_loss_db, 0.0, 200.0),
            (
                "implementation_gap_db",
                self.implementation_gap_db,
                0.0,
                30.0,
            ),
            ("capacity_cap_bps", self.capacity_cap_bps as f64, 1.0, 1e13),
            ("min_snr_db", self.min_snr_db, -50.0, 50.0),
            ("bs_height_m", self.bs_height_m, 0.0, 1000.0),
            (
                "vehicle_antenna_height_m",
                self.vehicle_antenna_height_m,
                0.0,
                100.0,
            ),
            ("vehicle_length_m", self.vehicle_length_m, 0.0, 100.0),
            ("vehicle_width_m", self.vehicle_width_m, 0.0, 100.0),
            ("vehicle_height_m", self.vehicle_height_m, 0.0, 100.0),
            (
                "handover_hysteresis_db",
                self.handover_hysteresis_db,
                0.0,
                50.0,
            ),
            ("time_to_trigger_ms", self.time_to_trigger_ms, 0.0, 1e5),
            (
                "handover_interruption_ms",
                self.handover_interruption_ms,
                0.0,
                1e5,
            ),
            ("nlos_recovery_ms", self.nlos_recovery_ms, 0.0, 1e5),
            ("blockage_horizon_ms", self.blockage_horizon_ms, 1e-3, 1e6),
            ("prediction_step_ms", self.prediction_step_ms, 1e-3, 1e5),
            (
                "deafness_rate_per_peer_hz",
                self.deafness_rate_per_peer_hz,
                0.0,
                1e4,
            ),
            ("beam_dwell_ms", self.beam_dwell_ms, 0.0, 1e4),
            ("beamwidth_deg", self.beamwidth_deg, 0.1, 360.0),
            ("misalignment_factor", self.misalignment_factor, 0.0, 1e3),
            ("link_recovery_ms", self.link_recovery_ms, 1e-3, 1e5),
            ("min_outage_ms", self.min_outage_ms, 1e-3, 1e5),
            (
                "min_outage_ms",
                self.link_recovery_ms - self.min_outage_ms,
                0.0,
                1e5,
            ),
        ];
        for (field, v, lo, hi) in checks {
            check_range(field, v, lo, hi)?;
        }
        let fading: [(&str, f64, f64, f64); 5] = [
            ("los_shadowing_db", self.los_shadowing_db, 0.0, 40.0),
            ("nlos_shadowing_db", self.nlos_shadowing_db, 0.0, 40.0),
            (
                "shadowing_decorrelation_m",
                self.shadowing_decorrelation_m,
                0.01,
                1e5,
            ),
            ("sidelobe_db", self.sidelobe_db, 0.0, 100.0),
            (
                "beam_tracking_period_ms",
                self.beam_tracking_period_ms,
                0.01,
                1e5,
            ),
        ];
        for (field, v, lo, hi) in fading {
            check_range(field, v, lo, hi)?;
        }
        self.density.validate()
    }

    /// Receiver noise power, dBm.
    pub fn noise_dbm(&self) -> f64 {
        noise_floor_dbm(self.bandwidth_hz, self.noise_figure_db)
    }

    /// SNR at `distance_m` with `buildings`/`trees`/`vehicles` crossed, dB.
    /// A distance that is not a number (NaN positions) gives −∞.
    pub fn snr_db(&self, distance_m: f64, buildings: u32, trees: u32, vehicles: u32) -> f64 {
        if distance_m.is_nan() {
            return f64::NEG_INFINITY;
        }
        let d = distance_m.max(1.0);
        let pl = if buildings > 0 {
            self.nlos_alpha_db + 10.0 * self.nlos_beta * d.log10()
        } else {
            self.los_alpha_db + 10.0 * self.los_beta * d.log10()
        };
        let extra =
            f64::from(trees) * self.tree_loss_db + f64::from(vehicles) * self.vehicle_loss_db;
        self.tx_power_dbm + self.beamforming_gain_db - pl - extra - self.noise_dbm()
    }

    /// The highest SNR any path of `distance_m` can have, dB: the
    /// [`snr_db`](Self::snr_db) of a clear path or of a path through a
    /// building, whichever is higher (trees and vehicles only add loss).
    /// A station whose bound is below what a decision needs can be passed
    /// over without testing its line of sight (issue 40). O(1).
    pub fn snr_bound_db(&self, distance_m: f64) -> f64 {
        self.snr_db(distance_m, 0, 0, 0)
            .max(self.snr_db(distance_m, 1, 0, 0))
    }

    /// A distance beyond which no path reaches `snr_db`, m: every
    /// `d` with `snr_bound_db(d) ≥ snr_db − 10⁻⁶ dB` is at most this (the
    /// inverse of the bound, a little widened against rounding), so the
    /// stations farther away can be left out of a search whose bar is
    /// `snr_db` without computing their bound (issue 40). At least 1 m
    /// (the bound is flat below 1 m); +∞ for a NaN or −∞ bar. O(1).
    pub fn reach_m(&self, snr_db: f64) -> f64 {
        if snr_db.is_nan() || snr_db == f64::NEG_INFINITY {
            return f64::INFINITY;
        }
        // SNR = head − α − 10·β·log10(d), so d = 10^((head − α − SNR) / (10·β)).
        let head = self.tx_power_dbm + self.beamforming_gain_db - self.noise_dbm();
        let bar = snr_db - 1e-6;
        let reach = |alpha: f64, beta: f64| 10f64.powf((head - alpha - bar) / (10.0 * beta));
        let d = reach(self.los_alpha_db, self.los_beta)
            .max(reach(self.nlos_alpha_db, self.nlos_beta))
            .max(1.0);
        d * (1.0 + 1e-9) + 1e-9
    }

    /// Capacity at `snr_db`: `min(cap, B·log2(1 + SNR/Γ))`, 0 below the
    /// minimum SNR, bit/s.
    pub fn capacity_bps(&self, snr_db: f64) -> u64 {
        if snr_db.is_nan() || snr_db < self.min_snr_db {
            return 0;
        }
        let snr = 10f64.powf((snr_db - self.implementation_gap_db) / 10.0);
        let c = self.bandwidth_hz * (1.0 + snr).log2();
        (c.min(self.capacity_cap_bps as f64)) as u64
    }
}

impl MmWaveConfig {
    /// Capacity of the fading model at `sinr_db`, continuous everywhere:
    /// `B·(log2(1 + SINR/Γ) − log2(1 + SINR_min/Γ))`, clipped to
    /// `[0, cap]` — 0 at the minimum SINR and below, rising without a
    /// jump, so a deeper fade or a longer distance lowers it gradually.
    /// O(1).
    pub fn fading_capacity_bps(&self, sinr_db: f64) -> u64 {
        if sinr_db.is_nan() {
            return 0;
        }
        let lin = |db: f64| 10f64.powf((db - self.implementation_gap_db) / 10.0);
        let c =
            self.bandwidth_hz * ((1.0 + lin(sinr_db)).log2() - (1.0 + lin(self.min_snr_db)).log2());
        c.clamp(0.0, self.capacity_cap_bps as f64) as u64
    }

    /// Attenuation of a beam `off_rad` off its boresight, dB: the 3GPP
    /// pattern `min(12·(θ/θ3dB)², sidelobe_db)`. O(1).
    pub fn beam_loss_db(&self, off_rad: f64) -> f64 {
        if !off_rad.is_finite() {
            return self.sidelobe_db;
        }
        let x = off_rad.abs() / self.beamwidth_deg.to_radians();
        (12.0 * x * x).min(self.sidelobe_db)
    }
}

/// The two area presets of seed 004 §4, by name (for scenario files:
/// `environment = "urban"`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Environment {
    /// Few obstacles: [`MmWaveConfig::rural`].
    Rural,
    /// Many obstacles: [`MmWaveConfig::urban`].
    Urban,
}

impl Environment {
    /// The preset's configuration.
    pub fn config(self) -> MmWaveConfig {
        match self {
            Environment::Rural => MmWaveConfig::rural(),
            Environment::Urban => MmWaveConfig::urban(),
        }
    }

    /// `"rural"` or `"urban"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Rural => "rural",
            Environment::Urban => "urban",
        }
    }
}

/// The 3GPP 4-bit CQI for an SNR: the highest index whose 10 % BLER
/// threshold the SNR meets (thresholds of the LTE CQI table, Mehlführer
/// et al., Vienna LTE link-level simulator, 2009); 0 = out of range.
pub fn cqi_from_snr_db(snr_db: f64) -> u8 {
    const THRESHOLDS_DB: [f64; 15] = [
        -6.7, -4.7, -2.3, 0.2, 2.4, 4.3, 5.9, 8.1, 10.3, 11.7, 14.1, 16.3, 18.7, 21.0, 22.7,
    ];
    THRESHOLDS_DB.iter().take_while(|t| snr_db >= **t).count() as u8
}

/// Why a vehicle's link is down.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// An obstacle (building, tree or vehicle) cut the line of sight.
    Blockage,
    /// The serving base station's beam was serving another vehicle.
    Deafness,
    /// The two beams stopped pointing at each other.
    BeamMisalignment,
    /// The vehicle is moving to another base station.
    Handover,
}

impl FailureKind {
    /// All kinds, in report order.
    pub const ALL: [FailureKind; 4] = [
        FailureKind::Blockage,
        FailureKind::Deafness,
        FailureKind::BeamMisalignment,
        FailureKind::Handover,
    ];

    /// A short lower-case name, for tables.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Blockage => "blockage",
            FailureKind::Deafness => "deafness",
            FailureKind::BeamMisalignment => "beam_misalignment",
            FailureKind::Handover => "handover",
        }
    }
}

/// One outage of one vehicle's link.
#[derive(Clone, Debug, PartialEq)]
pub struct FailureEvent {
    /// When the link went down.
    pub time: Time,
    /// The vehicle's index in the `step` slice.
    pub vehicle: usize,
    /// The base station serving it when the link went down.
    pub bs: Option<usize>,
    /// What happened.
    pub kind: FailureKind,
    /// How long the link stays down.
    pub duration: Duration,
    /// The vehicle's speed, m/s.
    pub speed_mps: f64,
}

/// Events so far, per kind (a reported metric).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FailureCounts {
    /// Blockages.
    pub blockage: u64,
    /// Deafness events.
    pub deafness: u64,
    /// Beam misalignments.
    pub beam_misalignment: u64,
    /// Handovers (planned, by hysteresis, or forced by a lost link).
    pub handover: u64,
}

impl FailureCounts {
    /// Count of one kind.
    pub fn get(&self, kind: FailureKind) -> u64 {
        match kind {
            FailureKind::Blockage => self.blockage,
            FailureKind::Deafness => self.deafness,
            FailureKind::BeamMisalignment => self.beam_misalignment,
            FailureKind::Handover => self.handover,
        }
    }

    fn bump(&mut self, kind: FailureKind) {
        match kind {
            FailureKind::Blockage => self.blockage += 1,
            FailureKind::Deafness => self.deafness += 1,
            FailureKind::BeamMisalignment => self.beam_misalignment += 1,
            FailureKind::Handover => self.handover += 1,
        }
    }
}

/// A vehicle's link as of the last `step`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LinkState {
    /// The serving base station.
    pub bs: Option<usize>,
    /// What the link carries now, bit/s (0 while down).
    pub capacity_bps: u64,
    /// Whether it carries anything.
    pub up: bool,
    /// The outage in progress, if any.
    pub event: Option<FailureKind>,
    /// SNR to the serving base station, dB (−∞ when unassociated).
    pub snr_db: f64,
    /// CQI of that SNR (0 while down).
    pub cqi: u8,
    /// Line of sight to the serving base station.
    pub los: bool,
    /// Other vehicles served by the same base station (they share it).
    pub peers: usize,
}

impl LinkState {
    /// The state of a vehicle never stepped: unassociated and down.
    pub const DOWN: LinkState = LinkState {
        bs: None,
        capacity_bps: 0,
        up: false,
        event: None,
        snr_db: f64::NEG_INFINITY,
        cqi: 0,
        los: false,
        peers: 0,
    };
}

#[cfg(test)]
mod tests;
