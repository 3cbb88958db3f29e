//! `peregrine reproduce mmwave-cvn [--quick] [--out DIR]`: seed 004 §4 —
//! RTW-TCP against CUBIC, Compound and BBR for 20 connected vehicles on
//! 28 GHz mmWave (100 m × 100 m, 5 road-side base stations, 5–30 m/s,
//! rural/urban × Manhattan/random mobility, normalized load 0.2 … 1.2,
//! 1400-byte packets, 1 ms core delay), with link hints perfect, noisy
//! and absent.
//!
//! The grid runs through the sweep runner (`peregrine_sim::experiment`)
//! as overrides of one `[vehicular]` scenario document. The channel does
//! not depend on traffic, so it is recorded once per (environment,
//! mobility, seed) and shared by every controller, load and hint run of
//! that world (a cache keyed by those three; the runs being compared see
//! the very same outages). Outputs in `DIR/mmwave-cvn/`: `summary.json`
//! (`scenarios → hints_<mode> → controller → load_<x> →
//! {throughput_mbps, rtt_ms}`), `report.md` and `plots/`.
//!
//! Scaling (stated in the report): every rate is multiplied by
//! [`RATE_SCALE`] (the 2 Gbit/s channel cap becomes 50 Mbit/s, a load of
//! 1.0 offers 50 Mbit/s per vehicle) and runs last [`DURATION_S`]
//! seconds, so the default grid takes minutes on two cores.

use crate::progress::Progress;
use crate::Keyed;
use anyhow::Context;
use peregrine_sim::experiment::{self, SweepSpec};
use peregrine_sim::world::channel::mmwave::{FailureCounts, FailureKind};
use peregrine_sim::world::vehicles::ChannelTimeline;
use peregrine_sim::{run_with_timeline, Scenario};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Every rate of the world is multiplied by this (2 Gbit/s → 50 Mbit/s).
pub const RATE_SCALE: f64 = 0.025;
/// Simulated seconds per run (default grid).
pub const DURATION_S: f64 = 3.0;
/// Simulated seconds per run with `--quick`.
pub const QUICK_DURATION_S: f64 = 3.0;
/// The controllers compared.
pub const CONTROLLERS: [&str; 4] = ["rtwtcp", "cubic", "compound", "bbr"];
/// Hint accuracies.
pub const HINTS: [&str; 3] = ["perfect", "noisy", "absent"];
/// Normalized loads.
pub const LOADS: [f64; 6] = [0.2, 0.4, 0.6, 0.8, 1.0, 1.2];
/// (environment, mobility) in report order.
pub const SCENARIOS: [(&str, &str); 4] = [
    ("rural", "manhattan"),
    ("rural", "random"),
    ("urban", "manhattan"),
    ("urban", "random"),
];

/// Options of the reproduction (`peregrine reproduce mmwave-cvn`).
#[derive(Debug, Clone)]
pub struct Options {
    /// Urban/random only, loads 0.6 and 1.0 (under two minutes).
    pub quick: bool,
    /// Output folder; the report goes to `out/mmwave-cvn/`.
    pub out: PathBuf,
    /// Runs per grid point (seeds 1, 2, …); values are their means.
    pub seeds: u32,
    /// Worker threads (0: one per core). Results do not depend on it.
    pub threads: usize,
    /// Simulated seconds per run (tests use a tiny one).
    pub duration_s: Option<f64>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            quick: false,
            out: PathBuf::from("repro-out"),
            seeds: 1,
            threads: 0,
            duration_s: None,
        }
    }
}

/// What [`run`] produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// `summary.json` as written.
    pub summary: MmwaveSummary,
    /// The output folder (`out/mmwave-cvn`).
    pub dir: PathBuf,
    /// The report written.
    pub report: PathBuf,
    /// Runs made.
    pub runs: usize,
    /// Simulated events over all runs.
    pub events: u64,
    /// What the command prints (with the wall time: never written to a file).
    pub console: String,
}

/// One run's measurements.
#[derive(Clone, Debug, Default)]
struct RunResult {
    throughput_mbps: f64,
    rtt_ms: f64,
    events: u64,
    cwnd_v0: Vec<(f64, f64)>,
}

