//! Tests of the Manhattan model: vehicles stay on the streets at their
//! antenna height and speed, turn with the configured frequencies, and the
//! configuration is checked.

use super::*;

fn area() -> Bounds {
    Bounds::from_size(100.0, 100.0, 10.0)
}

fn on_street(p: Vec3, block: f64) -> bool {
    let on = |c: f64| {
        let k = c / block;
        (k - k.round()).abs() < 1e-9
    };
    on(p.x) || on(p.y)
}

#[test]
fn vehicles_stay_on_streets_at_their_speed() {
    let cfg = ManhattanConfig::default();
    for node in 0..8 {
        let mut m = Manhattan::new(&cfg, node, area(), 21).expect("valid");
        let speed = m.speed_mps();
        assert!((5.0..=30.0).contains(&speed), "speed {speed}");
        for i in 0..20_000u64 {
            let t = Time::from_millis(7 * i);
            let p = m.position(t);
            assert!(area().contains(p), "{p:?}");
            assert!(on_street(p, 25.0), "node {node} off the streets at {p:?}");
            assert_eq!(p.z, 1.5);
            let v = m.velocity(t);
            assert!((v.norm() - speed).abs() < 1e-6, "{v:?}");
            // Always along one axis.
            assert!(v.x == 0.0 || v.y == 0.0, "{v:?}");
        }
    }
}

fn interior_frequencies(cfg: &ManhattanConfig) -> [f64; 3] {
    let mut total = [0u64; 3];
    for node in 0..10 {
        let mut m = Manhattan::new(cfg, node, area(), 5).expect("valid");
        m.position(Time::from_secs_f64(10_000.0));
        let c = m.interior_turn_counts();
        for k in 0..3 {
            total[k] += c[k];
        }
        assert_eq!(m.turn_counts()[3], 0, "no U-turns on a proper grid");
    }
    let n: u64 = total.iter().sum();
    assert!(n > 5_000, "only {n} interior decisions");
    total.map(|c| c as f64 / n as f64)
}

#[test]
fn turns_follow_the_configured_probabilities() {
    let f = interior_frequencies(&ManhattanConfig::default());
    for (got, want) in f.iter().zip([0.5, 0.25, 0.25]) {
        assert!((got - want).abs() < 0.02, "frequencies {f:?}");
    }
    let skewed = ManhattanConfig {
        turn_straight_prob: 0.8,
        turn_left_prob: 0.15,
        turn_right_prob: 0.05,
        ..Default::default()
    };
    let f = interior_frequencies(&skewed);
    for (got, want) in f.iter().zip([0.8, 0.15, 0.05]) {
        assert!((got - want).abs() < 0.02, "frequencies {f:?}");
    }
}

#[test]
fn straight_only_still_turns_at_the_edge() {
    let cfg = ManhattanConfig {
        turn_straight_prob: 1.0,
        turn_left_prob: 0.0,
        turn_right_prob: 0.0,
        ..Default::default()
    };
    let mut m = Manhattan::new(&cfg, 0, area(), 3).expect("valid");
    for i in 0..10_000u64 {
        let p = m.position(Time::from_millis(13 * i));
        assert!(area().contains(p) && on_street(p, 25.0));
    }
    let c = m.turn_counts();
    assert!(c[1] + c[2] > 0, "never turned at the grid edge: {c:?}");
}

#[test]
fn same_seed_same_route() {
    let cfg = ManhattanConfig::default();
    let mut a = Manhattan::new(&cfg, 2, area(), 9).expect("valid");
    let mut b = Manhattan::new(&cfg, 2, area(), 9).expect("valid");
    let mut c = Manhattan::new(&cfg, 3, area(), 9).expect("valid");
    let mut differs = false;
    for i in 0..5_000u64 {
        let t = Time::from_millis(11 * i);
        let p = a.position(t);
        assert_eq!(p, b.position(t));
        differs |= p != c.position(t);
    }
    assert!(differs, "another node should drive elsewhere");
}

#[test]
fn bad_configs_are_named() {
    let e = MobilityConfig::Manhattan(ManhattanConfig {
        turn_left_prob: 0.5,
        ..Default::default()
    })
    .validate()
    .expect_err("probabilities sum to 1.25");
    assert!(
        e.to_string()
            .contains("turn_straight_prob + turn_left_prob"),
        "{e}"
    );
    let e = Manhattan::new(
        &ManhattanConfig::default(),
        0,
        Bounds::from_size(10.0, 100.0, 5.0),
        1,
    )
    .err()
    .expect("box narrower than a block");
    assert!(e.to_string().contains("block_size_m"), "{e}");
    let e = Manhattan::new(
        &ManhattanConfig::default(),
        0,
        Bounds::from_size(100.0, 100.0, 0.0),
        1,
    )
    .err()
    .expect("antenna above a flat box");
    assert!(e.to_string().contains("manhattan.antenna_height_m"), "{e}");
}
