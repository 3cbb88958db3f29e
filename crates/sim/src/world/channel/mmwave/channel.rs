//! The stepping part of the mmWave model: [`MmWaveChannel`].

use super::{cqi_from_snr_db, FailureCounts, FailureEvent, FailureKind, LinkState, MmWaveConfig};
use crate::rng::{component_rng, SimRng};
use crate::world::channel::obstacles::{
    Blocker, BlockerIndex, Obstacle, ObstacleField, ObstacleKind,
};
use crate::world::channel::ConfigError;
use crate::world::geom::Vec3;
use crate::Time;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use std::time::Duration;

/// An outage in progress.
#[derive(Copy, Clone, Debug)]
struct Outage {
    kind: FailureKind,
    end: Time,
    /// Base station the vehicle is served by when the outage ends.
    next_bs: Option<usize>,
}

/// What the channel remembers about one vehicle between steps.
#[derive(Clone, Debug)]
struct Vehicle {
    rng: SimRng,
    heading_rad: f64,
    yaw_rate: f64,
    los: bool,
    outage: Option<Outage>,
    /// A better base station and since when it has been better.
    candidate: Option<(usize, Time)>,
    state: LinkState,
    /// Fading model: the shadowing draws (its own stream, so the outage
    /// model's draws are the same with fading on or off), one standard
    /// normal state per station, and where they were last updated.
    shadow_rng: SimRng,
    shadow_z: Vec<f64>,
    last_pos: Option<Vec3>,
    /// SNR (fading: with shadowing) to every station at the last step, dB:
    /// what a second attachment sees (make-before-break, issue 29). Empty
    /// when only the views the decisions need are evaluated.
    snr_by_bs: Vec<f64>,
    /// Without every station evaluated: (station, SNR dB) of those that
    /// were, in the order they were (a handful, not the whole city).
    snr_seen: Vec<(usize, f64)>,
}

/// A vehicle's association as of the last step, for a make-before-break
/// policy (issue 29): who serves it, who beats the serving station by the
/// hysteresis, and where a handover in progress goes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Association {
    /// The serving station.
    pub serving: Option<usize>,
    /// A station better than the serving one by the hysteresis (waiting
    /// out the time-to-trigger).
    pub candidate: Option<usize>,
    /// The target of a handover in progress.
    pub handover_to: Option<usize>,
}

/// What every vehicle's step shares.
#[derive(Copy, Clone)]
struct StepCtx<'a> {
    now: Time,
    dt: f64,
    vehicles: &'a [(Vec3, Vec3)],
    bodies: &'a BlockerIndex,
    headings: &'a [f64],
    load: &'a [usize],
    /// Each vehicle's serving station at step start (interference).
    serving: &'a [Option<usize>],
}

/// Per base station, what one vehicle sees at one step.
#[derive(Copy, Clone, Debug)]
struct View {
    snr_db: f64,
    clear: bool,
}

/// The 28 GHz channel of a set of vehicles and road-side base stations.
///
/// Drive it with [`step`](MmWaveChannel::step) at the resolution wanted
/// (1 ms resolves every outage kind; call it also at
/// [`next_change`](MmWaveChannel::next_change) to end outages on time),
/// read each vehicle's [`link`](MmWaveChannel::link) and collect the
/// outages with [`drain_events`](MmWaveChannel::drain_events).
#[derive(Clone, Debug)]
pub struct MmWaveChannel {
    config: MmWaveConfig,
    base_stations: Vec<Vec3>,
    obstacles: ObstacleField,
    seed: u64,
    vehicles: Vec<Vehicle>,
    last_step: Option<Time>,
    events: Vec<FailureEvent>,
    counts: FailureCounts,
    /// Evaluate every station's view at every step (see
    /// [`set_every_station`](MmWaveChannel::set_every_station)).
    every_station: bool,
    /// The stations by where they are, for the bounded searches.
    station_grid: StationGrid,
    /// The views' buffers, reused by every vehicle's step.
    scratch: ViewScratch,
}

/// Slack of the bounded station searches, dB: a station is passed over
/// only when its bound is below the bar by more than this, so that a
/// rounding difference between two distances' logarithms cannot prune a
/// station that ties.
const BOUND_SLACK_DB: f64 = 1e-9;

/// The base stations' ground positions bucketed in a uniform grid, so that
/// a search finds the stations within a distance of a vehicle by visiting
/// the cells around it, not every station of the city (issue 40). Cells
/// are `√(area / stations)` of the stations' bounding box (about one
/// station each), at least 1 m and 1/1024 of the extent.
#[derive(Clone, Debug, Default)]
struct StationGrid {
    origin_x: f64,
    origin_y: f64,
    cell_m: f64,
    nx: usize,
    ny: usize,
    /// The stations of cell `c` are `items[start[c]..start[c + 1]]`,
    /// ascending.
    start: Vec<u32>,
    items: Vec<u32>,
}

