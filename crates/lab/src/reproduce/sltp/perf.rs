//! Driving `peregrine perf` as a subprocess, and reading its `--json` report.
//!
//! The reproduction measures Peregrine the way a user would run it: a
//! `peregrine perf server` process and one `peregrine perf client
//! --echo-size B --echo-count N --json` process per measurement, so the
//! figures include everything a real deployment pays (process, sockets,
//! handshake) and nothing is measured from inside the library. The JSON
//! contract is the one `perf` documents in `docs/perf.md`; only the keys read
//! here are required, unknown keys are ignored.

use crate::netns::{Side, VethPair};
use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The part of `peregrine perf client --json` this command reads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PerfReport {
    /// Goodput over the run, bit/s.
    pub throughput_bps: f64,
    /// Application bytes moved.
    pub bytes: u64,
    /// Length of the run, seconds.
    pub duration_s: f64,
    /// Packets retransmitted by the client.
    #[serde(default)]
    pub retransmitted_packets: u64,
    /// Echo mode results; absent or null outside echo mode.
    #[serde(default)]
    pub echo: Option<EchoReport>,
    /// The packet-pair probe at connection start; null if none ran.
    #[serde(default)]
    pub probe: Option<ProbeReport>,
}

/// `echo` in the perf report: N round trips of one buffer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EchoReport {
    /// The buffer size sent and received back, bytes.
    pub size_bytes: u64,
    /// The round-trip ("network") time of each repetition, milliseconds.
    pub times_ms: Vec<f64>,
    /// Their median, as computed by perf (the report recomputes it).
    #[serde(default)]
    pub median_ms: Option<f64>,
}

/// `probe` in the perf report: what packet-pair probing measured.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
pub struct ProbeReport {
    /// Round-trip latency, milliseconds.
    pub rtt_ms: f64,
    /// Bottleneck bandwidth, bit/s.
    pub bandwidth_bps: f64,
    /// Burst the path accepted, bytes.
    pub burst_bytes: f64,
}

/// Parse `perf client --json` output and check it is an echo report of
/// `size_bytes` with usable times. Errors name the offending key.
pub fn parse_echo(json: &str, size_bytes: u64) -> anyhow::Result<PerfReport> {
    let report: PerfReport = serde_json::from_str(json.trim())
        .context("perf client --json output is not a perf report")?;
    let Some(echo) = &report.echo else {
        bail!("perf report has no `echo` object (was --echo-size passed?)");
    };
    if echo.size_bytes != size_bytes {
        bail!(
            "perf report `echo.size_bytes` is {} but {size_bytes} was asked for",
            echo.size_bytes
        );
    }
    if echo.times_ms.is_empty() {
        bail!("perf report `echo.times_ms` is empty");
    }
    if let Some(bad) = echo.times_ms.iter().find(|t| !t.is_finite() || **t < 0.0) {
        bail!("perf report `echo.times_ms` holds an invalid time {bad}");
    }
    if let Some(p) = &report.probe {
        for (key, v) in [
            ("rtt_ms", p.rtt_ms),
            ("bandwidth_bps", p.bandwidth_bps),
            ("burst_bytes", p.burst_bytes),
        ] {
            if !v.is_finite() || v < 0.0 {
                bail!("perf report `probe.{key}` is invalid: {v}");
            }
        }
    }
    Ok(report)
}

/// A `peregrine perf server` child process, killed when dropped.
pub struct PerfServer {
    child: Child,
    /// The address it listens on.
    pub addr: SocketAddr,
}

