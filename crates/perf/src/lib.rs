//! `peregrine perf server|client`: an iperf-like tool over real UDP.
//!
//! The server accepts clients until killed (or after one with `--once`);
//! the client runs one of three modes against it:
//!
//! * **bulk** (default): `--streams N` streams saturate the connection
//!   for `--duration`; throughput is what the server counted;
//! * **latency** (`--latency-trace FILE`): bulk as above, and a message
//!   trace (`Delays,Data Length` CSV, delays like `123us`) replayed on a
//!   priority-0 stream; the server echoes each message's 8-byte header,
//!   so latency is the time from the client's `send` to the echo;
//! * **echo** (`--echo-size B --echo-count N`): seed 003 §VI's "network
//!   time": send B bytes, the server sends them back, N times;
//! * **transfer** (`--bytes N`): exactly N bytes of a deterministic
//!   pattern ([`pattern`]) on one stream; the server checks every byte and
//!   hashes them (SHA-256), and both sides report `bytes`, `verified` and
//!   `sha256` (the client exits non-zero when the check fails).
//!
//! Stream layout (a contract between client and server of the same
//! version): 0 control (`HELLO n`, `DONE` → the server's JSON count;
//! `VERIFY n` → `READY`, then the server's JSON check once n bytes came), 1
//! whole-message echo, 2 header echo (latency), 16.. bulk. Live progress
//! goes to stderr once a second; the result is a table, or with `--json`
//! only a JSON object on stdout (keys in docs/perf.md).
//!
//! Failures (`outcome`): errors are one line (`error: …` on stderr) and,
//! with `--json`, `{"error": {"kind": …, "message": …}}` on stdout, with a
//! non-zero exit status; Ctrl-C on the client prints the summary so far
//! (`"interrupted": true`) and closes the connection, exit status 130;
//! the server says when a client vanished and prints its endpoint's
//! counters when it exits (Ctrl-C, SIGTERM, or `--once`, which exits
//! non-zero when its client vanished).
//!
//! Both sides encrypt by default (Noise handshake, ChaCha20-Poly1305 on
//! every packet; options in [`security`]); `--insecure` runs SLTP's plain
//! wire format. The report states the mode (`security` in the JSON).
//!
//! As a library (quinn's `perf/` is the model): [`PerfArgs`] are the
//! flags (clap `Args`, flattened into `peregrine perf`), [`run`] runs the
//! server or one client measurement and returns the client's [`Report`]
//! (the text to print and how the run ended, [`Status`]); the `peregrine`
//! command only parses the flags and prints the report. The server prints
//! its per-client lines itself, as its clients finish.

#![warn(missing_docs)]

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use peregrine::{
    CcConfig, Connection, ConnectionConfig, EndpointBuilder, EndpointConfig, PmtuDiscovery,
    StreamConfig, StreamReliability,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

mod hints;
mod iperf;
mod observe;
pub(crate) mod outcome;
mod parse;
mod pattern;
mod report;
pub mod security;
mod stdout;
mod upcall;

/// Resolves on Ctrl-C or SIGTERM (what `perf` and `tunnel` stop on).
pub use outcome::interrupted;

use parse::{parse_bitrate, parse_positive_duration, parse_scheduler, parse_trace, TraceMessage};
use peregrine_sim::metrics::{quantile, QuantileMethod::RoundedIndex};
use report::{latency_json, table};
use security::SecurityArgs;
use stdout::out;

const CONTROL: u16 = 0;
const ECHO: u16 = 1;
const LATENCY: u16 = 2;
const BULK_BASE: u16 = 16;
/// First stream the server sends bulk on (`-R`, `--bidir`): above every
/// client bulk stream (16 + [`iperf::MAX_STREAMS`]).
const REVERSE_BASE: u16 = 1024;
/// Bulk message size: large enough to keep the send path busy, small
/// enough that per-stream interleaving stays fine-grained.
const BULK_MESSAGE: usize = 64 * 1024;
/// Longest message the server accepts (and echoes).
const MAX_MESSAGE: usize = 16 << 20;
/// How far behind its schedule an application-paced (`--bitrate`) bulk
/// stream may fall and still catch up with back-to-back messages.
const PACING_CATCH_UP: Duration = Duration::from_millis(100);

/// Time between two bulk messages of one of `streams` streams sharing
/// `bitrate_bps`.
fn message_gap(bitrate_bps: u64, streams: u16) -> Duration {
    let per_stream_bps = (bitrate_bps / u64::from(streams.max(1))).max(1);
    let bits = BULK_MESSAGE as f64 * 8.0;
    Duration::from_secs_f64(bits / per_stream_bps as f64)
}

/// Send 64 KiB bulk messages on stream `id` until `stop` (or the
/// connection ends), one every `gap` if given; count the bytes handed to
/// the connection in `sent`.
fn spawn_sender(
    conn: Connection,
    id: u16,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    gap: Option<Duration>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // One shared buffer: every message is a reference to it, so
        // the only copy on the way out is into the datagram.
        let chunk = peregrine::Bytes::from(vec![0x5a; BULK_MESSAGE]);
        let mut next = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            if let Some(gap) = gap {
                // A sender held up (a full send buffer) catches up by
                // at most `PACING_CATCH_UP`, not the whole backlog.
                next = next.max(Instant::now() - PACING_CATCH_UP);
                tokio::time::sleep_until(next).await;
                next += gap;
            }
            if conn.send(id, chunk.clone()).await.is_err() {
                break;
            }
            sent.fetch_add(BULK_MESSAGE as u64, Ordering::Relaxed);
        }
    })
}

/// `--scheduler`'s help, from the scheduler registry.
fn scheduler_help() -> String {
    format!(
        "Stream scheduler: {}",
        peregrine_proto::sched::registry::cli_syntax()
    )
}

/// Arguments of `peregrine perf`: the `server`/`client` subcommands, or
/// iperf3's vocabulary (`-s`, `-c HOST[:PORT]`; docs/perf.md maps the flags).
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct PerfArgs {
    #[command(subcommand)]
    command: Option<PerfCommand>,
    /// Run a server on `[::]:PORT` (IPv6 and IPv4 alike; -p, default 4433).
    #[arg(short = 's', long = "server", conflicts_with = "connect")]
    server_mode: bool,
    /// With -s: exit after the first client has finished.
    #[arg(long, requires = "server_mode")]
    once: bool,
    /// With -s: accept only the client keys listed in FILE.
    #[arg(long, value_name = "FILE", requires = "server_mode")]
    authorized_keys: Option<std::path::PathBuf>,
    /// The client's flags (boxed: they are large and `Command` holds this).
    #[command(flatten)]
    client: Box<ClientArgs>,
}

#[derive(Subcommand, Debug)]
enum PerfCommand {
    /// Accept clients and count, echo or answer what they send.
    Server(Box<ServerArgs>),
    /// Measure throughput, message latency or network time against a server.
    Client(Box<ClientArgs>),
}

#[derive(Args, Debug)]
struct ServerArgs {
    /// Address to listen on (IPv4 or IPv6), e.g. 0.0.0.0:4433.
    #[arg(long)]
    listen: SocketAddr,
    /// Exit after the first client has finished.
    #[arg(long)]
    once: bool,
    #[command(flatten)]
    security: SecurityArgs,
    /// Accept only the client keys listed in FILE (one 64-hex key per
    /// line, optionally followed by a name).
    #[arg(long, value_name = "FILE")]
    authorized_keys: Option<std::path::PathBuf>,
    /// Print one JSON object per finished client on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    datagram: DatagramArgs,
    #[command(flatten)]
    observe: observe::ObserveArgs,
    #[command(flatten)]
    hints: hints::HintArgs,
}

