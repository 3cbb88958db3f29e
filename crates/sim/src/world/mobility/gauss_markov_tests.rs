//! Tests of the Gauss-Markov model: determinism, the statistics of Eqs. 1–3
//! (stationary mean and standard deviation, memory α), the α = 1 and α = 0
//! limits, linear interpolation between updates and reflection at walls.

use super::*;

fn cfg() -> GaussMarkovConfig {
    GaussMarkovConfig::default()
}

/// A box so large that no wall is reached in the test's duration.
fn huge() -> Bounds {
    Bounds {
        min: Vec3::new(-1e7, -1e7, -1e7),
        max: Vec3::new(1e7, 1e7, 1e7),
    }
}

fn at(m: &mut GaussMarkov, s: f64) -> Vec3 {
    m.position(Time::from_secs_f64(s))
}

/// The speed process sampled once per step (mid-step), `n` steps.
fn speeds(c: &GaussMarkovConfig, seed: u64, n: usize) -> Vec<f64> {
    let mut m = GaussMarkov::new(c, 0, huge(), seed).expect("valid");
    let dt = c.update_interval_s;
    (0..n)
        .map(|i| {
            m.position(Time::from_secs_f64((i as f64 + 0.5) * dt));
            m.speed_mps()
        })
        .collect()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn std(xs: &[f64]) -> f64 {
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64).sqrt()
}

fn lag1(xs: &[f64]) -> f64 {
    let m = mean(xs);
    let num: f64 = xs.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum();
    let den: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    num / den
}

#[test]
fn same_seed_same_path_other_seed_other_path() {
    let b = Bounds::from_size(300.0, 300.0, 100.0);
    let mut a = GaussMarkov::new(&cfg(), 3, b, 42).expect("valid");
    let mut a2 = GaussMarkov::new(&cfg(), 3, b, 42).expect("valid");
    let mut other = GaussMarkov::new(&cfg(), 3, b, 43).expect("valid");
    let mut differs = false;
    for i in 0..2_000 {
        let t = i as f64 * 0.037;
        let p = at(&mut a, t);
        assert_eq!(p, at(&mut a2, t));
        differs |= p != at(&mut other, t);
    }
    assert!(differs);
}

#[test]
fn mean_and_std_of_speed_converge_to_the_configuration() {
    let c = GaussMarkovConfig {
        mean_speed_mps: 20.0,
        speed_std_mps: 2.0,
        ..cfg()
    };
    let s = speeds(&c, 7, 60_000); // 6000 s of flight
    let (m, sd) = (mean(&s), std(&s));
    assert!((m - 20.0).abs() < 0.15, "mean speed {m}");
    assert!((sd - 2.0).abs() < 0.15, "speed std {sd}");
    // Memory: the lag-1 autocorrelation of an AR(1) process is α.
    let r = lag1(&s);
    assert!((r - 0.85).abs() < 0.03, "lag-1 autocorrelation {r}");
}

#[test]
fn mean_speed_holds_in_a_small_box_with_reflections() {
    // Walls change the direction, never the speed process.
    let b = Bounds::from_size(200.0, 200.0, 60.0);
    let mut m = GaussMarkov::new(&cfg(), 1, b, 9).expect("valid");
    let mut sum = 0.0;
    let n = 20_000;
    for i in 0..n {
        let t = Time::from_secs_f64((i as f64 + 0.5) * 0.1);
        assert!(b.contains(m.position(t)));
        sum += m.velocity(t).norm();
    }
    let avg = sum / n as f64;
    assert!((avg - 20.0).abs() < 0.3, "mean |v| {avg}");
}

#[test]
fn alpha_one_is_constant_velocity() {
    let c = GaussMarkovConfig {
        alpha: 1.0,
        mean_direction_deg: Some(30.0),
        mean_pitch_deg: 10.0,
        ..cfg()
    };
    let mut m = GaussMarkov::new(&c, 0, huge(), 5).expect("valid");
    let v0 = m.velocity(Time::ZERO);
    assert!((v0.norm() - 20.0).abs() < 1e-9);
    let expect = Vec3::new(
        20.0 * 30f64.to_radians().cos() * 10f64.to_radians().cos(),
        20.0 * 30f64.to_radians().sin() * 10f64.to_radians().cos(),
        20.0 * 10f64.to_radians().sin(),
    );
    assert!((v0 - expect).norm() < 1e-9);
    let p0 = at(&mut m, 0.0);
    for i in 1..500 {
        let t = i as f64 * 0.13;
        let v = m.velocity(Time::from_secs_f64(t));
        assert!((v - v0).norm() < 1e-9, "velocity changed at {t}: {v:?}");
        let p = at(&mut m, t);
        assert!((p - (p0 + v0.scale(t))).norm() < 1e-6);
    }
}

#[test]
fn alpha_zero_is_memoryless() {
    let c = GaussMarkovConfig {
        alpha: 0.0,
        ..cfg()
    };
    let s = speeds(&c, 3, 40_000);
    let r = lag1(&s);
    assert!(r.abs() < 0.03, "lag-1 autocorrelation {r}");
    assert!((mean(&s) - 20.0).abs() < 0.1);
    assert!((std(&s) - 2.0).abs() < 0.1);
}

