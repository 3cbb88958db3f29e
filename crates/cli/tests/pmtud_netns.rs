//! Path MTU discovery and `perf client --bytes N` through a real path:
//! two fresh network namespaces joined by a veth pair whose MTU is 1,280
//! (an IPv6-minimum link: a VPN, PPPoE) or 9,000 (jumbo frames). The
//! client's bound is its route's MTU less 28 bytes of IPv4/UDP headers.
//!
//! * MTU 1,280: a 64 MiB verified transfer completes (datagrams of at most
//!   1,252 bytes: the fixed 1,452-byte size of earlier versions would have
//!   vanished on this path);
//! * MTU 9,000: datagrams grow past 8,000 bytes (`pmtu.current_bytes` in
//!   the client's JSON).
//!
//! Needs root and `ip` (CI runs as root); elsewhere each test prints why it
//! is skipped and returns. Also here: `--bytes` over loopback, which needs
//! neither, and its failure report.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

const BIN: &str = env!("CARGO_BIN_EXE_peregrine");

/// Two namespaces joined by a veth pair; deleted on drop.
struct Veth {
    server_ns: String,
    client_ns: String,
    server_ip: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Veth {
    /// `None` (with the reason printed) where namespaces cannot be made.
    fn new(mtu: u32) -> Option<Veth> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root for network namespaces");
            return None;
        }
        static N: AtomicU32 = AtomicU32::new(0);
        let tag = format!(
            "{}{}",
            std::process::id() % 100_000,
            N.fetch_add(1, Ordering::Relaxed)
        );
        let v = Veth {
            server_ns: format!("pgmtu-s{tag}"),
            client_ns: format!("pgmtu-c{tag}"),
            server_ip: "10.252.0.1".into(),
        };
        let (sdev, cdev) = (format!("pgms{tag}"), format!("pgmc{tag}"));
        let setup = || -> Result<(), String> {
            ip(&["netns", "add", &v.server_ns])?;
            ip(&["netns", "add", &v.client_ns])?;
            ip(&["link", "add", &sdev, "type", "veth", "peer", "name", &cdev])?;
            ip(&["link", "set", &sdev, "netns", &v.server_ns])?;
            ip(&["link", "set", &cdev, "netns", &v.client_ns])?;
            let m = mtu.to_string();
            for (ns, dev, addr) in [
                (&v.server_ns, &sdev, "10.252.0.1/30"),
                (&v.client_ns, &cdev, "10.252.0.2/30"),
            ] {
                ip(&["-n", ns, "link", "set", dev, "mtu", &m])?;
                ip(&["-n", ns, "addr", "add", addr, "dev", dev])?;
                ip(&["-n", ns, "link", "set", dev, "up"])?;
                ip(&["-n", ns, "link", "set", "lo", "up"])?;
            }
            Ok(())
        };
        match setup() {
            Ok(()) => Some(v),
            Err(e) => {
                eprintln!("skipped: network namespaces unavailable ({e})");
                None
            }
        }
    }

    fn run_in(&self, ns: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, BIN]);
        c
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of the veth pair, and with
        // it the other end.
        let _ = ip(&["netns", "del", &self.server_ns]);
        let _ = ip(&["netns", "del", &self.client_ns]);
    }
}

/// Start `perf server --once --json` from `cmd`; its address.
fn start_server(mut cmd: Command, listen: &str) -> (Child, String) {
    let mut server = cmd
        .args(["perf", "server", "--listen", listen, "--once", "--json"])
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the server");
    let stderr = server.stderr.take().expect("piped stderr");
    let mut reader = BufReader::new(stderr);
    let mut first = String::new();
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

fn json_of(out: &std::process::Output, who: &str) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{who}: stdout is not one JSON object ({e}): {} / stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A `--bytes n` transfer from `client` to a server started by `server`;
/// the client's and the server's JSON.
fn transfer(server: Command, listen: &str, mut client: Command, n: u64) -> (Value, Value) {
    let (child, addr) = start_server(server, listen);
    let out = client
        .args([
            "perf",
            "client",
            "--connect",
            &addr,
            "--json",
            "--bytes",
            &n.to_string(),
        ])
        .output()
        .expect("run the client");
    let server_out = child.wait_with_output().expect("the server exits");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server_out.status.success(), "server failed");
    (json_of(&out, "client"), json_of(&server_out, "server"))
}

