//! The vehicular mmWave world's channel, recorded once: vehicles move
//! (Manhattan or random waypoint), the 28 GHz channel is stepped over
//! them, and what every vehicle's link did is kept as a
//! [`ChannelTimeline`] — a capacity step function per vehicle, the
//! outages in order, their counts.
//!
//! Why record: the channel does not depend on the traffic, so one
//! recording per (scenario, seed) can be replayed into every controller,
//! load and hint-mode run (common random numbers: the runs being compared
//! see exactly the same outages), and the recording is cheap to share.
//!
//! Sharing: each step, every base station's air time is divided among
//! the vehicles it serves by the scenario's scheduler
//! ([`super::cells::CellScheduler`], `vehicular.scheduler`), and the share
//! is what is recorded; `unshared` records each vehicle's own rate.
//!
//! Stepping: every `step` (1 ms by default) and, in between, at the
//! channel's `next_change()` so that every outage ends exactly on time.
//! Highway (`vehicular.mobility = "highway"`): [`HIGHWAY_LANES`] lanes of
//! [`LANE_WIDTH_M`] centred on `y = area_m[1] / 2`, the lower half driven
//! towards +x, the upper half towards −x; vehicle `i` takes lane
//! `i mod lanes` at an evenly spaced, jittered position along the road
//! (so the density is exactly `vehicles / area_m[0]`) and a constant speed
//! drawn once in `[speed_min_mps, speed_max_mps]`; it leaves through one end
//! and re-enters through the other (a ring road cut open: the density never
//! thins out). Vehicles on one lane pass through each other (overtaking is
//! not modelled; the neighbours still block each other's beams).
//!
//! The obstacle field keeps the streets (Manhattan), the road (highway) and the base-station
//! sites clear; with random mobility only the sites are kept clear and
//! vehicles may drive through buildings (they are then blocked, as
//! random-mobility studies without road maps have them).

pub mod config;

use super::cells::{CellInputs, CellScheduler, StationSteps};
use super::channel::mmwave::{Association, FailureCounts, FailureEvent, MmWaveChannel};
use super::channel::obstacles::{ObstacleField, Rect};
use super::geom::{Bounds, Vec3};
use super::mmwave_link::CapacitySteps;
use super::mobility::{
    Boundary, ConstantVelocityConfig, ManhattanConfig, Mobility, MobilityConfig,
    RandomWaypointConfig,
};
use crate::Time;
use config::{VehicleMobility, VehicularModel};
use rand::RngExt;
use std::sync::Arc;
use std::time::Duration;

/// Half-width of the street corridors kept free of obstacles, m.
const STREET_HALF_WIDTH_M: f64 = 4.0;
/// Half-side of the square kept clear around a base-station site, m.
const SITE_CLEARANCE_M: f64 = 3.0;

/// Lanes of the highway world, half each way.
pub const HIGHWAY_LANES: usize = 4;
/// Width of a highway lane, m.
pub const LANE_WIDTH_M: f64 = 3.5;
/// Antenna height of a highway vehicle, m (the channel uses ground positions).
const HIGHWAY_ANTENNA_M: f64 = 1.5;

/// The highway lane `lane`'s centre line `y` and direction (+1 towards +x,
/// −1 towards −x) in an area `area_y_m` high. O(1).
pub fn highway_lane(area_y_m: f64, lane: usize) -> (f64, f64) {
    let half = HIGHWAY_LANES / 2;
    let y = area_y_m / 2.0 + (lane as f64 - half as f64 + 0.5) * LANE_WIDTH_M;
    (y, if lane < half { 1.0 } else { -1.0 })
}

/// What the channel did over a run, for every vehicle.
#[derive(Clone, Debug, Default)]
pub struct ChannelTimeline {
    /// Per vehicle, its access link's capacity over time (0 = down).
    pub capacity: Vec<Arc<CapacitySteps>>,
    /// Every outage, in order of start.
    pub events: Vec<FailureEvent>,
    /// Outages per kind.
    pub counts: FailureCounts,
    /// Channel steps taken (a cost figure).
    pub steps: u64,
    /// `handover = "make_before_break"`: per vehicle, its attachments to
    /// every station and its association changes (empty otherwise).
    pub attachments: Vec<Attachments>,
    /// `cell_demand = "backlogged"`: what the cells need to share air time
    /// as the traffic runs ([`super::cells::TrafficCells`]); `capacity`
    /// then serves only the uplinks, the downlinks' own rates and
    /// stations are here (`None` otherwise).
    pub cells: Option<CellInputs>,
}

