//! An 802.11b-like ad hoc channel for the drone swarm (seed 001, issue 10).
//!
//! **Propagation.** Log-distance path loss with log-normal shadowing:
//! `PL(d) = FSPL(1 m) + 10·n·log10(d / 1 m) + X`, where `FSPL(1 m) =
//! 20·log10(4π·f/c)` (40.05 dB at 2.412 GHz) and `X ~ N(0, σ²)` dB per
//! link, either constant or slowly varying in time (see
//! [`WifiConfig::shadowing_coherence_s`]). `SNR = P_tx − PL − N` with
//! `N = −174 dBm/Hz + 10·log10(22 MHz) + NF`. The default exponent is
//! calibrated so that 11 Mbit/s frames of 576 bytes (536 B payload + 40 B
//! TCP/IP) are lost half the time at ≈140 m without shadowing, the
//! outdoor range seed 001 quotes.
//!
//! **PHY.** Bit and frame error rates per modulation: [`phy`].
//!
//! **MAC.** DCF airtime, Bianchi collisions and retries: [`mac`].
//! [`WifiChannel::attempt`] folds all MAC retries of one frame into one
//! [`TxOutcome`], so the engine can hold the medium for its airtime.

pub mod mac;
pub mod phy;

pub use phy::Modulation;

use super::{check_range, mix64, noise_floor_dbm, normal_from_hash, ConfigError};
use crate::rng::{component_rng, SimRng};
use crate::world::geom::Vec3;
use crate::Time;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Speed of light, m/s.
const C_MPS: f64 = 299_792_458.0;

/// Parameters of the 802.11b channel. Every field has the documented
/// default when absent from a scenario file; unknown fields are rejected.
/// Call [`WifiConfig::validate`] after reading ([`WifiChannel::new`] does).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WifiConfig {
    /// Transmit power, dBm. Default 16 dBm (ns-3's default, ≈40 mW).
    pub tx_power_dbm: f64,
    /// Carrier frequency, Hz (sets the 1 m reference loss). Default
    /// 2.412 GHz (channel 1).
    pub frequency_hz: f64,
    /// Path-loss exponent `n`. Default 2.88, calibrated for the 140 m
    /// 11 Mbit/s range (free space is 2, ns-3's default 3).
    pub path_loss_exponent: f64,
    /// Log-normal shadowing standard deviation, dB. Default 3 dB (air-to-air
    /// links are mostly line of sight; 0 turns shadowing off).
    pub shadowing_sigma_db: f64,
    /// Time over which a link's shadowing decorrelates, seconds: the value
    /// is drawn independently every `coherence` and interpolated in
    /// between. 0 keeps one value per link for the whole run. Default 2 s
    /// (a 20 m/s drone moves 40 m, the order of shadowing decorrelation
    /// distances outdoors).
    pub shadowing_coherence_s: f64,
    /// Receiver noise figure, dB. Default 7 dB.
    pub noise_figure_db: f64,
    /// Data rate of every data frame, Mbit/s (fixed, no rate adaptation).
    /// Default 5 (seed 001); errors follow the slowest standard rate at or
    /// above it ([`Modulation::for_rate`]).
    pub data_rate_mbps: f64,
    /// Rate of ACK frames, Mbit/s. Default 1.
    pub basic_rate_mbps: f64,
    /// Long (192 µs) rather than short (96 µs) PLCP preamble and header.
    /// Default true (the 802.11b mandatory format).
    pub long_preamble: bool,
    /// Slot time, µs. Default 20.
    pub slot_us: u64,
    /// SIFS, µs. Default 10.
    pub sifs_us: u64,
    /// Minimum contention window, slots. Default 31.
    pub cw_min: u32,
    /// Maximum contention window, slots. Default 1023.
    pub cw_max: u32,
    /// MAC header, FCS and LLC/SNAP added to each payload, bytes. Default 36.
    pub mac_overhead_bytes: usize,
    /// Maximum transmissions of one frame, the first included
    /// (dot11ShortRetryLimit). Default 7.
    pub retry_limit: u32,
    /// Carrier-sense threshold, dBm: nodes hearing each other above it
    /// share the medium. Default −99 dBm, about where a 1 Mbit/s frame is
    /// still decoded half the time (DSSS preambles are detectable below
    /// the noise floor thanks to the 10.4 dB Barker gain), so a station
    /// defers to every frame it could decode; the carrier-sense range
    /// (≈400 m) is then about 2.2 times the 5 Mbit/s range (≈180 m).
    pub cs_threshold_dbm: f64,
    /// A link is usable for routing when a reference frame's error rate is
    /// below this. Default 0.5.
    pub range_per_threshold: f64,
    /// Payload of the reference frame for [`WifiChannel::in_range`],
    /// bytes. Default 576 (536 B segment + 40 B TCP/IP headers, seed 001).
    pub range_reference_bytes: usize,
}

