//! Results of a run: `summary.json`, tidy CSVs and the readable table.
//!
//! Nothing in any output depends on the machine, the clock or the
//! working directory: no timestamps, no absolute paths, no host names.
//! Numbers are written with fixed precision in CSVs and JSON keys come
//! in a fixed order, so two runs of one scenario are byte-identical.

use super::quantile::{quantile, QuantileMethod::NearestRank};
use super::stats::{jain_index, mean_std};
use super::{FlowCounters, FlowMetrics};
use crate::world::link::LinkStats;
use peregrine_proto::ConnectionStats;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::path::Path;

/// Counter differences `a − b`.
pub fn delta(a: &FlowCounters, b: &FlowCounters) -> FlowCounters {
    FlowCounters {
        tx_packets: a.tx_packets - b.tx_packets,
        tx_bytes: a.tx_bytes - b.tx_bytes,
        rx_packets: a.rx_packets - b.rx_packets,
        rx_bytes: a.rx_bytes - b.rx_bytes,
        processed_bytes: a.processed_bytes - b.processed_bytes,
        goodput_bytes: a.goodput_bytes - b.goodput_bytes,
        messages_delivered: a.messages_delivered - b.messages_delivered,
        queue_drops: a.queue_drops - b.queue_drops,
        channel_drops: a.channel_drops - b.channel_drops,
    }
}

/// One flow's results.
#[derive(Clone, Debug)]
pub struct FlowResult {
    /// Name.
    pub name: String,
    /// Source node.
    pub src: String,
    /// Destination node.
    pub dst: String,
    /// Controller.
    pub cc: &'static str,
    /// Scheduler.
    pub scheduler: &'static str,
    /// Start, ns.
    pub start_ns: u64,
    /// Link directions of the forward path.
    pub path: Vec<String>,
    /// The slowest fixed rate on the path (the reference for percentages).
    pub path_rate_bps: Option<f64>,
    /// Noise pattern of the flow (`None`: unencrypted).
    pub security: Option<peregrine_proto::crypto::NoisePattern>,
    /// The sender's final connection stats.
    pub stats: Option<ConnectionStats>,
    /// Everything measured.
    pub metrics: FlowMetrics,
}

/// One link direction at one sample.
#[derive(Clone, Debug)]
pub struct LinkSample {
    /// When, ns.
    pub time_ns: u64,
    /// Packets queued.
    pub backlog_packets: u64,
    /// Bytes queued.
    pub backlog_bytes: u64,
    /// Cumulative counters.
    pub stats: LinkStats,
}

/// One link direction's results.
#[derive(Clone, Debug)]
pub struct LinkResult {
    /// `<link>/<up|down>`.
    pub name: String,
    /// Counters.
    pub stats: LinkStats,
    /// Packets still queued at the end.
    pub backlog_packets: u64,
    /// Its state at every sample.
    pub samples: Vec<LinkSample>,
}

/// One delivered message (a row of `messages.csv`).
///
/// Field order is the sort order of [`SimResults::messages`]: flow,
/// stream, message number, then the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageRecord {
    /// Index of the flow in [`SimResults::flows`].
    pub flow: usize,
    /// Stream id.
    pub stream: u16,
    /// Message number within the stream (0-based, in queueing order).
    pub number: u32,
    /// When the sender's application queued it, ns.
    pub queued_ns: u64,
    /// Queued at the sender → delivered to the receiving application, ns.
    pub latency_ns: u64,
    /// Its size, bytes.
    pub bytes: u32,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct SimResults {
    /// Scenario name.
    pub name: String,
    /// Seed.
    pub seed: u64,
    /// Simulated duration, ns.
    pub duration_ns: u64,
    /// Sampling interval, ns.
    pub interval_ns: u64,
    /// Events processed.
    pub events: u64,
    /// Flows.
    pub flows: Vec<FlowResult>,
    /// Link directions.
    pub links: Vec<LinkResult>,
    /// Delivered messages, sorted by (flow, stream, number).
    pub messages: Vec<MessageRecord>,
    /// The wireless world's routes and MAC counters (wireless scenarios).
    pub wireless: Option<crate::engine::wireless::WirelessResult>,
    /// The `[[flow_groups]]` (empty without groups).
    pub groups: Vec<super::groups::GroupResult>,
    /// `vehicular.handover = "make_before_break"`: the unicast and the
    /// make-before-break group stream across the handovers (issue 29).
    pub handover_multicast: Option<crate::engine::handover::HandoverResult>,
}

