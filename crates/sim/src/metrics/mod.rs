//! Measurements, collected while the simulation runs.
//!
//! Per flow (one connection) and per stream, the engine records:
//! DATA packets and wire bytes the sender emitted and the receiver's node
//! got (PDR = received / sent), throughput (received DATA wire bytes) and
//! goodput (message bytes delivered to the application), **processed
//! load** (seed 001 §3.2: the data iterated through the sender's
//! drop-tail transmit queue — wire bytes of DATA packets that left the
//! flow's first-hop queue), one-way delay of every DATA packet (mean,
//! p50, p95, p99 — from a log-linear histogram, within 0.05 %), jitter (RFC 3550 §6.4.1 estimator, and the mean
//! |ΔD| that ns-3's FlowMonitor reports), message latency (queued at the
//! sender → delivered to the receiving application), completion time of
//! finite applications, drops (queue vs channel, per second), and the
//! sender's cwnd / ssthresh / srtt, retransmissions and RTOs. The CMA of
//! |Δcwnd| is seed 001 Eq. 6 taken over every observed cwnd change: the
//! engine reads cwnd after each interaction with the sender's endpoint.
//! Time series are sampled every `metrics.interval`.

pub mod failures;
pub mod groups;
pub mod handover;
mod hist;
pub mod output;
pub mod quantile;
mod stats;

pub use hist::LogHistogram;
pub use output::{round6, LatencySummary, MessageRecord, SimResults, StreamSummary};
pub use quantile::{quantile, QuantileMethod};
pub use stats::jain_index;

/// Cumulative counters of one flow (the time series are their deltas).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowCounters {
    /// DATA packets emitted by the sender.
    pub tx_packets: u64,
    /// Their wire bytes.
    pub tx_bytes: u64,
    /// DATA packets that reached the receiver's node.
    pub rx_packets: u64,
    /// Their wire bytes.
    pub rx_bytes: u64,
    /// Wire bytes of DATA packets that left the sender's first-hop queue.
    pub processed_bytes: u64,
    /// Message bytes delivered to the receiving application.
    pub goodput_bytes: u64,
    /// Messages delivered.
    pub messages_delivered: u64,
    /// Packets of this flow (either direction) dropped by a full queue.
    pub queue_drops: u64,
    /// Packets of this flow (either direction) lost on a channel, to an
    /// outage, or for lack of a route.
    pub channel_drops: u64,
}

/// One sample of a flow's time series.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSample {
    /// End of the interval, ns.
    pub time_ns: u64,
    /// Counter deltas over the interval.
    pub delta: FlowCounters,
    /// cwnd at the sample, bytes.
    pub cwnd_bytes: u64,
    /// ssthresh, bytes (`None` = infinite).
    pub ssthresh_bytes: Option<u64>,
    /// Smoothed RTT, ns.
    pub srtt_ns: Option<u64>,
    /// CMA of |Δcwnd| so far, bytes.
    pub cwnd_cma_bytes: f64,
    /// Mean one-way delay of DATA packets received in the interval, ns.
    pub delay_mean_ns: Option<f64>,
    /// Retransmitted packets so far.
    pub retransmissions: u64,
    /// RTOs so far.
    pub rtos: u64,
}

/// Per-stream measurements.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamMetrics {
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
    /// Messages the sender abandoned (deadline, unreliable loss).
    pub messages_abandoned: u64,
    /// Latency of each delivered message, ns, in delivery order.
    pub latencies_ns: Vec<u64>,
    /// Application start, ns.
    pub start_ns: u64,
    /// When the last message of a finite application was delivered.
    pub completed_ns: Option<u64>,
    /// Whether the application offers a finite amount.
    pub finite: bool,
    /// Delivered bytes at each sample (for the stream time series).
    pub series_bytes: Vec<u64>,
}

