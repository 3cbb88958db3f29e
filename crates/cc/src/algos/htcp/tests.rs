//! H-TCP unit tests: one per cc-spec §3.4 vector, plus behaviour tests.

use super::*;
use crate::controller::CongestionController;
use crate::testutil::{ack, ack_rtt, path, MSS};
use crate::types::{CongestionEvent, CongestionKind, SSTHRESH_INF};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn secs(v: f64) -> Duration {
    Duration::from_secs_f64(v)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-300)
}

fn ctl(cfg: HtcpConfig) -> PolicyController<Htcp> {
    let mut c = cfg.build();
    c.init(&path(0, 100));
    c
}

fn linux() -> HtcpConfig {
    HtcpConfig {
        linux_compat: true,
        ..Default::default()
    }
}

fn loss() -> CongestionEvent {
    crate::testutil::loss_event(100)
}

/// α for Δ, β and min RTT through the policy's own update.
fn alpha_for(cfg: HtcpConfig, delta: Duration, beta: f64, min_rtt: Option<Duration>) -> f64 {
    let mut c = ctl(cfg);
    let (_, p) = c.parts_mut();
    p.st.beta = beta;
    p.st.min_rtt = min_rtt;
    p.update_alpha(Time::ZERO + delta, 100);
    p.alpha()
}

#[test]
fn ht_alpha_delta_table() {
    let rows = [
        (0.5, 1.0, 1),
        (1.5, 6.0625, 6),
        (2.0, 11.25, 11),
        (3.0, 22.0, 22),
        (10.0, 111.25, 111),
        (30.0, 501.25, 501),
        (60.0, 1461.25, 1461),
    ];
    for (d, real, int) in rows {
        let a = alpha_delta(secs(d), ms(1000));
        assert!(close(a, real), "Δ {d}: {a} vs {real}");
        assert_eq!(alpha_delta_linux(secs(d), ms(1000), 1000), int, "Δ {d}");
    }
    // The boundary Δ = Δ_L belongs to the low-speed branch.
    assert_eq!(alpha_delta(ms(1000), ms(1000)), 1.0);
}

#[test]
fn ht_beta_ratio_and_clamp() {
    // (min, max) RTT ms, real β, Linux β·128.
    let rows = [
        (80, 120, 80.0 / 120.0, 85),
        (50, 200, 0.5, 64),
        (100, 105, 0.8, 102),
    ];
    for linux_mode in [false, true] {
        for (min, max, real, l128) in rows {
            let cfg = HtcpConfig {
                linux_compat: linux_mode,
                ..Default::default()
            };
            let mut c = ctl(cfg);
            let (core, p) = c.parts_mut();
            p.st.modeswitch = true;
            p.st.min_rtt = Some(ms(min));
            p.st.max_rtt = ms(max);
            p.ssthresh(core, &path(0, 100));
            let want = if linux_mode {
                l128 as f64 / 128.0
            } else {
                real
            };
            assert!(close(p.beta(), want), "({min},{max}): {}", p.beta());
            assert!(p.st.modeswitch);
        }
    }
    assert!((80.0f64 / 120.0 - 0.6667).abs() < 1e-4);
}

