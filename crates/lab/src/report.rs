//! A small Markdown report builder for experiment reports (`report.md`).
//!
//! A [`Report`] is written top to bottom: a title, headings, paragraphs,
//! bullet lists, code blocks (the command that was run), [`Table`]s and
//! images. Tables are GitHub-flavoured Markdown with their columns padded
//! to equal width, so the file also reads well as plain text; numbers are
//! formatted with a fixed number of decimals per cell and right-aligned
//! (a column is right-aligned when every filled cell is a number). Image
//! links are relative to the report's directory, so the report directory
//! can be moved or published as a whole.
//! [`published_vs_ours`] builds the "published vs ours" table with an
//! absolute and a relative difference column.
//!
//! Output is a function of the inputs alone (no dates, no host names).

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// Shown for a missing value.
pub const MISSING: &str = "—";

/// One table cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text, left-aligned.
    Text(String),
    /// A number with a fixed number of decimals.
    Num {
        /// The value.
        value: f64,
        /// Digits after the point.
        decimals: usize,
    },
    /// A mean with its 95 % CI half-width: `5.50 ± 0.21` (`5.50` if the
    /// half-width is unknown).
    MeanCi {
        /// The mean.
        mean: f64,
        /// The CI half-width, if known.
        ci95: Option<f64>,
        /// Digits after the point (both numbers), fewer if the mean
        /// would show more than four significant digits.
        decimals: usize,
    },
    /// A number already formatted (e.g. to significant digits),
    /// right-aligned like the other numbers.
    NumText(String),
    /// No value: [`MISSING`].
    Missing,
}

impl Cell {
    /// A number with `decimals` digits after the point.
    pub fn num(value: f64, decimals: usize) -> Cell {
        Cell::Num { value, decimals }
    }

    /// A number, or [`Cell::Missing`] if `None`.
    pub fn opt(value: Option<f64>, decimals: usize) -> Cell {
        value.map_or(Cell::Missing, |value| Cell::num(value, decimals))
    }

    /// A mean ± CI half-width.
    pub fn mean_ci(mean: f64, ci95: Option<f64>, decimals: usize) -> Cell {
        Cell::MeanCi {
            mean,
            ci95,
            decimals,
        }
    }

    fn is_numeric(&self) -> bool {
        matches!(
            self,
            Cell::Num { .. } | Cell::MeanCi { .. } | Cell::NumText(_)
        )
    }

    /// The cell's text (`|` escaped; non-finite numbers as `NaN`/`inf`).
    pub fn render(&self) -> String {
        match self {
            Cell::Text(t) | Cell::NumText(t) => t.replace('|', "\\|").replace('\n', " "),
            Cell::Num { value, decimals } => fixed(*value, *decimals),
            Cell::MeanCi {
                mean,
                ci95: Some(ci),
                decimals,
            } => {
                // At most four significant digits on the mean, the
                // interval to the same place: a cell made with 3 decimals
                // for small quantities reads `1991 ± 5147`, not
                // `1990.834 ± 5147.380`, when the row's value is large.
                let d = if *mean == 0.0 || !mean.is_finite() {
                    *decimals
                } else {
                    (*decimals).min(crate::charts::readable::decimals_for(*mean))
                };
                format!("{} ± {}", fixed(*mean, d), fixed(*ci, d))
            }
            Cell::MeanCi {
                mean,
                ci95: None,
                decimals,
            } => fixed(*mean, *decimals),
            Cell::Missing => MISSING.to_string(),
        }
    }
}

/// `value` with `decimals` digits after the point; `-0.00` prints as `0.00`.
fn fixed(value: f64, decimals: usize) -> String {
    let s = format!("{value:.decimals$}");
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

impl From<&str> for Cell {
    fn from(t: &str) -> Cell {
        Cell::Text(t.to_string())
    }
}

impl From<String> for Cell {
    fn from(t: String) -> Cell {
        Cell::Text(t)
    }
}

/// The legend printed under a table (issue 27): what each non-obvious
/// column means, with its unit, one `- column: meaning` line each — a
/// list in Markdown, plain lines on a terminal. Hand-made tables print
/// [`legend`] under themselves; a [`Table`] carries its own.
pub fn legend<C: AsRef<str>, M: AsRef<str>>(entries: &[(C, M)]) -> String {
    let mut s = String::new();
    for (column, meaning) in entries {
        let _ = writeln!(
            s,
            "- {}: {}",
            one_line(column.as_ref()),
            one_line(meaning.as_ref())
        );
    }
    s
}

/// A Markdown table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows of cells (short rows are padded with empty cells).
    pub rows: Vec<Vec<Cell>>,
    /// `(column, meaning)` pairs printed under the table by
    /// [`Table::render`] (see [`legend`]).
    pub legend: Vec<(String, String)>,
}

