//! BBRv3 against the draft's state machine (draft-ietf-ccwg-bbr §4.3), on
//! the packet-level bottleneck model of `testutil`.

use super::*;
use crate::controller::CongestionController;
use crate::testutil::{path, Bottleneck};

fn bbr3() -> Box<dyn CongestionController> {
    Box::new(Bbr3Config::default().build())
}

fn policy(b: &Bottleneck, i: usize) -> Bbr3Mode {
    let mode = b.flows[i].cc.stats().mode.expect("bbr3 has modes");
    match mode {
        "startup" => Bbr3Mode::Startup,
        "drain" => Bbr3Mode::Drain,
        "probe_bw_down" => Bbr3Mode::ProbeBwDown,
        "probe_bw_cruise" => Bbr3Mode::ProbeBwCruise,
        "probe_bw_refill" => Bbr3Mode::ProbeBwRefill,
        "probe_bw_up" => Bbr3Mode::ProbeBwUp,
        "probe_rtt" => Bbr3Mode::ProbeRtt,
        other => panic!("unknown mode {other}"),
    }
}

/// The draft's allowed transitions (§4.3 and its state diagram).
fn allowed(from: Bbr3Mode, to: Bbr3Mode) -> bool {
    use Bbr3Mode::*;
    matches!(
        (from, to),
        (Startup, Drain)
            | (Startup, ProbeRtt)
            | (Drain, ProbeBwDown)
            | (Drain, ProbeRtt)
            | (ProbeBwDown, ProbeBwCruise)
            | (ProbeBwDown, ProbeBwRefill)
            | (ProbeBwCruise, ProbeBwRefill)
            | (ProbeBwRefill, ProbeBwUp)
            | (ProbeBwUp, ProbeBwDown)
            | (ProbeBwDown, ProbeRtt)
            | (ProbeBwCruise, ProbeRtt)
            | (ProbeBwRefill, ProbeRtt)
            | (ProbeBwUp, ProbeRtt)
            // ExitProbeRTT: StartProbeBW_DOWN then at once StartProbeBW_CRUISE.
            | (ProbeRtt, ProbeBwDown)
            | (ProbeRtt, Startup)
    )
}

/// 12 Mbit/s (1000 packets/s), 40 ms, a 2-BDP buffer, 12 s: the flow goes
/// STARTUP → DRAIN → PROBE_BW, cycles DOWN/CRUISE/REFILL/UP, visits
/// PROBE_RTT about every 5 s, only ever by the draft's transitions, and
/// fills the link.
#[test]
fn state_machine_follows_the_drafts_transitions() {
    let mut b = Bottleneck::new(1000.0, Duration::from_millis(40), 80);
    b.add(bbr3(), false, Time::ZERO);
    let mut seen: Vec<Bbr3Mode> = vec![Bbr3Mode::Startup];
    b.run(Time::from_secs_f64(12.0), |b| {
        let m = policy(b, 0);
        if *seen.last().unwrap() != m {
            seen.push(m);
        }
    });
    for w in seen.windows(2) {
        // One ACK may take two steps when the second is DOWN → CRUISE: the
        // draft's EnterProbeBW (from DRAIN) and ExitProbeRTT both start
        // DOWN, and the same ACK's UpdateProbeBWCyclePhase may cruise.
        let ok = allowed(w[0], w[1])
            || (w[1] == Bbr3Mode::ProbeBwCruise && allowed(w[0], Bbr3Mode::ProbeBwDown));
        assert!(ok, "transition {:?} -> {:?} in {:?}", w[0], w[1], seen);
    }
    assert_eq!(&seen[..2], &[Bbr3Mode::Startup, Bbr3Mode::Drain]);
    for m in [
        Bbr3Mode::ProbeBwCruise,
        Bbr3Mode::ProbeBwRefill,
        Bbr3Mode::ProbeBwUp,
        Bbr3Mode::ProbeRtt,
    ] {
        assert!(seen.contains(&m), "{m:?} never entered: {seen:?}");
    }
    let probe_rtts = seen.iter().filter(|m| **m == Bbr3Mode::ProbeRtt).count();
    assert!(
        (1..=3).contains(&probe_rtts),
        "PROBE_RTT {probe_rtts} times in 12 s"
    );
    let acked = b.flows[0].acked as f64;
    assert!(acked > 0.85 * 12_000.0, "goodput {acked} packets of 12000");
}