/// Make-before-break (issue 29): what one vehicle could attach to, and
/// when its association changed — the channel's side of the policy in
/// `engine::handover`, recorded like the rest (it does not depend on
/// traffic).
#[derive(Clone, Debug, Default)]
pub struct Attachments {
    /// Per station, what an attachment to it carries over time: the
    /// serving station's link as recorded for the unicast access link
    /// (scheduler share, transient outages), except during a handover,
    /// when the old station's beam keeps its own capacity (it is not
    /// torn down); any other station, the capacity of its SNR.
    pub per_station: Vec<Arc<CapacitySteps>>,
    /// Association changes, in time order.
    pub changes: Vec<(Time, AssociationChange)>,
}

/// A change of a vehicle's association, as the channel decides it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AssociationChange {
    /// First served (by this station).
    Associated(usize),
    /// This station beats the serving one by the hysteresis.
    Candidate(usize),
    /// It no longer does, and no handover to it started.
    CandidateDropped(usize),
    /// The serving station changed (the handover's interruption ended).
    HandoverDone {
        /// The old station.
        from: usize,
        /// The new one.
        to: usize,
    },
}

/// The changes between two association snapshots, appended to `out`.
/// O(1).
fn association_changes(
    now: Time,
    prev: Association,
    cur: Association,
    out: &mut Vec<(Time, AssociationChange)>,
) {
    match (prev.serving, cur.serving) {
        (None, Some(s)) => out.push((now, AssociationChange::Associated(s))),
        (Some(a), Some(b)) if a != b => {
            out.push((now, AssociationChange::HandoverDone { from: a, to: b }))
        }
        _ => {}
    }
    if let Some(k) = prev.candidate {
        if cur.candidate != Some(k) && cur.handover_to != Some(k) && cur.serving != Some(k) {
            out.push((now, AssociationChange::CandidateDropped(k)));
        }
    }
    if let Some(k) = cur.candidate {
        if prev.candidate != Some(k) {
            out.push((now, AssociationChange::Candidate(k)));
        }
    }
}

/// A channel world that cannot be built (the field is named).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("vehicular world: {0}")]
pub struct VehicularError(pub String);

fn build_mobility(
    v: &VehicularModel,
    area: Bounds,
    i: usize,
    seed: u64,
) -> Result<Box<dyn Mobility>, VehicularError> {
    let c = &v.config;
    let cfg = match v.mobility {
        VehicleMobility::Manhattan => MobilityConfig::Manhattan(ManhattanConfig {
            block_size_m: c.block_size_m,
            speed_min_mps: c.speed_min_mps,
            speed_max_mps: c.speed_max_mps,
            ..ManhattanConfig::default()
        }),
        VehicleMobility::Random => MobilityConfig::RandomWaypoint(RandomWaypointConfig {
            initial_position_m: None,
            dimensions: 2,
            speed_min_mps: c.speed_min_mps,
            speed_max_mps: c.speed_max_mps,
            pause_s: 0.0,
        }),
        VehicleMobility::Highway => {
            // Its own stream, so adding vehicles does not move the others.
            let mut rng = crate::rng::component_rng(seed, &format!("highway/{i}"));
            let (y, dir) = highway_lane(c.area_m[1], i % HIGHWAY_LANES);
            let spacing_m = c.area_m[0] / c.vehicles as f64;
            let x = (i as f64 + rng.random::<f64>()) * spacing_m;
            let speed = c.speed_min_mps + (c.speed_max_mps - c.speed_min_mps) * rng.random::<f64>();
            MobilityConfig::ConstantVelocity(ConstantVelocityConfig {
                initial_position_m: Some([x.min(c.area_m[0]), y, HIGHWAY_ANTENNA_M]),
                velocity_mps: [dir * speed, 0.0, 0.0],
                boundary: Boundary::Wrap,
            })
        }
    };
    cfg.build(i, area, seed)
        .map_err(|e| VehicularError(format!("vehicular.mobility: {e}")))
}

