//! The data sender's ACK-frequency requests (docs/protocol.md §6.5.2, after
//! draft-ietf-quic-ack-frequency).
//!
//! A receiver acknowledges every second DATA packet by default. That is
//! right for a small window, where each ACK clocks out new data, and
//! wasteful for a large one: at 1,000 packets per round trip it sends 500
//! ACKs where a dozen would clock the sender just as well. Only the sender
//! knows its window, so it asks: "acknowledge every ⌊cwnd/8⌋ packets
//! (2–64, and at most 128 KiB of them), or within a quarter of the RTT". The request rides in the
//! optional section of an ACK the sender sends anyway (it acknowledges
//! the receiver's ACK-of-ACK requests) or in one it sends for the purpose.
//! Gaps and REPLY_REQ still get an immediate ACK, so loss detection and
//! the tail of a burst are not delayed.

use crate::wire::AckFrequency;
use peregrine_cc::Time;
use std::time::Duration;

/// Packets per ACK asked for: the window in full packets divided by this.
const WINDOW_FRACTION: u64 = 8;
/// Fewest packets per ACK asked for (also the receiver's default).
const MIN_THRESHOLD: u16 = 2;
/// Most packets per ACK asked for.
const MAX_THRESHOLD: u16 = 64;
/// Most bytes per ACK asked for: 64 packets of 1,452 bytes would be 64
/// datagrams of 64 KB (4 MiB) under path MTU discovery on loopback, an
/// ACK per window — every RTT sample, and the acknowledgement a key
/// update waits for (RFC 9001 §6.1), would then wait for the whole
/// window (issue 37). Bounded in bytes, the ACK cadence per byte is the
/// same whatever the datagram size; with 1,452-byte packets (90 of them
/// fit) nothing changes.
const MAX_THRESHOLD_BYTES: u64 = 128 * 1024;
/// The requested delay is the smoothed RTT divided by this.
const RTT_FRACTION: u32 = 4;
/// Shortest delay asked for.
const MIN_DELAY: Duration = Duration::from_millis(1);
/// A new request leaves when the threshold or delay moves by this factor
/// (and the threshold by at least [`MIN_THRESHOLD_STEP`] packets).
const CHANGE_FACTOR: f64 = 1.5;
/// Smallest threshold change worth a request: a window hovering around a
/// boundary must not cause a request per ACK.
const MIN_THRESHOLD_STEP: u16 = 2;
/// No request is made before the threshold would reach this.
const FIRST_THRESHOLD: u16 = 4;
/// A request in force is repeated after this many smoothed RTTs, in case
/// the ACK that carried it was lost.
const REFRESH_RTTS: u32 = 8;

/// What the sender asked for, and when.
#[derive(Debug, Default, Clone)]
pub(crate) struct AckFrequencyPolicy {
    /// Sequence number of the newest request.
    sequence: u32,
    /// The request in force (`None`: never asked; the peer's own schedule).
    current: Option<AckFrequency>,
    /// When the current request last left.
    sent_at: Option<Time>,
}

/// The threshold (packets) and delay (µs) to ask for with this window and
/// smoothed RTT. O(1).
pub(crate) fn desired(
    cwnd_bytes: u64,
    packet_size: u16,
    srtt: Duration,
    max_ack_delay: Duration,
) -> (u16, u32) {
    let packet_size = u64::from(packet_size.max(1));
    let packets = cwnd_bytes / packet_size;
    let max = u16::try_from(MAX_THRESHOLD_BYTES / packet_size)
        .unwrap_or(u16::MAX)
        .clamp(MIN_THRESHOLD, MAX_THRESHOLD);
    let threshold = u16::try_from(packets / WINDOW_FRACTION)
        .unwrap_or(u16::MAX)
        .clamp(MIN_THRESHOLD, max);
    let delay = (srtt / RTT_FRACTION).clamp(MIN_DELAY, max_ack_delay.max(MIN_DELAY));
    let delay_us = u32::try_from(delay.as_micros()).unwrap_or(u32::MAX);
    (threshold, delay_us)
}

fn moved(old: u32, new: u32) -> bool {
    let (old, new) = (f64::from(old.max(1)), f64::from(new.max(1)));
    new >= old * CHANGE_FACTOR || new * CHANGE_FACTOR <= old
}

fn threshold_moved(old: u16, new: u16) -> bool {
    moved(u32::from(old), u32::from(new)) && old.abs_diff(new) >= MIN_THRESHOLD_STEP
}

