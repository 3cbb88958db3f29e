//! Position traces: replay recorded or externally generated motion (GPS
//! logs, flight plans) and SUMO's FCD output ([`super::sumo_fcd`]).
//!
//! The file is CSV with the columns `time_s,node,x,y,z` (seconds; an
//! integer node id; metres). An optional header line with exactly those
//! names, blank lines and lines starting with `#` are skipped. Rows of
//! different nodes may interleave; a node's rows must not go back in time
//! (equal times are allowed and mean a jump). Between two samples the
//! position is linearly interpolated; before the first sample the node
//! holds its first position, after the last one its last position (with
//! zero velocity). A trace is replayed as written: the simulation box does
//! not clip it.
//!
//! Malformed input never panics: [`PositionTrace::parse`] names the line
//! and the column that is wrong.

use super::{check, secs, Mobility, MobilityError};
use crate::world::geom::Vec3;
use peregrine_cc::Time;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The expected columns, in order.
const COLUMNS: [&str; 5] = ["time_s", "node", "x", "y", "z"];

/// The file format of a position trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TraceFormat {
    /// `time_s,node,x,y,z` CSV (the default).
    #[default]
    #[serde(rename = "csv")]
    Csv,
    /// SUMO's floating-car-data XML (`sumo --fcd-output`), streamed
    /// ([`super::sumo_fcd`]).
    #[serde(rename = "sumo-fcd")]
    SumoFcd,
}

fn is_csv(f: &TraceFormat) -> bool {
    *f == TraceFormat::Csv
}

/// `model = "trace"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TraceConfig {
    /// The trace file (also spelled `file`). Relative paths are relative to
    /// the working directory unless [`super::MobilityConfig::resolve_paths`]
    /// made them relative to the scenario file. Required.
    #[serde(alias = "file")]
    pub path: String,
    /// `"csv"` (default) or `"sumo-fcd"`.
    #[serde(skip_serializing_if = "is_csv")]
    pub format: TraceFormat,
    /// CSV: the trace's node id to replay; default: the simulated node's index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<u64>,
    /// SUMO FCD: the vehicle id to replay; default: the simulated node's
    /// index-th distinct vehicle in order of first appearance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vehicle: Option<String>,
}

impl TraceConfig {
    pub(crate) fn validate(&self) -> Result<(), MobilityError> {
        check(
            !self.path.trim().is_empty(),
            "trace.path",
            "\"\"",
            "the path of a time_s,node,x,y,z CSV file or of a SUMO FCD file (format = \"sumo-fcd\")",
        )?;
        match self.format {
            TraceFormat::Csv => check(
                self.vehicle.is_none(),
                "trace.vehicle",
                "given",
                "only with format = \"sumo-fcd\" (CSV traces pick a node with node_id)",
            ),
            TraceFormat::SumoFcd => check(
                self.node_id.is_none(),
                "trace.node_id",
                "given",
                "only with CSV traces (SUMO FCD traces pick a vehicle with vehicle = \"id\")",
            ),
        }
    }

    pub(crate) fn build(&self, node: usize) -> Result<TraceMobility, MobilityError> {
        match self.format {
            TraceFormat::Csv => {
                PositionTrace::load(&self.path)?.node(self.node_id.unwrap_or(node as u64))
            }
            TraceFormat::SumoFcd => {
                let choice = match &self.vehicle {
                    Some(id) => super::sumo_fcd::VehicleChoice::Id(id.clone()),
                    None => super::sumo_fcd::VehicleChoice::Nth(node),
                };
                super::sumo_fcd::load(&self.path, &choice)
            }
        }
    }
}

/// A parsed trace: every node's samples, in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct PositionTrace {
    name: String,
    samples: BTreeMap<u64, Vec<(f64, Vec3)>>,
}

impl PositionTrace {
    /// Read and parse a trace file (an engine building many nodes from one
    /// file can load it once and call [`PositionTrace::node`] per node).
    pub fn load(path: &str) -> Result<PositionTrace, MobilityError> {
        let text = std::fs::read_to_string(path).map_err(|e| MobilityError::TraceIo {
            path: path.to_string(),
            message: e.to_string(),
        })?;
        Self::parse_named(&text, path)
    }

    /// Parse CSV text; errors name the line and column (file name
    /// `<inline>`).
    pub fn parse(text: &str) -> Result<PositionTrace, MobilityError> {
        Self::parse_named(text, "<inline>")
    }

