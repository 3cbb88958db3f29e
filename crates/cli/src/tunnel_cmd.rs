//! `peregrine tunnel server|client`: parses, starts a `peregrine::Tunnel`,
//! prints its events (stderr) and its flow table (stdout: a table, or one
//! JSON object per line with `--json`). docs/tunnel.md is the manual.

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use peregrine::tunnel::{self, spec::parse_duration, ForwardSpec, TunnelConfig};
use peregrine::{EndpointBuilder, Tunnel};
use peregrine_perf::interrupted;
use peregrine_perf::security::{self, SecurityArgs};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// `peregrine tunnel`.
#[derive(Args, Debug)]
pub struct TunnelArgs {
    #[command(subcommand)]
    command: TunnelCommand,
}

#[derive(Subcommand, Debug)]
enum TunnelCommand {
    /// Accept tunnel clients and open their flows towards the targets.
    Server(ServerArgs),
    /// Carry local UDP and TCP ports to a tunnel server (-L, repeatable).
    Client(ClientArgs),
}

/// Options both sides share.
#[derive(Args, Debug)]
struct Common {
    /// Print the flow table as one JSON object per line.
    #[arg(long)]
    json: bool,
    /// How often the flow table is printed (e.g. 1s); 0: only at exit.
    #[arg(long, default_value = "1s", value_parser = duration)]
    interval: Duration,
    /// Stop after this long (e.g. 30s), printing the final table; default: until ^C / SIGTERM.
    #[arg(long, value_parser = duration)]
    duration: Option<Duration>,
    /// Most open flows per tunnel connection.
    #[arg(long, default_value_t = 256)]
    max_flows: usize,
    /// A UDP flow idle this long is closed.
    #[arg(long, default_value = "60s", value_parser = duration)]
    udp_idle: Duration,
    /// Queue guard of this side's sending direction (docs/protocol.md
    /// §10.2): while class-0 flows send, keep the tunnel's own standing
    /// queue at most DELAY above min RTT; `off` disables it.
    #[arg(long, default_value = "10ms", value_name = "DELAY|off")]
    queue_guard: String,
    #[command(flatten)]
    security: SecurityArgs,
}

#[derive(Args, Debug)]
struct ServerArgs {
    /// Address to listen on, e.g. 0.0.0.0:4433.
    #[arg(long)]
    listen: SocketAddr,
    /// Targets clients may reach: HOST:PORT or HOST:*, comma-separated
    /// (repeatable); default: any.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT,…")]
    allow: Vec<String>,
    /// Accept only the client keys listed in FILE.
    #[arg(long, value_name = "FILE")]
    authorized_keys: Option<std::path::PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct ClientArgs {
    /// The tunnel server: HOST[:PORT] (port default 4433).
    #[arg(short = 'c', long, value_name = "HOST[:PORT]")]
    connect: String,
    /// PROTO:LOCAL_PORT:TARGET_HOST:TARGET_PORT[,class=N][,reliability=reliable|unordered|unreliable][,deadline=DUR]
    #[arg(short = 'L', required = true, value_name = "FORWARD")]
    forward: Vec<String>,
    /// Address the local ports listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// The server's public key (file or 64 hex digits): pins it (Noise_IK).
    #[arg(long, value_name = "FILE|HEX")]
    peer_key: Option<String>,
    #[command(flatten)]
    common: Common,
}

fn duration(s: &str) -> Result<Duration, String> {
    match s {
        "0" => Ok(Duration::ZERO),
        _ => parse_duration(s).ok_or_else(|| format!("`{s}` is not a duration (e.g. 500ms, 2s)")),
    }
}

impl Common {
    fn queue_guard(&self) -> Result<Option<Duration>> {
        match self.queue_guard.as_str() {
            "off" => Ok(None),
            s => match parse_duration(s) {
                Some(d) if !d.is_zero() => Ok(Some(d)),
                _ => bail!("--queue-guard: `{s}` is not a positive duration or `off`"),
            },
        }
    }

