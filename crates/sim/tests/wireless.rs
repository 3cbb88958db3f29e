//! The wireless world in the engine (issue 10): a relay in a 3-node line,
//! a route that breaks (drops counted as broken-route, then no-route), the
//! example swarm's determinism, and scenario errors naming the field.

use peregrine_sim::{run, Scenario};
use serde_json::Value;

/// Three nodes on the x axis; `n2` starts at `x2` and moves at `v2` m/s.
fn line(x2: f64, v2: f64, duration: &str) -> String {
    format!(
        r#"
name = "line"
duration = "{duration}"
seed = 7
[metrics]
per_message = false
[wireless]
box_m = [2000.0, 10.0, 10.0]
channel = {{ shadowing_sigma_db = 0.0 }}
mobility = {{ model = "static" }}
[[nodes]]
name = "n0"
mobility = {{ model = "static", position_m = [0.0, 5.0, 5.0] }}
[[nodes]]
name = "n1"
mobility = {{ model = "static", position_m = [150.0, 5.0, 5.0] }}
[[nodes]]
name = "n2"
mobility = {{ model = "constant_velocity", initial_position_m = [{x2}, 5.0, 5.0], velocity_mps = [{v2}, 0.0, 0.0] }}
[[flows]]
src = "n0"
dst = "n2"
cc = "newreno"
payload_bytes = 536
[[flows.streams]]
app = "bulk"
"#
    )
}

fn summary(text: &str) -> Value {
    let s = Scenario::from_toml_str(text, "test", &[]).expect("valid scenario");
    run(&s).expect("runs").summary_json()
}

fn u(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{ptr} missing in {v}"))
}

#[test]
fn the_middle_node_relays_a_three_node_line() {
    // n0 and n2 are 300 m apart (beyond the ≈180 m range), n1 in between.
    let v = summary(&line(300.0, 0.0, "5s"));
    let rx = u(&v, "/flows/0/rx_packets");
    assert!(rx > 500, "the flow got through the relay: {rx} packets");
    // Interfaces are `wifi/<node>` in node order; n1's forwarded the data.
    assert_eq!(v["links"][1]["name"], "wifi/n1");
    let relayed = u(&v, "/links/1/delivered_packets");
    assert!(relayed >= rx, "n1 relayed {relayed} < {rx} received");
    assert!(u(&v, "/links/0/delivered_packets") >= rx);
    // Static line, no shadowing: the route never changes or breaks.
    assert_eq!(u(&v, "/wireless/flows/0/route_changes"), 0);
    assert_eq!(u(&v, "/wireless/broken_route_drops"), 0);
    assert_eq!(u(&v, "/wireless/no_route_drops"), 0);
    assert_eq!(u(&v, "/wireless/route_recomputations"), 6);
}

#[test]
fn a_broken_route_drops_packets_and_counts_them() {
    // n2 flies away from n1 at 50 m/s: out of range (≈180 m) after
    // ≈0.6 s, while the table computed at t = 0 still routes through n1.
    let v = summary(&line(300.0, 50.0, "3s"));
    let broken = u(&v, "/wireless/broken_route_drops");
    assert!(broken > 0, "stale route drops: {v}");
    // After the recomputation at 1 s n2 is unreachable: no-route drops.
    assert!(u(&v, "/wireless/no_route_drops") > 0);
    assert_eq!(u(&v, "/wireless/flows/0/route_changes"), 1);
    let reach = v
        .pointer("/wireless/flows/0/reachable_fraction")
        .and_then(Value::as_f64)
        .expect("fraction");
    assert!(
        (reach - 0.25).abs() < 1e-9,
        "reachable after 1 of 4: {reach}"
    );
    // The flow saw them as drops.
    assert!(u(&v, "/flows/0/drops/channel") >= broken);
}

