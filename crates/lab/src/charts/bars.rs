//! Bar charts grouped by category, with error bars.
//!
//! Each category (x axis) holds one bar per series, side by side, in the
//! series' colours (legend right of the plot). An error bar is drawn from
//! value − e to value + e with caps, e.g. e = the 95 % CI half-width;
//! a missing error (`None`, as for a single run) draws no bar. Bars grow
//! from 0, and the y range always includes 0.

use super::{
    category_labels, check_finite, color, draw_err, framed_chart, legend, legend_width, no_data,
    padded_range, svg_root, ChartError, ChartText, Mesh, Swatch,
};
use plotters::prelude::*;
use std::path::Path;

/// One series of bars: a value per category, and optional error bars.
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    /// Legend label.
    pub label: String,
    /// One value per category.
    pub values: Vec<f64>,
    /// One error half-width per category, or empty for no error bars.
    pub errors: Vec<Option<f64>>,
}

impl BarSeries {
    /// A series with error bars (`errors` may be empty).
    pub fn new(label: impl Into<String>, values: Vec<f64>, errors: Vec<Option<f64>>) -> Self {
        BarSeries {
            label: label.into(),
            values,
            errors,
        }
    }
}

/// Draw grouped bars into the SVG `file`: `categories` along x, one bar
/// per series in each. No categories or no series gives a "no data" chart;
/// a series whose lengths do not match the categories is an error.
pub fn bar_chart(
    file: &Path,
    text: &ChartText,
    categories: &[String],
    series: &[BarSeries],
) -> Result<(), ChartError> {
    let n = categories.len();
    for s in series {
        let length = |what, found| ChartError::Length {
            chart: text.title.clone(),
            series: s.label.clone(),
            what,
            found,
            expected: n,
        };
        if s.values.len() != n {
            return Err(length("values", s.values.len()));
        }
        if !s.errors.is_empty() && s.errors.len() != n {
            return Err(length("errors", s.errors.len()));
        }
        check_finite(&text.title, &s.label, s.values.iter().copied())?;
        check_finite(
            &text.title,
            &s.label,
            s.errors.iter().map(|e| e.unwrap_or(0.0)),
        )?;
        if let Some(index) = s.errors.iter().position(|e| e.is_some_and(|e| e < 0.0)) {
            return Err(ChartError::NegativeError {
                chart: text.title.clone(),
                series: s.label.clone(),
                index,
            });
        }
    }
    if n == 0 || series.is_empty() {
        return no_data(file, text, "no categories or no series");
    }
    let err_of = |s: &BarSeries, i: usize| s.errors.get(i).copied().flatten().unwrap_or(0.0);
    let extent = series.iter().flat_map(|s| {
        (0..n).flat_map(move |i| [s.values[i] - err_of(s, i), s.values[i] + err_of(s, i)])
    });
    let raw_lo = extent.clone().fold(0.0_f64, f64::min);
    let (lo, hi) = padded_range(extent.chain([0.0]), 0.05);
    // Bars grow from 0; the legend sits right of the plot.
    let y0 = if raw_lo >= 0.0 { 0.0 } else { lo };
    let y1 = hi;
    let err = draw_err(file);
    let root = svg_root(file)?;
    let x_axis = -0.5..n as f64 - 0.5;
    let legend_px = legend_width(series.iter().map(|s| s.label.as_str()));
    let mut chart = framed_chart(
        &root,
        file,
        text,
        x_axis,
        y0..y1,
        Mesh::Categories,
        legend_px,
    )?;
    let group = 0.8;
    let width = group / series.len() as f64;
    for (j, s) in series.iter().enumerate() {
        let c = color(j);
        let bar = |i: usize| {
            let left = i as f64 - group / 2.0 + j as f64 * width;
            (left + width * 0.06, left + width * 0.94)
        };
        chart
            .draw_series((0..n).map(|i| {
                let (l, r) = bar(i);
                Rectangle::new([(l, 0.0), (r, s.values[i])], c.filled())
            }))
            .map_err(|e| err(&e))?;
        let whiskers = (0..n).filter_map(|i| {
            let e = s.errors.get(i).copied().flatten()?;
            let (l, r) = bar(i);
            let (mid, cap) = ((l + r) / 2.0, (r - l) / 4.0);
            let (lo, hi) = (s.values[i] - e, s.values[i] + e);
            Some(PathElement::new(
                vec![
                    (mid - cap, hi),
                    (mid + cap, hi),
                    (mid, hi),
                    (mid, lo),
                    (mid - cap, lo),
                    (mid + cap, lo),
                ],
                BLACK.stroke_width(1),
            ))
        });
        chart.draw_series(whiskers).map_err(|e| err(&e))?;
    }
    let entries: Vec<_> = series
        .iter()
        .enumerate()
        .map(|(j, s)| (s.label.clone(), color(j), Swatch::Bar))
        .collect();
    legend(&root, &chart, &entries, file)?;
    category_labels(&root, &chart, y0, categories, file)?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{dir, read_svg};
    use super::*;

    fn cats() -> Vec<String> {
        ["0 %", "5 %", "10 %"].map(String::from).to_vec()
    }

    fn text() -> ChartText {
        ChartText::new("Gain over RR", "loss rate (%)", "gain (fraction)")
    }

    #[test]
    fn writes_labelled_deterministic_svg() {
        let tmp = dir("bars");
        let d = tmp.path();
        let series = vec![
            BarSeries::new(
                "WFQ",
                vec![0.11, 0.08, 0.17],
                vec![Some(0.02), Some(0.03), None],
            ),
            BarSeries::new("ABS", vec![0.17, 0.23, 0.29], vec![]),
        ];
        bar_chart(&d.join("a.svg"), &text(), &cats(), &series).unwrap();
        bar_chart(&d.join("b.svg"), &text(), &cats(), &series).unwrap();
        let svg = read_svg(&d.join("a.svg"));
        assert_eq!(svg, read_svg(&d.join("b.svg")));
        for label in [
            "Gain over RR",
            "loss rate (%)",
            "gain (fraction)",
            "WFQ",
            "ABS",
            "\n5 %\n",
            "\n10 %\n",
        ] {
            assert!(svg.contains(label), "missing {label}");
        }
        // 6 bars + 2 legend swatches + background rectangles.
        assert!(svg.matches("<rect").count() >= 8);
        // Negative values are drawn below 0.
        let neg = vec![BarSeries::new(
            "x",
            vec![-1.0, 2.0, 0.5],
            vec![Some(0.5); 3],
        )];
        bar_chart(&d.join("neg.svg"), &text(), &cats(), &neg).unwrap();
        read_svg(&d.join("neg.svg"));
    }

    #[test]
    fn degenerate_and_bad_inputs() {
        let tmp = dir("bars-bad");
        let d = tmp.path();
        bar_chart(&d.join("none.svg"), &text(), &[], &[]).unwrap();
        assert!(read_svg(&d.join("none.svg")).contains("no data"));
        bar_chart(
            &d.join("one.svg"),
            &text(),
            &cats()[..1],
            &[BarSeries::new("x", vec![0.0], vec![])],
        )
        .unwrap();
        read_svg(&d.join("one.svg"));
        let e = bar_chart(
            &d.join("len.svg"),
            &text(),
            &cats(),
            &[BarSeries::new("x", vec![1.0], vec![])],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "chart `Gain over RR`: series `x` has 1 values, expected 3"
        );
        let e = bar_chart(
            &d.join("e.svg"),
            &text(),
            &cats(),
            &[BarSeries::new("x", vec![1.0; 3], vec![None])],
        )
        .unwrap_err();
        assert!(e.to_string().contains("has 1 errors, expected 3"), "{e}");
        let e = bar_chart(
            &d.join("nan.svg"),
            &text(),
            &cats(),
            &[BarSeries::new("x", vec![1.0, f64::NAN, 1.0], vec![])],
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("non-finite value (NaN) at index 1"),
            "{e}"
        );
        let e = bar_chart(
            &d.join("neg.svg"),
            &text(),
            &cats(),
            &[BarSeries::new(
                "x",
                vec![1.0; 3],
                vec![None, Some(-1.0), None],
            )],
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("negative error bar at index 1"),
            "{e}"
        );
    }
}
