//! The vehicular mmWave world end to end: the recorded channel produces
//! each kind of outage, a run is deterministic to the byte, and the
//! channel's outages show up as link outages and hints.

use peregrine_sim::world::vehicles::ChannelTimeline;
use peregrine_sim::{run, run_with_timeline, Scenario};

fn scenario(extra: &[&str]) -> Scenario {
    let doc = "duration = \"1s\"\nseed = 7\n[metrics]\ninterval = \"100ms\"\n\
               per_message = false\n[vehicular]\nvehicles = 6\nrate_scale = 0.005\n\
               load = 0.8\ncc = \"rtwtcp\"\n";
    let sets: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    Scenario::from_toml_str(doc, "vehicular.toml", &sets).expect("valid")
}

#[test]
fn same_seed_gives_identical_summary_bytes() {
    let s = scenario(&["vehicular.hints=\"noisy\""]);
    let a = serde_json::to_string(&run(&s).expect("runs").summary_json()).expect("json");
    let b = serde_json::to_string(&run(&s).expect("runs").summary_json()).expect("json");
    assert_eq!(a, b);
    let other = scenario(&["vehicular.hints=\"noisy\"", "seed=8"]);
    let c = serde_json::to_string(&run(&other).expect("runs").summary_json()).expect("json");
    assert_ne!(a, c, "another seed, another world");
}

#[test]
fn the_urban_street_scene_has_outages_of_every_kind_and_they_cut_the_links() {
    let s = scenario(&["duration=\"4s\"", "vehicular.vehicles=20"]);
    let m = &s.model;
    let v = m.vehicular.as_ref().expect("vehicular");
    let tl = ChannelTimeline::record(v, m.duration_ns, m.seed).expect("records");
    let c = tl.counts;
    assert!(
        c.blockage > 0 && c.deafness > 0 && c.beam_misalignment > 0,
        "{c:?}"
    );
    assert_eq!(
        tl.events.len() as u64,
        c.blockage + c.deafness + c.beam_misalignment + c.handover
    );
    // Every vehicle's link is down some of the time but mostly up.
    let end = peregrine_sim::Time::from_nanos(m.duration_ns);
    let down: u64 = tl
        .capacity
        .iter()
        .map(|k| k.down_time(end).as_nanos() as u64)
        .sum();
    let total = m.duration_ns * tl.capacity.len() as u64;
    assert!(down > 0 && down < total / 2, "down {down} of {total}");
    let r = run_with_timeline(&s, Some(&tl)).expect("runs");
    let outage_drops: u64 = r.links.iter().map(|l| l.stats.outage_drops).sum();
    assert!(outage_drops > 0);
    let delivered: u64 = r.flows.iter().map(|f| f.metrics.c.rx_packets).sum();
    assert!(delivered > 1000, "{delivered}");
}
