//! # The async connection: messages on streams, the up-call, stats
//!
//! A [`Connection`] is a cheap handle (clone it freely) on one connection
//! of an [`Endpoint`](crate::Endpoint). `send` queues a whole message on a
//! stream and waits while that stream's send buffer or the connection's
//! is full (flow control: the peer's acknowledgements free it; each
//! stream has its own limit, `StreamConfig::max_buffered_bytes`, so a busy
//! stream does not hold up the others); `recv` returns the next delivered
//! message of any stream, in order per stream, and `recv_on(stream)` the
//! next of one stream — a message goes to whichever read takes it first.
//! `on_message` instead hands a stream's messages to a callback that the
//! driver runs as they are delivered (seed 003 §III-E's event interface),
//! without a task hop. `next_event` returns everything else the
//! connection has to say ([`ConnectionEvent`]); `send_tracked` returns a
//! [`Delivery`] whose outcome tells whether the message arrived. The last
//! clone dropped closes the connection gracefully.

use crate::driver::Shared;
use crate::events::{ConnectionEvent, MessageOutcome};
use crate::group::GroupError;
use crate::Error;
use bytes::Bytes;
use peregrine_cc::{CcConfig, LinkHint};
use peregrine_proto::crypto::{AeadAlgorithm, NoisePattern, PublicKey};
use peregrine_proto::multicast::GroupReceiver;
use peregrine_proto::{
    CloseReason, ConnectionHandle, ConnectionState, ConnectionStats, MessageData, MessageId,
    SchedulerConfig, SendError, StreamConfig, WindowTarget,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

struct Inner {
    shared: Arc<Shared>,
    handle: ConnectionHandle,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        let now = self.shared.now();
        st.proto.close(self.handle, now);
        // Keep the entry until the core reports `Closed` (so a late
        // `Connected` is not mistaken for a new incoming connection).
        let gone = match st.conns.get_mut(&self.handle) {
            Some(c) => {
                c.released = true;
                c.inbox.clear();
                c.closed.is_some() || st.proto.state(self.handle).is_none()
            }
            None => false,
        };
        if gone {
            st.conns.remove(&self.handle);
        }
        st.users = st.users.saturating_sub(1);
        drop(st);
        let mut cbs = self
            .shared
            .callbacks
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // This connection's callbacks only: a range of the map, not a walk
        // over every connection's (issue 20).
        let mine: Vec<(ConnectionHandle, u16)> = cbs
            .range((self.handle, 0)..=(self.handle, u16::MAX))
            .map(|(k, _)| *k)
            .collect();
        for k in mine {
            cbs.remove(&k);
        }
        drop(cbs);
        self.shared.wake();
    }
}

/// One Peregrine connection.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("handle", &self.inner.handle)
            .finish()
    }
}

/// What a waiter found when it looked at the connection.
enum Look<T> {
    Ready(T),
    Wait,
}

impl Connection {
    /// A handle on a connection whose runtime state was just created (and
    /// counted as a user).
    pub(crate) fn new(shared: Arc<Shared>, handle: ConnectionHandle) -> Connection {
        Connection {
            inner: Arc::new(Inner { shared, handle }),
        }
    }

    /// The same, for an accepted connection.
    pub(crate) fn adopt(shared: Arc<Shared>, handle: ConnectionHandle) -> Connection {
        Connection::new(shared, handle)
    }

    fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// The core's handle of this connection.
    pub fn handle(&self) -> ConnectionHandle {
        self.inner.handle
    }