impl ChannelTimeline {
    /// Record the channel of `v` for `duration_ns` with `seed`.
    pub fn record(
        v: &VehicularModel,
        duration_ns: u64,
        seed: u64,
    ) -> Result<ChannelTimeline, VehicularError> {
        let c = &v.config;
        let area = Bounds::from_size(c.area_m[0], c.area_m[1], 3.0);
        let mut keep: Vec<Rect> = c
            .base_stations
            .iter()
            .map(|b| Rect::around(b[0], b[1], SITE_CLEARANCE_M))
            .collect();
        if v.mobility == VehicleMobility::Highway {
            let half_road_m = HIGHWAY_LANES as f64 / 2.0 * LANE_WIDTH_M;
            keep.push(Rect {
                min_x: 0.0,
                min_y: c.area_m[1] / 2.0 - half_road_m - STREET_HALF_WIDTH_M,
                max_x: c.area_m[0],
                max_y: c.area_m[1] / 2.0 + half_road_m + STREET_HALF_WIDTH_M,
            });
        }
        if v.mobility == VehicleMobility::Manhattan {
            let mut x = 0.0;
            while x <= c.area_m[0] {
                keep.push(Rect {
                    min_x: x - STREET_HALF_WIDTH_M,
                    min_y: 0.0,
                    max_x: x + STREET_HALF_WIDTH_M,
                    max_y: c.area_m[1],
                });
                x += c.block_size_m;
            }
            let mut y = 0.0;
            while y <= c.area_m[1] {
                keep.push(Rect {
                    min_x: 0.0,
                    min_y: y - STREET_HALF_WIDTH_M,
                    max_x: c.area_m[0],
                    max_y: y + STREET_HALF_WIDTH_M,
                });
                y += c.block_size_m;
            }
        }
        let field = ObstacleField::generate(&v.channel.density, area, &keep, seed)
            .map_err(|e| VehicularError(format!("vehicular.environment: {e}")))?;
        let sites = c
            .base_stations
            .iter()
            .map(|b| Vec3::new(b[0], b[1], 0.0))
            .collect();
        let mut channel = MmWaveChannel::new(v.channel.clone(), sites, field, seed)
            .map_err(|e| VehicularError(format!("vehicular: {e}")))?;
        let mut mobility = (0..c.vehicles)
            .map(|i| build_mobility(v, area, i, seed))
            .collect::<Result<Vec<_>, _>>()?;
        let mut caps: Vec<CapacitySteps> = vec![CapacitySteps::new(); c.vehicles];
        let mut state: Vec<(Vec3, Vec3)> = vec![(Vec3::ZERO, Vec3::ZERO); c.vehicles];
        let mut events = Vec::new();
        let mut scheduler = CellScheduler::new(
            v.scheduler,
            c.vehicles,
            Duration::from_nanos(c.pf_window.0),
            c.pf_min_share,
        );
        let mut links: Vec<(Option<usize>, u64)> = vec![(None, 0); c.vehicles];
        let mut shares = Vec::with_capacity(c.vehicles);
        // Make-before-break: per vehicle, per station, the attachment's
        // capacity; the association changes; the last association.
        let mbb = v.make_before_break.is_some();
        // Only a second attachment reads the stations that do not serve:
        // without one, each step evaluates the views its decisions need.
        channel.set_every_station(mbb);
        let stations = c.base_stations.len();
        let mut attach_caps: Vec<Vec<CapacitySteps>> = if mbb {
            vec![vec![CapacitySteps::new(); stations]; c.vehicles]
        } else {
            Vec::new()
        };
        let mut changes: Vec<Vec<(Time, AssociationChange)>> = vec![Vec::new(); attach_caps.len()];
        let mut assoc: Vec<Association> = vec![Association::default(); attach_caps.len()];
        // Cells that follow traffic: the own rates, stations and step
        // instants, for the scheduler that runs with the traffic.
        let follow = v.cells_follow_traffic;
        let mut own: Vec<CapacitySteps> = if follow {
            vec![CapacitySteps::new(); c.vehicles]
        } else {
            Vec::new()
        };
        let mut stations: Vec<StationSteps> = vec![StationSteps::default(); own.len()];
        let mut step_times: Vec<Time> = Vec::new();
        let mut t = 0u64;
        let mut steps = 0u64;
        loop {
            let now = Time::from_nanos(t);
            for (s, m) in state.iter_mut().zip(mobility.iter_mut()) {
                let mut p = m.position(now);
                let mut vel = m.velocity(now);
                // The channel wants ground positions and ground velocity.
                p.z = 0.0;
                vel.z = 0.0;
                *s = (p, vel);
            }
            channel.step(now, &state);
            steps += 1;
            events.extend(channel.drain_events());
            let mut next = (t + c.step.0).min(duration_ns);
            if let Some(ch) = channel.next_change() {
                let ch = ch.as_nanos();
                if ch > t && ch < next {
                    next = ch;
                }
            }
            // The shares hold until the next step (one step's length
            // after the last one).
            let dt = if next > t { next - t } else { c.step.0 };
            for (i, l) in links.iter_mut().enumerate() {
                let s = channel.link(i);
                *l = (s.bs, if s.up { s.capacity_bps } else { 0 });
            }
            scheduler.schedule(Duration::from_nanos(dt), &links, &mut shares);
            if follow {
                step_times.push(now);
                for ((o, st), (bs, r)) in own.iter_mut().zip(&mut stations).zip(&links) {
                    o.push(now, *r);
                    st.push(now, *bs);
                }
            }
            for (cap, share) in caps.iter_mut().zip(&shares) {
                cap.push(now, share.rate_bps);
            }
            for (i, per_station) in attach_caps.iter_mut().enumerate() {
                let a = channel.association(i);
                association_changes(now, assoc[i], a, &mut changes[i]);
                assoc[i] = a;
                for (j, cap) in per_station.iter_mut().enumerate() {
                    let serving = a.serving == Some(j) && a.handover_to.is_none();
                    let bps = if serving {
                        shares[i].rate_bps
                    } else {
                        channel.capacity_to(i, j)
                    };
                    cap.push(now, bps);
                }
            }
            if t >= duration_ns {
                break;
            }
            t = next;
        }
        Ok(ChannelTimeline {
            capacity: caps.into_iter().map(Arc::new).collect(),
            events,
            counts: channel.counts(),
            steps,
            attachments: attach_caps
                .into_iter()
                .zip(changes)
                .map(|(per_station, changes)| Attachments {
                    per_station: per_station.into_iter().map(Arc::new).collect(),
                    changes,
                })
                .collect(),
            cells: follow.then(|| CellInputs {
                own: own.into_iter().map(Arc::new).collect(),
                stations: stations.into_iter().map(Arc::new).collect(),
                steps: Arc::new(step_times),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scenario;

    fn highway(vehicles: usize) -> VehicularModel {
        let doc = format!(
            "duration = \"1s\"\nseed = 5\n[vehicular]\nmobility = \"highway\"\n\
             vehicles = {vehicles}\narea_m = [168.0, 40.0]\nspeed_min_mps = 8.91\n\
             speed_max_mps = 18.91\n"
        );
        let s = Scenario::from_toml_str(&doc, "t", &[]).expect("valid");
        s.model.vehicular.expect("vehicular")
    }

    /// Vehicles sit on the lanes, half each way, evenly spread along the
    /// road (the configured density), at speeds in range whose mean is the
    /// range's middle, and wrap around at the road's ends.
    #[test]
    fn highway_vehicles_keep_their_lane_density_and_speed() {
        let n = 200;
        let v = highway(n);
        let area = Bounds::from_size(168.0, 40.0, 3.0);
        let lanes: Vec<f64> = (0..HIGHWAY_LANES)
            .map(|l| highway_lane(40.0, l).0)
            .collect();
        assert!(lanes.iter().all(|y| (13.0..=27.0).contains(y)), "{lanes:?}");
        let (mut speed_sum, mut per_tenth) = (0.0, [0usize; 10]);
        for i in 0..n {
            let mut m = build_mobility(&v, area, i, 5).expect("builds");
            let p0 = m.position(Time::ZERO);
            let vel = m.velocity(Time::ZERO);
            let (y, dir) = highway_lane(40.0, i % HIGHWAY_LANES);
            assert!((p0.y - y).abs() < 1e-9 && vel.y == 0.0 && vel.x * dir > 0.0);
            let speed = vel.x.abs();
            assert!((8.91..=18.91).contains(&speed), "{speed}");
            speed_sum += speed;
            per_tenth[((p0.x / 16.8) as usize).min(9)] += 1;
            // 20 s at ≥ 8.91 m/s is more than one lap: still on the road.
            let p = m.position(Time::from_nanos(20_000_000_000));
            assert!((0.0..=168.0).contains(&p.x) && (p.y - y).abs() < 1e-9);
        }
        let mean = speed_sum / n as f64;
        assert!((mean - 13.91).abs() < 0.6, "mean speed {mean}");
        // Evenly spaced: every tenth of the road holds a tenth of the cars.
        assert!(per_tenth.iter().all(|c| *c == n / 10), "{per_tenth:?}");
    }

    #[test]
    fn a_highway_too_narrow_for_its_lanes_is_refused() {
        let doc =
            "duration = \"1s\"\n[vehicular]\nmobility = \"highway\"\narea_m = [168.0, 10.0]\n";
        let e = Scenario::from_toml_str(doc, "t", &[]).unwrap_err();
        assert_eq!(e.field, "vehicular.area_m");
    }
}
