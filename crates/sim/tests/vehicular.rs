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

/// Issue 23, deliverable 1: with a scheduler the base stations share
/// their air time. On the same channel (same seed), `pf` and `rr` never
/// give the vehicles together more than the stations' capacity, while
/// `unshared` does; sharing never invents or removes an outage; and a run
/// is deterministic.
#[test]
fn cells_share_their_capacity_and_keep_the_outages() {
    let record = |sched: &str| {
        let s = scenario(&[
            "duration=\"2s\"",
            "vehicular.vehicles=20",
            &format!("vehicular.scheduler=\"{sched}\""),
        ]);
        let m = &s.model;
        let v = m.vehicular.as_ref().expect("vehicular");
        let tl = ChannelTimeline::record(v, m.duration_ns, m.seed).expect("records");
        (
            tl,
            v.channel.capacity_cap_bps,
            v.config.base_stations.len() as u64,
        )
    };
    let (unshared, cap, stations) = record("unshared");
    let mut peak_unshared = 0u64;
    for sched in ["pf", "rr"] {
        let (shared, _, _) = record(sched);
        assert_eq!(shared.counts, unshared.counts, "{sched}: same channel");
        let mut peak = 0u64;
        for ms in 0..2000u64 {
            let t = peregrine_sim::Time::from_nanos(ms * 1_000_000 + 500_000);
            let mut total = 0u64;
            for (a, b) in shared.capacity.iter().zip(&unshared.capacity) {
                assert_eq!(a.at(t) == 0, b.at(t) == 0, "{sched} at {ms} ms");
                assert!(a.at(t) <= b.at(t));
                total += a.at(t);
            }
            peak = peak.max(total);
            peak_unshared =
                peak_unshared.max(unshared.capacity.iter().map(|c| c.at(t)).sum::<u64>());
        }
        assert!(
            peak <= stations * cap,
            "{sched}: {peak} > {stations} × {cap}"
        );
        assert!(peak > 0);
    }
    assert!(
        peak_unshared > stations * cap,
        "20 vehicles on 5 stations: unshared sums to {peak_unshared}"
    );
    let (again, _, _) = record("pf");
    let (first, _, _) = record("pf");
    assert_eq!(again.capacity, first.capacity, "deterministic");
}

/// `handover_buffer = "drop"` loses queued packets at handovers; `move`
/// keeps them (fewer outage drops, same channel).
#[test]
fn a_dropping_handover_loses_more_packets_than_a_moving_one() {
    let drops = |policy: &str| {
        let s = scenario(&[
            "duration=\"3s\"",
            "vehicular.vehicles=20",
            "vehicular.traffic=\"bulk\"",
            "vehicular.scheduler=\"pf\"",
            &format!("vehicular.handover_buffer=\"{policy}\""),
        ]);
        let m = &s.model;
        let v = m.vehicular.as_ref().expect("vehicular");
        let tl = ChannelTimeline::record(v, m.duration_ns, m.seed).expect("records");
        assert!(tl.counts.handover > 0, "{:?}", tl.counts);
        let r = run_with_timeline(&s, Some(&tl)).expect("runs");
        r.links.iter().map(|l| l.stats.outage_drops).sum::<u64>()
    };
    let (moved, dropped) = (drops("move"), drops("drop"));
    assert!(dropped > moved, "drop {dropped} vs move {moved}");
}

/// Issue 23, deliverable 2 end to end: the fading channel keeps the
/// event counts per kind, its capacity takes many values (not on/off) and
/// blockage no longer switches the link off.
#[test]
fn the_fading_channel_varies_continuously_and_counts_its_events() {
    let record = |model: &str| {
        let s = scenario(&[
            "duration=\"3s\"",
            "vehicular.vehicles=20",
            &format!("vehicular.channel_model=\"{model}\""),
        ]);
        let m = &s.model;
        let v = m.vehicular.as_ref().expect("vehicular");
        let tl = ChannelTimeline::record(v, m.duration_ns, m.seed).expect("records");
        let end = peregrine_sim::Time::from_nanos(m.duration_ns);
        let down: u64 = tl
            .capacity
            .iter()
            .map(|k| k.down_time(end).as_nanos() as u64)
            .sum();
        let mut levels: Vec<u64> = tl
            .capacity
            .iter()
            .flat_map(|k| k.steps().iter().map(|s| s.1))
            .collect();
        levels.sort_unstable();
        levels.dedup();
        (tl.counts, down, levels.len())
    };
    let (outage, outage_down, outage_levels) = record("outage");
    let (fading, fading_down, fading_levels) = record("fading");
    assert!(fading.blockage > 0 && fading.deafness > 0, "{fading:?}");
    // More than on/off — but few levels: with the 2 Gbit/s cap, a 100 m
    // cell's line-of-sight links sit at the cap (status-23 "known
    // problems"); the levels come from blocked and far links.
    assert!(
        fading_levels > outage_levels,
        "{fading_levels} vs {outage_levels}"
    );
    eprintln!(
        "outage {outage:?} down {outage_down} ns, {outage_levels} levels; \
         fading {fading:?} down {fading_down} ns, {fading_levels} levels"
    );
    assert!(
        fading_down < outage_down,
        "blockage attenuates: down {fading_down} ns vs {outage_down} ns ({outage:?})"
    );
}

