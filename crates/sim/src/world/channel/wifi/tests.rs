use super::*;

fn no_shadowing() -> WifiConfig {
    WifiConfig {
        shadowing_sigma_db: 0.0,
        ..WifiConfig::default()
    }
}

fn at(d: f64) -> (Vec3, Vec3) {
    (Vec3::new(0.0, 0.0, 50.0), Vec3::new(d, 0.0, 50.0))
}

#[test]
fn eleven_mbit_per_crosses_one_half_between_120_and_160_m() {
    let ch = WifiChannel::new(no_shadowing(), 1).unwrap();
    let per_at = |d: f64| {
        let (a, b) = at(d);
        let snr = ch.snr_db(Time::ZERO, a, b, 0);
        ch.per(snr, 576, Modulation::Cck11)
    };
    assert!(per_at(120.0) < 0.5, "PER at 120 m = {}", per_at(120.0));
    assert!(per_at(160.0) > 0.5, "PER at 160 m = {}", per_at(160.0));
    // Monotone in distance.
    let mut prev = 0.0;
    for d in (10..400).step_by(5) {
        let p = per_at(d as f64);
        assert!(p >= prev - 1e-12);
        prev = p;
    }
}

#[test]
fn slower_rates_reach_further_and_carrier_sense_reaches_furthest() {
    let mut ranges = Vec::new();
    for rate in [11.0, 5.5, 2.0, 1.0] {
        let cfg = WifiConfig {
            data_rate_mbps: rate,
            ..no_shadowing()
        };
        ranges.push(WifiChannel::new(cfg, 1).unwrap().range_m());
    }
    assert!(ranges.windows(2).all(|w| w[0] < w[1]), "{ranges:?}");
    assert!((120.0..160.0).contains(&ranges[0]), "{ranges:?}");
    let ch = WifiChannel::new(no_shadowing(), 1).unwrap();
    assert!(
        ch.carrier_sense_range_m() > ranges[3],
        "defers to every decodable frame"
    );
    // At the carrier-sense range the received power equals the threshold.
    let d = ch.carrier_sense_range_m();
    let rx = ch.config().tx_power_dbm - ch.path_loss_db(d);
    assert!((rx - ch.config().cs_threshold_dbm).abs() < 1e-9);
}

#[test]
fn shadowing_has_the_configured_spread_and_is_reciprocal_and_seeded() {
    let cfg = WifiConfig {
        shadowing_sigma_db: 4.0,
        shadowing_coherence_s: 0.0,
        ..WifiConfig::default()
    };
    let ch = WifiChannel::new(cfg.clone(), 7).unwrap();
    let n = 4000;
    let xs: Vec<f64> = (0..n)
        .map(|i| ch.shadowing_db(Time::ZERO, WifiChannel::link_id(i, i + 1)))
        .collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    assert!(mean.abs() < 0.3, "mean {mean}");
    assert!((sd - 4.0).abs() < 0.25, "sd {sd}");
    assert_eq!(WifiChannel::link_id(3, 9), WifiChannel::link_id(9, 3));
    // Constant in time without coherence; same seed same field, other seed other field.
    let l = WifiChannel::link_id(1, 2);
    assert_eq!(
        ch.shadowing_db(Time::ZERO, l),
        ch.shadowing_db(Time::from_millis(90_000), l)
    );
    let again = WifiChannel::new(cfg.clone(), 7).unwrap();
    assert_eq!(
        ch.shadowing_db(Time::ZERO, l),
        again.shadowing_db(Time::ZERO, l)
    );
    let other = WifiChannel::new(cfg, 8).unwrap();
    assert_ne!(
        ch.shadowing_db(Time::ZERO, l),
        other.shadowing_db(Time::ZERO, l)
    );
}

