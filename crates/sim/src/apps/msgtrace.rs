//! Message traces: `Delays,Data Length` CSV files such as
//! `../shared/traces/drone-mavlink/drone_processed.csv` (a drone's
//! MAVLink control traffic). Each row is the gap since the previous
//! message (with a `us` suffix) and the message size in bytes.

use std::path::Path;
use thiserror::Error;

/// A message trace that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MessageTraceError {
    /// The file could not be read.
    #[error("cannot read message trace: {0}")]
    Io(String),
    /// The header is not `Delays,Data Length`.
    #[error("line 1: expected the header \"Delays,Data Length\", found {0:?}")]
    Header(String),
    /// A row is malformed.
    #[error("line {line}: {problem}")]
    Row {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: String,
    },
}

/// The messages of a trace: (gap before it in ns, size in bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageTrace {
    messages: Vec<(u64, u32)>,
}

impl MessageTrace {
    /// Parse CSV text.
    pub fn parse(text: &str) -> Result<MessageTrace, MessageTraceError> {
        let mut lines = text.lines().enumerate();
        let header = lines.next().map(|(_, l)| l.trim()).unwrap_or("");
        let h: Vec<String> = header
            .split(',')
            .map(|s| s.trim().to_ascii_lowercase())
            .collect();
        if h != ["delays", "data length"] {
            return Err(MessageTraceError::Header(header.chars().take(60).collect()));
        }
        let mut messages = Vec::new();
        for (i, raw) in lines {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            let bad = |problem: String| MessageTraceError::Row {
                line: i + 1,
                problem,
            };
            let (d, s) = line
                .split_once(',')
                .ok_or_else(|| bad(format!("{line:?} is not `delay,size`")))?;
            let d = d.trim();
            let us = d
                .strip_suffix("us")
                .ok_or_else(|| bad(format!("delay {d:?} lacks the `us` suffix")))?
                .trim()
                .parse::<u64>()
                .map_err(|_| bad(format!("delay {d:?} is not a whole number of microseconds")))?;
            let size = s
                .trim()
                .parse::<u32>()
                .map_err(|_| bad(format!("size {:?} is not a byte count", s.trim())))?;
            if size > 1 << 20 {
                return Err(bad(format!("size {size} exceeds 1 MiB")));
            }
            messages.push((us.saturating_mul(1000), size));
        }
        Ok(MessageTrace { messages })
    }

    /// Read a CSV file.
    pub fn load(path: &Path) -> Result<MessageTrace, MessageTraceError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| MessageTraceError::Io(e.to_string()))?;
        MessageTrace::parse(&text)
    }

    /// (gap ns, size bytes) per message.
    pub fn messages(&self) -> &[(u64, u32)] {
        &self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_drone_format() {
        let t = MessageTrace::parse("Delays,Data Length\n0us,22\n1121us,21\n").expect("valid");
        assert_eq!(t.messages(), &[(0, 22), (1_121_000, 21)]);
    }

    #[test]
    fn errors_name_the_line() {
        let e = MessageTrace::parse("Delays,Data Length\n0us,22\n5ms,3\n").unwrap_err();
        assert_eq!(
            e,
            MessageTraceError::Row {
                line: 3,
                problem: "delay \"5ms\" lacks the `us` suffix".into()
            }
        );
        assert!(matches!(
            MessageTrace::parse("a,b\n"),
            Err(MessageTraceError::Header(_))
        ));
    }

    #[test]
    fn reads_the_real_drone_trace_if_present() {
        let rel = Path::new("shared/traces/drone-mavlink/drone_processed.csv");
        let Some(path) = crate::paths::find_upwards(Path::new(env!("CARGO_MANIFEST_DIR")), rel)
        else {
            eprintln!("skipping: ../shared/traces/drone-mavlink/drone_processed.csv not found beside the workspace");
            return;
        };
        let t = MessageTrace::load(&path).expect("the shared drone trace parses");
        assert_eq!(t.messages().len(), 163_478);
        assert!(t.messages().iter().all(|(_, s)| *s > 0));
    }
}