impl StationGrid {
    /// Buckets `stations` (finite, as the channel validates them).
    /// O(stations).
    fn new(stations: &[Vec3]) -> StationGrid {
        if stations.is_empty() {
            return StationGrid::default();
        }
        let (mut lo_x, mut lo_y) = (f64::INFINITY, f64::INFINITY);
        let (mut hi_x, mut hi_y) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        for b in stations {
            lo_x = lo_x.min(b.x);
            lo_y = lo_y.min(b.y);
            hi_x = hi_x.max(b.x);
            hi_y = hi_y.max(b.y);
        }
        let (w, h) = (hi_x - lo_x, hi_y - lo_y);
        let cell_m = (w * h / stations.len() as f64)
            .sqrt()
            .max(w.max(h) / 1024.0)
            .max(1.0);
        let mut g = StationGrid {
            origin_x: lo_x,
            origin_y: lo_y,
            cell_m,
            nx: (w / cell_m) as usize + 1,
            ny: (h / cell_m) as usize + 1,
            ..StationGrid::default()
        };
        let cell = |b: &Vec3| g.cell(g.col(b.x), g.row(b.y));
        let cells: Vec<usize> = stations.iter().map(cell).collect();
        let mut start = vec![0u32; g.nx * g.ny + 1];
        for &c in &cells {
            start[c + 1] += 1;
        }
        for c in 1..start.len() {
            start[c] += start[c - 1];
        }
        let mut fill = start.clone();
        let mut items = vec![0u32; stations.len()];
        for (j, &c) in cells.iter().enumerate() {
            items[fill[c] as usize] = j as u32;
            fill[c] += 1;
        }
        g.start = start;
        g.items = items;
        g
    }

    /// Column of `x`, clamped to the grid (NaN: 0).
    fn col(&self, x: f64) -> usize {
        ((x - self.origin_x) / self.cell_m).clamp(0.0, (self.nx - 1) as f64) as usize
    }

    /// Row of `y`, clamped to the grid (NaN: 0).
    fn row(&self, y: f64) -> usize {
        ((y - self.origin_y) / self.cell_m).clamp(0.0, (self.ny - 1) as f64) as usize
    }

    fn cell(&self, col: usize, row: usize) -> usize {
        row * self.nx + col
    }

    /// Calls `f` once with every station whose ground position is within
    /// `r_m` of `(x, y)` on both axes (a superset of those within `r_m`,
    /// which the caller filters by distance); nothing for a non-finite
    /// position, every station for an infinite `r_m`. O(cells in the
    /// square + stations there).
    fn within(&self, x: f64, y: f64, r_m: f64, mut f: impl FnMut(usize)) {
        if self.nx == 0 || !(x.is_finite() && y.is_finite()) || r_m.is_nan() {
            return;
        }
        let (c0, c1) = (self.col(x - r_m), self.col(x + r_m));
        let (r0, r1) = (self.row(y - r_m), self.row(y + r_m));
        for row in r0..=r1 {
            let (a, b) = (self.cell(c0, row), self.cell(c1, row));
            // The cells of one row are contiguous, and so are their items.
            for &j in &self.items[self.start[a] as usize..self.start[b + 1] as usize] {
                f(j as usize);
            }
        }
    }
}

/// The buffers of [`Views`], kept across vehicles and steps so that a
/// vehicle's step allocates nothing (issue 40).
#[derive(Clone, Debug, Default)]
struct ViewScratch {
    got: Vec<View>,
    /// `stamp[j] == pass`: station `j`'s view in `got` is this vehicle's
    /// (a new pass per vehicle step forgets the others in O(1)).
    stamp: Vec<u64>,
    pass: u64,
    /// The stations evaluated in this pass, in order.
    evaluated: Vec<usize>,
    /// (distance m, station): a bounded search's candidates, nearest first.
    order: Vec<(f64, usize)>,
}

/// One vehicle's views of the base stations at one step, each evaluated
/// (its segment tested against the obstacles and the other vehicles) at
/// most once, and only when a decision needs it — unless `full`, when
/// all are evaluated up front as the fading model needs (its shadowing
/// can lift an SNR above the clear-path bound, and its SINR sums every
/// serving station's power).
struct Views<'a> {
    ch: &'a MmWaveChannel,
    ant: Vec3,
    bodies: &'a BlockerIndex,
    own: usize,
    full: bool,
    s: &'a mut ViewScratch,
}

