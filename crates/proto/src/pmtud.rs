//! # Datagram packetization-layer path MTU discovery (RFC 8899)
//!
//! [`Pmtud`] is the search state machine of DPLPMTUD for one connection's
//! sending direction, in datagram bytes (the UDP payload, packet
//! protection included). It owns no packets and reads no clock: the
//! connection asks it for a probe ([`Pmtud::poll_probe`]), tells it what
//! happened to the probe ([`Pmtud::on_probe_acked`], [`Pmtud::on_timeout`])
//! and to full-size data packets ([`Pmtud::on_data_acked`],
//! [`Pmtud::on_data_lost`]), and sizes every datagram it builds with
//! [`Pmtud::current`].
//!
//! States (RFC 8899 §5.2):
//!
//! * **BASE** — `current` is [`BASE_PLPMTU`] (1,200 bytes, or the
//!   negotiated maximum if smaller), which every path is assumed to carry;
//! * **SEARCH** — probes of growing size are sent: first the maximum (the
//!   common case: the interface MTU is the path MTU), then a binary search
//!   between the largest confirmed size and the smallest size that failed
//!   [`MAX_PROBES`] times in a row; a confirmed size becomes `current` at
//!   once;
//! * **SEARCH_COMPLETE** — the search interval is narrower than
//!   [`SEARCH_GRANULARITY`] (or `current` is the maximum); after
//!   [`RAISE_TIMER`] the search runs again (a path may have grown);
//! * **black hole** — [`BLACK_HOLE_LOSS_EVENTS`] loss events in a row of
//!   packets larger than the base size, with no such packet acknowledged
//!   in between, mean the path no longer carries `current`: it falls back
//!   to the base size and searches again below the size that failed.
//!
//! Probes are the connection's business: ECHO packets padded to the probe
//! size with REPLY_REQ (so any SLTP peer answers them, and their answers
//! are small), never DATA — a lost probe loses no data and is not a
//! congestion signal (RFC 8899 §4.1: probe loss must not reduce the
//! congestion window), and probes are not counted in flight.
//!
//! Every entry point is O(1).

use peregrine_cc::Time;
use std::time::Duration;

/// The size every path is assumed to carry (RFC 8899 §5.1.2 BASE_PLPMTU;
/// QUIC's minimum): the connection starts there.
pub const BASE_PLPMTU: u16 = 1200;
/// Probes of one size sent before that size is taken as too large
/// (RFC 8899 §5.1.2 MAX_PROBES).
pub const MAX_PROBES: u8 = 3;
/// The search stops when the interval between the largest confirmed and
/// the smallest failed size is narrower than this.
pub const SEARCH_GRANULARITY: u16 = 16;
/// After a completed search, search again after this long (RFC 8899
/// §5.1.1 PMTU_RAISE_TIMER: 600 s).
pub const RAISE_TIMER: Duration = Duration::from_secs(600);
/// Loss events in a row of packets larger than the base size, with none
/// acknowledged in between, that declare a black hole.
pub const BLACK_HOLE_LOSS_EVENTS: u32 = 3;

/// Where the search is (RFC 8899 §5.2).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PmtudState {
    /// Discovery is off: `current` is the negotiated maximum, fixed.
    Disabled,
    /// At the base size, before the search starts (the handshake).
    Base,
    /// Probing.
    Search,
    /// Done until the raise timer.
    SearchComplete,
}

impl PmtudState {
    /// The name used in stats and JSON: `disabled`, `base`, `search`,
    /// `search_complete`.
    pub const fn name(self) -> &'static str {
        match self {
            PmtudState::Disabled => "disabled",
            PmtudState::Base => "base",
            PmtudState::Search => "search",
            PmtudState::SearchComplete => "search_complete",
        }
    }
}

/// What the search did so far (in `ConnectionStats`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PmtudCounters {
    /// Probes sent.
    pub probes_sent: u64,
    /// Probes answered.
    pub probes_acked: u64,
    /// Probes given up as lost (their timer expired).
    pub probes_lost: u64,
    /// Black holes detected (falls back to the base size).
    pub black_holes: u64,
    /// Times the search was (re)started: the first one and after each
    /// raise timer or black hole.
    pub searches: u64,
}