/// Datagram sizing and the ACK policy, both sides.
#[derive(Args, Debug)]
struct DatagramArgs {
    /// How this side acknowledges the data it receives: sltp (SLTP's
    /// schedule, default) or tcp (TCP's delayed ACK: every second
    /// full-size packet, at most --delayed-ack late). It matters on the
    /// receiving side (the server, or the client with -R/--bidir).
    #[arg(long, default_value = "sltp", value_name = "sltp|tcp")]
    ack_policy: String,
    /// With --ack-policy tcp: the delayed-ACK timer (default 40ms; above
    /// zero and below 500ms).
    #[arg(long, value_name = "DELAY", value_parser = parse::parse_duration)]
    delayed_ack: Option<Duration>,
    /// Path MTU discovery: auto (on, up to the interface's MTU), on (up
    /// to --max-datagram, within the interface's), off (every datagram
    /// may be --max-datagram bytes, default 1452).
    #[arg(long, default_value = "auto", value_name = "auto|on|off")]
    pmtud: String,
    /// Largest datagram (UDP payload) in bytes: the search's upper bound,
    /// or the fixed size with --pmtud off.
    #[arg(long, value_name = "BYTES")]
    max_datagram: Option<u16>,
}

impl DatagramArgs {
    /// Apply to `config`; errors name the flag.
    fn apply(&self, config: &mut ConnectionConfig) -> Result<()> {
        let mut mode = PmtuDiscovery::from_name(&self.pmtud)
            .ok_or_else(|| anyhow!("--pmtud: unknown `{}` (auto, on, off)", self.pmtud))?;
        if let Some(max) = self.max_datagram {
            if max < 64 {
                bail!("--max-datagram: {max} is below 64 bytes");
            }
            config.max_packet_size = max;
            // A bound given with auto: search up to it (within the interface).
            if mode == PmtuDiscovery::Auto {
                mode = PmtuDiscovery::On;
            }
        }
        config.pmtu_discovery = mode;
        config.ack_policy =
            peregrine_proto::AckPolicy::from_name(&self.ack_policy, self.delayed_ack).map_err(
                |e| match e.field {
                    "delayed_ack" => anyhow!("--delayed-ack: {}", e.problem),
                    _ => anyhow!("--ack-policy: unknown `{}` (sltp, tcp)", self.ack_policy),
                },
            )?;
        Ok(())
    }
}

#[derive(Args, Debug)]
struct ClientArgs {
    /// The server: HOST[:PORT] (a name, an IPv4 or IPv6 address; every
    /// address a name resolves to is tried in turn; port -p, default 4433).
    #[arg(
        short = 'c',
        long,
        visible_alias = "client",
        value_name = "HOST[:PORT]"
    )]
    connect: Option<String>,
    /// The server's port (default 4433, the port Wireshark's SLTP dissector decodes).
    #[arg(short = 'p', long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    port: Option<u16>,
    /// How long bulk (and latency) mode runs, e.g. 10s, 500ms, or a bare
    /// number of seconds as in iperf3 (-t 2).
    #[arg(short = 't', long, default_value = "10s", value_parser = iperf::parse_seconds)]
    duration: Duration,
    /// Report interval (progress lines, JSON `intervals[]`); 0 turns them off.
    #[arg(short = 'i', long, default_value = "1", value_parser = iperf::parse_seconds)]
    interval: Duration,
    /// Bulk streams per connection (1–128).
    #[arg(long, default_value_t = 1)]
    streams: u16,
    /// Parallel connections (1–32), each with --streams bulk streams.
    #[arg(short = 'P', long, default_value_t = 1)]
    parallel: u16,
    /// Reverse: the server sends, the client receives.
    #[arg(short = 'R', long, conflicts_with_all = ["bidir", "echo_size", "latency_trace", "bytes"])]
    reverse: bool,
    /// Both directions at once.
    #[arg(long, conflicts_with_all = ["echo_size", "latency_trace", "bytes"])]
    bidir: bool,
    /// Append the report (table or JSON) to FILE instead of printing it on stdout.
    #[arg(long, value_name = "FILE")]
    logfile: Option<std::path::PathBuf>,
    // Help: "Stream scheduler: rr, wfq, …, aging[:MS]", from the registry.
    #[arg(long, default_value = "rr", help = scheduler_help())]
    scheduler: String,
    /// Congestion controller of the client's sending direction (any registry name).
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Start-up of the client's sending direction: slow-start (the
    /// default, as in `peregrine sim`) or packet-pair (docs/protocol.md §6;
    /// falls back to slow start when its samples disagree).
    #[arg(
        long,
        default_value = "slow-start",
        value_name = "slow-start|packet-pair"
    )]
    startup: String,
    /// Priority classes (0–3) of the bulk streams, comma-separated, cycled.
    #[arg(long, default_value = "2")]
    classes: String,
    /// Reliability of the bulk streams: reliable, unordered, unreliable.
    #[arg(long, default_value = "reliable")]
    reliability: String,
    /// Application-paced target rate of the bulk streams together, e.g.
    /// 100Mbps, 1.5Gbps (bps, kbps, Mbps, Gbps); default: as fast as the
    /// connection goes.
    #[arg(short = 'b', long, value_name = "RATE", value_parser = parse_bitrate)]
    bitrate: Option<u64>,
    /// Print only a JSON object on stdout.
    #[arg(short = 'J', long)]
    json: bool,
    /// Replay this message trace on a priority-0 stream beside the bulk streams.
    #[arg(long)]
    latency_trace: Option<std::path::PathBuf>,
    /// Queue guard (docs/protocol.md §10.2): while class-0 data is being
    /// sent, keep this connection's own standing queue at most DELAY above
    /// min RTT (e.g. 10ms). Off when absent.
    #[arg(long, value_name = "DELAY", value_parser = parse_positive_duration)]
    queue_guard: Option<Duration>,
    /// ECN on the client's sending direction (docs/protocol.md §6.5.3):
    /// `on` (the default) sends ECT — ECT(1) under a scalable controller
    /// such as prague, else ECT(0) — and reacts to the CE counts the
    /// server reports; `off` sends not-ECT. The JSON report's `ecn`.
    #[arg(long, default_value = "on", value_name = "on|off")]
    ecn: String,
    /// Network-time mode: bytes per echoed buffer.
    #[arg(long, requires = "echo_count")]
    echo_size: Option<usize>,
    /// Network-time mode: how many round trips.
    #[arg(long, requires = "echo_size")]
    echo_count: Option<u32>,
    /// Transfer mode: send exactly N bytes of a deterministic pattern; the
    /// server verifies them (`verified`, `sha256` in the report).
    #[arg(long, value_name = "N", conflicts_with_all = ["echo_size", "latency_trace"])]
    bytes: Option<u64>,
    /// Key update (docs/security.md): new packet keys after every N bytes
    /// sealed under one key (at least 65536; default: the AEAD's packet
    /// threshold only). `security.key_updates` in the report.
    #[arg(long, value_name = "N")]
    key_update_bytes: Option<u64>,
    #[command(flatten)]
    datagram: DatagramArgs,
    #[command(flatten)]
    security: SecurityArgs,
    /// The server's public key, as a file (`FILE.pub` of `peregrine
    /// keygen`) or 64 hex digits: pins the server (Noise_IK).
    #[arg(long, value_name = "FILE|HEX")]
    peer_key: Option<String>,
    #[command(flatten)]
    observe: observe::ObserveArgs,
    #[command(flatten)]
    hints: hints::HintArgs,
}

