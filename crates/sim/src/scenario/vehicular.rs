//! The `[vehicular]` table: connected vehicles on 28 GHz mmWave (seed 004,
//! issue 11) described in a few lines and expanded into ordinary nodes,
//! links and flows.
//!
//! A vehicular world is a server behind a core link (`core_delay`, 1 ms in
//! seed 004) to a gateway node `gw` standing for the road-side base
//! stations, and one access link `gw — v<i>` per vehicle whose capacity and
//! up/down state follow the mmWave channel (the engine replaces the
//! generated fixed-rate access links by [`crate::world::mmwave_link`]
//! links fed with the channel's recorded states). One flow per vehicle,
//! server → vehicle (downlink), so the server's connection is the sender
//! the channel's link hints are delivered to.
//!
//! Key choice: the expansion happens on the TOML document, before it is
//! deserialized, so the generated links and flows go through the same
//! validation as hand-written ones and every `vehicular.*` field can be
//! overridden and swept like any other (`--set vehicular.load=0.6`).
//! Hand-written nodes, links and flows may sit beside the generated ones;
//! the generated names (`server`, `gw`, `v<i>`, `core`, `access-v<i>`) must
//! not be used by them.

use super::units::{Dur, Rate};
use super::ScenarioError;
use crate::world::cells::{HandoverBuffer, SchedulerKind};
use crate::world::channel::hints::{HintMode, HintOrigin};
use crate::world::channel::mmwave::{Environment, MmWaveConfig};
use serde::{Deserialize, Serialize};
use toml::Value;

fn d_environment() -> Environment {
    Environment::Urban
}
fn d_mobility() -> String {
    "manhattan".into()
}
fn d_vehicles() -> usize {
    20
}
fn d_area() -> [f64; 2] {
    [100.0, 100.0]
}
fn d_sites() -> Vec<[f64; 2]> {
    // Road-side units beside four intersections of the 25 m grid and the
    // centre one, 2 m off the street axes.
    vec![
        [23.0, 23.0],
        [77.0, 23.0],
        [23.0, 77.0],
        [77.0, 77.0],
        [52.0, 48.0],
    ]
}
fn d_speed_min() -> f64 {
    5.0
}
fn d_speed_max() -> f64 {
    30.0
}
fn d_block() -> f64 {
    25.0
}
fn d_cc() -> String {
    "cubic".into()
}
fn d_load() -> f64 {
    1.0
}
fn d_reference_rate() -> Rate {
    Rate(2_000_000_000)
}
fn d_one() -> f64 {
    1.0
}
fn d_ms() -> Dur {
    Dur(1_000_000)
}
fn d_core_rate() -> Rate {
    Rate(100_000_000_000)
}
fn d_rlc() -> u64 {
    50_000_000
}
fn d_hints() -> String {
    "perfect".into()
}
fn d_payload() -> u32 {
    1400
}
fn d_traffic() -> String {
    "cbr".into()
}
fn d_scheduler() -> String {
    "unshared".into()
}
fn d_pf_window() -> Dur {
    Dur(100_000_000)
}
fn d_pf_min_share() -> f64 {
    0.1
}
fn d_handover_buffer() -> String {
    "move".into()
}
fn d_channel_model() -> String {
    "outage".into()
}
fn d_hint_source() -> String {
    "oracle".into()
}
fn d_onoff_mean() -> Dur {
    Dur(1_000_000_000)
}
fn d_handover() -> String {
    "break_before_make".into()
}
// serde's `skip_serializing_if` hands the field itself, a `&String`.
#[allow(clippy::ptr_arg)]
fn is_d_handover(s: &String) -> bool {
    *s == d_handover()
}
fn d_overlap() -> Dur {
    Dur(100_000_000)
}
fn is_d_overlap(d: &Dur) -> bool {
    *d == d_overlap()
}
fn d_group_rate() -> Rate {
    Rate(4_000_000)
}
fn is_d_group_rate(r: &Rate) -> bool {
    *r == d_group_rate()
}

