//! `peregrine reproduce fanet`: seed 001 §3 in the laboratory (issue 10).
//!
//! The world is `scenarios/fanet.toml`: 10 UAVs placed uniformly at random
//! in a 300 × 300 × 100 m box, Gauss-Markov 3-D mobility (20 m/s mean
//! speed, α = 0.85, 0.1 s steps), one shared 802.11b medium at a fixed
//! 5 Mbit/s data rate, drop-tail transmit queues of 100 packets, routes
//! recomputed every second, 536-byte payloads, slow-start, 100 s. The box
//! is a little larger than the 5 Mbit/s range (≈180 m) so that links break
//! and re-form all the time while the swarm stays mostly connected.
//!
//! Two cases, each for the 13 controllers × N seeds, through the sweep
//! runner (`peregrine_sim::experiment::run_sweep`, parallel):
//! * **primary**: one bulk flow uav0 → uav1, the eight others relaying and
//!   moving — the case whose numbers seed 001 publishes (its throughput
//!   percentages are received packets × 588 B × 8 / (100 s × 5 Mbit/s));
//! * **extended**: 5 simultaneous bulk flows (uav0→1, 2→3, …, 8→9).
//!
//! Output, in `DIR/fanet/`: `summary.json` (primary case, means over seeds
//! and a sibling `ci95`), `report.md` with its charts in `plots/`, and
//! `runs.jsonl` (every run's measurements).

use crate::progress::Progress;
use crate::Keyed;
use anyhow::Context as _;
use peregrine_sim::experiment::{run_sweep, Summary, SweepOutcome, SweepSpec};
use peregrine_sim::{Scenario, SimResults};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::PathBuf;

/// The controllers of seed 001, in its order, plus S-HTCP.
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
}

/// The scenario of one case: `flows` bulk flows uav(2i) → uav(2i+1).
pub fn scenario_text(duration: &str, flows: usize) -> String {
    let mut s = format!(
        r#"name = "fanet"
duration = "{duration}"
seed = {BASE_SEED}

[metrics]
interval = "1s"
per_message = false

[wireless]
box_m = [300.0, 300.0, 100.0]
queue_packets = 100
channel = {{ data_rate_mbps = 5.0 }}
routing = {{ recompute_interval_s = 1.0 }}
mobility = {{ model = "gauss_markov", mean_speed_mps = 20.0, alpha = 0.85, update_interval_s = 0.1 }}
"#
    );
    for i in 0..10 {
        s.push_str(&format!("\n[[nodes]]\nname = \"uav{i}\"\n"));
    }
    for f in 0..flows {
        s.push_str(&format!(
            "\n[[flows]]\nname = \"bulk{f}\"\nsrc = \"uav{}\"\ndst = \"uav{}\"\ncc = \"newreno\"\nstartup = \"slow_start\"\npayload_bytes = 536\n\n[[flows.streams]]\napp = \"bulk\"\n",
            2 * f,
            2 * f + 1
        ));
    }
    s
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

/// One run: copy flow 0's controller to every flow, simulate, measure.
fn run_one(doc: &toml::Value, _seed: u64) -> anyhow::Result<Value> {
    let mut doc = doc.clone();
    if let Some(flows) = doc.get_mut("flows").and_then(toml::Value::as_array_mut) {
        let cc = flows
            .first()
            .and_then(|f| f.get("cc"))
            .cloned()
            .context("the fanet scenario has a flow")?;
        for f in flows.iter_mut() {
            if let Some(t) = f.as_table_mut() {
                t.insert("cc".into(), cc.clone());
            }
        }
    }
    let scenario = Scenario::from_value(doc, "fanet").map_err(|e| anyhow::anyhow!("{e}"))?;
    let res = peregrine_sim::run(&scenario).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(measure(&res))
}

/// The measurements of one run (one object per flow, and the swarm's).
pub fn measure(res: &SimResults) -> Value {
    let dur_s = res.duration_ns as f64 / 1e9;
    let pct = |packets: f64| 100.0 * packets * SEED_PACKET_BYTES * 8.0 / (dur_s * CHANNEL_RATE_BPS);
    let w = res.wireless.as_ref();
    let flows: Vec<Value> = res
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
            json!({
                "tx_packets": c.tx_packets,
                "rx_packets": c.rx_packets,
                "pdr": if c.tx_packets > 0 { c.rx_packets as f64 / c.tx_packets as f64 } else { 0.0 },
                "throughput_pct": pct(c.rx_packets as f64),
                "processed_pct": pct(c.processed_bytes as f64 / per_packet),
                "delay_ms_mean": f.delay_mean_ms(),
                "jitter_ms_mean": (m.jitter_abs_sum.1 > 0).then(|| m.jitter_abs_sum.0 / m.jitter_abs_sum.1 as f64 / 1e6),
                "cwnd_cma_final": m.cwnd_cma(),
                "cwnd_mean": cw_s.map(|s| s.mean),
                "cwnd_std": cw_s.and_then(|s| s.std),
                "drops": c.queue_drops + c.channel_drops,
                "route_changes": routes.map_or(0, |r| r.route_changes),
                "reachable_fraction": routes.map(|r| r.reachable_fraction),
                "throughput_mbps_per_s": m.samples.iter().map(|s| s.delta.rx_packets as f64 * SEED_PACKET_BYTES * 8.0 / interval_s / 1e6).collect::<Vec<_>>(),
                "drops_per_s": m.samples.iter().map(|s| (s.delta.queue_drops + s.delta.channel_drops) as f64 / interval_s).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "events": res.events,
        "route_changes_total": w.map_or(0, |w| w.route_changes_total),
        "wireless": w.map(|w| w.to_json()),
        "flows": flows,
    })
}

/// One case's outcome: runs[controller][seed].
pub struct CaseRuns {
    /// The scenario text (controller and seed overridden per run).
    pub scenario: String,
    /// Per controller (in [`CONTROLLERS`] order), per seed, [`measure`]'s value.
    pub runs: Vec<Vec<Value>>,
}

fn run_case(
    text: String,
    seeds: u32,
    threads: usize,
    progress: &dyn Progress,
    (offset, total): (usize, usize),
) -> anyhow::Result<CaseRuns> {
    let base: toml::Value = toml::from_str(&text).context("the fanet scenario")?;
    let list = CONTROLLERS.join(",");
    let spec = SweepSpec::from_cli(&[format!("flows.0.cc={list}")], Some(seeds))?;
    let cb = |done: usize, _: usize| progress.update(offset + done, total);
    let outcome: SweepOutcome =
        run_sweep(&base, &spec, threads, &cb, run_one).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    anyhow::ensure!(outcome.base_seed == BASE_SEED, "unexpected base seed");
    Ok(CaseRuns {
        scenario: text,
        runs: outcome.runs,
    })
}

/// The per-controller keys of `summary.json`, in order.
pub const SUMMARY_KEYS: [&str; 6] = [
    "pdr",
    "throughput_pct",
    "delay_ms_mean",
    "jitter_ms_mean",
    "cwnd_cma_final",
    "route_changes",
];

/// Mean and summary of `key` of flow `flow` over the seeds of one controller.
pub fn stat(runs: &[Value], flow: usize, key: &str) -> Option<Summary> {
    let xs: Vec<f64> = runs
        .iter()
        .filter_map(|r| r["flows"][flow][key].as_f64())
        .collect();
    Summary::of(&xs)
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
}

/// `summary.json`: the primary case, per controller (in [`CONTROLLERS`] order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FanetSummary {
    /// Means over seeds.
    pub controllers: Keyed<ControllerFigures>,
    /// The 95 % confidence intervals of those means (half-widths).
    pub ci95: Keyed<ControllerFigures>,
}

