//! Flow counters, and the flow table as data: [`TunnelStats`] prints as a
//! table (`Display`) and as one JSON object ([`TunnelStats::to_json`]).

use super::spec::{reliability_name, FlowProto};
use peregrine_proto::StreamReliability;
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Most closed flows the table keeps (the newest), besides the open ones.
pub const CLOSED_FLOWS_KEPT: usize = 32;

/// Where a flow is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlowState {
    /// `OPEN` sent, no answer yet.
    Opening,
    /// Carrying data.
    Open,
    /// TCP: one direction has finished (FIN passed), the other goes on.
    HalfClosed,
    /// The server refused it; the reason in words.
    Refused(String),
    /// Over: the reason (`finished`, `idle`, `tunnel closed: …`, `reset`).
    Closed(String),
}

impl fmt::Display for FlowState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowState::Opening => f.write_str("opening"),
            FlowState::Open => f.write_str("open"),
            FlowState::HalfClosed => f.write_str("half-closed"),
            FlowState::Refused(r) => write!(f, "refused: {r}"),
            FlowState::Closed(r) => write!(f, "closed: {r}"),
        }
    }
}

/// One flow as the registry holds it: fixed facts, atomic counters.
#[derive(Debug)]
pub(crate) struct Flow {
    pub id: u64,
    pub stream: u16,
    pub proto: FlowProto,
    pub peer: String,
    pub target: String,
    pub class: u8,
    pub reliability: StreamReliability,
    pub deadline: Option<Duration>,
    pub started: Instant,
    /// Towards the target (client: read locally, sent; server: received, written).
    pub up_bytes: AtomicU64,
    pub up_msgs: AtomicU64,
    /// From the target.
    pub down_bytes: AtomicU64,
    pub down_msgs: AtomicU64,
    /// UDP datagrams this side could not queue (send buffer full) or send.
    pub dropped: AtomicU64,
    /// Messages this side sent and gave up (deadline passed, or lost on an
    /// unreliable stream).
    pub abandoned: AtomicU64,
    /// Milliseconds since `started` of the latest datagram or chunk.
    pub last_ms: AtomicU64,
    pub state: Mutex<FlowState>,
}

impl Flow {
    pub fn touch(&self) {
        self.last_ms
            .store(self.started.elapsed().as_millis() as u64, Relaxed);
    }
    pub fn idle(&self) -> Duration {
        self.started
            .elapsed()
            .saturating_sub(Duration::from_millis(self.last_ms.load(Relaxed)))
    }
    pub fn set_state(&self, s: FlowState) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = s;
    }
    pub fn state(&self) -> FlowState {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    pub fn add_up(&self, bytes: usize) {
        self.up_bytes.fetch_add(bytes as u64, Relaxed);
        self.up_msgs.fetch_add(1, Relaxed);
        self.touch();
    }
    pub fn add_down(&self, bytes: usize) {
        self.down_bytes.fetch_add(bytes as u64, Relaxed);
        self.down_msgs.fetch_add(1, Relaxed);
        self.touch();
    }
    fn info(&self) -> FlowInfo {
        FlowInfo {
            id: self.id,
            stream: self.stream,
            proto: self.proto,
            peer: self.peer.clone(),
            target: self.target.clone(),
            class: self.class,
            reliability: self.reliability,
            deadline: self.deadline,
            state: self.state(),
            up_bytes: self.up_bytes.load(Relaxed),
            up_msgs: self.up_msgs.load(Relaxed),
            down_bytes: self.down_bytes.load(Relaxed),
            down_msgs: self.down_msgs.load(Relaxed),
            dropped: self.dropped.load(Relaxed),
            abandoned: self.abandoned.load(Relaxed),
            age: self.started.elapsed(),
            idle: self.idle(),
        }
    }
}

/// The flows of one tunnel side, open and recently closed.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    next_id: AtomicU64,
    inner: Mutex<RegistryInner>,
}

#[derive(Debug, Default)]
struct RegistryInner {
    open: BTreeMap<u64, Arc<Flow>>,
    closed: std::collections::VecDeque<FlowInfo>,
    closed_total: u64,
    refused_total: u64,
}

