//! `peregrine perf`: the flags are `peregrine_perf::PerfArgs`; the client,
//! server and report are the `peregrine-perf` library; this prints the
//! report and turns how the run ended into the exit status.

use crate::out;
use anyhow::Context as _;
use peregrine_perf::{PerfArgs, Status};
use std::io::Write as _;

/// Run `peregrine perf` and print its report (stdout or `--logfile`).
pub fn run(args: PerfArgs) -> anyhow::Result<()> {
    let report = peregrine_perf::run(args)?;
    if let Some(text) = &report.text {
        match &report.logfile {
            None => out(text)?,
            Some(p) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .and_then(|mut f| f.write_all(text.as_bytes()))
                .with_context(|| format!("--logfile: cannot write {}", p.display()))?,
        }
    }
    match report.status {
        Status::Finished => Ok(()),
        Status::Interrupted => {
            eprintln!(
                "interrupted: partial summary above (bytes the server acknowledged); connection closed"
            );
            // 128 + SIGINT, as a shell reports a command ended by Ctrl-C.
            std::process::exit(130);
        }
        Status::Failed(e) => Err(e),
    }
}
