//! Mobility and routing together: a seed-001-like swarm (10 UAVs,
//! Gauss-Markov at 20 m/s, 0.1 s steps) on a unit-disc connectivity graph
//! of 140 m radius (802.11b at 11 Mbit/s outdoors, seed 001), routes
//! recomputed every second for 100 s. Checks that links really break and
//! re-form in a box sized for it, that a small box keeps everyone one hop
//! apart, and prints the figures that guide the FANET scenario's box size
//! (`cargo test -p peregrine-sim --test swarm_routes -- --nocapture`).

use peregrine_sim::world::geom::Bounds;
use peregrine_sim::world::mobility::{GaussMarkovConfig, Mobility, MobilityConfig};
use peregrine_sim::world::routing::{Routing, RoutingConfig};
use peregrine_sim::Time;

const RANGE_M: f64 = 140.0;
const NODES: usize = 10;

/// Route changes, mean hop count of the 0→1 flow when reachable, and the
/// fraction of seconds 0 could reach 1.
fn run(bounds: Bounds, seed: u64) -> (u64, f64, f64) {
    let cfg = MobilityConfig::GaussMarkov(GaussMarkovConfig::default());
    let mut nodes: Vec<Box<dyn Mobility>> = (0..NODES)
        .map(|n| cfg.build(n, bounds, seed).expect("valid config"))
        .collect();
    let mut routing = Routing::new(NODES, RoutingConfig::default()).expect("valid");
    let (mut hop_sum, mut reachable) = (0u64, 0u64);
    let seconds = 100;
    for s in 0..=seconds {
        let now = Time::from_millis(1_000 * s);
        assert!(routing.due(now));
        let pos: Vec<_> = nodes.iter_mut().map(|m| m.position(now)).collect();
        for p in &pos {
            assert!(bounds.contains(*p));
        }
        routing.recompute(now, |a, b| pos[a].distance(pos[b]) <= RANGE_M);
        if let Some(h) = routing.hops(0, 1) {
            hop_sum += u64::from(h);
            reachable += 1;
        }
    }
    let mean_hops = if reachable > 0 {
        hop_sum as f64 / reachable as f64
    } else {
        0.0
    };
    (
        routing.total_route_changes(),
        mean_hops,
        reachable as f64 / (seconds + 1) as f64,
    )
}

#[test]
fn routes_break_and_reform_in_a_wide_box_and_not_in_a_tight_one() {
    // Figures for choosing the FANET box; the assertion is on 300 m.
    for (side, height) in [
        (250.0, 60.0),
        (300.0, 100.0),
        (400.0, 100.0),
        (500.0, 100.0),
    ] {
        let b = Bounds::from_size(side, side, height);
        let (mut changes, mut reach, mut hops) = (0, 0.0, 0.0);
        let seeds = 5;
        for seed in 1..=seeds {
            let (c, h, r) = run(b, seed);
            changes += c;
            hops += h / seeds as f64;
            reach += r / seeds as f64;
        }
        println!(
            "box {side}x{side}x{height} m, {seeds} seeds: {:.0} route changes per 100 s, \
             flow 0->1 reachable {:.0} % of seconds, mean {hops:.2} hops",
            changes as f64 / seeds as f64,
            reach * 100.0
        );
        if side == 300.0 {
            assert!(
                changes > 50,
                "routes should change often in a 300 m box: {changes}"
            );
            assert!(
                reach > 0.5,
                "the flow should be connected most of the time: {reach}"
            );
        }
    }

    // Every pair within 140 m (diagonal of 80 x 80 x 40 is 120 m): one hop
    // always, no route ever changes.
    let tight = Bounds::from_size(80.0, 80.0, 40.0);
    let (changes, hops, reach) = run(tight, 1);
    assert_eq!(changes, 0);
    assert_eq!(reach, 1.0);
    assert_eq!(hops, 1.0);
}
