//! # Packet-pair start-up (seed 003 §III-D)
//!
//! SLTP can replace slow start by a measurement: probes of full size,
//! ECHO_1 then ECHO_2, leave back to back; the bottleneck spaces them by
//! one packet's transmission time; the peer answers each at once.
//!
//! * **dispersion** = the gap between the two probes' **arrivals at the
//!   peer** — the peer's own per-datagram receive times (the kernel's, in
//!   the runtime), echoed in its answers as ARRIVAL_NS (docs/protocol.md
//!   §6). Measuring at the peer keeps the reverse path out of it: an
//!   answer queued behind the peer's own probes, path-MTU probes or ACKs
//!   on a slow return link (the 14× low estimates of issue 35), or two
//!   answers the peer read in one batch and sent back to back (the 14×
//!   high ones), no longer move the estimate. A peer that sends no
//!   ARRIVAL_NS falls back to the answers' arrival times here;
//! * **latency** = the mean RTT of the probes;
//! * **bandwidth** = probe size / dispersion;
//! * **burst** = latency / dispersion × probe size — bandwidth × RTT, the
//!   bytes that fill the pipe.
//!
//! **Several pairs and a consistency rule.** One test sends
//! [`PAIRS`] pairs back to back (ids `id`, `id+1`, …). The test is judged
//! when every answer is back, or at its timer with what came back:
//!
//! 1. at least [`MIN_PAIRS`] complete pairs, else *fallback*
//!    (`too_few_pairs`);
//! 2. a pair whose dispersion is below [`MIN_PLAUSIBLE_DISPERSION`] (a gap
//!    the clocks cannot resolve: coalesced or batch-stamped datagrams, a
//!    first probe written late by an emulator) is left out; fewer than
//!    [`MIN_PAIRS`] pairs left is a *fallback* (`implausible_dispersion`);
//! 3. at least [`MIN_PAIRS`] of the plausible dispersions within
//!    ±[`AGREEMENT`] of their median, else *fallback* (`pairs_disagree`);
//!    the estimate uses the mean of those that agree.
//!
//! **Equal sizes.** Every probe has the test's size (the connection's
//! packet size), so the UDP runtime hands all six to the kernel in one
//! GSO send and they leave back to back — which the method assumes.
//! Probes one byte apart (the rule before) each needed a `sendmsg` of
//! their own: through `peregrine emu` they entered the link 33 µs apart
//! on the project's 2-core VM, so at 500 Mbit/s (23 µs per probe) the
//! pairs measured the sender's system calls, not the link (issue 35).
//! A receiver that coalesces two probes into one GRO buffer spreads their
//! times at 10 Gbit/s (`peregrine::rx_time`): such a pair is implausible
//! under rule 2 and left out, never used.
//!
//! A *fallback* leaves the controller in slow start, exactly as if no
//! probe had been sent, and says why ([`ProbeDecision`]).
//!
//! Data does not wait for the test: the connection sends the
//! controller's initial window right behind the probes. A *used*
//! measurement hands the controller bandwidth, RTT and the window
//! `min(burst, max_initial_window_bytes)` through
//! `on_startup_measurement`: the window may rise, never shrink, and
//! `ssthresh` is never lowered (the controller wrapper keeps it at least
//! where it was, i.e. slow start goes on from the larger window), so a
//! wrong estimate costs at most one round trip. The test is repeated
//! after a burst of NACKs; repeated measurements are reported in the
//! stats only.

use crate::wire::PacketType;
use peregrine_cc::Time;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// Smallest dispersion the estimate formula uses (guards the division).
const MIN_DISPERSION: Duration = Duration::from_micros(1);
/// Pairs one test sends, back to back.
pub const PAIRS: usize = 3;
/// Complete, agreeing pairs a measurement needs.
pub const MIN_PAIRS: usize = 2;
/// Dispersions below this are not measurements (about 1.16 Gbit/s with
/// 1,452-byte probes): below it the gap is what the clocks and the
/// machines resolve, not the link — a sender's separate sends are some
/// µs apart, an emulator or a busy receiver writes or stamps datagrams
/// in bunches a few µs apart (measured: 3.6 µs "gaps" through
/// `peregrine emu` at 500 Mbit/s, whose true gap is 23 µs). A faster path
/// starts in slow start.
pub const MIN_PLAUSIBLE_DISPERSION: Duration = Duration::from_micros(10);
/// Pairs agree when their dispersions are within this fraction of the
/// median dispersion.
pub const AGREEMENT: f64 = 0.25;

