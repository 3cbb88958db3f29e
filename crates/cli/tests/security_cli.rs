//! `peregrine keygen` and `perf`'s security options end to end: key files
//! round trip, `perf` over 127.0.0.1 encrypted (default XX, IK with a
//! pinned key from a file or hex, a pre-shared key) and `--insecure`, the
//! mode stated in the JSON report, and a bad key file refused with an
//! error naming its line.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Output, Stdio};

mod support;
use support::{peregrine as bin, tempdir as scratch};

fn keygen(args: &[&str]) -> Output {
    bin().arg("keygen").args(args).output().expect("run keygen")
}

/// `perf server --once` with `extra`; its address and its `security:` line.
fn start_server(extra: &[&str]) -> (Child, String, String) {
    let mut server = bin()
        .args(["perf", "server", "--listen", "127.0.0.1:0", "--once"])
        .args(extra)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start the server");
    let stderr = server.stderr.take().expect("piped stderr");
    let mut reader = BufReader::new(stderr);
    let mut first = String::new();
    let mut second = String::new();
    reader
        .read_line(&mut first)
        .expect("the server's first line");
    reader
        .read_line(&mut second)
        .expect("the server's second line");
    std::thread::Builder::new()
        .spawn(move || for _ in reader.lines() {})
        .expect("drain thread");
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    (server, addr, second.trim().to_string())
}

