//! A link with `mtu`: larger packets are dropped and counted, and the
//! flows' path MTU discovery settles below it, so a bulk flow whose
//! largest datagram does not fit still delivers at full rate.

use peregrine_sim::{run, Scenario};

fn scenario(mtu: Option<u32>) -> Scenario {
    let mtu = mtu.map_or(String::new(), |m| format!("mtu = {m}"));
    let text = format!(
        r#"
duration = "20s"
seed = 3
[[links]]
name = "edge"
a = "client"
b = "server"
rate = "10Mbps"
delay = "10ms"
{mtu}
[[flows]]
src = "client"
dst = "server"
cc = "cubic"
payload_bytes = 4000
[[flows.streams]]
app = "bulk"
"#
    );
    Scenario::from_toml_str(&text, "test.toml", &[]).unwrap_or_else(|e| panic!("valid: {e}"))
}

#[test]
fn discovery_settles_below_the_link_mtu() {
    let r = run(&scenario(Some(1500))).expect("runs");
    let up = r
        .links
        .iter()
        .find(|l| l.name == "edge/up")
        .expect("edge/up");
    // The probes above 1,500 bytes of wire size (3 per failed size).
    assert!(up.stats.mtu_drops >= 3, "{:?}", up.stats);
    let f = &r.flows[0];
    let pmtu = f.stats.as_ref().expect("stats").pmtu;
    let ip_overhead = 28;
    assert!(
        (1500 - ip_overhead - 16..=1500 - ip_overhead).contains(&u32::from(pmtu.current_bytes)),
        "{pmtu:?}"
    );
    // Only probes were dropped for their size, never DATA.
    assert!(up.stats.mtu_drops <= pmtu.counters.probes_lost, "{pmtu:?}");
    let bps = f.throughput_bps(r.duration_ns);
    assert!(bps > 7e6, "{bps}");
}

#[test]
fn without_mtu_nothing_is_probed() {
    let r = run(&scenario(None)).expect("runs");
    let f = &r.flows[0];
    let s = f.stats.as_ref().expect("stats");
    assert_eq!(s.pmtu.counters.probes_sent, 0);
    assert_eq!(u32::from(s.pmtu.current_bytes), 4000 + 37);
    assert!(r.links.iter().all(|l| l.stats.mtu_drops == 0));
}

#[test]
fn an_mtu_too_small_for_a_datagram_is_an_error_naming_the_field() {
    let text = r#"
duration = "1s"
seed = 1
[[links]]
a = "a"
b = "b"
rate = "1Mbps"
mtu = 50
[[flows]]
src = "a"
dst = "b"
[[flows.streams]]
app = "bulk"
"#;
    let e = Scenario::from_toml_str(text, "t.toml", &[]).expect_err("too small");
    assert!(e.to_string().contains("links.0.mtu"), "{e}");
}

/// A path whose MTU is half the window (64 KB datagrams, as on loopback):
/// datagrams are sized to at most a quarter of the window, so the ACK
/// clock keeps running. Before, one datagram per round trip left (the
/// window check held the second back, the receiver waited its 25 ms ACK
/// delay for it): 21 Mbit/s on a 10 Gbit/s, 0.1 ms path.
#[test]
fn jumbo_datagrams_do_not_stall_on_a_small_window() {
    let text = r#"
duration = "2s"
seed = 1
[[links]]
a = "a"
b = "b"
rate = "10Gbps"
delay = "0.05ms"
mtu = 65535
queue = { packets = 1000 }
[[flows]]
src = "a"
dst = "b"
payload_bytes = 64000
startup = "packet_pair"
[[flows.streams]]
app = "bulk"
"#;
    let s = Scenario::from_toml_str(text, "t.toml", &[]).expect("valid");
    let r = run(&s).expect("runs");
    let j = r.summary_json();
    let goodput = j["flows"][0]["goodput_bps"].as_f64().expect("goodput");
    assert!(goodput > 1e9, "goodput {goodput} bit/s");
    let st = r.flows[0].stats.as_ref().expect("stats");
    assert!(st.pmtu.current_bytes > 60_000, "{:?}", st.pmtu);
}
