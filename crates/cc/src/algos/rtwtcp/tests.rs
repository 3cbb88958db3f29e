//! Spec vectors RT-1..RT-10 and behaviour tests of the pro-active freeze.
//!
//! Vector setting (cc-spec §3.16): cwnd 100, ssthresh 80 (in CA), W_max 120,
//! SRTT 50 ms, RTO 300 ms, min_rtt 50 ms. The vectors assume a freeze
//! triggered by a loss, so they run with `freeze_on_hint = false`.

use super::*;
use crate::controller::CongestionController;
use crate::testutil::{ack, path};

const T: u64 = 10_000; // the loss time of the vectors, ms

fn p(now_ms: u64) -> PathInfo {
    let mut p = path(now_ms, 50);
    p.rto = Duration::from_millis(300);
    p.in_flight = 0;
    p
}

fn ms(v: u64) -> Time {
    Time::from_millis(v)
}

fn event(kind: CongestionKind) -> CongestionEvent {
    CongestionEvent {
        kind,
        now: Time::ZERO,
        is_persistent: false,
        lost_segs: 1,
        in_flight: 0,
        lost_sent_at: None,
    }
}

fn hint(kind: LinkHintKind, issued_ms: u64, predicted_ms: Option<u64>) -> LinkHint {
    LinkHint {
        kind,
        issued_at: ms(issued_ms),
        predicted_duration: predicted_ms.map(Duration::from_millis),
        cqi: Some(0),
        speed_mps: Some(15.0),
    }
}

/// `config` in the vector setting, with a CUBIC epoch running since 1 s.
fn vector_setting(config: RtwTcpConfig) -> PolicyController<RtwTcp> {
    let mut c = config.build();
    c.init(&p(0));
    // A congestion event at cwnd 120 (ECN: always congestive) leaves W_max = 120.
    c.core_mut().cwnd = 120;
    c.core_mut().ssthresh = 90;
    assert_eq!(
        c.on_congestion_event(&event(CongestionKind::Ecn), &p(500)),
        CongestionResponse::Reduce
    );
    c.on_recovery_exit(&p(500));
    c.core_mut().cwnd = 100;
    c.core_mut().ssthresh = 80;
    c.on_ack(&ack(1), &p(1_000));
    assert_eq!(c.core().cwnd, 100);
    assert_eq!(c.policy().cubic().w_max_segs(), 120.0);
    assert_eq!(c.policy().cubic().epoch_start(), Some(ms(1_000)));
    c
}

/// The vector setting with the issue-11 extensions.
fn rtw_with(freeze_on_hint: bool) -> PolicyController<RtwTcp> {
    vector_setting(RtwTcpConfig {
        freeze_on_hint,
        ..RtwTcpConfig::with_extensions()
    })
}

fn rtw() -> PolicyController<RtwTcp> {
    rtw_with(false)
}

/// The vector setting with the default (seed 004) configuration.
fn seed() -> PolicyController<RtwTcp> {
    vector_setting(RtwTcpConfig::default())
}

/// A loss detected at `now_ms` whose newest lost packet left at `sent_ms`.
fn loss_sent(c: &mut PolicyController<RtwTcp>, now_ms: u64, sent_ms: u64) -> CongestionResponse {
    let ev = CongestionEvent {
        lost_sent_at: Some(ms(sent_ms)),
        ..event(CongestionKind::Loss)
    };
    c.on_congestion_event(&ev, &p(now_ms))
}

#[test]
fn seed004_no_prediction_is_cubic() {
    // Without a hint every loss is CUBIC's, however small the backlog
    // (the Veno classifier is an extension, off by default).
    let mut c = seed();
    assert_eq!(loss_sent(&mut c, T, T - 60), CongestionResponse::Reduce);
    assert_cubic_reduction(&c);
    // A CongestionFree hint is no blockage prediction either.
    let mut c = seed();
    c.on_link_hint(
        &hint(LinkHintKind::CongestionFree, T - 10, None),
        &p(T - 10),
    );
    assert_eq!(loss_sent(&mut c, T, T - 60), CongestionResponse::Reduce);
}

#[test]
fn seed004_short_blockage_holds_the_window_without_freezing() {
    let mut c = seed();
    c.on_link_hint(
        &hint(LinkHintKind::Blockage, T - 100, Some(80)),
        &p(T - 100),
    );
    // Sent 50 ms into the 80 ms blockage, detected after it ended.
    assert_eq!(loss_sent(&mut c, T, T - 50), CongestionResponse::Hold);
    assert_unchanged(&c);
    assert!(c.policy().frozen().is_none(), "hold only: no freeze");
    assert_eq!(c.send_gate(ms(T + 1)), SendGate::Normal);
}

