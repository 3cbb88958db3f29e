//! `file:CSV`: replay a hint trace live, so a recorded drive (or a
//! simulator run's hints) feeds a real connection.
//!
//! The trace is CSV with a header naming its columns — the JSON keys of
//! [`super::json`], in any order, `t_ms` and `kind` required:
//!
//! ```text
//! # a drive past two blockers
//! t_ms,kind,duration_ms,rate_bps,confidence
//! 5000,outage,300,,
//! 9800,handover,20,,0.8
//! 12000,rate,,8000000,
//! ```
//!
//! `t_ms` is the time since the start of the replay (when the source is
//! opened), in non-decreasing order; an empty cell is an absent key; lines
//! starting with `#` and blank lines are skipped. The whole file is
//! checked when it is opened: an error names the line and the column.
//! Each row is handed to the pump [`LOOKAHEAD`] before its time, so the
//! pump delivers it at its time exactly (the replay is paced by the pump's
//! clock, not by the file's reading).

use super::{unix_now, Hint, HintError, HintSource, SourcePoll};
use std::collections::VecDeque;
use std::time::Duration;

/// How far ahead of its time a row is handed to the pump.
pub const LOOKAHEAD: Duration = Duration::from_millis(500);

/// A hint trace being replayed.
#[derive(Debug)]
pub struct CsvReplay {
    path: String,
    /// (time since the start, hint without its start).
    rows: VecDeque<(Duration, Hint)>,
    /// The replay's time 0, Unix time.
    start_unix: Duration,
}

/// Parse a hint trace; errors name the line and the column. O(bytes).
pub fn parse(text: &str) -> Result<Vec<(Duration, Hint)>, String> {
    let mut header: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    let mut last = Duration::ZERO;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let Some(cols) = &header else {
            let cols: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
            for c in &cols {
                if !["t_ms", "kind", "duration_ms", "rate_bps", "confidence"].contains(&c.as_str())
                {
                    return Err(format!(
                        "line {n}: unknown column {c:?} (expected t_ms, kind, duration_ms, rate_bps, confidence)"
                    ));
                }
            }
            for need in ["t_ms", "kind"] {
                if !cols.iter().any(|c| c == need) {
                    return Err(format!("line {n}: the header has no {need} column"));
                }
            }
            header = Some(cols);
            continue;
        };
        if cells.len() != cols.len() {
            return Err(format!(
                "line {n}: {} cells, the header has {}",
                cells.len(),
                cols.len()
            ));
        }
        // The row as a JSON object, so both formats share one checker.
        let mut obj = serde_json::Map::new();
        for (c, v) in cols.iter().zip(&cells) {
            if v.is_empty() {
                continue;
            }
            let value = if c == "kind" {
                serde_json::Value::String(v.to_string())
            } else {
                let x: f64 = v
                    .parse()
                    .map_err(|_| format!("line {n}: {c}: {v:?} is not a number"))?;
                serde_json::json!(x)
            };
            obj.insert(c.clone(), value);
        }
        let t = obj
            .remove("t_ms")
            .and_then(|v| v.as_f64())
            .ok_or_else(|| format!("line {n}: t_ms: empty"))?;
        if !t.is_finite() || t < 0.0 {
            return Err(format!("line {n}: t_ms: {t} is not a time ≥ 0"));
        }
        let at = Duration::from_secs_f64(t / 1e3);
        if at < last {
            return Err(format!(
                "line {n}: t_ms: {t} is before the row above (times must not decrease)"
            ));
        }
        last = at;
        let hint = super::json::parse_line(&serde_json::Value::Object(obj).to_string())
            .map_err(|e| format!("line {n}: {e}"))?;
        rows.push((at, hint));
    }
    if header.is_none() {
        return Err("no header line (t_ms,kind,…)".to_string());
    }
    Ok(rows)
}

impl CsvReplay {
    /// Read and check the trace at `path`; the replay starts now.
    pub fn open(path: &str) -> Result<CsvReplay, HintError> {
        let name = format!("file:{path}");
        let text = std::fs::read_to_string(path)
            .map_err(|e| HintError::new(&name, format!("cannot read {path}: {e}")))?;
        let rows = parse(&text).map_err(|e| HintError::new(&name, format!("{path}: {e}")))?;
        Ok(CsvReplay {
            path: path.to_string(),
            rows: rows.into(),
            start_unix: unix_now(),
        })
    }