impl Default for WifiConfig {
    fn default() -> WifiConfig {
        WifiConfig {
            tx_power_dbm: 16.0,
            frequency_hz: 2.412e9,
            path_loss_exponent: 2.88,
            shadowing_sigma_db: 3.0,
            shadowing_coherence_s: 2.0,
            noise_figure_db: 7.0,
            data_rate_mbps: 5.0,
            basic_rate_mbps: 1.0,
            long_preamble: true,
            slot_us: 20,
            sifs_us: 10,
            cw_min: 31,
            cw_max: 1023,
            mac_overhead_bytes: 36,
            retry_limit: 7,
            cs_threshold_dbm: -99.0,
            range_per_threshold: 0.5,
            range_reference_bytes: 576,
        }
    }
}

impl WifiConfig {
    /// Checks every field, naming the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_range("tx_power_dbm", self.tx_power_dbm, -50.0, 60.0)?;
        check_range("frequency_hz", self.frequency_hz, 1e8, 1e11)?;
        check_range("path_loss_exponent", self.path_loss_exponent, 1.0, 8.0)?;
        check_range("shadowing_sigma_db", self.shadowing_sigma_db, 0.0, 30.0)?;
        check_range(
            "shadowing_coherence_s",
            self.shadowing_coherence_s,
            0.0,
            1e9,
        )?;
        check_range("noise_figure_db", self.noise_figure_db, 0.0, 30.0)?;
        check_range("cs_threshold_dbm", self.cs_threshold_dbm, -150.0, 0.0)?;
        check_range("range_per_threshold", self.range_per_threshold, 0.0, 1.0)?;
        if Modulation::for_rate(self.data_rate_mbps).is_none() {
            return Err(ConfigError::new(
                "data_rate_mbps",
                "must be a positive rate of at most 11 Mbit/s",
            ));
        }
        check_range("basic_rate_mbps", self.basic_rate_mbps, 0.1, 11.0)?;
        if self.slot_us == 0 || self.slot_us > 1000 {
            return Err(ConfigError::new("slot_us", "must be in 1..=1000 µs"));
        }
        if self.sifs_us > 1000 {
            return Err(ConfigError::new("sifs_us", "must be at most 1000 µs"));
        }
        if self.cw_min == 0 || self.cw_min > 65_535 {
            return Err(ConfigError::new("cw_min", "must be in 1..=65535"));
        }
        if self.cw_max < self.cw_min || self.cw_max > 65_535 {
            return Err(ConfigError::new("cw_max", "must be in cw_min..=65535"));
        }
        if self.mac_overhead_bytes > 4096 {
            return Err(ConfigError::new(
                "mac_overhead_bytes",
                "must be at most 4096",
            ));
        }
        if self.retry_limit == 0 || self.retry_limit > 255 {
            return Err(ConfigError::new("retry_limit", "must be in 1..=255"));
        }
        if self.range_reference_bytes > 65_535 {
            return Err(ConfigError::new(
                "range_reference_bytes",
                "must be at most 65535",
            ));
        }
        Ok(())
    }

    /// PLCP preamble and header duration, µs.
    pub fn preamble_us(&self) -> f64 {
        if self.long_preamble {
            192.0
        } else {
            96.0
        }
    }

    /// The modulation whose error behaviour data frames have.
    pub fn modulation(&self) -> Modulation {
        // Validated configs always have one; fall back to the slowest.
        Modulation::for_rate(self.data_rate_mbps).unwrap_or(Modulation::Dbpsk1)
    }

    /// Free-space loss at the 1 m reference distance, dB.
    pub fn reference_loss_db(&self) -> f64 {
        20.0 * (4.0 * std::f64::consts::PI * self.frequency_hz / C_MPS).log10()
    }

    /// Receiver noise power, dBm.
    pub fn noise_dbm(&self) -> f64 {
        noise_floor_dbm(phy::NOISE_BANDWIDTH_HZ, self.noise_figure_db)
    }
}