#[test]
fn the_swarm_is_deterministic_and_routes_change() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/fanet.toml");
    let text = std::fs::read_to_string(path).expect("scenarios/fanet.toml");
    let set = ["duration=10s".to_string()];
    let a = Scenario::from_toml_str(&text, "fanet", &set).expect("valid");
    let ja = serde_json::to_string(&run(&a).expect("runs").summary_json()).expect("json");
    let jb = serde_json::to_string(&run(&a).expect("runs").summary_json()).expect("json");
    assert_eq!(ja, jb, "same seed, same bytes");
    let v: Value = serde_json::from_str(&ja).expect("json");
    assert!(
        u(&v, "/wireless/route_changes_total") > 0,
        "the swarm moves"
    );
    assert!(u(&v, "/flows/0/rx_packets") > 0);
    let other = ["duration=10s".to_string(), "seed=2".to_string()];
    let c = Scenario::from_toml_str(&text, "fanet", &other).expect("valid");
    let jc = serde_json::to_string(&run(&c).expect("runs").summary_json()).expect("json");
    assert_ne!(ja, jc, "another seed, another swarm");
}

#[test]
fn wireless_errors_name_the_field() {
    let base = line(300.0, 0.0, "1s");
    let cases = [
        ("wireless.queue_packets=0", "wireless.queue_packets"),
        (
            "wireless.channel.data_rate_mbps=54.0",
            "wireless.channel.data_rate_mbps",
        ),
        (
            "wireless.routing.recompute_interval_s=0.0",
            "wireless.routing.recompute_interval_s",
        ),
        ("wireless.box_m=[1.0, -2.0, 3.0]", "wireless.box_m.1"),
    ];
    for (set, field) in cases {
        let e =
            Scenario::from_toml_str(&base, "t", &[set.to_string()]).expect_err("invalid scenario");
        assert_eq!(e.field, field, "{set}: {e}");
    }
    // Mobility outside a wireless world is refused.
    let wired =
        "duration = \"1s\"\nseed = 1\n[[nodes]]\nname = \"a\"\nmobility = { model = \"static\" }\n";
    let e = Scenario::from_toml_str(wired, "t", &[]).expect_err("invalid");
    assert_eq!(e.field, "nodes.0.mobility");
}

/// `line` with the interference-based DCF selected.
fn with_dcf(text: &str, extra: &str) -> String {
    text.replacen(
        "[wireless]\n",
        &format!("[wireless]\nmac = {{ model = \"dcf\"{extra} }}\n"),
        1,
    )
}

#[test]
fn the_dcf_relays_the_three_node_line_deterministically() {
    let text = with_dcf(&line(300.0, 0.0, "5s"), "");
    let v = summary(&text);
    let rx = u(&v, "/flows/0/rx_packets");
    assert!(rx > 300, "the flow got through the relay: {rx} packets");
    assert!(u(&v, "/links/1/delivered_packets") >= rx);
    assert!(u(&v, "/wireless/mac_attempts") >= u(&v, "/wireless/frames"));
    // The DCF's own counters: every received unicast frame was ACKed.
    assert!(u(&v, "/wireless/dcf/acks") >= rx);
    assert_eq!(
        u(&v, "/wireless/dcf/collisions"),
        u(&v, "/wireless/mac_collisions")
    );
    assert!(u(&v, "/wireless/dcf/retries") <= u(&v, "/wireless/mac_attempts"));
    assert_eq!(v, summary(&text), "same seed, same summary");
    // The statistical MAC's summary is another one, without `dcf`.
    let stat = summary(&line(300.0, 0.0, "5s"));
    assert_ne!(v, stat);
    assert!(stat.pointer("/wireless/dcf").is_none());
}

#[test]
fn a_bad_dcf_field_is_named() {
    let text = with_dcf(&line(300.0, 0.0, "1s"), ", capture_threshold_db = -3.0");
    let e = Scenario::from_toml_str(&text, "test", &[]).expect_err("rejected");
    assert!(
        e.to_string().contains("wireless.mac.capture_threshold_db"),
        "{e}"
    );
    let text = with_dcf(&line(300.0, 0.0, "1s"), ", capture_db = 3.0");
    let e = Scenario::from_toml_str(&text, "test", &[]).expect_err("unknown field");
    assert!(e.to_string().contains("capture_db"), "{e}");
}