impl StreamMetrics {
    /// Goodput (message bytes delivered) over the stream's active time
    /// (from its start to `duration_ns`), bit/s. O(1).
    pub fn goodput_bps(&self, duration_ns: u64) -> f64 {
        self.bytes_delivered as f64 * 8.0
            / ((duration_ns.saturating_sub(self.start_ns)).max(1) as f64 / 1e9)
    }
}

/// A running sum and the number of its terms, for a mean taken later.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SumCount<T> {
    /// The sum of the terms.
    pub sum: T,
    /// How many terms were added.
    pub count: u64,
}

impl SumCount<f64> {
    /// The mean of the terms, or `None` before the first. O(1).
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }
}

/// Everything measured for one flow.
#[derive(Clone, Debug, Default)]
pub struct FlowMetrics {
    /// Counters.
    pub c: FlowCounters,
    /// The counters at the previous sample.
    pub last: FlowCounters,
    /// One-way delays of received DATA packets, ns.
    pub delays: LogHistogram,
    /// `metrics.warmup`, ns: when set, [`delays_after_warmup`](Self::delays_after_warmup)
    /// counts the packets received from then on.
    pub warmup_ns: Option<u64>,
    /// One-way delays of the DATA packets received at or after
    /// `warmup_ns` (empty without it), ns.
    pub delays_after_warmup: LogHistogram,
    /// Sum and count of delays in the current interval, ns.
    pub interval_delay_ns: SumCount<u128>,
    /// RFC 3550 jitter estimate, ns.
    pub jitter_ns: f64,
    /// Sum and count of |ΔD| (transit-time differences), ns.
    pub jitter_abs_ns: SumCount<f64>,
    last_transit: Option<i128>,
    /// The latest cwnd seen and the CMA state (sum of |Δ|, changes).
    pub cwnd_last: Option<u64>,
    /// Sum of |Δcwnd|.
    pub cwnd_delta_sum: f64,
    /// Number of cwnd changes.
    pub cwnd_changes: u64,
    /// cwnd samples for mean and standard deviation (at every sample).
    pub samples: Vec<FlowSample>,
    /// Streams, in configuration order.
    pub streams: Vec<StreamMetrics>,
    /// When the connection was established, ns.
    pub connected_ns: Option<u64>,
    /// Every forward DATA packet of the flow the network dropped, in
    /// order (the per-loss attribution log, `losses.csv`).
    pub losses: Vec<LossRecord>,
    /// Every link hint handed to the flow's sender: the outage it
    /// announces (start and predicted length, ns; `None`: unbounded).
    pub hints: Vec<(u64, Option<u64>)>,
}

/// What the network did to a lost DATA packet: the ground truth of the
/// per-loss attribution log (docs/scenarios.md "losses.csv").
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LossCause {
    /// The link was down (a blockage, or the deafness, beam misalignment
    /// or handover cut of an mmWave link) while the packet was on it.
    Blockage,
    /// The channel lost it (a loss model: fading, bit errors, collisions).
    Fade,
    /// A drop-tail queue was full.
    QueueOverflow,
}

impl LossCause {
    /// The name in `losses.csv` and `summary.json`.
    pub fn name(self) -> &'static str {
        match self {
            LossCause::Blockage => "blockage",
            LossCause::Fade => "fade",
            LossCause::QueueOverflow => "queue_overflow",
        }
    }
}

/// One dropped DATA packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LossRecord {
    /// When it was dropped, ns.
    pub at_ns: u64,
    /// Why.
    pub cause: LossCause,
}

impl FlowMetrics {
    /// Whether some hint given to the sender announced an outage covering
    /// `at_ns` (its start at or before, its predicted end at or after).
    /// O(hints).
    pub fn hinted(&self, at_ns: u64) -> bool {
        self.hints
            .iter()
            .any(|&(start, len)| start <= at_ns && len.is_none_or(|l| at_ns <= start + l))
    }
}

