//! `peregrine reproduce mmwave-cvn [--quick] [--out DIR]`: seed 004 §4 —
//! RTW-TCP against CUBIC, Compound and BBR for 20 connected vehicles on
//! 28 GHz mmWave (100 m × 100 m, 5 road-side base stations, 5–30 m/s,
//! rural/urban × Manhattan/random mobility, plus the seed's congested
//! highway), 1400-byte packets, 1 ms core delay, with link hints perfect,
//! noisy and absent.
//!
//! The model (issue 23): each base station shares its air time among the
//! vehicles it serves (proportional fair), the channel fades (SINR with
//! shadowing, interference, blockage as attenuation), and hints come from
//! a named source — the mobility predictor (the base station's estimate
//! from the vehicle's speed, seed 004 §3) — after the signalling delay,
//! never the channel's own future. The grid has four parts
//! ([`Plan::of`]): bulk (saturating) flows for the main throughput and RTT
//! comparison with perfect hints, the same with noisy and absent hints,
//! the seed's offered loads 0.2 … 1.2 as CBR in their own figure, and
//! ON/OFF traffic on the highway. Every point runs several seeds; figures
//! are means with 95 % Student-t half-widths.
//!
//! The grid runs through the sweep runner (`crate::experiment`)
//! as overrides of one `[vehicular]` scenario document. The channel does
//! not depend on traffic, so it is recorded once per (environment,
//! mobility, seed) and shared by every controller, load and hint run of
//! that world (a cache keyed by those three; the runs being compared see
//! the very same channel). The cells follow traffic (`cell_demand =
//! "backlogged"`, issue 39): PF over the vehicles with data queued. The
//! headline (bulk, perfect hints) also runs under TCP's ACK policy
//! (issue 39). Outputs in `DIR/mmwave-cvn/`: `summary.json`
//! (`scenarios → hints_<mode> → controller → bulk | load_<x> →
//! {throughput_mbps, rtt_ms, retransmissions, ci95}`, all under SLTP's
//! ACK policy, and the same tree for TCP's delayed ACK under
//! `by_ack_policy.tcp.scenarios`), `report.md` and `plots/`.
//!
//! Scaling (stated in the report): every rate is multiplied by
//! [`RATE_SCALE`] (the 2 Gbit/s channel cap becomes 50 Mbit/s, a load of
//! 1.0 offers 50 Mbit/s per vehicle, the 50 MB RLC buffer 1.25 MB) so the
//! default grid fits in minutes on two cores.

use crate::experiment::Summary;
use crate::plan::{run_plan, PlanRuns};
use crate::progress::Progress;
use crate::report::Comparison;
use crate::reproduce::ack_policy;
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
pub const DURATION_S: f64 = 30.0;
/// Simulated seconds per run with `--quick`.
pub const QUICK_DURATION_S: f64 = 10.0;
/// Seeds per point of the main (bulk, perfect hints) comparison and of
/// the highway.
pub const SEEDS: u32 = 5;
/// Seeds per point of the hint-mode grid (noisy, absent) and of the
/// offered-load figure: the first drop (≥ 3), to fit two cores in
/// ten minutes.
pub const SIDE_SEEDS: u32 = 3;
/// Seeds per point with `--quick`.
pub const QUICK_SEEDS: u32 = 3;
/// The named hint source of every run (`vehicular.hint_source`).
pub const HINT_SOURCE: &str = "mobility";
/// The controllers compared: seed 004's chosen subset (RTW-TCP against
/// the three it is compared with), not the registry's list — every name
/// is a registry name (`peregrine_cc::registry`), checked by `tests/experiments.rs`.
pub const CONTROLLERS: [&str; 4] = ["rtwtcp", "cubic", "compound", "bbr"];
/// Hint accuracies.
pub const HINTS: [&str; 3] = ["perfect", "noisy", "absent"];
/// Normalized CBR loads of the offered-load figure (seed 004 Fig. 8 has
/// six, 0.2 … 1.2 in steps of 0.2). Four of them: the second drop,
/// to fit two cores in ten minutes. The 30-s default with all six took
/// 1,189 s of CPU (≈ 9.9 min on two cores, no margin); the CBR part was
/// 288 of its 482 runs. Kept: below saturation (0.2), the knee (0.4), and
/// two saturated points either side of 1.
pub const LOADS: [f64; 4] = [0.2, 0.4, 0.8, 1.2];
/// The offered-load points of seed 004's Fig. 8, for the report's note on
/// what was dropped.
pub const SEED_LOADS: [f64; 6] = [0.2, 0.4, 0.6, 0.8, 1.0, 1.2];
/// Offered loads (while ON) of the highway's ON/OFF flows (Fig. 12).
pub const HIGHWAY_LOADS: [f64; 3] = [0.2, 0.6, 1.0];
/// The grid worlds, in report order.
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
/// Seed 004's congested highway (0.119 vehicles/m, 50.08 km/h mean):
/// `scenarios/mmwave-highway.toml`'s world.
pub const HIGHWAY: World = World {
    environment: Environment::Rural,
    mobility: "highway",
};