/// Issue 23, deliverable 3 end to end: a named hint source changes the
/// run (its hints are estimates, not the outages' durations) and is
/// deterministic; the oracle default leaves older outputs as they were.
#[test]
fn named_hint_sources_run_deterministically_and_differ_from_the_oracle() {
    let summary = |source: &str| {
        let s = scenario(&[
            "duration=\"2s\"",
            "vehicular.vehicles=10",
            "vehicular.traffic=\"bulk\"",
            "vehicular.hints=\"noisy\"",
            &format!("vehicular.hint_source=\"{source}\""),
        ]);
        serde_json::to_string(&run(&s).expect("runs").summary_json()).expect("json")
    };
    let oracle = summary("oracle");
    for source in ["base_station", "mobility"] {
        let a = summary(source);
        assert_eq!(a, summary(source), "{source}: deterministic");
        assert_ne!(a, oracle, "{source}: other hints, another run");
    }
}

/// Issue 23, deliverable 4: ON/OFF traffic offers about half of what CBR
/// offers at the same load with equal mean ON and OFF periods.
#[test]
fn onoff_traffic_offers_about_half_of_cbr() {
    let rx = |traffic: &str| {
        let s = scenario(&[
            "duration=\"20s\"",
            "vehicular.vehicles=4",
            "vehicular.load=0.2",
            "vehicular.onoff_mean_on=\"500ms\"",
            "vehicular.onoff_mean_off=\"500ms\"",
            &format!("vehicular.traffic=\"{traffic}\""),
        ]);
        let r = run(&s).expect("runs");
        r.flows.iter().map(|f| f.metrics.c.rx_packets).sum::<u64>() as f64
    };
    let (cbr, onoff) = (rx("cbr"), rx("onoff"));
    let ratio = onoff / cbr;
    assert!((0.3..0.7).contains(&ratio), "onoff/cbr = {ratio}");
}

/// Issue 23, deliverable 4: the highway world of `scenarios/mmwave-highway.toml`
/// (0.119 vehicles/m, 50.08 km/h mean, ON/OFF traffic) records a channel
/// with deafness and handovers between the road-side stations,
/// deterministically, and its ON/OFF flows run on it. (No blockage is
/// asserted: with 2 m vehicle bodies, 1.5 m antennas and 5 m stations on
/// the verges the ray clears the neighbours in this geometry — measured,
/// a known limit of the model reported with issue 23.)
#[test]
fn the_highway_scenario_hands_over_and_runs_onoff_traffic() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/mmwave-highway.toml"
    );
    let text = std::fs::read_to_string(path).expect("the scenario file");
    let s = Scenario::from_toml_str(&text, path, &["duration=\"3s\"".to_string()]).expect("valid");
    let m = &s.model;
    let v = m.vehicular.as_ref().expect("vehicular");
    let density = v.config.vehicles as f64 / v.config.area_m[0];
    assert!((density - 0.119).abs() < 0.001, "{density}");
    let mean_kmh = (v.config.speed_min_mps + v.config.speed_max_mps) / 2.0 * 3.6;
    assert!((mean_kmh - 50.08).abs() < 0.01, "{mean_kmh}");
    let tl = ChannelTimeline::record(v, m.duration_ns, m.seed).expect("records");
    let again = ChannelTimeline::record(v, m.duration_ns, m.seed).expect("records");
    assert_eq!(format!("{:?}", tl.events), format!("{:?}", again.events));
    assert!(
        tl.counts.deafness > 0 && tl.counts.handover > 0,
        "{:?}",
        tl.counts
    );
    let r = run_with_timeline(&s, Some(&tl)).expect("runs");
    let bits: f64 = r.flows.iter().map(|f| f.goodput_bps(r.duration_ns)).sum();
    // 20 ON/OFF flows at 50 Mbit/s while ON share 5 × 50 Mbit/s of cells.
    assert!(bits > 10e6 && bits < 250e6, "{bits}");
}

