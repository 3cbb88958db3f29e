//! Parsing of `peregrine perf` arguments and latency traces; every error
//! names the bad flag or trace line.

use anyhow::{anyhow, bail, Result};
use peregrine::SchedulerConfig;
use std::time::Duration;

/// A duration above zero (`--queue-guard`). O(len).
pub(super) fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("`{s}` must be above zero")),
        d => Ok(d),
    }
}

pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1e-9)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (like 10s, 250ms, 123us)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{s}` is not a non-negative duration"));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

/// `--bitrate RATE`: a rate in the scenario files' units (`100Mbps`,
/// `1.5Gbps`, `500kbps`, `1Gbit/s`, or bits per second), above zero.
pub(super) fn parse_bitrate(s: &str) -> Result<u64, String> {
    match peregrine_sim::scenario::units::parse_rate(s) {
        Ok(r) if r.0 > 0 => Ok(r.0),
        Ok(_) => Err(format!("`{s}` is not above zero")),
        Err(e) => Err(e),
    }
}

/// `--scheduler NAME[:ARG]`, any scheduler of the registry
/// (`peregrine::sched::registry`); ARG in the units `--help` names.
pub(super) fn parse_scheduler(s: &str) -> Result<SchedulerConfig> {
    use peregrine_proto::sched::registry;
    let (name, arg) = s.split_once(':').unwrap_or((s, ""));
    let Some(entry) = registry::scheduler(name) else {
        bail!("--scheduler: unknown `{name}` ({})", registry::cli_syntax());
    };
    let param = match entry.param {
        Some(unit) if !arg.is_empty() => arg
            .parse()
            .ok()
            .and_then(|n| unit.from_cli(n))
            .ok_or_else(|| anyhow!("--scheduler {s}: `{arg}` is not a number"))?,
        _ => entry.default_param,
    };
    SchedulerConfig::from_name(name, param).map_err(|e| anyhow!("--scheduler: {e}"))
}

/// One message of a latency trace: wait `delay` after the previous one,
/// then send `len` bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct TraceMessage {
    pub(super) delay: Duration,
    pub(super) len: usize,
}

/// Parse a `Delays,Data Length` trace; errors name the line.
pub(super) fn parse_trace(text: &str) -> Result<Vec<TraceMessage>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || (i == 0 && line.starts_with("Delays")) {
            continue;
        }
        let (d, l) = line
            .split_once(',')
            .ok_or_else(|| anyhow!("trace line {}: expected `delay,length`", i + 1))?;
        let delay = parse_duration(d).map_err(|e| anyhow!("trace line {}: delay: {e}", i + 1))?;
        let len: usize = l.trim().parse().map_err(|_| {
            anyhow!(
                "trace line {}: length `{}` is not a number",
                i + 1,
                l.trim()
            )
        })?;
        out.push(TraceMessage { delay, len });
    }
    if out.is_empty() {
        bail!("the trace has no messages");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_traces_parse_and_errors_name_the_line() {
        assert_eq!(parse_duration("123us"), Ok(Duration::from_micros(123)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("fast").is_err());
        let t = parse_trace("Delays,Data Length\n0us,22\n1121us,21\n").unwrap();
        assert_eq!(
            t,
            vec![
                TraceMessage {
                    delay: Duration::ZERO,
                    len: 22
                },
                TraceMessage {
                    delay: Duration::from_micros(1121),
                    len: 21
                }
            ]
        );
        let e = parse_trace("Delays,Data Length\n0us,22\n5us,x\n").unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
        assert!(parse_trace("Delays,Data Length\n").is_err());
    }

    #[test]
    fn bitrates_parse_in_scenario_units_and_zero_is_refused() {
        assert_eq!(parse_bitrate("100Mbps"), Ok(100_000_000));
        assert_eq!(parse_bitrate("1.5Gbps"), Ok(1_500_000_000));
        assert_eq!(parse_bitrate("500kbps"), Ok(500_000));
        assert_eq!(parse_bitrate("64000"), Ok(64_000));
        assert!(parse_bitrate("0Mbps").unwrap_err().contains("above zero"));
        assert!(parse_bitrate("fast").is_err());
        assert!(parse_bitrate("10MB/s").is_err());
    }

    #[test]
    fn queue_guard_delays_must_be_above_zero() {
        assert_eq!(
            parse_positive_duration("10ms").unwrap(),
            Duration::from_millis(10)
        );
        assert!(parse_positive_duration("0ms")
            .unwrap_err()
            .contains("above zero"));
        assert!(parse_positive_duration("ten").is_err());
    }

    #[test]
    fn schedulers_parse_with_arguments() {
        assert_eq!(parse_scheduler("abs").unwrap(), SchedulerConfig::Abs);
        assert_eq!(
            parse_scheduler("adaptive:5000000").unwrap(),
            SchedulerConfig::Adaptive {
                target_bps: 5_000_000
            }
        );
        assert_eq!(
            parse_scheduler("aging:50").unwrap(),
            SchedulerConfig::Aging {
                bound: Duration::from_millis(50)
            }
        );
        assert!(parse_scheduler("fifo").is_err());
    }
}