/// An area preset and a mobility model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct World {
    /// Obstacle density preset.
    pub environment: Environment,
    /// `manhattan`, `random` or `highway` (the `vehicular.mobility` names).
    pub mobility: &'static str,
}

impl World {
    /// `<environment>_<mobility>` (`highway` for the highway): the world's
    /// key in `summary.json`.
    pub fn key(&self) -> String {
        if self.mobility == "highway" {
            return "highway".into();
        }
        format!("{}_{}", self.environment.as_str(), self.mobility)
    }
}

/// What every vehicle's application sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Traffic {
    /// Always backlogged (saturating): the controller sets the rate.
    Bulk,
    /// Constant bit rate at a normalized load.
    Cbr(f64),
    /// ON/OFF (exponential, 1 s mean each) at a normalized load while ON.
    OnOff(f64),
}

impl Traffic {
    /// The load key in `summary.json`: `bulk`, or `load_<x>` (CBR on the
    /// grid worlds, ON/OFF on the highway).
    pub fn key(&self) -> String {
        match self {
            Traffic::Bulk => "bulk".into(),
            Traffic::Cbr(l) | Traffic::OnOff(l) => load_key(*l),
        }
    }
}

/// One point of the grid: a world, a hint accuracy, a controller and what
/// the applications send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridPoint {
    /// The world.
    pub world: World,
    /// Hint accuracy (one of [`HINTS`]).
    pub hints: &'static str,
    /// The controller of every vehicle's flow (one of [`CONTROLLERS`]).
    pub cc: &'static str,
    /// The traffic.
    pub traffic: Traffic,
    /// The receivers' ACK policy: `sltp` (every part) or `tcp` (the
    /// headline bulk comparison again, issue 39).
    pub ack_policy: &'static str,
}

impl GridPoint {
    /// The point's scenario, `duration` long (seed 1; each run sets its
    /// own): 20 vehicles with every rate scaled by [`RATE_SCALE`], the
    /// 2 Gbit/s reference rate, a 1 ms core, 1400-byte packets, PF cells
    /// over the backlogged vehicles (`cell_demand = "backlogged"`), the
    /// fading channel and [`HINT_SOURCE`] hints, the senders sampled
    /// every 20 ms, the point's ACK policy. O(1).
    pub fn scenario(&self, duration: Dur) -> ScenarioConfig {
        let mut s = ScenarioConfig::new(duration, 1);
        s.name = Some("mmwave-cvn".into());
        s.metrics.interval = Dur::from_millis(20);
        s.metrics.per_message = false;
        let (traffic, load) = match self.traffic {
            Traffic::Bulk => ("bulk", 1.0),
            Traffic::Cbr(l) => ("cbr", l),
            Traffic::OnOff(l) => ("onoff", l),
        };
        let mut v = VehicularConfig {
            environment: self.world.environment,
            mobility: self.world.mobility.into(),
            hints: self.hints.into(),
            cc: self.cc.into(),
            load,
            traffic: traffic.into(),
            vehicles: 20,
            rate_scale: RATE_SCALE,
            reference_rate: Rate(2_000_000_000),
            core_delay: Dur::from_millis(1),
            payload_bytes: 1400,
            scheduler: "pf".into(),
            channel_model: "fading".into(),
            hint_source: HINT_SOURCE.into(),
            cell_demand: "backlogged".into(),
            // `sltp` is the flows' default: left out, as before issue 39.
            ack_policy: (self.ack_policy != ack_policy::PRIMARY).then(|| self.ack_policy.into()),
            ..VehicularConfig::default()
        };
        if self.world.mobility == "highway" {
            // scenarios/mmwave-highway.toml: 20 vehicles on 168 m of four
            // lanes (0.119 vehicles/m), 8.91–18.91 m/s (50.08 km/h mean).
            v.area_m = [168.0, 40.0];
            v.base_stations = vec![
                [16.8, 8.0],
                [50.4, 32.0],
                [84.0, 8.0],
                [117.6, 32.0],
                [151.2, 8.0],
            ];
            v.speed_min_mps = 8.91;
            v.speed_max_mps = 18.91;
        }
        s.vehicular = Some(v);
        s
    }

    /// Where the point's figures sit in `summary.json`.
    fn key(&self) -> PointKey {
        PointKey {
            ack_policy: self.ack_policy.to_string(),
            scenario: self.world.key(),
            hints: self.hints.to_string(),
            cc: self.cc.to_string(),
            load: self.traffic.key(),
        }
    }
}

