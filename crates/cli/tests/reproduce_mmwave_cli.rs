//! `peregrine reproduce mmwave-cvn`: the command's wiring to the lab.

mod support;
use support::peregrine;

#[test]
fn the_duration_reaches_the_lab_and_is_checked() {
    // The experiment itself runs in crates/lab/tests/experiments.rs; here
    // only the command's wiring, at no simulation cost.
    let o = peregrine()
        .args([
            "reproduce",
            "mmwave-cvn",
            "--quick",
            "--quiet",
            "--duration-s",
            "0",
        ])
        .output()
        .expect("runs");
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("--duration-s must be in (0, 3600]"),
        "{stderr}"
    );
}
