//! What a connection tells the application (SLTP's event interface, seed
//! 003 §III-E): a connection started, a message arrived, the peer closed,
//! the connection is closed at both ends, a security violation, a network
//! reset — and, once the endpoint's buffer pool refused a message, that it
//! has room again (`Writable`); what a link hint did to the sender, and
//! when the controller held and released its window.

use crate::streams::AbandonReason;
use crate::wire::RejectReason;
use peregrine_cc::LinkHintKind;
use std::net::SocketAddr;
use std::time::Duration;

/// What a link hint did to this side's sender, in
/// [`Event::LinkHintApplied`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum HintEffect {
    /// The controller took note and the sender goes on as before: a
    /// controller without hint handling, a hint RTW-TCP classifies later
    /// losses with (a long or unknown outage, `CongestionFree` while not
    /// held), or one its CQI contradicts.
    Noted,
    /// The controller now holds its window: nothing but probes leave
    /// until the link answers or the predicted outage is over
    /// (RTW-TCP's pro-active freeze). [`Event::SendWindowHeld`] follows.
    WindowHeld,
    /// The hint ended a hold (`CongestionFree` while held): the saved
    /// window is back. [`Event::SendWindowReleased`] follows.
    WindowReleased,
}

/// Identifies one application message: its stream and its per-stream
/// number (the MESSAGE_NO of its stream frames). The sender gets it from
/// `send_message`; the receiver sees the same value in
/// [`Event::MessageReceived`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageId {
    /// The stream.
    pub stream: u16,
    /// The message's number on its stream, from 0.
    pub number: u32,
}

/// Why a connection ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// This side closed and the END/END + FIN exchange completed (or the
    /// connection was closed before it was established).
    Local,
    /// The peer closed and the END/END + FIN exchange completed.
    Remote,
    /// The peer rejected the START.
    Rejected(RejectReason),
    /// No answer to START within the handshake timeout.
    HandshakeTimeout,
    /// Nothing arrived from the peer for the idle timeout.
    IdleTimeout,
    /// The peer reset the connection (REMOTE_RESET).
    Reset,
    /// This side aborted the connection.
    Aborted,
    /// The peer broke the protocol (an impossible START answer, a message
    /// larger than this side accepts, …); the string says what.
    ProtocolViolation(&'static str),
    /// During the handshake the peer's host answered with an ICMP port
    /// unreachable: nothing listens on that port (`Endpoint::handle_unreachable`).
    ConnectionRefused {
        /// The address the START went to.
        peer: SocketAddr,
    },
    /// During the handshake an ICMP host, network or protocol unreachable
    /// came back: no route to the peer.
    HostUnreachable {
        /// The address the START went to.
        peer: SocketAddr,
    },
    /// With data outstanding, `ConnectionConfig::peer_death_timeouts`
    /// retransmission timeouts in a row passed with nothing heard from the
    /// peer (and no outage announced): the peer is declared dead.
    PeerDead {
        /// The peer's address.
        peer: SocketAddr,
        /// How long the oldest unanswered data had gone without an answer.
        silent_for: Duration,
        /// An ICMP unreachable for the peer arrived meanwhile (a hint, not
        /// a proof: ICMP is not authenticated).
        icmp: Option<Unreachable>,
    },
    /// A packet key reached its AEAD usage limit (docs/security.md, "AEAD
    /// limits") and no key update could replace it in time; the string
    /// says which limit.
    KeyLimit(&'static str),
}

/// What an ICMP (or ICMPv6) destination-unreachable said about a peer
/// address, as the runtime read it from the socket's error queue.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Unreachable {
    /// Port unreachable: the host is up and nothing listens on the port.
    Port,
    /// Host, network or protocol unreachable, or administratively
    /// prohibited: no route to the peer.
    Host,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unreachable::Port => "ICMP port unreachable",
            Unreachable::Host => "ICMP host unreachable",
        })
    }
}

