//! `peregrine reproduce aqm`: the command end to end at a small size —
//! `summary.json`'s keys (the contract docs/scenarios.md documents), the
//! AQMs in the order the field claims, and the checked flags.

mod support;
use support::{peregrine, tempdir};

/// The figures every cell carries, each `{mean, ci95}`.
const CELL_KEYS: [&str; 10] = [
    "goodput_mbps",
    "queue_delay_p50_ms",
    "queue_delay_p99_ms",
    "queue_delay_p50_after_warmup_ms",
    "queue_delay_p99_after_warmup_ms",
    "priority_latency_p99_ms",
    "priority_latency_p99_after_warmup_ms",
    "ce_marked",
    "aqm_dropped",
    "queue_drops",
];

#[test]
fn reproduce_aqm_writes_the_documented_summary_and_the_aqms_order_as_claimed() {
    let tmp = tempdir("reproduce-aqm");
    let dir = tmp.path();
    let o = peregrine()
        .args(["reproduce", "aqm", "--quick", "--quiet", "--seeds", "1"])
        .args(["--duration-s", "5", "--out"])
        .arg(dir)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("26 runs"), "{stdout}");
    let text = std::fs::read_to_string(dir.join("aqm/summary.json")).expect("summary.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let keys = |x: &serde_json::Value| -> Vec<String> {
        x.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    assert_eq!(keys(&v), ["setup", "cells", "coexistence", "contenders"]);
    assert_eq!(v["setup"]["rate_mbps"], 20);
    assert_eq!(v["setup"]["rtt_ms"], 40);
    assert_eq!(v["setup"]["seeds"], 1);
    assert_eq!(
        keys(&v["cells"]),
        ["drop_tail", "codel", "fq_codel", "pie", "dualpi2"]
    );
    for (aqm, ccs) in v["cells"].as_object().expect("cells") {
        assert_eq!(
            keys(ccs),
            ["cubic", "cubic-sltp", "bbr", "bbr3", "prague"],
            "{aqm}"
        );
        for (cc, c) in ccs.as_object().expect("controllers") {
            assert_eq!(keys(c), CELL_KEYS, "{aqm} {cc}");
            for k in CELL_KEYS {
                assert!(c[k]["mean"].is_f64(), "{aqm} {cc} {k}");
                assert!(c[k]["ci95"].is_f64(), "{aqm} {cc} {k}");
            }
        }
    }
    let p99 = |aqm: &str| {
        v["cells"][aqm]["cubic"]["queue_delay_p99_after_warmup_ms"]["mean"]
            .as_f64()
            .expect("p99")
    };
    assert!(p99("fq_codel") < p99("drop_tail"), "{text}");
    assert!(p99("codel") < p99("drop_tail"));
    let k = &v["coexistence"];
    assert_eq!(k["aqm"], "dualpi2");
    assert_eq!(keys(&k["flows"]), ["prague", "cubic"]);
    for f in ["prague", "cubic"] {
        assert!(k["flows"][f]["share"]["mean"].is_f64(), "{f}");
        assert!(k["flows"][f]["queue_delay_p99_ms"]["mean"].is_f64(), "{f}");
    }
    // What each contender is: the field's CUBIC, and SLTP's beside it.
    let c = &v["contenders"];
    assert_eq!(keys(c), ["cubic", "cubic-sltp", "bbr", "bbr3", "prague"]);
    assert_eq!(c["cubic"]["cc"], "cubic");
    assert_eq!(c["cubic"]["ack_policy"], "tcp");
    assert_eq!(c["cubic"]["slow_start_exit"], "linux_hystart");
    assert_eq!(c["cubic-sltp"]["ack_policy"], "sltp");
    assert!(c["cubic"]["description"]
        .as_str()
        .is_some_and(|d| d.contains("Linux CUBIC")));
    assert!(dir.join("aqm/report.md").exists());
    assert!(dir.join("aqm/plots/goodput.svg").exists());
}

#[test]
fn a_run_no_longer_than_the_warm_up_is_refused_by_name() {
    let o = peregrine()
        .args(["reproduce", "aqm", "--quiet", "--duration-s", "2"])
        .output()
        .expect("runs");
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("--duration-s must be in (2, 3600]"),
        "{stderr}"
    );
}
