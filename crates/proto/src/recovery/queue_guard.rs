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
//! **Path estimate** (per ACK, O(1)): the delivery rate is the ACK rate in
//! bytes, measured over intervals of at least one min RTT, and its
//! maximum over the last [`RATE_WINDOW_INTERVALS`] intervals is the
//! path's rate `R`. One full packet takes `T = mss / R` to serialise.
//!
//! **Rule** (per RTT sample, the ACK delay the peer reports removed, O(1)):
//! * the target RTT is `min_rtt + max_queue_delay + T`: min RTT comes
//!   from the smallest packets, so a full packet's RTT on an empty path
//!   is already `T` above it (11.3 ms at 1 Mbit/s);
//! * the first sample while active (once `R` is known) sets
//!   `cap = max(bytes in flight, floor)`;
//! * a sample above the target (at most once per sample RTT) rescales
//!   the cap so the queue would drain to half the allowed delay:
//!   `cap = in_flight · (min_rtt + max_queue_delay / 2 + T) / rtt`,
//!   Vegas' reasoning (in flight ÷ RTT is the delivery rate, times the
//!   target RTT is what keeps that rate with the target queue);
//! * a sample at or below the target grows the cap by `mss² / cap`,
//!   about one packet per round trip, while the cap limits the sender
//!   (in flight within a packet of it), so bulk keeps probing for the
//!   link's share as the control stream's load varies, and an idle or
//!   application-limited sender does not grow a cap it could burst into;
//! * the cap never falls below the path's floor `R · min_rtt + mss`: one
//!   bandwidth-delay product keeps the link busy, and one packet more
//!   lets a full packet be serialised while the ACK clock runs (the small
//!   control packets share the window too). Under the cap the measured
//!   `R` can only be `cap / rtt`; with no queue (`rtt ≈ min_rtt`) that
//!   makes the floor a packet above the cap, so an underestimated `R`
//!   corrects itself upwards, a packet per interval, until the link is
//!   full;
//! * **lapse**: [`HOLD`] after the latest class-0 packet the guard
//!   releases the cap gradually — it grows by the bytes each ACK
//!   acknowledges (doubling per round trip, as slow start would) and is
//!   dropped once it reaches the controller's window — so a controller
//!   that grew `cwnd` while the cap held it (CUBIC sees no loss) cannot
//!   put its whole window into the queue at once. A class-0 packet during
//!   the release resumes the guard with the cap it has.
//!
//! On by `ConnectionConfig::queue_guard` (the simulator's
//! `flows.queue_guard`); the connection reports every packet whose PRI is
//! 0 ([`QueueGuard::on_priority_sent`]).

use peregrine_cc::filter::WindowedFilter;
use peregrine_cc::Time;
use std::time::Duration;

/// How long after the latest class-0 packet the guard stays on: a few
/// round trips of the showcase path, longer than the MAVLink trace's
/// gaps, so the cap is not dropped and rebuilt between messages.
pub const HOLD: Duration = Duration::from_millis(500);

/// Delivery-rate intervals (each at least one min RTT) over which the
/// path's rate is the maximum: BBR's bandwidth-filter length, ten round
/// trips, long enough to ride over an interval the sender was
/// application-limited in or the cap held back.
pub const RATE_WINDOW_INTERVALS: u64 = 10;

/// What one ACK told the guard. Built by `Recovery::on_ack`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GuardAck {
    /// Bytes the ACK newly acknowledged.
    pub acked_bytes: u64,
    /// The RTT sample it gave, the peer's ACK delay removed (none for an
    /// ACK of a retransmission).
    pub rtt: Option<Duration>,
    /// The path's min RTT so far.
    pub min_rtt: Option<Duration>,
    /// Bytes in flight before the ACK.
    pub prior_in_flight_bytes: u64,
    /// The controller's window after the ACK, bytes.
    pub cwnd_bytes: u64,
}

/// Delay-based cap on bytes in flight while priority traffic is active.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueGuard {
    max_queue_delay: Duration,
    mss_bytes: u64,
    /// Packets the peer receives before it acknowledges (its ACK
    /// frequency).
    ack_every_packets: u64,
    active: bool,
    cap_bytes: Option<u64>,
    /// No decrease before this time (one sample RTT after the last one).
    next_decrease: Time,
    /// The latest class-0 packet sent.
    last_priority: Time,
    /// Bytes acknowledged so far.
    acked_bytes: u64,
    /// The current delivery-rate interval: its start and the bytes
    /// acknowledged by then (none before the first ACK).
    interval_start: Option<(Time, u64)>,
    /// Intervals completed (the rate filter's time axis).
    intervals: u64,
    /// Windowed maximum of the delivery rate, bytes per second.
    rate_max: WindowedFilter,
}

