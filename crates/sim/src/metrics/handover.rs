//! Handover measures of a stream (issue 29): what a vehicle's receiver
//! saw around each handover — the longest gap between deliveries, the
//! messages never delivered, those delivered twice, the throughput dip.
//!
//! The streams measured are those of `engine::handover` (the unicast
//! stream over today's single attachment and the make-before-break group
//! stream); the measures are plain functions of their delivery records,
//! so they are tested here on hand-made records.

use crate::Time;
use serde_json::{json, Value};
use std::time::Duration;

/// How far before a handover's start and after its old attachment's
/// release ("done + overlap") its window reaches.
pub const AROUND_HANDOVER: Duration = Duration::from_millis(250);
/// The throughput dip's window.
pub const DIP_WINDOW: Duration = Duration::from_millis(100);
/// How far apart the dip's windows start.
pub const DIP_STEP: Duration = Duration::from_millis(10);

/// One stream's record: what was sent, what the application got.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamTrace {
    /// Message `k` was created at `sent[k]`.
    pub sent: Vec<Time>,
    /// Bytes of every message (the application's payload).
    pub message_bytes: u32,
    /// Deliveries to the application, in time order: (when, message).
    pub delivered: Vec<(Time, u64)>,
    /// Copies received on the connections, duplicates included.
    pub copies_received: u64,
    /// Copies the receiver dropped as duplicates (the group receiver's
    /// `duplicates`; 0 for a single connection).
    pub duplicates_removed: u64,
}

/// One handover of the vehicle, as the channel recorded it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HandoverSpan {
    /// The interruption of the single attachment starts.
    pub start: Time,
    /// It ends: the new station serves.
    pub done: Time,
}

/// A stream's measures over a run (see `docs/sim-parts` "make-before-break").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamMeasures {
    /// Messages created.
    pub messages_sent: u64,
    /// Messages created before the stop (the ones that count for losses).
    pub messages_counted: u64,
    /// Distinct messages delivered.
    pub messages_delivered: u64,
    /// Counted messages never delivered.
    pub messages_lost: u64,
    /// Messages delivered more than once to the application (must be 0).
    pub messages_duplicated: u64,
    /// Copies received on the connections.
    pub copies_received: u64,
    /// Copies removed as duplicates by the receiver.
    pub duplicates_removed: u64,
    /// Per handover, the longest gap between consecutive deliveries in
    /// its window, ms.
    pub gaps_ms: Vec<f64>,
    /// The largest of `gaps_ms` (`None` without handovers).
    pub interruption_ms: Option<f64>,
    /// Per handover, the least bytes delivered in a 100 ms window of its
    /// window over the mean per 100 ms.
    pub dips: Vec<f64>,
    /// The least of `dips` (`None` without handovers or deliveries).
    pub throughput_dip: Option<f64>,
}

/// The window of handover `h`: from [`AROUND_HANDOVER`] before its
/// start to [`AROUND_HANDOVER`] after `done + overlap`, cut at `stop`.
pub fn window(h: HandoverSpan, overlap: Duration, stop: Time) -> (Time, Time) {
    let from = Time::from_nanos(
        h.start
            .as_nanos()
            .saturating_sub(AROUND_HANDOVER.as_nanos() as u64),
    );
    (from, (h.done + overlap + AROUND_HANDOVER).min(stop))
}

/// The longest gap between consecutive deliveries (`times`, sorted)
/// overlapping `[from, to]`; the window's ends stand in for a delivery
/// when there is none before or after it. O(log n + deliveries in it).
pub fn longest_gap(times: &[Time], from: Time, to: Time) -> Duration {
    let first = times.partition_point(|t| *t < from);
    let last = times.partition_point(|t| *t <= to);
    let before = first.checked_sub(1).map_or(from, |i| times[i]);
    let after = times.get(last).copied().unwrap_or(to);
    let mut prev = before;
    let mut gap = Duration::ZERO;
    for t in times[first..last].iter().copied().chain([after]) {
        gap = gap.max(t.saturating_duration_since(prev));
        prev = t;
    }
    gap
}

