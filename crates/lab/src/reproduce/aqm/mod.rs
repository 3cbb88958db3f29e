//! `peregrine reproduce aqm [--quick] [--seeds N] [--out DIR]`: issue 41's
//! reproduction of the field's own claims about AQM and L4S — one
//! bottleneck (20 Mbit/s, 40 ms round trip, a 4-BDP buffer: the world of
//! `scenarios/dumbbell-aqm.toml`) under drop-tail, CoDel, FQ-CoDel, PIE
//! and DualPI2 (each at its RFC defaults; the core sends ECT, so the AQMs
//! whose `ecn` is on by default — FQ-CoDel, DualPI2 — mark instead of
//! dropping), × CUBIC, BBR, BBRv3 and Prague.
//!
//! The field's claims are about the field's stacks, so the contenders
//! model them ([`CONTENDERS`]): `cubic` is **Linux CUBIC** — the kernel's
//! HyStart slow-start exit (`cc_options.slow_start_exit =
//! "linux_hystart"`) and a receiver with TCP's delayed ACK (`ack_policy =
//! "tcp"`, an ACK every second packet; docs/protocol.md §10) — and BBR,
//! BBRv3 and Prague get the same receiver. SLTP's own CUBIC (HyStart++,
//! SLTP's thinned stretch ACKs: the defaults of a scenario flow) is kept
//! beside them as `cubic-sltp`, so that nobody reads the field's figures
//! as SLTP's defaults (docs/scenarios.md, "AQM and slow start").
//!
//! Each cell is one connection with two streams: a bulk stream (class 3)
//! and a **priority stream** (class 0, the `abs` scheduler: small periodic
//! messages, [`PRIORITY_MESSAGE_BYTES`] every 20 ms, a control loop as in
//! `scenarios/drone-control.toml`). Per cell: the connection's goodput,
//! the queueing delay p50/p99 of its DATA packets (one-way delay minus the
//! empty path's, [`base_delay_ms`]) over the whole run and after a
//! [`WARMUP_S`] warm-up (`metrics.warmup`: slow start's overshoot left
//! out), the priority stream's message latency p99, and the bottleneck's
//! CE marks and AQM drops. Then the **L4S/classic coexistence** pair of
//! RFC 9332: a Prague flow beside a CUBIC flow in DualPI2, both pacing
//! finely (`pacing = "fine"`), with each flow's share of the goodput and
//! its queueing delay (Prague's packets go through the L4S queue, CUBIC's
//! through the classic one).
//!
//! Every point runs several seeds; the seed sets the AQMs' and the
//! controllers' random draws and the flows' start phase (the connection
//! opens at a seed-drawn time in the first [`START_SPREAD_MS`] ms), and
//! figures are means with 95 % Student-t half-widths. Outputs in
//! `DIR/aqm/`: `summary.json` ([`AqmSummary`]), `report.md`, `plots/`.

mod report;

use crate::experiment::Summary;
use crate::plan::{run_plan, PlanRuns};
use crate::progress::Progress;
use crate::Keyed;
use anyhow::Context;
use peregrine_sim::metrics::LatencySummary;
use peregrine_sim::scenario::config::{
    FlowConfig, LinkConfig, QueueConfig, ScenarioConfig, StreamAppConfig,
};
use peregrine_sim::scenario::units::{Dur, Rate};
use peregrine_sim::world::link_options::AqmTable;
use peregrine_sim::{Scenario, SimResults};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use toml::Value;

/// The queue disciplines compared, in report order (registry names of
/// `peregrine_link::aqm::AqmConfig`).
pub const AQMS: [&str; 5] = ["drop_tail", "codel", "fq_codel", "pie", "dualpi2"];
/// One contender of the table: its key in `summary.json` and the report,
/// and the flow settings it runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contender {
    /// Its key (`cells.<aqm>.<key>`, `contenders.<key>`).
    pub key: &'static str,
    /// The controller (a registry name of `peregrine_cc`).
    pub cc: &'static str,
    /// The receiver's ACK policy (docs/protocol.md §10): `tcp` (TCP's
    /// delayed ACK, an ACK every second packet) or `sltp`.
    pub ack_policy: &'static str,
    /// CUBIC's slow-start exit (`cc_options.slow_start_exit`); `None`: the
    /// controller's default (HyStart++ for CUBIC).
    pub slow_start_exit: Option<&'static str>,
    /// What it models, in words (the report's and `summary.json`'s label).
    pub description: &'static str,
}

