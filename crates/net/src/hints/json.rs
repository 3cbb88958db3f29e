//! JSON lines: the hint format any predictor can speak (a GNSS receiver
//! with a coverage map, a modem manager, a base station, `peregrine emu`).
//!
//! One object per line (UTF-8, `\n`-terminated; a UDP datagram may hold
//! several lines):
//!
//! ```text
//! {"t_ms": 1733450000123.5, "kind": "outage", "duration_ms": 300, "confidence": 0.9}
//! {"kind": "restored"}
//! {"kind": "rate", "rate_bps": 12000000}
//! ```
//!
//! | key | type | required | meaning |
//! |---|---|---|---|
//! | `kind` | `"blockage"` \| `"handover"` \| `"outage"` \| `"restored"` \| `"rate"` | yes | what is announced |
//! | `t_ms` | number ≥ 0 | no | when it begins, Unix time in ms (fractions allowed); absent: now |
//! | `duration_ms` | number ≥ 0 | no | predicted length of the outage |
//! | `rate_bps` | number > 0 | for `rate` | the new capacity |
//! | `confidence` | number in [0, 1] | no (1) | below 0.5 the hint is not applied |
//!
//! Any other key, a wrong type or an out-of-range value rejects the line
//! with a reason naming the key (counted as `malformed`; the feed goes
//! on).

use super::{Hint, HintError, HintKind, HintSource, SourcePoll};
use serde::Deserialize;
use std::collections::VecDeque;
use std::io::Read;
use std::time::Duration;

/// Longest line accepted; a longer one is rejected (and skipped up to its
/// newline) so a broken writer cannot grow the buffer without bound.
pub const MAX_LINE_BYTES: usize = 4096;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireHint {
    kind: String,
    #[serde(default)]
    t_ms: Option<f64>,
    #[serde(default)]
    duration_ms: Option<f64>,
    #[serde(default)]
    rate_bps: Option<f64>,
    #[serde(default)]
    confidence: Option<f64>,
}

fn millis(key: &str, v: f64) -> Result<Duration, String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{key}: {v} is not a time in ms ≥ 0"));
    }
    // Whole microseconds, rounded: a float ms of today's Unix time is
    // exact to about 0.25 µs, no finer.
    let us = (v * 1e3).round();
    if us >= u64::MAX as f64 {
        return Err(format!("{key}: {v} is out of range"));
    }
    Ok(Duration::from_micros(us as u64))
}

/// Parse one line. The error names the bad key. O(line length).
pub fn parse_line(line: &str) -> Result<Hint, String> {
    let w: WireHint = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let kind = HintKind::parse(&w.kind).ok_or_else(|| {
        format!(
            "kind: unknown {:?} (expected blockage, handover, outage, restored or rate)",
            w.kind
        )
    })?;
    let starts_at_unix = w.t_ms.map(|t| millis("t_ms", t)).transpose()?;
    let duration = w
        .duration_ms
        .map(|d| millis("duration_ms", d))
        .transpose()?;
    let rate_bps = match w.rate_bps {
        Some(r) if (1.0..1e18).contains(&r) => Some(r as u64),
        Some(r) => return Err(format!("rate_bps: {r} is not a rate ≥ 1 bit/s")),
        None if kind == HintKind::Rate => {
            return Err("rate_bps: a rate hint needs it".to_string());
        }
        None => None,
    };
    let confidence = match w.confidence {
        Some(c) if (0.0..=1.0).contains(&c) => c,
        Some(c) => return Err(format!("confidence: {c} is not in [0, 1]")),
        None => 1.0,
    };
    Ok(Hint {
        kind,
        starts_at_unix,
        duration,
        rate_bps,
        confidence,
    })
}

/// Splits a byte stream into lines and parses them: shared by the Unix
/// and UDP sources.
#[derive(Debug, Default)]
struct Lines {
    buf: Vec<u8>,
    /// Skipping the rest of an over-long line.
    skipping: bool,
    hints: VecDeque<Hint>,
    malformed: Vec<String>,
    line_no: u64,
}