/// `[vehicular]`: see the module documentation and `docs/scenarios.md`.
/// Serializes as the table it was read from (for scenarios built in
/// code, [`expand_config`]).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VehicularConfig {
    /// `rural` or `urban` (obstacle density preset); default `urban`.
    #[serde(default = "d_environment")]
    pub environment: Environment,
    /// `manhattan` (streets of a grid), `random` (2-D random waypoint,
    /// no pause) or `highway` (a straight multi-lane road along x through
    /// the middle of the area, half the lanes each way, every vehicle at
    /// its own constant speed drawn in `[speed_min_mps, speed_max_mps]`,
    /// leaving at one end and re-entering at the other so the density
    /// `vehicles / area_m[0]` stays constant); default `manhattan`.
    #[serde(default = "d_mobility")]
    pub mobility: String,
    /// Number of vehicles (1 … 1000); default 20.
    #[serde(default = "d_vehicles")]
    pub vehicles: usize,
    /// Area `[x, y]`, metres; default `[100, 100]`.
    #[serde(default = "d_area")]
    pub area_m: [f64; 2],
    /// Base-station ground positions `[x, y]`, metres; default five.
    #[serde(default = "d_sites")]
    pub base_stations: Vec<[f64; 2]>,
    /// Lowest vehicle speed, m/s; default 5.
    #[serde(default = "d_speed_min")]
    pub speed_min_mps: f64,
    /// Highest vehicle speed, m/s; default 30.
    #[serde(default = "d_speed_max")]
    pub speed_max_mps: f64,
    /// Manhattan street spacing, metres; default 25.
    #[serde(default = "d_block")]
    pub block_size_m: f64,
    /// Controller of every flow (a registry name); default `cubic`.
    #[serde(default = "d_cc")]
    pub cc: String,
    /// Offered load per vehicle as a fraction of `reference_rate`
    /// (0 < load ≤ 10); default 1.
    #[serde(default = "d_load")]
    pub load: f64,
    /// The rate a load of 1 offers (before `rate_scale`); default 2 Gbit/s.
    #[serde(default = "d_reference_rate")]
    pub reference_rate: Rate,
    /// Multiplies every rate of the world (channel capacities, offered
    /// load, RLC buffer) to make multi-gigabit runs affordable; default 1.
    #[serde(default = "d_one")]
    pub rate_scale: f64,
    /// One-way delay of the core link gateway — server; default 1 ms.
    #[serde(default = "d_ms")]
    pub core_delay: Dur,
    /// Rate of the core link; default 100 Gbit/s (never the bottleneck).
    #[serde(default = "d_core_rate")]
    pub core_rate: Rate,
    /// Base-station (RLC) buffer per vehicle, bytes, before `rate_scale`;
    /// default 50 MB (seed 004).
    #[serde(default = "d_rlc")]
    pub rlc_buffer_bytes: u64,
    /// Link hints: `perfect`, `noisy` (σ = 0.5 log-normal duration error,
    /// 10 % missed, up to 5 ms late) or `absent`; default `perfect`.
    #[serde(default = "d_hints")]
    pub hints: String,
    /// Delay from an outage's start to its hint reaching the sender;
    /// default 1 ms.
    #[serde(default = "d_ms")]
    pub hint_delay: Dur,
    /// Channel step (the resolution of capacity changes); default 1 ms.
    #[serde(default = "d_ms")]
    pub step: Dur,
    /// Stream bytes per DATA packet; default 1400 (seed 004).
    #[serde(default = "d_payload")]
    pub payload_bytes: u32,
    /// `cbr` (the offered load), `bulk` (always backlogged) or `onoff`
    /// (the offered load during exponential ON periods of mean
    /// `onoff_mean_on`, silent for exponential OFF periods of mean
    /// `onoff_mean_off`); default `cbr`.
    #[serde(default = "d_traffic")]
    pub traffic: String,
    /// How a base station shares its air time among the vehicles it
    /// serves (`world::cells`): `pf` (proportional fair), `rr` (round
    /// robin) or `unshared` (every vehicle keeps its own rate, the model
    /// before issue 23); default `unshared`, so older outputs are
    /// unchanged until a scenario asks for `pf`.
    #[serde(default = "d_scheduler")]
    pub scheduler: String,
    /// Averaging window of the proportional-fair throughput; default 100 ms.
    #[serde(default = "d_pf_window")]
    pub pf_window: Dur,
    /// Fraction of a step every vehicle in coverage keeps under PF,
    /// divided among the cell's vehicles (0 … 1); default 0.1.
    #[serde(default = "d_pf_min_share")]
    pub pf_min_share: f64,
    /// The base station's RLC buffer of a vehicle at a handover: `move`
    /// (forwarded to the new station) or `drop` (lost); default `move`.
    #[serde(default = "d_handover_buffer")]
    pub handover_buffer: String,
    /// The channel: `outage` (blockage, deafness, misalignment and
    /// handover switch the link off; issue 11) or `fading` (SINR with
    /// shadowing and interference, blockage and misalignment as losses,
    /// capacity continuous; deafness and handover still interrupt;
    /// issue 23); default `outage`, so older outputs are unchanged.
    #[serde(default = "d_channel_model")]
    pub channel_model: String,
    /// Who produces the hints (`world::channel::hints::HintOrigin`):
    /// `oracle` (the outage's own duration — foreknowledge; the model
    /// before issue 23), `base_station` (learns blockage lengths as they
    /// end) or `mobility` (blocker length over the vehicle's speed); with
    /// a named source `perfect` means zero delay and no misses. Default
    /// `oracle`, so older outputs are unchanged.
    #[serde(default = "d_hint_source")]
    pub hint_source: String,
    /// Mean ON period of `traffic = "onoff"`; default 1 s.
    #[serde(default = "d_onoff_mean")]
    pub onoff_mean_on: Dur,
    /// Mean OFF period of `traffic = "onoff"`; default 1 s.
    #[serde(default = "d_onoff_mean")]
    pub onoff_mean_off: Dur,
    /// Handover mode (issue 29): `break_before_make` (today's single
    /// attachment: the link is down for `handover_interruption_ms`) or
    /// `make_before_break` (while the candidate station beats the serving
    /// one by the hysteresis the vehicle holds a second attachment, opens
    /// a connection to the server behind the candidate, joins the
    /// downlink group there and leaves the old station `overlap` after the
    /// handover; the run then also reports `handover_multicast` in
    /// `summary.json`, see `engine::handover`). Default
    /// `break_before_make`: left out, every output is as before.
    #[serde(default = "d_handover", skip_serializing_if = "is_d_handover")]
    pub handover: String,
    /// `make_before_break`: how long the old attachment is kept after the
    /// handover before the vehicle leaves the group there; default 100 ms.
    #[serde(default = "d_overlap", skip_serializing_if = "is_d_overlap")]
    pub overlap: Dur,
    /// `make_before_break`: rate of the downlink group stream and of the
    /// unicast stream it is compared with (messages of `payload_bytes`),
    /// not scaled by `rate_scale`; default 4 Mbit/s.
    #[serde(default = "d_group_rate", skip_serializing_if = "is_d_group_rate")]
    pub group_rate: Rate,
}