#[test]
fn ht_alpha_vectors() {
    let no_scaling = HtcpConfig {
        use_rtt_scaling: false,
        ..Default::default()
    };
    let no_scaling_linux = HtcpConfig {
        use_rtt_scaling: false,
        ..linux()
    };
    // Δ = 2 s, β = 0.8, no scaling → 4.5 (Linux 572/128).
    let a = alpha_for(no_scaling, secs(2.0), 0.8, Some(ms(50)));
    assert!(close(a, 4.5), "{a}");
    let a = alpha_for(no_scaling_linux, secs(2.0), 102.0 / 128.0, Some(ms(50)));
    assert!(close(a, 572.0 / 128.0), "{a}");
    // Same with scaling, min_rtt = 50 ms → f = 5.625 → 2.25 (Linux 260/128).
    let a = alpha_for(HtcpConfig::default(), secs(2.0), 0.8, Some(ms(50)));
    assert!(close(a, 2.25), "{a}");
    let a = alpha_for(linux(), secs(2.0), 102.0 / 128.0, Some(ms(50)));
    assert!(close(a, 260.0 / 128.0), "{a}");
    // Δ = 10 s, β = 0.5, min_rtt = 200 ms → f = 222.5 → α = 222.5.
    let a = alpha_for(HtcpConfig::default(), secs(10.0), 0.5, Some(ms(200)));
    assert!(close(a, 222.5), "{a}");
    // Δ = 10 s, β = 0.5, min_rtt = 5 ms → ratio clamped to 0.1 → 11.125 (Linux 11).
    let a = alpha_for(HtcpConfig::default(), secs(10.0), 0.5, Some(ms(5)));
    assert!(close(a, 11.125), "{a}");
    let a = alpha_for(linux(), secs(10.0), 0.5, Some(ms(5)));
    assert!(close(a, 11.0), "{a}");
    // Δ = 0.5 s, β = 0.5, min_rtt = 50 ms → f = max(0.5, 1) = 1 → α = 1.
    let a = alpha_for(HtcpConfig::default(), secs(0.5), 0.5, Some(ms(50)));
    assert!(close(a, 1.0), "{a}");
    // Without an RTT sample there is nothing to scale by.
    let a = alpha_for(HtcpConfig::default(), secs(2.0), 0.8, None);
    assert!(close(a, 4.5), "{a}");
}

/// Prime the policy so the next event's β update yields β = 0.8 (clamped).
fn prime_beta_08(c: &mut PolicyController<Htcp>) {
    let (core, p) = c.parts_mut();
    core.cwnd = 1000;
    core.ssthresh = 500;
    p.st.modeswitch = true;
    p.st.min_rtt = Some(ms(100));
    p.st.max_rtt = ms(105);
}

#[test]
fn ht_ssthresh() {
    for (cfg, want) in [(HtcpConfig::default(), 800), (linux(), 796)] {
        let mut c = ctl(cfg);
        prime_beta_08(&mut c);
        c.on_congestion_event(&loss(), &path(0, 100));
        assert_eq!(c.core().ssthresh, want);
        assert_eq!(c.core().ca_state, CaState::Recovery);
    }
    // β = 0.5 halves.
    let mut c = ctl(HtcpConfig::default());
    c.core_mut().cwnd = 1000;
    c.on_congestion_event(&loss(), &path(0, 100));
    assert_eq!(c.core().ssthresh, 500);
    // Floor of 2 segments.
    let mut c = ctl(HtcpConfig::default());
    c.core_mut().cwnd = 3;
    c.on_congestion_event(&loss(), &path(0, 100));
    assert_eq!(c.core().ssthresh, 2);
}

#[test]
fn ht_increase() {
    let cfg = HtcpConfig {
        use_rtt_scaling: false,
        ..Default::default()
    };
    let mut c = ctl(cfg);
    {
        let (core, p) = c.parts_mut();
        core.cwnd = 100;
        core.ssthresh = 50;
        core.cwnd_cnt = 0;
        p.st.beta = 0.8;
        p.st.alpha = 4.5;
    }
    // Δ = 2 s at every ACK, so α stays 4.5 when it is recomputed.
    let at = path(2000, 100);
    for i in 1..=23u32 {
        c.on_ack(&ack(1), &at);
        assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (100, i), "ACK {i}");
    }
    // 24th ACK: 23 · 4.5 = 103.5 ≥ 100.
    c.on_ack(&ack(1), &at);
    assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (101, 0));
    assert!(close(c.policy().alpha(), 4.5));
}

#[test]
fn increase_credits_pkts_acked_at_most_one_segment_per_ack() {
    let mut c = ctl(HtcpConfig::default());
    {
        let (core, p) = c.parts_mut();
        core.cwnd = 10;
        core.ssthresh = 5;
        p.st.alpha = 1.0;
    }
    // A 5-segment ACK in Open credits pkts_acked = 5.
    c.on_ack(&ack(5), &path(0, 100));
    assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (10, 5));
    c.on_ack(&ack(20), &path(0, 100));
    assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (10, 25));
    c.on_ack(&ack(20), &path(0, 100));
    assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (11, 0));
}

