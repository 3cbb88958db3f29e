//! `peregrine reproduce fanet`: seed 001 §3 in the laboratory (issue 10).
//!
//! The world is `scenarios/fanet.toml`: 10 UAVs placed uniformly at random
//! in a 300 × 300 × 100 m box, Gauss-Markov 3-D mobility (20 m/s mean
//! speed, α = 0.85, 0.1 s steps), one shared 802.11b medium at a fixed
//! 5 Mbit/s data rate under the interference-based DCF, drop-tail
//! transmit queues of 100 packets, OLSR as broadcast traffic (issue 22;
//! the statistical MAC and oracle routes before it), 536-byte payloads,
//! slow-start, flows opening at 5 s, 100 s. The box is a little larger
//! than the 5 Mbit/s range (≈180 m) so that links break and re-form all
//! the time while the swarm stays mostly connected.
//!
//! Two cases, each for the 13 controllers × N seeds, through the sweep
//! runner ([`crate::plan::run_plan`], parallel), the primary one under both
//! ACK policies (issue 39: `sltp`, the default, and `tcp`, the seed's
//! TCP delayed ACK — `summary.json`'s `by_ack_policy.tcp`):
//! * **primary**: one bulk flow uav0 → uav1, the eight others relaying and
//!   moving — the case whose numbers seed 001 publishes (its throughput
//!   percentages are received packets × 588 B × 8 / (100 s × 5 Mbit/s));
//! * **extended**: 5 simultaneous bulk flows (uav0→1, 2→3, …, 8→9).
//!
//! Output, in `DIR/fanet/`: `summary.json` (per case, means over seeds
//! and a sibling `ci95`, the extended case under `extended`:
//! [`FanetSummary`]), `report.md` with its charts in
//! `plots/`, and `runs.jsonl` (every run's measurements: a [`RunRecord`]
//! per line).

use crate::experiment::Summary;
use crate::plan::{run_plan, PlanRuns};
use crate::progress::Progress;
use crate::report::Comparison;
use crate::reproduce::ack_policy;
use crate::Keyed;
use anyhow::Context as _;
use peregrine_sim::scenario::units::Dur;
use peregrine_sim::scenario::ScenarioConfig;
use peregrine_sim::{Scenario, SimResults};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The controllers of seed 001, in its order, plus S-HTCP: the seed's
/// chosen subset, not the registry's list (which has more) — every name is
/// a registry name (`peregrine_cc::registry`), checked by `tests/experiments.rs`.
pub const CONTROLLERS: [&str; 13] = [
    "newreno",
    "hybla",
    "highspeed",
    "htcp",
    "vegas",
    "scalable",
    "veno",
    "bic",
    "yeah",
    "cubic",
    "westwood",
    "illinois",
    "shtcp",
];

/// Bytes per received packet in seed 001's throughput percentages.
pub const SEED_PACKET_BYTES: f64 = 588.0;
/// The channel data rate the percentages refer to, bit/s.
pub const CHANNEL_RATE_BPS: f64 = 5e6;
/// The first seed (run `i` uses `BASE_SEED + i`).
pub const BASE_SEED: u64 = 1;

mod report;

/// Options of the reproduction (`peregrine reproduce fanet`).
#[derive(Debug, Clone)]
pub struct Options {
    /// 2 seeds of 30 s instead of N seeds of 100 s (under two minutes).
    pub quick: bool,
    /// Seeds per controller (default 10; 2 with `quick`).
    pub seeds: Option<u32>,
    /// Output folder; the results go to `out/fanet/`.
    pub out: PathBuf,
    /// Simulated duration per run, e.g. `5s` (tests; default 100 s, 30 s with `quick`).
    pub duration: Option<String>,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// The command line, for the report's "how to rerun" line.
    pub command: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            quick: false,
            seeds: None,
            out: PathBuf::from("repro-out"),
            duration: None,
            threads: 0,
            command: "peregrine reproduce fanet".into(),
        }
    }
}