impl CloseReason {
    /// A stable snake_case name for programs (the `kind` of `peregrine
    /// perf --json`'s `{"error": …}`): `local`, `remote`,
    /// `handshake_timeout`, `idle_timeout`, `reset`, `aborted`,
    /// `protocol_violation`, `connection_refused`, `host_unreachable`,
    /// `peer_dead`, `key_limit`, or for a REJECT its reason's name (`busy`,
    /// `security_required`, `key_mismatch`, …; `rejected` for a code
    /// without a name). O(1).
    pub fn kind(&self) -> &'static str {
        match self {
            CloseReason::Local => "local",
            CloseReason::Remote => "remote",
            CloseReason::Rejected(r) => r.name().unwrap_or("rejected"),
            CloseReason::HandshakeTimeout => "handshake_timeout",
            CloseReason::IdleTimeout => "idle_timeout",
            CloseReason::Reset => "reset",
            CloseReason::Aborted => "aborted",
            CloseReason::ProtocolViolation(_) => "protocol_violation",
            CloseReason::ConnectionRefused { .. } => "connection_refused",
            CloseReason::HostUnreachable { .. } => "host_unreachable",
            CloseReason::PeerDead { .. } => "peer_dead",
            CloseReason::KeyLimit(_) => "key_limit",
        }
    }

    /// Whether the connection ended as both sides meant it to (`Local`,
    /// `Remote`): anything else is a failure to report. O(1).
    pub fn is_normal(&self) -> bool {
        matches!(self, CloseReason::Local | CloseReason::Remote)
    }
}

impl std::fmt::Display for CloseReason {
    /// One line saying what happened and what to do about it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseReason::Local => f.write_str("closed by this side"),
            CloseReason::Remote => f.write_str("the peer closed the connection"),
            CloseReason::Rejected(r) => write!(f, "{r}"),
            CloseReason::HandshakeTimeout => f.write_str(
                "no answer to the handshake: check the address and port, that the server \
                 runs, and that no firewall drops UDP",
            ),
            CloseReason::IdleTimeout => f.write_str(
                "nothing heard from the peer for the idle timeout: the peer or the path went away",
            ),
            CloseReason::Reset => f.write_str(
                "the peer reset the connection: it restarted or lost the connection's state; \
                 connect again",
            ),
            CloseReason::Aborted => f.write_str("aborted by this side"),
            CloseReason::ProtocolViolation(what) => {
                write!(f, "the peer broke the protocol ({what}): check both sides run compatible versions")
            }
            CloseReason::ConnectionRefused { peer } => write!(
                f,
                "connection refused: nothing listens on {peer} (ICMP port unreachable); \
                 check the port and that the server runs"
            ),
            CloseReason::HostUnreachable { peer } => write!(
                f,
                "{peer} is unreachable (ICMP host unreachable): check the address and the route"
            ),
            CloseReason::PeerDead {
                peer,
                silent_for,
                icmp,
            } => {
                write!(
                    f,
                    "no answer from {peer} after {:.1} s: the peer or the path is gone",
                    silent_for.as_secs_f64()
                )?;
                match icmp {
                    Some(u) => write!(f, " ({u} seen)"),
                    None => Ok(()),
                }
            }
            CloseReason::KeyLimit(what) => write!(
                f,
                "closed before a packet key's usage limit ({what}); connect again for fresh keys"
            ),
        }
    }
}

/// What went wrong in a [`Event::SecurityViolation`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// A packet for this connection carried the wrong SYNC_NO.
    WrongSyncNo,
    /// A packet for this connection came from another address and could
    /// not be the peer's (a replay, a wrong type or SYNC_NO): dropped. An
    /// authentic one starts path validation instead (`connection::path`).
    WrongAddress,
    /// A datagram for this protected connection failed authentication
    /// (forged, tampered, replayed, or before the keys): dropped and
    /// counted (`ConnectionStats::security`), never acted upon.
    Unauthenticated,
}