/// A probe in flight.
#[derive(Copy, Clone, Debug)]
struct InFlight {
    size: u16,
    token: u64,
    deadline: Time,
}

/// The DPLPMTUD state machine of one sending direction (module docs).
#[derive(Clone, Debug)]
pub struct Pmtud {
    state: PmtudState,
    base: u16,
    max: u16,
    current: u16,
    /// Largest size confirmed in this search.
    low: u16,
    /// Smallest size that failed in this search (`max + 1` when none).
    high: u32,
    /// Whether this search has tried the maximum first.
    tried_max: bool,
    /// Consecutive losses of probes of the size being tried.
    attempts: u8,
    in_flight: Option<InFlight>,
    next_token: u64,
    raise_at: Option<Time>,
    large_loss_events: u32,
    counters: PmtudCounters,
}

impl Pmtud {
    /// Discovery off: every datagram may be `max` bytes.
    pub fn disabled(max: u16) -> Pmtud {
        Pmtud {
            state: PmtudState::Disabled,
            base: max,
            max,
            current: max,
            low: max,
            high: u32::from(max) + 1,
            tried_max: true,
            attempts: 0,
            in_flight: None,
            next_token: 0,
            raise_at: None,
            large_loss_events: 0,
            counters: PmtudCounters::default(),
        }
    }

    /// Discovery on, up to `max` datagram bytes (the negotiated maximum):
    /// BASE at `min(BASE_PLPMTU, max)` until [`start`](Self::start).
    pub fn enabled(max: u16) -> Pmtud {
        let base = BASE_PLPMTU.min(max);
        Pmtud {
            state: PmtudState::Base,
            base,
            current: base,
            low: base,
            tried_max: false,
            ..Pmtud::disabled(max)
        }
    }

    /// The state.
    pub fn state(&self) -> PmtudState {
        self.state
    }
    /// The current PLPMTU: the largest datagram to send, bytes.
    pub fn current(&self) -> u16 {
        self.current
    }
    /// The base size (the smallest `current` ever is).
    pub fn base(&self) -> u16 {
        self.base
    }
    /// The search's upper bound.
    pub fn max(&self) -> u16 {
        self.max
    }
    /// The counters.
    pub fn counters(&self) -> &PmtudCounters {
        &self.counters
    }
    /// Whether discovery runs.
    pub fn is_enabled(&self) -> bool {
        self.state != PmtudState::Disabled
    }

    /// The connection is established: start searching (BASE → SEARCH).
    pub fn start(&mut self) {
        if self.state == PmtudState::Base {
            self.begin_search(u32::from(self.max) + 1);
        }
    }

    fn begin_search(&mut self, high: u32) {
        self.counters.searches += 1;
        self.state = PmtudState::Search;
        self.low = self.current;
        self.high = high;
        self.tried_max = high <= u32::from(self.max);
        self.attempts = 0;
        self.in_flight = None;
        self.raise_at = None;
        self.settle_if_done(None);
    }

    /// The size to try next, or `None` when the search is over.
    fn candidate(&self) -> Option<u16> {
        let high = self.high.min(u32::from(self.max) + 1);
        let low = u32::from(self.low);
        if low >= u32::from(self.max) || high <= low + u32::from(SEARCH_GRANULARITY) {
            return None;
        }
        if !self.tried_max {
            return Some(self.max);
        }
        u16::try_from((low + high) / 2).ok()
    }

    /// SEARCH → SEARCH_COMPLETE when nothing is left to try.
    fn settle_if_done(&mut self, now: Option<Time>) {
        if self.state == PmtudState::Search && self.candidate().is_none() {
            self.state = PmtudState::SearchComplete;
            self.raise_at = now.map(|t| t + RAISE_TIMER);
        }
    }

    /// A probe to send now, if one is due: its datagram size and the token
    /// to put in it (the answer echoes it). `probe_timeout` is how long to
    /// wait for its answer (the connection's RTO). O(1).
    pub fn poll_probe(&mut self, now: Time, probe_timeout: Duration) -> Option<(u16, u64)> {
        if self.state != PmtudState::Search || self.in_flight.is_some() {
            if self.state == PmtudState::SearchComplete && self.raise_at.is_none() {
                self.raise_at = Some(now + RAISE_TIMER);
            }
            return None;
        }
        let Some(size) = self.candidate() else {
            self.settle_if_done(Some(now));
            return None;
        };
        let token = self.next_token;
        self.next_token = self.next_token.wrapping_add(1);
        self.in_flight = Some(InFlight {
            size,
            token,
            deadline: now + probe_timeout,
        });
        self.counters.probes_sent += 1;
        Some((size, token))
    }

