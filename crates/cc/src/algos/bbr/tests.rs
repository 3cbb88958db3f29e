//! BBR v1 unit tests: one per cc-spec §3.14 vector (the mode/phase table,
//! BB-1..BB-6) plus behaviour tests where the kernel semantics are subtle.

use super::update::Rs;
use super::*;
use crate::controller::CongestionController;
use crate::types::{CongestionEvent, CongestionKind, RateSample};

/// The vectors' MSS.
const MSS: u32 = 1000;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// An Open path at `now_ms` with SRTT = min RTT = 50 ms, 1000 segments delivered.
fn path_at(now_ms: u64) -> PathInfo {
    let mut p = PathInfo::new(Time::from_millis(now_ms), MSS);
    p.srtt = Some(ms(50));
    p.min_rtt = Some(ms(50));
    p.latest_rtt = Some(ms(50));
    p.delivered = 1000;
    p.in_flight = 100;
    p
}

/// A rate sample of `delivered` segments over `interval_ms`, sent when the
/// connection had delivered `prior_delivered`, acknowledging `acked`.
fn rate(delivered: u32, interval_ms: u64, prior_delivered: u64, acked: u32) -> RateSample {
    RateSample {
        delivered,
        interval: ms(interval_ms),
        prior_delivered,
        prior_in_flight: 100,
        acked_sacked: acked,
        rtt: Some(ms(50)),
        ..RateSample::default()
    }
}

fn ack_with(rs: RateSample, rtt_ms: Option<u64>) -> AckSample {
    AckSample {
        acked_segs: rs.acked_sacked,
        acked_bytes: rs.acked_sacked as u64 * MSS as u64,
        una_advanced: rs.acked_sacked > 0,
        prior_in_flight: rs.prior_in_flight,
        newly_lost: rs.losses,
        rtt: rtt_ms.map(ms),
        rate: Some(rs),
        ..AckSample::default()
    }
}

/// A controller in `mode` with bw = 1000 segments/s, min RTT 50 ms (BDP 50),
/// cwnd 100 and the mode's gains and pacing rate.
fn steady(mode: BbrMode, cycle_idx: usize) -> (PolicyController<Bbr>, PathInfo) {
    let mut c = BbrConfig::default().build();
    let path = path_at(0);
    c.init(&path);
    let (core, b) = c.parts_mut();
    b.bw_filter.update(0, Bw::from_segs_per_sec(1000.0).raw());
    b.min_rtt = Some(ms(50));
    b.mode = mode;
    b.cycle_idx = cycle_idx;
    b.full_bw_reached = mode != BbrMode::Startup;
    b.update_gains();
    b.pacing_rate_bytes_per_sec = b.bw_to_pacing_rate(b.bw(), b.pacing_gain_x256);
    core.cwnd = 100;
    core.pacing_rate = Some(b.pacing_rate_bytes_per_sec);
    (c, path)
}

fn assert_rel(a: f64, b: f64) {
    assert!(((a - b) / b).abs() < 1e-9, "{a} vs {b}");
}

#[test]
fn bb_table_modes_and_phases() {
    // (mode, cycle_idx, pacing gain, pacing rate B/s, target cwnd, inflight(bw, 1))
    let rows = [
        (BbrMode::Startup, 0, 2.88671875, 2_857_851.562_5, 152, 56),
        (BbrMode::Drain, 0, 0.34375, 340_312.5, 152, 56),
        (BbrMode::ProbeBw, 3, 1.0, 990_000.0, 106, 56),
        (BbrMode::ProbeBw, 0, 1.25, 1_237_500.0, 108, 58),
        (BbrMode::ProbeBw, 1, 0.75, 742_500.0, 106, 56),
    ];
    for (mode, idx, gain, rate_bps, target, inflight1) in rows {
        let (c, _) = steady(mode, idx);
        let b = c.policy();
        let what = format!("{mode:?} phase {idx}");
        assert_eq!(b.pacing_gain(), gain, "{what}");
        let bw = b.bw();
        assert_rel(bw.bytes_per_sec_f64(MSS, b.pacing_gain_x256, 1), rate_bps);
        assert_eq!(
            b.pacing_rate_bytes_per_sec(),
            rate_bps.floor() as u64,
            "{what}"
        );
        assert_eq!(b.quantum(), 2, "{what}");
        assert_eq!(b.target_cwnd(bw, b.cwnd_gain_x256), target, "{what}");
        assert_eq!(b.inflight(bw, GAIN_UNIT), inflight1, "{what}");
    }
    // Startup's target: ceil(144.34) = 145, + 3·2 = 151, even → 152.
    let (c, _) = steady(BbrMode::Startup, 0);
    assert_eq!(c.policy().bdp(c.policy().bw(), 739), 145);
}

