//! # Receive-queue bound: the window autotuned to this side's own drain
//!
//! When the receiver is the bottleneck — on loopback, or any path faster
//! than the receiving process — everything the peer's window lets be in
//! flight sits in this side's socket queue: 4 MiB at 2–5 Gbit/s is 6–15 ms
//! of queue on a path whose RTT is tens of microseconds. A priority
//! message waits behind it (issue 36), and so does the ACK that lets a
//! key update go on (RFC 9001 §6.1's wait, issue 37). A bigger window
//! buys nothing there: the process drains what it drains.
//!
//! The receiver measures that queue directly. The runtime hands every
//! datagram over with its kernel arrival time; the first `poll_transmit`
//! after a batch (the runtime's same turn, when the batch's ACKs and
//! deliveries leave) knows the time it was processed. `now − arrival` of
//! the *oldest* datagram of the batch is the turn's **sojourn**: the wait
//! in the socket queue plus the turn that read it, which is what a
//! priority message arriving at the head of the batch waits before its
//! ACK or its delivery (the newest datagram of a batch read to the end
//! of the queue would show the socket as empty however long the turn).
//! Over each interval of
//! [`INTERVALS_PER_TARGET`] targets the bound keeps the **minimum**
//! sojourn `m` — CoDel's reading: a process that was descheduled for a
//! while raises the maximum, only a standing queue raises the minimum —
//! and the bytes that arrived, the drain rate `R` over the interval.
//!
//! **Rule** (per interval, O(1)):
//! * `m > target`: a standing queue of about `R · m` bytes. The window
//!   is cut so that the excess over half the target drains, Vegas'
//!   reasoning: `cap = base − R · (m − target / 2)`, where `base` is the
//!   cap in force, or `R · (m + target)` (about what was in flight) at
//!   the first cut; never below the floor (4 of the largest datagrams,
//!   at least [`MIN_CAP_BYTES`]). The interval after a cut is not judged:
//!   the sender needs a round trip to honour the new window, and the
//!   queue time to drain.
//! * `m ≤ target / 2`: the queue is short; a cap in force grows by an
//!   eighth per interval (doubling in about six intervals), so a sender
//!   whose path got faster is not held, and it is dropped once it reaches
//!   the receive buffer.
//! * in between: held.
//!
//! The advertised window is `min(free receive buffer, application cap,
//! this cap)`. While the cap is in force the receiver also acknowledges
//! after a quarter of it in bytes
//! ([`QueueBound::ack_after_bytes`]), whatever ACK frequency the peer
//! asked for: a sender allowed a few datagrams must not wait for the
//! delayed-ACK timer.
//!
//! **Priority cap** (issue 36, item 4). The minimum ignores the moments
//! this process is descheduled, and rightly so for the standing queue; but
//! while priority (class-0) data arrives, those moments are what a
//! priority message waits behind: during a stall of a few milliseconds
//! the peer goes on sending until its window is full, and once this side
//! runs again it must read all of that before it reaches the priority
//! datagram queued behind it. With the 32 MiB receive buffer of `perf`
//! and a congestion window of 3–5 MB on loopback, that backlog made the
//! p99 of priority messages beside bulk 2–4 ms. So, while class-0 data
//! arrived within [`PRIORITY_HOLD`], on a fast path (smoothed RTT below
//! the target) and once an interval has shown a stall (its *maximum*
//! sojourn above the target), the window is also capped at what this side
//! drains in one RTT plus the target, `R · (srtt + target)` (at least the
//! floor): enough for the peer to keep sending at the drain rate, with
//! room for more than doubling per RTT since `srtt < target`, and a stall
//! piles up at most that much (about 1.3 MB at 1.1 GB/s) ahead of the next
//! priority message. It is recomputed every interval and dropped once no
//! class-0 data arrived for [`PRIORITY_HOLD`].
//!
//! Where the network is the bottleneck the socket queue stays empty and
//! the bound never acts; in the simulator a datagram is processed at its
//! arrival time (sojourn 0), so simulated runs are unchanged (neither a
//! standing queue nor a stall is ever seen).
//! `ConnectionConfig::receive_queue_target` sets the target (1 ms by
//! default); `None` turns the bound off.

use peregrine_cc::Time;
use std::time::Duration;