/// A part of the grid run with its own number of seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// What the part is for (progress and errors).
    pub name: &'static str,
    /// Its points.
    pub points: Vec<GridPoint>,
    /// Runs per point (seeds 1, 2, …).
    pub seeds: u32,
}

/// The grid: its parts, and the worlds and loads the report walks.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The parts, in run order.
    pub parts: Vec<Part>,
    /// The grid worlds (bulk and CBR), in report order.
    pub worlds: Vec<World>,
    /// The CBR loads of the offered-load figure (empty: no figure).
    pub loads: Vec<f64>,
    /// The highway's ON/OFF loads (empty: no highway).
    pub highway_loads: Vec<f64>,
}

/// Every world × hint mode × controller × traffic, in that nesting order;
/// with hints other than `perfect` only RTW-TCP (the one controller that
/// reads hints: the others' runs would be the perfect-hint runs again,
/// byte for byte, and are copied from them — [`copy_hint_blind`]).
fn cross(
    worlds: &[World],
    hints: &[&'static str],
    traffic: &[Traffic],
    ack: &'static str,
    out: &mut Vec<GridPoint>,
) {
    for &world in worlds {
        for &hints in hints {
            for cc in CONTROLLERS {
                if hints != "perfect" && !reads_hints(cc) {
                    continue;
                }
                for &traffic in traffic {
                    out.push(GridPoint {
                        world,
                        hints,
                        cc,
                        traffic,
                        ack_policy: ack,
                    });
                }
            }
        }
    }
}

/// Whether controller `cc` reacts to link hints (only RTW-TCP does; the
/// others ignore `on_link_hint`, so their runs do not depend on the hint
/// mode).
pub fn reads_hints(cc: &str) -> bool {
    cc == "rtwtcp"
}

/// For every point run with noisy or absent hints, the controllers that
/// ignore hints get the figures of their perfect-hint run of the same
/// world and traffic (the same runs). O(points · log points).
fn copy_hint_blind(results: &mut Results) {
    let mut copies = Vec::new();
    for k in results.keys().filter(|k| k.hints != "perfect") {
        for cc in CONTROLLERS.iter().filter(|cc| !reads_hints(cc)) {
            let from = PointKey {
                hints: "perfect".into(),
                cc: cc.to_string(),
                ..k.clone()
            };
            if let Some(r) = results.get(&from) {
                copies.push((
                    PointKey {
                        cc: cc.to_string(),
                        ..k.clone()
                    },
                    r.clone(),
                ));
            }
        }
    }
    results.extend(copies);
}

impl Plan {
    /// The default grid: bulk × every world × perfect hints × [`SEEDS`];
    /// bulk × noisy/absent hints × [`SIDE_SEEDS`]; CBR at [`LOADS`] ×
    /// perfect hints × [`SIDE_SEEDS`]; the highway's ON/OFF at
    /// [`HIGHWAY_LOADS`] × every hint mode × [`SEEDS`]; noisy and absent
    /// hints for RTW-TCP only (see [`reads_hints`]); and the headline
    /// (bulk, perfect hints, every world) again under TCP's ACK policy ×
    /// [`SEEDS`] (`bulk_tcp`, issue 39). With `quick`: urban/random bulk
    /// with perfect and absent hints, CBR at 0.6 and 1.0, and bulk with
    /// perfect hints under TCP's ACKs, × [`QUICK_SEEDS`]. `seeds` (if
    /// given) replaces every part's seed count. O(points).
    pub fn of(quick: bool, seeds: Option<u32>) -> Plan {
        let mut parts = Vec::new();
        let mut part = |name,
                        worlds: &[World],
                        hints: &[&'static str],
                        traffic: &[Traffic],
                        n,
                        ack: &'static str| {
            let mut points = Vec::new();
            cross(worlds, hints, traffic, ack, &mut points);
            parts.push(Part {
                name,
                points,
                seeds: seeds.unwrap_or(n).max(1),
            });
        };
        if quick {
            let w = &SCENARIOS[3..];
            let loads = [0.6, 1.0];
            part(
                "bulk",
                w,
                &["perfect", "absent"],
                &[Traffic::Bulk],
                QUICK_SEEDS,
                ack_policy::PRIMARY,
            );
            let cbr: Vec<Traffic> = loads.iter().map(|l| Traffic::Cbr(*l)).collect();
            part(
                "cbr",
                w,
                &["perfect"],
                &cbr,
                QUICK_SEEDS,
                ack_policy::PRIMARY,
            );
            part(
                "bulk_tcp",
                w,
                &["perfect"],
                &[Traffic::Bulk],
                QUICK_SEEDS,
                ack_policy::TCP,
            );
            return Plan {
                parts,
                worlds: w.to_vec(),
                loads: loads.to_vec(),
                highway_loads: Vec::new(),
            };
        }
        let sltp = ack_policy::PRIMARY;
        part(
            "bulk",
            &SCENARIOS,
            &["perfect"],
            &[Traffic::Bulk],
            SEEDS,
            sltp,
        );
        part(
            "hints",
            &SCENARIOS,
            &["noisy", "absent"],
            &[Traffic::Bulk],
            SIDE_SEEDS,
            sltp,
        );
        let cbr: Vec<Traffic> = LOADS.iter().map(|l| Traffic::Cbr(*l)).collect();
        part("cbr", &SCENARIOS, &["perfect"], &cbr, SIDE_SEEDS, sltp);
        let onoff: Vec<Traffic> = HIGHWAY_LOADS.iter().map(|l| Traffic::OnOff(*l)).collect();
        part("highway", &[HIGHWAY], &HINTS, &onoff, SEEDS, sltp);
        part(
            "bulk_tcp",
            &SCENARIOS,
            &["perfect"],
            &[Traffic::Bulk],
            SEEDS,
            ack_policy::TCP,
        );
        Plan {
            parts,
            worlds: SCENARIOS.to_vec(),
            loads: LOADS.to_vec(),
            highway_loads: HIGHWAY_LOADS.to_vec(),
        }
    }

    /// Every point of every part, in run order. O(points).
    pub fn points(&self) -> Vec<GridPoint> {
        self.parts.iter().flat_map(|p| p.points.clone()).collect()
    }

    /// Runs the plan makes (points × seeds over the parts). O(parts).
    pub fn runs(&self) -> usize {
        self.parts
            .iter()
            .map(|p| p.points.len() * p.seeds as usize)
            .sum()
    }
}

/// Options of the reproduction (`peregrine reproduce mmwave-cvn`).
#[derive(Debug, Clone)]
pub struct Options {
    /// Urban/random only, bulk and two CBR loads, 3 seeds of 10 s (≤ 60 s).
    pub quick: bool,
    /// Output folder; the report goes to `out/mmwave-cvn/`.
    pub out: PathBuf,
    /// Runs per grid point (seeds 1, 2, …) for every part; `None`: the
    /// plan's own ([`SEEDS`], [`SIDE_SEEDS`], [`QUICK_SEEDS`]).
    pub seeds: Option<u32>,
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
            seeds: None,
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
    /// Aggregate goodput of the 20 flows, Mbit/s.
    throughput_mbps: f64,
    /// Mean of the senders' sampled SRTT, ms.
    rtt_ms: f64,
    /// Retransmitted packets of all flows.
    retransmissions: f64,
    /// Mean RLC (downlink access queue) backlog per vehicle, kB.
    rlc_kb: f64,
    /// Slowest flow's goodput over the mean flow's.
    slowest_share: f64,
    events: u64,
    /// Vehicle 0's sender cwnd (kB) over time (s).
    cwnd_v0: Vec<(f64, f64)>,
    /// Vehicle 0's RLC backlog (kB) over time (s).
    rlc_v0: Vec<(f64, f64)>,
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
    let per_flow: Vec<f64> = r
        .flows
        .iter()
        .map(|f| f.metrics.c.goodput_bytes as f64 * 8.0 / secs / 1e6)
        .collect();
    let total: f64 = per_flow.iter().sum();
    let mean_flow = total / per_flow.len().max(1) as f64;
    let slowest = per_flow.iter().cloned().fold(f64::INFINITY, f64::min);
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
    let retransmissions: u64 = r
        .flows
        .iter()
        .filter_map(|f| f.stats.as_ref())
        .map(|s| s.packets_retransmitted)
        .sum();
    // Direction 0 of `access-v<i>` is gw → vehicle: the RLC buffer.
    let downlinks: Vec<_> = (0..v.config.vehicles)
        .filter_map(|i| r.links.get(2 * (v.first_access_link + i)))
        .collect();
    let samples: usize = downlinks.iter().map(|l| l.samples.len()).sum();
    let backlog: u64 = downlinks
        .iter()
        .flat_map(|l| l.samples.iter().map(|x| x.backlog_bytes))
        .sum();
    let series = |pick: &dyn Fn(usize) -> f64| -> Vec<(f64, f64)> {
        r.flows.first().map_or(Vec::new(), |f| {
            f.metrics
                .samples
                .iter()
                .enumerate()
                .map(|(k, x)| (x.time_ns as f64 / 1e9, pick(k)))
                .collect()
        })
    };
    let cwnd_v0 = r.flows.first().map_or(Vec::new(), |f| {
        f.metrics
            .samples
            .iter()
            .map(|x| (x.time_ns as f64 / 1e9, x.cwnd_bytes as f64 / 1e3))
            .collect()
    });
    let rlc_v0 = series(&|k| {
        downlinks
            .first()
            .and_then(|l| l.samples.get(k))
            .map_or(0.0, |x| x.backlog_bytes as f64 / 1e3)
    });
    Ok(RunResult {
        throughput_mbps: total,
        rtt_ms: rtt,
        retransmissions: retransmissions as f64,
        rlc_kb: backlog as f64 / samples.max(1) as f64 / 1e3,
        slowest_share: if mean_flow > 0.0 {
            slowest / mean_flow
        } else {
            0.0
        },
        events: r.events,
        cwnd_v0,
        rlc_v0,
    })
}

/// Where a point's figures sit in `summary.json`: ACK policy (`sltp` at
/// the top level, `tcp` under `by_ack_policy`), world key
/// (`urban_random`), hint accuracy, controller and load key (`bulk`,
/// `load_0.6`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct PointKey {
    ack_policy: String,
    scenario: String,
    hints: String,
    cc: String,
    load: String,
}

