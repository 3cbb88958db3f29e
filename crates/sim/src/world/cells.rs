//! Cells that share (issue 23, deliverable 1): a base station's air time
//! is divided among the vehicles it serves by a downlink scheduler —
//! proportional fair ([`SchedulerKind::ProportionalFair`]) or round robin
//! ([`SchedulerKind::RoundRobin`]) — over each vehicle's own rate from its
//! SNR (the channel's [`LinkState::capacity_bps`]).
//!
//! **Fluid, full-buffer or following traffic.** The channel is recorded
//! once per (scenario, seed) and replayed into every controller (common
//! random numbers). By default (`cell_demand = "full_buffer"`) the
//! schedule is made while recording and assumes every associated vehicle
//! is backlogged, so an idle vehicle's share is wasted; with
//! `cell_demand = "backlogged"` (issue 39) the recording keeps each
//! vehicle's own rate and station, and [`TrafficCells`] runs the same
//! scheduler with the traffic, over the vehicles whose downlink holds a
//! packet. Within one channel step (1 ms, eight
//! 125 µs NR slots) the scheduler hands out *time fractions*, not whole
//! slots: a vehicle in coverage gets capacity `fraction × own rate` for the
//! step. Whole-slot granularity would make a vehicle's capacity 0 for the
//! steps it is not picked, and 0 means "link down" to
//! [`crate::world::mmwave_link::MmWaveLink`] (a packet on the air is cut);
//! a real scheduler's HARQ/RLC keeps such packets.
//!
//! **Proportional fair, in the fluid limit.** The classic PF scheduler
//! picks, slot by slot, the vehicle with the largest `rate / average
//! throughput`, the average an exponential one over `pf_window`. Over a
//! step of length `dt` (`β = dt / window`) the allocation that maximises
//! `Σ log(T_i')`, `T_i' = (1 − β)·T_i + β·x_i·r_i`, is a water-filling:
//! `x_i = max(0, μ − c_i)` with `c_i = (1 − β)·T_i / (β·r_i)` and `Σ x_i`
//! the time left after the floor. Every vehicle in coverage keeps a floor
//! of `min_share / n` of the step (control signalling and HARQ keep some
//! slots for everyone; it also keeps 0 meaning "down").
//!
//! **Round robin** gives every vehicle in coverage `1 / n` of the time.
//!
//! Either way the time fractions of a cell's vehicles in coverage add up
//! to 1, so the bits a cell delivers in a step are `Σ x_i·r_i ≤ max r_i`:
//! the cell's capacity is shared, never multiplied.
//!
//! [`LinkState::capacity_bps`]: crate::world::channel::mmwave::LinkState

use super::mmwave_link::CapacitySteps;
use crate::Time;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// How a base station divides its air time.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerKind {
    /// Every vehicle keeps its own rate: the pre-issue-23 model, in which
    /// cells do not share (kept so that older outputs can be reproduced).
    Unshared,
    /// Proportional fair (the default of issue 23).
    ProportionalFair,
    /// Round robin: equal time.
    RoundRobin,
}

impl SchedulerKind {
    /// The scenario-file name: `unshared`, `pf` or `rr`.
    pub fn as_str(self) -> &'static str {
        match self {
            SchedulerKind::Unshared => "unshared",
            SchedulerKind::ProportionalFair => "pf",
            SchedulerKind::RoundRobin => "rr",
        }
    }

    /// Parses a scenario-file name (`unshared`, `pf`, `rr`).
    pub fn parse(s: &str) -> Option<SchedulerKind> {
        match s {
            "unshared" => Some(SchedulerKind::Unshared),
            "pf" => Some(SchedulerKind::ProportionalFair),
            "rr" => Some(SchedulerKind::RoundRobin),
            _ => None,
        }
    }
}

/// What happens to the base station's RLC buffer of a vehicle at a
/// handover.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandoverBuffer {
    /// Forwarded to the new station (X2 data forwarding): kept.
    Move,
    /// Lost with the old station: every queued packet is dropped.
    Drop,
}

