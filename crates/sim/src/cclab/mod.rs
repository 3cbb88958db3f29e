//! # The controller lab
//!
//! A small, deterministic, ACK-clocked model of one bulk flow through one
//! drop-tail bottleneck, used to look at a controller's trajectory and to
//! compare controllers on the same scripted path. It calls the real
//! controller code through
//! [`CongestionController`](peregrine_cc::CongestionController); it is **not** the
//! network simulator of the rest of this crate: one flow, one queue, no
//! cross traffic, no endpoints — the controller alone, ACK by ACK.
//!
//! ## The model
//!
//! * The sender always has data (bulk). It sends while the packets in flight
//!   are fewer than `cwnd / mss`, the controller's
//!   [`SendGate`](peregrine_cc::SendGate) is `Normal`
//!   and the pacing rate (if any) allows. Each packet carries `mss` bytes and
//!   a fresh packet number; a retransmission is a new packet carrying old data.
//! * The bottleneck serialises packets at `rate_bps` through a drop-tail
//!   queue of `queue_bytes` (counting the packet in service); the forward and
//!   the return path each add `base_rtt / 2` of propagation delay, so RTT
//!   rises with queueing. The receiver acknowledges every packet at once.
//! * Loss detection is by packet threshold (a packet is lost once a packet
//!   sent 3 or more later is acknowledged, DupThresh = 3) and by an RFC 6298
//!   retransmission timer (`min_rto`, initial 1 s, exponential backoff).
//!   `snd_una` is the lowest packet number neither acknowledged nor declared
//!   lost; an episode ends once `snd_una` passes the recovery point.
//! * Delivery-rate samples (cc-spec H11) accompany every ACK.
//!
//! ## The default script ([`LabConfig::default`])
//!
//! 10 Mbit/s, 40 ms base RTT, a queue of one BDP (50 000 bytes), 1448-byte
//! packets, RTO minimum 200 ms; slow start from t = 0; the first packet sent
//! at or after **10 s** is lost; at **20 s** a link hint announces a 150 ms
//! blockage (`Blockage`, predicted 150 ms, CQI 0, 15 m/s) and every packet
//! sent during `[20 s, 20.15 s)` is lost; at **30 s** a route flush drops
//! every packet in flight and the retransmission timer fires at once (a
//! scripted RTO); the run ends at **40 s**.

mod model;
mod trace;

pub use model::run;
pub use trace::{LabEvent, LabSummary, LabTrace, TraceRow};

use std::time::Duration;

/// One scripted perturbation.
#[derive(Clone, Debug, PartialEq)]
pub enum ScriptItem {
    /// The first packet sent at or after `at` is lost.
    SingleLoss {
        /// When.
        at: Duration,
    },
    /// A link hint announces a blockage of `duration` at `at`; every packet
    /// sent during `[at, at + duration)` is lost.
    Blockage {
        /// When it starts (and the hint is delivered).
        at: Duration,
        /// How long it lasts (and is predicted to last).
        duration: Duration,
    },
    /// Every packet in flight is dropped and the retransmission timer fires at `at`.
    Rto {
        /// When.
        at: Duration,
    },
}

/// The lab's path and script.
#[derive(Clone, Debug, PartialEq)]
pub struct LabConfig {
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Propagation RTT without queueing.
    pub base_rtt: Duration,
    /// Drop-tail queue capacity, bytes (including the packet in service).
    pub queue_bytes: u64,
    /// Packet payload size, bytes.
    pub mss: u32,
    /// RFC 6298 lower bound on the RTO.
    pub min_rto: Duration,
    /// How long to run.
    pub duration: Duration,
    /// Time between periodic trace rows (at most one RTT).
    pub sample_interval: Duration,
    /// Independent random loss probability per packet (0 = none), drawn
    /// from a generator seeded with `seed`.
    pub random_loss: f64,
    /// Seed of the random-loss generator.
    pub seed: u64,
    /// The scripted perturbations.
    pub script: Vec<ScriptItem>,
}

impl LabConfig {
    /// The path of `peregrine cc trace` without any perturbation.
    pub fn clean() -> LabConfig {
        let rate_bps = 10_000_000;
        let base_rtt = Duration::from_millis(40);
        LabConfig {
            rate_bps,
            base_rtt,
            queue_bytes: bdp_bytes(rate_bps, base_rtt),
            mss: 1448,
            min_rto: Duration::from_millis(200),
            duration: Duration::from_secs(40),
            sample_interval: Duration::from_millis(10),
            random_loss: 0.0,
            seed: 1,
            script: Vec::new(),
        }
    }

    /// When the (first) scripted blockage starts and ends, if there is one.
    pub fn blockage(&self) -> Option<(Duration, Duration)> {
        self.script.iter().find_map(|s| match s {
            ScriptItem::Blockage { at, duration } => Some((*at, *at + *duration)),
            _ => None,
        })
    }
}

impl Default for LabConfig {
    /// The documented default script (see the module docs).
    fn default() -> LabConfig {
        LabConfig {
            script: vec![
                ScriptItem::SingleLoss {
                    at: Duration::from_secs(10),
                },
                ScriptItem::Blockage {
                    at: Duration::from_secs(20),
                    duration: Duration::from_millis(150),
                },
                ScriptItem::Rto {
                    at: Duration::from_secs(30),
                },
            ],
            ..LabConfig::clean()
        }
    }
}

/// Bandwidth-delay product in bytes.
pub fn bdp_bytes(rate_bps: u64, rtt: Duration) -> u64 {
    (rate_bps as u128 * rtt.as_nanos() / 8 / 1_000_000_000) as u64
}
