//! # The blocking facade: Peregrine without an async runtime
//!
//! [`Endpoint`] owns a small tokio runtime (one worker thread) whose
//! `block_on` runs each call: every call blocks the calling thread until
//! the async operation completes. The driver itself runs on the
//! endpoint's own thread, as for the async [`crate::Endpoint`].
//! [`Connection`]s keep the runtime alive, so an endpoint may be dropped
//! while its connections are still in use. The up-call interface works
//! the same: `on_message` callbacks run on the driver's thread as
//! messages are delivered.

use crate::{ConnectionConfig, ConnectionEvent, Error, MessageOutcome, Stats};
use bytes::Bytes;
use peregrine_cc::LinkHint;
use peregrine_proto::{
    CloseReason, ConnectionStats, MessageData, MessageId, SchedulerConfig, StreamConfig,
    WindowTarget,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Runtime;

fn runtime() -> Result<Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("peregrine-blocking")
        .enable_all()
        .build()
        .map_err(|e| Error::Runtime(e.to_string()))
}

/// The runtime and the endpoint's shared state: dropped last (when the
/// endpoint and every connection are gone), it waits until the driver
/// (on its own thread) has finished its graceful closes (at most its 2 s
/// grace), so a program that exits right after sees its ENDs sent.
struct Rt {
    rt: Runtime,
    shared: Arc<crate::driver::Shared>,
}

impl std::fmt::Debug for Rt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rt").finish_non_exhaustive()
    }
}

impl Drop for Rt {
    fn drop(&mut self) {
        // Inside an async context (a handle dropped by a task) blocking is
        // not allowed: skip the wait.
        if tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        let shared = self.shared.clone();
        self.rt.block_on(async move {
            for _ in 0..300 {
                if shared.lock().stopped.is_some() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        });
    }
}

/// A blocking endpoint.
#[derive(Debug)]
pub struct Endpoint {
    // Field order: the async endpoint is dropped inside the runtime's
    // context before the runtime.
    inner: crate::Endpoint,
    rt: Arc<Rt>,
}

impl Endpoint {
    /// A client endpoint on `addr`.
    pub fn client(addr: SocketAddr) -> Result<Endpoint, Error> {
        Endpoint::bind(crate::EndpointBuilder::new(), addr)
    }

    /// A server endpoint on `addr`, accepting connections configured as `config`.
    pub fn server(addr: SocketAddr, config: ConnectionConfig) -> Result<Endpoint, Error> {
        Endpoint::bind(crate::EndpointBuilder::new().server(config), addr)
    }

    /// An endpoint built by `builder` (memory ceiling, seed, server
    /// configuration), bound to `addr`; the configuration is checked first.
    pub fn bind(builder: crate::EndpointBuilder, addr: SocketAddr) -> Result<Endpoint, Error> {
        let rt = runtime()?;
        let inner = {
            let _guard = rt.enter();
            builder.bind(addr)?
        };
        let rt = Arc::new(Rt {
            shared: inner.shared(),
            rt,
        });
        Ok(Endpoint { inner, rt })
    }

    /// Move every connection to a new socket bound to `addr` (see
    /// [`crate::Endpoint::rebind`]); the new address.
    pub fn rebind(&self, addr: SocketAddr) -> Result<SocketAddr, Error> {
        self.inner.rebind(addr)
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local_addr()
    }

    /// This endpoint's static public key (see
    /// [`crate::Endpoint::public_key`]).
    pub fn public_key(&self) -> Option<crate::PublicKey> {
        self.inner.public_key()
    }

    /// Open a connection and wait for its handshake.
    pub fn connect(
        &self,
        remote: SocketAddr,
        config: ConnectionConfig,
    ) -> Result<Connection, Error> {
        let inner = self.rt.rt.block_on(self.inner.connect(remote, config))?;
        Ok(Connection {
            inner,
            rt: self.rt.clone(),
        })
    }

    /// The next accepted connection; `None` once the driver stopped.
    pub fn accept(&self) -> Option<Connection> {
        let inner = self.rt.rt.block_on(self.inner.accept())?;
        Some(Connection {
            inner,
            rt: self.rt.clone(),
        })
    }

    /// Endpoint-wide counters.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }
}

impl Endpoint {
    /// Become the source of multicast group `id` (see
    /// [`crate::Endpoint::group`]).
    pub fn group(&self, id: u32) -> Result<Group, Error> {
        Ok(Group {
            inner: self.inner.group(id)?,
            rt: self.rt.clone(),
        })
    }
}

/// The source of a multicast group (blocking; see [`crate::Group`]).
#[derive(Debug)]
pub struct Group {
    // Field order: the async group goes before the runtime.
    inner: crate::Group,
    rt: Arc<Rt>,
}

impl Group {
    /// The async group underneath (members, stats, `try_send`).
    pub fn as_async(&self) -> &crate::Group {
        &self.inner
    }

    /// Admit `bytes` for every current member, blocking while the group
    /// queue is full; its group sequence number.
    pub fn send(&self, bytes: &[u8]) -> Result<u64, Error> {
        self.rt.rt.block_on(self.inner.send(bytes))
    }

    /// Block until the next membership event; `None` once the endpoint
    /// stopped.
    pub fn next_event(&self) -> Option<crate::GroupEvent> {
        self.rt.rt.block_on(self.inner.next_event())
    }
}

/// A blocking connection.
#[derive(Debug, Clone)]
pub struct Connection {
    inner: crate::Connection,
    rt: Arc<Rt>,
}

impl Connection {
    /// The async connection underneath.
    pub fn as_async(&self) -> &crate::Connection {
        &self.inner
    }

