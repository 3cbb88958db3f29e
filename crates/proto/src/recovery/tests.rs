//! The connection's recovery duties (cc-spec §2.1–§2.2) on a scripted
//! sequence of sends and ACKs.

use super::*;
use crate::wire::{AckPayload, AckRange};
use peregrine_cc::CcConfig;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}
fn at(v: u64) -> Time {
    Time::from_millis(v)
}

const MSS: u32 = 1000;

fn recovery(name: &str) -> Recovery {
    let cc = CcConfig::from_name(name).expect("registered").build();
    let mut r = Recovery::new(
        RecoveryConfig {
            mss: MSS,
            initial_rto: Duration::from_secs(1),
            min_rto: ms(200),
            max_rto: Duration::from_secs(60),
            packet_threshold: 3,
            max_ack_delay: ms(25),
            fine_pacing: false,
            ecn: false,
        },
        cc,
    );
    r.init_controller(Time::ZERO);
    r
}

fn block(n: u32) -> Vec<BlockRef> {
    vec![BlockRef {
        stream: 0,
        message: n,
        block: 0,
    }]
}

fn send(r: &mut Recovery, now: Time, retransmission: bool) -> u64 {
    let pn = r.take_pn();
    r.on_data_sent(now, pn, MSS, retransmission, block(pn as u32).into(), false);
    pn
}

/// An ACK of inclusive ranges given highest first.
fn ack(ranges: &[(u64, u64)]) -> AckPayload {
    let (lo0, hi0) = ranges[0];
    let mut prev_lo = lo0;
    let extra = ranges[1..]
        .iter()
        .map(|&(lo, hi)| {
            let r = AckRange {
                gap: (prev_lo - hi - 2) as u32,
                length: (hi - lo) as u32,
            };
            prev_lo = lo;
            r
        })
        .collect();
    AckPayload {
        packet_number: 0,
        largest_acked: hi0,
        ack_delay_us: 0,
        first_range: (hi0 - lo0) as u32,
        ranges: extra,
        credits: Vec::new(),
        frequency: None,
        ecn: None,
    }
}

#[test]
fn rtt_is_never_sampled_from_a_retransmitted_packet() {
    let mut r = recovery("newreno");
    send(&mut r, at(0), true);
    r.on_ack(at(50), &ack(&[(0, 0)]), false);
    assert_eq!(r.rtt().srtt(), None, "ST_RET packet: no sample (Karn)");
    send(&mut r, at(50), false);
    r.on_ack(at(100), &ack(&[(1, 1)]), false);
    assert_eq!(r.rtt().srtt(), Some(ms(50)));
    assert_eq!(r.rtt().latest_rtt(), Some(ms(50)));
    // An ACK whose newest packet is a retransmission takes no sample
    // either, even though it also acknowledges an original.
    send(&mut r, at(100), false);
    send(&mut r, at(110), true);
    r.on_ack(at(400), &ack(&[(2, 3)]), false);
    assert_eq!(r.rtt().latest_rtt(), Some(ms(50)));
    assert_eq!(r.rtt().sample_count(), 1);
}

#[test]
fn ack_of_a_packet_never_sent_is_ignored() {
    let mut r = recovery("newreno");
    send(&mut r, at(0), false);
    let out = r.on_ack(at(10), &ack(&[(0, 7)]), false);
    assert!(out.acked_blocks.is_empty());
    assert_eq!(r.counters().invalid_acks, 1);
    assert_eq!(r.bytes_in_flight(), u64::from(MSS));
}

#[test]
fn rto_declares_everything_lost_and_backs_off_exponentially() {
    let mut r = recovery("newreno");
    send(&mut r, at(0), false);
    send(&mut r, at(0), false);
    // No RTT sample yet: the initial RTO, 1 s.
    assert_eq!(r.timeout(), Some(at(1000)));
    let out = r.on_timeout(at(999));
    assert!(out.lost_blocks.is_empty(), "not yet");
    let out = r.on_timeout(at(1000));
    assert_eq!(out.newly_lost, 2);
    assert_eq!(r.ca_state(), CaState::Loss);
    assert_eq!(r.congestion().counters().rtos, 1);
    assert_eq!(
        r.cc_stats().cwnd_bytes,
        u64::from(MSS),
        "cwnd = in_flight + 1 = 1"
    );
    // The retransmission waits twice the RTO, then four times.
    send(&mut r, at(1000), true);
    assert_eq!(r.timeout(), Some(at(3000)));
    r.on_timeout(at(3000));
    send(&mut r, at(3000), true);
    assert_eq!(r.timeout(), Some(at(7000)));
    assert_eq!(r.rtt().backoff_exponent(), 2);
    // An ACK of new data resets the backoff and ends the Loss episode.
    r.on_ack(at(3100), &ack(&[(3, 3)]), false);
    assert_eq!(r.rtt().backoff_exponent(), 0);
    assert_eq!(r.ca_state(), CaState::Open);
    assert_eq!(r.timeout(), None, "nothing in flight");
}

