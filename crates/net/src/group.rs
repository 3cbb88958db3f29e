//! # Multicast groups over UDP (issue 29)
//!
//! A thin runtime wrapper around the core's groups
//! (`peregrine_proto::multicast`): the runtime re-implements nothing of
//! membership, fan-out, acknowledgement tracking, pacing or eviction.
//!
//! * **Source side**: [`crate::Endpoint::group`] creates a [`Group`]; the
//!   driver owns its `GroupSender`, hands it every `PeerJoined`,
//!   `PeerLeft` and `Closed` of the endpoint's connections (so members
//!   are added as connections join, whichever connection it is), calls
//!   its `poll` on every driver turn and wakes the driver at its
//!   eviction deadline. [`Group::send`] admits a message for every
//!   current member; it waits while the group queue is full (the slowest
//!   member has not caught up).
//! * **Receiver side**: `Connection::join_group(id)` / `leave_group(id)`
//!   send JOIN / LEAVE on an established connection; the confirmation is
//!   `ConnectionEvent::GroupJoined` / `GroupLeft`, or
//!   `ConnectionEvent::GroupRejected` when the source refuses the JOIN
//!   (an endpoint built with `EndpointBuilder::refuse_unknown_groups`
//!   refuses groups it does not host). Group messages arrive
//!   on the group's stream ([`DEFAULT_GROUP_STREAM`] unless the source
//!   chose another with [`crate::Endpoint::group_with`]; the receiver
//!   then joins with `join_group_on`), are checked and ordered by the
//!   core's `GroupReceiver` (12-byte header: GROUP_ID, GROUP_SEQ) and
//!   delivered **without the header** through the ordinary interfaces:
//!   `recv` / `recv_on(stream)` / `on_message(stream, …)`.
//! * **Delivery is fan-out** over each member's own connection (unicast
//!   UDP): every member gets its own reliability, flow and congestion
//!   control; `docs/protocol.md` §6.10.2 says what IP multicast would add
//!   and why it is not used.
//!
//! What a member receives: every message admitted from the moment the
//! source applied its JOIN until the moment it applied its LEAVE (a
//! leaving member drains what was admitted before), each once, in
//! order — [`GroupEvent::MemberJoined`]'s `first_seq` and
//! [`GroupEvent::MemberLeft`]'s `end_seq` name the range.

use crate::driver::{Shared, State};
use crate::Error;
use peregrine_proto::multicast::{
    GroupConfig, GroupSendError, GroupSender, GroupSenderStats, JoinPolicy,
};
use peregrine_proto::ConnectionHandle;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::Notify;

pub use peregrine_proto::connection::GroupRequestError;
pub use peregrine_proto::multicast::{EvictReason, GroupEvent};

/// The stream group messages use when neither side says otherwise: high
/// in the stream space so it does not collide with an application's own
/// streams (which count up from 0 or 1).
pub const DEFAULT_GROUP_STREAM: u16 = 0xFFF0;

/// Group events a [`Group`] keeps for the application before the oldest
/// is dropped (and counted in [`Group::events_dropped`]).
pub const GROUP_EVENT_QUEUE_CAPACITY: usize = 1024;

/// Messages a joined group holds ahead of a gap at the receiver. One
/// connection delivers its group stream in order, so a gap only appears
/// with several paths; the bound keeps a misbehaving source from growing
/// memory without limit.
pub(crate) const RECEIVER_MAX_PENDING: usize = 1024;

/// The driver's state of one group this endpoint is the source of.
#[derive(Debug)]
pub(crate) struct GroupEntry {
    /// The core's group source.
    pub(crate) sender: GroupSender,
    /// Membership events for [`Group::next_event`] (bounded).
    pub(crate) events: VecDeque<GroupEvent>,
    /// Events dropped because the queue was full.
    pub(crate) events_dropped: u64,
    /// Wakes `send` (queue room) and `next_event` waiters.
    pub(crate) changed: Arc<Notify>,
}

impl GroupEntry {
    pub(crate) fn new(config: GroupConfig) -> GroupEntry {
        GroupEntry {
            sender: GroupSender::new(config),
            events: VecDeque::new(),
            events_dropped: 0,
            changed: Arc::new(Notify::new()),
        }
    }

    /// Move the sender's events to the bounded queue; whether any came.
    /// O(events).
    pub(crate) fn collect_events(&mut self) -> bool {
        let mut any = false;
        while let Some(ev) = self.sender.poll_event() {
            if self.events.len() >= GROUP_EVENT_QUEUE_CAPACITY {
                self.events.pop_front();
                self.events_dropped += 1;
            }
            self.events.push_back(ev);
            any = true;
        }
        any
    }
}

/// Why a group operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// This endpoint already has a group with this id.
    #[error("group {group} already exists on this endpoint")]
    Exists {
        /// The id.
        group: u32,
    },
    /// The group's source refused a message.
    #[error(transparent)]
    Send(#[from] GroupSendError),
    /// A JOIN or LEAVE could not be queued on the connection.
    #[error("group {group}: {source}")]
    Request {
        /// The group.
        group: u32,
        /// Why.
        source: GroupRequestError,
    },
}

