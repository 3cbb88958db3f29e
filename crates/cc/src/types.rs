//! The values that travel between a connection and its controller
//! (cc-spec §2.4), written for a transport that numbers its packets.
//!
//! Windows inside the controllers are counted in full-sized segments of
//! `mss` bytes; the public getters convert to bytes. Sequence positions
//! (`snd_una`, `snd_nxt`, `recover`) are **packet numbers**: the lowest
//! unacknowledged and the next packet number to be sent.

use crate::Time;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `ssthresh` before the first congestion event (kernel `TCP_INFINITE_SSTHRESH`).
pub const SSTHRESH_INF: u32 = 0x7fff_ffff;

/// What a packet-pair start-up measured (seed 003 §III-D), handed to the
/// controller when the measurement completes
/// ([`CongestionController::on_startup_measurement`](crate::CongestionController::on_startup_measurement)).
/// Data may already be in flight: the connection sends its initial window
/// while the probe is out.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct StartupMeasurement {
    /// The bottleneck rate the pair measured: probe size / dispersion,
    /// bytes per second.
    pub bandwidth_bytes_per_sec: u64,
    /// The mean RTT of the pair.
    pub rtt: Duration,
    /// The window the connection grants from it: `min(bandwidth × RTT,
    /// the configured cap)`, bytes.
    pub window_bytes: u64,
    /// The pipe the pair measured, uncapped: bandwidth × RTT, bytes. Above
    /// `window_bytes` when the cap decided: the window starts at the cap
    /// and slow start (`ssthresh = pipe`) takes it the rest of the way.
    pub pipe_bytes: u64,
}

/// The connection's congestion state (kernel `TCP_CA_*`, cc-spec §2.2).
/// Ordered as the kernel orders them: `Open < Disorder < Cwr < Recovery < Loss`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum CaState {
    /// No loss or reordering outstanding.
    Open,
    /// Reordering or a first NACK/SACK hole that does not yet mean loss.
    Disorder,
    /// Reducing after an ECN echo (no retransmission).
    Cwr,
    /// Fast recovery after a detected loss.
    Recovery,
    /// After a retransmission timeout.
    Loss,
}

impl CaState {
    /// A short lower-case name, for tables and traces.
    pub fn as_str(self) -> &'static str {
        match self {
            CaState::Open => "open",
            CaState::Disorder => "disorder",
            CaState::Cwr => "cwr",
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
        }
    }
}

/// A read-only view of the connection, given to the controller on every call.
#[derive(Clone, Debug)]
pub struct PathInfo {
    /// The current time.
    pub now: Time,
    /// Full-sized packet payload, bytes (the spec's MSS).
    pub mss: u32,
    /// RFC 6298 smoothed RTT.
    pub srtt: Option<Duration>,
    /// RFC 6298 RTT variation.
    pub rttvar: Option<Duration>,
    /// Current RTO without backoff.
    pub rto: Duration,
    /// Lifetime minimum of Karn-valid RTT samples.
    pub min_rtt: Option<Duration>,
    /// The most recent Karn-valid RTT sample.
    pub latest_rtt: Option<Duration>,
    /// Lowest unacknowledged packet number.
    pub snd_una: u64,
    /// Next packet number to be sent.
    pub snd_nxt: u64,
    /// Total segments delivered (acknowledged) over the connection's life.
    pub delivered: u64,
    /// Segments in flight: sent − (acknowledged + marked lost) + retransmitted.
    pub in_flight: u32,
    /// Cwnd-limited during the last window (cc-spec H3).
    pub cwnd_limited: bool,
    /// The connection's view of the congestion state.
    pub ca_state: CaState,
    /// The sender had no data to send (application-limited).
    pub app_limited: bool,
}

impl PathInfo {
    /// A view of an idle connection at `now` with `mss`-byte packets: no RTT
    /// known yet, RTO 1 s (RFC 6298's initial value), nothing in flight.
    pub fn new(now: Time, mss: u32) -> PathInfo {
        PathInfo {
            now,
            mss,
            srtt: None,
            rttvar: None,
            rto: Duration::from_secs(1),
            min_rtt: None,
            latest_rtt: None,
            snd_una: 0,
            snd_nxt: 0,
            delivered: 0,
            in_flight: 0,
            cwnd_limited: true,
            ca_state: CaState::Open,
            app_limited: false,
        }
    }
}

