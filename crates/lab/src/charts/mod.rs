//! Paper-quality SVG charts (plotters) for experiment reports.
//!
//! Four kinds, each a function from generic inputs (labels and `f64`
//! samples) to an SVG file:
//!
//! * [`time_series`]: several `(x, y)` series with a legend;
//! * [`cdf`]: empirical CDFs of several samples;
//! * [`box_plot`]: one box per category — median, quartiles, whiskers at
//!   the most extreme values within 1.5 IQR, outliers as dots;
//! * [`bar_chart`]: bars grouped by category, one bar per series, with
//!   optional error bars (e.g. 95 % confidence intervals).
//!
//! Choices: every chart carries a title and axis labels with units (the
//! caller's [`ChartText`]); colours are the Okabe–Ito palette (readable
//! by colour-blind readers and in grey print); output bytes are a
//! function of the inputs alone (no timestamps, no random ids), so
//! reports can be diffed. Bad inputs never panic: a non-finite value or
//! mismatched lengths are a [`ChartError`] naming the series and index;
//! no data at all gives a framed "no data" chart, so a report's image
//! link is never broken.

mod bars;
mod boxplot;
mod cdf;
pub mod export;
pub mod readable;
mod timeseries;

pub use bars::{bar_chart, BarSeries};
pub use boxplot::{box_plot, BoxStats};
pub use cdf::cdf;
pub use timeseries::{time_series, Series};

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Size of every chart, in SVG pixels (a two-column figure at ~100 dpi).
pub const SIZE: (u32, u32) = (800, 480);

/// Title and axis labels of a chart. Axis labels should carry units:
/// `"latency (ms)"`, `"time (s)"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartText {
    /// The chart's title.
    pub title: String,
    /// The x axis label, with unit.
    pub x_label: String,
    /// The y axis label, with unit.
    pub y_label: String,
}

impl ChartText {
    /// Title and axis labels.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        ChartText {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
        }
    }
}

/// A labelled sample (one CDF curve, one box).
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    /// Legend or category label.
    pub label: String,
    /// The values, in any order.
    pub values: Vec<f64>,
}

impl Samples {
    /// A labelled sample.
    pub fn new(label: impl Into<String>, values: Vec<f64>) -> Self {
        Samples {
            label: label.into(),
            values,
        }
    }
}

/// Why a chart could not be drawn.
#[derive(Debug, Error)]
pub enum ChartError {
    /// A NaN or infinite value in the input.
    #[error(
        "chart `{chart}`: series `{series}` has a non-finite value ({value}) at index {index}"
    )]
    NonFinite {
        /// The chart's title.
        chart: String,
        /// The series' label.
        series: String,
        /// Position of the value in the series.
        index: usize,
        /// The value, as text.
        value: String,
    },
    /// A series whose length does not match the categories.
    #[error("chart `{chart}`: series `{series}` has {found} {what}, expected {expected}")]
    Length {
        /// The chart's title.
        chart: String,
        /// The series' label.
        series: String,
        /// What is counted (`values`, `errors`).
        what: &'static str,
        /// Its length.
        found: usize,
        /// The expected length.
        expected: usize,
    },
    /// A negative error-bar half-width.
    #[error("chart `{chart}`: series `{series}` has a negative error bar at index {index}")]
    NegativeError {
        /// The chart's title.
        chart: String,
        /// The series' label.
        series: String,
        /// Position of the error.
        index: usize,
    },
    /// The drawing or the file write failed.
    #[error("cannot draw {}: {message}", file.display())]
    Draw {
        /// The SVG file.
        file: PathBuf,
        /// plotters' message.
        message: String,
    },
}

/// The Okabe–Ito palette (black last), then eight darker or muted
/// colours (after Paul Tol's "muted" scheme) so that a chart with up to
/// sixteen series — fanet's thirteen controllers — never gives two
/// series one colour (the legend would not tell them apart).
const PALETTE: [RGBColor; 16] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(240, 228, 66),  // yellow
    RGBColor(0, 0, 0),       // black
    RGBColor(51, 34, 136),   // indigo
    RGBColor(17, 119, 51),   // dark green
    RGBColor(153, 153, 51),  // olive
    RGBColor(204, 102, 119), // rose
    RGBColor(136, 34, 85),   // wine
    RGBColor(119, 119, 119), // grey
    RGBColor(140, 81, 10),   // brown
    RGBColor(68, 170, 153),  // teal
];

/// The colour of series `i` (cycling through the palette after 16).
pub(crate) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Check that every value is finite.
pub(crate) fn check_finite(
    chart: &str,
    series: &str,
    values: impl IntoIterator<Item = f64>,
) -> Result<(), ChartError> {
    for (index, v) in values.into_iter().enumerate() {
        if !v.is_finite() {
            return Err(ChartError::NonFinite {
                chart: chart.into(),
                series: series.into(),
                index,
                value: v.to_string(),
            });
        }
    }
    Ok(())
}

