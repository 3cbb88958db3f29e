//! The seeds' published numbers (`shared/docs/seed-results.md`), for the
//! "published vs ours" parts of reports.
//!
//! **Where**: the shared folder lives beside the repository (`../shared`
//! from the workspace root) and is never copied into it. [`find_shared`]
//! looks, in order, in `$PEREGRINE_SHARED` (if set, only there), then in
//! a `shared` folder in the current directory or any of its ancestors,
//! then the same from the workspace root this binary was built from; the
//! first that holds the requested file wins. Traces are found the same
//! way (`find_shared("traces/…")`).
//!
//! **What**: [`PublishedDoc`] splits the Markdown into sections by
//! heading and extracts each section's pipe tables (with the paragraph
//! just above as caption) and its text; [`PublishedDoc::section`] finds a
//! section by the start of its heading (`"Seed 002"`). When the file is
//! absent, [`load`] says "published numbers unavailable" and where it
//! looked, so a report can print that line instead of a table.

use std::path::{Path, PathBuf};

/// Environment variable naming the shared folder.
pub const ENV_VAR: &str = "PEREGRINE_SHARED";

/// The published results, relative to the shared folder.
pub const SEED_RESULTS: &str = "docs/seed-results.md";

/// The shared folder or file could not be found or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// What was looked for (relative to the shared folder).
    pub wanted: String,
    /// The candidate shared folders, in the order tried.
    pub searched: Vec<PathBuf>,
    /// A read error, if the file was found but could not be read.
    pub error: Option<String>,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.wanted == SEED_RESULTS {
            write!(f, "published numbers unavailable: ")?;
        }
        match &self.error {
            Some(e) => write!(f, "cannot read shared/{}: {e}", self.wanted),
            None => {
                let list: Vec<String> = self
                    .searched
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                write!(
                    f,
                    "shared/{} not found (set {ENV_VAR}; looked in: {})",
                    self.wanted,
                    if list.is_empty() {
                        "nowhere".to_string()
                    } else {
                        list.join(", ")
                    }
                )
            }
        }
    }
}

impl std::error::Error for Unavailable {}

/// The candidate shared folders, in order (see the module docs).
pub fn shared_candidates() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os(ENV_VAR) {
        return vec![PathBuf::from(dir)];
    }
    let mut starts = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    // crates/cli -> the workspace root.
    starts.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    let mut out: Vec<PathBuf> = Vec::new();
    for start in starts {
        let start = std::path::absolute(&start).unwrap_or(start);
        for anc in start.ancestors() {
            let c = anc.join("shared");
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// The first of `candidates` that holds `rel`, as the full path to it.
pub fn find_in(candidates: &[PathBuf], rel: &str) -> Result<PathBuf, Unavailable> {
    candidates
        .iter()
        .map(|c| c.join(rel))
        .find(|p| p.exists())
        .ok_or_else(|| Unavailable {
            wanted: rel.to_string(),
            searched: candidates.to_vec(),
            error: None,
        })
}

/// The path of `rel` (e.g. `traces/drone-mavlink`) in the shared folder.
pub fn find_shared(rel: &str) -> Result<PathBuf, Unavailable> {
    find_in(&shared_candidates(), rel)
}

/// Load and parse `seed-results.md` from the shared folder.
pub fn load() -> Result<PublishedDoc, Unavailable> {
    let path = find_shared(SEED_RESULTS)?;
    let text = std::fs::read_to_string(&path).map_err(|e| Unavailable {
        wanted: SEED_RESULTS.to_string(),
        searched: vec![path.clone()],
        error: Some(e.to_string()),
    })?;
    Ok(PublishedDoc::parse(&text))
}

/// A Markdown pipe table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MdTable {
    /// The paragraph just above the table (may be empty).
    pub caption: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Body rows (cells trimmed).
    pub rows: Vec<Vec<String>>,
}

impl MdTable {
    /// Index of the first column whose header starts with `name`
    /// (case-insensitive).
    pub fn column(&self, name: &str) -> Option<usize> {
        let name = name.to_lowercase();
        self.headers
            .iter()
            .position(|h| h.to_lowercase().starts_with(&name))
    }

    /// The row whose first cell equals `key` (case-insensitive).
    pub fn row(&self, key: &str) -> Option<&[String]> {
        self.rows
            .iter()
            .find(|r| r.first().is_some_and(|c| c.eq_ignore_ascii_case(key)))
            .map(Vec::as_slice)
    }

    /// The number in row `key`, column `column` (see [`parse_number`]).
    pub fn number(&self, key: &str, column: &str) -> Option<f64> {
        let c = self.column(column)?;
        parse_number(self.row(key)?.get(c)?)
    }
}

/// A cell as a number: `99.88`, `0.113`, `90.8016 %`; `None` for `—`,
/// empty or text.
pub fn parse_number(cell: &str) -> Option<f64> {
    cell.trim()
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

/// One section of the document: a heading and what follows up to the
/// next heading of the same or a higher level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The heading text (without `#`).
    pub heading: String,
    /// Heading level (number of `#`).
    pub level: usize,
    /// The section's lines that are not table rows, joined with `\n`.
    pub text: String,
    /// The section's tables, including those of its subsections.
    pub tables: Vec<MdTable>,
}

/// The parsed `seed-results.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedDoc {
    /// Every section, in document order.
    pub sections: Vec<Section>,
}

