//! Every example in `scenarios/` is valid and runs (shortened to 1 s; 8 s
//! for an OLSR swarm, whose flows open after the routing warm-up).
//! Scenarios that read `../shared/traces` are skipped with a notice when
//! that folder is not beside the workspace.

use peregrine_sim::{run, Scenario};
use std::path::Path;

#[test]
fn every_example_scenario_runs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    assert!(names.len() >= 4, "{names:?}");
    let shared =
        peregrine_sim::scenario::find_upwards(&dir, Path::new("../shared/traces")).is_some();
    for p in names {
        let text = std::fs::read_to_string(&p).expect("readable");
        // A swarm under OLSR opens its flows after the routing warm-up.
        let duration = if text.contains("protocol = \"olsr\"") {
            "duration=8s"
        } else {
            "duration=1s"
        };
        let mut set = vec![duration.to_string()];
        if text.contains("[[flow_groups]]") {
            // A swarm's size belongs in a benchmark run, not in the tests.
            set.push("flow_groups.0.count=50".to_string());
        }
        let s = Scenario::from_file(&p, &set).unwrap_or_else(|e| panic!("{e}"));
        if text.contains("../shared/") && !shared {
            eprintln!("skipping {}: ../shared/traces not found", p.display());
            continue;
        }
        let r = run(&s).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            r.flows.iter().any(|f| f.metrics.c.rx_packets > 0),
            "{}: data is delivered",
            p.display()
        );
    }
}