    /// The answer to probe `token` arrived: its size is confirmed and
    /// becomes `current`. Returns whether `current` changed. Stale tokens
    /// are ignored. O(1).
    pub fn on_probe_acked(&mut self, now: Time, token: u64) -> bool {
        let Some(p) = self.in_flight.filter(|p| p.token == token) else {
            return false;
        };
        self.in_flight = None;
        self.counters.probes_acked += 1;
        self.attempts = 0;
        if p.size == self.max {
            self.tried_max = true;
        }
        let changed = p.size > self.current;
        if p.size > self.low {
            self.low = p.size;
        }
        if changed {
            self.current = p.size;
        }
        // The confirmed size also proves the path carries large packets.
        self.large_loss_events = 0;
        self.settle_if_done(Some(now));
        changed
    }

    /// When [`on_timeout`](Self::on_timeout) must next run.
    pub fn timeout(&self) -> Option<Time> {
        match self.state {
            PmtudState::Search => self.in_flight.map(|p| p.deadline),
            PmtudState::SearchComplete => self.raise_at,
            _ => None,
        }
    }

    /// Run the probe timer (a probe lost) and the raise timer. O(1).
    pub fn on_timeout(&mut self, now: Time) {
        match self.state {
            PmtudState::Search => {
                let Some(p) = self.in_flight.filter(|p| p.deadline <= now) else {
                    return;
                };
                self.in_flight = None;
                self.counters.probes_lost += 1;
                self.attempts += 1;
                if self.attempts >= MAX_PROBES {
                    // This size does not get through: search below it.
                    self.attempts = 0;
                    self.high = self.high.min(u32::from(p.size));
                    if p.size == self.max {
                        self.tried_max = true;
                    }
                    self.settle_if_done(Some(now));
                }
            }
            PmtudState::SearchComplete => {
                if self.raise_at.is_some_and(|t| t <= now) && self.current < self.max {
                    self.begin_search(u32::from(self.max) + 1);
                } else if self.raise_at.is_some_and(|t| t <= now) {
                    self.raise_at = None;
                }
            }
            _ => {}
        }
    }

    /// A DATA packet of `largest_acked_bytes` (the largest one an ACK
    /// newly acknowledged) got through: a packet above the base size ends
    /// any suspicion of a black hole. O(1).
    pub fn on_data_acked(&mut self, largest_acked_bytes: u32) {
        if largest_acked_bytes > u32::from(self.base) {
            self.large_loss_events = 0;
        }
    }