impl<'a> Views<'a> {
    /// Vehicle `own`'s views from its antenna at `ant`, in `scratch`'s
    /// buffers. O(1) (after the first call), plus every station's segment
    /// test if `full`.
    fn new(
        ch: &'a MmWaveChannel,
        scratch: &'a mut ViewScratch,
        ant: Vec3,
        bodies: &'a BlockerIndex,
        own: usize,
        full: bool,
    ) -> Views<'a> {
        let n = ch.base_stations.len();
        if scratch.got.len() != n {
            let unknown = View {
                snr_db: f64::NAN,
                clear: false,
            };
            scratch.got = vec![unknown; n];
            scratch.stamp = vec![0; n];
        }
        scratch.pass += 1;
        scratch.evaluated.clear();
        let mut v = Views {
            ch,
            ant,
            bodies,
            own,
            full,
            s: scratch,
        };
        if full {
            for j in 0..n {
                v.get(j);
            }
        }
        v
    }

    /// Whether station `j`'s view was evaluated. O(1).
    fn known(&self, j: usize) -> bool {
        self.s.stamp[j] == self.s.pass
    }

    /// Station `j`'s view, evaluated now if it was not yet. O(1) once
    /// known, else one segment test.
    fn get(&mut self, j: usize) -> View {
        if !self.known(j) {
            self.s.got[j] = self.ch.view(self.ant, j, self.bodies, self.own);
            self.s.stamp[j] = self.s.pass;
            self.s.evaluated.push(j);
        }
        self.s.got[j]
    }

    /// The station (not `exclude`; in line of sight if `need_clear`) with
    /// the highest SNR at or above `min_snr_db` and, if `above_db` is
    /// given, above it — ties to the higher index; that is, the best
    /// station of a scan of every view if its SNR is above `above_db`,
    /// else none.
    ///
    /// With every view known, a scan. Else a bounded search: the bar
    /// starts at `min_snr_db` or `above_db`, whichever is higher (what a
    /// handover must beat: the serving SNR plus the hysteresis), the
    /// stations whose clear-path bound can reach it
    /// ([`MmWaveConfig::reach_m`]) are found through the station grid and
    /// sorted, and they are taken nearest first, each bounded by its
    /// clear-path SNR (an obstacle only lowers it,
    /// [`MmWaveConfig::snr_bound_db`]), stopping at the first whose bound
    /// is below the bar or the best found — so only the views that could
    /// be the answer are evaluated (issue 40). O(cells and stations within
    /// reach + k log k for the k of them) plus the segment tests it needs.
    fn best(
        &mut self,
        exclude: Option<usize>,
        need_clear: bool,
        above_db: Option<f64>,
    ) -> Option<usize> {
        let cfg = &self.ch.config;
        let min = cfg.min_snr_db;
        let counts = |w: View| {
            (!need_clear || w.clear) && w.snr_db >= min && above_db.is_none_or(|a| w.snr_db > a)
        };
        let better = |w: View, j: usize, best: Option<(f64, usize)>| {
            best.is_none_or(|(b, bj)| match w.snr_db.total_cmp(&b) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Equal => j > bj,
                std::cmp::Ordering::Less => false,
            })
        };
        let mut best: Option<(f64, usize)> = None;
        if self.full {
            for j in 0..self.s.got.len() {
                let w = self.s.got[j];
                if Some(j) != exclude && counts(w) && better(w, j, best) {
                    best = Some((w.snr_db, j));
                }
            }
            return best.map(|b| b.1);
        }
        let floor = above_db.map_or(min, |a| a.max(min));
        let reach = cfg.reach_m(floor);
        let (ch, ant) = (self.ch, self.ant);
        let order = &mut self.s.order;
        order.clear();
        ch.station_grid.within(ant.x, ant.y, reach, |j| {
            let d = ant.distance(ch.bs_antenna(j));
            // Beyond `reach` a station's bound is below the bar: the
            // search below would stop before it anyway.
            if d <= reach {
                order.push((d, j));
            }
        });
        // Distinct stations: a total order, so unstable is deterministic.
        order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for k in 0..self.s.order.len() {
            let (d, j) = self.s.order[k];
            if Some(j) == exclude {
                continue;
            }
            // Every station from here on is at least as far: bounded by
            // this one's bound.
            let bar = best.map_or(floor, |b| b.0.max(floor));
            // (The bound is never NaN: −∞ for a NaN distance.)
            if cfg.snr_bound_db(d) < bar - BOUND_SLACK_DB {
                break;
            }
            let w = self.get(j);
            if counts(w) && better(w, j, best) {
                best = Some((w.snr_db, j));
            }
        }
        best.map(|b| b.1)
    }
}

/// Heading change wrapped into (−π, π].
fn wrap_angle(a: f64) -> f64 {
    let tau = std::f64::consts::TAU;
    let w = a.rem_euclid(tau);
    if w > std::f64::consts::PI {
        w - tau
    } else {
        w
    }
}

fn ms(x: f64) -> Duration {
    Duration::from_secs_f64(x.max(0.0) * 1e-3)
}

impl MmWaveChannel {
    /// A channel over `base_stations` (ground positions; the antenna is at
    /// `bs_height_m` above them) among `obstacles`, its draws from `seed`.
    pub fn new(
        config: MmWaveConfig,
        base_stations: Vec<Vec3>,
        obstacles: ObstacleField,
        seed: u64,
    ) -> Result<MmWaveChannel, ConfigError> {
        config.validate()?;
        if base_stations.is_empty() {
            return Err(ConfigError::new(
                "base_stations",
                "must name at least one base station",
            ));
        }
        for (i, b) in base_stations.iter().enumerate() {
            if !(b.x.is_finite() && b.y.is_finite() && b.z.is_finite()) {
                return Err(ConfigError {
                    field: format!("base_stations[{i}]"),
                    reason: "must be a finite position",
                });
            }
        }
        Ok(MmWaveChannel {
            config,
            station_grid: StationGrid::new(&base_stations),
            scratch: ViewScratch::default(),
            base_stations,
            obstacles,
            seed,
            vehicles: Vec::new(),
            last_step: None,
            events: Vec::new(),
            counts: FailureCounts::default(),
            every_station: true,
        })
    }

    /// Whether every step evaluates each vehicle's view of every station
    /// (on, the default) or only the views the association decisions need
    /// (off): the serving station's, and those a bounded search for a
    /// better station cannot rule out by distance (issue 40: in a city of
    /// 200 vehicles and 45 stations, most of the 9,000 segment tests per
    /// step). Off changes no decision, outage or serving link; what it
    /// gives up is [`capacity_to`](Self::capacity_to) for the stations not
    /// evaluated (0 for them), which only a second attachment
    /// (make-before-break) reads. The fading model evaluates every view
    /// either way (its shadowing and SINR need them).
    pub fn set_every_station(&mut self, on: bool) {
        self.every_station = on;
    }

    /// The configuration.
    pub fn config(&self) -> &MmWaveConfig {
        &self.config
    }

    /// The base stations' ground positions.
    pub fn base_stations(&self) -> &[Vec3] {
        &self.base_stations
    }

