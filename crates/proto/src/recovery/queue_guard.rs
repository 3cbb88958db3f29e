//! # Queue guard (issue 28 item 1)
//!
//! While a latency-sensitive (class-0) stream is active, a control
//! message still waits behind whatever the connection has already put
//! into the bottleneck queue: CUBIC keeps a 1-BDP queue full, which is
//! most of the showcase's 78 ms mean / 172 ms p99 control latency against
//! a ≈ 43 ms floor. The guard bounds the connection's *own* standing
//! queue while priority traffic is present: a cap on bytes in flight,
//! driven by delay measured against min RTT, applied on top of whatever
//! window the controller computes (`min(cwnd, cap)`), so it works with
//! any of the controllers and changes none of them.
//!
//! **Rule** (per RTT sample, O(1)):
//! * the first sample while active sets `cap = bytes in flight`;
//! * a sample above `min_rtt + max_queue_delay` (at most once per sample
//!   RTT) rescales the cap so the queue would drain to half the allowed
//!   delay: `cap = in_flight · (min_rtt + max_queue_delay / 2) / rtt`,
//!   Vegas' reasoning (in flight ÷ RTT is the delivery rate, times the
//!   target RTT is what keeps that rate with the target queue);
//! * a sample at or below the target grows the cap by `mss² / cap`,
//!   about one packet per round trip, so bulk keeps probing for the
//!   link's share as the control stream's load varies;
//! * the cap never falls below [`FLOOR_PACKETS`] full packets (the ACK
//!   clock keeps running, and small control packets do not take the
//!   whole window);
//! * when no priority stream is active the cap is dropped and the
//!   controller's window alone applies: bulk fills the link otherwise.
//!
//! On by `ConnectionConfig::queue_guard` (the simulator's
//! `flows.queue_guard`); the connection reports every packet whose PRI is
//! 0 ([`QueueGuard::on_priority_sent`]) and the guard applies until
//! [`HOLD`] after the latest. Open: a controller that grows `cwnd`
//! while the cap holds it (CUBIC sees no loss) may burst when the cap is
//! dropped — the pacer bounds that burst, but it is unmeasured.

use peregrine_cc::Time;
use std::time::Duration;

/// How long after the latest class-0 packet the guard stays on: a few
/// round trips of the showcase path, longer than the MAVLink trace's
/// gaps, so the cap is not dropped and rebuilt between messages.
pub const HOLD: Duration = Duration::from_millis(500);

/// The cap's floor, in full packets. Showcase (1 Mbit/s, 40 ms, ABS):
/// floor 2 → bulk 0.026 Mbit/s (the small control packets, one per
/// message, took the window), 4 → 0.393 Mbit/s / p99 75 ms, 6 →
/// 0.695 Mbit/s / p99 57 ms, 8 → 0.699 Mbit/s / p99 79 ms. Tuned on that
/// one link: on it the cap sits at the floor (see the module's open
/// points), so this constant, not the delay rule, sets the window there.
pub const FLOOR_PACKETS: u64 = 6;

/// Delay-based cap on bytes in flight while priority traffic is active.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueGuard {
    max_queue_delay: Duration,
    mss_bytes: u64,
    active: bool,
    cap_bytes: Option<u64>,
    /// No decrease before this time (one sample RTT after the last one).
    next_decrease: Time,
    /// The latest class-0 packet sent.
    last_priority: Time,
}

impl QueueGuard {
    /// A guard that keeps the connection's own queue at most
    /// `max_queue_delay` above min RTT, for packets of `mss_bytes`. O(1).
    pub fn new(max_queue_delay: Duration, mss_bytes: u64) -> QueueGuard {
        QueueGuard {
            max_queue_delay,
            mss_bytes: mss_bytes.max(1),
            active: false,
            cap_bytes: None,
            next_decrease: Time::ZERO,
            last_priority: Time::ZERO,
        }
    }

    /// A packet carrying class-0 data went out at `now`: the guard is on
    /// until [`HOLD`] after the latest one. O(1).
    pub fn on_priority_sent(&mut self, now: Time) {
        self.last_priority = now;
        self.active = true;
    }

    /// The cap at `now`, if one applies (none once [`HOLD`] has passed
    /// since the latest class-0 packet). O(1).
    pub fn cap_bytes_at(&self, now: Time) -> Option<u64> {
        if now > self.last_priority.saturating_add(HOLD) {
            return None;
        }
        self.cap_bytes()
    }

    /// Whether priority traffic is present; turning it off drops the
    /// cap. O(1).
    pub fn set_active(&mut self, active: bool) {
        if !active {
            self.cap_bytes = None;
        }
        self.active = active;
    }