impl HandoverBuffer {
    /// The scenario-file name: `move` or `drop`.
    pub fn as_str(self) -> &'static str {
        match self {
            HandoverBuffer::Move => "move",
            HandoverBuffer::Drop => "drop",
        }
    }

    /// Parses a scenario-file name (`move`, `drop`).
    pub fn parse(s: &str) -> Option<HandoverBuffer> {
        match s {
            "move" => Some(HandoverBuffer::Move),
            "drop" => Some(HandoverBuffer::Drop),
            _ => None,
        }
    }
}

/// One vehicle's share of its cell for one step.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Share {
    /// Fraction of the step's air time, in `[0, 1]`.
    pub fraction: f64,
    /// What the vehicle's link carries for the step, bit/s.
    pub rate_bps: u64,
}

/// The schedulers of every base station, with the PF averages of every
/// vehicle (a vehicle keeps its average across a handover: the new
/// station learns it with the context).
#[derive(Clone, Debug)]
pub struct CellScheduler {
    kind: SchedulerKind,
    window: Duration,
    min_share: f64,
    /// Per vehicle, its exponentially averaged throughput, bit/s.
    avg_bps: Vec<f64>,
    /// Scratch for one cell's water-filling (no allocation per step once
    /// grown).
    scratch: Vec<(f64, usize)>,
    /// Scratch: the vehicles in coverage as (cell, vehicle), sorted.
    members: Vec<(usize, usize)>,
}

impl CellScheduler {
    /// A scheduler of `kind` for `vehicles` vehicles; PF averages over
    /// `window` and keeps a floor of `min_share / n` (`min_share` in
    /// `[0, 1]`) for each of a cell's `n` vehicles in coverage.
    pub fn new(
        kind: SchedulerKind,
        vehicles: usize,
        window: Duration,
        min_share: f64,
    ) -> CellScheduler {
        CellScheduler {
            kind,
            window: window.max(Duration::from_nanos(1)),
            min_share: if min_share.is_finite() {
                min_share.clamp(0.0, 1.0)
            } else {
                0.0
            },
            avg_bps: vec![0.0; vehicles],
            scratch: Vec::new(),
            members: Vec::new(),
        }
    }

    /// The kind.
    pub fn kind(&self) -> SchedulerKind {
        self.kind
    }

    /// Vehicle `v`'s averaged throughput so far, bit/s (PF state).
    pub fn average_bps(&self, v: usize) -> f64 {
        self.avg_bps.get(v).copied().unwrap_or(0.0)
    }

    /// Shares of the next `dt` for every vehicle: `links[i]` is vehicle
    /// `i`'s (serving station, own rate bit/s; 0 = down). Writes
    /// `out[i]` (resized to `links.len()`); a vehicle down or unassociated
    /// gets nothing. O(vehicles · log vehicles).
    pub fn schedule(&mut self, dt: Duration, links: &[(Option<usize>, u64)], out: &mut Vec<Share>) {
        self.allocate(dt, links, out);
        self.account(dt, links, out);
    }