/// `summary.json`'s `flows[].loss_attribution`: per ground truth, the
/// dropped DATA packets a hint covered and those none did, plus the hints.
fn loss_attribution(m: &super::FlowMetrics) -> Value {
    use super::LossCause;
    let mut out = Map::new();
    for cause in [
        LossCause::Blockage,
        LossCause::Fade,
        LossCause::QueueOverflow,
    ] {
        let (mut hinted, mut unhinted) = (0u64, 0u64);
        for l in m.losses.iter().filter(|l| l.cause == cause) {
            if m.hinted(l.at_ns) {
                hinted += 1;
            } else {
                unhinted += 1;
            }
        }
        out.insert(
            cause.name().to_string(),
            json!({ "hinted": hinted, "unhinted": unhinted }),
        );
    }
    out.insert("hints".to_string(), json!(m.hints.len()));
    Value::Object(out)
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// Round for JSON so that output is short and stable.
fn r6(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 1e6).round() / 1e6)
    } else {
        Value::Null
    }
}

fn opt(x: Option<f64>) -> Value {
    x.map_or(Value::Null, r6)
}

impl FlowResult {
    /// Throughput (received DATA wire bytes), bit/s over the flow's active time.
    pub fn throughput_bps(&self, duration_ns: u64) -> f64 {
        self.metrics.c.rx_bytes as f64 * 8.0 / self.active_s(duration_ns)
    }
    /// Goodput (message bytes delivered), bit/s.
    pub fn goodput_bps(&self, duration_ns: u64) -> f64 {
        self.metrics.c.goodput_bytes as f64 * 8.0 / self.active_s(duration_ns)
    }
    /// Processed load, bit/s.
    pub fn processed_bps(&self, duration_ns: u64) -> f64 {
        self.metrics.c.processed_bytes as f64 * 8.0 / self.active_s(duration_ns)
    }
    fn active_s(&self, duration_ns: u64) -> f64 {
        (duration_ns.saturating_sub(self.start_ns)).max(1) as f64 / 1e9
    }
    /// Packet delivery ratio of DATA packets (0–1).
    pub fn pdr(&self) -> Option<f64> {
        let c = &self.metrics.c;
        (c.tx_packets > 0).then(|| c.rx_packets as f64 / c.tx_packets as f64)
    }
    /// Mean one-way delay, ms.
    pub fn delay_mean_ms(&self) -> Option<f64> {
        self.metrics.delays.mean().map(ms)
    }
    /// A one-way delay quantile, ms.
    pub fn delay_ms(&self, q: f64) -> Option<f64> {
        self.metrics.delays.quantile(q).map(|x| ms(x as f64))
    }
    /// A one-way delay quantile of the DATA packets received after
    /// `metrics.warmup`, ms (`None` without a warm-up or such packets).
    pub fn delay_after_warmup_ms(&self, q: f64) -> Option<f64> {
        self.metrics
            .delays_after_warmup
            .quantile(q)
            .map(|x| ms(x as f64))
    }
    /// Completion: the last finite application's completion, ns since the flow's start.
    pub fn completion_ns(&self) -> Option<u64> {
        let finite: Vec<_> = self.metrics.streams.iter().filter(|s| s.finite).collect();
        if finite.is_empty() {
            return None;
        }
        finite
            .iter()
            .map(|s| s.completed_ns.map(|c| c - self.start_ns))
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .max()
    }
}