/// What [`run`] produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// `summary.json` as written (primary case: means and 95 % CIs per controller).
    pub summary: FanetSummary,
    /// The output folder (`out/fanet`).
    pub dir: PathBuf,
    /// The report written.
    pub report: PathBuf,
    /// Simulated events over all runs.
    pub events: u64,
    /// Runs made.
    pub runs: usize,
    /// What the command prints.
    pub console: String,
    /// Fig. 4, throughput per controller beside seed 001's (`published`
    /// is `None` where its numbers are unavailable).
    pub comparisons: Vec<Comparison>,
}

/// `scenarios/fanet.toml`, embedded: the world every run of both cases uses.
pub const FANET_TOML: &str = include_str!("../../../../../scenarios/fanet.toml");

/// The scenario of one case: `scenarios/fanet.toml` run for `duration`
/// with `flows` bulk flows `bulk<i>`: uav(2i) → uav(2i+1), each a copy of
/// the file's flow. Fails only if the embedded file is invalid or `flows`
/// exceeds the file's 5 node pairs. O(nodes + flows).
pub fn scenario(duration: Dur, flows: usize) -> anyhow::Result<ScenarioConfig> {
    let file = Scenario::from_toml_str(FANET_TOML, "scenarios/fanet.toml (embedded)", &[])
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut config = file.config;
    anyhow::ensure!(
        2 * flows <= config.nodes.len(),
        "the fanet world has {} nodes, too few for {flows} flows",
        config.nodes.len()
    );
    let template = config
        .flows
        .first()
        .cloned()
        .context("scenarios/fanet.toml has a flow")?;
    config.duration = duration;
    config.seed = BASE_SEED;
    config.flows = (0..flows)
        .map(|f| {
            let mut flow = template.clone();
            flow.name = Some(format!("bulk{f}"));
            flow.src = format!("uav{}", 2 * f);
            flow.dst = format!("uav{}", 2 * f + 1);
            flow
        })
        .collect();
    Ok(config)
}

/// Seconds of a duration written `100s`, `30 s` or `100`.
fn parse_duration_s(text: &str) -> anyhow::Result<f64> {
    let t = text.trim().trim_end_matches('s').trim();
    let s: f64 = t
        .parse()
        .with_context(|| format!("--duration {text:?}: expected seconds such as `5s`"))?;
    anyhow::ensure!(
        s.is_finite() && s > 0.0 && s <= 1e6,
        "--duration {text:?}: must be between 0 and 1e6 s"
    );
    Ok(s)
}

/// One run: `config` with every flow under controller `cc`, seeded `seed`.
fn run_one(config: &ScenarioConfig, cc: &str, seed: u64) -> anyhow::Result<RunRecord> {
    let mut config = config.clone();
    config.seed = seed;
    for f in &mut config.flows {
        f.cc = cc.to_string();
    }
    let scenario = Scenario::from_config(config, "fanet").map_err(|e| anyhow::anyhow!("{e}"))?;
    let res = peregrine_sim::run(&scenario).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(measure(&res))
}

/// One run's measurements: a line of `runs.jsonl` (its `run`), fields in
/// the order written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Simulated events.
    pub events: u64,
    /// Route changes over all ordered pairs of nodes.
    pub route_changes_total: u64,
    /// The wireless world's counters (`None`: not a wireless scenario).
    pub wireless: Option<WirelessRecord>,
    /// Per flow, in configuration order.
    pub flows: Vec<FlowRecord>,
}

