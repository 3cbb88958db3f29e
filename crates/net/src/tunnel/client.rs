//! The client side: local listeners, the connection to the server
//! (reconnected when lost), flows opened on demand.

use super::pump;
use super::stats::{Flow, FlowState, NewFlow};
use super::wire::{Control, OpenFlow, CONTROL_STREAM};
use super::{FlowProto, ForwardSpec, Shared, TunnelError, TunnelEvent};
use crate::{Connection, Endpoint, StreamConfig};
use bytes::Bytes;
use peregrine_proto::ConnectionConfig;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::oneshot;

/// The first stream a flow may use, and one past the last (the group
/// stream 0xFFF0 and above stay free).
const FIRST_FLOW_STREAM: u16 = 1;
const END_FLOW_STREAM: u16 = 0xFFF0;
/// How long a refused UDP source is not retried.
const REFUSED_HOLD: Duration = Duration::from_secs(5);
/// Quiet time that ends the drain of a closed flow's stream.
const DRAIN_QUIET: Duration = Duration::from_secs(3);

/// One connection to the server and what belongs to it.
pub(crate) struct Session {
    pub conn: Connection,
    pub number: u64,
    streams: Mutex<StreamAlloc>,
    pending: Mutex<BTreeMap<u16, oneshot::Sender<Result<(), String>>>>,
    flows: Mutex<BTreeMap<u16, Arc<Flow>>>,
}

struct StreamAlloc {
    next: u16,
    in_use: BTreeSet<u16>,
}

impl Session {
    /// A free stream number (O(log n) amortized), or `None` when all are in use.
    fn alloc(&self) -> Option<u16> {
        let mut a = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        for _ in FIRST_FLOW_STREAM..END_FLOW_STREAM {
            let s = a.next;
            a.next = if s + 1 >= END_FLOW_STREAM {
                FIRST_FLOW_STREAM
            } else {
                s + 1
            };
            if a.in_use.insert(s) {
                return Some(s);
            }
        }
        None
    }

    fn release(&self, s: u16) {
        self.streams
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .in_use
            .remove(&s);
        self.flows
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&s);
    }

    fn flow_count(&self) -> usize {
        self.flows.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    async fn control(&self, c: Control) -> bool {
        self.conn.send(CONTROL_STREAM, c.encode()).await.is_ok()
    }

    /// Register a flow on a new stream and send its `OPEN`.
    async fn open(
        self: &Arc<Session>,
        shared: &Shared,
        spec: &ForwardSpec,
        peer: SocketAddr,
    ) -> Result<(u16, Arc<Flow>, oneshot::Receiver<Result<(), String>>), &'static str> {
        if self.flow_count() >= shared.config.max_flows {
            return Err("flow limit reached");
        }
        let stream = self.alloc().ok_or("no free stream")?;
        let buffer = match spec.proto {
            FlowProto::Tcp => shared.config.tcp_stream_buffer_bytes,
            FlowProto::Udp => shared.config.udp_stream_buffer_bytes,
        };
        let cfg = StreamConfig {
            class: spec.class,
            weight: super::class_weight(spec.class),
            reliability: spec.reliability,
            max_buffered_bytes: buffer,
        };
        if self.conn.open_stream(stream, cfg).is_err() {
            self.release(stream);
            return Err("the connection refused the stream");
        }
        let flow = shared.registry.add(NewFlow {
            stream,
            proto: spec.proto,
            peer: peer.to_string(),
            target: &spec.target,
            class: spec.class,
            reliability: spec.reliability,
            deadline: spec.deadline,
        });
        self.flows
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(stream, flow.clone());
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(stream, tx);
        let sent = self
            .control(Control::Open(OpenFlow {
                stream,
                proto: spec.proto,
                class: spec.class,
                reliability: spec.reliability,
                deadline: spec.deadline,
                target: spec.target.clone(),
            }))
            .await;
        if !sent {
            shared
                .registry
                .finish(&flow, FlowState::Closed("tunnel closed".into()));
            self.release(stream);
            return Err("the tunnel connection closed");
        }
        Ok((stream, flow, rx))
    }
}