/// Measures `trace` over `handovers`. Messages created at or after `stop`
/// are not counted lost (they may still be on their way at the end), and
/// windows end there. O(deliveries + sent + handovers × window / step).
pub fn measure(
    trace: &StreamTrace,
    handovers: &[HandoverSpan],
    overlap: Duration,
    stop: Time,
) -> StreamMeasures {
    let counted = trace.sent.partition_point(|t| *t < stop);
    let mut times_seen = vec![0u32; trace.sent.len()];
    let mut unknown = 0u64;
    for (_, k) in &trace.delivered {
        match times_seen.get_mut(*k as usize) {
            Some(n) => *n += 1,
            None => unknown += 1,
        }
    }
    let delivered = times_seen.iter().filter(|n| **n > 0).count() as u64;
    let duplicated = times_seen.iter().filter(|n| **n > 1).count() as u64 + unknown;
    let lost = times_seen[..counted].iter().filter(|n| **n == 0).count() as u64;
    let times: Vec<Time> = trace.delivered.iter().map(|(t, _)| *t).collect();
    let gaps_ms: Vec<f64> = handovers
        .iter()
        .filter(|h| h.start < stop)
        .map(|h| {
            let (from, to) = window(*h, overlap, stop);
            longest_gap(&times, from, to).as_secs_f64() * 1e3
        })
        .collect();
    // The mean bytes per dip window, over the span messages were sent.
    let start = trace.sent.first().copied().unwrap_or(Time::ZERO);
    let span = stop.saturating_duration_since(start);
    let in_span = times.partition_point(|t| *t < stop) - times.partition_point(|t| *t < start);
    let bytes = u64::from(trace.message_bytes);
    let mean = if span.is_zero() {
        0.0
    } else {
        (in_span as u64 * bytes) as f64 * DIP_WINDOW.as_secs_f64() / span.as_secs_f64()
    };
    let dips: Vec<f64> = if mean > 0.0 {
        handovers
            .iter()
            .filter(|h| h.start < stop)
            .filter_map(|h| {
                let (from, to) = window(*h, overlap, stop);
                let mut t = from.max(start);
                let mut least: Option<u64> = None;
                while t + DIP_WINDOW <= to {
                    let n = times.partition_point(|x| *x < t + DIP_WINDOW)
                        - times.partition_point(|x| *x < t);
                    let b = n as u64 * bytes;
                    least = Some(least.map_or(b, |l| l.min(b)));
                    t += DIP_STEP;
                }
                least.map(|b| b as f64 / mean)
            })
            .collect()
    } else {
        Vec::new()
    };
    StreamMeasures {
        messages_sent: trace.sent.len() as u64,
        messages_counted: counted as u64,
        messages_delivered: delivered,
        messages_lost: lost,
        messages_duplicated: duplicated,
        copies_received: trace.copies_received,
        duplicates_removed: trace.duplicates_removed,
        interruption_ms: gaps_ms.iter().copied().reduce(f64::max),
        gaps_ms,
        throughput_dip: dips.iter().copied().reduce(f64::min),
        dips,
    }
}

fn r6(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 1e6).round() / 1e6)
    } else {
        Value::Null
    }
}

impl StreamMeasures {
    /// The measures as in `summary.json` (`handover_multicast.*.unicast`
    /// and `.make_before_break`; docs/scenarios.md names every key).
    pub fn to_json(&self) -> Value {
        json!({
            "interruption_ms": self.interruption_ms.map_or(Value::Null, r6),
            "messages_sent": self.messages_sent,
            "messages_counted": self.messages_counted,
            "messages_delivered": self.messages_delivered,
            "messages_lost": self.messages_lost,
            "messages_duplicated": self.messages_duplicated,
            "copies_received": self.copies_received,
            "duplicates_removed": self.duplicates_removed,
            "throughput_dip": self.throughput_dip.map_or(Value::Null, r6),
            "gaps_ms": self.gaps_ms.iter().map(|g| r6(*g)).collect::<Vec<_>>(),
            "dips": self.dips.iter().map(|d| r6(*d)).collect::<Vec<_>>(),
        })
    }

