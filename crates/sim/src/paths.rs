//! Finding files named relative to a folder or any folder above it (the
//! traces a scenario names as `../shared/traces/…`, read from any
//! checkout beside the shared folder).

use std::path::{Path, PathBuf};

/// `start/rel`, or `start/../rel`, … — the first that exists.
pub fn find_upwards(start: &Path, rel: &Path) -> Option<PathBuf> {
    let start = if start.as_os_str().is_empty() {
        Path::new(".")
    } else {
        start
    };
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    start.ancestors().map(|d| d.join(rel)).find(|c| c.exists())
}