    /// The static obstacles.
    pub fn obstacles(&self) -> &ObstacleField {
        &self.obstacles
    }

    /// Vehicle `vehicle`'s link as of the last step ([`LinkState::DOWN`]
    /// for one never stepped).
    pub fn link(&self, vehicle: usize) -> LinkState {
        self.vehicles
            .get(vehicle)
            .map_or(LinkState::DOWN, |v| v.state)
    }

    /// Vehicle `vehicle`'s association as of the last step (all `None`
    /// for one never stepped). O(1).
    pub fn association(&self, vehicle: usize) -> Association {
        self.vehicles
            .get(vehicle)
            .map_or_else(Association::default, |v| Association {
                serving: v.state.bs,
                candidate: v.candidate.map(|c| c.0),
                handover_to: v
                    .outage
                    .filter(|o| o.kind == FailureKind::Handover)
                    .and_then(|o| o.next_bs),
            })
    }

    /// What vehicle `vehicle`'s own beam to station `bs` would carry at
    /// the last step, bit/s: the capacity of its SNR (SINR-free in the
    /// fading model: a second attachment's path loss and shadowing only,
    /// no transient outages). 0 for unknown indices, and for a station
    /// whose view the step did not evaluate
    /// ([`set_every_station`](Self::set_every_station) off). O(1) with
    /// every station evaluated, else O(views evaluated).
    pub fn capacity_to(&self, vehicle: usize, bs: usize) -> u64 {
        let Some(v) = self.vehicles.get(vehicle) else {
            return 0;
        };
        let snr = if v.snr_by_bs.is_empty() {
            v.snr_seen.iter().find(|e| e.0 == bs).map(|e| e.1)
        } else {
            v.snr_by_bs.get(bs).copied()
        };
        let Some(snr) = snr else {
            return 0;
        };
        if self.config.fading {
            self.config.fading_capacity_bps(snr)
        } else {
            self.config.capacity_bps(snr)
        }
    }

    /// Outages started since the last call, in order.
    pub fn drain_events(&mut self) -> Vec<FailureEvent> {
        std::mem::take(&mut self.events)
    }

    /// Outages so far, per kind.
    pub fn counts(&self) -> FailureCounts {
        self.counts
    }

    /// The earliest end of an outage in progress: step then to bring the
    /// link back on time.
    pub fn next_change(&self) -> Option<Time> {
        self.vehicles
            .iter()
            .filter_map(|v| v.outage.map(|o| o.end))
            .min()
    }

    fn bs_antenna(&self, j: usize) -> Vec3 {
        self.base_stations[j] + Vec3::new(0.0, 0.0, self.config.bs_height_m)
    }

    fn body(&self, pos: Vec3, heading_rad: f64) -> Blocker {
        Blocker::new(Obstacle {
            kind: ObstacleKind::Vehicle,
            center: pos,
            half_length_m: self.config.vehicle_length_m / 2.0,
            half_width_m: self.config.vehicle_width_m / 2.0,
            heading_rad,
            height_m: self.config.vehicle_height_m,
        })
    }

    /// SNR and line of sight from a vehicle antenna at `ant` to base
    /// station `j`, with `bodies` as moving blockers (`own` excluded).
    fn view(&self, ant: Vec3, j: usize, bodies: &BlockerIndex, own: usize) -> View {
        let bs = self.bs_antenna(j);
        let c = self.obstacles.crossings_indexed(ant, bs, bodies, &[own]);
        View {
            snr_db: self
                .config
                .snr_db(ant.distance(bs), c.buildings, c.trees, c.vehicles),
            clear: c.is_clear(),
        }
    }

