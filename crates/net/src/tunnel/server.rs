//! The server side: accept tunnel clients, open their flows towards the
//! targets they name (within the allow list), carry the bytes.

use super::pump;
use super::spec::split_host_port;
use super::stats::{Flow, FlowState, NewFlow};
use super::wire::{Control, OpenFlow, CONTROL_STREAM};
use super::{FlowProto, Shared, TunnelError, TunnelEvent};
use crate::{Connection, Endpoint, StreamConfig};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpStream, UdpSocket};

const DRAIN_QUIET: Duration = Duration::from_secs(3);

struct AllowEntry {
    text: String,
    host: String,
    port: Option<u16>,
    addrs: Vec<IpAddr>,
}

/// The targets clients may reach (`None` inside: any).
pub(crate) struct AllowList(Option<Vec<AllowEntry>>);

impl AllowList {
    /// Resolve `HOST:PORT` / `HOST:*` entries once, at start.
    pub async fn resolve(list: Option<&[String]>) -> Result<AllowList, TunnelError> {
        let Some(list) = list else {
            return Ok(AllowList(None));
        };
        let mut out = Vec::new();
        for text in list {
            let bad = |what: &str| TunnelError::Allow {
                entry: text.clone(),
                what: what.to_string(),
            };
            let (host, port) = if let Some(h) = text.strip_suffix(":*") {
                (
                    h.trim_start_matches('[').trim_end_matches(']').to_string(),
                    None,
                )
            } else {
                let (h, p) = split_host_port(text)
                    .ok_or_else(|| bad("expected HOST:PORT or HOST:* (IPv6 as [ADDR]:PORT)"))?;
                (h.to_string(), Some(p))
            };
            if host.is_empty() {
                return Err(bad("HOST is empty"));
            }
            let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
                Ok(a) => vec![a],
                Err(_) => tokio::net::lookup_host((host.as_str(), port.unwrap_or(1)))
                    .await
                    .map_err(|e| bad(&format!("cannot resolve {host}: {e}")))?
                    .map(|a| a.ip())
                    .collect(),
            };
            out.push(AllowEntry {
                text: text.clone(),
                host: host.to_ascii_lowercase(),
                port,
                addrs,
            });
        }
        Ok(AllowList(Some(out)))
    }

    fn permits(&self, host: &str, addr: SocketAddr) -> bool {
        let Some(list) = &self.0 else { return true };
        list.iter().any(|e| {
            e.port.is_none_or(|p| p == addr.port())
                && (e.host == host.to_ascii_lowercase() || e.addrs.contains(&addr.ip()))
        })
    }

    /// The entries, for messages.
    fn describe(&self) -> String {
        match &self.0 {
            None => "any".into(),
            Some(l) => l
                .iter()
                .map(|e| e.text.as_str())
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// Accept clients until the endpoint stops.
pub(crate) async fn run(shared: Arc<Shared>, endpoint: Arc<Endpoint>, allow: Arc<AllowList>) {
    tracing::info!(
        "tunnel server on {}, targets allowed: {}",
        endpoint.local_addr(),
        allow.describe()
    );
    while let Some(conn) = endpoint.accept().await {
        shared.spawn(serve(shared.clone(), allow.clone(), conn));
    }
}

type FlowTasks = Arc<Mutex<BTreeMap<u16, (FlowProto, tokio::task::AbortHandle)>>>;

async fn serve(shared: Arc<Shared>, allow: Arc<AllowList>, conn: Connection) {
    let peer = conn
        .remote_address()
        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
    let _ = conn.open_stream(
        CONTROL_STREAM,
        StreamConfig {
            class: 0,
            weight: super::class_weight(0),
            ..StreamConfig::default()
        },
    );
    shared.connections.fetch_add(1, Relaxed);
    shared.live.fetch_add(1, Relaxed);
    shared.event(TunnelEvent::ClientConnected { peer });
    let tasks: FlowTasks = Arc::new(Mutex::new(BTreeMap::new()));
    let flows: Arc<Mutex<BTreeMap<u16, Arc<Flow>>>> = Arc::new(Mutex::new(BTreeMap::new()));
    let control = async {
        while let Some(m) = conn.recv_on(CONTROL_STREAM).await {
            let c = match Control::decode(&m) {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!("tunnel: {peer}: {e}");
                    continue;
                }
            };
            match c {
                Control::Open(o) => {
                    let stream = o.stream;
                    let refuse = {
                        let t = tasks.lock().unwrap_or_else(|p| p.into_inner());
                        if o.stream == CONTROL_STREAM || o.stream >= 0xFFF0 {
                            Some("stream number reserved".to_string())
                        } else if t.contains_key(&o.stream) {
                            Some("stream already carries a flow".to_string())
                        } else if t.len() >= shared.config.max_flows {
                            Some(format!(
                                "the server's flow limit ({}) is reached",
                                shared.config.max_flows
                            ))
                        } else {
                            None
                        }
                    };
                    if let Some(reason) = refuse {
                        refuse_flow(&shared, &conn, &o, peer, reason).await;
                        continue;
                    }
                    let proto = o.proto;
                    let h = shared.spawn(open_flow(
                        shared.clone(),
                        allow.clone(),
                        conn.clone(),
                        o,
                        peer,
                        tasks.clone(),
                        flows.clone(),
                    ));
                    tasks
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(stream, (proto, h));
                }
                Control::Close { stream } => {
                    let t = tasks
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&stream);
                    let f = flows
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&stream);
                    if let Some((FlowProto::Udp, h)) = t {
                        h.abort();
                        if let Some(f) = f {
                            let why = "closed by the client (idle)".to_string();
                            shared.registry.finish(&f, FlowState::Closed(why.clone()));
                            shared.event(TunnelEvent::FlowClosed {
                                id: f.id,
                                reason: why,
                            });
                        }
                        shared.spawn(pump::drain(conn.clone(), stream, DRAIN_QUIET));
                    }
                }
                Control::Opened { .. } | Control::Refused { .. } => {
                    tracing::warn!("tunnel: {peer} sent a server's record; ignored")
                }
            }
        }
    };
    let events = pump::watch_connection(&conn, &flows);
    tokio::pin!(events);
    let reason = tokio::select! {
        r = &mut events => r,
        () = control => events.await,
    };
    // UDP flows stop here; TCP flows see their stream end and reset
    // their target connections themselves.
    let udp: Vec<(u16, tokio::task::AbortHandle)> = tasks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter(|(_, (p, _))| *p == FlowProto::Udp)
        .map(|(s, (_, h))| (*s, h.clone()))
        .collect();
    for (s, h) in udp {
        h.abort();
        let f = flows.lock().unwrap_or_else(|p| p.into_inner()).remove(&s);
        if let Some(f) = f {
            shared
                .registry
                .finish(&f, FlowState::Closed(format!("tunnel closed: {reason}")));
        }
    }
    shared.live.fetch_sub(1, Relaxed);
    shared.event(TunnelEvent::ClientDisconnected { peer, reason });
}