/// Run `peregrine perf` (the server until it is stopped, or one client
/// measurement) on a two-thread runtime, and return what to print. Errors
/// of the client without `--json`, and of the server, are `Err`.
pub fn run(args: PerfArgs) -> Result<Report> {
    // A bulk receiver's message buffers would otherwise be trimmed and
    // faulted in again (peregrine::alloc; docs/runtime.md).
    peregrine::alloc::keep_freed_heap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let command = match args.command {
        Some(c) => c,
        None if args.server_mode => {
            let c = args.client;
            let port = c.port.unwrap_or(iperf::DEFAULT_PORT);
            PerfCommand::Server(Box::new(ServerArgs {
                listen: SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port)),
                once: args.once,
                security: c.security,
                authorized_keys: args.authorized_keys,
                json: c.json,
                datagram: c.datagram,
                observe: c.observe,
                hints: c.hints,
            }))
        }
        None if args.client.connect.is_some() => PerfCommand::Client(args.client),
        None => bail!("perf: give -s (server), -c HOST (client), or `perf server` / `perf client`"),
    };
    match command {
        PerfCommand::Server(a) => {
            rt.block_on(server(*a))?;
            Ok(Report {
                text: None,
                logfile: None,
                status: Status::Finished,
            })
        }
        PerfCommand::Client(a) => {
            let (json, logfile) = (a.json, a.logfile.clone());
            match rt.block_on(client(*a)) {
                Ok(out) => Ok(client_report(&out, json, logfile)),
                // `--json`: the failure is a JSON object too.
                Err(e) if json => Ok(Report {
                    text: Some(format!("{}\n", outcome::error_json(&e))),
                    logfile,
                    status: Status::Failed(e),
                }),
                Err(e) => Err(e),
            }
        }
    }
}

/// What a finished `peregrine perf` leaves its caller (the CLI) to print.
#[derive(Debug)]
pub struct Report {
    /// The client's report: a table, or with `--json` one JSON object per
    /// line (keys in docs/perf.md; a failed client's `{"error": …}`).
    /// `None` for the server, which prints as its clients finish.
    pub text: Option<String>,
    /// `--logfile FILE`: append [`text`](Report::text) there instead of
    /// printing it on stdout.
    pub logfile: Option<std::path::PathBuf>,
    /// How the run ended: what the exit status says.
    pub status: Status,
}

/// How a `peregrine perf` run ended.
#[derive(Debug)]
pub enum Status {
    /// The measurement finished (exit status 0).
    Finished,
    /// Ctrl-C or SIGTERM stopped the client: the report is the summary so
    /// far and the connection was closed (exit status 130, 128 + SIGINT).
    Interrupted,
    /// The client failed after its report was made (a transfer that did
    /// not verify), or failed with `--json` (the report is the error
    /// object): the error, for a non-zero exit status.
    Failed(anyhow::Error),
}

/// The client's report as text, and how the run ended. O(report size).
fn client_report(out: &Value, json: bool, logfile: Option<std::path::PathBuf>) -> Report {
    let mut text = if json { format!("{out}\n") } else { table(out) };
    let status = if out["interrupted"] == json!(true) {
        Status::Interrupted
    } else if out["verified"] == json!(false) {
        let e = anyhow!(
            "the transfer did not verify: {}",
            out["verify_error"].as_str().unwrap_or("?")
        );
        if json {
            // As before the move: the report, then the error object.
            text += &format!("{}\n", outcome::error_json(&e));
        }
        Status::Failed(e)
    } else {
        Status::Finished
    };
    Report {
        text: Some(text),
        logfile,
        status,
    }
}

fn server_config() -> ConnectionConfig {
    ConnectionConfig {
        max_message_size: MAX_MESSAGE,
        max_send_buffer_bytes: 2 * MAX_MESSAGE,
        max_receive_buffer_bytes: 2 * MAX_MESSAGE,
        ..ConnectionConfig::default()
    }
}

async fn server(a: ServerArgs) -> Result<()> {
    let plan = security::server_plan(&a.security, a.authorized_keys.as_deref())?;
    let mut config = server_config();
    a.datagram.apply(&mut config)?;
    let bind = |addr: SocketAddr| -> Result<_> {
        a.hints
            .apply(
                a.observe
                    .apply(plan.apply(EndpointBuilder::new()), "perf")?,
            )?
            .config(EndpointConfig {
                server: Some(config.clone()),
                // The client's --cc also runs the server's (echo) direction.
                adopt_peer_controller: true,
                ..EndpointConfig::default()
            })
            .bind(addr)
            .with_context(|| format!("cannot listen on {addr}"))
    };
    // `-s` listens on `[::]`, which takes IPv4 too (v4-mapped): the
    // runtime clears IPV6_V6ONLY on its sockets, whatever Linux's
    // net.ipv6.bindv6only says; a host without IPv6 gets `0.0.0.0`.
    let ep = match bind(a.listen) {
        Err(e) if a.listen.ip() == std::net::Ipv6Addr::UNSPECIFIED => {
            let v4 = SocketAddr::from(([0, 0, 0, 0], a.listen.port()));
            bind(v4).map_err(|_| e)?
        }
        r => r?,
    };
    eprintln!("listening on {}", ep.local_addr());
    eprintln!("security: {}", plan.description);
    let run = async {
        while let Some(conn) = ep.accept().await {
            let task = tokio::spawn(serve(conn, a.json));
            if a.once {
                return task.await.context("client task")?;
            }
            // Without --once a vanished client is reported (by `serve`)
            // and the server goes on.
            tokio::spawn(async move {
                let _ = task.await;
            });
        }
        Ok(())
    };
    let r = tokio::select! {
        r = run => r,
        _ = outcome::interrupted() => Ok(()),
    };
    eprintln!("{}", outcome::counters_line(&ep));
    let h = a.hints.json(&ep);
    if !h.is_null() {
        eprintln!("hints: {h}");
    }
    r
}

/// Serve one client (`serve_inner`), then check how its connection
/// ended: anything but a normal close is reported as a vanished client
/// (and is an error, which `--once` turns into the exit status).
async fn serve(conn: Connection, json_out: bool) -> Result<()> {
    let peer = conn.remote_address().map_or("?".into(), |p| p.to_string());
    let served = serve_inner(&conn, json_out).await;
    let reason = conn.closed().await;
    let r = outcome::check_close(reason).and(served);
    if let Err(e) = &r {
        eprintln!("client {peer}: {e:#}");
    }
    r
}

