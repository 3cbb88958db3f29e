//! The group's source: membership, fan-out over the members' connections,
//! per-member acknowledgement state, the bounded group queue that paces
//! the group to its slowest member, and eviction.
//!
//! Sans-IO like the rest: the application calls [`GroupSender::poll`]
//! with its endpoint after every endpoint call (a datagram, a timeout)
//! and when [`GroupSender::poll_timeout`] comes, and hands it the
//! endpoint's events with [`GroupSender::handle_event`].

use super::GroupMessage;
use crate::connection::{ConnectionState, Event, MessageId, SendError};
use crate::endpoint::{ConnectionHandle, Endpoint};
use peregrine_cc::Time;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// How a group behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupConfig {
    /// The group id (JOIN/LEAVE GROUP_ID, and the first field of every
    /// group message).
    pub group: u32,
    /// The stream group messages use on each member's connection.
    pub stream: u16,
    /// Messages admitted but not yet acknowledged by every member that
    /// must get them; `send` would-blocks beyond this.
    pub max_queue_messages: usize,
    /// Messages handed to one member's connection and not yet
    /// acknowledged, at most.
    pub member_window: usize,
    /// Evict a member that has messages outstanding and acknowledged
    /// nothing new for this long (`None`: never).
    pub evict_after: Option<Duration>,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            group: 1,
            stream: 1,
            max_queue_messages: 256,
            member_window: 64,
            evict_after: Some(Duration::from_secs(5)),
        }
    }
}

/// Why [`GroupSender::send`] refused a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GroupSendError {
    /// The group queue is full: the slowest member has not caught up.
    /// Try again after the next `poll`.
    #[error("group queue full: waiting for the slowest member")]
    WouldBlock,
    /// Every group sequence number was used (2^64 − 1 is reserved).
    #[error("group sequence numbers exhausted")]
    SequenceExhausted,
}

/// Why a member was removed without leaving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictReason {
    /// No acknowledgement progress for `evict_after`.
    Silent,
    /// Its connection is closed (or gone).
    ConnectionClosed,
}

/// What the group tells the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupEvent {
    /// A member joined; it gets every message from `first_seq` on.
    MemberJoined {
        /// The member's connection.
        member: ConnectionHandle,
        /// The first sequence number it gets.
        first_seq: u64,
    },
    /// A member left and received everything it had to: the sequence
    /// numbers `first_seq .. end_seq`.
    MemberLeft {
        /// The member's connection.
        member: ConnectionHandle,
        /// The first sequence number it got.
        first_seq: u64,
        /// One past the last one.
        end_seq: u64,
    },
    /// A member was removed.
    MemberEvicted {
        /// The member's connection.
        member: ConnectionHandle,
        /// Why.
        reason: EvictReason,
        /// Everything below this was acknowledged by it.
        acked_below: u64,
    },
}

/// One member's state, for inspection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberInfo {
    /// The first sequence number it gets.
    pub first_seq: u64,
    /// Everything below this is acknowledged by it.
    pub acked_below: u64,
    /// Handed to its connection so far (one past the last).
    pub sent_below: u64,
    /// Set once it left: it still gets everything below this.
    pub end_seq: Option<u64>,
}

/// Group counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSenderStats {
    /// Messages admitted by `send`.
    pub messages_admitted: u64,
    /// `send` calls refused with `WouldBlock`.
    pub would_block: u64,
    /// Group messages handed to member connections (one per member).
    pub member_messages_sent: u64,
    /// Members that joined.
    pub joins: u64,
    /// Members that left (and drained).
    pub leaves: u64,
    /// Members evicted.
    pub evictions: u64,
    /// Largest group queue seen, messages.
    pub max_queue_messages: usize,
}

#[derive(Debug, Clone)]
struct Member {
    first_seq: u64,
    next_seq: u64,
    acked_below: u64,
    end_seq: Option<u64>,
    in_flight: VecDeque<(u64, MessageId)>,
    last_progress: Time,
}

impl Member {
    /// One past the last sequence number it must get.
    fn end(&self, group_next: u64) -> u64 {
        self.end_seq.unwrap_or(group_next)
    }
    fn outstanding(&self, group_next: u64) -> bool {
        self.acked_below < self.end(group_next)
    }
}

/// The source of one group. See the [module](super) overview.
#[derive(Debug, Clone)]
pub struct GroupSender {
    config: GroupConfig,
    next_seq: u64,
    /// Admitted messages from `base_seq` on.
    queue: VecDeque<Vec<u8>>,
    base_seq: u64,
    members: BTreeMap<ConnectionHandle, Member>,
    events: VecDeque<GroupEvent>,
    stats: GroupSenderStats,
}