/// The field's receiver: TCP's delayed ACK.
const FIELD_ACKS: &str = "tcp";

/// The contenders, in report order: the field's controllers with the
/// field's receiver, and SLTP's own CUBIC beside the field's.
pub static CONTENDERS: [Contender; 5] = [
    Contender {
        key: "cubic",
        cc: "cubic",
        ack_policy: FIELD_ACKS,
        slow_start_exit: Some("linux_hystart"),
        description: "Linux CUBIC: HyStart exit (ACK train, delay increase), TCP's delayed ACK",
    },
    Contender {
        key: "cubic-sltp",
        cc: "cubic",
        ack_policy: "sltp",
        slow_start_exit: None,
        description: "SLTP's CUBIC: HyStart++ exit (RFC 9406), SLTP's thinned stretch ACKs",
    },
    Contender {
        key: "bbr",
        cc: "bbr",
        ack_policy: FIELD_ACKS,
        slow_start_exit: None,
        description: "BBR v1, TCP's delayed ACK",
    },
    Contender {
        key: "bbr3",
        cc: "bbr3",
        ack_policy: FIELD_ACKS,
        slow_start_exit: None,
        description: "BBRv3 (draft-ietf-ccwg-bbr), TCP's delayed ACK",
    },
    Contender {
        key: "prague",
        cc: "prague",
        ack_policy: FIELD_ACKS,
        slow_start_exit: None,
        description: "Prague (L4S, RFC 9331 response), TCP's delayed ACK",
    },
];

/// The contender called `key`. O(contenders).
pub fn contender(key: &str) -> Option<&'static Contender> {
    CONTENDERS.iter().find(|c| c.key == key)
}

/// The contenders' keys, in report order.
pub fn contender_keys() -> Vec<&'static str> {
    CONTENDERS.iter().map(|c| c.key).collect()
}
/// The bottleneck's rate, Mbit/s.
pub const RATE_MBPS: u64 = 20;
/// The bottleneck's one-way delay, ms (40 ms round trip).
pub const ONE_WAY_MS: u64 = 20;
/// The access links' one-way delay, ms (1 Gbit/s each).
pub const ACCESS_MS: f64 = 0.1;
/// The bottleneck's buffer, in bandwidth-delay products.
pub const BUFFER_BDP: f64 = 4.0;
/// Payload bytes of a full DATA packet (the engine's default).
pub const PAYLOAD_BYTES: u32 = 1400;
/// Bytes a full DATA packet takes on the wire: payload, 37 bytes of SLTP
/// and 28 of IPv4/UDP.
pub const WIRE_BYTES: u32 = PAYLOAD_BYTES + 37 + 28;
/// The priority stream's messages, bytes.
pub const PRIORITY_MESSAGE_BYTES: u32 = 200;
/// The priority stream's rate, bit/s: one message every 20 ms.
pub const PRIORITY_RATE_BPS: u64 = PRIORITY_MESSAGE_BYTES as u64 * 8 * 50;
/// Simulated seconds per run (default).
pub const DURATION_S: f64 = 30.0;
/// Simulated seconds per run with `--quick`.
pub const QUICK_DURATION_S: f64 = 10.0;
/// Seeds per point (default).
pub const SEEDS: u32 = 5;
/// Seeds per point with `--quick`.
pub const QUICK_SEEDS: u32 = 2;
/// The warm-up left out of the "after start-up" quantiles, s.
pub const WARMUP_S: f64 = 2.0;
/// The connections open at a seed-drawn time in `[0, START_SPREAD_MS)`.
pub const START_SPREAD_MS: u64 = 50;

/// The empty path's one-way delay of a full DATA packet, ms: both access
/// links' and the bottleneck's propagation, the packet serialised once at
/// the bottleneck's rate and twice at 1 Gbit/s (20.81 ms).
pub fn base_delay_ms() -> f64 {
    let bits = f64::from(WIRE_BYTES) * 8.0;
    2.0 * ACCESS_MS
        + ONE_WAY_MS as f64
        + bits / (RATE_MBPS as f64 * 1e6) * 1e3
        + 2.0 * bits / 1e9 * 1e3
}