fn base_document(duration_s: f64) -> String {
    format!(
        "name = \"mmwave-cvn\"\nduration = \"{duration_s}s\"\nseed = 1\n\
         [metrics]\ninterval = \"20ms\"\nper_message = false\n\
         [vehicular]\nvehicles = 20\nrate_scale = {RATE_SCALE}\n\
         reference_rate = \"2Gbps\"\ncore_delay = \"1ms\"\npayload_bytes = 1400\n"
    )
}

type Cache = Mutex<BTreeMap<(String, String, u64), Arc<ChannelTimeline>>>;

fn run_one(doc: &toml::Value, cache: &Cache) -> anyhow::Result<RunResult> {
    let s = Scenario::from_value(doc.clone(), "mmwave-cvn")?;
    let m = &s.model;
    let v = m
        .vehicular
        .as_ref()
        .context("the document has [vehicular]")?;
    let key = (
        v.config.environment.as_str().to_string(),
        v.config.mobility.clone(),
        m.seed,
    );
    let cached = cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned();
    let tl = match cached {
        Some(t) => t,
        None => {
            // Two threads may record the same world at once: both get the
            // same (deterministic) timeline, the first stored is kept.
            let t = Arc::new(ChannelTimeline::record(v, m.duration_ns, m.seed)?);
            let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(c.entry(key).or_insert(t))
        }
    };
    let r = run_with_timeline(&s, Some(&tl))?;
    let secs = m.duration_ns as f64 / 1e9;
    let bits: f64 = r
        .flows
        .iter()
        .map(|f| f.metrics.c.goodput_bytes as f64 * 8.0)
        .sum();
    let rtts: Vec<f64> = r
        .flows
        .iter()
        .flat_map(|f| f.metrics.samples.iter().filter_map(|x| x.srtt_ns))
        .map(|ns| ns as f64 / 1e6)
        .collect();
    let rtt = if rtts.is_empty() {
        0.0
    } else {
        rtts.iter().sum::<f64>() / rtts.len() as f64
    };
    let cwnd_v0 = r.flows.first().map_or(Vec::new(), |f| {
        f.metrics
            .samples
            .iter()
            .map(|x| (x.time_ns as f64 / 1e9, x.cwnd_bytes as f64 / 1e3))
            .collect()
    });
    Ok(RunResult {
        throughput_mbps: bits / secs / 1e6,
        rtt_ms: rtt,
        events: r.events,
        cwnd_v0,
    })
}

/// (scenario key, hints, cc, load label) → mean over seeds; cwnd of seed 1.
type Results = BTreeMap<(String, String, String, String), RunResult>;

fn load_key(load: f64) -> String {
    format!("load_{load:.1}")
}

fn label(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Float(f) => format!("{f:.1}"),
        other => other.to_string(),
    }
}