/// Drives rounds through the public trait: each ACK delivers 10 segments and
/// either starts a packet-timed round or not.
struct Driver {
    c: PolicyController<Bbr>,
    path: PathInfo,
    next_round: u64,
}

impl Driver {
    fn new() -> Driver {
        let mut c = BbrConfig::default().build();
        let path = path_at(0);
        c.init(&path); // the first round ends once delivered reaches 1000
        Driver {
            c,
            path,
            next_round: 1000,
        }
    }
    /// One ACK carrying a sample of `bw` segments/s.
    fn ack(&mut self, bw: u32, new_round: bool, app_limited: bool) {
        self.path.now += ms(10);
        let prior = if new_round {
            self.next_round
        } else {
            self.next_round - 1
        };
        self.path.delivered += 10;
        if new_round {
            self.next_round = self.path.delivered;
        }
        let mut rs = rate(bw, 1000, prior, 10);
        rs.is_app_limited = app_limited;
        let a = ack_with(rs, Some(50));
        self.c.on_ack(&a, &self.path);
    }
    fn round(&self) -> u64 {
        self.c.policy().round_count()
    }
}

fn bw(segs_per_sec: f64) -> Bw {
    Bw::from_segs_per_sec(segs_per_sec)
}

#[test]
fn bb1_full_pipe_detection() {
    let mut d = Driver::new();
    let steps = [
        (10, 10, 0),
        (20, 20, 0),
        (30, 30, 0),
        (35, 30, 1),
        (40, 40, 0),
        (42, 40, 1),
        (43, 40, 2),
        (43, 40, 3),
    ];
    for (i, (max_bw, full_bw, cnt)) in steps.into_iter().enumerate() {
        d.ack(max_bw, true, false);
        let b = d.c.policy();
        assert_eq!(b.round_count(), i as u64 + 1);
        assert_eq!(b.max_bw(), bw(max_bw as f64), "round {}", i + 1);
        assert_eq!(b.full_bw, bw(full_bw as f64), "round {}", i + 1);
        assert_eq!(b.full_bw_cnt, cnt, "round {}", i + 1);
        assert_eq!(b.full_bw_reached(), i == 7, "round {}", i + 1);
        let mode = if i == 7 { "drain" } else { "startup" };
        assert_eq!(d.c.stats().mode, Some(mode));
    }
    // DRAIN sets ssthresh = inflight(max_bw, 1) = budget(ceil(43·0.05) = 3)
    // with the quantum of STARTUP's pacing rate (2): 3 + 6 → 10.
    assert_eq!(d.c.core().ssthresh, 10);
    assert_eq!(d.c.policy().pacing_gain(), 88.0 / 256.0);
}

#[test]
fn bb2_bw_max_filter_ten_rounds() {
    let mut d = Driver::new();
    let samples = [
        (0, 100, 100),
        (1, 90, 100),
        (2, 95, 100),
        (3, 80, 100),
        (5, 85, 100),
        (9, 60, 100),
        (10, 70, 100),
        (11, 50, 85),
        (23, 20, 20),
    ];
    for (round, value, want) in samples {
        // App-limited low samples advance rounds without feeding the filter.
        while d.round() + 1 < round {
            d.ack(1, true, true);
        }
        d.ack(value, round > 0, false);
        assert_eq!(d.round(), round);
        assert_eq!(d.c.policy().max_bw(), bw(want as f64), "round {round}");
    }
}

