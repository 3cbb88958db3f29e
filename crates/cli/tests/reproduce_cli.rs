//! `peregrine reproduce quic-sched` (its hidden tiny mode) and the
//! no-argument showcase, run as a user would.

use std::process::Command;

mod support;
use support::{peregrine_in_root as peregrine, tempdir};

#[test]
fn quic_sched_tiny_runs_and_prints_table1() {
    // The experiment itself is tested in crates/lab/tests/experiments.rs;
    // here only the command's wiring (arguments, output folder, printing).
    let dir = tempdir("quic");
    let o = peregrine()
        .args(["reproduce", "quic-sched", "--tiny", "-q", "--out"])
        .arg(&dir)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Table 1"), "{stdout}");
    assert!(dir.join("quic-sched/summary.json").is_file());
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