/// A `(lo, hi)` range covering `values`, padded by `pad` of its width on
/// each side; a zero-width range is widened so the chart has an extent.
pub(crate) fn padded_range(values: impl IntoIterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    let width = hi - lo;
    if width <= 0.0 {
        let half = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (lo - half, hi + half);
    }
    (lo - width * pad, hi + width * pad)
}

/// A drawing error as a [`ChartError`] for `file`.
pub(crate) fn draw_err(file: &Path) -> impl Fn(&dyn std::fmt::Display) -> ChartError + '_ {
    move |e| ChartError::Draw {
        file: file.to_path_buf(),
        message: e.to_string(),
    }
}

/// How [`framed_chart`] draws the mesh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mesh {
    /// Grid lines and tick labels on both axes (time series, CDFs).
    Full,
    /// No vertical grid lines and no x tick labels: the x axis holds
    /// categories, labelled by [`category_labels`] (bars, box plots).
    Categories,
    /// No grid and no tick labels at all (the "no data" frame).
    Blank,
}

/// The frame every chart shares: a white SVG canvas for `file`, of
/// [`SIZE`] or the canvas of the process's figure size
/// ([`export::set_figure_size`]).
pub(crate) fn svg_root(file: &Path) -> Result<DrawingArea<SVGBackend<'_>, Shift>, ChartError> {
    let root = SVGBackend::new(file, export::figure_size().canvas()).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_err(file)(&e))?;
    Ok(root)
}

/// Font size of legend entries, px.
const LEGEND_FONT_PX: u32 = 15;

/// The width of the legend column right of the plot for entries
/// `labels` (see [`legend`]): the longest label at about 0.55 em a
/// character, plus the swatch and margins; 0 without entries. O(total
/// label length).
pub(crate) fn legend_width<S: AsRef<str>>(labels: impl IntoIterator<Item = S>) -> u32 {
    let longest = labels.into_iter().map(|l| l.as_ref().chars().count()).max();
    longest.map_or(0, |chars| {
        // Label text + the 30 px swatch area + 2 × 5 px margins + a gap.
        (chars as f64 * 0.55 * f64::from(LEGEND_FONT_PX)).ceil() as u32 + 30 + 10 + 14
    })
}

/// The axes every chart shares on `root`: caption, label areas, axis
/// descriptions and fonts, over `x` × `y`, with the mesh drawn as `mesh`
/// says, and a column of `legend_px` right of the plot for the legend
/// ([`legend_width`]; 0 for none), so the legend never covers data.
pub(crate) fn framed_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    file: &Path,
    text: &ChartText,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    mesh: Mesh,
    legend_px: u32,
) -> Result<CategoryChart<'a, 'b>, ChartError> {
    let err = draw_err(file);
    // Room for tick labels of up to ~7 characters (four significant
    // digits, see `readable::tick`) *and* the rotated axis description
    // beside them: at 64 px the description overlapped the ticks.
    let mut chart = ChartBuilder::on(root)
        .caption(&text.title, ("sans-serif", 24))
        .margin(16)
        // Category labels may take two lines (`category_labels`): room
        // for them above the axis description.
        .x_label_area_size(if mesh == Mesh::Categories { 68 } else { 48 })
        .y_label_area_size(88)
        .margin_right(16 + legend_px)
        .build_cartesian_2d(x, y)
        .map_err(|e| err(&e))?;
    let ticks = |v: &f64| readable::tick(*v);
    let mut style = chart.configure_mesh();
    style
        .x_desc(&text.x_label)
        .y_desc(&text.y_label)
        .x_label_formatter(&ticks)
        .y_label_formatter(&ticks)
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15));
    match mesh {
        Mesh::Full => {
            style.light_line_style(WHITE.mix(0.0));
        }
        Mesh::Categories => {
            style
                .disable_x_mesh()
                .x_labels(0)
                .light_line_style(WHITE.mix(0.0));
        }
        Mesh::Blank => {
            style.disable_mesh().x_labels(0).y_labels(0);
        }
    }
    style.draw().map_err(|e| err(&e))?;
    Ok(chart)
}

/// Write a framed chart saying "no data" (with `reason`) to `file`.
pub fn no_data(file: &Path, text: &ChartText, reason: &str) -> Result<(), ChartError> {
    let err = draw_err(file);
    let root = svg_root(file)?;
    let mut chart = framed_chart(&root, file, text, 0.0..1.0, 0.0..1.0, Mesh::Blank, 0)?;
    let style = ("sans-serif", 22)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Center));
    chart
        .draw_series(std::iter::once(Text::new(
            format!("no data: {reason}"),
            (0.5, 0.5),
            style,
        )))
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// How a legend entry shows its series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Swatch {
    /// A filled square (bars).
    Bar,
    /// A short line (lines, CDFs).
    Line,
    /// A dot (a single-point series).
    Dot,
}