/// Round to 6 decimals, as every number of `summary.json` is (short,
/// stable output). O(1).
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// A stream's message latencies, as in `summary.json` (ms, 6 decimals).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LatencySummary {
    /// Messages delivered.
    pub count: usize,
    /// Mean latency (`None`: no message delivered).
    pub mean_ms: Option<f64>,
    /// Median.
    pub p50_ms: Option<f64>,
    /// 95th percentile.
    pub p95_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// Largest.
    pub max_ms: Option<f64>,
}

impl LatencySummary {
    /// The summary of `lat` (ns, any order). O(n log n).
    pub fn of(lat: &[u64]) -> LatencySummary {
        let mut v = lat.to_vec();
        v.sort_unstable();
        let mean =
            (!v.is_empty()).then(|| v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64);
        let q = |p: f64| quantile(&v, p, NearestRank).map(|x| round6(ms(x as f64)));
        LatencySummary {
            count: v.len(),
            mean_ms: mean.map(|m| round6(ms(m))),
            p50_ms: q(0.5),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            max_ms: v.last().map(|x| round6(ms(*x as f64))),
        }
    }
}

/// One stream's results, as in `summary.json` (`flows[i].streams[j]`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StreamSummary {
    /// Stream id.
    pub id: u16,
    /// Application kind.
    pub app: &'static str,
    /// Messages queued by the application.
    pub messages_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// Messages delivered to the receiving application.
    pub messages_delivered: u64,
    /// Their bytes.
    pub bytes_delivered: u64,
    /// Messages the sender abandoned.
    pub messages_abandoned: u64,
    /// Goodput over the stream's active time, bit/s (6 decimals).
    pub goodput_bps: f64,
    /// Completion of a finite application, s since its start (6 decimals).
    pub completion_s: Option<f64>,
    /// Message latencies.
    pub latency: LatencySummary,
}

impl StreamSummary {
    /// The summary of `s` in a run of `duration_ns`. O(n log n) in its messages.
    pub fn of(s: &super::StreamMetrics, duration_ns: u64) -> StreamSummary {
        StreamSummary {
            id: s.id,
            app: s.app,
            messages_sent: s.messages_sent,
            bytes_sent: s.bytes_sent,
            messages_delivered: s.messages_delivered,
            bytes_delivered: s.bytes_delivered,
            messages_abandoned: s.messages_abandoned,
            goodput_bps: round6(s.goodput_bps(duration_ns)),
            completion_s: s
                .completed_ns
                .map(|c| round6((c - s.start_ns) as f64 / 1e9)),
            latency: LatencySummary::of(&s.latencies_ns),
        }
    }
}

impl SimResults {
    /// Latencies of the delivered messages of stream `stream` of flow
    /// `flow`, ms, in (message number) order. O(messages).
    pub fn message_latencies_ms(&self, flow: usize, stream: u16) -> Vec<f64> {
        self.messages
            .iter()
            .filter(|m| m.flow == flow && m.stream == stream)
            .map(|m| m.latency_ns as f64 / 1e6)
            .collect()
    }

    /// The summary of stream `index` (configuration order) of flow `flow`,
    /// as in `summary.json`; `None` if there is no such stream.
    pub fn stream_summary(&self, flow: usize, index: usize) -> Option<StreamSummary> {
        let s = self.flows.get(flow)?.metrics.streams.get(index)?;
        Some(StreamSummary::of(s, self.duration_ns))
    }

    /// Jain's index over the throughput of the flows crossing each link
    /// direction used by at least two flows: (link direction, index).
    pub fn fairness(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        for l in &self.links {
            let xs: Vec<f64> = self
                .flows
                .iter()
                .filter(|f| f.path.contains(&l.name))
                .map(|f| f.throughput_bps(self.duration_ns))
                .collect();
            if xs.len() >= 2 {
                if let Some(j) = jain_index(&xs) {
                    out.push((l.name.clone(), j));
                }
            }
        }
        out
    }

