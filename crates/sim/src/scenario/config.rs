//! The typed form of a scenario file, as deserialized (serde) before the
//! semantic checks of [`super::validate`].
//!
//! Field names are the TOML keys; `docs/scenarios.md` documents each with
//! its unit, default and allowed values. Every table rejects unknown keys
//! so a typo is an error, not a silently ignored setting.

use super::units::{Dur, Rate};
use serde::Deserialize;

fn default_interval() -> Dur {
    Dur(1_000_000_000)
}
fn default_ip_overhead() -> u32 {
    28
}
fn default_queue_floor() -> u64 {
    10
}
fn default_cc() -> String {
    "cubic".to_string()
}
fn default_scheduler() -> String {
    "rr".to_string()
}
fn default_security() -> String {
    "none".to_string()
}
fn default_ack_policy() -> String {
    "sltp".to_string()
}
fn default_startup() -> String {
    "slow_start".to_string()
}
fn default_payload() -> u32 {
    1400
}
fn default_class() -> u8 {
    2
}
fn default_weight() -> u32 {
    1
}
fn default_reliability() -> String {
    "reliable".to_string()
}

/// A whole scenario file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioConfig {
    /// A short name for tables and reports (default: the file name).
    #[serde(default)]
    pub name: Option<String>,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Simulated time to run.
    pub duration: Dur,
    /// The seed every random source derives from.
    pub seed: u64,
    /// What to record.
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// Network-wide settings.
    #[serde(default)]
    pub net: NetConfig,
    /// Nodes (also created implicitly by naming them in a link).
    #[serde(default)]
    pub nodes: Vec<NodeConfig>,
    /// Point-to-point links.
    #[serde(default)]
    pub links: Vec<LinkConfig>,
    /// Connections and their applications.
    #[serde(default)]
    pub flows: Vec<FlowConfig>,
    /// A shared 802.11b medium instead of links (see [`super::wireless`]).
    #[serde(default)]
    pub wireless: Option<super::wireless::WirelessConfig>,
    /// A connected-vehicles mmWave world (expanded into links and flows).
    #[serde(default)]
    pub vehicular: Option<super::vehicular::VehicularConfig>,
}

/// `[metrics]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Time-series sampling interval (default 1 s).
    #[serde(default = "default_interval")]
    pub interval: Dur,
    /// Write every message's latency to `messages.csv` (default true).
    #[serde(default = "yes")]
    pub per_message: bool,
    /// Leave the start-up out of a second set of delay quantiles: the
    /// flows' `delay_ms.after_warmup` count only DATA packets received at
    /// or after this time (default: none, and no such key).
    #[serde(default)]
    pub warmup: Option<Dur>,
}

fn yes() -> bool {
    true
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            interval: default_interval(),
            per_message: true,
            warmup: None,
        }
    }
}

/// `[net]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetConfig {
    /// Bytes added to every datagram on the wire (IPv4 20 + UDP 8 = 28).
    #[serde(default = "default_ip_overhead")]
    pub ip_overhead_bytes: u32,
    /// The smallest queue a BDP-sized queue gets, packets (default 10).
    #[serde(default = "default_queue_floor")]
    pub queue_floor_packets: u64,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            ip_overhead_bytes: default_ip_overhead(),
            queue_floor_packets: default_queue_floor(),
        }
    }
}

/// `[[nodes]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Unique name.
    pub name: String,
    /// How the node moves (wireless scenarios only; default
    /// `wireless.mobility`).
    #[serde(default)]
    pub mobility: Option<crate::world::mobility::MobilityConfig>,
}

// The queue, loss and outage configurations live with their models
// (`world::queue`, `world::loss`, `world::outage`).
pub use crate::world::link_options::{AqmTable, JitterTable, ReorderTable};
pub use crate::world::loss::LossConfig;
pub use crate::world::outage::{OutageConfig, OutageWindow};
pub use crate::world::queue::QueueConfig;

