//! The resolved scenario the engine runs: names turned into indices,
//! defaults filled in, strings turned into typed choices. Built by
//! [`super::validate`]; every invariant the engine relies on (an index is
//! in range, a probability is in [0, 1], a rate is positive) holds here.

use super::config::{OutageConfig, QueueConfig};
use peregrine_cc::CcConfig;
use peregrine_proto::crypto::NoisePattern;
use peregrine_proto::wire::StartupMode;
use peregrine_proto::{AckPolicy, SchedulerConfig, StreamConfig};

/// The whole resolved scenario.
#[derive(Clone, Debug)]
pub struct Model {
    /// Simulated duration, ns.
    pub duration_ns: u64,
    /// The seed.
    pub seed: u64,
    /// Sampling interval of the time series, ns.
    pub interval_ns: u64,
    /// Record every message's latency.
    pub per_message: bool,
    /// `metrics.warmup`, ns: delays after it are also counted apart.
    pub warmup_ns: Option<u64>,
    /// Bytes of IP/UDP headers added to each datagram on the wire.
    pub ip_overhead_bytes: u32,
    /// Node names, by index.
    pub nodes: Vec<String>,
    /// Links.
    pub links: Vec<LinkSpec>,
    /// Flows.
    pub flows: Vec<FlowSpec>,
    /// The wireless world, if the scenario has one (then `links` is empty).
    pub wireless: Option<super::wireless::WirelessSpec>,
    /// The vehicular world, if the scenario has a `[vehicular]` table.
    pub vehicular: Option<super::vehicular::VehicularModel>,
    /// The `[[flow_groups]]`: which flows share one server endpoint
    /// (empty without groups).
    pub flow_groups: Vec<super::flow_groups::FlowGroupSpec>,
}

/// One point-to-point link.
#[derive(Clone, Debug)]
pub struct LinkSpec {
    /// Its name.
    pub name: String,
    /// End `a` (node index).
    pub a: usize,
    /// End `b` (node index).
    pub b: usize,
    /// `[a → b, b → a]`.
    pub dirs: [DirSpec; 2],
    /// Largest IP packet (wire bytes) the link carries, both directions
    /// (`None`: any).
    pub mtu: Option<u32>,
    /// Hints announcing the link's outages to the flows crossing it.
    pub hints: Option<crate::world::hint_plan::HintOptions>,
}

/// How a link direction serves its queue.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerSpec {
    /// A fixed rate, bits per second (> 0).
    Rate(u64),
    /// A Mahimahi trace file (as written in the scenario) and the field
    /// path it came from (for error messages).
    Trace {
        /// The path as written.
        path: String,
        /// E.g. `links.0.up.trace`.
        field: String,
    },
}

/// One direction of a link.
#[derive(Clone, Debug)]
pub struct DirSpec {
    /// Rate or trace.
    pub server: ServerSpec,
    /// Propagation delay, ns.
    pub delay_ns: u64,
    /// Queue size (exactly one kind set).
    pub queue: QueueConfig,
    /// The BDP queue floor, packets.
    pub queue_floor_packets: u64,
    /// Channel loss.
    pub loss: LossSpec,
    /// Outages.
    pub outages: OutageConfig,
    /// Queue discipline (AQM), jitter and reordering.
    pub options: crate::world::link_options::LinkOptions,
}

// The validated loss model lives with its model (`world::loss`).
pub use crate::world::loss::LossSpec;

/// One connection.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    /// Its name.
    pub name: String,
    /// Sending node.
    pub src: usize,
    /// Receiving node.
    pub dst: usize,
    /// Controller.
    pub cc: CcConfig,
    /// Scheduler.
    pub scheduler: SchedulerConfig,
    /// Queue guard's delay above min RTT, if on.
    pub queue_guard: Option<std::time::Duration>,
    /// How the receiver acknowledges (`ack_policy`, `delayed_ack`).
    pub ack_policy: AckPolicy,
    /// Start-up mode.
    pub startup: StartupMode,
    /// How the paced sender releases datagrams (`pacing`).
    pub pacing: peregrine_proto::Pacing,
    /// When the connection opens, ns.
    pub start_ns: u64,
    /// Largest datagram (the protocol's `max_packet_size`).
    pub max_packet_size: u16,
    /// Noise pattern of the flow's handshake (`None`: unencrypted).
    pub security: Option<NoisePattern>,
    /// Streams.
    pub streams: Vec<StreamSpec>,
}

/// One stream and its application.
#[derive(Clone, Debug)]
pub struct StreamSpec {
    /// Stream id.
    pub id: u16,
    /// Priority, weight, reliability.
    pub config: StreamConfig,
    /// Relative message deadline, ns.
    pub deadline_ns: Option<u64>,
    /// Application start, ns.
    pub start_ns: u64,
    /// Application stop, ns.
    pub stop_ns: Option<u64>,
    /// What it sends.
    pub app: AppSpec,
}

/// ON/OFF period distribution.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum PeriodDist {
    /// Exponential.
    Exponential,
    /// Pareto with this shape (> 1); scale set from the mean.
    Pareto(f64),
}

/// An application.
#[derive(Clone, Debug, PartialEq)]
pub enum AppSpec {
    /// Keeps the stream's send buffer full.
    Bulk {
        /// Message size.
        message_bytes: u32,
        /// Bytes kept queued.
        buffer_bytes: u64,
    },
    /// Constant bit rate.
    Cbr {
        /// Bits per second.
        rate_bps: u64,
        /// Message size.
        message_bytes: u32,
    },
    /// CBR during ON periods, silent during OFF periods.
    OnOff {
        /// Rate while ON.
        rate_bps: u64,
        /// Message size.
        message_bytes: u32,
        /// Period distribution.
        dist: PeriodDist,
        /// Mean ON, ns.
        mean_on_ns: u64,
        /// Mean OFF, ns.
        mean_off_ns: u64,
    },
    /// N bytes, then done.
    File {
        /// Total bytes.
        bytes: u64,
        /// Message size.
        message_bytes: u32,
        /// Bytes kept queued.
        buffer_bytes: u64,
    },
    /// Replay of a message trace.
    Trace {
        /// CSV path as written.
        path: String,
        /// Field path for errors.
        field: String,
        /// Loop at the end.
        repeat: bool,
        /// At most this many messages.
        max_messages: Option<u64>,
    },
}