#[test]
fn bb3_probe_up_phase_exit() {
    let (mut c, mut p) = steady(BbrMode::ProbeBw, 0);
    let b = c.policy();
    // inflight(bw, 1.25) = budget(ceil(62.5) = 63) = 70, + 2 in phase 0 = 72.
    assert_eq!(b.bdp(b.bw(), 320), 63);
    assert_eq!(b.inflight(b.bw(), 320), 72);
    let t0 = Time::from_millis(1000);
    c.policy_mut().cycle_stamp = t0;
    let up = |prior_in_flight: u32, losses: u32| AckSample {
        acked_segs: 1,
        una_advanced: true,
        prior_in_flight,
        newly_lost: losses,
        ..AckSample::default()
    };
    // Not yet a full min RTT (50 ms): stay, however much is in flight.
    p.now = t0 + ms(50);
    c.on_ack(&up(200, 0), &p);
    assert_eq!(c.policy().cycle_idx(), 0);
    // After > 50 ms, 71 in flight and no loss is not enough…
    p.now = t0 + ms(51);
    c.on_ack(&up(71, 0), &p);
    assert_eq!(c.policy().cycle_idx(), 0);
    // …72 is.
    c.on_ack(&up(72, 0), &p);
    assert_eq!(c.policy().cycle_idx(), 1);
    assert_eq!(c.policy().pacing_gain(), 0.75);
    assert_eq!(c.policy().cycle_stamp, p.now);
    // A loss also ends the phase after a full min RTT.
    let (mut c, mut p) = steady(BbrMode::ProbeBw, 0);
    c.policy_mut().cycle_stamp = t0;
    p.now = t0 + ms(51);
    c.on_ack(&up(10, 1), &p);
    assert_eq!(c.policy().cycle_idx(), 1);
}

fn loss_event(in_flight: u32) -> CongestionEvent {
    CongestionEvent {
        kind: CongestionKind::Loss,
        now: Time::ZERO,
        is_persistent: false,
        lost_segs: 3,
        in_flight,
        lost_sent_at: None,
    }
}

#[test]
fn bb4_recovery_conservation_and_restore() {
    let (mut c, mut p) = steady(BbrMode::ProbeBw, 3);
    c.core_mut().ssthresh = 56; // as DRAIN leaves it
    p.now = Time::from_millis(100);
    c.on_congestion_event(&loss_event(93), &p);
    assert_eq!(c.policy().prior_cwnd(), 100, "saved by ssthresh()");
    assert_eq!(c.core().cwnd, 100);
    // The steps of the first recovery ACK, one at a time.
    let mut rs = rate(2, 50, 990, 2);
    rs.losses = 3;
    let rsb = Rs::from_ack(&ack_with(rs.clone(), Some(50)), None);
    let mut probe = c.policy().clone();
    p.in_flight = 90;
    let (cwnd, conserving) = probe.recover_or_restore(100, &rsb, CaState::Open, &p);
    assert_eq!((cwnd, conserving), (97, false), "losses are deducted first");
    let mut probe = c.policy().clone();
    let (cwnd, conserving) = probe.recover_or_restore(100, &rsb, CaState::Recovery, &p);
    assert_eq!((cwnd, conserving), (92, true));
    // The same ACK through the trait.
    p.ca_state = CaState::Recovery;
    c.on_ack(&ack_with(rs, Some(50)), &p);
    assert_eq!(c.core().cwnd, 92);
    assert!(c.policy().packet_conservation);
    // Later in the first round: at least in_flight + acked.
    p.in_flight = 95;
    c.on_ack(&ack_with(rate(1, 50, 991, 1), Some(50)), &p);
    assert_eq!(c.core().cwnd, 96);
    // Recovery exit keeps BBR's cwnd (the kernel skips cwnd = ssthresh).
    c.on_recovery_exit(&p);
    assert_eq!(c.core().cwnd, 96);
    // The next ACK restores max(cwnd, prior_cwnd) = 100, then grows toward 106.
    p.ca_state = CaState::Open;
    c.on_ack(&ack_with(rate(1, 50, 992, 1), Some(50)), &p);
    assert!(!c.policy().packet_conservation);
    assert_eq!(c.core().cwnd, 101);
}

