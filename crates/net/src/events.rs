//! # What a connection tells the application besides its messages
//!
//! Every event of the core (`peregrine_proto::Event`) except the two the
//! runtime consumes itself — `MessageReceived` (the inbox: `recv`,
//! `recv_on`, `on_message`) and `Writable` (a waiting `send` resumes) —
//! and `Connected` (`connect` / `accept` return) reaches the application
//! as a [`ConnectionEvent`], read with `Connection::next_event`.
//!
//! The queue is bounded ([`EVENT_QUEUE_CAPACITY`] per connection), so an
//! application that never reads events costs a fixed amount of memory:
//! when it is full the *oldest* event is dropped (the newest state —
//! the last path, the final `Closed` — is what matters) and counted; the
//! next read returns [`ConnectionEvent::Lagged`] with the number lost
//! before the events that were kept (as `tokio::sync::broadcast` does).
//! `Connection::events_dropped` is the running total.
//!
//! A sender that must know the fate of one message sends it with
//! `Connection::send_tracked` and awaits its [`Delivery`]'s
//! [`MessageOutcome`]: acknowledged, abandoned (deadline or loss), or not
//! delivered because the connection ended first.

use peregrine_cc::LinkHintKind;
use peregrine_proto::connection::ViolationKind;
use peregrine_proto::{AbandonReason, CloseReason, Event, HintEffect, MessageId};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

/// Events one connection keeps for the application before the oldest is
/// dropped (and counted). An event is at most 80 bytes (plus the list of
/// a `Closed`), so a connection whose application never reads its events
/// holds at most 80 KiB of them — 2 % of its default 4 MiB receive buffer.
pub const EVENT_QUEUE_CAPACITY: usize = 1024;

/// An event of one connection, from `Connection::next_event`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionEvent {
    /// The peer closed its side (END received); everything it sent before
    /// has been delivered.
    PeerClosed,
    /// The connection is closed at both ends (or abandoned): the last
    /// event of a connection.
    Closed {
        /// Why.
        reason: CloseReason,
        /// Messages this side sent that the peer's application may not
        /// have received, in order (empty after a normal close).
        undelivered: Vec<MessageId>,
    },
    /// This side gave up a message it sent: its deadline passed before the
    /// peer acknowledged all of it, or (unreliable stream) a block was
    /// lost. The peer skips it (it may still have been delivered if only
    /// the acknowledgement was late).
    MessageAbandoned {
        /// The message (its stream and number, as `send` returned them).
        id: MessageId,
        /// Why.
        reason: AbandonReason,
    },
    /// Datagrams for this connection failed its checks and were dropped
    /// (reported for the 1st, 2nd, 4th, 8th, … of a kind; all are counted
    /// in `ConnectionStats`).
    SecurityViolation {
        /// What failed.
        kind: ViolationKind,
        /// Violations of this kind so far.
        count: u64,
    },
    /// The peer's endpoint reset the connection (REMOTE_RESET); `Closed`
    /// with [`CloseReason::Reset`] follows.
    NetworkReset,
    /// The peer's packets now come from a new, validated address, and this
    /// side sends there.
    PathMigrated {
        /// The old address.
        from: SocketAddr,
        /// The new address.
        to: SocketAddr,
        /// Whether RTT and congestion state restarted (the IP changed).
        congestion_reset: bool,
    },
    /// The peer (a group's source) confirmed this side's JOIN of `group`.
    GroupJoined {
        /// The group.
        group: u32,
    },
    /// The peer (a group's source) refused this side's JOIN of `group`
    /// (it answered with a LEAVE reply, e.g. an endpoint built with
    /// `EndpointBuilder::refuse_unknown_groups` that does not host the
    /// group): this side is not a member and no longer asks.
    GroupRejected {
        /// The group.
        group: u32,
    },
    /// The peer confirmed this side's LEAVE of `group`.
    GroupLeft {
        /// The group.
        group: u32,
    },
    /// The peer joined `group` (this side is its source).
    PeerJoined {
        /// The group.
        group: u32,
    },
    /// The peer left `group` (this side is its source).
    PeerLeft {
        /// The group.
        group: u32,
    },
    /// A link hint (`Connection::link_hint`) reached the controller.
    LinkHintApplied {
        /// The hint's kind.
        kind: LinkHintKind,
        /// What it did to the sender.
        effect: HintEffect,
        /// The congestion window after it, bytes.
        cwnd_bytes: u64,
    },
    /// The controller holds its window (only probes leave) through an
    /// outage it expects, from a hint or a loss it judged an outage; the
    /// window is kept, not reduced.
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
        /// The controller reduced the window: the outage outlasted its
        /// prediction (the hint expired without the link answering) or ECN
        /// marked a packet. `false`: sending resumed at the held window.
        reduced: bool,
    },
    /// The queue was full and this many older events were dropped before
    /// the ones that follow.
    Lagged {
        /// Events lost.
        missed: u64,
    },
}

