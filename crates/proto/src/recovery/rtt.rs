//! RTT estimation (RFC 6298) with the lifetime minimum and latest sample
//! that the controllers read (cc-spec §2.1).
//!
//! Samples come only from packets sent once: the connection never feeds a
//! sample taken from a packet carrying ST_RET (Karn's rule, cc-spec §1).
//! The retransmission timeout is `SRTT + max(G, 4·RTTVAR)` bounded below by
//! a configurable minimum (200 ms by default, as Linux and the lab use,
//! rather than RFC 6298's conservative 1 s) and above by a maximum, and
//! doubles on every expiry until an acknowledgement of new data.

use std::time::Duration;

/// RFC 6298 clock granularity G.
pub const GRANULARITY: Duration = Duration::from_millis(1);
/// Largest backoff exponent (2^16 times the RTO is far past any maximum).
const MAX_BACKOFF_EXP: u32 = 16;

/// The RTT estimator and retransmission-timeout calculator.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Option<Duration>,
    min_rtt: Option<Duration>,
    latest_rtt: Option<Duration>,
    initial_rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
    backoff_exp: u32,
    samples: u64,
}

impl RttEstimator {
    /// An estimator with no sample yet: the RTO is `initial_rto` (clamped to
    /// `[min_rto, max_rto]`).
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: None,
            min_rtt: None,
            latest_rtt: None,
            initial_rto,
            min_rto,
            max_rto: max_rto.max(min_rto),
            backoff_exp: 0,
            samples: 0,
        }
    }

    /// Add a Karn-valid sample. `ack_delay` is the time the peer says it
    /// held the acknowledgement; it is subtracted when that leaves the
    /// sample above the minimum RTT (RFC 9002 §5.3), so delayed ACKs do not
    /// inflate SRTT. The minimum and latest RTT use the raw sample.
    pub fn on_sample(&mut self, rtt: Duration, ack_delay: Duration) {
        let rtt = rtt.max(Duration::from_nanos(1));
        self.samples += 1;
        self.latest_rtt = Some(rtt);
        let min = self.min_rtt.map_or(rtt, |m| m.min(rtt));
        self.min_rtt = Some(min);
        let adjusted = if rtt >= min + ack_delay {
            rtt - ack_delay
        } else {
            rtt
        };
        match (self.srtt, self.rttvar) {
            (Some(srtt), Some(rttvar)) => {
                let diff = srtt.max(adjusted) - srtt.min(adjusted);
                self.rttvar = Some(rttvar * 3 / 4 + diff / 4);
                self.srtt = Some(srtt * 7 / 8 + adjusted / 8);
            }
            _ => {
                self.srtt = Some(adjusted);
                self.rttvar = Some(adjusted / 2);
            }
        }
    }

    /// The RTO without backoff (what `PathInfo::rto` reports).
    pub fn rto(&self) -> Duration {
        let base = match (self.srtt, self.rttvar) {
            (Some(s), Some(v)) => s + GRANULARITY.max(4 * v),
            _ => self.initial_rto,
        };
        base.clamp(self.min_rto, self.max_rto)
    }

    /// The RTO with the current exponential backoff applied, at most the maximum.
    pub fn backed_off_rto(&self) -> Duration {
        self.rto()
            .saturating_mul(1u32 << self.backoff_exp.min(MAX_BACKOFF_EXP))
            .min(self.max_rto)
    }

    /// The timer expired: double the RTO (RFC 6298 (5.5)).
    pub fn back_off(&mut self) {
        self.backoff_exp = (self.backoff_exp + 1).min(MAX_BACKOFF_EXP);
    }

    /// New data was acknowledged: forget the backoff.
    pub fn reset_backoff(&mut self) {
        self.backoff_exp = 0;
    }

    /// How many times the RTO has been doubled since the last reset.
    pub fn backoff_exponent(&self) -> u32 {
        self.backoff_exp
    }

    /// Smoothed RTT, once a sample exists.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    /// RTT variation, once a sample exists.
    pub fn rttvar(&self) -> Option<Duration> {
        self.rttvar
    }
    /// Lifetime minimum RTT.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    /// The most recent sample.
    pub fn latest_rtt(&self) -> Option<Duration> {
        self.latest_rtt
    }
    /// Number of samples taken.
    pub fn sample_count(&self) -> u64 {
        self.samples
    }

    /// The time-threshold loss delay of RFC 9002 §6.1.2:
    /// `9/8 · max(SRTT, latest RTT)`, at least the granularity; `None`
    /// before the first sample.
    pub fn loss_delay(&self) -> Option<Duration> {
        let base = self.srtt?.max(self.latest_rtt?);
        Some((base * 9 / 8).max(GRANULARITY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn first_sample_then_rfc6298_smoothing() {
        let mut r = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        assert_eq!(r.rto(), ms(1000));
        r.on_sample(ms(100), Duration::ZERO);
        assert_eq!(r.srtt(), Some(ms(100)));
        assert_eq!(r.rttvar(), Some(ms(50)));
        // 100 + 4·50 = 300 ms.
        assert_eq!(r.rto(), ms(300));
        r.on_sample(ms(200), Duration::ZERO);
        // RTTVAR = 3/4·50 + 1/4·100 = 62.5; SRTT = 7/8·100 + 1/8·200 = 112.5.
        assert_eq!(r.rttvar(), Some(Duration::from_micros(62_500)));
        assert_eq!(r.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(r.min_rtt(), Some(ms(100)));
        assert_eq!(r.latest_rtt(), Some(ms(200)));
    }

    #[test]
    fn minimum_rto_is_configurable_and_backoff_doubles() {
        let mut r = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        r.on_sample(ms(10), Duration::ZERO);
        // 10 + 4·5 = 30 ms, raised to the 200 ms minimum.
        assert_eq!(r.rto(), ms(200));
        r.back_off();
        r.back_off();
        assert_eq!(r.backed_off_rto(), ms(800));
        assert_eq!(r.rto(), ms(200), "PathInfo::rto is without backoff");
        r.reset_backoff();
        assert_eq!(r.backed_off_rto(), ms(200));
        let mut low = RttEstimator::new(ms(1000), ms(50), ms(60_000));
        low.on_sample(ms(10), Duration::ZERO);
        assert_eq!(low.rto(), ms(50));
        for _ in 0..40 {
            low.back_off();
        }
        assert_eq!(low.backed_off_rto(), ms(60_000), "capped at the maximum");
    }

    #[test]
    fn ack_delay_is_subtracted_only_above_min_rtt() {
        let mut r = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        r.on_sample(ms(50), Duration::ZERO);
        r.on_sample(ms(80), ms(20));
        // 80 − 20 = 60 ≥ 50: SRTT = 7/8·50 + 1/8·60 = 51.25 ms.
        assert_eq!(r.srtt(), Some(Duration::from_micros(51_250)));
        assert_eq!(r.latest_rtt(), Some(ms(80)));
        assert_eq!(r.loss_delay(), Some(ms(90)));
    }
}
