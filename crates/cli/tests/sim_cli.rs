//! `peregrine sim` and `peregrine bench sim`, run as a user would.

mod support;
use support::{peregrine_in_root as peregrine, root, tempdir};

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

/// A tiny scenario for sweeps: a bulk and a CBR stream over 2 Mbit/s with
/// 2 % loss (so seeds differ), 2 s.
const TINY: &str = r#"
name = "tiny"
duration = "2s"
seed = 7
[[links]]
a = "s"
b = "r"
rate = "2Mbps"
delay = "10ms"
up = { loss = { model = "bernoulli", p = 0.02 } }
[[flows]]
src = "s"
dst = "r"
[[flows.streams]]
app = "cbr"
rate = "100kbps"
priority = 0
[[flows.streams]]
app = "bulk"
priority = 3
buffer_bytes = 65536
"#;

#[test]
fn sim_sweep_writes_outputs_deterministically() {
    let dir = tempdir("sweep");
    let scenario = dir.join("tiny.toml");
    std::fs::write(&scenario, TINY).expect("write scenario");
    let mut outputs = Vec::new();
    for (i, threads) in ["1", "2"].iter().enumerate() {
        let out_dir = dir.join(format!("out{i}"));
        let out = peregrine()
            .arg("sim")
            .arg(&scenario)
            .args([
                "--sweep",
                "flows.0.scheduler=rr,abs",
                "--seeds",
                "2",
                "--threads",
                threads,
                "-q",
                "--out",
            ])
            .arg(&out_dir)
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("flows.0.scheduler=abs"), "{stdout}");
        let read = |name: &str| std::fs::read_to_string(out_dir.join(name)).expect(name);
        let csv = read("sweep.csv");
        assert!(csv.starts_with("point,key,n,mean,ci95,std,min,median,max\n"));
        assert!(
            csv.contains("flows.0.scheduler=abs,/flows/0/goodput_bps,2,"),
            "{csv}"
        );
        assert_eq!(read("runs.jsonl").lines().count(), 4);
        let report = read("report.md");
        assert!(report.contains("2 grid point(s) × 2 seed(s) (seeds 7 to 8) = 4 runs."));
        assert!(
            report.contains("plots/flows_0_streams_0_latency_mean_ms.svg"),
            "{report}"
        );
        assert!(out_dir.join("plots/flows_0_goodput_bps.svg").exists());
        let parquet = std::fs::read(out_dir.join("runs.parquet")).expect("runs.parquet");
        assert!(parquet.starts_with(b"PAR1") && parquet.ends_with(b"PAR1"));
        assert!(stdout.contains("runs.parquet"), "{stdout}");
        outputs.push((csv, read("sweep.json"), report, read("runs.jsonl"), parquet));
    }
    assert_eq!(outputs[0], outputs[1], "outputs depend on the thread count");
    // Different seeds gave different runs (2 % loss), so the CI is not zero.
    let j: serde_json::Value = serde_json::from_str(&outputs[0].1).expect("json");
    assert_eq!(j["points"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_sweep_table_in_the_scenario_runs_a_sweep() {
    let dir = tempdir("sweep-table");
    let scenario = dir.join("tiny.toml");
    std::fs::write(
        &scenario,
        format!(
            "{TINY}\n[sweep]\nseeds = 2\n[sweep.grid]\n\"links.0.rate\" = [\"1Mbps\", \"2Mbps\"]\n"
        ),
    )
    .expect("write scenario");
    let out = peregrine()
        .arg("sim")
        .arg(&scenario)
        .args(["-q", "--out"])
        .arg(dir.join("out"))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(dir.join("out/sweep.csv")).expect("sweep.csv");
    assert!(csv.contains("links.0.rate=1Mbps"), "{csv}");
    assert!(csv.contains("links.0.rate=2Mbps"), "{csv}");
}
