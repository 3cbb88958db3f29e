//! `[[flow_groups]]` (issue 20): many client nodes connect to one server
//! endpoint, and every member keeps its own per-flow and per-stream
//! metrics.

use peregrine_sim::{run, Scenario};

/// 20 drones (one connection each, 2 ms apart) to one ground endpoint
/// over a shared 10 Mbit/s, 10 ms link; telemetry on stream 0, and drones
/// 0 and 10 also send a 500 kbit/s stream 1.
const SWARM: &str = r#"
duration = "3s"
seed = 7

[[links]]
name = "radio"
a = "air"
b = "ground"
rate = "10Mbps"
delay = "10ms"

[[flow_groups]]
name = "d"
count = 20
src = "d{i}"
dst = "ground"
start_spacing = "2ms"
link = { b = "air", rate = "1Gbps", delay = "0.1ms" }
scheduler = "abs"

[[flow_groups.streams]]
app = "cbr"
rate = "16kbps"
message_bytes = 200
priority = 0

[[flow_groups.streams]]
every = 10
app = "cbr"
rate = "500kbps"
message_bytes = 1000
priority = 2
"#;

#[test]
fn twenty_clients_connect_to_one_endpoint_and_keep_their_own_metrics() {
    let s = Scenario::from_toml_str(SWARM, "swarm.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    let r = run(&s).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.flows.len(), 20);
    let g = &r.groups[0];
    assert_eq!((g.name.as_str(), g.dst.as_str()), ("d", "ground"));
    // One server endpoint accepted every member and still holds them all.
    assert_eq!(g.server_accepted, 20);
    assert_eq!(g.server_connections, 20);
    for (i, f) in r.flows.iter().enumerate() {
        assert_eq!(f.name, format!("d{i}"));
        assert_eq!(f.dst, "ground");
        assert!(f.metrics.connected_ns.is_some(), "{} connected", f.name);
        let want = if i % 10 == 0 { 2 } else { 1 };
        assert_eq!(f.metrics.streams.len(), want, "{}", f.name);
        for (j, st) in f.metrics.streams.iter().enumerate() {
            assert_eq!(usize::from(st.id), j);
            assert!(
                st.messages_delivered > 0 && st.latencies_ns.len() as u64 == st.messages_delivered,
                "{} stream {j}: delivered {}",
                f.name,
                st.messages_delivered
            );
            let sum = r.stream_summary(i, j).expect("a summary per member stream");
            // At least the shared link's 10 ms; a few hundred ms at most.
            let p99 = sum.latency.p99_ms.expect("a p99 per member stream");
            assert!(
                (10.0..1000.0).contains(&p99),
                "{} stream {j}: p99 {p99}",
                f.name
            );
        }
        // The member's own packets are counted as its own.
        assert!(f.metrics.c.rx_packets > 0 && f.metrics.c.rx_packets <= f.metrics.c.tx_packets);
        assert!(f.stats.is_some(), "{}: client stats", f.name);
    }
    // Telemetry: 10 Hz from each member's start; nearly all delivered.
    let tele: u64 = r
        .flows
        .iter()
        .map(|f| f.metrics.streams[0].messages_delivered)
        .sum();
    assert!(tele >= 20 * 25, "{tele} telemetry messages delivered");

    // The outputs: a digest per group and stream, every member stream in
    // summary.json and streams.csv, the digest on the console.
    let j = r.summary_json();
    let digest = &j["flow_groups"][0];
    assert_eq!(digest["members"], 20);
    assert_eq!(digest["server"]["accepted"], 20);
    assert_eq!(digest["streams"][0]["members"], 20);
    assert_eq!(digest["streams"][1]["members"], 2);
    assert_eq!(digest["streams"][0]["members_with_latency"], 20);
    assert!(digest["streams"][0]["latency_p99_ms"]["max"]
        .as_f64()
        .is_some());
    assert_eq!(j["flows"].as_array().map(Vec::len), Some(20));
    assert!(j["flows"][13]["streams"][0]["latency"]["p99_ms"]
        .as_f64()
        .is_some());
    let table = r.print_table();
    assert!(
        table.contains("group d: 20 members → one server endpoint at ground (20 connected"),
        "{table}"
    );
    assert!(
        !table.contains("\nd13 "),
        "members are digested, not listed:\n{table}"
    );
    let dir = std::env::temp_dir().join(format!("peregrine-flow-groups-{}", std::process::id()));
    r.write_to(&dir).expect("written");
    let csv = std::fs::read_to_string(dir.join("streams.csv")).expect("streams.csv");
    assert_eq!(csv.lines().count(), 1 + 22, "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("d10,d,1,cbr,")), "{csv}");
    let _ = std::fs::remove_dir_all(&dir);

    // Reproducible like any run.
    let again = run(&s).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.summary_json(), j);
}

#[test]
fn a_bad_group_field_is_named() {
    let err = |set: &str| {
        Scenario::from_toml_str(SWARM, "swarm.toml", &[set.to_string()])
            .map(|_| ())
            .unwrap_err()
    };
    let e = err("flow_groups.0.streams.1.reliability=\"sometimes\"");
    assert_eq!(e.field, "flow_groups.0.streams.1.reliability");
    assert!(e.message.contains("unknown reliability"), "{e}");
    assert_eq!(
        e.to_string().split(": ").take(2).collect::<Vec<_>>(),
        ["swarm.toml", "flow_groups.0.streams.1.reliability"]
    );
    assert_eq!(err("flow_groups.0.count=-1").field, "flow_groups.0.count");
    assert_eq!(err("flow_groups.0.every=2").field, "flow_groups.0.every");
    assert_eq!(
        err("flow_groups.0.link.delay=\"soon\"").field,
        "flow_groups.0.link.delay"
    );
    assert_eq!(err("flow_groups.0.dst=\"d{i}\"").field, "flow_groups.0.dst");
}

#[test]
fn encrypted_members_and_a_hand_written_flow_share_the_server_node() {
    // A hand-written flow to the same node keeps its own server endpoint;
    // the members all authenticate the one shared endpoint's key.
    let doc = format!(
        "{SWARM}\n[[flows]]\nname = \"relay\"\nsrc = \"air\"\ndst = \"ground\"\n[[flows.streams]]\napp = \"cbr\"\nrate = \"64kbps\"\n"
    );
    for pattern in ["ik", "xx", "ikpsk2", "nnpsk0"] {
        let set = [
            format!("flow_groups.0.security=\"{pattern}\""),
            "flow_groups.0.count=5".to_string(),
            "duration=1s".to_string(),
        ];
        let s = Scenario::from_toml_str(&doc, "swarm.toml", &set).unwrap_or_else(|e| panic!("{e}"));
        let r = run(&s).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        assert_eq!(r.flows.len(), 6);
        assert_eq!(r.flows[0].name, "relay");
        assert_eq!(r.groups[0].flows, 1..6);
        assert_eq!(r.groups[0].server_accepted, 5, "{pattern}");
        for f in &r.flows {
            assert!(f.metrics.connected_ns.is_some(), "{pattern}: {}", f.name);
            assert!(
                f.metrics.streams[0].messages_delivered > 0,
                "{pattern}: {}",
                f.name
            );
        }
        let sealed = r.flows[1].stats.as_ref().map(|s| s.security.packets_sealed);
        assert!(
            sealed.is_some_and(|n| n > 0),
            "{pattern}: members are encrypted"
        );
        // The console still lists the hand-written flow.
        assert!(r.print_table().contains("\nrelay "), "{pattern}");
    }
}