/// Draw the legend — `(label, colour, swatch)` per series — in the
/// column right of the plot that [`framed_chart`] left for it (sized by
/// [`legend_width`]), top-aligned: outside the data, so it covers no
/// line, bar or point however many series there are. Drawn on `root`
/// because plotters clips shapes to the plot. O(entries).
pub(crate) fn legend(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &CategoryChart<'_, '_>,
    entries: &[(String, RGBColor, Swatch)],
    file: &Path,
) -> Result<(), ChartError> {
    if entries.is_empty() {
        return Ok(());
    }
    let err = draw_err(file);
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let width = legend_width(entries.iter().map(|e| e.0.as_str())) as i32 - 14;
    let row = LEGEND_FONT_PX as i32 + 5;
    let (x0, y0) = (xs.end + 12, ys.start);
    let height = 10 + row * entries.len() as i32;
    root.draw(&Rectangle::new(
        [(x0, y0), (x0 + width, y0 + height)],
        WHITE.filled(),
    ))
    .map_err(|e| err(&e))?;
    root.draw(&Rectangle::new(
        [(x0, y0), (x0 + width, y0 + height)],
        BLACK.stroke_width(1),
    ))
    .map_err(|e| err(&e))?;
    let font = ("sans-serif", LEGEND_FONT_PX)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (k, (label, c, swatch)) in entries.iter().enumerate() {
        let y = y0 + 5 + row * k as i32 + row / 2;
        let x = x0 + 8;
        match swatch {
            Swatch::Bar => root.draw(&Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled())),
            Swatch::Line => root.draw(&PathElement::new(
                vec![(x, y), (x + 16, y)],
                c.stroke_width(2),
            )),
            Swatch::Dot => root.draw(&Circle::new((x + 7, y), 3, c.filled())),
        }
        .map_err(|e| err(&e))?;
        root.draw(&Text::new(label.clone(), (x + 24, y), font.clone()))
            .map_err(|e| err(&e))?;
    }
    Ok(())
}

/// A chart over two f64 axes (for category charts, the x axis holds
/// categories at 0, 1, …, n − 1).
pub(crate) type CategoryChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Write `labels[i]` under x = i of a category chart, just below the
/// axis at y = `y0` (plotters' own tick labels cannot be pinned to the
/// category positions on a continuous axis, so the mesh draws none).
pub(crate) fn category_labels(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &CategoryChart<'_, '_>,
    y0: f64,
    labels: &[String],
    file: &Path,
) -> Result<(), ChartError> {
    let (plot_w, _) = chart.plotting_area().dim_in_pixel();
    let slot_px = f64::from(plot_w) / labels.len().max(1) as f64;
    let (font_px, lines) = category_layout(labels, slot_px);
    let style = ("sans-serif", font_px)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (i, label) in lines.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64, y0));
        for (k, line) in label.iter().enumerate() {
            let dy = 6 + k as i32 * (font_px as i32 + 2);
            root.draw(&Text::new(line.clone(), (px, py + dy), style.clone()))
                .map_err(|e| draw_err(file)(&e))?;
        }
    }
    Ok(())
}

/// How category labels fit slots of `slot_px` each without overlapping:
/// one line at 18 down to 14 px; else labels broken at spaces into (at
/// most) two lines at 18 down to 12 px; else one line, then two, down to
/// 10 px; else one line each, every other label a line
/// lower (staggered: each has two slots of room). Width is estimated at
/// 0.6 em a character. O(total label length).
fn category_layout(labels: &[String], slot_px: f64) -> (u32, Vec<Vec<String>>) {
    let room = slot_px * 0.95;
    let fits_in = |lines: &[Vec<String>], font: u32, room: f64| {
        lines
            .iter()
            .flatten()
            .all(|l| l.chars().count() as f64 * 0.6 * f64::from(font) <= room)
    };
    let fits = |lines: &[Vec<String>], font: u32| fits_in(lines, font, room);
    let one: Vec<Vec<String>> = labels.iter().map(|l| vec![l.clone()]).collect();
    let two: Vec<Vec<String>> = labels.iter().map(|l| split_in_two(l)).collect();
    // Two lines at a readable size beat one line in a tiny font.
    for (lines, fonts) in [
        (&one, 14..=18),
        (&two, 12..=18),
        (&one, 10..=13),
        (&two, 10..=11),
    ] {
        if let Some(font) = fonts.rev().find(|&f| fits(lines, f)) {
            return (font, lines.clone());
        }
    }
    let staggered: Vec<Vec<String>> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i % 2 == 1 {
                vec![String::new(), l.clone()]
            } else {
                vec![l.clone()]
            }
        })
        .collect();
    let font = (10..=14)
        .rev()
        .find(|&f| fits_in(&staggered, f, 2.0 * room))
        .unwrap_or(10);
    (font, staggered)
}

