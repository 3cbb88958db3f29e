//! `peregrine-idle`: memory per idle connection on one Peregrine endpoint,
//! for the peer benchmark (`bench/peers.sh`, `docs/performance.md`).
//!
//! `peregrine-idle server --listen ADDR` accepts connections and keeps every
//! one open (no streams, no data) until killed; the script reads its
//! resident memory from /proc before and while the connections are open.
//! `peregrine-idle client --connect ADDR [--connections N] [--duration SECS]`
//! opens N connections (default 1000) from one client endpoint, one after
//! another, holds them idle for SECS (default 3), closes them, and prints
//! `{"connections": N, "client_rss_before_kib": .., "client_rss_open_kib": ..}`
//! (its own resident memory before the first and with all N open).
//!
//! Written against the `peregrine` crate's public API only: `Endpoint::server`,
//! `Endpoint::client`, `connect`, `accept`, `close`, with default
//! `ConnectionConfig`s, so the figure is what an application pays per peer.
//! The endpoints keep their default `EndpointConfig` too: since issue 20
//! its connection limit is 65,535 (the 16-bit connection ids), so 10,000
//! connections need no override (the former default refused more than
//! 1,024). The prints happen once every connection is open: `bench/peers.sh`
//! times `open_s` up to the first line.

// A benchmark process, not the sans-IO core: it reads the clock and opens
// sockets (the workspace clippy.toml bans apply to cc/proto/sim).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use peregrine::{ConnectionConfig, Endpoint};
use std::net::SocketAddr;
use std::time::Duration;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn usage() -> ! {
    eprintln!(
        "usage:\n  peregrine-idle server --listen ADDR\n  \
         peregrine-idle client --connect ADDR [--connections N] [--duration SECS]"
    );
    std::process::exit(2)
}

/// Resident set size of this process, KiB (0 if /proc is unreadable).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

struct Opts {
    addr: SocketAddr,
    connections: usize,
    duration: Duration,
}

fn parse(args: &[String]) -> Result<Opts, Error> {
    let (mut addr, mut connections, mut duration) = (None, 1000, Duration::from_secs(3));
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        match a.as_str() {
            "--listen" | "--connect" => addr = Some(value()?.parse()?),
            "--connections" => connections = value()?.parse()?,
            "--duration" => {
                duration = Duration::from_secs_f64(value()?.trim_end_matches('s').parse()?)
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(Opts {
        addr: addr.ok_or("missing --listen/--connect ADDR")?,
        connections,
        duration,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(role) = args.first() else { usage() };
    let opts = parse(&args[1..]).unwrap_or_else(|e| {
        eprintln!("peregrine-idle: {e}");
        usage()
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread tokio runtime builds");
    let result = match role.as_str() {
        "server" => rt.block_on(server(opts)),
        "client" => rt.block_on(client(opts)),
        _ => usage(),
    };
    if let Err(e) = result {
        eprintln!("peregrine-idle {role}: {e}");
        std::process::exit(1);
    }
}

async fn server(opts: Opts) -> Result<(), Error> {
    let endpoint = Endpoint::server(opts.addr, ConnectionConfig::default())?;
    eprintln!(
        "peregrine-idle server listening on {}",
        endpoint.local_addr()
    );
    let mut open = Vec::new();
    while let Some(conn) = endpoint.accept().await {
        open.push(conn);
    }
    Ok(())
}

async fn client(opts: Opts) -> Result<(), Error> {
    let bind: SocketAddr = if opts.addr.is_ipv6() {
        "[::]:0".parse()?
    } else {
        "0.0.0.0:0".parse()?
    };
    let endpoint = Endpoint::client(bind)?;
    let before = rss_kib();
    let mut conns = Vec::with_capacity(opts.connections);
    for _ in 0..opts.connections {
        conns.push(
            endpoint
                .connect(opts.addr, ConnectionConfig::default())
                .await?,
        );
    }
    let open = rss_kib();
    println!(
        "{{\"connections\": {}, \"client_rss_before_kib\": {before}, \"client_rss_open_kib\": {open}}}",
        conns.len()
    );
    tokio::time::sleep(opts.duration).await;
    for c in &conns {
        c.close().await;
    }
    Ok(())
}
