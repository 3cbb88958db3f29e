//! The make-before-break part of `reproduce mmwave-cvn` (issue 29): one
//! world — `scenarios/handover-multicast.toml`'s, one vehicle driving
//! past two road-side stations — run for [`HANDOVER_SEEDS`] seeds; in each
//! run the same messages reach the vehicle as a unicast stream over
//! today's handover (the link down for the handover interruption) and as
//! a group stream received over two attachments
//! (`peregrine_sim::engine::handover`). Its own runs, cheap (one vehicle,
//! 12 simulated seconds each), independent of the grid.

use super::Stat;
use crate::report::{Cell, Report, Table};
use peregrine_sim::engine::handover::HandoverResult;
use peregrine_sim::metrics::handover::StreamMeasures;
use peregrine_sim::scenario::units::{Dur, Rate};
use peregrine_sim::scenario::vehicular::VehicularConfig;
use peregrine_sim::scenario::ScenarioConfig;
use peregrine_sim::world::channel::mmwave::Environment;
use peregrine_sim::{run, Scenario};
use serde::{Deserialize, Serialize};

/// Runs of the part (seeds 1, 2, …).
pub const HANDOVER_SEEDS: u32 = 5;
/// Simulated seconds per run.
pub const HANDOVER_DURATION_S: f64 = 12.0;
/// How long the old attachment is kept after a handover.
pub const OVERLAP_MS: u64 = 100;

/// The world of `scenarios/handover-multicast.toml`, `seed`. O(1).
pub fn scenario(seed: u64) -> ScenarioConfig {
    let mut s = ScenarioConfig::new(Dur::from_secs_f64(HANDOVER_DURATION_S), seed);
    s.name = Some("handover-multicast".into());
    s.metrics.interval = Dur::from_millis(100);
    s.metrics.per_message = false;
    s.vehicular = Some(VehicularConfig {
        environment: Environment::Rural,
        mobility: "highway".into(),
        vehicles: 1,
        area_m: [300.0, 40.0],
        base_stations: vec![[75.0, 10.0], [225.0, 10.0]],
        speed_min_mps: 20.0,
        speed_max_mps: 20.0,
        cc: "cubic".into(),
        traffic: "cbr".into(),
        load: 0.05,
        rate_scale: 0.025,
        core_delay: Dur::from_millis(1),
        payload_bytes: 1200,
        handover: "make_before_break".into(),
        overlap: Dur::from_millis(OVERLAP_MS),
        group_rate: Rate(4_000_000),
        ..VehicularConfig::default()
    });
    s
}

/// One stream's figures over the part's runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamFigures {
    /// Mean over runs of the longest gap around a handover, ms.
    pub interruption_ms: f64,
    /// Its 95 % half-width.
    pub interruption_ci95_ms: f64,
    /// The longest gap of all runs, ms.
    pub interruption_max_ms: f64,
    /// Messages never delivered, all runs.
    pub messages_lost: u64,
    /// Messages delivered twice, all runs (must be 0).
    pub messages_duplicated: u64,
    /// Copies removed by the receiver, all runs.
    pub duplicates_removed: u64,
    /// Mean over runs of the least 100 ms throughput around a handover
    /// over the mean.
    pub throughput_dip: f64,
}

/// `summary.json`'s `handover_multicast`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HandoverSummary {
    /// Runs (seeds).
    pub runs: u32,
    /// Handovers over all runs.
    pub handovers: u64,
    /// The overlap, ms.
    pub overlap_ms: u64,
    /// Today's handover.
    pub unicast: StreamFigures,
    /// The group stream over two attachments.
    pub make_before_break: StreamFigures,
}

fn figures<'a>(runs: impl Iterator<Item = &'a StreamMeasures> + Clone) -> StreamFigures {
    let gaps: Vec<f64> = runs.clone().filter_map(|m| m.interruption_ms).collect();
    let dips: Vec<f64> = runs.clone().filter_map(|m| m.throughput_dip).collect();
    let g = Stat::of(&gaps);
    StreamFigures {
        interruption_ms: g.mean,
        interruption_ci95_ms: g.ci95.unwrap_or(0.0),
        interruption_max_ms: gaps.iter().copied().fold(0.0, f64::max),
        messages_lost: runs.clone().map(|m| m.messages_lost).sum(),
        messages_duplicated: runs.clone().map(|m| m.messages_duplicated).sum(),
        duplicates_removed: runs.clone().map(|m| m.duplicates_removed).sum(),
        throughput_dip: Stat::of(&dips).mean,
    }
}

