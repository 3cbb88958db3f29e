//! `peregrine sim` and `peregrine bench sim`, run as a user would.

use std::path::PathBuf;
use std::process::Command;

fn peregrine() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_peregrine"));
    // Relative paths in the tests are relative to the workspace root.
    c.current_dir(root());
    c
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("peregrine-sim-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

#[test]
fn sim_prints_a_table_and_writes_summary_and_csvs() {
    let dir = tempdir("run");
    let out = peregrine()
        .args([
            "sim",
            "scenarios/dumbbell.toml",
            "--set",
            "duration=3s",
            "--set",
            "flows.0.cc=bbr",
            "--out",
        ])
        .arg(&dir)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("bulk") && table.contains("bbr"), "{table}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"),
    )
    .expect("valid JSON");
    assert_eq!(summary["flows"][0]["cc"], "bbr");
    assert_eq!(summary["duration_s"], 3.0);
    assert!(summary["flows"][0]["rx_packets"].as_u64().expect("a count") > 100);
    for f in [
        "flows.csv",
        "timeseries.csv",
        "stream_timeseries.csv",
        "links.csv",
        "messages.csv",
    ] {
        let text = std::fs::read_to_string(dir.join(f)).expect("csv written");
        assert!(text.lines().count() > 1, "{f} has rows");
        assert!(
            !text.contains(&*root().to_string_lossy()),
            "{f} has no absolute path"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sim_errors_name_the_file_the_field_and_what_is_allowed() {
    let out = peregrine()
        .args([
            "sim",
            "scenarios/dumbbell.toml",
            "--no-write",
            "--set",
            "flows.0.cc=bbrr",
        ])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "scenarios/dumbbell.toml: flows.0.cc: unknown controller \"bbrr\" (allowed: newreno"
        ),
        "{err}"
    );
    let out = peregrine()
        .args([
            "sim",
            "scenarios/dumbbell.toml",
            "--no-write",
            "--set",
            "links.1.queue.packts=5",
        ])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("links.1.queue"), "{err}");
    assert!(err.contains("packts"), "{err}");
}

#[test]
fn bench_sim_reports_events_per_second() {
    let out = peregrine()
        .args(["bench", "sim", "--runs", "1", "--set", "duration=1s"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("simulated events per wall-second"), "{text}");
}
