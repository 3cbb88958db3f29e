//! The scenarios of `peregrine reproduce quic-sched`, built in code as
//! typed [`ScenarioConfig`] values (the schema of `scenarios/*.toml`, so
//! every set-up can be written as a file and run with `peregrine sim`).
//!
//! Key choices, all stated in the report:
//! * the link is `src = a → b = dst`, so the data direction is `up`; loss
//!   (Table 1) is Bernoulli on the data direction only;
//! * the priority stream is stream 0 (class 0, WFQ weight chosen for the
//!   stated share), bulk streams are class 3 with weight 1;
//! * bulk streams keep at most [`BULK_BUFFER_BYTES`] queued in the sender
//!   (the engine's default 4 MiB per stream would fill the connection's
//!   send buffer with nine bulk streams, and the transport would refuse
//!   the priority stream's timed messages);
//! * EDF gives the priority stream a 1 s deadline (the bulk streams none),
//!   aging bounds a stream's oldest message at 100 ms, and the adaptive
//!   scheduler of set-up (a) targets 1 Mbit/s (the link rate).

use anyhow::Context;
use peregrine_sim::scenario::config::{
    DirConfig, FlowConfig, LinkConfig, LossConfig, QueueConfig, ScenarioConfig, StreamAppConfig,
};
use peregrine_sim::scenario::units::{Dur, Rate};

/// Payload bytes of a full DATA packet (the engine's default).
pub const PAYLOAD_BYTES: u64 = 1400;

/// Sender-side buffer of each bulk stream (bytes): four 16 KiB messages.
pub const BULK_BUFFER_BYTES: u64 = 65_536;

/// A scenario of `duration_s` seconds, seed 1 (each run sets its own),
/// named `name`, recording every message when `per_message`.
fn scenario(name: &str, duration_s: u64, per_message: bool) -> ScenarioConfig {
    let mut s = ScenarioConfig::new(Dur(duration_s.saturating_mul(1_000_000_000)), 1);
    s.name = Some(name.to_string());
    s.metrics.per_message = per_message;
    s
}

/// The 1 Mbit/s, 40 ms RTT, 1-BDP link of seed 002's ns-3 set-up, with
/// Bernoulli loss `loss` on the data direction.
fn seed002_link(loss: f64) -> LinkConfig {
    let mut link = LinkConfig::new("uav", "gcs");
    link.name = Some("radio".into());
    link.rate = Some(Rate::from_mbps(1));
    link.delay = Some(Dur::from_millis(20));
    link.queue = Some(QueueConfig::bdp(1.0));
    if loss > 0.0 {
        link.up = Some(DirConfig {
            loss: Some(LossConfig::bernoulli(loss)),
            ..DirConfig::default()
        });
    }
    link
}

/// The connection `uav → gcs` (CUBIC, slow start) under `scheduler`, with
/// its scheduler's setting: the adaptive scheduler targets 1 Mbit/s (the
/// link rate), aging bounds a stream's wait at 100 ms; a name ending in
/// `+guard` (`abs+guard`) is that scheduler with the queue guard on at
/// the showcase's [`GUARD_DELAY`](crate::showcase::GUARD_DELAY).
fn seed002_flow(scheduler: &str) -> FlowConfig {
    let mut flow = FlowConfig::new("uav", "gcs");
    flow.name = Some("uav".into());
    flow.cc = "cubic".into();
    flow.startup = "slow_start".into();
    let scheduler = match scheduler.strip_suffix("+guard") {
        Some(base) => {
            flow.queue_guard = Some(crate::showcase::GUARD_DELAY);
            base
        }
        None => scheduler,
    };
    flow.scheduler = scheduler.into();
    match scheduler {
        "adaptive" => flow.target_rate = Some(Rate::from_mbps(1)),
        "aging" => flow.aging_bound = Some(Dur::from_millis(100)),
        _ => {}
    }
    flow
}

