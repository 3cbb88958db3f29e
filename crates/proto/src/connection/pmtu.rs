//! Path MTU discovery glue: where [`crate::pmtud::Pmtud`] meets the
//! connection. Probes are ECHO packets (type 8) with REPLY_REQ, PROBE_ID
//! [`PMTU_PROBE_ID`], the probe's token in TIMESTAMP and PADDING up to
//! the probe size; any SLTP peer answers them with a small ECHO REPLY
//! echoing the token (docs/protocol.md §10 "Path MTU discovery"). They
//! take a packet number but are not DATA: not in flight, not retransmitted,
//! and their loss is no congestion signal.

use crate::connection::Connection;
use crate::pmtud::{PmtudCounters, PmtudState};
use crate::send_helpers::{build, TxBuf, Written};
use crate::wire::{EchoPayload, Flags, PacketType, Payload, HEADER_LEN};
use peregrine_cc::Time;

/// The PROBE_ID of a path MTU probe ("PMTU"); the path-validation
/// challenge uses another ([`super::path::PATH_PROBE_ID`]).
pub const PMTU_PROBE_ID: u32 = 0x504D_5455;

/// Path MTU discovery, as `ConnectionStats::pmtu` reports it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PmtuStats {
    /// Where the search is.
    pub state: PmtudState,
    /// The current PMTU: the largest datagram sent now, bytes (UDP
    /// payload, packet protection included).
    pub current_bytes: u16,
    /// The search's upper bound: the smaller of both sides' maximum
    /// datagram sizes.
    pub max_bytes: u16,
    /// Probe and black-hole counters.
    pub counters: PmtudCounters,
}

impl Connection {
    /// A due path MTU probe, written into `buf`. O(1).
    pub(crate) fn poll_pmtu_probe(&mut self, now: Time, buf: &mut TxBuf<'_>) -> Option<Written> {
        if !self.pmtud.is_enabled() || self.state != super::ConnectionState::Connected {
            return None;
        }
        // Lost once its answer is an RTO late (the answer is sent at once).
        let wait = self.recovery.rtt().rto();
        let (size, token) = self.pmtud.poll_probe(now, wait)?;
        let packet = usize::from(size.saturating_sub(self.tag_overhead()));
        let padding = packet.saturating_sub(HEADER_LEN + EchoPayload::FIXED_LEN);
        let pn = self.recovery.take_pn();
        let h = self.header(PacketType::Echo, Flags::REPLY_REQ);
        let p = EchoPayload {
            packet_number: pn as u32,
            probe_id: PMTU_PROBE_ID,
            timestamp_ns: token,
            arrival_ns: None,
            padding_len: u16::try_from(padding).unwrap_or(u16::MAX),
        };
        let w = build(buf, h, Payload::Echo(p), Some(pn))?;
        self.sent(now, w)
    }

    /// The answer to the path MTU probe `token`. O(1).
    pub(crate) fn on_pmtu_probe_answer(&mut self, now: Time, token: u64) {
        if self.pmtud.on_probe_acked(now, token) {
            self.sync_packet_size();
        }
    }

    /// The path MTU part of the stats.
    pub(crate) fn pmtu_stats(&self) -> PmtuStats {
        PmtuStats {
            state: self.pmtud.state(),
            current_bytes: self.pmtud.current(),
            max_bytes: self.pmtud.max(),
            counters: *self.pmtud.counters(),
        }
    }
}
