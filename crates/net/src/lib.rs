//! # peregrine — the transport over UDP
//!
//! The library applications `cargo add`: Peregrine's sans-IO core
//! (`peregrine-proto`: SLTP's wire format, prioritized streams, schedulers,
//! congestion control, packet-pair start-up) driven over a real UDP socket
//! by a driver thread per endpoint.
//!
//! * [`Endpoint`] — one UDP socket (IPv4 or IPv6) holding any number of
//!   connections, demultiplexed by connection id. `Endpoint::client(addr)`
//!   connects; `Endpoint::server(addr, config)` also accepts.
//! * [`Connection`] — `open_stream` (priority class, weight, reliability,
//!   the stream's own send-buffer limit), `send(stream, &bytes).await`
//!   (waits while that stream's buffer — 8 MiB by default,
//!   [`DEFAULT_STREAM_SEND_BUFFER_BYTES`] — or the connection's 16 MiB is
//!   full, so a bulk stream cannot keep another stream's messages from
//!   being queued), `recv().await -> (stream, Bytes)` (any stream) and
//!   `recv_on(stream).await -> Bytes` (one stream; a message goes to
//!   whichever read takes it first), the up-call
//!   `on_message(stream, |stream, bytes| …)` run by the driver on delivery
//!   (seed 003 §III-E), `stats`, `link_hint`, `set_scheduler`,
//!   `set_controller`, `close`.
//! * **Events** — `next_event().await -> ConnectionEvent`: every core
//!   event besides messages reaches the application (abandoned messages
//!   with their stream and number, security violations, network reset,
//!   path migration, group membership, what a link hint did and when the
//!   controller held and released its window, the peer's close, the final
//!   `Closed`) through a bounded queue per connection
//!   ([`EVENT_QUEUE_CAPACITY`]; overflow drops the oldest, counted and
//!   reported as `ConnectionEvent::Lagged`). `send_tracked(stream, bytes,
//!   lifetime)` returns a [`Delivery`] whose `outcome().await` is
//!   [`MessageOutcome::Acknowledged`], `Abandoned(reason)` or
//!   `Undelivered(close reason)`.
//! * `Endpoint::rebind(addr)` moves every connection to a new socket (a
//!   real rebinding, as after a handover); the peer validates the new
//!   path and follows it (`ConnectionStats::path`).
//! * `Connection::set_receive_window(target, bytes)` is the handover
//!   window: 0 closes the connection's (or one stream's) window, the
//!   sender pauses without counting loss, `u64::MAX` reopens it.
//! * `EndpointBuilder::memory_ceiling(bytes)` bounds the message bytes all
//!   connections of an endpoint hold (the core's buffer pool; a full pool
//!   makes `send` wait); `Endpoint::stats().core` reports the pool.
//! * **Multicast groups** (issue 29, [`Group`]): `Endpoint::group(id)`
//!   makes this endpoint a group's source (`send`, membership events);
//!   a peer joins with `Connection::join_group(id)` / `leave_group(id)`
//!   and receives the group's messages on
//!   [`DEFAULT_GROUP_STREAM`] through `recv`, `recv_on` and
//!   `on_message`. Delivery is fan-out over each member's connection.
//! * **Link hints from outside** (issue 38, [`hints`]):
//!   `EndpointBuilder::hints(source)` (every connection) or
//!   `Connection::hints(source)` (one) starts a pump that hands a
//!   [`hints::HintSource`]'s hints — JSON lines over a Unix or UDP socket,
//!   a replayed CSV trace, a Wi-Fi interface's nl80211 statistics — to the
//!   controllers when the events they announce begin.
//! * [`blocking`] — the same without an async runtime in the application:
//!   it owns a small tokio runtime.
//! * **Encrypted by default** (issue 13): every connection runs a Noise
//!   handshake in START / START-REPLY and seals each packet with
//!   ChaCha20-Poly1305. With nothing configured a server makes a fresh
//!   static keypair at bind (accepting `Noise_IK` and `Noise_XX`;
//!   [`Endpoint::public_key`]) and a client runs `Noise_XX` —
//!   opportunistic: encrypted, server not authenticated. Pin the server
//!   with `NoiseConfig::ik`, or share a fleet key
//!   (`SecurityConfig::PresharedKey`), through
//!   [`EndpointBuilder::security`]; [`EndpointBuilder::insecure`] turns
//!   protection off. [`keys`] reads and writes key files and draws keys
//!   from OS entropy.
//!
//! ```no_run
//! # async fn demo() -> Result<(), peregrine::Error> {
//! use peregrine::{Endpoint, ConnectionConfig, StreamConfig};
//! let ep = Endpoint::client("0.0.0.0:0".parse().unwrap())?;
//! let conn = ep.connect("192.0.2.1:4433".parse().unwrap(), ConnectionConfig::default()).await?;
//! conn.open_stream(1, StreamConfig { class: 0, ..StreamConfig::default() })?;
//! conn.send(1, b"telemetry").await?;
//! conn.close().await;
//! # Ok(()) }
//! ```
//!
//! ## Key choices
//!
//! * **One driver thread per endpoint, one lock.** Each endpoint's driver
//!   runs on its own OS thread ("peregrine-ep") in a current-thread tokio
//!   runtime, off the application's pool: a connection's work never hops
//!   between runtime workers, and the application may use any executor
//!   (binding needs none). The thread ends once the endpoint, its
//!   connections and their graceful closes are done. Application calls
//!   lock the core, change it and wake the driver; only the driver
//!   touches the socket. The lock is never held across a socket call, an
//!   `.await` or a callback.
//! * **Wake-ups only for sleepers.** Waking a busy driver costs an atomic
//!   operation, not a system call; a busy driver reads the socket with a
//!   direct `recvmmsg` instead of a trip through `epoll_wait`; waiting
//!   senders are woken only by turns that freed buffer space; a timer
//!   closer than tokio's 1 ms resolution (a pacing gap) is waited for by
//!   parking the driver's thread (spinning only its last 50 µs), not by
//!   a yield loop.
//! * **Batched, offloaded I/O** through `quinn-udp`: `recvmmsg`-style
//!   batches, GRO and GSO on Linux (runs up to what one IP packet holds:
//!   45 datagrams of 1,452 bytes per `sendmsg`), ECN bits both ways, and
//!   a clean fallback to one datagram per call ([`SocketCapabilities`]).
//! * **Backpressure end to end**: `send` waits on the core's send buffer;
//!   an unread inbox holds its streams in the core, which shrinks the
//!   advertised window, so a slow reader slows the sender.
//! * Time is the driver's monotonic clock since the endpoint was bound,
//!   handed to the core as `Time`.
//! * Callbacks (`on_message`) run on the driver's thread.
//! * **Nothing the core reports is dropped**: what is not a message goes
//!   to the connection's event queue, bounded so an application that
//!   never reads it pays a fixed amount of memory. The runtime's clock is
//!   private, so `link_hint` stamps a hint as issued when it is handed
//!   over. `docs/runtime.md` describes the API as a whole.

