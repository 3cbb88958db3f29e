//! Tests of the configuration surface (serde form, validation, build) and
//! the property that no model leaves its box or yields NaN.

use super::*;
use proptest::prelude::*;

#[test]
fn scenario_form_is_tagged_with_defaults() {
    let c: MobilityConfig =
        serde_json::from_str(r#"{"model":"gauss_markov","mean_speed_mps":15.0,"alpha":0.9}"#)
            .expect("valid JSON config");
    match &c {
        MobilityConfig::GaussMarkov(g) => {
            assert_eq!(g.mean_speed_mps, 15.0);
            assert_eq!(g.alpha, 0.9);
            assert_eq!(g.update_interval_s, 0.1, "default filled in");
        }
        other => panic!("wrong variant {other:?}"),
    }
    let back: MobilityConfig =
        serde_json::from_str(&serde_json::to_string(&c).expect("serializes")).expect("parses");
    assert_eq!(back, c);
    for text in [
        r#"{"model":"static"}"#,
        r#"{"model":"constant_velocity","boundary":"wrap"}"#,
        r#"{"model":"random_waypoint","dimensions":2}"#,
        r#"{"model":"random_direction"}"#,
        r#"{"model":"trace","path":"x.csv"}"#,
        r#"{"model":"manhattan","block_size_m":20.0}"#,
    ] {
        let c: MobilityConfig = serde_json::from_str(text).expect(text);
        c.validate().expect(text);
    }
}

#[test]
fn unknown_fields_and_models_are_rejected() {
    for text in [
        r#"{"model":"gauss_markov","mean_speed":20.0}"#,
        r#"{"model":"static","speed_mps":1.0}"#,
        r#"{"model":"teleport"}"#,
        r#"{"mean_speed_mps":20.0}"#,
    ] {
        assert!(
            serde_json::from_str::<MobilityConfig>(text).is_err(),
            "{text}"
        );
    }
}

#[test]
fn static_holds_its_position() {
    let b = Bounds::from_size(10.0, 10.0, 10.0);
    let mut m = MobilityConfig::Static(StaticConfig {
        position_m: Some([1.0, 2.0, 3.0]),
    })
    .build(0, b, 1)
    .expect("valid");
    for s in [0.0, 1.0, 1e4] {
        assert_eq!(m.position(Time::from_secs_f64(s)), Vec3::new(1.0, 2.0, 3.0));
        assert_eq!(m.velocity(Time::from_secs_f64(s)), Vec3::ZERO);
    }
    // Drawn in the box, differently per node, identically per seed.
    let c = MobilityConfig::Static(StaticConfig::default());
    let p0 = c.build(0, b, 1).expect("valid").position(Time::ZERO);
    let p0_again = c.build(0, b, 1).expect("valid").position(Time::ZERO);
    let p1 = c.build(1, b, 1).expect("valid").position(Time::ZERO);
    assert!(b.contains(p0));
    assert_eq!(p0, p0_again);
    assert_ne!(p0, p1);
}

#[test]
fn build_checks_the_box_and_initial_positions() {
    let b = Bounds::from_size(10.0, 10.0, 10.0);
    let e = MobilityConfig::Static(StaticConfig {
        position_m: Some([11.0, 0.0, 0.0]),
    })
    .build(0, b, 1)
    .err()
    .expect("outside the box");
    assert!(e.to_string().contains("static.position_m"), "{e}");
    let inverted = Bounds {
        min: Vec3::new(5.0, 0.0, 0.0),
        max: Vec3::new(0.0, 1.0, 1.0),
    };
    let e = MobilityConfig::Static(StaticConfig::default())
        .build(0, inverted, 1)
        .err()
        .expect("inverted box");
    assert!(matches!(e, MobilityError::Bounds { .. }), "{e}");
}

#[test]
fn reflect_and_wrap_fold_into_the_interval() {
    assert_eq!(reflect(5.0, 0.0, 10.0), (5.0, 1.0));
    assert_eq!(reflect(12.0, 0.0, 10.0), (8.0, -1.0));
    assert_eq!(reflect(-3.0, 0.0, 10.0), (3.0, -1.0));
    assert_eq!(reflect(23.0, 0.0, 10.0), (3.0, 1.0));
    assert_eq!(reflect(3.0, 2.0, 2.0), (2.0, 1.0));
    assert_eq!(wrap(12.0, 0.0, 10.0), 2.0);
    assert_eq!(wrap(-1.0, 0.0, 10.0), 9.0);
}

/// `reflect` as it was before its in-box shortcut (issue 40).
fn reflect_reference(x: f64, lo: f64, hi: f64) -> (f64, f64) {
    let w = hi - lo;
    if w <= 0.0 || !x.is_finite() {
        return (lo, 1.0);
    }
    let u = (x - lo).rem_euclid(2.0 * w);
    if u <= w {
        ((lo + u).clamp(lo, hi), 1.0)
    } else {
        ((lo + 2.0 * w - u).clamp(lo, hi), -1.0)
    }
}

proptest! {
    /// The in-box shortcut of `reflect` changes no bit: inside, beyond
    /// either wall and exactly on them, with any box offset.
    #[test]
    fn reflect_shortcut_is_bit_identical(
        x in prop_oneof![-5000.0..5000.0f64, Just(0.0), Just(-0.0), Just(100.0)],
        lo in prop_oneof![-1000.0..1000.0f64, Just(0.0)],
        w in prop_oneof![0.0..3000.0f64, Just(100.0)],
    ) {
        let hi = lo + w;
        for x in [x, lo, hi, lo + x.abs() % (w + 1.0)] {
            let (a, b) = (reflect(x, lo, hi), reflect_reference(x, lo, hi));
            prop_assert_eq!((a.0.to_bits(), a.1.to_bits()), (b.0.to_bits(), b.1.to_bits()), "x {} in [{}, {}]", x, lo, hi);
        }
    }
}

#[test]
fn every_model_is_deterministic_per_seed_and_node() {
    let b = Bounds::from_size(150.0, 150.0, 40.0);
    let models = [
        MobilityConfig::Static(StaticConfig::default()),
        MobilityConfig::ConstantVelocity(ConstantVelocityConfig::default()),
        MobilityConfig::RandomWaypoint(RandomWaypointConfig::default()),
        MobilityConfig::GaussMarkov(GaussMarkovConfig::default()),
        MobilityConfig::RandomDirection(RandomDirectionConfig::default()),
        MobilityConfig::Manhattan(ManhattanConfig::default()),
    ];
    for cfg in models {
        let path = |node: usize, seed: u64| -> Vec<Vec3> {
            let mut m = cfg.build(node, b, seed).expect("valid");
            (0..400)
                .map(|i| m.position(Time::from_millis(250 * i)))
                .collect()
        };
        assert_eq!(path(1, 77), path(1, 77), "{cfg:?}");
        assert_ne!(path(1, 77), path(2, 77), "{cfg:?}: other node, same path");
        assert_ne!(path(1, 77), path(1, 78), "{cfg:?}: other seed, same path");
    }
}

#[test]
fn a_point_box_holds_random_waypoint_still() {
    let p = Bounds::from_size(0.0, 0.0, 0.0);
    let cfg = MobilityConfig::RandomWaypoint(RandomWaypointConfig {
        pause_s: 0.0,
        ..Default::default()
    });
    let mut m = cfg.build(0, p, 1).expect("valid");
    // Returns at once (no stream of empty legs) and stays on the point.
    assert_eq!(m.position(Time::from_secs_f64(1e6)), Vec3::ZERO);
    assert_eq!(m.velocity(Time::from_secs_f64(1e6)), Vec3::ZERO);
}

#[test]
fn absurd_speeds_and_steps_are_refused() {
    let too_fast = MobilityConfig::RandomWaypoint(RandomWaypointConfig {
        speed_max_mps: 1e9,
        ..Default::default()
    });
    assert!(too_fast.validate().is_err());
    let tiny_step = MobilityConfig::GaussMarkov(GaussMarkovConfig {
        update_interval_s: 1e-9,
        ..Default::default()
    });
    assert!(tiny_step.validate().is_err());
    let tiny_block = MobilityConfig::Manhattan(ManhattanConfig {
        block_size_m: 0.01,
        ..Default::default()
    });
    assert!(tiny_block.validate().is_err());
}

/// A valid random config of one of the box-bound models.
fn any_config() -> impl Strategy<Value = MobilityConfig> {
    let speed = (0.1f64..40.0, 0.0f64..20.0);
    prop_oneof![
        Just(MobilityConfig::Static(StaticConfig::default())),
        (prop::array::uniform3(-60.0f64..60.0), any::<bool>()).prop_map(|(v, w)| {
            MobilityConfig::ConstantVelocity(ConstantVelocityConfig {
                velocity_mps: v,
                boundary: if w { Boundary::Wrap } else { Boundary::Reflect },
                initial_position_m: None,
            })
        }),
        (speed.clone(), 0.0f64..3.0, 2u8..=3).prop_map(|((lo, extra), pause_s, dimensions)| {
            MobilityConfig::RandomWaypoint(RandomWaypointConfig {
                speed_min_mps: lo,
                speed_max_mps: lo + extra,
                pause_s,
                dimensions,
                initial_position_m: None,
            })
        }),
        (speed, 0.0f64..3.0, 2u8..=3).prop_map(|((lo, extra), pause_s, dimensions)| {
            MobilityConfig::RandomDirection(RandomDirectionConfig {
                speed_min_mps: lo,
                speed_max_mps: lo + extra,
                pause_s,
                dimensions,
                initial_position_m: None,
            })
        }),
        (
            0.0f64..=1.0,
            0.0f64..50.0,
            0.0f64..10.0,
            0.0f64..180.0,
            -90.0f64..=90.0,
            0.01f64..2.0
        )
            .prop_map(|(alpha, mean, std, dir_std, pitch, step)| {
                MobilityConfig::GaussMarkov(GaussMarkovConfig {
                    alpha,
                    mean_speed_mps: mean,
                    speed_std_mps: std,
                    direction_std_deg: dir_std,
                    mean_pitch_deg: pitch,
                    pitch_std_deg: dir_std / 2.0,
                    update_interval_s: step,
                    ..Default::default()
                })
            }),
        (5.0f64..40.0, 0.0f64..1.0, 0.0f64..1.0, 1.0f64..30.0).prop_map(|(block, s, l, speed)| {
            // Split the probability mass 1 into three parts.
            let straight = s;
            let left = (1.0 - s) * l;
            MobilityConfig::Manhattan(ManhattanConfig {
                block_size_m: block,
                speed_min_mps: speed,
                speed_max_mps: speed * 1.5,
                turn_straight_prob: straight,
                turn_left_prob: left,
                turn_right_prob: 1.0 - straight - left,
                antenna_height_m: 1.5,
            })
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn no_model_leaves_its_box_or_yields_nan(
        cfg in any_config(),
        size in prop::array::uniform3(40.0f64..400.0),
        flat in any::<bool>(),
        origin in prop::array::uniform3(-1000.0f64..1000.0),
        seed in any::<u64>(),
        node in 0usize..50,
        steps in prop::collection::vec(0.0f64..3.0, 50..200),
    ) {
        let min = vec3(origin);
        // Sometimes a flat box (zero height) for the 2-D cases; Manhattan
        // needs room for its antenna.
        let height = if flat && !matches!(cfg, MobilityConfig::Manhattan(_)) { 0.0 } else { size[2] };
        let b = Bounds { min, max: min + Vec3::new(size[0], size[1], height) };
        let cfg = match cfg {
            MobilityConfig::Manhattan(m) => MobilityConfig::Manhattan(ManhattanConfig {
                antenna_height_m: min.z + 1.5_f64.min(height),
                ..m
            }),
            other => other,
        };
        prop_assert!(cfg.validate().is_ok(), "{:?}", cfg.validate());
        let mut m = cfg.build(node, b, seed).expect("valid config builds");
        let mut t = 0.0;
        for dt in steps {
            t += dt;
            let at = Time::from_secs_f64(t);
            let p = m.position(at);
            let v = m.velocity(at);
            prop_assert!(b.contains(p), "{:?} left {:?} at t = {} s: {:?}", cfg, b, t, p);
            prop_assert!(v.x.is_finite() && v.y.is_finite() && v.z.is_finite(), "{:?}", v);
        }
    }
}
