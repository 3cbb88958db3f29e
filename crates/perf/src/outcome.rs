//! How `peregrine perf` ends when things go wrong (issue 21 item 5):
//!
//! * an error is one line on stderr (`error: …`, from `main`), and with
//!   `perf client --json` also `{"error": {"kind": …, "message": …}}` on
//!   stdout, with a non-zero exit status either way;
//! * the server says when a client vanished (closed for any reason but a
//!   normal close: peer death, idle timeout, reset) and prints the
//!   endpoint's counters when it exits; `--once` exits non-zero when its
//!   client vanished.

use anyhow::anyhow;
use peregrine::{CloseReason, Endpoint};
use serde_json::{json, Value};

/// The `kind` of an error: the close reason's (`connection_refused`,
/// `peer_dead`, `key_mismatch`, …) when a connection failed,
/// `endpoint_stopped`, `io`, `security` and `config` for the runtime's
/// other errors, `error` for everything else (bad arguments, files).
pub(super) fn error_kind(e: &anyhow::Error) -> &'static str {
    for cause in e.chain() {
        if let Some(pe) = cause.downcast_ref::<peregrine::Error>() {
            return match pe {
                peregrine::Error::Closed(r) => r.kind(),
                peregrine::Error::EndpointStopped(_) => "endpoint_stopped",
                peregrine::Error::Io(_) => "io",
                peregrine::Error::Security(_) | peregrine::Error::Entropy(_) => "security",
                peregrine::Error::Config(_) | peregrine::Error::Connect(_) => "config",
                peregrine::Error::Send(_) => "send",
                peregrine::Error::Runtime(_) => "runtime",
                peregrine::Error::Group(_) => "group",
            };
        }
        if let Some(v) = cause.downcast_ref::<Vanished>() {
            return v.0.kind();
        }
        if cause.downcast_ref::<std::io::Error>().is_some() {
            return "io";
        }
    }
    "error"
}

/// `{"error": {"kind": …, "message": …}}`: the message is the whole
/// chain on one line, as `main` prints it.
pub(super) fn error_json(e: &anyhow::Error) -> Value {
    json!({"error": {"kind": error_kind(e), "message": format!("{e:#}")}})
}

/// A client that went away without closing: the connection's reason.
#[derive(Debug)]
pub(super) struct Vanished(pub(super) CloseReason);

impl std::fmt::Display for Vanished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the client vanished: {}", self.0)
    }
}

impl std::error::Error for Vanished {}

/// The connection ended: `Ok` for a normal close, an error that says
/// what happened otherwise.
pub(super) fn check_close(reason: CloseReason) -> anyhow::Result<()> {
    if reason.is_normal() {
        Ok(())
    } else {
        Err(anyhow!(Vanished(reason)))
    }
}

/// The server's counters at exit, one line: what went wrong at the
/// endpoint while it ran (from `Endpoint::stats()`).
pub(super) fn counters_line(ep: &Endpoint) -> String {
    let s = ep.stats();
    let c = &s.core;
    format!(
        "server counters: {} accepted, {} decode errors, {} auth failures, {} replays, \
         {} handshake failures, {} half-open now (peak {}, {} expired), {} busy rejects, \
         {} rejects, {} resets sent, {} ICMP unreachable",
        c.connections_accepted,
        c.decode_errors,
        c.auth_failures,
        c.replays_dropped,
        c.handshake_failures,
        c.half_open,
        c.half_open_peak,
        c.half_open_expired,
        c.busy_rejects,
        c.rejects_sent,
        c.resets_sent,
        c.icmp_unreachable,
    )
}

/// Resolves on the first Ctrl-C (SIGINT) or SIGTERM; never where the
/// signal handlers cannot be installed.
pub async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            _ => std::future::pending::<()>().await,
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
