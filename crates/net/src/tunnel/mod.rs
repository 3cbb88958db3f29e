//! # The tunnel: local UDP and TCP ports over prioritized streams
//!
//! Unmodified programs — a ground station speaking MAVLink over UDP, an
//! RTSP camera, SSH — ride one Peregrine connection. The **client** side
//! listens on local ports (`-L PROTO:LOCAL_PORT:TARGET_HOST:TARGET_PORT`);
//! each UDP source address and each accepted TCP connection becomes a
//! *flow* with its own stream, carrying its forward's class, reliability
//! and deadline. The **server** side opens the flow towards its target
//! (only targets on its allow list, when it has one) and carries replies
//! back on the same stream number.
//!
//! * UDP: one datagram is one message, boundaries kept; the client
//!   remembers each flow's source address, so replies return to the port
//!   that sent. Idle flows time out ([`TunnelConfig::udp_idle_timeout`]).
//! * TCP: one reliable, ordered stream per connection; half-close is
//!   carried in-band (a FIN marker after the last byte), a failure as a
//!   RESET marker; when the tunnel connection dies, both ends reset their
//!   local TCP connections (never a clean close: a cut transfer cannot
//!   pass for a complete one).
//! * The control stream (stream 0, class 0, reliable) carries `OPEN`,
//!   `OPENED`, `REFUSED` (why, in words) and `CLOSE` ([`wire`]).
//!
//! `docs/tunnel.md` describes the semantics, the defaults and the measured
//! MAVLink case. The tunnel's tasks run on the caller's tokio runtime.

mod client;
mod pump;
mod server;
pub mod spec;
pub mod stats;
pub mod wire;

pub use spec::{FlowProto, ForwardSpec, SpecError, MAVLINK_DEADLINE, MAVLINK_PORT};
pub use stats::{FlowInfo, FlowState, TunnelStats};

use crate::{Endpoint, Error};
use peregrine_proto::{ConnectionConfig, SchedulerConfig};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// Largest tunnel message (128 KiB): a whole UDP datagram (at most
/// 65,507 bytes) and its record header always fit, so no datagram is ever
/// cut or split into two messages.
pub const MAX_TUNNEL_MESSAGE: usize = 128 << 10;

/// How a tunnel side behaves. `Default` is what `peregrine tunnel` uses.
#[derive(Clone, Debug)]
pub struct TunnelConfig {
    /// Client: the address local listeners bind to (default 127.0.0.1, as
    /// `ssh -L`: other hosts cannot use the forward).
    pub bind_ip: IpAddr,
    /// Server: the targets clients may reach, `HOST:PORT` or `HOST:*`;
    /// `None`: any target.
    pub allow: Option<Vec<String>>,
    /// A UDP flow with no datagram either way for this long is closed
    /// (default 60 s); the next datagram from its address opens a new one.
    pub udp_idle_timeout: Duration,
    /// Most open flows per tunnel connection (default 256); beyond it a
    /// new TCP connection is reset and a new UDP source is dropped
    /// (client: counted as turned away; server: refused).
    pub max_flows: usize,
    /// Client: longest wait for the server's handshake; server: longest
    /// wait for a target's TCP connect or name resolution (default 5 s).
    pub connect_timeout: Duration,
    /// Client: longest wait for the server's `OPENED` / `REFUSED`
    /// (default 10 s).
    pub open_timeout: Duration,
    /// Client: pause between reconnection attempts after the connection
    /// ended (default 1 s).
    pub reconnect_delay: Duration,
    /// Bytes read from a TCP socket per message (default 16 KiB).
    pub tcp_chunk_bytes: usize,
    /// Send buffer of a TCP flow's stream (default 1 MiB).
    pub tcp_stream_buffer_bytes: usize,
    /// Send buffer of a UDP flow's stream (default 128 KiB, about one
    /// second at 1 Mbit/s): datagrams beyond it are dropped, not queued.
    pub udp_stream_buffer_bytes: usize,
}