type SessionSlot = Arc<Mutex<Option<Arc<Session>>>>;

fn current(slot: &SessionSlot) -> Option<Arc<Session>> {
    slot.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

pub(crate) struct Client {
    pub local: Vec<(ForwardSpec, SocketAddr)>,
    pub conn: Arc<Mutex<Option<Connection>>>,
}

impl Client {
    pub async fn start(
        shared: Arc<Shared>,
        endpoint: Arc<Endpoint>,
        server: SocketAddr,
        connection: ConnectionConfig,
        forwards: Vec<ForwardSpec>,
    ) -> Result<Client, TunnelError> {
        let slot: SessionSlot = Arc::new(Mutex::new(None));
        let conn_slot: Arc<Mutex<Option<Connection>>> = Arc::new(Mutex::new(None));
        let mut local = Vec::new();
        // Bind every local port first: a port in use is reported before
        // anything else happens.
        let mut tcp = Vec::new();
        let mut udp = Vec::new();
        for spec in forwards {
            let addr = SocketAddr::new(shared.config.bind_ip, spec.local_port);
            let bind_err = |source| TunnelError::Bind {
                forward: spec.to_string(),
                addr,
                source,
            };
            match spec.proto {
                FlowProto::Tcp => {
                    let l = TcpListener::bind(addr).await.map_err(bind_err)?;
                    local.push((spec.clone(), l.local_addr().map_err(bind_err)?));
                    tcp.push((spec, l));
                }
                FlowProto::Udp => {
                    let s = UdpSocket::bind(addr).await.map_err(bind_err)?;
                    local.push((spec.clone(), s.local_addr().map_err(bind_err)?));
                    udp.push((spec, s));
                }
            }
        }
        // The first connection: its failure is the caller's error.
        let first = endpoint.connect(server, connection.clone()).await;
        let conn = match first {
            Ok(c) => c,
            Err(e) => {
                return Err(TunnelError::Connect {
                    server,
                    error: connect_error(&e),
                })
            }
        };
        // Installed before returning: a flow that arrives at once finds it.
        let first = install(&shared, server, &slot, &conn_slot, conn);
        shared.spawn(supervise(
            shared.clone(),
            endpoint,
            server,
            connection,
            slot.clone(),
            conn_slot.clone(),
            first,
        ));
        for (spec, l) in tcp {
            shared.spawn(tcp_forward(shared.clone(), slot.clone(), spec, l));
        }
        for (spec, s) in udp {
            shared.spawn(udp_forward(shared.clone(), slot.clone(), spec, s));
        }
        Ok(Client {
            local,
            conn: conn_slot,
        })
    }
}

/// The runtime's words for a failed handshake (they already say what to
/// check: `no answer to the handshake: check the address and port, …`).
fn connect_error(e: &crate::Error) -> String {
    e.to_string()
}

/// Make `conn` the current session: its control stream configured, the
/// slots filled (so a flow that arrives next finds it), `Connected` said.
fn install(
    shared: &Shared,
    server: SocketAddr,
    slot: &SessionSlot,
    conn_slot: &Mutex<Option<Connection>>,
    conn: Connection,
) -> Arc<Session> {
    let number = shared.connections.fetch_add(1, Relaxed) + 1;
    let control = StreamConfig {
        class: 0,
        weight: super::class_weight(0),
        ..StreamConfig::default()
    };
    let _ = conn.open_stream(CONTROL_STREAM, control);
    let session = Arc::new(Session {
        conn: conn.clone(),
        number,
        streams: Mutex::new(StreamAlloc {
            next: FIRST_FLOW_STREAM,
            in_use: BTreeSet::new(),
        }),
        pending: Mutex::new(BTreeMap::new()),
        flows: Mutex::new(BTreeMap::new()),
    });
    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(session.clone());
    *conn_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn);
    shared.connected.store(true, Relaxed);
    shared.event(TunnelEvent::Connected {
        server,
        connection: number,
    });
    session
}

