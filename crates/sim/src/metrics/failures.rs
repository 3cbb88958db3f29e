//! Flows that failed: a run must never look fine when a flow never
//! connected or delivered nothing (issue 27). [`SimResults::failed_flows`]
//! lists them; the table marks them and `peregrine sim` warns on stderr
//! and exits non-zero when every flow failed.
//!
//! The column legends printed under the summary tables live here too, so
//! every column of [`SimResults::print_table`] is explained where it is
//! printed.

use super::output::{FlowResult, SimResults};

/// Why a flow counts as failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowFailure {
    /// The handshake never completed.
    NeverConnected,
    /// Connected, but no message byte reached the receiving application.
    DeliveredNothing,
}

impl FlowFailure {
    /// Words for the table and stderr.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowFailure::NeverConnected => "never connected",
            FlowFailure::DeliveredNothing => "delivered nothing",
        }
    }
}

impl FlowResult {
    /// Whether (and why) this flow failed. O(1).
    pub fn failure(&self) -> Option<FlowFailure> {
        if self.metrics.connected_ns.is_none() {
            Some(FlowFailure::NeverConnected)
        } else if self.metrics.c.goodput_bytes == 0 {
            Some(FlowFailure::DeliveredNothing)
        } else {
            None
        }
    }
}

impl SimResults {
    /// `(flow index, why)` for every failed flow, in flow order. O(flows).
    pub fn failed_flows(&self) -> Vec<(usize, FlowFailure)> {
        self.flows
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.failure().map(|why| (i, why)))
            .collect()
    }

    /// True when the run has flows and every one of them failed. O(flows).
    pub fn all_flows_failed(&self) -> bool {
        !self.flows.is_empty() && self.flows.iter().all(|f| f.failure().is_some())
    }

    /// One stderr line per failed flow (empty when none failed), e.g.
    /// `warning: flow bulk-1 never connected (0 of 12 packets received)`.
    /// O(flows).
    pub fn failure_warnings(&self) -> String {
        let mut s = String::new();
        for (i, why) in self.failed_flows() {
            let f = &self.flows[i];
            s.push_str(&format!(
                "warning: flow {} ({} → {}) {} ({} of {} DATA packets received)\n",
                f.name,
                f.src,
                f.dst,
                why.as_str(),
                f.metrics.c.rx_packets,
                f.metrics.c.tx_packets
            ));
        }
        s
    }
}

/// The legend printed under the per-flow table.
pub const FLOW_TABLE_LEGEND: &str = "  tx/rx pkts: DATA packets sent / received · PDR %: received ÷ sent
  thru: received DATA wire bytes · good: message bytes delivered to the app
  proc: DATA wire bytes that left the sender's first-hop queue (all Mbit/s over the flow's active time)
  delay, p99: one-way DATA delay, mean and 99th percentile · jitter: RFC 3550 estimate, ms
  qdrop / chdrop: packets dropped by queues / by the channel · RTOs: retransmission timeouts
  ✗: the flow never connected or delivered nothing
";

/// The legend printed under the per-stream table.
pub const STREAM_TABLE_LEGEND: &str =
    "  msgs / delivered: messages queued by the sender / delivered to the receiving app
  lat: message latency, queued at the sender → delivered, ms (mean, 50th, 95th, 99th percentile)
  complete s: when a finite application finished, seconds after it started (- : not finished)
";

/// The legend printed under the flow-group digests.
pub const GROUP_DIGEST_LEGEND: &str =
    "  connected: members whose handshake completed · accepted: connections the server endpoint admitted
  rejects sent: connection attempts the server turned away (admission control)
  N/M messages delivered: N delivered to the server's app of the M the stream's members queued
  per-member p99 latency: each member's 99th-percentile message latency (queued → delivered), ms;
    min · median · max over the members that delivered a message
  worst p99: the members with the largest p99, worst first, ms
";

/// The legend printed under the fairness lines.
pub const FAIRNESS_LEGEND: &str =
    "  Jain fairness: (Σx)² ÷ (n · Σx²) over the throughput x of the n flows crossing the link direction; 1 = equal shares, 1/n = one flow takes all
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_fails_until_it_connects_and_delivers() {
        let mut f = FlowResult {
            name: "f".into(),
            src: "a".into(),
            dst: "b".into(),
            cc: "cubic",
            scheduler: "rr",
            start_ns: 0,
            path: Vec::new(),
            path_rate_bps: None,
            security: None,
            stats: None,
            metrics: Default::default(),
        };
        assert_eq!(f.failure(), Some(FlowFailure::NeverConnected));
        f.metrics.connected_ns = Some(5);
        assert_eq!(f.failure(), Some(FlowFailure::DeliveredNothing));
        f.metrics.c.goodput_bytes = 1;
        assert_eq!(f.failure(), None);
    }
}