impl Table {
    /// A table with these column headers.
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Table {
        Table {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
            legend: Vec::new(),
        }
    }

    /// Explain a column under the table: what it measures and in which
    /// unit (`("p95 (ms)", "95th percentile of the message latency")`).
    pub fn explain(&mut self, column: &str, meaning: &str) -> &mut Table {
        self.legend.push((column.to_string(), meaning.to_string()));
        self
    }

    /// Append a row.
    pub fn row(&mut self, cells: impl IntoIterator<Item = Cell>) -> &mut Table {
        self.rows.push(cells.into_iter().collect());
        self
    }

    /// The table as Markdown, columns padded to equal width, then its
    /// legend after a blank line (a Markdown table runs on until one).
    /// O(cells).
    pub fn render(&self) -> String {
        let mut out = self.render_grid();
        if !out.is_empty() && !self.legend.is_empty() {
            out.push('\n');
            out.push_str(&legend(&self.legend));
        }
        out
    }

    /// The table alone.
    fn render_grid(&self) -> String {
        let ncols = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.headers.len()])
            .max()
            .unwrap_or(0);
        if ncols == 0 {
            return String::new();
        }
        let cell_text = |r: &Vec<Cell>, c: usize| r.get(c).map(Cell::render).unwrap_or_default();
        let body: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| (0..ncols).map(|c| cell_text(r, c)).collect())
            .collect();
        let header: Vec<String> = (0..ncols)
            .map(|c| {
                self.headers
                    .get(c)
                    .map(|h| h.replace('|', "\\|"))
                    .unwrap_or_default()
            })
            .collect();
        let right: Vec<bool> = (0..ncols)
            .map(|c| {
                let filled: Vec<&Cell> = self
                    .rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .filter(|x| **x != Cell::Missing)
                    .collect();
                !filled.is_empty() && filled.iter().all(|x| x.is_numeric())
            })
            .collect();
        let width = |s: &str| s.chars().count();
        let widths: Vec<usize> = (0..ncols)
            .map(|c| {
                body.iter()
                    .map(|r| width(&r[c]))
                    .chain([width(&header[c]), 3])
                    .max()
                    .unwrap_or(3)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut s = String::from("|");
            for (c, text) in cells.iter().enumerate() {
                let pad = " ".repeat(widths[c] - width(text));
                if right[c] {
                    let _ = write!(s, " {pad}{text} |");
                } else {
                    let _ = write!(s, " {text}{pad} |");
                }
            }
            s.push('\n');
            s
        };
        let mut out = line(&header);
        out.push('|');
        for c in 0..ncols {
            let dashes = "-".repeat(widths[c] - usize::from(right[c]));
            let _ = write!(out, " {dashes}{} |", if right[c] { ":" } else { "" });
        }
        out.push('\n');
        for r in &body {
            out.push_str(&line(r));
        }
        out
    }
}

/// One row of a "published vs ours" comparison.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    /// What is compared (`WFQ, 2 packets, 0 % loss`).
    pub item: String,
    /// The seed's number, if it gives one.
    pub published: Option<f64>,
    /// Our mean, if we have one.
    pub ours: Option<f64>,
    /// Our 95 % CI half-width, if known.
    pub ours_ci95: Option<f64>,
}

/// The "published vs ours" table: `item | published | ours | difference
/// | relative`, where difference = ours − published and relative =
/// difference / |published| in percent (missing when either is missing
/// or published is 0). `ours` shows `± ci` when known.
pub fn published_vs_ours(item_header: &str, rows: &[Comparison], decimals: usize) -> Table {
    let mut t = Table::new([
        item_header,
        "published",
        "ours",
        "difference",
        "relative (%)",
    ]);
    for r in rows {
        let diff = r.published.zip(r.ours).map(|(p, o)| o - p);
        let rel = r
            .published
            .zip(diff)
            .filter(|(p, _)| *p != 0.0)
            .map(|(p, d)| 100.0 * d / p.abs());
        t.row([
            Cell::Text(r.item.clone()),
            Cell::opt(r.published, decimals),
            r.ours
                .map_or(Cell::Missing, |o| Cell::mean_ci(o, r.ours_ci95, decimals)),
            Cell::opt(diff, decimals),
            Cell::opt(rel, 1),
        ]);
    }
    t.explain("published", "the seed paper's number")
        .explain(
            "ours",
            "our mean ± 95 % CI over seeds (Student t), same unit",
        )
        .explain("difference", "ours − published, same unit")
        .explain("relative (%)", "difference ÷ |published| × 100");
    t
}