impl Default for TunnelConfig {
    fn default() -> Self {
        TunnelConfig {
            bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            allow: None,
            udp_idle_timeout: Duration::from_secs(60),
            max_flows: 256,
            connect_timeout: Duration::from_secs(5),
            open_timeout: Duration::from_secs(10),
            reconnect_delay: Duration::from_secs(1),
            tcp_chunk_bytes: 16 << 10,
            tcp_stream_buffer_bytes: 1 << 20,
            udp_stream_buffer_bytes: 128 << 10,
        }
    }
}

/// WFQ weight of a flow's stream by its class: 1000, 100, 10, 1 for
/// classes 0–3. Between classes a tenfold share per step (class 0 against
/// class 2 is 100 : 1, which is priority in all but name for control
/// traffic), and flows of one class share fairly — absolute priority
/// (`abs`) would let the first bulk flow of a class starve every later
/// one of the same class until it ran dry.
pub fn class_weight(class: u8) -> u32 {
    match class {
        0 => 1000,
        1 => 100,
        2 => 10,
        _ => 1,
    }
}

/// The connection settings a tunnel side should use: weighted fair
/// queuing with [`class_weight`] (so class 0 goes first), the queue guard of
/// `docs/protocol.md` §10.2 (`queue_guard`: keep the tunnel's own bulk
/// backlog out of the bottleneck queue while class-0 flows are active),
/// messages up to [`MAX_TUNNEL_MESSAGE`], and the handshake bounded by
/// `handshake_timeout`.
pub fn connection_config(
    queue_guard: Option<Duration>,
    handshake_timeout: Duration,
) -> ConnectionConfig {
    ConnectionConfig {
        scheduler: SchedulerConfig::Wfq,
        // A dead peer noticed within 15 s even when no flow is sending
        // (the runtime's 30 s is long for an operator waiting on a link);
        // keep-alives every 2 s keep a quiet but live tunnel open.
        keep_alive_interval: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(15),
        queue_guard,
        max_message_size: MAX_TUNNEL_MESSAGE,
        handshake_timeout,
        ..ConnectionConfig::default()
    }
}

/// Something a tunnel side wants its operator to know (`Display`: one
/// line, in words).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TunnelEvent {
    /// Client: connected to the server (`connection` counts from 1).
    Connected {
        /// The server.
        server: SocketAddr,
        /// 1 for the first connection, 2 after one reconnection, ….
        connection: u64,
    },
    /// Client: the server could not be reached.
    ConnectFailed {
        /// The server.
        server: SocketAddr,
        /// Why.
        error: String,
    },
    /// Client: the connection ended; flows were reset, a reconnection follows.
    Disconnected {
        /// Why.
        reason: String,
    },
    /// Server: a client connected.
    ClientConnected {
        /// Its address.
        peer: SocketAddr,
    },
    /// Server: a client's connection ended.
    ClientDisconnected {
        /// Its address.
        peer: SocketAddr,
        /// Why.
        reason: String,
    },
    /// A flow is open end to end.
    FlowOpened {
        /// The flow's number on this side.
        id: u64,
        /// UDP or TCP.
        proto: FlowProto,
        /// Client: the local application's address; server: the client's.
        peer: String,
        /// `HOST:PORT`.
        target: String,
    },
    /// The server refused a flow, or could not reach its target.
    FlowRefused {
        /// The flow's number on this side.
        id: u64,
        /// UDP or TCP.
        proto: FlowProto,
        /// `HOST:PORT`.
        target: String,
        /// Why, in words.
        reason: String,
    },
    /// A flow ended.
    FlowClosed {
        /// The flow's number on this side.
        id: u64,
        /// Why: `finished`, `idle`, `reset`, `tunnel closed: …`.
        reason: String,
    },
}