/// Transfer mode at the server: check the bytes of stream [`BULK_BASE`]
/// as they come (an up-call on the driver's thread), then report.
fn start_verify(
    conn: &Connection,
    expected: u64,
    json_out: bool,
) -> tokio::task::JoinHandle<Result<()>> {
    let verifier = Arc::new(Mutex::new(pattern::Verifier::new(expected)));
    let done = Arc::new(tokio::sync::Notify::new());
    let (v, d) = (verifier.clone(), done.clone());
    let started = Instant::now();
    conn.on_message(BULK_BASE, move |_, b| {
        let mut v = v.lock().unwrap_or_else(|p| p.into_inner());
        v.update(&b);
        if v.complete() {
            d.notify_one();
        }
    });
    let conn = conn.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = done.notified() => {}
            _ = conn.closed() => {}
        }
        let (bytes, verified, sha, mismatch) = {
            let v = verifier.lock().unwrap_or_else(|p| p.into_inner());
            (v.bytes(), v.verified(), v.sha256(), v.mismatch_at())
        };
        let secs = started.elapsed().as_secs_f64();
        let report = json!({
            "bytes": bytes,
            "verified": verified,
            "sha256": sha,
            "receive_queue": receive_queue_json(conn.stats().as_ref()),
        });
        // The connection may be gone (a client that died): report anyway.
        let _ = conn.send(CONTROL, report.to_string().as_bytes()).await;
        let peer = conn.remote_address().map_or("?".into(), |p| p.to_string());
        if json_out {
            let mut line = report.clone();
            line["client"] = json!(peer);
            line["duration_s"] = json!(secs);
            line["pmtu"] = conn.stats().map_or(Value::Null, |s| pmtu_json(&s));
            crate::out(&format!("{line}\n"))?;
        }
        eprintln!(
            "client {peer}: {bytes} of {expected} bytes in {secs:.2} s, verified {verified}, sha256 {sha}"
        );
        if !verified {
            match mismatch {
                Some(at) => bail!("transfer from {peer}: byte {at} differs from the pattern"),
                None => bail!("transfer from {peer}: {bytes} bytes arrived, {expected} expected"),
            }
        }
        Ok(())
    })
}

/// The path MTU part of a report.
fn pmtu_json(s: &peregrine::ConnectionStats) -> Value {
    let p = &s.pmtu;
    json!({
        "state": p.state.name(),
        "current_bytes": p.current_bytes,
        "max_bytes": p.max_bytes,
        "probes_sent": p.counters.probes_sent,
        "probes_acked": p.counters.probes_acked,
        "probes_lost": p.counters.probes_lost,
        "black_holes": p.counters.black_holes,
    })
}

/// The receive-queue bound of one side (`receive_queue` in the report,
/// docs/perf.md): the cap on the window it advertises, the socket-queue
/// sojourn it measured, the cuts, and the priority cap.
fn receive_queue_json(s: Option<&peregrine::ConnectionStats>) -> Value {
    let Some(q) = s.map(|s| s.receive_queue) else {
        return Value::Null;
    };
    json!({
        "window_cap_bytes": q.cap_bytes,
        "min_sojourn_ms": q.min_sojourn.map(|d| d.as_secs_f64() * 1e3),
        "cuts": q.cuts,
        "priority_cap_bytes": q.priority_cap_bytes,
    })
}

/// Serve one client: count bulk bytes (by up-call), echo streams 1 and 2,
/// answer `DONE` with the counts.
async fn serve_inner(conn: &Connection, json_out: bool) -> Result<()> {
    let peer = conn.remote_address();
    let started = Instant::now();
    let counts: Arc<Mutex<BTreeMap<u16, u64>>> = Arc::default();
    let count = |counts: &Mutex<BTreeMap<u16, u64>>, s: u16, n: usize| {
        let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
        *c.entry(s).or_default() += n as u64;
    };
    let mut verify = None;
    // `-R`/`--bidir`: the server's own bulk senders.
    let reverse_stop = Arc::new(AtomicBool::new(false));
    let reverse_sent = Arc::new(AtomicU64::new(0));
    let mut reverse_tasks = Vec::new();
    // Echoes leave from the driver's thread (see `upcall`); dropped, with
    // the connection handles they hold, when this client is served.
    let _echo = upcall::UpcallEcho::start(conn, ECHO, usize::MAX);
    let _latency_echo = upcall::UpcallEcho::start(conn, LATENCY, 8);
    while let Some((stream, bytes)) = conn.recv().await {
        match stream {
            CONTROL if bytes.starts_with(b"REVERSE ") && reverse_tasks.is_empty() => {
                // `REVERSE n bps`: send on n streams (bps 0: unpaced).
                let text = String::from_utf8_lossy(&bytes[8..]);
                let mut words = text.split_whitespace();
                let n: u16 = words.next().and_then(|w| w.parse().ok()).unwrap_or(1);
                let n = n.clamp(1, iperf::MAX_STREAMS);
                let bps: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                let gap = (bps > 0).then(|| message_gap(bps, n));
                for id in REVERSE_BASE..REVERSE_BASE + n {
                    conn.open_stream(id, StreamConfig::default())?;
                    reverse_tasks.push(spawn_sender(
                        conn.clone(),
                        id,
                        reverse_stop.clone(),
                        reverse_sent.clone(),
                        gap,
                    ));
                }
            }
            CONTROL if bytes.starts_with(b"VERIFY ") => {
                let n: u64 = std::str::from_utf8(&bytes[7..])
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0);
                if verify.is_none() {
                    verify = Some(start_verify(conn, n, json_out));
                }
                conn.send(CONTROL, b"READY").await?;
            }
            CONTROL if bytes.starts_with(b"HELLO ") => {
                let n: u16 = std::str::from_utf8(&bytes[6..])
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0);
                for s in BULK_BASE..BULK_BASE.saturating_add(n) {
                    let counts = counts.clone();
                    conn.on_message(s, move |s, b| count(&counts, s, b.len()));
                }
            }
            CONTROL if &bytes[..] == b"DONE" => {
                reverse_stop.store(true, Ordering::Relaxed);
                for t in reverse_tasks.drain(..) {
                    t.abort();
                }
                let c = counts.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let total: u64 = c.values().sum();
                let report = json!({
                    "bytes": total,
                    "streams": c.iter().map(|(s, b)| json!([s, b])).collect::<Vec<_>>(),
                    "sent_bytes": reverse_sent.load(Ordering::Relaxed),
                    "receive_queue": receive_queue_json(conn.stats().as_ref()),
                });
                conn.send(CONTROL, report.to_string().as_bytes()).await?;
                let secs = started.elapsed().as_secs_f64();
                let aead = conn.security_aead().map_or("?", |a| a.name());
                let security = match (conn.security_pattern(), conn.peer_static_key()) {
                    (Some(p), Some(k)) => format!("Noise_{p:?}, {aead}, client key {k}"),
                    (Some(p), None) => format!("Noise_{p:?}, {aead}"),
                    _ => "insecure".into(),
                };
                eprintln!(
                    "client {}: {} bytes in {:.2} s ({security})",
                    peer.map_or("?".into(), |p| p.to_string()),
                    total,
                    secs
                );
            }
            // Only what arrived before the up-calls above were registered
            // (a client's first message can beat the server's task to
            // it): echoed from here.
            ECHO => {
                conn.send(ECHO, bytes).await?;
            }
            LATENCY => {
                conn.send(LATENCY, bytes.slice(..bytes.len().min(8)))
                    .await?;
            }
            s => count(&counts, s, bytes.len()),
        }
    }
    if let Some(task) = verify {
        task.await.context("verify task")??;
    }
    Ok(())
}