/// Mean and 95 % half-width over a point's seeds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Stat {
    mean: f64,
    ci95: Option<f64>,
}

impl Stat {
    fn of(values: &[f64]) -> Stat {
        Summary::of(values).map_or(Stat::default(), |s| Stat {
            mean: s.mean,
            ci95: s.ci95,
        })
    }
}

/// A point's figures over its seeds; the time series of its first seed.
#[derive(Debug, Clone, Default)]
struct PointStats {
    throughput_mbps: Stat,
    rtt_ms: Stat,
    retransmissions: Stat,
    rlc_kb: Stat,
    slowest_share: Stat,
    /// Per seed, in seed order (for paired differences).
    throughput_by_seed: Vec<f64>,
    /// Per seed, in seed order.
    rtt_by_seed: Vec<f64>,
    cwnd_v0: Vec<(f64, f64)>,
    rlc_v0: Vec<(f64, f64)>,
}

impl PointStats {
    fn of(runs: &[RunResult]) -> PointStats {
        let col = |f: &dyn Fn(&RunResult) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
        PointStats {
            throughput_mbps: Stat::of(&col(&|r| r.throughput_mbps)),
            rtt_ms: Stat::of(&col(&|r| r.rtt_ms)),
            retransmissions: Stat::of(&col(&|r| r.retransmissions)),
            rlc_kb: Stat::of(&col(&|r| r.rlc_kb)),
            slowest_share: Stat::of(&col(&|r| r.slowest_share)),
            throughput_by_seed: col(&|r| r.throughput_mbps),
            rtt_by_seed: col(&|r| r.rtt_ms),
            cwnd_v0: runs.first().map(|r| r.cwnd_v0.clone()).unwrap_or_default(),
            rlc_v0: runs.first().map(|r| r.rlc_v0.clone()).unwrap_or_default(),
        }
    }
}