    /// The shares of [`schedule`](Self::schedule) for a step of `dt`,
    /// without updating the PF averages (see [`account`](Self::account)).
    /// O(vehicles · log vehicles).
    pub fn allocate(&mut self, dt: Duration, links: &[(Option<usize>, u64)], out: &mut Vec<Share>) {
        out.clear();
        out.resize(
            links.len(),
            Share {
                fraction: 0.0,
                rate_bps: 0,
            },
        );
        if self.avg_bps.len() < links.len() {
            self.avg_bps.resize(links.len(), 0.0);
        }
        if self.kind == SchedulerKind::Unshared {
            for (o, (bs, r)) in out.iter_mut().zip(links) {
                if bs.is_some() && *r > 0 {
                    *o = Share {
                        fraction: 1.0,
                        rate_bps: *r,
                    };
                }
            }
            return;
        }
        let beta = (dt.as_secs_f64() / self.window.as_secs_f64()).clamp(1e-9, 1.0);
        // The vehicles in coverage grouped by cell, in vehicle order within
        // a cell — what a scan of every vehicle per cell found, at
        // O(vehicles · log vehicles) instead of O(cells × vehicles) per
        // step (issue 40: 45 × 200 per 1 ms step in city-200, and most
        // cells hold a handful of vehicles).
        self.members.clear();
        for (i, (bs, r)) in links.iter().enumerate() {
            if let (Some(b), true) = (bs, *r > 0) {
                self.members.push((*b, i));
            }
        }
        self.members.sort_unstable();
        for cell in self.members.chunk_by(|a, b| a.0 == b.0) {
            self.scratch.clear();
            for &(_, i) in cell {
                let c = (1.0 - beta) * self.avg_bps[i] / (beta * links[i].1 as f64);
                self.scratch.push((c, i));
            }
            let n = self.scratch.len();
            match self.kind {
                SchedulerKind::RoundRobin | SchedulerKind::Unshared => {
                    for &(_, i) in &self.scratch {
                        out[i].fraction = 1.0 / n as f64;
                    }
                }
                SchedulerKind::ProportionalFair => {
                    let floor = self.min_share / n as f64;
                    let rest = 1.0 - floor * n as f64;
                    self.scratch.sort_by(|a, b| a.0.total_cmp(&b.0));
                    // Water level μ over the k lowest c: (rest + Σ c) / k,
                    // the largest k whose μ stays above its own c.
                    let mut sum = 0.0;
                    let mut level = 0.0;
                    for (k, &(c, _)) in self.scratch.iter().enumerate() {
                        let mu = (rest + sum + c) / (k + 1) as f64;
                        if k > 0 && mu <= c {
                            break;
                        }
                        sum += c;
                        level = mu;
                    }
                    let mut total = 0.0;
                    for &(c, i) in &self.scratch {
                        let x = floor + (level - c).max(0.0);
                        out[i].fraction = x;
                        total += x;
                    }
                    // Rounding: make the fractions add up to 1 exactly
                    // enough (within 1e-12) for the invariant checks.
                    if total > 0.0 {
                        for &(_, i) in &self.scratch {
                            out[i].fraction /= total;
                        }
                    }
                }
            }
        }
        for (o, (_, r)) in out.iter_mut().zip(links) {
            let served = o.fraction * *r as f64;
            o.rate_bps = if o.fraction > 0.0 {
                (served as u64).max(1)
            } else {
                0
            };
        }
    }

    /// The PF averages after `dt` served with `shares` (as
    /// [`allocate`](Self::allocate) made them from `links`). O(vehicles).
    pub fn account(&mut self, dt: Duration, links: &[(Option<usize>, u64)], shares: &[Share]) {
        if self.kind == SchedulerKind::Unshared {
            return;
        }
        let beta = (dt.as_secs_f64() / self.window.as_secs_f64()).clamp(1e-9, 1.0);
        for (i, (o, (_, r))) in shares.iter().zip(links).enumerate() {
            let served = o.fraction * *r as f64;
            self.avg_bps[i] = (1.0 - beta) * self.avg_bps[i] + beta * served;
        }
    }
}

/// A vehicle's serving station over time: `(from, station)` in
/// increasing time (`None`: unassociated), a step function like
/// [`CapacitySteps`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StationSteps {
    steps: Vec<(Time, Option<u32>)>,
}

impl StationSteps {
    /// Station `bs` from `at` on; calls in non-decreasing time, repeats
    /// not stored. O(1).
    pub fn push(&mut self, at: Time, bs: Option<usize>) {
        let bs = bs.map(|b| u32::try_from(b).unwrap_or(u32::MAX));
        if let Some(last) = self.steps.last_mut() {
            if last.1 == bs {
                return;
            }
            if last.0 >= at {
                last.1 = bs;
                return;
            }
        }
        self.steps.push((at, bs));
    }