/// The wireless world's counters of one run (the `wireless` object of
/// the engine's `summary.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WirelessRecord {
    /// Route recomputations.
    pub route_recomputations: u64,
    /// Route changes over all ordered pairs of nodes.
    pub route_changes_total: u64,
    /// Per flow, the routes of its (source, destination) pair.
    pub flows: Vec<RouteRecord>,
    /// Frames put on the medium.
    pub frames: u64,
    /// MAC transmission attempts.
    pub mac_attempts: u64,
    /// Attempts lost to collisions.
    pub mac_collisions: u64,
    /// Frames dropped after the last MAC attempt.
    pub mac_drops: u64,
    /// Packets dropped for want of a route.
    pub no_route_drops: u64,
    /// Packets dropped on a route that broke under them (oracle only:
    /// under OLSR such packets spend their MAC retries instead).
    pub broken_route_drops: u64,
    /// MAC retransmissions (attempts beyond each frame's first).
    pub mac_retries: u64,
    /// `"oracle"` or `"olsr"`.
    pub routing: String,
    /// OLSR packets' wire bytes (IP/UDP included), 0 under the oracle.
    pub control_bytes: u64,
    /// Share of all airtime taken by OLSR's broadcasts, 0 under the oracle.
    pub control_airtime_share: f64,
}

/// The routes of one flow's (source, destination) pair.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RouteRecord {
    /// Times its path changed (including becoming (un)reachable).
    pub route_changes: u64,
    /// Fraction of recomputations (OLSR: 100 ms samples) at which the
    /// destination was reachable, 6 decimals.
    pub reachable_fraction: f64,
    /// OLSR: fraction of samples at which the tables' path was valid.
    pub route_valid_fraction: Option<f64>,
}

/// One flow's measurements in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowRecord {
    /// DATA packets sent.
    pub tx_packets: u64,
    /// DATA packets received.
    pub rx_packets: u64,
    /// Packet delivery ratio, received / sent (NaN, written null, if none
    /// sent).
    pub pdr: f64,
    /// Received packets × 588 B × 8 over the run, % of 5 Mbit/s (seed 001's throughput).
    pub throughput_pct: f64,
    /// Packets that left the sender's queue, the same way.
    pub processed_pct: f64,
    /// Mean one-way delay, ms.
    pub delay_ms_mean: Option<f64>,
    /// Mean |ΔD| jitter between consecutive packets, ms.
    pub jitter_ms_mean: Option<f64>,
    /// Seed 001 Eq. 6 (cumulative moving average of |Δcwnd|) at the end, bytes.
    pub cwnd_cma_final: f64,
    /// Mean of the sampled cwnd, bytes.
    pub cwnd_mean: Option<f64>,
    /// Standard deviation of the sampled cwnd, bytes.
    pub cwnd_std: Option<f64>,
    /// Queue and channel drops.
    pub drops: u64,
    /// Route changes of the flow's (source, destination) pair.
    pub route_changes: u64,
    /// Fraction of recomputations (OLSR: samples) with the destination
    /// reachable from the source: the route availability.
    pub reachable_fraction: Option<f64>,
    /// Packets the destination sent (SLTP's ACKs; OLSR's own packets
    /// left out) per DATA packet it received — only in a one-flow run,
    /// where the destination relays nothing else.
    pub acks_per_data: Option<f64>,
    /// Throughput per sampling interval, Mbit/s (588-byte packets).
    pub throughput_mbps_per_s: Vec<f64>,
    /// Drops per second, per sampling interval.
    pub drops_per_s: Vec<f64>,
}

