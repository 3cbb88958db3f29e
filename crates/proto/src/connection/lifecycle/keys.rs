//! The connection's side of key update and connection-ID rotation
//! (docs/security.md): sending KEY_UPDATE announcements and the server's
//! NEW_CONNECTION_IDs, reading them (`wire::control`), and what the
//! endpoint asks for (spare IDs to issue, IDs to forget, a switch to a
//! spare). The key material and the header rewriting are the crypto
//! seam's (`crypto::aead`, `crypto::rotation`).

use crate::connection::Connection;
use crate::crypto::rotation::BaseIds;
use crate::send_helpers::{build, TxBuf, Written};
use crate::wire::{expand_packet_number, Control, EchoPayload, Flags, PacketType, Payload};
use peregrine_cc::Time;

impl Connection {
    /// The handshake's IDs and SYNC_NOs (rotation's sequence 0).
    fn base_ids(&self) -> BaseIds {
        BaseIds {
            local_id: self.local_id,
            peer_id: self.peer_id,
            local_sync: self.local_sync,
            peer_sync: self.peer_sync.unwrap_or(0),
        }
    }

    /// A KEY_UPDATE (this side switches its sealing key right after it)
    /// or a server's NEW_CONNECTION_ID, if one is due. O(spares).
    pub(crate) fn poll_key_control(&mut self, now: Time, buf: &mut TxBuf<'_>) -> Option<Written> {
        let sec = self.security.as_ref()?;
        let control = if let Some(generation) = sec.update_due() {
            Control::KeyUpdate { generation }
        } else if !sec.is_client()
            && self.peer_sync.is_some()
            // Nothing due (the case of almost every datagram): no RTO, no
            // IDs computed — what follows would return `None` unchanged.
            && sec.rotation_ref().is_some_and(|r| r.issue_pending(now))
        {
            let retry = self.recovery.rtt().rto();
            let base = self.base_ids();
            let (sequence, id) = self
                .security
                .as_mut()?
                .rotation(base)?
                .poll_issue(now, retry)?;
            Control::NewConnectionId {
                sequence,
                id,
                ack: false,
            }
        } else {
            return None;
        };
        let pn = self.recovery.take_pn();
        let (flags, p) = control.to_echo(pn as u32);
        let h = self.header(PacketType::Echo, flags);
        let w = build(buf, h, Payload::Echo(p), Some(pn))?;
        if let (Control::KeyUpdate { .. }, Some(sec)) = (control, self.security.as_mut()) {
            sec.arm_switch();
        }
        self.sent(now, w)
    }

    /// When a NEW_CONNECTION_ID is due again (server).
    pub(crate) fn key_control_timeout(&self) -> Option<Time> {
        self.security.as_ref()?.rotation_ref()?.issue_timeout()
    }

    /// An ECHO that may carry a control message: `true` if it did and
    /// nothing else is to be done with it (a REPLY_REQ is still answered
    /// by the caller). A malformed one is counted as a protocol error.
    pub(crate) fn on_key_control(
        &mut self,
        pk_type: PacketType,
        flags: Flags,
        e: &EchoPayload,
    ) -> bool {
        let control = match Control::from_echo(pk_type, flags, e) {
            Ok(Some(c)) => c,
            Ok(None) => return false,
            Err(_) => {
                self.counters.protocol_errors += 1;
                return true;
            }
        };
        let pn = expand_packet_number(e.packet_number, self.recv.largest());
        let base = self.base_ids();
        let Some(sec) = self.security.as_mut() else {
            // Unprotected: no keys to update, no encrypted channel for IDs.
            return !flags.contains(Flags::REPLY_REQ);
        };
        match control {
            Control::KeyUpdate { generation } => sec.on_key_update(pn, generation),
            Control::NewConnectionId { sequence, id, ack } => {
                let is_client = sec.is_client();
                if let Some(r) = sec.rotation(base) {
                    match (ack, is_client) {
                        (false, true) => r.on_new_id(sequence, id),
                        (true, false) => r.on_issue_ack(sequence, id),
                        _ => {}
                    }
                }
                // The request's echo (its acknowledgement) is the caller's.
                return ack;
            }
        }
        true
    }

    /// Server: whether another spare ID should be issued (the endpoint
    /// then calls [`add_spare_id`](Self::add_spare_id)). O(spares).
    pub(crate) fn wants_spare_id(&self) -> bool {
        let Some(sec) = self.security.as_ref() else {
            return false;
        };
        let want = usize::from(self.config.spare_connection_ids);
        want > 0
            && !sec.is_client()
            && sec.has_keys()
            && self.peer_sync.is_some()
            && self.state == crate::connection::ConnectionState::Connected
            && sec.rotation_ref().is_some_and(|r| r.unused_spares() < want)
    }

    /// Server: issue `id` (already this connection's at the endpoint).
    pub(crate) fn add_spare_id(&mut self, id: u16) {
        let (base, now) = (self.base_ids(), self.now);
        if let Some(r) = self.security.as_mut().and_then(|s| s.rotation(base)) {
            r.issue(id, now);
        }
    }

    /// Client: whether a spare ID waits for a switch.
    pub(crate) fn has_spare_id(&self) -> bool {
        self.security
            .as_ref()
            .and_then(|s| s.rotation_ref())
            .is_some_and(|r| r.has_spare())
    }

    /// Client: switch to the next spare, `local_id` becoming ours.
    /// Whether it did.
    pub(crate) fn rotate_id(&mut self, local_id: u16) -> bool {
        let base = self.base_ids();
        self.security
            .as_mut()
            .and_then(|s| s.rotation(base))
            .is_some_and(|r| r.rotate(local_id))
    }

    /// A retired local ID the endpoint must forget.
    pub(crate) fn take_released_id(&mut self) -> Option<u16> {
        let base = self.base_ids();
        self.security.as_mut()?.rotation(base)?.take_released()
    }

    /// Every local ID besides `local_id` this connection holds at the
    /// endpoint (spares, rotated IDs), for when it goes.
    pub(crate) fn extra_local_ids(&self) -> Vec<u16> {
        self.security
            .as_ref()
            .and_then(|s| s.rotation_ref())
            .map(|r| r.local_ids().collect())
            .unwrap_or_default()
    }

    /// The application asks for a key update. Whether the keys exist.
    pub(crate) fn request_key_update(&mut self) -> bool {
        self.security.as_mut().is_some_and(|s| s.request_update())
    }

    /// Whether the key log has a generation to take. O(1).
    pub(crate) fn has_keys_to_log(&self) -> bool {
        self.security.as_ref().is_some_and(|s| s.has_keys_to_log())
    }

    /// Whether the endpoint's `after_key_work` has anything to do for
    /// this connection (`key_log`: the endpoint logs keys): an ID released
    /// by a retirement (or the rotation's IDs still to be learnt, which
    /// taking one does), key-log material, or a spare ID wanted. When
    /// `false` that call would change nothing, so the receive path skips
    /// it — and its two connection look-ups — for almost every datagram.
    /// O(spares).
    pub(crate) fn has_key_work(&self, key_log: bool) -> bool {
        let released = self
            .security
            .as_ref()
            .and_then(|s| s.rotation_ref())
            .is_some_and(|r| r.release_pending());
        released || (key_log && self.has_keys_to_log()) || self.wants_spare_id()
    }
}