/// `label` broken at the space nearest its middle (whole if it has none).
fn split_in_two(label: &str) -> Vec<String> {
    let mid = label.chars().count() / 2;
    let best = label
        .char_indices()
        .filter(|(_, c)| *c == ' ')
        .map(|(i, _)| i)
        .min_by_key(|i| label[..*i].chars().count().abs_diff(mid));
    match best {
        Some(i) => vec![label[..i].to_string(), label[i + 1..].to_string()],
        None => vec![label.to_string()],
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers for the chart tests: a fresh directory and SVG checks.

    /// A fresh, empty directory under the system's temp dir, removed when
    /// the returned guard is dropped.
    pub fn dir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("peregrine-charts-{name}-"))
            .tempdir()
            .expect("temp dir is writable")
    }

    /// Read an SVG and check it is a well-formed-looking SVG document.
    pub fn read_svg(path: &std::path::Path) -> String {
        let text = std::fs::read_to_string(path).expect("the chart was written");
        assert!(
            text.trim_start().starts_with("<svg"),
            "not an SVG: {}",
            &text[..text.len().min(80)]
        );
        assert!(text.trim_end().ends_with("</svg>"), "SVG not closed");
        assert_eq!(text.matches("<svg").count(), 1);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_series_get_sixteen_colours() {
        // fanet draws thirteen controllers in one chart.
        let mut seen: Vec<RGBColor> = (0..16).map(color).collect();
        seen.sort_by_key(|c| (c.0, c.1, c.2));
        seen.dedup();
        assert_eq!(seen.len(), 16);
    }

    #[test]
    fn ranges_are_padded_and_never_empty() {
        assert_eq!(padded_range([1.0, 3.0], 0.5), (0.0, 4.0));
        assert_eq!(padded_range([5.0], 0.1), (4.5, 5.5));
        assert_eq!(padded_range([0.0, 0.0], 0.1), (-1.0, 1.0));
        assert_eq!(padded_range([], 0.1), (0.0, 1.0));
    }

    #[test]
    fn no_data_chart_is_written_with_its_reason() {
        let tmp = testutil::dir("nodata");
        let d = tmp.path();
        let f = d.join("empty.svg");
        no_data(
            &f,
            &ChartText::new("Latency", "time (s)", "latency (ms)"),
            "no runs",
        )
        .unwrap();
        let svg = testutil::read_svg(&f);
        assert!(svg.contains("no data: no runs"));
        assert!(svg.contains("latency (ms)") && svg.contains("Latency"));
    }

    #[test]
    fn category_labels_shrink_then_wrap_instead_of_overlapping() {
        let short = ["rr".to_string(), "abs".to_string()];
        assert_eq!(
            category_layout(&short, 300.0),
            (18, vec![vec!["rr".into()], vec!["abs".into()]])
        );
        // 13 controllers over ~680 px: a smaller font, one line each.
        let names = ["highspeed".to_string(), "westwood".to_string()];
        let (font, lines) = category_layout(&names, 60.0);
        assert!(
            font < 18 && lines.iter().all(|l| l.len() == 1),
            "{font} {lines:?}"
        );
        // Too long for one line at 10 px: two lines at the space.
        let long = ["16p 10%".to_string()];
        assert_eq!(
            category_layout(&long, 30.0).1,
            vec![vec!["16p".to_string(), "10%".to_string()]]
        );
        // No space to break at: every other label a line lower.
        let many = ["newreno", "hybla", "highspeed"].map(String::from);
        let (_, lines) = category_layout(&many, 28.0);
        assert_eq!(lines[1], ["", "hybla"]);
        assert_eq!(lines[2], ["highspeed"]);
        assert_eq!(split_in_two("a b c d"), ["a b", "c d"]);
        assert_eq!(split_in_two("abc"), ["abc"]);
    }

    #[test]
    fn the_legend_column_fits_the_longest_entry() {
        assert_eq!(legend_width::<&str>([]), 0);
        let w = legend_width(["rr", "throughput (published; 0 = none)"]);
        assert!(w > 250 && w < 350, "{w}");
    }

    #[test]
    fn non_finite_values_are_named() {
        let e = check_finite("c", "rr", [1.0, f64::NAN]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "chart `c`: series `rr` has a non-finite value (NaN) at index 1"
        );
    }
}
