//! The field agrees with the laboratory (issue 35).
//!
//! * The live packet pair measures the emulated link: within ±25 % of
//!   the rate at 5, 20, 100 and 500 Mbit/s, symmetric and 4:1
//!   asymmetric. 500 Mbit/s (23 µs between probes) needs the probes to
//!   leave in one GSO send and the emulator to write on time (it polls
//!   the last stretch before each deadline: `peregrine_emu::forward`).
//! * CUBIC through `peregrine emu` on a lossy link reaches at least
//!   0.8 × what `peregrine sim` predicts for the very same link (the
//!   emulator runs the scenario's link with `--link FILE:links.0`, so
//!   rate, delay, queue and loss draws are the simulator's).
//!
//! The link: 20 Mbit/s up, 5 Mbit/s down, 20 ms each way, a 1-BDP
//! drop-tail queue, 1 % random loss both ways; one bulk flow for 8 s.
//! perf runs `--pmtud off`, like the simulator (the scenario has no
//! `mtu`): with path MTU discovery on, loss costs the runtime far more
//! (docs/validation.md).
//! Runs as root in a network namespace this test creates (`unshare -n`);
//! where namespaces, TUN or iproute2 are missing it prints
//! `skipped: <why>` and returns.

// A real-network test: the wall clock and processes.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod emu_env;
use emu_env::environment_problem;
use std::process::Command;

const PEREGRINE: &str = env!("CARGO_BIN_EXE_peregrine");

/// The two tests measure live timing (the packet pair at 500 Mbit/s reads
/// 23-µs gaps): run together on a 2-core machine, the CUBIC run's
/// emulator and perf processes delayed the probe's packets alike and two
/// of three pairs agreed on a wrong rate (135 of 500 Mbit/s). One at a
/// time, as a measurement should be.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds the measurement lock (a failed test does not block the other).
fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

const SCENARIO: &str = r#"
name = "emu-lossy"
duration = "8s"
seed = 1
[[links]]
name = "lossy"
a = "client"
b = "server"
delay = "20ms"
queue = { bdp = 1.0 }
loss = { model = "bernoulli", p = 0.01 }
up = { rate = "20Mbps" }
down = { rate = "5Mbps" }
[[flows]]
src = "client"
dst = "server"
cc = "cubic"
payload_bytes = 1415
[[flows.streams]]
app = "bulk"
"#;