impl Lines {
    /// Append `bytes`; every complete line is parsed. O(bytes).
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        while let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=nl).collect();
            if std::mem::take(&mut self.skipping) {
                continue;
            }
            self.line(&line[..line.len() - 1]);
        }
        if self.buf.len() > MAX_LINE_BYTES {
            self.line_no += 1;
            self.malformed.push(format!(
                "line {}: longer than {MAX_LINE_BYTES} bytes",
                self.line_no
            ));
            self.buf.clear();
            self.skipping = true;
        }
    }

    /// The end of a datagram (or of the stream) ends a line too.
    fn flush(&mut self) {
        if !self.buf.is_empty() && !self.skipping {
            let line = std::mem::take(&mut self.buf);
            self.line(&line);
        }
        self.buf.clear();
        self.skipping = false;
    }

    fn line(&mut self, raw: &[u8]) {
        self.line_no += 1;
        let text = match std::str::from_utf8(raw) {
            Ok(t) => t.trim(),
            Err(_) => {
                self.malformed
                    .push(format!("line {}: not UTF-8", self.line_no));
                return;
            }
        };
        if text.is_empty() {
            return;
        }
        if raw.len() > MAX_LINE_BYTES {
            self.malformed.push(format!(
                "line {}: longer than {MAX_LINE_BYTES} bytes",
                self.line_no
            ));
            return;
        }
        match parse_line(text) {
            Ok(h) => self.hints.push_back(h),
            Err(e) => self.malformed.push(format!("line {}: {e}", self.line_no)),
        }
    }
}

/// The read timeout for a wait (a zero timeout means "block" to the OS).
fn timeout(wait: Duration) -> Option<Duration> {
    Some(wait.max(Duration::from_millis(1)))
}

/// JSON lines from a Unix stream socket a predictor (or `peregrine emu`)
/// listens on: `unix:PATH` connects to it and reads until the writer
/// closes it ([`SourcePoll::Ended`]).
#[derive(Debug)]
pub struct UnixSource {
    path: String,
    stream: std::os::unix::net::UnixStream,
    lines: Lines,
    ended: bool,
}

impl UnixSource {
    /// Connect to the socket at `path`. The error names the path.
    pub fn connect(path: &str) -> Result<UnixSource, HintError> {
        let name = format!("unix:{path}");
        let stream = std::os::unix::net::UnixStream::connect(path)
            .map_err(|e| HintError::new(&name, format!("cannot connect to {path}: {e}")))?;
        Ok(UnixSource {
            path: path.to_string(),
            stream,
            lines: Lines::default(),
            ended: false,
        })
    }
}

impl HintSource for UnixSource {
    fn next(&mut self, wait: Duration) -> Result<SourcePoll, HintError> {
        if let Some(h) = self.lines.hints.pop_front() {
            return Ok(SourcePoll::Hint(h));
        }
        if self.ended {
            return Ok(SourcePoll::Ended);
        }
        self.stream
            .set_read_timeout(timeout(wait))
            .map_err(|e| HintError::new(self.describe(), e.to_string()))?;
        let mut buf = [0u8; 2048];
        match self.stream.read(&mut buf) {
            Ok(0) => {
                self.lines.flush();
                self.ended = true;
            }
            Ok(n) => self.lines.push(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(HintError::new(self.describe(), e.to_string())),
        }
        Ok(match self.lines.hints.pop_front() {
            Some(h) => SourcePoll::Hint(h),
            None if self.ended => SourcePoll::Ended,
            None => SourcePoll::Idle,
        })
    }

    fn take_malformed(&mut self) -> Vec<String> {
        std::mem::take(&mut self.lines.malformed)
    }

    fn describe(&self) -> String {
        format!("unix:{}", self.path)
    }
}

/// JSON lines in UDP datagrams: `udp:ADDR` binds `ADDR` and reads what
/// predictors send there (each datagram one or more whole lines).
#[derive(Debug)]
pub struct UdpSource {
    addr: std::net::SocketAddr,
    // The runtime crate's own socket for hints (clippy.toml bans sockets
    // in the sans-IO core, not in this I/O layer).
    #[allow(clippy::disallowed_types)]
    socket: std::net::UdpSocket,
    lines: Lines,
}

impl UdpSource {
    /// Bind `addr` (`127.0.0.1:7878`). The error names the address.
    #[allow(clippy::disallowed_types)]
    pub fn bind(addr: &str) -> Result<UdpSource, HintError> {
        let name = format!("udp:{addr}");
        let parsed: std::net::SocketAddr = addr
            .parse()
            .map_err(|_| HintError::new(&name, format!("{addr:?} is not an address (IP:PORT)")))?;
        let socket = std::net::UdpSocket::bind(parsed)
            .map_err(|e| HintError::new(&name, format!("cannot bind {parsed}: {e}")))?;
        let addr = socket
            .local_addr()
            .map_err(|e| HintError::new(&name, e.to_string()))?;
        Ok(UdpSource {
            addr,
            socket,
            lines: Lines::default(),
        })
    }

