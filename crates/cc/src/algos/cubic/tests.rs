//! Spec vectors CU-1..CU-9 (CU-7, the kernel fixed-point mode, is not
//! implemented) and behaviour tests for CUBIC.

use super::*;
use crate::controller::CongestionController;
use crate::testutil::{ack, ack_rtt, path, MSS};
use crate::types::{CaState, CongestionEvent, SSTHRESH_INF};

fn close(got: f64, want: f64, tol: f64) {
    assert!((got - want).abs() <= tol, "got {got}, want {want} ± {tol}");
}

fn rel(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1e-300),
        "got {got}, want {want} (rel 1e-9)"
    );
}

fn loss() -> CongestionEvent {
    crate::testutil::loss_event(0)
}

fn controller(cfg: CubicConfig, cwnd: u32, ssthresh: u32) -> PolicyController<Cubic> {
    let mut c = cfg.build();
    c.init(&path(0, 100));
    c.core_mut().cwnd = cwnd;
    c.core_mut().ssthresh = ssthresh;
    c
}

fn cubic(cwnd: u32, ssthresh: u32) -> PolicyController<Cubic> {
    controller(CubicConfig::default(), cwnd, ssthresh)
}

/// A path at `now_ms` (SRTT `srtt_ms`) with the given cumulative point and next packet number.
fn seq_path(now_ms: u64, srtt_ms: u64, una: u64, nxt: u64) -> PathInfo {
    let mut p = path(now_ms, srtt_ms);
    p.snd_una = una;
    p.snd_nxt = nxt;
    p
}

/// Loss at cwnd 100 (W_max 100, ssthresh 70, cwnd_prior 100), then recovery exit: cwnd 70.
fn after_loss_at_100() -> PolicyController<Cubic> {
    let mut c = cubic(100, 50);
    let p = path(0, 100);
    c.on_congestion_event(&loss(), &p);
    c.on_recovery_exit(&p);
    assert_eq!((c.core().cwnd, c.core().ssthresh), (70, 70));
    c
}

#[test]
fn cu1_cubic_curve() {
    let mut c = CubicConfig::default().policy();
    c.w_max = 100.0;
    c.start_epoch(70.0, Time::ZERO);
    rel(c.k_secs(), 75f64.cbrt());
    close(c.k_secs(), 4.2172, 5e-5);
    assert_eq!(c.origin_segs(), 100.0);
    let k = c.k_secs();
    for (t, w) in [
        (0.0, 70.0),
        (1.0, 86.681),
        (2.0, 95.640),
        (3.0, 99.279),
        (k, 100.0),
        (5.0, 100.192),
        (6.0, 102.267),
        (8.0, 121.653),
    ] {
        close(c.w_cubic(t), w, 5e-4);
        rel(c.w_cubic(t), 0.4 * (t - 75f64.cbrt()).powi(3) + 100.0);
    }
}

#[test]
fn cu2_target_and_cnt() {
    let mut c = after_loss_at_100();
    // The first CA ACK starts the epoch at cwnd 70 (K = ∛75, origin 100).
    c.on_ack(&ack(1), &path(10_000, 100));
    assert_eq!(c.policy().epoch_start(), Some(Time::from_millis(10_000)));
    rel(c.policy().k_secs(), 75f64.cbrt());
    // t = 1 s, SRTT 100 ms, cwnd 80: target W(1.1) = 87.885 → cnt = floor(80/7.885) = 10.
    c.core_mut().cwnd = 80;
    c.on_ack(&ack(1), &path(11_000, 100));
    close(c.policy().w_cubic(1.1), 87.885, 5e-4);
    assert_eq!(c.policy().cnt(), 10);
}

#[test]
fn cu3_reno_estimate() {
    let alpha = 3.0 * 0.3 / 1.7;
    let mut c = after_loss_at_100();
    assert_eq!(c.policy().cwnd_prior_segs(), 100);
    c.on_ack(&ack(70), &path(10_000, 100));
    rel(c.policy().w_est_segs(), 70.0 + 70.0 * alpha / 70.0);
    close(c.policy().w_est_segs(), 70.529, 5e-4);
    // The same, one segment per ACK at cwnd ≈ 70.
    let mut c = after_loss_at_100();
    for _ in 0..70 {
        c.on_ack(&ack(1), &path(10_000, 100));
    }
    close(c.policy().w_est_segs(), 70.529, 0.02);
}

