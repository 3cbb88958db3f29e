//! `peregrine reproduce quic-sched` (its hidden tiny mode) and the
//! no-argument showcase, run as a user would.

use std::path::PathBuf;
use std::process::Command;

mod support;
use support::{peregrine_in_root as peregrine, tempdir};

#[test]
fn quic_sched_writes_the_table1_shape_report_csvs_and_plots() {
    let dir = tempdir("quic");
    let run = |out: &PathBuf| {
        let o = peregrine()
            .args(["reproduce", "quic-sched", "--tiny", "-q", "--out"])
            .arg(out)
            .output()
            .expect("runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let stdout = run(&dir.join("a"));
    assert!(stdout.contains("Table 1"), "{stdout}");
    let q = dir.join("a/quic-sched");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(q.join("summary.json")).expect("summary.json"),
    )
    .expect("valid JSON");
    let t1 = summary["table1"].as_object().expect("table1 object");
    assert_eq!(t1.keys().collect::<Vec<_>>(), ["wfq", "abs"]);
    for s in ["wfq", "abs"] {
        let by_size = t1[s].as_object().expect("sizes");
        assert_eq!(by_size.keys().collect::<Vec<_>>(), ["2", "4", "8", "16"]);
        for (_, by_loss) in by_size {
            let by_loss = by_loss.as_object().expect("losses");
            assert_eq!(by_loss.keys().collect::<Vec<_>>(), ["0", "5", "10"]);
            for g in by_loss.values() {
                let g = g.as_f64().expect("a number");
                assert!(g > -1.0 && g < 1.0, "gain {g}");
            }
        }
    }
    // ABS serves the priority stream first: with 16-packet messages and no
    // loss it must beat RR.
    assert!(t1["abs"]["16"]["0"].as_f64().expect("number") > 0.0);
    let report = std::fs::read_to_string(q.join("report.md")).expect("report.md");
    for part in [
        "(a) Fig. 5",
        "(b) Table 1",
        "(c) §4.3",
        "Differences from the seed",
    ] {
        assert!(report.contains(part), "no {part} in the report");
    }
    for f in ["table1.csv", "table1_gain.svg", "adaptive.csv"] {
        assert!(q.join(f).exists(), "{f} missing");
    }
    let table1_csv = std::fs::read_to_string(q.join("table1.csv")).expect("table1.csv");
    assert_eq!(table1_csv.lines().count(), 1 + 2 * 4 * 3);
    // Deterministic: a second run writes the same summary.
    run(&dir.join("b"));
    assert_eq!(
        std::fs::read_to_string(q.join("summary.json")).expect("a"),
        std::fs::read_to_string(dir.join("b/quic-sched/summary.json")).expect("b")
    );
}

#[test]
fn the_showcase_runs_and_writes_its_report() {
    let dir = tempdir("showcase");
    let out = Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .current_dir(&dir)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for s in ["| RR ", "| ABS ", "| EDF "] {
        assert!(text.contains(s), "no row {s}: {text}");
    }
    assert!(text.contains("report: out/showcase/report.md"), "{text}");
    let report = std::fs::read_to_string(dir.join("out/showcase/report.md")).expect("report");
    assert!(report.contains("![control-message latency per scheduler](latency_box.svg)"));
}