impl AckFrequencyPolicy {
    /// Re-evaluate after an ACK with the window and RTT now; returns whether
    /// an ACK carrying the (new or repeated) request should leave now. No
    /// request is made while the window is below 4 × 8 packets and none
    /// was made before: the peer's default already fits. O(1).
    pub(crate) fn update(
        &mut self,
        now: Time,
        cwnd_bytes: u64,
        packet_size: u16,
        srtt: Option<Duration>,
        max_ack_delay: Duration,
    ) -> bool {
        let Some(srtt) = srtt else { return false };
        let (threshold, delay_us) = desired(cwnd_bytes, packet_size, srtt, max_ack_delay);
        let since = self
            .sent_at
            .map(|t| now.saturating_duration_since(t))
            .unwrap_or(Duration::MAX);
        match self.current {
            None if threshold < FIRST_THRESHOLD => false,
            Some(c)
                if !threshold_moved(c.threshold, threshold)
                    && !moved(c.max_ack_delay_us, delay_us) =>
            {
                // Unchanged: repeat it now and then.
                since >= srtt * REFRESH_RTTS
            }
            _ if since < srtt / RTT_FRACTION => false,
            _ => {
                self.sequence = self.sequence.wrapping_add(1);
                self.current = Some(AckFrequency {
                    sequence: self.sequence,
                    threshold,
                    max_ack_delay_us: delay_us,
                });
                true
            }
        }
    }

    /// The request to attach to every ACK this side sends (`None` before
    /// the first request).
    pub(crate) fn section(&self) -> Option<AckFrequency> {
        self.current
    }

    /// An ACK carrying [`section`](Self::section) left.
    pub(crate) fn on_sent(&mut self, now: Time) {
        self.sent_at = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_threshold_follows_the_window_within_bounds() {
        assert_eq!(desired(10 * 1452, 1452, 40 * MS, 25 * MS), (2, 10_000));
        assert_eq!(desired(160 * 1452, 1452, 40 * MS, 25 * MS), (20, 10_000));
        assert_eq!(
            desired(10_000 * 1452, 1452, 400 * MS, 25 * MS),
            (64, 25_000)
        );
        assert_eq!(
            desired(160 * 1452, 1452, Duration::from_micros(100), 25 * MS).1,
            1_000
        );
        // Large datagrams: at most 128 KiB per ACK, at least 2 packets.
        let big = desired(10_000 * 8972, 8972, 400 * MS, 25 * MS);
        assert_eq!(big.0, 14);
        let jumbo = desired(10_000 * 65_507, 65_507, 400 * MS, 25 * MS);
        assert_eq!(jumbo.0, 2);
    }

    #[test]
    fn requests_leave_on_real_changes_only_and_are_repeated() {
        let mut p = AckFrequencyPolicy::default();
        let srtt = Some(40 * MS);
        let t = Time::from_millis;
        // A small window: the peer's default fits, nothing is asked.
        assert!(!p.update(t(0), 10 * 1452, 1452, srtt, 25 * MS));
        assert!(!p.update(t(0), 24 * 1452, 1452, srtt, 25 * MS));
        assert!(p.section().is_none());
        // A large one: ask.
        assert!(p.update(t(10), 160 * 1452, 1452, srtt, 25 * MS));
        p.on_sent(t(10));
        let first = p.section().unwrap();
        assert_eq!((first.sequence, first.threshold), (1, 20));
        // A small change is not worth a request; a large one is, but not
        // within a quarter RTT of the last.
        assert!(!p.update(t(20), 170 * 1452, 1452, srtt, 25 * MS));
        assert!(!p.update(t(15), 400 * 1452, 1452, srtt, 25 * MS));
        assert!(p.update(t(30), 400 * 1452, 1452, srtt, 25 * MS));
        p.on_sent(t(30));
        assert_eq!(p.section().unwrap().sequence, 2);
        // Back to a small window: ask for the default again.
        assert!(p.update(t(60), 10 * 1452, 1452, srtt, 25 * MS));
        p.on_sent(t(60));
        assert_eq!(p.section().unwrap().threshold, 2);
        // Unchanged for 8 RTTs: repeated under the same sequence number.
        assert!(!p.update(t(100), 10 * 1452, 1452, srtt, 25 * MS));
        assert!(p.update(t(400), 10 * 1452, 1452, srtt, 25 * MS));
        assert_eq!(p.section().unwrap().sequence, 3);
    }
}