    /// Rows not yet handed out.
    pub fn remaining(&self) -> usize {
        self.rows.len()
    }
}

impl HintSource for CsvReplay {
    fn next(&mut self, wait: Duration) -> Result<SourcePoll, HintError> {
        let Some((at, _)) = self.rows.front() else {
            return Ok(SourcePoll::Ended);
        };
        let due = self.start_unix + *at;
        let hand_over = due.saturating_sub(LOOKAHEAD);
        let now = unix_now();
        if now < hand_over {
            std::thread::sleep(wait.min(hand_over - now));
            if unix_now() < hand_over {
                return Ok(SourcePoll::Idle);
            }
        }
        let Some((at, mut hint)) = self.rows.pop_front() else {
            return Ok(SourcePoll::Ended);
        };
        hint.starts_at_unix = Some(self.start_unix + at);
        Ok(SourcePoll::Hint(hint))
    }

    fn describe(&self) -> String {
        format!("file:{}", self.path)
    }
}

/// Write `hints` as a trace [`parse`] reads (times since `start_unix`;
/// hints without a start are at 0). O(hints).
pub fn to_csv(hints: &[Hint], start_unix: Duration) -> String {
    let mut out = String::from("t_ms,kind,duration_ms,rate_bps,confidence\n");
    for h in hints {
        let t = h
            .starts_at_unix
            .map_or(0.0, |s| s.saturating_sub(start_unix).as_secs_f64() * 1e3);
        let d = h
            .duration
            .map_or(String::new(), |d| format!("{}", d.as_secs_f64() * 1e3));
        let r = h.rate_bps.map_or(String::new(), |r| r.to_string());
        out.push_str(&format!("{t},{},{d},{r},{}\n", h.kind.name(), h.confidence));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_parse_and_errors_name_line_and_column() {
        let rows = parse(
            "# a drive\nt_ms,kind,duration_ms,rate_bps,confidence\n5000,outage,300,,\n\n9800,handover,20,,0.8\n12000,rate,,8000000,\n",
        )
        .expect("valid");
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].0, Duration::from_secs(5));
        assert_eq!(rows[0].1.duration, Some(Duration::from_millis(300)));
        assert_eq!(rows[1].1.confidence, 0.8);
        assert_eq!(rows[2].1.rate_bps, Some(8_000_000));
        // Columns in another order, some left out.
        let rows = parse("kind,t_ms\nrestored,1.5\n").expect("valid");
        assert_eq!(rows[0].0, Duration::from_micros(1500));
        for (text, want) in [
            ("t_ms,kind,speed\n", "line 1: unknown column \"speed\""),
            ("t_ms,duration_ms\n", "no kind column"),
            ("t_ms,kind\n1,outage,3\n", "line 2: 3 cells"),
            ("t_ms,kind\nsoon,outage\n", "line 2: t_ms: \"soon\""),
            (
                "t_ms,kind\n5,outage\n4,outage\n",
                "line 3: t_ms: 4 is before",
            ),
            ("t_ms,kind\n5,tsunami\n", "line 2: kind: unknown"),
            ("t_ms,kind,confidence\n5,outage,2\n", "line 2: confidence"),
            ("# nothing\n", "no header"),
        ] {
            let e = parse(text).expect_err(text);
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_replay_hands_rows_out_at_their_times_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("pg-hints-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("t.csv");
        std::fs::write(&p, "t_ms,kind,duration_ms\n0,outage,100\n1200,restored,\n").expect("w");
        let mut r = CsvReplay::open(p.to_str().expect("utf-8")).expect("open");
        let start = r.start_unix;
        let SourcePoll::Hint(a) = r.next(Duration::from_millis(10)).expect("ok") else {
            panic!("the first row is due at once");
        };
        assert_eq!(a.starts_at_unix, Some(start));
        // The second is 1.2 s out: not handed over within a 10 ms wait.
        assert_eq!(
            r.next(Duration::from_millis(10)).expect("ok"),
            SourcePoll::Idle
        );
        assert_eq!(r.remaining(), 1);
        let text = to_csv(std::slice::from_ref(&a), start);
        let back = parse(&text).expect("own output parses");
        assert_eq!(back[0].1.kind, a.kind);
        assert_eq!(back[0].1.duration, a.duration);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(CsvReplay::open("/nonexistent/t.csv")
            .expect_err("refused")
            .to_string()
            .contains("cannot read /nonexistent/t.csv"));
    }
}