/// One delivery-rate sample (cc-spec H11), built by the connection per ACK.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RateSample {
    /// Segments delivered over `interval`.
    pub delivered: u32,
    /// The sampling interval: max(send elapsed, ack elapsed). Zero = invalid.
    pub interval: Duration,
    /// `delivered` of the connection when the sampled packet was sent.
    pub prior_delivered: u64,
    /// Segments in flight before this ACK.
    pub prior_in_flight: u32,
    /// Segments newly marked lost by this ACK.
    pub losses: u32,
    /// Segments newly acknowledged by this ACK.
    pub acked_sacked: u32,
    /// The sampled packet was sent while the sender was application-limited.
    pub is_app_limited: bool,
    /// RTT of the sampled packet.
    pub rtt: Option<Duration>,
    /// The ACK was delayed by the receiver.
    pub is_ack_delayed: bool,
}

impl RateSample {
    /// Whether the sample can be used (a positive interval).
    pub fn is_valid(&self) -> bool {
        !self.interval.is_zero()
    }
    /// Delivery rate in segments per second, if valid.
    pub fn rate_segs_per_sec(&self) -> Option<f64> {
        self.is_valid()
            .then(|| self.delivered as f64 / self.interval.as_secs_f64())
    }
}

/// What one ACK told the connection (cc-spec §2.4 `AckSample`).
#[derive(Clone, Debug, Default)]
pub struct AckSample {
    /// Newly acknowledged segments (cumulative + selective), after the
    /// connection's carry of partial segments (cc-spec §1).
    pub acked_segs: u32,
    /// Newly acknowledged bytes.
    pub acked_bytes: u64,
    /// The Karn-valid RTT sample this ACK carries, if any.
    pub rtt: Option<Duration>,
    /// Segments in flight before this ACK was processed.
    pub prior_in_flight: u32,
    /// The ACK advanced `snd_una`.
    pub una_advanced: bool,
    /// The ACK acknowledged nothing new below `snd_una` (a duplicate in TCP terms).
    pub is_dup_ack: bool,
    /// Segments newly marked lost by this ACK.
    pub newly_lost: u32,
    /// ECN-CE marks reported by this ACK.
    pub ecn_ce_count: u32,
    /// The delivery-rate sample, when the connection builds one.
    pub rate: Option<RateSample>,
}

/// How a controller answers ECN-CE marks, and so which ECN-capable
/// codepoint its packets carry (RFC 9330 §4, RFC 9331 §4.1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum EcnResponse {
    /// A CE mark is a loss signal, answered at most once per round trip
    /// (RFC 3168 §6.1.2): the packets carry ECT(0).
    #[default]
    Classic,
    /// Every mark counts (DCTCP/L4S, RFC 9331): the packets carry ECT(1),
    /// the L4S identifier, and the controller reads the per-ACK counts of
    /// [`EcnSample`].
    Scalable,
}

/// What one ACK's ECN feedback added (the sender's view of the peer's
/// cumulative ECN counts, docs/protocol.md §6.5.3), handed to
/// [`CongestionController::on_ecn`](crate::CongestionController::on_ecn)
/// before the ACK's [`on_ack`](crate::CongestionController::on_ack).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct EcnSample {
    /// Packets newly reported as received with an ECT codepoint or CE by
    /// this ACK (the growth of ECT(0) + ECT(1) + CE counts).
    pub newly_ect_packets: u64,
    /// Packets newly reported as received with CE by this ACK.
    pub newly_ce_packets: u64,
    /// Bytes newly acknowledged by this ACK.
    pub acked_bytes: u64,
}

/// Kind of a congestion signal.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum CongestionKind {
    /// A packet was declared lost.
    Loss,
    /// The peer echoed an ECN-CE mark.
    Ecn,
}