    /// Advances every vehicle's link to `now`. `vehicles[i]` is vehicle
    /// `i`'s (ground position, velocity) in m and m/s; the slice may grow
    /// between calls (new vehicles start unassociated). A `now` earlier
    /// than the previous step is treated as no time passing.
    pub fn step(&mut self, now: Time, vehicles: &[(Vec3, Vec3)]) {
        let dt = self
            .last_step
            .map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f64());
        self.last_step = Some(self.last_step.map_or(now, |t| t.max(now)));
        while self.vehicles.len() < vehicles.len() {
            let i = self.vehicles.len();
            let (_, vel) = vehicles[i];
            self.vehicles.push(Vehicle {
                rng: component_rng(self.seed, &format!("mmwave/vehicle/{i}")),
                heading_rad: if vel.x == 0.0 && vel.y == 0.0 {
                    0.0
                } else {
                    vel.y.atan2(vel.x)
                },
                yaw_rate: 0.0,
                los: false,
                outage: None,
                candidate: None,
                state: LinkState::DOWN,
                shadow_rng: component_rng(self.seed, &format!("mmwave/shadowing/{i}")),
                shadow_z: Vec::new(),
                last_pos: None,
                snr_by_bs: Vec::new(),
                snr_seen: Vec::new(),
            });
        }
        // Headings and yaw rates; then the moving bodies.
        for (v, (_, vel)) in self.vehicles.iter_mut().zip(vehicles) {
            if vel.x.hypot(vel.y) > 0.1 {
                let h = vel.y.atan2(vel.x);
                v.yaw_rate = if dt > 0.0 {
                    wrap_angle(h - v.heading_rad) / dt
                } else {
                    0.0
                };
                v.heading_rad = h;
            } else {
                v.yaw_rate = 0.0;
            }
        }
        // Indexed once per step: every vehicle tests its links to every
        // station against them (issue 40).
        let bodies = BlockerIndex::new(
            vehicles
                .iter()
                .zip(&self.vehicles)
                .map(|((p, _), v)| self.body(*p, v.heading_rad))
                .collect(),
        );
        let mut load = vec![0usize; self.base_stations.len()];
        for v in &self.vehicles[..vehicles.len()] {
            if let Some(b) = v.state.bs {
                load[b] += 1;
            }
        }
        let headings: Vec<f64> = self.vehicles.iter().map(|v| v.heading_rad).collect();
        let serving: Vec<Option<usize>> = self.vehicles.iter().map(|v| v.state.bs).collect();
        // Take the states out so each can be updated in place while the
        // rest of the channel is read.
        let mut states = std::mem::take(&mut self.vehicles);
        let mut scratch = std::mem::take(&mut self.scratch);
        for (i, v) in states.iter_mut().enumerate().take(vehicles.len()) {
            let ctx = StepCtx {
                now,
                dt,
                vehicles,
                bodies: &bodies,
                headings: &headings,
                load: &load,
                serving: &serving,
            };
            for ev in self
                .step_vehicle(v, i, &ctx, &mut scratch)
                .into_iter()
                .flatten()
            {
                self.counts.bump(ev.kind);
                self.events.push(ev);
            }
        }
        self.vehicles = states;
        self.scratch = scratch;
    }

    /// One vehicle's step; returns the outage it starts, if any, and (in
    /// the fading model) the blockage it saw, which is not an outage.
    fn step_vehicle(
        &self,
        v: &mut Vehicle,
        i: usize,
        ctx: &StepCtx<'_>,
        scratch: &mut ViewScratch,
    ) -> [Option<FailureEvent>; 2] {
        let StepCtx {
            now,
            dt,
            vehicles,
            bodies,
            headings,
            load,
            serving: _,
        } = *ctx;
        let (pos, vel) = vehicles[i];
        let ant = pos + Vec3::new(0.0, 0.0, self.config.vehicle_antenna_height_m);
        let full = self.config.fading || self.every_station;
        let mut views = Views::new(self, scratch, ant, bodies, i, full);
        if self.config.fading {
            self.shadow(v, pos, &mut views.s.got);
        }
        let speed = vel.x.hypot(vel.y);
        let cfg = &self.config;
        // `load` counted this vehicle on the station it had at step start.
        let counted = v.state.bs;
        let peers_on = |b: usize| load[b].saturating_sub(usize::from(counted == Some(b)));

        // An outage that has run its course ends now.
        if let Some(o) = v.outage {
            if now >= o.end {
                v.outage = None;
                if o.next_bs.is_some() {
                    v.state.bs = o.next_bs;
                }
                v.candidate = None;
                v.los = v.state.bs.is_some_and(|b| views.get(b).clear);
            }
        }
        let mut started: Option<(FailureKind, Duration, Option<usize>)> = None;
        // Fading model: a blockage attenuates (the views carry its loss)
        // and is counted, with the predictor's estimate of its length.
        let mut seen_blockage: Option<Duration> = None;
        if v.outage.is_none() {
            match v.state.bs {
                None => {
                    // First association (or re-entry into coverage): no outage.
                    v.state.bs = views.best(None, false, None);
                    v.los = v.state.bs.is_some_and(|b| views.get(b).clear);
                }
                Some(s) => {
                    let serving = views.get(s);
                    let blocked = v.los && !serving.clear;
                    if blocked && cfg.fading {
                        // The predictor's estimate of how long line of
                        // sight stays lost (the horizon when it sees no end).
                        let horizon = cfg.blockage_horizon_ms;
                        seen_blockage = Some(ms(self
                            .los_back_within(i, s, vehicles, headings, horizon)
                            .unwrap_or(horizon)));
                    }
                    if blocked && !cfg.fading {
                        started = Some(self.blockage(i, s, &mut views, vehicles, headings));
                    } else if serving.snr_db < cfg.min_snr_db {
                        // Out of coverage of the serving station: forced handover.
                        if let Some(k) = views.best(Some(s), false, None) {
                            started = Some((
                                FailureKind::Handover,
                                ms(cfg.handover_interruption_ms),
                                Some(k),
                            ));
                        }
                    } else if let Some(k) = views.best(
                        Some(s),
                        false,
                        // Only a station better by the hysteresis is kept:
                        // the search need not look below that (issue 40).
                        Some(serving.snr_db + cfg.handover_hysteresis_db),
                    ) {
                        match v.candidate {
                            Some((c, since)) if c == k => {
                                if now.saturating_duration_since(since)
                                    >= ms(cfg.time_to_trigger_ms)
                                {
                                    started = Some((
                                        FailureKind::Handover,
                                        ms(cfg.handover_interruption_ms),
                                        Some(k),
                                    ));
                                }
                            }
                            _ => v.candidate = Some((k, now)),
                        }
                    } else {
                        v.candidate = None;
                    }
                    if started.is_none() && dt > 0.0 {
                        started = self.transient(v, dt, s, pos, vel, peers_on(s));
                    }
                    v.los = serving.clear;
                }
            }
        }
        let event = started.map(|(kind, duration, next_bs)| {
            v.outage = Some(Outage {
                kind,
                end: now + duration,
                next_bs,
            });
            v.candidate = None;
            FailureEvent {
                time: now,
                vehicle: i,
                bs: v.state.bs,
                kind,
                duration,
                speed_mps: speed,
            }
        });
        let seen = seen_blockage.map(|duration| FailureEvent {
            time: now,
            vehicle: i,
            bs: v.state.bs,
            kind: FailureKind::Blockage,
            duration,
            speed_mps: speed,
        });
        // Publish the state.
        let (mut snr, los) = v.state.bs.map_or((f64::NEG_INFINITY, false), |b| {
            let w = views.get(b);
            (w.snr_db, w.clear)
        });
        if let (true, Some(b)) = (cfg.fading, v.state.bs) {
            snr = self.sinr_db(i, b, &views.s.got, v.yaw_rate, ctx);
        }
        // What a second attachment sees: every station's SNR, or (without
        // every station evaluated) those of the few that were.
        v.snr_by_bs.clear();
        v.snr_seen.clear();
        if full {
            v.snr_by_bs.extend(views.s.got.iter().map(|w| w.snr_db));
        } else {
            let got = &views.s.got;
            v.snr_seen
                .extend(views.s.evaluated.iter().map(|&j| (j, got[j].snr_db)));
        }
        let capacity = if v.outage.is_some() {
            0
        } else if cfg.fading {
            cfg.fading_capacity_bps(snr)
        } else {
            cfg.capacity_bps(snr)
        };
        v.state = LinkState {
            bs: v.state.bs,
            capacity_bps: capacity,
            up: capacity > 0,
            event: v.outage.map(|o| o.kind),
            snr_db: snr,
            cqi: if capacity > 0 {
                cqi_from_snr_db(snr)
            } else {
                0
            },
            los,
            peers: v.state.bs.map_or(0, peers_on),
        };
        [event, seen]
    }

    /// Fading model: moves each station's shadowing of vehicle `v` along
    /// the distance driven (Gudmundson: correlation `exp(−Δd / d_corr)`)
    /// and applies it to `views` (σ of line of sight or not). O(stations).
    fn shadow(&self, v: &mut Vehicle, pos: Vec3, views: &mut [View]) {
        let cfg = &self.config;
        if v.shadow_z.len() != views.len() {
            v.shadow_z = (0..views.len())
                .map(|_| StandardNormal.sample(&mut v.shadow_rng))
                .collect();
            v.last_pos = Some(pos);
        }
        let moved = v.last_pos.map_or(0.0, |p| p.distance(pos));
        let moved = if moved.is_finite() { moved } else { 0.0 };
        let rho = (-moved / cfg.shadowing_decorrelation_m).exp();
        let innovation = (1.0 - rho * rho).max(0.0).sqrt();
        for (z, w) in v.shadow_z.iter_mut().zip(views.iter_mut()) {
            // Drawn every step, so the stream does not depend on motion.
            let n: f64 = StandardNormal.sample(&mut v.shadow_rng);
            *z = rho * *z + innovation * n;
            let sigma = if w.clear {
                cfg.los_shadowing_db
            } else {
                cfg.nlos_shadowing_db
            };
            w.snr_db -= sigma * *z;
        }
        v.last_pos = Some(pos);
    }

    /// Fading model: SINR of vehicle `i` served by `s`, dB — the serving
    /// SNR less the misalignment loss (pointing error = relative angular
    /// speed × time since the last beam refresh), over noise plus the
    /// other stations' beams (each station's beam points at the vehicles
    /// it serves in turn: its expected pattern gain towards `i`, through
    /// `i`'s own beam pattern towards it). O(vehicles).
    fn sinr_db(&self, i: usize, s: usize, views: &[View], yaw_rate: f64, ctx: &StepCtx<'_>) -> f64 {
        let cfg = &self.config;
        let (pos, vel) = ctx.vehicles[i];
        let bs_s = self.base_stations[s];
        let r = pos - bs_s;
        let r2 = (r.x * r.x + r.y * r.y).max(1.0);
        let omega = (r.x * vel.y - r.y * vel.x) / r2;
        let omega_rel = omega.abs() + (omega - yaw_rate).abs();
        let period = cfg.beam_tracking_period_ms * 1e-3;
        let since_refresh = ctx.now.as_nanos() as f64 * 1e-9 % period;
        let signal = views[s].snr_db - cfg.beam_loss_db(omega_rel * since_refresh);
        let bearing = |from: Vec3, to: Vec3| (to.y - from.y).atan2(to.x - from.x);
        let to_s = bearing(pos, bs_s);
        let mut inr = 0.0;
        for (j, bs_j) in self.base_stations.iter().enumerate() {
            if j == s {
                continue;
            }
            let towards_i = bearing(*bs_j, pos);
            let (mut gain, mut n) = (0.0, 0u32);
            for (k, b) in ctx.serving.iter().enumerate() {
                if *b == Some(j) && k != i && k < ctx.vehicles.len() {
                    let off = wrap_angle(bearing(*bs_j, ctx.vehicles[k].0) - towards_i);
                    gain += 10f64.powf(-cfg.beam_loss_db(off) / 10.0);
                    n += 1;
                }
            }
            if n == 0 {
                continue;
            }
            let rx_off = wrap_angle(bearing(pos, *bs_j) - to_s);
            let inr_db = views[j].snr_db - cfg.beam_loss_db(rx_off);
            inr += 10f64.powf(inr_db / 10.0) * gain / f64::from(n);
        }
        if inr.is_finite() {
            signal - 10.0 * (1.0 + inr).log10()
        } else {
            signal
        }
    }

    /// Draws a deafness or misalignment outage over the last `dt` seconds
    /// (competing Poisson processes), if one happens.
    fn transient(
        &self,
        v: &mut Vehicle,
        dt: f64,
        s: usize,
        pos: Vec3,
        vel: Vec3,
        peers: usize,
    ) -> Option<(FailureKind, Duration, Option<usize>)> {
        let cfg = &self.config;
        let rate_deaf = cfg.deafness_rate_per_peer_hz * peers as f64;
        // Bearing rate of the vehicle seen from the station (horizontal),
        // and of the station seen from the vehicle's own heading.
        let r = pos - self.base_stations[s];
        let r2 = (r.x * r.x + r.y * r.y).max(1.0);
        let omega = (r.x * vel.y - r.y * vel.x) / r2;
        let omega_rel = omega.abs() + (omega - v.yaw_rate).abs();
        let rate_mis = cfg.misalignment_factor * omega_rel / cfg.beamwidth_deg.to_radians();
        let total = rate_deaf + rate_mis;
        // Draw every step, so a vehicle's stream does not depend on rates.
        let u: f64 = v.rng.random();
        let pick: f64 = v.rng.random();
        let frac: f64 = v.rng.random();
        // A non-finite rate (NaN positions or velocities) draws nothing.
        if !total.is_finite() || total <= 0.0 || u >= 1.0 - (-total * dt).exp() {
            return None;
        }
        let lo = cfg.min_outage_ms;
        let (kind, hi) = if pick * total < rate_deaf {
            // Until the station's beam comes back round to us.
            let hi = (peers as f64 * cfg.beam_dwell_ms).clamp(lo, cfg.link_recovery_ms);
            (FailureKind::Deafness, hi)
        } else {
            (FailureKind::BeamMisalignment, cfg.link_recovery_ms)
        };
        Some((kind, ms(lo + frac * (hi - lo)), None))
    }

    /// The outage of a blockage of vehicle `i`'s link to station `s`: the
    /// soonest of a handover to a station in line of sight, a beam on the
    /// blocked path, and line of sight coming back (motion extrapolated at
    /// constant velocity); at most the horizon.
    fn blockage(
        &self,
        i: usize,
        s: usize,
        views: &mut Views<'_>,
        vehicles: &[(Vec3, Vec3)],
        headings: &[f64],
    ) -> (FailureKind, Duration, Option<usize>) {
        let cfg = &self.config;
        let horizon = cfg.blockage_horizon_ms;
        let mut best = (horizon, None);
        if let Some(k) = views.best(Some(s), true, None) {
            best = (cfg.handover_interruption_ms, Some(k));
        }
        if views.get(s).snr_db >= cfg.min_snr_db && cfg.nlos_recovery_ms < best.0 {
            best = (cfg.nlos_recovery_ms, None);
        }
        // Line of sight back, looked for up to the best recovery so far.
        if let Some(t) = self.los_back_within(i, s, vehicles, headings, best.0) {
            best = (t, None);
        }
        (FailureKind::Blockage, ms(best.0), best.1)
    }

    /// When line of sight from vehicle `i` to station `s` comes back,
    /// ms from now, looked for in `prediction_step_ms` steps below
    /// `limit_ms`, every vehicle's motion extrapolated at constant
    /// velocity (a mobility predictor: it cannot see turns or new
    /// blockers). O(limit / step × obstacles).
    fn los_back_within(
        &self,
        i: usize,
        s: usize,
        vehicles: &[(Vec3, Vec3)],
        headings: &[f64],
        limit_ms: f64,
    ) -> Option<f64> {
        let cfg = &self.config;
        let step = cfg.prediction_step_ms;
        let mut t = step;
        while t < limit_ms {
            let tau = t * 1e-3;
            // One look per extrapolated instant: the bodies are scanned,
            // not indexed (an index would cost more than it saves).
            let moved: Vec<Blocker> = vehicles
                .iter()
                .zip(headings)
                .map(|((p, v), h)| self.body(*p + v.scale(tau), *h))
                .collect();
            let (p, vel) = vehicles[i];
            let ant = p + vel.scale(tau) + Vec3::new(0.0, 0.0, cfg.vehicle_antenna_height_m);
            let bs = self.bs_antenna(s);
            if self.obstacles.crossings(ant, bs, &moved, &[i]).is_clear() {
                return Some(t);
            }
            t += step;
        }
        None
    }
}