/// `summary.json` of the primary case.
pub fn summary_json(primary: &CaseRuns) -> FanetSummary {
    let mut means = Keyed::new();
    let mut cis = Keyed::new();
    for (c, runs) in CONTROLLERS.iter().zip(&primary.runs) {
        let s = |k: &str| stat(runs, 0, k);
        let figures = |f: &dyn Fn(Summary) -> Option<f64>| ControllerFigures {
            pdr: s(SUMMARY_KEYS[0]).and_then(f),
            throughput_pct: s(SUMMARY_KEYS[1]).and_then(f),
            delay_ms_mean: s(SUMMARY_KEYS[2]).and_then(f),
            jitter_ms_mean: s(SUMMARY_KEYS[3]).and_then(f),
            cwnd_cma_final: s(SUMMARY_KEYS[4]).and_then(f),
            route_changes: s(SUMMARY_KEYS[5]).and_then(f),
        };
        means.push(*c, figures(&|s| Some(s.mean)));
        cis.push(*c, figures(&|s| s.ci95));
    }
    FanetSummary {
        controllers: means,
        ci95: cis,
    }
}

/// Run the reproduction, reporting to `progress`, and write `out/fanet/`.
/// Cost: 2 × 13 × seeds simulations.
pub fn run(args: &Options, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    let seeds = args.seeds.unwrap_or(if args.quick { 2 } else { 10 });
    anyhow::ensure!((1..=1000).contains(&seeds), "--seeds must be 1 to 1000");
    let dur_s = match &args.duration {
        Some(d) => parse_duration_s(d)?,
        None if args.quick => 30.0,
        None => 100.0,
    };
    let duration = format!("{dur_s}s");
    let dir = args.out.join("fanet");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let total = 2 * CONTROLLERS.len() * seeds as usize;
    progress.start("reproduce fanet", total);
    // Wall time of the whole reproduction, for the report's closing note.
    #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
    // measuring our own run time, not simulated time
    let started = std::time::Instant::now();
    let half = total / 2;
    let primary = run_case(
        scenario_text(&duration, 1),
        seeds,
        args.threads,
        progress,
        (0, total),
    )?;
    let extended = run_case(
        scenario_text(&duration, 5),
        seeds,
        args.threads,
        progress,
        (half, total),
    )?;
    progress.finish();
    let wall_s = started.elapsed().as_secs_f64();
    let summary_value = summary_json(&primary);
    let mut summary = serde_json::to_string_pretty(&summary_value).context("summary.json")?;
    summary.push('\n');
    let write = |name: &str, text: &str| -> anyhow::Result<PathBuf> {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))?;
        Ok(p)
    };
    write("summary.json", &summary)?;
    let mut lines = String::new();
    for (case, r) in [("primary", &primary), ("extended", &extended)] {
        for (c, runs) in CONTROLLERS.iter().zip(&r.runs) {
            for (i, v) in runs.iter().enumerate() {
                let row = json!({"case": case, "cc": c, "seed": BASE_SEED + i as u64, "run": v});
                lines.push_str(&row.to_string());
                lines.push('\n');
            }
        }
    }
    write("runs.jsonl", &lines)?;
    let events: u64 = [&primary, &extended]
        .iter()
        .flat_map(|r| r.runs.iter().flatten())
        .filter_map(|v| v["events"].as_u64())
        .sum();
    let ctx = report::Context {
        dir: dir.clone(),
        seeds,
        duration_s: dur_s,
        command: args.command.clone(),
        events,
    };
    let report = report::write(&ctx, &primary, &extended)?;
    let console = format!(
        "reproduce fanet: {} runs ({} controllers × {seeds} seeds × 2 cases, {dur_s} s each), {events} events in {wall_s:.1} s wall ({:.0} events/s)\nwrote {}, {}\n",
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
    })
}
