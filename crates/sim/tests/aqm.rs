//! Issue 41's link half end to end: an AQM on the bottleneck of
//! `scenarios/dumbbell-aqm.toml` (20 Mbit/s, 40 ms round trip, a 4-BDP
//! buffer) keeps CUBIC's queue short; CE marks reach the receiver; the
//! scenario keys are validated with errors naming the key.

use peregrine_sim::{run, Scenario, SimResults};
use std::path::Path;

fn scenario(overrides: &[&str]) -> Result<Scenario, peregrine_sim::ScenarioError> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/dumbbell-aqm.toml");
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Scenario::from_file(&path, &o)
}

fn dumbbell(aqm: &str, extra: &[&str]) -> SimResults {
    let model = format!("links.1.aqm.model=\"{aqm}\"");
    let mut o = vec!["duration=30s", model.as_str()];
    o.extend_from_slice(extra);
    run(&scenario(&o).expect("valid")).expect("runs")
}

/// (goodput bit/s, queueing delay p50 and p99 ms): the one-way DATA delay
/// above the flow's smallest one.
fn figures(r: &SimResults) -> (f64, f64, f64) {
    let f = &r.flows[0];
    let base = f.delay_ms(0.0).expect("delivered");
    (
        f.metrics.c.goodput_bytes as f64 * 8.0 / (r.duration_ns as f64 / 1e9),
        f.delay_ms(0.5).expect("p50") - base,
        f.delay_ms(0.99).expect("p99") - base,
    )
}

fn bottleneck_up(r: &SimResults) -> &peregrine_sim::world::link::LinkStats {
    &r.links
        .iter()
        .find(|l| l.name == "bottleneck/up")
        .expect("link")
        .stats
}

#[test]
fn fq_codel_cuts_cubics_queueing_delay_at_little_goodput_cost() {
    let (dt_good, dt_p50, dt_p99) = figures(&dumbbell("drop_tail", &[]));
    let (fq_good, fq_p50, fq_p99) = figures(&dumbbell("fq_codel", &[]));
    eprintln!(
        "drop-tail: {:.2} Mbit/s, queueing p50 {dt_p50:.1} ms p99 {dt_p99:.1} ms; \
         fq_codel: {:.2} Mbit/s, p50 {fq_p50:.1} ms p99 {fq_p99:.1} ms",
        dt_good / 1e6,
        fq_good / 1e6
    );
    assert!(
        dt_p99 > 60.0,
        "drop-tail fills its buffer: p99 {dt_p99:.1} ms"
    );
    // The p99 includes slow start's overshoot (CoDel needs an interval
    // to react); the standing queue is the p50.
    assert!(fq_p99 < dt_p99 / 2.0, "fq_codel p99 {fq_p99:.1} ms");
    assert!(fq_p50 < 10.0, "fq_codel p50 {fq_p50:.1} ms");
    assert!(fq_good > 0.85 * dt_good, "goodput {fq_good} vs {dt_good}");
}

/// Issue 41's check, where its p99 comes from: with FQ-CoDel, CUBIC's
/// queueing delay p99 over the packets received after a 2-s warm-up is at
/// most 15 ms at ≥ 90 % of drop-tail's goodput. Over the whole run the
/// p99 is slow start's overshoot: HyStart++ compares each round's minimum
/// RTT with the last round's, and while the ACK-clocked flight still lets
/// the queue drain between rounds (up to ≈ 4 BDP here) those minima barely
/// rise, so slow start runs until CoDel's first mark — a sojourn above
/// 5 ms for a whole 100-ms interval, then an RTT for the echo — by which
/// time the queue holds ≈ 100 ms, and CUBIC's one reduction (× 0.7) per
/// round trip takes ≈ 0.6 s to drain it (docs/scenarios.md, "AQM and slow
/// start").
#[test]
fn fq_codel_keeps_cubics_p99_within_15_ms_once_start_up_is_over() {
    let warm = "metrics.warmup=\"2s\"";
    let dt = dumbbell("drop_tail", &[warm]);
    let fq = dumbbell("fq_codel", &[warm]);
    let (dt_good, _, _) = figures(&dt);
    let (fq_good, _, fq_p99) = figures(&fq);
    let f = &fq.flows[0];
    let base = f.delay_ms(0.0).expect("delivered");
    let after = f.delay_after_warmup_ms(0.99).expect("packets after 2 s") - base;
    eprintln!(
        "fq_codel: p99 {fq_p99:.1} ms over the run, {after:.1} ms after 2 s; \
         goodput {:.1} % of drop-tail",
        100.0 * fq_good / dt_good
    );
    assert!(after <= 15.0, "p99 after the warm-up {after:.1} ms");
    assert!(fq_good >= 0.9 * dt_good, "goodput {fq_good} vs {dt_good}");
    // The start-up is where the whole run's p99 comes from.
    assert!(fq_p99 > 2.0 * after, "whole run {fq_p99:.1} ms");
    // Without a warm-up the summary has no such quantiles.
    assert_eq!(
        dumbbell("fq_codel", &[]).flows[0].delay_after_warmup_ms(0.99),
        None
    );
}