    /// Several vehicles' measures as one: the worst interruption and dip,
    /// the sums of the counts, the gaps and dips in vehicle order.
    pub fn combine<'a>(all: impl IntoIterator<Item = &'a StreamMeasures>) -> StreamMeasures {
        let mut out = StreamMeasures::default();
        for m in all {
            out.messages_sent += m.messages_sent;
            out.messages_counted += m.messages_counted;
            out.messages_delivered += m.messages_delivered;
            out.messages_lost += m.messages_lost;
            out.messages_duplicated += m.messages_duplicated;
            out.copies_received += m.copies_received;
            out.duplicates_removed += m.duplicates_removed;
            out.gaps_ms.extend(&m.gaps_ms);
            out.dips.extend(&m.dips);
        }
        out.interruption_ms = out.gaps_ms.iter().copied().reduce(f64::max);
        out.throughput_dip = out.dips.iter().copied().reduce(f64::min);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::from_nanos(x * 1_000_000)
    }

    /// A message every 10 ms from 0 to 2 s, delivered 5 ms later, except
    /// those created in `[hole_from, hole_to)` ms, which arrive at
    /// `hole_to + 5` (held by an outage) or never (`lose`).
    fn trace(hole_from: u64, hole_to: u64, lose: bool) -> StreamTrace {
        let sent: Vec<Time> = (0..200).map(|k| ms(10 * k)).collect();
        let mut delivered = Vec::new();
        for k in 0..200u64 {
            let t = 10 * k;
            if (hole_from..hole_to).contains(&t) {
                if !lose {
                    delivered.push((ms(hole_to + 5), k));
                }
            } else {
                delivered.push((ms(t + 5), k));
            }
        }
        delivered.sort();
        StreamTrace {
            sent,
            message_bytes: 1000,
            copies_received: delivered.len() as u64,
            delivered,
            duplicates_removed: 0,
        }
    }

    const HO: HandoverSpan = HandoverSpan {
        start: Time::from_nanos(1_000_000_000),
        done: Time::from_nanos(1_020_000_000),
    };

    #[test]
    fn a_steady_stream_has_its_period_as_gap_and_no_dip() {
        let m = measure(&trace(0, 0, false), &[HO], Duration::ZERO, ms(2000));
        assert_eq!(m.interruption_ms, Some(10.0));
        assert_eq!((m.messages_lost, m.messages_duplicated), (0, 0));
        assert_eq!(m.messages_delivered, 200);
        // 10 messages per 100 ms in every window: no dip.
        let dip = m.throughput_dip.unwrap();
        assert!((dip - 1.0).abs() < 0.02, "{dip}");
    }

    #[test]
    fn an_outage_shows_as_gap_loss_and_dip() {
        // Held 1000–1100 ms: the gap is 1095 → 1105, preceded by nothing
        // from 995 on: 110 ms.
        let held = measure(&trace(1000, 1100, false), &[HO], Duration::ZERO, ms(2000));
        assert_eq!(held.interruption_ms, Some(110.0));
        assert_eq!(held.messages_lost, 0);
        assert!(held.throughput_dip.unwrap() < 0.01);
        let lost = measure(&trace(1000, 1100, true), &[HO], Duration::ZERO, ms(2000));
        assert_eq!(lost.messages_lost, 10);
        assert_eq!(lost.interruption_ms, Some(110.0));
        // Messages created after the stop do not count as lost.
        let late = measure(&trace(1900, 2000, true), &[], Duration::ZERO, ms(1900));
        assert_eq!((late.messages_lost, late.messages_counted), (0, 190));
        assert_eq!(late.interruption_ms, None);
    }

    #[test]
    fn a_second_delivery_is_a_duplicate_and_gaps_see_window_ends() {
        let mut t = trace(0, 0, false);
        t.delivered.push((ms(1999), 3));
        let m = measure(&t, &[HO], Duration::ZERO, ms(2000));
        assert_eq!(m.messages_duplicated, 1);
        // Nothing delivered at all: the whole window is the gap.
        assert_eq!(longest_gap(&[], ms(10), ms(30)), Duration::from_millis(20));
        assert_eq!(
            longest_gap(&[ms(5), ms(12), ms(40)], ms(10), ms(30)),
            Duration::from_millis(28)
        );
    }

    #[test]
    fn combining_takes_the_worst_and_the_sums() {
        let a = measure(&trace(1000, 1100, true), &[HO], Duration::ZERO, ms(2000));
        let b = measure(&trace(0, 0, false), &[HO], Duration::ZERO, ms(2000));
        let c = StreamMeasures::combine([&a, &b]);
        assert_eq!(c.interruption_ms, Some(110.0));
        assert_eq!(c.messages_lost, 10);
        assert_eq!(c.throughput_dip, a.throughput_dip);
        assert_eq!(c.gaps_ms.len(), 2);
    }
}
