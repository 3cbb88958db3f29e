//! The `[vehicular]` table as the vehicular world reads it: its fields
//! and defaults ([`VehicularConfig`]) and the validated form the world is
//! built from ([`VehicularModel`]). It lives with the model it configures
//! (by feature); reading, checking and expanding the table into nodes,
//! links and flows is the scenario's (`scenario::vehicular`).

use crate::units::{Dur, Rate};
use crate::world::cells::{HandoverBuffer, SchedulerKind};
use crate::world::channel::hints::HintMode;
use crate::world::channel::mmwave::{Environment, MmWaveConfig};
use serde::{Deserialize, Serialize};

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
fn d_cell_demand() -> String {
    "full_buffer".into()
}
#[allow(clippy::ptr_arg)]
fn is_d_cell_demand(s: &String) -> bool {
    *s == d_cell_demand()
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
/// code, `scenario::vehicular::expand_config`).
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
    /// ACK policy of every flow's receiver (`sltp` or `tcp`, as a flow's
    /// `ack_policy`); default the flow's default, `sltp`.
    #[serde(default)]
    pub ack_policy: Option<String>,
    /// With `ack_policy = "tcp"`: the delayed-ACK timer (as a flow's).
    #[serde(default)]
    pub delayed_ack: Option<Dur>,
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
    /// Whom the cells share air time among (`world::cells::TrafficCells`,
    /// issue 39): `full_buffer` (every vehicle in coverage, as if always
    /// backlogged: the schedule is made while the channel is recorded) or
    /// `backlogged` (only the vehicles whose downlink RLC buffer holds a
    /// packet, decided as the traffic runs: an idle vehicle gets no air
    /// time and its share goes to the others). Default `full_buffer`, so
    /// older outputs are unchanged; `reproduce mmwave-cvn` uses
    /// `backlogged`.
    #[serde(default = "d_cell_demand", skip_serializing_if = "is_d_cell_demand")]
    pub cell_demand: String,
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
            ack_policy: None,
            delayed_ack: None,
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
            cell_demand: d_cell_demand(),
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
    /// `cell_demand = "backlogged"`: the cells share air time among the
    /// backlogged vehicles only, as the traffic runs.
    pub cells_follow_traffic: bool,
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

impl VehicularConfig {
    /// `bps` × `rate_scale`, rounded, at least 1.
    pub(crate) fn scaled(&self, bps: u64) -> u64 {
        ((bps as f64 * self.rate_scale).round() as u64).max(1)
    }

    /// Offered rate of one vehicle's flow, bit/s (scaled).
    pub fn offered_rate_bps(&self) -> u64 {
        self.scaled((self.reference_rate.0 as f64 * self.load) as u64)
    }
}