type Results = BTreeMap<PointKey, PointStats>;

fn load_key(load: f64) -> String {
    format!("load_{load:.1}")
}

/// Run the reproduction, reporting to `progress`, and write
/// `out/mmwave-cvn/`. Cost: one simulation per grid point and seed, one
/// channel recording per world and seed.
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
    anyhow::ensure!(
        args.seeds.is_none_or(|s| (1..=30).contains(&s)),
        "--seeds must be in 1 … 30"
    );
    let plan = Plan::of(args.quick, args.seeds);
    let duration = Dur::from_secs_f64(duration_s);
    let runs = plan.runs();
    let cache: Cache = Mutex::new(BTreeMap::new());
    let mut results = Results::new();
    let mut events = 0u64;
    let mut done_before = 0usize;
    progress.start("mmwave-cvn", runs);
    for part in &plan.parts {
        let how = PlanRuns {
            seeds: part.seeds,
            base_seed: 1,
            threads: args.threads,
        };
        let outcome = run_plan(
            &part.points,
            how,
            &|done, _| progress.update(done_before + done, runs),
            |p| {
                format!(
                    "mmwave-cvn {} {} hints {} {} {}",
                    part.name,
                    p.world.key(),
                    p.hints,
                    p.cc,
                    p.traffic.key()
                )
            },
            |p, seed| run_one(p, duration, seed, &cache),
        );
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                progress.finish();
                return Err(e);
            }
        };
        done_before += part.points.len() * part.seeds as usize;
        for (point, runs) in part.points.iter().zip(&outcome.runs) {
            events += runs.iter().map(|r| r.events).sum::<u64>();
            results.insert(point.key(), PointStats::of(runs));
        }
    }
    progress.finish();
    // The make-before-break part: its own few one-vehicle runs.
    let handover = handover::run_part(args.seeds.unwrap_or(handover::HANDOVER_SEEDS))?;
    copy_hint_blind(&mut results);
    let counts = cache
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|((env, mob, _), t)| {
            let key = if mob == HIGHWAY.mobility {
                HIGHWAY.key()
            } else {
                format!("{env}_{mob}")
            };
            (key, t)
        })
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
    let mut keys: Vec<String> = plan.worlds.iter().map(World::key).collect();
    if !plan.highway_loads.is_empty() {
        keys.push(HIGHWAY.key());
    }
    let mut summary = summary_json(&results, &keys);
    summary.handover_multicast = Some(handover.clone());
    let text = serde_json::to_string_pretty(&summary)? + "\n";
    std::fs::write(dir.join("summary.json"), text)
        .with_context(|| format!("cannot write {}/summary.json", dir.display()))?;
    let ctx = ReportCtx {
        dir: &dir,
        results: &results,
        plan: &plan,
        keys: &keys,
        timelines: &counts,
        duration_s,
        quick: args.quick,
        handover: &handover,
    };
    let (report, comparisons) = report::write(&ctx)?;
    let console = super::console_line(&report, &dir, runs, events, started.elapsed().as_secs_f64());
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