/// Keep a connection to the server: run one session per connection,
/// reconnect after a pause when it ends.
async fn supervise(
    shared: Arc<Shared>,
    endpoint: Arc<Endpoint>,
    server: SocketAddr,
    connection: ConnectionConfig,
    slot: SessionSlot,
    conn_slot: Arc<Mutex<Option<Connection>>>,
    first: Arc<Session>,
) {
    let mut next = Some(first);
    loop {
        let session = match next.take() {
            Some(s) => s,
            None => match endpoint.connect(server, connection.clone()).await {
                Ok(c) => install(&shared, server, &slot, &conn_slot, c),
                Err(e) => {
                    shared.event(TunnelEvent::ConnectFailed {
                        server,
                        error: connect_error(&e),
                    });
                    if endpoint.stopped().is_some() {
                        return;
                    }
                    tokio::time::sleep(shared.config.reconnect_delay).await;
                    continue;
                }
            },
        };
        let reason = run_session(&session).await;
        shared.connected.store(false, Relaxed);
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = None;
        *conn_slot.lock().unwrap_or_else(|p| p.into_inner()) = None;
        // Every flow of the session is over; TCP pumps reset their sockets
        // on their own (their stream reads end), UDP flows are closed here.
        let flows: Vec<Arc<Flow>> = session
            .flows
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        for f in flows {
            if f.proto == FlowProto::Udp {
                shared
                    .registry
                    .finish(&f, FlowState::Closed(format!("tunnel closed: {reason}")));
            }
        }
        session
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        shared.event(TunnelEvent::Disconnected { reason });
        drop(session);
        if endpoint.stopped().is_some() {
            return;
        }
        tokio::time::sleep(shared.config.reconnect_delay).await;
    }
}

/// Read the control stream and the connection's events until it closes;
/// returns why it closed.
async fn run_session(session: &Arc<Session>) -> String {
    let conn = &session.conn;
    let control = async {
        while let Some(m) = conn.recv_on(CONTROL_STREAM).await {
            let Ok(c) = Control::decode(&m) else {
                tracing::warn!("tunnel: malformed control record from the server");
                continue;
            };
            match c {
                Control::Opened { stream } => {
                    let waiter = session
                        .pending
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&stream);
                    if let Some(w) = waiter {
                        let _ = w.send(Ok(()));
                    }
                }
                Control::Refused { stream, reason } => {
                    let waiter = session
                        .pending
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&stream);
                    if let Some(w) = waiter {
                        let _ = w.send(Err(reason));
                    }
                }
                Control::Close { stream } => {
                    let flow = session
                        .flows
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get(&stream)
                        .cloned();
                    if let Some(f) = flow {
                        f.set_state(FlowState::Closed("closed by the server (idle)".into()));
                    }
                }
                Control::Open(_) => tracing::warn!("tunnel: the server sent OPEN; ignored"),
            }
        }
    };
    let events = pump::watch_connection(conn, &session.flows);
    tokio::pin!(events);
    tokio::select! {
        r = &mut events => r,
        () = control => events.await,
    }
}

/// Accept local TCP connections of one forward.
async fn tcp_forward(shared: Arc<Shared>, slot: SessionSlot, spec: ForwardSpec, l: TcpListener) {
    let spec = Arc::new(spec);
    loop {
        let Ok((sock, peer)) = l.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (sh, slot, spec) = (shared.clone(), slot.clone(), spec.clone());
        shared.spawn(async move { tcp_flow(sh, slot, spec, sock, peer).await });
    }
}