/// The measurements of one run. O(flows × samples).
pub fn measure(res: &SimResults) -> RunRecord {
    let dur_s = res.duration_ns as f64 / 1e9;
    let pct = |packets: f64| 100.0 * packets * SEED_PACKET_BYTES * 8.0 / (dur_s * CHANNEL_RATE_BPS);
    let w = res.wireless.as_ref();
    let flows = res
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let m = &f.metrics;
            let c = &m.c;
            let per_packet = if c.tx_packets > 0 {
                c.tx_bytes as f64 / c.tx_packets as f64
            } else {
                1.0
            };
            let cw: Vec<f64> = m.samples.iter().map(|s| s.cwnd_bytes as f64).collect();
            let cw_s = Summary::of(&cw);
            let interval_s = res.interval_ns as f64 / 1e9;
            let routes = w.and_then(|w| w.flows.get(i));
            let (abs_jitter_sum_ns, jitter_samples) = (m.jitter_abs_ns.sum, m.jitter_abs_ns.count);
            FlowRecord {
                tx_packets: c.tx_packets,
                rx_packets: c.rx_packets,
                // No DATA sent (the connection never opened): undefined,
                // written null and left out of the means.
                pdr: if c.tx_packets > 0 {
                    c.rx_packets as f64 / c.tx_packets as f64
                } else {
                    f64::NAN
                },
                throughput_pct: pct(c.rx_packets as f64),
                processed_pct: pct(c.processed_bytes as f64 / per_packet),
                delay_ms_mean: f.delay_mean_ms(),
                jitter_ms_mean: (jitter_samples > 0)
                    .then(|| abs_jitter_sum_ns / jitter_samples as f64 / 1e6),
                cwnd_cma_final: m.cwnd_cma(),
                cwnd_mean: cw_s.map(|s| s.mean),
                cwnd_std: cw_s.and_then(|s| s.std),
                drops: c.queue_drops + c.channel_drops,
                route_changes: routes.map_or(0, |r| r.route_changes),
                reachable_fraction: routes.map(|r| r.reachable_fraction),
                acks_per_data: acks_per_data(res, &f.dst, c.rx_packets),
                throughput_mbps_per_s: m
                    .samples
                    .iter()
                    .map(|s| s.delta.rx_packets as f64 * SEED_PACKET_BYTES * 8.0 / interval_s / 1e6)
                    .collect(),
                drops_per_s: m
                    .samples
                    .iter()
                    .map(|s| (s.delta.queue_drops + s.delta.channel_drops) as f64 / interval_s)
                    .collect(),
            }
        })
        .collect();
    RunRecord {
        events: res.events,
        route_changes_total: w.map_or(0, |w| w.route_changes_total),
        wireless: w.map(|w| WirelessRecord {
            route_recomputations: w.recomputations,
            route_changes_total: w.route_changes_total,
            flows: w
                .flows
                .iter()
                .map(|f| RouteRecord {
                    route_changes: f.route_changes,
                    // As the engine's summary.json rounds it.
                    reachable_fraction: (f.reachable_fraction * 1e6).round() / 1e6,
                    route_valid_fraction: f.valid_fraction.map(|x| (x * 1e6).round() / 1e6),
                })
                .collect(),
            frames: w.stats.frames,
            mac_attempts: w.stats.attempts,
            mac_collisions: w.stats.collisions,
            mac_drops: w.stats.mac_drops,
            no_route_drops: w.stats.no_route_drops,
            broken_route_drops: w.stats.broken_route_drops,
            mac_retries: w
                .dcf
                .as_ref()
                .map_or(w.stats.attempts.saturating_sub(w.stats.frames), |d| {
                    d.retries
                }),
            routing: if w.olsr.is_some() { "olsr" } else { "oracle" }.into(),
            control_bytes: w.olsr.as_ref().map_or(0, |o| o.control_bytes),
            control_airtime_share: w.control_airtime_share(),
        }),
        flows,
    }
}

/// Packets sent by node `dst`'s interface (`wifi/<dst>`) minus its OLSR
/// packets, per DATA packet received; `None` with several flows (the
/// node may relay theirs) or nothing received. O(links).
fn acks_per_data(res: &SimResults, dst: &str, rx_packets: u64) -> Option<f64> {
    if res.flows.len() != 1 || rx_packets == 0 {
        return None;
    }
    let name = format!("wifi/{dst}");
    let (i, link) = res.links.iter().enumerate().find(|(_, l)| l.name == name)?;
    let olsr = res
        .wireless
        .as_ref()
        .and_then(|w| w.olsr.as_ref())
        .and_then(|o| o.control_packets_by_node.get(i).copied())
        .unwrap_or(0);
    let sent = link.stats.enqueued_packets.saturating_sub(olsr);
    Some(sent as f64 / rx_packets as f64)
}