/// One client measurement; the report's JSON (keys in docs/perf.md).
async fn client(a: ClientArgs) -> Result<Value> {
    let cc = CcConfig::from_name(&a.cc).map_err(|e| anyhow!("--cc: {e}"))?;
    let scheduler = parse_scheduler(&a.scheduler)?;
    let reliability = match a.reliability.as_str() {
        "reliable" => StreamReliability::ReliableOrdered,
        "unordered" => StreamReliability::ReliableUnordered,
        "unreliable" => StreamReliability::Unreliable,
        r => bail!("--reliability: unknown `{r}` (reliable, unordered, unreliable)"),
    };
    let classes: Vec<u8> = a
        .classes
        .split(',')
        .map(|c| match c.trim().parse::<u8>() {
            Ok(v) if v <= 3 => Ok(v),
            _ => Err(anyhow!("--classes: `{c}` is not a class 0–3")),
        })
        .collect::<Result<_>>()?;
    let trace = match &a.latency_trace {
        Some(p) => Some(parse_trace(
            &std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?,
        )?),
        None => None,
    };
    if let Some(size) = a.echo_size {
        if size == 0 || size > MAX_MESSAGE {
            bail!("--echo-size: must be 1 to {MAX_MESSAGE} bytes");
        }
    }
    iperf::check_ranges(a.streams, a.parallel, a.duration)?;
    if a.parallel > 1 && (a.echo_size.is_some() || a.bytes.is_some()) {
        bail!("-P/--parallel: bulk mode only (not with --echo-size or --bytes)");
    }
    let spec = a
        .connect
        .clone()
        .ok_or_else(|| anyhow!("--connect: give the server as HOST[:PORT], e.g. -c localhost"))?;
    let (host, port) = iperf::host_port(&spec, a.port)?;
    let addrs = iperf::resolve(&host, port).await?;
    let plan = security::client_plan(&a.security, a.peer_key.as_deref())?;
    let startup = peregrine_proto::wire::StartupMode::from_name(&a.startup).ok_or_else(|| {
        anyhow!(
            "--startup: unknown `{}` (slow-start, packet-pair)",
            a.startup
        )
    })?;
    let ecn = match a.ecn.as_str() {
        "on" => true,
        "off" => false,
        other => bail!("--ecn: unknown `{other}` (on, off)"),
    };
    let mut config = ConnectionConfig {
        cc,
        startup,
        scheduler,
        queue_guard: a.queue_guard,
        ecn,
        ..server_config()
    };
    a.datagram.apply(&mut config)?;
    config.key_update.bytes = a.key_update_bytes;
    config
        .key_update
        .validate()
        .map_err(|p| anyhow!("--key-update-bytes: {p}"))?;
    // Every address the name resolves to, in turn (`localhost` may be
    // ::1 or 127.0.0.1 first).
    let observe = &a.observe;
    // Opened once, before connecting: the first endpoint that binds takes it.
    let hint_source = Mutex::new(a.hints.open()?);
    let hint_source = &hint_source;
    let (addr, (ep, conn)) = iperf::first_that_connects(&spec, &addrs, |addr| {
        let (plan, config) = (&plan, config.clone());
        async move {
            let bind: SocketAddr = if addr.is_ipv4() {
                "0.0.0.0:0".parse()?
            } else {
                "[::]:0".parse()?
            };
            let mut b = observe.apply(plan.apply(EndpointBuilder::new()), "perf")?;
            if let Some(source) = hint_source.lock().unwrap_or_else(|p| p.into_inner()).take() {
                b = b.hints(source);
            }
            let ep = b.bind(bind)?;
            let conn = ep.connect(addr, config).await?;
            anyhow::Ok((ep, conn))
        }
    })
    .await?;
    let mut conns = vec![conn.clone()];
    for _ in 1..a.parallel {
        conns.push(
            ep.connect(addr, config.clone())
                .await
                .with_context(|| format!("cannot connect to {addr}"))?,
        );
    }
    // iperf3's `start.timestamp`: the wall clock is what a reader of the
    // report compares runs by (the clippy ban is for the simulated time
    // of the sans-IO crates).
    #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
    let timestamp_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let start_json = json!({
        "connecting_to": {"host": host, "port": port},
        "connected": conns.iter().map(|c| json!({
            "local": ep.local_addr().to_string(),
            "remote": c.remote_address().map(|r| r.to_string()),
        })).collect::<Vec<_>>(),
        "timestamp_unix_s": timestamp_unix_s,
        "test_start": {
            "protocol": "SLTP",
            "num_streams": a.streams,
            "parallel": a.parallel,
            "duration_s": a.duration.as_secs_f64(),
            "interval_s": a.interval.as_secs_f64(),
            "reverse": a.reverse,
            "bidir": a.bidir,
            "bitrate_bps": a.bitrate,
        },
    });
    let a = Arc::new(a);
    let mut out = match (a.echo_size, a.echo_count, a.bytes) {
        (Some(size), Some(count), _) => echo_mode(&conn, size, count).await?,
        (_, _, Some(n)) => transfer_mode(&conn, n).await?,
        _ => parallel_bulk(&conns, &a, classes.into(), reliability, trace).await?,
    };
    out["start"] = start_json;
    let stats = conn.stats();
    let (pattern, server_key) = (conn.security_pattern(), conn.peer_static_key());
    let probe = stats.as_ref().and_then(|s| s.probe_decision.map(|d| (d, s.last_probe))).map(|(d, p)| {
        json!({
            "rtt_ms": p.map(|p| p.latency.as_secs_f64() * 1e3),
            "bandwidth_bps": p.map(|p| p.bandwidth_bytes_per_sec.saturating_mul(8)),
            "burst_bytes": p.map(|p| p.burst_bytes),
            "decision": d.name(),
            "reason": d.reason(),
            "pairs": json!({
                "sent": d.pairs_sent,
                "complete": d.pairs_complete,
                "agreeing": d.pairs_agreeing,
                "gaps_us": d.gaps_ns.iter().map(|g| g.map(|ns| ns as f64 / 1e3)).collect::<Vec<_>>(),
            }),
        })
    });
    out["probe"] = probe.unwrap_or(Value::Null);
    out["retransmitted_packets"] = json!(stats.as_ref().map_or(0, |s| s.packets_retransmitted));
    out["cc"] = json!(a.cc);
    out["scheduler"] = json!(scheduler.name());
    out["queue_guard_ms"] = json!(a.queue_guard.map(|d| d.as_secs_f64() * 1e3));
    out["hints"] = a.hints.json(&ep);
    out["security"] = json!({
        "mode": plan.mode,
        "encrypted": stats.as_ref().is_some_and(|s| s.security.encrypted),
        "server_authenticated": plan.peer_authenticated,
        "pattern": pattern.map(|p| format!("{p:?}")),
        "aead": conn.security_aead().map(|a| a.name()),
        "aead_preference": plan.aead.map(|a| a.name()),
        "aes_hardware": peregrine::aes_hardware(),
        "server_key": server_key.map(|k| k.to_hex()),
        "description": plan.description,
        "key_updates": stats.as_ref().map_or(0, |s| s.security.key_updates),
        "cid_changes": stats.as_ref().map_or(0, |s| s.security.cid_changes),
    });
    out["ecn"] = ecn_json(a.ecn == "on", stats.as_ref());
    if let Some(s) = &stats {
        out["srtt_ms"] = json!(s.srtt.map(|d| d.as_secs_f64() * 1e3));
        out["packets_lost"] = json!(s.packets_lost);
        out["pmtu"] = pmtu_json(s);
        if out["receive_queue"].is_null() {
            out["receive_queue"] = json!({});
        }
        out["receive_queue"]["client"] = receive_queue_json(Some(s));
    }
    // Close gracefully; do not wait forever for a bulk backlog to drain.
    for conn in &conns {
        if tokio::time::timeout(Duration::from_secs(5), conn.close())
            .await
            .is_err()
        {
            conn.abort();
        }
    }
    Ok(out)
}