impl FlowMetrics {
    /// Empty metrics that also count the delays after `warmup_ns` apart
    /// (`metrics.warmup`; `None`: no such count). O(1).
    pub fn with_warmup(warmup_ns: Option<u64>) -> FlowMetrics {
        FlowMetrics {
            warmup_ns,
            ..FlowMetrics::default()
        }
    }

    /// A DATA packet created at `sent` reached the receiver at `now`.
    pub fn on_data_received(&mut self, sent: u64, now: u64, wire_bytes: u32) {
        self.c.rx_packets += 1;
        self.c.rx_bytes += u64::from(wire_bytes);
        let d = now.saturating_sub(sent);
        self.delays.record(d);
        if self.warmup_ns.is_some_and(|w| now >= w) {
            self.delays_after_warmup.record(d);
        }
        self.interval_delay_ns.sum += u128::from(d);
        self.interval_delay_ns.count += 1;
        // RFC 3550 §6.4.1: D = transit difference; J += (|D| − J) / 16.
        let transit = i128::from(now) - i128::from(sent);
        if let Some(prev) = self.last_transit {
            let dd = (transit - prev).unsigned_abs() as f64;
            self.jitter_ns += (dd - self.jitter_ns) / 16.0;
            self.jitter_abs_ns.sum += dd;
            self.jitter_abs_ns.count += 1;
        }
        self.last_transit = Some(transit);
    }

    /// The sender's cwnd is `cwnd` now: count a change for Eq. 6.
    pub fn observe_cwnd(&mut self, cwnd: u64) {
        if let Some(prev) = self.cwnd_last {
            if prev != cwnd {
                self.cwnd_delta_sum += prev.abs_diff(cwnd) as f64;
                self.cwnd_changes += 1;
            }
        }
        self.cwnd_last = Some(cwnd);
    }

    /// Seed 001 Eq. 6: (1/n) Σ |cwnd_{i−1} − cwnd_i| over the n changes.
    pub fn cwnd_cma(&self) -> f64 {
        if self.cwnd_changes == 0 {
            0.0
        } else {
            self.cwnd_delta_sum / self.cwnd_changes as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwnd_cma_is_equation_6() {
        let mut m = FlowMetrics::default();
        for c in [10, 20, 20, 5, 15] {
            m.observe_cwnd(c);
        }
        // Changes: 10, 15, 10 → mean 35/3.
        assert!((m.cwnd_cma() - 35.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn jitter_follows_rfc3550() {
        let mut m = FlowMetrics::default();
        // Transit times 10, 14, 10 (ns): |D| = 4, 4.
        m.on_data_received(0, 10, 100);
        m.on_data_received(100, 114, 100);
        m.on_data_received(200, 210, 100);
        let j1 = 4.0 / 16.0;
        let j2 = j1 + (4.0 - j1) / 16.0;
        assert!((m.jitter_ns - j2).abs() < 1e-9);
        assert_eq!(m.jitter_abs_ns, SumCount { sum: 8.0, count: 2 });
        assert_eq!(m.jitter_abs_ns.mean(), Some(4.0));
        assert_eq!(m.c.rx_packets, 3);
    }

    #[test]
    fn delays_after_the_warmup_leave_the_start_up_out() {
        let mut m = FlowMetrics::default();
        m.on_data_received(0, 50, 100);
        assert_eq!(
            m.delays_after_warmup.count(),
            0,
            "no warm-up: nothing apart"
        );
        let mut m = FlowMetrics::with_warmup(Some(1_000));
        // Received before 1 µs (a start-up queue), at it and after.
        m.on_data_received(0, 900, 100);
        m.on_data_received(990, 1_000, 100);
        m.on_data_received(1_500, 1_520, 100);
        assert_eq!(m.delays.count(), 3);
        assert_eq!(m.delays_after_warmup.count(), 2);
        assert_eq!(m.delays_after_warmup.quantile(1.0), Some(20));
        assert_eq!(m.delays.quantile(1.0), Some(900));
    }
}