/// `perf client` through the scenario's link, once: goodput, bit/s.
fn emulated_goodput_bps(scenario: &std::path::Path) -> f64 {
    let script = format!(
        r#"
        ip link set lo up
        "$PEREGRINE" perf server --listen 0.0.0.0:4433 --insecure --once 2>/dev/null &
        sleep 0.3
        "$PEREGRINE" emu --link {scenario}:links.0 -- sh -c \
          '"$PEREGRINE" perf client --connect $PEREGRINE_EMU_HOST:4433 --insecure --cc cubic --duration 8s --pmtud off --json'
        wait
        "#,
        scenario = scenario.display()
    );
    let out = Command::new("unshare")
        .args(["-n", "sh", "-c", &script])
        .env("PEREGRINE", PEREGRINE)
        .env_remove("PEREGRINE_EMU_LEVEL")
        .output()
        .expect("unshare runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "emulated run failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("perf --json");
    v["throughput_bps"].as_f64().expect("throughput_bps")
}

/// `perf client --startup packet-pair` for 1 s through a link of `up` /
/// `down` (Mbit/s), 20 ms each way: perf's `probe` object.
fn live_probe(up_mbps: f64, down_mbps: f64) -> serde_json::Value {
    let script = format!(
        r#"
        ip link set lo up
        "$PEREGRINE" perf server --listen 0.0.0.0:4433 --insecure --once 2>/dev/null &
        sleep 0.3
        "$PEREGRINE" emu --uplink {up_mbps}Mbps --downlink {down_mbps}Mbps --delay 20ms -- sh -c \
          '"$PEREGRINE" perf client --connect $PEREGRINE_EMU_HOST:4433 --insecure --startup packet-pair --duration 1s --json'
        wait
        "#
    );
    let out = Command::new("unshare")
        .args(["-n", "sh", "-c", &script])
        .env("PEREGRINE", PEREGRINE)
        .env_remove("PEREGRINE_EMU_LEVEL")
        .output()
        .expect("unshare runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "perf failed: {stdout}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("perf --json");
    v["probe"].clone()
}

#[test]
fn the_live_packet_pair_measures_the_link_or_steps_aside() {
    if let Some(why) = environment_problem() {
        println!("skipped: {why}");
        return;
    }
    let _alone = exclusive();
    let mut failures = Vec::new();
    for rate in [5.0, 20.0, 100.0, 500.0] {
        for down in [rate, rate / 4.0] {
            // A fallback (the probe stepping aside: an answer late for the
            // timer, pairs disturbed by a busy machine) or a wrong estimate
            // earns one more try, printed; the row fails when the second
            // try is wrong too. At 500 Mbit/s a pair is 19-23 µs: one
            // scheduling hiccup of the emulator can make two of three pairs
            // agree on a wrong gap (CI, 2026-12-07: 32 and 40 µs, -47 %,
            // while the release build measured 499-522 Mbit/s six times in a
            // row); a systematic fault (probes not sent back to back, the
            // emulator writing late) is wrong on both tries.
            for attempt in 1..=2 {
                let p = live_probe(rate, down);
                let decision = p["decision"].as_str().unwrap_or("none").to_string();
                let bps = p["bandwidth_bps"].as_f64().unwrap_or(0.0);
                let error = bps / (rate * 1e6) - 1.0;
                println!(
                    "{rate}/{down} Mbit/s (try {attempt}): {decision} ({}), {:.1} Mbit/s, \
                     error {:+.0} %, gaps {} µs",
                    p["reason"],
                    bps / 1e6,
                    error * 100.0,
                    p["pairs"]["gaps_us"]
                );
                if decision == "used" && error.abs() <= 0.25 {
                    break;
                }
                if attempt == 2 {
                    failures.push(format!("{rate}/{down} Mbit/s: {p}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "probe off by more than 25 %: {failures:#?}"
    );
}

#[test]
fn cubic_through_the_emulator_reaches_the_simulators_goodput() {
    if let Some(why) = environment_problem() {
        println!("skipped: {why}");
        return;
    }
    let _alone = exclusive();
    let dir = std::env::temp_dir().join(format!("pg-emu-lossy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let scenario = dir.join("lossy.toml");
    std::fs::write(&scenario, SCENARIO).expect("write scenario");
    let sim = Command::new(PEREGRINE)
        .arg("sim")
        .arg(&scenario)
        .arg("--out")
        .arg(dir.join("sim"))
        .output()
        .expect("sim runs");
    assert!(
        sim.status.success(),
        "{}",
        String::from_utf8_lossy(&sim.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("sim/summary.json")).expect("summary.json"),
    )
    .expect("summary JSON");
    let sim_bps = summary["flows"][0]["goodput_bps"]
        .as_f64()
        .expect("goodput_bps");
    assert!(sim_bps > 1e6, "the simulator's figure {sim_bps} bit/s");
    // The median of three runs: one run on a shared machine can lose a
    // second to a descheduled emulator.
    let mut runs: Vec<f64> = (0..3).map(|_| emulated_goodput_bps(&scenario)).collect();
    runs.sort_by(f64::total_cmp);
    let emu_bps = runs[1];
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "sim {:.2} Mbit/s, emu runs {:?} Mbit/s, ratio {:.2}",
        sim_bps / 1e6,
        runs.iter()
            .map(|r| (r / 1e4).round() / 100.0)
            .collect::<Vec<_>>(),
        emu_bps / sim_bps
    );
    assert!(
        emu_bps >= 0.8 * sim_bps,
        "emulated CUBIC {:.2} Mbit/s (median of {runs:?}) < 0.8 × the simulator's {:.2} Mbit/s",
        emu_bps / 1e6,
        sim_bps / 1e6
    );
}