fn check_verified(c: &Value, s: &Value, n: u64) {
    assert_eq!(c["mode"], "transfer");
    assert_eq!(c["bytes"], n);
    assert_eq!(c["verified"], true, "{c}");
    assert_eq!(s["verified"], true, "{s}");
    assert_eq!(s["bytes"], n);
    let sha = c["sha256"].as_str().expect("sha256");
    assert_eq!(sha.len(), 64);
    assert_eq!(s["sha256"], sha);
}

#[test]
fn a_64_mib_transfer_crosses_a_1280_byte_mtu() {
    let Some(v) = Veth::new(1280) else { return };
    let n = 64 << 20;
    let listen = format!("{}:0", v.server_ip);
    let (c, s) = transfer(v.run_in(&v.server_ns), &listen, v.run_in(&v.client_ns), n);
    check_verified(&c, &s, n);
    let pmtu = &c["pmtu"];
    assert_eq!(pmtu["max_bytes"], 1252, "the route's MTU less 28: {pmtu}");
    assert!(
        pmtu["current_bytes"]
            .as_u64()
            .is_some_and(|b| (1200..=1252).contains(&b)),
        "{pmtu}"
    );
    eprintln!(
        "MTU 1280: 64 MiB in {:.2} s, pmtu {pmtu}",
        c["duration_s"].as_f64().unwrap_or(0.0)
    );
}

#[test]
fn datagrams_grow_past_8000_bytes_on_a_9000_byte_mtu() {
    let Some(v) = Veth::new(9000) else { return };
    let n = 16 << 20;
    let listen = format!("{}:0", v.server_ip);
    let (c, s) = transfer(v.run_in(&v.server_ns), &listen, v.run_in(&v.client_ns), n);
    check_verified(&c, &s, n);
    let pmtu = &c["pmtu"];
    assert_eq!(pmtu["max_bytes"], 8972, "{pmtu}");
    assert!(
        pmtu["current_bytes"].as_u64().is_some_and(|b| b > 8000),
        "{pmtu}"
    );
    // The server's direction searched too (bounded by the client's maximum).
    assert!(
        s["pmtu"]["current_bytes"]
            .as_u64()
            .is_some_and(|b| b > 8000),
        "{s}"
    );
    eprintln!("MTU 9000: pmtu {pmtu}");
}

#[test]
fn bytes_mode_verifies_over_loopback() {
    let n = 3_000_017; // not a multiple of the 64 KiB message size
    let (c, s) = transfer(Command::new(BIN), "127.0.0.1:0", Command::new(BIN), n);
    check_verified(&c, &s, n);
    // Loopback's MTU is far above 1,452: discovery went beyond it.
    assert!(
        c["pmtu"]["current_bytes"]
            .as_u64()
            .is_some_and(|b| b > 1452),
        "{}",
        c["pmtu"]
    );
}

#[test]
fn pinned_datagrams_stay_fixed() {
    let (child, addr) = start_server(Command::new(BIN), "127.0.0.1:0");
    let out = Command::new(BIN)
        .args([
            "perf",
            "client",
            "--connect",
            &addr,
            "--json",
            "--bytes",
            "100000",
        ])
        .args(["--pmtud", "off", "--max-datagram", "1452"])
        .output()
        .expect("run the client");
    let _ = child.wait_with_output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c = json_of(&out, "client");
    assert_eq!(c["verified"], true);
    assert_eq!(c["pmtu"]["state"], "disabled");
    assert_eq!(c["pmtu"]["current_bytes"], 1452);
}
