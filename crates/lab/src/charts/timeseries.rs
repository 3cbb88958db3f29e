//! Time series: several `(x, y)` lines with a legend.
//!
//! Points are drawn in the order given (sort by x first for a time axis).
//! A series with a single point is drawn as a dot, so it stays visible.

use super::{
    color, draw_err, framed_chart, legend, legend_width, no_data, padded_range, svg_root,
    ChartError, ChartText, Mesh, Swatch,
};
use plotters::prelude::*;
use std::path::Path;

/// One line of a time series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// `(x, y)` points, e.g. (time s, throughput Mbit/s).
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A labelled series.
    pub fn new(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            label: label.into(),
            points,
        }
    }
}

/// Draw `series` as lines into the SVG `file`. All series empty (or none)
/// gives a "no data" chart.
pub fn time_series(file: &Path, text: &ChartText, series: &[Series]) -> Result<(), ChartError> {
    for s in series {
        if let Some(index) = s
            .points
            .iter()
            .position(|(x, y)| !x.is_finite() || !y.is_finite())
        {
            let (x, y) = s.points[index];
            return Err(ChartError::NonFinite {
                chart: text.title.clone(),
                series: s.label.clone(),
                index,
                value: format!("{x}, {y}"),
            });
        }
    }
    if series.iter().all(|s| s.points.is_empty()) {
        return no_data(file, text, "every series is empty");
    }
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = padded_range(all().map(|p| p.0), 0.0);
    let (y0, y1) = padded_range(all().map(|p| p.1), 0.05);
    // A y axis of non-negative quantities starts at 0; the legend sits
    // right of the plot, so it never covers a line.
    let y0 = if all().all(|p| p.1 >= 0.0) { 0.0 } else { y0 };
    let legend_px = legend_width(series.iter().map(|s| s.label.as_str()));
    let err = draw_err(file);
    let root = svg_root(file)?;
    let mut chart = framed_chart(&root, file, text, x0..x1, y0..y1, Mesh::Full, legend_px)?;
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        if s.points.len() == 1 {
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(|e| err(&e))?;
        } else {
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
                .map_err(|e| err(&e))?;
        }
    }
    let entries: Vec<_> = series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let swatch = if s.points.len() == 1 {
                Swatch::Dot
            } else {
                Swatch::Line
            };
            (s.label.clone(), color(i), swatch)
        })
        .collect();
    legend(&root, &chart, &entries, file)?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{dir, read_svg};
    use super::*;

    fn text() -> ChartText {
        ChartText::new("Goodput over time", "time (s)", "goodput (Mbit/s)")
    }

    #[test]
    fn writes_labelled_deterministic_svg() {
        let tmp = dir("ts");
        let d = tmp.path();
        let series = vec![
            Series::new(
                "cubic",
                (0..50)
                    .map(|i| (i as f64 * 0.1, (i as f64).sqrt()))
                    .collect(),
            ),
            Series::new(
                "bbr",
                (0..50)
                    .map(|i| (i as f64 * 0.1, 5.0 - (i % 7) as f64))
                    .collect(),
            ),
        ];
        let (a, b) = (d.join("a.svg"), d.join("b.svg"));
        time_series(&a, &text(), &series).unwrap();
        time_series(&b, &text(), &series).unwrap();
        let svg = read_svg(&a);
        assert_eq!(svg, read_svg(&b), "same input, same bytes");
        for label in [
            "Goodput over time",
            "time (s)",
            "goodput (Mbit/s)",
            "cubic",
            "bbr",
        ] {
            assert!(svg.contains(label), "missing {label}");
        }
        assert!(svg.contains("<polyline"), "lines are drawn");
    }

    #[test]
    fn degenerate_inputs() {
        let tmp = dir("ts-degenerate");
        let d = tmp.path();
        // Nothing at all: a "no data" chart.
        time_series(&d.join("none.svg"), &text(), &[]).unwrap();
        assert!(read_svg(&d.join("none.svg")).contains("no data"));
        time_series(&d.join("empty.svg"), &text(), &[Series::new("x", vec![])]).unwrap();
        assert!(read_svg(&d.join("empty.svg")).contains("no data"));
        // One point: drawn as a dot on a widened range.
        time_series(
            &d.join("one.svg"),
            &text(),
            &[Series::new("only", vec![(1.0, 2.0)])],
        )
        .unwrap();
        let svg = read_svg(&d.join("one.svg"));
        assert!(svg.contains("<circle") && svg.contains("only"));
        // NaN: an error naming the series and index.
        let e = time_series(
            &d.join("nan.svg"),
            &text(),
            &[Series::new("bad", vec![(0.0, 1.0), (1.0, f64::NAN)])],
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("series `bad` has a non-finite value (1, NaN) at index 1"),
            "{e}"
        );
    }
}