    /// Wait on the connection's change signal until `f` says ready. The
    /// first look takes the lock once (the common case: ready at once, as
    /// a `send` with room is); only then is a waiter registered, before
    /// the state is looked at again, so no wake-up between the look and
    /// the wait is lost. Fewer lock acquisitions mean less contention
    /// with the driver thread (each contended one is a futex wait and a
    /// futex wake).
    async fn wait_for<T>(
        &self,
        mut f: impl FnMut(&mut crate::driver::State, &Shared) -> Look<T>,
    ) -> Result<T, Error> {
        let signal = {
            let mut st = self.shared().lock();
            if let Look::Ready(v) = f(&mut st, self.shared()) {
                return Ok(v);
            }
            if let Some(why) = &st.stopped {
                return Err(Error::EndpointStopped(why.clone()));
            }
            match st.conns.get(&self.inner.handle) {
                Some(c) => c.changed.clone(),
                None => return Err(Error::Closed(CloseReason::Local)),
            }
        };
        loop {
            let notified = signal.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.shared().lock();
                if let Look::Ready(v) = f(&mut st, self.shared()) {
                    return Ok(v);
                }
                if let Some(why) = &st.stopped {
                    return Err(Error::EndpointStopped(why.clone()));
                }
                if !st.conns.contains_key(&self.inner.handle) {
                    return Err(Error::Closed(CloseReason::Local));
                }
            }
            notified.await;
        }
    }

    /// Wait for the handshake.
    pub(crate) async fn established(&self) -> Result<(), Error> {
        let h = self.inner.handle;
        self.wait_for(|st, _| match st.conns.get(&h) {
            Some(c) if c.connected => Look::Ready(Ok(())),
            Some(c) => match c.closed {
                Some(r) => Look::Ready(Err(Error::Closed(r))),
                None => Look::Wait,
            },
            None => Look::Ready(Err(Error::Closed(CloseReason::Local))),
        })
        .await?
    }

    /// The peer's address.
    pub fn remote_address(&self) -> Option<SocketAddr> {
        self.shared().lock().proto.remote(self.inner.handle)
    }

    /// The peer's static public key, once the handshake revealed it
    /// (`Noise_IK`, `Noise_XX`, `Noise_IKpsk2`; `None` for `Noise_NNpsk0`
    /// and unencrypted connections). With `Noise_XX` and no pinned key it
    /// is *a* key, not an authenticated identity: compare it with what you
    /// expect.
    pub fn peer_static_key(&self) -> Option<PublicKey> {
        self.shared()
            .lock()
            .proto
            .peer_static_key(self.inner.handle)
    }

    /// The Noise pattern protecting this connection (`None`: unencrypted).
    pub fn security_pattern(&self) -> Option<NoisePattern> {
        self.shared()
            .lock()
            .proto
            .security_pattern(self.inner.handle)
    }

    /// The packet AEAD the handshake agreed on (`None`: unencrypted, or
    /// the handshake has not finished).
    pub fn security_aead(&self) -> Option<AeadAlgorithm> {
        self.shared().lock().proto.security_aead(self.inner.handle)
    }

    /// The life-cycle state (`None` once the core released the connection).
    pub fn state(&self) -> Option<ConnectionState> {
        self.shared().lock().proto.state(self.inner.handle)
    }

    /// Configure (or reconfigure) a stream: priority class 0–3, WFQ
    /// weight, reliability, send-buffer limit.
    pub fn open_stream(&self, stream: u16, config: StreamConfig) -> Result<(), Error> {
        let mut st = self.shared().lock();
        let now = self.shared().now();
        st.proto
            .open_stream(self.inner.handle, now, stream, config)
            .map_err(Error::Send)
    }

    /// Switch the stream scheduler.
    pub fn set_scheduler(&self, config: SchedulerConfig) {
        let mut st = self.shared().lock();
        let now = self.shared().now();
        st.proto.set_scheduler(self.inner.handle, now, config);
    }

    /// Replace the congestion controller (it restarts from its initial window).
    pub fn set_controller(&self, cc: CcConfig) {
        let mut st = self.shared().lock();
        let now = self.shared().now();
        st.proto.set_controller(self.inner.handle, now, cc);
        drop(st);
        self.shared().wake();
    }

    /// Hand a link-layer hint (blockage, handover, …) to the controller.
    /// Its `issued_at` is set to now: the runtime's clock is its own (the
    /// time since the endpoint was bound), so a hint is taken as issued
    /// when the application hands it over. What it did comes back as
    /// [`ConnectionEvent::LinkHintApplied`] (and `SendWindowHeld` /
    /// `SendWindowReleased` when the controller holds its window through
    /// the outage, as RTW-TCP does). O(log connections).
    pub fn link_hint(&self, hint: &LinkHint) {
        let mut st = self.shared().lock();
        let now = self.shared().now();
        let hint = LinkHint {
            issued_at: now,
            ..hint.clone()
        };
        st.proto.link_hint(self.inner.handle, now, &hint);
        drop(st);
        self.shared().wake();
    }

    /// Feed this connection alone with the hints of `source` (see
    /// [`crate::hints`]): a pump thread hands each hint to the controller
    /// when the event it announces begins, until the connection closes,
    /// the source ends or [`HintFeed::stop`](crate::hints::HintFeed::stop).
    /// The feed's `stats()` count what it did.
    pub fn hints(
        &self,
        source: Box<dyn crate::hints::HintSource>,
    ) -> Result<crate::hints::HintFeed, Error> {
        let target = crate::hints::Target::Connection(
            std::sync::Arc::downgrade(&self.inner.shared),
            self.inner.handle,
        );
        Ok(crate::hints::start(source, target)?)
    }

    /// Stop (`held = true`) or resume delivery of `stream`: held messages
    /// stay in the core and count against the receive window.
    pub fn hold_stream(&self, stream: u16, held: bool) {
        let mut st = self.shared().lock();
        st.proto.hold_stream(self.inner.handle, stream, held);
        drop(st);
        self.shared().wake();
    }

    /// The handover window (seed 003 §III-E): cap the receive window this
    /// side advertises for the whole connection (`WindowTarget::Connection`;
    /// 0 closes it before a handover and a CWIN tells the sender at once,
    /// `u64::MAX` removes the cap and reopens) or close (0) / reopen (any
    /// other value) one stream (`WindowTarget::Stream`). Data already in
    /// flight is still accepted. Whether the connection still exists.
    pub fn set_receive_window(&self, target: WindowTarget, bytes: u64) -> bool {
        let mut st = self.shared().lock();
        let now = self.shared().now();
        let known = st
            .proto
            .set_receive_window(self.inner.handle, now, target, bytes);
        drop(st);
        // The CWIN leaves with the driver's next turn.
        self.shared().wake();
        known
    }

    /// Update this connection's packet keys now: its next packet
    /// announces a new key generation and the peer follows
    /// (docs/security.md, "Key update"; automatic updates need nothing:
    /// `ConnectionConfig::key_update`). `false`: unprotected, closed, or
    /// before the handshake.
    pub fn update_keys(&self) -> bool {
        let mut st = self.shared().lock();
        let known = st.proto.update_keys(self.inner.handle);
        drop(st);
        self.shared().wake();
        known
    }

    /// Queue a message without waiting; `SendError::BufferFull` when the
    /// send buffer has no room. `bytes` is any [`MessageData`]: a
    /// [`Bytes`] (or `Vec<u8>`) reaches the core without a copy, its blocks
    /// sent as slices of it; a borrowed slice is copied once.
    pub fn try_send(&self, stream: u16, bytes: impl MessageData) -> Result<MessageId, Error> {
        self.try_send_inner(stream, bytes, None)
    }

    /// [`try_send`](Self::try_send) with a deadline, as
    /// [`send_with_deadline`](Self::send_with_deadline): for datagram-like
    /// traffic (the tunnel's UDP flows) that is dropped, not waited for,
    /// when the buffer is full.
    pub fn try_send_with_deadline(
        &self,
        stream: u16,
        bytes: impl MessageData,
        lifetime: Duration,
    ) -> Result<MessageId, Error> {
        self.try_send_inner(stream, bytes, Some(lifetime))
    }

    fn try_send_inner(
        &self,
        stream: u16,
        bytes: impl MessageData,
        deadline: Option<Duration>,
    ) -> Result<MessageId, Error> {
        let mut st = self.shared().lock();
        let now = self.shared().now();
        let deadline = deadline.map(|d| now + d);
        let r =
            st.proto
                .send_message_with_deadline(self.inner.handle, now, stream, bytes, deadline);
        drop(st);
        if r.is_ok() {
            self.shared().wake();
        }
        r.map_err(Error::Send)
    }

    /// Queue a message on `stream`, waiting while the stream's send buffer
    /// (`StreamConfig::max_buffered_bytes`) or the connection's is full.
    /// `bytes` as for [`try_send`](Self::try_send): pass [`Bytes`] to avoid
    /// the copy.
    pub async fn send(&self, stream: u16, bytes: impl MessageData) -> Result<MessageId, Error> {
        self.send_inner(stream, bytes.into_message_bytes(), None, false)
            .await
    }

    /// Queue a message that is dropped (and skipped by the receiver) if
    /// the peer has not acknowledged it within `lifetime`. Its id comes
    /// back; if it is abandoned, [`next_event`](Self::next_event) reports
    /// [`ConnectionEvent::MessageAbandoned`] with that id. To await the
    /// fate of this one message, use [`send_tracked`](Self::send_tracked).
    pub async fn send_with_deadline(
        &self,
        stream: u16,
        bytes: impl MessageData,
        lifetime: Duration,
    ) -> Result<MessageId, Error> {
        self.send_inner(stream, bytes.into_message_bytes(), Some(lifetime), false)
            .await
    }

    /// Queue a message as [`send`](Self::send) does (with a deadline when
    /// `lifetime` is given, as [`send_with_deadline`](Self::send_with_deadline)),
    /// and follow it: the [`Delivery`] returned says, when awaited, whether
    /// the peer acknowledged it, this side abandoned it, or the connection
    /// ended first. Tracking costs a map entry while the `Delivery` lives
    /// and an O(log) check per driver turn that read datagrams while its
    /// outcome is pending: meant for messages whose fate matters, not for
    /// every block of a bulk transfer.
    pub async fn send_tracked(
        &self,
        stream: u16,
        bytes: impl MessageData,
        lifetime: Option<Duration>,
    ) -> Result<Delivery, Error> {
        let id = self
            .send_inner(stream, bytes.into_message_bytes(), lifetime, true)
            .await?;
        Ok(Delivery {
            conn: self.clone(),
            id,
        })
    }

    /// Offer `bytes` until the core takes it: every attempt hands over a
    /// clone of the same [`Bytes`] (a reference count, not a copy). With
    /// `track`, the message is registered for a [`Delivery`] under the
    /// same lock that queued it, so no outcome can be missed.
    async fn send_inner(
        &self,
        stream: u16,
        bytes: Bytes,
        lifetime: Option<Duration>,
        track: bool,
    ) -> Result<MessageId, Error> {
        let h = self.inner.handle;
        // Whether the driver needs no wake-up for this message (below).
        let mut joins_pending = false;
        let r = self
            .wait_for(|st, shared| {
                let now = shared.now();
                let deadline = lifetime.map(|d| now + d);
                // A bulk message that joins data already waiting to be
                // sent changes nothing the driver waits for (an
                // acknowledgement or its timer), so it is not woken for
                // it: a writer queueing a batch at the low-water mark
                // would otherwise wake a sleeping driver once per message.
                // A class-0 message, one with a deadline (a new timer) or
                // a tracked one always wakes it.
                joins_pending =
                    lifetime.is_none() && !track && st.proto.send_joins_pending(h, stream);
                match st
                    .proto
                    .send_message_with_deadline(h, now, stream, bytes.clone(), deadline)
                {
                    // The connection's buffer is full, or the endpoint's
                    // pool is at its ceiling: wait (the driver wakes us
                    // when acknowledgements brought the buffers to their
                    // low-water mark for this message, and on
                    // `Event::Writable`).
                    Err(SendError::BufferFull) | Err(SendError::WouldBlock { .. }) => {
                        if let Some(c) = st.conns.get_mut(&h) {
                            c.send_waiting = true;
                            let want = c.send_wants.entry(stream).or_insert(0);
                            *want = (*want).max(bytes.len());
                            st.send_waiters.insert(h);
                        }
                        Look::Wait
                    }
                    Err(SendError::UnknownConnection) => {
                        let reason = st
                            .conns
                            .get(&h)
                            .and_then(|c| c.closed)
                            .unwrap_or(CloseReason::Local);
                        Look::Ready(Err(Error::Closed(reason)))
                    }
                    Ok(id) if track => {
                        if let Some(c) = st.conns.get_mut(&h) {
                            c.tracked.insert(id, None);
                            c.tracked_pending += 1;
                            st.tracking.insert(h);
                        }
                        Look::Ready(Ok(id))
                    }
                    other => Look::Ready(other.map_err(Error::Send)),
                }
            })
            .await?;
        if !joins_pending {
            self.shared().wake();
        }
        r
    }

    /// The next delivered message `(stream, bytes)` of any stream not
    /// handed to a callback; `None` once the connection is closed (or the
    /// peer closed) and every message was read.
    pub async fn recv(&self) -> Option<(u16, Bytes)> {
        let h = self.inner.handle;
        self.wait_for(|st, shared| {
            if !st.conns.contains_key(&h) {
                return Look::Ready(None);
            }
            if let Some(m) = pop(st, shared, h) {
                return Look::Ready(Some(m));
            }
            match st.conns.get(&h) {
                Some(c) if c.closed.is_some() || c.peer_closed => Look::Ready(None),
                _ => Look::Wait,
            }
        })
        .await
        .ok()
        .flatten()
    }

    /// The next delivered message, if one is waiting.
    pub fn try_recv(&self) -> Option<(u16, Bytes)> {
        let mut st = self.shared().lock();
        pop(&mut st, self.shared(), self.inner.handle)
    }

    /// The next delivered message of `stream`, in order; `None` once the
    /// connection is closed (or the peer closed) and no message of
    /// `stream` is left.
    ///
    /// `recv` and `recv_on` read the same inbox: each message is handed
    /// out once, to whichever read takes it first — a `recv_on(s)` takes
    /// the oldest message of `s`, a `recv` the oldest of any stream. An
    /// application that reads some streams with `recv_on` and the rest
    /// with `recv` should therefore not also leave a `recv` waiting while
    /// it expects a `recv_on` to get a message (either may win). A stream
    /// handed to [`on_message`](Self::on_message) never reaches the inbox.
    /// Messages the application leaves unread count against the receive
    /// buffer: when the inbox holds more than that, the stream that
    /// overflowed it is held (the peer's window shrinks) until the inbox
    /// drains to half, or until that stream's own messages are all read.
    /// Amortized O(log streams).
    pub async fn recv_on(&self, stream: u16) -> Option<Bytes> {
        let h = self.inner.handle;
        self.wait_for(|st, shared| {
            if !st.conns.contains_key(&h) {
                return Look::Ready(None);
            }
            if let Some(m) = pop_stream(st, shared, h, stream) {
                return Look::Ready(Some(m));
            }
            match st.conns.get(&h) {
                Some(c) if c.closed.is_some() || c.peer_closed => Look::Ready(None),
                _ => Look::Wait,
            }
        })
        .await
        .ok()
        .flatten()
    }

    /// The next delivered message of `stream`, if one is waiting.
    pub fn try_recv_on(&self, stream: u16) -> Option<Bytes> {
        let mut st = self.shared().lock();
        pop_stream(&mut st, self.shared(), self.inner.handle, stream)
    }

    /// The next event of this connection (everything but messages:
    /// abandoned messages, security violations, network reset, path
    /// migration, group membership, link-hint effects, the peer's close,
    /// the final `Closed`); waits for one. `None` after `Closed` was
    /// returned (or the endpoint stopped). The queue keeps at most
    /// [`EVENT_QUEUE_CAPACITY`](crate::EVENT_QUEUE_CAPACITY) events; when
    /// the application falls behind, the oldest are dropped and a
    /// [`ConnectionEvent::Lagged`] says how many. O(1).
    pub async fn next_event(&self) -> Option<ConnectionEvent> {
        let h = self.inner.handle;
        self.wait_for(|st, _| match st.conns.get_mut(&h) {
            None => Look::Ready(None),
            Some(c) => match c.events.pop() {
                Some(ev) => Look::Ready(Some(ev)),
                None if c.closed.is_some() => Look::Ready(None),
                None => Look::Wait,
            },
        })
        .await
        .ok()
        .flatten()
    }

    /// The next event, if one is waiting.
    pub fn try_next_event(&self) -> Option<ConnectionEvent> {
        let mut st = self.shared().lock();
        st.conns.get_mut(&self.inner.handle)?.events.pop()
    }

    /// Events dropped so far because the queue was full (the application
    /// did not read them in time).
    pub fn events_dropped(&self) -> u64 {
        let st = self.shared().lock();
        st.conns
            .get(&self.inner.handle)
            .map_or(0, |c| c.events.dropped)
    }

    /// From now on, hand every message delivered on `stream` to `f`
    /// (called on the driver's thread as each arrives, in order; messages
    /// already in the inbox stay there). `f` must not block; it may call
    /// `try_send` and the other non-async methods of the connection, but
    /// not `on_message`.
    pub fn on_message<F>(&self, stream: u16, f: F)
    where
        F: FnMut(u16, Bytes) + Send + 'static,
    {
        let h = self.inner.handle;
        // Callback first, then the flag the driver reads under the state
        // lock: a message is never routed to a callback not yet stored.
        self.shared()
            .callbacks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((h, stream), Box::new(f));
        if let Some(c) = self.shared().lock().conns.get_mut(&h) {
            c.callbacks.insert(stream);
        }
    }

    /// Join multicast group `group` of the peer (the group's source):
    /// JOIN is sent (and repeated until answered); the peer's
    /// confirmation is [`ConnectionEvent::GroupJoined`]; a source that
    /// refuses the group (one built with
    /// `EndpointBuilder::refuse_unknown_groups` that does not host it)
    /// answers with [`ConnectionEvent::GroupRejected`] instead, and this
    /// side stops asking. `join_group` does not wait for either answer:
    /// both come through [`next_event`](Self::next_event). From the moment
    /// the source applies the JOIN, each group message arrives once and
    /// in order, without its 12-byte group header, on
    /// [`DEFAULT_GROUP_STREAM`](crate::DEFAULT_GROUP_STREAM): read it
    /// with `recv`, `recv_on` or an `on_message` callback like any other
    /// message. The request is refused locally — an
    /// [`Error::Group`] naming the group and why — when the connection is
    /// not established or 64 requests already wait for their answer.
    /// O(log groups).
    pub fn join_group(&self, group: u32) -> Result<(), Error> {
        self.join_group_on(group, crate::DEFAULT_GROUP_STREAM)
    }

    /// [`join_group`](Self::join_group) for a group whose source sends on
    /// `stream` (`Endpoint::group_with`).
    pub fn join_group_on(&self, group: u32, stream: u16) -> Result<(), Error> {
        let h = self.inner.handle;
        {
            let mut st = self.shared().lock();
            let now = self.shared().now();
            st.proto
                .join_group(h, now, group)
                .map_err(|source| Error::Group(GroupError::Request { group, source }))?;
            if let Some(c) = st.conns.get_mut(&h) {
                c.group_streams.insert(stream);
                c.group_rx.entry(group).or_insert_with(|| {
                    GroupReceiver::new(group, crate::group::RECEIVER_MAX_PENDING)
                });
            }
        }
        self.shared().wake();
        Ok(())
    }

    /// Leave multicast group `group`: LEAVE is sent (and repeated until
    /// answered); the confirmation is [`ConnectionEvent::GroupLeft`].
    /// Messages the source admitted before it applied the LEAVE still
    /// arrive (it drains them); nothing after. Refused locally like
    /// [`join_group`](Self::join_group). O(log groups).
    pub fn leave_group(&self, group: u32) -> Result<(), Error> {
        let h = self.inner.handle;
        {
            let mut st = self.shared().lock();
            let now = self.shared().now();
            st.proto
                .leave_group(h, now, group)
                .map_err(|source| Error::Group(GroupError::Request { group, source }))?;
        }
        self.shared().wake();
        Ok(())
    }

    /// Messages on this connection's group streams that were not valid
    /// messages of a group it joined (dropped).
    pub fn group_messages_rejected(&self) -> u64 {
        let st = self.shared().lock();
        st.conns
            .get(&self.inner.handle)
            .map_or(0, |c| c.group_rejected)
    }

    /// A snapshot of the connection's counters (also after it closed, for
    /// a while).
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.shared().lock().proto.stats(self.inner.handle)
    }

    /// Why the connection closed, if it did.
    pub fn close_reason(&self) -> Option<CloseReason> {
        let st = self.shared().lock();
        st.conns.get(&self.inner.handle).and_then(|c| c.closed)
    }

    /// Wait until the connection is closed at both ends; why.
    pub async fn closed(&self) -> CloseReason {
        let h = self.inner.handle;
        self.wait_for(|st, _| match st.conns.get(&h).and_then(|c| c.closed) {
            Some(r) => Look::Ready(r),
            None => Look::Wait,
        })
        .await
        .unwrap_or(CloseReason::Local)
    }

    /// Close gracefully (everything queued is sent and acknowledged, then
    /// END / END + FIN) and wait until it is done.
    pub async fn close(&self) -> CloseReason {
        {
            let mut st = self.shared().lock();
            let now = self.shared().now();
            st.proto.close(self.inner.handle, now);
        }
        self.shared().wake();
        self.closed().await
    }

    /// Abort: REMOTE_RESET to the peer, closed at once.
    pub fn abort(&self) {
        {
            let mut st = self.shared().lock();
            let now = self.shared().now();
            st.proto.abort(self.inner.handle, now);
        }
        self.shared().wake();
    }
}