#[test]
fn slow_start_discards_leftover() {
    let mut c = ctl(HtcpConfig::default());
    c.core_mut().ssthresh = 11;
    c.on_ack(&ack(3), &path(0, 100));
    assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (11, 0));
    // Not cwnd-limited: no growth.
    let mut p = path(0, 100);
    p.cwnd_limited = false;
    c.core_mut().ssthresh = SSTHRESH_INF;
    c.on_ack(&ack(3), &p);
    assert_eq!(c.core().cwnd, 11);
}

#[test]
fn delta_is_measured_from_the_end_of_the_episode() {
    let mut c = ctl(HtcpConfig::default());
    c.core_mut().cwnd = 100;
    c.on_congestion_event(&loss(), &path(5000, 100));
    assert_eq!(c.policy().st.last_cong, Time::from_millis(5000));
    assert_eq!(c.policy().st.undo_last_cong, Some(Time::ZERO));
    c.on_recovery_exit(&path(6000, 100));
    assert_eq!(c.core().ca_state, CaState::Open);
    assert_eq!(c.policy().st.last_cong, Time::from_millis(6000));
    assert_eq!(c.policy().st.undo_last_cong, None);
    // A later Disorder → Open round trip does not move it.
    let mut p = path(7000, 100);
    p.ca_state = CaState::Disorder;
    c.on_ack(&ack(0), &p);
    c.on_ack(&ack(1), &path(7500, 100));
    assert_eq!(c.policy().st.last_cong, Time::from_millis(6000));
}

#[test]
fn rto_episode_ends_when_loss_state_is_left() {
    let mut c = ctl(HtcpConfig::default());
    c.core_mut().cwnd = 40;
    let mut p = path(3000, 100);
    p.in_flight = 0;
    c.on_rto(&p);
    assert_eq!((c.core().ssthresh, c.core().cwnd), (20, 1));
    assert_eq!(c.policy().st.last_cong, Time::from_millis(3000));
    // Still in the episode: snd_una < recover.
    c.on_ack(&ack(1), &path(3100, 100));
    assert_eq!(c.core().ca_state, CaState::Loss);
    let mut done = path(4000, 100);
    done.snd_una = 1_200;
    c.on_ack(&ack(1), &done);
    assert_eq!(c.core().ca_state, CaState::Open);
    assert_eq!(c.policy().st.last_cong, Time::from_millis(4000));
}

#[test]
fn undo_restores_last_cong_and_the_episode_copies() {
    let mut c = ctl(HtcpConfig::default());
    {
        let (core, p) = c.parts_mut();
        core.cwnd = 100;
        p.st.last_cong = Time::from_millis(500);
        p.st.min_rtt = Some(ms(100));
        p.st.max_rtt = ms(120);
        p.st.max_b = 900.0;
        p.st.old_max_b = 1000.0;
    }
    c.on_congestion_event(&loss(), &path(5000, 100));
    let st = &c.policy().st;
    assert_eq!(st.last_cong, Time::from_millis(5000));
    assert_eq!(st.max_rtt, ms(119)); // 100 + 0.95·20
    assert_eq!(st.old_max_b, 900.0);
    assert_eq!(c.core().ssthresh, 50);
    // The copies are taken on entering Recovery, i.e. after ssthresh() faded
    // max_rtt and rotated old_max_b (kernel order: ssthresh, then set_state).
    assert_eq!(st.undo_max_rtt, ms(119));
    assert_eq!(st.undo_old_max_b, 900.0);
    {
        // Changes made during the episode are rolled back by the undo.
        let (core, p) = c.parts_mut();
        core.cwnd = 60;
        p.st.max_rtt = ms(150);
        p.st.old_max_b = 5.0;
    }
    c.on_spurious_congestion(&path(5200, 100));
    let st = &c.policy().st;
    assert_eq!(c.core().cwnd, 100);
    assert_eq!(c.core().ca_state, CaState::Open);
    assert_eq!(st.last_cong, Time::from_millis(500));
    assert_eq!(st.max_rtt, ms(119));
    assert_eq!(st.old_max_b, 900.0);
    assert_eq!(st.undo_last_cong, None);
    // A second undo finds no copies: nothing moves.
    c.on_spurious_congestion(&path(5300, 100));
    assert_eq!(c.policy().st.last_cong, Time::from_millis(500));
}

