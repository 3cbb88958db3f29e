//! A sweep written to a directory (`peregrine sim … --sweep …`):
//! [`SweepOptions`] (`--sweep key=v1,v2,… --seeds N --threads T`) and
//! [`run_sweep_to_dir`], which runs a sweep reporting to a [`Progress`]
//! sink and writes its results into an output directory:
//!
//! * `sweep.csv`: the tidy per-point statistics
//!   (`point,key,n,mean,ci95,std,min,median,max`);
//! * `sweep.json`: the same as JSON, with the base seed and seed count;
//! * `runs.jsonl`: every run's own summary, one JSON line per run in
//!   (point, seed) order (`{"point": label, "seed": n, "summary": {…}}`),
//!   for plots that need the raw values (CDFs, box plots);
//! * `runs.parquet`: the same runs as a table, one row per run
//!   ([`crate::parquet::runs_parquet`]: `point`, `seed`, one column per
//!   grid key, one per numeric summary field);
//! * `report.md`: what was run (grid, seeds), then for each key of
//!   interest ([`report_keys`]: goodput, delay, latency, completion,
//!   retransmissions of engine summaries; else the first [`REPORT_KEYS`]
//!   keys) a table (mean ± 95 % CI, median, min, max per point) and a bar
//!   chart with error bars in `plots/`.
//!
//! The engine is a closure, so `peregrine sim --sweep` is a few lines:
//! parse the scenario document, call [`run_sweep_to_dir`] with
//! `|doc, _seed| Ok(peregrine_sim::run(&Scenario::from_document(doc)?)?.summary_json())`.
//! Every output byte depends only on the document, the sweep and the
//! run results — not on the thread count or the time of day.

use crate::charts::readable::{grid_keys, grid_values, mean_ci, readable};
use crate::charts::{self, BarSeries, ChartText};
use crate::experiment::{
    self, aggregate::format_significant, spec::value_label, Aggregate, SweepOutcome, SweepSpec,
};
use crate::progress::Progress;
use crate::report::{Cell, Report, Table};
use anyhow::Context;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// How many keys the report tabulates and plots (all are in the CSV).
pub const REPORT_KEYS: usize = 8;

/// Leaf-name endings of an engine summary worth a table and a chart.
pub const INTEREST: [&str; 8] = [
    "/goodput_bps",
    "/delay_ms/mean",
    "/delay_ms/p95",
    "/latency/mean_ms",
    "/latency/p95_ms",
    "/completion_s",
    "/retransmissions",
    "/drops/queue",
];

/// At most this many keys of interest are reported.
pub const MAX_INTEREST_KEYS: usize = 16;

/// The keys the report tabulates and plots: those ending in one of
/// [`INTEREST`] (at most [`MAX_INTEREST_KEYS`], in key order); if there
/// are none (not an engine summary), the first [`REPORT_KEYS`] keys.
pub fn report_keys(agg: &Aggregate) -> Vec<String> {
    let picked: Vec<String> = agg
        .keys
        .iter()
        .filter(|k| INTEREST.iter().any(|e| k.ends_with(e)))
        .take(MAX_INTEREST_KEYS)
        .cloned()
        .collect();
    if picked.is_empty() {
        agg.keys.iter().take(REPORT_KEYS).cloned().collect()
    } else {
        picked
    }
}

/// Leaf-name endings shown first on the terminal, in this order.
const CONSOLE_FIRST: [&str; 4] = [
    "/latency/mean_ms",
    "/completion_s",
    "/goodput_bps",
    "/delay_ms/mean",
];

