//! Units in scenario files: durations (`"100s"`, `"20ms"`, `"1.5s"`,
//! `"250us"`) and rates (`"5Mbps"`, `"1Gbit/s"`, `"64kbps"`).
//!
//! In a scenario a duration or a rate must carry its unit: `rate = 5` or
//! `delay = "20"` is an error (`write a unit, e.g. "5Mbps"`), because a
//! bare number silently meant 5 bit/s or 20 s (issue 27). Zero is the one
//! bare number allowed (it is zero in every unit). Negative values are
//! errors that say so. [`parse_duration`] and [`parse_rate`] themselves
//! still read a bare number as seconds / bit/s for command-line callers
//! that document it (`peregrine emu`).
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

/// `Err` naming the sign when `text` is a negative number.
fn reject_negative(text: &str, what: &str) -> Result<(), String> {
    if text.trim_start().starts_with('-') {
        Err(format!(
            "{text:?} is negative: a {what} must be zero or more"
        ))
    } else {
        Ok(())
    }
}

/// Parse a duration such as `100s`, `20ms`, `1.5s`, `250us`, `10ns`, `2min`
/// (a bare number is seconds). O(length of `text`).
pub fn parse_duration(text: &str) -> Result<Dur, String> {
    reject_negative(text, "duration")?;
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

/// Parse a rate such as `5Mbps`, `1Gbit/s`, `64kbps`, `1500bps` (a bare
/// number is bit/s). O(length of `text`).
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    reject_negative(text, "rate")?;
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
    /// The text to parse, or the error for a negative or unit-less value.
    /// `example_unit` completes the suggestion (`"5Mbps"`); `what` names
    /// the kind of value in the sign error.
    fn text(self, example_unit: &str, what: &str) -> Result<String, String> {
        let number = match self {
            StrOrNum::Str(s) => {
                reject_negative(&s, what)?;
                let (num, unit) = split_unit(&s);
                if !unit.is_empty() || num.is_empty() {
                    return Ok(s);
                }
                num.to_string()
            }
            StrOrNum::Int(i) => i.to_string(),
            StrOrNum::Float(f) if f.is_finite() => format!("{f}"),
            StrOrNum::Float(f) => return Err(format!("{f} is not a {what}")),
        };
        reject_negative(&number, what)?;
        if number.trim_matches(['0', '.', '_']).is_empty() {
            return Ok(number);
        }
        // A large bare rate is most likely bit/s: suggest that, not
        // "50000000Mbps".
        let unit = if example_unit == "Mbps" && number.len() > 4 {
            "bps"
        } else {
            example_unit
        };
        Err(format!("write a unit, e.g. \"{number}{unit}\""))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = StrOrNum::deserialize(d)?;
        v.text("ms", "duration")
            .and_then(|t| parse_duration(&t))
            .map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = StrOrNum::deserialize(d)?;
        v.text("Mbps", "rate")
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

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)] // read through Debug in failures only
    struct T {
        d: Dur,
        r: Rate,
    }

    fn read(doc: &str) -> Result<T, String> {
        toml::from_str::<T>(doc).map_err(|e| e.message().to_string())
    }

    #[test]
    fn bare_numbers_in_a_scenario_must_carry_a_unit() {
        assert_eq!(
            read("d = \"2s\"\nr = 5").unwrap_err(),
            "write a unit, e.g. \"5Mbps\""
        );
        assert_eq!(
            read("d = 20\nr = \"5Mbps\"").unwrap_err(),
            "write a unit, e.g. \"20ms\""
        );
        assert_eq!(
            read("d = 0.25\nr = \"5Mbps\"").unwrap_err(),
            "write a unit, e.g. \"0.25ms\""
        );
        assert_eq!(
            read("d = \"1\"\nr = \"5Mbps\"").unwrap_err(),
            "write a unit, e.g. \"1ms\""
        );
        assert_eq!(
            read("d = \"2s\"\nr = \"1200\"").unwrap_err(),
            "write a unit, e.g. \"1200Mbps\""
        );
        // Zero is zero in every unit.
        let t = read("d = 0\nr = 0.0").expect("zero needs no unit");
        assert_eq!((t.d, t.r), (Dur(0), Rate(0)));
        let t = read("d = \"250ms\"\nr = \"5Mbps\"").expect("units");
        assert_eq!((t.d, t.r), (Dur(250_000_000), Rate(5_000_000)));
    }

    #[test]
    fn negative_values_name_the_sign() {
        assert_eq!(
            read("d = \"-20ms\"\nr = 0").unwrap_err(),
            "\"-20ms\" is negative: a duration must be zero or more"
        );
        assert_eq!(
            read("d = -3\nr = 0").unwrap_err(),
            "\"-3\" is negative: a duration must be zero or more"
        );
        assert_eq!(
            read("d = 0\nr = \"-5Mbps\"").unwrap_err(),
            "\"-5Mbps\" is negative: a rate must be zero or more"
        );
        assert_eq!(
            parse_duration("-1s").unwrap_err(),
            "\"-1s\" is negative: a duration must be zero or more"
        );
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
