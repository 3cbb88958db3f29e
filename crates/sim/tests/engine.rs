//! End-to-end behaviour of the engine: sharing a bottleneck, outages,
//! trace-driven links, message-trace replay, loss on DATA only, and
//! scenario errors.

use peregrine_sim::{run, Scenario};
use std::path::{Path, PathBuf};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text, "test.toml", &[])
        .unwrap_or_else(|e| panic!("valid scenario: {e}"))
}

const TWO_FLOWS: &str = r#"
duration = "15s"
seed = 7
[[links]]
a = "s0"
b = "L"
rate = "1Gbps"
delay = "1ms"
[[links]]
a = "s1"
b = "L"
rate = "1Gbps"
delay = "1ms"
[[links]]
name = "bn"
a = "L"
b = "R"
rate = "4Mbps"
delay = "10ms"
queue = { packets = 50 }
[[flows]]
src = "s0"
dst = "R"
cc = "newreno"
[[flows.streams]]
app = "bulk"
[[flows]]
src = "s1"
dst = "R"
cc = "newreno"
[[flows.streams]]
app = "bulk"
"#;

#[test]
fn two_flows_share_a_bottleneck_fairly() {
    let r = run(&scenario(TWO_FLOWS)).expect("runs");
    let total: f64 = r
        .flows
        .iter()
        .map(|f| f.throughput_bps(r.duration_ns))
        .sum();
    assert!(total > 3.4e6 && total < 4.0e6 * 1.001, "aggregate {total}");
    let fair = r.fairness();
    let bn = fair
        .iter()
        .find(|(l, _)| l == "bn/up")
        .expect("bn/up is shared");
    assert!(bn.1 > 0.9, "Jain index {}", bn.1);
    assert!(
        r.flows.iter().all(|f| f.metrics.c.queue_drops > 0),
        "drop-tail queue overflowed for both"
    );
}