/// A compact text table for the terminal: one row per point, one column
/// per key of interest (at most 4: message latency, completion, goodput
/// and delay first), `mean ± CI`.
pub fn summary_table(agg: &Aggregate) -> String {
    let mut keys = report_keys(agg);
    let rank = |k: &String| {
        CONSOLE_FIRST
            .iter()
            .position(|e| k.ends_with(e))
            .unwrap_or(CONSOLE_FIRST.len())
    };
    keys.sort_by_key(rank);
    keys.truncate(4);
    let mut headers = vec!["point".to_string()];
    headers.extend(keys.iter().map(|k| readable(k).header()));
    let mut t = Table::new(headers);
    for p in &agg.points {
        let mut row = vec![Cell::Text(p.label.clone())];
        for k in &keys {
            let r = readable(k);
            row.push(match p.get(k) {
                Some(s) => Cell::NumText(mean_ci(s.mean * r.scale, s.ci95.map(|c| c * r.scale))),
                None => Cell::Text("—".into()),
            });
        }
        t.row(row);
    }
    t.explain("point", "the grid values of the point (`key=value,…`)")
        .explain(
            "each other cell",
            &format!(
                "mean ± 95 % confidence interval over {} seed(s) (Student t), in the column's \
                 unit; — : not reported",
                agg.seeds
            ),
        );
    t.render()
}

/// The options of a sweep laid over a scenario's own `[sweep]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepOptions {
    /// Fields swept over values: `key=v1,v2,…` (dotted keys as for
    /// `--set`, e.g. `flows.0.cc=cubic,bbr`). Laid over the scenario's own
    /// `[sweep.grid]`.
    pub sweep: Vec<String>,
    /// Runs per grid point, with seeds seed, seed+1, … (the scenario's
    /// `seed`, default 1). Overrides `[sweep] seeds`.
    pub seeds: Option<u32>,
    /// Worker threads (0: one per core). Results do not depend on it.
    pub threads: usize,
}

impl SweepOptions {
    /// The sweep of `doc`'s `[sweep]` table with these options laid over it.
    pub fn spec(&self, doc: &toml::Value) -> anyhow::Result<SweepSpec> {
        let from_doc = SweepSpec::from_document(doc)?.unwrap_or_default();
        let cli = SweepSpec::from_cli(&self.sweep, self.seeds)?;
        Ok(from_doc.merge(cli, self.seeds))
    }
}

/// What [`run_sweep_to_dir`] wrote and computed; `R` is a run's record.
#[derive(Debug, Clone)]
pub struct SweepFiles<R> {
    /// `out/sweep.csv`.
    pub csv: PathBuf,
    /// `out/sweep.json`.
    pub json: PathBuf,
    /// `out/runs.jsonl`.
    pub runs: PathBuf,
    /// `out/runs.parquet`.
    pub parquet: PathBuf,
    /// `out/report.md`.
    pub report: PathBuf,
    /// Every run's record, in (point, seed) order.
    pub outcome: SweepOutcome<R>,
    /// The per-point statistics.
    pub aggregate: Aggregate,
}

/// Run the sweep of `base` (its `[sweep]` table with `args` laid over it)
/// through `run`, reporting to `progress`, and write `sweep.csv`,
/// `sweep.json`, `runs.jsonl`, `runs.parquet`, `report.md` and `plots/`
/// into `out_dir`.
/// `description` (Markdown: the scenario, the command line) opens the
/// report's "What was run" section; it may be empty.
///
/// A run returns any serializable record `R` (a typed struct, or the
/// engine's summary as `serde_json::Value`); the statistics cover every
/// number in its serialized form, named by JSON pointer, in field order,
/// and `runs.jsonl` holds the records as serialized. Cost: the
/// runs, then O(runs × numbers per record) to aggregate.
pub fn run_sweep_to_dir<R, F>(
    title: &str,
    description: &str,
    base: &toml::Value,
    args: &SweepOptions,
    out_dir: &Path,
    progress: &dyn Progress,
    run: F,
) -> anyhow::Result<SweepFiles<R>>
where
    R: Serialize + Send,
    F: Fn(&toml::Value, u64) -> anyhow::Result<R> + Sync,
{
    let spec = args.spec(base)?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    progress.start(title, spec.run_count());
    let result = experiment::run_sweep(
        base,
        &spec,
        args.threads,
        &|done, total| progress.update(done, total),
        run,
    );
    progress.finish();
    let outcome = result.map_err(|e| anyhow::anyhow!("{e:#}"))?;
    write_sweep_files(title, description, &spec, outcome, out_dir)
}