    /// The summary as JSON, keys in a fixed order.
    pub fn summary_json(&self) -> Value {
        let dur_s = self.duration_ns as f64 / 1e9;
        let flows: Vec<Value> = self
            .flows
            .iter()
            .map(|f| {
                let m = &f.metrics;
                let pct = |bps: f64| f.path_rate_bps.map(|r| 100.0 * bps / r);
                let cw: Vec<f64> = m.samples.iter().map(|s| s.cwnd_bytes as f64).collect();
                let (cw_mean, cw_std) = mean_std(&cw).unwrap_or((0.0, 0.0));
                let st = f.stats.as_ref();
                let streams: Vec<Value> = m
                    .streams
                    .iter()
                    .map(|s| {
                        // A struct of numbers and strings: to_value cannot fail.
                        serde_json::to_value(StreamSummary::of(s, self.duration_ns))
                            .unwrap_or(Value::Null)
                    })
                    .collect();
                let mut flow = json!({
                    "name": f.name,
                    "src": f.src,
                    "dst": f.dst,
                    "cc": f.cc,
                    "scheduler": f.scheduler,
                    "path": f.path,
                    "tx_packets": m.c.tx_packets,
                    "tx_bytes": m.c.tx_bytes,
                    "rx_packets": m.c.rx_packets,
                    "rx_bytes": m.c.rx_bytes,
                    "pdr": opt(f.pdr()),
                    "throughput_bps": r6(f.throughput_bps(self.duration_ns)),
                    "goodput_bps": r6(f.goodput_bps(self.duration_ns)),
                    "processed_load_bps": r6(f.processed_bps(self.duration_ns)),
                    "reference_rate_bps": opt(f.path_rate_bps),
                    "throughput_pct": opt(pct(f.throughput_bps(self.duration_ns))),
                    "processed_load_pct": opt(pct(f.processed_bps(self.duration_ns))),
                    "delay_ms": {
                        "mean": opt(f.delay_mean_ms()),
                        "p50": opt(f.delay_ms(0.5)),
                        "p95": opt(f.delay_ms(0.95)),
                        "p99": opt(f.delay_ms(0.99)),
                    },
                    "jitter_ms": {
                        "rfc3550": r6(ms(m.jitter_ns)),
                        "mean_abs": opt(m.jitter_abs_ns.mean().map(ms)),
                    },
                    "messages_delivered": m.c.messages_delivered,
                    "completion_s": opt(f.completion_ns().map(|c| c as f64 / 1e9)),
                    "cwnd_bytes": { "final": st.map(|s| s.cwnd_bytes), "mean": r6(cw_mean), "std": r6(cw_std) },
                    "cwnd_cma_bytes": r6(m.cwnd_cma()),
                    "cwnd_changes": m.cwnd_changes,
                    "srtt_ms_final": opt(st.and_then(|s| s.srtt).map(|d| d.as_secs_f64() * 1e3)),
                    "drops": {
                        "queue": m.c.queue_drops,
                        "channel": m.c.channel_drops,
                        "queue_per_s": r6(m.c.queue_drops as f64 / dur_s),
                        "channel_per_s": r6(m.c.channel_drops as f64 / dur_s),
                    },
                    "retransmissions": st.map_or(0, |s| s.packets_retransmitted),
                    "rtos": st.map_or(0, |s| s.rtos),
                    "streams": streams,
                });
                // Only runs with `metrics.warmup` carry the quantiles
                // after it (other summaries print as before).
                if let (Some(w), Some(d)) = (m.warmup_ns, flow.get_mut("delay_ms")) {
                    d["after_warmup"] = json!({
                        "from_s": w as f64 / 1e9,
                        "p50": opt(f.delay_after_warmup_ms(0.5)),
                        "p95": opt(f.delay_after_warmup_ms(0.95)),
                        "p99": opt(f.delay_after_warmup_ms(0.99)),
                    });
                }
                // Only flows whose sender received link hints carry the
                // attribution counters (other summaries print as before).
                if let (false, Some(obj)) = (m.hints.is_empty(), flow.as_object_mut()) {
                    obj.insert("loss_attribution".to_string(), loss_attribution(m));
                }
                // Only encrypted flows carry the key: unencrypted summaries
                // stay byte-identical to those before encryption existed.
                if let (Some(p), Some(obj)) = (f.security, flow.as_object_mut()) {
                    let sec = st.map(|s| s.security).unwrap_or_default();
                    obj.insert(
                        "security".to_string(),
                        json!({
                            "pattern": p.protocol_name(),
                            "encrypted": sec.encrypted,
                            "aead": sec.aead.map(|a| a.name()),
                            "packets_sealed": sec.packets_sealed,
                            "packets_opened": sec.packets_opened,
                            "auth_failures": sec.auth_failures,
                            "replays_dropped": sec.replays_dropped,
                        }),
                    );
                }
                flow
            })
            .collect();
        let links: Vec<Value> = self
            .links
            .iter()
            .map(|l| {
                let s = &l.stats;
                let mut j = json!({
                    "name": l.name,
                    "enqueued_packets": s.enqueued_packets,
                    "delivered_packets": s.delivered_packets,
                    "delivered_bytes": s.delivered_bytes,
                    "queue_drops": s.queue_drops,
                    "channel_drops": s.channel_drops,
                    "outage_drops": s.outage_drops,
                    "max_queue_packets": s.max_queue_packets,
                    "wasted_opportunities": s.wasted_opportunities,
                });
                // Only links with an `mtu` drop for size: the key appears
                // when one did, so runs without `mtu` print as before.
                if s.mtu_drops > 0 {
                    j["mtu_drops"] = json!(s.mtu_drops);
                }
                // Only links with an AQM: their discipline, CE marks and
                // AQM drops (drop-tail links print as before).
                if let Some(aqm) = s.aqm {
                    j["aqm"] = json!(aqm);
                    j["ce_marked"] = json!(s.ce_marked);
                    j["aqm_dropped"] = json!(s.aqm_dropped);
                }
                j
            })
            .collect();
        let mut fair = Map::new();
        for (l, j) in self.fairness() {
            fair.insert(l, r6(j));
        }
        let all: Vec<f64> = self
            .flows
            .iter()
            .map(|f| f.throughput_bps(self.duration_ns))
            .collect();
        let mut out = json!({
            "scenario": self.name,
            "seed": self.seed,
            "duration_s": r6(dur_s),
            "events": self.events,
            "flows": flows,
            "links": links,
            "fairness": { "all_flows": opt(if all.len() >= 2 { jain_index(&all) } else { None }), "per_link": fair },
        });
        // Wired scenarios keep exactly their former summary.
        if let (Some(w), Some(obj)) = (&self.wireless, out.as_object_mut()) {
            obj.insert("wireless".to_string(), w.to_json());
        }
        // Likewise only scenarios with flow groups carry their digest.
        if let (false, Some(obj)) = (self.groups.is_empty(), out.as_object_mut()) {
            let groups: Vec<Value> = self.groups.iter().map(|g| g.to_json(&self.flows)).collect();
            obj.insert("flow_groups".to_string(), Value::Array(groups));
        }
        // And only make-before-break worlds their handover streams.
        if let (Some(h), Some(obj)) = (&self.handover_multicast, out.as_object_mut()) {
            obj.insert("handover_multicast".to_string(), h.to_json());
        }
        out
    }