#[test]
fn seed004_long_blockage_reduces() {
    let mut c = seed();
    c.on_link_hint(
        &hint(LinkHintKind::Blockage, T - 100, Some(400)),
        &p(T - 100),
    );
    assert_eq!(loss_sent(&mut c, T, T - 50), CongestionResponse::Reduce);
    assert_cubic_reduction(&c);
}

#[test]
fn seed004_queue_overflow_under_a_fresh_perfect_hint_reduces() {
    // The blockage [T−100, T−20] was predicted exactly; the lost packet
    // left after it ended (a queue overflow of the refill), while the hint
    // is still within its lifetime: not attributable, CUBIC reduces.
    let mut c = seed();
    c.on_link_hint(
        &hint(LinkHintKind::Blockage, T - 100, Some(80)),
        &p(T - 100),
    );
    assert_eq!(loss_sent(&mut c, T, T - 10), CongestionResponse::Reduce);
    assert_cubic_reduction(&c);
    // Sent long before the outage (more than half a min RTT early): also not it.
    let mut c = seed();
    c.on_link_hint(
        &hint(LinkHintKind::Blockage, T - 100, Some(80)),
        &p(T - 100),
    );
    assert_eq!(loss_sent(&mut c, T, T - 126), CongestionResponse::Reduce);
    // Sent just before the start, reaching the radio link inside it: held.
    let mut c = seed();
    c.on_link_hint(
        &hint(LinkHintKind::Blockage, T - 100, Some(80)),
        &p(T - 100),
    );
    assert_eq!(loss_sent(&mut c, T, T - 120), CongestionResponse::Hold);
}

fn loss(c: &mut PolicyController<RtwTcp>, now_ms: u64) -> CongestionResponse {
    c.on_congestion_event(&event(CongestionKind::Loss), &p(now_ms))
}

/// An ACK that acknowledges nothing but carries an RTT sample.
fn rtt_only(rtt_ms: u64) -> AckSample {
    AckSample {
        rtt: Some(Duration::from_millis(rtt_ms)),
        ..AckSample::default()
    }
}

fn assert_unchanged(c: &PolicyController<RtwTcp>) {
    assert_eq!((c.core().cwnd, c.core().ssthresh), (100, 80));
    assert_eq!(c.policy().cubic().w_max_segs(), 120.0);
}

fn assert_cubic_reduction(c: &PolicyController<RtwTcp>) {
    assert_eq!(c.core().ssthresh, 70);
    assert_eq!(c.policy().cubic().w_max_segs(), 85.0);
}

#[test]
fn rt1_short_outage_freezes_and_thaws() {
    let mut c = rtw();
    let mut h = hint(LinkHintKind::Blockage, T - 10, Some(120));
    h.speed_mps = Some(15.0);
    c.on_link_hint(&h, &p(T - 10));
    assert!(c.policy().frozen().is_none(), "freeze_on_hint is off");
    assert_eq!(loss(&mut c, T), CongestionResponse::Hold);
    assert_unchanged(&c);
    let f = c.policy().frozen().cloned().expect("frozen");
    assert_eq!(
        (f.start, f.until, f.deadline),
        (ms(T), ms(T + 160), ms(T + 410))
    );
    assert_eq!((f.saved_cwnd, f.saved_ssthresh), (100, 80));
    assert_eq!(c.stats().mode, Some("frozen"));
    assert_eq!(
        c.send_gate(ms(T + 1)),
        SendGate::ProbeOnly {
            next_probe_at: ms(T + 160)
        }
    );
    c.on_ack(&ack(1), &p(T + 150));
    assert!(c.policy().frozen().is_none());
    assert_eq!(c.stats().mode, Some("normal"));
    assert_eq!(c.send_gate(ms(T + 150)), SendGate::Normal);
    assert_unchanged(&c);
    assert_eq!(c.policy().cubic().epoch_start(), Some(ms(1_150)));
}

#[test]
fn rt2_long_outage_reduces() {
    let mut c = rtw();
    c.on_link_hint(&hint(LinkHintKind::Blockage, T - 10, Some(450)), &p(T - 10));
    assert_eq!(loss(&mut c, T), CongestionResponse::Reduce);
    assert_cubic_reduction(&c);
    assert!(c.policy().frozen().is_none());
    // Exactly the RTO is still short.
    let mut c = rtw();
    c.on_link_hint(&hint(LinkHintKind::Blockage, T - 10, Some(300)), &p(T - 10));
    let class = c
        .policy()
        .classify(c.core(), CongestionKind::Loss, None, &p(T))
        .0;
    assert_eq!(class, LossClass::ShortOutage(Duration::from_millis(300)));
    assert_eq!(loss(&mut c, T), CongestionResponse::Hold);
}