#[cfg(test)]
mod search_tests {
    use super::*;
    use crate::world::channel::obstacles::Rect;

    /// Every station within `r` (horizontally) of a point is visited, each
    /// once, wherever the point is (outside the grid too).
    #[test]
    fn the_station_grid_visits_every_station_in_range_once() {
        let stations: Vec<Vec3> = (0..45)
            .map(|k| Vec3::new((k * 37 % 300) as f64, (k * 91 % 280) as f64, 0.0))
            .collect();
        let grid = StationGrid::new(&stations);
        for q in 0..400 {
            let (x, y) = ((q * 13 % 500) as f64 - 100.0, (q * 29 % 460) as f64 - 80.0);
            for r in [0.0, 5.0, 30.0, 120.0, 1e4, f64::INFINITY] {
                let mut seen = vec![0u32; stations.len()];
                grid.within(x, y, r, |j| seen[j] += 1);
                for (j, b) in stations.iter().enumerate() {
                    assert!(seen[j] <= 1, "station {j} twice");
                    let near = (b.x - x).abs() <= r && (b.y - y).abs() <= r;
                    assert!(!near || seen[j] == 1, "({x}, {y}) r {r}: missed {j}");
                }
            }
        }
        let mut n = 0;
        grid.within(f64::NAN, 3.0, 10.0, |_| n += 1);
        grid.within(3.0, f64::INFINITY, 10.0, |_| n += 1);
        assert_eq!(n, 0);
        // Stations on one line, and a single one: a grid still.
        let line: Vec<Vec3> = (0..5)
            .map(|k| Vec3::new(k as f64 * 1e3, 7.0, 0.0))
            .collect();
        for st in [line, vec![Vec3::new(1.0, 2.0, 0.0)]] {
            let grid = StationGrid::new(&st);
            let mut all = Vec::new();
            grid.within(0.0, 0.0, f64::INFINITY, |j| all.push(j));
            assert_eq!(all, (0..st.len()).collect::<Vec<_>>());
        }
    }