impl QueueGuard {
    /// A guard that keeps the connection's own queue at most
    /// `max_queue_delay` above what a full packet of `mss_bytes` needs on
    /// an empty path, for a peer that acknowledges every
    /// `ack_every_packets` packets. O(1).
    pub fn new(max_queue_delay: Duration, mss_bytes: u64, ack_every_packets: u64) -> QueueGuard {
        QueueGuard {
            max_queue_delay,
            mss_bytes: mss_bytes.max(1),
            ack_every_packets: ack_every_packets.max(1),
            active: false,
            cap_bytes: None,
            next_decrease: Time::ZERO,
            last_priority: Time::ZERO,
            acked_bytes: 0,
            interval_start: None,
            intervals: 0,
            rate_max: WindowedFilter::new_max(RATE_WINDOW_INTERVALS),
        }
    }

    /// Full packets are now `mss_bytes` long (path MTU discovery moved the
    /// datagram size): the packet time `T` and the floor's held packets
    /// follow the packets actually sent. Counted in the 1,200-byte base
    /// size while 1,452-byte datagrams left, the guard's target RTT was
    /// 2 ms short of a full packet's own serialisation at 1 Mbit/s and
    /// its floor held less than the two full packets the peer waits for
    /// before it acknowledges. O(1).
    pub fn set_mss(&mut self, mss_bytes: u64) {
        self.mss_bytes = mss_bytes.max(1);
    }

    /// A packet carrying class-0 data went out at `now`: the guard is on
    /// until [`HOLD`] after the latest one. O(1).
    pub fn on_priority_sent(&mut self, now: Time) {
        self.last_priority = now;
        self.active = true;
    }

    /// The cap at `now`, if one applies: while the guard is on, and after
    /// [`HOLD`] until the release has grown the cap to the controller's
    /// window. O(1).
    pub fn cap_bytes_at(&self, _now: Time) -> Option<u64> {
        self.cap_bytes()
    }

    /// Whether priority traffic is present; turning it off drops the
    /// cap at once (the lapse after [`HOLD`] releases it gradually
    /// instead). O(1).
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

    /// The path's delivery rate, bytes per second: the largest ACK rate
    /// of the last [`RATE_WINDOW_INTERVALS`] intervals (none before one
    /// interval of at least a min RTT has passed). O(1).
    pub fn rate_bytes_per_s(&self) -> Option<u64> {
        self.rate_max.get().filter(|&r| r > 0)
    }

    /// The cap's floor, bytes: `rate · min_rtt + ack_every · mss` (none
    /// before the rate is known). O(1).
    pub fn floor_bytes(&self, min_rtt: Duration) -> Option<u64> {
        let rate = self.rate_bytes_per_s()?;
        let bdp = u128::from(rate) * min_rtt.as_nanos() / 1_000_000_000;
        let held = self.ack_every_packets.saturating_mul(self.mss_bytes);
        Some(u64::try_from(bdp).unwrap_or(u64::MAX).saturating_add(held))
    }

    /// One full packet's serialisation time at the path's rate (zero
    /// before the rate is known). O(1).
    pub fn packet_time(&self) -> Duration {
        self.rate_bytes_per_s().map_or(Duration::ZERO, |r| {
            Duration::from_nanos(
                u64::try_from(u128::from(self.mss_bytes) * 1_000_000_000 / u128::from(r))
                    .unwrap_or(u64::MAX),
            )
        })
    }

    /// An ACK at `now` (see [`GuardAck`]): the delivery-rate estimate,
    /// the lapse and release, and the delay rule. O(1).
    pub fn on_ack(&mut self, now: Time, ack: &GuardAck) {
        self.update_rate(now, ack.acked_bytes, ack.min_rtt);
        if !self.active {
            return;
        }
        if now > self.last_priority.saturating_add(HOLD) {
            // Lapsed: release the cap at slow start's pace.
            match self.cap_bytes {
                Some(cap) if cap.saturating_add(ack.acked_bytes) < ack.cwnd_bytes => {
                    self.cap_bytes = Some(cap + ack.acked_bytes);
                }
                _ => self.set_active(false),
            }
            return;
        }
        if let (Some(rtt), Some(min_rtt)) = (ack.rtt, ack.min_rtt) {
            self.on_rtt_sample(now, rtt, min_rtt, ack.prior_in_flight_bytes);
        }
    }

