//! `--format svg,pdf,png` and `--figure-size one-column|two-column` of
//! `peregrine sim` (one run or a sweep) and `peregrine reproduce`: every
//! chart also as PDF (fonts embedded) and PNG, sized for a paper (the
//! work is `peregrine_lab::charts::export`).

use anyhow::Result;
use clap::Args;
use peregrine_lab::charts::export::{self, FigureSize, Format};
use std::path::Path;

/// Chart formats and size.
#[derive(Args, Debug, Clone)]
pub struct FigureArgs {
    /// Chart formats, comma-separated: svg, pdf, png. PDF and PNG go beside
    /// each SVG (which is always written: the reports embed it).
    #[arg(
        long = "format",
        value_name = "svg,pdf,png",
        default_value = "svg",
        global = true
    )]
    pub format: String,
    /// Printed size of the charts: two-column (the full text width of a
    /// two-column paper, 7 in) or one-column (3.5 in; charts drawn on a
    /// smaller canvas so their text stays readable).
    #[arg(
        long,
        value_name = "one-column|two-column",
        default_value = "two-column",
        global = true
    )]
    pub figure_size: String,
}

impl FigureArgs {
    /// Check the flags and set the size charts are drawn at: call before
    /// any chart is drawn.
    pub fn prepare(&self) -> Result<(Vec<Format>, FigureSize)> {
        let formats = export::parse_formats(&self.format)?;
        let size = FigureSize::parse(&self.figure_size)?;
        export::set_figure_size(size);
        Ok((formats, size))
    }

    /// Write the PDF/PNG of every SVG chart under `dir`; print how many.
    pub fn export(&self, dir: &Path) -> Result<()> {
        let (formats, size) = self.prepare()?;
        let written = export::export_dir(dir, &formats, size)?;
        if !written.is_empty() {
            let kinds: Vec<&str> = formats
                .iter()
                .filter(|f| **f != Format::Svg)
                .map(|f| f.extension())
                .collect();
            crate::out(&format!(
                "wrote {} chart file(s) ({}) under {}\n",
                written.len(),
                kinds.join(", "),
                dir.display()
            ))?;
        }
        Ok(())
    }
}
