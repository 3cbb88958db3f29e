//! iperf3's vocabulary for `perf` (`-s`, `-c HOST[:PORT]`, `-p`, `-t`,
//! `-i`, `-P`, …): parsing of hosts and seconds, the allowed ranges, and
//! the pieces of the iperf3-shaped JSON (`start`, `intervals[]`, `end`).

use anyhow::{anyhow, bail, Result};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;

/// Default port of `-s` and `-c HOST`: the port the Wireshark dissector
/// (`tools/wireshark/sltp.lua`) decodes as SLTP, so a capture of a
/// default `perf` run is readable without "Decode As".
pub(super) const DEFAULT_PORT: u16 = 4433;
/// Most bulk streams per connection (`--streams`). Each stream holds its
/// own send task and buffers; `--streams 65535` once took 1.56 GB.
pub(super) const MAX_STREAMS: u16 = 128;
/// Most parallel connections (`-P`).
pub(super) const MAX_PARALLEL: u16 = 32;
/// Longest run (`-t`/`--duration`): one day.
pub(super) const MAX_DURATION: Duration = Duration::from_secs(86_400);

/// `-t`/`--duration` and `-i`: a duration with a unit (`10s`, `500ms`,
/// as `--duration` always took) or, as in iperf3, a bare number of
/// seconds (`-t 2`, `-i 0.5`). O(length).
pub(super) fn parse_seconds(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if !secs.is_finite() || secs < 0.0 {
            return Err(format!("`{s}` is not a number of seconds ≥ 0"));
        }
        return Ok(Duration::from_secs_f64(secs));
    }
    super::parse::parse_duration(t)
}

/// Check the run's shape: streams, connections and duration within
/// their ranges. Errors name the flag and the allowed range. O(1).
pub(super) fn check_ranges(streams: u16, parallel: u16, duration: Duration) -> Result<()> {
    if !(1..=MAX_STREAMS).contains(&streams) {
        bail!("--streams: {streams} is out of range (allowed 1–{MAX_STREAMS})");
    }
    if !(1..=MAX_PARALLEL).contains(&parallel) {
        bail!("-P/--parallel: {parallel} is out of range (allowed 1–{MAX_PARALLEL})");
    }
    if duration.is_zero() || duration > MAX_DURATION {
        bail!(
            "-t/--duration: {} s is out of range (allowed more than 0 s, up to {} s)",
            duration.as_secs_f64(),
            MAX_DURATION.as_secs()
        );
    }
    Ok(())
}

/// Split `HOST[:PORT]` (`localhost`, `host:5201`, `127.0.0.1`, `::1`,
/// `[::1]:4433`) into host and port; `port_flag` is `-p`, the default
/// port [`DEFAULT_PORT`]. A port both in HOST:PORT and in `-p` that
/// differ is an error. O(length).
pub(super) fn host_port(s: &str, port_flag: Option<u16>) -> Result<(String, u16)> {
    let bad_port = |p: &str| anyhow!("-c/--connect: `{p}` in `{s}` is not a port (1–65535)");
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, tail) = rest
            .split_once(']')
            .ok_or_else(|| anyhow!("-c/--connect: `{s}` has `[` without `]`"))?;
        match tail.strip_prefix(':') {
            Some(p) => (h, Some(p.parse::<u16>().map_err(|_| bad_port(p))?)),
            None if tail.is_empty() => (h, None),
            None => bail!("-c/--connect: `{s}`: expected `[ADDRESS]:PORT`"),
        }
    } else if s.matches(':').count() == 1 {
        let (h, p) = s.split_once(':').unwrap_or((s, ""));
        (h, Some(p.parse::<u16>().map_err(|_| bad_port(p))?))
    } else {
        // No colon, or a bare IPv6 address (several colons, no port).
        (s, None)
    };
    if host.is_empty() {
        bail!("-c/--connect: `{s}` names no host");
    }
    if port == Some(0) {
        return Err(bad_port("0"));
    }
    let port = match (port, port_flag) {
        (Some(a), Some(b)) if a != b => {
            bail!("-c/--connect: `{s}` gives port {a} and -p/--port gives {b}; give one")
        }
        (Some(p), _) | (None, Some(p)) => p,
        (None, None) => DEFAULT_PORT,
    };
    Ok((host.to_string(), port))
}

/// Every address `host` resolves to, in the resolver's order. O(addresses).
pub(super) async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| anyhow!("-c/--connect: cannot resolve `{host}`: {e}"))?
        .collect();
    if addrs.is_empty() {
        bail!("-c/--connect: `{host}` resolves to no address");
    }
    Ok(addrs)
}

/// Try `connect` on each of `addrs` in turn; the first success, with its
/// address. Each failure but the last is said on stderr; the error is the
/// last address's, as `cannot connect to ADDR: …` (and, when there were
/// several, prefixed with `-c SPEC: every address failed`). O(addresses).
pub(super) async fn first_that_connects<T, F, Fut>(
    spec: &str,
    addrs: &[SocketAddr],
    mut connect: F,
) -> Result<(SocketAddr, T)>
where
    F: FnMut(SocketAddr) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut last_err = None;
    for &addr in addrs {
        match connect(addr).await {
            Ok(c) => return Ok((addr, c)),
            Err(e) => {
                if addrs.len() > 1 {
                    eprintln!("cannot connect to {addr}: {e:#}; trying the next address");
                }
                last_err = Some(e.context(format!("cannot connect to {addr}")));
            }
        }
    }
    let e = last_err.unwrap_or_else(|| anyhow!("-c {spec}: no address"));
    Err(if addrs.len() > 1 {
        e.context(format!("-c {spec}: every address failed"))
    } else {
        e
    })
}

