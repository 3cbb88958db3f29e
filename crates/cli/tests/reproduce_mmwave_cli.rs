//! `peregrine reproduce mmwave-cvn --quick`, run as a user would (with a
//! hidden tiny duration so the test stays fast).

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

#[test]
fn quick_runs_and_writes_the_report_and_summary() {
    // The experiment itself is tested in crates/lab/tests/experiments.rs;
    // here only the command's wiring (arguments, output folder, printing).
    let a = tempdir("a");
    let stdout = quick(&a);
    assert!(stdout.contains("24 runs"), "{stdout}");
    assert!(a.join("mmwave-cvn/report.md").is_file());
    assert!(a.join("mmwave-cvn/summary.json").is_file());
}
