//! `peregrine reproduce quic-sched`: the command's wiring to the lab. The
//! experiments and the no-argument showcase run in
//! crates/lab/tests/experiments.rs (through their library functions).

mod support;
use support::{peregrine, tempdir};

#[test]
fn quic_sched_arguments_reach_the_lab() {
    // The experiment itself runs in crates/lab/tests/experiments.rs; here
    // only the command's wiring, at no simulation cost: --quick and --full
    // exclude each other, and an output folder that cannot be created is
    // the lab's clear error, printed by the command.
    let o = peregrine()
        .args(["reproduce", "quic-sched", "--quick", "--full"])
        .output()
        .expect("runs");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--full"));
    let tmp = tempdir("quic");
    let dir = tmp.path();
    let file = dir.join("a-file");
    std::fs::write(&file, "").expect("a file");
    let o = peregrine()
        .args(["reproduce", "quic-sched", "--tiny", "-q", "--out"])
        .arg(&file)
        .output()
        .expect("runs");
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.starts_with("error: cannot create"), "{stderr}");
}
