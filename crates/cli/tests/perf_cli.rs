//! `peregrine perf` end to end on 127.0.0.1: a server with `--once`, a
//! one-second bulk client and an echo client with `--json`; the JSON keys
//! are the contract other tools (the reproduction, the benchmarks) read.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

fn start_server() -> (Child, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .args(["perf", "server", "--listen", "127.0.0.1:0", "--once"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start the server");
    let stderr = server.stderr.take().expect("piped stderr");
    let mut first = String::new();
    let mut reader = BufReader::new(stderr);
    reader
        .read_line(&mut first)
        .expect("the server's first line");
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::Builder::new()
        .spawn(move || for _ in reader.lines() {})
        .expect("drain thread");
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    (server, addr)
}

fn client(addr: &str, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .args(["perf", "client", "--connect", addr, "--json"])
        .args(extra)
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn perf_bulk_json_has_the_contract_keys() {
    let (mut server, addr) = start_server();
    let v = client(&addr, &["--duration", "1s", "--streams", "2"]);
    for key in [
        "throughput_bps",
        "bytes",
        "duration_s",
        "retransmitted_packets",
        "streams",
        "probe",
    ] {
        assert!(v.get(key).is_some(), "missing key {key} in {v}");
    }
    assert!(v["bytes"].as_u64().expect("bytes is a number") > 0);
    assert!(v["throughput_bps"].as_f64().expect("a number") > 0.0);
    let d = v["duration_s"].as_f64().expect("a number");
    assert!((0.9..3.0).contains(&d), "duration {d}");
    let streams = v["streams"].as_array().expect("an array");
    assert_eq!(streams.len(), 2, "{v}");
    let sum: u64 = streams
        .iter()
        .map(|s| s["bytes"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(sum, v["bytes"].as_u64().unwrap_or(0));
    let status = server.wait().expect("the server exits after one client");
    assert!(status.success());
}

#[test]
fn perf_echo_json_reports_every_round_trip_and_the_probe() {
    let (mut server, addr) = start_server();
    let v = client(
        &addr,
        &[
            "--echo-size",
            "20000",
            "--echo-count",
            "5",
            "--startup",
            "packet-pair",
        ],
    );
    let echo = &v["echo"];
    assert_eq!(echo["size_bytes"], 20000);
    let times = echo["times_ms"].as_array().expect("times");
    assert_eq!(times.len(), 5);
    assert!(times.iter().all(|t| t.as_f64().is_some_and(|t| t > 0.0)));
    assert!(echo["median_ms"].as_f64().expect("median") > 0.0);
    // The packet pair was judged (issue 35): used, or a fallback with its
    // reason — on loopback usually `implausible_dispersion` (gaps of a
    // few µs) — and the estimate is there whenever a pair completed.
    let p = &v["probe"];
    let decision = p["decision"].as_str().unwrap_or_default();
    let reason = p["reason"].as_str().unwrap_or_default();
    assert!(
        (decision == "used" && reason == "agreeing_pairs")
            || (decision == "fallback"
                && ["too_few_pairs", "implausible_dispersion", "pairs_disagree"].contains(&reason)),
        "{p}"
    );
    assert_eq!(p["pairs"]["sent"], 3, "{p}");
    if p["pairs"]["complete"].as_u64().unwrap_or(0) > 0 {
        assert!(
            p["rtt_ms"].is_number() && p["bandwidth_bps"].is_number(),
            "{p}"
        );
    }
    assert!(server.wait().expect("exit").success());
}

#[test]
fn perf_latency_mode_reports_percentiles_per_stream() {
    let dir = std::env::temp_dir().join(format!("perf-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let trace = dir.join("trace.csv");
    let mut text = String::from("Delays,Data Length\n");
    for i in 0..50 {
        text += &format!("{}us,{}\n", 2000 + i, 20 + i);
    }
    std::fs::write(&trace, text).expect("write trace");
    let (mut server, addr) = start_server();
    let trace_arg = trace.to_string_lossy().to_string();
    let v = client(
        &addr,
        &[
            "--duration",
            "1s",
            "--scheduler",
            "abs",
            "--latency-trace",
            &trace_arg,
        ],
    );
    let lat = v["streams"]
        .as_array()
        .expect("streams")
        .iter()
        .find(|s| !s["latency_ms"].is_null())
        .unwrap_or_else(|| panic!("no latency stream in {v}"))
        .clone();
    let l = &lat["latency_ms"];
    assert!(l["count"].as_u64().expect("count") > 10, "{l}");
    let (p50, p99) = (
        l["p50"].as_f64().unwrap_or(-1.0),
        l["p99"].as_f64().unwrap_or(-1.0),
    );
    assert!(p50 > 0.0 && p99 >= p50, "{l}");
    // The time in `send`, part of each sample: one figure per message.
    let s = &lat["send_ms"];
    assert!(s["count"].as_u64().expect("send count") > 10, "{s}");
    let send_p99 = s["p99"].as_f64().expect("send p99");
    assert!(send_p99 >= s["p50"].as_f64().expect("send p50"), "{s}");
    assert!(server.wait().expect("exit").success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn perf_bitrate_paces_the_bulk_streams_and_a_zero_rate_is_refused() {
    let (mut server, addr) = start_server();
    // 20 Mbit/s over two streams, BBR: the server counts about that
    // (a loaded CI machine may fall short, never run far above it).
    let v = client(
        &addr,
        &[
            "--duration",
            "2s",
            "--streams",
            "2",
            "--cc",
            "bbr",
            "--bitrate",
            "20Mbps",
        ],
    );
    assert_eq!(v["bitrate_bps"].as_u64(), Some(20_000_000), "{v}");
    let bps = v["throughput_bps"].as_f64().expect("a number");
    assert!((8e6..24e6).contains(&bps), "paced at {bps} bit/s");
    assert!(server.wait().expect("the server exits").success());
    let out = Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .args(["perf", "client", "--connect", &addr, "--bitrate", "0Mbps"])
        .output()
        .expect("run the client");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--bitrate"), "{err}");
}
