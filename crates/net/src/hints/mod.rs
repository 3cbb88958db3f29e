//! # Link hints from the outside world (issue 38)
//!
//! The core's controllers act on [`LinkHint`]s (RTW-TCP, seed 004: freeze
//! through a predicted outage instead of backing off), but a hint has to
//! come from somewhere: the modem or the Wi-Fi driver, a predictor that
//! knows the route and the coverage map, the base station, or — in the
//! laboratory — `peregrine emu`'s own link model. This module is the one
//! way to hand them to a live connection:
//!
//! * [`HintSource`]: anything that yields [`Hint`]s (blocking, with a
//!   bounded wait);
//! * [`EndpointBuilder::hints`](crate::EndpointBuilder::hints) (every
//!   connection of the endpoint) and
//!   [`Connection::hints`](crate::Connection::hints) (one connection)
//!   start a **hint pump** — a thread of its own ("peregrine-hints") that
//!   reads the source, holds each hint until the event it announces
//!   begins, and hands it to the connections' controllers
//!   (`Endpoint::link_hint` of the core, as `Connection::link_hint` does);
//! * [`open`] turns a source string into a source: `unix:PATH` and
//!   `udp:ADDR` (JSON lines, [`json`]), `file:CSV` (replay, [`replay`]),
//!   `wifi:IFACE` (nl80211 station statistics, [`wifi`]).
//!
//! **Timing.** A hint says when its event begins (`t_ms`, Unix time in
//! milliseconds; absent means "now"). The pump delivers it to the
//! controller at that instant — a hint sent ahead (`peregrine emu
//! --hint-lead`) waits in the pump, one that arrives late is delivered at
//! once — and stamps the core's `issued_at` with the event's start mapped
//! onto the endpoint's clock, so a late hint's predicted outage still ends
//! when the source said. The latency from a source's write to the
//! controller is measured by `examples/hint_latency.rs` and documented in
//! `docs/runtime.md` ("Hint sources").
//!
//! **What reaches the controller.** `blockage` → `LinkHintKind::Blockage`,
//! `handover` → `Handover`, `outage` → `Blockage` (the core has no generic
//! outage kind; a blockage is its "link down for a while"), `restored` →
//! `CongestionFree` (the link layer vouches for the link again: RTW-TCP
//! ends a hold), each with its `duration_ms` as the predicted duration and
//! a CQI of 0 for the failure kinds (out of range while down). A `rate`
//! hint is received and counted but not applied: no controller of the core
//! takes a capacity report. A hint whose `confidence` is below
//! [`MIN_CONFIDENCE`] is counted and not applied.

pub mod json;
mod pump;
pub mod replay;
#[cfg(target_os = "linux")]
pub mod wifi;

pub use pump::HintFeed;
pub(crate) use pump::{start, Target};

use peregrine_cc::{LinkHint, LinkHintKind, Time};
use std::time::Duration;

/// Hints less confident than this (the JSON `confidence`, 0–1) are counted
/// in [`HintStats::ignored`] and not handed to the controller: a predictor
/// that is more often wrong than right would freeze a sender on a working
/// link.
pub const MIN_CONFIDENCE: f64 = 0.5;

/// What a hint announces (the JSON `kind`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HintKind {
    /// Line of sight lost to an obstacle.
    Blockage,
    /// The association moves to another base station / access point.
    Handover,
    /// The link is down, cause unknown.
    Outage,
    /// The link is back.
    Restored,
    /// The link's capacity changed to `rate_bps`.
    Rate,
}

impl HintKind {
    /// The JSON / CSV name: `blockage`, `handover`, `outage`, `restored`,
    /// `rate`.
    pub fn name(self) -> &'static str {
        match self {
            HintKind::Blockage => "blockage",
            HintKind::Handover => "handover",
            HintKind::Outage => "outage",
            HintKind::Restored => "restored",
            HintKind::Rate => "rate",
        }
    }

    /// Parses a JSON / CSV name.
    pub fn parse(s: &str) -> Option<HintKind> {
        Some(match s {
            "blockage" => HintKind::Blockage,
            "handover" => HintKind::Handover,
            "outage" => HintKind::Outage,
            "restored" => HintKind::Restored,
            "rate" => HintKind::Rate,
            _ => return None,
        })
    }

    /// The core's kind this maps to; `None` for `rate` (not applied).
    pub fn core_kind(self) -> Option<LinkHintKind> {
        match self {
            HintKind::Blockage | HintKind::Outage => Some(LinkHintKind::Blockage),
            HintKind::Handover => Some(LinkHintKind::Handover),
            HintKind::Restored => Some(LinkHintKind::CongestionFree),
            HintKind::Rate => None,
        }
    }
}

