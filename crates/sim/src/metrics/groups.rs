//! Results of `[[flow_groups]]`: a digest per group and stream (the
//! spread of the members' per-stream p99 latency, the worst members), the
//! shared server endpoint's counters, and `streams.csv` (one row per
//! member stream). Every member keeps its own row in `flows`, `flows.csv`
//! and the time series, as a hand-written flow does; only the console
//! table shows the digest instead of one row per member.
//!
//! Scenarios without groups produce none of this (their outputs stay
//! byte-identical).

use super::output::{FlowResult, LatencySummary};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::ops::Range;

/// How many of the worst members the digest names.
pub const WORST: usize = 5;

/// One group's results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupResult {
    /// The group's name.
    pub name: String,
    /// The server node.
    pub dst: String,
    /// Its members, indices into [`super::SimResults::flows`].
    pub flows: Range<usize>,
    /// Connections the shared server endpoint still held at the end.
    pub server_connections: usize,
    /// STARTs it accepted.
    pub server_accepted: u64,
    /// REJECTs it sent (`busy`, `retry`, …).
    pub server_rejects: u64,
}

/// The digest of one stream id over a group's members.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamDigest {
    /// Stream id.
    pub id: u16,
    /// Application kind.
    pub app: &'static str,
    /// Members that have the stream.
    pub members: usize,
    /// Messages queued, summed over members.
    pub messages_sent: u64,
    /// Messages delivered, summed over members.
    pub messages_delivered: u64,
    /// Members that delivered at least one message (have a p99).
    pub with_p99: usize,
    /// Smallest, median (nearest rank) and largest per-member p99, ms.
    pub p99_ms: Option<[f64; 3]>,
    /// The members with the largest p99, worst first: (flow name, p99 ms).
    pub worst: Vec<(String, f64)>,
}

impl GroupResult {
    /// The digest of each stream id of the members, by id. O(messages ·
    /// log messages) for the members' latency percentiles.
    pub fn digest(&self, flows: &[FlowResult]) -> Vec<StreamDigest> {
        let mut out: Vec<StreamDigest> = Vec::new();
        let mut p99s: Vec<Vec<(f64, usize)>> = Vec::new();
        for f in self.flows.clone() {
            for st in &flows[f].metrics.streams {
                let k = match out.iter().position(|d| d.id == st.id) {
                    Some(k) => k,
                    None => {
                        out.push(StreamDigest {
                            id: st.id,
                            app: st.app,
                            members: 0,
                            messages_sent: 0,
                            messages_delivered: 0,
                            with_p99: 0,
                            p99_ms: None,
                            worst: Vec::new(),
                        });
                        p99s.push(Vec::new());
                        out.len() - 1
                    }
                };
                let d = &mut out[k];
                d.members += 1;
                d.messages_sent += st.messages_sent;
                d.messages_delivered += st.messages_delivered;
                if let Some(p) = LatencySummary::of(&st.latencies_ns).p99_ms {
                    p99s[k].push((p, f));
                }
            }
        }
        for (d, mut v) in out.iter_mut().zip(p99s) {
            d.with_p99 = v.len();
            // Worst first; ties in flow order (stable output).
            v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            if let (Some(max), Some(min)) = (v.first(), v.last()) {
                // Nearest-rank median of the ascending order.
                let med = v[v.len() - v.len().div_ceil(2)].0;
                d.p99_ms = Some([min.0, med, max.0]);
            }
            d.worst = v
                .iter()
                .take(WORST)
                .map(|(p, f)| (flows[*f].name.clone(), *p))
                .collect();
        }
        out.sort_by_key(|d| d.id);
        out
    }

    /// The group in `summary.json` (`flow_groups[i]`). Cost of [`Self::digest`].
    pub fn to_json(&self, flows: &[FlowResult]) -> Value {
        let streams: Vec<Value> = self
            .digest(flows)
            .iter()
            .map(|d| {
                json!({
                    "id": d.id,
                    "app": d.app,
                    "members": d.members,
                    "messages_sent": d.messages_sent,
                    "messages_delivered": d.messages_delivered,
                    "members_with_latency": d.with_p99,
                    "latency_p99_ms": d.p99_ms.map_or(Value::Null, |[a, b, c]| json!({ "min": a, "median": b, "max": c })),
                    "worst_p99_ms": d.worst.iter().map(|(n, p)| json!({ "flow": n, "p99_ms": p })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "name": self.name,
            "dst": self.dst,
            "members": self.flows.len(),
            "first_flow": self.flows.start,
            "server": {
                "connections": self.server_connections,
                "accepted": self.server_accepted,
                "rejects_sent": self.server_rejects,
            },
            "streams": streams,
        })
    }

    /// The console digest: one paragraph per group. Cost of [`Self::digest`].
    pub fn print(&self, flows: &[FlowResult], s: &mut String) {
        let connected = self
            .flows
            .clone()
            .filter(|&f| flows[f].metrics.connected_ns.is_some())
            .count();
        let _ = writeln!(
            s,
            "group {}: {} members → one server endpoint at {} ({} connected, {} accepted, {} rejects sent)",
            self.name,
            self.flows.len(),
            self.dst,
            connected,
            self.server_accepted,
            self.server_rejects
        );
        for d in self.digest(flows) {
            let p = d.p99_ms.map_or("-".to_string(), |[a, b, c]| {
                format!("min {a:.2} · median {b:.2} · max {c:.2}")
            });
            let _ = writeln!(
                s,
                "  stream {} ({}, {} members): {}/{} messages delivered; per-member p99 latency ms: {}",
                d.id, d.app, d.members, d.messages_delivered, d.messages_sent, p
            );
            if !d.worst.is_empty() {
                let w: Vec<String> = d.worst.iter().map(|(n, p)| format!("{n} {p:.2}")).collect();
                let _ = writeln!(s, "    worst p99: {}", w.join(", "));
            }
        }
    }
}

/// `streams.csv`: one row per stream of every flow (members and
/// hand-written), with its message latency summary. O(flows · groups +
/// messages · log messages).
pub fn streams_csv(flows: &[FlowResult], groups: &[GroupResult]) -> String {
    let mut s = String::from(
        "flow,group,stream,app,messages_sent,messages_delivered,messages_abandoned,latency_ms_mean,latency_ms_p50,latency_ms_p95,latency_ms_p99,latency_ms_max\n",
    );
    let o = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.6}"));
    for (i, f) in flows.iter().enumerate() {
        let g = groups
            .iter()
            .find(|g| g.flows.contains(&i))
            .map_or("", |g| g.name.as_str());
        for st in &f.metrics.streams {
            let l = LatencySummary::of(&st.latencies_ns);
            let _ = writeln!(
                s,
                "{},{g},{},{},{},{},{},{},{},{},{},{}",
                f.name,
                st.id,
                st.app,
                st.messages_sent,
                st.messages_delivered,
                st.messages_abandoned,
                o(l.mean_ms),
                o(l.p50_ms),
                o(l.p95_ms),
                o(l.p99_ms),
                o(l.max_ms)
            );
        }
    }
    s
}