    /// The current cap, bytes, if one applies.
    pub fn cap_bytes(&self) -> Option<u64> {
        self.cap_bytes.filter(|_| self.active)
    }

    /// The window the sender may fill: the controller's `cwnd_bytes`, or
    /// less while the guard holds a cap. O(1).
    pub fn window_bytes(&self, cwnd_bytes: u64) -> u64 {
        self.cap_bytes().map_or(cwnd_bytes, |c| c.min(cwnd_bytes))
    }

    /// An RTT sample `rtt` at `now`, with the path's `min_rtt` and the
    /// bytes in flight when the sample's packet was acknowledged. O(1).
    pub fn on_rtt_sample(&mut self, now: Time, rtt: Duration, min_rtt: Duration, in_flight: u64) {
        if self.active && now > self.last_priority.saturating_add(HOLD) {
            self.set_active(false);
        }
        if !self.active {
            return;
        }
        let floor = FLOOR_PACKETS * self.mss_bytes;
        let cap = *self.cap_bytes.get_or_insert(in_flight.max(floor));
        let target = min_rtt + self.max_queue_delay;
        if rtt > target {
            if now >= self.next_decrease {
                let aim = min_rtt + self.max_queue_delay / 2;
                let scaled =
                    u128::from(in_flight.min(cap)) * aim.as_nanos() / rtt.as_nanos().max(1);
                self.cap_bytes = Some(u64::try_from(scaled).unwrap_or(u64::MAX).max(floor));
                self.next_decrease = now.saturating_add(rtt);
            }
        } else {
            self.cap_bytes = Some(cap + (self.mss_bytes * self.mss_bytes / cap).max(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1415;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn inactive_guard_leaves_the_controllers_window() {
        let mut g = QueueGuard::new(ms(10), MSS);
        g.on_rtt_sample(Time::ZERO, ms(200), ms(40), 50_000);
        assert_eq!(g.cap_bytes(), None);
        assert_eq!(g.window_bytes(80_000), 80_000);
    }

    #[test]
    fn a_standing_queue_shrinks_the_cap_to_the_target_delay() {
        let mut g = QueueGuard::new(ms(10), MSS);
        g.on_priority_sent(Time::from_millis(1_000));
        // 40 kB in flight over a 40 ms path: RTT 152 ms.
        g.on_rtt_sample(Time::from_millis(1_000), ms(152), ms(40), 40_000);
        // 40 000 · 45 / 152 = 11 842 bytes: the rate times min RTT + 5 ms.
        assert_eq!(g.cap_bytes(), Some(11_842));
        assert_eq!(g.window_bytes(80_000), 11_842);
        assert_eq!(
            g.window_bytes(5_000),
            5_000,
            "the controller's smaller window wins"
        );
        // No second decrease within the sample's RTT.
        g.on_rtt_sample(Time::from_millis(1_100), ms(140), ms(40), 11_842);
        assert_eq!(g.cap_bytes(), Some(11_842));
        // Then one, never below two packets.
        g.on_rtt_sample(Time::from_millis(1_200), ms(400), ms(40), 11_842);
        assert_eq!(g.cap_bytes(), Some(FLOOR_PACKETS * MSS));
        // Half a second after the latest class-0 packet the cap is gone.
        assert_eq!(g.cap_bytes_at(Time::from_millis(1_501)), None);
    }

    #[test]
    fn low_delay_grows_the_cap_by_about_a_packet_per_round_trip() {
        let mut g = QueueGuard::new(ms(10), MSS);
        g.set_active(true);
        g.on_rtt_sample(Time::ZERO, ms(45), ms(40), 10 * MSS);
        let start = g.cap_bytes().unwrap();
        // One round trip's worth of samples: ten packets' ACKs.
        for i in 1..=10 {
            g.on_rtt_sample(Time::from_millis(i), ms(45), ms(40), start);
        }
        let grown = g.cap_bytes().unwrap() - start;
        assert!((MSS * 9 / 10..=MSS * 11 / 10).contains(&grown), "{grown}");
    }

    #[test]
    fn no_priority_traffic_drops_the_cap() {
        let mut g = QueueGuard::new(ms(10), MSS);
        g.set_active(true);
        g.on_rtt_sample(Time::ZERO, ms(152), ms(40), 14_000);
        assert!(g.cap_bytes().is_some());
        g.set_active(false);
        assert_eq!(g.window_bytes(80_000), 80_000);
        g.set_active(true);
        assert_eq!(g.cap_bytes(), None, "a fresh start measures again");
    }
}
