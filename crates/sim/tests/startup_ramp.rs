//! Packet-pair start-up against slow start (issue 21, item 3): the time a
//! bulk flow takes to reach 90 % of a 50 Mbit/s bottleneck with a 40 ms
//! RTT (20 ms each way, a one-BDP drop-tail queue), for CUBIC and BBR.
//!
//! Run with `--nocapture` to print the table of `docs/protocol.md`:
//!
//! ```sh
//! cargo test -p peregrine-sim --test startup_ramp -- --nocapture
//! ```

use peregrine_sim::{run, Scenario};

const BOTTLENECK_BPS: f64 = 50e6;
/// Samples (10 ms each) averaged: the rate over a 50 ms window.
const WINDOW_SAMPLES: usize = 5;

fn scenario(cc: &str, startup: &str) -> Scenario {
    let text = format!(
        r#"
name = "startup-ramp"
duration = "3s"
seed = 1

[metrics]
interval = "10ms"

[[links]]
name = "access-s0"
a = "s0"
b = "L"
rate = "1Gbps"
delay = "0.1ms"
queue = {{ packets = 1000 }}

[[links]]
name = "bottleneck"
a = "L"
b = "R"
rate = "50Mbps"
delay = "20ms"
queue = {{ bdp = 1.0 }}

[[links]]
name = "access-r0"
a = "R"
b = "r0"
rate = "1Gbps"
delay = "0.1ms"
queue = {{ packets = 1000 }}

[[flows]]
name = "bulk"
src = "s0"
dst = "r0"
cc = "{cc}"
startup = "{startup}"

[[flows.streams]]
app = "bulk"
"#
    );
    Scenario::from_toml_str(&text, "startup-ramp", &[]).expect("valid scenario")
}

/// Seconds from the flow's start until its received rate, averaged over
/// [`WINDOW_SAMPLES`] samples, first reaches 90 % of the bottleneck (the
/// end of that window); `None` if it never does.
fn time_to_90(cc: &str, startup: &str) -> Option<f64> {
    let r = run(&scenario(cc, startup)).expect("runs");
    let f = &r.flows[0];
    let interval_s = r.interval_ns as f64 / 1e9;
    let rates: Vec<f64> = f
        .metrics
        .samples
        .iter()
        .map(|s| s.delta.rx_bytes as f64 * 8.0 / interval_s)
        .collect();
    rates
        .windows(WINDOW_SAMPLES)
        .position(|w| w.iter().sum::<f64>() / w.len() as f64 >= 0.9 * BOTTLENECK_BPS)
        .map(|i| {
            let end = &f.metrics.samples[i + WINDOW_SAMPLES - 1];
            (end.time_ns - f.start_ns) as f64 / 1e9
        })
}

#[test]
fn packet_pair_reaches_90_percent_no_later_than_slow_start() {
    println!("| controller | slow start | packet pair |");
    println!("|---|---|---|");
    for cc in ["cubic", "bbr", "newreno"] {
        let ss = time_to_90(cc, "slow_start");
        let pp = time_to_90(cc, "packet_pair");
        let show = |t: Option<f64>| t.map_or("never (3 s)".to_string(), |t| format!("{t:.2} s"));
        println!("| {cc} | {} | {} |", show(ss), show(pp));
        let ss = ss.unwrap_or(f64::INFINITY);
        let pp = pp.expect("packet pair reaches 90 % within 3 s");
        // One sample of slack: both are measured on a 10 ms grid.
        assert!(
            pp <= ss + 0.01,
            "{cc}: packet pair {pp:.2} s is slower than slow start {ss:.2} s"
        );
    }
}
