//! # Packet-pair start-up (seed 003 §III-D)
//!
//! SLTP replaces slow start by a measurement: two probes of the same size,
//! ECHO_1 and ECHO_2, leave back to back; the peer answers each at once.
//! From the two answers:
//!
//! * **latency** = the mean RTT of the pair;
//! * **dispersion** = the time between the two answers (the bottleneck
//!   spaced the probes by one packet's transmission time);
//! * **bandwidth** = bytes transferred / time taken = probe size / dispersion;
//! * **burst** = mean RTT / dispersion × probe size — the bytes that fill
//!   the pipe (bandwidth × RTT), which SLTP uses as the largest amount of
//!   unacknowledged data.
//!
//! Data does not wait for the test: the connection sends the controller's
//! initial window right behind the two probes (no extra RTT before data).
//! When both answers are back it hands the controller the measurement —
//! bandwidth, RTT and the window `min(burst, max_initial_window_bytes)` —
//! through `on_startup_measurement` (CUBIC takes the window as `W_max`,
//! BBR the bandwidth as its first estimate; the window never shrinks), and
//! a controller that does not pace is paced at the measured bandwidth for
//! one RTT, so the larger window is spread over the RTT, not burst.
//! A "special timer" bounds the test: if both answers are not back within
//! the probe timeout, the controller simply keeps running from its own
//! initial window. The test is repeated after a burst of NACKs; repeated
//! measurements are reported in the stats (the controller owns the window
//! once data flows, so they do not reset it).
//!
//! A dispersion too small to measure (an in-memory link of infinite rate)
//! is taken as 1 µs, so the burst comes out large and the configured cap
//! decides.

use crate::wire::PacketType;
use peregrine_cc::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// Smallest dispersion the estimate uses.
const MIN_DISPERSION: Duration = Duration::from_micros(1);

/// One packet-pair measurement.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ProbeResult {
    /// When the second answer arrived.
    pub at: Time,
    /// Mean RTT of ECHO_1 and ECHO_2.
    pub latency: Duration,
    /// Time between the two answers (at least 1 µs).
    pub dispersion: Duration,
    /// Probe size / dispersion, bytes per second.
    pub bandwidth_bytes_per_sec: u64,
    /// Mean RTT / dispersion × probe size, bytes.
    pub burst_bytes: u64,
    /// Size of each probe datagram, bytes.
    pub probe_size: u32,
}

impl ProbeResult {
    /// The measurement from the two RTTs, the two answers' arrival times and
    /// the probe size, exactly as seed 003 §III-D defines it.
    pub fn compute(
        rtt1: Duration,
        rtt2: Duration,
        answer1_at: Time,
        answer2_at: Time,
        probe_size: u32,
        at: Time,
    ) -> ProbeResult {
        let latency = (rtt1 + rtt2) / 2;
        let dispersion = if answer2_at >= answer1_at {
            answer2_at - answer1_at
        } else {
            answer1_at - answer2_at
        }
        .max(MIN_DISPERSION);
        let disp_ns = dispersion.as_nanos().max(1);
        let size = u128::from(probe_size);
        let bandwidth = size * 1_000_000_000 / disp_ns;
        let burst = latency.as_nanos() * size / disp_ns;
        ProbeResult {
            at,
            latency,
            dispersion,
            bandwidth_bytes_per_sec: u64::try_from(bandwidth).unwrap_or(u64::MAX),
            burst_bytes: u64::try_from(burst).unwrap_or(u64::MAX),
            probe_size,
        }
    }
}

/// What a finished test means for the connection.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// Both answers came back.
    Measured {
        /// The measurement.
        result: ProbeResult,
        /// This was the start-up test (its burst sizes the first window).
        initial: bool,
        /// RTT samples of ECHO_1 and ECHO_2.
        rtts: [Duration; 2],
    },
    /// The timer expired first.
    TimedOut {
        /// This was the start-up test.
        initial: bool,
    },
}

#[derive(Clone, Debug)]
struct Pending {
    id: u32,
    deadline: Time,
    initial: bool,
    size: u32,
    answers: [Option<(Time, Duration)>; 2],
}

/// The packet-pair prober of one connection.
#[derive(Clone, Debug, Default)]
pub struct PacketPair {
    pending: Option<Pending>,
    next_id: u32,
    last_start: Option<Time>,
    nack_times: VecDeque<Time>,
    started: u64,
    completed: u64,
    last: Option<ProbeResult>,
}

impl PacketPair {
    /// A prober that has run no test.
    pub fn new(first_id: u32) -> PacketPair {
        PacketPair {
            next_id: first_id,
            ..PacketPair::default()
        }
    }