    /// `reach_m` is never closer than a distance whose bound is within
    /// the searches' slack of the bar, and not much farther than needed.
    #[test]
    fn reach_covers_every_distance_the_bound_reaches() {
        let odd = MmWaveConfig {
            nlos_alpha_db: 50.0,
            nlos_beta: 1.5,
            ..MmWaveConfig::urban()
        };
        for cfg in [MmWaveConfig::urban(), odd] {
            for b in 0..400 {
                let bar = -20.0 + 0.173 * b as f64;
                let reach = cfg.reach_m(bar);
                assert!(reach >= 1.0);
                for i in 0..3000 {
                    let d = 0.01 * 1.004f64.powi(i);
                    if cfg.snr_bound_db(d) >= bar - BOUND_SLACK_DB {
                        assert!(d <= reach, "bar {bar}: {d} m beyond {reach}");
                    }
                }
                if reach > 1.0 {
                    assert!(cfg.snr_bound_db(reach * 1.001) < bar, "bar {bar}");
                }
            }
            assert_eq!(cfg.reach_m(f64::NAN), f64::INFINITY);
            assert_eq!(cfg.reach_m(f64::NEG_INFINITY), f64::INFINITY);
            assert!(cfg.reach_m(f64::INFINITY) < 1.0 + 1e-8);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// The bounded search (station grid, reach, bound) picks what a
        /// scan of every view picks, then filtered by `above_db` as the
        /// handover decision filters it — for random stations, buildings,
        /// trees, vehicles, exclusions and bars, its buffers reused from
        /// vehicle to vehicle.
        #[test]
        fn the_bounded_search_picks_what_a_full_scan_picks(
            stations in proptest::collection::vec((0.0f64..400.0, 0.0f64..400.0), 1..30),
            obstacles in proptest::collection::vec(
                (0.0f64..400.0, 0.0f64..400.0, 1.0f64..20.0, 1.0f64..20.0, proptest::bool::ANY),
                0..40,
            ),
            vehicles in proptest::collection::vec(
                (-50.0f64..450.0, -50.0f64..450.0, 0.0f64..6.3, 0usize..31, proptest::bool::ANY, -30.0f64..60.0, 0u8..3),
                1..25,
            ),
        ) {
            let field = ObstacleField::new(
                obstacles
                    .iter()
                    .map(|&(x, y, w, h, tree)| {
                        let kind = if tree { ObstacleKind::Tree } else { ObstacleKind::Building };
                        let r = Rect { min_x: x, min_y: y, max_x: x + w, max_y: y + h };
                        Obstacle::from_rect(kind, r, 10.0)
                    })
                    .collect(),
            )
            .unwrap();
            let bss = stations.iter().map(|&(x, y)| Vec3::new(x, y, 0.0)).collect();
            let ch = MmWaveChannel::new(MmWaveConfig::urban(), bss, field, 1).unwrap();
            let bodies = BlockerIndex::new(
                vehicles
                    .iter()
                    .map(|&(x, y, h, ..)| ch.body(Vec3::new(x, y, 0.0), h))
                    .collect(),
            );
            let (mut full_buf, mut some_buf) = (ViewScratch::default(), ViewScratch::default());
            for (i, &(x, y, _, ex, need_clear, above, mode)) in vehicles.iter().enumerate() {
                let ant = Vec3::new(x, y, ch.config.vehicle_antenna_height_m);
                let exclude = (ex < stations.len()).then_some(ex);
                // No bar; the bar of a handover; a serving station's SNR plus the hysteresis.
                let above_db = match mode {
                    0 => None,
                    1 => Some(above),
                    _ => exclude.map(|s| ch.view(ant, s, &bodies, i).snr_db + 3.0),
                };
                let mut full = Views::new(&ch, &mut full_buf, ant, &bodies, i, true);
                let scan = full.best(exclude, need_clear, None);
                let want = scan.filter(|&k| above_db.is_none_or(|a| full.get(k).snr_db > a));
                proptest::prop_assert_eq!(full.best(exclude, need_clear, above_db), want);
                let mut some = Views::new(&ch, &mut some_buf, ant, &bodies, i, false);
                proptest::prop_assert_eq!(some.best(exclude, need_clear, above_db), want);
                // What it evaluated is this vehicle's, each once.
                let mut seen = some.s.evaluated.clone();
                seen.sort_unstable();
                seen.dedup();
                proptest::prop_assert_eq!(seen.len(), some.s.evaluated.len());
                for &j in &some.s.evaluated {
                    let (a, b) = (some.s.got[j], full_buf.got[j]);
                    proptest::prop_assert_eq!((a.snr_db.to_bits(), a.clear), (b.snr_db.to_bits(), b.clear));
                }
            }
        }
    }
}
