//! The reference dumbbell, short: the real protocol fills a 5 Mbit/s bottleneck.

use peregrine_sim::{run, Scenario};
use std::path::Path;

fn dumbbell(overrides: &[&str]) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/dumbbell.toml");
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Scenario::from_file(&path, &o).expect("the reference scenario is valid")
}

#[test]
fn dumbbell_cubic_fills_the_bottleneck() {
    let s = dumbbell(&["duration=10s"]);
    let r = run(&s).expect("runs");
    println!("{}", r.print_table());
    let f = &r.flows[0];
    let thr = f.throughput_bps(r.duration_ns);
    // Bottleneck 5 Mbit/s; after slow start the flow should use most of it.
    assert!(thr > 3.5e6 && thr <= 5.0e6 * 1.001, "throughput {thr}");
    assert!(f.metrics.c.goodput_bytes > 0);
    assert_eq!(f.metrics.c.channel_drops, 0);
}

/// Issue 39: a flow's `ack_policy` reaches the receiver. On the lossless
/// dumbbell TCP's delayed ACK puts one ACK per two DATA packets on the
/// reverse bottleneck (plus a few control packets); SLTP's stretch ACKs
/// a fraction of that once the window is large. Bad values name the field.
#[test]
fn the_ack_policy_of_a_flow_sets_the_reverse_traffic() {
    let reverse_per_data = |policy: &str| {
        let s = dumbbell(&["duration=10s", &format!("flows.0.ack_policy=\"{policy}\"")]);
        let r = run(&s).expect("runs");
        let up = r
            .links
            .iter()
            .find(|l| l.name == "bottleneck/up")
            .expect("up");
        let down = r
            .links
            .iter()
            .find(|l| l.name == "bottleneck/down")
            .expect("down");
        let ratio = down.stats.delivered_packets as f64 / up.stats.delivered_packets as f64;
        eprintln!("{policy}: {ratio:.3} reverse packets per forward packet");
        ratio
    };
    let tcp = reverse_per_data("tcp");
    let sltp = reverse_per_data("sltp");
    assert!((0.45..0.6).contains(&tcp), "tcp {tcp:.3}");
    assert!(sltp < tcp / 3.0, "sltp {sltp:.3} vs tcp {tcp:.3}");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/dumbbell.toml");
    for (set, field) in [
        ("flows.0.ack_policy=\"quic\"", "flows.0.ack_policy"),
        ("flows.0.delayed_ack=\"0ms\"", "flows.0.delayed_ack"),
        ("flows.0.delayed_ack=\"40ms\"", "flows.0.delayed_ack"),
    ] {
        let e = Scenario::from_file(&path, &[set.to_string()]).unwrap_err();
        assert_eq!(e.field, field, "{set}: {e}");
    }
    let ok = Scenario::from_file(
        &path,
        &[
            "flows.0.ack_policy=\"tcp\"".to_string(),
            "flows.0.delayed_ack=\"20ms\"".to_string(),
        ],
    )
    .expect("valid");
    assert_eq!(
        ok.model.flows[0].ack_policy,
        peregrine_proto::AckPolicy::Tcp {
            delayed_ack: std::time::Duration::from_millis(20)
        }
    );
}