/// What became of one frame after all its MAC attempts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TxOutcome {
    /// The receiver got the frame (at least once).
    pub delivered: bool,
    /// Transmissions made, 1 ..= `retry_limit`.
    pub attempts: u32,
    /// Attempts lost to a collision.
    pub collisions: u32,
    /// Medium time of all attempts: DIFS, backoff, frame, SIFS + ACK or
    /// the ACK timeout. The engine holds the medium for this long.
    pub airtime: Duration,
}

/// The shared 802.11b medium of one simulation.
#[derive(Clone, Debug)]
pub struct WifiChannel {
    config: WifiConfig,
    /// Key of the shadowing field, drawn from `wifi/shadowing`.
    shadow_key: u64,
    /// Backoff, collision and frame-error draws.
    rng: SimRng,
    /// Bianchi probabilities by number of stations, filled lazily.
    collision_cache: Vec<f64>,
}

impl WifiChannel {
    /// A channel with `config`, its draws derived from `seed`.
    pub fn new(config: WifiConfig, seed: u64) -> Result<WifiChannel, ConfigError> {
        config.validate()?;
        let shadow_key = component_rng(seed, "wifi/shadowing").random::<u64>();
        Ok(WifiChannel {
            config,
            shadow_key,
            rng: component_rng(seed, "wifi/mac"),
            collision_cache: Vec::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &WifiConfig {
        &self.config
    }

    /// A symmetric identifier for the link between nodes `a` and `b`, for
    /// the `link_id` arguments (both directions share one shadowing value:
    /// the channel is reciprocal).
    pub fn link_id(a: usize, b: usize) -> u64 {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        ((lo as u64) << 32) ^ (hi as u64)
    }

    /// Mean path loss at `distance_m` (no shadowing), dB. Distances below
    /// 1 m are taken as 1 m (the model's reference distance).
    pub fn path_loss_db(&self, distance_m: f64) -> f64 {
        let d = if distance_m.is_finite() {
            distance_m.max(1.0)
        } else {
            f64::INFINITY
        };
        self.config.reference_loss_db() + 10.0 * self.config.path_loss_exponent * d.log10()
    }

    /// Shadowing of link `link_id` at `now`, dB (positive = extra loss).
    pub fn shadowing_db(&self, now: Time, link_id: u64) -> f64 {
        let sigma = self.config.shadowing_sigma_db;
        if sigma == 0.0 {
            return 0.0;
        }
        let base = self.shadow_key ^ mix64(link_id);
        let coherence = self.config.shadowing_coherence_s;
        if coherence == 0.0 {
            return sigma * normal_from_hash(base);
        }
        // Value noise: independent N(0,1) at multiples of the coherence
        // time, linearly interpolated and rescaled to unit variance.
        let u = now.as_secs_f64() / coherence;
        let k = u.floor();
        let f = u - k;
        let k = k as u64;
        let n0 = normal_from_hash(mix64(base ^ mix64(k)));
        let n1 = normal_from_hash(mix64(base ^ mix64(k + 1)));
        let norm = ((1.0 - f) * (1.0 - f) + f * f).sqrt();
        sigma * ((1.0 - f) * n0 + f * n1) / norm
    }

    /// [`shadowing_db`](Self::shadowing_db), bit for bit, keeping the
    /// two N(0, 1) knots around `now` in `knots` (coherence index, knot,
    /// next knot) so that the frames of one coherence interval hash and
    /// draw them once: the DCF asks this for every receiver of every
    /// transmission. O(1).
    pub fn shadowing_db_cached(
        &self,
        now: Time,
        link_id: u64,
        knots: &mut Option<(u64, f64, f64)>,
    ) -> f64 {
        let sigma = self.config.shadowing_sigma_db;
        let coherence = self.config.shadowing_coherence_s;
        if sigma == 0.0 || coherence == 0.0 {
            return self.shadowing_db(now, link_id);
        }
        let u = now.as_secs_f64() / coherence;
        let k = u.floor();
        let f = u - k;
        let k = k as u64;
        let (n0, n1) = match *knots {
            Some((kk, n0, n1)) if kk == k => (n0, n1),
            _ => {
                let base = self.shadow_key ^ mix64(link_id);
                let n0 = normal_from_hash(mix64(base ^ mix64(k)));
                let n1 = normal_from_hash(mix64(base ^ mix64(k + 1)));
                *knots = Some((k, n0, n1));
                (n0, n1)
            }
        };
        let norm = ((1.0 - f) * (1.0 - f) + f * f).sqrt();
        sigma * ((1.0 - f) * n0 + f * n1) / norm
    }

    /// SNR between positions `a` and `b` on link `link_id` at `now`, dB.
    pub fn snr_db(&self, now: Time, a: Vec3, b: Vec3, link_id: u64) -> f64 {
        self.mean_snr_db(a.distance(b)) - self.shadowing_db(now, link_id)
    }

    /// SNR at `distance_m` without shadowing, dB.
    pub fn mean_snr_db(&self, distance_m: f64) -> f64 {
        self.config.tx_power_dbm - self.path_loss_db(distance_m) - self.config.noise_dbm()
    }

    /// Probability that a data frame carrying `bytes` of payload, sent with
    /// `modulation`, is received in error at `snr_db` (the MAC overhead is
    /// added to `bytes`).
    pub fn per(&self, snr_db: f64, bytes: usize, modulation: Modulation) -> f64 {
        phy::frame_error_rate(
            snr_db,
            bytes.saturating_add(self.config.mac_overhead_bytes),
            modulation,
        )
    }

    /// Whether `a` and `b` can use each other as routing neighbours: the
    /// reference frame's error rate at the data rate is below the threshold.
    pub fn in_range(&self, now: Time, a: Vec3, b: Vec3, link_id: u64) -> bool {
        let snr = self.snr_db(now, a, b, link_id);
        let per = self.per(
            snr,
            self.config.range_reference_bytes,
            self.config.modulation(),
        );
        per < self.config.range_per_threshold
    }

    /// The distance at which the reference frame's error rate crosses the
    /// routing threshold without shadowing, m (bisection on the mean SNR).
    pub fn range_m(&self) -> f64 {
        let m = self.config.modulation();
        let bytes = self.config.range_reference_bytes;
        let thr = self.config.range_per_threshold;
        self.distance_where(|d| self.per(self.mean_snr_db(d), bytes, m) < thr)
    }

    /// Distance up to which nodes hear each other above the carrier-sense
    /// threshold (no shadowing), m.
    pub fn carrier_sense_range_m(&self) -> f64 {
        let budget = self.config.tx_power_dbm - self.config.cs_threshold_dbm;
        let excess = budget - self.config.reference_loss_db();
        10f64
            .powf(excess / (10.0 * self.config.path_loss_exponent))
            .max(1.0)
    }

    /// Whether a node at `a` senses a transmission from `b` (mean path
    /// loss, no shadowing): within [`carrier_sense_range_m`](Self::carrier_sense_range_m).
    pub fn senses(&self, a: Vec3, b: Vec3) -> bool {
        a.distance(b) <= self.carrier_sense_range_m()
    }

    /// How many of `others` (positions of the other nodes with a frame
    /// queued) are within carrier-sense range of `from`: the `contenders`
    /// argument of [`attempt`](Self::attempt).
    pub fn contenders(&self, from: Vec3, others: impl IntoIterator<Item = Vec3>) -> usize {
        let range = self.carrier_sense_range_m();
        others
            .into_iter()
            .filter(|p| from.distance(*p) <= range)
            .count()
    }

    /// Largest distance in [1 m, 100 km] at which `ok` still holds, for a
    /// predicate that holds near and fails far.
    fn distance_where(&self, ok: impl Fn(f64) -> bool) -> f64 {
        let (mut lo, mut hi) = (1.0f64, 1e5f64);
        if !ok(lo) {
            return 0.0;
        }
        for _ in 0..100 {
            let mid = (lo * hi).sqrt();
            if ok(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Medium time of one successful first attempt with the mean backoff:
    /// `DIFS + CWmin/2 · slot + PLCP + (overhead + payload)/rate + SIFS + ACK`.
    /// A rate that is not positive gives `Duration::MAX` (never on air).
    pub fn airtime(&self, payload_bytes: usize, rate_mbps: f64) -> Duration {
        if rate_mbps.is_nan() || rate_mbps <= 0.0 {
            return Duration::MAX;
        }
        let c = &self.config;
        let backoff_s = f64::from(c.cw_min) / 2.0 * c.slot_us as f64 * 1e-6;
        let frame = mac::frame_time(
            c,
            payload_bytes.saturating_add(c.mac_overhead_bytes),
            rate_mbps,
        );
        mac::difs(c)
            .saturating_add(Duration::from_secs_f64(backoff_s))
            .saturating_add(frame)
            .saturating_add(mac::sifs_ack(c))
    }

    /// Conditional collision probability of one attempt with `contenders`
    /// other saturated stations within carrier-sense range (Bianchi).
    pub fn collision_probability(&mut self, contenders: usize) -> f64 {
        let stations = contenders.saturating_add(1).min(4096);
        if self.collision_cache.len() <= stations {
            let w = f64::from(self.config.cw_min) + 1.0;
            let m = mac::backoff_stages(&self.config);
            let from = self.collision_cache.len();
            for n in from..=stations {
                self.collision_cache
                    .push(mac::bianchi_collision_probability(n, w, m));
            }
        }
        self.collision_cache[stations]
    }

    /// Sends one frame of `bytes` payload from `from` to `to` on link
    /// `link_id` at the configured data rate, with `contenders` other
    /// stations competing for the medium, retrying up to the retry limit.
    ///
    /// Each attempt draws its backoff, then a collision (Bianchi
    /// probability), then — if it did not collide — data-frame errors at
    /// the link's SNR, then ACK errors (at the basic rate). It stops at the
    /// first acknowledged attempt. The SNR is that of `now` for all
    /// attempts (retries span milliseconds, shadowing changes over seconds).
    pub fn attempt(
        &mut self,
        now: Time,
        from: Vec3,
        to: Vec3,
        link_id: u64,
        bytes: usize,
        contenders: usize,
    ) -> TxOutcome {
        let snr = self.snr_db(now, from, to, link_id);
        let data_per = self.per(snr, bytes, self.config.modulation());
        let ack_modulation =
            Modulation::for_rate(self.config.basic_rate_mbps).unwrap_or(Modulation::Dbpsk1);
        let ack_per = phy::frame_error_rate(snr, mac::ACK_BYTES, ack_modulation);
        let p_coll = self.collision_probability(contenders);
        let c = &self.config;
        let frame = mac::frame_time(
            c,
            bytes.saturating_add(c.mac_overhead_bytes),
            c.data_rate_mbps,
        );
        let (difs, ok_tail, fail_tail) = (mac::difs(c), mac::sifs_ack(c), mac::ack_timeout(c));
        let slot = Duration::from_micros(c.slot_us);
        let mut out = TxOutcome {
            delivered: false,
            attempts: 0,
            collisions: 0,
            airtime: Duration::ZERO,
        };
        for i in 0..c.retry_limit {
            out.attempts += 1;
            let cw = mac::contention_window(c, i);
            let backoff_slots = self.rng.random_range(0..=cw);
            out.airtime += difs + slot * backoff_slots + frame;
            if self.rng.random::<f64>() < p_coll {
                out.collisions += 1;
                out.airtime += fail_tail;
                continue;
            }
            if self.rng.random::<f64>() < data_per {
                out.airtime += fail_tail;
                continue;
            }
            out.delivered = true;
            if self.rng.random::<f64>() < ack_per {
                out.airtime += fail_tail;
                continue;
            }
            out.airtime += ok_tail;
            break;
        }
        out
    }
}

#[cfg(test)]
mod tests;
