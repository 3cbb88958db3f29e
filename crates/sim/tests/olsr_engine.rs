//! OLSR driven by the engine (issue 22): a 3-node line learns its routes
//! from HELLOs and TCs sent over the DCF and relays a flow; a next hop
//! that flies away costs MAC retries (no oracle check) until OLSR's hold
//! time removes the route; the `routing` schema (string and table forms,
//! old files unchanged, fields of the other protocol named, OLSR refused
//! without the DCF).

use peregrine_sim::{run, Scenario};
use serde_json::Value;

/// Three nodes on the x axis (n0 at 0, n1 at 150 m, n2 at `x2` moving at
/// `v2` m/s), a bulk flow n0 → n2, `routing` and `mac` as given.
fn line(x2: f64, v2: f64, duration: &str, routing: &str, mac: &str) -> String {
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
{routing}
{mac}
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

const OLSR: &str = "routing = \"olsr\"";
const DCF: &str = "mac = { model = \"dcf\" }";

fn summary(text: &str) -> Value {
    let s = Scenario::from_toml_str(text, "test", &[]).expect("valid scenario");
    run(&s).expect("runs").summary_json()
}

fn u(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{ptr} missing in {v}"))
}

fn f(v: &Value, ptr: &str) -> f64 {
    v.pointer(ptr)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{ptr} missing in {v}"))
}

#[test]
fn olsr_learns_the_line_and_relays_the_flow() {
    let text = line(300.0, 0.0, "20s", OLSR, DCF);
    let v = summary(&text);
    assert_eq!(v["wireless"]["routing"], "olsr");
    // n0 hears n1 only; its route to n2 needs n1's HELLO listing n2 as a
    // symmetric neighbour: two HELLO rounds (≈ 2–4 s), then the flow runs.
    let rx = u(&v, "/flows/0/rx_packets");
    assert!(rx > 1000, "the flow got through the relay: {rx} packets");
    assert!(u(&v, "/links/1/delivered_packets") >= rx);
    let avail = f(&v, "/wireless/flows/0/reachable_fraction");
    assert!(
        (0.6..0.95).contains(&avail),
        "no route for the first seconds, then always: {avail}"
    );
    // On a static line a route, once there, is valid and never changes.
    let valid = f(&v, "/wireless/flows/0/route_valid_fraction");
    assert!((valid - avail).abs() < 1e-9, "{valid} vs {avail}");
    assert_eq!(u(&v, "/wireless/flows/0/route_changes"), 1, "none → n1");
    assert_eq!(u(&v, "/wireless/route_recomputations"), 201, "every 100 ms");
    // Control traffic: ≈ 10 HELLOs per node in 20 s, n1 sends TCs (n0 and
    // n2 select it as MPR). Every OLSR packet is a broadcast.
    let packets = u(&v, "/wireless/olsr/control_packets");
    assert!((30..=60).contains(&packets), "{packets}");
    // (The last ones may still be queued or on air when the run ends.)
    let sent = u(&v, "/wireless/dcf/broadcasts");
    assert!(
        sent <= packets && sent + 3 >= packets,
        "{sent} of {packets}"
    );
    assert!(u(&v, "/wireless/olsr/received") >= packets);
    let bytes = u(&v, "/wireless/olsr/control_bytes");
    assert!(bytes > packets * 40, "{bytes} bytes");
    let share = f(&v, "/wireless/olsr/control_airtime_share");
    assert!(share > 0.0 && share < 0.05, "{share}");
    // HELLOs share the saturated drop-tail queue with the data (as in
    // ns-3): a few find it full; they are OLSR's drops, not the flow's.
    assert!(u(&v, "/wireless/olsr/queue_drops") <= 3);
    assert_eq!(u(&v, "/wireless/olsr/hop_limit_drops"), 0);
    assert_eq!(v, summary(&text), "same seed, same summary");
}

#[test]
fn a_broken_next_hop_costs_mac_retries_until_olsr_drops_the_route() {
    // n2 starts beside n1 and flies away at 30 m/s: out of the ≈180 m
    // range of n1 after ≈3.5 s. The oracle would drop the packets at no
    // airtime cost; under OLSR n1 keeps sending to n2 until the link's
    // hold time (6 s) runs out, every frame spending its retries.
    let v = summary(&line(200.0, 30.0, "20s", OLSR, DCF));
    assert_eq!(u(&v, "/wireless/broken_route_drops"), 0, "no oracle check");
    assert!(u(&v, "/flows/0/rx_packets") > 0);
    let retries = u(&v, "/wireless/dcf/retries");
    let mac_drops = u(&v, "/wireless/mac_drops");
    assert!(mac_drops > 0, "frames to the vanished n2 dropped: {v}");
    // Each MAC drop spent the whole retry limit (7 attempts).
    assert!(
        retries >= 6 * mac_drops,
        "{retries} retries, {mac_drops} drops"
    );
    // Once OLSR forgets n2, packets have no route.
    assert!(u(&v, "/wireless/no_route_drops") > 0);
    assert!(u(&v, "/wireless/flows/0/route_changes") >= 2);
}

#[test]
fn the_routing_schema_keeps_old_files_and_names_bad_fields() {
    // The pre-OLSR table, the protocol's name and the explicit table are
    // the same oracle world, byte for byte.
    let old = summary(&line(
        300.0,
        0.0,
        "2s",
        "routing = { recompute_interval_s = 1.0 }",
        "",
    ));
    for routing in [
        "routing = \"oracle\"",
        "routing = { protocol = \"oracle\", recompute_interval_s = 1.0 }",
        "",
    ] {
        assert_eq!(
            old,
            summary(&line(300.0, 0.0, "2s", routing, "")),
            "{routing}"
        );
    }
    assert!(old.pointer("/wireless/routing").is_none());
    assert!(old.pointer("/wireless/olsr").is_none());
    // The table form of OLSR with its timing.
    let t = line(
        300.0,
        0.0,
        "2s",
        "routing = { protocol = \"olsr\", hello_interval_s = 1.0, tc_interval_s = 2.5 }",
        DCF,
    );
    assert_eq!(summary(&t)["wireless"]["routing"], "olsr");
    let bad = [
        (OLSR, "", "wireless.routing"),
        (
            "routing = { protocol = \"olsr\", recompute_interval_s = 1.0 }",
            DCF,
            "wireless.routing.recompute_interval_s",
        ),
        (
            "routing = { protocol = \"oracle\", hello_interval_s = 1.0 }",
            "",
            "wireless.routing.hello_interval_s",
        ),
        (
            "routing = { protocol = \"olsr\", tc_interval_s = 0.0 }",
            DCF,
            "wireless.routing.tc_interval_s",
        ),
    ];
    for (routing, mac, field) in bad {
        let e = Scenario::from_toml_str(&line(300.0, 0.0, "1s", routing, mac), "t", &[])
            .expect_err("rejected");
        assert_eq!(e.field, field, "{routing}: {e}");
    }
    // An unknown protocol or key is named by the parser.
    for routing in ["routing = \"aodv\"", "routing = { protocl = \"olsr\" }"] {
        let e = Scenario::from_toml_str(&line(300.0, 0.0, "1s", routing, DCF), "t", &[])
            .expect_err("rejected");
        let msg = e.to_string();
        assert!(msg.contains("aodv") || msg.contains("protocl"), "{msg}");
    }
}