    /// Start a test at `now`: returns the probe id to put in both probes.
    pub fn start(&mut self, now: Time, timeout: Duration, initial: bool, size: u32) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.pending = Some(Pending {
            id,
            deadline: now + timeout,
            initial,
            size,
            answers: [None, None],
        });
        self.last_start = Some(now);
        self.started += 1;
        id
    }

    /// Whether a test is running.
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Whether the start-up test is running.
    pub fn initial_pending(&self) -> bool {
        self.pending.as_ref().is_some_and(|p| p.initial)
    }

    /// The test's timer.
    pub fn timeout(&self) -> Option<Time> {
        self.pending.as_ref().map(|p| p.deadline)
    }

    /// Tests started.
    pub fn started(&self) -> u64 {
        self.started
    }
    /// Tests that produced a measurement.
    pub fn completed(&self) -> u64 {
        self.completed
    }
    /// The latest measurement.
    pub fn last(&self) -> Option<ProbeResult> {
        self.last
    }

    /// An answer (ECHO_1 or ECHO_2 with REPLY) arrived at `now` for probe
    /// `probe_id`, echoing `timestamp_ns`. Stale, duplicate and impossible
    /// answers are ignored.
    pub fn on_answer(
        &mut self,
        now: Time,
        pk_type: PacketType,
        probe_id: u32,
        timestamp_ns: u64,
    ) -> Option<ProbeOutcome> {
        let p = self.pending.as_mut()?;
        if p.id != probe_id {
            return None;
        }
        let slot = match pk_type {
            PacketType::Echo1 => 0,
            PacketType::Echo2 => 1,
            _ => return None,
        };
        let sent = Time::from_nanos(timestamp_ns);
        if sent > now || p.answers[slot].is_some() {
            return None;
        }
        p.answers[slot] = Some((now, now - sent));
        let [Some((t1, r1)), Some((t2, r2))] = p.answers else {
            return None;
        };
        let result = ProbeResult::compute(r1, r2, t1, t2, p.size, now);
        let initial = p.initial;
        self.pending = None;
        self.completed += 1;
        self.last = Some(result);
        Some(ProbeOutcome::Measured {
            result,
            initial,
            rtts: [r1, r2],
        })
    }

    /// The timer fired.
    pub fn on_timeout(&mut self, now: Time) -> Option<ProbeOutcome> {
        let p = self.pending.as_ref()?;
        if now < p.deadline {
            return None;
        }
        let initial = p.initial;
        self.pending = None;
        Some(ProbeOutcome::TimedOut { initial })
    }

    /// A NACK arrived. Returns whether it completes a burst (`burst` NACKs
    /// within `window`) that should repeat the test, given at least
    /// `min_interval` since the last one.
    pub fn on_nack(
        &mut self,
        now: Time,
        burst: u32,
        window: Duration,
        min_interval: Duration,
    ) -> bool {
        if burst == 0 {
            return false;
        }
        self.nack_times.push_back(now);
        while self
            .nack_times
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) > window)
        {
            self.nack_times.pop_front();
        }
        while self.nack_times.len() > burst as usize {
            self.nack_times.pop_front();
        }
        let due = !matches!(self.last_start,
            Some(t) if now.saturating_duration_since(t) < min_interval);
        if self.nack_times.len() >= burst as usize && due && self.pending.is_none() {
            self.nack_times.clear();
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
    fn the_seed_formulas() {
        // 1000-byte probes, RTTs 40 and 42 ms, answers 1 ms apart:
        // bandwidth 1 MB/s, burst = 41 ms / 1 ms × 1000 = 41,000 bytes.
        let r = ProbeResult::compute(
            Duration::from_millis(40),
            Duration::from_millis(42),
            Time::from_millis(40),
            Time::from_millis(41),
            1000,
            Time::from_millis(41),
        );
        assert_eq!(r.latency, Duration::from_millis(41));
        assert_eq!(r.dispersion, Duration::from_millis(1));
        assert_eq!(r.bandwidth_bytes_per_sec, 1_000_000);
        assert_eq!(r.burst_bytes, 41_000);
    }

    #[test]
    fn a_pair_completes_only_with_both_answers_of_its_id() {
        let mut p = PacketPair::new(5);
        let id = p.start(Time::ZERO, Duration::from_secs(1), true, 1000);
        assert!(p.initial_pending());
        let t1 = Time::from_millis(40);
        assert_eq!(p.on_answer(t1, PacketType::Echo1, id + 1, 0), None);
        assert_eq!(p.on_answer(t1, PacketType::Echo1, id, 0), None);
        assert_eq!(p.on_answer(t1, PacketType::Echo1, id, 0), None, "duplicate");
        let out = p.on_answer(Time::from_millis(42), PacketType::Echo2, id, 0);
        let Some(ProbeOutcome::Measured {
            result, initial, ..
        }) = out
        else {
            panic!("no measurement: {out:?}");
        };
        assert!(initial);
        assert_eq!(result.burst_bytes, 41 * 1000 / 2);
        assert!(!p.is_pending());
        assert_eq!(p.completed(), 1);
    }

    #[test]
    fn timer_and_nack_burst() {
        let mut p = PacketPair::new(0);
        p.start(Time::ZERO, Duration::from_millis(100), true, 500);
        assert_eq!(p.on_timeout(Time::from_millis(99)), None);
        assert_eq!(
            p.on_timeout(Time::from_millis(100)),
            Some(ProbeOutcome::TimedOut { initial: true })
        );
        let w = Duration::from_millis(50);
        let gap = Duration::from_secs(1);
        let t = Time::from_secs_f64(2.0);
        assert!(!p.on_nack(t, 3, w, gap));
        assert!(!p.on_nack(t + Duration::from_millis(10), 3, w, gap));
        assert!(p.on_nack(t + Duration::from_millis(20), 3, w, gap));
        // Spread-out NACKs are no burst.
        let t = Time::from_secs_f64(5.0);
        assert!(!p.on_nack(t, 3, w, gap));
        assert!(!p.on_nack(t + Duration::from_millis(60), 3, w, gap));
        assert!(!p.on_nack(t + Duration::from_millis(120), 3, w, gap));
    }
}
