//! `tracing` in the simulator (src/logging.rs): a run says when it starts
//! and ends, which links dropped packets and which flows failed — and
//! listening changes nothing: the results (summary.json and every CSV)
//! are byte-identical with a subscriber at `trace` and without one.

use peregrine_sim::{run, Scenario, SimResults};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn dumbbell(overrides: &[&str]) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/dumbbell.toml");
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Scenario::from_file(&path, &o).expect("the dumbbell scenario is valid")
}

/// The run's results and what a `trace`-level subscriber (this thread
/// only) saw of it.
fn logged(s: &Scenario) -> (SimResults, String) {
    let buf = Buf::default();
    let sink = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    let r = tracing::subscriber::with_default(subscriber, || run(s).expect("runs"));
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    (r, text)
}

fn files(r: &SimResults, tag: &str) -> Vec<(String, Vec<u8>)> {
    let d = std::env::temp_dir().join(format!("peregrine-sim-log-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    r.write_to(&d).expect("writes");
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    let _ = std::fs::remove_dir_all(&d);
    v
}

#[test]
fn logging_changes_no_result_and_reports_the_run() {
    let s = dumbbell(&["duration=5s"]);
    let quiet = run(&s).expect("runs");
    let (loud, text) = logged(&s);
    let (a, b) = (files(&quiet, "quiet"), files(&loud, "loud"));
    assert!(a.iter().any(|(n, _)| n == "summary.json"));
    assert_eq!(a.len(), b.len());
    for ((na, xa), (nb, xb)) in a.iter().zip(&b) {
        assert_eq!(na, nb);
        assert!(xa == xb, "{na} differs with a subscriber listening");
    }
    let line = |needle: &str| {
        text.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in:\n{text}"))
            .to_string()
    };
    let start = line("simulation starts");
    assert!(start.contains("DEBUG") && start.contains("scenario=dumbbell"));
    assert!(start.contains("seed=1") && start.contains("duration_ns=5000000000"));
    let end = line("simulation finished");
    assert!(end.contains(&format!("events={}", quiet.events)), "{end}");
    assert!(end.contains("failed_flows=0"), "{end}");
    // The bottleneck's queue overflows: a per-link total at debug, and
    // each drop at trace, as many as the link counted.
    let drops: u64 = quiet.links.iter().map(|l| l.stats.queue_drops).sum();
    assert!(drops > 0, "the dumbbell's queue overflows");
    let link = line("link dropped packets");
    assert!(link.contains(&format!("queue_drops={drops}")), "{link}");
    let traced = text
        .lines()
        .filter(|l| l.contains("packet dropped"))
        .count();
    assert_eq!(traced as u64, drops, "one trace line per dropped packet");
    assert!(text
        .lines()
        .all(|l| !l.contains(" INFO ") && !l.contains(" WARN ")));
}

#[test]
fn a_failed_flow_is_a_warning() {
    // 1 ms: the handshake cannot complete.
    let s = dumbbell(&["duration=1ms"]);
    let (r, text) = logged(&s);
    assert_eq!(r.failed_flows().len(), r.flows.len());
    let warn = text
        .lines()
        .find(|l| l.contains("flow failed"))
        .unwrap_or_else(|| panic!("no failed-flow warning in:\n{text}"));
    assert!(
        warn.contains("WARN") && warn.contains("never connected"),
        "{warn}"
    );
    assert!(
        warn.contains(&format!("flow={}", r.flows[0].name)),
        "{warn}"
    );
}