/// Take the next inbox message of any stream.
fn pop(
    st: &mut crate::driver::State,
    shared: &Shared,
    h: ConnectionHandle,
) -> Option<(u16, Bytes)> {
    let m = st.conns.get_mut(&h)?.inbox.pop_any()?;
    release_held(st, shared, h, m.0);
    Some(m)
}

/// Take the next inbox message of `stream`.
fn pop_stream(
    st: &mut crate::driver::State,
    shared: &Shared,
    h: ConnectionHandle,
    stream: u16,
) -> Option<Bytes> {
    let m = st.conns.get_mut(&h)?.inbox.pop_stream(stream)?;
    release_held(st, shared, h, stream);
    Some(m)
}

/// After a read of `stream`: release every held stream once the inbox
/// has drained to half its limit, and `stream` itself once none of its
/// messages is left — so a reader of one stream (`recv_on`) is never
/// stuck behind another stream's unread messages filling the inbox.
fn release_held(st: &mut crate::driver::State, shared: &Shared, h: ConnectionHandle, stream: u16) {
    let Some(c) = st.conns.get_mut(&h) else {
        return;
    };
    if c.held.is_empty() {
        return;
    }
    let release: Vec<u16> = if c.inbox.bytes() <= c.inbox_limit / 2 {
        std::mem::take(&mut c.held).into_iter().collect()
    } else if c.inbox.stream_bytes(stream) == 0 && c.held.remove(&stream) {
        vec![stream]
    } else {
        return;
    };
    for s in release {
        st.proto.hold_stream(h, s, false);
    }
    // The core has messages to hand out again.
    shared.wake();
}