async fn tcp_flow(
    shared: Arc<Shared>,
    slot: SessionSlot,
    spec: Arc<ForwardSpec>,
    sock: TcpStream,
    peer: SocketAddr,
) {
    let Some(session) = current(&slot) else {
        shared.turned_away.fetch_add(1, Relaxed);
        let _ = sock.set_zero_linger();
        return;
    };
    let (stream, flow, answer) = match session.open(&shared, &spec, peer).await {
        Ok(x) => x,
        Err(why) => {
            tracing::info!("tunnel: {peer} -> {} turned away: {why}", spec.target);
            shared.turned_away.fetch_add(1, Relaxed);
            let _ = sock.set_zero_linger();
            return;
        }
    };
    let answer = tokio::time::timeout(shared.config.open_timeout, answer).await;
    let refused = match answer {
        Ok(Ok(Ok(()))) => None,
        Ok(Ok(Err(reason))) => Some(reason),
        Ok(Err(_)) => Some("the tunnel connection closed before the server answered".into()),
        Err(_) => Some(format!(
            "no answer from the server within {:.0} s",
            shared.config.open_timeout.as_secs_f64()
        )),
    };
    if let Some(reason) = refused {
        shared
            .registry
            .finish(&flow, FlowState::Refused(reason.clone()));
        shared.event(TunnelEvent::FlowRefused {
            id: flow.id,
            proto: FlowProto::Tcp,
            target: spec.target.clone(),
            reason,
        });
        let _ = sock.set_zero_linger();
        session.release(stream);
        return;
    }
    flow.set_state(FlowState::Open);
    shared.event(TunnelEvent::FlowOpened {
        id: flow.id,
        proto: FlowProto::Tcp,
        peer: peer.to_string(),
        target: spec.target.clone(),
    });
    let end = pump::tcp(
        &session.conn,
        stream,
        sock,
        &flow,
        shared.config.tcp_chunk_bytes,
        true,
    )
    .await;
    let reason = end.reason();
    shared
        .registry
        .finish(&flow, FlowState::Closed(reason.clone()));
    shared.event(TunnelEvent::FlowClosed {
        id: flow.id,
        reason,
    });
    pump::drain(session.conn.clone(), stream, DRAIN_QUIET).await;
    session.release(stream);
}

/// One UDP source of a forward, as the forward's loop keeps it.
struct UdpFlow {
    session: Arc<Session>,
    stream: u16,
    flow: Arc<Flow>,
    reply: tokio::task::AbortHandle,
    refused_at: Option<tokio::time::Instant>,
}