/// The 95 % confidence half-widths of a point's figures (Student t over
/// its seeds; 0 with a single seed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Ci95 {
    /// Of the aggregate throughput, Mbit/s.
    pub throughput_mbps: f64,
    /// Of the mean RTT, ms.
    pub rtt_ms: f64,
    /// Of the retransmissions.
    pub retransmissions: f64,
}

/// One grid point's figures in `summary.json` (means over seeds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PointFigures {
    /// Aggregate throughput of the 20 vehicles, Mbit/s (scaled rates).
    pub throughput_mbps: f64,
    /// Mean smoothed RTT, ms.
    pub rtt_ms: f64,
    /// Retransmitted packets of the 20 flows over a run.
    pub retransmissions: f64,
    /// The 95 % half-widths of the three figures above.
    pub ci95: Ci95,
}

/// `summary.json`'s tree of figures: scenario → `hints_<mode>` →
/// controller → load.
pub type Scenarios = Keyed<Keyed<Keyed<Keyed<PointFigures>>>>;

/// One ACK policy's figures under `summary.json`'s `by_ack_policy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AckPolicySummary {
    /// As [`MmwaveSummary::scenarios`], for the points run under it.
    pub scenarios: Scenarios,
}

/// `summary.json`: `scenarios["urban_random"]["hints_perfect"]["rtwtcp"]["bulk"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MmwaveSummary {
    /// By scenario (`<environment>_<mobility>` or `highway`), hint mode
    /// (`hints_<mode>`), controller and load (`bulk` for saturating runs,
    /// `load_<x>` for CBR — ON/OFF on the highway).
    pub scenarios: Scenarios,
    /// The headline points (bulk, perfect hints) under another ACK policy
    /// (issue 39): `by_ack_policy.tcp.scenarios.<scenario>.hints_perfect.<cc>.bulk`,
    /// TCP's delayed ACK, the seed's transport; `scenarios` above are the
    /// `sltp` runs. Empty if no point ran under another policy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_ack_policy: BTreeMap<String, AckPolicySummary>,
    /// The make-before-break part (issue 29): unicast vs the group stream
    /// across handovers (`handover.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover_multicast: Option<handover::HandoverSummary>,
}

/// The `scenarios` tree of `summary.json` for the points run under ACK
/// policy `ack`. O(points × keys).
fn scenarios_of(results: &Results, keys: &[String], ack: &str) -> Scenarios {
    let mut scen = Keyed::new();
    for k in keys {
        let mut hm = Keyed::new();
        for h in HINTS {
            let mut cm = Keyed::new();
            for cc in CONTROLLERS {
                let mut lm = Keyed::new();
                // Bulk first, then the loads in increasing order.
                let mut here: Vec<(&PointKey, &PointStats)> = results
                    .iter()
                    .filter(|(p, _)| {
                        p.ack_policy == ack && &p.scenario == k && p.hints == h && p.cc == cc
                    })
                    .collect();
                here.sort_by_key(|(p, _)| (p.load != "bulk", p.load.clone()));
                for (p, r) in here {
                    let hw = |s: Stat| s.ci95.unwrap_or(0.0);
                    lm.push(
                        p.load.clone(),
                        PointFigures {
                            throughput_mbps: r.throughput_mbps.mean,
                            rtt_ms: r.rtt_ms.mean,
                            retransmissions: r.retransmissions.mean,
                            ci95: Ci95 {
                                throughput_mbps: hw(r.throughput_mbps),
                                rtt_ms: hw(r.rtt_ms),
                                retransmissions: hw(r.retransmissions),
                            },
                        },
                    );
                }
                if !lm.0.is_empty() {
                    cm.push(cc, lm);
                }
            }
            if !cm.0.is_empty() {
                hm.push(format!("hints_{h}"), cm);
            }
        }
        // Another policy's tree holds only the worlds it ran.
        if ack == ack_policy::PRIMARY || !hm.0.is_empty() {
            scen.push(k.clone(), hm);
        }
    }
    scen
}