#[test]
fn rt3_random_loss_then_rate_limit() {
    let mut c = rtw();
    c.on_ack(&rtt_only(51), &p(T - 5));
    // N = 100·1/51 = 1.96 < 3 → Random → Hold.
    assert_eq!(loss(&mut c, T), CongestionResponse::Hold);
    assert_unchanged(&c);
    assert!(c.policy().frozen().is_none());
    c.on_recovery_exit(&p(T + 50));
    assert_unchanged(&c);
    // 2·SRTT later, same RTT_recent: inside random_spacing (400 ms) → Congestive.
    c.on_ack(&rtt_only(51), &p(T + 95));
    assert_eq!(loss(&mut c, T + 100), CongestionResponse::Reduce);
    assert_cubic_reduction(&c);
}

#[test]
fn rt4_queueing_loss_is_congestive() {
    let mut c = rtw();
    c.on_ack(&rtt_only(60), &p(T - 5));
    // N = 100·10/60 = 16.7 ≥ 3.
    assert_eq!(loss(&mut c, T), CongestionResponse::Reduce);
    assert_cubic_reduction(&c);
}

#[test]
fn rt5_beam_misalignment_default_duration() {
    let mut c = rtw();
    c.on_link_hint(
        &hint(LinkHintKind::BeamMisalignment, T - 5, None),
        &p(T - 5),
    );
    let class = c
        .policy()
        .classify(c.core(), CongestionKind::Loss, None, &p(T))
        .0;
    assert_eq!(class, LossClass::ShortOutage(Duration::from_millis(20)));
    assert_eq!(loss(&mut c, T), CongestionResponse::Hold);
    assert!(c.policy().frozen().is_some());
    assert_unchanged(&c);
}

#[test]
fn rt6_slow_blockage_is_long() {
    let mut c = rtw();
    let mut h = hint(LinkHintKind::Blockage, T - 5, None);
    h.speed_mps = Some(2.0);
    assert_eq!(
        c.policy().outage_duration(&h),
        Some(Duration::from_millis(2_500))
    );
    c.on_link_hint(&h, &p(T - 5));
    assert_eq!(loss(&mut c, T), CongestionResponse::Reduce);
    assert_cubic_reduction(&c);
    // Without speed the blockage is treated as long.
    h.speed_mps = None;
    assert_eq!(c.policy().outage_duration(&h), None);
}

#[test]
fn rt7_stale_hint_falls_back() {
    let mut c = rtw();
    c.on_link_hint(
        &hint(LinkHintKind::Handover, T - 1_000, Some(40)),
        &p(T - 1_000),
    );
    let h = c.policy().last_hint().cloned().expect("hint kept");
    assert!(!c.policy().hint_valid(&h, &p(T)));
    // The fallback classifier decides: RTT_recent = SRTT = min_rtt → N = 0 → Random.
    let verdict = c
        .policy()
        .classify(c.core(), CongestionKind::Loss, None, &p(T));
    assert_eq!(verdict, (LossClass::Random, true));
    assert_eq!(loss(&mut c, T), CongestionResponse::Hold);
    assert!(c.policy().frozen().is_none());
}

#[test]
fn rt8_cqi_contradicts_hint() {
    let mut c = rtw();
    let mut h = hint(LinkHintKind::Deafness, T - 5, Some(30));
    h.cqi = Some(12);
    c.on_link_hint(&h, &p(T - 5));
    c.on_ack(&rtt_only(60), &p(T - 2));
    // Not ShortOutage: the fallback classifier sees a queue (N = 16.7).
    let verdict = c
        .policy()
        .classify(c.core(), CongestionKind::Loss, None, &p(T));
    assert_eq!(verdict, (LossClass::Congestive, false));
    assert_eq!(loss(&mut c, T), CongestionResponse::Reduce);
}