/// Per-direction settings; any field left out takes the link's value.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirConfig {
    /// Fixed rate.
    #[serde(default)]
    pub rate: Option<Rate>,
    /// Mahimahi trace file (plain or `.gz`); replaces `rate`.
    #[serde(default)]
    pub trace: Option<String>,
    /// One-way propagation delay.
    #[serde(default)]
    pub delay: Option<Dur>,
    /// Drop-tail queue size.
    #[serde(default)]
    pub queue: Option<QueueConfig>,
    /// Channel loss.
    #[serde(default)]
    pub loss: Option<LossConfig>,
    /// Outages.
    #[serde(default)]
    pub outages: Option<OutageConfig>,
    /// Queue discipline (`aqm = { model = "codel", … }`).
    #[serde(default)]
    pub aqm: Option<AqmTable>,
    /// Delay jitter.
    #[serde(default)]
    pub jitter: Option<JitterTable>,
    /// netem reordering.
    #[serde(default)]
    pub reorder: Option<ReorderTable>,
}

/// `[[links]]`: a point-to-point link between nodes `a` and `b`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Optional name (default `a-b`).
    #[serde(default)]
    pub name: Option<String>,
    /// One end.
    pub a: String,
    /// The other end.
    pub b: String,
    /// Fixed rate, both directions.
    #[serde(default)]
    pub rate: Option<Rate>,
    /// Mahimahi trace, both directions.
    #[serde(default)]
    pub trace: Option<String>,
    /// One-way propagation delay (default 0).
    #[serde(default)]
    pub delay: Option<Dur>,
    /// Queue, both directions (default `{ bdp = 1 }` with the floor).
    #[serde(default)]
    pub queue: Option<QueueConfig>,
    /// Loss, both directions (default none).
    #[serde(default)]
    pub loss: Option<LossConfig>,
    /// Outages, both directions (default none).
    #[serde(default)]
    pub outages: Option<OutageConfig>,
    /// Announce the link's outages to the senders of the flows that cross
    /// it (`world::hint_plan`; default: no hints).
    #[serde(default)]
    pub hints: Option<crate::world::hint_plan::LinkHintsConfig>,
    /// Queue discipline, both directions (default drop-tail).
    #[serde(default)]
    pub aqm: Option<AqmTable>,
    /// Delay jitter, both directions (default none).
    #[serde(default)]
    pub jitter: Option<JitterTable>,
    /// netem reordering, both directions (default none).
    #[serde(default)]
    pub reorder: Option<ReorderTable>,
    /// Largest IP packet the link carries, bytes (datagram plus the
    /// `net.ip_overhead`), both directions; larger ones are dropped
    /// (`mtu_drops`). Declaring it on any link turns on path MTU discovery
    /// for every flow (default: none, and discovery off).
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Overrides for the `a → b` direction.
    #[serde(default)]
    pub up: Option<DirConfig>,
    /// Overrides for the `b → a` direction.
    #[serde(default)]
    pub down: Option<DirConfig>,
}

