//! Issue 28's blockage check for the queue guard (docs/protocol.md §10.2),
//! on `scenarios/guard-blockage.toml`: a 2 Mbit/s link, 40 ms RTT, blocked
//! from 10 s to 12 s, 0.2 Mbit/s of 200-byte control messages on a
//! priority stream throughout beside a bulk stream, ABS with the guard.
//!
//! * Bulk recovers: some 500 ms window ending within 2 s after the link
//!   returns carries ≥ 90 % of the bulk goodput of the 5 s before the
//!   blockage, and so do the 2 s after that.
//! * Control first: every control message queued during the blockage is
//!   delivered before the bulk stream has received more than one guard
//!   window after the link returns (that window — the bulk packets
//!   already in flight when the link went down — sits in the bottleneck
//!   queue ahead of anything the sender can reorder).

use peregrine_sim::{run, Scenario};
use std::path::Path;

const DOWN_NS: u64 = 10_000_000_000;
const UP_NS: u64 = 12_000_000_000;

/// Bytes of the stream-1 (bulk) messages delivered in `(from_ns, to_ns]`.
fn bulk_bytes(r: &peregrine_sim::SimResults, from_ns: u64, to_ns: u64) -> u64 {
    r.messages
        .iter()
        .filter(|m| m.stream == 1 && (from_ns + 1..=to_ns).contains(&(m.queued_ns + m.latency_ns)))
        .map(|m| u64::from(m.bytes))
        .sum()
}

#[test]
fn bulk_recovers_and_control_goes_first_after_a_blockage() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/guard-blockage.toml");
    let s = Scenario::from_file(&path, &[]).expect("valid scenario");
    let r = run(&s).expect("runs");
    let step = 100_000_000;
    let rate =
        |from: u64, to: u64| bulk_bytes(&r, from, to) as f64 * 8.0 / ((to - from) as f64 / 1e9);
    let before = rate(DOWN_NS - 5_000_000_000, DOWN_NS);
    assert!(before > 1.4e6, "bulk before the blockage {before:.0} bit/s");
    // The first 500 ms window (in 100 ms steps) at >= 90 % of it.
    let recovered_by = (0..=15u64)
        .map(|k| UP_NS + k * step + 500_000_000)
        .find(|&end| rate(end - 500_000_000, end) >= 0.9 * before);
    let after = rate(UP_NS + 2_000_000_000, UP_NS + 4_000_000_000);
    // Control messages queued during the blockage: when the last arrived.
    let blocked: Vec<_> = r
        .messages
        .iter()
        .filter(|m| m.stream == 0 && (DOWN_NS..UP_NS).contains(&m.queued_ns))
        .collect();
    let sent_blocked = r.flows[0].metrics.streams[0].messages_sent;
    let last_ns = blocked
        .iter()
        .map(|m| m.queued_ns + m.latency_ns)
        .max()
        .expect("control messages queued during the blockage");
    let bulk_before_control = bulk_bytes(&r, UP_NS, last_ns);
    eprintln!(
        "blockage: bulk {before:.0} bit/s before, back to >= 90 % by {:?} ms after, \
         {after:.0} bit/s 2-4 s after; {} control messages queued during it (of {sent_blocked} \
         in all), the last delivered {} ms after the link returned, {bulk_before_control} bulk \
         bytes delivered by then",
        recovered_by.map(|t| (t - UP_NS) / 1_000_000),
        blocked.len(),
        (last_ns - UP_NS) / 1_000_000,
    );
    // 2 s of 200-byte messages at 0.2 Mbit/s: 250.
    assert!(blocked.len() >= 240, "{} messages", blocked.len());
    assert!(
        recovered_by.is_some_and(|t| t <= UP_NS + 2_000_000_000),
        "bulk not back to 90 % of {before:.0} bit/s within 2 s"
    );
    assert!(
        after >= 0.9 * before,
        "bulk {after:.0} < 90 % of {before:.0} bit/s"
    );
    // One guard window at 2 Mbit/s: rate · (min RTT + 10 ms + one packet
    // time) + one packet ≈ 250 kB/s · 55.7 ms + 1.4 kB ≈ 15.3 kB.
    assert!(
        bulk_before_control <= 15_500,
        "{bulk_before_control} bulk bytes arrived before the blocked control messages"
    );
}