impl Default for VehicularConfig {
    /// The table with every field left out (the defaults listed above).
    fn default() -> Self {
        VehicularConfig {
            environment: d_environment(),
            mobility: d_mobility(),
            vehicles: d_vehicles(),
            area_m: d_area(),
            base_stations: d_sites(),
            speed_min_mps: d_speed_min(),
            speed_max_mps: d_speed_max(),
            block_size_m: d_block(),
            cc: d_cc(),
            load: d_load(),
            reference_rate: d_reference_rate(),
            rate_scale: d_one(),
            core_delay: d_ms(),
            core_rate: d_core_rate(),
            rlc_buffer_bytes: d_rlc(),
            hints: d_hints(),
            hint_delay: d_ms(),
            step: d_ms(),
            payload_bytes: d_payload(),
            traffic: d_traffic(),
            scheduler: d_scheduler(),
            pf_window: d_pf_window(),
            pf_min_share: d_pf_min_share(),
            handover_buffer: d_handover_buffer(),
            channel_model: d_channel_model(),
            hint_source: d_hint_source(),
            onoff_mean_on: d_onoff_mean(),
            onoff_mean_off: d_onoff_mean(),
            handover: d_handover(),
            overlap: d_overlap(),
            group_rate: d_group_rate(),
        }
    }
}

/// How vehicles move.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum VehicleMobility {
    /// Manhattan grid.
    Manhattan,
    /// 2-D random waypoint without pauses.
    Random,
    /// A straight multi-lane road with wrap-around (seed 004's congested
    /// highway, §4: 0.119 vehicles/m, 50.08 km/h mean).
    Highway,
}