/// An event for the application, from [`Endpoint::poll_event`](crate::Endpoint::poll_event).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The connection is established (both ends are CONNECTED).
    Connected,
    /// A whole message arrived, in order on its stream, exactly once.
    MessageReceived {
        /// Its stream.
        stream: u16,
        /// Its id (the same the sender got).
        id: MessageId,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// The peer closed the connection (END received); the messages it sent
    /// before have all been delivered.
    PeerClosed,
    /// The connection is closed at both ends (or abandoned); its resources
    /// are released after this event.
    Closed {
        /// Why.
        reason: CloseReason,
        /// Messages this side sent that the peer's application may not
        /// have received, in order (empty after a normal close): on each
        /// stream, the oldest message the peer has not acknowledged and
        /// every later one — a stream delivers in order, so a message
        /// behind a missing one was not delivered even if its own blocks
        /// were acknowledged.
        undelivered: Vec<MessageId>,
    },
    /// Packets failed the connection's checks. Reported for the 1st, 2nd,
    /// 4th, 8th, … violation so a flood cannot flood the event queue; every
    /// one is counted in the stats.
    SecurityViolation {
        /// What failed.
        kind: ViolationKind,
        /// Violations of this kind so far.
        count: u64,
    },
    /// This side gave up a message it sent: its deadline passed before the
    /// peer acknowledged all of it, or (unreliable stream) a block was
    /// lost. The peer skips it; it may still have been delivered if only
    /// the acknowledgement was late.
    MessageAbandoned {
        /// The message.
        id: MessageId,
        /// Why.
        reason: AbandonReason,
    },
    /// The peer's endpoint lost the connection or reset it (a datagram
    /// with REMOTE_RESET arrived); a `Closed` event with reason
    /// [`CloseReason::Reset`] follows.
    NetworkReset,
    /// The endpoint's buffer pool, which refused a message of this
    /// connection with [`SendError::WouldBlock`](super::SendError::WouldBlock),
    /// has room again for a message of that size: sending may resume.
    /// Raised once per refusal episode.
    Writable,
    /// The peer's packets now come from a new address, validated by a
    /// PATH_CHALLENGE/PATH_RESPONSE exchange; everything is sent there
    /// from now on (docs/protocol.md §10, "Address migration").
    PathMigrated {
        /// The old address.
        from: std::net::SocketAddr,
        /// The new address.
        to: std::net::SocketAddr,
        /// Whether RTT and congestion state restarted (the IP address
        /// changed; a port-only change keeps them).
        congestion_reset: bool,
    },
    /// The peer (a group's source) confirmed this side's JOIN of `group`.
    GroupJoined {
        /// The group.
        group: u32,
    },
    /// The peer (a group's source) refused this side's JOIN of `group`:
    /// it answered the JOIN with a LEAVE reply (docs/protocol.md, JOIN and
    /// LEAVE). The request is dropped; this side is not a member.
    GroupRejected {
        /// The group.
        group: u32,
    },
    /// The peer confirmed this side's LEAVE of `group`.
    GroupLeft {
        /// The group.
        group: u32,
    },
    /// The peer asked to join `group` (this side is the source).
    PeerJoined {
        /// The group.
        group: u32,
    },
    /// The peer asked to leave `group` (this side is the source).
    PeerLeft {
        /// The group.
        group: u32,
    },
    /// A link hint (`Endpoint::link_hint`) reached this connection's
    /// controller; what it did.
    LinkHintApplied {
        /// The hint's kind.
        kind: LinkHintKind,
        /// Its effect on the sender.
        effect: HintEffect,
        /// The congestion window after the hint, bytes.
        cwnd_bytes: u64,
    },
    /// The controller started holding its window (its send gate lets only
    /// probes through): a hint announced a short outage, or it judged a
    /// loss to be one. The window is kept, not reduced.
    SendWindowHeld {
        /// The window kept, bytes.
        cwnd_bytes: u64,
    },
    /// The hold ended.
    SendWindowReleased {
        /// How long it lasted.
        held_for: Duration,
        /// The window now, bytes.
        cwnd_bytes: u64,
        /// The window is smaller than the one held: the outage outlasted
        /// its prediction (the hint expired without the link answering)
        /// or ECN marked a packet, and the controller reduced. `false`:
        /// the link answered (or a `CongestionFree` hint came) and the
        /// sender resumed at the held window.
        reduced: bool,
    },
}