    /// Write `summary.json`, `flows.csv`, `links.csv`, `timeseries.csv`,
    /// `stream_timeseries.csv`, `link_timeseries.csv` and `messages.csv`
    /// into `dir`; with flow groups also `streams.csv` (one row per
    /// stream of every flow).
    pub fn write_to(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut json =
            serde_json::to_string_pretty(&self.summary_json()).map_err(std::io::Error::other)?;
        json.push('\n');
        std::fs::write(dir.join("summary.json"), json)?;
        std::fs::write(dir.join("flows.csv"), self.flows_csv())?;
        std::fs::write(dir.join("timeseries.csv"), self.timeseries_csv())?;
        std::fs::write(
            dir.join("stream_timeseries.csv"),
            self.stream_timeseries_csv(),
        )?;
        std::fs::write(dir.join("links.csv"), self.links_csv())?;
        std::fs::write(dir.join("link_timeseries.csv"), self.link_timeseries_csv())?;
        std::fs::write(dir.join("messages.csv"), self.messages_csv())?;
        std::fs::write(dir.join("losses.csv"), self.losses_csv())?;
        if !self.groups.is_empty() {
            std::fs::write(
                dir.join("streams.csv"),
                super::groups::streams_csv(&self.flows, &self.groups),
            )?;
        }
        Ok(())
    }

