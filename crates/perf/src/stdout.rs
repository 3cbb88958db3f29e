//! Printing on standard output (what the CLI's `out` did for `perf`).

use std::io::Write as _;

/// Write `text` to standard output, reporting (not panicking on) a closed pipe.
pub(crate) fn out(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}