/// One case's outcome: runs[controller][seed].
pub struct CaseRuns {
    /// The scenario (controller and seed set per run).
    pub scenario: ScenarioConfig,
    /// Per controller (in [`CONTROLLERS`] order), per seed, [`measure`]'s record.
    pub runs: Vec<Vec<RunRecord>>,
}

fn run_case(
    config: ScenarioConfig,
    seeds: u32,
    threads: usize,
    progress: &dyn Progress,
    offset: usize,
    total: usize,
) -> anyhow::Result<CaseRuns> {
    let how = PlanRuns {
        seeds,
        base_seed: BASE_SEED,
        threads,
    };
    let cb = |done: usize, _: usize| progress.update(offset + done, total);
    let outcome = run_plan(
        &CONTROLLERS,
        how,
        &cb,
        |cc| format!("fanet, {} flow(s), {cc}", config.flows.len()),
        |cc, seed| run_one(&config, cc, seed),
    )?;
    Ok(CaseRuns {
        scenario: config,
        runs: outcome.runs,
    })
}

/// Summary over the seeds of one controller of `pick` of flow `flow`
/// (non-finite values, written `null`, are left out).
pub fn stat(
    runs: &[RunRecord],
    flow: usize,
    pick: impl Fn(&FlowRecord) -> Option<f64>,
) -> Option<Summary> {
    let xs: Vec<f64> = runs
        .iter()
        .filter_map(|r| pick(r.flows.get(flow)?))
        .filter(|x| x.is_finite())
        .collect();
    Summary::of(&xs)
}

/// A line of `runs.jsonl`: one run of one case.
#[derive(Debug, Serialize)]
struct RunLine<'a> {
    /// `primary`, `extended` or `primary_tcp` (the primary case under
    /// TCP's ACK policy).
    case: &'a str,
    /// The controller.
    cc: &'a str,
    /// The run's seed.
    seed: u64,
    /// What it measured.
    run: &'a RunRecord,
}

/// One controller's figures in `summary.json` (a mean over seeds, or its
/// 95 % CI); `None` where no seed measured it (or one seed: no CI).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ControllerFigures {
    /// Packet delivery ratio (0–1).
    pub pdr: Option<f64>,
    /// Throughput as seed 001 gives it: % of the 5 Mbit/s channel.
    pub throughput_pct: Option<f64>,
    /// Mean one-way delay, ms.
    pub delay_ms_mean: Option<f64>,
    /// Mean |ΔD| jitter, ms.
    pub jitter_ms_mean: Option<f64>,
    /// Seed 001 Eq. 6 at the end of the run, bytes.
    pub cwnd_cma_final: Option<f64>,
    /// Route changes on the flow's path.
    pub route_changes: Option<f64>,
    /// Routing overhead and route availability (issue 22).
    pub routing: RoutingFigures,
    /// MAC counters over all nodes, per run (issue 22).
    pub mac: MacFigures,
}

/// `routing.*` of a controller's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoutingFigures {
    /// OLSR's wire bytes per simulated second, all nodes (0: oracle).
    pub control_bytes_per_s: Option<f64>,
    /// Share of all airtime taken by OLSR's broadcasts (0–1; 0: oracle).
    pub airtime_share: Option<f64>,
    /// Fraction of samples at which the flow's source had a route to its
    /// destination (0–1; a mean over the flows in the extended case).
    pub route_availability: Option<f64>,
}

/// `mac.*` of a controller's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MacFigures {
    /// MAC retransmissions per run.
    pub retries: Option<f64>,
    /// Data attempts lost to collisions per run.
    pub collisions: Option<f64>,
}

/// One case of `summary.json`: per controller, means and CIs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseSummary {
    /// Means over seeds.
    pub controllers: Keyed<ControllerFigures>,
    /// The 95 % confidence intervals of those means (half-widths).
    pub ci95: Keyed<ControllerFigures>,
}

