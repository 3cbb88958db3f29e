//! Names and numbers fit for a paper (issue 27): a summary key such as
//! `/flows/0/goodput_bps` becomes the header `flow 0 goodput (Mbit/s)`
//! with its values scaled to Mbit/s; a mean and its confidence interval
//! are printed to the same precision (`4.325 ± 0.000`, never
//! `± 2.767e-12`); grid points are labelled by their values.

use crate::experiment::aggregate::format_significant;

/// How a summary key reads: a label, a unit and the factor from the
/// recorded value to that unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Readable {
    /// `flow 0 goodput`.
    pub name: String,
    /// `Mbit/s`, `ms`, `s`, `packets`, or empty.
    pub unit: &'static str,
    /// Multiply a recorded value by this to get `unit`.
    pub scale: f64,
}

impl Readable {
    /// `flow 0 goodput (Mbit/s)`, or the bare name without a unit.
    pub fn header(&self) -> String {
        if self.unit.is_empty() {
            self.name.clone()
        } else {
            format!("{} ({})", self.name, self.unit)
        }
    }
}

/// The readable form of a JSON-pointer key (`/flows/0/streams/1/latency/p95_ms`
/// → `flow 0 stream 1 latency p95 (ms)`). Keys of other shapes keep their
/// words with `/` and `_` as spaces. O(length of `key`).
pub fn readable(key: &str) -> Readable {
    let parts: Vec<&str> = key.split('/').filter(|p| !p.is_empty()).collect();
    let mut words: Vec<String> = Vec::new();
    let mut unit = "";
    let mut scale = 1.0;
    let mut i = 0;
    while i < parts.len() {
        let p = parts[i];
        let next_is_index = parts.get(i + 1).is_some_and(|n| n.parse::<u64>().is_ok());
        let singular = match p {
            "flows" => Some("flow"),
            "streams" => Some("stream"),
            "links" => Some("link"),
            "groups" => Some("group"),
            _ => None,
        };
        if let (Some(s), true) = (singular, next_is_index) {
            words.push(format!("{s} {}", parts[i + 1]));
            i += 2;
            continue;
        }
        let (stem, u, f) = split_unit(p);
        if !u.is_empty() {
            unit = u;
            scale = f;
        }
        if !stem.is_empty() {
            words.push(stem.replace('_', " "));
        }
        i += 1;
    }
    // Counts of packets carry no unit in their key; a rate of them is
    // per second (`/flows/0/drops/queue_per_s`).
    let counts_packets = key.ends_with("retransmissions") || key.contains("/drops/");
    if counts_packets && unit.is_empty() {
        unit = "packets";
    } else if counts_packets && unit == PER_S {
        unit = "packets/s";
    }
    Readable {
        name: if words.is_empty() {
            key.to_string()
        } else {
            words.join(" ")
        },
        unit,
        scale,
    }
}

/// The unit of a count per second whose key does not say what is counted.
const PER_S: &str = "1/s";

/// `goodput_bps` → (`goodput`, `Mbit/s`, 1e-6); `p95_ms` → (`p95`, `ms`, 1);
/// `queue_per_s` → (`queue`, `1/s`, 1), not a duration in seconds.
fn split_unit(word: &str) -> (&str, &'static str, f64) {
    // Rates first: `_per_s` also ends with `_s`, the suffix of seconds.
    const RATES: [(&str, &str, f64); 5] = [
        ("_bytes_per_s", "KiB/s", 1.0 / 1024.0),
        ("_bits_per_s", "Mbit/s", 1e-6),
        ("_mbps_per_s", "Mbit/s", 1.0),
        ("_bps_per_s", "Mbit/s", 1e-6),
        ("_per_s", PER_S, 1.0),
    ];
    for (suffix, unit, scale) in RATES {
        if let Some(stem) = word.strip_suffix(suffix) {
            return (stem, unit, scale);
        }
    }
    const UNITS: [(&str, &str, f64); 7] = [
        ("_bps", "Mbit/s", 1e-6),
        ("_mbps", "Mbit/s", 1.0),
        ("_ms", "ms", 1.0),
        ("_us", "ms", 1e-3),
        ("_ns", "ms", 1e-6),
        ("_s", "s", 1.0),
        ("_bytes", "KiB", 1.0 / 1024.0),
    ];
    for (suffix, unit, scale) in UNITS {
        if let Some(stem) = word.strip_suffix(suffix) {
            return (stem, unit, scale);
        }
    }
    match word {
        "delay_ms" | "ms" => ("", "ms", 1.0),
        _ => (word, "", 1.0),
    }
}