/// One packet-pair measurement.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ProbeResult {
    /// When the test was judged.
    pub at: Time,
    /// Mean RTT of the probes.
    pub latency: Duration,
    /// Gap between the probes of a pair at the peer (the mean of the
    /// agreeing pairs; at least 1 µs).
    pub dispersion: Duration,
    /// Probe size / dispersion, bytes per second.
    pub bandwidth_bytes_per_sec: u64,
    /// Mean RTT / dispersion × probe size, bytes.
    pub burst_bytes: u64,
    /// Size of the probe datagrams, bytes (the largest of the test).
    pub probe_size: u32,
}

impl ProbeResult {
    /// The measurement from the two RTTs, the two arrival times and the
    /// probe size, exactly as seed 003 §III-D defines it.
    pub fn compute(
        rtt1: Duration,
        rtt2: Duration,
        answer1_at: Time,
        answer2_at: Time,
        probe_size: u32,
        at: Time,
    ) -> ProbeResult {
        let dispersion = if answer2_at >= answer1_at {
            answer2_at - answer1_at
        } else {
            answer1_at - answer2_at
        };
        Self::from_dispersion((rtt1 + rtt2) / 2, dispersion, probe_size, at)
    }

    /// The measurement from a mean RTT and a dispersion. O(1).
    pub fn from_dispersion(
        latency: Duration,
        dispersion: Duration,
        probe_size: u32,
        at: Time,
    ) -> ProbeResult {
        let dispersion = dispersion.max(MIN_DISPERSION);
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

/// Why a test's samples were not used.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FallbackReason {
    /// Fewer than [`MIN_PAIRS`] pairs had both answers back by the timer
    /// (probe or answer loss, or a path slower than the timer).
    TooFewPairs,
    /// A dispersion below [`MIN_PLAUSIBLE_DISPERSION`].
    ImplausibleDispersion,
    /// Fewer than [`MIN_PAIRS`] dispersions within ±[`AGREEMENT`] of
    /// their median (cross traffic, a link that aggregates or jitters).
    PairsDisagree,
}

impl FallbackReason {
    /// The reason's name (`perf --json`'s `probe.reason`).
    pub const fn name(self) -> &'static str {
        match self {
            FallbackReason::TooFewPairs => "too_few_pairs",
            FallbackReason::ImplausibleDispersion => "implausible_dispersion",
            FallbackReason::PairsDisagree => "pairs_disagree",
        }
    }
}

impl fmt::Display for FallbackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a judged test decided.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ProbeDecision {
    /// Whether this was the start-up test.
    pub initial: bool,
    /// Pairs sent.
    pub pairs_sent: u32,
    /// Pairs with both answers back.
    pub pairs_complete: u32,
    /// Pairs that agreed (the estimate's samples).
    pub pairs_agreeing: u32,
    /// Each pair's gap at the peer, ns, in sending order (`None`: an
    /// answer did not come back): the raw samples behind the decision.
    pub gaps_ns: [Option<u64>; PAIRS],
    /// `None`: the measurement was used; `Some`: slow start continued.
    pub fallback: Option<FallbackReason>,
}

impl ProbeDecision {
    /// `used` or `fallback` (`perf --json`'s `probe.decision`).
    pub const fn name(&self) -> &'static str {
        match self.fallback {
            None => "used",
            Some(_) => "fallback",
        }
    }

    /// Why: `agreeing_pairs` when used, else the fallback reason's name.
    pub const fn reason(&self) -> &'static str {
        match self.fallback {
            None => "agreeing_pairs",
            Some(r) => r.name(),
        }
    }
}

/// One answer: when it came back, its RTT and, if the peer sent it, the
/// probe's arrival time at the peer (the peer's clock, nanoseconds).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Answer {
    at: Time,
    rtt: Duration,
    peer_arrival_ns: Option<u64>,
}