    /// The per-loss attribution log: one row per forward DATA packet the
    /// network dropped, in flow then time order — when, the flow, the
    /// ground truth (`blockage`, `fade`, `queue_overflow`) and whether a
    /// link hint given to the sender announced an outage covering that
    /// instant. O(losses × hints per flow).
    pub fn losses_csv(&self) -> String {
        let mut s = String::from("time_s,flow,cause,hinted\n");
        for f in &self.flows {
            for l in &f.metrics.losses {
                let _ = writeln!(
                    s,
                    "{:.9},{},{},{}",
                    l.at_ns as f64 / 1e9,
                    f.name,
                    l.cause.name(),
                    f.metrics.hinted(l.at_ns)
                );
            }
        }
        s
    }

    /// One row per flow.
    pub fn flows_csv(&self) -> String {
        let mut s = String::from("flow,cc,scheduler,tx_packets,rx_packets,pdr,throughput_bps,goodput_bps,processed_load_bps,delay_ms_mean,delay_ms_p50,delay_ms_p95,delay_ms_p99,jitter_ms,cwnd_cma_bytes,queue_drops,channel_drops,retransmissions,rtos,completion_s\n");
        for f in &self.flows {
            let mean = f.delay_mean_ms();
            let p = |q| f.delay_ms(q);
            let st = f.stats.as_ref();
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{:.3},{:.3},{:.3},{},{},{},{},{:.6},{:.3},{},{},{},{},{}",
                f.name,
                f.cc,
                f.scheduler,
                f.metrics.c.tx_packets,
                f.metrics.c.rx_packets,
                fmt_opt(f.pdr(), 6),
                f.throughput_bps(self.duration_ns),
                f.goodput_bps(self.duration_ns),
                f.processed_bps(self.duration_ns),
                fmt_opt(mean, 6),
                fmt_opt(p(0.5), 6),
                fmt_opt(p(0.95), 6),
                fmt_opt(p(0.99), 6),
                ms(f.metrics.jitter_ns),
                f.metrics.cwnd_cma(),
                f.metrics.c.queue_drops,
                f.metrics.c.channel_drops,
                st.map_or(0, |x| x.packets_retransmitted),
                st.map_or(0, |x| x.rtos),
                fmt_opt(f.completion_ns().map(|c| c as f64 / 1e9), 6),
            );
        }
        s
    }

    /// One row per flow and sample.
    pub fn timeseries_csv(&self) -> String {
        let iv = self.interval_ns as f64 / 1e9;
        let mut s = String::from("time_s,flow,tx_packets,rx_packets,throughput_bps,goodput_bps,processed_load_bps,cwnd_bytes,ssthresh_bytes,srtt_ms,cwnd_cma_bytes,delay_ms_mean,queue_drops_per_s,channel_drops_per_s,retransmissions,rtos\n");
        for f in &self.flows {
            let mut prev_t = 0u64;
            for x in &f.metrics.samples {
                let span = ((x.time_ns - prev_t) as f64 / 1e9).max(1e-9);
                prev_t = x.time_ns;
                let d = &x.delta;
                let _ = writeln!(
                    s,
                    "{:.6},{},{},{},{:.3},{:.3},{:.3},{},{},{},{:.3},{},{:.3},{:.3},{},{}",
                    x.time_ns as f64 / 1e9,
                    f.name,
                    d.tx_packets,
                    d.rx_packets,
                    d.rx_bytes as f64 * 8.0 / span,
                    d.goodput_bytes as f64 * 8.0 / span,
                    d.processed_bytes as f64 * 8.0 / span,
                    x.cwnd_bytes,
                    x.ssthresh_bytes.map_or(String::new(), |v| v.to_string()),
                    fmt_opt(x.srtt_ns.map(|v| ms(v as f64)), 3),
                    x.cwnd_cma_bytes,
                    fmt_opt(x.delay_mean_ns.map(ms), 6),
                    d.queue_drops as f64 / span,
                    d.channel_drops as f64 / span,
                    x.retransmissions,
                    x.rtos,
                );
            }
            let _ = iv;
        }
        s
    }

    /// One row per stream and sample: bytes delivered in the interval.
    pub fn stream_timeseries_csv(&self) -> String {
        let mut s = String::from("time_s,flow,stream,bytes_delivered,goodput_bps\n");
        for f in &self.flows {
            for st in &f.metrics.streams {
                let mut prev = 0u64;
                let mut prev_t = 0u64;
                for (i, b) in st.series_bytes.iter().enumerate() {
                    let t = f.metrics.samples.get(i).map_or(0, |x| x.time_ns);
                    let span = ((t.saturating_sub(prev_t)) as f64 / 1e9).max(1e-9);
                    let _ = writeln!(
                        s,
                        "{:.6},{},{},{},{:.3}",
                        t as f64 / 1e9,
                        f.name,
                        st.id,
                        b - prev,
                        (b - prev) as f64 * 8.0 / span
                    );
                    prev = *b;
                    prev_t = t;
                }
            }
        }
        s
    }

    /// One row per link direction.
    pub fn links_csv(&self) -> String {
        let mut s = String::from("link,enqueued_packets,delivered_packets,delivered_bytes,queue_drops,channel_drops,outage_drops,max_queue_packets,wasted_opportunities\n");
        for l in &self.links {
            let x = &l.stats;
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{}",
                l.name,
                x.enqueued_packets,
                x.delivered_packets,
                x.delivered_bytes,
                x.queue_drops,
                x.channel_drops,
                x.outage_drops,
                x.max_queue_packets,
                x.wasted_opportunities
            );
        }
        s
    }

    /// One row per link direction and sample: queue length at the sample,
    /// deliveries and drops over the interval.
    pub fn link_timeseries_csv(&self) -> String {
        let mut s = String::from("time_s,link,queue_packets,queue_bytes,delivered_packets,delivered_bps,queue_drops,channel_drops,outage_drops\n");
        for l in &self.links {
            let mut prev = LinkStats::default();
            let mut prev_t = 0u64;
            for x in &l.samples {
                let span = ((x.time_ns - prev_t) as f64 / 1e9).max(1e-9);
                let st = &x.stats;
                let _ = writeln!(
                    s,
                    "{:.6},{},{},{},{},{:.3},{},{},{}",
                    x.time_ns as f64 / 1e9,
                    l.name,
                    x.backlog_packets,
                    x.backlog_bytes,
                    st.delivered_packets - prev.delivered_packets,
                    (st.delivered_bytes - prev.delivered_bytes) as f64 * 8.0 / span,
                    st.queue_drops - prev.queue_drops,
                    st.channel_drops - prev.channel_drops,
                    st.outage_drops - prev.outage_drops,
                );
                prev = st.clone();
                prev_t = x.time_ns;
            }
        }
        s
    }

    /// One row per delivered message.
    pub fn messages_csv(&self) -> String {
        let mut s = String::from("flow,stream,message,queued_s,latency_ms,bytes\n");
        for m in &self.messages {
            let name = self.flows.get(m.flow).map_or("", |x| x.name.as_str());
            let _ = writeln!(
                s,
                "{name},{},{},{:.9},{:.6},{}",
                m.stream,
                m.number,
                m.queued_ns as f64 / 1e9,
                ms(m.latency_ns as f64),
                m.bytes
            );
        }
        s
    }

    /// The readable summary printed by `peregrine sim`.
    pub fn print_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "scenario {} · seed {} · {} s simulated · {} events",
            self.name,
            self.seed,
            self.duration_ns as f64 / 1e9,
            self.events
        );
        // Group members are shown as their group's digest (below).
        let member = |i: usize| self.groups.iter().any(|g| g.flows.contains(&i));
        let flow_table = self.groups.is_empty() || (0..self.flows.len()).any(|i| !member(i));
        if flow_table {
            let _ = writeln!(s);
            let _ = writeln!(s, "{:<10} {:<9} {:>9} {:>9} {:>7} {:>11} {:>11} {:>10} {:>9} {:>9} {:>9} {:>6} {:>6} {:>5}",
                "flow", "cc", "tx pkts", "rx pkts", "PDR %", "thru Mb/s", "good Mb/s", "proc Mb/s", "delay ms", "p99 ms", "jitter", "qdrop", "chdrop", "RTOs");
        }
        for f in self
            .flows
            .iter()
            .enumerate()
            .filter(|(i, _)| !member(*i))
            .map(|(_, f)| f)
        {
            let _ = write!(s, "{:<10} {:<9} {:>9} {:>9} {:>7} {:>11.3} {:>11.3} {:>10.3} {:>9} {:>9} {:>9.3} {:>6} {:>6} {:>5}",
                f.name, f.cc, f.metrics.c.tx_packets, f.metrics.c.rx_packets,
                fmt_opt(f.pdr().map(|p| p * 100.0), 2),
                f.throughput_bps(self.duration_ns) / 1e6, f.goodput_bps(self.duration_ns) / 1e6, f.processed_bps(self.duration_ns) / 1e6,
                fmt_opt(f.delay_mean_ms(), 2), fmt_opt(f.delay_ms(0.99), 2), ms(f.metrics.jitter_ns),
                f.metrics.c.queue_drops, f.metrics.c.channel_drops, f.stats.as_ref().map_or(0, |x| x.rtos));
            match f.failure() {
                Some(why) => writeln!(s, "  ✗ {}", why.as_str()),
                None => writeln!(s),
            }
            .ok();
        }
        if flow_table {
            s.push_str(super::failures::FLOW_TABLE_LEGEND);
        }
        let streams: Vec<_> = self
            .flows
            .iter()
            .enumerate()
            .filter(|(i, _)| !member(*i))
            .flat_map(|(_, f)| f.metrics.streams.iter().map(move |st| (f, st)))
            .collect();
        if streams.len() > 1 || streams.iter().any(|(_, st)| st.app != "bulk") {
            let _ = writeln!(s);
            let _ = writeln!(
                s,
                "{:<10} {:>6} {:<6} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>11}",
                "flow",
                "stream",
                "app",
                "msgs",
                "delivered",
                "lat mean",
                "lat p50",
                "lat p95",
                "lat p99",
                "complete s"
            );
            for (f, st) in streams {
                let mut v = st.latencies_ns.clone();
                v.sort_unstable();
                let mean = (!v.is_empty())
                    .then(|| v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64);
                let p = |q| fmt_opt(quantile(&v, q, NearestRank).map(|x| ms(x as f64)), 2);
                let _ = writeln!(
                    s,
                    "{:<10} {:>6} {:<6} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>11}",
                    f.name,
                    st.id,
                    st.app,
                    st.messages_sent,
                    st.messages_delivered,
                    fmt_opt(mean.map(ms), 2),
                    p(0.5),
                    p(0.95),
                    p(0.99),
                    fmt_opt(st.completed_ns.map(|c| (c - st.start_ns) as f64 / 1e9), 3)
                );
            }
            s.push_str(super::failures::STREAM_TABLE_LEGEND);
        }
        for g in &self.groups {
            let _ = writeln!(s);
            g.print(&self.flows, &mut s);
        }
        if !self.groups.is_empty() {
            s.push_str(super::failures::GROUP_DIGEST_LEGEND);
        }
        let fair = self.fairness();
        if !fair.is_empty() {
            let _ = writeln!(s);
            for (l, j) in fair {
                let _ = writeln!(s, "Jain fairness on {l}: {j:.4}");
            }
            s.push_str(super::failures::FAIRNESS_LEGEND);
        }
        s
    }
}

fn fmt_opt(x: Option<f64>, prec: usize) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.prec$}"))
}