    /// The serving station at `t`. O(log steps).
    pub fn at(&self, t: Time) -> Option<usize> {
        let i = self.steps.partition_point(|s| s.0 <= t).checked_sub(1)?;
        self.steps[i].1.map(|b| b as usize)
    }
}

/// What the cells need to schedule as the traffic runs
/// (`vehicular.cell_demand = "backlogged"`): per vehicle its own rate
/// (the whole cell's air time; 0 = down) and serving station, and the
/// channel's step instants — recorded with the channel
/// ([`crate::world::vehicles::ChannelTimeline::cells`]).
#[derive(Clone, Debug, Default)]
pub struct CellInputs {
    /// Per vehicle, its rate if it had the cell to itself, bit/s.
    pub own: Vec<Arc<CapacitySteps>>,
    /// Per vehicle, its serving station.
    pub stations: Vec<Arc<StationSteps>>,
    /// The channel's step instants, increasing (the first is the epoch).
    pub steps: Arc<Vec<Time>>,
}

/// Cells that follow traffic (issue 39): the [`CellScheduler`] of every
/// base station, run while the simulation runs over the vehicles whose
/// downlink holds a packet. An idle vehicle gets no air time (its PF
/// average decays, as a real PF scheduler's does), and the cell's time
/// goes to the backlogged ones.
///
/// The shares are made at every channel step (the instants the channel
/// was recorded at) and again whenever a vehicle's backlog starts or
/// ends, from the backlog at that instant; each allocation looks one
/// channel step ahead (`β = step / pf_window`) and the averages are
/// updated with the time each allocation was actually in force. Lazy:
/// the steps between two queries are caught up at the next one (the
/// backlog did not change in between), so an idle world costs nothing
/// per step until some link asks. Shared by the downlinks of every
/// vehicle ([`crate::world::mmwave_link::MmWaveLink::with_cells`]).
#[derive(Debug)]
pub struct TrafficCells {
    scheduler: CellScheduler,
    inputs: CellInputs,
    /// The allocation horizon (the channel step).
    step: Duration,
    backlogged: Vec<bool>,
    /// The (station, rate offered to the scheduler) of the shares in force.
    links: Vec<(Option<usize>, u64)>,
    shares: Vec<Share>,
    /// When the shares in force were made.
    since: Time,
    /// The first channel step not yet applied.
    next: usize,
}

/// A [`TrafficCells`] shared by the links of one world.
pub type SharedCells = Rc<RefCell<TrafficCells>>;

impl TrafficCells {
    /// The cells of `inputs.own.len()` vehicles, all idle, under
    /// `scheduler`, allocating `step` ahead.
    pub fn new(scheduler: CellScheduler, inputs: CellInputs, step: Duration) -> TrafficCells {
        let n = inputs.own.len();
        TrafficCells {
            scheduler,
            inputs,
            step: step.max(Duration::from_nanos(1)),
            backlogged: vec![false; n],
            links: vec![(None, 0); n],
            shares: vec![
                Share {
                    fraction: 0.0,
                    rate_bps: 0
                };
                n
            ],
            since: Time::ZERO,
            next: 0,
        }
    }

    /// Applies the channel steps at or before `now`. O(steps passed ×
    /// (vehicles · log steps)).
    fn catch_up(&mut self, now: Time) {
        while let Some(&b) = self.inputs.steps.get(self.next) {
            if b > now {
                break;
            }
            self.next += 1;
            self.reschedule(b);
        }
    }

    /// Accounts the shares in force until `at`, then shares the cells
    /// anew from the backlog at `at`. O(vehicles · log steps).
    fn reschedule(&mut self, at: Time) {
        let dt = at.saturating_duration_since(self.since);
        if !dt.is_zero() {
            self.scheduler.account(dt, &self.links, &self.shares);
        }
        self.since = at;
        for (i, l) in self.links.iter_mut().enumerate() {
            let bs = self.inputs.stations[i].at(at);
            let own = if self.backlogged[i] {
                self.inputs.own[i].at(at)
            } else {
                0
            };
            *l = (bs, own);
        }
        self.scheduler
            .allocate(self.step, &self.links, &mut self.shares);
    }

