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

use crate::plan::{run_plan, PlanRuns};
use crate::progress::Progress;
use crate::report::Comparison;
use crate::Keyed;
use anyhow::Context;
use peregrine_sim::scenario::units::{Dur, Rate};
use peregrine_sim::scenario::vehicular::VehicularConfig;
use peregrine_sim::scenario::ScenarioConfig;
use peregrine_sim::world::channel::mmwave::{Environment, FailureCounts, FailureKind};
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
/// The worlds, in report order.
pub const SCENARIOS: [World; 4] = [
    World {
        environment: Environment::Rural,
        mobility: "manhattan",
    },
    World {
        environment: Environment::Rural,
        mobility: "random",
    },
    World {
        environment: Environment::Urban,
        mobility: "manhattan",
    },
    World {
        environment: Environment::Urban,
        mobility: "random",
    },
];

/// An area preset and a mobility model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct World {
    /// Obstacle density preset.
    pub environment: Environment,
    /// `manhattan` or `random` (the `vehicular.mobility` names).
    pub mobility: &'static str,
}

impl World {
    /// `<environment>_<mobility>`: the world's key in `summary.json`.
    pub fn key(&self) -> String {
        format!("{}_{}", self.environment.as_str(), self.mobility)
    }
}

/// One point of the grid: a world, a hint accuracy, a controller and a
/// normalized load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridPoint {
    /// The world.
    pub world: World,
    /// Hint accuracy (one of [`HINTS`]).
    pub hints: &'static str,
    /// The controller of every vehicle's flow (one of [`CONTROLLERS`]).
    pub cc: &'static str,
    /// Offered load per vehicle, a fraction of the reference rate.
    pub load: f64,
}

impl GridPoint {
    /// The point's scenario, `duration` long (seed 1; each run sets its
    /// own): 20 vehicles with every rate scaled by [`RATE_SCALE`], the
    /// 2 Gbit/s reference rate, a 1 ms core, 1400-byte packets, the
    /// senders sampled every 20 ms. O(1).
    pub fn scenario(&self, duration: Dur) -> ScenarioConfig {
        let mut s = ScenarioConfig::new(duration, 1);
        s.name = Some("mmwave-cvn".into());
        s.metrics.interval = Dur::from_millis(20);
        s.metrics.per_message = false;
        s.vehicular = Some(VehicularConfig {
            environment: self.world.environment,
            mobility: self.world.mobility.into(),
            hints: self.hints.into(),
            cc: self.cc.into(),
            load: self.load,
            vehicles: 20,
            rate_scale: RATE_SCALE,
            reference_rate: Rate(2_000_000_000),
            core_delay: Dur::from_millis(1),
            payload_bytes: 1400,
            ..VehicularConfig::default()
        });
        s
    }

    /// Where the point's figures sit in `summary.json`.
    fn key(&self) -> PointKey {
        PointKey {
            scenario: self.world.key(),
            hints: self.hints.to_string(),
            cc: self.cc.to_string(),
            load: load_key(self.load),
        }
    }
}

/// The size of the grid: its worlds and loads (every hint accuracy and
/// controller are always run).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The worlds, in report order.
    pub worlds: Vec<World>,
    /// The normalized loads.
    pub loads: Vec<f64>,
}

impl Plan {
    /// Every world and load; with `quick` urban/random at loads 0.6 and 1.0.
    pub fn of(quick: bool) -> Plan {
        if quick {
            Plan {
                worlds: SCENARIOS[3..].to_vec(),
                loads: vec![0.6, 1.0],
            }
        } else {
            Plan {
                worlds: SCENARIOS.to_vec(),
                loads: LOADS.to_vec(),
            }
        }
    }

    /// The grid: every world × hint accuracy × controller × load, in that
    /// nesting order. O(points).
    pub fn points(&self) -> Vec<GridPoint> {
        let mut points = Vec::new();
        for &world in &self.worlds {
            for hints in HINTS {
                for cc in CONTROLLERS {
                    for &load in &self.loads {
                        points.push(GridPoint {
                            world,
                            hints,
                            cc,
                            load,
                        });
                    }
                }
            }
        }
        points
    }
}

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
    /// Seed 004's findings beside ours (`ours` is `None` where the grid
    /// lacks the worlds a finding needs, e.g. `--quick`).
    pub comparisons: Vec<Comparison>,
}

/// One run's measurements.
#[derive(Clone, Debug, Default)]
struct RunResult {
    throughput_mbps: f64,
    rtt_ms: f64,
    events: u64,
    cwnd_v0: Vec<(f64, f64)>,
}

type Cache = Mutex<BTreeMap<(String, String, u64), Arc<ChannelTimeline>>>;

/// One run of `point`, `duration` long, seeded `seed`, its channel
/// recorded once per (world, seed) in `cache`.
fn run_one(
    point: &GridPoint,
    duration: Dur,
    seed: u64,
    cache: &Cache,
) -> anyhow::Result<RunResult> {
    let mut config = point.scenario(duration);
    config.seed = seed;
    let s = Scenario::from_config(config, "mmwave-cvn")?;
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

/// Where a point's figures sit in `summary.json`: world key
/// (`urban_random`), hint accuracy, controller and load key (`load_0.6`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct PointKey {
    scenario: String,
    hints: String,
    cc: String,
    load: String,
}

