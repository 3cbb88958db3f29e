//! Part (c) of `peregrine reproduce quic-sched`: seed 002 §4.3, the
//! adaptive scheduler over mmWave capacity traces — two files on two
//! streams, a grid of targets, one-way delays and buffer sizes; the
//! completion time of each stream (`adaptive.csv`, `adaptive_delay.svg`,
//! `adaptive_buffer.svg`, a table in the report).

use super::setups;
use super::{r4, run_points, write, AdaptiveRow, AdaptiveSize, Options, Part, Plan, SetUp};
use crate::charts::{self, BarSeries, ChartText};
use crate::progress::Progress;
use crate::published;
use crate::report::{Cell, Report, Table};
use std::path::Path;

/// One set-up of §4.3.
#[derive(Debug, Clone, Copy, PartialEq)]
struct AdaptivePoint {
    /// The trace's file name.
    trace: &'static str,
    /// The adaptive scheduler's target, Mbit/s.
    target_mbps: u64,
    /// One-way delay, ms.
    delay_ms: u64,
    /// Queue, × BDP.
    buffer_bdp: f64,
}

/// What a §4.3 run measured: its set-up and the completion time of each
/// stream, s, unrounded (`None`: not finished).
#[derive(Debug, Clone, Copy, PartialEq)]
struct AdaptiveRun {
    point: AdaptivePoint,
    completion_s: [Option<f64>; 2],
}