impl fmt::Display for TunnelEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunnelEvent::Connected { server, connection } => {
                write!(f, "connected to {server} (connection {connection})")
            }
            TunnelEvent::ConnectFailed { server, error } => {
                write!(f, "cannot reach the tunnel server {server}: {error}")
            }
            TunnelEvent::Disconnected { reason } => {
                write!(
                    f,
                    "tunnel connection lost ({reason}); flows reset, reconnecting"
                )
            }
            TunnelEvent::ClientConnected { peer } => write!(f, "client {peer} connected"),
            TunnelEvent::ClientDisconnected { peer, reason } => {
                write!(f, "client {peer} disconnected ({reason})")
            }
            TunnelEvent::FlowOpened {
                id,
                proto,
                peer,
                target,
            } => write!(f, "flow {id}: {proto} {peer} -> {target} open"),
            TunnelEvent::FlowRefused {
                id,
                proto,
                target,
                reason,
            } => write!(f, "flow {id}: {proto} to {target} refused: {reason}"),
            TunnelEvent::FlowClosed { id, reason } => write!(f, "flow {id}: closed ({reason})"),
        }
    }
}

/// Most events queued for [`Tunnel::next_event`]; beyond, the newest are
/// dropped and counted.
pub const TUNNEL_EVENT_QUEUE: usize = 1024;

/// What both sides share: flows, events, counters.
pub(crate) struct Shared {
    pub role: &'static str,
    pub address: String,
    pub config: TunnelConfig,
    pub registry: stats::Registry,
    pub connections: AtomicU64,
    pub connected: AtomicBool,
    /// Server: clients connected now.
    pub live: AtomicU64,
    pub turned_away: AtomicU64,
    pub events_dropped: AtomicU64,
    events: mpsc::Sender<TunnelEvent>,
    /// Every task of this side: aborted together when the tunnel is dropped.
    tasks: Mutex<tokio::task::JoinSet<()>>,
    stopped: AtomicBool,
}

impl Shared {
    /// Run `fut` as one of this side's tasks (reaping finished ones).
    pub fn spawn<F>(&self, fut: F) -> tokio::task::AbortHandle
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let mut set = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        while set.try_join_next().is_some() {}
        let h = set.spawn(fut);
        if self.stopped.load(Relaxed) {
            h.abort();
        }
        h
    }

    /// Abort every task (open TCP flows reset their sockets).
    fn stop(&self) {
        self.stopped.store(true, Relaxed);
        self.tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .abort_all();
    }

    pub fn event(&self, e: TunnelEvent) {
        tracing::debug!(role = self.role, "{e}");
        if self.events.try_send(e).is_err() {
            self.events_dropped.fetch_add(1, Relaxed);
        }
    }
}

/// Why a tunnel could not start; the text says what to change.
#[derive(Debug, thiserror::Error)]
pub enum TunnelError {
    /// A local port could not be bound.
    #[error("-L {forward}: cannot listen on {addr}: {source}")]
    Bind {
        /// The forward.
        forward: String,
        /// The address.
        addr: SocketAddr,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The server could not be reached (first connection).
    #[error("cannot reach the tunnel server {server}: {error}")]
    Connect {
        /// The server.
        server: SocketAddr,
        /// Why.
        error: String,
    },
    /// An `--allow` entry cannot be used.
    #[error("--allow {entry}: {what}")]
    Allow {
        /// The entry.
        entry: String,
        /// What is wrong.
        what: String,
    },
    /// No forwards were given.
    #[error("-L: give at least one forward (e.g. -L udp:14550:127.0.0.1:14550)")]
    NoForwards,
    /// The endpoint failed.
    #[error(transparent)]
    Endpoint(#[from] Error),
}

/// One side of a tunnel; dropping it stops its tasks (open flows are
/// reset).
pub struct Tunnel {
    shared: Arc<Shared>,
    events: tokio::sync::Mutex<mpsc::Receiver<TunnelEvent>>,
    local: Vec<(ForwardSpec, SocketAddr)>,
    endpoint: Arc<Endpoint>,
    client_conn: Option<Arc<Mutex<Option<crate::Connection>>>>,
}

impl fmt::Debug for Tunnel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tunnel")
            .field("role", &self.shared.role)
            .field("address", &self.shared.address)
            .finish()
    }
}

