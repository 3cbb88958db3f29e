//! `quinn-peer`: the QUIC contender of Peregrine's peer benchmark
//! (`bench/peers.sh`, documented in `docs/performance.md`).
//!
//! One bulk connection over loopback, in the shape of `iperf3` and
//! `peregrine perf`: the client opens one bidirectional stream and writes as
//! fast as quinn accepts for `--duration` seconds, then finishes the stream;
//! the server counts what it read to the end of the stream and answers with
//! the count (8 bytes, big endian), so the client reports bytes the *server*
//! received, divided by the time until that answer arrived.
//!
//! Key choices, all to keep the comparison about the transport:
//! - quinn's defaults (CUBIC, its default windows), one stream, 64 KiB
//!   chunks handed over as `Bytes` (no per-write copy);
//! - a current-thread tokio runtime on each side, like single-threaded
//!   iperf3;
//! - UDP payloads pinned at 1,452 bytes (`UDP_PAYLOAD_BYTES`), the size of
//!   a full Peregrine datagram (`ConnectionConfig::max_packet_size`): quinn
//!   starts at that size (`initial_mtu`, `min_mtu`) and its MTU discovery
//!   is off, so it neither spends its first round trips at 1,200 bytes nor
//!   probes beyond — datagram for datagram the same work as Peregrine's;
//! - a self-signed certificate (rcgen) that the server writes to a file and
//!   the client trusts, so TLS verification runs as in a real deployment.
//!
//! Usage:
//!   quinn-peer server --listen ADDR [--once] [--cert-out FILE]
//!   quinn-peer client --connect ADDR [--duration SECS] [--cert FILE]
//!   quinn-peer idle --connect ADDR [--connections N] [--duration SECS] [--cert FILE]
//!
//! `idle` opens N connections (default 1000) and holds them, without
//! streams, for `--duration`; it prints `{"connections": N}` once all are up.
//!
//! The client prints one JSON object on stdout:
//! `{"throughput_bps": .., "bytes": .., "duration_s": ..}`.

// A benchmark process, not the sans-IO core: it reads the clock and opens
// sockets (the workspace clippy.toml bans apply to cc/proto/sim).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use bytes::Bytes;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error + Send + Sync>;

const DEFAULT_CERT: &str = "/tmp/quinn-peer-cert.der";
const CHUNK_BYTES: usize = 64 * 1024;
/// Every datagram's UDP payload, bytes: Peregrine's default
/// `max_packet_size` (Ethernet's 1,500 minus IPv6 and UDP headers).
const UDP_PAYLOAD_BYTES: u16 = 1452;

/// quinn's transport settings with the datagram size pinned (see the
/// module docs); everything else is quinn's default.
fn transport() -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.initial_mtu(UDP_PAYLOAD_BYTES)
        .min_mtu(UDP_PAYLOAD_BYTES)
        .mtu_discovery_config(None);
    Arc::new(t)
}

fn usage() -> ! {
    eprintln!(
        "usage:\n  quinn-peer server --listen ADDR [--once] [--cert-out FILE]\n  \
         quinn-peer client --connect ADDR [--duration SECS] [--cert FILE]\n  \
         quinn-peer idle --connect ADDR [--connections N] [--duration SECS] [--cert FILE]"
    );
    std::process::exit(2)
}

/// Command-line options (both roles; each uses its own subset).
struct Opts {
    addr: SocketAddr,
    once: bool,
    cert: PathBuf,
    duration: Duration,
    connections: usize,
}