impl PerfServer {
    /// Start `bin perf server --insecure --listen IP:PORT` on a free UDP
    /// port, its standard error going to `log`, and check that it is still
    /// running shortly after. IP is 127.0.0.1, or with `wire` the server
    /// side's address inside the server namespace (where the process runs).
    pub fn start(bin: &Path, log: &Path, wire: Option<&VethPair>) -> anyhow::Result<PerfServer> {
        let addr = match wire {
            None => free_udp_port(Ipv4Addr::LOCALHOST.into())?,
            Some(w) => w.run_in(Side::Server, || {
                free_udp_port(VethPair::addr(Side::Server).into())
            })?,
        };
        // A file, not a pipe: nobody reads the server's diagnostics while it
        // runs, and a full or closed pipe would stall or kill it.
        let log_file = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut child = command(bin, wire, Side::Server)?
            // Seed fidelity: SLTP has no encryption, so neither side of
            // the reproduction encrypts (`perf` does by default).
            .args([
                "perf",
                "server",
                "--insecure",
                "--listen",
                &addr.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("cannot start {} perf server", bin.display()))?;
        crate::netns::kill_on_signal(child.id());
        std::thread::sleep(Duration::from_millis(300));
        if let Some(status) = child.try_wait()? {
            crate::netns::release_on_signal(child.id());
            let err = std::fs::read_to_string(log).unwrap_or_default();
            bail!(
                "`{} perf server` exited at once ({status}): {}\n\
                 (this command drives Peregrine through `peregrine perf`; \
                 run with `--transports tcp` to measure kernel TCP only)",
                bin.display(),
                err.trim()
            );
        }
        Ok(PerfServer { child, addr })
    }
}

impl Drop for PerfServer {
    fn drop(&mut self) {
        crate::netns::release_on_signal(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free UDP port on `ip` (in the calling thread's namespace): bind
/// port 0, read it, release it.
#[allow(clippy::disallowed_types)] // the CLI runtime asks the OS for a port; no datagram is sent
fn free_udp_port(ip: IpAddr) -> anyhow::Result<SocketAddr> {
    let sock = std::net::UdpSocket::bind((ip, 0)).context("cannot bind a UDP socket")?;
    Ok(sock.local_addr()?)
}

/// `bin` as a command, run in `side`'s namespace of `wire` if there is one.
fn command(bin: &Path, wire: Option<&VethPair>, side: Side) -> anyhow::Result<Command> {
    match wire {
        None => Ok(Command::new(bin)),
        Some(w) => w.command(side, bin),
    }
}

/// Run one `perf client` in echo mode (with `wire`, in its client
/// namespace) and parse its report. A first failure is retried twice (the
/// server may still be binding).
pub fn echo_client(
    bin: &Path,
    server: SocketAddr,
    size_bytes: u64,
    count: usize,
    wire: Option<&VethPair>,
) -> anyhow::Result<PerfReport> {
    let mut last = None;
    for attempt in 0..3 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(300));
        }
        let child = command(bin, wire, Side::Client)?
            .args([
                "perf",
                "client",
                "--insecure",
                "--connect",
                &server.to_string(),
            ])
            .args(["--echo-size", &size_bytes.to_string()])
            .args(["--echo-count", &count.to_string(), "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot run {} perf client", bin.display()))?;
        // Registered so that an interrupted run does not leave it behind.
        let pid = child.id();
        crate::netns::kill_on_signal(pid);
        let out = child.wait_with_output();
        crate::netns::release_on_signal(pid);
        let out = out.with_context(|| format!("cannot run {} perf client", bin.display()))?;
        if out.status.success() {
            let stdout = String::from_utf8_lossy(&out.stdout);
            return parse_echo(&stdout, size_bytes);
        }
        last = Some(format!(
            "perf client ({}) failed: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    bail!(last.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ECHO: &str = r#"{"throughput_bps": 1.5e9, "bytes": 20480, "duration_s": 0.01,
        "retransmitted_packets": 0, "streams": [],
        "echo": {"size_bytes": 4096, "times_ms": [0.2, 0.25, 0.21], "median_ms": 0.21},
        "probe": {"rtt_ms": 0.05, "bandwidth_bps": 8e9, "burst_bytes": 14520},
        "future_key": {"ignored": true}}"#;

    #[test]
    fn parses_echo_report() {
        let r = parse_echo(ECHO, 4096).expect("valid echo report");
        let echo = r.echo.expect("echo present");
        assert_eq!(echo.times_ms, vec![0.2, 0.25, 0.21]);
        assert_eq!(r.bytes, 20480);
        let p = r.probe.expect("probe present");
        assert_eq!(p.burst_bytes, 14520.0);
        assert_eq!(p.bandwidth_bps, 8e9);
    }

    #[test]
    fn probe_may_be_null() {
        let json = ECHO.replace(
            r#"{"rtt_ms": 0.05, "bandwidth_bps": 8e9, "burst_bytes": 14520}"#,
            "null",
        );
        let r = parse_echo(&json, 4096).expect("valid without probe");
        assert_eq!(r.probe, None);
    }

    #[test]
    fn rejects_bad_reports_naming_the_key() {
        let msg = |json: &str, size| format!("{:#}", parse_echo(json, size).unwrap_err());
        assert!(msg(ECHO, 8192).contains("echo.size_bytes"));
        assert!(msg("not json", 4096).contains("not a perf report"));
        let no_echo = r#"{"throughput_bps": 1, "bytes": 1, "duration_s": 1, "echo": null}"#;
        assert!(msg(no_echo, 4096).contains("no `echo`"));
        let missing = r#"{"bytes": 1, "duration_s": 1}"#;
        assert!(msg(missing, 4096).contains("throughput_bps"));
        let empty = ECHO.replace("[0.2, 0.25, 0.21]", "[]");
        assert!(msg(&empty, 4096).contains("echo.times_ms"));
        let negative = ECHO.replace("[0.2, 0.25, 0.21]", "[0.2, -1]");
        assert!(msg(&negative, 4096).contains("invalid time"));
        let bad_probe = ECHO.replace("\"rtt_ms\": 0.05", "\"rtt_ms\": -0.05");
        assert!(msg(&bad_probe, 4096).contains("probe.rtt_ms"));
    }
}