#[test]
fn bb5_probe_rtt_cycle() {
    let (mut c, mut p) = steady(BbrMode::ProbeBw, 3);
    c.core_mut().cwnd = 106;
    assert_eq!(c.policy().min_rtt_stamp(), Time::ZERO);
    let a = |acked: u32, prior_delivered: u64| {
        ack_with(rate(acked, 50, prior_delivered, acked), Some(50))
    };
    let none = AckSample::default();
    // At exactly 10 s the filter has not expired yet.
    p.now = Time::from_millis(10_000);
    c.on_ack(&none, &p);
    assert_eq!(c.core().cwnd, 106);
    assert_eq!(c.stats().mode, Some("probe_bw"));
    // The first ACK after 10 s enters PROBE_RTT.
    p.now = Time::from_millis(10_001);
    c.on_ack(&a(1, 999), &p);
    assert_eq!(c.stats().mode, Some("probe_rtt"));
    assert_eq!(c.policy().prior_cwnd(), 106);
    assert_eq!(c.core().cwnd, 4);
    assert_eq!(c.policy().pacing_gain(), 1.0);
    // In flight drains to 4 at 10.05 s: done at 10.25 s, a new round starts.
    p.now = Time::from_millis(10_050);
    p.in_flight = 4;
    p.delivered = 1100;
    c.on_ack(&a(1, 999), &p);
    assert_eq!(
        c.policy().probe_rtt_done_stamp,
        Some(Time::from_millis(10_250))
    );
    assert!(!c.policy().probe_rtt_round_done);
    let round = c.policy().round_count();
    // That round completes at 10.1 s (a packet sent after 10.05 s is ACKed).
    p.now = Time::from_millis(10_100);
    p.delivered = 1104;
    c.on_ack(&a(4, 1100), &p);
    assert_eq!(c.policy().round_count(), round + 1);
    assert!(c.policy().probe_rtt_round_done);
    assert_eq!(c.stats().mode, Some("probe_rtt"));
    // Not at 10.25 s itself…
    p.now = Time::from_millis(10_250);
    c.on_ack(&a(1, 1101), &p);
    assert_eq!(c.stats().mode, Some("probe_rtt"));
    // …but on the first ACK after it (this one acknowledges nothing new).
    p.now = Time::from_millis(10_251);
    c.on_ack(&none, &p);
    assert_eq!(c.stats().mode, Some("probe_bw"));
    assert_eq!(c.core().cwnd, 106);
    assert_eq!(c.policy().min_rtt_stamp(), p.now);
    assert_ne!(c.policy().cycle_idx(), 1, "never starts in the 3/4 phase");
}

#[test]
fn bb6_fixed_point_gains() {
    let cfg = BbrConfig::default();
    assert_eq!(cfg.high_gain_x256, 256 * 2885 / 1000 + 1);
    assert_eq!(cfg.high_gain_x256, 739);
    assert_eq!(cfg.drain_gain_x256, 256 * 1000 / 2885);
    assert_eq!(cfg.drain_gain_x256, 88);
    assert_rel(cfg.high_gain_x256 as f64 / 256.0, 2.88671875);
    assert_rel(cfg.drain_gain_x256 as f64 / 256.0, 0.34375);
    assert_eq!(
        cfg.pacing_gain_cycle_x256,
        [320, 192, 256, 256, 256, 256, 256, 256]
    );
}

#[test]
fn init_pacing_from_srtt_and_ssthresh_infinite() {
    let mut c = BbrConfig::default().build();
    c.init(&path_at(0));
    // 739/256 · 10 segments / 50 ms · 1000 B · 0.99 = 571,570.3125 B/s.
    assert_eq!(c.pacing_rate_bytes_per_sec(), Some(571_570));
    assert_eq!(c.ssthresh_bytes(), None);
    assert!(c.in_slow_start());
    assert_eq!(c.stats().mode, Some("startup"));
    assert_eq!(c.stats().bandwidth_estimate_bytes_per_sec, None);
    // Without an SRTT: 1 ms nominal, re-initialised once an SRTT is known.
    let mut c = BbrConfig::default().build();
    let mut p = path_at(0);
    p.srtt = None;
    p.min_rtt = None;
    c.init(&p);
    assert_eq!(c.pacing_rate_bytes_per_sec(), Some(28_578_515));
    assert!(!c.policy().has_seen_rtt);
    c.on_ack(&ack_with(rate(1, 50, 0, 1), Some(50)), &path_at(50));
    assert!(c.policy().has_seen_rtt);
}

#[test]
fn startup_pacing_never_decreases() {
    let (mut c, p) = steady(BbrMode::Startup, 0);
    let before = c.policy().pacing_rate_bytes_per_sec();
    // A much lower (non-app-limited) sample: the max filter keeps 1000, and
    // even a lower computed rate would not be applied before the pipe is full.
    c.policy_mut().bw_filter.clear();
    c.on_ack(&ack_with(rate(10, 1000, 999, 1), Some(50)), &p);
    assert_eq!(c.policy().pacing_rate_bytes_per_sec(), before);
}

