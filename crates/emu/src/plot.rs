//! `peregrine emu plot FILE`: what `mm-link`'s live graphs show, from a
//! `--log` file, as SVG (plotters, like the lab's charts).
//!
//! For each direction that carried traffic, one SVG with two panels:
//! capacity and throughput (Mbit/s, 500 ms bins, Mahimahi's default) and
//! the time each packet spent in the link — queueing plus transmission —
//! against its departure time (ms; at most 2,000 points, the largest of
//! each time slice, so a long log still draws quickly). Capacity is the
//! fixed rate, or the trace's opportunities × 1,500 bytes per bin
//! (looping), read from the trace file the log's header names.

use crate::log::{DirLog, Event, Log};
use anyhow::{anyhow, Context as _};
use peregrine_sim::world::trace::{MahimahiTrace, OPPORTUNITY_BYTES};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Throughput bin, ns (Mahimahi's 500 ms).
pub const BIN_NS: u64 = 500_000_000;
const DELAY_POINTS: usize = 2000;
const SIZE: (u32, u32) = (900, 700);
/// Okabe–Ito blue, vermillion, bluish green (the lab's palette).
const BLUE: RGBColor = RGBColor(0, 114, 178);
const VERMILLION: RGBColor = RGBColor(213, 94, 0);
const GREEN: RGBColor = RGBColor(0, 158, 115);

/// The series of one direction's chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirSeries {
    /// (bin start s, capacity Mbit/s).
    pub capacity: Vec<(f64, f64)>,
    /// (bin start s, throughput Mbit/s) of departures.
    pub throughput: Vec<(f64, f64)>,
    /// (bin start s, offered load Mbit/s) of arrivals.
    pub offered: Vec<(f64, f64)>,
    /// (departure s, delay in the link ms).
    pub delay: Vec<(f64, f64)>,
}

/// Bin a direction's log. `trace` is the direction's trace, if any.
/// O(events + bins).
pub fn series(d: &DirLog, trace: Option<&MahimahiTrace>) -> DirSeries {
    let end_ns = d
        .events
        .iter()
        .map(|e| match e {
            Event::Arrival { t_ns, .. }
            | Event::Departure { t_ns, .. }
            | Event::Drop { t_ns, .. } => *t_ns,
        })
        .max()
        .unwrap_or(0);
    let bins = (end_ns / BIN_NS + 1) as usize;
    let mut dep = vec![0u64; bins];
    let mut arr = vec![0u64; bins];
    let slice_ns = (end_ns / DELAY_POINTS as u64).max(1);
    let mut delay: Vec<(f64, f64)> = Vec::new();
    let mut slice = u64::MAX;
    for e in &d.events {
        match e {
            Event::Arrival { t_ns, bytes } => arr[(t_ns / BIN_NS) as usize] += u64::from(*bytes),
            Event::Departure {
                t_ns,
                bytes,
                delay_ns,
            } => {
                dep[(t_ns / BIN_NS) as usize] += u64::from(*bytes);
                let s = t_ns / slice_ns;
                let point = (*t_ns as f64 / 1e9, *delay_ns as f64 / 1e6);
                if s == slice {
                    if let Some(last) = delay.last_mut() {
                        if point.1 > last.1 {
                            *last = point;
                        }
                    }
                } else {
                    slice = s;
                    delay.push(point);
                }
            }
            Event::Drop { .. } => {}
        }
    }
    let mbps = |bytes: u64| bytes as f64 * 8.0 / (BIN_NS as f64 / 1e9) / 1e6;
    let x = |i: usize| i as f64 * BIN_NS as f64 / 1e9;
    let capacity = (0..bins)
        .filter_map(|i| {
            let c = match (trace, d.rate_bps) {
                (Some(t), _) => {
                    let lo = t.first_at_or_after(crate::clock::to_model(i as u64 * BIN_NS));
                    let hi = t.first_at_or_after(crate::clock::to_model((i as u64 + 1) * BIN_NS));
                    mbps((hi - lo) * u64::from(OPPORTUNITY_BYTES))
                }
                (None, Some(r)) => r as f64 / 1e6,
                (None, None) => return None,
            };
            Some((x(i), c))
        })
        .collect();
    DirSeries {
        capacity,
        throughput: dep
            .iter()
            .enumerate()
            .map(|(i, b)| (x(i), mbps(*b)))
            .collect(),
        offered: arr
            .iter()
            .enumerate()
            .map(|(i, b)| (x(i), mbps(*b)))
            .collect(),
        delay,
    }
}

