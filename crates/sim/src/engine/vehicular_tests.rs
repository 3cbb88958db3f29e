//! One vehicle, one base station and a scheduled 200 ms blockage at 2 s:
//! the access link goes down, the perfect hint reaches the sender exactly
//! at event + delay, RTW-TCP keeps its window across the outage while
//! CUBIC cuts it.

use super::super::build;
use super::attach;
use crate::scenario::Scenario;
use crate::world::channel::mmwave::{FailureCounts, FailureEvent, FailureKind};
use crate::world::mmwave_link::CapacitySteps;
use crate::world::vehicles::ChannelTimeline;
use crate::{run_with_timeline, Time};
use std::sync::Arc;
use std::time::Duration;

const BLOCK_NS: u64 = 2_000_000_000;
const BLOCK_LEN_NS: u64 = 200_000_000;
const HINT_DELAY_NS: u64 = 1_000_000;

fn scenario(cc: &str, hints: &str) -> Scenario {
    let doc = format!(
        "duration = \"4s\"\nseed = 5\n[metrics]\ninterval = \"50ms\"\nper_message = false\n\
         [vehicular]\nvehicles = 1\nbase_stations = [[50.0, 50.0]]\ncc = \"{cc}\"\n\
         hints = \"{hints}\"\ntraffic = \"bulk\"\nrate_scale = 0.01\nrlc_buffer_bytes = 10000000\n"
    );
    let mut s = Scenario::from_toml_str(&doc, "t.toml", &[]).expect("valid");
    with_freeze_extensions(&mut s);
    s
}

/// These tests watch RTW-TCP freeze when the hint arrives: the Freeze-TCP
/// extensions (seed 004's default only holds the window on a loss).
pub(crate) fn with_freeze_extensions(s: &mut Scenario) {
    for f in &mut s.model.flows {
        if f.cc.name() == "rtwtcp" {
            f.cc = peregrine_cc::CcConfig::RtwTcp(
                peregrine_cc::algos::rtwtcp::RtwTcpConfig::with_extensions(),
            );
        }
    }
}

/// 20 Mbit/s, down during [2 s, 2.2 s) for a blockage.
fn timeline() -> ChannelTimeline {
    let mut c = CapacitySteps::new();
    c.push(Time::ZERO, 20_000_000);
    c.push(Time::from_nanos(BLOCK_NS), 0);
    c.push(Time::from_nanos(BLOCK_NS + BLOCK_LEN_NS), 20_000_000);
    ChannelTimeline {
        capacity: vec![Arc::new(c)],
        events: vec![FailureEvent {
            time: Time::from_nanos(BLOCK_NS),
            vehicle: 0,
            bs: Some(0),
            kind: FailureKind::Blockage,
            duration: Duration::from_nanos(BLOCK_LEN_NS),
            speed_mps: 10.0,
        }],
        counts: FailureCounts {
            blockage: 1,
            ..FailureCounts::default()
        },
        steps: 0,
        ..ChannelTimeline::default()
    }
}

/// The sender's controller mode after running to `end_ns`.
fn mode_at(end_ns: u64) -> Option<&'static str> {
    let s = scenario("rtwtcp", "perfect");
    let mut sim = build::build(&s).expect("builds");
    attach(&mut sim, &s, &timeline()).expect("attaches");
    sim.end = Time::from_nanos(end_ns);
    sim.run().expect("runs");
    let c = sim.flows[0].client;
    let h = sim.slots[c].handle.expect("connected");
    sim.slots[c].ep.stats(h).expect("stats").controller_mode
}

#[test]
fn the_perfect_hint_reaches_the_sender_at_event_plus_delay() {
    assert_eq!(mode_at(BLOCK_NS + HINT_DELAY_NS - 1), Some("normal"));
    assert_eq!(mode_at(BLOCK_NS + HINT_DELAY_NS), Some("frozen"));
}

/// (cwnd just before the outage, smallest cwnd until 200 ms after it
/// ended,
/// bytes delivered while the link was down).
fn across_the_outage(cc: &str, hints: &str) -> (u64, u64, u64) {
    let s = scenario(cc, hints);
    let r = run_with_timeline(&s, Some(&timeline())).expect("runs");
    let f = &r.flows[0];
    let at = |t: u64| {
        f.metrics
            .samples
            .iter()
            .find(|x| x.time_ns == t)
            .expect("sample")
    };
    let before = at(BLOCK_NS - 50_000_000).cwnd_bytes;
    let after = f
        .metrics
        .samples
        .iter()
        .filter(|x| x.time_ns > BLOCK_NS && x.time_ns <= BLOCK_NS + BLOCK_LEN_NS + 200_000_000)
        .map(|x| x.cwnd_bytes)
        .min()
        .expect("samples");
    // Samples ending at 2.1 s and 2.2 s cover only down time, bar the
    // core's 1 ms of propagation after the link fell.
    let during =
        at(BLOCK_NS + 100_000_000).delta.rx_bytes + at(BLOCK_NS + 200_000_000).delta.rx_bytes;
    let link = r
        .links
        .iter()
        .find(|l| l.name == "access-v0/up")
        .expect("link");
    assert!(link.stats.delivered_packets > 1000);
    (before, after, during)
}

#[test]
fn rtw_tcp_keeps_its_window_across_a_hinted_outage_and_cubic_cuts_it() {
    let (rb, ra, rd) = across_the_outage("rtwtcp", "perfect");
    let (cb, ca, cd) = across_the_outage("cubic", "perfect");
    assert_eq!((rd, cd), (0, 0), "nothing crosses a down link");
    assert!(ra >= rb * 9 / 10, "RTW-TCP cwnd {rb} -> {ra}");
    assert!(ca < cb * 8 / 10, "CUBIC cwnd {cb} -> {ca}");
    // Without the hint RTW-TCP cannot tell the outage from congestion.
    let (ab, aa, _) = across_the_outage("rtwtcp", "absent");
    assert!(aa < ab * 8 / 10, "RTW-TCP without hints {ab} -> {aa}");
}
