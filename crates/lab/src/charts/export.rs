//! Charts for papers and slides: every SVG chart also as PDF and PNG
//! (`--format svg,pdf,png`, `--figure-size one-column|two-column`).
//!
//! The charts are drawn as SVG (plotters); [`export_dir`] converts each
//! SVG file of a folder into a PDF (`svg2pdf`: vector paths, text kept as
//! text with the font subset embedded) and/or a PNG (`resvg`, 300 dpi)
//! beside it. The SVG always stays: the Markdown reports embed it.
//!
//! **Fonts**: the charts ask for `sans-serif`; the conversion resolves
//! every family to DejaVu Sans, compiled into the binary
//! (`crates/lab/fonts/DejaVuSans.ttf`, Bitstream Vera licence), never to
//! the machine's fonts — the PDF and PNG bytes are the same on every
//! machine, and a PDF reader needs no font of its own.
//!
//! **Sizes** ([`FigureSize`]): a two-column paper's full text width
//! (7 in; charts drawn on an 800 px canvas, so 15 px tick labels print at
//! about 9.5 pt) or one column (3.5 in; charts drawn on a smaller canvas,
//! [`FigureSize::canvas`], so the text stays about 7–12 pt instead of
//! shrinking to 5). The physical width is the PDF page's width; the PNG
//! has 300 pixels per inch of it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

/// DejaVu Sans, the one font of every exported chart.
const FONT: &[u8] = include_bytes!("../../fonts/DejaVuSans.ttf");

/// Pixels per inch of exported PNGs.
pub const PNG_DPI: f32 = 300.0;

/// An output format of the charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    /// SVG (always written: the reports embed it).
    Svg,
    /// PDF, fonts embedded.
    Pdf,
    /// PNG at [`PNG_DPI`].
    Png,
}

impl Format {
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Svg => "svg",
            Format::Pdf => "pdf",
            Format::Png => "png",
        }
    }
}

/// `svg,pdf,png` (any subset, any order, comma-separated) as formats,
/// sorted and without repeats. Errors name `--format` and the bad value.
pub fn parse_formats(text: &str) -> anyhow::Result<Vec<Format>> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let f = match part.trim().to_ascii_lowercase().as_str() {
            "svg" => Format::Svg,
            "pdf" => Format::Pdf,
            "png" => Format::Png,
            "" => anyhow::bail!("`--format {text}`: an empty format (allowed: svg, pdf, png)"),
            other => {
                anyhow::bail!(
                    "`--format {text}`: unknown format {other:?} (allowed: svg, pdf, png)"
                )
            }
        };
        out.push(f);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The printed size of a chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FigureSize {
    /// The full text width of a two-column paper (7 in), or a slide.
    #[default]
    TwoColumn,
    /// One column of a two-column paper (3.5 in).
    OneColumn,
}

impl FigureSize {
    /// `one-column` or `two-column`; errors name `--figure-size`.
    pub fn parse(text: &str) -> anyhow::Result<FigureSize> {
        match text {
            "two-column" => Ok(FigureSize::TwoColumn),
            "one-column" => Ok(FigureSize::OneColumn),
            other => {
                anyhow::bail!("`--figure-size` must be one-column or two-column, found {other:?}")
            }
        }
    }

    /// The printed width, inches.
    pub fn width_in(self) -> f32 {
        match self {
            FigureSize::TwoColumn => 7.0,
            FigureSize::OneColumn => 3.5,
        }
    }

    /// The canvas the standard charts are drawn on, SVG pixels: 800 × 480
    /// ([`super::SIZE`]) for two columns, 520 × 360 for one (its text
    /// then prints at about 0.49 pt per px: 15 px ticks at 7.3 pt, 24 px
    /// titles at 11.6 pt).
    pub fn canvas(self) -> (u32, u32) {
        match self {
            FigureSize::TwoColumn => super::SIZE,
            FigureSize::OneColumn => (520, 360),
        }
    }
}

/// The figure size charts of this process are drawn for (0: two columns).
static FIGURE_SIZE: AtomicU8 = AtomicU8::new(0);

/// Draw the standard charts of this process for `size` from now on (the
/// command line sets it once, before drawing). Process-wide because the
/// chart functions take no size argument; the default, two columns,
/// gives the SVG bytes charts always had.
pub fn set_figure_size(size: FigureSize) {
    FIGURE_SIZE.store(
        match size {
            FigureSize::TwoColumn => 0,
            FigureSize::OneColumn => 1,
        },
        Ordering::Relaxed,
    );
}