/// One hint as a source reports it (one JSON line, one CSV row, one
/// change of the Wi-Fi statistics).
#[derive(Clone, Debug, PartialEq)]
pub struct Hint {
    /// What it announces.
    pub kind: HintKind,
    /// When the event begins, as time since the Unix epoch (`t_ms`);
    /// `None`: now (when the pump reads it).
    pub starts_at_unix: Option<Duration>,
    /// How long the outage is predicted to last (`duration_ms`).
    pub duration: Option<Duration>,
    /// The new capacity (`rate_bps`, `rate` hints).
    pub rate_bps: Option<u64>,
    /// How sure the source is, 0–1 (`confidence`, default 1).
    pub confidence: f64,
}

impl Hint {
    /// A hint of `kind` for now, with full confidence.
    pub fn now(kind: HintKind) -> Hint {
        Hint {
            kind,
            starts_at_unix: None,
            duration: None,
            rate_bps: None,
            confidence: 1.0,
        }
    }

    /// The core's hint, issued at `issued_at` (the event's start on the
    /// endpoint's clock); `None` for a hint that is not applied (`rate`).
    pub fn to_link_hint(&self, issued_at: Time) -> Option<LinkHint> {
        let kind = self.kind.core_kind()?;
        Some(LinkHint {
            kind,
            issued_at,
            predicted_duration: self.duration,
            cqi: kind.is_link_failure().then_some(0),
            speed_mps: None,
        })
    }
}

/// What a source had to say within its wait.
#[derive(Clone, Debug, PartialEq)]
pub enum SourcePoll {
    /// A hint.
    Hint(Hint),
    /// Nothing yet (the wait ran out, or a line was not a hint: see
    /// [`HintSource::take_malformed`]).
    Idle,
    /// The source has nothing more to say (end of a replay, the feed's
    /// writer closed it).
    Ended,
}

/// A source failed for good (it cannot be read any more).
#[derive(Debug, thiserror::Error)]
#[error("hint source {source_name}: {message}")]
pub struct HintError {
    /// The source, as given (`unix:/run/hints.sock`).
    pub source_name: String,
    /// What went wrong.
    pub message: String,
}

impl HintError {
    /// An error of `source_name`.
    pub fn new(source_name: impl Into<String>, message: impl Into<String>) -> HintError {
        HintError {
            source_name: source_name.into(),
            message: message.into(),
        }
    }
}

/// Anything that yields link hints. The pump calls [`next`](Self::next)
/// in a loop on its own thread, so a source may block — but at most
/// `wait`, so the pump can deliver held hints on time and notice that its
/// endpoint is gone.
pub trait HintSource: Send {
    /// The next hint, waiting at most `wait`. An `Err` ends the source
    /// (the pump records it in [`HintStats::error`]); bad input that does
    /// not end it (a malformed line) is `Ok(Idle)` and counted through
    /// [`take_malformed`](Self::take_malformed).
    fn next(&mut self, wait: Duration) -> Result<SourcePoll, HintError>;

    /// Lines (records) rejected since the last call, each with the reason
    /// naming the bad field. Default: none.
    fn take_malformed(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// The source as a user would write it (`unix:/run/hints.sock`).
    fn describe(&self) -> String;
}

/// What a pump did, for reports (`perf --json` `hints.*`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HintStats {
    /// The source, as given.
    pub source: String,
    /// Hints read from the source (well-formed).
    pub received: u64,
    /// Hints handed to a connection's controller, counted once per hint
    /// (however many connections got it).
    pub applied: u64,
    /// Connection deliveries (a hint applied to three connections counts
    /// three).
    pub deliveries: u64,
    /// Hints read but not applied: `rate` hints, confidence below
    /// [`MIN_CONFIDENCE`], or no connection to give them to.
    pub ignored: u64,
    /// Records the source rejected (bad JSON, a bad field).
    pub malformed: u64,
    /// The last rejection's reason.
    pub last_malformed: Option<String>,
    /// Source-to-controller lateness of applied hints, summed, ns: how
    /// long after the announced start a hint reached the controller (0 for
    /// one held until its start and delivered on time).
    pub late_ns_sum: u64,
    /// The latest delivery, ns after the announced start.
    pub late_ns_max: u64,
    /// The source ended (replay finished, writer closed the feed).
    pub ended: bool,
    /// Why the source stopped, if it failed.
    pub error: Option<String>,
}

