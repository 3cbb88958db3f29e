//! Determinism and regressions: a run twice gives identical bytes, and
//! the summary of a small scenario is compared with the committed one
//! (`tests/golden/small.summary.json`) as text, so a change in results
//! shows up as a diff. `PEREGRINE_BLESS=1 cargo test -p peregrine-sim
//! --test determinism` rewrites the golden file after a deliberate change.

use peregrine_sim::{run, Scenario};
use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn small() -> Scenario {
    Scenario::from_file(&golden_dir().join("small.toml"), &[])
        .expect("the golden scenario is valid")
}

fn out_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("peregrine-sim-det-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn two_runs_write_identical_bytes() {
    let s = small();
    let (a, b) = (out_dir("a"), out_dir("b"));
    run(&s).expect("runs").write_to(&a).expect("writes");
    run(&s).expect("runs").write_to(&b).expect("writes");
    let mut names: Vec<_> = std::fs::read_dir(&a)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    // summary.json and 7 CSVs (losses.csv since issue 39).
    assert_eq!(names.len(), 8);
    for n in names {
        let x = std::fs::read(a.join(&n)).expect("read a");
        let y = std::fs::read(b.join(&n)).expect("read b");
        assert!(x == y, "{n:?} differs between two runs of one seed");
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn another_seed_gives_other_results() {
    let a = run(&small()).expect("runs").summary_json();
    let s = Scenario::from_file(&golden_dir().join("small.toml"), &["seed=43".to_string()])
        .expect("valid");
    let b = run(&s).expect("runs").summary_json();
    assert_ne!(a["flows"], b["flows"]);
}

#[test]
fn golden_summary_matches() {
    let r = run(&small()).expect("runs");
    let mut text = serde_json::to_string_pretty(&r.summary_json()).expect("serializes");
    text.push('\n');
    let path = golden_dir().join("small.summary.json");
    if std::env::var_os("PEREGRINE_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &text).expect("bless writes the golden file");
        eprintln!("blessed {}", path.display());
        return;
    }
    let want = std::fs::read_to_string(&path)
        .expect("golden file exists (run with PEREGRINE_BLESS=1 to create it)");
    if want != text {
        let diff: Vec<String> = want
            .lines()
            .zip(text.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(20)
            .map(|(i, (a, b))| format!("line {}:\n  golden: {a}\n  now:    {b}", i + 1))
            .collect();
        panic!(
            "summary differs from tests/golden/small.summary.json ({} vs {} lines); first differences:\n{}\n\
             If the change is deliberate: PEREGRINE_BLESS=1 cargo test -p peregrine-sim --test determinism",
            want.lines().count(),
            text.lines().count(),
            diff.join("\n")
        );
    }
}