/// What a judged test means for the connection.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ProbeOutcome {
    /// Used or fallback, and why.
    pub decision: ProbeDecision,
    /// The estimate from the complete pairs (the agreeing ones when used,
    /// the median pair otherwise); `None` when no pair completed.
    pub result: Option<ProbeResult>,
    /// RTT samples of the answers that came back.
    pub rtts: [Option<Duration>; 2 * PAIRS],
}

impl ProbeOutcome {
    /// The measurement, only when the decision was to use it.
    pub fn used(&self) -> Option<ProbeResult> {
        self.result.filter(|_| self.decision.fallback.is_none())
    }
}

#[derive(Clone, Debug)]
struct Pending {
    id: u32,
    deadline: Time,
    initial: bool,
    size: u32,
    answers: [[Option<Answer>; 2]; PAIRS],
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
    last_decision: Option<ProbeDecision>,
}

impl PacketPair {
    /// A prober that has run no test.
    pub fn new(first_id: u32) -> PacketPair {
        PacketPair {
            next_id: first_id,
            ..PacketPair::default()
        }
    }

    /// Start a test at `now` whose largest probe is `size` bytes: returns
    /// the first pair's probe id; pair `k` uses id `first + k`
    /// ([`PAIRS`] pairs). A test still running is abandoned.
    pub fn start(&mut self, now: Time, timeout: Duration, initial: bool, size: u32) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(PAIRS as u32);
        self.pending = Some(Pending {
            id,
            deadline: now + timeout,
            initial,
            size,
            answers: [[None; 2]; PAIRS],
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
    /// Tests whose measurement was used.
    pub fn completed(&self) -> u64 {
        self.completed
    }
    /// The latest estimate (used or not: see [`last_decision`](Self::last_decision)).
    pub fn last(&self) -> Option<ProbeResult> {
        self.last
    }
    /// The latest test's decision.
    pub fn last_decision(&self) -> Option<ProbeDecision> {
        self.last_decision
    }

    /// An answer (ECHO_1 or ECHO_2 with REPLY) arrived at `now` for probe
    /// `probe_id`, echoing `timestamp_ns` and carrying the peer's arrival
    /// time of the probe, if the peer sent one. Stale, duplicate and
    /// impossible answers are ignored. The test is judged once every
    /// answer is back. O(PAIRS).
    pub fn on_answer(
        &mut self,
        now: Time,
        pk_type: PacketType,
        probe_id: u32,
        timestamp_ns: u64,
        peer_arrival_ns: Option<u64>,
    ) -> Option<ProbeOutcome> {
        let p = self.pending.as_mut()?;
        let pair = probe_id.wrapping_sub(p.id) as usize;
        if pair >= PAIRS {
            return None;
        }
        let slot = match pk_type {
            PacketType::Echo1 => 0,
            PacketType::Echo2 => 1,
            _ => return None,
        };
        let sent = Time::from_nanos(timestamp_ns);
        if sent > now || p.answers[pair][slot].is_some() {
            return None;
        }
        p.answers[pair][slot] = Some(Answer {
            at: now,
            rtt: now - sent,
            peer_arrival_ns,
        });
        if p.answers.iter().flatten().all(Option::is_some) {
            return self.judge(now);
        }
        None
    }

    /// The timer fired: judge the test with the answers that are back.
    pub fn on_timeout(&mut self, now: Time) -> Option<ProbeOutcome> {
        let p = self.pending.as_ref()?;
        if now < p.deadline {
            return None;
        }
        self.judge(now)
    }

    /// Apply the consistency rule (module docs) to the pending test.
    fn judge(&mut self, now: Time) -> Option<ProbeOutcome> {
        let p = self.pending.take()?;
        let mut rtts = [None; 2 * PAIRS];
        for (r, a) in rtts.iter_mut().zip(p.answers.iter().flatten()) {
            *r = a.map(|a| a.rtt);
        }
        // The base RTT: the smallest sample (later probes queued behind
        // earlier ones at the bottleneck).
        let latency = rtts.iter().flatten().min().copied();
        // Each complete pair's dispersion, per byte of its ECHO_2 (the
        // probes differ by a few bytes), in picoseconds per byte.
        let mut per_byte: Vec<u128> = Vec::with_capacity(PAIRS);
        let mut complete = 0;
        let mut gaps_ns = [None; PAIRS];
        for (k, pair) in p.answers.iter().enumerate() {
            let [Some(a1), Some(a2)] = pair else { continue };
            let gap_ns = match (a1.peer_arrival_ns, a2.peer_arrival_ns) {
                (Some(t1), Some(t2)) => u128::from(t1.abs_diff(t2)),
                _ => a1
                    .at
                    .max(a2.at)
                    .saturating_duration_since(a1.at.min(a2.at))
                    .as_nanos(),
            };
            gaps_ns[k] = u64::try_from(gap_ns).ok();
            complete += 1;
            if gap_ns < MIN_PLAUSIBLE_DISPERSION.as_nanos() {
                continue;
            }
            per_byte.push(gap_ns * 1000 / u128::from(p.size.max(1)));
        }
        let plausible = per_byte.len();
        per_byte.sort_unstable();
        let median = per_byte.get(plausible / 2).copied();
        let agreeing: Vec<u128> = match median {
            Some(m) => per_byte
                .iter()
                .copied()
                .filter(|&d| (d as f64 - m as f64).abs() <= AGREEMENT * m as f64)
                .collect(),
            None => Vec::new(),
        };
        let fallback = if complete < MIN_PAIRS {
            Some(FallbackReason::TooFewPairs)
        } else if plausible < MIN_PAIRS {
            Some(FallbackReason::ImplausibleDispersion)
        } else if agreeing.len() < MIN_PAIRS {
            Some(FallbackReason::PairsDisagree)
        } else {
            None
        };
        let ps_per_byte = if fallback.is_none() {
            Some(agreeing.iter().sum::<u128>() / agreeing.len().max(1) as u128)
        } else {
            // Reported, not used: the median plausible pair, or — when
            // every complete pair was implausible — the median of those,
            // so a completed pair always leaves an estimate to look at.
            median.or_else(|| {
                let mut raw: Vec<u128> = gaps_ns
                    .iter()
                    .flatten()
                    .map(|&g| u128::from(g) * 1000 / u128::from(p.size.max(1)))
                    .collect();
                raw.sort_unstable();
                raw.get(raw.len() / 2).copied()
            })
        };
        let result = match (ps_per_byte, latency) {
            (Some(ps), Some(latency)) => {
                let disp_ns = ps * u128::from(p.size) / 1000;
                let dispersion = Duration::from_nanos(u64::try_from(disp_ns).unwrap_or(u64::MAX));
                Some(ProbeResult::from_dispersion(
                    latency, dispersion, p.size, now,
                ))
            }
            _ => None,
        };
        let decision = ProbeDecision {
            initial: p.initial,
            pairs_sent: PAIRS as u32,
            pairs_complete: complete as u32,
            pairs_agreeing: agreeing.len() as u32,
            gaps_ns,
            fallback,
        };
        if fallback.is_none() {
            self.completed += 1;
        }
        if result.is_some() {
            self.last = result;
        }
        self.last_decision = Some(decision);
        Some(ProbeOutcome {
            decision,
            result,
            rtts,
        })
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

    const SIZE: u32 = 1452;

    /// Answer every probe of the test started with `id`: pair k's probes
    /// reach the peer `gaps_us[k]` apart (peer clock), and come back to
    /// the prober `back_gap_us` apart after `rtt_ms`. Returns the outcome.
    fn answer_all(
        p: &mut PacketPair,
        id: u32,
        gaps_us: [u64; PAIRS],
        back_gap_us: u64,
        rtt_ms: u64,
    ) -> Option<ProbeOutcome> {
        let mut out = None;
        let mut peer_ns = 5_000_000_000u64; // another clock
        let mut back = Time::from_millis(rtt_ms);
        for (k, gap) in gaps_us.iter().enumerate() {
            for (slot, t) in [PacketType::Echo1, PacketType::Echo2]
                .into_iter()
                .enumerate()
            {
                if slot == 1 {
                    peer_ns += gap * 1000;
                }
                let o = p.on_answer(back, t, id + k as u32, 0, Some(peer_ns));
                back += Duration::from_micros(back_gap_us);
                if o.is_some() {
                    out = o;
                }
            }
            peer_ns += 7_000; // between pairs: anything
        }
        out
    }

    #[test]
    fn one_implausible_pair_is_left_out_not_fatal() {
        // 500 Mbit/s: 23 µs per 1,452-byte probe; the first pair's first
        // probe was written late by an emulator (6 µs apart).
        let mut p = PacketPair::new(0);
        let id = p.start(Time::ZERO, Duration::from_secs(1), true, SIZE);
        let out = answer_all(&mut p, id, [6, 23, 24], 10, 40).expect("judged");
        assert_eq!(out.decision.fallback, None, "{out:?}");
        assert_eq!(out.decision.pairs_complete, 3);
        assert_eq!(out.decision.pairs_agreeing, 2);
        assert_eq!(
            out.decision.gaps_ns,
            [Some(6_000), Some(23_000), Some(24_000)]
        );
        let mbps = out.used().unwrap().bandwidth_bytes_per_sec * 8 / 1_000_000;
        assert!((480..=510).contains(&mbps), "{mbps}");
        // Two implausible pairs leave one: fallback, and it says why.
        let id = p.start(Time::from_millis(2000), Duration::from_secs(1), true, SIZE);
        let out = answer_all(&mut p, id, [2, 23, 3], 10, 2040).expect("judged");
        assert_eq!(
            out.decision.fallback,
            Some(FallbackReason::ImplausibleDispersion)
        );
        // The estimate of the complete pairs is still reported.
        assert!(out.result.is_some());
    }

    #[test]
    fn agreeing_pairs_are_used_and_timed_at_the_peer() {
        // 20 Mbit/s: a 1,450-byte ECHO_2 takes 580 µs. The answers come
        // back 8 ms apart (queued behind the peer's own probes on a slow
        // return link): the estimate must not care.
        let mut p = PacketPair::new(5);
        let id = p.start(Time::ZERO, Duration::from_secs(1), true, SIZE);
        assert!(p.initial_pending());
        let out = answer_all(&mut p, id, [580, 590, 575], 8_000, 40).expect("judged");
        assert_eq!(out.decision.fallback, None, "{out:?}");
        assert_eq!(out.decision.name(), "used");
        assert_eq!(out.decision.pairs_agreeing, 3);
        let r = out.used().expect("used");
        let bps = r.bandwidth_bytes_per_sec * 8;
        assert!((19_000_000..21_000_000).contains(&bps), "{bps}");
        assert_eq!(r.latency, Duration::from_millis(40), "the smallest RTT");
        assert!(!p.is_pending());
        assert_eq!(p.completed(), 1);
        assert_eq!(p.last_decision(), Some(out.decision));
    }

    #[test]
    fn without_peer_times_the_answers_gaps_are_used() {
        let mut p = PacketPair::new(0);
        let id = p.start(Time::ZERO, Duration::from_secs(1), true, SIZE);
        let mut out = None;
        let mut t = Time::from_millis(40);
        for k in 0..PAIRS as u32 {
            for ty in [PacketType::Echo1, PacketType::Echo2] {
                out = out.or(p.on_answer(t, ty, id + k, 0, None));
                t += Duration::from_micros(1000);
            }
        }
        let r = out.and_then(|o| o.used()).expect("used");
        // 1 ms per 1,452-byte probe.
        let us = r.dispersion.as_secs_f64() * 1e6;
        assert!((999.0..1001.0).contains(&us), "{us}");
    }

    #[test]
    fn disagreeing_pairs_fall_back() {
        let mut p = PacketPair::new(0);
        let id = p.start(Time::ZERO, Duration::from_secs(1), true, SIZE);
        let out = answer_all(&mut p, id, [100, 580, 4000], 10, 40).expect("judged");
        assert_eq!(out.decision.fallback, Some(FallbackReason::PairsDisagree));
        assert_eq!(out.decision.name(), "fallback");
        assert_eq!(out.decision.reason(), "pairs_disagree");
        assert_eq!(out.used(), None);
        assert!(out.result.is_some(), "the median is still reported");
        assert_eq!(p.completed(), 0);
    }

    #[test]
    fn two_of_three_agreeing_is_enough() {
        let mut p = PacketPair::new(0);
        let id = p.start(Time::ZERO, Duration::from_secs(1), true, SIZE);
        let out = answer_all(&mut p, id, [580, 600, 3000], 10, 40).expect("judged");
        assert_eq!(out.decision.fallback, None);
        assert_eq!(out.decision.pairs_agreeing, 2);
        let bps = out.used().unwrap().bandwidth_bytes_per_sec * 8;
        assert!((19_000_000..21_000_000).contains(&bps), "{bps}");
    }

    #[test]
    fn coalesced_arrivals_are_implausible() {
        let mut p = PacketPair::new(0);
        let id = p.start(Time::ZERO, Duration::from_secs(1), true, SIZE);
        let out = answer_all(&mut p, id, [1, 1, 1], 10, 40).expect("judged");
        assert_eq!(
            out.decision.fallback,
            Some(FallbackReason::ImplausibleDispersion)
        );
        // The estimate of the complete pairs is still reported.
        assert!(out.result.is_some());
    }

    #[test]
    fn the_timer_judges_what_came_back() {
        // One pair back: too few.
        let mut p = PacketPair::new(9);
        let id = p.start(Time::ZERO, Duration::from_millis(100), true, SIZE);
        let t = Time::from_millis(40);
        assert_eq!(
            p.on_answer(t, PacketType::Echo1, id + 7, 0, Some(1)),
            None,
            "not ours"
        );
        assert_eq!(p.on_answer(t, PacketType::Echo1, id, 0, Some(1_000)), None);
        assert_eq!(
            p.on_answer(t, PacketType::Echo1, id, 0, Some(1_000)),
            None,
            "duplicate"
        );
        assert_eq!(
            p.on_answer(t, PacketType::Echo2, id, 0, Some(600_000)),
            None
        );
        assert_eq!(p.on_timeout(Time::from_millis(99)), None);
        let out = p.on_timeout(Time::from_millis(100)).expect("judged");
        assert_eq!(out.decision.fallback, Some(FallbackReason::TooFewPairs));
        assert_eq!(out.decision.pairs_complete, 1);
        assert!(!p.is_pending());
        // Two pairs back (one probe lost): enough.
        let id = p.start(
            Time::from_millis(1000),
            Duration::from_millis(100),
            true,
            SIZE,
        );
        let t = Time::from_millis(1040);
        for k in 0..2 {
            p.on_answer(t, PacketType::Echo1, id + k, 0, Some(1_000));
            p.on_answer(t, PacketType::Echo2, id + k, 0, Some(581_000));
        }
        p.on_answer(t, PacketType::Echo1, id + 2, 0, Some(1_000));
        let out = p.on_timeout(Time::from_millis(1100)).expect("judged");
        assert_eq!(out.decision.fallback, None, "{out:?}");
        assert_eq!(out.rtts.iter().flatten().count(), 5);
    }

    #[test]
    fn nack_burst() {
        let mut p = PacketPair::new(0);
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

    proptest::proptest! {
        /// Whatever the answers, a used estimate comes from agreeing,
        /// plausible pairs, and the judge never panics.
        #[test]
        fn judged_estimates_obey_the_rule(
            gaps in proptest::array::uniform3(0u64..20_000),
            back in 0u64..10_000,
        ) {
            let mut p = PacketPair::new(0);
            let id = p.start(Time::ZERO, Duration::from_secs(1), true, SIZE);
            let out = answer_all(&mut p, id, gaps, back, 40).expect("judged");
            if let Some(r) = out.used() {
                proptest::prop_assert!(out.decision.pairs_agreeing >= MIN_PAIRS as u32);
                proptest::prop_assert!(r.dispersion >= MIN_PLAUSIBLE_DISPERSION / 2);
                let lo = *gaps.iter().min().unwrap() as f64 * 1000.0 * 0.99;
                let hi = *gaps.iter().max().unwrap() as f64 * 1000.0 * 1.01;
                let d = r.dispersion.as_nanos() as f64;
                proptest::prop_assert!(d >= lo && d <= hi, "{d} not in [{lo}, {hi}]");
            }
        }
    }
}
