//! Helpers shared by the CLI's integration tests: the `peregrine` binary
//! (run where the test runs, or from the workspace root so relative paths
//! like `scenarios/…` resolve), the workspace root, and a fresh scratch
//! directory per test named after the test binary.

// Each test binary uses a subset of these.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The `peregrine` binary built for these tests.
pub fn peregrine() -> Command {
    Command::new(env!("CARGO_BIN_EXE_peregrine"))
}

/// The binary, run from the workspace root.
pub fn peregrine_in_root() -> Command {
    let mut c = peregrine();
    c.current_dir(root());
    c
}

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An empty scratch directory for the test `name` of this test binary,
/// removed when the returned guard is dropped (keep it alive as long as
/// the directory is used).
pub fn tempdir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("peregrine-{}-{name}-", env!("CARGO_CRATE_NAME")))
        .tempdir()
        .expect("a scratch directory")
}
