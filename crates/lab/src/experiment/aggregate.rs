//! Aggregation of a sweep: per grid point, statistics of every numeric
//! leaf of the run summaries.
//!
//! A leaf is named by its JSON pointer (RFC 6901: `/flows/0/goodput_bps`,
//! with `~` and `/` in names escaped as `~0` and `~1`). Keys are listed in
//! order of first appearance over all runs in (point, seed) order, so
//! every point lists its keys in the same order; a key missing from some
//! runs is summarized over the runs that have it (its `n` says how many).
//! Booleans, strings and nulls are not aggregated.
//!
//! Outputs are byte-deterministic: the CSV formats numbers with
//! [`format_number`] (9 significant digits, trailing zeros trimmed,
//! scientific notation outside 1e-4 ..< 1e15), and the JSON is serialized
//! from structs (field order fixed whatever `serde_json`'s map features).

use super::runner::SweepOutcome;
use super::spec::value_label;
use super::stats::Summary;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Statistics of one key at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyStats {
    /// JSON pointer of the leaf.
    pub key: String,
    /// Its statistics over the point's runs.
    pub summary: Summary,
}

/// Statistics of one grid point.
#[derive(Debug, Clone, PartialEq)]
pub struct PointStats {
    /// The point's label.
    pub label: String,
    /// The point's overrides, in grid order.
    pub overrides: Vec<(String, toml::Value)>,
    /// One entry per numeric key, in the aggregate's key order.
    pub keys: Vec<KeyStats>,
}

impl PointStats {
    /// The statistics of `key` (a JSON pointer) at this point.
    pub fn get(&self, key: &str) -> Option<&Summary> {
        self.keys.iter().find(|k| k.key == key).map(|k| &k.summary)
    }
}

/// A whole sweep's statistics, point by point in grid order.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// Seed of every point's first run.
    pub base_seed: u64,
    /// Runs per point.
    pub seeds: u32,
    /// Every numeric key, in order of first appearance.
    pub keys: Vec<String>,
    /// Per-point statistics.
    pub points: Vec<PointStats>,
}

/// Aggregate every numeric leaf of `outcome`'s summaries per point.
pub fn aggregate(outcome: &SweepOutcome) -> Aggregate {
    let mut order: Vec<String> = Vec::new();
    let mut known: BTreeMap<String, usize> = BTreeMap::new();
    let mut points = Vec::with_capacity(outcome.points.len());
    for (point, runs) in outcome.points.iter().zip(&outcome.runs) {
        let mut values: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for summary in runs {
            let mut leaves = Vec::new();
            numeric_leaves(summary, &mut String::new(), &mut leaves);
            for (key, v) in leaves {
                let id = *known.entry(key.clone()).or_insert_with(|| {
                    order.push(key);
                    order.len() - 1
                });
                values.entry(id).or_default().push(v);
            }
        }
        let keys = values
            .into_iter()
            .filter_map(|(id, vs)| {
                Summary::of(&vs).map(|summary| KeyStats {
                    key: order[id].clone(),
                    summary,
                })
            })
            .collect();
        points.push(PointStats {
            label: point.label.clone(),
            overrides: point.overrides.clone(),
            keys,
        });
    }
    Aggregate {
        base_seed: outcome.base_seed,
        seeds: outcome.spec.seeds,
        keys: order,
        points,
    }
}