    /// Count `acked_bytes` into the current delivery-rate interval, and
    /// close it once it has lasted a min RTT. O(1).
    fn update_rate(&mut self, now: Time, acked_bytes: u64, min_rtt: Option<Duration>) {
        self.acked_bytes += acked_bytes;
        let Some((start, bytes_at_start)) = self.interval_start else {
            self.interval_start = Some((now, self.acked_bytes));
            return;
        };
        let Some(min_rtt) = min_rtt else { return };
        let elapsed = now.saturating_duration_since(start);
        if elapsed < min_rtt || elapsed.is_zero() {
            return;
        }
        let bytes = self.acked_bytes - bytes_at_start;
        let rate = u128::from(bytes) * 1_000_000_000 / elapsed.as_nanos();
        self.intervals += 1;
        self.rate_max
            .update(self.intervals, u64::try_from(rate).unwrap_or(u64::MAX));
        self.interval_start = Some((now, self.acked_bytes));
    }

    /// An RTT sample `rtt` (ACK delay removed) at `now`, with the path's
    /// `min_rtt` and the bytes in flight when the sample's packet was
    /// acknowledged. O(1).
    fn on_rtt_sample(&mut self, now: Time, rtt: Duration, min_rtt: Duration, in_flight: u64) {
        let Some(floor) = self.floor_bytes(min_rtt) else {
            return;
        };
        let packet_time = self.packet_time();
        let cap = *self.cap_bytes.get_or_insert(in_flight.max(floor));
        let target = min_rtt + self.max_queue_delay + packet_time;
        if rtt > target {
            if now >= self.next_decrease {
                let aim = min_rtt + self.max_queue_delay / 2 + packet_time;
                let scaled =
                    u128::from(in_flight.min(cap)) * aim.as_nanos() / rtt.as_nanos().max(1);
                self.cap_bytes = Some(u64::try_from(scaled).unwrap_or(u64::MAX).max(floor));
                self.next_decrease = now.saturating_add(rtt);
            }
        } else if in_flight.saturating_add(self.mss_bytes) >= cap {
            // The cap limits the sender: probe for a packet more per RTT.
            let grown = cap + (self.mss_bytes * self.mss_bytes / cap).max(1);
            self.cap_bytes = Some(grown.max(floor));
        } else {
            self.cap_bytes = Some(cap.max(floor));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1415;
    /// One full packet's time at 1 Mbit/s (125 000 bytes/s): 11.32 ms.
    const PACKET_NS: u64 = 11_320_000;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn ack(rtt: Option<Duration>, in_flight: u64) -> GuardAck {
        GuardAck {
            acked_bytes: MSS,
            rtt,
            min_rtt: Some(ms(40)),
            prior_in_flight_bytes: in_flight,
            cwnd_bytes: 100 * MSS,
        }
    }

    /// A guard that has seen one second of full packets acknowledged at
    /// 1 Mbit/s (no RTT samples, so no cap yet); returns the time reached.
    fn warmed(active_at: Time) -> (QueueGuard, Time) {
        let mut g = QueueGuard::new(ms(10), MSS, 2);
        let mut now = active_at;
        for _ in 0..90 {
            now += Duration::from_nanos(PACKET_NS);
            g.on_ack(now, &ack(None, 0));
        }
        g.on_priority_sent(now);
        (g, now)
    }

    #[test]
    fn inactive_guard_leaves_the_controllers_window() {
        let mut g = QueueGuard::new(ms(10), MSS, 2);
        g.on_ack(Time::ZERO, &ack(Some(ms(200)), 50_000));
        assert_eq!(g.cap_bytes(), None);
        assert_eq!(g.window_bytes(80_000), 80_000);
    }

    #[test]
    fn the_floor_and_the_packet_time_come_from_the_path() {
        let (g, _) = warmed(Time::from_millis(1_000));
        assert_eq!(g.rate_bytes_per_s(), Some(125_000));
        // 125 000 B/s · 40 ms = 5 000 bytes, plus the two packets the
        // peer receives before it acknowledges.
        assert_eq!(g.floor_bytes(ms(40)), Some(5_000 + 2 * MSS));
        assert_eq!(g.packet_time(), Duration::from_nanos(PACKET_NS));
        // Before a rate is known there is no floor, and no cap is set.
        let mut cold = QueueGuard::new(ms(10), MSS, 2);
        cold.on_priority_sent(Time::ZERO);
        cold.on_ack(Time::ZERO, &ack(Some(ms(152)), 40_000));
        assert_eq!(cold.floor_bytes(ms(40)), None);
        assert_eq!(cold.cap_bytes(), None);
    }

    #[test]
    fn a_standing_queue_shrinks_the_cap_to_the_target_delay() {
        let (mut g, now) = warmed(Time::from_millis(1_000));
        // 40 kB in flight over a 40 ms path: RTT 152 ms.
        g.on_ack(now, &ack(Some(ms(152)), 40_000));
        // 40 000 · (40 + 5 + 11.32) / 152 = 14 821 bytes.
        assert_eq!(g.cap_bytes(), Some(14_821));
        assert_eq!(g.window_bytes(80_000), 14_821);
        assert_eq!(
            g.window_bytes(5_000),
            5_000,
            "the controller's smaller window wins"
        );
        // No second decrease within the sample's RTT.
        let later = now + ms(100);
        g.on_ack(later, &ack(Some(ms(140)), 14_821));
        assert_eq!(g.cap_bytes(), Some(14_821));
        // Then one, never below the path's floor.
        g.on_ack(later + ms(100), &ack(Some(ms(400)), 14_821));
        assert_eq!(g.cap_bytes(), Some(5_000 + 2 * MSS));
        // A full packet's RTT on the empty path (min RTT + its 11.3 ms,
        // plus 10 ms of queue) is within the target: no decrease.
        g.on_ack(later + ms(600), &ack(Some(ms(61)), 5_000 + 2 * MSS));
        assert!(g.cap_bytes().unwrap() > 5_000 + 2 * MSS);
    }

    #[test]
    fn low_delay_grows_the_cap_by_about_a_packet_per_round_trip_when_it_limits() {
        let (mut g, mut now) = warmed(Time::ZERO);
        g.on_ack(now, &ack(Some(ms(45)), 10 * MSS));
        let start = g.cap_bytes().unwrap();
        // The first sample set the cap to what was in flight (and, within
        // the target, grew it once).
        assert_eq!(start, 10 * MSS + MSS / 10);
        // One round trip's worth of samples: ten packets' ACKs, the
        // sender at its cap.
        for _ in 1..=10 {
            now += ms(1);
            g.on_ack(now, &ack(Some(ms(45)), start));
        }
        let grown = g.cap_bytes().unwrap() - start;
        assert!((MSS * 9 / 10..=MSS * 11 / 10).contains(&grown), "{grown}");
        // An application-limited sender (far below the cap) grows nothing.
        let cap = g.cap_bytes().unwrap();
        for _ in 1..=10 {
            now += ms(1);
            g.on_ack(now, &ack(Some(ms(45)), 2 * MSS));
        }
        assert_eq!(g.cap_bytes(), Some(cap));
    }

    #[test]
    fn the_lapse_releases_the_cap_gradually() {
        let (mut g, now) = warmed(Time::from_millis(1_000));
        g.on_ack(now, &ack(Some(ms(152)), 40_000));
        let cap = g.cap_bytes().unwrap();
        // Still within HOLD of the latest class-0 packet: the cap holds.
        assert_eq!(g.cap_bytes_at(now + HOLD), Some(cap));
        // After HOLD each ACK adds what it acknowledged ...
        let mut t = now + HOLD + ms(1);
        let mut acks = 0;
        while let Some(c) = g.cap_bytes_at(t) {
            assert_eq!(c, cap + acks * MSS, "grows by the acknowledged bytes");
            g.on_ack(t, &ack(Some(ms(60)), c));
            t += ms(1);
            acks += 1;
        }
        // ... until it reaches the controller's window (100 packets).
        assert_eq!(acks, (100 * MSS - cap).div_ceil(MSS));
        assert_eq!(g.window_bytes(100 * MSS), 100 * MSS);
    }

    #[test]
    fn a_priority_packet_during_the_release_keeps_the_cap() {
        let (mut g, now) = warmed(Time::from_millis(1_000));
        g.on_ack(now, &ack(Some(ms(152)), 40_000));
        let t = now + HOLD + ms(1);
        g.on_ack(t, &ack(Some(ms(60)), 10_000));
        let cap = g.cap_bytes().unwrap();
        g.on_priority_sent(t);
        g.on_ack(t + ms(1), &ack(Some(ms(60)), 2 * MSS));
        assert_eq!(g.cap_bytes(), Some(cap));
    }

    #[test]
    fn the_packet_time_and_floor_follow_the_packet_size() {
        let (mut g, _) = warmed(Time::from_millis(1_000));
        // Started at the base size, then path MTU discovery finds
        // 1,452-byte datagrams: T and the floor's two held packets grow
        // with them (1,452 bytes at 125 000 bytes/s: 11.616 ms).
        g.set_mss(1_452);
        assert_eq!(g.packet_time(), Duration::from_nanos(11_616_000));
        assert_eq!(g.floor_bytes(ms(40)), Some(5_000 + 2 * 1_452));
    }

    #[test]
    fn no_priority_traffic_drops_the_cap() {
        let (mut g, now) = warmed(Time::ZERO);
        g.on_ack(now, &ack(Some(ms(152)), 14_000));
        assert!(g.cap_bytes().is_some());
        g.set_active(false);
        assert_eq!(g.window_bytes(80_000), 80_000);
        g.set_active(true);
        assert_eq!(g.cap_bytes(), None, "a fresh start measures again");
    }
}