impl ConnectionEvent {
    /// The application's view of a core event; `None` for the events the
    /// runtime handles itself (`Connected`, `MessageReceived`,
    /// `Writable`). Matches every variant by name, so a new core event
    /// must be given a place here before the crate compiles.
    pub(crate) fn from_core(ev: &Event) -> Option<ConnectionEvent> {
        Some(match ev {
            Event::Connected | Event::MessageReceived { .. } | Event::Writable => return None,
            Event::PeerClosed => ConnectionEvent::PeerClosed,
            Event::Closed {
                reason,
                undelivered,
            } => ConnectionEvent::Closed {
                reason: *reason,
                undelivered: undelivered.clone(),
            },
            Event::MessageAbandoned { id, reason } => ConnectionEvent::MessageAbandoned {
                id: *id,
                reason: *reason,
            },
            Event::SecurityViolation { kind, count } => ConnectionEvent::SecurityViolation {
                kind: *kind,
                count: *count,
            },
            Event::NetworkReset => ConnectionEvent::NetworkReset,
            Event::PathMigrated {
                from,
                to,
                congestion_reset,
            } => ConnectionEvent::PathMigrated {
                from: *from,
                to: *to,
                congestion_reset: *congestion_reset,
            },
            Event::GroupJoined { group } => ConnectionEvent::GroupJoined { group: *group },
            Event::GroupRejected { group } => ConnectionEvent::GroupRejected { group: *group },
            Event::GroupLeft { group } => ConnectionEvent::GroupLeft { group: *group },
            Event::PeerJoined { group } => ConnectionEvent::PeerJoined { group: *group },
            Event::PeerLeft { group } => ConnectionEvent::PeerLeft { group: *group },
            Event::LinkHintApplied {
                kind,
                effect,
                cwnd_bytes,
            } => ConnectionEvent::LinkHintApplied {
                kind: *kind,
                effect: *effect,
                cwnd_bytes: *cwnd_bytes,
            },
            Event::SendWindowHeld { cwnd_bytes } => ConnectionEvent::SendWindowHeld {
                cwnd_bytes: *cwnd_bytes,
            },
            Event::SendWindowReleased {
                held_for,
                cwnd_bytes,
                reduced,
            } => ConnectionEvent::SendWindowReleased {
                held_for: *held_for,
                cwnd_bytes: *cwnd_bytes,
                reduced: *reduced,
            },
        })
    }
}

/// A connection's bounded event queue (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    queue: VecDeque<ConnectionEvent>,
    /// Dropped since the application last read (reported as `Lagged`).
    missed: u64,
    /// Dropped in all.
    pub(crate) dropped: u64,
}

impl EventQueue {
    /// Queue an event, dropping the oldest when full. O(1).
    pub(crate) fn push(&mut self, ev: ConnectionEvent) {
        if self.queue.len() >= EVENT_QUEUE_CAPACITY {
            self.queue.pop_front();
            if self.missed == 0 {
                // Once per overflow, not per dropped event.
                tracing::warn!(
                    capacity = EVENT_QUEUE_CAPACITY,
                    "connection event queue full: dropping the oldest events (read as Lagged)"
                );
            }
            self.missed += 1;
            self.dropped += 1;
        }
        self.queue.push_back(ev);
    }