/// Receive datagrams on one forward's socket; one flow per source.
async fn udp_forward(shared: Arc<Shared>, slot: SessionSlot, spec: ForwardSpec, sock: UdpSocket) {
    let sock = Arc::new(sock);
    let spec = Arc::new(spec);
    let mut flows: BTreeMap<SocketAddr, UdpFlow> = BTreeMap::new();
    let mut buf = vec![0u8; 65_536];
    let mut sweep = tokio::time::interval(Duration::from_millis(500));
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // Answers to OPENs: a refusal marks its flow.
    let (refusals_tx, mut refusals) =
        tokio::sync::mpsc::unbounded_channel::<(SocketAddr, u64, Result<(), String>)>();
    loop {
        tokio::select! {
            r = sock.recv_from(&mut buf) => {
                let Ok((n, src)) = r else { continue };
                let session = current(&slot);
                let Some(session) = session else {
                    shared.turned_away.fetch_add(1, Relaxed);
                    continue;
                };
                // A flow of an older session is over.
                if flows.get(&src).is_some_and(|f| f.session.number != session.number || matches!(f.flow.state(), FlowState::Closed(_))) {
                    if let Some(old) = flows.remove(&src) {
                        close_udp(&shared, old, "tunnel reconnected", false).await;
                    }
                }
                if let std::collections::btree_map::Entry::Vacant(slot) = flows.entry(src) {
                    match session.open(&shared, &spec, src).await {
                        Ok((stream, flow, answer)) => {
                            let reply = shared.spawn(udp_replies(session.conn.clone(), stream, sock.clone(), src, flow.clone()));
                            let tx = refusals_tx.clone();
                            let id = flow.id;
                            shared.spawn(async move {
                                let r = match answer.await {
                                    Ok(r) => r,
                                    Err(_) => Err("the tunnel connection closed".into()),
                                };
                                let _ = tx.send((src, id, r));
                            });
                            slot.insert(UdpFlow { session: session.clone(), stream, flow, reply, refused_at: None });
                        }
                        Err(why) => {
                            tracing::info!("tunnel: udp {src} -> {} turned away: {why}", spec.target);
                            shared.turned_away.fetch_add(1, Relaxed);
                            continue;
                        }
                    }
                }
                let Some(f) = flows.get(&src) else { continue };
                if f.refused_at.is_some() {
                    f.flow.dropped.fetch_add(1, Relaxed);
                    continue;
                }
                let msg = Bytes::copy_from_slice(&buf[..n]);
                let sent = match spec.deadline {
                    Some(d) => f.session.conn.try_send_with_deadline(f.stream, msg, d),
                    None => f.session.conn.try_send(f.stream, msg),
                };
                match sent {
                    Ok(_) => f.flow.add_up(n),
                    Err(_) => { f.flow.dropped.fetch_add(1, Relaxed); }
                }
            }
            Some((src, id, answer)) = refusals.recv() => {
                let Some(f) = flows.get_mut(&src) else { continue };
                if f.flow.id != id { continue }
                match answer {
                    Ok(()) => {
                        if f.flow.state() == FlowState::Opening {
                            f.flow.set_state(FlowState::Open);
                        }
                        shared.event(TunnelEvent::FlowOpened { id, proto: FlowProto::Udp, peer: src.to_string(), target: spec.target.clone() });
                    }
                    Err(reason) => {
                        shared.registry.finish(&f.flow, FlowState::Refused(reason.clone()));
                        shared.event(TunnelEvent::FlowRefused { id, proto: FlowProto::Udp, target: spec.target.clone(), reason });
                        f.refused_at = Some(tokio::time::Instant::now());
                    }
                }
            }
            _ = sweep.tick() => {
                let idle = shared.config.udp_idle_timeout;
                let live = current(&slot).map(|s| s.number);
                let over: Vec<SocketAddr> = flows
                    .iter()
                    .filter(|(_, f)| {
                        f.flow.idle() >= idle
                            || live != Some(f.session.number)
                            || matches!(f.flow.state(), FlowState::Closed(_))
                            || f.refused_at.is_some_and(|t| t.elapsed() >= REFUSED_HOLD)
                    })
                    .map(|(a, _)| *a)
                    .collect();
                for a in over {
                    if let Some(f) = flows.remove(&a) {
                        let tell = live == Some(f.session.number) && f.refused_at.is_none();
                        close_udp(&shared, f, "idle", tell).await;
                    }
                }
            }
        }
    }
}

/// End a UDP flow: stop its reply task, tell the server (`tell`), record it.
async fn close_udp(shared: &Shared, f: UdpFlow, why: &str, tell: bool) {
    f.reply.abort();
    let state = match f.flow.state() {
        FlowState::Refused(r) => FlowState::Refused(r),
        FlowState::Closed(r) => FlowState::Closed(r),
        _ => FlowState::Closed(why.into()),
    };
    if let FlowState::Closed(r) = &state {
        shared.event(TunnelEvent::FlowClosed {
            id: f.flow.id,
            reason: r.clone(),
        });
    }
    shared.registry.finish(&f.flow, state);
    if tell {
        f.session.control(Control::Close { stream: f.stream }).await;
    }
    let session = f.session.clone();
    let stream = f.stream;
    shared.spawn(async move {
        pump::drain(session.conn.clone(), stream, DRAIN_QUIET).await;
        session.release(stream);
    });
}

/// The server's datagrams of one flow, back to the source that sent.
async fn udp_replies(
    conn: Connection,
    stream: u16,
    sock: Arc<UdpSocket>,
    src: SocketAddr,
    flow: Arc<Flow>,
) {
    while let Some(m) = conn.recv_on(stream).await {
        match sock.send_to(&m, src).await {
            Ok(_) => flow.add_down(m.len()),
            Err(_) => {
                flow.dropped.fetch_add(1, Relaxed);
            }
        }
    }
}
