//! A whole experiment through the public API, as `peregrine sim --sweep`
//! will drive it: a scenario document with a `[sweep]` table, command-line
//! sweeps laid over it, runs across threads, statistics out.

use peregrine_lab::experiment::{aggregate, run_sweep, t_975, SweepSpec};
use serde_json::json;

const SCENARIO: &str = r#"
seed = 1000
duration = "10s"

[[flows]]
cc = "cubic"
bytes = 1000000

[links.bottleneck]
rate_bps = 1e6
loss = 0.0

[sweep]
seeds = 10

[sweep.grid]
"flows.0.cc" = ["cubic", "bbr"]
links.bottleneck.loss = [0.0, 0.05]
"#;

/// A stand-in engine: completion time grows with loss, with seed-driven
/// noise that is exactly known (seed i contributes i − 4.5 ms).
fn engine(doc: &toml::Value, seed: u64) -> Result<serde_json::Value, String> {
    let cc = doc["flows"][0]["cc"].as_str().ok_or("flows.0.cc")?;
    let loss = doc["links"]["bottleneck"]["loss"]
        .as_float()
        .ok_or("links.bottleneck.loss")?;
    let base_ms = if cc == "bbr" { 900.0 } else { 1000.0 };
    let noise = (seed - 1000) as f64 - 4.5;
    Ok(json!({
        "flows": [{ "completion_ms": base_ms * (1.0 + 4.0 * loss) + noise, "cc": cc }],
        "events": 1234,
    }))
}

#[test]
fn sweep_from_document_and_cli_with_confidence_intervals() {
    let doc: toml::Value = toml::Value::Table(SCENARIO.parse().expect("valid TOML"));
    let from_doc = SweepSpec::from_document(&doc)
        .expect("valid sweep")
        .expect("has a sweep");
    // `--sweep duration=5s,10s` is laid over the document's grid.
    let cli = SweepSpec::from_cli(&["duration=5s,10s".into()], None).expect("valid --sweep");
    let spec = from_doc.merge(cli, None);
    assert_eq!(spec.point_count(), 8);
    assert_eq!(spec.run_count(), 80);
    let labels: Vec<String> = spec.points().into_iter().map(|p| p.label).collect();
    assert_eq!(
        labels[0],
        "flows.0.cc=cubic,links.bottleneck.loss=0.0,duration=5s"
    );
    assert_eq!(
        labels[7],
        "flows.0.cc=bbr,links.bottleneck.loss=0.05,duration=10s"
    );

    let one = run_sweep(&doc, &spec, 1, &|_, _| {}, engine).expect("runs succeed");
    let two = run_sweep(&doc, &spec, 2, &|_, _| {}, engine).expect("runs succeed");
    let (a1, a2) = (aggregate(&one), aggregate(&two));
    assert_eq!(a1.to_csv(), a2.to_csv(), "thread count changes nothing");
    assert_eq!(a1.to_json_string(), a2.to_json_string());

    // Noise i − 4.5 for i = 0..10: mean 0, s = sqrt(82.5 / 9).
    let p = a1
        .point("flows.0.cc=bbr,links.bottleneck.loss=0.05,duration=5s")
        .expect("point exists");
    let c = p.get("/flows/0/completion_ms").expect("numeric leaf");
    let s = (82.5_f64 / 9.0).sqrt();
    assert_eq!(c.n, 10);
    assert!((c.mean - 1080.0).abs() < 1e-9);
    assert!((c.std.unwrap() - s).abs() < 1e-9);
    let ci = t_975(9).unwrap() * s / 10f64.sqrt();
    assert!((c.ci95.unwrap() - ci).abs() < 1e-9);
    assert!((ci - 2.166).abs() < 1e-3);
    assert_eq!((c.min, c.median, c.max), (1075.5, 1080.0, 1084.5));
    let e = p.get("/events").expect("numeric leaf");
    assert_eq!((e.mean, e.ci95), (1234.0, Some(0.0)));
    // The CSV line of that point, with fixed formatting.
    assert!(a1.to_csv().contains(
        "\"flows.0.cc=bbr,links.bottleneck.loss=0.05,duration=5s\",/flows/0/completion_ms,10,1080,2.16585043,3.02765035,1075.5,1080,1084.5\n"
    ), "{}", a1.to_csv());
}
