//! Make-before-break handover (issue 29), checked on the seeded scenario
//! `scenarios/handover-multicast.toml`: across every handover of the
//! vehicle, the group stream received over two attachments has no gap
//! between deliveries longer than the configured overlap, delivers no
//! message twice and loses none, while the unicast stream in the same
//! world (today's break-before-make handover) does show the interruption.

use peregrine_sim::{run, Scenario};
use std::path::Path;

fn scenario(overrides: &[&str]) -> Scenario {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/handover-multicast.toml");
    let set: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Scenario::from_file(&p, &set).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn make_before_break_has_no_gap_beyond_the_overlap_and_unicast_has_the_interruption() {
    for seed in ["seed=29", "seed=3"] {
        let s = scenario(&[seed]);
        let v = s.model.vehicular.as_ref().expect("vehicular");
        let overlap_ms = v
            .make_before_break
            .expect("make_before_break")
            .as_secs_f64()
            * 1e3;
        let interruption_ms = v.channel.handover_interruption_ms;
        let r = run(&s).unwrap_or_else(|e| panic!("{e}"));
        let h = r.handover_multicast.as_ref().expect("handover_multicast");
        assert_eq!(h.vehicles.len(), 1);
        let veh = &h.vehicles[0];
        let (uni, mbb) = (&veh.unicast, &veh.make_before_break);
        eprintln!(
            "{seed}: {} handovers; unicast gaps {:?} lost {} dip {:?}; \
             mbb gaps {:?} lost {} dup {} copies {} removed {} dip {:?}; joins {} evictions {}",
            veh.handovers.len(),
            uni.gaps_ms,
            uni.messages_lost,
            uni.throughput_dip,
            mbb.gaps_ms,
            mbb.messages_lost,
            mbb.messages_duplicated,
            mbb.copies_received,
            mbb.duplicates_removed,
            mbb.throughput_dip,
            veh.joins,
            veh.evictions,
        );
        // The vehicle does pass from one station to the other.
        assert!(!veh.handovers.is_empty(), "{seed}: no handover to check");
        assert_eq!(mbb.gaps_ms.len(), veh.handovers.len());
        assert_eq!(uni.gaps_ms.len(), veh.handovers.len());
        // Both streams carried the same messages, most of them delivered.
        assert_eq!(uni.messages_sent, mbb.messages_sent);
        assert!(mbb.messages_delivered * 10 >= mbb.messages_sent * 9);
        for (i, (g_mbb, g_uni)) in mbb.gaps_ms.iter().zip(&uni.gaps_ms).enumerate() {
            assert!(
                *g_mbb <= overlap_ms,
                "{seed}, handover {i}: make-before-break gap {g_mbb} ms > overlap {overlap_ms} ms"
            );
            // Today's handover takes the link down: the unicast stream
            // waits at least the interruption, longer than the group's gap.
            assert!(
                *g_uni >= interruption_ms && g_uni > g_mbb,
                "{seed}, handover {i}: unicast gap {g_uni} ms, make-before-break {g_mbb} ms"
            );
        }
        assert_eq!(mbb.messages_duplicated, 0, "{seed}: delivered twice");
        assert_eq!(mbb.messages_lost, 0, "{seed}: lost");
        // The overlap is real: the second attachment brought copies, and
        // the receiver removed them.
        assert!(mbb.duplicates_removed > 0, "{seed}: no overlap seen");
        assert_eq!(
            mbb.copies_received,
            mbb.messages_delivered + mbb.duplicates_removed,
            "{seed}: every copy is delivered once or removed"
        );
        assert!(
            veh.joins as usize > veh.handovers.len(),
            "{seed}: a JOIN per attachment"
        );
    }
}

/// The mode is off by default: no `handover_multicast` in the results.
#[test]
fn break_before_make_is_the_default_and_reports_nothing_new() {
    let s = scenario(&[
        "vehicular.handover=\"break_before_make\"",
        "duration=\"2s\"",
    ]);
    let r = run(&s).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.handover_multicast.is_none());
    assert!(r.summary_json().get("handover_multicast").is_none());
}
