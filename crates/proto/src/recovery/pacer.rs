//! # The pacer: a token bucket with burst credit
//!
//! The controller gives a pacing rate; this bucket turns it into bursts.
//! Tokens (bytes) accrue at the pacing rate up to a capacity of
//! `max(MIN_BURST_PACKETS packets, BURST_INTERVAL at the rate)`, at most
//! [`MAX_BURST_PACKETS`] packets and never more than the congestion
//! window (quinn-proto's `pacing.rs` is the model). A packet leaves while
//! the bucket holds its size; once it cannot hold another full packet,
//! the next release is when it has gained `max(one packet,
//! RELEASE_INTERVAL at the rate)` more, or is full if that comes first.
//!
//! Why bursts: a sender paced one datagram at a time wakes its driver
//! once per datagram (tens of thousands of times a second at 100 Mbit/s),
//! cannot hand the kernel more than one datagram per system call (no
//! GSO), and needs sub-millisecond timers that an OS only honours by
//! spinning. With a release every [`RELEASE_INTERVAL`] (1 ms) at most,
//! the driver sleeps on an ordinary timer and sends what accumulated in
//! one batch. A late wake-up costs no rate: the tokens keep accruing up
//! to the capacity (2 ms at the rate), so oversleeping a 1 ms timer by up
//! to 1 ms still sends on average at the pacing rate.
//!
//! Below `MSS / RELEASE_INTERVAL` (≈ 11.6 Mbit/s with 1,452-byte packets)
//! a release is one packet, as before: slow links see no bursts.
//!
//! **Fine pacing** ([`PaceInputs::fine`], issue 35; the UDP runtime's
//! default, never the simulator's): every release is one packet, at the
//! rate — datagram gaps of one packet's time at the pacing rate, however
//! fast. The credit is the same as above, so a wake-up up to 2 ms late
//! is made up by a burst, not lost (with a smaller credit, 250 µs, BBR
//! lost a quarter of its goodput through `peregrine emu` on a loaded
//! machine). A release comes when the bucket holds one packet, so a send
//! that left a few µs late shortens the next gap by that much instead of
//! banking the lateness until it lets out a back-to-back pair. The
//! runtime waits for the sub-millisecond gaps on its own thread, in naps
//! aimed early by its learnt wake-up lateness (`crates/net/src/pacing.rs`).
//!
//! **Scalable senders** ([`PaceInputs::max_burst`], issue 41): a
//! controller may cap the credit to a time at the rate
//! ([`peregrine_cc::CongestionController::max_pacing_burst`]; Prague: 250
//! µs, at least one packet). An L4S AQM marks every packet queued beyond
//! its ~1 ms step threshold, so the common credit of 10 packets (5.8 ms
//! at 20 Mbit/s), released when an ACK opens the window, draws a round of
//! marks by itself. Other controllers are unchanged.
//!
//! All entry points are O(1); nothing allocates.

use peregrine_cc::Time;
use std::time::Duration;

/// Tokens accrue up to at least this many packets.
pub const MIN_BURST_PACKETS: u64 = 10;
/// Tokens accrue up to at most this many packets (a 64 KiB GSO super-
/// datagram holds 45 of 1,452 bytes; a few of those per burst).
pub const MAX_BURST_PACKETS: u64 = 256;
/// Tokens accrue for this long at the pacing rate (capacity), unless
/// [`MIN_BURST_PACKETS`] or [`MAX_BURST_PACKETS`] decides.
pub const BURST_INTERVAL: Duration = Duration::from_millis(2);
/// An empty bucket is released when this much of the rate has accrued
/// (or one packet, if that takes longer): the shortest gap between two
/// bursts, long enough for an ordinary (1 ms resolution) timer.
pub const RELEASE_INTERVAL: Duration = Duration::from_millis(1);

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Bytes accrued in `d` at `rate_bytes_per_sec`.
fn bytes_in(d: Duration, rate_bytes_per_sec: u64) -> u64 {
    let b = d.as_nanos() * u128::from(rate_bytes_per_sec) / NANOS_PER_SEC;
    u64::try_from(b).unwrap_or(u64::MAX)
}