/// Run the reproduction, reporting to `progress`, and write
/// `out/mmwave-cvn/`. Cost: one simulation per grid point and seed.
// The wall clock measures the closing benchmark line only (printed, never
// written to a file, so outputs stay byte-deterministic).
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
pub fn run(args: &Options, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    let started = std::time::Instant::now();
    let duration_s = args.duration_s.unwrap_or(if args.quick {
        QUICK_DURATION_S
    } else {
        DURATION_S
    });
    anyhow::ensure!(
        duration_s.is_finite() && duration_s > 0.0 && duration_s <= 3600.0,
        "--duration-s must be in (0, 3600]"
    );
    let scenarios: Vec<(&str, &str)> = if args.quick {
        vec![("urban", "random")]
    } else {
        SCENARIOS.to_vec()
    };
    let loads: Vec<f64> = if args.quick {
        vec![0.6, 1.0]
    } else {
        LOADS.to_vec()
    };
    let base: toml::Value = toml::from_str(&base_document(duration_s))?;
    let strs = |xs: &[&str]| {
        xs.iter()
            .map(|x| toml::Value::String(x.to_string()))
            .collect()
    };
    let mut envs: Vec<&str> = scenarios.iter().map(|s| s.0).collect();
    envs.dedup();
    let mut mobs: Vec<&str> = scenarios.iter().map(|s| s.1).collect();
    mobs.sort_unstable();
    mobs.dedup();
    let spec = SweepSpec {
        grid: vec![
            ("vehicular.environment".into(), strs(&envs)),
            ("vehicular.mobility".into(), strs(&mobs)),
            ("vehicular.hints".into(), strs(&HINTS)),
            ("vehicular.cc".into(), strs(&CONTROLLERS)),
            (
                "vehicular.load".into(),
                loads.iter().map(|l| toml::Value::Float(*l)).collect(),
            ),
        ],
        seeds: args.seeds.max(1),
    };
    let cache: Cache = Mutex::new(BTreeMap::new());
    progress.start("mmwave-cvn", spec.run_count());
    let outcome = experiment::run_sweep(
        &base,
        &spec,
        args.threads,
        &|done, total| progress.update(done, total),
        |doc, _seed| run_one(doc, &cache),
    );
    progress.finish();
    let outcome = outcome.map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let mut results = Results::new();
    let mut events = 0u64;
    for (p, runs) in outcome.points.iter().zip(&outcome.runs) {
        let o: Vec<String> = p.overrides.iter().map(|(_, v)| label(v)).collect();
        let parsed: &[RunResult] = runs;
        events += parsed.iter().map(|r| r.events).sum::<u64>();
        let n = parsed.len().max(1) as f64;
        let mean = RunResult {
            throughput_mbps: parsed.iter().map(|r| r.throughput_mbps).sum::<f64>() / n,
            rtt_ms: parsed.iter().map(|r| r.rtt_ms).sum::<f64>() / n,
            events: 0,
            cwnd_v0: parsed
                .first()
                .map(|r| r.cwnd_v0.clone())
                .unwrap_or_default(),
        };
        results.insert(
            (
                format!("{}_{}", o[0], o[1]),
                o[2].clone(),
                o[3].clone(),
                format!("load_{}", o[4]),
            ),
            mean,
        );
    }
    let counts = cache
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|((env, mob, _), t)| (format!("{env}_{mob}"), t))
        .fold(
            BTreeMap::new(),
            |mut acc: BTreeMap<String, Vec<_>>, (k, t)| {
                acc.entry(k).or_default().push(t);
                acc
            },
        );
    let dir = args.out.join("mmwave-cvn");
    std::fs::create_dir_all(dir.join("plots"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let keys: Vec<String> = scenarios.iter().map(|(e, m)| format!("{e}_{m}")).collect();
    let summary = summary_json(&results, &keys, &loads);
    let text = serde_json::to_string_pretty(&summary)? + "\n";
    std::fs::write(dir.join("summary.json"), text)
        .with_context(|| format!("cannot write {}/summary.json", dir.display()))?;
    let ctx = ReportCtx {
        dir: &dir,
        results: &results,
        keys: &keys,
        loads: &loads,
        timelines: &counts,
        duration_s,
        seeds: spec.seeds,
        quick: args.quick,
    };
    let report = report::write(&ctx)?;
    let wall = started.elapsed().as_secs_f64();
    let console = format!(
        "wrote {} and {}/summary.json\n{} runs, {} events in {:.1} s wall ({:.0} events/s)\n",
        report.display(),
        dir.display(),
        spec.run_count(),
        events,
        wall,
        events as f64 / wall.max(1e-9)
    );
    Ok(Outcome {
        summary,
        dir,
        report,
        runs: spec.run_count(),
        events,
        console,
    })
}

/// One grid point's figures in `summary.json` (means over seeds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PointFigures {
    /// Aggregate throughput of the 20 vehicles, Mbit/s (unscaled).
    pub throughput_mbps: f64,
    /// Mean smoothed RTT, ms.
    pub rtt_ms: f64,
}

/// `summary.json`: `scenarios["urban_random"]["hints_perfect"]["rtwtcp"]["load_0.6"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MmwaveSummary {
    /// By scenario (`<environment>_<mobility>`), hint mode (`hints_<mode>`),
    /// controller and load (`load_<x>`).
    pub scenarios: Keyed<Keyed<Keyed<Keyed<PointFigures>>>>,
}