/// Write `sweep.csv`, `sweep.json`, `runs.jsonl`, `runs.parquet`,
/// `report.md` and `plots/` of a finished sweep into `out_dir` (which
/// must exist): what [`run_sweep_to_dir`] writes after its runs, and what
/// the other backends ([`crate::sweep_backend`]) write, so every backend
/// writes the same bytes for the same runs. O(runs × numbers per record).
pub fn write_sweep_files<R: Serialize>(
    title: &str,
    description: &str,
    spec: &SweepSpec,
    outcome: SweepOutcome<R>,
    out_dir: &Path,
) -> anyhow::Result<SweepFiles<R>> {
    let json_outcome = as_json(&outcome)?;
    let aggregate = experiment::aggregate(&json_outcome);
    let write = |name: &str, text: &str| -> anyhow::Result<PathBuf> {
        let path = out_dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    };
    let csv = write("sweep.csv", &aggregate.to_csv())?;
    let json = write("sweep.json", &aggregate.to_json_string())?;
    let runs = write("runs.jsonl", &runs_jsonl(&outcome)?)?;
    let parquet_path = out_dir.join("runs.parquet");
    let bytes = crate::parquet::runs_parquet(&json_outcome, &aggregate)?;
    std::fs::write(&parquet_path, bytes)
        .with_context(|| format!("cannot write {}", parquet_path.display()))?;
    let report = write_report(title, description, spec, &aggregate, out_dir)?;
    Ok(SweepFiles {
        csv,
        json,
        runs,
        parquet: parquet_path,
        report,
        outcome,
        aggregate,
    })
}