/// `summary.json`: the primary case per controller (in [`CONTROLLERS`]
/// order) at the top level, as before issue 22, and the extended case
/// under `extended` (per-flow figures averaged over its 5 flows in each
/// run, except `throughput_pct`, their sum).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FanetSummary {
    /// Means over seeds.
    pub controllers: Keyed<ControllerFigures>,
    /// The 95 % confidence intervals of those means (half-widths).
    pub ci95: Keyed<ControllerFigures>,
    /// The extended case.
    pub extended: CaseSummary,
    /// The primary case under another ACK policy (issue 39): `tcp`, TCP's
    /// delayed ACK, the seed's transport. The top-level `controllers` are
    /// the `sltp` runs.
    #[serde(default)]
    pub by_ack_policy: std::collections::BTreeMap<String, CaseSummary>,
}

/// Summary over seeds of a whole-run value (non-finite left out).
fn per_run(runs: &[RunRecord], pick: impl Fn(&RunRecord) -> Option<f64>) -> Option<Summary> {
    let xs: Vec<f64> = runs
        .iter()
        .filter_map(pick)
        .filter(|x| x.is_finite())
        .collect();
    Summary::of(&xs)
}

/// A run's value of a per-flow figure: the mean over its flows of the
/// finite values of `pick`, or their sum (`sum`).
fn over_flows(r: &RunRecord, sum: bool, pick: impl Fn(&FlowRecord) -> Option<f64>) -> Option<f64> {
    let xs: Vec<f64> = r
        .flows
        .iter()
        .filter_map(pick)
        .filter(|x| x.is_finite())
        .collect();
    if xs.is_empty() {
        return None;
    }
    let total: f64 = xs.iter().sum();
    Some(if sum { total } else { total / xs.len() as f64 })
}

/// Means and CIs per controller of one case. O(controllers × seeds × flows).
fn case_summary(case: &CaseRuns, duration_s: f64) -> CaseSummary {
    let mut means = Keyed::new();
    let mut cis = Keyed::new();
    for (c, runs) in CONTROLLERS.iter().zip(&case.runs) {
        let fl = |sum: bool, pick: fn(&FlowRecord) -> Option<f64>| {
            per_run(runs, move |r| over_flows(r, sum, pick))
        };
        let w = |pick: fn(&WirelessRecord, f64) -> f64| {
            per_run(runs, move |r| {
                r.wireless.as_ref().map(|w| pick(w, duration_s))
            })
        };
        let stats = [
            fl(false, |r| Some(r.pdr)),
            fl(true, |r| Some(r.throughput_pct)),
            fl(false, |r| r.delay_ms_mean),
            fl(false, |r| r.jitter_ms_mean),
            fl(false, |r| Some(r.cwnd_cma_final)),
            fl(false, |r| Some(r.route_changes as f64)),
            w(|w, d| w.control_bytes as f64 / d),
            w(|w, _| w.control_airtime_share),
            fl(false, |r| r.reachable_fraction),
            w(|w, _| w.mac_retries as f64),
            w(|w, _| w.mac_collisions as f64),
        ];
        let figures = |f: &dyn Fn(Summary) -> Option<f64>| {
            let v: Vec<Option<f64>> = stats.iter().map(|s| s.and_then(f)).collect();
            ControllerFigures {
                pdr: v[0],
                throughput_pct: v[1],
                delay_ms_mean: v[2],
                jitter_ms_mean: v[3],
                cwnd_cma_final: v[4],
                route_changes: v[5],
                routing: RoutingFigures {
                    control_bytes_per_s: v[6],
                    airtime_share: v[7],
                    route_availability: v[8],
                },
                mac: MacFigures {
                    retries: v[9],
                    collisions: v[10],
                },
            }
        };
        means.push(*c, figures(&|s| Some(s.mean)));
        cis.push(*c, figures(&|s| s.ci95));
    }
    CaseSummary {
        controllers: means,
        ci95: cis,
    }
}