/// Run part (c), add its section to `report` and return its `summary.json` entry.
pub(super) fn adaptive_part(
    args: &Options,
    progress: &dyn Progress,
    plan: &Plan,
    dir: &Path,
    report: &mut Report,
) -> anyhow::Result<Part<Vec<AdaptiveRow>>> {
    report.heading(2, "(c) §4.3: the adaptive scheduler over mmWave traces");
    let AdaptiveSize {
        bytes,
        duration_s: duration,
    } = plan.adaptive;
    let grid = &plan.grid;
    let (targets, delays, buffers) = (&grid.targets_mbps, &grid.delays_ms, &grid.buffers_bdp);
    let mid_delay = if delays.contains(&10) { 10 } else { delays[0] };
    let mut setups = Vec::new();
    let mut points = Vec::new();
    for (ti, rel) in plan.traces.iter().enumerate() {
        let Ok(path) = published::find_shared(rel) else {
            report.paragraph(&format!("Skipped `shared/{rel}`: not found."));
            continue;
        };
        let name = rel.rsplit('/').next().unwrap_or(rel);
        for &t in targets {
            for &d in delays {
                for &b in buffers {
                    if ti > 0 && (d != mid_delay || b != 1.0) {
                        continue;
                    }
                    points.push(AdaptivePoint {
                        trace: name,
                        target_mbps: t,
                        delay_ms: d,
                        buffer_bdp: b,
                    });
                    setups.push(SetUp {
                        label: format!("§4.3 {name}, target {t} Mbit/s, {d} ms, {b} × BDP"),
                        config: setups::adaptive(
                            &path.display().to_string(),
                            t,
                            d,
                            b,
                            bytes,
                            duration,
                        ),
                    });
                }
            }
        }
    }
    if setups.is_empty() {
        return Ok(Part::Skipped {
            skipped: "no mmWave trace found".into(),
        });
    }
    let outcome = run_points("§4.3 adaptive", &setups, 1, args, progress, false)?;
    let mut csv = String::from("trace,target_mbps,delay_ms,buffer_bdp,stream0_completion_s,stream1_completion_s,transfer_mbps\n");
    let mut t = Table::new([
        "trace",
        "target (Mbit/s)",
        "delay (ms)",
        "buffer (× BDP)",
        "stream 0 done (s)",
        "stream 1 done (s)",
        "transfer rate (Mbit/s)",
    ]);
    let mut out = Vec::new();
    let mut done = Vec::new();
    for (p, point) in points.iter().enumerate() {
        let r = &outcome.runs[p][0];
        let c = |s: usize| r.streams.get(s)?.completion_s;
        // Both files over the time the later one took.
        let g = c(0)
            .zip(c(1))
            .map(|(a, b)| 2.0 * bytes as f64 * 8.0 / a.max(b) / 1e6);
        let AdaptivePoint {
            trace: name,
            target_mbps: target,
            delay_ms: delay,
            buffer_bdp: buffer,
        } = *point;
        let f = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x:.3}"));
        csv.push_str(&format!(
            "{name},{target},{delay},{buffer},{},{},{}\n",
            f(c(0)),
            f(c(1)),
            f(g)
        ));
        t.row([
            Cell::Text(name.to_string()),
            Cell::num(target as f64, 0),
            Cell::num(delay as f64, 0),
            Cell::num(buffer, 1),
            Cell::opt(c(0), 3),
            Cell::opt(c(1), 3),
            Cell::opt(g, 1),
        ]);
        done.push(AdaptiveRun {
            point: *point,
            completion_s: [c(0), c(1)],
        });
        out.push(AdaptiveRow {
            trace: name.to_string(),
            target_mbps: target,
            delay_ms: delay,
            buffer_bdp: buffer,
            completion_s: [c(0).map(r4), c(1).map(r4)],
            transfer_mbps: g.map(r4),
        });
    }
    write(dir, "adaptive.csv", &csv)?;
    report.paragraph(&format!(
        "A server sends two files of {} MB (stream 0 class 0, stream 1 class 1) to a mobile device \
         whose downlink replays a Mahimahi capacity trace; uplink 50 Mbit/s; one-way delay as \
         listed; a drop-tail queue of the listed multiple of the BDP (the trace's mean rate × 2 × \
         delay; never below the engine's 10-packet floor, so 0 ms delay gives 10 packets); the \
         adaptive scheduler (seed 002 Algorithm 4) with the listed target; CUBIC; runs capped at \
         {duration} s (a blank completion did not finish). The first trace gets the whole grid, \
         others the {mid_delay} ms, 1 × BDP column. The seed used an ns-3 mmWave trace (mean 244.6 \
         Mbit/s) and 1 GB files and gives figures only, so there are no numbers to put beside ours.",
        bytes as f64 / 1e6
    ));
    t.explain(
        "target (Mbit/s)",
        "the adaptive scheduler's target rate for stream 0",
    )
    .explain("delay (ms)", "one-way delay of the path")
    .explain(
        "buffer (× BDP)",
        "drop-tail queue, multiples of trace mean rate × 2 × delay",
    )
    .explain(
        "stream N done (s)",
        "when stream N's file was delivered (blank: not within the run)",
    )
    .explain(
        "transfer rate (Mbit/s)",
        "both files' bits ÷ the later completion time",
    );
    report.table(None, &t);
    // Charts over the first trace: completion vs delay (1 × BDP) and vs buffer.
    let first = plan.traces[0]
        .rsplit('/')
        .next()
        .unwrap_or(plan.traces[0])
        .to_string();
    for (name, axis, cats) in [
        (
            "delay",
            "one-way delay (ms), 1 × BDP",
            delays.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
        ),
        (
            "buffer",
            "buffer (× BDP), delay 10 ms",
            buffers.iter().map(|b| b.to_string()).collect(),
        ),
    ] {
        let mut series = Vec::new();
        for &tg in targets {
            for s in 0..2 {
                let v: Vec<f64> = if name == "delay" {
                    delays
                        .iter()
                        .map(|&d| pick(&done, &first, tg, d, 1.0, s))
                        .collect()
                } else {
                    buffers
                        .iter()
                        .map(|&b| pick(&done, &first, tg, mid_delay, b, s))
                        .collect()
                };
                series.push(BarSeries::new(
                    format!("{tg} Mbit/s, stream {s}"),
                    v,
                    vec![None; cats.len()],
                ));
            }
        }
        let file = dir.join(format!("adaptive_{name}.svg"));
        charts::bar_chart(
            &file,
            &ChartText::new(
                format!("§4.3: completion time vs {name} ({first})"),
                axis,
                "completion time (s)",
            ),
            &cats,
            &series,
        )?;
        report.image(&format!("completion time vs {name}"), &file);
    }
    Ok(Part::Ran(out))
}

/// A completion time from the §4.3 results (0 when absent or unfinished).
fn pick(
    done: &[AdaptiveRun],
    trace: &str,
    target_mbps: u64,
    delay_ms: u64,
    buffer_bdp: f64,
    stream: usize,
) -> f64 {
    done.iter()
        .find(|r| {
            let p = &r.point;
            p.trace == trace
                && p.target_mbps == target_mbps
                && p.delay_ms == delay_ms
                && p.buffer_bdp.to_bits() == buffer_bdp.to_bits()
        })
        .and_then(|r| r.completion_s.get(stream).copied().flatten())
        .unwrap_or(0.0)
}
