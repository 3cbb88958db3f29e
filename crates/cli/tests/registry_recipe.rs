//! The registries (issue 34 item 3), seen from the command line: the
//! recipe of docs/architecture.md ("Adding a controller") followed once
//! for real — the test-only controller `fixed` (crates/cc/src/algos/fixed.rs
//! plus one line in crates/cc/src/registry.rs) runs through the CLI's
//! parsers, the controller lab and a short simulation — and the CLI's
//! lists checked against the scheduler and experiment registries.

mod support;
use support::{peregrine, peregrine_in_root, tempdir};

fn stdout(args: &[&str]) -> String {
    let out = peregrine().args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The largest `cwnd_bytes` of a `cc trace` CSV.
fn max_cwnd(csv: &str) -> u64 {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "cwnd_bytes")
        .expect("cwnd_bytes column");
    lines
        .map(|l| {
            l.split(',')
                .nth(col)
                .expect("a cell")
                .parse::<u64>()
                .expect("bytes")
        })
        .max()
        .expect("rows")
}

#[test]
fn a_registered_test_controller_runs_in_the_lab_and_the_simulator_but_is_not_listed() {
    // One registry line makes it known by name…
    let fixed = stdout(&["cc", "trace", "fixed"]);
    let cubic = stdout(&["cc", "trace", "cubic"]);
    // …and it behaves as its file says: the window never grows past
    // 10 segments, where CUBIC's does.
    let (f, c) = (max_cwnd(&fixed), max_cwnd(&cubic));
    assert!(f > 0 && f <= 10 * 1500, "fixed: max cwnd {f} B");
    assert!(c > 2 * f, "cubic {c} B vs fixed {f} B");
    // Unlisted: `cc list` (and every "all controllers" list) leaves it out.
    let list = stdout(&["cc", "list"]);
    assert!(!list.lines().any(|l| l == "fixed"), "{list}");
    assert!(peregrine_cc::registry::controller("fixed").is_some_and(|c| !c.listed));

    // A scenario's `cc` accepts it: a short simulation with it.
    let tmp = tempdir("fixed-sim");
    let dir = tmp.path();
    let out = peregrine_in_root()
        .args([
            "sim",
            "scenarios/dumbbell.toml",
            "--set",
            "duration=2s",
            "--set",
            "flows.0.cc=fixed",
            "--quiet",
            "--out",
        ])
        .arg(dir)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"),
    )
    .expect("JSON");
    assert_eq!(summary["flows"][0]["cc"], "fixed");
    assert!(summary["flows"][0]["rx_packets"].as_u64().expect("a count") > 10);

    // An unknown name is still refused, naming the listed controllers.
    let out = peregrine()
        .args(["cc", "trace", "tahoe"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"tahoe\"") && err.contains("rtwtcp") && !err.contains("fixed"),
        "{err}"
    );
}

#[test]
fn perf_scheduler_help_and_errors_come_from_the_scheduler_registry() {
    let syntax = peregrine_proto::sched::registry::cli_syntax();
    let help = stdout(&["perf", "client", "--help"]);
    assert!(
        help.contains(&format!("Stream scheduler: {syntax}")),
        "{help}"
    );
    let out = peregrine()
        .args(["perf", "client", "-c", "127.0.0.1:9", "--scheduler", "fifo"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("--scheduler: unknown `fifo` ({syntax})")),
        "{err}"
    );
}

#[test]
fn reproduce_offers_exactly_the_registered_experiments() {
    let help = stdout(&["reproduce", "--help"]);
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .expect("a command list")
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .take_while(|w| *w != "help")
        .collect();
    let registered: Vec<&str> = peregrine_lab::registry::EXPERIMENTS
        .iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(commands, registered, "{help}");
}

/// The backticked words of the first line of `doc` that starts with `row`.
fn doc_row_words(doc: &str, row: &str) -> Vec<String> {
    let text = std::fs::read_to_string(support::root().join(doc)).expect("the doc");
    let line = text
        .lines()
        .find(|l| l.starts_with(row))
        .unwrap_or_else(|| panic!("{doc}: no row {row}"));
    line.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_docs_scheduler_tables_list_the_scheduler_registry() {
    let names = peregrine_proto::sched::registry::names();
    // docs/scenarios.md: | `scheduler` | string | `"rr"` | stream scheduler: `rr`, … |
    let words = doc_row_words("docs/scenarios.md", "| `scheduler` |");
    assert_eq!(words[2..], names, "docs/scenarios.md's scheduler row");
    // docs/perf.md: | `--scheduler S` | `rr` | `rr`, `wfq`, …, `aging[:BOUND_MS]` … |
    let words = doc_row_words("docs/perf.md", "| `--scheduler S` |");
    let documented: Vec<&str> = words[2..]
        .iter()
        .map(|w| w.split(':').next().unwrap_or(w).trim_end_matches('['))
        .collect();
    assert_eq!(documented, names, "docs/perf.md's --scheduler row");
}

#[test]
fn sim_help_and_a_direction_without_a_model_come_from_the_link_model_registry() {
    use peregrine_sim::world::link_registry;
    let help = stdout(&["sim", "--help"]);
    assert!(help.contains(&link_registry::help_text()), "{help}");
    for name in link_registry::names() {
        assert!(help.contains(name), "{name} missing from sim --help");
    }
    // A link direction that gives neither a rate nor a trace: the error
    // lists what selects a link model, from the registry.
    let tmp = tempdir("link-models");
    let dir = tmp.path();
    let path = dir.join("no-model.toml");
    std::fs::write(
        &path,
        "duration = \"1s\"\nseed = 1\n[[links]]\na = \"x\"\nb = \"y\"\n[[flows]]\nsrc = \"x\"\ndst = \"y\"\n",
    )
    .expect("write");
    let out = peregrine()
        .args(["sim", path.to_str().expect("UTF-8"), "--no-write"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("links.0.rate") && err.contains(&link_registry::direction_fields_help()),
        "{err}"
    );
}