/// What a new flow is.
pub(crate) struct NewFlow<'a> {
    pub stream: u16,
    pub proto: FlowProto,
    pub peer: String,
    pub target: &'a str,
    pub class: u8,
    pub reliability: StreamReliability,
    pub deadline: Option<Duration>,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register a flow (state `Opening`).
    pub fn add(&self, n: NewFlow<'_>) -> Arc<Flow> {
        let flow = Arc::new(Flow {
            id: self.next_id.fetch_add(1, Relaxed) + 1,
            stream: n.stream,
            proto: n.proto,
            peer: n.peer,
            target: n.target.to_string(),
            class: n.class,
            reliability: n.reliability,
            deadline: n.deadline,
            started: Instant::now(),
            up_bytes: AtomicU64::new(0),
            up_msgs: AtomicU64::new(0),
            down_bytes: AtomicU64::new(0),
            down_msgs: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
            last_ms: AtomicU64::new(0),
            state: Mutex::new(FlowState::Opening),
        });
        self.lock().open.insert(flow.id, flow.clone());
        flow
    }

    /// Move a flow to the closed list with its final state (once).
    pub fn finish(&self, flow: &Flow, state: FlowState) {
        let mut g = self.lock();
        if g.open.remove(&flow.id).is_none() {
            return;
        }
        if matches!(state, FlowState::Refused(_)) {
            g.refused_total += 1;
        }
        g.closed_total += 1;
        flow.set_state(state);
        g.closed.push_back(flow.info());
        while g.closed.len() > CLOSED_FLOWS_KEPT {
            g.closed.pop_front();
        }
    }

    /// Number of open flows.
    #[cfg(test)]
    pub fn open_count(&self) -> usize {
        self.lock().open.len()
    }

    /// Snapshot for the table.
    pub fn snapshot(&self) -> (Vec<FlowInfo>, u64, u64) {
        let g = self.lock();
        let mut v: Vec<FlowInfo> = g.open.values().map(|f| f.info()).collect();
        v.extend(g.closed.iter().cloned());
        v.sort_by_key(|f| f.id);
        (v, g.closed_total, g.refused_total)
    }
}

/// One flow's row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowInfo {
    /// The flow's number on this side (1, 2, …).
    pub id: u64,
    /// Its Peregrine stream.
    pub stream: u16,
    /// UDP or TCP.
    pub proto: FlowProto,
    /// Client: the local application's address; server: the tunnel client's.
    pub peer: String,
    /// `HOST:PORT` the server reaches.
    pub target: String,
    /// Priority class.
    pub class: u8,
    /// The stream's reliability.
    pub reliability: StreamReliability,
    /// Per-message deadline (UDP).
    pub deadline: Option<Duration>,
    /// Open, half-closed, refused (why), closed (why).
    pub state: FlowState,
    /// Payload bytes towards the target.
    pub up_bytes: u64,
    /// Datagrams (UDP) or chunks (TCP) towards the target.
    pub up_msgs: u64,
    /// Payload bytes from the target.
    pub down_bytes: u64,
    /// Datagrams or chunks from the target.
    pub down_msgs: u64,
    /// Datagrams this side dropped (its send buffer full).
    pub dropped: u64,
    /// Messages this side sent and abandoned (deadline passed, or lost on
    /// an unreliable stream).
    pub abandoned: u64,
    /// Since the flow opened.
    pub age: Duration,
    /// Since its latest datagram or chunk.
    pub idle: Duration,
}

/// One side of a tunnel, as a table.
#[derive(Clone, Debug, PartialEq)]
pub struct TunnelStats {
    /// `client` or `server`.
    pub role: &'static str,
    /// Client: whether the connection to the server is up; server: whether
    /// any client is connected.
    pub connected: bool,
    /// Client: the server's address; server: the listening address.
    pub address: String,
    /// Client: connections made (1 + reconnections); server: accepted.
    pub connections: u64,
    /// Open flows, then up to [`CLOSED_FLOWS_KEPT`] closed ones, by id.
    pub flows: Vec<FlowInfo>,
    /// Flows closed so far (refused included).
    pub closed_flows: u64,
    /// Flows the server refused (or, on the server, refused).
    pub refused_flows: u64,
    /// Client: local TCP connections and UDP datagrams turned away while
    /// the tunnel was down or at its flow limit.
    pub turned_away: u64,
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e4).round() / 10.0
}

fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl TunnelStats {
    /// One JSON object on one line (no trailing newline): `role`,
    /// `connected`, `address`, `connections`, `closed_flows`,
    /// `refused_flows`, `turned_away`, and `flows[]` with `id`, `stream`,
    /// `proto`, `peer`, `target`, `class`, `reliability`, `deadline_ms`
    /// (null: none), `state`, `up_bytes`, `up_msgs`, `down_bytes`,
    /// `down_msgs`, `dropped`, `abandoned`, `age_s`, `idle_s`.
    pub fn to_json(&self) -> String {
        let mut o = String::with_capacity(256 + 256 * self.flows.len());
        o.push_str("{\"role\":");
        json_str(&mut o, self.role);
        let _ = write!(o, ",\"connected\":{},\"address\":", self.connected);
        json_str(&mut o, &self.address);
        let _ = write!(
            o,
            ",\"connections\":{},\"closed_flows\":{},\"refused_flows\":{},\"turned_away\":{},\"flows\":[",
            self.connections, self.closed_flows, self.refused_flows, self.turned_away
        );
        for (i, f) in self.flows.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(
                o,
                "{{\"id\":{},\"stream\":{},\"proto\":\"{}\",\"peer\":",
                f.id, f.stream, f.proto
            );
            json_str(&mut o, &f.peer);
            o.push_str(",\"target\":");
            json_str(&mut o, &f.target);
            let _ = write!(
                o,
                ",\"class\":{},\"reliability\":\"{}\",\"deadline_ms\":{},\"state\":",
                f.class,
                reliability_name(f.reliability),
                f.deadline
                    .map_or("null".to_string(), |d| d.as_millis().to_string())
            );
            json_str(&mut o, &f.state.to_string());
            let _ = write!(
                o,
                ",\"up_bytes\":{},\"up_msgs\":{},\"down_bytes\":{},\"down_msgs\":{},\"dropped\":{},\"abandoned\":{},\"age_s\":{:.3},\"idle_s\":{:.3}}}",
                f.up_bytes,
                f.up_msgs,
                f.down_bytes,
                f.down_msgs,
                f.dropped,
                f.abandoned,
                f.age.as_secs_f64(),
                f.idle.as_secs_f64()
            );
        }
        o.push_str("]}");
        o
    }
}

impl fmt::Display for TunnelStats {
    /// The terminal table: a header line, then one row per flow.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "tunnel {} {} ({}), connections {}, flows open {}, closed {}, refused {}, turned away {}",
            self.role,
            self.address,
            if self.connected { "up" } else { "down" },
            self.connections,
            self.flows
                .iter()
                .filter(|x| matches!(x.state, FlowState::Open | FlowState::Opening | FlowState::HalfClosed))
                .count(),
            self.closed_flows,
            self.refused_flows,
            self.turned_away
        )?;
        writeln!(
            f,
            "{:>4} {:>5} {:<4} {:<22} {:<22} {:>2} {:<10} {:>8} {:>12} {:>8} {:>12} {:>8} {:>7} {:>7} {:>7}  state",
            "id", "strm", "prot", "peer", "target", "cl", "reliab.", "dl_ms", "up_bytes", "up_msgs",
            "down_bytes", "down_msg", "dropped", "abandon", "idle_s"
        )?;
        for x in &self.flows {
            writeln!(
                f,
                "{:>4} {:>5} {:<4} {:<22} {:<22} {:>2} {:<10} {:>8} {:>12} {:>8} {:>12} {:>8} {:>7} {:>7} {:>7.1}  {}",
                x.id,
                x.stream,
                x.proto,
                x.peer,
                x.target,
                x.class,
                reliability_name(x.reliability),
                x.deadline.map_or("-".to_string(), |d| format!("{}", ms(d))),
                x.up_bytes,
                x.up_msgs,
                x.down_bytes,
                x.down_msgs,
                x.dropped,
                x.abandoned,
                x.idle.as_secs_f64(),
                x.state
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_json_carry_the_counters() {
        let r = Registry::default();
        let f = r.add(NewFlow {
            stream: 3,
            proto: FlowProto::Udp,
            peer: "127.0.0.1:40000".into(),
            target: "vehicle:14550",
            class: 0,
            reliability: StreamReliability::Unreliable,
            deadline: Some(Duration::from_millis(500)),
        });
        f.set_state(FlowState::Open);
        f.add_up(17);
        f.add_up(17);
        f.add_down(9);
        let g = r.add(NewFlow {
            stream: 4,
            proto: FlowProto::Tcp,
            peer: "127.0.0.1:40001".into(),
            target: "a\"b:22",
            class: 2,
            reliability: StreamReliability::ReliableOrdered,
            deadline: None,
        });
        r.finish(&g, FlowState::Refused("connection refused".into()));
        let (flows, closed, refused) = r.snapshot();
        let s = TunnelStats {
            role: "client",
            connected: true,
            address: "10.0.0.1:4433".into(),
            connections: 1,
            flows,
            closed_flows: closed,
            refused_flows: refused,
            turned_away: 0,
        };
        let table = s.to_string();
        assert!(table.contains("vehicle:14550"), "{table}");
        assert!(table.contains("refused: connection refused"), "{table}");
        let j = s.to_json();
        assert!(
            j.contains("\"up_bytes\":34,\"up_msgs\":2,\"down_bytes\":9"),
            "{j}"
        );
        assert!(j.contains("\"target\":\"a\\\"b:22\""), "{j}");
        assert!(j.contains("\"deadline_ms\":500") && j.contains("\"deadline_ms\":null"));
        assert!(j.contains("\"refused_flows\":1"));
        assert_eq!(r.open_count(), 1);
    }
}