fn summary_json(results: &Results, keys: &[String]) -> MmwaveSummary {
    let by_ack_policy = [ack_policy::TCP]
        .into_iter()
        .filter(|a| results.keys().any(|p| p.ack_policy == *a))
        .map(|a| {
            let scenarios = scenarios_of(results, keys, a);
            (a.to_string(), AckPolicySummary { scenarios })
        })
        .collect();
    MmwaveSummary {
        scenarios: scenarios_of(results, keys, ack_policy::PRIMARY),
        by_ack_policy,
        handover_multicast: None,
    }
}

/// What the report needs.
struct ReportCtx<'a> {
    dir: &'a Path,
    results: &'a Results,
    plan: &'a Plan,
    /// Scenario keys in report order (grid worlds, then `highway`).
    keys: &'a [String],
    timelines: &'a BTreeMap<String, Vec<Arc<ChannelTimeline>>>,
    duration_s: f64,
    quick: bool,
    /// The make-before-break part's figures.
    handover: &'a handover::HandoverSummary,
}

impl ReportCtx<'_> {
    /// A point's figures under SLTP's ACK policy.
    fn get(&self, scen: &str, hints: &str, cc: &str, load: &str) -> Option<&PointStats> {
        self.get_under(ack_policy::PRIMARY, scen, hints, cc, load)
    }

    /// A point's figures under ACK policy `ack`.
    fn get_under(
        &self,
        ack: &str,
        scen: &str,
        hints: &str,
        cc: &str,
        load: &str,
    ) -> Option<&PointStats> {
        self.results.get(&PointKey {
            ack_policy: ack.to_string(),
            scenario: scen.to_string(),
            hints: hints.to_string(),
            cc: cc.to_string(),
            load: load.to_string(),
        })
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

pub mod handover;
mod report;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_keys_follow_the_contract() {
        let mut r = Results::new();
        let runs = [3.0, 4.0, 5.0].map(|t| RunResult {
            throughput_mbps: t,
            rtt_ms: 10.0,
            retransmissions: 7.0,
            ..RunResult::default()
        });
        for (load, runs) in [("bulk", &runs[..]), ("load_0.6", &runs[..1])] {
            r.insert(
                PointKey {
                    ack_policy: "sltp".into(),
                    scenario: "urban_random".into(),
                    hints: "perfect".into(),
                    cc: "rtwtcp".into(),
                    load: load.into(),
                },
                PointStats::of(runs),
            );
        }
        let s = summary_json(&r, &["urban_random".into()]);
        let v = serde_json::to_value(&s).expect("serializes");
        let leaf = &v["scenarios"]["urban_random"]["hints_perfect"]["rtwtcp"]["bulk"];
        assert_eq!(leaf["throughput_mbps"], 4.0);
        assert_eq!(leaf["rtt_ms"], 10.0);
        assert_eq!(leaf["retransmissions"], 7.0);
        // t(0.975, 2) · s / √3 with s = 1.
        let hw = leaf["ci95"]["throughput_mbps"].as_f64().expect("a number");
        assert!((hw - 4.303 / 3f64.sqrt()).abs() < 1e-3, "{hw}");
        assert_eq!(leaf["ci95"]["rtt_ms"], 0.0);
        // Bulk first, then the loads; a single seed has a zero half-width.
        let loads = s
            .scenarios
            .get("urban_random")
            .and_then(|h| h.get("hints_perfect"));
        let loads = loads.and_then(|c| c.get("rtwtcp")).expect("controller");
        assert_eq!(loads.keys().collect::<Vec<_>>(), ["bulk", "load_0.6"]);
        assert_eq!(
            loads.get("load_0.6").expect("cbr").ci95.throughput_mbps,
            0.0
        );
        assert_eq!(load_key(0.2), "load_0.2");
        assert_eq!(load_key(1.0), "load_1.0");
        assert_eq!(Traffic::Bulk.key(), "bulk");
        assert_eq!(Traffic::OnOff(0.6).key(), "load_0.6");
    }
}

#[cfg(test)]
mod grid_tests {
    use super::*;