#[test]
fn one_reduction_per_flight_then_exit_at_the_recovery_point() {
    let mut r = recovery("newreno");
    for _ in 0..20 {
        send(&mut r, at(0), false);
    }
    r.on_ack(at(50), &ack(&[(0, 1)]), false);
    let cwnd0 = r.cc_stats().cwnd_bytes;
    // 2 is missing and 3..=10 arrive: 2 is lost (packet threshold).
    let out = r.on_ack(at(51), &ack(&[(3, 10), (0, 1)]), false);
    assert_eq!(out.newly_lost, 1);
    assert_eq!(out.lost_blocks, [(2, block(2)[0])]);
    assert_eq!(r.ca_state(), CaState::Recovery);
    assert_eq!(r.congestion().recover(), 20);
    let counters = r.congestion().counters().clone();
    assert_eq!((counters.loss_episodes, counters.reductions), (1, 1));
    assert!(r.cc_stats().ssthresh_bytes.is_some_and(|s| s < cwnd0));
    // 11 is lost too: the same flight, no second reduction.
    let out = r.on_ack(at(52), &ack(&[(12, 19), (3, 10), (0, 1)]), false);
    assert_eq!(out.newly_lost, 1);
    assert_eq!(r.congestion().counters().loss_episodes, 1);
    assert_eq!(r.congestion().counters().reductions, 1);
    // Retransmissions 20 and 21 are acknowledged: snd_una passes `recover`.
    send(&mut r, at(52), true);
    send(&mut r, at(52), true);
    r.on_ack(at(100), &ack(&[(12, 21), (3, 10), (0, 1)]), false);
    assert_eq!(r.ca_state(), CaState::Open);
    assert_eq!(r.congestion().counters().recovery_exits, 1);
    // A loss in a new flight is a new episode.
    for _ in 0..5 {
        send(&mut r, at(100), false);
    }
    r.on_ack(at(150), &ack(&[(23, 26), (20, 21)]), false);
    assert_eq!(r.congestion().counters().loss_episodes, 2);
}

#[test]
fn a_loss_disproved_by_a_late_ack_is_undone() {
    let mut r = recovery("newreno");
    for _ in 0..10 {
        send(&mut r, at(0), false);
    }
    r.on_ack(at(50), &ack(&[(0, 0)]), false);
    let before = r.cc_stats();
    // Reordering: 1..=3 are late, 4..=9 arrive; 1..=3 declared lost.
    let out = r.on_ack(at(51), &ack(&[(4, 9), (0, 0)]), false);
    assert_eq!(out.newly_lost, 3);
    assert!(r.cc_stats().ssthresh_bytes < before.ssthresh_bytes || before.ssthresh_bytes.is_none());
    assert_eq!(r.ca_state(), CaState::Recovery);
    // They arrive after all: the episode was spurious, and their blocks
    // count as delivered (even if the retransmissions get lost).
    let out = r.on_ack(at(52), &ack(&[(0, 9)]), false);
    assert_eq!(out.acked_blocks, [block(1), block(2), block(3)].concat());
    assert_eq!(r.counters().spurious_losses, 3);
    assert_eq!(r.congestion().counters().undos, 1);
    assert_eq!(r.ca_state(), CaState::Open);
    assert!(
        r.cc_stats().cwnd_bytes >= before.cwnd_bytes,
        "window restored"
    );
}