/// `{"bytes", "seconds", "bits_per_second"}`, iperf3's sum object.
pub(super) fn sum(bytes: u64, seconds: f64) -> Value {
    json!({
        "bytes": bytes,
        "seconds": seconds,
        "bits_per_second": if seconds > 0.0 { bytes as f64 * 8.0 / seconds } else { 0.0 },
    })
}

/// One report interval as the client saw it: `sender` (bytes of the
/// client's sending direction the server acknowledged) and `receiver`
/// (bytes the client received); `null` for a direction the run does not
/// use.
#[derive(Clone, Debug, Default)]
pub(super) struct Interval {
    /// Start and end, seconds since the run started.
    pub start_s: f64,
    /// End, seconds since the run started.
    pub end_s: f64,
    /// Bytes acknowledged in the client's sending direction, if it sends.
    pub sent_bytes: Option<u64>,
    /// Bytes received by the client, if the server sends.
    pub received_bytes: Option<u64>,
}

impl Interval {
    /// The JSON object of `intervals[]`. O(1).
    pub(super) fn to_json(&self) -> Value {
        let secs = self.end_s - self.start_s;
        json!({
            "start": self.start_s,
            "end": self.end_s,
            "seconds": secs,
            "sender": self.sent_bytes.map(|b| sum(b, secs)),
            "receiver": self.received_bytes.map(|b| sum(b, secs)),
        })
    }

    /// Add another connection's interval of the same index (`-P`). O(1).
    pub(super) fn add(&mut self, o: &Interval) {
        let plus = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.sent_bytes = plus(self.sent_bytes, o.sent_bytes);
        self.received_bytes = plus(self.received_bytes, o.received_bytes);
        self.end_s = self.end_s.max(o.end_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports_split_and_conflicts_are_named() {
        let hp = |s, p| host_port(s, p).map_err(|e| e.to_string());
        assert_eq!(hp("localhost", None), Ok(("localhost".into(), 4433)));
        assert_eq!(hp("localhost", Some(5201)), Ok(("localhost".into(), 5201)));
        assert_eq!(hp("h:7000", None), Ok(("h".into(), 7000)));
        assert_eq!(hp("::1", None), Ok(("::1".into(), 4433)));
        assert_eq!(hp("[::1]:9", None), Ok(("::1".into(), 9)));
        assert_eq!(hp("[::1]", Some(8)), Ok(("::1".into(), 8)));
        assert_eq!(
            hp("h:7000", Some(8)),
            Err("-c/--connect: `h:7000` gives port 7000 and -p/--port gives 8; give one".into())
        );
        assert_eq!(
            hp("h:x", None),
            Err("-c/--connect: `x` in `h:x` is not a port (1–65535)".into())
        );
        assert_eq!(
            hp(":5", None),
            Err("-c/--connect: `:5` names no host".into())
        );
    }

    #[tokio::test]
    async fn every_address_is_tried_in_turn() {
        let v6: SocketAddr = "[::1]:4433".parse().expect("addr");
        let v4: SocketAddr = "127.0.0.1:4433".parse().expect("addr");
        let mut tried = Vec::new();
        let r = first_that_connects("localhost", &[v6, v4], |a| {
            tried.push(a);
            async move {
                if a.is_ipv6() {
                    bail!("connection refused")
                }
                Ok(7)
            }
        })
        .await
        .expect("the second address connects");
        assert_eq!(r, (v4, 7));
        assert_eq!(tried, [v6, v4]);
        let e = first_that_connects("localhost", &[v6, v6], |_| async {
            Result::<()>::Err(anyhow!("connection refused"))
        })
        .await
        .unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "-c localhost: every address failed: cannot connect to [::1]:4433: connection refused"
        );
    }

    #[test]
    fn seconds_take_bare_numbers_and_units() {
        assert_eq!(parse_seconds("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_seconds("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_seconds("-1").is_err());
    }

    #[test]
    fn ranges_are_checked_with_the_allowed_range_in_the_message() {
        let d = Duration::from_secs(1);
        assert!(check_ranges(1, 1, d).is_ok());
        assert_eq!(
            check_ranges(0, 1, d).unwrap_err().to_string(),
            "--streams: 0 is out of range (allowed 1–128)"
        );
        assert_eq!(
            check_ranges(65535, 1, d).unwrap_err().to_string(),
            "--streams: 65535 is out of range (allowed 1–128)"
        );
        assert_eq!(
            check_ranges(1, 0, d).unwrap_err().to_string(),
            "-P/--parallel: 0 is out of range (allowed 1–32)"
        );
        assert_eq!(
            check_ranges(1, 1, Duration::ZERO).unwrap_err().to_string(),
            "-t/--duration: 0 s is out of range (allowed more than 0 s, up to 86400 s)"
        );
    }
}