/// The figure size set by [`set_figure_size`].
pub fn figure_size() -> FigureSize {
    match FIGURE_SIZE.load(Ordering::Relaxed) {
        1 => FigureSize::OneColumn,
        _ => FigureSize::TwoColumn,
    }
}

/// The font database: DejaVu Sans under every generic family.
fn fonts() -> Arc<usvg::fontdb::Database> {
    static DB: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(FONT.to_vec());
        let family = "DejaVu Sans";
        db.set_sans_serif_family(family);
        db.set_serif_family(family);
        db.set_monospace_family(family);
        db.set_cursive_family(family);
        db.set_fantasy_family(family);
        Arc::new(db)
    })
    .clone()
}

/// `svg` (a file's text) parsed with the embedded font; `file` names it
/// in errors.
fn tree(svg: &str, file: &Path) -> anyhow::Result<usvg::Tree> {
    let mut opt = usvg::Options {
        font_family: "DejaVu Sans".into(),
        ..usvg::Options::default()
    };
    opt.fontdb = fonts();
    usvg::Tree::from_str(svg, &opt)
        .map_err(|e| anyhow::anyhow!("{}: not a readable SVG: {e}", file.display()))
}

/// The chart `svg` as a PDF `size.width_in()` wide (height in
/// proportion), text as text with the font subset embedded.
pub fn svg_to_pdf(svg: &str, file: &Path, size: FigureSize) -> anyhow::Result<Vec<u8>> {
    let tree = tree(svg, file)?;
    // PDF points per SVG pixel: the page is width_in × 72 pt wide.
    let dpi = 72.0 * tree.size().width() / (size.width_in() * 72.0);
    let mut pdf = svg2pdf::to_pdf(
        &tree,
        svg2pdf::ConversionOptions::default(),
        svg2pdf::PageOptions { dpi },
    )
    .map_err(|e| anyhow::anyhow!("{}: cannot convert to PDF: {e}", file.display()))?;
    canonical_resource_order(&mut pdf);
    Ok(pdf)
}

/// Sort the entries of every resource dictionary (`/xo3 14 0 R` lines)
/// of `pdf`: svg2pdf writes them in a hash map's order, which changes
/// from run to run. Each run of such lines is permuted in place, so the
/// length of every object and the cross-reference offsets do not change;
/// stream contents are left alone. O(bytes).
fn canonical_resource_order(pdf: &mut [u8]) {
    fn is_entry(line: &[u8]) -> bool {
        // `  /name12 34 0 R`: spaces, a slash, a name, a reference.
        let t = line.trim_ascii_start();
        t.len() < line.len()
            && t.first() == Some(&b'/')
            && t.ends_with(b" 0 R")
            && t[1..]
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || *c == b' ')
    }
    let mut lines: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for (i, b) in pdf.iter().enumerate() {
        if *b == b'\n' {
            lines.push((start, i));
            start = i + 1;
        }
    }
    let mut in_stream = false;
    let mut i = 0;
    while i < lines.len() {
        let (a, b) = lines[i];
        let line = &pdf[a..b];
        if in_stream {
            in_stream = !line.starts_with(b"endstream");
            i += 1;
            continue;
        }
        if line == b"stream" {
            in_stream = true;
            i += 1;
            continue;
        }
        let mut j = i;
        while j < lines.len() && is_entry(&pdf[lines[j].0..lines[j].1]) {
            j += 1;
        }
        if j - i > 1 {
            let (from, to) = (lines[i].0, lines[j - 1].1);
            let mut entries: Vec<Vec<u8>> = lines[i..j]
                .iter()
                .map(|&(a, b)| pdf[a..b].to_vec())
                .collect();
            entries.sort();
            let joined = entries.join(&b'\n');
            pdf[from..to].copy_from_slice(&joined);
        }
        i = j.max(i + 1);
    }
}

/// The chart `svg` as a PNG `size.width_in()` × [`PNG_DPI`] pixels wide.
pub fn svg_to_png(svg: &str, file: &Path, size: FigureSize) -> anyhow::Result<Vec<u8>> {
    let tree = tree(svg, file)?;
    let scale = size.width_in() * PNG_DPI / tree.size().width();
    let w = (tree.size().width() * scale).round().max(1.0) as u32;
    let h = (tree.size().height() * scale).round().max(1.0) as u32;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| anyhow::anyhow!("{}: an empty image", file.display()))?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| anyhow::anyhow!("{}: cannot encode PNG: {e}", file.display()))
}