/// Draw every direction of the log at `log_path` that carried traffic
/// into `out_dir/{uplink,downlink}.svg`; returns the files written.
pub fn plot(log_path: &Path, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string(log_path)
        .with_context(|| format!("reading {}", log_path.display()))?;
    let log: Log = crate::log::parse(&text).map_err(|e| anyhow!("{}: {e}", log_path.display()))?;
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut written = Vec::new();
    for (d, name) in log.dirs.iter().zip(["uplink", "downlink"]) {
        if d.events.is_empty() {
            continue;
        }
        let trace = match &d.trace {
            Some(p) => Some(
                MahimahiTrace::load(Path::new(p))
                    .map_err(|e| anyhow!("{name} trace {p} (named in the log): {e}"))?,
            ),
            None => None,
        };
        let s = series(d, trace.as_ref());
        let file = out_dir.join(format!("{name}.svg"));
        draw(&file, name, &s).map_err(|e| anyhow!("drawing {}: {e}", file.display()))?;
        written.push(file);
    }
    if written.is_empty() {
        return Err(anyhow!(
            "{}: no packet events in the log (was traffic sent?)",
            log_path.display()
        ));
    }
    Ok(written)
}

fn max_y(points: &[(f64, f64)]) -> f64 {
    points.iter().map(|p| p.1).fold(0.0, f64::max)
}

fn draw(file: &Path, name: &str, s: &DirSeries) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(file, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(SIZE.1 / 2);
    let x1 = s
        .throughput
        .last()
        .map_or(1.0, |p| p.0 + BIN_NS as f64 / 1e9)
        .max(s.delay.last().map_or(0.0, |p| p.0));
    let y1 = max_y(&s.capacity)
        .max(max_y(&s.throughput))
        .max(max_y(&s.offered))
        .max(0.001)
        * 1.15;
    let mut c = ChartBuilder::on(&top)
        .caption(
            format!("{name}: capacity and throughput"),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..x1, 0.0..y1)?;
    c.configure_mesh()
        .x_desc("time (s)")
        .y_desc("rate (Mbit/s)")
        .draw()?;
    let step = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
        let w = BIN_NS as f64 / 1e9;
        pts.iter()
            .flat_map(|&(x, y)| [(x, y), (x + w, y)])
            .collect()
    };
    if !s.capacity.is_empty() {
        c.draw_series(LineSeries::new(step(&s.capacity), BLUE.stroke_width(2)))?
            .label("capacity")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE.stroke_width(2)));
    }
    c.draw_series(LineSeries::new(step(&s.offered), GREEN.stroke_width(1)))?
        .label("offered load (arrivals)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], GREEN.stroke_width(1)));
    c.draw_series(LineSeries::new(
        step(&s.throughput),
        VERMILLION.stroke_width(2),
    ))?
    .label("throughput (departures)")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], VERMILLION.stroke_width(2)));
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    let d1 = max_y(&s.delay).max(0.001) * 1.1;
    let mut c = ChartBuilder::on(&bottom)
        .caption(
            format!("{name}: time in the link (queueing + transmission)"),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..x1, 0.0..d1)?;
    c.configure_mesh()
        .x_desc("departure time (s)")
        .y_desc("delay (ms)")
        .draw()?;
    c.draw_series(
        s.delay
            .iter()
            .map(|&p| Circle::new(p, 1, VERMILLION.filled())),
    )?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_capacity_throughput_and_delay() {
        let t = MahimahiTrace::parse("1\n").expect("one opportunity per ms");
        let d = DirLog {
            rate_bps: None,
            trace: Some("t".into()),
            events: vec![
                Event::Arrival {
                    t_ns: 0,
                    bytes: 1500,
                },
                Event::Departure {
                    t_ns: 1_000_000,
                    bytes: 1500,
                    delay_ns: 1_000_000,
                },
                Event::Departure {
                    t_ns: 600_000_000,
                    bytes: 1500,
                    delay_ns: 3_000_000,
                },
            ],
        };
        let s = series(&d, Some(&t));
        // 1500 B every ms = 12 Mbit/s in every bin.
        assert_eq!(s.capacity.len(), 2);
        assert!((s.capacity[0].1 - 12.0).abs() < 1e-9, "{:?}", s.capacity);
        // One 1500-byte packet per 500 ms bin = 0.024 Mbit/s.
        assert!((s.throughput[1].1 - 0.024).abs() < 1e-9);
        assert_eq!(s.delay, vec![(0.001, 1.0), (0.6, 3.0)]);
    }
}
