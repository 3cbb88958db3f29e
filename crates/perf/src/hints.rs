//! `perf --hints SOURCE`: link hints from outside for the endpoint's
//! connections (crates/net/src/hints/), and `hints.*` in the report.

use anyhow::{anyhow, Result};
use clap::Args;
use peregrine::{Endpoint, EndpointBuilder};
use serde_json::{json, Value};

/// Where `peregrine emu --hint-lead` puts its feed
/// (`peregrine_emu::hints::HINTS_ENV`).
const EMU_FEED_ENV: &str = "PEREGRINE_HINTS";

/// The hint source, both sides.
#[derive(Args, Debug)]
pub(super) struct HintArgs {
    /// Hand link hints to the controller: unix:PATH or udp:ADDR (JSON
    /// lines), file:CSV (replay), wifi:IFACE (nl80211), or emu (the feed
    /// of `peregrine emu --hint-lead`, from $PEREGRINE_HINTS).
    #[arg(long, value_name = "SOURCE")]
    hints: Option<String>,
}

impl HintArgs {
    /// Open the source and give it to the builder; errors name the flag.
    pub(super) fn apply(&self, b: EndpointBuilder) -> Result<EndpointBuilder> {
        Ok(match self.open()? {
            Some(source) => b.hints(source),
            None => b,
        })
    }

    /// Open the source (`None` without `--hints`); errors name the flag.
    pub(super) fn open(&self) -> Result<Option<Box<dyn peregrine::hints::HintSource>>> {
        let Some(spec) = &self.hints else {
            return Ok(None);
        };
        let spec = if spec == "emu" {
            std::env::var(EMU_FEED_ENV).map_err(|_| {
                anyhow!(
                    "--hints emu: ${EMU_FEED_ENV} is not set (run under `peregrine emu --hint-lead …`)"
                )
            })?
        } else {
            spec.clone()
        };
        let source = peregrine::hints::open(&spec).map_err(|e| anyhow!("--hints: {e}"))?;
        Ok(Some(source))
    }

    /// `hints` of the report: null without `--hints`.
    pub(super) fn json(&self, ep: &Endpoint) -> Value {
        let Some(s) = ep.hint_stats().into_iter().next() else {
            return Value::Null;
        };
        json!({
            "source": s.source,
            "received": s.received,
            "applied": s.applied,
            "ignored": s.ignored,
            "malformed": s.malformed,
            "late_ms_max": s.late_ns_max as f64 / 1e6,
            "late_ms_mean": if s.applied > 0 { s.late_ns_sum as f64 / s.applied as f64 / 1e6 } else { 0.0 },
            "ended": s.ended,
            "error": s.error,
        })
    }
}