/// Convert every `.svg` file under `dir` (recursively, in name order)
/// to each of `formats` but SVG, written beside it (`x.svg` → `x.pdf`,
/// `x.png`) for `size`. Returns the files written. A missing `dir` is
/// no chart at all. Cost: one parse and render per chart and format.
pub fn export_dir(
    dir: &Path,
    formats: &[Format],
    size: FigureSize,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    if !formats.iter().any(|f| *f != Format::Svg) || !dir.is_dir() {
        return Ok(written);
    }
    let mut svgs = Vec::new();
    collect_svgs(dir, &mut svgs)?;
    svgs.sort();
    for file in svgs {
        let svg = std::fs::read_to_string(&file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
        for f in formats {
            let bytes = match f {
                Format::Svg => continue,
                Format::Pdf => svg_to_pdf(&svg, &file, size)?,
                Format::Png => svg_to_png(&svg, &file, size)?,
            };
            let out = file.with_extension(f.extension());
            std::fs::write(&out, bytes)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
            written.push(out);
        }
    }
    Ok(written)
}

fn collect_svgs(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            collect_svgs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "svg") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::{bar_chart, BarSeries, ChartText};

    #[test]
    fn formats_parse_sorted_and_errors_name_the_value() {
        assert_eq!(
            parse_formats("png,svg,pdf,png").unwrap(),
            vec![Format::Svg, Format::Pdf, Format::Png]
        );
        assert_eq!(parse_formats("pdf").unwrap(), vec![Format::Pdf]);
        let e = parse_formats("svg,jpg").unwrap_err().to_string();
        assert!(e.contains("unknown format \"jpg\""), "{e}");
        assert!(parse_formats("svg,").is_err());
        assert!(FigureSize::parse("three-column")
            .unwrap_err()
            .to_string()
            .contains("--figure-size"));
    }

    #[test]
    fn a_chart_becomes_a_pdf_with_an_embedded_font_and_a_png() {
        let tmp = crate::charts::testutil::dir("export");
        let dir = tmp.path();
        let svg = dir.join("bars.svg");
        bar_chart(
            &svg,
            &ChartText::new("Goodput", "controller", "goodput (Mbit/s)"),
            &["cubic".to_string(), "bbr".to_string()],
            &[BarSeries::new("mean", vec![4.0, 5.5], vec![])],
        )
        .unwrap();
        let written = export_dir(
            dir,
            &[Format::Svg, Format::Pdf, Format::Png],
            FigureSize::OneColumn,
        )
        .unwrap();
        assert_eq!(written, vec![dir.join("bars.pdf"), dir.join("bars.png")]);
        let pdf = std::fs::read(dir.join("bars.pdf")).unwrap();
        assert!(pdf.starts_with(b"%PDF-"), "a PDF");
        let text = String::from_utf8_lossy(&pdf);
        // The font travels with the file (a subset, as FontFile2), and
        // the page is 3.5 in = 252 pt wide.
        assert!(
            text.contains("DejaVuSans") && text.contains("/FontFile2"),
            "font embedded"
        );
        assert!(text.contains("/MediaBox [0 0 252"), "one column wide");
        let png = std::fs::read(dir.join("bars.png")).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        // IHDR width: 3.5 in × 300 dpi.
        assert_eq!(
            u32::from_be_bytes([png[16], png[17], png[18], png[19]]),
            1050
        );
        // Same input, same bytes.
        let again = svg_to_pdf(
            &std::fs::read_to_string(&svg).unwrap(),
            &svg,
            FigureSize::OneColumn,
        )
        .unwrap();
        if again != pdf {
            let first = again
                .iter()
                .zip(&pdf)
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "PDF differs at byte {first} of {}/{}: {:?} vs {:?}",
                again.len(),
                pdf.len(),
                String::from_utf8_lossy(
                    &again[first.saturating_sub(80)..(first + 80).min(again.len())]
                ),
                String::from_utf8_lossy(
                    &pdf[first.saturating_sub(80)..(first + 80).min(pdf.len())]
                )
            );
        }
    }
}