/// The start of a congestion episode, reported once per episode.
#[derive(Clone, Debug)]
pub struct CongestionEvent {
    /// Loss or ECN.
    pub kind: CongestionKind,
    /// When it was detected.
    pub now: Time,
    /// QUIC-style persistent congestion: handled exactly like an RTO.
    pub is_persistent: bool,
    /// Segments declared lost.
    pub lost_segs: u32,
    /// Segments in flight at detection.
    pub in_flight: u32,
    /// When the newest packet this event declared lost was sent (`None`:
    /// unknown, e.g. ECN). RTW-TCP attributes a loss to a predicted link
    /// outage only if the lost packet was sent into it (seed 004 §3.2.5).
    pub lost_sent_at: Option<Time>,
}

/// What the controller tells the connection to do with a congestion signal.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum CongestionResponse {
    /// Reduce the window (every algorithm; the normal answer).
    Reduce,
    /// Keep the window: retransmit only (RTW-TCP on a link failure or random loss).
    /// For an RTO, also do not double the RTO.
    Hold,
}

/// Kind of a link-layer hint (cc-spec §2.4).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum LinkHintKind {
    /// Line of sight lost to an obstacle.
    Blockage,
    /// The peer's directional antenna is serving someone else.
    Deafness,
    /// Transmit and receive beams no longer point at each other.
    BeamMisalignment,
    /// Association is moving to another base station.
    Handover,
    /// The link layer vouches that current losses are not congestion.
    CongestionFree,
}

impl LinkHintKind {
    /// Whether this kind announces a link failure (an outage), as opposed to
    /// vouching for the link.
    pub fn is_link_failure(self) -> bool {
        !matches!(self, LinkHintKind::CongestionFree)
    }
}

/// An asynchronous link-layer report handed to the controller.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkHint {
    /// What happened.
    pub kind: LinkHintKind,
    /// When the link layer issued it.
    pub issued_at: Time,
    /// How long the outage is predicted to last, if known.
    pub predicted_duration: Option<Duration>,
    /// 3GPP 4-bit channel-quality indicator; 0 = out of range.
    pub cqi: Option<u8>,
    /// The node's speed in metres per second.
    pub speed_mps: Option<f32>,
}

/// Whether the connection may send now (RTW-TCP gates sending during a
/// predicted outage; every other controller always answers `Normal`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SendGate {
    /// Send as cwnd and pacing allow.
    Normal,
    /// Send nothing but one probe (a retransmission of the oldest
    /// unacknowledged packet, or one new packet if none) at `next_probe_at`.
    ProbeOnly {
        /// When the next probe may leave.
        next_probe_at: Time,
    },
}

/// Events the core forwards to a policy (kernel `CA_EVENT_*`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum CwndEvent {
    /// First transmission after an idle period of at least one RTO.
    TxStart {
        /// How long the connection was idle.
        idle: Duration,
    },
    /// A congestion-window-reduction episode ended (Recovery/Cwr → Open).
    CompleteCwr,
    /// An RTO started a Loss episode (after `ssthresh` was computed).
    Loss,
    /// An ECN-CE echo started a CWR episode.
    EcnCe,
}

/// A snapshot of a controller for traces, tables and tests.
#[derive(Clone, Debug, PartialEq)]
pub struct CcStats {
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes; `None` while infinite.
    pub ssthresh_bytes: Option<u64>,
    /// Upper bound on the window, bytes.
    pub cwnd_clamp_bytes: u64,
    /// Pacing rate in bytes per second, `None` when unpaced.
    pub pacing_rate_bytes_per_sec: Option<u64>,
    /// The controller's view of the congestion state.
    pub ca_state: CaState,
    /// Algorithm-specific mode (BBR: `startup`, `drain`, `probe_bw`,
    /// `probe_rtt`; RTW-TCP: `normal`, `frozen`), if the algorithm has modes.
    pub mode: Option<&'static str>,
    /// The algorithm's bandwidth estimate in bytes per second, if it keeps one.
    pub bandwidth_estimate_bytes_per_sec: Option<u64>,
}