    /// DATA packets were declared lost in one event, the largest
    /// `largest_lost_bytes`. Returns whether this declared a black hole
    /// (then `current` is the base size again). O(1).
    pub fn on_data_lost(&mut self, now: Time, largest_lost_bytes: u32) -> bool {
        if !self.is_enabled()
            || self.current <= self.base
            || largest_lost_bytes <= u32::from(self.base)
        {
            return false;
        }
        self.large_loss_events += 1;
        if self.large_loss_events < BLACK_HOLE_LOSS_EVENTS {
            return false;
        }
        self.large_loss_events = 0;
        self.counters.black_holes += 1;
        let failed = self.current;
        self.current = self.base;
        self.begin_search(u32::from(failed));
        self.settle_if_done(Some(now));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn at(ms: u64) -> Time {
        Time::ZERO + MS * ms as u32
    }

    /// Run a search against a path carrying `path_mtu`; returns the final
    /// size and the probes sent.
    fn converge(max: u16, path_mtu: u16) -> (u16, u64) {
        let mut p = Pmtud::enabled(max);
        p.start();
        let mut now = 0;
        for _ in 0..1000 {
            if let Some((size, token)) = p.poll_probe(at(now), 100 * MS) {
                if size <= path_mtu {
                    p.on_probe_acked(at(now + 1), token);
                } else {
                    now += 100;
                    p.on_timeout(at(now));
                }
            } else {
                break;
            }
            now += 1;
        }
        assert_eq!(p.state(), PmtudState::SearchComplete);
        (p.current(), p.counters().probes_sent)
    }

    #[test]
    fn the_maximum_first_then_a_binary_search() {
        assert_eq!(converge(65_507, 65_507), (65_507, 1));
        let (mtu, probes) = converge(9_000, 1_472);
        assert!((1_472 - SEARCH_GRANULARITY..=1_472).contains(&mtu), "{mtu}");
        assert!(probes < 40, "{probes}");
        // A path at the base size: nothing above it gets through.
        assert_eq!(converge(1_452, 1_200).0, 1_200);
    }

    #[test]
    fn a_size_fails_only_after_max_probes_losses() {
        let mut p = Pmtud::enabled(1_500);
        p.start();
        for i in 0..MAX_PROBES {
            let (size, _) = p.poll_probe(at(u64::from(i) * 10), 5 * MS).unwrap();
            assert_eq!(size, 1_500, "attempt {i} repeats the size");
            p.on_timeout(at(u64::from(i) * 10 + 5));
        }
        let (size, _) = p.poll_probe(at(100), 5 * MS).unwrap();
        assert!(size < 1_500);
        assert_eq!(p.counters().probes_lost, 3);
    }

    #[test]
    fn black_hole_falls_back_to_base_and_searches_below() {
        let mut p = Pmtud::enabled(9_000);
        p.start();
        let (_, t) = p.poll_probe(at(0), 10 * MS).unwrap();
        assert!(p.on_probe_acked(at(1), t));
        assert_eq!(p.current(), 9_000);
        // Congestion losses interleaved with acks of large packets: no.
        for _ in 0..10 {
            assert!(!p.on_data_lost(at(2), 9_000));
            p.on_data_acked(9_000);
        }
        // Three loss events with nothing large acknowledged: a black hole.
        assert!(!p.on_data_lost(at(3), 9_000));
        assert!(!p.on_data_lost(at(4), 9_000));
        p.on_data_acked(1_000); // small packets still get through
        assert!(p.on_data_lost(at(5), 9_000));
        assert_eq!(p.current(), 1_200);
        assert_eq!(p.counters().black_holes, 1);
        assert_eq!(p.state(), PmtudState::Search);
        let (size, _) = p.poll_probe(at(6), 10 * MS).unwrap();
        assert!(size < 9_000, "never the size that black-holed: {size}");
    }

    #[test]
    fn raise_timer_searches_again() {
        let mut p = Pmtud::enabled(1_500);
        p.start();
        for i in 0..MAX_PROBES {
            p.poll_probe(at(u64::from(i) * 10), 5 * MS).unwrap();
            p.on_timeout(at(u64::from(i) * 10 + 5));
        }
        // Fail everything above the base.
        let mut now = 100;
        while p.poll_probe(at(now), 5 * MS).is_some() {
            now += 5;
            p.on_timeout(at(now));
            now += 1;
        }
        assert_eq!(p.state(), PmtudState::SearchComplete);
        assert_eq!(p.current(), 1_200);
        let raise = p.timeout().unwrap();
        assert!(raise >= at(now) + RAISE_TIMER - MS);
        p.on_timeout(raise);
        assert_eq!(p.state(), PmtudState::Search);
        assert_eq!(p.poll_probe(raise, 5 * MS).map(|x| x.0), Some(1_500));
        assert_eq!(p.counters().searches, 2);
    }

    #[test]
    fn disabled_and_small_maxima_never_probe() {
        let mut p = Pmtud::disabled(1_452);
        p.start();
        assert_eq!(p.poll_probe(at(0), MS), None);
        assert_eq!(p.current(), 1_452);
        let mut q = Pmtud::enabled(1_000);
        q.start();
        assert_eq!(q.current(), 1_000);
        assert_eq!(q.poll_probe(at(0), MS), None);
        assert_eq!(q.state(), PmtudState::SearchComplete);
    }

    #[test]
    fn stale_answers_are_ignored() {
        let mut p = Pmtud::enabled(1_500);
        p.start();
        let (_, t) = p.poll_probe(at(0), 5 * MS).unwrap();
        p.on_timeout(at(5));
        assert!(!p.on_probe_acked(at(6), t), "its timer expired");
        assert_eq!(p.current(), 1_200);
    }
}
