//! The controller lab's trajectory plot (plotters).

use anyhow::Context;
use peregrine_sim::cclab::{LabConfig, LabEvent, LabTrace};
use plotters::prelude::*;
use std::path::Path;

/// Plot cwnd and ssthresh (KiB) over time for one lab trace, with the
/// script's events marked, into an SVG at `file`.
pub fn lab_trajectory(trace: &LabTrace, cfg: &LabConfig, file: &Path) -> anyhow::Result<()> {
    let name = trace.summary.controller.clone();
    let secs = cfg.duration.as_secs_f64();
    let kib = |b: u64| b as f64 / 1024.0;
    let max_cwnd = trace
        .rows
        .iter()
        .map(|r| kib(r.cwnd_bytes))
        .fold(1.0_f64, f64::max);
    let y_max = (max_cwnd * 1.1).max(10.0);
    let root = SVGBackend::new(file, (900, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(to_anyhow)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{name}: controller lab trajectory"),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..secs, 0.0..y_max)
        .map_err(to_anyhow)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("KiB")
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(to_anyhow)?;
    // Shade the blockage.
    if let Some((start, end)) = cfg.blockage() {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [
                    (start.as_secs_f64(), 0.0),
                    (end.as_secs_f64().max(start.as_secs_f64() + 0.05), y_max),
                ],
                RGBColor(255, 200, 120).mix(0.6).filled(),
            )))
            .map_err(to_anyhow)?
            .label("blockage")
            .legend(|(x, y)| {
                Rectangle::new(
                    [(x, y - 5), (x + 14, y + 5)],
                    RGBColor(255, 200, 120).filled(),
                )
            });
    }
    let cwnd = trace
        .rows
        .iter()
        .map(|r| (r.time.as_secs_f64(), kib(r.cwnd_bytes)));
    chart
        .draw_series(LineSeries::new(cwnd, BLUE.stroke_width(1)))
        .map_err(to_anyhow)?
        .label("cwnd")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], BLUE));
    let ssthresh: Vec<(f64, f64)> = trace
        .rows
        .iter()
        .filter_map(|r| {
            r.ssthresh_bytes
                .map(|s| (r.time.as_secs_f64(), kib(s).min(y_max)))
        })
        .collect();
    if !ssthresh.is_empty() {
        chart
            .draw_series(LineSeries::new(ssthresh, RED.mix(0.7).stroke_width(1)))
            .map_err(to_anyhow)?
            .label("ssthresh")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], RED));
    }
    let marks = trace.rows.iter().filter(|r| {
        matches!(
            r.event,
            Some(
                LabEvent::RecoveryStart
                    | LabEvent::Rto
                    | LabEvent::ScriptedRto
                    | LabEvent::Hold
                    | LabEvent::RtoHold
            )
        )
    });
    chart
        .draw_series(marks.map(|r| {
            let color = match r.event {
                Some(LabEvent::Hold | LabEvent::RtoHold) => GREEN,
                Some(LabEvent::RecoveryStart) => BLACK,
                _ => MAGENTA,
            };
            Circle::new((r.time.as_secs_f64(), kib(r.cwnd_bytes)), 3, color.filled())
        }))
        .map_err(to_anyhow)?
        .label("reduction / RTO / hold")
        .legend(|(x, y)| Circle::new((x + 7, y), 3, BLACK.filled()));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(to_anyhow)?;
    root.present()
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok(())
}

/// A plotters error as an `anyhow` error (shared by every chart here).
pub(crate) fn to_anyhow<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("plotting failed: {e}")
}
