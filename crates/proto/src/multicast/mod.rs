//! # Make-before-break multicast (seed 003 §II-A)
//!
//! "An OBU could be connected to more than one RSU at the same time": a
//! vehicle entering a new road-side unit's cell joins the group there
//! before it leaves the old one, and receives every message once.
//!
//! ## Design
//!
//! A group is built on the members' ordinary connections, so each member
//! gets its own reliability, flow control and congestion control for free:
//!
//! * **Membership** is asked for on the connection with JOIN / LEAVE
//!   (packet types 14 / 15, [`crate::connection::group`]): the source sees
//!   [`Event::PeerJoined`](crate::Event::PeerJoined) /
//!   [`Event::PeerLeft`](crate::Event::PeerLeft) and hands them to its
//!   [`GroupSender`].
//! * **Fan-out**: a message admitted by [`GroupSender::send`] gets the
//!   next **group sequence number** and is sent as an ordinary message on
//!   the group's stream of every current member's connection, framed as
//!   GROUP_ID (32) | GROUP_SEQ (64) | body (docs/protocol.md §6.10.1).
//! * **Per-member ACK state and repair**: each member's connection
//!   acknowledges, NACKs and retransmits as usual; the sender keeps, per
//!   member, the sequence numbers handed to its connection and how far
//!   they are acknowledged (`Endpoint::message_settled`).
//! * **Pace of the slowest member**: admitted messages stay in a bounded
//!   group queue until every member that must get them has acknowledged
//!   them; when it is full, `send` fails with
//!   [`GroupSendError::WouldBlock`]. Each member also has at most
//!   `member_window` messages in its connection at once.
//! * **Leaving without loss**: a member that leaves still gets every
//!   message admitted before its LEAVE arrived (it drains), then is
//!   removed ([`GroupEvent::MemberLeft`] names the range it got).
//! * **Eviction**: a member with messages outstanding and no
//!   acknowledgement progress for `evict_after` is removed
//!   ([`GroupEvent::MemberEvicted`]), so one dead receiver cannot stall
//!   the group for ever; so is a member whose connection closed.
//! * **De-duplication** at the receiver ([`GroupReceiver`]): a receiver
//!   attached through two connections at once (old and new road-side
//!   unit) feeds both into one `GroupReceiver`, which delivers each group
//!   sequence number once, in order. Because a member is added to a path
//!   at the sequence number current when its JOIN arrives and keeps
//!   everything admitted before its LEAVE, joining the new path, waiting
//!   for [`Event::GroupJoined`](crate::Event::GroupJoined), then leaving
//!   the old one leaves no gap.

mod receiver;
mod sender;

pub use receiver::{GroupReceiver, GroupReceiverStats};
pub use sender::{
    EvictReason, GroupConfig, GroupEvent, GroupSendError, GroupSender, GroupSenderStats, MemberInfo,
};

pub use crate::connection::JoinPolicy;

use crate::connection::{GroupRequestError, MessageId};
use crate::endpoint::{ConnectionHandle, Endpoint};
use peregrine_cc::Time;

/// Bytes of the group header in front of every group message.
pub const GROUP_HEADER_LEN: usize = 12;

/// A group message as carried on a member's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupMessage<'a> {
    /// The group.
    pub group: u32,
    /// Its sequence number in the group, from 0.
    pub seq: u64,
    /// The application's bytes.
    pub body: &'a [u8],
}

/// A message on a group stream that is not a group message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GroupFrameError {
    /// Shorter than the 12-byte group header.
    #[error("group message of {len} bytes is shorter than its 12-byte header")]
    TooShort {
        /// Its length.
        len: usize,
    },
    /// For another group than the receiver's.
    #[error("group message for group {got}, expected {expected}")]
    WrongGroup {
        /// The group in the header.
        got: u32,
        /// The receiver's group.
        expected: u32,
    },
    /// GROUP_SEQ 2^64 − 1 is reserved (so the next expected number always
    /// exists).
    #[error("group sequence 2^64 - 1 is reserved")]
    ReservedSeq,
    /// Too far ahead of the next expected sequence number: the reorder
    /// buffer is full (dropped).
    #[error("group sequence {seq} does not fit the reorder buffer (next expected {next})")]
    ReorderBufferFull {
        /// The message's sequence number.
        seq: u64,
        /// The next sequence number the receiver delivers.
        next: u64,
    },
}

impl<'a> GroupMessage<'a> {
    /// Parses a message received on a group stream. Never panics.
    pub fn decode(bytes: &'a [u8]) -> Result<GroupMessage<'a>, GroupFrameError> {
        if bytes.len() < GROUP_HEADER_LEN {
            return Err(GroupFrameError::TooShort { len: bytes.len() });
        }
        let (head, body) = bytes.split_at(GROUP_HEADER_LEN);
        let mut group = [0u8; 4];
        group.copy_from_slice(&head[..4]);
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&head[4..]);
        let seq = u64::from_be_bytes(seq);
        if seq == u64::MAX {
            return Err(GroupFrameError::ReservedSeq);
        }
        Ok(GroupMessage {
            group: u32::from_be_bytes(group),
            seq,
            body,
        })
    }