#![warn(missing_docs)]

pub mod alloc;
pub mod blocking;
mod connection;
mod driver;
mod endpoint;
mod events;
mod group;
pub mod hints;
mod icmp;
mod inbox;
pub mod keylog;
pub mod keys;
pub mod observe;
mod pacing;
pub mod pmtu;
mod rx_time;
mod socket;
pub mod tunnel;
pub mod wake;

pub use connection::{Connection, Delivery};
pub use endpoint::{Endpoint, EndpointBuilder, Stats};
pub use events::{ConnectionEvent, MessageOutcome, EVENT_QUEUE_CAPACITY};
pub use group::{
    EvictReason, Group, GroupError, GroupEvent, GroupRequestError, DEFAULT_GROUP_STREAM,
    GROUP_EVENT_QUEUE_CAPACITY,
};
pub use peregrine_proto::multicast::{GroupConfig, GroupSenderStats};
pub use socket::SocketCapabilities;
pub use tunnel::{Tunnel, TunnelConfig, TunnelEvent, TunnelStats};

pub use bytes::Bytes;
pub use endpoint::aes_hardware;
pub use peregrine_cc::{CcConfig, LinkHint, LinkHintKind};
pub use peregrine_proto::connection::ViolationKind;
pub use peregrine_proto::crypto::{
    AeadAlgorithm, AeadPreference, NoiseConfig, NoisePattern, PublicKey, SecurityConfig,
    SecurityStats, StaticKeypair,
};
pub use peregrine_proto::endpoint::EndpointStats;
pub use peregrine_proto::Pacing;
pub use peregrine_proto::{
    AbandonReason, CloseReason, ConnectionConfig, ConnectionHandle, ConnectionState,
    ConnectionStats, EcnCodepoint, EndpointConfig, HintEffect, MessageData, MessageId,
    PmtuDiscovery, SchedulerConfig, SendError, StreamConfig, StreamReliability, Unreachable,
    WindowTarget, DEFAULT_STREAM_SEND_BUFFER_BYTES,
};

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The socket failed (bind, or a fatal I/O error).
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// A configuration cannot work.
    #[error(transparent)]
    Config(peregrine_proto::connection::ConfigError),
    /// The core refused to open a connection.
    #[error(transparent)]
    Connect(#[from] peregrine_proto::endpoint::ConnectError),
    /// The core refused a message or a stream configuration.
    #[error(transparent)]
    Send(SendError),
    /// The connection is closed; the reason says why and what to do.
    #[error("{0}")]
    Closed(CloseReason),
    /// The endpoint's driver stopped.
    #[error("the endpoint stopped ({0}): open a new endpoint")]
    EndpointStopped(String),
    /// A security configuration cannot work in its role (client or
    /// server); the text names what is missing.
    #[error("security configuration {0}")]
    Security(&'static str),
    /// The operating system's random generator failed.
    #[error("the operating system's random generator failed: {0}")]
    Entropy(String),
    /// The blocking facade could not start its runtime.
    #[error("runtime: {0}")]
    Runtime(String),
    /// A multicast group operation failed (`crate::group`).
    #[error(transparent)]
    Group(GroupError),
}