/// The interval over which the minimum sojourn is taken, in targets
/// (4 ms at the default 1 ms target): long enough that a standing queue
/// shows in every batch of it, short enough to follow a bulk transfer's
/// start.
pub const INTERVALS_PER_TARGET: u32 = 4;
/// The smallest cap, bytes: a sender always has room for some datagrams.
pub const MIN_CAP_BYTES: u64 = 64 * 1024;
/// How long after the latest class-0 data the priority cap stays (the
/// queue guard's hold, `recovery/queue_guard.rs`).
pub const PRIORITY_HOLD: Duration = Duration::from_millis(500);

/// The receive-queue bound of one connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct QueueBound {
    /// The allowed standing sojourn; `None`: off.
    target: Option<Duration>,
    /// Arrival of the oldest datagram handled since the last sample.
    oldest_arrival: Option<Time>,
    /// Start of the current interval (its first sample).
    interval_start: Option<Time>,
    /// Bytes of the datagrams sampled in the current interval.
    interval_bytes: u64,
    /// Smallest sojourn of the current interval.
    min_sojourn: Option<Duration>,
    /// Largest sojourn of the current interval (a stall shows here).
    max_sojourn: Duration,
    /// Class-0 data arrived recently: the priority cap may act until then.
    priority_until: Option<Time>,
    /// A stall was seen while priority data arrived (the priority cap is
    /// engaged until the priority data lapses).
    stall_seen: bool,
    /// The priority cap on the advertised window, bytes; `None`: not in
    /// force.
    priority_cap: Option<u64>,
    /// The interval after a cut is not judged.
    settling: bool,
    /// The largest datagram seen, bytes (the floor's unit).
    largest_datagram: u64,
    /// The cap on the advertised window, bytes; `None`: not in force.
    cap: Option<u64>,
    /// The last completed interval's minimum sojourn (reported).
    last_min_sojourn: Option<Duration>,
    /// Times the cap was cut.
    cuts: u64,
}

/// What the bound reports in the connection's stats.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueBoundStats {
    /// The cap on the advertised window in force, bytes.
    pub cap_bytes: Option<u64>,
    /// The minimum socket-queue sojourn of the last completed interval.
    pub min_sojourn: Option<Duration>,
    /// Times the cap was cut.
    pub cuts: u64,
    /// The priority cap in force (while class-0 data arrives), bytes;
    /// the window is at most the smaller of the two caps.
    pub priority_cap_bytes: Option<u64>,
}

impl QueueBound {
    /// A bound with `target` (`None`: off).
    pub(crate) fn new(target: Option<Duration>) -> QueueBound {
        QueueBound {
            target: target.filter(|t| !t.is_zero()),
            ..QueueBound::default()
        }
    }

    /// A datagram of `bytes` that arrived at `arrived` was handled;
    /// `priority`: it carried class-0 data. O(1).
    pub(crate) fn on_datagram(&mut self, arrived: Time, bytes: u64, priority: bool) {
        if self.target.is_none() {
            return;
        }
        if priority {
            self.priority_until = Some(arrived + PRIORITY_HOLD);
        }
        self.oldest_arrival = Some(self.oldest_arrival.map_or(arrived, |a| a.min(arrived)));
        self.interval_bytes = self.interval_bytes.saturating_add(bytes);
        self.largest_datagram = self.largest_datagram.max(bytes);
    }

    /// Whether [`on_poll`](Self::on_poll) has a sample to take (a target,
    /// and a datagram handed over since the last poll): when not, it does
    /// nothing, and the caller need not read what it would pass. O(1).
    pub(crate) fn has_sample(&self) -> bool {
        self.target.is_some() && self.oldest_arrival.is_some()
    }

