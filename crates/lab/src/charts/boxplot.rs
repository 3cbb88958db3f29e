//! Box plots: one box per category.
//!
//! The box spans the first to the third quartile with a line at the
//! median; quartiles are linearly interpolated between order statistics
//! (Hyndman & Fan type 7, the default of R and NumPy). The whiskers reach
//! the most extreme values within 1.5 × IQR of the box (Tukey); values
//! beyond are outliers, drawn as open circles. A category with no values
//! keeps its slot and is labelled "(no data)".

use super::{
    category_labels, check_finite, color, draw_err, framed_chart, no_data, padded_range, svg_root,
    ChartError, ChartText, Mesh, Samples,
};
use plotters::prelude::*;
use std::path::Path;

/// The five-number summary of a box and its outliers.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxStats {
    /// Number of values.
    pub n: usize,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: f64,
    /// Lower whisker: the smallest value ≥ q1 − 1.5 IQR.
    pub whisker_lo: f64,
    /// Upper whisker: the largest value ≤ q3 + 1.5 IQR.
    pub whisker_hi: f64,
    /// Values outside the whiskers, ascending.
    pub outliers: Vec<f64>,
}

impl BoxStats {
    /// Box statistics of `values` (any order); `None` if empty or if any
    /// value is not finite.
    pub fn of(values: &[f64]) -> Option<BoxStats> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut x = values.to_vec();
        x.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let h = (x.len() - 1) as f64 * p;
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(x.len() - 1);
            x[lo] + (h - lo as f64) * (x[hi] - x[lo])
        };
        let (q1, median, q3) = (q(0.25), q(0.5), q(0.75));
        let iqr = q3 - q1;
        let (fence_lo, fence_hi) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let inside = || {
            x.iter()
                .copied()
                .filter(|&v| v >= fence_lo && v <= fence_hi)
        };
        // The quartiles lie within the data, so some value is inside the fences.
        let whisker_lo = inside().next().unwrap_or(q1);
        let whisker_hi = inside().next_back().unwrap_or(q3);
        let outliers = x
            .iter()
            .copied()
            .filter(|&v| v < fence_lo || v > fence_hi)
            .collect();
        Some(BoxStats {
            n: x.len(),
            q1,
            median,
            q3,
            whisker_lo,
            whisker_hi,
            outliers,
        })
    }
}