    /// Join the peer's multicast group `group` (see
    /// [`crate::Connection::join_group`]); its messages arrive on
    /// [`crate::DEFAULT_GROUP_STREAM`].
    pub fn join_group(&self, group: u32) -> Result<(), Error> {
        self.inner.join_group(group)
    }

    /// Leave multicast group `group` (see
    /// [`crate::Connection::leave_group`]).
    pub fn leave_group(&self, group: u32) -> Result<(), Error> {
        self.inner.leave_group(group)
    }

    /// Configure a stream (class, weight, reliability, buffer limit).
    pub fn open_stream(&self, stream: u16, config: StreamConfig) -> Result<(), Error> {
        self.inner.open_stream(stream, config)
    }

    /// Switch the stream scheduler.
    pub fn set_scheduler(&self, config: SchedulerConfig) {
        self.inner.set_scheduler(config)
    }

    /// The handover window: see [`crate::Connection::set_receive_window`].
    pub fn set_receive_window(&self, target: WindowTarget, bytes: u64) -> bool {
        self.inner.set_receive_window(target, bytes)
    }

    /// Hand a link-layer hint to the controller.
    pub fn link_hint(&self, hint: &LinkHint) {
        self.inner.link_hint(hint)
    }

    /// Queue a message, blocking while the send buffer is full.
    /// `bytes` as for [`Connection::try_send`](crate::Connection::try_send).
    pub fn send(&self, stream: u16, bytes: impl MessageData) -> Result<MessageId, Error> {
        self.rt.rt.block_on(self.inner.send(stream, bytes))
    }

    /// Queue a message that expires after `lifetime` if not acknowledged.
    pub fn send_with_deadline(
        &self,
        stream: u16,
        bytes: impl MessageData,
        lifetime: Duration,
    ) -> Result<MessageId, Error> {
        self.rt
            .rt
            .block_on(self.inner.send_with_deadline(stream, bytes, lifetime))
    }

    /// Queue a message (with a deadline when `lifetime` is given) and
    /// follow it: see [`crate::Connection::send_tracked`].
    pub fn send_tracked(
        &self,
        stream: u16,
        bytes: impl MessageData,
        lifetime: Option<Duration>,
    ) -> Result<Delivery, Error> {
        let inner = self
            .rt
            .rt
            .block_on(self.inner.send_tracked(stream, bytes, lifetime))?;
        Ok(Delivery {
            inner,
            rt: self.rt.clone(),
        })
    }

    /// The next delivered message of `stream`; `None` once closed and no
    /// message of `stream` is left (see [`crate::Connection::recv_on`]).
    pub fn recv_on(&self, stream: u16) -> Option<Bytes> {
        self.rt.rt.block_on(self.inner.recv_on(stream))
    }

    /// The next delivered message of `stream`, waiting at most `timeout`.
    pub fn recv_on_timeout(&self, stream: u16, timeout: Duration) -> Option<Bytes> {
        self.rt
            .rt
            .block_on(async { tokio::time::timeout(timeout, self.inner.recv_on(stream)).await })
            .ok()
            .flatten()
    }

    /// The next event (see [`crate::Connection::next_event`]); `None`
    /// after `Closed`.
    pub fn next_event(&self) -> Option<ConnectionEvent> {
        self.rt.rt.block_on(self.inner.next_event())
    }

    /// The next event, waiting at most `timeout`.
    pub fn next_event_timeout(&self, timeout: Duration) -> Option<ConnectionEvent> {
        self.rt
            .rt
            .block_on(async { tokio::time::timeout(timeout, self.inner.next_event()).await })
            .ok()
            .flatten()
    }

    /// The next event, if one is waiting.
    pub fn try_next_event(&self) -> Option<ConnectionEvent> {
        self.inner.try_next_event()
    }

    /// The next delivered message; `None` once closed and drained.
    pub fn recv(&self) -> Option<(u16, Bytes)> {
        self.rt.rt.block_on(self.inner.recv())
    }

    /// The next delivered message, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<(u16, Bytes)> {
        self.rt
            .rt
            .block_on(async { tokio::time::timeout(timeout, self.inner.recv()).await })
            .ok()
            .flatten()
    }

    /// Hand `stream`'s messages to `f` as they are delivered.
    pub fn on_message<F>(&self, stream: u16, f: F)
    where
        F: FnMut(u16, Bytes) + Send + 'static,
    {
        self.inner.on_message(stream, f)
    }

    /// A snapshot of the connection's counters.
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.inner.stats()
    }

    /// Close gracefully and wait until done.
    pub fn close(&self) -> CloseReason {
        self.rt.rt.block_on(self.inner.close())
    }
}

/// The fate of one message sent with [`Connection::send_tracked`]
/// (blocking; see [`crate::Delivery`]).
#[derive(Debug)]
pub struct Delivery {
    // Field order: the async delivery goes before the runtime.
    inner: crate::Delivery,
    rt: Arc<Rt>,
}

impl Delivery {
    /// The message's id.
    pub fn id(&self) -> MessageId {
        self.inner.id()
    }

    /// The outcome, if known already.
    pub fn try_outcome(&self) -> Option<MessageOutcome> {
        self.inner.try_outcome()
    }

    /// Block until the outcome is known.
    pub fn outcome(self) -> MessageOutcome {
        let Delivery { inner, rt } = self;
        rt.rt.block_on(inner.outcome())
    }
}
