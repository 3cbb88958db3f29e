//! A snapshot of one connection, for the application, traces and tests.

use super::Connection;
use crate::probe::{ProbeDecision, ProbeResult};
use peregrine_cc::CaState;
use std::time::Duration;

/// The life-cycle state (seed 003 §IV).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConnectionState {
    /// START sent, waiting for its REPLY.
    Starting,
    /// Established.
    Connected,
    /// This side closed: finishing its data, then END with REPLY_REQ.
    EndLocal,
    /// The peer closed first: finishing this side's data, then END with REPLY.
    EndRemote,
    /// END with REPLY sent: waiting for FIN (or the timer).
    TimedClose,
    /// Closed.
    Closed,
}

impl ConnectionState {
    /// The name used in seed 003 (`END_LOCAL`, …).
    pub fn name(self) -> &'static str {
        match self {
            ConnectionState::Starting => "STARTING",
            ConnectionState::Connected => "CONNECTED",
            ConnectionState::EndLocal => "END_LOCAL",
            ConnectionState::EndRemote => "END_REMOTE",
            ConnectionState::TimedClose => "TIMED_CLOSE",
            ConnectionState::Closed => "CLOSED",
        }
    }
}

/// Everything [`Endpoint::stats`](crate::Endpoint::stats) reports.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionStats {
    /// Life-cycle state.
    pub state: ConnectionState,
    /// The controller's registry name.
    pub controller: &'static str,
    /// The controller's mode (BBR: `startup`, …; RTW-TCP: `normal`, `frozen`).
    pub controller_mode: Option<&'static str>,
    /// The controller's bandwidth estimate, bytes per second, if it keeps one.
    pub bandwidth_estimate_bytes_per_sec: Option<u64>,
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes (`None` while infinite).
    pub ssthresh_bytes: Option<u64>,
    /// Pacing rate, bytes per second (`None` = unpaced).
    pub pacing_rate_bytes_per_sec: Option<u64>,
    /// The connection's congestion state.
    pub ca_state: CaState,
    /// Smoothed RTT.
    pub srtt: Option<Duration>,
    /// Minimum RTT.
    pub min_rtt: Option<Duration>,
    /// RTT variation.
    pub rttvar: Option<Duration>,
    /// Latest RTT sample.
    pub latest_rtt: Option<Duration>,
    /// Current RTO, without backoff.
    pub rto: Duration,
    /// Bytes of DATA in flight.
    pub bytes_in_flight: u64,
    /// The peer's receive window, bytes.
    pub peer_window_bytes: u64,
    /// This side's receive-queue bound (the cap on the window it
    /// advertises, the socket-queue sojourn it measured).
    pub receive_queue: crate::connection::QueueBoundStats,
    /// Datagrams sent, all types.
    pub packets_sent: u64,
    /// Bytes of those.
    pub bytes_sent: u64,
    /// Datagrams received and accepted, all types.
    pub packets_received: u64,
    /// Bytes of those.
    pub bytes_received: u64,
    /// DATA packets sent (new data and retransmissions).
    pub data_packets_sent: u64,
    /// DATA packets acknowledged.
    pub packets_acked: u64,
    /// Bytes of those.
    pub bytes_acked: u64,
    /// DATA packets declared lost.
    pub packets_lost: u64,
    /// Bytes of those.
    pub bytes_lost: u64,
    /// DATA packets sent with ST_RET.
    pub packets_retransmitted: u64,
    /// Bytes of those.
    pub bytes_retransmitted: u64,
    /// Losses later proven spurious.
    pub spurious_losses: u64,
    /// Congestion episodes undone as spurious.
    pub undos: u64,
    /// Loss episodes (one per flight).
    pub loss_episodes: u64,
    /// ECN (`Cwr`) episodes.
    pub ecn_episodes: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// `Hold` answers of the controller.
    pub holds: u64,
    /// Idle restarts handed to the controller (a closed peer window's
    /// pause does not count as idle).
    pub idle_restarts: u64,
    /// Messages accepted by `send_message`.
    pub messages_sent: u64,
    /// Messages the peer acknowledged completely.
    pub messages_acked: u64,
    /// Messages delivered to this side's application.
    pub messages_delivered: u64,
    /// ACK packets sent.
    pub acks_sent: u64,
    /// ACK packets received.
    pub acks_received: u64,
    /// NACK packets sent.
    pub nacks_sent: u64,
    /// NACK packets received.
    pub nacks_received: u64,
    /// IDLE keep-alives sent.
    pub keep_alives_sent: u64,
    /// Duplicate packets received.
    pub duplicate_packets: u64,
    /// Packets dropped for a wrong SYNC_NO.
    pub wrong_sync_no: u64,
    /// Packets dropped because they came from another address.
    pub wrong_address: u64,
    /// Packets that were well-formed but broke the protocol (dropped).
    pub protocol_errors: u64,
    /// CE-marked DATA packets received.
    pub ecn_ce_received: u64,
    /// ACKs received that echoed CE.
    pub ecn_echoes_received: u64,
    /// DATA packets received with ECT(0).
    pub ecn_ect0_received: u64,
    /// DATA packets received with ECT(1).
    pub ecn_ect1_received: u64,
    /// DATA packets this side sent ECN-capable (ECT(0) or ECT(1)).
    pub ecn_ect_packets_sent: u64,
    /// The CE count the peer last reported (validated ECN section).
    pub ecn_ce_reported: u64,
    /// The ECT codepoint this side's datagrams carry now (`None`: ECN off,
    /// or it failed validation).
    pub ecn_codepoint: Option<crate::EcnCodepoint>,
    /// Why ECN validation failed on this path, if it did
    /// (`not_reported`, `decreased`, `exceeds_sent`, `undercounted`,
    /// `wrong_codepoint`).
    pub ecn_failure: Option<&'static str>,
    /// Packet-pair tests started.
    pub probes_started: u64,
    /// Packet-pair tests that produced a measurement.
    pub probes_completed: u64,
    /// The latest packet-pair estimate (used or not: see `probe_decision`).
    pub last_probe: Option<ProbeResult>,
    /// The latest packet-pair test's decision: used, or fallback to slow
    /// start and why.
    pub probe_decision: Option<ProbeDecision>,
    /// Window handed to the controller by the start-up probe, bytes.
    pub initial_window_bytes: Option<u64>,
    /// The stream scheduler's name (`rr`, `wfq`, `abs`, `adaptive`, …).
    pub scheduler: &'static str,
    /// The adaptive scheduler's current policy (`abs` or `rr`).
    pub scheduler_mode: Option<&'static str>,
    /// How often the adaptive scheduler switched policy.
    pub scheduler_switches: u64,
    /// The adaptive scheduler's `sBW` estimate at its latest decision,
    /// bits per second.
    pub scheduler_estimate_bps: Option<u64>,
    /// Messages this side abandoned (deadline or unreliable loss).
    pub messages_abandoned: u64,
    /// Skip frames sent.
    pub skips_sent: u64,
    /// Messages the peer abandoned that this side skipped.
    pub messages_skipped: u64,
    /// Per-stream counters of the sending side, by stream id.
    pub streams: Vec<crate::streams::StreamStats>,
    /// The window this side advertises now (free receive buffer, capped
    /// by `set_receive_window`), bytes.
    pub advertised_window_bytes: u64,
    /// Handover-window counters (CWINs, STATUS polls, pauses).
    pub window: super::WindowCounters,
    /// Address migration: challenges, migrations, rejected addresses.
    pub path: super::PathStats,
    /// Path MTU discovery: the current PMTU, the search's bound and
    /// state, probe counters.
    pub pmtu: super::PmtuStats,
    /// Packet protection: sealed/opened datagrams, authentication
    /// failures, replays (all zero when unencrypted).
    pub security: crate::crypto::SecurityStats,
}

