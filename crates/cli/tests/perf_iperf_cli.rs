//! `peregrine perf` with iperf3's vocabulary (issue 27 item 1): `perf -s`
//! on `[::]` takes IPv6 and IPv4 clients, `-c localhost` resolves, `-R`,
//! `--bidir`, `-P`, `-i`, `-b`, `--logfile`, and the iperf3-shaped JSON
//! (`start`, `intervals[]`, `end.sum_sent`/`end.sum_received`); nonsense
//! arguments are errors naming the allowed range, checked word for word.

// Threads and sockets of a test harness: the clippy bans are for the
// sans-IO crates.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod support;

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Output, Stdio};
use support::{peregrine, tempdir};

/// A port free on `[::]` (so on both families) a moment ago.
fn free_port() -> u16 {
    std::net::UdpSocket::bind("[::]:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port()
}

/// A server process, killed when the test ends however it ends (a failed
/// assertion must not leave it running).
struct Server(Child);

impl Server {
    /// Wait for a `--once` server's exit; true if it succeeded.
    fn wait(&mut self) -> std::io::Result<bool> {
        self.0.wait().map(|s| s.success())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `perf -s -p PORT` plus `args`, once it says where it listens.
fn start_server(args: &[&str]) -> (Server, u16) {
    let port = free_port();
    let mut server = peregrine()
        .args(["perf", "-s", "-p", &port.to_string()])
        .args(args)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start the server");
    let mut reader = BufReader::new(server.stderr.take().expect("piped stderr"));
    let mut first = String::new();
    reader.read_line(&mut first).expect("the first line");
    assert_eq!(first.trim(), format!("listening on [::]:{port}"));
    std::thread::spawn(move || for _ in reader.lines() {});
    (Server(server), port)
}

fn json(out: &Output) -> Value {
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

fn bytes(v: &Value) -> u64 {
    v["bytes"]
        .as_u64()
        .unwrap_or_else(|| panic!("no bytes in {v}"))
}

#[test]
fn reverse_against_localhost_has_the_iperf3_json_shape() {
    let (mut server, port) = start_server(&["--once"]);
    let out = peregrine()
        .args(["perf", "-c", "localhost", "-p", &port.to_string()])
        .args(["-t", "2", "-R", "-J"])
        .output()
        .expect("run the client");
    let v = json(&out);
    // start: where it went and what ran.
    assert_eq!(v["start"]["connecting_to"]["host"], "localhost");
    assert_eq!(v["start"]["connecting_to"]["port"], port);
    assert_eq!(v["start"]["test_start"]["reverse"], true);
    assert_eq!(v["start"]["test_start"]["duration_s"], 2.0);
    assert_eq!(v["start"]["connected"].as_array().map(Vec::len), Some(1));
    // intervals: about one a second, the client only receives.
    let intervals = v["intervals"].as_array().expect("intervals[]");
    assert!((2..=3).contains(&intervals.len()), "{intervals:?}");
    for iv in intervals {
        assert!(iv["sender"].is_null(), "-R: the client sends nothing: {iv}");
        let r = &iv["receiver"];
        for key in ["bytes", "seconds", "bits_per_second"] {
            assert!(r[key].is_number(), "receiver.{key} in {iv}");
        }
    }
    let received_in_intervals: u64 = intervals.iter().map(|iv| bytes(&iv["receiver"])).sum();
    // end: the server's sends, the client's receipts.
    let (sent, received) = (
        bytes(&v["end"]["sum_sent"]),
        bytes(&v["end"]["sum_received"]),
    );
    assert!(received > 0, "{v}");
    assert!(sent >= received, "sent {sent} < received {received}");
    assert_eq!(received, received_in_intervals);
    assert_eq!(bytes(&v), received, "the headline is what arrived");
    // Today's keys are still there.
    for key in [
        "mode",
        "throughput_bps",
        "duration_s",
        "streams",
        "security",
        "cc",
    ] {
        assert!(v.get(key).is_some(), "missing key {key} in {v}");
    }
    assert!(server.wait().expect("the server exits"));
}

#[test]
fn bidir_parallel_over_ipv4_and_ipv6_with_bitrate_interval_and_logfile() {
    let (server, port) = start_server(&[]);
    let p = port.to_string();
    let tmp = tempdir("bidir");
    let log = tmp.path().join("perf.json");
    let log_s = log.to_str().expect("utf-8 path");
    // IPv4 to the `[::]` server, two connections, both directions paced.
    let out = peregrine()
        .args([
            "perf",
            "-c",
            &format!("127.0.0.1:{p}"),
            "-P",
            "2",
            "--bidir",
        ])
        .args([
            "-b",
            "8Mbps",
            "-t",
            "1",
            "-i",
            "0.5",
            "-J",
            "--logfile",
            log_s,
        ])
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "--logfile takes the report");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&log).expect("the log"))
        .expect("one JSON object in the log");
    assert_eq!(v["bitrate_bps"], 8_000_000);
    assert_eq!(v["start"]["test_start"]["parallel"], 2);
    assert_eq!(v["start"]["connected"].as_array().map(Vec::len), Some(2));
    let intervals = v["intervals"].as_array().expect("intervals[]");
    assert!((2..=3).contains(&intervals.len()), "{intervals:?}");
    assert!(intervals
        .iter()
        .all(|iv| iv["sender"].is_object() && iv["receiver"].is_object()));
    let end = &v["end"];
    for key in [
        "sum_sent",
        "sum_received",
        "sum_sent_bidir_reverse",
        "sum_received_bidir_reverse",
    ] {
        assert!(bytes(&end[key]) > 0, "end.{key} in {v}");
    }
    let conns: Vec<_> = v["streams"]
        .as_array()
        .expect("streams")
        .iter()
        .map(|s| s["connection"].as_u64())
        .collect();
    assert_eq!(conns, [Some(0), Some(1)]);
    // -b paces each connection (as iperf3 paces each -P stream): 2 × 8
    // Mbit/s each way (±50 % for a loaded machine).
    for key in ["sum_received", "sum_received_bidir_reverse"] {
        let rate = end[key]["bits_per_second"].as_f64().expect("rate");
        assert!((8e6..24e6).contains(&rate), "end.{key}: {rate} bit/s");
    }
    // IPv6 to the same server.
    let out = peregrine()
        .args([
            "perf", "-c", "::1", "-p", &p, "-t", "0.5", "-b", "4Mbps", "-J",
        ])
        .output()
        .expect("run the client");
    let v = json(&out);
    assert!(bytes(&v["end"]["sum_received"]) > 0, "{v}");
    assert!(v["intervals"][0]["receiver"].is_null(), "forward only: {v}");
    drop(server);
}

#[test]
fn long_connect_takes_a_name_and_interval_zero_turns_intervals_off() {
    let (mut server, port) = start_server(&["--once", "--insecure"]);
    let out = peregrine()
        .args(["perf", "client", "--connect", &format!("localhost:{port}")])
        .args(["--insecure", "--duration", "0.3", "-i", "0", "--json"])
        .output()
        .expect("run the client");
    let v = json(&out);
    assert_eq!(v["intervals"], serde_json::json!([]), "{v}");
    assert!(bytes(&v["end"]["sum_received"]) > 0, "{v}");
    assert!(server.wait().expect("the server exits"));
}

#[test]
fn the_table_ends_with_the_sender_and_receiver_lines() {
    let (mut server, port) = start_server(&["--once", "--insecure"]);
    let out = peregrine()
        .args([
            "perf",
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--insecure",
        ])
        .args(["-t", "0.3", "--bidir", "-b", "4Mbps"])
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    for start in [
        "sender: ",
        "receiver: ",
        "sender (server → client): ",
        "receiver (server → client): ",
    ] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(start) && l.ends_with(" Mbit/s")),
            "no `{start}…` line in\n{table}"
        );
    }
    assert!(server.wait().expect("the server exits"));
}