impl Tunnel {
    fn shared(
        role: &'static str,
        address: String,
        config: TunnelConfig,
    ) -> (Arc<Shared>, mpsc::Receiver<TunnelEvent>) {
        let (tx, rx) = mpsc::channel(TUNNEL_EVENT_QUEUE);
        (
            Arc::new(Shared {
                role,
                address,
                config,
                registry: stats::Registry::default(),
                connections: AtomicU64::new(0),
                connected: AtomicBool::new(false),
                live: AtomicU64::new(0),
                turned_away: AtomicU64::new(0),
                events_dropped: AtomicU64::new(0),
                events: tx,
                tasks: Mutex::new(tokio::task::JoinSet::new()),
                stopped: AtomicBool::new(false),
            }),
            rx,
        )
    }

    /// The client side: bind every forward's local port on
    /// `config.bind_ip`, connect to `server` over `endpoint` with
    /// `connection` (see [`connection_config`]), and carry flows until
    /// dropped. Returns once the first connection is up; an unreachable
    /// server is an error after `connection.handshake_timeout`. Later
    /// losses of the connection reconnect by themselves
    /// ([`TunnelEvent::Disconnected`]). Needs a tokio runtime.
    pub async fn client(
        endpoint: Endpoint,
        server: SocketAddr,
        connection: ConnectionConfig,
        forwards: Vec<ForwardSpec>,
        config: TunnelConfig,
    ) -> Result<Tunnel, TunnelError> {
        if forwards.is_empty() {
            return Err(TunnelError::NoForwards);
        }
        let (shared, rx) = Tunnel::shared("client", server.to_string(), config);
        let endpoint = Arc::new(endpoint);
        let c = client::Client::start(
            shared.clone(),
            endpoint.clone(),
            server,
            connection,
            forwards,
        )
        .await?;
        Ok(Tunnel {
            shared,
            events: tokio::sync::Mutex::new(rx),
            local: c.local,
            endpoint,
            client_conn: Some(c.conn),
        })
    }

    /// The server side: accept tunnel clients on `endpoint` (built as a
    /// server, with [`connection_config`] as its connection settings) and
    /// open their flows, within `config.allow`. Needs a tokio runtime.
    pub async fn server(endpoint: Endpoint, config: TunnelConfig) -> Result<Tunnel, TunnelError> {
        let allow = server::AllowList::resolve(config.allow.as_deref()).await?;
        let (shared, rx) = Tunnel::shared("server", endpoint.local_addr().to_string(), config);
        let endpoint = Arc::new(endpoint);
        shared.spawn(server::run(
            shared.clone(),
            endpoint.clone(),
            Arc::new(allow),
        ));
        Ok(Tunnel {
            shared,
            events: tokio::sync::Mutex::new(rx),
            local: Vec::new(),
            endpoint,
            client_conn: None,
        })
    }

    /// Client: each forward with the local address it listens on (the
    /// port chosen when the forward said 0).
    pub fn local_addrs(&self) -> &[(ForwardSpec, SocketAddr)] {
        &self.local
    }

    /// The endpoint the tunnel runs on.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Client: the current connection to the server, if up.
    pub fn connection(&self) -> Option<crate::Connection> {
        self.client_conn
            .as_ref()
            .and_then(|c| c.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }

    /// The flow table now (O(flows)).
    pub fn stats(&self) -> TunnelStats {
        let (flows, closed_flows, refused_flows) = self.shared.registry.snapshot();
        TunnelStats {
            role: self.shared.role,
            connected: self.shared.connected.load(Relaxed) || self.shared.live.load(Relaxed) > 0,
            address: self.shared.address.clone(),
            connections: self.shared.connections.load(Relaxed),
            flows,
            closed_flows,
            refused_flows,
            turned_away: self.shared.turned_away.load(Relaxed),
        }
    }

    /// The next event; `None` once the tunnel stopped.
    pub async fn next_event(&self) -> Option<TunnelEvent> {
        self.events.lock().await.recv().await
    }

    /// Events dropped because nobody read them (the queue holds
    /// [`TUNNEL_EVENT_QUEUE`]).
    pub fn events_dropped(&self) -> u64 {
        self.shared.events_dropped.load(Relaxed)
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.shared.stop();
        // A dropped server takes no new clients (they would wait in the
        // endpoint's queue with nobody to serve them).
        self.endpoint.stop_accepting();
    }
}
