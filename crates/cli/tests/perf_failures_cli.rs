//! `peregrine perf` when things go wrong (issue 21 items 4 and 5), on
//! 127.0.0.1: each failure is one line on stderr and, with `--json`,
//! `{"error": {"kind", "message"}}` on stdout with a non-zero exit; the
//! messages are checked word for word. Ctrl-C on the client prints the
//! partial summary; a `--once` server whose client was SIGKILLed reports
//! it, prints its counters and exits non-zero.

// Wall-clock timing, threads and sockets of a test harness: the clippy
// bans are for the sans-IO crates.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn peregrine() -> Command {
    Command::new(env!("CARGO_BIN_EXE_peregrine"))
}

/// A `perf server` with `args`; its address, and every stderr line so far.
fn start_server(args: &[&str]) -> (Child, String, Arc<Mutex<Vec<String>>>) {
    let mut server = peregrine()
        .args(["perf", "server", "--listen", "127.0.0.1:0"])
        .args(args)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start the server");
    let mut reader = BufReader::new(server.stderr.take().expect("piped stderr"));
    let mut first = String::new();
    reader.read_line(&mut first).expect("the first line");
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let l = lines.clone();
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            l.lock().expect("lock").push(line);
        }
    });
    (server, addr, lines)
}

/// The error object of a failed `--json` client; the exit was non-zero and
/// stderr is the same message on one line.
fn json_error(out: &Output) -> (String, String) {
    assert!(!out.status.success(), "the client must fail");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let kind = v["error"]["kind"].as_str().expect("kind").to_string();
    let message = v["error"]["message"].as_str().expect("message").to_string();
    // Progress lines may come first; the error is the last line, whole.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.trim_end().lines().last().unwrap_or_default();
    assert_eq!(last, format!("error: {message}"), "one line");
    (kind, message)
}

fn free_port() -> String {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .to_string()
}

#[test]
fn nothing_listening_is_connection_refused_at_once() {
    let addr = free_port();
    let t0 = Instant::now();
    let out = peregrine()
        .args(["perf", "client", "--connect", &addr, "--json"])
        .output()
        .expect("run the client");
    let took = t0.elapsed();
    let (kind, message) = json_error(&out);
    assert_eq!(kind, "connection_refused");
    assert_eq!(
        message,
        format!(
            "cannot connect to {addr}: connection refused: nothing listens on {addr} \
             (ICMP port unreachable); check the port and that the server runs"
        )
    );
    eprintln!("connection refused after {took:?}");
}

#[test]
fn insecure_against_an_encrypted_server_says_drop_insecure() {
    let (mut server, addr, _) = start_server(&[]);
    let out = peregrine()
        .args(["perf", "client", "--connect", &addr, "--json", "--insecure"])
        .output()
        .expect("run the client");
    let (kind, message) = json_error(&out);
    assert_eq!(kind, "security_required");
    assert_eq!(
        message,
        format!("cannot connect to {addr}: the server requires encryption: drop --insecure")
    );
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn a_wrong_peer_key_is_reported_as_such() {
    let (mut server, addr, _) = start_server(&[]);
    let wrong = "11".repeat(32);
    let t0 = Instant::now();
    let out = peregrine()
        .args(["perf", "client", "--connect", &addr, "--json"])
        .args(["--peer-key", &wrong])
        .output()
        .expect("run the client");
    let took = t0.elapsed();
    let (kind, message) = json_error(&out);
    assert_eq!(kind, "key_mismatch");
    assert_eq!(
        message,
        format!(
            "cannot connect to {addr}: the server's key does not match --peer-key \
             (or the pre-shared keys differ)"
        )
    );
    eprintln!("wrong --peer-key reported after {took:?}");
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn a_sigkilled_server_is_declared_dead_and_a_once_server_reports_a_vanished_client() {
    // The client outlives a SIGKILLed server: peer death with data outstanding.
    let (mut server, addr, _) = start_server(&["--insecure"]);
    let client = peregrine()
        .args(["perf", "client", "--connect", &addr, "--json", "--insecure"])
        .args(["--duration", "30s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the client");
    std::thread::sleep(Duration::from_millis(800));
    server.kill().expect("SIGKILL the server");
    let _ = server.wait();
    let t0 = Instant::now();
    let out = client.wait_with_output().expect("the client ends");
    let took = t0.elapsed();
    let (kind, message) = json_error(&out);
    assert_eq!(kind, "peer_dead", "{message}");
    assert!(
        message.starts_with(&format!(
            "the connection ended during the run: no answer from {addr} after "
        )),
        "{message}"
    );
    assert!(
        message.contains(" s: the peer or the path is gone"),
        "{message}"
    );
    assert!(
        took < Duration::from_secs(15),
        "{took:?}: not the 30 s idle timeout"
    );
    eprintln!("SIGKILLed server noticed after {took:?}");

    // The other way round: a --once server whose client is SIGKILLed.
    let (mut server, addr, lines) = start_server(&["--insecure", "--once"]);
    let mut client = peregrine()
        .args(["perf", "client", "--connect", &addr, "--insecure"])
        .args(["--duration", "30s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run the client");
    std::thread::sleep(Duration::from_millis(800));
    client.kill().expect("SIGKILL the client");
    let _ = client.wait();
    let t0 = Instant::now();
    let status = server.wait().expect("the server exits");
    let took = t0.elapsed();
    assert!(
        !status.success(),
        "--once exits non-zero after a vanished client"
    );
    std::thread::sleep(Duration::from_millis(100));
    let lines = lines.lock().expect("lock").clone();
    let vanished = lines
        .iter()
        .find(|l| l.contains("the client vanished: no answer from"))
        .unwrap_or_else(|| panic!("no vanished-client line in {lines:?}"));
    assert!(vanished.starts_with("client 127.0.0.1:"), "{vanished}");
    let counters = lines
        .iter()
        .find(|l| l.starts_with("server counters: "))
        .unwrap_or_else(|| panic!("no counters line in {lines:?}"));
    for word in [
        "decode errors",
        "auth failures",
        "replays",
        "half-open now",
        "busy rejects",
    ] {
        assert!(counters.contains(word), "{counters}");
    }
    eprintln!("SIGKILLed client noticed by the --once server after {took:?}");
}

#[test]
fn ctrl_c_on_the_client_prints_the_partial_summary() {
    let (mut server, addr, _) = start_server(&["--insecure", "--once"]);
    let client = peregrine()
        .args(["perf", "client", "--connect", &addr, "--json", "--insecure"])
        .args(["--duration", "30s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the client");
    std::thread::sleep(Duration::from_millis(1500));
    let pid = i32::try_from(client.id()).expect("pid");
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = client.wait_with_output().expect("the client ends");
    assert_eq!(out.status.code(), Some(130), "128 + SIGINT");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(v["interrupted"], true, "{v}");
    assert!(v["bytes"].as_u64().expect("bytes") > 0, "{v}");
    let d = v["duration_s"].as_f64().expect("duration");
    assert!((1.0..10.0).contains(&d), "{d}");
    // The connection was closed, not abandoned: the --once server sees a
    // normal close and exits 0.
    let status = server.wait().expect("the server exits");
    assert!(status.success());
}