/// Stream `id`: `app` in priority class `priority` with WFQ weight `weight`.
fn stream(id: u16, app: &str, priority: u8, weight: u32) -> StreamAppConfig {
    let mut s = StreamAppConfig::new(app);
    s.id = Some(id);
    s.priority = priority;
    s.weight = weight;
    s
}

/// A bulk stream of class 3, weight 1, keeping [`BULK_BUFFER_BYTES`] queued.
fn bulk_stream(id: u16) -> StreamAppConfig {
    let mut s = stream(id, "bulk", 3, 1);
    s.buffer_bytes = Some(BULK_BUFFER_BYTES);
    s
}

/// Fig. 5: one connection, the drone trace (`trace_path`, absolute) on
/// stream 0 and nine bulk streams; WFQ gives 25 % to stream 0 (weight 3
/// against 9 × 1); EDF gives stream 0 a 1 s deadline. O(1).
pub fn fig5(trace_path: &str, scheduler: &str, duration_s: u64) -> ScenarioConfig {
    let mut s = scenario("quic-sched-fig5", duration_s, true);
    s.links.push(seed002_link(0.0));
    let mut flow = seed002_flow(scheduler);
    let mut control = stream(0, "trace", 0, 3);
    control.path = Some(trace_path.to_string());
    if scheduler == "edf" {
        control.deadline = Some(Dur(1_000_000_000));
    }
    flow.streams.push(control);
    flow.streams.extend((1..10).map(bulk_stream));
    s.flows.push(flow);
    s
}

/// Table 1: two streams; stream 0 sends a message of `packets` full
/// packets every `period_ms` from t = 1 s, stream 1 is bulk; WFQ gives
/// 75 % to stream 0 (weight 3 against 1); `loss` (0–1) on the data
/// direction. Fails if the message does not fit a scenario's message
/// size or `period_ms` is 0. O(1).
pub fn table1(
    scheduler: &str,
    packets: u64,
    loss: f64,
    duration_s: u64,
    period_ms: u64,
) -> anyhow::Result<ScenarioConfig> {
    anyhow::ensure!(
        period_ms > 0,
        "Table 1: the message period must be positive"
    );
    let message = packets * PAYLOAD_BYTES;
    // A message every period: rate = bits per message / period.
    let rate_bps = message * 8 * 1000 / period_ms;
    let mut s = scenario("quic-sched-table1", duration_s, true);
    s.links.push(seed002_link(loss));
    let mut flow = seed002_flow(scheduler);
    flow.payload_bytes = u32::try_from(PAYLOAD_BYTES).context("payload bytes")?;
    let mut prio = stream(0, "cbr", 0, 3);
    prio.message_bytes = Some(
        u32::try_from(message)
            .with_context(|| format!("Table 1: a message of {packets} packets is too large"))?,
    );
    prio.rate = Some(Rate(rate_bps));
    prio.start = Some(Dur(1_000_000_000));
    flow.streams.push(prio);
    flow.streams.push(bulk_stream(1));
    s.flows.push(flow);
    Ok(s)
}