#[test]
fn time_threshold_fires_from_the_loss_timer() {
    let mut r = recovery("newreno");
    send(&mut r, at(0), false);
    send(&mut r, at(10), false);
    // 1 acknowledged 100 ms later: RTT 90 ms; 0 is only one packet behind.
    let out = r.on_ack(at(100), &ack(&[(1, 1)]), false);
    assert_eq!(out.newly_lost, 0);
    // 0 is lost 9/8 · 90 ms after it was sent.
    assert_eq!(r.timeout(), Some(Time::from_micros(101_250)));
    let out = r.on_timeout(Time::from_micros(101_250));
    assert_eq!(out.newly_lost, 1);
    assert_eq!(r.ca_state(), CaState::Recovery);
}

#[test]
fn nack_declares_outstanding_packets_lost() {
    let mut r = recovery("newreno");
    for _ in 0..4 {
        send(&mut r, at(0), false);
    }
    let out = r.on_nack(
        at(20),
        &[
            MissingPackets { first: 1, count: 2 },
            MissingPackets {
                first: 90,
                count: 5,
            },
        ],
    );
    assert_eq!(out.newly_lost, 2);
    assert_eq!(r.ca_state(), CaState::Recovery);
    let again = r.on_nack(at(21), &[MissingPackets { first: 1, count: 1 }]);
    assert_eq!(again.newly_lost, 0, "already lost");
}

#[test]
fn ecn_echo_starts_a_cwr_episode_once_per_flight() {
    let mut r = recovery("newreno");
    for _ in 0..6 {
        send(&mut r, at(0), false);
    }
    r.on_ack(at(50), &ack(&[(0, 0)]), true);
    assert_eq!(r.ca_state(), CaState::Cwr);
    r.on_ack(at(51), &ack(&[(0, 1)]), true);
    assert_eq!(r.congestion().counters().ecn_episodes, 1);
    assert_eq!(r.counters().ecn_echoes, 2);
}

#[test]
fn window_and_pacing_gate_sending() {
    let mut r = recovery("newreno");
    for _ in 0..10 {
        assert_eq!(r.allowance(at(0), u64::from(MSS)), Allowance::Send);
        send(&mut r, at(0), false);
    }
    assert_eq!(
        r.allowance(at(0), u64::from(MSS)),
        Allowance::Blocked,
        "IW = 10"
    );
    // BBR paces with burst credit: a burst from the full bucket, then
    // the next one waits.
    let mut b = recovery("bbr");
    let mut burst = 0;
    while b.allowance(at(0), u64::from(MSS)) == Allowance::Send {
        send(&mut b, at(0), false);
        burst += 1;
        assert!(burst <= 256, "the bucket is bounded");
    }
    assert!(burst >= 2, "a burst, not one packet: {burst}");
    // The bucket is at most the window: whichever ran out, nothing more
    // leaves now (a pacing wait is in the future).
    match b.allowance(at(0), u64::from(MSS)) {
        Allowance::Wait(t) => assert!(t > at(0)),
        other => assert_eq!(other, Allowance::Blocked),
    }
}

#[test]
fn a_held_rto_keeps_the_window_and_rearms_the_controllers_timer() {
    let mut r = recovery("rtwtcp");
    for _ in 0..10 {
        send(&mut r, at(0), false);
    }
    r.on_ack(at(40), &ack(&[(0, 0)]), false);
    // A short blockage (200 ms, within the 200 ms RTO) still going on when
    // the timer fires at 240 ms: seed 004 holds; a longer one would reduce.
    let hint = peregrine_cc::LinkHint {
        kind: peregrine_cc::LinkHintKind::Blockage,
        issued_at: at(60),
        predicted_duration: Some(ms(200)),
        cqi: Some(0),
        speed_mps: Some(15.0),
    };
    r.on_link_hint(at(60), &hint);
    let cwnd = r.cc_stats().cwnd_bytes;
    let deadline = r.timeout().unwrap();
    r.on_timeout(deadline);
    let c = r.congestion().counters();
    assert_eq!((c.rtos, c.holds), (1, 1));
    assert_eq!(r.cc_stats().cwnd_bytes, cwnd, "Hold: no collapse");
    assert_eq!(r.rtt().backoff_exponent(), 0, "Hold: no backoff");
    assert!(r.timeout().is_some(), "re-armed with nothing in flight");
    // During the outage the send gate allows only probes.
    assert!(matches!(
        r.allowance(deadline, u64::from(MSS)),
        Allowance::Probe | Allowance::Wait(_) | Allowance::Blocked
    ));
}
