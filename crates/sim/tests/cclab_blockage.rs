//! The controller lab's headline check (issue "Foundation", done-when):
//! on the default script, RTW-TCP rides out the announced 150 ms blockage
//! while CUBIC, which ignores the hint, collapses.

use peregrine_sim::cclab::{self as lab, LabConfig};

fn retention_of(mut cc: Box<dyn peregrine_cc::CongestionController>) -> f64 {
    let trace = lab::run(cc.as_mut(), &LabConfig::default());
    trace
        .summary
        .blockage_retention()
        .expect("the default script has a blockage")
}

fn retention(name: &str) -> f64 {
    retention_of(peregrine_cc::build(name).expect("registered"))
}

/// The issue-11 acceptance (≥ 90 %) is the Freeze-TCP extensions'; seed
/// 004's RTW-TCP (the default since issue 39) holds only on losses it can
/// attribute to the hint and keeps more than CUBIC, not 90 %.
#[test]
fn rtwtcp_keeps_its_window_through_a_predicted_blockage() {
    use peregrine_cc::algos::rtwtcp::RtwTcpConfig;
    let kept = retention_of(Box::new(RtwTcpConfig::with_extensions().build()));
    assert!(
        kept >= 0.9,
        "RTW-TCP (extensions) kept only {:.1} % of cwnd",
        kept * 100.0
    );
    let (seed, cubic) = (retention("rtwtcp"), retention("cubic"));
    assert!(
        seed > cubic,
        "RTW-TCP kept {:.1} %, CUBIC {:.1} %",
        seed * 100.0,
        cubic * 100.0
    );
}

#[test]
fn cubic_loses_its_window_in_the_same_blockage() {
    let kept = retention("cubic");
    assert!(kept <= 0.8, "CUBIC kept {:.1} % of cwnd", kept * 100.0);
}

#[test]
fn lab_runs_are_deterministic() {
    for name in ["newreno", "cubic", "rtwtcp", "bbr"] {
        let run = || {
            let mut cc = peregrine_cc::build(name).expect("registered");
            lab::run(cc.as_mut(), &LabConfig::default())
        };
        assert_eq!(run(), run(), "{name}: two runs differ");
    }
}

#[test]
fn default_script_produces_the_scripted_events() {
    let mut cc = peregrine_cc::build("newreno").expect("registered");
    let trace = lab::run(cc.as_mut(), &LabConfig::default());
    let csv = trace.to_csv();
    assert!(csv.starts_with("time_s,cwnd_bytes,ssthresh_bytes,pacing_rate_bps,event\n"));
    for event in [
        "scripted_loss",
        "recovery_start",
        "blockage_start",
        "blockage_end",
        "scripted_rto",
    ] {
        assert!(csv.contains(event), "no {event} row");
    }
    // At least one row per RTT (40 ms): rows are at most 10 ms apart.
    let gaps = trace.rows.windows(2).map(|w| w[1].time - w[0].time);
    assert!(gaps.max().unwrap_or_default() <= std::time::Duration::from_millis(10));
    // The flow fills most of the 10 Mbit/s link over 40 s.
    let goodput_bps = trace.summary.bytes_delivered as f64 * 8.0 / 40.0;
    assert!(goodput_bps > 8.0e6, "goodput {goodput_bps}");
}

/// Issue 39: the lab attributes a loss by the lost packet's send time
/// (`CongestionEvent::lost_sent_at`), as the simulator does. A packet lost
/// 30 ms before an announced blockage is detected about an RTT later,
/// while the hint is fresh: sent before the outage, it is congestion to
/// RTW-TCP (seed 004 §3.2.5), which reduces; packets sent into the
/// blockage itself are held.
#[test]
fn losses_are_attributed_by_send_time() {
    use lab::{LabEvent, LabTrace, ScriptItem};
    use std::time::Duration;
    let ms = Duration::from_millis;
    let run = |script: Vec<ScriptItem>| {
        let cfg = LabConfig {
            script,
            duration: Duration::from_secs(21),
            ..LabConfig::clean()
        };
        let mut cc = peregrine_cc::build("rtwtcp").expect("registered");
        lab::run(cc.as_mut(), &cfg)
    };
    // The first episode answered after the hint.
    let first_answer = |t: &LabTrace| -> Option<LabEvent> {
        t.rows
            .iter()
            .filter(|r| r.time.as_nanos() >= 20_000_000_000)
            .find_map(|r| {
                r.event.filter(|e| {
                    matches!(
                        e,
                        LabEvent::RecoveryStart | LabEvent::Hold | LabEvent::RtoHold
                    )
                })
            })
    };
    // Sent 30 ms before the outage: a reduction, no hold.
    let before = run(vec![
        ScriptItem::SingleLoss { at: ms(19_970) },
        ScriptItem::Blockage {
            at: ms(20_000),
            duration: ms(1),
        },
    ]);
    assert_eq!(first_answer(&before), Some(LabEvent::RecoveryStart));
    assert_eq!(before.summary.holds, 0, "{:?}", before.summary);
    // Sent into the outage: held (every packet sent into it was lost, so
    // the timer finds them, and RTW-TCP rides it out).
    let into = run(vec![ScriptItem::Blockage {
        at: ms(20_000),
        duration: ms(150),
    }]);
    assert_eq!(first_answer(&into), Some(LabEvent::RtoHold));
}