/// Collect `(pointer, value)` for every number under `v`, in document order.
fn numeric_leaves(v: &serde_json::Value, path: &mut String, out: &mut Vec<(String, f64)>) {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.push((path.clone(), x));
            }
        }
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                let _ = write!(path, "/{i}");
                numeric_leaves(item, path, out);
                path.truncate(len);
            }
        }
        serde_json::Value::Object(map) => {
            for (name, item) in map {
                let len = path.len();
                path.push('/');
                path.push_str(&name.replace('~', "~0").replace('/', "~1"));
                numeric_leaves(item, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Format a number for CSV and tables: 9 significant digits, trailing
/// zeros trimmed (`5.5`, `1000000`, `0.000123`), scientific notation
/// outside 1e-4 ..< 1e15 (`1.5e-7`); `0` for ±0; `NaN`/`inf`/`-inf` for
/// non-finite values.
pub fn format_number(x: f64) -> String {
    format_significant(x, 9)
}

/// Format `x` with `digits` (1 ..= 17) significant digits, as
/// [`format_number`] does with 9 (the integer part of a large number is
/// always printed whole).
pub fn format_significant(x: f64, digits: u32) -> String {
    let digits = digits.clamp(1, 17) as i32;
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return x.to_string();
    }
    let mag = x.abs();
    if !(1e-4..1e15).contains(&mag) {
        let p = (digits - 1) as usize;
        let s = format!("{x:.p$e}");
        // Trim the mantissa's trailing zeros: 1.50000000e-7 -> 1.5e-7.
        return match s.split_once('e') {
            Some((m, e)) => format!("{}e{e}", trim_zeros(m)),
            None => s,
        };
    }
    let digits_before = mag.log10().floor() as i32 + 1;
    let decimals = (digits - digits_before).clamp(0, 20) as usize;
    trim_zeros(&format!("{x:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Quote a CSV field if it holds a comma, quote or line break (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[derive(Serialize)]
struct JsonAggregate<'a> {
    base_seed: u64,
    seeds: u32,
    keys: &'a [String],
    points: Vec<JsonPoint<'a>>,
}

#[derive(Serialize)]
struct JsonPoint<'a> {
    label: &'a str,
    overrides: Vec<JsonOverride<'a>>,
    stats: Vec<JsonStats<'a>>,
}

#[derive(Serialize)]
struct JsonOverride<'a> {
    key: &'a str,
    value: String,
}

#[derive(Serialize)]
struct JsonStats<'a> {
    key: &'a str,
    n: usize,
    mean: f64,
    ci95: Option<f64>,
    std: Option<f64>,
    min: f64,
    median: f64,
    max: f64,
}

impl Aggregate {
    /// The point labelled `label`.
    pub fn point(&self, label: &str) -> Option<&PointStats> {
        self.points.iter().find(|p| p.label == label)
    }

    /// Tidy CSV: `point,key,n,mean,ci95,std,min,median,max`, one row per
    /// (point, key) in order; an absent `ci95`/`std` (one run) is empty.
    pub fn to_csv(&self) -> String {
        let mut s = String::from("point,key,n,mean,ci95,std,min,median,max\n");
        let opt = |v: Option<f64>| v.map(format_number).unwrap_or_default();
        for p in &self.points {
            for k in &p.keys {
                let m = &k.summary;
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{}",
                    csv_field(&p.label),
                    csv_field(&k.key),
                    m.n,
                    format_number(m.mean),
                    opt(m.ci95),
                    opt(m.std),
                    format_number(m.min),
                    format_number(m.median),
                    format_number(m.max),
                );
            }
        }
        s
    }

    /// The aggregate as JSON text (pretty, trailing newline):
    /// `{"base_seed", "seeds", "keys": [...], "points": [{"label",
    /// "overrides": [{"key", "value"}], "stats": [{"key", "n", "mean",
    /// "ci95", "std", "min", "median", "max"}]}]}`; override values are
    /// their label text.
    pub fn to_json_string(&self) -> String {
        let doc = JsonAggregate {
            base_seed: self.base_seed,
            seeds: self.seeds,
            keys: &self.keys,
            points: self
                .points
                .iter()
                .map(|p| JsonPoint {
                    label: &p.label,
                    overrides: p
                        .overrides
                        .iter()
                        .map(|(key, v)| JsonOverride {
                            key,
                            value: value_label(v),
                        })
                        .collect(),
                    stats: p
                        .keys
                        .iter()
                        .map(|k| JsonStats {
                            key: &k.key,
                            n: k.summary.n,
                            mean: k.summary.mean,
                            ci95: k.summary.ci95,
                            std: k.summary.std,
                            min: k.summary.min,
                            median: k.summary.median,
                            max: k.summary.max,
                        })
                        .collect(),
                })
                .collect(),
        };
        // Serializing plain structs of strings and finite numbers cannot fail.
        let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{run_sweep, SweepSpec};
    use serde_json::json;

    fn doc(text: &str) -> toml::Value {
        toml::Value::Table(text.parse::<toml::Table>().expect("test TOML is valid"))
    }

    /// A toy run: a pseudo-random but seed-determined summary.
    fn toy(d: &toml::Value, seed: u64) -> Result<serde_json::Value, String> {
        let loss = d["loss"].as_float().ok_or("loss")?;
        let cc = d["cc"].as_str().ok_or("cc")?;
        let jitter = ((seed * 2_654_435_761) % 1000) as f64 / 1000.0;
        let mut s = json!({
            "goodput_bps": 1e6 * (1.0 - loss) + 1e4 * jitter,
            "flows": [{"delay_ms": 40.0 + jitter}, {"delay_ms": 50.0 + cc.len() as f64}],
            "name": cc,
            "ok": true,
            "a/b~c": seed,
        });
        if seed.is_multiple_of(2) {
            s["rare"] = json!(1.5);
        }
        Ok(s)
    }

    const BASE: &str = "seed = 10\nloss = 0.0\ncc = \"cubic\"\n[sweep]\nseeds = 4\n[sweep.grid]\ncc = [\"cubic\", \"bbr\"]\nloss = [0.0, 0.1]\n";

    fn sweep(threads: usize) -> Aggregate {
        let base = doc(BASE);
        let spec = SweepSpec::from_document(&base).unwrap().unwrap();
        aggregate(&run_sweep(&base, &spec, threads, &|_, _| {}, toy).unwrap())
    }

    #[test]
    fn every_numeric_leaf_per_point() {
        let agg = sweep(1);
        // Object order follows serde_json's map (sorted, or insertion order
        // with its `preserve_order` feature): compare as a set.
        let mut keys = agg.keys.clone();
        keys.sort();
        assert_eq!(
            keys,
            [
                "/a~1b~0c",
                "/flows/0/delay_ms",
                "/flows/1/delay_ms",
                "/goodput_bps",
                "/rare"
            ]
        );
        // Every point lists its keys in the aggregate's order.
        for p in &agg.points {
            let order: Vec<&str> = p.keys.iter().map(|k| k.key.as_str()).collect();
            assert_eq!(order, agg.keys);
        }
        assert_eq!(agg.points.len(), 4);
        let p = agg.point("cc=bbr,loss=0.1").unwrap();
        let d1 = p.get("/flows/1/delay_ms").unwrap();
        assert_eq!((d1.n, d1.mean, d1.ci95), (4, 53.0, Some(0.0)));
        let seeds = p.get("/a~1b~0c").unwrap();
        assert_eq!(
            (seeds.min, seeds.median, seeds.max, seeds.mean),
            (10.0, 11.5, 13.0, 11.5)
        );
        // Only seeds 10 and 12 report `rare`.
        assert_eq!(p.get("/rare").unwrap().n, 2);
        assert!(p.get("/ok").is_none() && p.get("/name").is_none());
        let g = p.get("/goodput_bps").unwrap();
        assert!(g.mean > 0.9e6 && g.mean < 0.92e6);
    }

    #[test]
    fn outputs_are_byte_identical_across_thread_counts() {
        let (one, two) = (sweep(1), sweep(2));
        assert_eq!(one.to_csv(), two.to_csv());
        assert_eq!(one.to_json_string(), two.to_json_string());
    }

    #[test]
    fn csv_and_json_shape() {
        let agg = sweep(2);
        let csv = agg.to_csv();
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some("point,key,n,mean,ci95,std,min,median,max")
        );
        assert_eq!(
            lines.next().unwrap().split(',').take(3).collect::<Vec<_>>(),
            ["\"cc=cubic", "loss=0.0\"", agg.keys[0].as_str()]
        );
        assert!(csv.contains("\"cc=bbr,loss=0.1\",/flows/1/delay_ms,4,53,0,0,53,53,53\n"));
        assert_eq!(csv.lines().count(), 1 + 4 * 5);
        let json: serde_json::Value = serde_json::from_str(&agg.to_json_string()).unwrap();
        assert_eq!(json["seeds"], 4);
        assert_eq!(json["base_seed"], 10);
        assert_eq!(json["points"][3]["label"], "cc=bbr,loss=0.1");
        assert_eq!(
            json["points"][3]["overrides"][1],
            json!({"key": "loss", "value": "0.1"})
        );
        let rare = agg.keys.iter().position(|k| k == "/rare").unwrap();
        assert_eq!(json["points"][0]["stats"][rare]["key"], "/rare");
        assert_eq!(json["points"][0]["stats"][rare]["std"], 0.0);
    }

    #[test]
    fn one_seed_has_null_ci() {
        let base = doc("loss = 0.0\ncc = \"x\"\n");
        let out = run_sweep(&base, &SweepSpec::default(), 1, &|_, _| {}, toy).unwrap();
        let agg = aggregate(&out);
        assert!(agg.to_csv().contains("base,/goodput_bps,1,"));
        for line in agg.to_csv().lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!((f[2], f[4], f[5]), ("1", "", ""), "{line}");
        }
        let json: serde_json::Value = serde_json::from_str(&agg.to_json_string()).unwrap();
        assert!(json["points"][0]["stats"][0]["ci95"].is_null());
        assert!(json["points"][0]["stats"][0]["mean"].is_number());
    }

    #[test]
    fn number_formatting_is_fixed() {
        assert_eq!(format_number(5.5), "5.5");
        assert_eq!(format_number(-0.0), "0");
        assert_eq!(format_number(1e6), "1000000");
        assert_eq!(format_number(2.0 / 3.0), "0.666666667");
        assert_eq!(format_number(123_456.789_012), "123456.789");
        assert_eq!(format_number(0.000_123), "0.000123");
        assert_eq!(format_number(1.5e-7), "1.5e-7");
        assert_eq!(format_number(2.5e17), "2.5e17");
        assert_eq!(format_number(-42.0), "-42");
        assert_eq!(format_number(f64::NAN), "NaN");
        assert_eq!(format_significant(2.0 / 3.0, 4), "0.6667");
        assert_eq!(format_significant(123_456.7, 4), "123457");
        assert_eq!(format_significant(0.000_123_45, 3), "0.000123");
        assert_eq!(format_significant(1.234_5e-7, 2), "1.2e-7");
        assert_eq!(csv_field("a\"b"), "\"a\"\"b\"");
    }
}