    fn config(&self) -> Result<TunnelConfig> {
        if self.max_flows == 0 {
            bail!("--max-flows: must be at least 1");
        }
        if self.udp_idle.is_zero() {
            bail!("--udp-idle: must be above zero");
        }
        Ok(TunnelConfig {
            max_flows: self.max_flows,
            udp_idle_timeout: self.udp_idle,
            ..TunnelConfig::default()
        })
    }
}

/// Run `peregrine tunnel`.
pub fn run(args: TunnelArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    rt.block_on(async {
        match args.command {
            TunnelCommand::Server(a) => server(a).await,
            TunnelCommand::Client(a) => client(a).await,
        }
    })
}

async fn server(a: ServerArgs) -> Result<()> {
    let plan = security::server_plan(&a.common.security, a.authorized_keys.as_deref())?;
    let cfg = TunnelConfig {
        allow: (!a.allow.is_empty()).then_some(a.allow.clone()),
        ..a.common.config()?
    };
    let conn = tunnel::connection_config(a.common.queue_guard()?, cfg.connect_timeout);
    let ep = plan
        .apply(EndpointBuilder::new())
        .server(conn)
        .bind(a.listen)
        .with_context(|| format!("--listen {}: cannot bind", a.listen))?;
    eprintln!(
        "tunnel server on {} ({}); targets allowed: {}",
        ep.local_addr(),
        plan.description,
        if a.allow.is_empty() {
            "any".to_string()
        } else {
            a.allow.join(",")
        }
    );
    let t = Tunnel::server(ep, cfg).await?;
    report(&t, &a.common).await
}

async fn client(a: ClientArgs) -> Result<()> {
    let forwards = a
        .forward
        .iter()
        .map(|f| f.parse::<ForwardSpec>())
        .collect::<Result<Vec<_>, _>>()?;
    let server = resolve(&a.connect).await?;
    let plan = security::client_plan(&a.common.security, a.peer_key.as_deref())?;
    let cfg = TunnelConfig {
        bind_ip: a.bind,
        ..a.common.config()?
    };
    let conn = tunnel::connection_config(a.common.queue_guard()?, cfg.connect_timeout);
    let bind: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let ep = plan.apply(EndpointBuilder::new()).bind(bind)?;
    let t = Tunnel::client(ep, server, conn, forwards, cfg).await?;
    eprintln!("tunnel client connected to {server} ({})", plan.description);
    for (f, addr) in t.local_addrs() {
        eprintln!("  {addr} -> {f}");
    }
    report(&t, &a.common).await
}

/// HOST[:PORT] → the first address it resolves to.
async fn resolve(spec: &str) -> Result<SocketAddr> {
    let (host, port) = match tunnel::spec::split_host_port(spec) {
        Some((h, p)) => (h.to_string(), p),
        None if !spec.contains(':') || spec.starts_with('[') => {
            (spec.trim_matches(['[', ']']).to_string(), 4433)
        }
        None => bail!("--connect: `{spec}` is not HOST[:PORT]"),
    };
    let first = tokio::net::lookup_host((host.as_str(), port))
        .await
        .with_context(|| format!("--connect: cannot resolve {host}"))?
        .next();
    first.ok_or_else(|| anyhow!("--connect: {host} has no address"))
}

/// Print events as they come and the table every interval, until the
/// duration passes or a signal arrives; then the final table.
async fn report(t: &Tunnel, c: &Common) -> Result<()> {
    let print = |t: &Tunnel| {
        let s = t.stats();
        let text = if c.json {
            format!("{}\n", s.to_json())
        } else {
            format!("{s}\n")
        };
        crate::out(&text)
    };
    let stop = async {
        match c.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stop);
    let signal = interrupted();
    tokio::pin!(signal);
    let period = if c.interval.is_zero() {
        Duration::from_secs(3600)
    } else {
        c.interval
    };
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = &mut signal => break,
            Some(e) = t.next_event() => eprintln!("{e}"),
            _ = tick.tick(), if !c.interval.is_zero() => print(t)?,
        }
    }
    print(t)
}