/// Now, as time since the Unix epoch: the clock `t_ms` is on. (The
/// runtime crate reads the wall clock here on purpose: it is the one clock
/// a predictor on another machine shares with this one.)
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
pub fn unix_now() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

/// Open a source from its string:
///
/// * `unix:PATH` — JSON lines from the Unix stream socket listening at
///   `PATH` (a predictor's, or `peregrine emu`'s `PEREGRINE_HINTS`);
/// * `udp:ADDR` — JSON lines in UDP datagrams sent to `ADDR`, which the
///   source binds (`udp:127.0.0.1:7878`);
/// * `file:CSV` — replay a hint trace ([`replay`]), times from now;
/// * `wifi:IFACE` — nl80211 station statistics of `IFACE` ([`wifi`]).
///
/// Errors name the source and what is wrong with it.
pub fn open(spec: &str) -> Result<Box<dyn HintSource>, HintError> {
    let (scheme, rest) = spec.split_once(':').ok_or_else(|| {
        HintError::new(spec, "expected unix:PATH, udp:ADDR, file:CSV or wifi:IFACE")
    })?;
    if rest.is_empty() {
        return Err(HintError::new(
            spec,
            format!("{scheme}: nothing after the colon"),
        ));
    }
    match scheme {
        "unix" => Ok(Box::new(json::UnixSource::connect(rest)?)),
        "udp" => Ok(Box::new(json::UdpSource::bind(rest)?)),
        "file" => Ok(Box::new(replay::CsvReplay::open(rest)?)),
        #[cfg(target_os = "linux")]
        "wifi" => Ok(Box::new(wifi::WifiSource::open(rest)?)),
        #[cfg(not(target_os = "linux"))]
        "wifi" => Err(HintError::new(spec, "nl80211 needs Linux")),
        other => Err(HintError::new(
            spec,
            format!("unknown source kind {other:?} (expected unix, udp, file or wifi)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_onto_the_cores() {
        for k in [
            HintKind::Blockage,
            HintKind::Handover,
            HintKind::Outage,
            HintKind::Restored,
            HintKind::Rate,
        ] {
            assert_eq!(HintKind::parse(k.name()), Some(k));
        }
        assert_eq!(HintKind::parse("tsunami"), None);
        let mut h = Hint::now(HintKind::Outage);
        h.duration = Some(Duration::from_millis(300));
        let l = h.to_link_hint(Time::from_millis(5)).expect("applied");
        assert_eq!(l.kind, LinkHintKind::Blockage);
        assert_eq!(l.issued_at, Time::from_millis(5));
        assert_eq!(l.predicted_duration, Some(Duration::from_millis(300)));
        assert_eq!(l.cqi, Some(0));
        let r = Hint::now(HintKind::Restored)
            .to_link_hint(Time::ZERO)
            .expect("applied");
        assert_eq!((r.kind, r.cqi), (LinkHintKind::CongestionFree, None));
        assert!(Hint::now(HintKind::Rate).to_link_hint(Time::ZERO).is_none());
    }

    #[test]
    fn bad_source_strings_are_named() {
        let e = open("carrier-pigeon").err().expect("refused");
        assert!(e.to_string().contains("expected unix:PATH"), "{e}");
        let e = open("smoke:signals").err().expect("refused");
        assert!(
            e.to_string().contains("unknown source kind \"smoke\""),
            "{e}"
        );
        let e = open("unix:").err().expect("refused");
        assert!(e.to_string().contains("nothing after the colon"), "{e}");
        let e = open("unix:/nonexistent/peregrine-hints.sock")
            .err()
            .expect("refused");
        assert!(
            e.to_string().contains("/nonexistent/peregrine-hints.sock"),
            "{e}"
        );
    }
}
