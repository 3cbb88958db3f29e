//! The scenario document: a scenario file read, parsed and overridden
//! once, in one place.
//!
//! [`ScenarioDocument`] is the TOML document of a scenario with its
//! origin (the path as given, or a label) and the folder its relative
//! paths resolve against. Every reader of scenarios goes through it —
//! [`Scenario::from_file`] and [`Scenario::from_toml_str`], the
//! `peregrine sim` command (one run, or a sweep over the document) and
//! the Python package (`Scenario.from_file`, `from_toml`, `from_dict`,
//! `with_set`) — so a file is read once, a syntax error names the same
//! line everywhere, and an override (`--set key=value` text, or a typed
//! value from Python) is applied by one function with one error.

use super::overrides::{self, parse_assignment};
use super::{Scenario, ScenarioError};
use std::path::{Path, PathBuf};

/// A scenario's TOML document, overrides applied, not yet validated.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioDocument {
    value: toml::Value,
    origin: String,
    base_dir: Option<PathBuf>,
}

impl ScenarioDocument {
    /// Read the file at `path` and apply the `key=value` `overrides` in
    /// order. The origin is the path as given; relative paths inside
    /// resolve against its folder. O(file size + overrides).
    pub fn read(path: &Path, overrides: &[String]) -> Result<ScenarioDocument, ScenarioError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError::new(&origin, "(file)", e.to_string()))?;
        let mut doc = ScenarioDocument::parse(&text, &origin)?;
        doc.base_dir = path.parent().map(Path::to_path_buf);
        doc.apply_all(overrides)?;
        Ok(doc)
    }

    /// Parse TOML `text`; `origin` names it in errors (a syntax error
    /// names its line). No base folder, no overrides.
    pub fn parse(text: &str, origin: &str) -> Result<ScenarioDocument, ScenarioError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e
                .span()
                .map(|sp| text[..sp.start.min(text.len())].matches('\n').count() + 1);
            let field = line.map_or("(document)".to_string(), |l| format!("line {l}"));
            ScenarioError::new(origin, field, e.message().to_string())
        })?;
        Ok(ScenarioDocument::from_value(
            toml::Value::Table(table),
            origin,
        ))
    }

    /// A document built in memory (a dict from Python, a sweep's run).
    pub fn from_value(value: toml::Value, origin: &str) -> ScenarioDocument {
        ScenarioDocument {
            value,
            origin: origin.to_string(),
            base_dir: None,
        }
    }

    /// The same document with relative paths resolving against `dir`.
    pub fn with_base_dir(mut self, dir: Option<PathBuf>) -> ScenarioDocument {
        self.base_dir = dir;
        self
    }

    /// Apply one `key=value` override (the `--set` text form).
    pub fn apply(&mut self, assignment: &str) -> Result<(), ScenarioError> {
        let (key, value) = parse_assignment(assignment)
            .map_err(|e| ScenarioError::new(&self.origin, "--set", e.to_string()))?;
        self.set(&key, value)
    }

    /// Apply `key=value` overrides in order.
    pub fn apply_all(&mut self, assignments: &[String]) -> Result<(), ScenarioError> {
        assignments.iter().try_for_each(|a| self.apply(a))
    }

    /// Set the field at the dotted `key` (`flows.0.cc`) to `value`; the
    /// error names the key.
    pub fn set(&mut self, key: &str, value: toml::Value) -> Result<(), ScenarioError> {
        overrides::set_path(&mut self.value, key, value)
            .map_err(|e| ScenarioError::new(&self.origin, key, e.to_string()))
    }

    /// The TOML document.
    pub fn value(&self) -> &toml::Value {
        &self.value
    }

    /// Where it came from (a path as given, or a label).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The folder relative paths resolve against, if any.
    pub fn base_dir(&self) -> Option<&Path> {
        self.base_dir.as_deref()
    }

    /// Whether the document describes a sweep (a `[sweep]` table).
    pub fn has_sweep(&self) -> bool {
        self.value.get("sweep").is_some()
    }

    /// The display name: `name` when the document has one, else the
    /// origin's file stem.
    pub fn name(&self) -> String {
        match self.value.get("name").and_then(toml::Value::as_str) {
            Some(n) => n.to_string(),
            None => Path::new(&self.origin)
                .file_stem()
                .map_or_else(|| self.origin.clone(), |s| s.to_string_lossy().into_owned()),
        }
    }

    /// Validate the document as it is into a scenario (a `[sweep]` table
    /// is an unknown field here: see [`run_scenario`](Self::run_scenario)),
    /// with this document's origin and base folder. O(scenario size).
    pub fn scenario(&self) -> Result<Scenario, ScenarioError> {
        self.validate(self.value.clone())
    }

    /// Validate `run` — this document, or one run of a sweep over it (grid
    /// values and seed set) — into the scenario one run simulates: a
    /// `[sweep]` table describes many runs, so one run ignores it.
    /// O(scenario size).
    pub fn run_scenario(&self, mut run: toml::Value) -> Result<Scenario, ScenarioError> {
        if let toml::Value::Table(t) = &mut run {
            t.remove("sweep");
        }
        self.validate(run)
    }

    fn validate(&self, doc: toml::Value) -> Result<Scenario, ScenarioError> {
        let s = Scenario::from_value(doc, &self.origin)?;
        Ok(match &self.base_dir {
            Some(dir) => s.with_base_dir(dir),
            None => s,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "name = \"one\"\nseed = 3\n[sweep]\nseed = [1, 2]\n";

    #[test]
    fn overrides_apply_in_order_and_errors_name_the_key() {
        let mut d = ScenarioDocument::parse(DOC, "t.toml").unwrap();
        d.apply_all(&["seed=5".into(), "seed=7".into(), "flows.x=1".into()])
            .unwrap();
        assert_eq!(d.value()["seed"].as_integer(), Some(7));
        assert_eq!(d.value()["flows"]["x"].as_integer(), Some(1));
        let e = d.apply("nonsense").unwrap_err();
        assert_eq!((e.origin.as_str(), e.field.as_str()), ("t.toml", "--set"));
        let e = d.apply("seed.0=1").unwrap_err();
        assert_eq!(e.field, "seed.0");
        assert!(d.has_sweep());
        assert_eq!(d.name(), "one");
    }

    #[test]
    fn a_syntax_error_names_its_line_and_a_missing_file_the_file() {
        let e = ScenarioDocument::parse("a = 1\nb = = 2\n", "x.toml").unwrap_err();
        assert_eq!(e.field, "line 2");
        let e = ScenarioDocument::read(Path::new("/nonexistent/s.toml"), &[]).unwrap_err();
        assert_eq!(
            (e.origin.as_str(), e.field.as_str()),
            ("/nonexistent/s.toml", "(file)")
        );
    }

    #[test]
    fn the_name_falls_back_to_the_file_stem() {
        let d = ScenarioDocument::parse("seed = 1\n", "dir/dumbbell.toml").unwrap();
        assert_eq!(d.name(), "dumbbell");
    }

    #[test]
    fn one_run_ignores_the_sweep_table_and_reads_the_real_file() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/dumbbell.toml");
        let mut d = ScenarioDocument::read(&path, &["seed=9".into()]).unwrap();
        assert_eq!(d.scenario().unwrap().config.seed, 9);
        d.set("sweep.seed", toml::Value::Array(vec![1.into()]))
            .unwrap();
        let e = d.scenario().unwrap_err();
        assert_eq!(e.field, "sweep");
        let s = d.run_scenario(d.value().clone()).unwrap();
        assert_eq!(s.config.seed, 9);
        assert_eq!(s.name(), d.name());
        assert_eq!(d.base_dir(), path.parent());
    }
}
