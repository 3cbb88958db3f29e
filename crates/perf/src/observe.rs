//! `perf --qlog DIR` and `perf --pcap FILE`: look inside the runtime
//! endpoint (crates/net/src/observe.rs).

use anyhow::{Context, Result};
use clap::Args;
use peregrine::EndpointBuilder;
use std::path::PathBuf;

/// Tracing and capture, both sides.
#[derive(Args, Debug)]
pub(super) struct ObserveArgs {
    /// Write a qlog file (`.sqlog`, JSON-SEQ) per connection endpoint
    /// into DIR (created if missing); times in ms since the endpoint was
    /// bound.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// Capture every datagram the endpoint sends and receives into the
    /// pcapng FILE (IP/UDP-framed, wall-clock stamped; sealed packets as
    /// ciphertext).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
}

impl ObserveArgs {
    /// Apply to an endpoint builder; `label` names the qlog files
    /// (`<label>-<client|server>-<id>.sqlog`).
    pub(super) fn apply(&self, mut b: EndpointBuilder, label: &str) -> Result<EndpointBuilder> {
        if let Some(dir) = &self.qlog {
            let f = peregrine_trace::qlog::QlogDir::new(dir, label)
                .with_context(|| format!("--qlog: cannot create {}", dir.display()))?;
            b = b.trace(f);
        }
        if let Some(file) = &self.pcap {
            b = b.pcap(file);
        }
        Ok(b)
    }
}