/// One point of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// One connection (bulk + priority stream) of contender `cc` through
    /// `aqm`.
    Cell {
        /// The queue discipline.
        aqm: &'static str,
        /// The contender.
        cc: &'static Contender,
    },
    /// Prague beside CUBIC (bulk each, fine pacing) through DualPI2.
    Coexistence,
}

impl Point {
    fn label(&self) -> String {
        match self {
            Point::Cell { aqm, cc } => format!("aqm {aqm} {}", cc.key),
            Point::Coexistence => "aqm coexistence dualpi2 prague+cubic".into(),
        }
    }
}

/// The start of the connection of seed `seed`, flow `flow`: a phase in
/// `[0, START_SPREAD_MS)` ms drawn from both. O(1).
fn start_of(seed: u64, flow: u64) -> Dur {
    let draw = peregrine_cc::splitmix::mix64(seed.wrapping_mul(0x9e37_79b9) ^ flow);
    Dur(draw % (START_SPREAD_MS * 1_000_000))
}

fn bottleneck(aqm: &str) -> LinkConfig {
    let mut l = LinkConfig::new("L", "R");
    l.name = Some("bottleneck".into());
    l.rate = Some(Rate::from_mbps(RATE_MBPS));
    l.delay = Some(Dur::from_millis(ONE_WAY_MS));
    l.queue = Some(QueueConfig::bdp(BUFFER_BDP));
    l.aqm = Some(AqmTable {
        model: aqm.to_string(),
        ..AqmTable::default()
    });
    l
}

fn access(a: &str, b: &str) -> LinkConfig {
    let mut l = LinkConfig::new(a, b);
    l.name = Some(format!("access-{a}"));
    l.rate = Some(Rate::from_mbps(1000));
    l.delay = Some(Dur::from_secs_f64(ACCESS_MS / 1e3));
    l.queue = Some(QueueConfig {
        packets: Some(1000),
        ..QueueConfig::default()
    });
    l
}

fn bulk_stream(id: u16, priority: u8) -> StreamAppConfig {
    let mut s = StreamAppConfig::new("bulk");
    s.id = Some(id);
    s.priority = priority;
    s
}

fn flow(name: &str, src: &str, dst: &str, cc: &Contender, start: Dur) -> FlowConfig {
    let mut f = FlowConfig::new(src, dst);
    f.name = Some(name.into());
    f.cc = cc.cc.into();
    f.ack_policy = cc.ack_policy.into();
    f.cc_options = cc.slow_start_exit.map(|exit| {
        let mut t = toml::Table::new();
        t.insert("slow_start_exit".into(), Value::String(exit.into()));
        t
    });
    f.start = start;
    f.payload_bytes = PAYLOAD_BYTES;
    f
}

impl Point {
    /// The point's scenario for seed `seed`, `duration` long: senders
    /// `s0` (and `s1`) → `L` ==20 Mbit/s, 20 ms== `R` → `r0` (and `r1`),
    /// 1 Gbit/s, 0.1-ms access links, the bottleneck's `aqm` in both
    /// directions, `metrics.warmup` at [`WARMUP_S`]. O(1).
    pub fn scenario(&self, duration: Dur, seed: u64) -> ScenarioConfig {
        let mut s = ScenarioConfig::new(duration, seed);
        s.name = Some("aqm".into());
        s.metrics.per_message = false;
        s.metrics.warmup = Some(Dur::from_secs_f64(WARMUP_S));
        match *self {
            Point::Cell { aqm, cc } => {
                s.links = vec![access("s0", "L"), bottleneck(aqm), access("R", "r0")];
                let mut f = flow("bulk", "s0", "r0", cc, start_of(seed, 0));
                // The priority stream first (id 0, class 0), the bulk
                // stream below it; `abs` serves class 0 first.
                f.scheduler = "abs".into();
                let mut p = StreamAppConfig::new("cbr");
                p.id = Some(0);
                p.priority = 0;
                p.message_bytes = Some(PRIORITY_MESSAGE_BYTES);
                p.rate = Some(Rate(PRIORITY_RATE_BPS));
                f.streams = vec![p, bulk_stream(1, 3)];
                s.flows = vec![f];
            }
            Point::Coexistence => {
                s.links = vec![
                    access("s0", "L"),
                    access("s1", "L"),
                    bottleneck("dualpi2"),
                    access("R", "r0"),
                    access("R", "r1"),
                ];
                let mut flows = Vec::new();
                for (i, cc) in COEXISTENCE.iter().enumerate() {
                    let mut f = flow(
                        cc.key,
                        &format!("s{i}"),
                        &format!("r{i}"),
                        cc,
                        start_of(seed, i as u64),
                    );
                    f.pacing = Some("fine".into());
                    f.streams = vec![bulk_stream(0, 2)];
                    flows.push(f);
                }
                s.flows = flows;
            }
        }
        s
    }
}