/// The client connection's ECN counters for the JSON report: whether it
/// was asked for, the codepoint its datagrams carry now (`null`: off, or
/// validation failed — `failure` says why), the DATA packets sent ECT,
/// the CE count the server reported, and what the client itself received
/// (the server's data in reverse mode).
fn ecn_json(enabled: bool, stats: Option<&peregrine::ConnectionStats>) -> Value {
    let Some(s) = stats else {
        return json!({ "enabled": enabled });
    };
    let codepoint = s.ecn_codepoint.map(|c| match c {
        peregrine_proto::EcnCodepoint::Ect0 => "ect0",
        peregrine_proto::EcnCodepoint::Ect1 => "ect1",
        peregrine_proto::EcnCodepoint::Ce => "ce",
    });
    json!({
        "enabled": enabled,
        "codepoint": codepoint,
        "failure": s.ecn_failure,
        "ect_packets_sent": s.ecn_ect_packets_sent,
        "ce_reported": s.ecn_ce_reported,
        "ce_episodes": s.ecn_episodes,
        "received": {
            "ect0": s.ecn_ect0_received,
            "ect1": s.ecn_ect1_received,
            "ce": s.ecn_ce_received,
        },
    })
}

/// The connection ended under the client: its close reason (which says
/// what happened and what to do), in context.
async fn ended(conn: &Connection, when: &str) -> anyhow::Error {
    let reason = conn.closed().await;
    anyhow::Error::new(peregrine::Error::Closed(reason))
        .context(format!("the connection ended {when}"))
}

/// Transfer mode: `n` bytes of the pattern on stream [`BULK_BASE`] in
/// 64 KiB messages, after the server said `READY`; then its check.
async fn transfer_mode(conn: &Connection, n: u64) -> Result<Value> {
    use sha2::{Digest, Sha256};
    conn.open_stream(
        CONTROL,
        StreamConfig {
            class: 0,
            ..StreamConfig::default()
        },
    )?;
    conn.open_stream(BULK_BASE, StreamConfig::default())?;
    conn.send(CONTROL, format!("VERIFY {n}").as_bytes()).await?;
    let next_control = || async {
        loop {
            match conn.recv().await {
                Some((CONTROL, b)) => return Ok(b),
                Some(_) => continue,
                None => bail!("the server closed the connection"),
            }
        }
    };
    let ready = next_control().await?;
    if &ready[..] != b"READY" {
        bail!(
            "the server does not support --bytes (it answered {:?})",
            String::from_utf8_lossy(&ready)
        );
    }
    let start = Instant::now();
    let mut hasher = Sha256::new();
    let mut offset = 0u64;
    let mut last_print = start;
    while offset < n {
        let len = (n - offset).min(BULK_MESSAGE as u64) as usize;
        let mut chunk = vec![0u8; len];
        pattern::fill(offset, &mut chunk);
        hasher.update(&chunk);
        conn.send(BULK_BASE, chunk).await?;
        offset += len as u64;
        if last_print.elapsed() >= Duration::from_secs(1) {
            last_print = Instant::now();
            eprintln!(
                "[{:5.1} s] {offset} of {n} bytes queued",
                start.elapsed().as_secs_f64()
            );
        }
    }
    let sha = pattern::hex(&hasher.finalize());
    let report = next_control().await?;
    let secs = start.elapsed().as_secs_f64();
    let report: Value =
        serde_json::from_slice(&report).context("the server's report is not JSON")?;
    let server_bytes = report["bytes"].as_u64().unwrap_or(0);
    let server_sha = report["sha256"].as_str().unwrap_or("");
    let problem = if report["verified"] != json!(true) {
        Some(format!(
            "the server's check failed after {server_bytes} bytes"
        ))
    } else if server_bytes != n {
        Some(format!(
            "the server counted {server_bytes} bytes, {n} were sent"
        ))
    } else if server_sha != sha {
        Some(format!("SHA-256 differs: sent {sha}, server {server_sha}"))
    } else {
        None
    };
    Ok(json!({
        "mode": "transfer",
        "throughput_bps": if secs > 0.0 { n as f64 * 8.0 / secs } else { 0.0 },
        "bytes": n,
        "duration_s": secs,
        "streams": [{"id": BULK_BASE, "bytes": server_bytes, "latency_ms": Value::Null}],
        "verified": problem.is_none(),
        "sha256": sha,
        "server_sha256": server_sha,
        "verify_error": problem,
        "receive_queue": {"server": report["receive_queue"]},
    }))
}

async fn echo_mode(conn: &Connection, size: usize, count: u32) -> Result<Value> {
    conn.open_stream(
        ECHO,
        StreamConfig {
            class: 0,
            ..StreamConfig::default()
        },
    )?;
    let buf: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    // Each echo's arrival is stamped on the driver's thread as it is
    // delivered (`upcall`), as the kernel's read returns to a TCP client.
    let mut arrivals = upcall::UpcallClock::start(conn, ECHO);
    let mut times = Vec::new();
    let start = Instant::now();
    for i in 0..count {
        let t0 = Instant::now();
        conn.send(ECHO, &buf).await?;
        let answer = tokio::select! {
            biased;
            m = arrivals.next() => m,
            _ = conn.closed() => None,
        };
        let Some((b, at)) = answer else {
            return Err(ended(conn, &format!("during echo {i}")).await);
        };
        if b.len() != size {
            bail!("echo {i}: {} bytes back, {size} sent", b.len());
        }
        times.push(at.saturating_duration_since(t0).as_secs_f64() * 1e3);
        eprintln!("echo {}/{count}: {:.3} ms", i + 1, times[times.len() - 1]);
    }
    let secs = start.elapsed().as_secs_f64();
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let bytes = size as u64 * u64::from(count);
    Ok(json!({
        "mode": "echo",
        "throughput_bps": if secs > 0.0 { 2.0 * bytes as f64 * 8.0 / secs } else { 0.0 },
        "bytes": bytes,
        "duration_s": secs,
        "streams": [],
        "echo": {"size_bytes": size, "times_ms": times, "median_ms": quantile(&sorted, 0.5, RoundedIndex).unwrap_or(0.0)},
    }))
}

/// What one connection's bulk run measured, for the report and for
/// summing over `-P` connections.
struct BulkRun {
    /// Today's report keys (`mode`, `bytes`, `streams`, …).
    out: Value,
    /// Report intervals (`-i`).
    intervals: Vec<iperf::Interval>,
    /// Bytes the client's senders handed to the connection.
    client_sent: u64,
    /// Bulk bytes the client received (`-R`, `--bidir`).
    client_received: u64,
    /// Bulk bytes the server counted (its report; acknowledged bytes
    /// when interrupted).
    server_received: u64,
    /// Bytes the server's senders handed to the connection.
    server_sent: u64,
    /// Seconds the run lasted.
    seconds: f64,
}