/// Per point: the means over seeds; cwnd of seed 1.
type Results = BTreeMap<PointKey, RunResult>;

fn load_key(load: f64) -> String {
    format!("load_{load:.1}")
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
    let plan = Plan::of(args.quick);
    let points = plan.points();
    let duration = Dur::from_secs_f64(duration_s);
    let how = PlanRuns {
        seeds: args.seeds.max(1),
        base_seed: 1,
        threads: args.threads,
    };
    let runs = points.len() * how.seeds as usize;
    let cache: Cache = Mutex::new(BTreeMap::new());
    progress.start("mmwave-cvn", runs);
    let outcome = run_plan(
        &points,
        how,
        &|done, total| progress.update(done, total),
        |p| {
            format!(
                "mmwave-cvn {} hints {} {} load {}",
                p.world.key(),
                p.hints,
                p.cc,
                p.load
            )
        },
        |p, seed| run_one(p, duration, seed, &cache),
    );
    progress.finish();
    let outcome = outcome?;
    let mut results = Results::new();
    let mut events = 0u64;
    for (point, runs) in points.iter().zip(&outcome.runs) {
        events += runs.iter().map(|r| r.events).sum::<u64>();
        let n = runs.len().max(1) as f64;
        let mean = RunResult {
            throughput_mbps: runs.iter().map(|r| r.throughput_mbps).sum::<f64>() / n,
            rtt_ms: runs.iter().map(|r| r.rtt_ms).sum::<f64>() / n,
            events: 0,
            cwnd_v0: runs.first().map(|r| r.cwnd_v0.clone()).unwrap_or_default(),
        };
        results.insert(point.key(), mean);
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
    let keys: Vec<String> = plan.worlds.iter().map(World::key).collect();
    let summary = summary_json(&results, &keys, &plan.loads);
    let text = serde_json::to_string_pretty(&summary)? + "\n";
    std::fs::write(dir.join("summary.json"), text)
        .with_context(|| format!("cannot write {}/summary.json", dir.display()))?;
    let ctx = ReportCtx {
        dir: &dir,
        results: &results,
        keys: &keys,
        loads: &plan.loads,
        timelines: &counts,
        duration_s,
        seeds: how.seeds,
        quick: args.quick,
    };
    let (report, comparisons) = report::write(&ctx)?;
    let wall = started.elapsed().as_secs_f64();
    let console = format!(
        "wrote {} and {}/summary.json\n{} runs, {} events in {:.1} s wall ({:.0} events/s)\n",
        report.display(),
        dir.display(),
        runs,
        events,
        wall,
        events as f64 / wall.max(1e-9)
    );
    Ok(Outcome {
        summary,
        dir,
        report,
        runs,
        events,
        console,
        comparisons,
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
                    let key = PointKey {
                        scenario: k.clone(),
                        hints: h.to_string(),
                        cc: cc.to_string(),
                        load: lk.clone(),
                    };
                    let r = results.get(&key).cloned().unwrap_or_default();
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
        self.results.get(&PointKey {
            scenario: scen.to_string(),
            hints: hints.to_string(),
            cc: cc.to_string(),
            load: load_key(load),
        })
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
            PointKey {
                scenario: "urban_random".into(),
                hints: "perfect".into(),
                cc: "rtwtcp".into(),
                load: "load_1.0".into(),
            },
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

#[cfg(test)]
mod grid_tests {
    use super::*;

    /// A typed grid point is the document (and overrides) this
    /// reproduction was written as before (the same runs, byte for byte).
    #[test]
    fn a_point_is_the_former_document() {
        let text = "name = \"mmwave-cvn\"\nduration = \"3s\"\nseed = 1\n\
             [metrics]\ninterval = \"20ms\"\nper_message = false\n\
             [vehicular]\nvehicles = 20\nrate_scale = 0.025\n\
             reference_rate = \"2Gbps\"\ncore_delay = \"1ms\"\npayload_bytes = 1400\n";
        let sets = [
            "vehicular.environment=\"rural\"",
            "vehicular.mobility=\"random\"",
            "vehicular.hints=\"noisy\"",
            "vehicular.cc=\"bbr\"",
            "vehicular.load=0.6",
        ]
        .map(String::from);
        let former = Scenario::from_toml_str(text, "mmwave-cvn", &sets).unwrap();
        let point = GridPoint {
            world: SCENARIOS[1],
            hints: "noisy",
            cc: "bbr",
            load: 0.6,
        };
        let typed = Scenario::from_config(point.scenario(Dur::from_secs_f64(3.0)), "mmwave-cvn");
        let typed = typed.unwrap();
        assert_eq!(
            format!("{:?}", typed.config),
            format!("{:?}", former.config)
        );
        assert_eq!(format!("{:?}", typed.model), format!("{:?}", former.model));
        assert_eq!(point.key().scenario, "rural_random");
        assert_eq!(point.key().load, "load_0.6");
    }

    #[test]
    fn the_quick_grid_is_urban_random_at_two_loads() {
        let quick = Plan::of(true).points();
        assert_eq!(quick.len(), HINTS.len() * CONTROLLERS.len() * 2);
        assert!(quick.iter().all(|p| p.world.key() == "urban_random"));
        assert_eq!(Plan::of(false).points().len(), 4 * 3 * 4 * 6);
    }
}
