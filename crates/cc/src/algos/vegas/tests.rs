//! Unit tests for Vegas: one per spec vector VG-1..VG-6, plus behaviour tests.

use super::test_support::{at, drive_round, loss, never_shrinks_at_min_rtt, stress};
use super::*;
use crate::controller::CongestionController;
use crate::testutil::{ack, ack_rtt};
use crate::types::SSTHRESH_INF;

fn vegas(cfg: VegasConfig) -> PolicyController<Vegas> {
    let mut c = cfg.build();
    c.init(&at(1000, 1100));
    c
}

fn state(c: &PolicyController<Vegas>) -> (u32, u32) {
    (c.core().cwnd, c.core().ssthresh)
}

#[test]
fn vg1_hold_inside_alpha_beta() {
    let mut c = vegas(VegasConfig::default());
    drive_round(&mut c, 100, 112, 3, 20, 15);
    assert_eq!(c.policy().diff_segs(), Some(2.0));
    assert_eq!(c.core().cwnd, 20);
}

#[test]
fn vg2_decrease_above_beta() {
    let mut c = vegas(VegasConfig::default());
    drive_round(&mut c, 100, 130, 3, 20, 15);
    assert_eq!(c.policy().diff_segs(), Some(5.0));
    // cwnd 19; ssthresh min(15, 19) = 15, then max(15, 9 + 4) = 15.
    assert_eq!(state(&c), (19, 15));
}

#[test]
fn vg3_increase_below_alpha() {
    let mut c = vegas(VegasConfig::default());
    drive_round(&mut c, 100, 104, 3, 20, 15);
    assert_eq!(c.policy().diff_segs(), Some(0.0));
    assert_eq!(c.core().cwnd, 21);
}

#[test]
fn vg4_diff_form_disagreement() {
    let mut c = vegas(VegasConfig::default());
    drive_round(&mut c, 100, 109, 3, 50, 40);
    assert_eq!(c.policy().diff_segs(), Some(4.0));
    assert_eq!(c.core().cwnd, 50, "kernel form holds");
    let mut c = vegas(VegasConfig {
        diff_form: DiffForm::Paper,
        ..Default::default()
    });
    drive_round(&mut c, 100, 109, 3, 50, 40);
    let Some(diff) = c.policy().diff_segs() else {
        panic!("the round had 3 samples: diff must be computed")
    };
    let want = 50.0 * 9000.0 / 109_001.0;
    assert!((diff - want).abs() <= want * 1e-9, "paper diff {diff}");
    assert_eq!(c.core().cwnd, 49, "paper form 4.13 > 4 decreases");
}

#[test]
fn vg5_slow_start_exit() {
    let mut c = vegas(VegasConfig::default());
    drive_round(&mut c, 100, 110, 3, 64, SSTHRESH_INF);
    assert_eq!(c.policy().diff_segs(), Some(6.0));
    // target = floor(64·100001/110001) = 58 → cwnd 59, ssthresh 59.
    assert_eq!(state(&c), (59, 59));
    assert!(!c.in_slow_start());
}

#[test]
fn vg6_two_samples_is_newreno() {
    // CA: Reno's cong_avoid_ai would give +1 here; Vegas (diff 5) would give −1.
    let mut c = vegas(VegasConfig::default());
    drive_round(&mut c, 100, 130, 2, 20, 15);
    assert_eq!(c.policy().diff_segs(), None);
    assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (20, 1));
    c.core_mut().cwnd_cnt = 19;
    c.on_ack(&ack_rtt(1, 130_000), &at(1250, 1300));
    c.on_ack(&ack(1), &at(1301, 1400)); // round end with cnt = 1
    assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (21, 0));
    // Slow start: NewReno growth by the ACK's segments, no Vegas exit.
    let mut c = vegas(VegasConfig::default());
    drive_round(&mut c, 100, 130, 2, 10, SSTHRESH_INF);
    assert_eq!(state(&c), (11, SSTHRESH_INF));
}

#[test]
fn rtt_sample_gets_one_microsecond() {
    let mut c = vegas(VegasConfig::default());
    c.on_ack(&ack_rtt(1, 0), &at(1050, 1100));
    assert_eq!(c.policy().base_rtt(), Some(Duration::from_micros(1)));
    c.on_ack(&ack_rtt(1, 100_000), &at(1060, 1100));
    assert_eq!(c.policy().base_rtt(), Some(Duration::from_micros(1)));
}

#[test]
fn idle_restart_forgets_base_rtt() {
    let mut c = vegas(VegasConfig::default());
    c.on_ack(&ack_rtt(1, 50_000), &at(1050, 1100));
    assert_eq!(c.policy().base_rtt(), Some(Duration::from_micros(50_001)));
    c.on_idle_restart(&at(1050, 1100), Duration::from_secs(5));
    assert_eq!(c.policy().base_rtt(), None);
    assert_eq!(c.policy().state.rtt.cnt, 0);
    assert_eq!(c.policy().state.round.beg_snd_nxt, 1100);
}

#[test]
fn no_growth_inside_a_round_in_ca() {
    let mut c = vegas(VegasConfig::default());
    drive_round(&mut c, 100, 100, 3, 20, 15);
    assert_eq!(c.core().cwnd, 21);
    for una in 1210..1300 {
        c.on_ack(&ack_rtt(1, 100_000), &at(una, 1300));
    }
    assert_eq!((c.core().cwnd, c.core().cwnd_cnt), (21, 0));
}

#[test]
fn reno_outside_open_and_reenabled_on_open() {
    let mut c = vegas(VegasConfig::default());
    c.core_mut().cwnd = 20;
    c.on_congestion_event(&loss(), &at(1050, 1100));
    assert!(!c.policy().is_active());
    assert_eq!(c.core().ssthresh, 10, "Reno halving on loss (kernel)");
    c.on_recovery_exit(&at(1101, 1200));
    assert!(c.policy().is_active());
    assert_eq!(c.policy().state.round.beg_snd_nxt, 1200);
    // Loss state: Reno growth (slow start from 1).
    let mut p = at(1101, 1200);
    p.in_flight = 0;
    c.on_rto(&p);
    assert_eq!((c.core().cwnd, c.core().ssthresh), (1, 5));
    assert!(!c.policy().is_active());
    c.on_ack(&ack(2), &at(1103, 1200));
    assert_eq!(c.core().cwnd, 3);
}

#[test]
fn survives_arbitrary_calls() {
    for form in [DiffForm::Kernel, DiffForm::Paper] {
        for seed in 1..6 {
            let mut c = VegasConfig {
                diff_form: form,
                ..Default::default()
            }
            .build();
            let (mut adjusted, mut last) = (0, None);
            stress(&mut c, seed, |c| {
                let d = c.policy().diff_segs();
                if d.is_some() && d != last {
                    adjusted += 1;
                }
                last = d;
            });
            assert!(adjusted > 10, "delay rule reached {adjusted} times");
        }
    }
}

#[test]
fn never_shrinks_when_rtt_stays_at_minimum() {
    never_shrinks_at_min_rtt(&mut VegasConfig::default().build());
}