    /// A typed grid point is the scenario document it stands for, with
    /// the issue-23 models named on purpose (PF, fading, a named hint
    /// source), cells that follow traffic (issue 39) and bulk traffic.
    #[test]
    fn a_point_is_the_document_with_the_new_models() {
        let text = "name = \"mmwave-cvn\"\nduration = \"3s\"\nseed = 1\n\
             [metrics]\ninterval = \"20ms\"\nper_message = false\n\
             [vehicular]\nvehicles = 20\nrate_scale = 0.025\n\
             reference_rate = \"2Gbps\"\ncore_delay = \"1ms\"\npayload_bytes = 1400\n\
             scheduler = \"pf\"\nchannel_model = \"fading\"\nhint_source = \"mobility\"\n\
             cell_demand = \"backlogged\"\n";
        let sets = [
            "vehicular.environment=\"rural\"",
            "vehicular.mobility=\"random\"",
            "vehicular.hints=\"noisy\"",
            "vehicular.cc=\"bbr\"",
            "vehicular.traffic=\"bulk\"",
        ]
        .map(String::from);
        let former = Scenario::from_toml_str(text, "mmwave-cvn", &sets).unwrap();
        let point = GridPoint {
            world: SCENARIOS[1],
            hints: "noisy",
            cc: "bbr",
            traffic: Traffic::Bulk,
            ack_policy: "sltp",
        };
        let typed = Scenario::from_config(point.scenario(Dur::from_secs_f64(3.0)), "mmwave-cvn");
        let typed = typed.unwrap();
        assert_eq!(
            format!("{:?}", typed.config),
            format!("{:?}", former.config)
        );
        assert_eq!(format!("{:?}", typed.model), format!("{:?}", former.model));
        assert_eq!(point.key().scenario, "rural_random");
        assert_eq!(point.key().load, "bulk");
    }

    /// The highway point is `scenarios/mmwave-highway.toml`'s world with
    /// the point's controller, hints and load, and cells that follow
    /// traffic.
    #[test]
    fn the_highway_point_is_the_scenario_file() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/mmwave-highway.toml"
        );
        let text = std::fs::read_to_string(path).expect("the scenario file");
        let sets = [
            "name=\"mmwave-cvn\"",
            "duration=\"3s\"",
            "metrics.interval=\"20ms\"",
            "vehicular.cc=\"cubic\"",
            "vehicular.load=0.6",
            "vehicular.cell_demand=\"backlogged\"",
        ]
        .map(String::from);
        let file = Scenario::from_toml_str(&text, "mmwave-cvn", &sets).unwrap();
        let point = GridPoint {
            world: HIGHWAY,
            hints: "perfect",
            cc: "cubic",
            traffic: Traffic::OnOff(0.6),
            ack_policy: "sltp",
        };
        let typed = Scenario::from_config(point.scenario(Dur::from_secs_f64(3.0)), "mmwave-cvn");
        let (typed, file) = (typed.unwrap(), file);
        let (a, b) = (
            typed.model.vehicular.expect("vehicular").config,
            file.model.vehicular.expect("vehicular").config,
        );
        assert_eq!(a, b);
        assert_eq!(point.key().scenario, "highway");
    }

    #[test]
    fn the_grids_have_their_parts_and_seeds() {
        let quick = Plan::of(true, None);
        assert!(quick
            .points()
            .iter()
            .all(|p| p.world.key() == "urban_random"));
        assert_eq!(quick.runs(), (4 + 1 + 2 * 4 + 4) * QUICK_SEEDS as usize);
        let tcp = |p: &Plan| {
            p.points()
                .iter()
                .filter(|g| g.ack_policy == "tcp")
                .map(|g| (g.world.key(), g.hints, g.traffic.key()))
                .collect::<Vec<_>>()
        };
        // TCP's ACKs: the headline (bulk, perfect hints), every controller.
        assert_eq!(
            tcp(&quick),
            vec![("urban_random".into(), "perfect", "bulk".into()); 4]
        );
        let full = Plan::of(false, None);
        let names: Vec<&str> = full.parts.iter().map(|p| p.name).collect();
        assert_eq!(names, ["bulk", "hints", "cbr", "highway", "bulk_tcp"]);
        assert_eq!(tcp(&full).len(), 4 * 4);
        let sizes: Vec<(usize, u32)> = full
            .parts
            .iter()
            .map(|p| (p.points.len(), p.seeds))
            .collect();
        assert_eq!(
            sizes,
            [
                (4 * 4, SEEDS),
                (4 * 2, SIDE_SEEDS),
                (4 * 4 * LOADS.len(), SIDE_SEEDS),
                (3 * (4 + 2), SEEDS),
                (4 * 4, SEEDS)
            ]
        );
        const { assert!(SEEDS >= 5 && SIDE_SEEDS >= 3 && DURATION_S >= 30.0) };
        assert!(Plan::of(false, Some(2)).parts.iter().all(|p| p.seeds == 2));
    }
}