    /// The bound address (with the port the OS chose for port 0).
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.addr
    }
}

impl HintSource for UdpSource {
    fn next(&mut self, wait: Duration) -> Result<SourcePoll, HintError> {
        if let Some(h) = self.lines.hints.pop_front() {
            return Ok(SourcePoll::Hint(h));
        }
        self.socket
            .set_read_timeout(timeout(wait))
            .map_err(|e| HintError::new(self.describe(), e.to_string()))?;
        let mut buf = [0u8; 65536];
        match self.socket.recv(&mut buf) {
            Ok(n) => {
                self.lines.push(&buf[..n]);
                self.lines.flush();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(HintError::new(self.describe(), e.to_string())),
        }
        Ok(match self.lines.hints.pop_front() {
            Some(h) => SourcePoll::Hint(h),
            None => SourcePoll::Idle,
        })
    }

    fn take_malformed(&mut self) -> Vec<String> {
        std::mem::take(&mut self.lines.malformed)
    }

    fn describe(&self) -> String {
        format!("udp:{}", self.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn lines_parse_with_defaults_and_name_bad_keys() {
        let h = parse_line(
            r#"{"t_ms": 1733450000123.5, "kind": "outage", "duration_ms": 300, "confidence": 0.9}"#,
        )
        .expect("valid");
        assert_eq!(h.kind, HintKind::Outage);
        assert_eq!(
            h.starts_at_unix,
            Some(Duration::from_micros(1_733_450_000_123_500))
        );
        assert_eq!(h.duration, Some(Duration::from_millis(300)));
        assert_eq!(h.confidence, 0.9);
        let h = parse_line(r#"{"kind": "restored"}"#).expect("valid");
        assert_eq!(h, Hint::now(HintKind::Restored));
        let h = parse_line(r#"{"kind": "rate", "rate_bps": 12000000}"#).expect("valid");
        assert_eq!(h.rate_bps, Some(12_000_000));
        for (line, key) in [
            (r#"{"kind": "tsunami"}"#, "kind: unknown \"tsunami\""),
            (r#"{"duration_ms": 3}"#, "missing field `kind`"),
            (r#"{"kind": "outage", "t_ms": -1}"#, "t_ms"),
            (
                r#"{"kind": "outage", "duration_ms": "long"}"#,
                "invalid type",
            ),
            (r#"{"kind": "outage", "confidence": 1.5}"#, "confidence"),
            (r#"{"kind": "rate"}"#, "rate_bps: a rate hint needs it"),
            (r#"{"kind": "rate", "rate_bps": 0}"#, "rate_bps"),
            (
                r#"{"kind": "outage", "colour": "red"}"#,
                "unknown field `colour`",
            ),
            ("not json", "expected"),
        ] {
            let e = parse_line(line).expect_err(line);
            assert!(e.contains(key), "{line}: {e}");
        }
    }

    #[test]
    fn lines_split_across_reads_and_long_lines_are_rejected() {
        let mut l = Lines::default();
        l.push(b"{\"kind\": \"out");
        assert!(l.hints.is_empty());
        l.push(b"age\"}\n\n{\"kind\": \"handover\", \"duration_ms\": 20}\n{bad}\n");
        assert_eq!(l.hints.len(), 2);
        assert_eq!(l.hints[1].kind, HintKind::Handover);
        assert_eq!(l.malformed.len(), 1);
        assert!(l.malformed[0].starts_with("line 4:"), "{:?}", l.malformed);
        l.push(&vec![b'x'; MAX_LINE_BYTES + 10]);
        l.push(b"yyy\n{\"kind\": \"restored\"}\n");
        assert_eq!(l.hints.len(), 3, "the line after a long one is read");
        assert!(l.malformed[1].contains("longer than"), "{:?}", l.malformed);
        l.push(&[0xff, 0xfe, b'\n']);
        assert!(l.malformed[2].contains("not UTF-8"));
    }

    proptest::proptest! {
        /// Any bytes, cut anywhere: lines are parsed or rejected with a
        /// reason, never a panic, and the buffer stays bounded.
        #[test]
        fn arbitrary_bytes_never_panic(chunks in proptest::collection::vec(
            proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), 0..20)) {
            let mut l = Lines::default();
            for c in &chunks {
                l.push(c);
                proptest::prop_assert!(l.buf.len() <= MAX_LINE_BYTES + 300);
            }
            l.flush();
            for h in &l.hints {
                proptest::prop_assert!((0.0..=1.0).contains(&h.confidence));
            }
        }

        /// Well-formed objects with arbitrary numbers: accepted exactly
        /// when every value is in range.
        #[test]
        fn numbers_are_range_checked(t in -1e3f64..1e16, d in -10f64..1e6, c in -0.5f64..1.5) {
            let line = format!("{{\"kind\": \"outage\", \"t_ms\": {t}, \"duration_ms\": {d}, \"confidence\": {c}}}");
            let ok = t >= 0.0 && d >= 0.0 && (0.0..=1.0).contains(&c);
            proptest::prop_assert_eq!(parse_line(&line).is_ok(), ok, "{}", line);
        }
    }

    #[test]
    fn unix_and_udp_sources_read_what_a_writer_sends() {
        let dir = std::env::temp_dir().join(format!("pg-hints-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("h.sock");
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let mut src = UnixSource::connect(path.to_str().expect("utf-8")).expect("connect");
        let (mut w, _) = listener.accept().expect("accept");
        assert_eq!(
            src.next(Duration::from_millis(5)).expect("ok"),
            SourcePoll::Idle
        );
        w.write_all(b"{\"kind\": \"blockage\", \"duration_ms\": 150}\n{\"kind\": 7}\n")
            .expect("write");
        let got = src.next(Duration::from_secs(2)).expect("ok");
        assert!(matches!(got, SourcePoll::Hint(h) if h.kind == HintKind::Blockage));
        assert_eq!(src.take_malformed().len(), 1);
        drop(w);
        assert_eq!(
            src.next(Duration::from_secs(2)).expect("ok"),
            SourcePoll::Ended
        );
        let _ = std::fs::remove_dir_all(&dir);

        #[allow(clippy::disallowed_types)]
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        let mut src = UdpSource::bind("127.0.0.1:0").expect("bind");
        tx.send_to(
            b"{\"kind\": \"handover\"}\n{\"kind\": \"restored\"}",
            src.local_addr(),
        )
        .expect("send");
        let a = src.next(Duration::from_secs(2)).expect("ok");
        let b = src.next(Duration::from_secs(2)).expect("ok");
        assert!(matches!(a, SourcePoll::Hint(h) if h.kind == HintKind::Handover));
        assert!(matches!(b, SourcePoll::Hint(h) if h.kind == HintKind::Restored));
        assert!(UdpSource::bind("localhost").is_err());
    }
}
