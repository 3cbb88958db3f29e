//! A datagram in flight through the simulated network.

use peregrine_cc::Time;
use peregrine_link::aqm::{Ecn, Queued};
use peregrine_proto::io::EcnCodepoint;

/// What the network needs to know about a datagram; the bytes are the
/// protocol's, untouched.
#[derive(Clone, Debug)]
pub struct Packet {
    /// A run-unique number (in creation order).
    pub id: u64,
    /// The flow whose endpoint sent it.
    pub flow: usize,
    /// Sent by the flow's client (forward direction) or its server.
    pub forward: bool,
    /// A DATA packet (SLTP PK_TYPE 3): loss models may spare the others.
    pub is_data: bool,
    /// Source node.
    pub src: usize,
    /// Destination node.
    pub dst: usize,
    /// The neighbour the current link delivers it to (set at each hop).
    pub next_hop: usize,
    /// Destination endpoint port.
    pub dst_port: u16,
    /// Source endpoint port.
    pub src_port: u16,
    /// Bytes on the wire (datagram plus IP/UDP overhead).
    pub wire_bytes: u32,
    /// When the sender's endpoint emitted it.
    pub created: Time,
    /// Whether it has left the sender's first-hop queue already.
    pub left_first_hop: bool,
    /// Links it has been sent on so far (IP's TTL counted up): the engine
    /// drops a packet about to take hop [`MAX_HOPS`] + 1, so a routing
    /// loop (OLSR's tables disagree for a while) costs a bounded airtime.
    pub hops: u8,
    /// The ECN codepoint of its IP header: the sender's `Transmit::ecn`,
    /// set to CE by an AQM on the way; the receiver gets it through
    /// `handle_datagram`.
    pub ecn: Option<EcnCodepoint>,
    /// The datagram.
    pub payload: Vec<u8>,
}

/// Most links a packet is sent on: 64, the default IPv4 TTL of Linux
/// and ns-3 (`Ipv4L3Protocol::DefaultTtl`).
pub const MAX_HOPS: u8 = 64;

impl peregrine_link::fifo::WireSize for Packet {
    fn wire_bytes(&self) -> u64 {
        u64::from(self.wire_bytes)
    }
}

impl Queued for Packet {
    fn ecn(&self) -> Ecn {
        ecn_of(self.ecn)
    }
    fn set_ce(&mut self) {
        self.ecn = Some(EcnCodepoint::Ce);
    }
    /// The flow and its direction: FQ-CoDel keeps a flow's two directions
    /// (and different flows) in different buckets.
    fn flow_key(&self) -> u64 {
        (self.flow as u64) << 1 | u64::from(self.forward)
    }
}

/// The core's codepoint as the link crate's ECN field.
pub fn ecn_of(c: Option<EcnCodepoint>) -> Ecn {
    match c {
        None => Ecn::NotEct,
        Some(EcnCodepoint::Ect0) => Ecn::Ect0,
        Some(EcnCodepoint::Ect1) => Ecn::Ect1,
        Some(EcnCodepoint::Ce) => Ecn::Ce,
    }
}

/// The link crate's ECN field as the core's codepoint.
pub fn codepoint_of(e: Ecn) -> Option<EcnCodepoint> {
    match e {
        Ecn::NotEct => None,
        Ecn::Ect0 => Some(EcnCodepoint::Ect0),
        Ecn::Ect1 => Some(EcnCodepoint::Ect1),
        Ecn::Ce => Some(EcnCodepoint::Ce),
    }
}

impl Packet {
    /// Whether `datagram` is an SLTP DATA packet: PK_TYPE is the high
    /// nibble of byte 4 (seed 003 Table I), DATA = 3. Short or malformed
    /// datagrams are simply "not DATA".
    pub fn datagram_is_data(datagram: &[u8]) -> bool {
        datagram.get(4).is_some_and(|b| b >> 4 == 3)
    }
}