/// The coexistence pair, in flow order: the L4S flow, then the classic one
/// (keys of [`CONTENDERS`]: the field's Prague and CUBIC).
pub static COEXISTENCE: [&Contender; 2] = [&CONTENDERS[4], &CONTENDERS[0]];

/// The plan: every AQM × controller, then the coexistence pair. O(points).
pub fn points() -> Vec<Point> {
    let mut v: Vec<Point> = AQMS
        .iter()
        .flat_map(|aqm| CONTENDERS.iter().map(move |cc| Point::Cell { aqm, cc }))
        .collect();
    v.push(Point::Coexistence);
    v
}

/// Options of the reproduction (`peregrine reproduce aqm`).
#[derive(Debug, Clone)]
pub struct Options {
    /// [`QUICK_SEEDS`] seeds of [`QUICK_DURATION_S`] s (under a minute in
    /// a debug build).
    pub quick: bool,
    /// Output folder; the report goes to `out/aqm/`.
    pub out: PathBuf,
    /// Runs per point (seeds 1, 2, …); `None`: [`SEEDS`] or [`QUICK_SEEDS`].
    pub seeds: Option<u32>,
    /// Worker threads (0: one per core). Results do not depend on it.
    pub threads: usize,
    /// Simulated seconds per run (tests use a short one); more than
    /// [`WARMUP_S`].
    pub duration_s: Option<f64>,
    /// How the report says to rerun it.
    pub command: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            quick: false,
            out: PathBuf::from("repro-out"),
            seeds: None,
            threads: 0,
            duration_s: None,
            command: "peregrine reproduce aqm".into(),
        }
    }
}

/// One flow's measurements in one run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct FlowRun {
    goodput_mbps: f64,
    queue_p50_ms: f64,
    queue_p99_ms: f64,
    queue_p50_after_ms: f64,
    queue_p99_after_ms: f64,
}

/// One run's measurements.
#[derive(Debug, Clone, Default)]
struct RunResult {
    /// Per flow, in flow order.
    flows: Vec<FlowRun>,
    /// The priority stream's message latency p99, ms (cells only).
    priority_p99_ms: Option<f64>,
    /// … of the messages queued after the warm-up.
    priority_p99_after_ms: Option<f64>,
    ce_marked: f64,
    aqm_dropped: f64,
    queue_drops: f64,
    events: u64,
}

/// The priority stream's messages, one every 20 ms from the connection's
/// start (`start_s`): the first one queued after the warm-up. O(1).
fn first_after_warmup(start_s: f64) -> usize {
    let period_s = PRIORITY_MESSAGE_BYTES as f64 * 8.0 / PRIORITY_RATE_BPS as f64;
    ((WARMUP_S - start_s).max(0.0) / period_s).ceil() as usize
}

fn measure(r: &SimResults, start_s: f64) -> anyhow::Result<RunResult> {
    let base = base_delay_ms();
    let q = |x: Option<f64>| x.map_or(0.0, |d| (d - base).max(0.0));
    let flows = r
        .flows
        .iter()
        .map(|f| FlowRun {
            goodput_mbps: f.goodput_bps(r.duration_ns) / 1e6,
            queue_p50_ms: q(f.delay_ms(0.5)),
            queue_p99_ms: q(f.delay_ms(0.99)),
            queue_p50_after_ms: q(f.delay_after_warmup_ms(0.5)),
            queue_p99_after_ms: q(f.delay_after_warmup_ms(0.99)),
        })
        .collect();
    let priority = r.flows.first().and_then(|f| {
        f.metrics
            .streams
            .iter()
            .find(|s| s.id == 0 && s.app == "cbr")
    });
    let priority_p99_ms = priority.and_then(|s| LatencySummary::of(&s.latencies_ns).p99_ms);
    // A reliable ordered stream delivers in queueing order.
    let priority_p99_after_ms = priority.and_then(|s| {
        let after = s.latencies_ns.get(first_after_warmup(start_s)..)?;
        LatencySummary::of(after).p99_ms
    });
    let up = &r
        .links
        .iter()
        .find(|l| l.name == "bottleneck/up")
        .context("the bottleneck's data direction")?
        .stats;
    Ok(RunResult {
        flows,
        priority_p99_ms,
        priority_p99_after_ms,
        ce_marked: up.ce_marked as f64,
        aqm_dropped: up.aqm_dropped as f64,
        queue_drops: up.queue_drops as f64,
        events: r.events,
    })
}