/// A one-second bulk client with `extra`; its JSON report.
fn client(addr: &str, extra: &[&str]) -> serde_json::Value {
    let out = bin()
        .args([
            "perf",
            "client",
            "--connect",
            addr,
            "--json",
            "--duration",
            "1s",
        ])
        .args(extra)
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn run_pair(server_args: &[&str], client_args: &[&str]) -> (serde_json::Value, String) {
    let (mut server, addr, line) = start_server(server_args);
    let v = client(&addr, client_args);
    assert!(v["bytes"].as_u64().expect("bytes") > 0, "{v}");
    assert!(server.wait().expect("server exits").success());
    (v, line)
}

#[test]
fn keygen_writes_a_keypair_and_public_key_that_round_trip() {
    let tmp = scratch("keygen");
    let dir = tmp.path();
    let key = dir.join("id");
    let out = keygen(&["--out", key.to_str().expect("utf-8 path")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string();
    assert_eq!(printed.len(), 64, "the public key in hex: {printed}");
    let kp = peregrine::keys::load_keypair(&key).expect("a valid keypair file");
    assert_eq!(kp.public().to_hex(), printed);
    let public = peregrine::keys::load_public_key(&dir.join("id.pub")).expect("a .pub file");
    assert_eq!(public, kp.public());
    assert_eq!(peregrine::keys::permission_warning(&key), None, "mode 0600");

    let again = keygen(&["--out", key.to_str().expect("utf-8 path")]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    assert_eq!(peregrine::keys::load_keypair(&key).expect("unchanged"), kp);
    let forced = keygen(&["--out", key.to_str().expect("utf-8 path"), "--force"]);
    assert!(forced.status.success());
    assert_ne!(peregrine::keys::load_keypair(&key).expect("replaced"), kp);

    let psk = dir.join("fleet.psk");
    let out = keygen(&["--psk", "--out", psk.to_str().expect("utf-8 path")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    peregrine::keys::load_psk(&psk).expect("a valid psk file");
}

#[test]
fn perf_encrypts_by_default_and_says_so() {
    let (v, line) = run_pair(&[], &[]);
    assert!(line.starts_with("security: Noise_IK+Noise_XX"), "{line}");
    assert_eq!(v["security"]["mode"], "Noise_XX", "{v}");
    assert_eq!(v["security"]["pattern"], "XX", "{v}");
    assert_eq!(v["security"]["encrypted"], true, "{v}");
    assert_eq!(v["security"]["server_authenticated"], false, "{v}");
    // The key the server printed is the one the client met.
    let printed = line
        .split("public key ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .expect("the server prints its key");
    assert_eq!(v["security"]["server_key"], printed, "{v}");
}

#[test]
fn perf_insecure_runs_the_plain_wire_format() {
    let (v, line) = run_pair(&["--insecure"], &["--insecure"]);
    assert!(line.starts_with("security: insecure"), "{line}");
    assert_eq!(v["security"]["mode"], "insecure", "{v}");
    assert_eq!(v["security"]["pattern"], serde_json::Value::Null, "{v}");
    assert_eq!(v["security"]["encrypted"], false, "{v}");
}

#[test]
fn perf_with_key_files_pins_the_server() {
    let tmp = scratch("pin");
    let dir = tmp.path();
    let (server_key, client_key) = (dir.join("server"), dir.join("client"));
    for k in [&server_key, &client_key] {
        assert!(keygen(&["--out", k.to_str().expect("utf-8")])
            .status
            .success());
    }
    let auth = dir.join("authorized");
    let client_pub = peregrine::keys::load_public_key(&dir.join("client.pub")).expect("pub");
    std::fs::write(&auth, format!("# the fleet\n{client_pub} drone-1\n")).expect("write");
    let server_pub = dir.join("server.pub");
    let (v, line) = run_pair(
        &[
            "--key",
            server_key.to_str().expect("utf-8"),
            "--authorized-keys",
            auth.to_str().expect("utf-8"),
        ],
        &[
            "--key",
            client_key.to_str().expect("utf-8"),
            "--peer-key",
            server_pub.to_str().expect("utf-8"),
        ],
    );
    assert!(line.contains("1 authorized client keys"), "{line}");
    assert_eq!(v["security"]["mode"], "Noise_IK", "{v}");
    assert_eq!(v["security"]["pattern"], "IK", "{v}");
    assert_eq!(v["security"]["encrypted"], true, "{v}");
    assert_eq!(v["security"]["server_authenticated"], true, "{v}");

    // A pre-shared key, the server's key given as hex.
    let psk = dir.join("fleet.psk");
    assert!(keygen(&["--psk", "--out", psk.to_str().expect("utf-8")])
        .status
        .success());
    let hex = peregrine::keys::load_public_key(&server_pub)
        .expect("pub")
        .to_hex();
    let (v, _) = run_pair(
        &[
            "--key",
            server_key.to_str().expect("utf-8"),
            "--psk",
            psk.to_str().expect("utf-8"),
        ],
        &["--peer-key", &hex, "--psk", psk.to_str().expect("utf-8")],
    );
    assert_eq!(v["security"]["mode"], "Noise_IKpsk2", "{v}");
    assert_eq!(v["security"]["encrypted"], true, "{v}");
}

#[test]
fn a_bad_key_file_is_refused_naming_file_and_line() {
    let tmp = scratch("bad");
    let dir = tmp.path();
    let key = dir.join("id");
    assert!(keygen(&["--out", key.to_str().expect("utf-8")])
        .status
        .success());
    let text = std::fs::read_to_string(&key).expect("read");
    let bad: String = text
        .lines()
        .map(|l| {
            if l.starts_with("public") {
                "public = 12345"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&key, bad).expect("write");
    let out = bin()
        .args([
            "perf",
            "client",
            "--connect",
            "127.0.0.1:9",
            "--duration",
            "1s",
        ])
        .args(["--key", key.to_str().expect("utf-8")])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .position(|l| l.starts_with("public"))
        .expect("a public line")
        + 1;
    let want = format!("{}:{line}: `public` must be 64 hex digits", key.display());
    assert!(err.contains(&want), "want {want:?} in {err}");
    let out = bin()
        .args(["perf", "client", "--connect", "127.0.0.1:9", "--insecure"])
        .args(["--peer-key", "nonexistent.pub"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be combined"));
    let _ = Path::new(&dir);
}