/// `outcome` with every record in its JSON form (what the simulator's
/// aggregation reads).
fn as_json<R: Serialize>(
    outcome: &SweepOutcome<R>,
) -> anyhow::Result<SweepOutcome<serde_json::Value>> {
    let runs = outcome
        .runs
        .iter()
        .map(|runs| {
            runs.iter()
                .map(serde_json::to_value)
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()
        .context("a run's record does not serialize to JSON")?;
    Ok(SweepOutcome {
        spec: outcome.spec.clone(),
        points: outcome.points.clone(),
        base_seed: outcome.base_seed,
        runs,
    })
}

/// A line of `runs.jsonl`.
#[derive(Serialize)]
struct RunLine<'a, R> {
    /// The grid point's label.
    point: &'a str,
    /// The run's seed.
    seed: u64,
    /// Its record.
    summary: &'a R,
}

/// One JSON line per run, in (point, seed) order.
fn runs_jsonl<R: Serialize>(outcome: &SweepOutcome<R>) -> anyhow::Result<String> {
    let mut text = String::new();
    for (point, runs) in outcome.points.iter().zip(&outcome.runs) {
        for (i, summary) in runs.iter().enumerate() {
            text.push_str(&run_line(&point.label, outcome.seed(i), summary)?);
        }
    }
    Ok(text)
}

/// One line of `runs.jsonl` (with its newline): the run of point `label`
/// with seed `seed` and its record.
pub(crate) fn run_line<R: Serialize>(
    label: &str,
    seed: u64,
    summary: &R,
) -> anyhow::Result<String> {
    let line = RunLine {
        point: label,
        seed,
        summary,
    };
    let mut text = serde_json::to_string(&line).context("runs.jsonl")?;
    text.push('\n');
    Ok(text)
}

/// A point's label under its bar: its grid values (`bbr · 5Mbps`); the
/// grid keys go on the axis label.
fn bar_label(label: &str) -> String {
    grid_values(label).join(" · ")
}

/// Whether the points' grid values fit under their bars (about 90
/// characters across the chart) without overlapping.
fn labels_fit(agg: &Aggregate) -> bool {
    let n = agg.points.len().max(1);
    n <= 12
        && agg
            .points
            .iter()
            .all(|p| bar_label(&p.label).chars().count() <= 90 / n)
}

/// A file-name-safe version of a JSON pointer: `/flows/0/x` → `flows_0_x`.
fn slug(key: &str) -> String {
    let s: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let s = s.trim_matches('_').to_string();
    if s.is_empty() {
        "value".into()
    } else {
        s
    }
}

fn write_report(
    title: &str,
    description: &str,
    spec: &SweepSpec,
    agg: &Aggregate,
    out_dir: &Path,
) -> anyhow::Result<PathBuf> {
    let mut rep = Report::new(title, out_dir);
    rep.heading(2, "What was run");
    if !description.trim().is_empty() {
        rep.paragraph(description);
    }
    let mut grid: Vec<String> = spec
        .grid
        .iter()
        .map(|(k, vs)| {
            format!(
                "`{k}` ∈ {{{}}}",
                vs.iter().map(value_label).collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    if grid.is_empty() {
        grid.push("no grid: the base scenario only".into());
    }
    rep.bullets(grid);
    rep.paragraph(&format!(
        "{} grid point(s) × {} seed(s) (seeds {} to {}) = {} runs. Each value below is the mean over \
         the seeds with its 95 % confidence interval (Student t, n − 1 degrees of freedom); \
         every numeric result is in `sweep.csv` and `sweep.json`.",
        spec.point_count(),
        agg.seeds,
        agg.base_seed,
        agg.base_seed + u64::from(agg.seeds) - 1,
        spec.run_count(),
    ));
    if agg.keys.is_empty() {
        rep.paragraph("The runs reported no numeric results.");
    }
    // Long or many labels would overlap under the bars: number the
    // points instead (the tables give the number of each).
    let numbered = !labels_fit(agg);
    // Four significant digits read well; the CSV has nine.
    let sig = |x: f64| format_significant(x, 4);
    let plots = out_dir.join("plots");
    let keys = report_keys(agg);
    for key in &keys {
        rep.heading(2, &format!("{} (`{key}`)", readable(key).header()));
        let r = readable(key);
        let unit = if r.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.unit)
        };
        let mut t = Table::new([
            "#".to_string(),
            "point".to_string(),
            "n".to_string(),
            format!("mean ± 95 % CI{unit}"),
            format!("median{unit}"),
            format!("min{unit}"),
            format!("max{unit}"),
        ]);
        let mut means = Vec::new();
        let mut cis = Vec::new();
        let mut cats = Vec::new();
        for (i, p) in agg.points.iter().enumerate() {
            let Some(s) = p.get(key) else { continue };
            t.row([
                Cell::num((i + 1) as f64, 0),
                Cell::Text(p.label.clone()),
                Cell::num(s.n as f64, 0),
                Cell::NumText(mean_ci(s.mean * r.scale, s.ci95.map(|c| c * r.scale))),
                Cell::NumText(sig(s.median * r.scale)),
                Cell::NumText(sig(s.min * r.scale)),
                Cell::NumText(sig(s.max * r.scale)),
            ]);
            cats.push(if numbered {
                (i + 1).to_string()
            } else {
                bar_label(&p.label)
            });
            means.push(s.mean * r.scale);
            cis.push(s.ci95.map(|c| c * r.scale));
        }
        t.explain(
            "#",
            "the point's number (the chart's label when labels are long)",
        )
        .explain("point", "the grid values of the point (`key=value,…`)")
        .explain("n", "runs (seeds) of the point that reported this result")
        .explain(
            "mean ± 95 % CI",
            "mean over the runs ± the half-width of its 95 % confidence interval \
                 (Student t), rounded to the mean's precision",
        )
        .explain("median, min, max", "over the same runs");
        rep.table(None, &t);
        std::fs::create_dir_all(&plots)
            .with_context(|| format!("cannot create {}", plots.display()))?;
        let file = plots.join(format!("{}.svg", slug(key)));
        let keys_of_grid = agg
            .points
            .first()
            .map(|p| grid_keys(&p.label).join(" · "))
            .unwrap_or_default();
        let x_label = if numbered || keys_of_grid.is_empty() {
            "grid point (#, see the table)".to_string()
        } else {
            keys_of_grid
        };
        let text = ChartText::new(
            r.name.clone(),
            x_label,
            format!("{} (mean ± 95 % CI)", r.header()),
        );
        charts::bar_chart(
            &file,
            &text,
            &cats,
            &[BarSeries::new("mean ± 95 % CI", means, cis)],
        )?;
        rep.image(&format!("{} per grid point", r.header()), &file);
    }
    if agg.keys.len() > keys.len() {
        rep.paragraph(&format!(
            "{} more numeric results are in `sweep.csv`.",
            agg.keys.len() - keys.len()
        ));
    }
    Ok(rep.write()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Silent;

    fn doc(text: &str) -> toml::Value {
        toml::Value::Table(text.parse::<toml::Table>().expect("test TOML is valid"))
    }

    /// A toy run's record.
    #[derive(Serialize)]
    struct Toy {
        goodput_mbps: f64,
        delay_ms: f64,
        cc: String,
    }

    /// A toy run: a pseudo-random but seed-determined record.
    fn toy_typed(d: &toml::Value, seed: u64) -> anyhow::Result<Toy> {
        let cc = d["cc"].as_str().context("cc")?;
        let rate = d["rate"].as_integer().context("rate")? as f64;
        let noise = ((seed * 7919) % 101) as f64 / 100.0;
        Ok(Toy {
            goodput_mbps: rate * if cc == "bbr" { 0.9 } else { 0.8 } + noise,
            delay_ms: 40.0 + noise,
            cc: cc.to_string(),
        })
    }

    /// The toy's record as JSON (as the engine's summaries come).
    fn toy(d: &toml::Value, seed: u64) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::to_value(toy_typed(d, seed)?)?)
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("peregrine-sweep-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    const BASE: &str = "seed = 100\ncc = \"cubic\"\nrate = 10\n[sweep]\nseeds = 3\n[sweep.grid]\ncc = [\"cubic\", \"bbr\"]\n";

    #[test]
    fn options_lay_over_the_document() {
        let opts = SweepOptions {
            sweep: vec!["a=1,2".into(), "b=x".into()],
            seeds: Some(4),
            threads: 2,
        };
        let spec = opts.spec(&doc(BASE)).unwrap();
        assert_eq!(
            spec.grid
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>(),
            ["cc", "a", "b"]
        );
        assert_eq!(spec.seeds, 4);
        let bad = SweepOptions {
            sweep: vec!["nokey".into()],
            ..SweepOptions::default()
        }
        .spec(&doc(BASE))
        .unwrap_err();
        assert!(
            bad.to_string()
                .contains("`--sweep nokey` is not of the form key=v1,v2,…"),
            "{bad}"
        );
    }

    #[test]
    fn writes_csv_json_report_and_plots_identically_for_any_thread_count() {
        let base = doc(BASE);
        let mut outputs = Vec::new();
        for threads in [1, 2] {
            let out = dir(&format!("t{threads}"));
            let args = SweepOptions {
                sweep: vec!["rate=10,20".into()],
                threads,
                ..SweepOptions::default()
            };
            let files = run_sweep_to_dir(
                "Toy sweep",
                "`peregrine sim toy.toml --sweep rate=10,20`",
                &base,
                &args,
                &out,
                &Silent,
                toy,
            )
            .unwrap();
            assert_eq!(files.outcome.runs.len(), 4);
            let read = |p: &Path| std::fs::read_to_string(p).unwrap();
            let read_bytes = |p: &Path| std::fs::read(p).unwrap();
            let plot = out.join("plots/goodput_mbps.svg");
            let runs = read(&files.runs);
            assert_eq!(runs.lines().count(), 12);
            assert!(read_bytes(&files.parquet).starts_with(b"PAR1"));
            let first: serde_json::Value =
                serde_json::from_str(runs.lines().next().unwrap()).unwrap();
            assert_eq!(
                (first["point"].as_str(), first["seed"].as_u64()),
                (Some("cc=cubic,rate=10"), Some(100))
            );
            outputs.push((
                read(&files.csv),
                read(&files.json),
                read(&files.report),
                read(&plot),
                runs,
                read_bytes(&files.parquet),
            ));
            let _ = std::fs::remove_dir_all(&out);
        }
        assert_eq!(outputs[0], outputs[1]);
        let (csv, json, report, svg, _, _) = &outputs[0];
        assert!(csv.starts_with("point,key,n,mean,ci95,std,min,median,max\n"));
        assert_eq!(
            csv.lines().count(),
            1 + 4 * 2,
            "4 points × 2 numeric keys:\n{csv}"
        );
        assert!(csv.contains("\"cc=bbr,rate=20\",/goodput_mbps,3,"), "{csv}");
        let j: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(j["base_seed"], 100);
        assert_eq!(j["points"].as_array().map(Vec::len), Some(4));
        assert!(
            report.starts_with(
                "# Toy sweep\n\n## What was run\n\n`peregrine sim toy.toml --sweep rate=10,20`\n\n- `cc` ∈ {cubic, bbr}\n- `rate` ∈ {10, 20}\n"
            ),
            "{report}"
        );
        assert!(
            report.contains("4 grid point(s) × 3 seed(s) (seeds 100 to 102) = 12 runs."),
            "{report}"
        );
        assert!(
            report.contains("![goodput (Mbit/s) per grid point](plots/goodput_mbps.svg)"),
            "{report}"
        );
        // Headers in words with units, not JSON pointers; the interval at
        // the mean's precision.
        assert!(
            report.contains("## goodput (Mbit/s) (`/goodput_mbps`)")
                && report.contains("mean ± 95 % CI (Mbit/s)"),
            "{report}"
        );
        assert!(
            report.contains("4 | cc=bbr,rate=20 ") && report.contains("18.34 ± 0.76 "),
            "{report}"
        );
        // Bars are labelled by grid values, the axis by the grid keys.
        assert!(
            svg.contains("\ncubic · 10\n") && svg.contains("\ncc · rate\n"),
            "{svg}"
        );
        assert!(svg.contains("goodput (Mbit/s) (mean ± 95 % CI)"), "{svg}");
        assert!(!svg.contains("grid point #"), "{svg}");
    }

    /// A typed record gives the very files its JSON form gives.
    #[test]
    fn a_typed_record_writes_what_its_json_writes() {
        let base = doc(BASE);
        let args = SweepOptions::default();
        let files = |name: &str, typed_run: bool| {
            let out = dir(name);
            let f = if typed_run {
                run_sweep_to_dir("Toy", "", &base, &args, &out, &Silent, toy_typed)
                    .map(|f| (f.csv, f.json, f.runs, f.report))
            } else {
                run_sweep_to_dir("Toy", "", &base, &args, &out, &Silent, toy)
                    .map(|f| (f.csv, f.json, f.runs, f.report))
            };
            let (csv, json, runs, report) = f.unwrap();
            let read = |p: &Path| std::fs::read_to_string(p).unwrap();
            let texts = [read(&csv), read(&json), read(&runs), read(&report)];
            let _ = std::fs::remove_dir_all(&out);
            texts
        };
        assert_eq!(files("typed", true), files("json", false));
    }

    #[test]
    fn a_failing_run_is_an_error_naming_point_and_seed() {
        let out = dir("fail");
        let args = SweepOptions::default();
        let e = run_sweep_to_dir(
            "Failing",
            "",
            &doc(BASE),
            &args,
            &out,
            &Silent,
            |d, seed| {
                if d["cc"].as_str() == Some("bbr") && seed == 101 {
                    anyhow::bail!("engine exploded")
                }
                toy(d, seed)
            },
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "run of sweep point `cc=bbr` with seed 101 failed (1 of 6 runs failed): engine exploded"
        );
        let _ = std::fs::remove_dir_all(&out);
    }
}