async fn refuse_flow(
    shared: &Shared,
    conn: &Connection,
    o: &OpenFlow,
    peer: SocketAddr,
    reason: String,
) {
    let flow = shared.registry.add(NewFlow {
        stream: o.stream,
        proto: o.proto,
        peer: peer.to_string(),
        target: &o.target,
        class: o.class,
        reliability: o.reliability,
        deadline: o.deadline,
    });
    shared
        .registry
        .finish(&flow, FlowState::Refused(reason.clone()));
    shared.event(TunnelEvent::FlowRefused {
        id: flow.id,
        proto: o.proto,
        target: o.target.clone(),
        reason: reason.clone(),
    });
    let _ = conn
        .send(
            CONTROL_STREAM,
            Control::Refused {
                stream: o.stream,
                reason,
            }
            .encode(),
        )
        .await;
}

/// What the server opened towards the target.
enum Opened {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

/// Resolve, check and reach the target; errors are the words the client sees.
async fn reach(shared: &Shared, allow: &AllowList, o: &OpenFlow) -> Result<Opened, String> {
    let (host, port) = split_host_port(&o.target)
        .ok_or_else(|| format!("target `{}` is not HOST:PORT", o.target))?;
    let limit = shared.config.connect_timeout;
    let addrs: Vec<SocketAddr> =
        match tokio::time::timeout(limit, tokio::net::lookup_host((host, port))).await {
            Ok(Ok(a)) => a.collect(),
            Ok(Err(e)) => return Err(format!("cannot resolve {host} on the server: {e}")),
            Err(_) => {
                return Err(format!(
                    "resolving {host} took more than {:.0} s",
                    limit.as_secs_f64()
                ))
            }
        };
    let addr = *addrs
        .first()
        .ok_or_else(|| format!("{host} has no address on the server"))?;
    if !allow.permits(host, addr) {
        return Err(format!(
            "target {} is not on the server's --allow list ({})",
            o.target,
            allow.describe()
        ));
    }
    match o.proto {
        FlowProto::Tcp => match tokio::time::timeout(limit, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => Ok(Opened::Tcp(s)),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(format!(
                "{addr} refused the connection (nothing listens on port {port} there)"
            )),
            Ok(Err(e)) => Err(format!("cannot connect to {addr}: {e}")),
            Err(_) => Err(format!(
                "no answer from {addr} within {:.0} s",
                limit.as_secs_f64()
            )),
        },
        FlowProto::Udp => {
            let local: SocketAddr = if addr.is_ipv4() {
                SocketAddr::from(([0, 0, 0, 0], 0))
            } else {
                SocketAddr::from(([0u16; 8], 0))
            };
            let s = UdpSocket::bind(local)
                .await
                .map_err(|e| format!("cannot open a UDP socket on the server: {e}"))?;
            s.connect(addr)
                .await
                .map_err(|e| format!("cannot send to {addr}: {e}"))?;
            Ok(Opened::Udp(s))
        }
    }
}

async fn open_flow(
    shared: Arc<Shared>,
    allow: Arc<AllowList>,
    conn: Connection,
    o: OpenFlow,
    peer: SocketAddr,
    tasks: FlowTasks,
    flows: Arc<Mutex<BTreeMap<u16, Arc<Flow>>>>,
) {
    let stream = o.stream;
    let opened = reach(&shared, &allow, &o).await;
    let target = match opened {
        Ok(t) => t,
        Err(reason) => {
            refuse_flow(&shared, &conn, &o, peer, reason).await;
            tasks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&stream);
            pump::drain(conn, stream, DRAIN_QUIET).await;
            return;
        }
    };
    let buffer = match o.proto {
        FlowProto::Tcp => shared.config.tcp_stream_buffer_bytes,
        FlowProto::Udp => shared.config.udp_stream_buffer_bytes,
    };
    let _ = conn.open_stream(
        stream,
        StreamConfig {
            class: o.class,
            weight: super::class_weight(o.class),
            reliability: o.reliability,
            max_buffered_bytes: buffer,
        },
    );
    let flow = shared.registry.add(NewFlow {
        stream,
        proto: o.proto,
        peer: peer.to_string(),
        target: &o.target,
        class: o.class,
        reliability: o.reliability,
        deadline: o.deadline,
    });
    flow.set_state(FlowState::Open);
    flows
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(stream, flow.clone());
    let _ = conn
        .send(CONTROL_STREAM, Control::Opened { stream }.encode())
        .await;
    shared.event(TunnelEvent::FlowOpened {
        id: flow.id,
        proto: o.proto,
        peer: peer.to_string(),
        target: o.target.clone(),
    });
    let reason = match target {
        Opened::Tcp(sock) => {
            let end = pump::tcp(
                &conn,
                stream,
                sock,
                &flow,
                shared.config.tcp_chunk_bytes,
                false,
            )
            .await;
            end.reason()
        }
        Opened::Udp(sock) => {
            let r = udp(&shared, &conn, stream, sock, &flow, o.deadline).await;
            if r == "idle" {
                let _ = conn
                    .send(CONTROL_STREAM, Control::Close { stream }.encode())
                    .await;
            }
            r
        }
    };
    shared
        .registry
        .finish(&flow, FlowState::Closed(reason.clone()));
    shared.event(TunnelEvent::FlowClosed {
        id: flow.id,
        reason,
    });
    flows
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&stream);
    pump::drain(conn, stream, DRAIN_QUIET).await;
    tasks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&stream);
}