/// Runs the part: `seeds` runs (seeds 1 …). Cost: `seeds` one-vehicle
/// simulations of [`HANDOVER_DURATION_S`].
pub fn run_part(seeds: u32) -> anyhow::Result<HandoverSummary> {
    let mut results: Vec<HandoverResult> = Vec::new();
    for seed in 1..=u64::from(seeds.max(1)) {
        let s = Scenario::from_config(scenario(seed), "mmwave-cvn handover")?;
        let r = run(&s)?;
        results.extend(r.handover_multicast);
    }
    let uni: Vec<StreamMeasures> = results.iter().map(HandoverResult::unicast).collect();
    let mbb: Vec<StreamMeasures> = results
        .iter()
        .map(HandoverResult::make_before_break)
        .collect();
    Ok(HandoverSummary {
        runs: results.len() as u32,
        handovers: results
            .iter()
            .flat_map(|r| &r.vehicles)
            .map(|v| v.handovers.len() as u64)
            .sum(),
        overlap_ms: OVERLAP_MS,
        unicast: figures(uni.iter()),
        make_before_break: figures(mbb.iter()),
    })
}

/// The report's section: the table, unicast vs make-before-break.
pub fn section(h: &HandoverSummary, rep: &mut Report) {
    rep.heading(2, "Make-before-break handover (issue 29)");
    rep.paragraph(&format!(
        "One vehicle at 20 m/s passes two road-side stations (`scenarios/handover-multicast.toml`, \
         {} runs of {HANDOVER_DURATION_S} s, {} handovers). The same 1200-byte messages at \
         4 Mbit/s reach it as a unicast stream over today's handover (the link is down for the \
         handover interruption) and as a group stream: while the next station beats the serving \
         one by the hysteresis the vehicle holds a second attachment, joins the group through it \
         and leaves the old station {} ms after the handover; one receiver merges both and drops \
         the copies. Interruption: the longest gap between consecutive deliveries around a \
         handover (mean over runs of each run's worst, and the worst of all); dip: the least \
         bytes delivered in a 100 ms window around a handover over the mean.",
        h.runs, h.handovers, h.overlap_ms
    ));
    let mut t = Table::new([
        "stream",
        "interruption (ms)",
        "worst interruption (ms)",
        "messages lost",
        "delivered twice",
        "copies removed",
        "throughput dip",
    ]);
    for (name, f) in [
        ("unicast (break-before-make)", &h.unicast),
        ("group, make-before-break", &h.make_before_break),
    ] {
        t.row([
            Cell::Text(name.into()),
            Cell::mean_ci(f.interruption_ms, Some(f.interruption_ci95_ms), 1),
            Cell::num(f.interruption_max_ms, 1),
            Cell::num(f.messages_lost as f64, 0),
            Cell::num(f.messages_duplicated as f64, 0),
            Cell::num(f.duplicates_removed as f64, 0),
            Cell::num(f.throughput_dip, 2),
        ]);
    }
    rep.table(Some("Unicast vs make-before-break across handovers"), &t);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The part's world is the scenario file's.
    #[test]
    fn the_part_is_the_scenario_file() {
        let p =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/handover-multicast.toml");
        let file = Scenario::from_file(&p, &["seed=1".to_string()]).expect("valid");
        let built = Scenario::from_config(scenario(1), "t").expect("valid");
        assert_eq!(
            format!("{:?}", file.model.vehicular.map(|v| v.config)),
            format!("{:?}", built.model.vehicular.map(|v| v.config))
        );
        assert_eq!(file.model.duration_ns, built.model.duration_ns);
    }

    /// Two runs: make-before-break removes the interruption, the unicast
    /// stream keeps it, and the table says so.
    #[test]
    fn the_part_compares_the_two_streams() {
        let h = run_part(2).expect("runs");
        assert_eq!(h.runs, 2);
        assert!(h.handovers >= 2, "{h:?}");
        assert!(h.unicast.interruption_ms > h.make_before_break.interruption_ms);
        assert!(h.make_before_break.interruption_max_ms <= OVERLAP_MS as f64);
        assert_eq!(h.make_before_break.messages_duplicated, 0);
        assert!(h.make_before_break.duplicates_removed > 0);
        let dir = std::env::temp_dir();
        let mut rep = Report::new("t", &dir);
        section(&h, &mut rep);
        let text = format!("{rep:?}");
        assert!(text.contains("group, make-before-break"), "{text}");
    }
}