    /// The connection is polled at `now`, after the datagrams handed over
    /// since the last poll were processed: one sojourn sample, and the
    /// interval's decision once it is complete. `buffer_bytes` is the
    /// receive buffer (a cap that reaches it is dropped); `srtt` the
    /// connection's smoothed RTT, if any (the priority cap's). O(1).
    pub(crate) fn on_poll(&mut self, now: Time, buffer_bytes: u64, srtt: Option<Duration>) {
        let Some(target) = self.target else {
            return;
        };
        let Some(arrived) = self.oldest_arrival.take() else {
            return;
        };
        let sojourn = now.saturating_duration_since(arrived);
        self.min_sojourn = Some(self.min_sojourn.map_or(sojourn, |m| m.min(sojourn)));
        self.max_sojourn = self.max_sojourn.max(sojourn);
        let start = *self.interval_start.get_or_insert(now);
        let elapsed = now.saturating_duration_since(start);
        let interval = target.saturating_mul(INTERVALS_PER_TARGET);
        if elapsed < interval {
            return;
        }
        let m = self.min_sojourn.unwrap_or_default();
        let max = std::mem::take(&mut self.max_sojourn);
        let rate_bytes_per_s = self.interval_bytes as f64 / elapsed.as_secs_f64();
        self.last_min_sojourn = Some(m);
        self.interval_start = None;
        self.interval_bytes = 0;
        self.min_sojourn = None;
        let floor = MIN_CAP_BYTES.max(4 * self.largest_datagram);
        self.update_priority_cap(now, target, srtt, max, rate_bytes_per_s, floor);
        if std::mem::take(&mut self.settling) {
            return;
        }
        if m > target {
            let base = self
                .cap
                .unwrap_or_else(|| bytes_in(rate_bytes_per_s, m + target));
            let excess = bytes_in(rate_bytes_per_s, m - target / 2);
            self.cap = Some(base.saturating_sub(excess).max(floor));
            self.cuts += 1;
            self.settling = true;
        } else if m <= target / 2 {
            if let Some(cap) = self.cap {
                let grown = cap.saturating_add(cap / 8);
                self.cap = (grown < buffer_bytes).then_some(grown);
            }
        }
    }

    /// The priority cap at the end of an interval (module docs): engaged
    /// by a stall while class-0 data arrives on a fast path, recomputed
    /// from this interval's drain rate, dropped when the priority data
    /// lapses or the path is no longer fast. O(1).
    fn update_priority_cap(
        &mut self,
        now: Time,
        target: Duration,
        srtt: Option<Duration>,
        max_sojourn: Duration,
        rate_bytes_per_s: f64,
        floor: u64,
    ) {
        let active =
            self.priority_until.is_some_and(|t| now < t) && srtt.is_some_and(|s| s < target);
        if !active {
            self.stall_seen = false;
            self.priority_cap = None;
            return;
        }
        self.stall_seen |= max_sojourn > target;
        if self.stall_seen {
            let srtt = srtt.unwrap_or_default();
            self.priority_cap = Some(bytes_in(rate_bytes_per_s, srtt + target).max(floor));
        }
    }