#[test]
fn cu4_fast_convergence() {
    let mut c = cubic(90, 50);
    c.policy_mut().w_max = 100.0;
    c.on_congestion_event(&loss(), &path(0, 100));
    assert_eq!(c.policy().w_max_segs(), 76.5);
    assert_eq!(c.core().ssthresh, 63);
    assert_eq!(c.policy().cwnd_prior_segs(), 90);
    let mut c = cubic(120, 50);
    c.policy_mut().w_max = 100.0;
    c.on_congestion_event(&loss(), &path(0, 100));
    assert_eq!(c.policy().w_max_segs(), 120.0);
    assert_eq!(c.core().ssthresh, 84);
}

#[test]
fn cu5_after_rto() {
    let mut c = cubic(40, 30);
    c.policy_mut().w_max = 100.0;
    let mut p = path(0, 100);
    p.in_flight = 0;
    c.on_rto(&p);
    assert_eq!((c.core().cwnd, c.core().ssthresh), (1, 28));
    assert_eq!(c.policy().w_max_segs(), 0.0);
    assert_eq!(c.policy().epoch_start(), None);
    // CA starts at cwnd 20: K = 0, origin = 20.
    c.core_mut().cwnd = 20;
    c.core_mut().ssthresh = 20;
    let mut p = path(5_000, 100);
    p.ca_state = CaState::Open;
    c.on_ack(&ack(1), &p);
    assert_eq!(c.policy().k_secs(), 0.0);
    assert_eq!(c.policy().origin_segs(), 20.0);
    close(c.policy().w_cubic(1.0), 20.4, 1e-12);
    close(c.policy().w_cubic(2.0), 23.2, 1e-12);
}

#[test]
fn cu6_initial_growth_cap() {
    let mut c = CubicConfig::default().build();
    c.init(&path(0, 100));
    c.set_initial_window(100 * MSS as u64, &path(0, 100));
    assert_eq!((c.core().cwnd, c.core().ssthresh), (100, 100));
    c.on_ack(&ack(1), &path(1_000, 100));
    close(c.policy().w_cubic(0.1), 100.0004, 1e-9);
    assert_eq!(c.policy().cnt(), 20);
    for _ in 1..20 {
        c.on_ack(&ack(1), &path(1_000, 100));
    }
    assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (101, 0));
    for _ in 0..20 {
        c.on_ack(&ack(1), &path(1_000, 100));
    }
    assert_eq!((c.core().cwnd, c.policy().cnt()), (102, 20));
}

#[test]
fn a_startup_measurement_sets_w_max_and_lifts_the_growth_cap() {
    let mut c = CubicConfig::default().build();
    c.init(&path(0, 100));
    // Slow start ran one RTT with the initial window: cwnd 20.
    c.core_mut().cwnd = 20;
    let m = crate::types::StartupMeasurement {
        bandwidth_bytes_per_sec: 1_000_000,
        rtt: Duration::from_millis(100),
        window_bytes: 100 * MSS as u64,
        pipe_bytes: 100 * MSS as u64,
    };
    c.on_startup_measurement(&m, &path(100, 100));
    // The window rises to the measurement; ssthresh stays where slow
    // start had it (issue 35: a wrong estimate costs at most one RTT).
    assert_eq!((c.core().cwnd, c.core().ssthresh), (100, SSTHRESH_INF));
    assert!(c.in_slow_start());
    assert_eq!(c.policy().w_max_segs(), 100.0, "W_max is the measured pipe");
    // A measurement after a loss (ssthresh 60, congestion avoidance)
    // starts CUBIC's epoch at the plateau.
    let mut c = CubicConfig::default().build();
    c.init(&path(0, 100));
    c.core_mut().cwnd = 60;
    c.core_mut().ssthresh = 60;
    c.on_startup_measurement(&m, &path(100, 100));
    assert_eq!((c.core().cwnd, c.core().ssthresh), (100, 100));
    c.on_ack(&ack(1), &path(1_000, 100));
    // At the plateau (W_max = cwnd): no initial growth cap of 20 — the
    // cubic curve is flat there, so cnt is large, not capped.
    assert!(c.policy().cnt() > 20, "cnt {}", c.policy().cnt());
    // A measurement below the window in flight never shrinks it.
    let small = crate::types::StartupMeasurement {
        window_bytes: 5 * MSS as u64,
        ..m
    };
    c.on_startup_measurement(&small, &path(1_100, 100));
    assert_eq!(c.core().cwnd, 100);
    assert_eq!(c.core().ssthresh, 100, "nor lowers ssthresh");
    // A window capped below the measured pipe slow-starts on.
    let mut c = CubicConfig::default().build();
    c.init(&path(0, 100));
    let capped = crate::types::StartupMeasurement {
        window_bytes: 100 * MSS as u64,
        pipe_bytes: 170 * MSS as u64,
        ..m
    };
    c.on_startup_measurement(&capped, &path(100, 100));
    assert_eq!((c.core().cwnd, c.core().ssthresh), (100, SSTHRESH_INF));
    assert!(c.in_slow_start());
    assert_eq!(c.policy().w_max_segs(), 170.0);
}