/// The validated `[vehicular]` table and where its parts landed in the model.
#[derive(Clone, Debug)]
pub struct VehicularModel {
    /// The table as read.
    pub config: VehicularConfig,
    /// The mobility model.
    pub mobility: VehicleMobility,
    /// The hint accuracy.
    pub hints: HintMode,
    /// The channel parameters (environment preset, capacity cap scaled).
    pub channel: MmWaveConfig,
    /// How each base station shares its air time.
    pub scheduler: SchedulerKind,
    /// What a handover does to the base station's RLC buffer.
    pub handover_buffer: HandoverBuffer,
    /// Index (in `Model::links`) of `access-v0`; vehicle `i`'s is `+ i`.
    pub first_access_link: usize,
    /// Index (in `Model::flows`) of flow `v0`; vehicle `i`'s is `+ i`.
    pub first_flow: usize,
    /// `handover = "make_before_break"`: the old attachment's overlap
    /// after a handover (`None`: today's break-before-make handover).
    pub make_before_break: Option<std::time::Duration>,
}

fn err(origin: &str, field: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError::new(origin, format!("vehicular.{field}"), message)
}

impl VehicularConfig {
    /// Checks every field, naming the first bad one.
    pub fn check(&self, origin: &str) -> Result<(VehicleMobility, HintMode), ScenarioError> {
        self.cells(origin)?;
        let mobility = match self.mobility.as_str() {
            "manhattan" => VehicleMobility::Manhattan,
            "random" => VehicleMobility::Random,
            "highway" => VehicleMobility::Highway,
            o => {
                return Err(err(
                    origin,
                    "mobility",
                    format!("{o:?}: use manhattan, random or highway"),
                ))
            }
        };
        let hints = match self.hints.as_str() {
            "perfect" => HintMode::Perfect,
            "noisy" => HintMode::noisy_default(),
            "absent" => HintMode::Absent,
            o => {
                return Err(err(
                    origin,
                    "hints",
                    format!("{o:?}: use perfect, noisy or absent"),
                ))
            }
        };
        if !matches!(self.traffic.as_str(), "cbr" | "bulk" | "onoff") {
            return Err(err(origin, "traffic", "use cbr, bulk or onoff"));
        }
        if self.onoff_mean_on.0 == 0 {
            return Err(err(origin, "onoff_mean_on", "must be positive"));
        }
        if self.onoff_mean_off.0 == 0 {
            return Err(err(origin, "onoff_mean_off", "must be positive"));
        }
        if !(1..=1000).contains(&self.vehicles) {
            return Err(err(origin, "vehicles", "must be 1 … 1000"));
        }
        let finite_pos = |v: f64| v.is_finite() && v > 0.0;
        if !self.area_m.iter().all(|v| finite_pos(*v) && *v <= 1e6) {
            return Err(err(origin, "area_m", "sides must be in (0, 1e6] m"));
        }
        if self.base_stations.is_empty() || self.base_stations.len() > 1000 {
            return Err(err(origin, "base_stations", "must list 1 … 1000 sites"));
        }
        for (i, b) in self.base_stations.iter().enumerate() {
            if !b.iter().all(|v| v.is_finite()) {
                return Err(err(origin, &format!("base_stations.{i}"), "must be finite"));
            }
        }
        if !(finite_pos(self.speed_min_mps)
            && self.speed_max_mps.is_finite()
            && self.speed_min_mps <= self.speed_max_mps
            && self.speed_max_mps <= 1000.0)
        {
            return Err(err(
                origin,
                "speed_min_mps",
                "speeds must satisfy 0 < speed_min_mps <= speed_max_mps <= 1000",
            ));
        }
        let road_m =
            crate::world::vehicles::HIGHWAY_LANES as f64 * crate::world::vehicles::LANE_WIDTH_M;
        if mobility == VehicleMobility::Highway && self.area_m[1] < road_m {
            return Err(err(
                origin,
                "area_m",
                format!("the highway's {road_m} m of lanes must fit in area_m[1]"),
            ));
        }
        if !(self.block_size_m.is_finite() && self.block_size_m >= 1.0) {
            return Err(err(origin, "block_size_m", "must be >= 1 m"));
        }
        if !(finite_pos(self.load) && self.load <= 10.0) {
            return Err(err(origin, "load", "must be in (0, 10]"));
        }
        if !(finite_pos(self.rate_scale) && self.rate_scale <= 1.0) {
            return Err(err(origin, "rate_scale", "must be in (0, 1]"));
        }
        if self.reference_rate.0 == 0 || self.core_rate.0 == 0 {
            return Err(err(origin, "reference_rate", "rates must be positive"));
        }
        if self.step.0 < 10_000 || self.step.0 > 1_000_000_000 {
            return Err(err(origin, "step", "must be 10 µs … 1 s"));
        }
        if !(64..=60_000).contains(&self.payload_bytes) {
            return Err(err(origin, "payload_bytes", "must be 64 … 60000"));
        }
        if !matches!(
            self.handover.as_str(),
            "break_before_make" | "make_before_break"
        ) {
            return Err(err(
                origin,
                "handover",
                format!(
                    "{:?}: use break_before_make or make_before_break",
                    self.handover
                ),
            ));
        }
        if self.overlap.0 < 1_000_000 || self.overlap.0 > 10_000_000_000 {
            return Err(err(origin, "overlap", "must be 1 ms … 10 s"));
        }
        if self.group_rate.0 < 10_000 || self.group_rate.0 > 10_000_000_000 {
            return Err(err(origin, "group_rate", "must be 10 kbit/s … 10 Gbit/s"));
        }
        Ok((mobility, hints))
    }