fn run_one(point: &Point, duration: Dur, seed: u64) -> anyhow::Result<RunResult> {
    let s = Scenario::from_config(point.scenario(duration, seed), "aqm")?;
    measure(&peregrine_sim::run(&s)?, start_of(seed, 0).0 as f64 / 1e9)
}

/// A mean and its 95 % half-width over a point's seeds (0 with one seed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    /// The mean.
    pub mean: f64,
    /// The 95 % Student-t half-width.
    pub ci95: f64,
}

impl Stat {
    fn of(values: &[f64]) -> Stat {
        Summary::of(values).map_or(Stat::default(), |s| Stat {
            mean: s.mean,
            ci95: s.ci95.unwrap_or(0.0),
        })
    }
}

/// A flow's figures over its point's seeds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowFigures {
    /// Goodput, Mbit/s.
    pub goodput_mbps: Stat,
    /// Queueing delay of its DATA packets (one-way delay minus the empty
    /// path's), median over the run, ms.
    pub queue_delay_p50_ms: Stat,
    /// … 99th percentile over the run, ms.
    pub queue_delay_p99_ms: Stat,
    /// … median over the packets received after the warm-up, ms.
    pub queue_delay_p50_after_warmup_ms: Stat,
    /// … 99th percentile after the warm-up, ms.
    pub queue_delay_p99_after_warmup_ms: Stat,
}

impl FlowFigures {
    fn of(runs: &[&FlowRun]) -> FlowFigures {
        let col = |f: fn(&FlowRun) -> f64| Stat::of(&runs.iter().map(|r| f(r)).collect::<Vec<_>>());
        FlowFigures {
            goodput_mbps: col(|r| r.goodput_mbps),
            queue_delay_p50_ms: col(|r| r.queue_p50_ms),
            queue_delay_p99_ms: col(|r| r.queue_p99_ms),
            queue_delay_p50_after_warmup_ms: col(|r| r.queue_p50_after_ms),
            queue_delay_p99_after_warmup_ms: col(|r| r.queue_p99_after_ms),
        }
    }
}

/// One cell (AQM × controller) in `summary.json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CellFigures {
    /// The connection's goodput and queueing delays.
    #[serde(flatten)]
    pub flow: FlowFigures,
    /// The priority stream's message latency (queued → delivered) p99, ms.
    pub priority_latency_p99_ms: Stat,
    /// … of the messages queued after the warm-up, ms.
    pub priority_latency_p99_after_warmup_ms: Stat,
    /// Packets the bottleneck marked CE per run.
    pub ce_marked: Stat,
    /// Packets the AQM dropped per run.
    pub aqm_dropped: Stat,
    /// Packets the full queue dropped per run.
    pub queue_drops: Stat,
}

/// One coexistence flow in `summary.json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CoexistenceFlow {
    /// Its goodput and queueing delays.
    #[serde(flatten)]
    pub flow: FlowFigures,
    /// Its share of the pair's goodput, 0–1.
    pub share: Stat,
}

/// The L4S/classic pair in `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coexistence {
    /// The bottleneck's discipline (`dualpi2`).
    pub aqm: String,
    /// By contender: `prague` (L4S queue), `cubic` (classic queue; the
    /// field's CUBIC, [`CONTENDERS`]).
    pub flows: Keyed<CoexistenceFlow>,
    /// Packets the bottleneck marked CE per run (both queues).
    pub ce_marked: Stat,
}