    /// Parse CSV text read from `name` (used in error messages).
    pub fn parse_named(text: &str, name: &str) -> Result<PositionTrace, MobilityError> {
        let err = |line: usize, column: &'static str, message: String| MobilityError::TraceRow {
            path: name.to_string(),
            line,
            column,
            message,
        };
        let mut samples: BTreeMap<u64, Vec<(f64, Vec3)>> = BTreeMap::new();
        let mut seen_data = false;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if !seen_data && fields == COLUMNS {
                seen_data = true; // the header
                continue;
            }
            seen_data = true;
            if fields.len() != COLUMNS.len() {
                return Err(err(
                    line_no,
                    "row",
                    format!(
                        "expected 5 fields time_s,node,x,y,z, found {}",
                        fields.len()
                    ),
                ));
            }
            let num = |k: usize| -> Result<f64, MobilityError> {
                let v: f64 = fields[k].parse().map_err(|_| {
                    err(
                        line_no,
                        COLUMNS[k],
                        format!("`{}` is not a number", fields[k]),
                    )
                })?;
                if v.is_finite() {
                    Ok(v)
                } else {
                    Err(err(
                        line_no,
                        COLUMNS[k],
                        format!("`{}` is not finite", fields[k]),
                    ))
                }
            };
            let t = num(0)?;
            if t < 0.0 {
                return Err(err(line_no, "time_s", format!("{t} is negative")));
            }
            let node: u64 = fields[1].parse().map_err(|_| {
                err(
                    line_no,
                    "node",
                    format!("`{}` is not a non-negative integer", fields[1]),
                )
            })?;
            let p = Vec3::new(num(2)?, num(3)?, num(4)?);
            let rows = samples.entry(node).or_default();
            if let Some(&(last, _)) = rows.last() {
                if t < last {
                    return Err(err(
                        line_no,
                        "time_s",
                        format!("{t} s goes back in time for node {node} (previous {last} s)"),
                    ));
                }
            }
            rows.push((t, p));
        }
        Ok(PositionTrace {
            name: name.to_string(),
            samples,
        })
    }

    /// The node ids present, ascending.
    pub fn nodes(&self) -> Vec<u64> {
        self.samples.keys().copied().collect()
    }

    /// The replay of node `node`.
    pub fn node(&self, node: u64) -> Result<TraceMobility, MobilityError> {
        match self.samples.get(&node) {
            Some(rows) if !rows.is_empty() => Ok(TraceMobility {
                samples: rows.clone(),
                cursor: 0,
            }),
            _ => Err(MobilityError::TraceNodeMissing {
                path: self.name.clone(),
                node,
            }),
        }
    }
}

/// One node's trace replay (linear interpolation; holds the first and last
/// positions outside the trace's time span).
#[derive(Debug, Clone)]
pub struct TraceMobility {
    /// `(time_s, position)`, non-decreasing in time, never empty.
    samples: Vec<(f64, Vec3)>,
    /// Index of the last sample at or before the last time asked.
    cursor: usize,
}

impl TraceMobility {
    /// A replay of `samples` (`(time_s, position)`, non-decreasing in time,
    /// not empty). O(1).
    pub(super) fn from_samples(samples: Vec<(f64, Vec3)>) -> TraceMobility {
        debug_assert!(!samples.is_empty());
        TraceMobility { samples, cursor: 0 }
    }

    /// The segment `[i, i+1]` containing `t` (or `None` outside the span),
    /// moving the cursor forward only.
    fn segment(&mut self, t: f64) -> Option<usize> {
        while self.cursor + 1 < self.samples.len() && self.samples[self.cursor + 1].0 <= t {
            self.cursor += 1;
        }
        let first = self.samples[0].0;
        if t < first || self.cursor + 1 >= self.samples.len() {
            None
        } else {
            Some(self.cursor)
        }
    }
}

impl Mobility for TraceMobility {
    fn position(&mut self, t: Time) -> Vec3 {
        let t = secs(t);
        match self.segment(t) {
            Some(i) => {
                let (t0, a) = self.samples[i];
                let (t1, b) = self.samples[i + 1];
                // t0 <= t < t1 here, so t1 > t0.
                a.lerp(b, ((t - t0) / (t1 - t0)).clamp(0.0, 1.0))
            }
            None if t < self.samples[0].0 => self.samples[0].1,
            None => self.samples[self.samples.len() - 1].1,
        }
    }

