//! The engine side of `[[flow_groups]]`: one server `Endpoint` per server
//! node, accepting every member connection aimed at it.
//!
//! A hand-written flow owns its server endpoint (port `10000 + flow`); the
//! members of the groups aimed at node `n` all connect to the one endpoint
//! at `n:`[`SHARED_PORT`]. That endpoint serves many connections, so what
//! the engine attributes per flow (the flow of a packet it sends, of a
//! message it delivers) is found from the connection's peer address:
//! every client socket is one flow's (`Sim::by_addr`). Per-connection and
//! per-stream metrics therefore stay per flow, exactly as for hand-written
//! flows.

use super::{node_of, Sim};
use crate::scenario::Model;
use peregrine_proto::crypto::{NoisePattern, SecurityConfig};
use peregrine_proto::EndpointConfig;
use std::net::SocketAddr;

/// Port of a shared server endpoint (below the flows' `10000 + flow`).
pub(crate) const SHARED_PORT: u16 = 9_000;

/// Per flow, the server node of its group (`None`: a hand-written flow
/// with its own server endpoint), and per server node the members aimed
/// at it. O(flows) to build.
pub(crate) struct SharedServers {
    /// Per flow: `Some(server node)` for group members.
    pub(crate) node_of_flow: Vec<Option<usize>>,
    /// Per node: how many members connect to its shared endpoint.
    pub(crate) members_at: Vec<usize>,
}

impl SharedServers {
    /// The sharing of model `m` (node names resolved through the members'
    /// own `dst`, which validation resolved).
    pub(crate) fn new(m: &Model) -> SharedServers {
        let mut node_of_flow = vec![None; m.flows.len()];
        let mut members_at = vec![0; m.nodes.len()];
        for g in &m.flow_groups {
            for f in g.flows.clone() {
                let dst = m.flows[f].dst;
                node_of_flow[f] = Some(dst);
                members_at[dst] += 1;
            }
        }
        SharedServers {
            node_of_flow,
            members_at,
        }
    }
}

/// The endpoint configuration of the shared server at a node with
/// `members` connections: the default, with room for every member.
pub(crate) fn shared_endpoint_config(
    server: peregrine_proto::ConnectionConfig,
    members: usize,
) -> EndpointConfig {
    let mut c = EndpointConfig::server(server);
    c.max_connections = c.max_connections.max(members);
    c
}

/// `(client, server)` security of group member `flow` whose shared server
/// endpoint is at node `server_node`: the client's key is the flow's
/// (`keys/N/client`), the server's static key and PSK the endpoint's
/// (`keys/shared/<node>/server`, `…/psk`), so every member authenticates
/// the one server. Keys derive from the seed (they protect nothing; see
/// `security.rs`).
pub(crate) fn member_security(
    seed: u64,
    flow: usize,
    server_node: &str,
    pattern: NoisePattern,
) -> (SecurityConfig, SecurityConfig) {
    super::security::noise_pair(seed, flow, &format!("keys/shared/{server_node}"), pattern)
}

impl Sim {
    /// The flow whose client socket is `peer` (`None`: no such socket).
    /// O(log sockets).
    pub(super) fn flow_of_peer(&self, peer: SocketAddr) -> Option<usize> {
        let s = *self.by_addr.get(&(node_of(&peer), peer.port()))?;
        let slot = &self.slots[s];
        slot.client.then_some(slot.flow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_share_the_server_key_and_every_role_validates() {
        for p in NoisePattern::ALL {
            let (c0, s0) = member_security(7, 0, "ground", p);
            let (c1, s1) = member_security(7, 1, "ground", p);
            assert_eq!(c0.validate(true), Ok(()), "{p:?} client");
            assert_eq!(s0.validate(false), Ok(()), "{p:?} server");
            assert_eq!(s0, s1, "{p:?}: one server, one key");
            if p != NoisePattern::NNpsk0 {
                assert_ne!(c0, c1, "{p:?}: each member its own key");
            }
        }
    }
}