#[test]
fn time_correlated_shadowing_decorrelates_over_the_coherence_time() {
    let cfg = WifiConfig {
        shadowing_sigma_db: 4.0,
        shadowing_coherence_s: 2.0,
        ..WifiConfig::default()
    };
    let ch = WifiChannel::new(cfg, 3).unwrap();
    // Correlation across many links between t and t + lag.
    let corr = |lag_s: f64| {
        let n = 3000;
        let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
        for i in 0..n {
            let t0 = Time::from_secs_f64(0.37 * i as f64);
            let x = ch.shadowing_db(t0, i as u64);
            let y = ch.shadowing_db(Time::from_secs_f64(0.37 * i as f64 + lag_s), i as u64);
            sxy += x * y;
            sxx += x * x;
            syy += y * y;
        }
        sxy / (sxx * syy).sqrt()
    };
    let c_short = corr(0.1);
    let c_long = corr(10.0);
    assert!(c_short > 0.9, "{c_short}");
    assert!(c_long.abs() < 0.1, "{c_long}");
    // Continuous: no jump at a knot.
    let l = 5;
    let before = ch.shadowing_db(Time::from_secs_f64(3.999_999), l);
    let after = ch.shadowing_db(Time::from_secs_f64(4.000_001), l);
    assert!((before - after).abs() < 0.01);
}

#[test]
fn airtime_adds_up_the_dcf_overheads() {
    let ch = WifiChannel::new(WifiConfig::default(), 1).unwrap();
    // DIFS 50 + 15.5 slots 310 + PLCP 192 + (576+36)·8/5 = 979.2 + SIFS 10 + ACK 304.
    let expected = 50.0 + 310.0 + 192.0 + 979.2 + 10.0 + 304.0;
    let got = ch.airtime(576, 5.0).as_secs_f64() * 1e6;
    assert!((got - expected).abs() < 0.01, "{got} µs");
    assert!(ch.airtime(1500, 5.0) > ch.airtime(576, 5.0));
    assert!(ch.airtime(576, 11.0) < ch.airtime(576, 5.0));
    // Overheads dominate small frames: 40 B at 11 Mbit/s is mostly overhead.
    let small = ch.airtime(40, 11.0).as_secs_f64();
    assert!(small > 10.0 * (76.0 * 8.0 / 11e6));
}

#[test]
fn near_frames_go_through_far_frames_exhaust_the_retries() {
    let mut ch = WifiChannel::new(no_shadowing(), 11).unwrap();
    let (a, near) = at(20.0);
    let out = ch.attempt(Time::ZERO, a, near, 1, 576, 0);
    assert!(out.delivered);
    assert_eq!(out.attempts, 1);
    assert_eq!(out.collisions, 0);
    assert!(out.airtime >= ch.airtime(576, 5.0) - Duration::from_micros(320));
    let (_, far) = at(1000.0);
    let out = ch.attempt(Time::ZERO, a, far, 1, 576, 0);
    assert!(!out.delivered);
    assert_eq!(out.attempts, 7);
    // Seven attempts with growing backoff take longer than seven frames.
    assert!(out.airtime > ch.airtime(576, 5.0) * 7 - Duration::from_millis(3));
}

#[test]
fn collisions_rise_with_contenders_and_retries_stay_bounded() {
    let (a, b) = at(30.0);
    let mut rates = Vec::new();
    for contenders in [0usize, 2, 5, 10, 20] {
        let mut ch = WifiChannel::new(no_shadowing(), 5).unwrap();
        let (mut coll, mut attempts) = (0u32, 0u32);
        for i in 0..2000 {
            let o = ch.attempt(Time::from_millis(i), a, b, 1, 576, contenders);
            assert!((1..=7).contains(&o.attempts));
            coll += o.collisions;
            attempts += o.attempts;
        }
        let rate = f64::from(coll) / f64::from(attempts);
        let p = ch.collision_probability(contenders);
        assert!((rate - p).abs() < 0.03, "{contenders}: {rate} vs {p}");
        rates.push(rate);
    }
    assert_eq!(rates[0], 0.0);
    assert!(rates.windows(2).all(|w| w[0] < w[1]), "{rates:?}");
}