#[test]
fn adaptive_beta_applies_from_the_third_stable_event() {
    let mut c = ctl(HtcpConfig::default());
    let mut betas = Vec::new();
    for i in 0..4u64 {
        {
            let (core, p) = c.parts_mut();
            core.cwnd = 100;
            p.st.min_rtt = Some(ms(80));
            p.st.max_rtt = ms(120);
            p.st.max_b = 1000.0;
        }
        let t = 10_000 * (i + 1);
        c.on_congestion_event(&loss(), &path(t, 100));
        betas.push((
            c.policy().beta(),
            c.policy().st.modeswitch,
            c.core().ssthresh,
        ));
        c.on_recovery_exit(&path(t + 100, 100));
    }
    assert_eq!(betas[0], (0.5, false, 50));
    assert_eq!(betas[1], (0.5, true, 50));
    assert!(close(betas[2].0, 80.0 / 120.0) && betas[2].1);
    assert_eq!(betas[2].2, 66);
    // An unstable throughput (+50 %) resets β and the mode switch.
    c.parts_mut().1.st.max_b = 1500.0;
    c.on_congestion_event(&loss(), &path(60_000, 100));
    assert_eq!((c.policy().beta(), c.policy().st.modeswitch), (0.5, false));
}

#[test]
fn max_rtt_tracks_growth_and_ignores_spikes() {
    let mut c = ctl(HtcpConfig::default());
    let p = path(0, 100);
    for (rtt_ms, want_max) in [(100, 100), (110, 110), (140, 110), (125, 125)] {
        c.on_ack(&ack_rtt(1, rtt_ms * 1000), &p);
        assert_eq!(c.policy().st.max_rtt, ms(want_max), "sample {rtt_ms}");
    }
    // Outside Open only the minimum moves.
    let mut d = path(0, 100);
    d.ca_state = CaState::Disorder;
    c.on_ack(&ack_rtt(1, 130_000), &d);
    c.on_ack(&ack_rtt(1, 90_000), &d);
    assert_eq!(c.policy().st.max_rtt, ms(125));
    assert_eq!(c.policy().st.min_rtt, Some(ms(90)));
    // A zero sample is ignored (kernel rtt_us > 0).
    c.on_ack(&ack_rtt(1, 0), &d);
    assert_eq!(c.policy().st.min_rtt, Some(ms(90)));
}

#[test]
fn throughput_estimator_resets_after_backoff_then_smooths() {
    let mut c = ctl(HtcpConfig::default());
    c.core_mut().cwnd = 20;
    c.core_mut().ssthresh = 10;
    let at = |t_ms: u64| {
        let mut p = path(t_ms, 100);
        p.cwnd_limited = false; // keep cwnd = 20
        p
    };
    // 1 segment every 5 ms = 200 segments/s; samples every 100 ms.
    for k in 1..=60u64 {
        c.on_ack(&ack_rtt(1, 100_000), &at(5 * k));
        if k == 20 {
            let st = &c.policy().st;
            assert_eq!((st.bi, st.min_b, st.max_b), (200.0, 200.0, 200.0));
            assert_eq!((st.packetcount, st.lasttime), (0, Time::from_millis(100)));
        }
    }
    // Then 2 segments every 5 ms: ccount = 4 > 3, so the EWMA applies.
    for k in 61..=80u64 {
        c.on_ack(&ack_rtt(2, 100_000), &at(5 * k));
    }
    let st = &c.policy().st;
    assert_eq!((st.bi, st.min_b, st.max_b), (250.0, 200.0, 250.0));
    assert_eq!(
        c.stats().bandwidth_estimate_bytes_per_sec,
        Some(250 * MSS as u64)
    );
    // Outside Open/Disorder the interval restarts.
    c.on_congestion_event(&loss(), &at(500));
    c.on_ack(&ack_rtt(1, 100_000), &at(510));
    let st = &c.policy().st;
    assert_eq!((st.packetcount, st.lasttime), (0, Time::from_millis(510)));
}