#[test]
fn rt9_rto_while_frozen() {
    let mut c = rtw();
    c.on_link_hint(&hint(LinkHintKind::Blockage, T - 10, Some(120)), &p(T - 10));
    assert_eq!(loss(&mut c, T), CongestionResponse::Hold);
    assert_eq!(c.on_rto(&p(T + 300)), CongestionResponse::Hold);
    assert_eq!(
        c.held_rto_timeout(ms(T + 300)),
        Some(Duration::from_millis(110))
    );
    assert_unchanged(&c);
    assert!(c.policy().frozen().is_some());
    // At the deadline: CUBIC's RTO response from saved_cwnd = 100.
    assert_eq!(c.on_rto(&p(T + 410)), CongestionResponse::Reduce);
    assert_eq!((c.core().ssthresh, c.core().cwnd), (70, 1));
    assert_eq!(c.policy().cubic().w_max_segs(), 0.0);
    assert_eq!(c.policy().cubic().epoch_start(), None);
    assert!(c.policy().frozen().is_none());
    assert_eq!(c.held_rto_timeout(ms(T + 410)), None);
}

#[test]
fn rt10_ecn_is_always_congestive() {
    let mut c = rtw();
    c.on_link_hint(&hint(LinkHintKind::Blockage, T - 10, Some(120)), &p(T - 10));
    let r = c.on_congestion_event(&event(CongestionKind::Ecn), &p(T));
    assert_eq!(r, CongestionResponse::Reduce);
    assert_cubic_reduction(&c);
    // Also while frozen: the freeze ends and CUBIC reduces.
    let mut c = rtw();
    c.on_link_hint(&hint(LinkHintKind::Blockage, T - 10, Some(120)), &p(T - 10));
    assert_eq!(loss(&mut c, T), CongestionResponse::Hold);
    c.on_recovery_exit(&p(T + 1));
    let r = c.on_congestion_event(&event(CongestionKind::Ecn), &p(T + 2));
    assert_eq!(r, CongestionResponse::Reduce);
    assert!(c.policy().frozen().is_none());
    assert_cubic_reduction(&c);
}

#[test]
fn rto_while_normal_with_live_hint_freezes() {
    let mut c = rtw();
    c.on_link_hint(&hint(LinkHintKind::Handover, T - 10, Some(40)), &p(T - 10));
    assert_eq!(c.on_rto(&p(T)), CongestionResponse::Hold);
    let f = c.policy().frozen().cloned().expect("frozen");
    assert_eq!((f.until, f.deadline), (ms(T + 80), ms(T + 330)));
    assert_unchanged(&c);
    // Without a hint: the standard CUBIC RTO response.
    let mut c = rtw();
    assert_eq!(c.on_rto(&p(T)), CongestionResponse::Reduce);
    assert_eq!((c.core().ssthresh, c.core().cwnd), (70, 1));
}

#[test]
fn proactive_freeze_rides_out_the_outage() {
    let mut c = rtw_with(true);
    c.on_link_hint(&hint(LinkHintKind::Blockage, T, Some(150)), &p(T));
    let f = c.policy().frozen().cloned().expect("pro-active freeze");
    assert_eq!(
        (f.start, f.until, f.deadline),
        (ms(T), ms(T + 200), ms(T + 450))
    );
    assert_eq!(f.outage_end, Some(ms(T + 150)));
    // ACKs of pre-outage packets neither end the freeze nor grow the window.
    for i in 1..=40 {
        c.on_ack(&ack(1), &p(T + i));
    }
    assert!(c.policy().frozen().is_some());
    assert_unchanged(&c);
    // Losses and RTOs before the deadline are held.
    assert_eq!(loss(&mut c, T + 60), CongestionResponse::Hold);
    assert_eq!(c.on_rto(&p(T + 100)), CongestionResponse::Hold);
    assert_unchanged(&c);
    // Probes: the first at `until`, then SRTT, 2·SRTT, … apart.
    let gate = |c: &PolicyController<RtwTcp>| match c.send_gate(ms(0)) {
        SendGate::ProbeOnly { next_probe_at } => next_probe_at,
        SendGate::Normal => panic!("not frozen"),
    };
    assert_eq!(gate(&c), ms(T + 200));
    c.on_packet_sent(&p(T + 199), 1448); // not a probe: too early
    assert_eq!(gate(&c), ms(T + 200));
    c.on_packet_sent(&p(T + 200), 1448);
    assert_eq!(gate(&c), ms(T + 250));
    c.on_packet_sent(&p(T + 250), 1448);
    assert_eq!(gate(&c), ms(T + 350));
    // The probe's ACK, after the predicted end, ends the freeze.
    c.on_ack(&ack(1), &p(T + 290));
    assert!(c.policy().frozen().is_none());
    assert_unchanged(&c);
    assert_eq!(c.policy().cubic().epoch_start(), Some(ms(1_290)));
}