    /// What the cells schedule from.
    pub fn inputs(&self) -> &CellInputs {
        &self.inputs
    }

    /// Vehicle `v`'s downlink rate at `now`, bit/s (0: down, idle, or no
    /// share this step). `now` must not precede an instant already asked
    /// about (the cells only move forward, with the traffic). Amortized O(vehicles · log steps) per channel step passed.
    pub fn rate_bps(&mut self, v: usize, now: Time) -> u64 {
        self.catch_up(now);
        self.shares.get(v).map_or(0, |s| s.rate_bps)
    }

    /// Vehicle `v`'s share of its cell's air time at `now`, in `[0, 1]`.
    pub fn fraction(&mut self, v: usize, now: Time) -> f64 {
        self.catch_up(now);
        self.shares.get(v).map_or(0.0, |s| s.fraction)
    }

    /// Vehicle `v`'s downlink starts (`true`) or stops holding a packet
    /// at `now`: the cells are shared anew if that changed.
    /// O(vehicles · log steps).
    pub fn set_backlogged(&mut self, v: usize, now: Time, backlogged: bool) {
        self.catch_up(now);
        if self.backlogged.get(v).is_some_and(|b| *b != backlogged) {
            self.backlogged[v] = backlogged;
            self.reschedule(now);
        }
    }