    /// The bytes sent on a member's connection.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(GROUP_HEADER_LEN + self.body.len());
        v.extend_from_slice(&self.group.to_be_bytes());
        v.extend_from_slice(&self.seq.to_be_bytes());
        v.extend_from_slice(self.body);
        v
    }
}

impl Endpoint {
    /// Ask the peer of `handle` (a group's source) to add this side to
    /// `group`; [`Event::GroupJoined`](crate::Event::GroupJoined) follows
    /// when it confirms. The request is repeated until answered.
    ///
    /// Complexity: O(log n).
    pub fn join_group(
        &mut self,
        handle: ConnectionHandle,
        now: Time,
        group: u32,
    ) -> Result<(), GroupRequestError> {
        let now = self.tick(now);
        self.connections
            .get_mut(&handle)
            .ok_or(GroupRequestError::UnknownConnection)?
            .request_group(now, group, true)
    }

    /// Ask the peer of `handle` to remove this side from `group`;
    /// [`Event::GroupLeft`](crate::Event::GroupLeft) follows when it
    /// confirms. Messages the source admitted before still arrive.
    ///
    /// Complexity: O(log n).
    pub fn leave_group(
        &mut self,
        handle: ConnectionHandle,
        now: Time,
        group: u32,
    ) -> Result<(), GroupRequestError> {
        let now = self.tick(now);
        self.connections
            .get_mut(&handle)
            .ok_or(GroupRequestError::UnknownConnection)?
            .request_group(now, group, false)
    }

    /// Which groups this endpoint, as a source, accepts JOINs for, on
    /// every connection it has and makes from now on. The default,
    /// [`JoinPolicy::AcceptAll`], accepts every group; a JOIN for a
    /// group outside [`JoinPolicy::Only`] is answered with a LEAVE reply
    /// (the member reports [`Event::GroupRejected`](crate::Event::GroupRejected))
    /// and raises no `PeerJoined`. Members already applied stay members
    /// until their next JOIN or LEAVE.
    ///
    /// Complexity: O(connections) (each gets the shared policy).
    pub fn set_join_policy(&mut self, policy: JoinPolicy) {
        self.join_policy = std::sync::Arc::new(policy);
        let handles: Vec<ConnectionHandle> = self.connections.keys().copied().collect();
        for h in handles {
            if let Some(c) = self.connections.get_untracked(&h) {
                c.set_join_policy(self.join_policy.clone());
            }
        }
    }

    /// The groups this endpoint accepts JOINs for
    /// ([`set_join_policy`](Self::set_join_policy)). O(1).
    pub fn join_policy(&self) -> &JoinPolicy {
        &self.join_policy
    }

    /// Whether the peer of `handle` is a member of `group` (source side:
    /// its latest JOIN/LEAVE was a JOIN).
    ///
    /// Complexity: O(log n).
    pub fn peer_in_group(&self, handle: ConnectionHandle, group: u32) -> bool {
        self.connections
            .get(&handle)
            .is_some_and(|c| c.peer_in_group(group))
    }

    /// Whether message `id`, sent on `handle`, is settled: acknowledged
    /// completely by the peer (or abandoned). `None` if the connection is
    /// gone.
    ///
    /// Complexity: O(log n).
    pub fn message_settled(&self, handle: ConnectionHandle, id: MessageId) -> Option<bool> {
        self.connections.get(&handle).map(|c| c.message_settled(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_message_round_trips_and_short_input_is_an_error() {
        let m = GroupMessage {
            group: 0xe000_0001,
            seq: 0x0102_0304_0506_0708,
            body: b"hi",
        };
        let bytes = m.encode();
        assert_eq!(
            bytes,
            [0xe0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, b'h', b'i'].to_vec()
        );
        assert_eq!(GroupMessage::decode(&bytes), Ok(m));
        for len in 0..GROUP_HEADER_LEN {
            assert_eq!(
                GroupMessage::decode(&bytes[..len]),
                Err(GroupFrameError::TooShort { len })
            );
        }
        let empty = GroupMessage::decode(&bytes[..GROUP_HEADER_LEN]).unwrap();
        assert!(empty.body.is_empty());
        // Found by the fuzzer: the last sequence number would overflow the
        // receiver's next expected one.
        let last = GroupMessage {
            group: 1,
            seq: u64::MAX,
            body: b"",
        };
        assert_eq!(
            GroupMessage::decode(&last.encode()),
            Err(GroupFrameError::ReservedSeq)
        );
    }
}