/// What was run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// Bottleneck rate, Mbit/s.
    pub rate_mbps: u64,
    /// Round-trip propagation delay, ms.
    pub rtt_ms: u64,
    /// Bottleneck buffer, BDPs.
    pub buffer_bdp: f64,
    /// Simulated seconds per run.
    pub duration_s: f64,
    /// Runs per point.
    pub seeds: u32,
    /// The warm-up of the `*_after_warmup_ms` figures, s.
    pub warmup_s: f64,
    /// The empty path's one-way delay subtracted from every delay, ms.
    pub base_delay_ms: f64,
}

/// What a contender ran with, in `summary.json` (`contenders.<key>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContenderInfo {
    /// The controller (registry name).
    pub cc: String,
    /// The receiver's ACK policy (`tcp`, `sltp`).
    pub ack_policy: String,
    /// CUBIC's slow-start exit when set (`linux_hystart`); absent: the
    /// controller's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_start_exit: Option<String>,
    /// What it models.
    pub description: String,
}

impl From<&Contender> for ContenderInfo {
    fn from(c: &Contender) -> ContenderInfo {
        ContenderInfo {
            cc: c.cc.into(),
            ack_policy: c.ack_policy.into(),
            slow_start_exit: c.slow_start_exit.map(str::to_string),
            description: c.description.into(),
        }
    }
}

/// `summary.json`: `cells.<aqm>.<contender>.<figure>.{mean, ci95}`,
/// `coexistence.flows.<contender>.<figure>.{mean, ci95}`, and what each
/// contender is (`contenders.<contender>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AqmSummary {
    /// What was run.
    pub setup: Setup,
    /// By AQM (in [`AQMS`] order), then contender ([`CONTENDERS`]).
    pub cells: Keyed<Keyed<CellFigures>>,
    /// Prague beside CUBIC in DualPI2.
    pub coexistence: Coexistence,
    /// Each contender's controller, receiver and description, in
    /// [`CONTENDERS`] order (after the figures: an addition to the
    /// summary's earlier keys).
    pub contenders: Keyed<ContenderInfo>,
}

/// What [`run`] produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// `summary.json` as written.
    pub summary: AqmSummary,
    /// The output folder (`out/aqm`).
    pub dir: PathBuf,
    /// The report written.
    pub report: PathBuf,
    /// Runs made.
    pub runs: usize,
    /// What the command prints (with the wall time: never written to a file).
    pub console: String,
}

fn cell_figures(runs: &[RunResult]) -> CellFigures {
    let flows: Vec<&FlowRun> = runs.iter().filter_map(|r| r.flows.first()).collect();
    let col = |f: fn(&RunResult) -> f64| Stat::of(&runs.iter().map(f).collect::<Vec<_>>());
    CellFigures {
        flow: FlowFigures::of(&flows),
        priority_latency_p99_ms: Stat::of(
            &runs
                .iter()
                .filter_map(|r| r.priority_p99_ms)
                .collect::<Vec<_>>(),
        ),
        priority_latency_p99_after_warmup_ms: Stat::of(
            &runs
                .iter()
                .filter_map(|r| r.priority_p99_after_ms)
                .collect::<Vec<_>>(),
        ),
        ce_marked: col(|r| r.ce_marked),
        aqm_dropped: col(|r| r.aqm_dropped),
        queue_drops: col(|r| r.queue_drops),
    }
}

fn coexistence_figures(runs: &[RunResult]) -> Coexistence {
    let mut flows = Keyed::new();
    for (i, cc) in COEXISTENCE.iter().enumerate() {
        let mine: Vec<&FlowRun> = runs.iter().filter_map(|r| r.flows.get(i)).collect();
        let shares: Vec<f64> = runs
            .iter()
            .map(|r| {
                let total: f64 = r.flows.iter().map(|f| f.goodput_mbps).sum();
                r.flows.get(i).map_or(0.0, |f| f.goodput_mbps) / total.max(1e-12)
            })
            .collect();
        flows.push(
            cc.key,
            CoexistenceFlow {
                flow: FlowFigures::of(&mine),
                share: Stat::of(&shares),
            },
        );
    }
    Coexistence {
        aqm: "dualpi2".into(),
        flows,
        ce_marked: Stat::of(&runs.iter().map(|r| r.ce_marked).collect::<Vec<_>>()),
    }
}