impl PublishedDoc {
    /// Parse Markdown text (never fails; odd lines are kept as text).
    pub fn parse(text: &str) -> PublishedDoc {
        let lines: Vec<&str> = text.lines().collect();
        let heads: Vec<(usize, usize, String)> = lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                let level = l.chars().take_while(|&c| c == '#').count();
                let rest = &l[level..];
                (level > 0 && rest.starts_with(' ')).then(|| (i, level, rest.trim().to_string()))
            })
            .collect();
        let sections = heads
            .iter()
            .enumerate()
            .map(|(k, (start, level, heading))| {
                let end = heads[k + 1..]
                    .iter()
                    .find(|(_, l, _)| l <= level)
                    .map_or(lines.len(), |(i, _, _)| *i);
                let body = &lines[start + 1..end];
                let (text, tables) = split_tables(body);
                Section {
                    heading: heading.clone(),
                    level: *level,
                    text,
                    tables,
                }
            })
            .collect();
        PublishedDoc { sections }
    }

    /// The first section whose heading starts with `heading`
    /// (case-insensitive, e.g. `"Seed 002"`).
    pub fn section(&self, heading: &str) -> Option<&Section> {
        let want = heading.to_lowercase();
        self.sections
            .iter()
            .find(|s| s.heading.to_lowercase().starts_with(&want))
    }

    /// The tables under `heading` (empty if no such section).
    pub fn tables_under(&self, heading: &str) -> &[MdTable] {
        self.section(heading).map_or(&[], |s| s.tables.as_slice())
    }
}

/// Separate a section body into its text and its tables.
fn split_tables(body: &[&str]) -> (String, Vec<MdTable>) {
    let mut text: Vec<&str> = Vec::new();
    let mut tables = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let is_row = |l: &str| l.trim_start().starts_with('|');
        if is_row(body[i]) {
            let start = i;
            while i < body.len() && is_row(body[i]) {
                i += 1;
            }
            let rows: Vec<Vec<String>> = body[start..i].iter().map(|l| split_row(l)).collect();
            let is_sep = |r: &Vec<String>| {
                r.iter()
                    .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
            };
            // The paragraph above: the text lines back to the previous blank line.
            let caption: Vec<&str> = text
                .iter()
                .rev()
                .skip_while(|l| l.trim().is_empty())
                .take_while(|l| !l.trim().is_empty())
                .copied()
                .collect();
            let caption = caption.into_iter().rev().collect::<Vec<_>>().join(" ");
            if rows.len() >= 2 && is_sep(&rows[1]) {
                tables.push(MdTable {
                    caption,
                    headers: rows[0].clone(),
                    rows: rows[2..].to_vec(),
                });
            } else {
                text.extend(&body[start..i]);
            }
        } else {
            if !body[i].trim_start().starts_with('#') {
                text.push(body[i]);
            }
            i += 1;
        }
    }
    (text.join("\n").trim().to_string(), tables)
}

