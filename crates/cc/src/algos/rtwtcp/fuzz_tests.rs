//! Seeded random call sequences never panic and keep the window in bounds,
//! for RTW-TCP and the CUBIC variants it is built on.

use super::*;
use crate::algos::cubic::SlowStartExit;
use crate::controller::CongestionController;

/// SplitMix64 ([`crate::splitmix`]): a tiny seeded generator
/// (deterministic test input).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let out = crate::splitmix::mix64(self.0);
        self.0 = self.0.wrapping_add(crate::splitmix::GOLDEN_GAMMA);
        out
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    /// Mostly small values, sometimes zero or huge.
    fn wild(&mut self, small: u64) -> u64 {
        match self.below(10) {
            0 => 0,
            1 => u64::MAX,
            2 => self.next(),
            _ => self.below(small),
        }
    }
}

fn controllers() -> Vec<Box<dyn CongestionController>> {
    let cubic = |exit| CubicConfig {
        slow_start_exit: exit,
        ..Default::default()
    };
    let reactive = RtwTcpConfig {
        freeze_on_hint: false,
        ..Default::default()
    };
    vec![
        Box::new(RtwTcpConfig::default().build()),
        Box::new(reactive.build()),
        Box::new(cubic(SlowStartExit::HyStartPlusPlus).build()),
        Box::new(cubic(SlowStartExit::LinuxHyStart).build()),
        Box::new(cubic(SlowStartExit::None).build()),
    ]
}

fn step(cc: &mut dyn CongestionController, rng: &mut Rng, path: &mut PathInfo) {
    path.now += Duration::from_millis(rng.below(300));
    path.srtt = rng
        .chance(90)
        .then(|| Duration::from_micros(rng.wild(200_000)));
    path.min_rtt = path.srtt.map(|s| s / 2);
    path.latest_rtt = path.srtt;
    path.rto = Duration::from_millis(rng.below(3_000));
    path.in_flight = rng.wild(300) as u32;
    match rng.below(12) {
        0..=4 => {
            let segs = rng.wild(200) as u32;
            let una_advanced = rng.chance(80);
            if una_advanced {
                path.snd_una = path.snd_una.saturating_add(u64::from(segs));
                path.snd_nxt = path.snd_nxt.max(path.snd_una).saturating_add(3);
            }
            let a = AckSample {
                acked_segs: segs,
                rtt: rng
                    .chance(80)
                    .then(|| Duration::from_micros(rng.wild(500_000))),
                una_advanced,
                ..AckSample::default()
            };
            cc.on_ack(&a, path);
        }
        5 => {
            let ev = CongestionEvent {
                kind: if rng.chance(30) {
                    CongestionKind::Ecn
                } else {
                    CongestionKind::Loss
                },
                now: path.now,
                is_persistent: rng.chance(10),
                lost_segs: 1,
                in_flight: path.in_flight,
                lost_sent_at: None,
            };
            cc.on_congestion_event(&ev, path);
        }
        6 => cc.on_recovery_exit(path),
        7 => {
            cc.on_rto(path);
            let _ = cc.held_rto_timeout(path.now);
        }
        8 => cc.on_spurious_congestion(path),
        9 => match rng.below(3) {
            0 => cc.on_idle_restart(path, Duration::from_millis(rng.wild(10_000))),
            1 => cc.on_packet_sent(path, 1448),
            _ => cc.set_initial_window(rng.wild(1_000_000), path),
        },
        _ => {
            let kinds = [
                LinkHintKind::Blockage,
                LinkHintKind::Deafness,
                LinkHintKind::BeamMisalignment,
                LinkHintKind::Handover,
                LinkHintKind::CongestionFree,
            ];
            let speeds = [
                None,
                Some(f32::NAN),
                Some(0.0),
                Some(-3.0),
                Some(15.0),
                Some(1e38),
            ];
            let h = LinkHint {
                kind: kinds[rng.below(5) as usize],
                issued_at: path.now - Duration::from_millis(rng.below(2_000)),
                predicted_duration: rng
                    .chance(60)
                    .then(|| Duration::from_millis(rng.wild(5_000))),
                cqi: rng.chance(50).then(|| rng.below(16) as u8),
                speed_mps: speeds[rng.below(6) as usize],
            };
            cc.on_link_hint(&h, path);
        }
    }
}

#[test]
fn random_sequences_keep_bounds() {
    for seed in 0..400u64 {
        for mut cc in controllers() {
            let mut rng = Rng(seed);
            let mut path = PathInfo::new(Time::ZERO, 1448);
            cc.init(&path);
            for _ in 0..300 {
                step(cc.as_mut(), &mut rng, &mut path);
                let segs = cc.cwnd_bytes() / 1448;
                assert!(segs >= 1, "seed {seed}: cwnd {segs}");
                let _ = cc.send_gate(path.now);
                let _ = cc.stats();
            }
        }
    }
}
