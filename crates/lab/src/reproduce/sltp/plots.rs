//! SVG plots of `peregrine reproduce sltp`, in the shape of seed 003's
//! figures: network time against buffer size for both transports at one
//! load (Figs. 7, 9, 10), and the probe's latency, bandwidth and burst
//! against size with one line per load (Figs. 11–13). Both axes are
//! logarithmic: sizes span 1 KiB to 1 MiB and times three decades.

use super::report::{Results, Transport};
use crate::plot::to_anyhow;
use anyhow::Context;
use plotters::prelude::*;
use std::path::Path;

/// One line of a plot.
struct Series {
    label: String,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

const LOAD_COLORS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
];

/// Network time against size, Peregrine and TCP, at `load_pct`.
pub fn network_time(r: &Results, load_pct: u8, file: &Path) -> anyhow::Result<()> {
    let line = |t: Transport, color| Series {
        label: match t {
            Transport::Peregrine => "Peregrine (UDP)".into(),
            Transport::Tcp => "kernel TCP".into(),
        },
        color,
        points: r
            .info
            .sizes_bytes
            .iter()
            .filter_map(|s| {
                let m = r.point(t, load_pct, *s)?.summary()?;
                Some((*s as f64 / 1024.0, m.median))
            })
            .collect(),
    };
    draw(
        file,
        &format!("Network time at {load_pct} % load: Peregrine vs TCP"),
        "median round trip (ms)",
        vec![
            line(Transport::Peregrine, LOAD_COLORS[0]),
            line(Transport::Tcp, LOAD_COLORS[3]),
        ],
    )
}

/// Peregrine's median time over TCP's against size, one line per load
/// (the message of seed Fig. 10: how the user-space transport fares as
/// the load takes cycles away).
pub fn ratio(r: &Results, file: &Path) -> anyhow::Result<()> {
    let series = r
        .info
        .loads_pct
        .iter()
        .enumerate()
        .map(|(i, load)| Series {
            label: format!("{load} % load"),
            color: LOAD_COLORS[i % LOAD_COLORS.len()],
            points: r
                .info
                .sizes_bytes
                .iter()
                .filter_map(|s| Some((*s as f64 / 1024.0, r.ratio(*load, *s)?)))
                .collect(),
        })
        .collect();
    draw(
        file,
        "Peregrine / TCP network time by load (below 1: Peregrine faster)",
        "time ratio",
        series,
    )
}

/// Which probe quantity to plot.
#[derive(Debug, Clone, Copy)]
pub enum ProbeQuantity {
    /// Latency, ms.
    Latency,
    /// Bandwidth, MB/s.
    Bandwidth,
    /// Burst, KiB.
    Burst,
}

/// One probe quantity against size, one line per load.
pub fn probe(r: &Results, q: ProbeQuantity, file: &Path) -> anyhow::Result<()> {
    let (title, y) = match q {
        ProbeQuantity::Latency => ("Packet-pair latency under load", "latency (ms)"),
        ProbeQuantity::Bandwidth => ("Packet-pair bandwidth under load", "bandwidth (MB/s)"),
        ProbeQuantity::Burst => ("Packet-pair burst under load", "burst (KiB)"),
    };
    let series = r
        .info
        .loads_pct
        .iter()
        .enumerate()
        .map(|(i, load)| Series {
            label: format!("{load} % load"),
            color: LOAD_COLORS[i % LOAD_COLORS.len()],
            points: r
                .info
                .sizes_bytes
                .iter()
                .filter_map(|s| {
                    let p = r.point(Transport::Peregrine, *load, *s)?.probe_median()?;
                    let v = match q {
                        ProbeQuantity::Latency => p.rtt_ms,
                        ProbeQuantity::Bandwidth => p.bandwidth_bps / 8e6,
                        ProbeQuantity::Burst => p.burst_bytes / 1024.0,
                    };
                    Some((*s as f64 / 1024.0, v))
                })
                .collect(),
        })
        .collect();
    draw(file, title, y, series)
}

fn draw(file: &Path, title: &str, y_desc: &str, series: Vec<Series>) -> anyhow::Result<()> {
    let all = || series.iter().flat_map(|s| s.points.iter());
    // Log axes need positive ranges; an empty or degenerate plot still draws.
    let positive = |v: f64| v.is_finite() && v > 0.0;
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in all().filter(|(x, y)| positive(*x) && positive(*y)) {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (1.0, 1024.0, 0.01, 1.0);
    }
    let (x0, x1) = (x0 / 1.3, x1 * 1.3);
    let (y0, y1) = (y0 / 1.5, y1 * 1.5);
    let root = SVGBackend::new(file, (800, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(to_anyhow)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(to_anyhow)?;
    chart
        .configure_mesh()
        .x_desc("buffer size (KiB)")
        .y_desc(y_desc)
        .light_line_style(WHITE.mix(0.0))
        .x_labels(12)
        .y_labels(12)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.3}"))
        .draw()
        .map_err(to_anyhow)?;
    for s in series {
        let color = s.color;
        let pts: Vec<(f64, f64)> = s
            .points
            .into_iter()
            .filter(|(x, y)| positive(*x) && positive(*y))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(to_anyhow)?
            .label(s.label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(to_anyhow)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(to_anyhow)?;
    root.present()
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok(())
}
