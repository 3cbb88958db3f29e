//! The wireless (ad hoc 802.11b) world's configuration: the `[wireless]`
//! table ([`WirelessConfig`]), its `routing` setting and the validated
//! form the engine builds the shared medium from ([`WirelessSpec`]). It
//! lives with the models it configures (by feature); checking the table
//! against the rest of a scenario is the scenario's
//! (`scenario::wireless::validate`).

use crate::world::channel::wifi::WifiConfig;
use crate::world::dcf::MacConfig;
use crate::world::geom::Bounds;
use crate::world::mobility::{GaussMarkovConfig, MobilityConfig};
use crate::world::olsr::OlsrConfig;
use crate::world::routing::RoutingConfig;
use serde::Deserialize;

/// The routing protocol of a wireless world.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutingProtocol {
    /// Idealized proactive routing: shortest hop count on the true
    /// connectivity, recomputed every `recompute_interval_s`, no control
    /// traffic (`world::routing`). The default, so files written before
    /// OLSR existed run as they did.
    #[default]
    Oracle,
    /// OLSR (RFC 3626) as broadcast traffic over the DCF (`world::olsr`):
    /// routes only from the HELLOs and TCs each node received.
    Olsr,
}

/// `[wireless] routing`, as written: either the protocol's name,
/// `routing = "olsr"` / `routing = "oracle"`, or a table
/// `routing = { protocol = "olsr", hello_interval_s = 2.0, tc_interval_s = 5.0 }` /
/// `routing = { protocol = "oracle", recompute_interval_s = 1.0 }`
/// (`protocol` defaults to `"oracle"`, so the pre-OLSR form
/// `routing = { recompute_interval_s = 1.0 }` keeps its meaning). A field
/// of the other protocol is an error naming it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoutingSetting {
    /// Which protocol.
    pub protocol: RoutingProtocol,
    /// Oracle: time between route recomputations, s (default 1).
    pub recompute_interval_s: Option<f64>,
    /// OLSR: HELLO_INTERVAL, s (default 2, RFC 3626 §18.2).
    pub hello_interval_s: Option<f64>,
    /// OLSR: TC_INTERVAL, s (default 5).
    pub tc_interval_s: Option<f64>,
}

/// The table form of [`RoutingSetting`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoutingTable {
    #[serde(default)]
    protocol: RoutingProtocol,
    recompute_interval_s: Option<f64>,
    hello_interval_s: Option<f64>,
    tc_interval_s: Option<f64>,
}

impl<'de> Deserialize<'de> for RoutingSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RoutingSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"olsr\", \"oracle\" or a routing table")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RoutingSetting, E> {
                let protocol =
                    RoutingProtocol::deserialize(serde::de::value::StrDeserializer::<E>::new(v))?;
                Ok(RoutingSetting {
                    protocol,
                    ..RoutingSetting::default()
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RoutingSetting, A::Error> {
                let t =
                    RoutingTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RoutingSetting {
                    protocol: t.protocol,
                    recompute_interval_s: t.recompute_interval_s,
                    hello_interval_s: t.hello_interval_s,
                    tc_interval_s: t.tc_interval_s,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// The validated routing of a wireless world.
#[derive(Clone, Debug, PartialEq)]
pub enum RoutingSpec {
    /// The idealized oracle.
    Oracle(RoutingConfig),
    /// OLSR over the DCF.
    Olsr(OlsrConfig),
}

fn default_box() -> [f64; 3] {
    [300.0, 300.0, 100.0]
}
fn default_queue() -> u64 {
    100
}
fn default_mobility() -> MobilityConfig {
    MobilityConfig::GaussMarkov(GaussMarkovConfig::default())
}

/// `[wireless]`: the shared medium, the box, routing and default mobility.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WirelessConfig {
    /// Size of the simulation box `[x, y, z]`, metres, corner at the
    /// origin (default `[300, 300, 100]`).
    #[serde(default = "default_box")]
    pub box_m: [f64; 3],
    /// Capacity of every node's drop-tail FIFO transmit queue, packets
    /// (default 100, ns-3's `WifiMacQueue` default is 500; seed 001 does
    /// not say).
    #[serde(default = "default_queue")]
    pub queue_packets: u64,
    /// The 802.11b channel (`world::channel::wifi::WifiConfig`).
    #[serde(default)]
    pub channel: WifiConfig,
    /// The routing protocol and its timing ([`RoutingSetting`]): `"oracle"`
    /// (default) or `"olsr"` (needs `mac = { model = "dcf" }`).
    #[serde(default)]
    pub routing: RoutingSetting,
    /// The MAC (`world::dcf::MacConfig`): `{ model = "statistical" }`
    /// (default) or `{ model = "dcf", rx_sensitivity_dbm, capture_threshold_db }`.
    #[serde(default)]
    pub mac: MacConfig,
    /// Mobility of nodes that give none (default Gauss-Markov with its
    /// defaults: 20 m/s, α = 0.85, 0.1 s steps).
    #[serde(default = "default_mobility")]
    pub mobility: MobilityConfig,
}

/// The validated wireless world.
#[derive(Clone, Debug)]
pub struct WirelessSpec {
    /// The simulation box.
    pub bounds: Bounds,
    /// Per-node transmit queue capacity, packets.
    pub queue_packets: u64,
    /// The channel.
    pub channel: WifiConfig,
    /// Routing.
    pub routing: RoutingSpec,
    /// The MAC.
    pub mac: MacConfig,
    /// Each node's mobility, by node index.
    pub mobility: Vec<MobilityConfig>,
}