/// Time to accrue `bytes` at `rate_bytes_per_sec` (rounded up; the rate
/// is at least 1).
fn time_for(bytes: u64, rate_bytes_per_sec: u64) -> Duration {
    let rate = u128::from(rate_bytes_per_sec.max(1));
    let ns = (u128::from(bytes) * NANOS_PER_SEC).div_ceil(rate);
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// What the pacer needs to know of the path at each call.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PaceInputs {
    /// The controller's pacing rate, bytes per second (at least 1).
    pub rate_bytes_per_sec: u64,
    /// The congestion window, bytes.
    pub cwnd_bytes: u64,
    /// The largest packet, bytes.
    pub mss_bytes: u64,
    /// Fine pacing: one-packet releases (module docs).
    pub fine: bool,
    /// The controller's burst limit, time at the rate (`None`: the common
    /// credit; scalable controllers ask for less, module docs).
    pub max_burst: Option<Duration>,
}

impl PaceInputs {
    /// The bucket's capacity, bytes: `max(10 packets, 2 ms at the rate)`,
    /// at most 256 packets, the congestion window and the controller's
    /// `max_burst` at the rate, at least one packet.
    pub fn capacity_bytes(&self) -> u64 {
        let mss = self.mss_bytes.max(1);
        let limit = self
            .max_burst
            .map_or(u64::MAX, |d| bytes_in(d, self.rate_bytes_per_sec));
        bytes_in(BURST_INTERVAL, self.rate_bytes_per_sec)
            .max(MIN_BURST_PACKETS * mss)
            .min(MAX_BURST_PACKETS * mss)
            .min(self.cwnd_bytes)
            .min(limit)
            .max(mss)
    }

    /// How full an empty bucket must be before it is released, bytes:
    /// `max(one packet, 1 ms at the rate)`, at most the capacity.
    pub fn release_bytes(&self) -> u64 {
        let interval = if self.fine {
            Duration::ZERO
        } else {
            RELEASE_INTERVAL
        };
        bytes_in(interval, self.rate_bytes_per_sec)
            .max(self.mss_bytes.max(1))
            .min(self.capacity_bytes())
    }
}

/// The token bucket of one connection's pacer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pacer {
    /// Tokens at `at`, bytes.
    tokens_bytes: u64,
    /// When `tokens_bytes` was last brought up to date; `None` before the
    /// first send (the bucket starts full).
    at: Option<Time>,
    /// The bucket ran dry: nothing leaves before this instant.
    hold_until: Option<Time>,
}

impl Pacer {
    /// A full bucket.
    pub fn new() -> Pacer {
        Pacer::default()
    }

    /// Tokens at `now`, bytes (the stored tokens plus what accrued since,
    /// at most the capacity). O(1).
    pub fn tokens_bytes(&self, now: Time, p: &PaceInputs) -> u64 {
        let cap = p.capacity_bytes();
        match self.at {
            None => cap,
            Some(at) => {
                let accrued = bytes_in(now.saturating_duration_since(at), p.rate_bytes_per_sec);
                self.tokens_bytes.saturating_add(accrued).min(cap)
            }
        }
    }

    /// When a packet of `size` bytes may leave: `None` now, else the
    /// instant of the next release. Stable between sends (a caller may ask
    /// any number of times; the answer only moves if the rate or window
    /// changed). O(1).
    pub fn next_release(&self, now: Time, size: u64, p: &PaceInputs) -> Option<Time> {
        if let Some(h) = self.hold_until.filter(|h| now < *h) {
            return Some(h);
        }
        let tokens = self.tokens_bytes(now, p);
        // A packet larger than the whole bucket (a tiny window) leaves
        // from a full bucket.
        if tokens >= size.min(p.capacity_bytes()) {
            return None;
        }
        Some(self.refill_at(p))
    }

