//! Empirical cumulative distribution functions.
//!
//! Each sample is drawn as the step function F(x) = (number of values
//! ≤ x) / n, from 0 at its smallest value to 1 at its largest; the y axis
//! is the fraction 0–1 (its label comes from the caller's [`ChartText`],
//! typically "fraction of messages").

use super::{
    check_finite, color, draw_err, framed_chart, legend, legend_width, no_data, padded_range,
    svg_root, ChartError, ChartText, Mesh, Samples, Swatch,
};
use plotters::prelude::*;
use std::path::Path;

/// The steps of the empirical CDF of `values` (any order): the corner
/// points of the staircase, starting at `(min, 0)` and ending at
/// `(max, 1)`.
pub fn cdf_steps(values: &[f64]) -> Vec<(f64, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let mut steps = Vec::with_capacity(2 * sorted.len());
    let mut i = 0;
    while i < sorted.len() {
        let x = sorted[i];
        let below = i as f64 / n;
        // Equal values make one step.
        while i < sorted.len() && sorted[i] == x {
            i += 1;
        }
        steps.push((x, below));
        steps.push((x, i as f64 / n));
    }
    steps
}

/// Draw the CDF of every sample into the SVG `file`. All samples empty
/// (or none) gives a "no data" chart.
pub fn cdf(file: &Path, text: &ChartText, samples: &[Samples]) -> Result<(), ChartError> {
    for s in samples {
        check_finite(&text.title, &s.label, s.values.iter().copied())?;
    }
    if samples.iter().all(|s| s.values.is_empty()) {
        return no_data(file, text, "every sample is empty");
    }
    let (x0, x1) = padded_range(samples.iter().flat_map(|s| s.values.iter().copied()), 0.02);
    let err = draw_err(file);
    let root = svg_root(file)?;
    let label = |s: &Samples| format!("{} (n = {})", s.label, s.values.len());
    let legend_px = legend_width(samples.iter().filter(|s| !s.values.is_empty()).map(label));
    let mut chart = framed_chart(&root, file, text, x0..x1, 0.0..1.02, Mesh::Full, legend_px)?;
    for (i, s) in samples.iter().enumerate() {
        if s.values.is_empty() {
            continue;
        }
        let c = color(i);
        chart
            .draw_series(LineSeries::new(cdf_steps(&s.values), c.stroke_width(2)))
            .map_err(|e| err(&e))?;
    }
    let entries: Vec<_> = samples
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.values.is_empty())
        .map(|(i, s)| (label(s), color(i), Swatch::Line))
        .collect();
    legend(&root, &chart, &entries, file)?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{dir, read_svg};
    use super::*;

    #[test]
    fn steps_of_known_sample() {
        assert_eq!(
            cdf_steps(&[3.0, 1.0, 2.0, 2.0]),
            [
                (1.0, 0.0),
                (1.0, 0.25),
                (2.0, 0.25),
                (2.0, 0.75),
                (3.0, 0.75),
                (3.0, 1.0)
            ]
        );
        assert!(cdf_steps(&[]).is_empty());
    }

    #[test]
    fn writes_labelled_deterministic_svg_and_handles_degenerate_input() {
        let tmp = dir("cdf");
        let d = tmp.path();
        let text = ChartText::new(
            "Priority-message latency",
            "latency (ms)",
            "fraction of messages",
        );
        let samples = vec![
            Samples::new(
                "rr",
                (0..100).map(|i| 40.0 + (i * 37 % 100) as f64).collect(),
            ),
            Samples::new(
                "abs",
                (0..80).map(|i| 40.0 + (i * 13 % 50) as f64).collect(),
            ),
            Samples::new("empty", vec![]),
        ];
        cdf(&d.join("a.svg"), &text, &samples).unwrap();
        cdf(&d.join("b.svg"), &text, &samples).unwrap();
        let svg = read_svg(&d.join("a.svg"));
        assert_eq!(svg, read_svg(&d.join("b.svg")));
        for label in [
            "Priority-message latency",
            "latency (ms)",
            "fraction of messages",
            "rr (n = 100)",
            "abs (n = 80)",
        ] {
            assert!(svg.contains(label), "missing {label}");
        }
        cdf(&d.join("one.svg"), &text, &[Samples::new("one", vec![5.0])]).unwrap();
        assert!(read_svg(&d.join("one.svg")).contains("one (n = 1)"));
        cdf(&d.join("none.svg"), &text, &[]).unwrap();
        assert!(read_svg(&d.join("none.svg")).contains("no data"));
        let e = cdf(
            &d.join("inf.svg"),
            &text,
            &[Samples::new("x", vec![f64::INFINITY])],
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("series `x` has a non-finite value (inf) at index 0"),
            "{e}"
        );
    }
}
