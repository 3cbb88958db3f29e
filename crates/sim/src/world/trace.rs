//! Mahimahi capacity traces, read as `mm-link` reads them.
//!
//! Each line is a millisecond offset at which 1500 bytes may leave the
//! queue; a repeated line adds another opportunity in the same
//! millisecond. The trace loops with a period equal to its last
//! timestamp. Files may be plain or gzip-compressed (`.gz`). An
//! opportunity that finds the queue empty is wasted; bytes are accounted
//! per opportunity, so a packet larger than what is left of one
//! opportunity uses parts of several (see [`super::link`]).

use peregrine_cc::Time;
use std::io::Read;
use std::path::Path;
use thiserror::Error;

/// Bytes one delivery opportunity carries.
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// A trace that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TraceError {
    /// The file could not be read or decompressed.
    #[error("cannot read trace: {0}")]
    Io(String),
    /// A line is not a non-negative integer number of milliseconds.
    #[error("line {line}: {text:?} is not a millisecond timestamp")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// Timestamps must not decrease.
    #[error("line {line}: timestamp {ms} is below the previous one")]
    Decreasing {
        /// 1-based line number.
        line: usize,
        /// The timestamp.
        ms: u64,
    },
    /// No opportunity, or a last timestamp of 0 (no period to loop over).
    #[error("the trace is empty or its last timestamp is 0 (it cannot loop)")]
    Empty,
}

/// A parsed trace: opportunity times in ms within one period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MahimahiTrace {
    ms: Vec<u64>,
    period_ms: u64,
}

impl MahimahiTrace {
    /// Parse trace text (blank lines are skipped).
    pub fn parse(text: &str) -> Result<MahimahiTrace, TraceError> {
        let mut ms = Vec::new();
        let mut last = 0u64;
        for (i, raw) in text.lines().enumerate() {
            let t = raw.trim();
            if t.is_empty() {
                continue;
            }
            let v: u64 = t.parse().map_err(|_| TraceError::BadLine {
                line: i + 1,
                text: t.chars().take(40).collect(),
            })?;
            if v < last {
                return Err(TraceError::Decreasing { line: i + 1, ms: v });
            }
            last = v;
            ms.push(v);
        }
        if ms.is_empty() || last == 0 {
            return Err(TraceError::Empty);
        }
        Ok(MahimahiTrace {
            ms,
            period_ms: last,
        })
    }

    /// Read a plain or `.gz` trace file.
    pub fn load(path: &Path) -> Result<MahimahiTrace, TraceError> {
        let bytes = std::fs::read(path).map_err(|e| TraceError::Io(e.to_string()))?;
        let text = if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut s = String::new();
            flate2::read::GzDecoder::new(&bytes[..])
                .read_to_string(&mut s)
                .map_err(|e| TraceError::Io(format!("gzip: {e}")))?;
            s
        } else {
            String::from_utf8(bytes).map_err(|_| TraceError::Io("not UTF-8 text".to_string()))?
        };
        MahimahiTrace::parse(&text)
    }

    /// Opportunities per period.
    pub fn opportunities(&self) -> usize {
        self.ms.len()
    }

    /// The loop period, ms.
    pub fn period_ms(&self) -> u64 {
        self.period_ms
    }

    /// The mean capacity, bits per second.
    pub fn mean_rate_bps(&self) -> f64 {
        self.ms.len() as f64 * f64::from(OPPORTUNITY_BYTES) * 8.0 / (self.period_ms as f64 / 1000.0)
    }

    /// The instant of opportunity `k` (counting across loops, from the
    /// epoch), saturating. O(1).
    pub fn opportunity(&self, k: u64) -> Time {
        let n = self.ms.len() as u64;
        let ms = (k / n)
            .saturating_mul(self.period_ms)
            .saturating_add(self.ms[(k % n) as usize]);
        Time::from_millis(ms)
    }

    /// The index of the first opportunity at or after `t`. O(log
    /// opportunities per period).
    pub fn first_at_or_after(&self, t: Time) -> u64 {
        let n = self.ms.len() as u64;
        // Opportunity times are whole milliseconds: the first at or after
        // t is the first at or after ceil(t / 1 ms).
        let t_ms = t.as_nanos().div_ceil(1_000_000);
        let cycle = t_ms / self.period_ms;
        let within = t_ms % self.period_ms;
        let i = self.ms.partition_point(|&m| m < within) as u64;
        cycle * n + i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_repeats_and_loops() {
        let t = MahimahiTrace::parse("1\n1\n3\n\n4\n").expect("valid trace");
        assert_eq!(t.opportunities(), 4);
        assert_eq!(t.period_ms(), 4);
        let ms = Time::from_millis;
        assert_eq!(t.opportunity(0), ms(1));
        assert_eq!(t.opportunity(1), ms(1));
        assert_eq!(t.opportunity(3), ms(4));
        // Second loop: offsets + 4 ms.
        assert_eq!(t.opportunity(4), ms(5));
        assert_eq!(t.opportunity(7), ms(8));
        assert_eq!(t.first_at_or_after(Time::ZERO), 0);
        assert_eq!(t.first_at_or_after(ms(1)), 0);
        assert_eq!(t.first_at_or_after(Time::from_nanos(1_000_001)), 2);
        assert_eq!(t.first_at_or_after(Time::from_micros(4_500)), 4);
        // 4 opportunities of 1500 B per 4 ms = 12 Mbit/s.
        assert!((t.mean_rate_bps() - 12e6).abs() < 1.0);
    }

    #[test]
    fn rejects_bad_traces_with_the_line() {
        assert_eq!(
            MahimahiTrace::parse("1\nx\n"),
            Err(TraceError::BadLine {
                line: 2,
                text: "x".into()
            })
        );
        assert_eq!(
            MahimahiTrace::parse("5\n3\n"),
            Err(TraceError::Decreasing { line: 2, ms: 3 })
        );
        assert_eq!(MahimahiTrace::parse(""), Err(TraceError::Empty));
        assert_eq!(MahimahiTrace::parse("0\n0\n"), Err(TraceError::Empty));
    }

    #[test]
    fn reads_gzip() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"2\n4\n").expect("in-memory write");
        let gz = enc.finish().expect("in-memory gzip");
        let dir = std::env::temp_dir().join(format!("peregrine-sim-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let f = dir.join("t.mm.gz");
        std::fs::write(&f, gz).expect("temp file");
        let t = MahimahiTrace::load(&f).expect("gzip trace loads");
        assert_eq!(t.opportunities(), 2);
        assert_eq!(t.period_ms(), 4);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod real_traces {
    use super::*;

    #[test]
    fn reads_a_real_gzip_lumos5g_trace_if_present() {
        let rel = Path::new("shared/traces/lumos5g/mahimahi_gz/5g_trace_104_driving.mm.gz");
        let Some(p) = crate::paths::find_upwards(Path::new(env!("CARGO_MANIFEST_DIR")), rel) else {
            eprintln!("skipping: ../shared/traces/lumos5g not found beside the workspace");
            return;
        };
        let t = MahimahiTrace::load(&p).expect("the shared .mm.gz trace parses");
        // The trace README: 226 s, mean 111.1 Mbit/s.
        let mean_mbps = t.mean_rate_bps() / 1e6;
        assert!((mean_mbps - 111.1).abs() < 2.0, "mean {mean_mbps} Mbit/s");
        assert!(
            (t.period_ms() as f64 / 1000.0 - 226.0).abs() < 1.5,
            "period {} ms",
            t.period_ms()
        );
    }
}