#[test]
fn congestion_avoidance_at_min_rtt_never_shrinks() {
    for cfg in [HtcpConfig::default(), linux()] {
        let mut c = ctl(cfg);
        c.core_mut().ssthresh = 10;
        let mut last = c.core().cwnd;
        for k in 0..20_000u64 {
            c.on_ack(&ack_rtt(1 + (k % 3) as u32, 80_000), &path(k, 80));
            assert!(c.core().cwnd >= last);
            last = c.core().cwnd;
        }
        assert!(last > 10);
    }
}

/// A tiny deterministic generator for the robustness test.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Drive `c` with `steps` pseudo-random calls of every kind (ACKs with
/// zero, huge and ordinary RTTs, losses, ECN, RTOs, undos, recovery exits,
/// idle restarts, initial windows, link hints, time jumps) and check the
/// window bounds and α after each. Shared with S-HTCP's tests.
pub(crate) fn drive_arbitrary<S: Shaping>(
    c: &mut PolicyController<HtcpPolicy<S>>,
    seed: u64,
    steps: usize,
) {
    let mut g = Lcg(seed);
    let mut now: u64 = 0;
    c.init(&path(0, 100));
    for _ in 0..steps {
        now = now.saturating_add(match g.next() % 5 {
            0 => 0,
            1 => g.next() % 10,
            2 => g.next() % 100_000,
            3 => g.next() % 100_000_000,
            _ => g.next() << 20,
        });
        let mut p = path(now, 100);
        p.in_flight = (g.next() % 3000) as u32;
        p.cwnd_limited = !g.next().is_multiple_of(4);
        p.snd_una = g.next() % 2000;
        p.ca_state = [CaState::Open, CaState::Disorder][(g.next() % 2) as usize];
        let rtt = match g.next() % 5 {
            0 => 0,
            1 => u64::MAX / 2_000,
            _ => g.next() % 1_000_000,
        };
        let mut ev = loss();
        ev.kind = [CongestionKind::Loss, CongestionKind::Ecn][(g.next() % 2) as usize];
        ev.is_persistent = g.next().is_multiple_of(8);
        match g.next() % 13 {
            0 => {
                c.on_congestion_event(&ev, &p);
            }
            1 => {
                c.on_rto(&p);
            }
            2 => c.on_spurious_congestion(&p),
            3 => c.on_recovery_exit(&p),
            4 => c.on_idle_restart(&p, ms(g.next() % 100_000)),
            5 => c.set_initial_window(g.next() % 10_000_000, &p),
            6 => {
                let hint = crate::types::LinkHint {
                    kind: crate::types::LinkHintKind::Blockage,
                    issued_at: p.now,
                    predicted_duration: Some(ms(g.next() % 1000)),
                    cqi: Some(0),
                    speed_mps: Some(f32::NAN),
                };
                c.on_link_hint(&hint, &p);
            }
            _ => c.on_ack(&ack_rtt((g.next() % 70) as u32, rtt), &p),
        }
        let core = c.core();
        assert!(core.cwnd >= 1 && core.cwnd <= core.cwnd_clamp);
        assert!(core.ssthresh >= 1);
        let a = c.policy().alpha();
        assert!(a.is_finite() && a > 0.0, "alpha {a}");
        let b = c.policy().beta();
        assert!((0.0..=1.0).contains(&b), "beta {b}");
        let _ = c.stats();
    }
}

#[test]
fn arbitrary_sequences_do_not_panic() {
    let extreme = HtcpConfig {
        beta_min: f64::NAN,
        beta_max: 7.0,
        rtt_scaling_min: -1.0,
        rtt_scaling_max: f64::INFINITY,
        rtt_scaling_ref_ms: 0,
        max_rtt_fade: 3.0,
        bandwidth_switch_tolerance: f64::NEG_INFINITY,
        linux_hz: 0,
        ..Default::default()
    };
    let extreme_linux = HtcpConfig {
        linux_compat: true,
        ..extreme.clone()
    };
    let configs = [HtcpConfig::default(), linux(), extreme, extreme_linux];
    for (seed, cfg) in configs.into_iter().enumerate() {
        drive_arbitrary(&mut cfg.build(), seed as u64 + 1, 20_000);
    }
}
