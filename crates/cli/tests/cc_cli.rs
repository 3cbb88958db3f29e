//! `peregrine cc …` and the default showcase, run as a user would.

mod support;
use support::{peregrine, tempdir};

#[test]
fn cc_list_prints_all_sixteen_names() {
    let out = peregrine().args(["cc", "list"]).output().unwrap();
    assert!(out.status.success());
    let names: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(names, peregrine_cc::NAMES.map(str::to_string).to_vec());
}

#[test]
fn cc_trace_writes_the_csv_contract() {
    let tmp = tempdir("trace");
    let dir = tmp.path();
    let file = dir.join("cubic.csv");
    let out = peregrine()
        .args(["cc", "trace", "cubic", "--out"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(&file).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("time_s,cwnd_bytes,ssthresh_bytes,pacing_rate_bps,event")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.len() > 4000, "one row per 10 ms over 40 s at least");
    assert!(rows.iter().all(|r| r.len() == 5));
    assert!(rows.iter().any(|r| r[4] == "blockage_start"));
    let last: f64 = rows.last().unwrap()[0].parse().unwrap();
    assert!((last - 40.0).abs() < 1e-9);
}

#[test]
fn cc_trace_unknown_name_fails_with_one_line() {
    let out = peregrine().args(["cc", "trace", "tahoe"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("tahoe"));
}

#[test]
fn cc_plot_writes_one_svg_per_controller() {
    let tmp = tempdir("plot");
    let dir = tmp.path();
    let out = peregrine()
        .args(["cc", "plot", "--only", "newreno,rtwtcp", "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["newreno", "rtwtcp"] {
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
        assert!(svg.contains("<svg") && svg.contains("cwnd"), "{name}.svg");
    }
}

#[test]
fn cc_showcase_prints_the_table_and_writes_the_report() {
    let tmp = tempdir("showcase");
    let dir = tmp.path();
    let out = peregrine()
        .args(["cc", "showcase"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for name in peregrine_cc::NAMES {
        assert!(text.contains(&format!("| {name} |")), "no row for {name}");
    }
    let report = std::fs::read_to_string(dir.join("out/cc-lab/report.md")).unwrap();
    assert!(report.contains("![cubic](cubic.svg)"));
    assert!(dir.join("out/cc-lab/traces/rtwtcp.csv").exists());
}