#[test]
fn positions_are_linear_between_updates() {
    let mut m = GaussMarkov::new(&cfg(), 0, huge(), 8).expect("valid");
    for n in 0..200 {
        let t0 = n as f64 * 0.1;
        let a = at(&mut m, t0);
        let q = at(&mut m, t0 + 0.025);
        let mid = at(&mut m, t0 + 0.05);
        let b = at(&mut m, t0 + 0.1);
        assert!((mid - a.lerp(b, 0.5)).norm() < 1e-6, "step {n}");
        assert!((q - a.lerp(b, 0.25)).norm() < 1e-6, "step {n}");
    }
}

#[test]
fn walls_reflect_the_velocity_and_the_mean_direction() {
    // Heading +x at 20 m/s from 5 m before the wall, α = 1: after 0.5 s
    // the node has bounced and moves −x, 5 m from the wall.
    let b = Bounds::from_size(100.0, 100.0, 100.0);
    let c = GaussMarkovConfig {
        alpha: 1.0,
        mean_direction_deg: Some(0.0),
        initial_position_m: Some([95.0, 50.0, 50.0]),
        ..cfg()
    };
    let mut m = GaussMarkov::new(&c, 0, b, 1).expect("valid");
    let p = at(&mut m, 0.5);
    assert!((p.x - 95.0).abs() < 1e-9, "{p:?}");
    for t in [0.5, 1.0, 3.0] {
        let v = m.velocity(Time::from_secs_f64(t));
        assert!((v.x + 20.0).abs() < 1e-9, "t={t} {v:?}");
        assert!(v.y.abs() < 1e-9);
    }
    // The mean was mirrored too: with α < 1 the node keeps going −x.
    let c = GaussMarkovConfig {
        alpha: 0.5,
        direction_std_deg: 0.0,
        speed_std_mps: 0.0,
        pitch_std_deg: 0.0,
        ..c
    };
    let mut m = GaussMarkov::new(&c, 0, b, 1).expect("valid");
    for t in [1.0, 2.0, 4.0] {
        let v = m.velocity(Time::from_secs_f64(t));
        assert!((v.x + 20.0).abs() < 1e-9, "t={t} {v:?}");
    }
}

#[test]
fn direction_mean_is_taken_on_the_near_branch() {
    assert!((wrap_pi(3.0 * PI) - PI).abs() < 1e-12);
    assert!((wrap_pi(-PI) - PI).abs() < 1e-12);
    assert!((wrap_pi(0.5) - 0.5).abs() < 1e-12);
    // Mean direction 180°, small noise, α = 0.5: the heading stays near
    // 180° (a naive average of +179° and −179° would swing it to 0°).
    let c = GaussMarkovConfig {
        alpha: 0.5,
        mean_direction_deg: Some(180.0),
        direction_std_deg: 5.0,
        mean_pitch_deg: 0.0,
        pitch_std_deg: 0.0,
        ..cfg()
    };
    let mut m = GaussMarkov::new(&c, 0, huge(), 2).expect("valid");
    for i in 0..2_000 {
        let v = m.velocity(Time::from_secs_f64(i as f64 * 0.1 + 0.05));
        // Within 25° (5 σ) of 180°.
        assert!(
            v.x < 0.0 && v.y.abs() < -v.x * 25f64.to_radians().tan(),
            "step {i}: {v:?}"
        );
    }
}

#[test]
fn bad_fields_are_named_with_their_range() {
    for (c, field) in [
        (
            GaussMarkovConfig {
                alpha: 1.5,
                ..cfg()
            },
            "gauss_markov.alpha",
        ),
        (
            GaussMarkovConfig {
                update_interval_s: 0.0,
                ..cfg()
            },
            "gauss_markov.update_interval_s",
        ),
        (
            GaussMarkovConfig {
                mean_pitch_deg: 100.0,
                ..cfg()
            },
            "gauss_markov.mean_pitch_deg",
        ),
        (
            GaussMarkovConfig {
                mean_speed_spread_mps: 30.0,
                ..cfg()
            },
            "gauss_markov.mean_speed_spread_mps",
        ),
    ] {
        let e = MobilityConfig::GaussMarkov(c).validate().expect_err(field);
        let msg = e.to_string();
        assert!(msg.contains(field) && msg.contains("allowed"), "{msg}");
    }
}

/// A caller that keeps the segment and runs the model only when it ends
/// (the medium's sampler) gets the positions `position` gives, bit for
/// bit, in a small box (walls hit often) and at uneven instants.
#[test]
fn cached_segments_give_the_positions_bit_for_bit() {
    let b = Bounds::from_size(120.0, 90.0, 30.0);
    let mut direct = GaussMarkov::new(&cfg(), 3, b, 11).expect("valid");
    let mut cached = GaussMarkov::new(&cfg(), 3, b, 11).expect("valid");
    let mut seg: Option<Segment> = None;
    let mut fetched = 0;
    let mut t_ns = 0u64;
    for i in 0..20_000u64 {
        t_ns += 1 + (i * 7_919_993) % 13_000_000;
        let t = Time::from_nanos(t_ns);
        let want = direct.position(t);
        let got = match seg {
            Some(s) if t.as_secs_f64() < s.until_s => s.position(t),
            _ => {
                fetched += 1;
                seg = cached.segment(t);
                seg.expect("Gauss-Markov moves in segments").position(t)
            }
        };
        assert_eq!(
            (got.x.to_bits(), got.y.to_bits(), got.z.to_bits()),
            (want.x.to_bits(), want.y.to_bits(), want.z.to_bits()),
            "at {t_ns} ns"
        );
    }
    // One fetch per 0.1 s step reached, not one per query.
    assert!(fetched < 20_000 / 10, "{fetched} fetches");
}