#[test]
fn drain_exits_to_probe_bw_when_inflight_fits() {
    let (mut c, mut p) = steady(BbrMode::Drain, 0);
    p.in_flight = 57;
    c.on_ack(&ack_with(rate(50, 50, 999, 1), Some(50)), &p);
    assert_eq!(c.stats().mode, Some("drain"));
    p.in_flight = 56;
    c.on_ack(&ack_with(rate(50, 50, 999, 1), Some(50)), &p);
    assert_eq!(c.stats().mode, Some("probe_bw"));
    assert_ne!(c.policy().cycle_idx(), 1);
}

#[test]
fn random_start_phase_is_seeded_and_skips_down_phase() {
    let mut seen = [false; 8];
    for seed in 0..200u64 {
        let mut b = Bbr::new(BbrConfig {
            random_seed: seed,
            ..BbrConfig::default()
        });
        b.reset_probe_bw_mode();
        seen[b.cycle_idx()] = true;
        let mut again = Bbr::new(BbrConfig {
            random_seed: seed,
            ..BbrConfig::default()
        });
        again.reset_probe_bw_mode();
        assert_eq!(b.cycle_idx(), again.cycle_idx(), "deterministic");
    }
    assert_eq!(seen, [true, false, true, true, true, true, true, true]);
}

#[test]
fn rto_then_restore_prior_cwnd() {
    let (mut c, mut p) = steady(BbrMode::ProbeBw, 3);
    p.in_flight = 0;
    c.on_rto(&p);
    assert_eq!(c.core().cwnd, 1);
    assert_eq!(c.policy().prior_cwnd(), 100);
    assert_eq!(c.policy().prev_ca_state, CaState::Loss);
    assert_eq!(c.policy().full_bw, Bw::ZERO);
    // The episode ends: the first Open ACK restores the saved window.
    p.ca_state = CaState::Open;
    p.snd_una = 2_000;
    c.on_ack(&ack_with(rate(1, 50, 999, 1), Some(50)), &p);
    assert_eq!(c.core().cwnd, 101);
}

#[test]
fn idle_restart_in_probe_bw_paces_at_bw() {
    let (mut c, p) = steady(BbrMode::ProbeBw, 0);
    assert_eq!(c.pacing_rate_bytes_per_sec(), Some(1_237_500));
    c.on_idle_restart(&p, Duration::from_secs(2));
    assert_eq!(c.pacing_rate_bytes_per_sec(), Some(990_000));
    assert!(c.policy().idle_restart);
    assert_eq!(c.stats().bandwidth_estimate_bytes_per_sec, Some(1_000_000));
}

#[test]
fn ack_aggregation_buckets() {
    let mut agg = AckAggregation::default();
    let bw = bw(1000.0);
    let t = Time::from_millis;
    agg.update(false, 5, t(10), bw, 20, 1 << 20, 100);
    assert_eq!((agg.epoch_start, agg.extra_acked_segs), (t(10), [20, 0]));
    agg.update(false, 5, t(20), bw, 5, 1 << 20, 100); // 25 acked, 10 expected
    assert_eq!((agg.epoch_acked_segs, agg.extra_acked_segs[0]), (25, 20));
    agg.update(false, 5, t(40), bw, 5, 1 << 20, 100); // behind: restart the epoch
    assert_eq!((agg.epoch_start, agg.epoch_acked_segs), (t(40), 5));
    agg.update(false, 5, t(40), bw, 500, 1 << 20, 100); // capped at cwnd
    assert_eq!(agg.max_extra_acked(), 100);
    for _ in 0..5 {
        agg.update(true, 5, t(40), bw, 1, 1 << 20, 100);
    }
    assert_eq!(agg.win_idx, 1);
    assert_eq!(agg.max_extra_acked(), 100, "the older bucket still counts");
}