/// One UDP flow at the server: datagrams both ways until idle or the
/// tunnel ends (the task is aborted on `CLOSE`).
async fn udp(
    shared: &Shared,
    conn: &Connection,
    stream: u16,
    sock: UdpSocket,
    flow: &Flow,
    deadline: Option<Duration>,
) -> String {
    let mut buf = vec![0u8; 65_536];
    let mut sweep = tokio::time::interval(Duration::from_millis(500));
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            m = conn.recv_on(stream) => {
                let Some(m) = m else { return "tunnel closed".into() };
                match sock.send(&m).await {
                    Ok(_) => flow.add_up(m.len()),
                    Err(_) => { flow.dropped.fetch_add(1, Relaxed); }
                }
            }
            r = sock.recv(&mut buf) => {
                // ICMP port unreachable comes back as an error: the
                // target may start later; keep the flow.
                let Ok(n) = r else { continue };
                let msg = Bytes::copy_from_slice(&buf[..n]);
                let sent = match deadline {
                    Some(d) => conn.try_send_with_deadline(stream, msg, d),
                    None => conn.try_send(stream, msg),
                };
                match sent {
                    Ok(_) => flow.add_down(n),
                    Err(_) => { flow.dropped.fetch_add(1, Relaxed); }
                }
            }
            _ = sweep.tick() => {
                if flow.idle() >= shared.config.udp_idle_timeout {
                    return "idle".into();
                }
            }
        }
    }
}