/// §4.3: a server sends two files of `bytes` each on two streams (stream 0
/// class 0, stream 1 class 1) to a mobile device whose downlink replays
/// the Mahimahi trace `trace_path` (absolute); uplink 50 Mbit/s; one-way
/// delay `delay_ms`; a drop-tail queue of `buffer_bdp` × BDP (the trace's
/// mean rate × 2 × delay, with the engine's queue floor); the adaptive
/// scheduler with target `target_mbps`. O(1).
pub fn adaptive(
    trace_path: &str,
    target_mbps: u64,
    delay_ms: u64,
    buffer_bdp: f64,
    bytes: u64,
    duration_s: u64,
) -> ScenarioConfig {
    let mut s = scenario("quic-sched-adaptive", duration_s, false);
    let mut link = LinkConfig::new("ue", "server");
    link.name = Some("mmwave".into());
    link.delay = Some(Dur::from_millis(delay_ms));
    link.queue = Some(QueueConfig::bdp(buffer_bdp));
    link.up = Some(DirConfig {
        rate: Some(Rate::from_mbps(50)),
        ..DirConfig::default()
    });
    link.down = Some(DirConfig {
        trace: Some(trace_path.to_string()),
        ..DirConfig::default()
    });
    s.links.push(link);
    let mut flow = FlowConfig::new("server", "ue");
    flow.name = Some("download".into());
    flow.cc = "cubic".into();
    flow.scheduler = "adaptive".into();
    flow.target_rate = Some(Rate::from_mbps(target_mbps));
    for (id, priority) in [(0, 0), (1, 1)] {
        let mut file = stream(id, "file", priority, 1);
        file.bytes = Some(bytes);
        flow.streams.push(file);
    }
    s.flows.push(flow);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use peregrine_sim::Scenario;

    #[test]
    fn every_setup_validates() {
        for sched in ["rr", "wfq", "abs", "adaptive", "edf", "aging", "abs+guard"] {
            let s =
                Scenario::from_config(fig5("/nonexistent/drone.csv", sched, 10), "fig5").unwrap();
            assert_eq!(s.config.flows[0].streams.len(), 10);
            let guard = s.config.flows[0].queue_guard;
            assert_eq!(guard.is_some(), sched.ends_with("+guard"), "{sched}");
        }
        for loss in [0.0, 0.05] {
            Scenario::from_config(table1("wfq", 16, loss, 10, 500).unwrap(), "table1").unwrap();
        }
        let a = adaptive("/nonexistent/trace", 100, 0, 0.5, 1_000_000, 10);
        Scenario::from_config(a, "adaptive").unwrap();
        assert!(table1("wfq", 16, 0.0, 10, 0).is_err());
    }

    /// The set-ups equal the TOML documents they were once written as.
    #[test]
    fn setups_are_the_documents_of_the_report() {
        let doc = "name = \"quic-sched-table1\"\nduration = \"10s\"\nseed = 1\n[metrics]\nper_message = true\n\
            [[links]]\nname = \"radio\"\na = \"uav\"\nb = \"gcs\"\nrate = \"1Mbps\"\ndelay = \"20ms\"\nqueue = { bdp = 1.0 }\n\
            up = { loss = { model = \"bernoulli\", p = 0.1 } }\n\
            [[flows]]\nname = \"uav\"\nsrc = \"uav\"\ndst = \"gcs\"\ncc = \"cubic\"\nstartup = \"slow_start\"\nscheduler = \"rr\"\npayload_bytes = 1400\n\
            [[flows.streams]]\nid = 0\napp = \"cbr\"\nmessage_bytes = 5600\nrate = \"89600bps\"\nstart = \"1s\"\npriority = 0\nweight = 3\n\
            [[flows.streams]]\nid = 1\napp = \"bulk\"\npriority = 3\nweight = 1\nbuffer_bytes = 65536\n";
        let file = Scenario::from_toml_str(doc, "t", &[]).unwrap();
        let built = Scenario::from_config(table1("rr", 4, 0.1, 10, 500).unwrap(), "t").unwrap();
        assert_eq!(format!("{:?}", built.config), format!("{:?}", file.config));
        let stream = &built.config.flows[0].streams[0];
        // 5600 B × 8 bits every 0.5 s = 89 600 bit/s.
        assert_eq!(
            (stream.message_bytes, stream.rate),
            (Some(5600), Some(Rate(89_600)))
        );
    }

    /// Control p99 (ms), delivered, sent and the bulk streams' aggregate
    /// goodput (Mbit/s) of Fig. 5 under `scheduler` for `duration_s`.
    fn fig5_figures(trace: &str, scheduler: &str, duration_s: u64) -> (f64, u64, u64, f64) {
        let config = fig5(trace, scheduler, duration_s);
        let scenario = Scenario::from_config(config, "fig5").unwrap();
        let r = peregrine_sim::run(&scenario).unwrap();
        let sent = r.stream_summary(0, 0).unwrap().messages_sent;
        let mut lat = r.message_latencies_ms(0, 0);
        lat.sort_by(f64::total_cmp);
        let p99 = peregrine_sim::metrics::quantile(
            &lat,
            0.99,
            peregrine_sim::metrics::QuantileMethod::RoundedIndex,
        )
        .unwrap_or(f64::INFINITY);
        let bulk_bps: f64 = r.flows[0].metrics.streams[1..]
            .iter()
            .map(|s| s.goodput_bps(r.duration_ns))
            .sum();
        (p99, lat.len() as u64, sent, bulk_bps / 1e6)
    }

    /// Issue 28's Fig. 5 checks on the queue guard (the real drone trace
    /// beside nine bulk streams, seed 1): control p99 ≤ 100 ms and the
    /// bulk aggregate ≥ 95 % of ABS's in the same setting. 30 s rather
    /// than the report's 60 s to keep the debug-build test short; the
    /// 60 s figures are in docs/protocol.md §10.2.
    #[test]
    fn fig5_guard_meets_the_checks() {
        let rel = "traces/drone-mavlink/drone_processed.csv";
        let Ok(trace) = crate::published::find_shared(rel) else {
            eprintln!("skipped: shared/{rel} is absent");
            return;
        };
        let trace = trace.display().to_string();
        let (abs_p99, _, _, abs_bulk) = fig5_figures(&trace, "abs", 30);
        let (p99, delivered, sent, bulk) = fig5_figures(&trace, "abs+guard", 30);
        eprintln!(
            "Fig. 5, 30 s, seed 1: abs p99 {abs_p99:.1} ms bulk {abs_bulk:.3} Mbit/s; \
             abs+guard {delivered} / {sent} p99 {p99:.1} ms bulk {bulk:.3} Mbit/s"
        );
        assert!(sent > 5_000, "the trace offered only {sent} messages");
        assert!(p99 <= 100.0, "abs+guard control p99 {p99:.1} ms > 100 ms");
        assert!(
            bulk >= 0.95 * abs_bulk,
            "abs+guard bulk {bulk:.3} Mbit/s < 95 % of ABS's {abs_bulk:.3}"
        );
    }

    /// Issue 28 item 3: in Fig. 5's setting (nine saturating bulk streams
    /// and the MAVLink trace) aging with its 100 ms bound delivers ≥ 99 %
    /// of the control messages (it delivered 70 of 8,190 when aged bulk
    /// streams could overtake the control stream without limit). The
    /// scheduler-level bound (no wait beyond the bound plus one packet
    /// time) is `peregrine_proto::sched` test
    /// `aging_serves_the_control_stream_beside_nine_saturating_bulk_streams`.
    #[test]
    fn fig5_aging_delivers_the_control_messages() {
        let rel = "traces/drone-mavlink/drone_processed.csv";
        let Ok(trace) = crate::published::find_shared(rel) else {
            eprintln!("skipped: shared/{rel} is absent");
            return;
        };
        let config = fig5(&trace.display().to_string(), "aging", 60);
        let scenario = Scenario::from_config(config, "fig5").unwrap();
        let r = peregrine_sim::run(&scenario).unwrap();
        let sent = r.stream_summary(0, 0).unwrap().messages_sent;
        let lat = r.message_latencies_ms(0, 0);
        let delivered = lat.len() as u64;
        let worst = lat.iter().copied().fold(0.0f64, f64::max);
        eprintln!(
            "aging, Fig. 5, 60 s, seed 1: {delivered} / {sent} delivered, worst {worst:.1} ms"
        );
        assert!(sent > 5_000, "the trace offered only {sent} messages");
        assert!(
            delivered * 100 >= sent * 99,
            "aging delivered {delivered} of {sent} control messages"
        );
    }
}
