//! Scenario files (TOML): what to simulate.
//!
//! A scenario is read in three steps, each with errors that name the
//! file, the field path (`flows.0.cc`) and what is allowed:
//!
//! 1. the text is parsed into a [`ScenarioDocument`] and the
//!    `--set key=value` [`overrides`] are applied to that document, so
//!    every field of every scenario can be overridden (and swept) the same
//!    way — in one place, for the CLI and Python alike;
//! 2. the document is deserialized into the typed [`config`] structs
//!    (unknown keys are errors; [`units`] parses `"100s"` and `"5Mbps"`);
//! 3. [`validate`] checks meaning (known nodes, controllers, one queue
//!    size kind, probabilities in [0, 1], …) and resolves the names into
//!    the indexed [`model`] the engine runs.
//!
//! Split by feature: this module holds only the document, its parsing,
//! validation and overrides, and the assembly of the [`model`]. The
//! configuration of each world model lives with the model in
//! `crate::world` (`world::queue::QueueConfig`, `world::loss::LossConfig`,
//! `world::outage::OutageConfig`, `world::wireless`,
//! `world::vehicles::config`) and is re-exported here under its old path;
//! `world` never imports from `scenario`.
//!
//! File paths inside a scenario (traces) are resolved when the run
//! starts, relative to the scenario file's folder and then each folder
//! above it (see [`Scenario::resolve_path`]), so `../shared/traces/…`
//! works from any checkout beside the shared folder; outputs only ever
//! show the path as written.

pub mod cc_options;
pub mod config;
pub mod document;
pub mod flow_groups;
pub mod model;
pub mod overrides;
/// Units moved up to [`crate::units`] (the world's configs read them too).
pub use crate::units;
pub mod validate;
pub mod vehicular;
pub mod wireless;

use std::path::{Path, PathBuf};
use thiserror::Error;

/// Moved to [`crate::paths`] (the world's tests look up traces too).
pub use crate::paths::find_upwards;
pub use config::ScenarioConfig;
pub use document::ScenarioDocument;
pub use model::Model;

/// A scenario that cannot be read: the file, the field and the problem.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{origin}: {field}: {message}")]
pub struct ScenarioError {
    /// Where the scenario came from (the file path as given, or a label).
    pub origin: String,
    /// The dotted field path (`flows.0.cc`), or `(document)`.
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ScenarioError {
    /// An error at `field` of `origin`.
    pub fn new(origin: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            origin: origin.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A parsed and validated scenario, ready for [`crate::run`].
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The configuration as read (after overrides).
    pub config: ScenarioConfig,
    /// Where it came from, as given (used in messages, never resolved).
    pub origin: String,
    /// The resolved, indexed form the engine runs.
    pub model: Model,
    base_dir: Option<PathBuf>,
}

impl Scenario {
    /// Parse `text` (TOML), apply `overrides` (`key=value`) and validate.
    /// `origin` names the source in errors (a file path or a label).
    pub fn from_toml_str(
        text: &str,
        origin: &str,
        overrides: &[String],
    ) -> Result<Scenario, ScenarioError> {
        let mut doc = ScenarioDocument::parse(text, origin)?;
        doc.apply_all(overrides)?;
        Scenario::from_value(doc.value().clone(), origin)
    }

    /// Read a scenario file and apply `overrides`
    /// ([`ScenarioDocument::read`], then [`ScenarioDocument::scenario`]).
    pub fn from_file(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        ScenarioDocument::read(path, overrides)?.scenario()
    }

    /// Deserialize and validate a TOML document.
    pub fn from_value(mut doc: toml::Value, origin: &str) -> Result<Scenario, ScenarioError> {
        let vehicular = vehicular::expand(&mut doc, origin)?;
        let groups = flow_groups::expand(&mut doc, origin)?;
        let config: ScenarioConfig = serde_path_to_error::deserialize(doc).map_err(|e| {
            let field = dotted(e.path());
            let inner = e.into_inner();
            groups.remap(ScenarioError::new(
                origin,
                field,
                inner.message().to_string(),
            ))
        })?;
        let mut model = validate::validate(&config, origin).map_err(|e| groups.remap(e))?;
        model.vehicular = vehicular;
        model.flow_groups = groups.groups;
        Ok(Scenario {
            config,
            origin: origin.to_string(),
            model,
            base_dir: None,
        })
    }

    /// Validate a configuration built in code, with the checks a file
    /// gets; `origin` names it in errors. A `vehicular` table is expanded
    /// into its links and flows here ([`vehicular::expand_config`]), so
    /// pass the configuration as written, not the `config` of a built
    /// scenario (which already holds the expansion). Cost: validation,
    /// O(size of the scenario).
    pub fn from_config(
        mut config: ScenarioConfig,
        origin: &str,
    ) -> Result<Scenario, ScenarioError> {
        let vehicular = vehicular::expand_config(&mut config, origin)?;
        let mut model = validate::validate(&config, origin)?;
        model.vehicular = vehicular;
        Ok(Scenario {
            config,
            origin: origin.to_string(),
            model,
            base_dir: None,
        })
    }

    /// Resolve relative file paths against `dir` (and the folders above it).
    pub fn with_base_dir(mut self, dir: &Path) -> Scenario {
        self.base_dir = Some(dir.to_path_buf());
        self
    }

    /// The display name: `name`, else the origin's file stem.
    pub fn name(&self) -> String {
        self.config.name.clone().unwrap_or_else(|| {
            Path::new(&self.origin)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.origin.clone())
        })
    }

    /// Where the file `written` (as in the scenario) is: absolute paths as
    /// they are; relative ones looked up from the scenario's folder and
    /// then each folder above it, then from the current directory and
    /// each folder above it (the first that exists wins).
    pub fn resolve_path(&self, written: &str) -> PathBuf {
        let p = Path::new(written);
        if p.is_absolute() {
            return p.to_path_buf();
        }
        if let Some(found) = self.base_dir.as_deref().and_then(|d| find_upwards(d, p)) {
            return found;
        }
        if let Some(found) = std::env::current_dir()
            .ok()
            .and_then(|d| find_upwards(&d, p))
        {
            return found;
        }
        p.to_path_buf()
    }
}

/// `flows[0].cc` as `flows.0.cc`.
fn dotted(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let parts: Vec<String> = path
        .iter()
        .filter_map(|s| match s {
            Segment::Seq { index } => Some(index.to_string()),
            Segment::Map { key } => Some(key.clone()),
            Segment::Enum { variant } => Some(variant.clone()),
            Segment::Unknown => None,
        })
        .collect();
    if parts.is_empty() {
        "(document)".to_string()
    } else {
        parts.join(".")
    }
}
