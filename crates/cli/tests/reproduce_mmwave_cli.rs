//! `peregrine reproduce mmwave-cvn --quick`, run as a user would (with a
//! hidden tiny duration so the test stays fast): it writes report.md and
//! a summary.json with exactly the contract's keys, and the same seed
//! gives the same summary bytes.

use std::path::Path;

mod support;
use support::{peregrine, tempdir};

fn quick(out: &Path) -> String {
    let o = peregrine()
        .args([
            "reproduce",
            "mmwave-cvn",
            "--quick",
            "--quiet",
            "--duration-s",
            "0.05",
            "--out",
        ])
        .arg(out)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn keys(v: &serde_json::Value) -> Vec<String> {
    v.as_object().expect("object").keys().cloned().collect()
}

#[test]
fn quick_writes_the_report_and_a_summary_with_the_exact_keys() {
    let (a, b) = (tempdir("a"), tempdir("b"));
    let stdout = quick(&a);
    assert!(stdout.contains("24 runs"), "{stdout}");
    let dir = a.join("mmwave-cvn");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    for needle in [
        "Fig. 8",
        "Fig. 9",
        "Figs. 10–11",
        "Link failures",
        "Published vs ours",
        "scaled",
    ] {
        assert!(report.contains(needle), "report lacks {needle}");
    }
    assert!(dir.join("plots/fig8_throughput_urban_random.svg").exists());
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(keys(&v), ["scenarios"]);
    let s = &v["scenarios"];
    assert_eq!(keys(s), ["urban_random"]);
    let h = &s["urban_random"];
    assert_eq!(keys(h), ["hints_perfect", "hints_noisy", "hints_absent"]);
    for hk in keys(h) {
        assert_eq!(keys(&h[&hk]), ["rtwtcp", "cubic", "compound", "bbr"]);
        for cc in keys(&h[&hk]) {
            assert_eq!(keys(&h[&hk][&cc]), ["load_0.6", "load_1.0"]);
            for l in ["load_0.6", "load_1.0"] {
                let p = &h[&hk][&cc][l];
                assert_eq!(keys(p), ["throughput_mbps", "rtt_ms"]);
                let t = p["throughput_mbps"].as_f64().expect("number");
                assert!(t > 0.0 && t.is_finite(), "{hk} {cc} {l}: {t}");
            }
        }
    }
    // Determinism: a second run writes the same bytes.
    quick(&b);
    let again = std::fs::read_to_string(b.join("mmwave-cvn/summary.json")).expect("again");
    assert_eq!(text, again);
    let r2 = std::fs::read_to_string(b.join("mmwave-cvn/report.md")).expect("report");
    assert_eq!(report, r2);
}