#[test]
fn proactive_freeze_needs_a_valid_short_hint() {
    let cases: [(LinkHint, u64); 4] = [
        (hint(LinkHintKind::Blockage, T, Some(450)), T), // longer than the RTO
        (hint(LinkHintKind::Deafness, T - 1_000, Some(30)), T), // stale, over
        (hint(LinkHintKind::Handover, T - 60, Some(40)), T), // outage already over
        (
            LinkHint {
                cqi: Some(9),
                ..hint(LinkHintKind::Blockage, T, Some(100))
            },
            T,
        ), // contradicted by CQI
    ];
    for (h, now) in cases {
        let mut c = rtw_with(true);
        c.on_link_hint(&h, &p(now));
        assert!(c.policy().frozen().is_none(), "{h:?}");
    }
    let mut c = rtw_with(false);
    c.on_link_hint(&hint(LinkHintKind::Blockage, T, Some(150)), &p(T));
    assert!(c.policy().frozen().is_none());
}

#[test]
fn congestion_free_hint_thaws() {
    let mut c = rtw_with(true);
    c.on_link_hint(&hint(LinkHintKind::Blockage, T, Some(150)), &p(T));
    assert!(c.policy().frozen().is_some());
    c.on_link_hint(
        &hint(LinkHintKind::CongestionFree, T + 30, None),
        &p(T + 30),
    );
    assert!(c.policy().frozen().is_none());
    assert_unchanged(&c);
    // A valid CongestionFree hint makes a loss random.
    assert_eq!(loss(&mut c, T + 40), CongestionResponse::Hold);
}

#[test]
fn loss_revealing_ack_does_not_thaw() {
    let mut c = rtw();
    c.on_link_hint(&hint(LinkHintKind::Blockage, T - 10, Some(120)), &p(T - 10));
    assert_eq!(loss(&mut c, T), CongestionResponse::Hold);
    // The connection reports the ACK that revealed the loss after the event.
    c.on_ack(&ack(1), &p(T));
    assert!(c.policy().frozen().is_some());
    c.on_ack(&ack(1), &p(T + 1));
    assert!(c.policy().frozen().is_none());
}

#[test]
fn behaves_as_cubic_without_losses() {
    let mut r = RtwTcpConfig::default().build();
    let mut k = CubicConfig::default().build();
    r.init(&p(0));
    k.init(&p(0));
    for i in 0..3_000u64 {
        let mut path = p(i);
        path.snd_una = 1_000 + i;
        path.snd_nxt = 1_100 + i;
        let a = AckSample {
            rtt: Some(Duration::from_millis(50 + i % 7)),
            ..ack(1)
        };
        r.on_ack(&a, &path);
        k.on_ack(&a, &path);
        assert_eq!(r.cwnd_bytes(), k.cwnd_bytes(), "ACK {i}");
        assert_eq!(r.ssthresh_bytes(), k.ssthresh_bytes());
    }
}

#[test]
fn thaw_grace_holds_outage_aftermath() {
    let mut c = rtw_with(true);
    c.on_link_hint(&hint(LinkHintKind::Blockage, T, Some(150)), &p(T));
    c.on_ack(&ack(1), &p(T + 240)); // the probe's ACK ends the freeze
    assert!(c.policy().frozen().is_none());
    // A queue is visible (N = 16.7), yet within 2·SRTT of the thaw the loss is held.
    c.on_ack(&rtt_only(60), &p(T + 300));
    let verdict = c
        .policy()
        .classify(c.core(), CongestionKind::Loss, None, &p(T + 340));
    assert_eq!(verdict, (LossClass::OutageAftermath, false));
    let before = (c.core().cwnd, c.core().ssthresh);
    assert_eq!(loss(&mut c, T + 340), CongestionResponse::Hold);
    assert_eq!((c.core().cwnd, c.core().ssthresh), before);
    assert_eq!(c.policy().cubic().w_max_segs(), 120.0);
    c.on_recovery_exit(&p(T + 341));
    // After the grace the Veno classifier judges again: congestive.
    let verdict = c
        .policy()
        .classify(c.core(), CongestionKind::Loss, None, &p(T + 341));
    assert_eq!(verdict, (LossClass::Congestive, false));
    // ECN is never held, even in the grace.
    let mut c = rtw_with(true);
    c.on_link_hint(&hint(LinkHintKind::Blockage, T, Some(150)), &p(T));
    c.on_ack(&ack(1), &p(T + 240));
    let r = c.on_congestion_event(&event(CongestionKind::Ecn), &p(T + 250));
    assert_eq!(r, CongestionResponse::Reduce);
}