    /// The scheduler and the handover-buffer policy, each checked.
    pub fn cells(&self, origin: &str) -> Result<(SchedulerKind, HandoverBuffer), ScenarioError> {
        let scheduler = SchedulerKind::parse(&self.scheduler).ok_or_else(|| {
            err(
                origin,
                "scheduler",
                format!("{:?}: use pf, rr or unshared", self.scheduler),
            )
        })?;
        let buffer = HandoverBuffer::parse(&self.handover_buffer).ok_or_else(|| {
            err(
                origin,
                "handover_buffer",
                format!("{:?}: use move or drop", self.handover_buffer),
            )
        })?;
        if self.pf_window.0 < 1_000_000 || self.pf_window.0 > 100_000_000_000 {
            return Err(err(origin, "pf_window", "must be 1 ms … 100 s"));
        }
        if HintOrigin::parse(&self.hint_source).is_none() {
            return Err(err(
                origin,
                "hint_source",
                "use oracle, base_station or mobility",
            ));
        }
        if !matches!(self.channel_model.as_str(), "outage" | "fading") {
            return Err(err(origin, "channel_model", "use outage or fading"));
        }
        if !(self.pf_min_share.is_finite() && (0.0..=1.0).contains(&self.pf_min_share)) {
            return Err(err(origin, "pf_min_share", "must be in [0, 1]"));
        }
        Ok((scheduler, buffer))
    }

    fn scaled(&self, bps: u64) -> u64 {
        ((bps as f64 * self.rate_scale).round() as u64).max(1)
    }

    /// Offered rate of one vehicle's flow, bit/s (scaled).
    pub fn offered_rate_bps(&self) -> u64 {
        self.scaled((self.reference_rate.0 as f64 * self.load) as u64)
    }
}