impl Connection {
    /// The congestion window, bytes: [`ConnectionStats::cwnd_bytes`]
    /// without the rest of the snapshot. O(1).
    pub(crate) fn cwnd_bytes(&self) -> u64 {
        self.recovery.congestion().cwnd_bytes()
    }

    /// A snapshot of the connection.
    pub(crate) fn stats(&self) -> ConnectionStats {
        let cc = self.recovery.cc_stats();
        let rtt = self.recovery.rtt();
        let rc = self.recovery.counters();
        let cg = self.recovery.congestion().counters();
        let rx = self.recv.counters();
        let tx = self.send.counters();
        let c = &self.counters;
        ConnectionStats {
            state: self.state,
            controller: self.recovery.congestion().controller_name(),
            controller_mode: cc.mode,
            bandwidth_estimate_bytes_per_sec: cc.bandwidth_estimate_bytes_per_sec,
            cwnd_bytes: cc.cwnd_bytes,
            ssthresh_bytes: cc.ssthresh_bytes,
            pacing_rate_bytes_per_sec: cc.pacing_rate_bytes_per_sec,
            ca_state: self.recovery.ca_state(),
            srtt: rtt.srtt(),
            min_rtt: rtt.min_rtt(),
            rttvar: rtt.rttvar(),
            latest_rtt: rtt.latest_rtt(),
            rto: rtt.rto(),
            bytes_in_flight: self.recovery.bytes_in_flight(),
            peer_window_bytes: self.send.peer_window(),
            receive_queue: self.queue_bound.stats(),
            packets_sent: c.packets_sent,
            bytes_sent: c.bytes_sent,
            packets_received: c.packets_received,
            bytes_received: c.bytes_received,
            data_packets_sent: rc.data_packets_sent,
            packets_acked: rc.packets_acked,
            bytes_acked: rc.bytes_acked,
            packets_lost: rc.packets_lost,
            bytes_lost: rc.bytes_lost,
            packets_retransmitted: c.packets_retransmitted,
            bytes_retransmitted: c.bytes_retransmitted,
            spurious_losses: rc.spurious_losses,
            undos: cg.undos,
            loss_episodes: cg.loss_episodes,
            ecn_episodes: cg.ecn_episodes,
            rtos: cg.rtos,
            holds: cg.holds,
            idle_restarts: cg.idle_restarts,
            messages_sent: tx.messages_sent,
            messages_acked: tx.messages_acked,
            messages_delivered: rx.messages_delivered,
            acks_sent: c.acks_sent,
            acks_received: rc.acks_received,
            nacks_sent: c.nacks_sent,
            nacks_received: c.nacks_received,
            keep_alives_sent: c.keep_alives_sent,
            duplicate_packets: rx.duplicate_packets,
            wrong_sync_no: c.wrong_sync_no,
            wrong_address: c.wrong_address,
            protocol_errors: c.protocol_errors,
            ecn_ce_received: rx.ecn_ce_received,
            ecn_echoes_received: rc.ecn_echoes,
            ecn_ect0_received: rx.ecn_ect0_received,
            ecn_ect1_received: rx.ecn_ect1_received,
            ecn_ect_packets_sent: self.recovery.ecn_counters().ect_packets_sent,
            ecn_ce_reported: self.recovery.ecn_counters().reported.ce,
            ecn_codepoint: self.recovery.ecn_codepoint(),
            ecn_failure: self.recovery.ecn_counters().failure.map(|f| f.as_str()),
            probes_started: self.probe.started(),
            probes_completed: self.probe.completed(),
            last_probe: self.probe.last(),
            probe_decision: self.probe.last_decision(),
            initial_window_bytes: self.initial_window,
            scheduler: self.send.scheduler().name(),
            scheduler_mode: self.send.scheduler().mode(),
            scheduler_switches: self.send.scheduler().switches(),
            scheduler_estimate_bps: self.send.scheduler().estimate_bps(),
            messages_abandoned: tx.messages_abandoned,
            skips_sent: tx.skips_sent,
            messages_skipped: rx.messages_skipped,
            streams: self.send.stream_stats(),
            advertised_window_bytes: self.advertised_window(),
            window: self.window_counters(),
            path: self.path.stats(),
            pmtu: self.pmtu_stats(),
            security: self.security_stats(),
        }
    }
}