/// Bulk (and latency) mode on one connection: the client sends (unless
/// `-R`), the server sends too with `-R`/`--bidir`; intervals every `-i`.
/// `index` numbers the connection among `-P` ones (progress lines).
async fn bulk_mode(
    conn: Connection,
    a: Arc<ClientArgs>,
    classes: Arc<[u8]>,
    reliability: StreamReliability,
    trace: Option<Vec<TraceMessage>>,
    index: usize,
) -> Result<BulkRun> {
    let conn = &conn;
    let sends = !a.reverse;
    let receives = a.reverse || a.bidir;
    conn.open_stream(
        CONTROL,
        StreamConfig {
            class: 0,
            ..StreamConfig::default()
        },
    )?;
    let streams = if sends { a.streams } else { 0 };
    conn.send(CONTROL, format!("HELLO {streams}").as_bytes())
        .await?;
    if receives {
        let bps = a.bitrate.unwrap_or(0);
        conn.send(CONTROL, format!("REVERSE {} {bps}", a.streams).as_bytes())
            .await?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for i in 0..streams {
        let id = BULK_BASE.saturating_add(i);
        conn.open_stream(
            id,
            StreamConfig {
                class: classes[usize::from(i) % classes.len()],
                reliability,
                ..StreamConfig::default()
            },
        )?;
        // `--bitrate`: each stream sends its share of the rate, one
        // message every `gap`.
        let gap = a.bitrate.map(|bps| message_gap(bps, a.streams));
        tasks.push(spawn_sender(
            conn.clone(),
            id,
            stop.clone(),
            sent.clone(),
            gap,
        ));
    }
    // Latency trace: sent times by sequence number; samples in ms, taken
    // on the driver's thread as each echo is delivered (`upcall`).
    let sent_at: Arc<Mutex<BTreeMap<u32, Instant>>> = Arc::default();
    let latency_samples: Arc<Mutex<Vec<f64>>> = Arc::default();
    // How long each priority `send` call itself took (ms): the part of a
    // latency sample spent before the message reached the core.
    let send_samples: Arc<Mutex<Vec<f64>>> = Arc::default();
    let latency_bytes = Arc::new(AtomicU64::new(0));
    if let Some(trace) = trace {
        let (sent, samples) = (sent_at.clone(), latency_samples.clone());
        conn.on_message(LATENCY, move |_, b| {
            if b.len() < 4 {
                return;
            }
            let seq = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            let t = sent.lock().unwrap_or_else(|p| p.into_inner()).remove(&seq);
            if let Some(t) = t {
                let ms = t.elapsed().as_secs_f64() * 1e3;
                samples.lock().unwrap_or_else(|p| p.into_inner()).push(ms);
            }
        });
        conn.open_stream(
            LATENCY,
            StreamConfig {
                class: 0,
                ..StreamConfig::default()
            },
        )?;
        let (conn, stop, sent_at, lb, send_ms) = (
            conn.clone(),
            stop.clone(),
            sent_at.clone(),
            latency_bytes.clone(),
            send_samples.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut seq = 0u32;
            let mut next = Instant::now();
            // Loop over the trace until the run ends.
            'outer: loop {
                for m in &trace {
                    next += m.delay;
                    tokio::time::sleep_until(next).await;
                    if stop.load(Ordering::Relaxed) {
                        break 'outer;
                    }
                    let mut msg = vec![0u8; m.len.max(8)];
                    msg[..4].copy_from_slice(&seq.to_be_bytes());
                    let t0 = Instant::now();
                    sent_at
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(seq, t0);
                    if conn.send(LATENCY, &msg).await.is_err() {
                        break 'outer;
                    }
                    let ms = t0.elapsed().as_secs_f64() * 1e3;
                    send_ms.lock().unwrap_or_else(|p| p.into_inner()).push(ms);
                    lb.fetch_add(msg.len() as u64, Ordering::Relaxed);
                    seq = seq.wrapping_add(1);
                }
            }
        }));
    }
    let start = Instant::now();
    let end = start + a.duration;
    // `-i 0`: no intervals (a period nothing reaches).
    let period = (!a.interval.is_zero()).then_some(a.interval);
    let tick_period = period.unwrap_or(Duration::from_secs(86_400));
    let mut tick = tokio::time::interval_at(start + tick_period, tick_period);
    let mut intervals = Vec::new();
    let mut last_tick = start;
    let mut last_acked = 0u64;
    let mut received = 0u64;
    let mut last_received = 0u64;
    let mut duration = None;
    let mut report = None;
    let deadline = end + Duration::from_secs(10);
    let ctrl_c = outcome::interrupted();
    tokio::pin!(ctrl_c);
    let mut interrupted = false;
    // One interval from `last_tick` to now: the acknowledged bytes of the
    // client's direction and the bytes it received.
    let mut close_interval = |last_tick: &mut Instant, received: u64, intervals: &mut Vec<_>| {
        let now = Instant::now();
        let acked = conn.stats().map_or(last_acked, |s| s.bytes_acked);
        let iv = iperf::Interval {
            start_s: (*last_tick - start).as_secs_f64(),
            end_s: (now - start).as_secs_f64(),
            sent_bytes: sends.then(|| acked.saturating_sub(last_acked)),
            received_bytes: receives.then(|| received - last_received),
        };
        last_acked = acked;
        last_received = received;
        *last_tick = now;
        intervals.push(iv.clone());
        iv
    };
    while report.is_none() && !interrupted {
        tokio::select! {
            _ = &mut ctrl_c => {
                // Ctrl-C: stop sending; the summary is what the server
                // acknowledged so far (its own count never comes).
                interrupted = true;
                stop.store(true, Ordering::Relaxed);
                duration = Some(start.elapsed().as_secs_f64());
            }
            m = conn.recv() => {
                let Some((s, b)) = m else {
                    return Err(ended(conn, "during the run").await);
                };
                match s {
                    CONTROL => {
                        report = Some(serde_json::from_slice::<Value>(&b)
                            .context("the server's report is not JSON")?);
                    }
                    s if s >= REVERSE_BASE && duration.is_none() => received += b.len() as u64,
                    _ => {}
                }
            }
            _ = tick.tick(), if duration.is_none() && period.is_some() => {
                let iv = close_interval(&mut last_tick, received, &mut intervals);
                let secs = (iv.end_s - iv.start_s).max(1e-9);
                let mbps = |b: u64| b as f64 * 8.0 / secs / 1e6;
                let who = if a.parallel > 1 { format!("[conn {index}] ") } else { String::new() };
                if let Some(s) = conn.stats() {
                    let mut line = format!("{who}[{:5.1} s]", iv.end_s);
                    if let Some(b) = iv.sent_bytes {
                        line += &format!(
                            " {:9.1} Mbit/s  cwnd {} B  srtt {:.3} ms  retransmitted {}",
                            mbps(b), s.cwnd_bytes,
                            s.srtt.map_or(0.0, |d| d.as_secs_f64() * 1e3), s.packets_retransmitted
                        );
                    }
                    if let Some(b) = iv.received_bytes {
                        line += &format!("  received {:9.1} Mbit/s", mbps(b));
                    }
                    eprintln!("{line}");
                }
            }
            _ = tokio::time::sleep_until(end), if duration.is_none() => {
                stop.store(true, Ordering::Relaxed);
                duration = Some(start.elapsed().as_secs_f64());
                // The last, partial interval (iperf3 reports it too); a
                // sliver under 10 ms joins the one before.
                if period.is_some() {
                    let iv = close_interval(&mut last_tick, received, &mut intervals);
                    if iv.end_s - iv.start_s < 0.01 && intervals.len() > 1 {
                        intervals.pop();
                        if let Some(prev) = intervals.last_mut() {
                            prev.add(&iv);
                        }
                    }
                }
                conn.send(CONTROL, b"DONE").await?;
            }
            _ = tokio::time::sleep_until(deadline) => bail!("no report from the server within 10 s of the end"),
        }
    }
    for t in tasks {
        t.abort();
    }
    let report = report.unwrap_or(Value::Null);
    let duration_s = duration.unwrap_or(0.0);
    let server_received = if interrupted {
        conn.stats().map_or(0, |s| s.bytes_acked)
    } else {
        report["bytes"].as_u64().unwrap_or(0)
    };
    // The headline: what the server received, or with -R what the client did.
    let bytes = if a.reverse { received } else { server_received };
    let mut streams = Vec::new();
    if let Some(list) = report["streams"].as_array() {
        for e in list {
            streams.push(json!({"id": e[0], "bytes": e[1], "latency_ms": Value::Null}));
        }
    }
    if a.latency_trace.is_some() {
        let mut samples =
            std::mem::take(&mut *latency_samples.lock().unwrap_or_else(|p| p.into_inner()));
        let mut send = std::mem::take(&mut *send_samples.lock().unwrap_or_else(|p| p.into_inner()));
        streams.push(json!({
            "id": LATENCY,
            "bytes": latency_bytes.load(Ordering::Relaxed),
            "latency_ms": latency_json(&mut samples),
            "send_ms": latency_json(&mut send),
        }));
    }
    let mut out = json!({
        "mode": if a.latency_trace.is_some() { "latency" } else { "bulk" },
        "bitrate_bps": a.bitrate,
        "throughput_bps": if duration_s > 0.0 { bytes as f64 * 8.0 / duration_s } else { 0.0 },
        "bytes": bytes,
        "duration_s": duration_s,
        "streams": streams,
        "receive_queue": {"server": report["receive_queue"]},
    });
    if interrupted {
        out["interrupted"] = json!(true);
    }
    Ok(BulkRun {
        out,
        intervals,
        client_sent: sent.load(Ordering::Relaxed),
        client_received: received,
        server_received,
        server_sent: report["sent_bytes"].as_u64().unwrap_or(0),
        seconds: duration_s,
    })
}