/// A Markdown report being written, for a report directory.
#[derive(Debug, Clone)]
pub struct Report {
    dir: PathBuf,
    text: String,
}

impl Report {
    /// A report titled `title`, to live in `dir` (image links are made
    /// relative to it).
    pub fn new(title: &str, dir: impl Into<PathBuf>) -> Report {
        Report {
            dir: dir.into(),
            text: format!("# {}\n\n", one_line(title)),
        }
    }

    /// A heading; `level` is clamped to 2..=6 (1 is the title).
    pub fn heading(&mut self, level: usize, text: &str) -> &mut Report {
        let _ = write!(
            self.text,
            "{} {}\n\n",
            "#".repeat(level.clamp(2, 6)),
            one_line(text)
        );
        self
    }

    /// A paragraph (blank lines inside are kept as paragraph breaks).
    pub fn paragraph(&mut self, text: &str) -> &mut Report {
        self.text.push_str(text.trim());
        self.text.push_str("\n\n");
        self
    }

    /// A bullet list.
    pub fn bullets<S: AsRef<str>>(&mut self, items: impl IntoIterator<Item = S>) -> &mut Report {
        for item in items {
            let _ = writeln!(self.text, "- {}", one_line(item.as_ref()));
        }
        self.text.push('\n');
        self
    }

    /// A fenced code block (e.g. the command that was run).
    pub fn code(&mut self, lang: &str, code: &str) -> &mut Report {
        let fence = if code.contains("```") { "````" } else { "```" };
        let _ = write!(self.text, "{fence}{lang}\n{}\n{fence}\n\n", code.trim_end());
        self
    }

    /// A table, optionally with a caption line above it.
    pub fn table(&mut self, caption: Option<&str>, table: &Table) -> &mut Report {
        if let Some(c) = caption {
            let _ = write!(self.text, "*{}*\n\n", one_line(c));
        }
        self.text.push_str(&table.render());
        self.text.push('\n');
        self
    }

    /// An image, linked relative to the report directory.
    pub fn image(&mut self, alt: &str, path: &Path) -> &mut Report {
        let link = relative_link(&self.dir, path);
        let link = if link.contains([' ', '(', ')']) {
            format!("<{link}>")
        } else {
            link
        };
        let _ = write!(
            self.text,
            "![{}]({link})\n\n",
            one_line(alt).replace(['[', ']'], "")
        );
        self
    }

