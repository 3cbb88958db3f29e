//! Every kind of chart, and the charts of a real `peregrine sim` run, go
//! through resvg (usvg parses, tiny-skia rasterizes): a broken SVG — bad
//! XML, a malformed path, an unclosed element — fails here (issue 27).

use peregrine_lab::charts::{self, BarSeries, ChartText, Samples, Series};
use std::path::{Path, PathBuf};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("peregrine-render-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Parse and rasterize `file`; return the share of pixels that are not
/// white (something was drawn).
fn render(file: &Path) -> f64 {
    let svg = std::fs::read_to_string(file).expect("chart written");
    let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default())
        .unwrap_or_else(|e| panic!("{}: not a valid SVG: {e}", file.display()));
    let size = tree.size().to_int_size();
    assert_eq!(
        (size.width(), size.height()),
        charts::SIZE,
        "{}",
        file.display()
    );
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("non-empty size");
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let inked = pixmap
        .pixels()
        .iter()
        .filter(|p| p.alpha() > 0 && (p.red() < 200 || p.green() < 200 || p.blue() < 200))
        .count();
    inked as f64 / pixmap.pixels().len() as f64
}

#[test]
fn every_chart_kind_renders() {
    let d = dir("kinds");
    let bars = d.join("bars.svg");
    charts::bar_chart(
        &bars,
        &ChartText::new("goodput", "flows.0.cc", "goodput (Mbit/s)"),
        &["cubic".into(), "bbr".into()],
        &[BarSeries::new(
            "mean ± 95 % CI",
            vec![4.3, 4.1],
            vec![Some(0.2), None],
        )],
    )
    .expect("bars");
    let lines = d.join("lines.svg");
    charts::time_series(
        &lines,
        &ChartText::new("cwnd", "time (s)", "cwnd (KiB)"),
        &[
            Series::new("a", vec![(0.0, 10.0), (1.0, 20.0), (2.0, 15.0)]),
            Series::new("b", vec![(0.0, 5.0), (2.0, 25.0)]),
        ],
    )
    .expect("lines");
    let cdf = d.join("cdf.svg");
    charts::cdf(
        &cdf,
        &ChartText::new("latency", "latency (ms)", "fraction"),
        &[Samples::new("s", vec![1.0, 2.0, 2.0, 9.0])],
    )
    .expect("cdf");
    let empty = d.join("empty.svg");
    charts::no_data(&empty, &ChartText::new("t", "x (s)", "y (ms)"), "none").expect("empty");
    for f in [&bars, &lines, &cdf, &empty] {
        let ink = render(f);
        assert!(ink > 0.003, "{}: almost nothing drawn ({ink})", f.display());
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_charts_of_a_sim_run_render() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let s = peregrine_sim::Scenario::from_file(
        &root.join("scenarios/dumbbell-mix.toml"),
        &["duration=3s".to_string()],
    )
    .expect("scenario");
    let results = peregrine_sim::run(&s).expect("runs");
    let d = dir("run");
    let files = peregrine_lab::sim_plots::write_run_plots(&results, &d).expect("plots");
    let names: Vec<_> = files
        .iter()
        .map(|f| f.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["throughput.svg", "cwnd.svg", "rtt.svg", "latency_cdf.svg"]
    );
    for f in &files {
        let text = std::fs::read_to_string(f).expect("written");
        assert!(
            text.contains("time (s)") || text.contains("latency (ms)"),
            "{}",
            f.display()
        );
        assert!(render(f) > 0.003, "{}", f.display());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The check has teeth: a chart cut short is rejected by the parser.
#[test]
fn a_truncated_chart_does_not_parse() {
    let d = dir("cut");
    let f = d.join("c.svg");
    charts::no_data(&f, &ChartText::new("t", "x (s)", "y (ms)"), "none").expect("written");
    let svg = std::fs::read_to_string(&f).expect("read");
    let cut = &svg[..svg.len() / 2];
    assert!(resvg::usvg::Tree::from_str(cut, &resvg::usvg::Options::default()).is_err());
    let _ = std::fs::remove_dir_all(&d);
}

/// Every `.svg` under `dir`, sorted.
fn svgs_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("readable dir") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "svg") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The reproductions' own charts (seeds 001, 002 and 004, at the small
/// sizes of `experiments.rs`) parse, rasterize and draw something, and
/// every one names a unit on an axis (issue 27).
#[test]
fn the_reproductions_charts_render() {
    use peregrine_lab::reproduce::{fanet, mmwave_cvn, quic_sched};
    use peregrine_lab::Silent;
    let d = dir("repro");
    quic_sched::run(
        &quic_sched::Options {
            tiny: true,
            out: d.clone(),
            ..quic_sched::Options::default()
        },
        &Silent,
    )
    .expect("quic-sched runs");
    fanet::run(
        &fanet::Options {
            quick: true,
            seeds: Some(1),
            duration: Some("8s".into()),
            out: d.clone(),
            ..fanet::Options::default()
        },
        &Silent,
    )
    .expect("fanet runs");
    mmwave_cvn::run(
        &mmwave_cvn::Options {
            quick: true,
            duration_s: Some(0.05),
            seeds: Some(2),
            out: d.clone(),
            ..mmwave_cvn::Options::default()
        },
        &Silent,
    )
    .expect("mmwave-cvn runs");
    let files = svgs_under(&d);
    for sub in ["quic-sched", "fanet", "mmwave-cvn"] {
        assert!(
            files.iter().any(|f| f.starts_with(d.join(sub))),
            "no chart from {sub}: {files:?}"
        );
    }
    for f in &files {
        let text = std::fs::read_to_string(f).expect("written");
        // A unit in parentheses on an axis: `(ms)`, `(Mbit/s)`, `(s)`, …
        // (plotters writes each text node's content on a line of its own).
        let unit = text.lines().any(|l| {
            let l = l.trim();
            !l.starts_with('<') && l.contains(" (") && l.ends_with(')')
        });
        assert!(unit, "{}: no axis label with a unit", f.display());
        let ink = render(f);
        assert!(ink > 0.003, "{}: almost nothing drawn ({ink})", f.display());
    }
    let _ = std::fs::remove_dir_all(&d);
}
