//! The scenario documents of `peregrine reproduce quic-sched`, built in
//! code as TOML text (the same schema as `scenarios/*.toml`, so every
//! set-up can be copied into a file and run with `peregrine sim`).
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

/// Payload bytes of a full DATA packet (the engine's default).
pub const PAYLOAD_BYTES: u64 = 1400;

/// Sender-side buffer of each bulk stream (bytes): four 16 KiB messages.
pub const BULK_BUFFER_BYTES: u64 = 65_536;

/// Scheduler-specific flow fields and stream-0 fields.
fn scheduler_fields(scheduler: &str) -> (String, String) {
    match scheduler {
        "adaptive" => ("target_rate = \"1Mbps\"\n".into(), String::new()),
        "aging" => ("aging_bound = \"100ms\"\n".into(), String::new()),
        "edf" => (String::new(), "deadline = \"1s\"\n".into()),
        _ => (String::new(), String::new()),
    }
}

fn parse(text: &str) -> anyhow::Result<toml::Value> {
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("internal scenario is not valid TOML:\n{text}"))?;
    Ok(toml::Value::Table(table))
}

/// The 1 Mbit/s, 40 ms RTT, 1-BDP link of seed 002's ns-3 set-up, with
/// Bernoulli loss `loss` on the data direction.
fn seed002_link(loss: f64) -> String {
    let mut s = String::from(
        "[[links]]\nname = \"radio\"\na = \"uav\"\nb = \"gcs\"\nrate = \"1Mbps\"\ndelay = \"20ms\"\nqueue = { bdp = 1.0 }\n",
    );
    if loss > 0.0 {
        s.push_str(&format!(
            "up = {{ loss = {{ model = \"bernoulli\", p = {loss} }} }}\n"
        ));
    }
    s
}

/// Fig. 5: one connection, the drone trace (`trace_path`, absolute) on
/// stream 0 and nine bulk streams; WFQ gives 25 % to stream 0 (weight 3
/// against 9 × 1).
pub fn fig5(trace_path: &str, scheduler: &str, duration_s: u64) -> anyhow::Result<toml::Value> {
    let (flow_extra, stream0_extra) = scheduler_fields(scheduler);
    let mut s = format!(
        "name = \"quic-sched-fig5\"\nduration = \"{duration_s}s\"\nseed = 1\n[metrics]\nper_message = true\n\n{}\n\
         [[flows]]\nname = \"uav\"\nsrc = \"uav\"\ndst = \"gcs\"\ncc = \"cubic\"\nstartup = \"slow_start\"\nscheduler = \"{scheduler}\"\n{flow_extra}\n\
         [[flows.streams]]\nid = 0\napp = \"trace\"\npath = {}\npriority = 0\nweight = 3\n{stream0_extra}\n",
        seed002_link(0.0),
        toml::Value::String(trace_path.to_string()),
    );
    for id in 1..10 {
        s.push_str(&format!(
            "[[flows.streams]]\nid = {id}\napp = \"bulk\"\npriority = 3\nweight = 1\nbuffer_bytes = {BULK_BUFFER_BYTES}\n\n"
        ));
    }
    parse(&s)
}