/// A client that must fail before connecting: stderr is `error: {msg}`.
fn fails_with(args: &[&str], msg: &str) {
    let out = peregrine().arg("perf").args(args).output().expect("run");
    assert!(!out.status.success(), "{args:?} must fail");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end(), format!("error: {msg}"), "{args:?}");
}

#[test]
fn nonsense_arguments_name_the_allowed_range() {
    let c = ["-c", "localhost"];
    let with = |extra: &[&'static str]| [&c[..], extra].concat();
    fails_with(
        &with(&["--streams", "0"]),
        "--streams: 0 is out of range (allowed 1–128)",
    );
    fails_with(
        &with(&["--streams", "65535"]),
        "--streams: 65535 is out of range (allowed 1–128)",
    );
    fails_with(
        &with(&["-P", "0"]),
        "-P/--parallel: 0 is out of range (allowed 1–32)",
    );
    fails_with(
        &with(&["-P", "33"]),
        "-P/--parallel: 33 is out of range (allowed 1–32)",
    );
    fails_with(
        &with(&["-t", "0"]),
        "-t/--duration: 0 s is out of range (allowed more than 0 s, up to 86400 s)",
    );
    fails_with(
        &with(&["--duration", "0s"]),
        "-t/--duration: 0 s is out of range (allowed more than 0 s, up to 86400 s)",
    );
    fails_with(
        &["-c", "h:7000", "-p", "8"],
        "-c/--connect: `h:7000` gives port 7000 and -p/--port gives 8; give one",
    );
    fails_with(
        &["-c", "h:x"],
        "-c/--connect: `x` in `h:x` is not a port (1–65535)",
    );
    fails_with(
        &[],
        "perf: give -s (server), -c HOST (client), or `perf server` / `perf client`",
    );
    // clap's own checks name the flags.
    let out = peregrine()
        .args(["perf", "-c", "localhost", "-R", "--bidir"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: the argument '--reverse' cannot be used with '--bidir'"),
        "{stderr}"
    );
    let out = peregrine()
        .args(["perf", "-c", "localhost", "-p", "0"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: invalid value '0' for '--port <PORT>': 0 is not in 1..=65535"),
        "{stderr}"
    );
    // With -J the same error is JSON on stdout too.
    let out = peregrine()
        .args(["perf", "-c", "localhost", "-P", "0", "-J"])
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON error");
    assert_eq!(
        v["error"]["message"],
        "-P/--parallel: 0 is out of range (allowed 1–32)"
    );
}

#[test]
fn a_name_that_does_not_resolve_is_named() {
    let out = peregrine()
        .args(["perf", "-c", "no-such-host.invalid", "-t", "1"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: -c/--connect: cannot resolve `no-such-host.invalid`: "),
        "{stderr}"
    );
}