/// Issue 35: for every registered controller, a start-up measurement
/// never leaves ssthresh below where slow start had it, and never
/// shrinks the window.
#[test]
fn no_controller_lowers_ssthresh_on_a_startup_measurement() {
    for name in crate::NAMES {
        let mut c = crate::CcConfig::from_name(name)
            .expect("registered")
            .build();
        c.init(&path(0, 100));
        let before = (c.cwnd_bytes(), c.ssthresh_bytes());
        // A wildly low estimate: 2 segments.
        let m = crate::types::StartupMeasurement {
            bandwidth_bytes_per_sec: 10_000,
            rtt: Duration::from_millis(100),
            window_bytes: 2 * MSS as u64,
            pipe_bytes: 2 * MSS as u64,
        };
        c.on_startup_measurement(&m, &path(100, 100));
        assert!(c.cwnd_bytes() >= before.0, "{name}: window shrank");
        assert!(
            c.ssthresh_bytes().unwrap_or(u64::MAX) >= before.1.unwrap_or(u64::MAX),
            "{name}: ssthresh {:?} → {:?}",
            before.1,
            c.ssthresh_bytes()
        );
    }
}

#[test]
fn cu8_hystart_plus_plus() {
    let cfg = HyStartPlusPlusConfig::default();
    for (last_ms, want_us) in [(10, 4_000), (40, 5_000), (100, 12_500), (200, 16_000)] {
        assert_eq!(
            cfg.rtt_thresh(Duration::from_millis(last_ms)),
            Duration::from_micros(want_us)
        );
    }
    let mut c = cubic(10, SSTHRESH_INF);
    // Round 1 (ends the init round): eight 40 ms samples.
    for i in 0..8 {
        c.on_ack(&ack_rtt(1, 40_000), &seq_path(100 + i, 40, 1101 + i, 1200));
    }
    assert!(!c.policy().in_css());
    // Round 2: lastRoundMinRTT = 40 ms, RttThresh 5 ms; minimum 46 ms ≥ 45 ms after 8 samples.
    for i in 0..8 {
        assert!(!c.policy().in_css(), "CSS before sample {}", i + 1);
        let rtt_us = 53_000 - 1_000 * i;
        c.on_ack(&ack_rtt(1, rtt_us), &seq_path(200 + i, 40, 1201 + i, 1300));
    }
    assert!(c.policy().in_css());
    assert_eq!(
        c.policy().hspp.css_baseline_min_rtt,
        Some(Duration::from_millis(46))
    );
    // In CSS an ACK of 8 segments adds 8/4 = 2.
    let before = c.core().cwnd;
    c.on_ack(&ack(8), &seq_path(210, 40, 1220, 1300));
    assert_eq!(c.core().cwnd, before + 2);
}

#[test]
fn cu9_linux_hystart_thresholds() {
    let cfg = LinuxHyStartConfig::default();
    assert_eq!(cfg.delay_trigger_us(40_000), 45_000);
    // H9 rate at cwnd 16, MSS 1448, SRTT 40 ms (slow start: ratio 2).
    let mut core = Core::new(CoreConfig::default());
    core.mss = 1448;
    core.cwnd = 16;
    let mut p = path(0, 40);
    p.in_flight = 16;
    let rate = Cubic::h9_rate_bytes_per_sec(&core, &p);
    assert_eq!(rate, Some(1_158_400));
    for (rate, ack_delay, unpaced, paced) in [
        (1_158_400, 1_000, 20_500, 41_000),
        (262_144_000, 1_000, 20_500, 41_000),
        (524_288_000, 500, 20_250, 40_500),
    ] {
        let d = cfg.ack_delay_us(Some(rate));
        assert_eq!(d, ack_delay, "rate {rate}");
        assert_eq!(cfg.ack_train_threshold_us(40_000, d, false), unpaced);
        assert_eq!(cfg.ack_train_threshold_us(40_000, d, true), paced);
    }
    assert_eq!(cfg.ack_delay_us(None), 0);
}