#[test]
fn long_term_policer_detection() {
    let (mut c, mut p) = steady(BbrMode::ProbeBw, 3);
    // Sampling starts at the first loss; two lossy intervals of 4 rounds
    // follow, each delivering at 1000 segments/s with ≥ 30 % loss.
    let mut prior = 1000;
    for _interval in 0..2 {
        for round in 0..5u64 {
            p.now += ms(25);
            p.delivered += 25;
            let mut rs = rate(25, 50, prior, 25);
            prior = p.delivered;
            rs.losses = match round {
                0 => 15,
                4 => 30,
                _ => 0,
            };
            c.on_ack(&ack_with(rs, Some(50)), &p);
        }
    }
    let b = c.policy();
    assert!(b.lt_use_bw(), "policed");
    assert_eq!(b.pacing_gain(), 1.0);
    let lt = b.bw().segs_per_sec();
    assert!((lt - 1000.0).abs() < 1.0, "lt_bw {lt}");
    // After 48 PROBE_BW rounds BBR stops using lt_bw and restarts cycling.
    for _ in 0..48 {
        p.now += ms(25);
        p.delivered += 25;
        c.on_ack(&ack_with(rate(25, 50, prior, 25), Some(50)), &p);
        prior = p.delivered;
    }
    assert!(!c.policy().lt_use_bw());
}

#[test]
fn quantum_rules() {
    let kernel = QuantumRule {
        fixed_segs: None,
        pacing_shift: 10,
        max_bytes: 65_215,
        max_segs: 127,
        min_tso_rate_bytes_per_sec: 150_000,
    };
    assert_eq!(kernel.quantum(149_999, 1000), 1);
    assert_eq!(kernel.quantum(150_000, 1000), 2);
    assert_eq!(kernel.quantum(10_240_000, 1000), 10);
    assert_eq!(kernel.quantum(u64::MAX, 100), 127);
    let ns3 = QuantumRule {
        fixed_segs: Some(1),
        ..kernel
    };
    assert_eq!(ns3.quantum(10_240_000, 1000), 1);
    assert_eq!(budget(50, 2, false), 56);
    assert_eq!(budget(u32::MAX, 127, true), u32::MAX);
}

#[test]
fn initial_window_seeds_cwnd_and_pacing() {
    let mut c = BbrConfig::default().build();
    c.init(&path_at(0));
    c.set_initial_window(40_000, &path_at(0));
    assert_eq!(c.core().cwnd, 40);
    assert_eq!(c.ssthresh_bytes(), None);
    assert_eq!(c.pacing_rate_bytes_per_sec(), Some(4 * 571_570 + 1));
}

#[test]
fn a_startup_measurement_seeds_the_bandwidth_estimate() {
    let mut c = BbrConfig::default().build();
    c.init(&path_at(0));
    assert_eq!(c.policy().max_bw(), Bw::ZERO);
    // 2,000 segments/s measured (2 MB/s with 1000-byte segments), RTT 50 ms.
    let m = crate::types::StartupMeasurement {
        bandwidth_bytes_per_sec: 2_000_000,
        rtt: ms(50),
        window_bytes: 100_000,
        pipe_bytes: 100_000,
    };
    c.on_startup_measurement(&m, &path_at(50));
    assert_rel(c.policy().max_bw().segs_per_sec(), 2000.0);
    assert_eq!(c.core().cwnd, 100);
    // STARTUP paces at high gain × the measured rate (1 % margin).
    let want =
        Bw::from_segs_per_sec(2000.0).bytes_per_sec(MSS, BbrConfig::default().high_gain_x256, 1);
    assert_eq!(c.pacing_rate_bytes_per_sec(), Some(want));
    assert!(c.stats().bandwidth_estimate_bytes_per_sec.is_some());
}

#[test]
fn probe_bw_cwnd_moves_to_target() {
    // Full pipe: cwnd = min(cwnd + acked, target) — it snaps down from above.
    let (mut c, p) = steady(BbrMode::ProbeBw, 3);
    c.core_mut().cwnd = 120;
    c.on_ack(&ack_with(rate(50, 50, 999, 2), Some(50)), &p);
    // Target 106 plus the aggregation allowance: these 2 segments arrived in
    // a zero-length epoch, so budget(100 + 2) = 108.
    assert_eq!(c.policy().ack_aggregation_cwnd(), 2);
    assert_eq!(c.core().cwnd, 108);
    c.core_mut().cwnd = 100;
    c.on_ack(&ack_with(rate(50, 50, 999, 2), Some(50)), &p);
    assert_eq!(c.core().cwnd, 102);
    // Never below the 4-segment minimum target.
    c.core_mut().cwnd = 1;
    c.policy_mut().bw_filter.clear();
    c.policy_mut().bw_filter.update(0, 1);
    c.on_ack(&ack_with(rate(0, 50, 999, 1), Some(50)), &p);
    assert_eq!(c.core().cwnd, 4);
}

mod props;