/// Run the reproduction, reporting to `progress`, and write `out/aqm/`.
/// Cost: one simulation per point and seed (21 points).
// The wall clock measures the closing console line only (printed, never
// written to a file, so the outputs stay byte-deterministic).
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
pub fn run(args: &Options, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    let started = std::time::Instant::now();
    let duration_s = args.duration_s.unwrap_or(if args.quick {
        QUICK_DURATION_S
    } else {
        DURATION_S
    });
    anyhow::ensure!(
        duration_s.is_finite() && duration_s > WARMUP_S && duration_s <= 3600.0,
        "--duration-s must be in ({WARMUP_S}, 3600] (the warm-up is {WARMUP_S} s)"
    );
    anyhow::ensure!(
        args.seeds.is_none_or(|s| (1..=30).contains(&s)),
        "--seeds must be in 1 … 30"
    );
    let seeds = args
        .seeds
        .unwrap_or(if args.quick { QUICK_SEEDS } else { SEEDS });
    let plan = points();
    let runs = plan.len() * seeds as usize;
    let duration = Dur::from_secs_f64(duration_s);
    progress.start("aqm", runs);
    let how = PlanRuns {
        seeds,
        base_seed: 1,
        threads: args.threads,
    };
    let outcome = run_plan(
        &plan,
        how,
        &|done, total| progress.update(done, total),
        Point::label,
        |p, seed| run_one(p, duration, seed),
    );
    progress.finish();
    let outcome = outcome?;
    let mut by_point: BTreeMap<usize, &Vec<RunResult>> = BTreeMap::new();
    let mut events = 0u64;
    for (i, r) in outcome.runs.iter().enumerate() {
        events += r.iter().map(|x| x.events).sum::<u64>();
        by_point.insert(i, r);
    }
    let mut cells = Keyed::new();
    let mut coexistence = None;
    for (i, p) in plan.iter().enumerate() {
        let r = by_point.get(&i).context("every point ran")?;
        match p {
            Point::Cell { aqm, cc } => {
                if cells.get(aqm).is_none() {
                    cells.push(*aqm, Keyed::new());
                }
                if let Some((_, m)) = cells.0.iter_mut().find(|(k, _)| k == aqm) {
                    m.push(cc.key, cell_figures(r));
                }
            }
            Point::Coexistence => coexistence = Some(coexistence_figures(r)),
        }
    }
    let summary = AqmSummary {
        setup: Setup {
            rate_mbps: RATE_MBPS,
            rtt_ms: 2 * ONE_WAY_MS,
            buffer_bdp: BUFFER_BDP,
            duration_s,
            seeds,
            warmup_s: WARMUP_S,
            base_delay_ms: peregrine_sim::metrics::round6(base_delay_ms()),
        },
        cells,
        coexistence: coexistence.context("the coexistence pair ran")?,
        contenders: {
            let mut k = Keyed::new();
            for c in &CONTENDERS {
                k.push(c.key, ContenderInfo::from(c));
            }
            k
        },
    };
    let dir = args.out.join("aqm");
    std::fs::create_dir_all(dir.join("plots"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let text = serde_json::to_string_pretty(&summary)? + "\n";
    std::fs::write(dir.join("summary.json"), text)
        .with_context(|| format!("cannot write {}/summary.json", dir.display()))?;
    let report = report::write(&dir, &summary, args)?;
    let console = super::console_line(&report, &dir, runs, events, started.elapsed().as_secs_f64());
    Ok(Outcome {
        summary,
        dir,
        report,
        runs,
        console,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_path_delay_is_the_bench_scripts() {
        // bench/aqm-dumbbell.sh's BASE_MS.
        assert!(
            (base_delay_ms() - 20.81).abs() < 0.005,
            "{}",
            base_delay_ms()
        );
    }

    #[test]
    fn every_point_builds_a_valid_scenario_with_its_seeded_start() {
        for p in points() {
            let c = p.scenario(Dur::from_secs_f64(3.0), 7);
            let s = Scenario::from_config(c.clone(), "aqm").expect("valid");
            assert_eq!(s.model.flows.len(), c.flows.len());
            for f in &c.flows {
                assert!(f.start.0 < START_SPREAD_MS * 1_000_000);
            }
        }
        assert_eq!(points().len(), AQMS.len() * CONTENDERS.len() + 1);
        // Another seed, another phase.
        assert_ne!(start_of(1, 0), start_of(2, 0));
        assert_ne!(start_of(1, 0), start_of(1, 1));
    }
}
