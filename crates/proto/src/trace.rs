//! The trace-event stream: what a connection did, event by event, for
//! qlog files, debuggers and tests.
//!
//! Sans-IO and pushed: an endpoint given a [`TraceFactory`]
//! ([`Endpoint::set_trace_factory`](crate::Endpoint::set_trace_factory))
//! asks it for a [`TraceSink`] for every connection it creates; the
//! connection hands each [`TraceEvent`] to its sink with the instant it
//! happened. The sink decides what to keep and where to write it
//! (`peregrine-trace` writes qlog). **Zero cost when nobody listens**: a
//! connection without a sink checks one `Option` at each trace point and
//! builds nothing; with a sink, each event is built on the stack and
//! borrows the connection's data (the packet's decoded form, the event's
//! fields) — nothing is allocated for it.
//!
//! What is traced, and where it is taken:
//!
//! * every datagram sent (`PacketSent`: its plaintext, before sealing) and
//!   every datagram received and accepted for a connection (`PacketReceived`:
//!   its plaintext, after opening), with the decoded header and payload;
//! * every packet declared lost with why (`PacketLost`: an ACK showed it
//!   missing, a NACK named it, or the retransmission timer fired);
//! * the congestion metrics whenever one of them changed after an input
//!   (`MetricsUpdated`: cwnd, bytes in flight, RTT estimates, pacing rate,
//!   ssthresh) and the controller's state when it changed;
//! * link hints as they reach the controller, streams opened, and every
//!   event the application is given ([`Event`]: connected, closed, message
//!   abandoned, path migrated, security violation, …) as `AppEvent`.

use crate::connection::events::Event;
use crate::wire::DatagramRepr;
use peregrine_cc::{CaState, LinkHint, Time};
use std::net::SocketAddr;
use std::time::Duration;

/// Which side of the connection the traced endpoint is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// It connected.
    Client,
    /// It accepted.
    Server,
}

/// Why a packet was declared lost.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LossTrigger {
    /// An acknowledgement showed it missing (packet or time threshold).
    Acknowledgement,
    /// The receiver named it in a NACK.
    Nack,
    /// The retransmission timer (RTO) fired.
    Timeout,
}

/// The congestion metrics of a connection at one instant.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Metrics {
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Bytes sent and neither acknowledged nor declared lost.
    pub bytes_in_flight: u64,
    /// Slow-start threshold, bytes; `None` while infinite.
    pub ssthresh_bytes: Option<u64>,
    /// Smoothed RTT, once sampled.
    pub smoothed_rtt: Option<Duration>,
    /// RTT variation, once sampled.
    pub rtt_variance: Option<Duration>,
    /// Minimum RTT seen, once sampled.
    pub min_rtt: Option<Duration>,
    /// Pacing rate, bit/s; `None` when unpaced.
    pub pacing_rate_bps: Option<u64>,
}

/// One traced event; it borrows what it describes.
#[derive(Debug)]
pub enum TraceEvent<'a> {
    /// A datagram left the connection (plaintext: before sealing).
    PacketSent {
        /// Its decoded form.
        datagram: &'a DatagramRepr<'a>,
        /// Its full packet number.
        packet_number: Option<u64>,
        /// Its length on the wire, bytes (the 16-byte tag included once
        /// sealed).
        size: usize,
    },
    /// A datagram for the connection was accepted for processing
    /// (plaintext: after opening).
    PacketReceived {
        /// Its decoded form.
        datagram: &'a DatagramRepr<'a>,
        /// Its full packet number (expanded as the receive path does).
        packet_number: Option<u64>,
        /// Its length as received, bytes.
        size: usize,
    },
    /// Packets declared lost at once, by one cause.
    PacketsLost {
        /// Their full packet numbers, ascending, each once.
        packet_numbers: &'a [u64],
        /// Why.
        trigger: LossTrigger,
    },
    /// At least one metric changed since the last `MetricsUpdated`.
    MetricsUpdated(Metrics),
    /// The controller's congestion state changed.
    CongestionStateUpdated {
        /// The state before (`None` for the first report).
        old: Option<CaState>,
        /// The state now.
        new: CaState,
        /// The algorithm's own mode, if it has modes (BBR: `probe_bw`, …).
        mode: Option<&'static str>,
    },
    /// A link-layer hint reached the controller.
    LinkHint(&'a LinkHint),
    /// The application opened (or reconfigured) a stream.
    StreamOpened {
        /// The stream.
        stream: u16,
    },
    /// An event the application was given.
    AppEvent(&'a Event),
}

/// Receives one connection's events. `Send`: connections move between
/// threads with their endpoint.
pub trait TraceSink: Send {
    /// One event at `now`. Called on the connection's own path: keep it
    /// cheap (buffer; write in bulk).
    fn event(&mut self, now: Time, event: &TraceEvent<'_>);
}

/// What the endpoint knows of a connection it is creating.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceTarget {
    /// This side's role.
    pub role: Role,
    /// This side's connection id (SRC_ID of what it sends).
    pub local_id: u16,
    /// The peer's address.
    pub remote: SocketAddr,
    /// When the connection was created.
    pub created: Time,
}

/// Makes a sink per connection (`None`: do not trace this one).
pub trait TraceFactory: Send {
    /// A sink for the connection described by `target`.
    fn sink(&mut self, target: &TraceTarget) -> Option<Box<dyn TraceSink>>;
}