/// `summary.json` of both cases; `duration_s` is a run's simulated time.
pub fn summary_json(
    primary: &CaseRuns,
    extended: &CaseRuns,
    primary_tcp: &CaseRuns,
    duration_s: f64,
) -> FanetSummary {
    let p = case_summary(primary, duration_s);
    FanetSummary {
        controllers: p.controllers,
        ci95: p.ci95,
        extended: case_summary(extended, duration_s),
        by_ack_policy: [(
            ack_policy::TCP.to_string(),
            case_summary(primary_tcp, duration_s),
        )]
        .into_iter()
        .collect(),
    }
}

/// `config` with every flow's receiver on ACK policy `policy`.
fn with_ack_policy(mut config: ScenarioConfig, policy: &str) -> ScenarioConfig {
    for f in &mut config.flows {
        f.ack_policy = policy.to_string();
    }
    config
}

/// Run the reproduction, reporting to `progress`, and write `out/fanet/`.
/// Cost: 3 × 13 × seeds simulations (the primary case under both ACK
/// policies, the extended case under SLTP's).
pub fn run(args: &Options, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    let seeds = args.seeds.unwrap_or(if args.quick { 2 } else { 10 });
    anyhow::ensure!((1..=1000).contains(&seeds), "--seeds must be 1 to 1000");
    let dur_s = match &args.duration {
        Some(d) => parse_duration_s(d)?,
        None if args.quick => 30.0,
        None => 100.0,
    };
    let duration = Dur::from_secs_f64(dur_s);
    let dir = args.out.join("fanet");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let total = 3 * CONTROLLERS.len() * seeds as usize;
    progress.start("reproduce fanet", total);
    // Wall time of the whole reproduction, for the report's closing note.
    #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
    // measuring our own run time, not simulated time
    let started = std::time::Instant::now();
    let third = total / 3;
    let primary = run_case(
        scenario(duration, 1)?,
        seeds,
        args.threads,
        progress,
        0,
        total,
    )?;
    let extended = run_case(
        scenario(duration, 5)?,
        seeds,
        args.threads,
        progress,
        third,
        total,
    )?;
    let primary_tcp = run_case(
        with_ack_policy(scenario(duration, 1)?, ack_policy::TCP),
        seeds,
        args.threads,
        progress,
        2 * third,
        total,
    )?;
    progress.finish();
    let wall_s = started.elapsed().as_secs_f64();
    let summary_value = summary_json(&primary, &extended, &primary_tcp, dur_s);
    let mut summary = serde_json::to_string_pretty(&summary_value).context("summary.json")?;
    summary.push('\n');
    let write = |name: &str, text: &str| -> anyhow::Result<PathBuf> {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))?;
        Ok(p)
    };
    write("summary.json", &summary)?;
    let mut lines = String::new();
    for (case, r) in [
        ("primary", &primary),
        ("extended", &extended),
        ("primary_tcp", &primary_tcp),
    ] {
        for (cc, runs) in CONTROLLERS.iter().zip(&r.runs) {
            for (i, run) in runs.iter().enumerate() {
                let line = RunLine {
                    case,
                    cc,
                    seed: BASE_SEED + i as u64,
                    run,
                };
                lines.push_str(&serde_json::to_string(&line).context("runs.jsonl")?);
                lines.push('\n');
            }
        }
    }
    write("runs.jsonl", &lines)?;
    let events: u64 = [&primary, &extended, &primary_tcp]
        .iter()
        .flat_map(|r| r.runs.iter().flatten())
        .map(|r| r.events)
        .sum();
    let ctx = report::Context {
        dir: dir.clone(),
        seeds,
        duration_s: dur_s,
        command: args.command.clone(),
        events,
    };
    let report::Written {
        path: report,
        comparisons,
    } = report::write(&ctx, &primary, &extended, &primary_tcp)?;
    let console = format!(
        "reproduce fanet: {} runs ({} controllers × {seeds} seeds × 3 cases, {dur_s} s each), {events} events in {wall_s:.1} s wall ({:.0} events/s)\nwrote {}, {}\n",
        total,
        CONTROLLERS.len(),
        events as f64 / wall_s.max(1e-9),
        dir.join("summary.json").display(),
        report.display()
    );
    Ok(Outcome {
        summary: summary_value,
        dir,
        report,
        events,
        runs: total,
        console,
        comparisons,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed world is the document this reproduction was written as
    /// before it used `scenarios/fanet.toml` (the same runs, byte for byte).
    #[test]
    fn the_scenario_is_the_former_document() {
        let mut text = String::from(
            "name = \"fanet\"\nduration = \"30s\"\nseed = 1\n[metrics]\ninterval = \"1s\"\nper_message = false\n\
             [wireless]\nbox_m = [300.0, 300.0, 100.0]\nqueue_packets = 100\nchannel = { data_rate_mbps = 5.0 }\n\
             mac = { model = \"dcf\" }\nrouting = { protocol = \"olsr\" }\n\
             mobility = { model = \"gauss_markov\", mean_speed_mps = 20.0, alpha = 0.85, update_interval_s = 0.1 }\n",
        );
        for i in 0..10 {
            text.push_str(&format!("[[nodes]]\nname = \"uav{i}\"\n"));
        }
        for f in 0..5 {
            text.push_str(&format!(
                "[[flows]]\nname = \"bulk{f}\"\nsrc = \"uav{}\"\ndst = \"uav{}\"\ncc = \"newreno\"\n\
                 startup = \"slow_start\"\nstart = \"5s\"\npayload_bytes = 536\n[[flows.streams]]\napp = \"bulk\"\n",
                2 * f,
                2 * f + 1
            ));
        }
        let former = Scenario::from_toml_str(&text, "fanet", &[]).unwrap();
        let typed = scenario(Dur::from_secs_f64(30.0), 5).unwrap();
        let typed = Scenario::from_config(typed, "fanet").unwrap();
        assert_eq!(
            format!("{:?}", typed.config),
            format!("{:?}", former.config)
        );
        assert_eq!(format!("{:?}", typed.model), format!("{:?}", former.model));
        assert!(scenario(Dur(1), 6).is_err());
    }

    /// A run's record serializes field by field as `runs.jsonl` has it,
    /// and reads back.
    #[test]
    fn a_record_keeps_the_runs_jsonl_shape() {
        // The flow opens at 5 s (after OLSR's warm-up).
        let config = scenario(Dur::from_secs_f64(7.0), 1).unwrap();
        let r = run_one(&config, "cubic", 1).unwrap();
        assert_eq!(r.flows.len(), 1);
        let f = &r.flows[0];
        assert!(f.tx_packets >= f.rx_packets && f.rx_packets > 0, "{f:?}");
        assert_eq!(f.throughput_mbps_per_s.len(), 7);
        let acks = f.acks_per_data.expect("one flow: ACKs measured");
        assert!(acks > 0.0 && acks < 1.0, "{acks}");
        let w = r.wireless.as_ref().expect("wireless");
        assert_eq!(w.routing, "olsr");
        assert!(w.control_bytes > 0 && w.control_airtime_share > 0.0);
        let w = r.wireless.as_ref().expect("a wireless world");
        assert_eq!(w.flows.len(), 1);
        let text = serde_json::to_string(&r).unwrap();
        assert!(
            text.starts_with("{\"events\":")
                && text.contains(",\"wireless\":{\"route_recomputations\":"),
            "{text}"
        );
        // serde_json reads floats to within an ulp: compare the exact parts.
        let mut back: RunRecord = serde_json::from_str(&text).unwrap();
        // The float share may come back one ulp off: compare it apart.
        if let (Some(b), Some(w)) = (back.wireless.as_mut(), r.wireless.as_ref()) {
            let (x, y) = (b.control_airtime_share, w.control_airtime_share);
            assert!((x - y).abs() <= 1e-12 * y.abs().max(1.0), "{x} vs {y}");
            b.control_airtime_share = y;
        }
        assert_eq!((back.events, &back.wireless), (r.events, &r.wireless));
        assert_eq!(back.flows[0].rx_packets, f.rx_packets);
    }
}