    /// The next event: `Lagged` first if some were dropped. O(1).
    pub(crate) fn pop(&mut self) -> Option<ConnectionEvent> {
        if self.missed > 0 {
            let missed = std::mem::take(&mut self.missed);
            return Some(ConnectionEvent::Lagged { missed });
        }
        self.queue.pop_front()
    }
}

/// What became of a message sent with `Connection::send_tracked`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MessageOutcome {
    /// The peer acknowledged every block of it. The peer's transport has
    /// it; on an ordered stream its application gets it once the messages
    /// before it arrive (unless the connection ends first).
    Acknowledged,
    /// This side gave it up (its deadline passed, or a block of an
    /// unreliable message was lost); also a [`ConnectionEvent::MessageAbandoned`].
    Abandoned(AbandonReason),
    /// The connection ended before the peer acknowledged it.
    Undelivered(CloseReason),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_at_most_80_bytes() {
        // The memory bound in EVENT_QUEUE_CAPACITY's documentation.
        assert!(std::mem::size_of::<ConnectionEvent>() <= 80);
    }

    #[test]
    fn a_full_queue_drops_the_oldest_and_says_how_many() {
        let mut q = EventQueue::default();
        for group in 0..EVENT_QUEUE_CAPACITY as u32 + 3 {
            q.push(ConnectionEvent::GroupJoined { group });
        }
        assert_eq!(q.dropped, 3);
        assert_eq!(q.pop(), Some(ConnectionEvent::Lagged { missed: 3 }));
        assert_eq!(q.pop(), Some(ConnectionEvent::GroupJoined { group: 3 }));
        let rest = std::iter::from_fn(|| q.pop()).count();
        assert_eq!(rest, EVENT_QUEUE_CAPACITY - 1);
        assert_eq!(q.dropped, 3, "the total stays");
    }

    #[test]
    fn every_core_event_but_the_runtime_s_own_reaches_the_application() {
        let id = MessageId {
            stream: 3,
            number: 9,
        };
        let a: SocketAddr = "127.0.0.1:1".parse().expect("literal");
        let b: SocketAddr = "127.0.0.2:1".parse().expect("literal");
        let surfaced = [
            Event::PeerClosed,
            Event::Closed {
                reason: CloseReason::Remote,
                undelivered: vec![id],
            },
            Event::MessageAbandoned {
                id,
                reason: AbandonReason::DeadlineExpired,
            },
            Event::SecurityViolation {
                kind: ViolationKind::Unauthenticated,
                count: 4,
            },
            Event::NetworkReset,
            Event::PathMigrated {
                from: a,
                to: b,
                congestion_reset: true,
            },
            Event::GroupJoined { group: 1 },
            Event::GroupRejected { group: 5 },
            Event::GroupLeft { group: 2 },
            Event::PeerJoined { group: 3 },
            Event::PeerLeft { group: 4 },
            Event::LinkHintApplied {
                kind: LinkHintKind::Blockage,
                effect: HintEffect::WindowHeld,
                cwnd_bytes: 10,
            },
            Event::SendWindowHeld { cwnd_bytes: 10 },
            Event::SendWindowReleased {
                held_for: Duration::from_millis(5),
                cwnd_bytes: 10,
                reduced: false,
            },
        ];
        for ev in &surfaced {
            let out = ConnectionEvent::from_core(ev);
            assert!(out.is_some(), "{ev:?} was dropped");
            // Same name, same fields (the Debug forms agree).
            assert_eq!(format!("{ev:?}"), format!("{:?}", out.expect("checked")));
        }
        for ev in [
            Event::Connected,
            Event::Writable,
            Event::MessageReceived {
                stream: 1,
                id,
                bytes: vec![1],
            },
        ] {
            assert_eq!(ConnectionEvent::from_core(&ev), None);
        }
    }
}