/// Draw one box per sample (category) into the SVG `file`. All samples
/// empty (or none) gives a "no data" chart.
pub fn box_plot(file: &Path, text: &ChartText, samples: &[Samples]) -> Result<(), ChartError> {
    for s in samples {
        check_finite(&text.title, &s.label, s.values.iter().copied())?;
    }
    if samples.iter().all(|s| s.values.is_empty()) {
        return no_data(file, text, "every category is empty");
    }
    let boxes: Vec<Option<BoxStats>> = samples.iter().map(|s| BoxStats::of(&s.values)).collect();
    let (y0, y1) = padded_range(samples.iter().flat_map(|s| s.values.iter().copied()), 0.06);
    let n = samples.len();
    let labels: Vec<String> = samples
        .iter()
        .map(|s| {
            if s.values.is_empty() {
                format!("{} (no data)", s.label)
            } else {
                s.label.clone()
            }
        })
        .collect();
    let err = draw_err(file);
    let root = svg_root(file)?;
    let x_axis = -0.5..n as f64 - 0.5;
    let mut chart = framed_chart(&root, file, text, x_axis, y0..y1, Mesh::Categories, 0)?;
    for (i, b) in boxes.iter().enumerate() {
        let Some(b) = b else { continue };
        let c = color(i);
        let x = i as f64;
        let (half, cap) = (0.3, 0.15);
        let mut shapes: Vec<DynElement<'static, SVGBackend, (f64, f64)>> = vec![
            Rectangle::new([(x - half, b.q1), (x + half, b.q3)], c.mix(0.3).filled()).into_dyn(),
            Rectangle::new([(x - half, b.q1), (x + half, b.q3)], c.stroke_width(2)).into_dyn(),
            PathElement::new(
                vec![(x - half, b.median), (x + half, b.median)],
                BLACK.stroke_width(3),
            )
            .into_dyn(),
            PathElement::new(vec![(x, b.q3), (x, b.whisker_hi)], c.stroke_width(2)).into_dyn(),
            PathElement::new(vec![(x, b.q1), (x, b.whisker_lo)], c.stroke_width(2)).into_dyn(),
            PathElement::new(
                vec![(x - cap, b.whisker_hi), (x + cap, b.whisker_hi)],
                c.stroke_width(2),
            )
            .into_dyn(),
            PathElement::new(
                vec![(x - cap, b.whisker_lo), (x + cap, b.whisker_lo)],
                c.stroke_width(2),
            )
            .into_dyn(),
        ];
        shapes.extend(
            b.outliers
                .iter()
                .map(|&v| Circle::new((x, v), 3, c.stroke_width(1)).into_dyn()),
        );
        chart.draw_series(shapes).map_err(|e| err(&e))?;
    }
    category_labels(&root, &chart, y0, &labels, file)?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{dir, read_svg};
    use super::*;

    #[test]
    fn box_statistics_of_known_sample() {
        // 1..=9 and an outlier at 100: n = 10.
        let mut v: Vec<f64> = (1..=9).map(f64::from).collect();
        v.push(100.0);
        let b = BoxStats::of(&v).unwrap();
        // Type 7: h = 9 p; q1 at h = 2.25 -> 3.25, median at 4.5 -> 5.5, q3 at 6.75 -> 7.75.
        assert_eq!((b.q1, b.median, b.q3), (3.25, 5.5, 7.75));
        // IQR 4.5: fences -3.5 and 14.5.
        assert_eq!((b.whisker_lo, b.whisker_hi), (1.0, 9.0));
        assert_eq!(b.outliers, [100.0]);
        assert_eq!(b.n, 10);
        let one = BoxStats::of(&[4.0]).unwrap();
        assert_eq!(
            (one.q1, one.median, one.q3, one.whisker_lo, one.whisker_hi),
            (4.0, 4.0, 4.0, 4.0, 4.0)
        );
        assert!(one.outliers.is_empty());
        assert_eq!(BoxStats::of(&[]), None);
        assert_eq!(BoxStats::of(&[f64::NAN]), None);
    }

    #[test]
    fn writes_labelled_deterministic_svg_and_handles_degenerate_input() {
        let tmp = dir("box");
        let d = tmp.path();
        let text = ChartText::new(
            "Priority latency per scheduler",
            "scheduler",
            "latency (ms)",
        );
        let mut rr: Vec<f64> = (0..60).map(|i| 80.0 + (i * 7 % 30) as f64).collect();
        rr.push(400.0);
        let samples = vec![
            Samples::new("RR", rr),
            Samples::new(
                "WFQ",
                (0..60).map(|i| 60.0 + (i * 11 % 25) as f64).collect(),
            ),
            Samples::new("ABS", vec![45.0]),
            Samples::new("EDF", vec![]),
        ];
        box_plot(&d.join("a.svg"), &text, &samples).unwrap();
        box_plot(&d.join("b.svg"), &text, &samples).unwrap();
        let svg = read_svg(&d.join("a.svg"));
        assert_eq!(svg, read_svg(&d.join("b.svg")));
        for label in [
            "Priority latency per scheduler",
            "scheduler",
            "latency (ms)",
            "\nRR\n",
            "\nWFQ\n",
            "\nABS\n",
            "EDF (no data)",
        ] {
            assert!(svg.contains(label), "missing {label}");
        }
        assert!(svg.contains("<circle"), "the outlier is drawn");
        box_plot(&d.join("none.svg"), &text, &[Samples::new("x", vec![])]).unwrap();
        assert!(read_svg(&d.join("none.svg")).contains("no data"));
        let e = box_plot(
            &d.join("nan.svg"),
            &text,
            &[Samples::new("x", vec![1.0, f64::NAN])],
        )
        .unwrap_err();
        assert!(e.to_string().contains("at index 1"), "{e}");
    }
}