fn table(pairs: Vec<(&str, Value)>) -> Value {
    Value::Table(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn s(x: impl Into<String>) -> Value {
    Value::String(x.into())
}

/// If `doc` has a `[vehicular]` table: its validated form, and `doc`
/// with the generated links and flows appended (hand-written ones first).
pub fn expand(doc: &mut Value, origin: &str) -> Result<Option<VehicularModel>, ScenarioError> {
    let Some(raw) = doc.get("vehicular").cloned() else {
        return Ok(None);
    };
    let cfg: VehicularConfig = serde_path_to_error::deserialize(raw).map_err(|e| {
        let field = e.path().to_string();
        ScenarioError::new(
            origin,
            format!("vehicular.{field}"),
            e.into_inner().message().to_string(),
        )
    })?;
    let (mobility, hints) = cfg.check(origin)?;
    let (scheduler, handover_buffer) = cfg.cells(origin)?;
    let mut channel = cfg.environment.config();
    channel.capacity_cap_bps = cfg.scaled(channel.capacity_cap_bps);
    channel.fading = cfg.channel_model == "fading";
    let Value::Table(t) = doc else {
        return Err(ScenarioError::new(origin, "(document)", "is not a table"));
    };
    let arr = |t: &mut toml::Table, key: &str| -> Result<Vec<Value>, ScenarioError> {
        match t.remove(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err(ScenarioError::new(
                origin,
                key,
                "must be an array of tables",
            )),
        }
    };
    let mut links = arr(t, "links")?;
    let mut flows = arr(t, "flows")?;
    let first_access_link = links.len() + 1;
    let first_flow = flows.len();
    links.push(table(vec![
        ("name", s("core")),
        ("a", s("gw")),
        ("b", s("server")),
        // Rates carry their unit: a bare number is an error in a scenario.
        ("rate", s(format!("{}bps", cfg.core_rate.0))),
        ("delay", s(format!("{}ns", cfg.core_delay.0))),
        ("queue", table(vec![("packets", Value::Integer(100_000))])),
    ]));
    let rlc = cfg.scaled(cfg.rlc_buffer_bytes).max(10 * 1500);
    let rate = cfg.offered_rate_bps();
    for i in 0..cfg.vehicles {
        links.push(table(vec![
            ("name", s(format!("access-v{i}"))),
            ("a", s("gw")),
            ("b", s(format!("v{i}"))),
            // Replaced by the channel-driven link when the world is built.
            ("rate", s(format!("{}bps", channel.capacity_cap_bps))),
            ("queue", table(vec![("bytes", Value::Integer(rlc as i64))])),
        ]));
        let app = if cfg.traffic == "bulk" {
            table(vec![("app", s("bulk"))])
        } else if cfg.traffic == "onoff" {
            table(vec![
                ("app", s("onoff")),
                ("rate", s(format!("{rate}bps"))),
                (
                    "message_bytes",
                    Value::Integer(i64::from(cfg.payload_bytes)),
                ),
                ("distribution", s("exponential")),
                ("mean_on", s(format!("{}ns", cfg.onoff_mean_on.0))),
                ("mean_off", s(format!("{}ns", cfg.onoff_mean_off.0))),
            ])
        } else {
            table(vec![
                ("app", s("cbr")),
                ("rate", s(format!("{rate}bps"))),
                (
                    "message_bytes",
                    Value::Integer(i64::from(cfg.payload_bytes)),
                ),
            ])
        };
        flows.push(table(vec![
            ("name", s(format!("v{i}"))),
            ("src", s("server")),
            ("dst", s(format!("v{i}"))),
            ("cc", s(cfg.cc.clone())),
            (
                "payload_bytes",
                Value::Integer(i64::from(cfg.payload_bytes)),
            ),
            ("streams", Value::Array(vec![app])),
        ]));
    }
    t.insert("links".into(), Value::Array(links));
    t.insert("flows".into(), Value::Array(flows));
    let make_before_break = (cfg.handover == "make_before_break")
        .then(|| std::time::Duration::from_nanos(cfg.overlap.0));
    Ok(Some(VehicularModel {
        config: cfg,
        mobility,
        hints,
        channel,
        scheduler,
        handover_buffer,
        first_access_link,
        first_flow,
        make_before_break,
    }))
}

/// The typed form of [`expand`], for a configuration built in code: if
/// `config` has a `vehicular` table, its validated form, and `config` with
/// the generated links and flows appended after its own. The generation
/// is [`expand`]'s own (the table is written to a TOML document and
/// expanded there), so a scenario built in code and the same scenario
/// read from a file are the same. O(vehicles).
pub fn expand_config(
    config: &mut super::ScenarioConfig,
    origin: &str,
) -> Result<Option<VehicularModel>, ScenarioError> {
    let Some(v) = &config.vehicular else {
        return Ok(None);
    };
    let internal =
        |e: &dyn std::fmt::Display| ScenarioError::new(origin, "vehicular", e.to_string());
    let table = Value::try_from(v).map_err(|e| internal(&e))?;
    let mut doc = table_doc(table);
    let Some(mut model) = expand(&mut doc, origin)? else {
        return Ok(None);
    };
    /// What [`expand`] appended to the document.
    #[derive(Deserialize)]
    struct Generated {
        links: Vec<super::config::LinkConfig>,
        flows: Vec<super::config::FlowConfig>,
    }
    let generated: Generated = doc.try_into().map_err(|e| internal(&e))?;
    model.first_access_link += config.links.len();
    model.first_flow += config.flows.len();
    config.links.extend(generated.links);
    config.flows.extend(generated.flows);
    Ok(Some(model))
}

/// A document holding only `vehicular = table`.
fn table_doc(table: Value) -> Value {
    let mut doc = toml::Table::new();
    doc.insert("vehicular".to_string(), table);
    Value::Table(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scenario;

    const DOC: &str = "duration = \"1s\"\nseed = 3\n[vehicular]\nvehicles = 3\n";

    #[test]
    fn a_vehicular_table_expands_into_links_and_flows() {
        let s = Scenario::from_toml_str(DOC, "t", &[]).unwrap();
        let m = &s.model;
        let v = m.vehicular.as_ref().unwrap();
        assert_eq!(m.links.len(), 4);
        assert_eq!(m.flows.len(), 3);
        assert_eq!(m.links[v.first_access_link + 2].name, "access-v2");
        assert_eq!(m.flows[v.first_flow + 1].name, "v1");
        assert_eq!(m.nodes[m.flows[0].src], "server");
        assert_eq!(v.mobility, VehicleMobility::Manhattan);
        assert_eq!(v.hints, HintMode::Perfect);
        assert_eq!(v.channel.capacity_cap_bps, 2_000_000_000);
    }

    #[test]
    fn bad_fields_are_named_and_overrides_apply() {
        let bad = |set: &str| {
            Scenario::from_toml_str(DOC, "t", &[set.to_string()])
                .unwrap_err()
                .field
        };
        assert_eq!(bad("vehicular.mobility=\"teleport\""), "vehicular.mobility");
        assert_eq!(bad("vehicular.hints=\"psychic\""), "vehicular.hints");
        assert_eq!(bad("vehicular.load=0"), "vehicular.load");
        assert_eq!(bad("vehicular.vehicles=0"), "vehicular.vehicles");
        assert_eq!(bad("vehicular.cc=\"nope\""), "flows.0.cc");
        assert_eq!(bad("vehicular.colour=1"), "vehicular.colour");
        assert_eq!(bad("vehicular.scheduler=\"wfq\""), "vehicular.scheduler");
        assert_eq!(
            bad("vehicular.handover_buffer=\"keep\""),
            "vehicular.handover_buffer"
        );
        assert_eq!(bad("vehicular.pf_min_share=2.0"), "vehicular.pf_min_share");
        assert_eq!(
            bad("vehicular.channel_model=\"rayleigh\""),
            "vehicular.channel_model"
        );
        assert_eq!(bad("vehicular.pf_window=\"10us\""), "vehicular.pf_window");
        assert_eq!(bad("vehicular.traffic=\"poisson\""), "vehicular.traffic");
        assert_eq!(
            bad("vehicular.onoff_mean_off=\"0s\""),
            "vehicular.onoff_mean_off"
        );
        assert_eq!(
            bad("vehicular.hint_source=\"crystal\""),
            "vehicular.hint_source"
        );
        assert_eq!(bad("vehicular.handover=\"teleport\""), "vehicular.handover");
        assert_eq!(bad("vehicular.overlap=\"0s\""), "vehicular.overlap");
        assert_eq!(bad("vehicular.group_rate=\"1bps\""), "vehicular.group_rate");
        let s = Scenario::from_toml_str(
            DOC,
            "t",
            &[
                "vehicular.rate_scale=0.05".into(),
                "vehicular.load=0.5".into(),
                "vehicular.environment=\"rural\"".into(),
            ],
        )
        .unwrap();
        let v = s.model.vehicular.as_ref().unwrap();
        assert_eq!(v.channel.capacity_cap_bps, 100_000_000);
        assert_eq!(v.config.offered_rate_bps(), 50_000_000);
        assert_eq!(v.config.environment, Environment::Rural);
    }

    #[test]
    fn a_typed_table_expands_as_the_same_file_does() {
        let file = Scenario::from_toml_str(DOC, "t", &[]).unwrap();
        let mut cfg = crate::scenario::ScenarioConfig::new(Dur(1_000_000_000), 3);
        cfg.vehicular = Some(VehicularConfig {
            vehicles: 3,
            ..VehicularConfig::default()
        });
        let built = Scenario::from_config(cfg, "t").unwrap();
        assert_eq!(format!("{:?}", built.config), format!("{:?}", file.config));
        assert_eq!(format!("{:?}", built.model), format!("{:?}", file.model));
        // The table reads back as written (every field, floats exactly).
        let v = VehicularConfig {
            rate_scale: 0.025,
            load: 0.6,
            ..VehicularConfig::default()
        };
        let back: VehicularConfig = Value::try_from(&v).unwrap().try_into().unwrap();
        assert_eq!(back, v);
    }
}