/// `mean ± ci` with four significant digits on the mean and the interval
/// rounded to the same decimal place (`4.325 ± 0.001`, `2575 ± 0`);
/// just the mean when there is no interval. O(1).
pub fn mean_ci(mean: f64, ci: Option<f64>) -> String {
    let Some(ci) = ci else {
        return format_significant(mean, 4);
    };
    if !mean.is_finite() || !ci.is_finite() {
        return format!("{mean} ± {ci}");
    }
    let decimals = decimals_for(mean);
    format!("{mean:.decimals$} ± {ci:.decimals$}")
}

/// Decimal places that show `x` with four significant digits (0 for
/// |x| ≥ 1000 or 0), at most 9.
pub fn decimals_for(x: f64) -> usize {
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    let before = x.abs().log10().floor() as i32 + 1;
    (4 - before).clamp(0, 9) as usize
}

/// A short tick label: at most four significant digits, no exponent
/// between 1e-3 and 1e6.
pub fn tick(x: f64) -> String {
    format_significant(x, 4)
}

/// The values of a grid point's overrides, one per grid key
/// (`flows.0.cc=bbr,links.0.rate=5Mbps` → `["bbr", "5Mbps"]`); the keys
/// belong on the axis label. O(label length).
pub fn grid_values(label: &str) -> Vec<String> {
    label
        .split(',')
        .map(|kv| kv.split_once('=').map_or(kv, |(_, v)| v).to_string())
        .collect()
}

/// The grid keys of a point label (`flows.0.cc=bbr,rate=5` → `["flows.0.cc", "rate"]`).
pub fn grid_keys(label: &str) -> Vec<String> {
    label
        .split(',')
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_as_words_with_units() {
        let r = readable("/flows/0/goodput_bps");
        assert_eq!(r.header(), "flow 0 goodput (Mbit/s)");
        assert_eq!(r.scale, 1e-6);
        assert_eq!(
            readable("/flows/0/streams/1/latency/p95_ms").header(),
            "flow 0 stream 1 latency p95 (ms)"
        );
        assert_eq!(
            readable("/flows/0/delay_ms/mean").header(),
            "flow 0 delay mean (ms)"
        );
        assert_eq!(
            readable("/flows/1/retransmissions").header(),
            "flow 1 retransmissions (packets)"
        );
        assert_eq!(readable("/goodput_mbps").header(), "goodput (Mbit/s)");
        assert_eq!(
            readable("/flows/0/completion_s").header(),
            "flow 0 completion (s)"
        );
    }

    #[test]
    fn rates_per_second_are_not_durations() {
        let r = readable("/flows/0/drops/queue_per_s");
        assert_eq!(r.header(), "flow 0 drops queue (packets/s)");
        assert_eq!(r.scale, 1.0);
        assert_eq!(
            readable("/flows/0/drops/queue").header(),
            "flow 0 drops queue (packets)"
        );
        let r = readable("/control_bytes_per_s");
        assert_eq!(r.header(), "control (KiB/s)");
        assert_eq!(r.scale, 1.0 / 1024.0);
        assert_eq!(
            readable("/throughput_mbps_per_s").header(),
            "throughput (Mbit/s)"
        );
        assert_eq!(readable("/events_per_s").header(), "events (1/s)");
        assert_eq!(readable("/rx_bits_per_s").scale, 1e-6);
        // A plain `_s` is still seconds.
        assert_eq!(readable("/duration_s").header(), "duration (s)");
    }

    #[test]
    fn intervals_take_the_means_precision() {
        assert_eq!(mean_ci(4.325376, Some(2.767e-12)), "4.325 ± 0.000");
        assert_eq!(mean_ci(2575.3, Some(12.44)), "2575 ± 12");
        assert_eq!(mean_ci(18.3412, Some(0.76181)), "18.34 ± 0.76");
        assert_eq!(mean_ci(0.012345, Some(0.0004)), "0.01235 ± 0.00040");
        assert_eq!(mean_ci(92.05, None), "92.05");
    }

    #[test]
    fn grid_points_are_their_values() {
        assert_eq!(
            grid_values("flows.0.cc=bbr,links.0.rate=5Mbps"),
            ["bbr", "5Mbps"]
        );
        assert_eq!(
            grid_keys("flows.0.cc=bbr,links.0.rate=5Mbps"),
            ["flows.0.cc", "links.0.rate"]
        );
    }
}
