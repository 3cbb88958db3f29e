//! # JOIN and LEAVE on one connection (seed 003 §II-A)
//!
//! The per-connection half of multicast: a member asks the group's source
//! to add it to (JOIN) or remove it from (LEAVE) a group, over an
//! established connection; the group itself lives at the source, in
//! [`crate::multicast`].
//!
//! ## Exchange
//!
//! The member sends JOIN (or LEAVE) with REPLY_REQ carrying the GROUP_ID;
//! the source answers with the same type, REPLY and the same GROUP_ID, and
//! reports the change once ([`Event::PeerJoined`] / [`Event::PeerLeft`]).
//! The member repeats its request every RTO (doubling, capped at 64×)
//! until the answer arrives, then reports [`Event::GroupJoined`] /
//! [`Event::GroupLeft`]. A newer request for the same group replaces an
//! unanswered older one. The source applies a request only if its packet
//! number is higher than the last one it applied for that group, so a
//! JOIN delayed behind a later LEAVE cannot re-add the member.
//!
//! ## Refusal
//!
//! The source decides which groups it accepts JOINs for
//! ([`JoinPolicy`], set on the endpoint with
//! `Endpoint::set_join_policy`; the default accepts every group). It
//! answers a JOIN it refuses with **LEAVE + REPLY** carrying the same
//! GROUP_ID — "you are not a member" — so no new type or flag is needed.
//! A refused JOIN leaves the peer a non-member (it is applied like a
//! LEAVE: a member whose group stopped being accepted is removed, with
//! [`Event::PeerLeft`]) and never raises [`Event::PeerJoined`]. The member
//! with a JOIN pending for that group drops its request and reports
//! [`Event::GroupRejected`]; with a LEAVE pending it reports
//! [`Event::GroupLeft`] as for any LEAVE answer. An implementation that
//! predates refusals ignores the LEAVE reply to its JOIN and keeps
//! repeating the JOIN, each answered the same way: the exchange stays
//! wire-compatible, it just never ends. A JOIN that replaced an
//! unanswered LEAVE first ignores as many LEAVE replies as that LEAVE
//! was sent (they may answer it); a refusal then costs one more retry.
//!
//! Bounded: at most [`MAX_GROUP_REQUESTS`] groups with a request pending,
//! [`MAX_GROUP_REPLIES`] answers queued, [`MAX_PEER_GROUPS`] groups
//! tracked per peer.

use crate::connection::{Connection, ConnectionState, Event};
use crate::send_helpers::{build, TxBuf, Written};
use crate::wire::{Flags, GroupPayload, PacketType, Payload};
use peregrine_cc::Time;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// Groups with an unanswered JOIN/LEAVE of this side at one time.
pub const MAX_GROUP_REQUESTS: usize = 64;
/// Answers to the peer's JOIN/LEAVE queued at one time.
pub const MAX_GROUP_REPLIES: usize = 16;
/// Groups whose membership of the peer this side remembers.
pub const MAX_PEER_GROUPS: usize = 1024;

/// Why a JOIN/LEAVE request was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GroupRequestError {
    /// The connection is not established.
    #[error("the connection is not established")]
    NotConnected,
    /// Too many requests are waiting for their answer.
    #[error("too many JOIN/LEAVE requests pending")]
    TooManyPending,
    /// No such connection.
    #[error("unknown connection")]
    UnknownConnection,
}

/// Which groups a source accepts JOINs for (source side; see the module
/// doc, "Refusal").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum JoinPolicy {
    /// Accept a JOIN for every group (the default, and the behaviour of
    /// an endpoint that never sets a policy).
    #[default]
    AcceptAll,
    /// Accept JOINs only for these groups; refuse the others with a LEAVE
    /// reply.
    Only(BTreeSet<u32>),
}

impl JoinPolicy {
    /// Whether a JOIN for `group` is accepted. O(log groups).
    pub fn accepts(&self, group: u32) -> bool {
        match self {
            JoinPolicy::AcceptAll => true,
            JoinPolicy::Only(groups) => groups.contains(&group),
        }
    }
}

#[derive(Clone, Debug)]
struct Request {
    join: bool,
    due: bool,
    tries: u32,
    retry_at: Option<Time>,
    /// LEAVE replies a JOIN ignores before it takes one for a refusal:
    /// the LEAVEs sent by the LEAVE request it replaced, whose answers
    /// may arrive after it was sent.
    stale_leave_replies: u32,
}

/// JOIN/LEAVE state of one connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct GroupState {
    /// This side's requests waiting for an answer, by group.
    requests: BTreeMap<u32, Request>,
    /// Answers to send: (JOIN or LEAVE, group).
    replies: VecDeque<(PacketType, u32)>,
    /// Per group the peer asked about: packet number of the request last
    /// applied and whether the peer is now a member.
    peer: BTreeMap<u32, (u64, bool)>,
    /// The groups this side accepts JOINs for; shared with the endpoint
    /// and its other connections (one copy per endpoint, not per
    /// connection).
    policy: Arc<JoinPolicy>,
}