    /// The Markdown text so far.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Write the report to `dir/report.md` (creating `dir`) and return the path.
    pub fn write(&self) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)?;
        let path = self.dir.join("report.md");
        std::fs::write(&path, self.text.trim_end().to_string() + "\n")?;
        Ok(path)
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `target` as a `/`-separated path relative to the directory `base`
/// (both resolved against the current directory when relative; no file
/// system access, no symlink resolution).
pub fn relative_link(base: &Path, target: &Path) -> String {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let norm = |p: PathBuf| {
        let mut out: Vec<Component<'_>> = Vec::new();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                    out.pop();
                }
                c => out.push(c),
            }
        }
        out.iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    let (b, t) = (norm(abs(base)), norm(abs(target)));
    let common = b.iter().zip(&t).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); b.len() - common];
    parts.extend(t[common..].iter().cloned());
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mean_shows_at_most_four_significant_digits() {
        assert_eq!(
            Cell::mean_ci(1990.834, Some(5147.38), 3).render(),
            "1991 ± 5147"
        );
        assert_eq!(Cell::mean_ci(210.87, Some(3.82), 2).render(), "210.9 ± 3.8");
        assert_eq!(
            Cell::mean_ci(0.827, Some(0.028), 3).render(),
            "0.827 ± 0.028"
        );
        assert_eq!(Cell::mean_ci(0.0, Some(0.012), 3).render(), "0.000 ± 0.012");
    }

    #[test]
    fn tables_are_aligned_with_fixed_decimals() {
        let mut t = Table::new(["scheduler", "mean (ms)", "n"]);
        t.row([
            "RR".into(),
            Cell::mean_ci(120.456, Some(3.21), 1),
            Cell::num(10.0, 0),
        ]);
        t.row([
            "ABS | strict".into(),
            Cell::mean_ci(80.0, None, 1),
            Cell::Missing,
        ]);
        t.row([Cell::from("EDF"), Cell::num(-0.0001, 1)]);
        let want = "\
| scheduler     |   mean (ms) |   n |
| ------------- | ----------: | --: |
| RR            | 120.5 ± 3.2 |  10 |
| ABS \\| strict |        80.0 |   — |
| EDF           |         0.0 |     |
";
        assert_eq!(t.render(), want);
        assert_eq!(Table::default().render(), "");
    }

    #[test]
    fn a_legend_follows_the_table_after_a_blank_line() {
        let mut t = Table::new(["flow", "jitter (ms)"]);
        t.row(["a".into(), Cell::num(1.25, 2)])
            .explain("jitter (ms)", "RFC 3550 interarrival jitter,\n in ms");
        assert_eq!(
            t.render(),
            "| flow | jitter (ms) |\n| ---- | ----------: |\n| a    |        1.25 |\n\n\
             - jitter (ms): RFC 3550 interarrival jitter, in ms\n"
        );
        assert_eq!(legend(&[("a", "b"), ("c", "d")]), "- a: b\n- c: d\n");
        assert_eq!(legend::<&str, &str>(&[]), "");
    }

    #[test]
    fn published_vs_ours_has_difference_columns() {
        let rows = [
            Comparison {
                item: "WFQ 2 pkt 0 %".into(),
                published: Some(0.113),
                ours: Some(0.150),
                ours_ci95: Some(0.02),
            },
            Comparison {
                item: "BIC throughput".into(),
                published: None,
                ours: Some(90.0),
                ours_ci95: None,
            },
            Comparison {
                item: "zero".into(),
                published: Some(0.0),
                ours: Some(1.0),
                ours_ci95: None,
            },
        ];
        let text = published_vs_ours("case", &rows, 3).render();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("| case ") && lines[0].contains("| difference | relative (%) |"),
            "{text}"
        );
        assert!(
            lines[2].contains("0.150 ± 0.020")
                && lines[2].contains("0.037")
                && lines[2].contains("32.7"),
            "{text}"
        );
        assert_eq!(lines[3].matches('—').count(), 3, "{text}");
        assert!(
            lines[4].contains("1.000") && lines[4].trim_end().ends_with("— |"),
            "{text}"
        );
    }

    #[test]
    fn report_reads_top_to_bottom_with_relative_images() {
        let dir = std::env::temp_dir().join(format!("peregrine-report-{}", std::process::id()));
        let mut r = Report::new("Seed 002 — stream schedulers", &dir);
        r.heading(2, "What was run")
            .code("sh", "peregrine reproduce quic-sched --quick")
            .paragraph("Ten seeds per cell.")
            .bullets(["1 Mbit/s", "40 ms RTT"])
            .table(Some("Table 1"), Table::new(["a"]).row([Cell::num(1.0, 2)]))
            .image("latency [box]", &dir.join("plots/latency box.svg"))
            .image("elsewhere", &dir.join("../other/x.svg"));
        let path = r.write().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# Seed 002 — stream schedulers\n\n## What was run\n\n```sh\n"));
        assert!(
            text.contains("![latency box](<plots/latency box.svg>)"),
            "{text}"
        );
        assert!(text.contains("![elsewhere](../other/x.svg)"), "{text}");
        assert!(
            text.contains("*Table 1*\n\n|    a |\n| ---: |\n| 1.00 |\n"),
            "{text}"
        );
        assert!(text.contains("- 1 Mbit/s\n- 40 ms RTT\n"));
        assert!(text.ends_with("x.svg)\n"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn relative_links() {
        assert_eq!(
            relative_link(Path::new("/a/b"), Path::new("/a/b/c/d.svg")),
            "c/d.svg"
        );
        assert_eq!(
            relative_link(Path::new("/a/b/"), Path::new("/a/x.svg")),
            "../x.svg"
        );
        assert_eq!(
            relative_link(Path::new("out/r"), Path::new("out/r/./p.svg")),
            "p.svg"
        );
        assert_eq!(relative_link(Path::new("/a"), Path::new("/a")), ".");
    }
}