    /// When the bucket, as last stored, has gained its release amount
    /// (1 ms of the rate, or a packet), or is full if that comes first:
    /// a wait of at least 1 ms after the last send unless a small window
    /// caps the bucket. Fine pacing releases when the bucket *holds* one
    /// packet: a send that left late keeps its lateness as credit, which
    /// shortens the next gap instead of adding up to a back-to-back pair
    /// (the runtime's wake-ups end a few µs late; issue 35).
    fn refill_at(&self, p: &PaceInputs) -> Time {
        let at = self.at.unwrap_or(Time::ZERO);
        let release = if p.fine {
            p.release_bytes().saturating_sub(self.tokens_bytes)
        } else {
            p.release_bytes()
        };
        let missing = release.min(p.capacity_bytes().saturating_sub(self.tokens_bytes));
        at + time_for(missing, p.rate_bytes_per_sec)
    }

    /// A packet of `size` bytes left at `now`: take its tokens; if the
    /// bucket cannot send another full packet, hold it until it has
    /// gained its release amount. O(1).
    pub fn on_sent(&mut self, now: Time, size: u64, p: &PaceInputs) {
        let tokens = self.tokens_bytes(now, p);
        self.tokens_bytes = tokens.saturating_sub(size);
        self.at = Some(now);
        self.hold_until = None;
        if self.tokens_bytes < p.mss_bytes.max(1).min(p.capacity_bytes()) {
            self.hold_until = Some(self.refill_at(p));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MSS: u64 = 1452;

    fn inputs(rate_bps: u64, cwnd_packets: u64) -> PaceInputs {
        PaceInputs {
            rate_bytes_per_sec: rate_bps / 8,
            cwnd_bytes: cwnd_packets * MSS,
            mss_bytes: MSS,
            fine: false,
            max_burst: None,
        }
    }

    fn us(n: u64) -> Time {
        Time::from_nanos(n * 1_000)
    }

    /// Send whenever allowed, jumping to each release; the send times.
    fn run(p: &PaceInputs, packets: usize) -> Vec<Time> {
        let mut pacer = Pacer::new();
        let mut now = Time::ZERO;
        let mut sent = Vec::new();
        while sent.len() < packets {
            match pacer.next_release(now, MSS, p) {
                None => {
                    pacer.on_sent(now, MSS, p);
                    sent.push(now);
                }
                Some(t) => {
                    assert!(t > now, "a release is in the future");
                    now = t;
                }
            }
        }
        sent
    }

    #[test]
    fn capacity_is_ten_packets_or_two_ms_clamped_by_the_window() {
        // 100 Mbit/s: 2 ms = 25,000 bytes (17.2 packets) > 10 packets.
        assert_eq!(inputs(100_000_000, 1000).capacity_bytes(), 25_000);
        // 10 Mbit/s: 2 ms = 2,500 bytes < 10 packets.
        assert_eq!(inputs(10_000_000, 1000).capacity_bytes(), 10 * MSS);
        // 100 Gbit/s: at most 256 packets.
        assert_eq!(inputs(100_000_000_000, 1000).capacity_bytes(), 256 * MSS);
        // A window of 4 packets caps it.
        assert_eq!(inputs(100_000_000, 4).capacity_bytes(), 4 * MSS);
        // Never below one packet.
        assert_eq!(inputs(100_000_000, 0).capacity_bytes(), MSS);
    }

    #[test]
    fn fine_pacing_spaces_every_packet_at_the_rate() {
        for rate_bps in [20_000_000u64, 100_000_000, 500_000_000] {
            let p = PaceInputs {
                fine: true,
                ..inputs(rate_bps, 1000)
            };
            let gap_ns = MSS * 8 * 1_000_000_000 / rate_bps;
            let sent = run(&p, 200);
            // After the initial credit, one packet per packet time.
            let credit = (p.capacity_bytes() / MSS) as usize;
            for w in sent[credit + 1..].windows(2) {
                let gap = (w[1] - w[0]).as_nanos() as u64;
                assert!(
                    gap.abs_diff(gap_ns) <= 1,
                    "{rate_bps}: gap {gap} ns, want {gap_ns}"
                );
            }
        }
    }

    #[test]
    fn fine_pacing_spends_a_late_sends_credit_on_the_next_gap_not_a_pair() {
        // 100 Mbit/s: 116.16 µs per packet. The driver wakes 20 µs late
        // for every other release: each late gap is followed by a short
        // one (the credit), never by two packets at once, and the rate
        // holds.
        let p = PaceInputs {
            fine: true,
            ..inputs(100_000_000, 1000)
        };
        let gap_ns = MSS * 8 * 1_000_000_000 / 100_000_000;
        let mut pacer = Pacer::new();
        let mut now = Time::ZERO;
        let mut sent = Vec::new();
        let mut late = false;
        while sent.len() < 400 {
            match pacer.next_release(now, MSS, &p) {
                None => {
                    pacer.on_sent(now, MSS, &p);
                    sent.push(now);
                }
                Some(t) => {
                    late = !late;
                    now = t + Duration::from_micros(if late { 20 } else { 0 });
                }
            }
        }
        let credit = (p.capacity_bytes() / MSS) as usize;
        let gaps: Vec<u64> = sent[credit + 1..]
            .windows(2)
            .map(|w| (w[1] - w[0]).as_nanos() as u64)
            .collect();
        assert!(
            gaps.iter().all(|&g| g.abs_diff(gap_ns) <= 20_001),
            "no pairs: {:?}",
            &gaps[..8]
        );
        let span = sent[399].saturating_duration_since(sent[credit + 1]);
        let rate_bps = (398 - credit) as f64 * MSS as f64 * 8.0 / span.as_secs_f64();
        assert!((rate_bps / 100e6 - 1.0).abs() < 0.01, "{rate_bps}");
    }

    #[test]
    fn at_100_mbps_bursts_leave_at_least_1_ms_apart_at_the_rate() {
        let p = inputs(100_000_000, 1000);
        let sent = run(&p, 2000);
        // The first burst is the full bucket (17 packets); then about 1 ms
        // worth (12,500 bytes: 8–9 packets) per release.
        let mut gaps = sent
            .windows(2)
            .map(|w| w[1].saturating_duration_since(w[0]))
            .filter(|g| !g.is_zero());
        assert!(gaps.all(|g| g >= Duration::from_micros(999)), "gaps ≥ 1 ms");
        let bursts = 1 + sent.windows(2).filter(|w| w[1] > w[0]).count();
        assert!(bursts < 2000 / 8, "{bursts} wake-ups for 2000 packets");
        // Long-run rate: within 1 % of 100 Mbit/s.
        let elapsed = sent[1999].saturating_duration_since(sent[17]);
        let rate_bps = (1999 - 17) as f64 * MSS as f64 * 8.0 / elapsed.as_secs_f64();
        assert!((rate_bps / 100e6 - 1.0).abs() < 0.01, "{rate_bps}");
    }

    #[test]
    fn below_one_packet_per_ms_a_release_is_one_packet() {
        // 1 Mbit/s: a packet takes 11.6 ms; after the first bucket, one
        // packet per release at exactly the packet's time.
        let p = inputs(1_000_000, 1000);
        let sent = run(&p, 30);
        let gap = sent[29].saturating_duration_since(sent[28]);
        assert_eq!(gap, time_for(MSS, 125_000));
        assert_eq!(sent.windows(2).filter(|w| w[1] == w[0]).count(), 9);
    }

    #[test]
    fn a_controller_burst_limit_caps_the_credit_and_keeps_the_rate() {
        // Prague's 250 µs: at 20 Mbit/s less than a packet, so one packet
        // per release even from a full bucket; at 1 Gbit/s 31,250 bytes.
        for (rate_bps, burst_packets) in [(20_000_000u64, 1usize), (1_000_000_000, 21)] {
            let p = PaceInputs {
                max_burst: Some(Duration::from_micros(250)),
                ..inputs(rate_bps, 1000)
            };
            let sent = run(&p, 4000);
            let first_burst = sent.iter().take_while(|t| **t == sent[0]).count();
            assert_eq!(first_burst, burst_packets, "{rate_bps}");
            let longest = sent
                .chunk_by(|a, b| a == b)
                .map(<[Time]>::len)
                .max()
                .unwrap_or(0);
            assert!(longest <= burst_packets, "{rate_bps}: burst of {longest}");
            let elapsed = sent[3999].saturating_duration_since(sent[first_burst]);
            let rate = (3999 - first_burst) as f64 * MSS as f64 * 8.0 / elapsed.as_secs_f64();
            assert!(
                (rate / rate_bps as f64 - 1.0).abs() < 0.02,
                "{rate_bps}: {rate}"
            );
        }
        // No limit: the common credit.
        assert_eq!(inputs(20_000_000, 1000).capacity_bytes(), 10 * MSS);
    }

    #[test]
    fn a_late_wake_up_keeps_the_rate() {
        // The driver wakes 900 µs after each release (a coarse timer):
        // the bucket (2 ms) absorbs it and the rate holds.
        let p = inputs(100_000_000, 1000);
        let mut pacer = Pacer::new();
        let mut now = Time::ZERO;
        let mut bytes = 0u64;
        let start_bytes = p.capacity_bytes();
        while now < Time::from_millis(1000) {
            match pacer.next_release(now, MSS, &p) {
                None => {
                    pacer.on_sent(now, MSS, &p);
                    bytes += MSS;
                }
                Some(t) => now = t + Duration::from_micros(900),
            }
        }
        let rate_bps = (bytes - start_bytes) as f64 * 8.0 / now.as_secs_f64();
        assert!((rate_bps / 100e6 - 1.0).abs() < 0.02, "{rate_bps}");
    }

    #[test]
    fn the_release_is_stable_between_sends() {
        let p = inputs(100_000_000, 1000);
        let mut pacer = Pacer::new();
        for _ in 0..17 {
            assert_eq!(pacer.next_release(us(0), MSS, &p), None);
            pacer.on_sent(us(0), MSS, &p);
        }
        let r = pacer.next_release(us(0), MSS, &p).expect("empty");
        assert_eq!(pacer.next_release(us(300), MSS, &p), Some(r));
        assert_eq!(pacer.next_release(us(900), MSS, &p), Some(r));
        assert_eq!(pacer.next_release(r, MSS, &p), None);
    }

    proptest! {
        /// Whatever the rate, window, burst limit and schedule of looks,
        /// no interval carries more than the bucket plus what accrued in it.
        #[test]
        fn never_more_than_capacity_plus_rate(
            rate_bps in 1_000u64..10_000_000_000,
            cwnd_packets in 1u64..500,
            steps in proptest::collection::vec(0u64..3_000, 1..300),
            burst_us in proptest::option::of(1u64..5_000),
        ) {
            let p = PaceInputs {
                max_burst: burst_us.map(Duration::from_micros),
                ..inputs(rate_bps, cwnd_packets)
            };
            let mut pacer = Pacer::new();
            let mut now = Time::ZERO;
            let mut bytes = 0u64;
            for step in steps {
                now += Duration::from_micros(step);
                while pacer.next_release(now, MSS, &p).is_none() {
                    pacer.on_sent(now, MSS, &p);
                    bytes += MSS;
                    prop_assert!(bytes <= p.capacity_bytes().max(MSS)
                        + bytes_in(now.saturating_duration_since(Time::ZERO), p.rate_bytes_per_sec)
                        + MSS);
                }
                if let Some(t) = pacer.next_release(now, MSS, &p) {
                    prop_assert!(t > now);
                }
            }
        }
    }
}