#[test]
fn attempts_are_deterministic_per_seed() {
    let run = |seed| {
        let mut ch = WifiChannel::new(WifiConfig::default(), seed).unwrap();
        let (a, b) = at(130.0);
        (0..200)
            .map(|i| ch.attempt(Time::from_millis(i * 10), a, b, 4, 576, 3))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn config_is_validated_and_serde_rejects_unknown_fields() {
    assert!(WifiConfig::default().validate().is_ok());
    let bad = WifiConfig {
        data_rate_mbps: 54.0,
        ..WifiConfig::default()
    };
    assert_eq!(bad.validate().unwrap_err().field, "data_rate_mbps");
    let bad = WifiConfig {
        path_loss_exponent: f64::NAN,
        ..WifiConfig::default()
    };
    assert_eq!(
        WifiChannel::new(bad, 1).unwrap_err().field,
        "path_loss_exponent"
    );
    let bad = WifiConfig {
        cw_max: 7,
        ..WifiConfig::default()
    };
    assert_eq!(bad.validate().unwrap_err().field, "cw_max");
    let parsed: WifiConfig = serde_json::from_str(r#"{"data_rate_mbps": 11.0}"#).unwrap();
    assert_eq!(parsed.data_rate_mbps, 11.0);
    assert_eq!(parsed.retry_limit, 7);
    assert!(serde_json::from_str::<WifiConfig>(r#"{"data_rate": 11.0}"#).is_err());
}

#[test]
fn nonsense_inputs_do_not_panic() {
    let mut ch = WifiChannel::new(WifiConfig::default(), 1).unwrap();
    let nan = Vec3::new(f64::NAN, 0.0, 0.0);
    let out = ch.attempt(Time::MAX, nan, Vec3::ZERO, u64::MAX, usize::MAX, usize::MAX);
    assert!(!out.delivered);
    assert_eq!(out.attempts, 7);
    assert_eq!(ch.airtime(100, 0.0), Duration::MAX);
    assert_eq!(ch.airtime(100, f64::NAN), Duration::MAX);
    assert!(!ch.in_range(Time::ZERO, nan, Vec3::ZERO, 0));
    assert_eq!(ch.per(f64::NAN, 100, Modulation::Cck11), 1.0);
}

#[test]
fn contenders_are_the_queued_nodes_within_carrier_sense_range() {
    let ch = WifiChannel::new(WifiConfig::default(), 1).unwrap();
    let cs = ch.carrier_sense_range_m();
    let me = Vec3::new(0.0, 0.0, 50.0);
    let others = [
        Vec3::new(cs * 0.5, 0.0, 50.0),
        Vec3::new(0.0, cs * 0.99, 50.0),
        Vec3::new(cs * 1.01, 0.0, 50.0),
        Vec3::new(0.0, 0.0, 50.0 + 2.0 * cs),
    ];
    assert_eq!(ch.contenders(me, others), 2);
    assert!(ch.senses(me, others[1]) && !ch.senses(me, others[2]));
    assert_eq!(ch.contenders(me, []), 0);
}

proptest::proptest! {
    /// The DCF's memoised shadowing is `shadowing_db` bit for bit, however
    /// the instants of one link are interleaved with the cache's history.
    #[test]
    fn cached_shadowing_is_shadowing_bit_for_bit(
        ms in proptest::collection::vec(0u64..20_000, 1..40),
        link in 0u64..50,
        coherence_s in proptest::sample::select(vec![0.0, 0.37, 2.0]),
    ) {
        let cfg = WifiConfig { shadowing_coherence_s: coherence_s, ..WifiConfig::default() };
        let ch = WifiChannel::new(cfg, 9).unwrap();
        let mut knots = None;
        for m in ms {
            let t = Time::from_millis(m);
            let cached = ch.shadowing_db_cached(t, link, &mut knots);
            proptest::prop_assert_eq!(cached.to_bits(), ch.shadowing_db(t, link).to_bits());
        }
    }
}