    /// The next instant after `now` at which the shares are made anew
    /// (the next channel step), if any.
    pub fn next_step_after(&mut self, now: Time) -> Option<Time> {
        self.catch_up(now);
        self.inputs.steps.get(self.next).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::component_rng;
    use rand::RngExt;

    const MS: Duration = Duration::from_millis(1);

    fn pf() -> CellScheduler {
        CellScheduler::new(
            SchedulerKind::ProportionalFair,
            0,
            Duration::from_millis(100),
            0.1,
        )
    }

    fn rr() -> CellScheduler {
        CellScheduler::new(
            SchedulerKind::RoundRobin,
            0,
            Duration::from_millis(100),
            0.1,
        )
    }

    #[test]
    fn shares_add_up_to_the_cell_for_random_cells() {
        let mut rng = component_rng(7, "cells/test/shares");
        for kind in [SchedulerKind::ProportionalFair, SchedulerKind::RoundRobin] {
            let mut s = CellScheduler::new(kind, 0, Duration::from_millis(100), 0.1);
            let mut out = Vec::new();
            for _ in 0..2000 {
                let n = rng.random_range(1..12usize);
                let links: Vec<(Option<usize>, u64)> = (0..n)
                    .map(|_| {
                        let bs = rng.random_range(0..4usize);
                        let bs = (bs < 3).then_some(bs);
                        let up = rng.random_range(0..5u32) > 0;
                        let r = if up {
                            rng.random_range(1_000_000..2_000_000_000u64)
                        } else {
                            0
                        };
                        (bs, r)
                    })
                    .collect();
                s.schedule(MS, &links, &mut out);
                for cell in 0..3 {
                    let members: Vec<usize> = (0..n)
                        .filter(|&i| links[i].0 == Some(cell) && links[i].1 > 0)
                        .collect();
                    let time: f64 = members.iter().map(|&i| out[i].fraction).sum();
                    let bits: u64 = members.iter().map(|&i| out[i].rate_bps).sum();
                    let max_r = members.iter().map(|&i| links[i].1).max().unwrap_or(0);
                    if members.is_empty() {
                        assert_eq!(bits, 0);
                        continue;
                    }
                    assert!((time - 1.0).abs() < 1e-9, "{kind:?}: time {time}");
                    assert!(bits <= max_r, "{kind:?}: {bits} > {max_r}");
                    for &i in &members {
                        // Everyone in coverage gets at least the floor.
                        assert!(out[i].fraction >= 0.1 / members.len() as f64 - 1e-12);
                        assert!(out[i].rate_bps > 0);
                    }
                }
                for i in 0..n {
                    if links[i].0.is_none() || links[i].1 == 0 {
                        assert_eq!(out[i].rate_bps, 0);
                        assert_eq!(out[i].fraction, 0.0);
                    }
                }
            }
        }
    }

    #[test]
    fn constant_rates_get_equal_time_so_throughput_follows_rate() {
        // The PF fixed point with constant rates: equal time shares, so
        // each vehicle's throughput is a third of its own rate.
        let rates = [1_200_000_000u64, 600_000_000, 300_000_000];
        let links: Vec<_> = rates.iter().map(|r| (Some(0), *r)).collect();
        let mut s = pf();
        let mut out = Vec::new();
        let mut served = [0.0f64; 3];
        for step in 0..5000 {
            s.schedule(MS, &links, &mut out);
            if step >= 1000 {
                for (k, o) in out.iter().enumerate() {
                    served[k] += o.rate_bps as f64;
                }
            }
        }
        for k in 0..3 {
            let time = served[k] / rates[k] as f64 / 4000.0;
            assert!((time - 1.0 / 3.0).abs() < 0.01, "vehicle {k}: time {time}");
        }
    }

    #[test]
    fn proportional_fair_rides_the_peaks_and_beats_round_robin_in_log_utility() {
        // Two vehicles whose rates fade independently (mean 1 and 0.5
        // Gbit/s). PF serves each near its peaks: more total throughput
        // and a larger Σ log(throughput) than round robin, with time
        // shares near one half each (fair in time).
        let mut rng = component_rng(3, "cells/test/fading");
        let steps = 20_000;
        let trace: Vec<[u64; 2]> = (0..steps)
            .map(|_| {
                let a: f64 = rng.random_range(0.0..2.0);
                let b: f64 = rng.random_range(0.0..1.0);
                [(a * 1e9) as u64 + 1, (b * 1e9) as u64 + 1]
            })
            .collect();
        let run = |mut s: CellScheduler| {
            let mut out = Vec::new();
            let mut bits = [0.0f64; 2];
            let mut time = [0.0f64; 2];
            for r in &trace {
                s.schedule(MS, &[(Some(0), r[0]), (Some(0), r[1])], &mut out);
                for k in 0..2 {
                    bits[k] += out[k].rate_bps as f64;
                    time[k] += out[k].fraction;
                }
            }
            (bits, time)
        };
        let (pf_bits, pf_time) = run(pf());
        let (rr_bits, rr_time) = run(rr());
        let log_u = |b: [f64; 2]| b.iter().map(|x| x.ln()).sum::<f64>();
        assert!(pf_bits[0] + pf_bits[1] > 1.05 * (rr_bits[0] + rr_bits[1]));
        assert!(log_u(pf_bits) > log_u(rr_bits));
        for k in 0..2 {
            assert!((rr_time[k] / steps as f64 - 0.5).abs() < 1e-9);
            assert!(
                (pf_time[k] / steps as f64 - 0.5).abs() < 0.05,
                "{pf_time:?}"
            );
        }
    }

    #[test]
    fn unshared_keeps_every_rate_and_names_round_trip() {
        let mut s = CellScheduler::new(SchedulerKind::Unshared, 2, MS, 0.0);
        let mut out = Vec::new();
        s.schedule(MS, &[(Some(0), 5), (Some(0), 7), (None, 9)], &mut out);
        let r: Vec<u64> = out.iter().map(|o| o.rate_bps).collect();
        assert_eq!(r, vec![5, 7, 0]);
        for k in [
            SchedulerKind::Unshared,
            SchedulerKind::ProportionalFair,
            SchedulerKind::RoundRobin,
        ] {
            assert_eq!(SchedulerKind::parse(k.as_str()), Some(k));
        }
        for h in [HandoverBuffer::Move, HandoverBuffer::Drop] {
            assert_eq!(HandoverBuffer::parse(h.as_str()), Some(h));
        }
        assert_eq!(SchedulerKind::parse("wfq"), None);
    }
}