/// The source of one multicast group, from [`crate::Endpoint::group`].
/// Dropping it removes the group: members are no longer fed (messages
/// already handed to their connections still arrive).
pub struct Group {
    shared: Arc<Shared>,
    id: u32,
    changed: Arc<Notify>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("id", &self.id).finish()
    }
}

impl Group {
    pub(crate) fn new(shared: Arc<Shared>, id: u32, changed: Arc<Notify>) -> Group {
        Group {
            shared,
            id,
            changed,
        }
    }

    /// The group id (GROUP_ID on the wire).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Run `f` on the group's driver state (`None` if the endpoint lost
    /// it, which only a dropped group does).
    fn with<T>(&self, f: impl FnOnce(&mut GroupEntry) -> T) -> Option<T> {
        let mut st = self.shared.lock();
        st.groups.get_mut(&self.id).map(f)
    }

    /// Admit `bytes` for every current member without waiting; its group
    /// sequence number. [`GroupSendError::WouldBlock`] while the group
    /// queue is full. O(1) plus the copy of `bytes`; the fan-out (O(members))
    /// happens on the driver's next turn.
    pub fn try_send(&self, bytes: &[u8]) -> Result<u64, GroupError> {
        let r = self
            .with(|g| g.sender.send(bytes))
            .ok_or(GroupError::Send(GroupSendError::WouldBlock))?;
        let seq = r?;
        self.shared.wake();
        Ok(seq)
    }

    /// Admit `bytes` for every current member, waiting while the group
    /// queue is full; its group sequence number. A group with no member
    /// keeps nothing (the message is numbered and dropped).
    pub async fn send(&self, bytes: &[u8]) -> Result<u64, Error> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.try_send(bytes) {
                Ok(seq) => return Ok(seq),
                Err(GroupError::Send(GroupSendError::WouldBlock)) => {}
                Err(e) => return Err(Error::Group(e)),
            }
            if let Some(why) = self.shared.lock().stopped.clone() {
                return Err(Error::EndpointStopped(why));
            }
            notified.await;
        }
    }

    /// The current members' connections (leaving ones until they
    /// drained). O(members).
    pub fn members(&self) -> Vec<ConnectionHandle> {
        self.with(|g| g.sender.members()).unwrap_or_default()
    }

    /// The sequence number the next admitted message gets.
    pub fn next_seq(&self) -> u64 {
        self.with(|g| g.sender.next_seq()).unwrap_or(0)
    }

    /// Messages admitted and not yet acknowledged by every member that
    /// must get them.
    pub fn queued(&self) -> usize {
        self.with(|g| g.sender.queued()).unwrap_or(0)
    }

    /// The group's counters.
    pub fn stats(&self) -> GroupSenderStats {
        self.with(|g| g.sender.stats().clone()).unwrap_or_default()
    }

    /// The next membership event, if one is waiting. O(1).
    pub fn try_next_event(&self) -> Option<GroupEvent> {
        self.with(|g| g.events.pop_front()).flatten()
    }

    /// The next membership event (a member joined, left after draining,
    /// or was evicted); waits for one. `None` once the endpoint stopped.
    pub async fn next_event(&self) -> Option<GroupEvent> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(ev) = self.try_next_event() {
                return Some(ev);
            }
            if self.shared.lock().stopped.is_some() {
                return None;
            }
            notified.await;
        }
    }

    /// Events dropped so far because the queue
    /// ([`GROUP_EVENT_QUEUE_CAPACITY`]) was full.
    pub fn events_dropped(&self) -> u64 {
        self.with(|g| g.events_dropped).unwrap_or(0)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.groups.remove(&self.id);
        update_join_policy(&mut st);
    }
}

/// With `refuse_unknown_groups`, make the core accept JOINs for exactly
/// the groups hosted now; otherwise nothing (the core's default accepts
/// every group). O(groups + connections); runs only when a group is
/// created or dropped.
pub(crate) fn update_join_policy(st: &mut State) {
    if st.refuse_unknown_groups {
        let hosted = st.groups.keys().copied().collect();
        st.proto.set_join_policy(JoinPolicy::Only(hosted));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_event_queue_drops_the_oldest_and_counts_it() {
        let mut g = GroupEntry::new(GroupConfig::default());
        for n in 0..GROUP_EVENT_QUEUE_CAPACITY as u64 + 2 {
            g.sender
                .join(peregrine_proto::Time::ZERO, ConnectionHandle(n));
        }
        assert!(g.collect_events());
        assert_eq!(g.events.len(), GROUP_EVENT_QUEUE_CAPACITY);
        assert_eq!(g.events_dropped, 2);
        assert_eq!(
            g.events.front(),
            Some(&GroupEvent::MemberJoined {
                member: ConnectionHandle(2),
                first_seq: 0
            })
        );
        assert!(!g.collect_events(), "nothing new");
    }
}