fn linux_hystart(cwnd: u32) -> PolicyController<Cubic> {
    let cfg = CubicConfig {
        slow_start_exit: SlowStartExit::LinuxHyStart,
        ..Default::default()
    };
    controller(cfg, cwnd, SSTHRESH_INF)
}

#[test]
fn cu9_linux_hystart_delay_trigger() {
    for (rtt_us, fires) in [(45_000, false), (45_001, true)] {
        let mut c = linux_hystart(16);
        // delay_min = 40 ms (first round), ACKs 5 ms apart (no ack train).
        c.on_ack(&ack_rtt(1, 40_000), &seq_path(0, 40, 1101, 1200));
        for i in 0..9u64 {
            assert_eq!(c.core().ssthresh, SSTHRESH_INF, "sample {}", i + 1);
            let p = seq_path(100 + 5 * i, 40, 1201 + i, 1300);
            c.on_ack(&ack_rtt(1, rtt_us), &p);
        }
        // The ninth sample of the round tests the minimum of the round.
        assert_eq!(c.core().ssthresh != SSTHRESH_INF, fires, "rtt {rtt_us}");
        if fires {
            assert_eq!(c.core().ssthresh, c.core().cwnd);
        }
    }
}

#[test]
fn cu9_linux_hystart_ack_train() {
    let mut c = linux_hystart(16);
    c.on_ack(&ack_rtt(1, 40_000), &seq_path(0, 40, 1101, 1200));
    // A new round starts at t = 100 ms; ACKs 1 ms apart; unpaced threshold 20.5 ms.
    for i in 0..=20u64 {
        c.on_ack(&ack_rtt(1, 40_000), &seq_path(100 + i, 40, 1201 + i, 1300));
    }
    assert_eq!(c.core().ssthresh, SSTHRESH_INF, "20 ms train");
    c.on_ack(&ack_rtt(1, 40_000), &seq_path(121, 40, 1222, 1300));
    assert_eq!(c.core().ssthresh, c.core().cwnd, "21 ms train");
}

#[test]
fn hystart_plus_plus_css_rounds_and_resume() {
    let mut c = cubic(10, SSTHRESH_INF);
    let mut una = 1101;
    let mut round = |c: &mut PolicyController<Cubic>, r: u64, rtt_ms: u64| {
        for i in 0..8 {
            let p = seq_path(100 * r + i, 40, una, 1100 + 100 * r);
            c.on_ack(&ack_rtt(1, rtt_ms * 1000), &p);
            una += 1;
        }
        una = 1100 + 100 * r + 1;
    };
    round(&mut c, 1, 40);
    round(&mut c, 2, 50);
    assert!(c.policy().in_css());
    // A round whose minimum falls below the CSS baseline resumes slow start.
    round(&mut c, 3, 45);
    assert!(!c.policy().in_css());
    round(&mut c, 4, 60);
    assert!(c.policy().in_css());
    for r in 5..9 {
        round(&mut c, r, 60);
        assert_eq!(c.core().ssthresh, SSTHRESH_INF, "round {r}");
    }
    // The fifth round end in CSS enters congestion avoidance.
    round(&mut c, 9, 60);
    assert_eq!(c.core().ssthresh, c.core().cwnd);
    assert!(!c.in_slow_start());
}

#[test]
fn hystart_plus_plus_limits_growth_per_ack() {
    let mut c = cubic(10, SSTHRESH_INF);
    c.on_ack(&ack(20), &path(0, 40));
    assert_eq!(c.core().cwnd, 18);
    let mut c = controller(
        CubicConfig {
            slow_start_exit: SlowStartExit::None,
            ..Default::default()
        },
        10,
        SSTHRESH_INF,
    );
    c.on_ack(&ack(20), &path(0, 40));
    assert_eq!(c.core().cwnd, 30);
}

#[test]
fn undo_restores_curve() {
    let mut c = after_loss_at_100();
    c.on_ack(&ack(1), &path(10_000, 100));
    let (w_max, k, epoch) = (
        c.policy().w_max_segs(),
        c.policy().k_secs(),
        c.policy().epoch_start(),
    );
    c.core_mut().cwnd = 90;
    c.on_congestion_event(&loss(), &path(12_000, 100));
    assert_eq!(c.policy().w_max_segs(), 76.5);
    c.on_spurious_congestion(&path(12_100, 100));
    assert_eq!(c.core().cwnd, 90);
    assert_eq!(c.policy().w_max_segs(), w_max);
    assert_eq!(c.policy().k_secs(), k);
    assert_eq!(c.policy().epoch_start(), epoch);
    assert_eq!(c.policy().cwnd_prior_segs(), 100);
}