    /// The cap on the advertised window in force, bytes: the smaller of
    /// the standing-queue cap and the priority cap.
    pub(crate) fn cap(&self) -> Option<u64> {
        match (self.cap, self.priority_cap) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Acknowledge after this many bytes while the cap is in force (a
    /// quarter of it), whatever the ACK frequency.
    pub(crate) fn ack_after_bytes(&self) -> Option<usize> {
        self.cap()
            .map(|c| usize::try_from(c / 4).unwrap_or(usize::MAX).max(1))
    }

    /// What the stats report.
    pub(crate) fn stats(&self) -> QueueBoundStats {
        QueueBoundStats {
            cap_bytes: self.cap,
            min_sojourn: self.last_min_sojourn,
            cuts: self.cuts,
            priority_cap_bytes: self.priority_cap,
        }
    }
}

/// Bytes that `rate` moves in `d`.
fn bytes_in(rate_bytes_per_s: f64, d: Duration) -> u64 {
    // Float to integer saturates; a rate is never negative.
    (rate_bytes_per_s * d.as_secs_f64()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const BUFFER: u64 = 32 << 20;

    fn at(us: u64) -> Time {
        Time::ZERO + Duration::from_micros(us)
    }

    /// Feed `bound` a batch of `n` datagrams of `size` bytes every
    /// `every_us`, each processed `sojourn_us` after its arrival, from
    /// `from_us` for `for_us`.
    fn feed(
        bound: &mut QueueBound,
        from_us: u64,
        for_us: u64,
        every_us: u64,
        sojourn_us: u64,
        size: u64,
    ) {
        let mut t = from_us;
        while t < from_us + for_us {
            bound.on_datagram(at(t), size, false);
            bound.on_poll(at(t + sojourn_us), BUFFER, None);
            t += every_us;
        }
    }

    #[test]
    fn a_standing_queue_cuts_the_window_to_about_the_target_at_the_drain_rate() {
        let mut b = QueueBound::new(Some(MS));
        // 64 KiB every 100 µs (5.2 Gbit/s), each batch 8 ms in the queue.
        feed(&mut b, 0, 4_100, 100, 8_000, 65_536);
        let cap = b.cap().expect("cut");
        // R · (m + t) − R · (m − t/2) = R · 1.5 t ≈ 983 KB.
        let rate = 65_536.0 / 100e-6;
        let expect = rate * 1.5e-3;
        assert!(
            (cap as f64 - expect).abs() < expect * 0.1,
            "cap {cap}, expected about {expect}"
        );
        assert_eq!(b.ack_after_bytes(), Some((cap / 4) as usize));
        assert_eq!(b.stats().cuts, 1);
        assert!(b.stats().min_sojourn.unwrap() >= 8 * MS);
    }

    #[test]
    fn a_poll_without_a_sample_changes_nothing() {
        // `poll_transmit` skips `on_poll` when `has_sample` says no: the
        // skipped call must be one that would not have changed anything.
        let mut off = QueueBound::new(None);
        off.on_datagram(at(0), 1_000, false);
        let mut b = QueueBound::new(Some(MS));
        let mut t = 0;
        for i in 0..300u64 {
            for q in [&mut b, &mut off] {
                if !q.has_sample() {
                    let before = format!("{q:?}");
                    q.on_poll(at(t), BUFFER, None);
                    assert_eq!(before, format!("{q:?}"));
                }
            }
            if i % 3 != 0 {
                b.on_datagram(at(t), 65_536, false);
                assert!(b.has_sample());
            }
            b.on_poll(at(t + 2_000), BUFFER, None);
            assert!(!b.has_sample());
            t += 100;
        }
        assert!(!off.has_sample());
    }

    #[test]
    fn a_descheduled_moment_is_not_a_standing_queue() {
        let mut b = QueueBound::new(Some(MS));
        // Mostly 50 µs in the queue, one batch in ten 20 ms late: the
        // minimum stays low, nothing is cut.
        let mut t = 0;
        for i in 0..200u64 {
            b.on_datagram(at(t), 65_536, false);
            let sojourn = if i % 10 == 0 { 20_000 } else { 50 };
            b.on_poll(at(t + sojourn), BUFFER, None);
            t += 100;
        }
        assert_eq!(b.cap(), None);
        assert_eq!(b.ack_after_bytes(), None);
    }

    #[test]
    fn the_cap_never_falls_below_the_floor_and_grows_back_when_the_queue_is_gone() {
        let mut b = QueueBound::new(Some(MS));
        // A slow drain (64 KiB per ms) with a huge queue: cut to the floor.
        feed(&mut b, 0, 20_000, 1_000, 50_000, 65_536);
        assert_eq!(b.cap(), Some(4 * 65_536));
        // Then no queue: the cap grows an eighth per interval until it
        // reaches the buffer and is dropped.
        let mut last = b.cap().unwrap();
        let mut t = 100_000;
        let mut grew = 0;
        while b.cap().is_some() {
            feed(&mut b, t, 4_000, 100, 10, 65_536);
            t += 4_000;
            if let Some(c) = b.cap() {
                assert!(c >= last);
                grew += u32::from(c > last);
                last = c;
            }
            assert!(t < 10_000_000, "never released");
        }
        assert!(grew > 10);
    }

    #[test]
    fn a_long_turn_counts_from_its_oldest_datagram() {
        let mut b = QueueBound::new(Some(MS));
        // Turns of 16 datagrams that arrived over 3 ms, processed right
        // after the newest arrived: the socket looks empty (newest waited
        // 10 µs) but the head of each turn waited 3 ms.
        let mut t = 0;
        while t < 20_000 {
            for i in 0..16 {
                b.on_datagram(at(t + i * 200), 65_536, false);
            }
            b.on_poll(at(t + 15 * 200 + 10), BUFFER, None);
            t += 3_200;
        }
        assert!(b.stats().min_sojourn.unwrap() >= 3 * MS);
        assert!(b.cap().is_some());
    }

    #[test]
    fn off_and_zero_sojourn_never_cap() {
        let mut off = QueueBound::new(None);
        feed(&mut off, 0, 50_000, 100, 8_000, 65_536);
        assert_eq!(off.cap(), None);
        // The simulator processes a datagram at its arrival time.
        let mut sim = QueueBound::new(Some(MS));
        feed(&mut sim, 0, 50_000, 100, 0, 65_536);
        assert_eq!(sim.cap(), None);
        assert_eq!(sim.stats().cuts, 0);
    }

    /// Feed `bound` a 64 KiB batch every 100 µs from `from_us` for
    /// `for_us` (5.2 Gbit/s), each processed 50 µs after its arrival,
    /// except that every 4 ms the process is descheduled for `stall_us`:
    /// what arrives meanwhile is processed in one turn at the stall's end.
    /// Every batch carries class-0 data when `priority`; `srtt` is the
    /// connection's.
    fn feed_priority(
        bound: &mut QueueBound,
        from_us: u64,
        for_us: u64,
        stall_us: u64,
        priority: bool,
        srtt: Option<Duration>,
    ) {
        let mut t = from_us;
        while t < from_us + for_us {
            let in_cycle = (t - from_us) % 4_000;
            bound.on_datagram(at(t), 65_536, priority);
            if in_cycle + 100 > stall_us.max(100) || in_cycle + 100 >= 4_000 {
                // Processed: 50 µs after arrival, or at the stall's end.
                let done = (t - in_cycle + stall_us).max(t + 50);
                bound.on_poll(at(done), BUFFER, srtt);
            }
            t += 100;
        }
    }

    #[test]
    fn a_stall_beside_priority_data_caps_the_window_at_a_round_trip_and_the_target() {
        let mut b = QueueBound::new(Some(MS));
        let srtt = Duration::from_micros(200);
        feed_priority(&mut b, 0, 20_000, 3_000, true, Some(srtt));
        // The minimum sojourn stays at 50 µs: no standing-queue cut.
        assert_eq!(b.stats().cuts, 0);
        let cap = b.stats().priority_cap_bytes.expect("priority cap");
        // R · (srtt + target) = 655 MB/s · 1.2 ms ≈ 786 KB.
        let expect = 65_536.0 / 100e-6 * 1.2e-3;
        assert!(
            (cap as f64 - expect).abs() < expect * 0.1,
            "cap {cap}, expected about {expect}"
        );
        assert_eq!(b.cap(), Some(cap));
        assert_eq!(b.ack_after_bytes(), Some((cap / 4) as usize));
        // It allows more than twice what one round trip carries.
        assert!(cap as f64 > 2.0 * 65_536.0 / 100e-6 * srtt.as_secs_f64());
        // No class-0 data for the hold: dropped.
        feed_priority(&mut b, 20_000, 600_000, 3_000, false, Some(srtt));
        assert_eq!(b.stats().priority_cap_bytes, None);
        assert_eq!(b.cap(), None);
    }

    #[test]
    fn the_priority_cap_needs_priority_data_a_stall_and_a_fast_path() {
        let srtt = Some(Duration::from_micros(200));
        // Bulk only.
        let mut b = QueueBound::new(Some(MS));
        feed_priority(&mut b, 0, 20_000, 3_000, false, srtt);
        assert_eq!(b.cap(), None);
        // No stall: the largest sojourn stays under the target.
        let mut b = QueueBound::new(Some(MS));
        feed_priority(&mut b, 0, 20_000, 900, true, srtt);
        assert_eq!(b.cap(), None);
        // A path whose RTT is the target or more: a cap of R · (srtt +
        // target) could hold its slow start back; not applied.
        let mut b = QueueBound::new(Some(MS));
        feed_priority(&mut b, 0, 20_000, 3_000, true, Some(MS));
        assert_eq!(b.cap(), None);
        // No RTT known yet.
        let mut b = QueueBound::new(Some(MS));
        feed_priority(&mut b, 0, 20_000, 3_000, true, None);
        assert_eq!(b.cap(), None);
        // The bound off.
        let mut b = QueueBound::new(None);
        feed_priority(&mut b, 0, 20_000, 3_000, true, srtt);
        assert_eq!(b.cap(), None);
    }

    #[test]
    fn the_simulator_never_engages_the_priority_cap() {
        // Processed at arrival (sojourn 0), class-0 data, a fast path.
        let mut b = QueueBound::new(Some(MS));
        let mut t = 0;
        while t < 50_000 {
            b.on_datagram(at(t), 65_536, true);
            b.on_poll(at(t), BUFFER, Some(Duration::from_micros(100)));
            t += 100;
        }
        assert_eq!(b.cap(), None);
        assert_eq!(b.stats().priority_cap_bytes, None);
    }
}
