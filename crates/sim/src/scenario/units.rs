//! Units in scenario files: durations (`"100s"`, `"20ms"`, `"1.5s"`,
//! `"250us"`, or a bare number of seconds) and rates (`"5Mbps"`,
//! `"1Gbit/s"`, `"64kbps"`, or a bare number of bits per second).
//!
//! Both parse into integers (nanoseconds, bits per second) so that the
//! engine never carries a float time; the parse is exact for decimal
//! inputs up to nanosecond / bit resolution.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A duration in a scenario file, held as nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub u64);

/// A bit rate in a scenario file, held as bits per second.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate(pub u64);

/// Split `text` into its number and its unit suffix.
fn split_unit(text: &str) -> (&str, &str) {
    let t = text.trim();
    let i = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    (t[..i].trim(), t[i..].trim())
}

/// `number × scale`, exactly, for a decimal `number` (no exponent).
fn scaled(number: &str, scale: u64) -> Option<u64> {
    let number = number.replace('_', "");
    let (int, frac) = number.split_once('.').unwrap_or((&number, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let int: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut total = int.checked_mul(scale)?;
    let mut unit = scale;
    for d in frac.chars() {
        let digit = u64::from(d.to_digit(10)?);
        unit /= 10;
        total = total.checked_add(digit.checked_mul(unit)?)?;
    }
    Some(total)
}

/// Parse a duration such as `100s`, `20ms`, `1.5s`, `250us`, `10ns`, `2min`.
pub fn parse_duration(text: &str) -> Result<Dur, String> {
    let (num, unit) = split_unit(text);
    let scale = match unit {
        "" | "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "us" | "µs" => 1_000,
        "ns" => 1,
        "min" => 60_000_000_000,
        other => {
            return Err(format!(
                "unknown duration unit {other:?} in {text:?} (allowed: s, ms, us, ns, min)"
            ))
        }
    };
    scaled(num, scale)
        .map(Dur)
        .ok_or_else(|| format!("{text:?} is not a duration (e.g. \"100s\", \"20ms\")"))
}

/// Parse a rate such as `5Mbps`, `1Gbit/s`, `64kbps`, `1500bps`.
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let (num, unit) = split_unit(text);
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "bps" | "bit/s" => 1,
        "kbps" | "kbit/s" => 1_000,
        "mbps" | "mbit/s" => 1_000_000,
        "gbps" | "gbit/s" => 1_000_000_000,
        other => {
            return Err(format!(
                "unknown rate unit {other:?} in {text:?} (allowed: bps, kbps, Mbps, Gbps or bit/s forms)"
            ))
        }
    };
    scaled(num, scale)
        .map(Rate)
        .ok_or_else(|| format!("{text:?} is not a rate (e.g. \"5Mbps\", \"1Gbit/s\")"))
}

/// A string or a number, as TOML gives either.
#[derive(Deserialize)]
#[serde(untagged)]
enum StrOrNum {
    Str(String),
    Int(i64),
    Float(f64),
}

impl StrOrNum {
    fn text(self) -> Result<String, String> {
        match self {
            StrOrNum::Str(s) => Ok(s),
            StrOrNum::Int(i) if i >= 0 => Ok(i.to_string()),
            StrOrNum::Float(f) if f >= 0.0 && f.is_finite() => Ok(format!("{f}")),
            _ => Err("must not be negative".to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = StrOrNum::deserialize(d)?;
        v.text()
            .and_then(|t| parse_duration(&t))
            .map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = StrOrNum::deserialize(d)?;
        v.text()
            .and_then(|t| parse_rate(&t))
            .map_err(serde::de::Error::custom)
    }
}

impl Dur {
    /// `s` seconds, to the nearest nanosecond (exact for decimal inputs
    /// of up to 9 decimals below about 9 × 10⁶ s). O(1).
    pub fn from_secs_f64(s: f64) -> Dur {
        Dur((s * 1e9).round() as u64)
    }

    /// `ms` milliseconds. O(1).
    pub fn from_millis(ms: u64) -> Dur {
        Dur(ms.saturating_mul(1_000_000))
    }
}

impl Rate {
    /// `mbps` Mbit/s. O(1).
    pub fn from_mbps(mbps: u64) -> Rate {
        Rate(mbps.saturating_mul(1_000_000))
    }
}

/// Written as `"<n>ns"`, which reads back exactly.
impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}ns", self.0))
    }
}

/// Written as `"<n>bps"`, which reads back exactly (a TOML integer could
/// not hold every `u64`).
impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}bps", self.0))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.0 as f64 / 1e9)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}bps", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly() {
        assert_eq!(parse_duration("100s"), Ok(Dur(100_000_000_000)));
        assert_eq!(parse_duration("20ms"), Ok(Dur(20_000_000)));
        assert_eq!(parse_duration("1.5s"), Ok(Dur(1_500_000_000)));
        assert_eq!(parse_duration("250us"), Ok(Dur(250_000)));
        assert_eq!(parse_duration("0.1"), Ok(Dur(100_000_000)));
        assert_eq!(parse_duration("2min"), Ok(Dur(120_000_000_000)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn rates_parse_exactly() {
        assert_eq!(parse_rate("5Mbps"), Ok(Rate(5_000_000)));
        assert_eq!(parse_rate("1Gbit/s"), Ok(Rate(1_000_000_000)));
        assert_eq!(parse_rate("1.5 Mbps"), Ok(Rate(1_500_000)));
        assert_eq!(parse_rate("64kbps"), Ok(Rate(64_000)));
        assert_eq!(parse_rate("1200"), Ok(Rate(1200)));
        assert!(parse_rate("5 furlongs").is_err());
    }

    #[test]
    fn numbers_in_toml_are_seconds_and_bits_per_second() {
        #[derive(Deserialize)]
        struct T {
            d: Dur,
            r: Rate,
        }
        let t: T = toml::from_str("d = 2\nr = 5000000").expect("valid document");
        assert_eq!(t.d, Dur(2_000_000_000));
        assert_eq!(t.r, Rate(5_000_000));
        let t: T = toml::from_str("d = 0.25\nr = \"5Mbps\"").expect("valid document");
        assert_eq!(t.d, Dur(250_000_000));
    }

    #[test]
    fn durations_and_rates_write_what_reads_back() {
        for ns in [0, 1, 20_000_000, u64::MAX] {
            let text = serde_json::to_string(&Dur(ns)).expect("serializes");
            let back = parse_duration(text.trim_matches('"')).expect("parses");
            assert_eq!(back, Dur(ns));
        }
        for bps in [1, 5_000_000, u64::MAX] {
            let text = serde_json::to_string(&Rate(bps)).expect("serializes");
            assert_eq!(parse_rate(text.trim_matches('"')), Ok(Rate(bps)));
        }
        assert_eq!(Dur::from_secs_f64(0.1), Dur(100_000_000));
        assert_eq!(Dur::from_secs_f64(30.0), Dur(30_000_000_000));
        assert_eq!(Dur::from_millis(20), Dur(20_000_000));
        assert_eq!(Rate::from_mbps(50), Rate(50_000_000));
    }
}