fn summary_json(results: &Results, keys: &[String], loads: &[f64]) -> MmwaveSummary {
    let mut scen = Keyed::new();
    for k in keys {
        let mut hm = Keyed::new();
        for h in HINTS {
            let mut cm = Keyed::new();
            for cc in CONTROLLERS {
                let mut lm = Keyed::new();
                for l in loads {
                    let lk = load_key(*l);
                    let r = results
                        .get(&(k.clone(), h.to_string(), cc.to_string(), lk.clone()))
                        .cloned()
                        .unwrap_or_default();
                    lm.push(
                        lk,
                        PointFigures {
                            throughput_mbps: r.throughput_mbps,
                            rtt_ms: r.rtt_ms,
                        },
                    );
                }
                cm.push(cc, lm);
            }
            hm.push(format!("hints_{h}"), cm);
        }
        scen.push(k.clone(), hm);
    }
    MmwaveSummary { scenarios: scen }
}

/// What the report needs.
struct ReportCtx<'a> {
    dir: &'a Path,
    results: &'a Results,
    keys: &'a [String],
    loads: &'a [f64],
    timelines: &'a BTreeMap<String, Vec<Arc<ChannelTimeline>>>,
    duration_s: f64,
    seeds: u32,
    quick: bool,
}

impl ReportCtx<'_> {
    fn get(&self, scen: &str, hints: &str, cc: &str, load: f64) -> Option<&RunResult> {
        self.results.get(&(
            scen.to_string(),
            hints.to_string(),
            cc.to_string(),
            load_key(load),
        ))
    }

    /// Mean over loads (those passing `keep`) of `f` for one curve.
    fn mean_over_loads(
        &self,
        scen: &str,
        hints: &str,
        cc: &str,
        keep: impl Fn(f64) -> bool,
        f: impl Fn(&RunResult) -> f64,
    ) -> Option<f64> {
        let v: Vec<f64> = self
            .loads
            .iter()
            .filter(|l| keep(**l))
            .filter_map(|l| self.get(scen, hints, cc, *l).map(&f))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }
}

fn counts_of(ts: &[Arc<ChannelTimeline>]) -> (FailureCounts, [f64; 4]) {
    let mut c = FailureCounts::default();
    let mut dur = [0.0f64; 4];
    let mut n = [0u64; 4];
    for t in ts {
        c.blockage += t.counts.blockage;
        c.deafness += t.counts.deafness;
        c.beam_misalignment += t.counts.beam_misalignment;
        c.handover += t.counts.handover;
        for e in &t.events {
            if let Some(i) = FailureKind::ALL.iter().position(|k| *k == e.kind) {
                dur[i] += e.duration.as_secs_f64() * 1e3;
                n[i] += 1;
            }
        }
    }
    for i in 0..4 {
        dur[i] = if n[i] > 0 {
            dur[i] / n[i] as f64
        } else {
            f64::NAN
        };
    }
    (c, dur)
}

mod report;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_keys_follow_the_contract() {
        let mut r = Results::new();
        r.insert(
            (
                "urban_random".into(),
                "perfect".into(),
                "rtwtcp".into(),
                "load_1.0".into(),
            ),
            RunResult {
                throughput_mbps: 3.5,
                rtt_ms: 4.0,
                ..RunResult::default()
            },
        );
        let s = summary_json(&r, &["urban_random".into()], &[0.6, 1.0]);
        let scen = s.scenarios.get("urban_random").expect("scenario");
        let x = scen.get("hints_perfect").and_then(|h| h.get("rtwtcp"));
        let x = x.and_then(|c| c.get("load_1.0")).expect("point");
        assert_eq!((x.throughput_mbps, x.rtt_ms), (3.5, 4.0));
        let absent = scen.get("hints_absent").and_then(|h| h.get("bbr"));
        assert!(absent.and_then(|c| c.get("load_0.6")).is_some());
        let v = serde_json::to_value(&s).expect("serializes");
        assert_eq!(
            v["scenarios"]["urban_random"]["hints_perfect"]["rtwtcp"]["load_1.0"]["rtt_ms"],
            4.0
        );
        assert_eq!(load_key(0.2), "load_0.2");
        assert_eq!(load_key(1.0), "load_1.0");
    }
}