#[test]
fn a_scheduled_outage_stops_delivery_and_the_queue_holds() {
    let text = r#"
duration = "4s"
seed = 1
[[links]]
a = "a"
b = "b"
rate = "2Mbps"
delay = "5ms"
queue = { packets = 1000 }
outages = { scheduled = [{ start = "1s", end = "2s" }] }
[[flows]]
src = "a"
dst = "b"
[[flows.streams]]
app = "cbr"
rate = "400kbps"
message_bytes = 500
"#;
    let r = run(&scenario(text)).expect("runs");
    let mut during = 0;
    let mut queued_in_outage_delivered = 0;
    for m in &r.messages {
        let (queued, lat) = (m.queued_ns, m.latency_ns);
        let at = queued + lat;
        if at > 1_010_000_000 && at < 2_000_000_000 {
            during += 1;
        }
        if queued > 1_100_000_000 && queued < 1_900_000_000 {
            queued_in_outage_delivered += 1;
        }
    }
    assert_eq!(during, 0, "nothing is delivered during the outage");
    // The link's time series: nothing delivered over [1 s, 2 s), a queue
    // (what the sender's window allowed) waiting at its end, drained after it.
    let csv = r.link_timeseries_csv();
    let row = |t: &str| {
        csv.lines()
            .find(|l| l.starts_with(t) && l.contains(",a-b/up,"))
            .expect("a row")
            .split(',')
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let at2 = row("2.000000");
    assert_eq!(at2[4], "0", "delivered during the outage: {at2:?}");
    assert!(at2[2].parse::<u64>().expect("queue length") > 5, "{at2:?}");
    let at3 = row("3.000000");
    assert_eq!(at3[2], "0", "{at3:?}");
    // Messages offered during the outage waited and arrived after it.
    assert!(
        queued_in_outage_delivered > 50,
        "{queued_in_outage_delivered}"
    );
}

#[test]
fn a_trace_driven_link_delivers_the_trace_capacity() {
    // 2 opportunities per ms = 24 Mbit/s; a 20 Mbit/s CBR stream fits.
    let dir = std::env::temp_dir().join(format!("peregrine-sim-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let trace: String = (1..=10)
        .flat_map(|ms| [ms, ms])
        .map(|m| format!("{m}\n"))
        .collect();
    std::fs::write(dir.join("t.down"), trace).expect("trace written");
    let text = format!(
        r#"
duration = "2s"
seed = 3
[[links]]
a = "srv"
b = "ue"
delay = "5ms"
rate = "10Mbps"
queue = {{ packets = 500 }}
up = {{ trace = "{}" }}
[[flows]]
src = "srv"
dst = "ue"
payload_bytes = 1400
[[flows.streams]]
app = "bulk"
"#,
        dir.join("t.down").display()
    );
    let r = run(&scenario(&text)).expect("runs");
    let thr = r.flows[0].throughput_bps(r.duration_ns);
    // Bulk over a 24 Mbit/s trace: after slow start, most of the capacity.
    assert!(thr > 14e6 && thr <= 24e6 * 1.01, "throughput {thr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_drone_trace_replays_on_a_priority_stream_beside_bulk() {
    let Some(path) = peregrine_sim::scenario::find_upwards(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        Path::new("shared/traces/drone-mavlink/drone_processed.csv"),
    ) else {
        eprintln!("skipping: ../shared/traces/drone-mavlink/drone_processed.csv not found");
        return;
    };
    let text = format!(
        r#"
duration = "3s"
seed = 5
[[links]]
a = "uav"
b = "gcs"
rate = "1Mbps"
delay = "20ms"
queue = {{ bdp = 1.0 }}
[[flows]]
src = "uav"
dst = "gcs"
scheduler = "abs"
[[flows.streams]]
app = "trace"
path = "{}"
priority = 0
[[flows.streams]]
app = "bulk"
priority = 3
"#,
        path.display()
    );
    let r = run(&scenario(&text)).expect("runs");
    let f = &r.flows[0];
    let drone = &f.metrics.streams[0];
    let bulk = &f.metrics.streams[1];
    assert!(
        drone.messages_sent > 200,
        "{} messages replayed",
        drone.messages_sent
    );
    assert!(drone.messages_delivered as f64 > 0.9 * drone.messages_sent as f64);
    assert!(bulk.bytes_delivered > 50_000);
    // With strict priority the control messages see far less latency than bulk.
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
    assert!(mean(&drone.latencies_ns) < mean(&bulk.latencies_ns));
}

#[test]
fn loss_on_data_only_spares_acks() {
    let text = r#"
duration = "10s"
seed = 9
[[links]]
name = "l"
a = "a"
b = "b"
rate = "5Mbps"
delay = "10ms"
queue = { packets = 100 }
loss = { model = "bernoulli", p = 0.05, data_only = true }
[[flows]]
src = "a"
dst = "b"
[[flows.streams]]
app = "bulk"
"#;
    let r = run(&scenario(text)).expect("runs");
    let up = r.links.iter().find(|l| l.name == "l/up").expect("up");
    let down = r.links.iter().find(|l| l.name == "l/down").expect("down");
    assert!(up.stats.channel_drops > 0);
    assert_eq!(down.stats.channel_drops, 0, "ACKs are never lost");
    let rate = up.stats.channel_drops as f64
        / (up.stats.delivered_packets + up.stats.channel_drops) as f64;
    assert!((0.03..0.07).contains(&rate), "loss rate {rate}");
    assert!(
        r.flows[0]
            .stats
            .as_ref()
            .expect("stats")
            .packets_retransmitted
            > 0
    );
}

#[test]
fn errors_name_the_field_and_what_is_allowed() {
    let err = |text: &str| {
        Scenario::from_toml_str(text, "x.toml", &[])
            .expect_err("invalid")
            .to_string()
    };
    let base = "duration = \"1s\"\nseed = 1\n[[links]]\na = \"a\"\nb = \"b\"\nrate = \"1Mbps\"\n";
    assert_eq!(
        err(&format!(
            "{base}[[flows]]\nsrc = \"a\"\ndst = \"c\"\n[[flows.streams]]\napp = \"bulk\"\n"
        )),
        "x.toml: flows.0.dst: unknown node \"c\" (known: a, b)"
    );
    assert!(err(&format!(
        "{base}[[flows]]\nsrc = \"a\"\ndst = \"b\"\n[[flows.streams]]\napp = \"ftp\"\n"
    ))
    .starts_with("x.toml: flows.0.streams.0.app: unknown application \"ftp\" (allowed: bulk"));
    assert!(
        err("duration = \"1s\"\nseed = 1\n[[links]]\na = \"a\"\nb = \"b\"\n")
            .starts_with("x.toml: links.0.rate:")
    );
    assert!(err("seed = 1\n").contains("duration"));
    assert!(err("seed = 1\nduration = \"1s\"\n[[links]\n").starts_with("x.toml: line 3: "));
    assert!(err("duration = \"1 fortnight\"\nseed = 1\n")
        .starts_with("x.toml: duration: unknown duration unit"));
    assert!(err(&format!(
        "{base}loss = {{ model = \"bernoulli\", p = 1.5 }}\n"
    ))
    .starts_with("x.toml: links.0.loss.p: 1.5 is not a probability"));
    assert!(
        err(&format!("{base}queue = {{ packets = 5, bdp = 1.0 }}\n"))
            .starts_with("x.toml: links.0.queue: set exactly one of packets, bytes, bdp")
    );
}

#[test]
fn failures_name_the_seed() {
    let text = "duration = \"1s\"\nseed = 77\n[[links]]\na = \"a\"\nb = \"b\"\ntrace = \"no/such/trace.up\"\n[[flows]]\nsrc = \"a\"\ndst = \"b\"\n[[flows.streams]]\napp = \"bulk\"\n";
    let e = run(&scenario(text)).expect_err("missing trace").to_string();
    assert!(
        e.contains("seed 77") && e.contains("links.0.trace") && e.contains("no/such/trace.up"),
        "{e}"
    );
    let _ = PathBuf::new();
}