impl GroupSender {
    /// A group with no member. Limits of 0 are raised to 1.
    pub fn new(config: GroupConfig) -> GroupSender {
        let mut config = config;
        config.max_queue_messages = config.max_queue_messages.max(1);
        config.member_window = config.member_window.max(1);
        GroupSender {
            config,
            next_seq: 0,
            queue: VecDeque::new(),
            base_seq: 0,
            members: BTreeMap::new(),
            events: VecDeque::new(),
            stats: GroupSenderStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// The sequence number the next admitted message gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Messages in the group queue (admitted, not yet acknowledged by
    /// every member that must get them).
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The members (leaving ones included until they drained).
    pub fn members(&self) -> Vec<ConnectionHandle> {
        self.members.keys().copied().collect()
    }

    /// One member's state.
    pub fn member(&self, member: ConnectionHandle) -> Option<MemberInfo> {
        self.members.get(&member).map(|m| MemberInfo {
            first_seq: m.first_seq,
            acked_below: m.acked_below,
            sent_below: m.next_seq,
            end_seq: m.end_seq,
        })
    }

    /// The counters.
    pub fn stats(&self) -> &GroupSenderStats {
        &self.stats
    }

    /// Add a member: it gets every message admitted from now on. A member
    /// that was leaving stays (and keeps getting messages).
    pub fn join(&mut self, now: Time, member: ConnectionHandle) {
        if let Some(m) = self.members.get_mut(&member) {
            m.end_seq = None;
            return;
        }
        self.members.insert(
            member,
            Member {
                first_seq: self.next_seq,
                next_seq: self.next_seq,
                acked_below: self.next_seq,
                end_seq: None,
                in_flight: VecDeque::new(),
                last_progress: now,
            },
        );
        self.stats.joins += 1;
        self.events.push_back(GroupEvent::MemberJoined {
            member,
            first_seq: self.next_seq,
        });
    }

    /// A member leaves: it still gets every message admitted so far, then
    /// is removed ([`GroupEvent::MemberLeft`]).
    pub fn leave(&mut self, member: ConnectionHandle) {
        let next = self.next_seq;
        if let Some(m) = self.members.get_mut(&member) {
            if m.end_seq.is_none() {
                m.end_seq = Some(next);
            }
        }
    }

    /// Feed an endpoint event: JOIN/LEAVE of this group, closed
    /// connections. Returns whether the group used it.
    pub fn handle_event(&mut self, now: Time, handle: ConnectionHandle, event: &Event) -> bool {
        match event {
            Event::PeerJoined { group } if *group == self.config.group => {
                self.join(now, handle);
                true
            }
            Event::PeerLeft { group } if *group == self.config.group => {
                self.leave(handle);
                true
            }
            Event::Closed { .. } => {
                self.evict(handle, EvictReason::ConnectionClosed);
                false
            }
            _ => false,
        }
    }

    /// Admit a message for every current member; its group sequence
    /// number. Fails while the group queue is full.
    pub fn send(&mut self, bytes: &[u8]) -> Result<u64, GroupSendError> {
        if self.next_seq == u64::MAX {
            return Err(GroupSendError::SequenceExhausted);
        }
        if self.queue.len() >= self.config.max_queue_messages {
            self.stats.would_block += 1;
            return Err(GroupSendError::WouldBlock);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queue.push_back(bytes.to_vec());
        self.stats.messages_admitted += 1;
        self.stats.max_queue_messages = self.stats.max_queue_messages.max(self.queue.len());
        Ok(seq)
    }

    fn evict(&mut self, member: ConnectionHandle, reason: EvictReason) {
        if let Some(m) = self.members.remove(&member) {
            self.stats.evictions += 1;
            self.events.push_back(GroupEvent::MemberEvicted {
                member,
                reason,
                acked_below: m.acked_below,
            });
        }
    }

    /// Move the group along: read each member's acknowledgements, hand
    /// its connection the messages it may take, finish leaving members,
    /// evict silent ones, and drop messages every member acknowledged.
    pub fn poll(&mut self, endpoint: &mut Endpoint, now: Time) {
        let handles: Vec<ConnectionHandle> = self.members.keys().copied().collect();
        for h in handles {
            self.poll_member(endpoint, now, h);
        }
        self.trim();
    }

    fn poll_member(&mut self, ep: &mut Endpoint, now: Time, h: ConnectionHandle) {
        let open = matches!(
            ep.state(h),
            Some(ConnectionState::Connected | ConnectionState::Starting)
        );
        if !open {
            self.evict(h, EvictReason::ConnectionClosed);
            return;
        }
        let group_next = self.next_seq;
        let (group, stream, window) = (
            self.config.group,
            self.config.stream,
            self.config.member_window,
        );
        let Some(m) = self.members.get_mut(&h) else {
            return;
        };
        // Acknowledgements (in order: the stream is reliable-ordered).
        while let Some(&(seq, id)) = m.in_flight.front() {
            if ep.message_settled(h, id) != Some(true) {
                break;
            }
            m.in_flight.pop_front();
            m.acked_below = seq + 1;
            m.last_progress = now;
        }
        // New messages, as its window and its connection allow.
        let end = m.end(group_next);
        let mut closed = false;
        while m.next_seq < end && m.in_flight.len() < window {
            let Some(body) = usize::try_from(m.next_seq - self.base_seq)
                .ok()
                .and_then(|i| self.queue.get(i))
            else {
                break;
            };
            let bytes = GroupMessage {
                group,
                seq: m.next_seq,
                body,
            }
            .encode();
            match ep.send_message(h, now, stream, &bytes) {
                Ok(id) => {
                    m.in_flight.push_back((m.next_seq, id));
                    m.next_seq += 1;
                    self.stats.member_messages_sent += 1;
                }
                Err(SendError::BufferFull) => break,
                Err(_) => {
                    closed = true;
                    break;
                }
            }
        }
        if closed {
            self.evict(h, EvictReason::ConnectionClosed);
            return;
        }
        let Some(m) = self.members.get_mut(&h) else {
            return;
        };
        if !m.outstanding(group_next) {
            m.last_progress = now;
            if let Some(end_seq) = m.end_seq {
                let first_seq = m.first_seq;
                self.members.remove(&h);
                self.stats.leaves += 1;
                self.events.push_back(GroupEvent::MemberLeft {
                    member: h,
                    first_seq,
                    end_seq,
                });
            }
            return;
        }
        if let Some(after) = self.config.evict_after {
            if now >= m.last_progress + after {
                self.evict(h, EvictReason::Silent);
            }
        }
    }

    /// Drop queued messages every member has acknowledged (or never had
    /// to get).
    fn trim(&mut self) {
        let group_next = self.next_seq;
        let needed = self
            .members
            .values()
            .filter(|m| m.outstanding(group_next))
            .map(|m| m.acked_below)
            .min()
            .unwrap_or(group_next);
        while self.base_seq < needed && self.queue.pop_front().is_some() {
            self.base_seq += 1;
        }
    }

    /// When [`poll`](Self::poll) must run even if nothing else happens
    /// (an eviction deadline).
    pub fn poll_timeout(&self) -> Option<Time> {
        let after = self.config.evict_after?;
        self.members
            .values()
            .filter(|m| m.outstanding(self.next_seq))
            .map(|m| m.last_progress + after)
            .min()
    }

    /// The next group event.
    pub fn poll_event(&mut self) -> Option<GroupEvent> {
        self.events.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::EndpointConfig;

    #[test]
    fn queue_bound_gives_would_block_and_an_empty_group_keeps_nothing() {
        let mut ep = Endpoint::new(EndpointConfig::default(), 1);
        let mut g = GroupSender::new(GroupConfig {
            max_queue_messages: 2,
            ..GroupConfig::default()
        });
        assert_eq!(g.send(b"a"), Ok(0));
        assert_eq!(g.send(b"b"), Ok(1));
        assert_eq!(g.send(b"c"), Err(GroupSendError::WouldBlock));
        assert_eq!(g.stats().would_block, 1);
        // No member must get them: they leave the queue at the next poll.
        g.poll(&mut ep, Time::ZERO);
        assert_eq!(g.queued(), 0);
        assert_eq!(g.send(b"c"), Ok(2));
    }

    #[test]
    fn a_member_whose_connection_is_gone_is_evicted_and_leave_of_a_stranger_is_ignored() {
        let mut ep = Endpoint::new(EndpointConfig::default(), 1);
        let mut g = GroupSender::new(GroupConfig::default());
        let ghost = ConnectionHandle(7);
        g.leave(ghost);
        assert!(g.members().is_empty());
        g.join(Time::ZERO, ghost);
        assert_eq!(
            g.poll_event(),
            Some(GroupEvent::MemberJoined {
                member: ghost,
                first_seq: 0
            })
        );
        g.send(b"x").unwrap();
        g.poll(&mut ep, Time::ZERO);
        assert_eq!(
            g.poll_event(),
            Some(GroupEvent::MemberEvicted {
                member: ghost,
                reason: EvictReason::ConnectionClosed,
                acked_below: 0
            })
        );
        assert_eq!(g.queued(), 0);
    }
}
