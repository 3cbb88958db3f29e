//! H11 delivery-rate sampling and H12 packet-timed rounds
//! (draft-cheng-iccrg-delivery-rate-estimation, kernel `tcp_rate.c`).
//!
//! These run on the connection side (the controller only reads the
//! resulting [`RateSample`]); they live here so that the real connection and
//! the controller lab use one implementation.

use crate::types::RateSample;
use crate::Time;
use std::time::Duration;

/// What the sampler remembers about one sent packet.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketRateInfo {
    /// Connection `delivered` when the packet was sent.
    pub delivered: u64,
    /// Connection `delivered_time` when the packet was sent.
    pub delivered_time: Time,
    /// Connection `first_sent_time` when the packet was sent.
    pub first_sent_time: Time,
    /// When the packet was sent.
    pub sent_time: Time,
    /// Sent while application-limited.
    pub is_app_limited: bool,
}

/// The connection-wide delivery-rate sampler.
#[derive(Clone, Debug, Default)]
pub struct DeliveryRateSampler {
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    /// `delivered` mark until which samples are app-limited (0 = not limited).
    app_limited: u64,
    // The sample being built for the current ACK.
    rs_prior_delivered: u64,
    rs_prior_time: Time,
    rs_is_app_limited: bool,
    rs_send_elapsed: Duration,
    rs_ack_elapsed: Duration,
    rs_rtt: Option<Duration>,
    rs_has_packet: bool,
}

impl DeliveryRateSampler {
    /// A sampler with nothing delivered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Segments delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Record a transmission at `now`; `nothing_in_flight` is true when no
    /// packet was outstanding before this one. Returns what to store with the packet.
    pub fn on_packet_sent(&mut self, now: Time, nothing_in_flight: bool) -> PacketRateInfo {
        if nothing_in_flight {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        PacketRateInfo {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            sent_time: now,
            is_app_limited: self.app_limited != 0,
        }
    }

    /// The sender ran out of data with `in_flight` segments outstanding:
    /// samples until those are delivered are application-limited.
    pub fn on_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }

    /// Start processing an ACK.
    pub fn begin_ack(&mut self) {
        self.rs_has_packet = false;
        self.rs_rtt = None;
    }

    /// A packet is acknowledged for the first time by the current ACK.
    pub fn on_packet_acked(&mut self, now: Time, p: &PacketRateInfo) {
        self.delivered += 1;
        self.delivered_time = now;
        if !self.rs_has_packet || p.delivered >= self.rs_prior_delivered {
            self.rs_has_packet = true;
            self.rs_prior_delivered = p.delivered;
            self.rs_prior_time = p.delivered_time;
            self.rs_is_app_limited = p.is_app_limited;
            self.rs_send_elapsed = p.sent_time.saturating_duration_since(p.first_sent_time);
            self.rs_ack_elapsed = self
                .delivered_time
                .saturating_duration_since(p.delivered_time);
            self.rs_rtt = Some(now.saturating_duration_since(p.sent_time));
            self.first_sent_time = p.sent_time;
        }
    }

    /// Finish the ACK and build its sample. `min_rtt` invalidates samples
    /// over intervals shorter than one minimum RTT.
    pub fn end_ack(
        &mut self,
        min_rtt: Option<Duration>,
        losses: u32,
        prior_in_flight: u32,
        acked_sacked: u32,
    ) -> RateSample {
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let mut rs = RateSample {
            losses,
            prior_in_flight,
            acked_sacked,
            ..RateSample::default()
        };
        if !self.rs_has_packet {
            return rs;
        }
        rs.prior_delivered = self.rs_prior_delivered;
        rs.is_app_limited = self.rs_is_app_limited;
        rs.rtt = self.rs_rtt;
        rs.delivered = u32::try_from(self.delivered - self.rs_prior_delivered).unwrap_or(u32::MAX);
        let interval = self.rs_send_elapsed.max(self.rs_ack_elapsed);
        let too_short = min_rtt.is_some_and(|m| interval < m);
        rs.interval = if too_short { Duration::ZERO } else { interval };
        rs
    }
}

/// H12, delivery form: a round ends when a packet sent after the previous
/// round ended is acknowledged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundCounter {
    next_round_delivered: u64,
    /// Rounds completed.
    pub round_count: u64,
    /// The last update started a round.
    pub round_start: bool,
}

impl RoundCounter {
    /// Update with a rate sample's `prior_delivered` and the connection's `delivered`.
    pub fn update(&mut self, prior_delivered: u64, delivered: u64) -> bool {
        self.round_start = false;
        if prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = delivered;
            self.round_count += 1;
            self.round_start = true;
        }
        self.round_start
    }
    /// Start a new round now (BBR PROBE_RTT, recovery).
    pub fn restart(&mut self, delivered: u64) {
        self.next_round_delivered = delivered;
    }
}

/// H12, sequence form (Vegas, YeAH, Illinois, CTCP): the round ends on an
/// ACK with `snd_una > beg_snd_nxt`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeqRound {
    /// `snd_nxt` when the current round began.
    pub beg_snd_nxt: u64,
}

impl SeqRound {
    /// Whether the ACK (with cumulative point `snd_una`) ends the round; if
    /// so, the next round begins at `snd_nxt`.
    pub fn end_of_round(&mut self, snd_una: u64, snd_nxt: u64) -> bool {
        if snd_una > self.beg_snd_nxt {
            self.beg_snd_nxt = snd_nxt;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_flow_measures_its_rate() {
        // One packet every 1 ms, acknowledged 50 ms later: 1000 segments/s.
        let mut s = DeliveryRateSampler::new();
        let mut sent = Vec::new();
        let mut last = None;
        for i in 0..200u64 {
            let now = Time::from_millis(i);
            sent.push(s.on_packet_sent(now, i == 0));
            if i >= 50 {
                s.begin_ack();
                let p = sent[(i - 50) as usize];
                s.on_packet_acked(now, &p);
                last = Some(s.end_ack(Some(Duration::from_millis(50)), 0, 50, 1));
            }
        }
        let rs = last.unwrap();
        let rate = rs.rate_segs_per_sec().unwrap();
        assert!((rate - 1000.0).abs() < 25.0, "rate {rate}");
        assert_eq!(rs.rtt, Some(Duration::from_millis(50)));
    }

    #[test]
    fn round_counter_counts_flights() {
        let mut r = RoundCounter::default();
        assert!(r.update(0, 10));
        assert!(!r.update(5, 11));
        assert!(r.update(10, 20));
        assert_eq!(r.round_count, 2);
    }
}
