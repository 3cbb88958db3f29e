//! `peregrine sim` and `peregrine bench sim`, run as a user would.

mod support;
use support::{peregrine_in_root as peregrine, root, tempdir};

#[test]
fn sim_prints_a_table_and_writes_summary_and_csvs() {
    let tmp = tempdir("run");
    let dir = tmp.path();
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
        .arg(dir)
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
    for f in ["throughput.svg", "cwnd.svg", "rtt.svg", "latency_cdf.svg"] {
        let svg = std::fs::read_to_string(dir.join("plots").join(f)).expect("plot drawn");
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{f}"
        );
    }
    assert!(table.contains("wrote ") && table.contains("(throughput, cwnd, RTT, latency CDF)"));
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

#[test]
fn bench_sim_json_reports_events_wall_and_peak_rss() {
    let out = peregrine()
        .args([
            "bench",
            "sim",
            "scenarios/fanet.toml",
            "--runs",
            "2",
            "--set",
            "duration=2s",
            "--json",
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["scenario"], "fanet");
    assert_eq!(v["simulated_seconds"], 2.0);
    let events = v["events"].as_u64().expect("events");
    // 2 s of fanet is OLSR only (the flow opens at 5 s): 148 events.
    assert!(events > 100, "{v}");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["events"].as_u64() == Some(events)));
    assert!(v["wall_seconds"].as_f64().expect("wall") > 0.0);
    assert!(v["events_per_second"].as_f64().expect("rate") > 0.0);
    assert!(v["peak_rss_bytes"].as_u64().expect("rss") > 1 << 20);
    assert!(v["user_cpu_seconds"].as_f64().is_some());
    // A bad count is an error naming the flag, not a silent default.
    let out = peregrine()
        .args(["bench", "sim", "--runs", "0"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--runs"));
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
    let tmp = tempdir("sweep");
    let dir = tmp.path();
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
    let tmp = tempdir("sweep-table");
    let dir = tmp.path();
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

/// Issue 27: bare numbers and negative values are errors with the exact
/// field and a suggested unit.
#[test]
fn sim_rejects_rates_and_durations_without_units_or_with_a_sign() {
    for (set, message) in [
        (
            "links.1.rate=5",
            "scenarios/dumbbell.toml: links.1.rate: write a unit, e.g. \"5Mbps\"",
        ),
        (
            "links.1.delay=20",
            "scenarios/dumbbell.toml: links.1.delay: write a unit, e.g. \"20ms\"",
        ),
        (
            "links.1.delay=-20ms",
            "scenarios/dumbbell.toml: links.1.delay: \"-20ms\" is negative: a duration must be zero or more",
        ),
        (
            "duration=-5",
            "scenarios/dumbbell.toml: duration: \"-5\" is negative: a duration must be zero or more",
        ),
    ] {
        let out = peregrine()
            .args(["sim", "scenarios/dumbbell.toml", "--no-write", "--set", set])
            .output()
            .expect("runs");
        assert!(!out.status.success(), "{set} must fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{set}: {err}");
    }
}

/// Issue 27: a run where no flow ever connects is flagged in the table and
/// on stderr, and the command fails.
#[test]
fn sim_fails_when_every_flow_failed() {
    let tmp = tempdir("allfail");
    let dir = tmp.path();
    let file = dir.join("dead.toml");
    std::fs::write(
        &file,
        "name = \"dead\"\nduration = \"2s\"\nseed = 1\n[[links]]\na = \"s\"\nb = \"r\"\n\
         rate = \"1Mbps\"\ndelay = \"10ms\"\nloss = { model = \"bernoulli\", p = 1.0 }\n\
         [[flows]]\nname = \"doomed\"\nsrc = \"s\"\ndst = \"r\"\n[[flows.streams]]\napp = \"bulk\"\n",
    )
    .expect("write scenario");
    let out = peregrine()
        .arg("sim")
        .arg(&file)
        .arg("--no-write")
        .output()
        .expect("runs");
    assert!(
        !out.status.success(),
        "every flow failed: the command must fail"
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("  ✗ never connected"), "{table}");
    assert!(
        table.contains("✗: the flow never connected or delivered nothing"),
        "{table}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: flow doomed (s → r) never connected (0 of "),
        "{err}"
    );
    assert!(err.contains("every flow failed (1 of 1)"), "{err}");
}

/// `--no-plots` writes the data but no `plots/`.
#[test]
fn sim_no_plots_skips_the_charts() {
    let tmp = tempdir("noplots");
    let dir = tmp.path();
    let out = peregrine()
        .args([
            "sim",
            "scenarios/dumbbell.toml",
            "--set",
            "duration=1s",
            "--no-plots",
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
    assert!(dir.join("summary.json").is_file());
    assert!(!dir.join("plots").exists());
}

#[test]
fn sim_pcap_writes_one_capture_per_link_direction_and_refuses_sweeps() {
    let tmp = tempdir("pcap");
    let dir = tmp.path();
    let out = peregrine()
        .args([
            "sim",
            "scenarios/dumbbell.toml",
            "--set",
            "duration=1s",
            "--no-write",
            "--pcap",
        ])
        .arg(dir)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for link in ["access-s0", "bottleneck", "access-r0"] {
        for d in ["up", "down"] {
            let f = dir.join(format!("{link}.{d}.pcapng"));
            let bytes = std::fs::read(&f).expect("capture written");
            assert_eq!(&bytes[..4], &[0x0a, 0x0d, 0x0d, 0x0a], "{}", f.display());
        }
    }
    let out = peregrine()
        .args(["sim", "scenarios/dumbbell.toml", "--seeds", "2", "--pcap"])
        .arg(dir)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--pcap records one run; a sweep runs many"),
        "{err}"
    );
}

#[test]
fn sim_qlog_then_qlog_plot_draws_the_congestion_view() {
    let tmp = tempdir("qlog");
    let dir = tmp.path();
    let out = peregrine()
        .args([
            "sim",
            "scenarios/dumbbell.toml",
            "--set",
            "duration=2s",
            "--no-write",
            "--qlog",
        ])
        .arg(dir.join("q"))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let client = std::fs::read_dir(dir.join("q"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("bulk-client-"))
        .expect("the client's qlog");
    let out = peregrine()
        .args(["qlog", "plot"])
        .arg(&client)
        .arg("--out")
        .arg(dir.join("plots"))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stem = client.file_stem().unwrap().to_string_lossy().into_owned();
    for kind in ["window", "rtt"] {
        let svg = std::fs::read_to_string(dir.join("plots").join(format!("{stem}-{kind}.svg")))
            .expect("svg written");
        assert!(svg.contains("<svg") && svg.contains("time (s)"), "{kind}");
    }
    // Not a qlog file: one line naming it.
    let out = peregrine()
        .args(["qlog", "plot", "scenarios/dumbbell.toml"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dumbbell.toml"), "{err}");
}