/// The field's CUBIC: Linux's HyStart exit (`cc_options`) and a receiver
/// with TCP's delayed ACK (an ACK every second packet).
const LINUX_CUBIC: [&str; 2] = [
    "flows.0.cc_options={ slow_start_exit = \"linux_hystart\" }",
    "flows.0.ack_policy=\"tcp\"",
];

/// Issue 41's check as the field states it, about the field's CUBIC
/// (docs/scenarios.md, "AQM and slow start"): with FQ-CoDel, Linux CUBIC's
/// queueing delay p99 over the **whole run** is at most 15 ms at ≥ 90 % of
/// drop-tail's goodput. Its ACK-train HyStart sees the trains a
/// second-packet receiver's ACKs make (≈ 1.2 ms apart, under its 2-ms
/// gap) and ends slow start before the queue builds. The scenario has no
/// random element, so one run each decides.
#[test]
fn fq_codel_keeps_linux_cubics_p99_within_15_ms_over_the_whole_run() {
    let dt = dumbbell("drop_tail", &LINUX_CUBIC);
    let fq = dumbbell("fq_codel", &LINUX_CUBIC);
    let (dt_good, _, _) = figures(&dt);
    let (fq_good, fq_p50, fq_p99) = figures(&fq);
    eprintln!(
        "Linux CUBIC, fq_codel: p50 {fq_p50:.1} ms, p99 {fq_p99:.1} ms over the run; \
         goodput {:.2} Mbit/s, {:.1} % of drop-tail's {:.2}",
        fq_good / 1e6,
        100.0 * fq_good / dt_good,
        dt_good / 1e6
    );
    assert!(fq_p99 <= 15.0, "whole-run p99 {fq_p99:.1} ms");
    assert!(fq_good >= 0.9 * dt_good, "goodput {fq_good} vs {dt_good}");
    // The options reached the controller: SLTP's CUBIC (the defaults) on
    // the same path overshoots in slow start (53 ms, above).
    let (_, _, sltp_p99) = figures(&dumbbell("fq_codel", &[]));
    assert!(sltp_p99 > 2.0 * fq_p99, "SLTP's CUBIC p99 {sltp_p99:.1} ms");
}

#[test]
fn codel_with_ecn_marks_instead_of_dropping_and_the_receiver_sees_ce() {
    let r = dumbbell("codel", &["links.1.aqm.ecn=true"]);
    let s = bottleneck_up(&r);
    assert_eq!(s.aqm, Some("codel"));
    assert!(s.ce_marked > 0, "no CE marks");
    // The core sends every datagram ECT(0): no AQM drop at all.
    assert_eq!(s.aqm_dropped, 0);
    // The flow's stats are its sender's: the receiver saw the CE marks
    // (through `handle_datagram`) and echoed them, and the sender reacted.
    let stats = r.flows[0].stats.as_ref().expect("stats");
    assert!(stats.ecn_echoes_received > 0, "no CE echo came back");
    assert!(stats.ecn_episodes > 0, "the sender never reacted to CE");
    // Without ECN the same AQM drops.
    let r = dumbbell("codel", &[]);
    let s = bottleneck_up(&r);
    assert!(s.aqm_dropped > 0 && s.ce_marked == 0);
}

#[test]
fn bad_link_option_keys_are_errors_naming_the_key() {
    for (set, field) in [
        ("links.1.aqm.target_ms=-1", "links.1.aqm.target_ms"),
        ("links.1.aqm.model=\"sfq\"", "links.1.aqm.model"),
        ("links.1.aqm.w_q=0.1", "links.1.aqm.w_q"),
        (
            "links.1.up.jitter={ model = \"cauchy\", mean_ms = 1, stdev_ms = 1 }",
            "links.1.up.jitter.model",
        ),
        ("links.1.reorder={ p = 2 }", "links.1.reorder.p"),
        ("metrics.warmup=\"30s\"", "metrics.warmup"),
        ("flows.0.pacing=\"smooth\"", "flows.0.pacing"),
        (
            "links.1.reorder={ p = 0.1, gap = 0 }",
            "links.1.reorder.gap",
        ),
    ] {
        let e = scenario(&[set]).unwrap_err();
        assert_eq!(e.field, field, "{set}: {e}");
    }
    let ok = scenario(&[
        "links.1.jitter={ model = \"pareto\", mean_ms = 2, stdev_ms = 1 }",
        "links.1.down.reorder={ p = 0.1, gap = 5 }",
    ]);
    assert!(ok.is_ok(), "{ok:?}");
}