impl Connection {
    /// Ask the peer (a group's source) to add this side to `group`
    /// (`join`) or remove it.
    pub(crate) fn request_group(
        &mut self,
        now: Time,
        group: u32,
        join: bool,
    ) -> Result<(), GroupRequestError> {
        self.tick(now);
        if self.state != ConnectionState::Connected {
            return Err(GroupRequestError::NotConnected);
        }
        let g = &mut self.groups;
        if !g.requests.contains_key(&group) && g.requests.len() >= MAX_GROUP_REQUESTS {
            return Err(GroupRequestError::TooManyPending);
        }
        // Answers to the LEAVEs of a request this one replaces may still
        // be on their way; a JOIN must not take them for a refusal.
        let stale_leave_replies = match g.requests.get(&group) {
            Some(r) if !r.join => r.tries,
            Some(r) => r.stale_leave_replies,
            None => 0,
        };
        g.requests.insert(
            group,
            Request {
                join,
                due: true,
                tries: 0,
                retry_at: None,
                stale_leave_replies: if join { stale_leave_replies } else { 0 },
            },
        );
        Ok(())
    }

    /// A JOIN or LEAVE arrived with packet number `pn`.
    pub(crate) fn on_group_packet(
        &mut self,
        pk_type: PacketType,
        flags: Flags,
        pn: u64,
        p: &GroupPayload,
    ) {
        let join = pk_type == PacketType::Join;
        let group = p.group_id;
        if flags.contains(Flags::REPLY) {
            let answered = self
                .groups
                .requests
                .get(&group)
                .is_some_and(|r| r.join == join);
            // A LEAVE answering a pending JOIN is the source's refusal
            // (module doc, "Refusal").
            let mut rejected = false;
            if let Some(r) = self.groups.requests.get_mut(&group) {
                if r.join && !join {
                    if r.stale_leave_replies > 0 {
                        r.stale_leave_replies -= 1;
                    } else {
                        rejected = true;
                    }
                }
            }
            if answered || rejected {
                self.groups.requests.remove(&group);
                self.events.push_back(if rejected {
                    Event::GroupRejected { group }
                } else if join {
                    Event::GroupJoined { group }
                } else {
                    Event::GroupLeft { group }
                });
            }
            return;
        }
        if !flags.contains(Flags::REPLY_REQ) {
            return;
        }
        // A refused JOIN is applied, and answered, as a LEAVE: the peer is
        // not a member afterwards, whatever it was before.
        let refused = join && !self.groups.policy.accepts(group);
        let (pk_type, join) = if refused {
            (PacketType::Leave, false)
        } else {
            (pk_type, join)
        };
        let g = &mut self.groups;
        let known = g.peer.get(&group).copied();
        let newer = known.is_none_or(|(last, _)| pn > last);
        if newer && (known.is_some() || g.peer.len() < MAX_PEER_GROUPS) {
            let was = known.is_some_and(|(_, member)| member);
            g.peer.insert(group, (pn, join));
            if was != join {
                self.events.push_back(if join {
                    Event::PeerJoined { group }
                } else {
                    Event::PeerLeft { group }
                });
            }
        }
        // Answer even a stale or repeated request: the earlier answer may
        // have been lost.
        if self.groups.replies.len() < MAX_GROUP_REPLIES {
            self.groups.replies.push_back((pk_type, group));
        }
    }

    /// A JOIN/LEAVE answer or request due now.
    pub(crate) fn poll_group_packet(&mut self, now: Time, buf: &mut TxBuf<'_>) -> Option<Written> {
        let (t, flags, group) = if let Some((t, group)) = self.groups.replies.pop_front() {
            (t, Flags::REPLY, group)
        } else {
            let (&group, r) = self.groups.requests.iter_mut().find(|(_, r)| r.due)?;
            r.due = false;
            let wait = self
                .recovery
                .rtt()
                .rto()
                .saturating_mul(1 << r.tries.min(6));
            r.tries += 1;
            r.retry_at = Some(now + wait);
            let t = if r.join {
                PacketType::Join
            } else {
                PacketType::Leave
            };
            (t, Flags::REPLY_REQ, group)
        };
        let pn = self.recovery.take_pn();
        let h = self.header(t, flags);
        let w = build(
            buf,
            h,
            Payload::Group(GroupPayload {
                packet_number: pn as u32,
                group_id: group,
            }),
            Some(pn),
        )?;
        self.sent(now, w)
    }

    /// The JOIN/LEAVE retry timer.
    pub(crate) fn group_timeout(&self) -> Option<Time> {
        self.groups
            .requests
            .values()
            .filter_map(|r| r.retry_at)
            .min()
    }

    /// Run the retry timer: unanswered requests go again.
    pub(crate) fn on_group_timer(&mut self, now: Time) {
        for r in self.groups.requests.values_mut() {
            if r.retry_at.is_some_and(|t| t <= now) {
                r.retry_at = None;
                r.due = true;
            }
        }
    }

    /// Which groups this side accepts JOINs for from now on (source
    /// side). Membership already applied stays until the peer's next
    /// JOIN or LEAVE. O(1).
    pub(crate) fn set_join_policy(&mut self, policy: Arc<JoinPolicy>) {
        self.groups.policy = policy;
    }

    /// Whether the peer is a member of `group` (source side).
    pub(crate) fn peer_in_group(&self, group: u32) -> bool {
        self.groups.peer.get(&group).is_some_and(|&(_, m)| m)
    }
}

impl Connection {
    /// Whether message `id` is acknowledged completely (or abandoned);
    /// false once the connection is closed (its state is gone).
    pub(crate) fn message_settled(&self, id: crate::connection::MessageId) -> bool {
        self.state != ConnectionState::Closed && self.send.is_settled(id)
    }
}