/// Table 1: two streams; stream 0 sends a message of `packets` full
/// packets every `period_ms`, stream 1 is bulk; WFQ gives 75 % to stream
/// 0 (weight 3 against 1); `loss` (0–1) on the data direction.
pub fn table1(
    scheduler: &str,
    packets: u64,
    loss: f64,
    duration_s: u64,
    period_ms: u64,
) -> anyhow::Result<toml::Value> {
    let message = packets * PAYLOAD_BYTES;
    // A message every period: rate = bits per message / period.
    let rate_bps = message * 8 * 1000 / period_ms;
    let s = format!(
        "name = \"quic-sched-table1\"\nduration = \"{duration_s}s\"\nseed = 1\n[metrics]\nper_message = true\n\n{}\n\
         [[flows]]\nname = \"uav\"\nsrc = \"uav\"\ndst = \"gcs\"\ncc = \"cubic\"\nstartup = \"slow_start\"\nscheduler = \"{scheduler}\"\npayload_bytes = {PAYLOAD_BYTES}\n\n\
         [[flows.streams]]\nid = 0\napp = \"cbr\"\nmessage_bytes = {message}\nrate = {rate_bps}\nstart = \"1s\"\npriority = 0\nweight = 3\n\n\
         [[flows.streams]]\nid = 1\napp = \"bulk\"\npriority = 3\nweight = 1\nbuffer_bytes = {BULK_BUFFER_BYTES}\n",
        seed002_link(loss),
    );
    parse(&s)
}

/// §4.3: a server sends two files of `bytes` each on two streams (stream 0
/// class 0, stream 1 class 1) to a mobile device whose downlink replays
/// the Mahimahi trace `trace_path` (absolute); uplink 50 Mbit/s; one-way
/// delay `delay_ms`; a drop-tail queue of `buffer_bdp` × BDP (the trace's
/// mean rate × 2 × delay, with the engine's queue floor); the adaptive
/// scheduler with target `target_mbps`.
pub fn adaptive(
    trace_path: &str,
    target_mbps: u64,
    delay_ms: u64,
    buffer_bdp: f64,
    bytes: u64,
    duration_s: u64,
) -> anyhow::Result<toml::Value> {
    let s = format!(
        "name = \"quic-sched-adaptive\"\nduration = \"{duration_s}s\"\nseed = 1\n[metrics]\ninterval = \"1s\"\nper_message = false\n\n\
         [[links]]\nname = \"mmwave\"\na = \"ue\"\nb = \"server\"\ndelay = \"{delay_ms}ms\"\nqueue = {{ bdp = {buffer_bdp:?} }}\nup = {{ rate = \"50Mbps\" }}\ndown = {{ trace = {} }}\n\n\
         [[flows]]\nname = \"download\"\nsrc = \"server\"\ndst = \"ue\"\ncc = \"cubic\"\nscheduler = \"adaptive\"\ntarget_rate = \"{target_mbps}Mbps\"\n\n\
         [[flows.streams]]\nid = 0\napp = \"file\"\nbytes = {bytes}\npriority = 0\n\n\
         [[flows.streams]]\nid = 1\napp = \"file\"\nbytes = {bytes}\npriority = 1\n",
        toml::Value::String(trace_path.to_string()),
    );
    parse(&s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use peregrine_sim::Scenario;

    #[test]
    fn every_setup_validates() {
        for sched in ["rr", "wfq", "abs", "adaptive", "edf", "aging"] {
            let doc = fig5("/nonexistent/drone.csv", sched, 10).unwrap();
            let s = Scenario::from_value(doc, "fig5").unwrap();
            assert_eq!(s.config.flows[0].streams.len(), 10);
        }
        for loss in [0.0, 0.05] {
            let doc = table1("wfq", 16, loss, 10, 500).unwrap();
            Scenario::from_value(doc, "table1").unwrap();
        }
        let doc = adaptive("/nonexistent/trace", 100, 0, 0.5, 1_000_000, 10).unwrap();
        Scenario::from_value(doc, "adaptive").unwrap();
    }

    #[test]
    fn table1_message_is_whole_packets_at_the_period() {
        let doc = table1("rr", 4, 0.1, 10, 500).unwrap();
        let stream = &doc["flows"][0]["streams"][0];
        assert_eq!(stream["message_bytes"].as_integer(), Some(5600));
        // 5600 B × 8 bits every 0.5 s = 89 600 bit/s.
        assert_eq!(stream["rate"].as_integer(), Some(89_600));
        assert_eq!(doc["links"][0]["up"]["loss"]["p"].as_float(), Some(0.1));
    }
}
