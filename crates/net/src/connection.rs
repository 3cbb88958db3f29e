//! # The async connection: messages on streams, the up-call, stats
//!
//! A [`Connection`] is a cheap handle (clone it freely) on one connection
//! of an [`Endpoint`](crate::Endpoint). `send` queues a whole message on a
//! stream and waits while the connection's send buffer is full (flow
//! control: the peer's acknowledgements free it); `recv` returns the next
//! delivered message of any stream, in order per stream. `on_message`
//! instead hands a stream's messages to a callback that the driver runs
//! as they are delivered (seed 003 §III-E's event interface), without a
//! task hop. The last clone dropped closes the connection gracefully.

use crate::driver::Shared;
use crate::Error;
use bytes::Bytes;
use peregrine_cc::{CcConfig, LinkHint};
use peregrine_proto::crypto::{AeadAlgorithm, NoisePattern, PublicKey};
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
    pub fn link_hint(&self, hint: &LinkHint) {
        let mut st = self.shared().lock();
        let now = self.shared().now();
        st.proto.link_hint(self.inner.handle, now, hint);
        drop(st);
        self.shared().wake();
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

    /// Queue a message without waiting; `SendError::BufferFull` when the
    /// send buffer has no room. `bytes` is any [`MessageData`]: a
    /// [`Bytes`] (or `Vec<u8>`) reaches the core without a copy, its blocks
    /// sent as slices of it; a borrowed slice is copied once.
    pub fn try_send(&self, stream: u16, bytes: impl MessageData) -> Result<MessageId, Error> {
        self.try_send_inner(stream, bytes, None)
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

    /// Queue a message on `stream`, waiting while the send buffer is full.
    /// `bytes` as for [`try_send`](Self::try_send): pass [`Bytes`] to avoid
    /// the copy.
    pub async fn send(&self, stream: u16, bytes: impl MessageData) -> Result<MessageId, Error> {
        self.send_inner(stream, bytes.into_message_bytes(), None)
            .await
    }

    /// Queue a message that is dropped (and skipped by the receiver) if
    /// the peer has not acknowledged it within `lifetime`.
    pub async fn send_with_deadline(
        &self,
        stream: u16,
        bytes: impl MessageData,
        lifetime: Duration,
    ) -> Result<MessageId, Error> {
        self.send_inner(stream, bytes.into_message_bytes(), Some(lifetime))
            .await
    }

    /// Offer `bytes` until the core takes it: every attempt hands over a
    /// clone of the same [`Bytes`] (a reference count, not a copy).
    async fn send_inner(
        &self,
        stream: u16,
        bytes: Bytes,
        lifetime: Option<Duration>,
    ) -> Result<MessageId, Error> {
        let h = self.inner.handle;
        let r = self
            .wait_for(|st, shared| {
                let now = shared.now();
                let deadline = lifetime.map(|d| now + d);
                match st
                    .proto
                    .send_message_with_deadline(h, now, stream, bytes.clone(), deadline)
                {
                    // The connection's buffer is full, or the endpoint's
                    // pool is at its ceiling: wait (the driver wakes us on
                    // acknowledgements and on `Event::Writable`).
                    Err(SendError::BufferFull) | Err(SendError::WouldBlock { .. }) => {
                        if let Some(c) = st.conns.get_mut(&h) {
                            c.send_waiting = true;
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
                    other => Look::Ready(other.map_err(Error::Send)),
                }
            })
            .await?;
        self.shared().wake();
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

/// Take the next inbox message; release held streams once the inbox has
/// drained to half its limit.
fn pop(
    st: &mut crate::driver::State,
    shared: &Shared,
    h: ConnectionHandle,
) -> Option<(u16, Bytes)> {
    let c = st.conns.get_mut(&h)?;
    let m = c.inbox.pop_front()?;
    c.inbox_bytes -= m.1.len();
    if !c.held.is_empty() && c.inbox_bytes <= c.inbox_limit / 2 {
        let held: Vec<u16> = std::mem::take(&mut c.held).into_iter().collect();
        for s in held {
            st.proto.hold_stream(h, s, false);
        }
        // The core has messages to hand out again.
        shared.wake();
    }
    Some(m)
}