/// The fate of one message sent with [`Connection::send_tracked`]. Await
/// [`outcome`](Self::outcome); dropping it stops the tracking (the
/// message itself is unaffected).
pub struct Delivery {
    conn: Connection,
    id: MessageId,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery").field("id", &self.id).finish()
    }
}

impl Delivery {
    /// The message's id (its stream and number).
    pub fn id(&self) -> MessageId {
        self.id
    }

    /// The outcome, if it is known already. O(log).
    pub fn try_outcome(&self) -> Option<MessageOutcome> {
        let st = self.conn.shared().lock();
        let c = st.conns.get(&self.conn.inner.handle)?;
        c.tracked.get(&self.id).copied().flatten()
    }

    /// Wait until the peer acknowledged the message, this side abandoned
    /// it (deadline, or loss on an unreliable stream) or the connection
    /// ended without it. If the endpoint's driver stopped first, the
    /// message counts as undelivered (`CloseReason::Aborted`).
    pub async fn outcome(self) -> MessageOutcome {
        let h = self.conn.inner.handle;
        let id = self.id;
        self.conn
            .wait_for(|st, _| match st.conns.get(&h) {
                None => Look::Ready(MessageOutcome::Undelivered(CloseReason::Local)),
                Some(c) => match c.tracked.get(&id).copied().flatten() {
                    Some(o) => Look::Ready(o),
                    None => Look::Wait,
                },
            })
            .await
            .unwrap_or(MessageOutcome::Undelivered(CloseReason::Aborted))
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        let mut st = self.conn.shared().lock();
        if let Some(c) = st.conns.get_mut(&self.conn.inner.handle) {
            if let Some(None) = c.tracked.remove(&self.id) {
                c.tracked_pending -= 1;
            }
        }
    }
}