fn parse(args: &[String]) -> Result<Opts, Error> {
    let mut addr = None;
    let mut once = false;
    let mut cert = PathBuf::from(DEFAULT_CERT);
    let mut duration = Duration::from_secs(10);
    let mut connections = 1000;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match a.as_str() {
            "--listen" | "--connect" => addr = Some(value(a)?.parse()?),
            "--once" => once = true,
            "--cert" | "--cert-out" => cert = PathBuf::from(value(a)?),
            "--duration" => {
                let v = value(a)?;
                let secs: f64 = v.trim_end_matches('s').parse()?;
                duration = Duration::from_secs_f64(secs);
            }
            "--connections" => connections = value(a)?.parse()?,
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(Opts {
        addr: addr.ok_or("missing --listen/--connect ADDR")?,
        once,
        cert,
        duration,
        connections,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(role) = args.first() else { usage() };
    let opts = match parse(&args[1..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("quinn-peer: {e}");
            usage()
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread tokio runtime builds");
    let result = match role.as_str() {
        "server" => rt.block_on(server(opts)),
        "client" => rt.block_on(client(opts)),
        "idle" => rt.block_on(idle(opts)),
        _ => usage(),
    };
    if let Err(e) = result {
        eprintln!("quinn-peer {role}: {e}");
        std::process::exit(1);
    }
}

async fn server(opts: Opts) -> Result<(), Error> {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".into()])?;
    let cert_der = certified.cert.der().clone();
    std::fs::write(&opts.cert, cert_der.as_ref())?;
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der());
    let mut config = quinn::ServerConfig::with_single_cert(vec![cert_der], key.into())?;
    config.transport_config(transport());
    let endpoint = quinn::Endpoint::server(config, opts.addr)?;
    eprintln!("quinn-peer server listening on {}", endpoint.local_addr()?);
    while let Some(incoming) = endpoint.accept().await {
        if opts.once {
            report(serve(incoming).await);
            break;
        }
        // Many clients at once (the idle-connection count): one task each.
        tokio::spawn(async move { report(serve(incoming).await) });
    }
    endpoint.wait_idle().await;
    Ok(())
}

/// Serve one connection: count the bulk stream, answer with the count.
/// A connection that never opens a stream (an idle one) ends when closed.
async fn serve(incoming: quinn::Incoming) -> Result<u64, Error> {
    let conn = incoming.await?;
    let (mut send, mut recv) = match conn.accept_bi().await {
        Ok(s) => s,
        Err(quinn::ConnectionError::ApplicationClosed(_)) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let mut total: u64 = 0;
    while let Some(chunk) = recv.read_chunk(usize::MAX, true).await? {
        total += chunk.bytes.len() as u64;
    }
    send.write_all(&total.to_be_bytes()).await?;
    send.finish()?;
    // The client closes once it has read the count.
    conn.closed().await;
    Ok(total)
}

fn report(served: Result<u64, Error>) {
    match served {
        Ok(0) => {}
        Ok(bytes) => eprintln!("quinn-peer server: received {bytes} bytes"),
        Err(e) => eprintln!("quinn-peer server: connection failed: {e}"),
    }
}

/// Open `opts.connections` connections, keep them open (idle) for
/// `opts.duration`, then close them: the server's resident memory while they
/// are open, over their number, is the memory per connection.
async fn idle(opts: Opts) -> Result<(), Error> {
    let endpoint = client_endpoint(&opts)?;
    let mut conns = Vec::with_capacity(opts.connections);
    for _ in 0..opts.connections {
        conns.push(endpoint.connect(opts.addr, "localhost")?.await?);
    }
    println!("{{\"connections\": {}}}", conns.len());
    tokio::time::sleep(opts.duration).await;
    for c in &conns {
        c.close(0u32.into(), b"done");
    }
    endpoint.wait_idle().await;
    Ok(())
}

fn client_endpoint(opts: &Opts) -> Result<quinn::Endpoint, Error> {
    let cert = std::fs::read(&opts.cert)
        .map_err(|e| format!("cannot read {}: {e}", opts.cert.display()))?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from(cert))?;
    let mut config = quinn::ClientConfig::with_root_certificates(Arc::new(roots))?;
    config.transport_config(transport());
    let bind: SocketAddr = if opts.addr.is_ipv6() {
        "[::]:0".parse()?
    } else {
        "0.0.0.0:0".parse()?
    };
    let mut endpoint = quinn::Endpoint::client(bind)?;
    endpoint.set_default_client_config(config);
    Ok(endpoint)
}

async fn client(opts: Opts) -> Result<(), Error> {
    let endpoint = client_endpoint(&opts)?;
    let conn = endpoint.connect(opts.addr, "localhost")?.await?;
    let (mut send, mut recv) = conn.open_bi().await?;
    let chunk = Bytes::from(vec![0u8; CHUNK_BYTES]);
    let start = Instant::now();
    while start.elapsed() < opts.duration {
        send.write_chunk(chunk.clone()).await?;
    }
    send.finish()?;
    let mut answer = [0u8; 8];
    recv.read_exact(&mut answer).await?;
    let secs = start.elapsed().as_secs_f64();
    let bytes = u64::from_be_bytes(answer);
    conn.close(0u32.into(), b"done");
    endpoint.wait_idle().await;
    println!(
        "{{\"throughput_bps\": {:.0}, \"bytes\": {bytes}, \"duration_s\": {secs:.6}}}",
        bytes as f64 * 8.0 / secs
    );
    Ok(())
}
