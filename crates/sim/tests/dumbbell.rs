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