/// `[[flows]]`: one connection from `src` to `dst`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Optional name (default `flowN`).
    #[serde(default)]
    pub name: Option<String>,
    /// Sending node.
    pub src: String,
    /// Receiving node.
    pub dst: String,
    /// Congestion controller of the sender (a registry name).
    #[serde(default = "default_cc")]
    pub cc: String,
    /// Fields of `cc`'s configuration struct in `peregrine_cc` (serde
    /// form; `cc_options = { slow_start_exit = "linux_hystart" }`), each
    /// left out at the controller's default ([`super::cc_options`]).
    #[serde(default)]
    pub cc_options: Option<toml::Table>,
    /// Stream scheduler: `rr`, `wfq`, `abs`, `adaptive`, `edf`, `aging`.
    #[serde(default = "default_scheduler")]
    pub scheduler: String,
    /// `adaptive` scheduler: target rate.
    #[serde(default)]
    pub target_rate: Option<Rate>,
    /// `aging` scheduler: the longest wait.
    #[serde(default)]
    pub aging_bound: Option<Dur>,
    /// Queue guard (docs/protocol.md): while class-0 data is sent, keep
    /// the connection's own standing queue at most this delay above min
    /// RTT, under any controller. Absent: off.
    #[serde(default)]
    pub queue_guard: Option<Dur>,
    /// How the receiver acknowledges (docs/protocol.md §10 "ACK
    /// policies"): `sltp` (default) or `tcp` (TCP's delayed ACK).
    #[serde(default = "default_ack_policy")]
    pub ack_policy: String,
    /// With `ack_policy = "tcp"`: the delayed-ACK timer (default 40 ms).
    #[serde(default)]
    pub delayed_ack: Option<Dur>,
    /// `slow_start` or `packet_pair`.
    #[serde(default = "default_startup")]
    pub startup: String,
    /// How the paced sender releases datagrams: `coarse` (default: bursts
    /// of 1 ms of the rate) or `fine` (one datagram per packet time, as the
    /// UDP runtime does).
    #[serde(default)]
    pub pacing: Option<String>,
    /// When the connection opens.
    #[serde(default)]
    pub start: Dur,
    /// Stream data bytes per full DATA packet (sets the packet size).
    #[serde(default = "default_payload")]
    pub payload_bytes: u32,
    /// Packet protection: `none` (default: unencrypted, as SLTP), or a
    /// Noise handshake `ik`, `xx`, `ikpsk2`, `nnpsk0` with keys drawn from
    /// the scenario seed.
    #[serde(default = "default_security")]
    pub security: String,
    /// Streams and their applications.
    #[serde(default)]
    pub streams: Vec<StreamAppConfig>,
}

/// `[[flows.streams]]`: one stream and the application feeding it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamAppConfig {
    /// Stream id (default: its index).
    #[serde(default)]
    pub id: Option<u16>,
    /// Priority class, 0 (most urgent) … 3 (default 2).
    #[serde(default = "default_class")]
    pub priority: u8,
    /// WFQ weight ≥ 1.
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// `reliable`, `reliable_unordered`, `unreliable`.
    #[serde(default = "default_reliability")]
    pub reliability: String,
    /// Each message is useless this long after it was queued.
    #[serde(default)]
    pub deadline: Option<Dur>,
    /// `bulk`, `cbr`, `onoff`, `file`, `trace`.
    pub app: String,
    /// When the application starts (default: the flow's start).
    #[serde(default)]
    pub start: Option<Dur>,
    /// When it stops offering data (default: never).
    #[serde(default)]
    pub stop: Option<Dur>,
    /// Message size, bytes (bulk default 16384, others 1000).
    #[serde(default)]
    pub message_bytes: Option<u32>,
    /// cbr / onoff: rate while sending.
    #[serde(default)]
    pub rate: Option<Rate>,
    /// onoff: `exponential` or `pareto`.
    #[serde(default)]
    pub distribution: Option<String>,
    /// onoff: mean ON time.
    #[serde(default)]
    pub mean_on: Option<Dur>,
    /// onoff: mean OFF time.
    #[serde(default)]
    pub mean_off: Option<Dur>,
    /// onoff, pareto: shape (> 1, default 1.5).
    #[serde(default)]
    pub shape: Option<f64>,
    /// file: bytes to transfer.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// bulk / file: most bytes queued in the sender at once (default 4 MiB).
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    /// trace: CSV file with `Delays,Data Length` (delays with `us`).
    #[serde(default)]
    pub path: Option<String>,
    /// trace: replay again from the top when it ends (default false).
    #[serde(default)]
    pub repeat: bool,
    /// trace: replay at most this many messages (default: all).
    #[serde(default)]
    pub max_messages: Option<u64>,
}

// Constructors for scenarios built in code (the laboratory's experiments):
// every field not given takes the value a file that leaves it out gets.