/// Issue 39: the per-loss attribution log. Every dropped forward DATA
/// packet is one row of `losses.csv` with its ground truth; with perfect
/// hints every drop the link's outage caused is covered by a hint (the
/// hint announces exactly that outage), the counters in `summary.json`
/// add up to the log, and a run without hints reports no hinted loss.
#[test]
fn the_loss_log_attributes_every_drop_and_perfect_hints_cover_the_outages() {
    let s = scenario(&[
        "duration=\"2s\"",
        "vehicular.vehicles=12",
        "vehicular.hints=\"perfect\"",
    ]);
    let r = run(&s).expect("runs");
    let csv = r.losses_csv();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("time_s,flow,cause,hinted"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let drops: u64 = r.flows.iter().map(|f| f.metrics.losses.len() as u64).sum();
    assert_eq!(rows.len() as u64, drops);
    let blockage: Vec<_> = rows.iter().filter(|r| r[2] == "blockage").collect();
    assert!(!blockage.is_empty(), "the outages cut packets");
    assert!(
        blockage.iter().all(|r| r[3] == "true"),
        "perfect hints cover every outage drop"
    );
    let summary = r.summary_json();
    for (f, flow) in r
        .flows
        .iter()
        .zip(summary["flows"].as_array().expect("flows"))
    {
        let Some(a) = flow.get("loss_attribution") else {
            assert!(f.metrics.hints.is_empty());
            continue;
        };
        let sum: u64 = ["blockage", "fade", "queue_overflow"]
            .iter()
            .map(|c| a[c]["hinted"].as_u64().unwrap() + a[c]["unhinted"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, f.metrics.losses.len() as u64, "{}", f.name);
    }
    let none = run(&scenario(&[
        "duration=\"2s\"",
        "vehicular.vehicles=12",
        "vehicular.hints=\"absent\"",
    ]))
    .expect("runs");
    assert!(none
        .losses_csv()
        .lines()
        .skip(1)
        .all(|l| l.ends_with(",false")));
}

/// Issue 39: with `cell_demand = "backlogged"` the cells follow the
/// traffic. Half the vehicles never open their flow, the others are
/// bulk: under the full-buffer schedule an idle vehicle keeps its share
/// of its cell's air time and it is wasted; when the cells follow the
/// traffic the backlogged vehicles get it, so together they deliver
/// clearly more (and the idle ones nothing either way). Deterministic.
#[test]
fn cells_that_follow_traffic_hand_an_idle_share_to_the_backlogged() {
    let goodput = |demand: &str| {
        let mut s = scenario(&[
            "duration=\"4s\"",
            "vehicular.vehicles=12",
            "vehicular.scheduler=\"pf\"",
            "vehicular.traffic=\"bulk\"",
            "vehicular.cc=\"cubic\"",
            &format!("vehicular.cell_demand=\"{demand}\""),
        ]);
        let first = s.model.vehicular.as_ref().expect("vehicular").first_flow;
        let never = s.model.duration_ns + 1_000_000_000;
        for f in s.model.flows[first..].iter_mut().skip(1).step_by(2) {
            f.start_ns = never;
        }
        let r = run(&s).expect("runs");
        let per_flow: Vec<u64> = r.flows.iter().map(|f| f.metrics.c.goodput_bytes).collect();
        let json = serde_json::to_string(&r.summary_json()).expect("json");
        (per_flow, json)
    };
    let (full, _) = goodput("full_buffer");
    let (follow, a) = goodput("backlogged");
    let (_, b) = goodput("backlogged");
    assert_eq!(a, b, "deterministic");
    let idle = |v: &[u64]| v.iter().skip(1).step_by(2).sum::<u64>();
    assert_eq!((idle(&full), idle(&follow)), (0, 0));
    let (full, follow) = (full.iter().sum::<u64>(), follow.iter().sum::<u64>());
    assert!(
        follow as f64 > 1.2 * full as f64,
        "backlogged {follow} B vs full buffer {full} B"
    );
}