    fn velocity(&mut self, t: Time) -> Vec3 {
        match self.segment(secs(t)) {
            Some(i) => {
                let (t0, a) = self.samples[i];
                let (t1, b) = self.samples[i + 1];
                (b - a).scale(1.0 / (t1 - t0))
            }
            None => Vec3::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "\
# a two-node trace
time_s,node,x,y,z
0,0,0,0,10
1,1,5,5,5
10,0,100,0,10
 20 , 0 , 100 , 50 , 20
";

    fn t(s: f64) -> Time {
        Time::from_secs_f64(s)
    }

    #[test]
    fn interpolates_and_holds_the_ends() {
        let tr = PositionTrace::parse(CSV).expect("valid");
        assert_eq!(tr.nodes(), vec![0, 1]);
        let mut m = tr.node(0).expect("node 0");
        assert_eq!(m.position(t(0.0)), Vec3::new(0.0, 0.0, 10.0));
        assert_eq!(m.position(t(2.5)), Vec3::new(25.0, 0.0, 10.0));
        assert_eq!(m.velocity(t(2.5)), Vec3::new(10.0, 0.0, 0.0));
        assert_eq!(m.position(t(10.0)), Vec3::new(100.0, 0.0, 10.0));
        assert_eq!(m.position(t(15.0)), Vec3::new(100.0, 25.0, 15.0));
        assert_eq!(m.position(t(99.0)), Vec3::new(100.0, 50.0, 20.0));
        assert_eq!(m.velocity(t(99.0)), Vec3::ZERO);
        // A single-sample node holds it, before and after.
        let mut one = tr.node(1).expect("node 1");
        assert_eq!(one.position(t(0.0)), Vec3::new(5.0, 5.0, 5.0));
        assert_eq!(one.velocity(t(0.0)), Vec3::ZERO);
        assert_eq!(one.position(t(7.0)), Vec3::new(5.0, 5.0, 5.0));
    }

    #[test]
    fn equal_times_jump() {
        let tr =
            PositionTrace::parse("0,0,0,0,0\n1,0,1,0,0\n1,0,50,0,0\n2,0,51,0,0\n").expect("valid");
        let mut m = tr.node(0).expect("node 0");
        assert!((m.position(t(0.5)).x - 0.5).abs() < 1e-12);
        assert_eq!(m.position(t(1.0)).x, 50.0);
        assert!((m.position(t(1.5)).x - 50.5).abs() < 1e-12);
    }

    #[test]
    fn bad_rows_name_line_and_column() {
        let cases = [
            ("0,0,0,0\n", 1, "row"),
            ("time_s,node,x,y,z\n0,0,0,0,0\n1,zero,0,0,0\n", 3, "node"),
            ("0,0,0,0,0\n1,0,abc,0,0\n", 2, "x"),
            ("0,0,0,0,nan\n", 1, "z"),
            ("\n-1,0,0,0,0\n", 2, "time_s"),
            ("5,0,0,0,0\n4,0,0,0,0\n", 2, "time_s"),
            ("0,0,0,0,0\n0,-3,0,0,0\n", 2, "node"),
            ("t,n,x,y,z\n", 1, "time_s"),
        ];
        for (text, line, column) in cases {
            match PositionTrace::parse(text) {
                Err(MobilityError::TraceRow {
                    line: l, column: c, ..
                }) => assert_eq!((l, c), (line, column), "{text:?}"),
                other => panic!("{text:?}: expected a row error, got {other:?}"),
            }
        }
    }

    #[test]
    fn missing_node_and_file_are_reported() {
        let tr = PositionTrace::parse(CSV).expect("valid");
        assert!(matches!(
            tr.node(7),
            Err(MobilityError::TraceNodeMissing { node: 7, .. })
        ));
        let c = super::super::MobilityConfig::Trace(TraceConfig {
            path: "/nonexistent/peregrine-trace.csv".into(),
            ..TraceConfig::default()
        });
        let e = c
            .build(0, crate::world::geom::Bounds::from_size(1.0, 1.0, 1.0), 1)
            .err()
            .expect("missing file");
        assert!(matches!(e, MobilityError::TraceIo { .. }), "{e}");
    }

    #[test]
    fn builds_from_a_file() {
        let dir = std::env::temp_dir().join(format!("peregrine-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("t.csv"), CSV).expect("write trace");
        let mut c = super::super::MobilityConfig::Trace(TraceConfig {
            path: "t.csv".into(),
            node_id: Some(0),
            ..TraceConfig::default()
        });
        c.resolve_paths(&dir);
        let mut m = c
            .build(5, crate::world::geom::Bounds::from_size(1.0, 1.0, 1.0), 1)
            .expect("trace builds");
        assert_eq!(m.position(t(2.5)), Vec3::new(25.0, 0.0, 10.0));
        let _ = std::fs::remove_dir_all(&dir);
    }

    proptest::proptest! {
        #[test]
        fn replay_stays_within_the_samples_and_finite(
            rows in proptest::collection::vec(
                (0.0f64..5.0, proptest::array::uniform3(-100.0f64..100.0)), 1..20),
            probes in proptest::collection::vec(0.0f64..10.0, 1..50),
        ) {
            let mut t = 0.0;
            let mut text = String::from("time_s,node,x,y,z\n");
            for (dt, p) in &rows {
                t += dt;
                text.push_str(&format!("{t},3,{},{},{}\n", p[0], p[1], p[2]));
            }
            let lo = |k: usize| rows.iter().map(|r| r.1[k]).fold(f64::INFINITY, f64::min);
            let hi = |k: usize| rows.iter().map(|r| r.1[k]).fold(f64::NEG_INFINITY, f64::max);
            let mut m = PositionTrace::parse(&text).expect("generated trace is valid")
                .node(3).expect("node 3 present");
            let mut now = 0.0;
            for dt in probes {
                now += dt;
                let p = m.position(Time::from_secs_f64(now));
                let v = m.velocity(Time::from_secs_f64(now));
                for (k, c) in [p.x, p.y, p.z].into_iter().enumerate() {
                    proptest::prop_assert!(c >= lo(k) - 1e-9 && c <= hi(k) + 1e-9);
                }
                proptest::prop_assert!(v.x.is_finite() && v.y.is_finite() && v.z.is_finite());
            }
        }
    }
}
