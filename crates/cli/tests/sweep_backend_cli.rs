//! `peregrine sim --sweep … --backend … --resume`, run as a user would:
//! Ctrl-C keeps the finished runs, `--resume` runs only the missing ones
//! and ends with the files a sweep run in one go writes; bad backend
//! settings are errors in words. (The Ray backend's two-node test is
//! `crates/py/tests/test_ray_cluster.py`: it needs Ray.)

mod support;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use support::{peregrine, tempdir};

/// A bulk and a CBR stream over a lossy 50 Mbit/s link for 240 s: a few
/// seconds per run, long enough to interrupt a sweep half-way.
const SLOW: &str = r#"
name = "slow"
duration = "240s"
seed = 7
[[links]]
a = "s"
b = "r"
rate = "50Mbps"
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

const GRID: [&str; 6] = [
    "--sweep",
    "flows.0.scheduler=rr,abs",
    "--seeds",
    "12",
    "--threads",
    "1",
];

fn sweep(scenario: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = peregrine();
    c.arg("sim")
        .arg(scenario)
        .args(GRID)
        .args(["-q", "--out"])
        .arg(out)
        .args(extra);
    c
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The number after `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> Option<usize> {
    let rest = &text[text.find(prefix)? + prefix.len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[test]
fn ctrl_c_keeps_finished_runs_and_resume_runs_only_the_missing() {
    let tmp = tempdir("resume");
    let dir = tmp.path();
    let scenario = dir.join("slow.toml");
    std::fs::write(&scenario, SLOW).expect("write scenario");
    let (part, whole) = (dir.join("part"), dir.join("whole"));
    let child = sweep(&scenario, &part, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    std::thread::sleep(Duration::from_millis(2000));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success());
    let out = child.wait_with_output().expect("ends");
    let (_, err) = text(&out);
    assert!(!out.status.success(), "an interrupted sweep fails: {err}");
    assert!(err.contains("interrupted; "), "{err}");
    let kept = number_after(&err, "interrupted; ").expect("a count");
    assert!(
        err.contains(&format!("{kept} of 24 runs finished and are kept in")),
        "{err}"
    );
    assert!(kept < 24, "{err}");
    let runs = std::fs::read_to_string(part.join("runs.jsonl")).expect("runs.jsonl kept");
    assert_eq!(runs.lines().count(), kept, "{runs}");
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(part.join("sweep-state.json")).expect("state"),
    )
    .expect("JSON");
    assert_eq!(state["complete"], false);
    assert_eq!(state["runs_done"], kept);
    assert!(!part.join("sweep.csv").exists());

    // --resume runs the 24 − kept missing runs, no more.
    let out = sweep(&scenario, &part, &["--resume"])
        .output()
        .expect("runs");
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        stdout.contains(&format!(
            "24 runs (local backend); {kept} read back from runs.jsonl, {} run now",
            24 - kept
        )),
        "{stdout}"
    );

    // The same files as the sweep run in one go, byte for byte.
    let out = sweep(&scenario, &whole, &[]).output().expect("runs");
    assert!(out.status.success(), "{}", text(&out).1);
    for f in [
        "sweep.csv",
        "sweep.json",
        "runs.jsonl",
        "runs.parquet",
        "report.md",
        "sweep-state.json",
    ] {
        let a = std::fs::read(part.join(f)).expect(f);
        let b = std::fs::read(whole.join(f)).expect(f);
        assert!(
            a == b,
            "{f} differs between the resumed and the whole sweep"
        );
    }

    // Resuming a finished sweep runs nothing.
    let out = sweep(&scenario, &whole, &["--resume"])
        .output()
        .expect("runs");
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        stdout.contains("24 read back from runs.jsonl, 0 run now"),
        "{stdout}"
    );

    // Another grid in the same folder is refused, not mixed in.
    let out = peregrine()
        .arg("sim")
        .arg(&scenario)
        .args(["--sweep", "flows.0.scheduler=rr", "--seeds", "12", "-q"])
        .arg("--out")
        .arg(&whole)
        .arg("--resume")
        .output()
        .expect("runs");
    let (_, err) = text(&out);
    assert!(!out.status.success());
    assert!(err.contains("holds runs of another sweep"), "{err}");
}

#[test]
fn bad_backend_settings_are_errors_in_words() {
    let tmp = tempdir("bad-backend");
    let dir = tmp.path();
    let scenario = dir.join("slow.toml");
    std::fs::write(&scenario, format!("{SLOW}\n[sweep]\nbackend = \"spark\"\n"))
        .expect("write scenario");
    let run = |extra: &[&str]| {
        let out = peregrine()
            .arg("sim")
            .arg(&scenario)
            .args(["--set", "duration=1s", "-q", "--out"])
            .arg(dir.join("out"))
            .args(extra)
            .output()
            .expect("runs");
        assert!(!out.status.success());
        text(&out).1
    };
    let err = run(&[]);
    assert!(
        err.contains("`sweep.backend` must be \"local\" or \"ray\", found \"spark\""),
        "{err}"
    );
    let err = run(&["--backend", "local", "--ray-address", "127.0.0.1:6379"]);
    assert!(
        err.contains("`--ray-address` needs `--backend ray`"),
        "{err}"
    );
    let err = run(&["--backend", "ray", "--python", "/nonexistent/python3"]);
    assert!(
        err.contains("cannot run Python `/nonexistent/python3`: not found"),
        "{err}"
    );
}