#[test]
fn idle_restart_shifts_epoch() {
    let mut c = after_loss_at_100();
    c.on_ack(&ack(1), &path(10_000, 100));
    c.on_idle_restart(&path(13_000, 100), Duration::from_secs(2));
    assert_eq!(c.policy().epoch_start(), Some(Time::from_millis(12_000)));
    // Never past now.
    c.on_idle_restart(&path(13_000, 100), Duration::from_secs(5));
    assert_eq!(c.policy().epoch_start(), Some(Time::from_millis(13_000)));
}

#[test]
fn min_rtt_acks_never_shrink_cwnd() {
    for exit in [
        SlowStartExit::HyStartPlusPlus,
        SlowStartExit::LinuxHyStart,
        SlowStartExit::None,
    ] {
        let cfg = CubicConfig {
            slow_start_exit: exit,
            ..Default::default()
        };
        let mut c = controller(cfg, 10, SSTHRESH_INF);
        let mut last = c.core().cwnd;
        for i in 0..5_000u64 {
            let p = seq_path(i, 40, 1_001 + i, 1_100 + i);
            c.on_ack(&ack_rtt(1, 40_000), &p);
            assert!(c.core().cwnd >= last);
            last = c.core().cwnd;
        }
    }
}

#[test]
fn extreme_values_do_not_panic() {
    let mut c = controller(
        CubicConfig {
            c_segs_per_sec3: f64::NAN,
            beta_numerator: u32::MAX,
            beta_denominator: 0,
            target_cap_factor: f64::INFINITY,
            target_rtt: TargetRtt::MinRtt,
            ..Default::default()
        },
        u32::MAX,
        1,
    );
    let mut p = path(u64::MAX / 2_000_000, 0);
    p.srtt = Some(Duration::MAX);
    c.on_ack(&ack_rtt(u32::MAX, 0), &p);
    c.on_ack(&ack_rtt(1, u64::MAX), &path(0, 0));
    c.on_congestion_event(&loss(), &p);
    c.on_rto(&p);
    c.on_idle_restart(&p, Duration::MAX);
    c.on_spurious_congestion(&p);
    assert!(c.core().cwnd >= 1);
}

/// Needs the `serde` feature (on for this crate's tests through its
/// dev-dependency on itself).
#[cfg(feature = "serde")]
#[test]
fn config_names() {
    use serde::de::value::{Error, StrDeserializer};
    use serde::de::IntoDeserializer;
    for (name, want) in [
        ("hystart_plus_plus", SlowStartExit::HyStartPlusPlus),
        ("linux_hystart", SlowStartExit::LinuxHyStart),
        ("none", SlowStartExit::None),
    ] {
        let d: StrDeserializer<Error> = name.into_deserializer();
        assert_eq!(SlowStartExit::deserialize(d), Ok(want));
    }
    let d: StrDeserializer<Error> = "min_rtt".into_deserializer();
    assert_eq!(TargetRtt::deserialize(d), Ok(TargetRtt::MinRtt));
}

/// CU-7 through the controller: with `kernel_fixed_point`, the epoch after
/// a reduction from W_max 100 to 70 uses the kernel's K and integer curve.
#[test]
fn cu7_fixed_point_mode_drives_the_curve() {
    let cfg = CubicConfig {
        kernel_fixed_point: true,
        ..CubicConfig::default()
    };
    let mut c = controller(cfg, 100, 50);
    let p = path(0, 100);
    c.on_congestion_event(&loss(), &p);
    c.on_recovery_exit(&p);
    assert_eq!(c.core().cwnd, 70);
    // First CA ACK starts the epoch.
    c.on_ack(&ack(1), &path(1_000, 100));
    let k = c.policy().k_secs();
    assert!((k - 4316.0 / 1024.0).abs() < 1e-12, "K = {k}");
    for (t, want) in [(0.0, 71.0), (1.0, 87.0), (2.0, 96.0), (6.0, 102.0)] {
        assert_eq!(c.policy().w_cubic(t), want, "t = {t}");
    }
}