impl ScenarioConfig {
    /// An empty scenario of `duration` seeded `seed`: no name, default
    /// `[metrics]` and `[net]`, no nodes, links or flows. O(1).
    pub fn new(duration: Dur, seed: u64) -> ScenarioConfig {
        ScenarioConfig {
            name: None,
            description: None,
            duration,
            seed,
            metrics: MetricsConfig::default(),
            net: NetConfig::default(),
            nodes: Vec::new(),
            links: Vec::new(),
            flows: Vec::new(),
            wireless: None,
            vehicular: None,
        }
    }
}

impl NodeConfig {
    /// A node named `name` that moves as `wireless.mobility` says. O(1).
    pub fn new(name: impl Into<String>) -> NodeConfig {
        NodeConfig {
            name: name.into(),
            mobility: None,
        }
    }
}

impl LinkConfig {
    /// A link between `a` and `b` with every setting at its default (no
    /// rate: set `rate` or `trace`). O(1).
    pub fn new(a: impl Into<String>, b: impl Into<String>) -> LinkConfig {
        LinkConfig {
            name: None,
            a: a.into(),
            b: b.into(),
            rate: None,
            trace: None,
            delay: None,
            queue: None,
            loss: None,
            outages: None,
            hints: None,
            aqm: None,
            jitter: None,
            reorder: None,
            mtu: None,
            up: None,
            down: None,
        }
    }
}

impl FlowConfig {
    /// A connection from `src` to `dst` with the defaults of a file
    /// (`cubic`, `rr`, `slow_start`, 1400-byte payloads, no security) and
    /// no streams. O(1).
    pub fn new(src: impl Into<String>, dst: impl Into<String>) -> FlowConfig {
        FlowConfig {
            name: None,
            src: src.into(),
            dst: dst.into(),
            cc: default_cc(),
            cc_options: None,
            scheduler: default_scheduler(),
            target_rate: None,
            aging_bound: None,
            queue_guard: None,
            ack_policy: default_ack_policy(),
            delayed_ack: None,
            startup: default_startup(),
            pacing: None,
            start: Dur::default(),
            payload_bytes: default_payload(),
            security: default_security(),
            streams: Vec::new(),
        }
    }
}

impl StreamAppConfig {
    /// A stream fed by application `app` (`bulk`, `cbr`, `onoff`, `file`,
    /// `trace`) with the defaults of a file: class 2, weight 1, reliable,
    /// every application setting at its default. O(1).
    pub fn new(app: impl Into<String>) -> StreamAppConfig {
        StreamAppConfig {
            id: None,
            priority: default_class(),
            weight: default_weight(),
            reliability: default_reliability(),
            deadline: None,
            app: app.into(),
            start: None,
            stop: None,
            message_bytes: None,
            rate: None,
            distribution: None,
            mean_on: None,
            mean_off: None,
            shape: None,
            bytes: None,
            buffer_bytes: None,
            path: None,
            repeat: false,
            max_messages: None,
        }
    }
}

#[cfg(test)]
mod constructor_tests {
    use super::*;

    /// A scenario built with the constructors equals the one a file with
    /// the same settings gives (every left-out field at the same default).
    #[test]
    fn constructors_give_the_defaults_of_a_file() {
        let text = "duration = \"10s\"\nseed = 3\n[[links]]\na = \"x\"\nb = \"y\"\n\
                    [[flows]]\nsrc = \"x\"\ndst = \"y\"\n[[flows.streams]]\napp = \"bulk\"\n";
        let file: ScenarioConfig = toml::from_str(text).expect("valid scenario");
        let mut built = ScenarioConfig::new(Dur(10_000_000_000), 3);
        built.links.push(LinkConfig::new("x", "y"));
        let mut flow = FlowConfig::new("x", "y");
        flow.streams.push(StreamAppConfig::new("bulk"));
        built.flows.push(flow);
        // The configuration types have no PartialEq (the world's do not all
        // have one): compare their full debug forms.
        assert_eq!(format!("{built:?}"), format!("{file:?}"));
    }
}