#[test]
fn bandwidth_estimate_converges_to_the_link() {
    let mut b = Bottleneck::new(1000.0, Duration::from_millis(40), 80);
    b.add(bbr3(), false, Time::ZERO);
    b.run(Time::from_secs_f64(3.0), |_| {});
    let bw = b.flows[0]
        .cc
        .stats()
        .bandwidth_estimate_bytes_per_sec
        .unwrap() as f64
        / f64::from(crate::testutil::MSS);
    assert!((bw - 1000.0).abs() < 60.0, "bw {bw} segments/s");
}

/// A shallow buffer (10 packets, ⅛ BDP) makes STARTUP lose: BBRv3 leaves
/// STARTUP on loss (or on full bandwidth) and sets `inflight_hi`, and in
/// PROBE_BW the probes that meet more than 2 % loss cut it again, so the
/// loss rate stays low.
#[test]
fn losses_above_two_percent_bound_inflight_hi() {
    let mut b = Bottleneck::new(1000.0, Duration::from_millis(80), 10);
    b.add(bbr3(), false, Time::ZERO);
    b.run(Time::from_secs_f64(20.0), |_| {});
    let f = &b.flows[0];
    let loss_rate = f.lost as f64 / (f.acked + f.lost) as f64;
    assert!(loss_rate < 0.03, "loss rate {loss_rate:.4}");
    assert!(
        f.acked as f64 > 0.8 * 20_000.0,
        "goodput {} of 20000",
        f.acked
    );
}

#[test]
fn probe_up_with_heavy_loss_goes_down_and_sets_inflight_hi() {
    let mut c = Bbr3Config::default().build();
    let mut p = path(0, 40);
    c.init(&p);
    {
        let (core, b) = c.parts_mut();
        b.full_bw_reached = true;
        b.bw_hi = [1000.0, 1000.0];
        b.bw = 1000.0;
        b.min_rtt = Some(Duration::from_millis(40));
        b.set_mode(Bbr3Mode::ProbeBwUp);
        b.bw_probe_samples = true;
        core.cwnd = 60;
    }
    // An ACK reporting 5 losses out of ~50 in flight (10 %).
    p.delivered = 100;
    let ack = AckSample {
        acked_segs: 1,
        acked_bytes: 1448,
        rtt: Some(Duration::from_millis(45)),
        prior_in_flight: 50,
        una_advanced: true,
        newly_lost: 5,
        rate: Some(crate::RateSample {
            delivered: 40,
            interval: Duration::from_millis(45),
            prior_delivered: 60,
            prior_in_flight: 50,
            losses: 5,
            acked_sacked: 1,
            ..Default::default()
        }),
        ..Default::default()
    };
    c.on_ack(&ack, &p);
    assert_eq!(c.policy().mode(), Bbr3Mode::ProbeBwDown);
    assert_eq!(c.policy().inflight_hi(), Some(50.0));
}

#[test]
fn ecn_marks_above_half_end_startup() {
    let mut b = Bottleneck::new(1000.0, Duration::from_millis(40), 400);
    b.ce_threshold = Some(Duration::from_millis(2));
    b.add(bbr3(), true, Time::ZERO);
    b.run(Time::from_secs_f64(4.0), |_| {});
    let f = &b.flows[0];
    assert_eq!(f.lost, 0, "a deep buffer with marking: no loss");
    assert!(f.ce > 0);
    // The queue stays far below the 400-packet buffer.
    let p99 = b.sojourn_percentile_ms(1000, 99.0);
    assert!(p99 < 60.0, "sojourn p99 {p99} ms");
}

#[test]
fn modes_have_the_drafts_gains() {
    let c = Bbr3Config::default().build();
    assert!((c.policy().pacing_gain() - 2.77).abs() < 1e-9);
    let mut b = c.policy().clone();
    b.enter_drain();
    assert!((b.pacing_gain - 0.35).abs() < 1e-9);
    b.start_probe_down(&path(0, 40));
    assert!((b.pacing_gain - 0.90).abs() < 1e-9);
    b.start_probe_cruise();
    assert_eq!(b.pacing_gain, 1.0);
    b.start_probe_refill(&path(0, 40));
    assert_eq!(b.pacing_gain, 1.0);
    let core = crate::core::Core::new(CoreConfig::default());
    b.start_probe_up(&core, &path(0, 40), 0.0);
    assert_eq!((b.pacing_gain, b.cwnd_gain), (1.25, 2.25));
    assert_eq!(
        b.transitions(),
        &[
            Bbr3Mode::Startup,
            Bbr3Mode::Drain,
            Bbr3Mode::ProbeBwDown,
            Bbr3Mode::ProbeBwCruise,
            Bbr3Mode::ProbeBwRefill,
            Bbr3Mode::ProbeBwUp
        ]
    );
}
