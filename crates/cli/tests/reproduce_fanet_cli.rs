//! `peregrine reproduce fanet`, run as a user would (1 seed, 3 s runs).

use serde_json::Value;

mod support;
use support::{peregrine_in_root, tempdir};

const CONTROLLERS: [&str; 13] = [
    "newreno",
    "hybla",
    "highspeed",
    "htcp",
    "vegas",
    "scalable",
    "veno",
    "bic",
    "yeah",
    "cubic",
    "westwood",
    "illinois",
    "shtcp",
];
const KEYS: [&str; 6] = [
    "pdr",
    "throughput_pct",
    "delay_ms_mean",
    "jitter_ms_mean",
    "cwnd_cma_final",
    "route_changes",
];

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn reproduce_fanet_writes_report_and_summary_with_the_exact_keys() {
    let dir = tempdir("quick");
    let out = peregrine_in_root()
        .args([
            "reproduce",
            "fanet",
            "--quick",
            "--seeds",
            "1",
            "--duration",
            "3s",
        ])
        .arg("--out")
        .arg(&dir)
        .arg("--quiet")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "failed: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("26 runs"), "{stdout}");

    let text = std::fs::read_to_string(dir.join("fanet/summary.json")).expect("summary.json");
    let v: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(keys(&v), ["controllers", "ci95"]);
    assert_eq!(keys(&v["controllers"]), CONTROLLERS);
    assert_eq!(keys(&v["ci95"]), CONTROLLERS);
    for c in CONTROLLERS {
        assert_eq!(keys(&v["controllers"][c]), KEYS, "{c}");
        assert_eq!(keys(&v["ci95"][c]), KEYS, "{c}");
        let pdr = v["controllers"][c]["pdr"].as_f64().expect("pdr");
        assert!(pdr > 0.0 && pdr <= 1.0, "{c}: pdr {pdr}");
        let thr = v["controllers"][c]["throughput_pct"].as_f64().expect("thr");
        assert!(thr > 0.0 && thr < 100.0, "{c}: {thr} %");
        // One seed: no confidence interval.
        assert!(v["ci95"][c]["pdr"].is_null());
    }

    let report = std::fs::read_to_string(dir.join("fanet/report.md")).expect("report.md");
    for part in [
        "Table 1",
        "Fig. 4",
        "Fig. 3",
        "Fig. 5",
        "Figs. 6–9",
        "S-HTCP against H-TCP",
        "Extended case",
        "How often routes change",
        "Where and why the numbers differ",
    ] {
        assert!(report.contains(part), "report lacks {part:?}");
    }
    assert!(dir.join("fanet/plots/fig4_throughput_load.svg").is_file());
    let runs = std::fs::read_to_string(dir.join("fanet/runs.jsonl")).expect("runs.jsonl");
    assert_eq!(runs.lines().count(), 26);
}