/// Bulk mode over every `-P` connection at once; the report sums them
/// (`bytes`, `throughput_bps`, `streams` with a `connection` index) and
/// adds `intervals[]` and `end` (iperf3's sums). O(connections × intervals).
async fn parallel_bulk(
    conns: &[Connection],
    a: &Arc<ClientArgs>,
    classes: Arc<[u8]>,
    reliability: StreamReliability,
    trace: Option<Vec<TraceMessage>>,
) -> Result<Value> {
    // One connection runs on the calling (block_on) thread, as it did
    // before -P: the common case keeps its scheduling.
    if let [conn] = conns {
        let run = bulk_mode(conn.clone(), a.clone(), classes, reliability, trace, 0).await?;
        return Ok(finish_bulk(vec![run], a));
    }
    let handles: Vec<_> = conns
        .iter()
        .enumerate()
        .map(|(k, c)| {
            tokio::spawn(bulk_mode(
                c.clone(),
                a.clone(),
                classes.clone(),
                reliability,
                trace.clone(),
                k,
            ))
        })
        .collect();
    let mut runs = Vec::new();
    for h in handles {
        runs.push(h.await.context("bulk task")??);
    }
    Ok(finish_bulk(runs, a))
}

/// The report of `runs` (one per connection): sums, `intervals[]`, `end`.
/// O(connections × intervals).
fn finish_bulk(runs: Vec<BulkRun>, a: &ClientArgs) -> Value {
    let mut out = runs[0].out.clone();
    if runs.len() > 1 {
        let bytes: u64 = runs
            .iter()
            .map(|r| r.out["bytes"].as_u64().unwrap_or(0))
            .sum();
        let secs = runs.iter().map(|r| r.seconds).fold(0.0, f64::max);
        let mut streams = Vec::new();
        for (k, r) in runs.iter().enumerate() {
            for s in r.out["streams"].as_array().into_iter().flatten() {
                let mut s = s.clone();
                s["connection"] = json!(k);
                streams.push(s);
            }
        }
        out["bytes"] = json!(bytes);
        out["duration_s"] = json!(secs);
        out["throughput_bps"] = json!(if secs > 0.0 {
            bytes as f64 * 8.0 / secs
        } else {
            0.0
        });
        out["streams"] = json!(streams);
        if runs.iter().any(|r| r.out["interrupted"] == json!(true)) {
            out["interrupted"] = json!(true);
        }
    }
    let mut intervals = runs[0].intervals.clone();
    for r in &runs[1..] {
        for (iv, o) in intervals.iter_mut().zip(&r.intervals) {
            iv.add(o);
        }
    }
    let total = |f: fn(&BulkRun) -> u64| runs.iter().map(f).sum::<u64>();
    let secs = runs.iter().map(|r| r.seconds).fold(0.0, f64::max);
    let forward = (
        iperf::sum(total(|r| r.client_sent), secs),
        iperf::sum(total(|r| r.server_received), secs),
    );
    let backward = (
        iperf::sum(total(|r| r.server_sent), secs),
        iperf::sum(total(|r| r.client_received), secs),
    );
    let end = if a.reverse {
        json!({"sum_sent": backward.0, "sum_received": backward.1})
    } else if a.bidir {
        json!({
            "sum_sent": forward.0, "sum_received": forward.1,
            "sum_sent_bidir_reverse": backward.0, "sum_received_bidir_reverse": backward.1,
        })
    } else {
        json!({"sum_sent": forward.0, "sum_received": forward.1})
    };
    out["intervals"] = json!(intervals.iter().map(|i| i.to_json()).collect::<Vec<_>>());
    out["end"] = end;
    out
}

#[cfg(test)]
mod ack_policy_tests {
    use super::*;
    use peregrine_proto::AckPolicy;

    fn args(ack_policy: &str, delayed_ack: Option<Duration>) -> DatagramArgs {
        DatagramArgs {
            ack_policy: ack_policy.to_string(),
            delayed_ack,
            pmtud: "off".to_string(),
            max_datagram: None,
        }
    }

    #[test]
    fn ack_policy_flags_reach_the_config_and_errors_name_the_flag() {
        let mut config = ConnectionConfig::default();
        args("tcp", Some(Duration::from_millis(20)))
            .apply(&mut config)
            .expect("valid");
        assert_eq!(
            config.ack_policy,
            AckPolicy::Tcp {
                delayed_ack: Duration::from_millis(20)
            }
        );
        args("sltp", None).apply(&mut config).expect("valid");
        assert_eq!(config.ack_policy, AckPolicy::Sltp);
        let e = args("quic", None).apply(&mut config).unwrap_err();
        assert!(e.to_string().contains("--ack-policy"), "{e}");
        for (policy, delay) in [("sltp", 40), ("tcp", 500)] {
            let e = args(policy, Some(Duration::from_millis(delay)))
                .apply(&mut config)
                .unwrap_err();
            assert!(e.to_string().contains("--delayed-ack"), "{e}");
        }
    }
}
