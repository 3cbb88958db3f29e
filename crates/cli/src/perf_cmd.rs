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
//!   time": send B bytes, the server sends them back, N times.
//!
//! Stream layout (a contract between client and server of the same
//! version): 0 control (`HELLO n`, `DONE` → the server's JSON count), 1
//! whole-message echo, 2 header echo (latency), 16.. bulk. Live progress
//! goes to stderr once a second; the result is a table, or with `--json`
//! only a JSON object on stdout (keys in docs/perf.md).
//!
//! Both sides encrypt by default (Noise handshake, ChaCha20-Poly1305 on
//! every packet; options in [`security`]); `--insecure` runs SLTP's plain
//! wire format. The report states the mode (`security` in the JSON).

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use peregrine::{
    CcConfig, Connection, ConnectionConfig, EndpointBuilder, EndpointConfig, StreamConfig,
    StreamReliability,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

mod parse;
mod report;
mod security;

use parse::{parse_bitrate, parse_duration, parse_scheduler, parse_trace, TraceMessage};
use peregrine_sim::metrics::{quantile, QuantileMethod::RoundedIndex};
use report::{latency_json, table};
use security::SecurityArgs;

const CONTROL: u16 = 0;
const ECHO: u16 = 1;
const LATENCY: u16 = 2;
const BULK_BASE: u16 = 16;
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

/// Arguments of `peregrine perf`.
#[derive(Args, Debug)]
pub struct PerfArgs {
    #[command(subcommand)]
    command: PerfCommand,
}

#[derive(Subcommand, Debug)]
enum PerfCommand {
    /// Accept clients and count, echo or answer what they send.
    Server(ServerArgs),
    /// Measure throughput, message latency or network time against a server.
    Client(ClientArgs),
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
}

#[derive(Args, Debug)]
struct ClientArgs {
    /// The server's address.
    #[arg(long)]
    connect: SocketAddr,
    /// How long bulk (and latency) mode runs, e.g. 10s, 500ms.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    duration: Duration,
    /// Bulk streams.
    #[arg(long, default_value_t = 1)]
    streams: u16,
    /// Stream scheduler: rr, wfq, abs, adaptive[:BPS], edf, aging[:MS].
    #[arg(long, default_value = "rr")]
    scheduler: String,
    /// Congestion controller of the client's sending direction (any registry name).
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Priority classes (0–3) of the bulk streams, comma-separated, cycled.
    #[arg(long, default_value = "2")]
    classes: String,
    /// Reliability of the bulk streams: reliable, unordered, unreliable.
    #[arg(long, default_value = "reliable")]
    reliability: String,
    /// Application-paced target rate of the bulk streams together, e.g.
    /// 100Mbps, 1.5Gbps (bps, kbps, Mbps, Gbps); default: as fast as the
    /// connection goes.
    #[arg(long, value_name = "RATE", value_parser = parse_bitrate)]
    bitrate: Option<u64>,
    /// Print only a JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Replay this message trace on a priority-0 stream beside the bulk streams.
    #[arg(long)]
    latency_trace: Option<std::path::PathBuf>,
    /// Network-time mode: bytes per echoed buffer.
    #[arg(long, requires = "echo_count")]
    echo_size: Option<usize>,
    /// Network-time mode: how many round trips.
    #[arg(long, requires = "echo_size")]
    echo_count: Option<u32>,
    #[command(flatten)]
    security: SecurityArgs,
    /// The server's public key, as a file (`FILE.pub` of `peregrine
    /// keygen`) or 64 hex digits: pins the server (Noise_IK).
    #[arg(long, value_name = "FILE|HEX")]
    peer_key: Option<String>,
}

/// Run `peregrine perf`.
pub fn run(args: PerfArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    match args.command {
        PerfCommand::Server(a) => rt.block_on(server(a)),
        PerfCommand::Client(a) => rt.block_on(client(a)),
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
    let ep = plan
        .apply(EndpointBuilder::new())
        .config(EndpointConfig {
            server: Some(server_config()),
            // The client's --cc also runs the server's (echo) direction.
            adopt_peer_controller: true,
            ..EndpointConfig::default()
        })
        .bind(a.listen)
        .with_context(|| format!("cannot listen on {}", a.listen))?;
    eprintln!("listening on {}", ep.local_addr());
    eprintln!("security: {}", plan.description);
    while let Some(conn) = ep.accept().await {
        let task = tokio::spawn(serve(conn));
        if a.once {
            task.await.context("client task")??;
            break;
        }
    }
    Ok(())
}

/// Serve one client: count bulk bytes (by up-call), echo streams 1 and 2,
/// answer `DONE` with the counts.
async fn serve(conn: Connection) -> Result<()> {
    let peer = conn.remote_address();
    let started = Instant::now();
    let counts: Arc<Mutex<BTreeMap<u16, u64>>> = Arc::default();
    let count = |counts: &Mutex<BTreeMap<u16, u64>>, s: u16, n: usize| {
        let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
        *c.entry(s).or_default() += n as u64;
    };
    while let Some((stream, bytes)) = conn.recv().await {
        match stream {
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
                let c = counts.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let total: u64 = c.values().sum();
                let report = json!({
                    "bytes": total,
                    "streams": c.iter().map(|(s, b)| json!([s, b])).collect::<Vec<_>>(),
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
            ECHO => {
                conn.send(ECHO, bytes).await?;
            }
            LATENCY => {
                conn.send(LATENCY, &bytes[..bytes.len().min(8)]).await?;
            }
            s => count(&counts, s, bytes.len()),
        }
    }
    conn.closed().await;
    Ok(())
}

async fn client(a: ClientArgs) -> Result<()> {
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
    let bind: SocketAddr = if a.connect.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let plan = security::client_plan(&a.security, a.peer_key.as_deref())?;
    let ep = plan.apply(EndpointBuilder::new()).bind(bind)?;
    let config = ConnectionConfig {
        cc,
        scheduler,
        ..server_config()
    };
    let conn = ep
        .connect(a.connect, config)
        .await
        .with_context(|| format!("cannot connect to {}", a.connect))?;
    let mut out = match (a.echo_size, a.echo_count) {
        (Some(size), Some(count)) => echo_mode(&conn, size, count).await?,
        _ => bulk_mode(&conn, &a, &classes, reliability, trace).await?,
    };
    let stats = conn.stats();
    let (pattern, server_key) = (conn.security_pattern(), conn.peer_static_key());
    let probe = stats.as_ref().and_then(|s| s.last_probe).map(|p| {
        json!({
            "rtt_ms": p.latency.as_secs_f64() * 1e3,
            "bandwidth_bps": p.bandwidth_bytes_per_sec.saturating_mul(8),
            "burst_bytes": p.burst_bytes,
        })
    });
    out["probe"] = probe.unwrap_or(Value::Null);
    out["retransmitted_packets"] = json!(stats.as_ref().map_or(0, |s| s.packets_retransmitted));
    out["cc"] = json!(a.cc);
    out["scheduler"] = json!(scheduler.name());
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
    });
    if let Some(s) = &stats {
        out["srtt_ms"] = json!(s.srtt.map(|d| d.as_secs_f64() * 1e3));
        out["packets_lost"] = json!(s.packets_lost);
    }
    // Close gracefully; do not wait forever for a bulk backlog to drain.
    if tokio::time::timeout(Duration::from_secs(5), conn.close())
        .await
        .is_err()
    {
        conn.abort();
    }
    if a.json {
        crate::out(&format!("{out}\n"))?;
    } else {
        crate::out(&table(&out))?;
    }
    Ok(())
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
    let mut times = Vec::new();
    let start = Instant::now();
    for i in 0..count {
        let t0 = Instant::now();
        conn.send(ECHO, &buf).await?;
        loop {
            let (s, b) = conn
                .recv()
                .await
                .ok_or_else(|| anyhow!("the server closed during echo {i}"))?;
            if s == ECHO {
                if b.len() != size {
                    bail!("echo {i}: {} bytes back, {size} sent", b.len());
                }
                break;
            }
        }
        times.push(t0.elapsed().as_secs_f64() * 1e3);
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

async fn bulk_mode(
    conn: &Connection,
    a: &ClientArgs,
    classes: &[u8],
    reliability: StreamReliability,
    trace: Option<Vec<TraceMessage>>,
) -> Result<Value> {
    conn.open_stream(
        CONTROL,
        StreamConfig {
            class: 0,
            ..StreamConfig::default()
        },
    )?;
    conn.send(CONTROL, format!("HELLO {}", a.streams).as_bytes())
        .await?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for i in 0..a.streams {
        let id = BULK_BASE.saturating_add(i);
        conn.open_stream(
            id,
            StreamConfig {
                class: classes[usize::from(i) % classes.len()],
                reliability,
                ..StreamConfig::default()
            },
        )?;
        let (conn, stop) = (conn.clone(), stop.clone());
        // `--bitrate`: each stream sends its share of the rate, one
        // message every `gap`.
        let gap = a.bitrate.map(|bps| message_gap(bps, a.streams));
        tasks.push(tokio::spawn(async move {
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
            }
        }));
    }
    // Latency trace: sent times by sequence number; samples in ms.
    let sent_at: Arc<Mutex<BTreeMap<u32, Instant>>> = Arc::default();
    let latency_bytes = Arc::new(AtomicU64::new(0));
    if let Some(trace) = trace {
        conn.open_stream(
            LATENCY,
            StreamConfig {
                class: 0,
                ..StreamConfig::default()
            },
        )?;
        let (conn, stop, sent_at, lb) = (
            conn.clone(),
            stop.clone(),
            sent_at.clone(),
            latency_bytes.clone(),
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
                    sent_at
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(seq, Instant::now());
                    if conn.send(LATENCY, &msg).await.is_err() {
                        break 'outer;
                    }
                    lb.fetch_add(msg.len() as u64, Ordering::Relaxed);
                    seq = seq.wrapping_add(1);
                }
            }
        }));
    }
    let start = Instant::now();
    let end = start + a.duration;
    let mut tick = tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    let mut samples = Vec::new();
    let mut last_acked = 0u64;
    let mut duration = None;
    let mut report = None;
    let deadline = end + Duration::from_secs(10);
    while report.is_none() {
        tokio::select! {
            m = conn.recv() => {
                let Some((s, b)) = m else { bail!("the server closed the connection") };
                match s {
                    LATENCY if b.len() >= 4 => {
                        let seq = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                        let t = sent_at.lock().unwrap_or_else(|p| p.into_inner()).remove(&seq);
                        if let Some(t) = t {
                            samples.push(t.elapsed().as_secs_f64() * 1e3);
                        }
                    }
                    CONTROL => {
                        report = Some(serde_json::from_slice::<Value>(&b)
                            .context("the server's report is not JSON")?);
                    }
                    _ => {}
                }
            }
            _ = tick.tick(), if duration.is_none() => {
                if let Some(s) = conn.stats() {
                    let rate = (s.bytes_acked - last_acked) as f64 * 8.0;
                    last_acked = s.bytes_acked;
                    eprintln!(
                        "[{:5.1} s] {:9.1} Mbit/s  cwnd {} B  srtt {:.3} ms  retransmitted {}",
                        start.elapsed().as_secs_f64(), rate / 1e6, s.cwnd_bytes,
                        s.srtt.map_or(0.0, |d| d.as_secs_f64() * 1e3), s.packets_retransmitted
                    );
                }
            }
            _ = tokio::time::sleep_until(end), if duration.is_none() => {
                stop.store(true, Ordering::Relaxed);
                duration = Some(start.elapsed().as_secs_f64());
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
    let bytes = report["bytes"].as_u64().unwrap_or(0);
    let mut streams = Vec::new();
    if let Some(list) = report["streams"].as_array() {
        for e in list {
            streams.push(json!({"id": e[0], "bytes": e[1], "latency_ms": Value::Null}));
        }
    }
    if a.latency_trace.is_some() {
        streams.push(json!({
            "id": LATENCY,
            "bytes": latency_bytes.load(Ordering::Relaxed),
            "latency_ms": latency_json(&mut samples),
        }));
    }
    Ok(json!({
        "mode": if a.latency_trace.is_some() { "latency" } else { "bulk" },
        "bitrate_bps": a.bitrate,
        "throughput_bps": if duration_s > 0.0 { bytes as f64 * 8.0 / duration_s } else { 0.0 },
        "bytes": bytes,
        "duration_s": duration_s,
        "streams": streams,
    }))
}