/// Split `| a | b \| c |` into trimmed cells (`\|` is a literal bar).
fn split_row(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                if let Some(s) = cells.last_mut() {
                    s.push('|');
                }
                chars.next();
            }
            '|' => cells.push(String::new()),
            c => {
                if let Some(s) = cells.last_mut() {
                    s.push(c);
                }
            }
        }
    }
    cells.iter().map(|c| c.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# The seeds' published results

Intro.

## Seed 001 — swarm

| controller | PDR % | throughput % |
|---|---|---|
| NewReno | 99.88 | 90.8016 |
| BIC | 99.70 | — |

Jitter: Vegas 0.42 ms.

## Seed 002 — stream schedulers

Table 1 — relative gain over RR (two streams,
WFQ gives 75 %):

| message packets | WFQ 0 % loss | ABS 0 % |
|---|---|---|
| 2 | 0.113 | 0.171 |
| a \\| b | x | 0.2 |

### Detail

| k | v |
|:--|--:|
| 1 | 2 |

## Seed 003 — SLTP

No tables.
";

    #[test]
    fn sections_tables_and_numbers() {
        let doc = PublishedDoc::parse(SAMPLE);
        let s1 = doc.section("seed 001").unwrap();
        assert_eq!(s1.heading, "Seed 001 — swarm");
        assert_eq!(s1.tables.len(), 1);
        let t = &s1.tables[0];
        assert_eq!(t.headers, ["controller", "PDR %", "throughput %"]);
        assert_eq!(t.number("NewReno", "PDR"), Some(99.88));
        assert_eq!(t.number("bic", "throughput"), None);
        assert_eq!(t.number("Vegas", "PDR"), None);
        assert!(s1.text.contains("Jitter: Vegas 0.42 ms."));
        let s2 = doc.tables_under("Seed 002");
        assert_eq!(s2.len(), 2, "the subsection's table is included");
        assert_eq!(
            s2[0].caption,
            "Table 1 — relative gain over RR (two streams, WFQ gives 75 %):"
        );
        assert_eq!(s2[0].number("2", "WFQ 0"), Some(0.113));
        assert_eq!(s2[0].rows[1][0], "a | b");
        assert_eq!(
            doc.section("Detail").unwrap().tables[0].number("1", "v"),
            Some(2.0)
        );
        assert!(doc.tables_under("Seed 003").is_empty());
        assert!(doc.tables_under("Seed 009").is_empty());
        assert_eq!(parse_number(" 12.5 % "), Some(12.5));
        assert_eq!(parse_number("NaN"), None);
    }

    #[test]
    fn absent_file_says_unavailable_and_where_it_looked() {
        let dir = std::env::temp_dir().join(format!("peregrine-published-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cands = vec![dir.join("a"), dir.join("b")];
        let e = find_in(&cands, SEED_RESULTS).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("published numbers unavailable: shared/docs/seed-results.md not found"),
            "{msg}"
        );
        assert!(msg.contains(&dir.join("b").display().to_string()), "{msg}");
        // The second candidate that has it wins.
        std::fs::create_dir_all(dir.join("b/docs")).unwrap();
        std::fs::write(dir.join("b").join(SEED_RESULTS), SAMPLE).unwrap();
        assert_eq!(
            find_in(&cands, SEED_RESULTS).unwrap(),
            dir.join("b").join(SEED_RESULTS)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn real_seed_results_when_present() {
        match load() {
            Err(e) => println!("skipping: {e}"),
            Ok(doc) => {
                let t = doc.tables_under("Seed 002");
                assert!(!t.is_empty(), "seed 002 has Table 1");
                assert_eq!(t[0].number("8", "ABS 10"), Some(0.360));
                assert_eq!(
                    doc.tables_under("Seed 001")[0].number("Vegas", "mean delay"),
                    Some(2.54)
                );
            }
        }
    }
}
