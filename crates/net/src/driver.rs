//! # The driver: one dedicated thread per endpoint
//!
//! Each endpoint's driver runs on its own OS thread ("peregrine-ep"), in a
//! current-thread tokio runtime that holds nothing else (quinn's "endpoint
//! driver" shape, without sharing the application's pool): the work of a
//! connection never hops between runtime workers, and no work-stealing
//! worker is unparked (futex, eventfd) for it. The application may use any
//! runtime (or none, through [`crate::blocking`]).
//!
//! The driver owns the socket and runs the sans-IO call order of
//! `peregrine_proto::Endpoint` (handle → poll_transmit → poll_event →
//! poll_timeout) whenever a datagram batch arrives, the timer fires or an
//! application call wakes it. The protocol state sits behind one mutex in
//! [`Shared`]; application calls lock it briefly, change the core and
//! notify the driver, which does all the sending. The lock is never held
//! across a socket call or an `.await`.
//!
//! Wake-ups, both ways, only when someone sleeps: an application call
//! wakes the driver through a `Notify`, which costs one atomic operation
//! while the driver is busy (a stored permit; the thread is only unparked
//! when it waits); a busy driver (more to send, or a timer due) reads the
//! socket between its sends with a direct `recvmmsg` instead of a trip
//! through the runtime's `epoll_wait`; a `send` waiting for buffer
//! space is looked at only by a turn that read datagrams or fired a timer
//! (the only things that free space), not by every turn, and woken only
//! at its buffers' low-water mark — the message fits and a third of each
//! buffer is free, as Linux wakes a TCP writer — so a saturating writer
//! queues a batch of messages per wake-up, not one per acknowledgement;
//! and application tasks (readers with new messages, writers with room)
//! are woken after the driver releases the state lock, never while it
//! holds it (a task woken under the lock would only block on it). A timer closer
//! than tokio's 1 ms resolution (a pacing gap: the runtime paces one
//! datagram at a time, `crate::pacing`) is waited for on the driver's own
//! thread: parked in naps of at most [`NAP_NS`], reading the socket
//! between them and unparked by application calls. Each nap is aimed
//! early by the thread's learnt wake-up lateness (`crate::wake`), and
//! only a rest of at most 15 µs is polled, within 10 % of a core — no
//! spinning core and no yield loop. A nap that overshoots costs no rate:
//! the pacer's tokens keep accruing while the driver sleeps.
//!
//! Delivery: each `MessageReceived` either goes to the connection's inbox
//! (read with `Connection::recv` or, one stream, `Connection::recv_on`;
//! `crate::inbox`) or, when the application registered a callback for its
//! stream, is handed to that callback by the driver right after the lock
//! is released — seed 003 §III-E's up-call, with no task hop. A turn
//! that read datagrams hands out what they completed *before* it builds
//! its own datagrams, so what an up-call answers leaves in the same turn
//! and nobody waits for a batch of bulk to be built and sealed; and a
//! priority-0 DATA datagram that follows a batch without one ends its
//! batch, so it leaves at once instead of behind up to
//! [`TX_BATCH_BYTES`] of bulk (issue 36; docs/runtime.md, "Fast
//! paths"). An inbox
//! that grows past the connection's receive buffer holds the stream in
//! the core (`hold_stream`), so the peer's window closes instead of memory
//! growing. Every other core event except `Connected` and `Writable` goes
//! to the connection's bounded event queue (`crate::events`); abandoned
//! and closed-while-undelivered messages also settle the outcome of
//! tracked sends, and a turn that read datagrams or fired a timer checks
//! the tracked messages still pending for acknowledgement.

use crate::events::{ConnectionEvent, EventQueue, MessageOutcome};
use crate::group::GroupEntry;
use crate::inbox::Inbox;
use crate::socket::{RxBuffers, TxBatch, UdpIo};
use crate::wake::{WakePolicy, WakeTimer};
use bytes::Bytes;
use peregrine_proto::multicast::{GroupMessage, GroupReceiver};
use peregrine_proto::wire::{header::Header, packet_type::PacketType};
use peregrine_proto::{
    CloseReason, ConnectionHandle, Endpoint as ProtoEndpoint, Event, MessageId, SansIo, Time,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
// The runtime crate runs each endpoint's driver on a thread of its own
// (clippy.toml bans threads for the sans-IO core, not for this I/O layer).
#[allow(clippy::disallowed_types)]
use std::thread::Thread;
use std::time::Duration;
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Datagrams collected under one lock before they are sent.
const TX_BATCH_DATAGRAMS: usize = 128;
/// Bytes collected under one lock before they are sent: with path MTU
/// discovery's 64 KB datagrams, 128 of them were 8 MiB sealed in one turn
/// (milliseconds under the lock, during which a priority message could
/// not even be queued); four full GSO sends bound the turn instead.
const TX_BATCH_BYTES: usize = 256 * 1024;
/// Receive batches handled before the driver looks at its other work.
const RX_BATCHES_PER_TURN: usize = 8;
/// Bytes read in one turn before the driver sends and dispatches: 8
/// batches of 32 GRO buffers could be 16 MiB, milliseconds before the
/// turn's ACKs leave and its messages reach the application.
const RX_BYTES_PER_TURN: usize = 1 << 20;
/// Timers closer than this are not slept on through tokio (its timer
/// wheel has a 1 ms resolution) but by sleeping the driver's own thread.
const SLEEP_THREAD_BELOW: Duration = Duration::from_millis(1);
/// A driver woken by a due timer (a pacing release, say) reads
/// the socket at most this often: a `recvmmsg` per paced datagram would
/// mostly find nothing and double the system calls.
const DUE_RX_INTERVAL: Duration = Duration::from_micros(25);
/// Longest nap of a short wait between two looks at the socket: how late
/// a datagram arriving during a sub-millisecond timer wait may be read
/// (100 µs), ns.
const NAP_NS: u64 = 100_000;
/// How long the driver naps, after a wait that read datagrams, instead
/// of parking in `epoll_wait` (see [`rx_nap`]). Measured on loopback
/// bulk (docs/performance.md, "Issue 36, ninth session"): 200 µs lowered
/// both sides' CPU per GB, 50 µs raised it.
const RX_NAP: Duration = Duration::from_micros(200);
/// The datagrams a wait must have read for the next wait to be a nap:
/// only a stream fast enough to queue that many per wake-up pays a nap's
/// latency back in wake-ups saved (loopback bulk at 10 Gbit/s reads
/// ≈ 180 per wake-up), where an echo at 1 Gbit/s, reading one to three,
/// would only wait — 0.1 ms more per 16–64 KiB echo of seed 003's
/// `reproduce sltp --ethernet` with a nap after any read
/// (docs/performance.md, "Issue 36 after the ninth session's merge").
const RX_NAP_MIN_DATAGRAMS: u64 = 32;
/// How long after a priority-0 DATA datagram arrived the driver still
/// does not nap: a nap holds what arrives during it up to [`RX_NAP`],
/// which a priority stream beside bulk must not pay (issue 36's latency
/// check, and a drone's control stream beside its video). One second
/// covers a control loop of 1 Hz and up.
const PRIORITY_NAP_HOLD: Duration = Duration::from_secs(1);
/// How long a dropped endpoint keeps driving graceful closes.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A message callback: `(stream, bytes)`, run on the driver's thread.
pub(crate) type Callback = Box<dyn FnMut(u16, Bytes) + Send>;

/// What the runtime keeps per connection beside the core's state.
#[derive(Debug)]
pub(crate) struct ConnState {
    /// Messages delivered and not yet read by `recv` / `recv_on`.
    pub(crate) inbox: Inbox,
    /// Most bytes `inbox` may hold before its streams are held.
    pub(crate) inbox_limit: usize,
    /// Streams held because the inbox was full.
    pub(crate) held: BTreeSet<u16>,
    /// Streams whose messages go to a callback.
    pub(crate) callbacks: BTreeSet<u16>,
    /// The handshake completed.
    pub(crate) connected: bool,
    /// The peer closed its sending side.
    pub(crate) peer_closed: bool,
    /// Closed, and why.
    pub(crate) closed: Option<CloseReason>,
    /// Every application handle is gone: events are dropped and the
    /// entry is removed once the core reports `Closed`.
    pub(crate) released: bool,
    /// A `send` waits for buffer space.
    pub(crate) send_waiting: bool,
    /// What the waiting `send`s were refused: the largest message length
    /// per stream. The driver wakes them at the low-water mark of these
    /// streams' buffers ([`wake_send_waiters`]).
    pub(crate) send_wants: BTreeMap<u16, usize>,
    /// Events for `next_event` (bounded).
    pub(crate) events: EventQueue,
    /// Messages sent with `send_tracked` whose `Delivery` is alive: their
    /// outcome once known (`None`: not yet).
    pub(crate) tracked: BTreeMap<MessageId, Option<MessageOutcome>>,
    /// Tracked messages whose outcome is not known yet.
    pub(crate) tracked_pending: usize,
    /// Wakes `recv`, `send`, `connect`, `closed`, `next_event` and
    /// `Delivery` waiters.
    pub(crate) changed: Arc<Notify>,
    /// Streams that carry group messages on this connection (a group was
    /// joined on them): their messages go through `group_rx`.
    pub(crate) group_streams: BTreeSet<u16>,
    /// One receiver per group joined on this connection (kept after a
    /// LEAVE: the source drains what it admitted before).
    pub(crate) group_rx: BTreeMap<u32, GroupReceiver>,
    /// Messages on a group stream that were not valid group messages of
    /// a joined group (dropped).
    pub(crate) group_rejected: u64,
}

impl ConnState {
    pub(crate) fn new(inbox_limit: usize) -> ConnState {
        ConnState {
            inbox: Inbox::default(),
            inbox_limit,
            held: BTreeSet::new(),
            callbacks: BTreeSet::new(),
            connected: false,
            peer_closed: false,
            closed: None,
            send_waiting: false,
            send_wants: BTreeMap::new(),
            released: false,
            events: EventQueue::default(),
            tracked: BTreeMap::new(),
            tracked_pending: 0,
            changed: Arc::new(Notify::new()),
            group_streams: BTreeSet::new(),
            group_rx: BTreeMap::new(),
            group_rejected: 0,
        }
    }

    /// Settle tracked message `id` (if it is tracked and still pending);
    /// whether it was.
    fn settle(&mut self, id: MessageId, outcome: MessageOutcome) -> bool {
        match self.tracked.get_mut(&id) {
            Some(slot @ None) => {
                *slot = Some(outcome);
                self.tracked_pending -= 1;
                true
            }
            _ => false,
        }
    }
}

/// Everything behind the endpoint's lock.
#[derive(Debug)]
pub(crate) struct State {
    /// The sans-IO core.
    pub(crate) proto: ProtoEndpoint,
    /// Runtime state of each connection the application may still hold.
    pub(crate) conns: BTreeMap<ConnectionHandle, ConnState>,
    /// Accepted connections not yet returned by `accept`.
    pub(crate) incoming: VecDeque<ConnectionHandle>,
    /// Connections with a `send` waiting for buffer space (`send_waiting`):
    /// a turn that may have freed space wakes these, not every connection.
    pub(crate) send_waiters: BTreeSet<ConnectionHandle>,
    /// Connections with tracked messages whose outcome is pending: a turn
    /// that read datagrams or fired a timer checks these, not every
    /// connection.
    pub(crate) tracking: BTreeSet<ConnectionHandle>,
    /// Receive-buffer size of accepted connections (their inbox limit).
    pub(crate) server_inbox_limit: usize,
    /// Application handles (endpoints and connections) alive; at zero the
    /// driver closes what is left and stops.
    pub(crate) users: usize,
    /// The driver stopped (socket error or shutdown).
    pub(crate) stopped: Option<String>,
    /// Datagrams the socket layer received.
    pub(crate) datagrams_in: u64,
    /// When a DATA datagram of priority class 0 last arrived: within
    /// [`PRIORITY_NAP_HOLD`] of it the driver does not nap (`rx_nap`).
    pub(crate) priority_rx_at: Option<Time>,
    /// Datagrams the socket layer sent.
    pub(crate) datagrams_out: u64,
    /// Groups this endpoint is the source of, by id (`crate::group`).
    pub(crate) groups: BTreeMap<u32, GroupEntry>,
    /// Refuse JOINs for groups not in `groups`
    /// (`EndpointBuilder::refuse_unknown_groups`).
    pub(crate) refuse_unknown_groups: bool,
    /// The packet capture (`EndpointBuilder::pcap`), if on.
    pub(crate) capture: Option<crate::observe::Capture>,
    /// The key log (`PEREGRINE_KEYLOG`, `EndpointBuilder::keylog`), if on.
    pub(crate) keylog: Option<crate::keylog::KeyLog>,
}

/// The state shared by the driver and every application handle.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// Wakes the driver's async wait after an application call (through
    /// [`Shared::wake`]).
    pub(crate) driver_signal: Notify,
    /// Wakes `accept` waiters.
    pub(crate) incoming: Notify,
    /// Callbacks by (connection, stream), outside the state lock so a
    /// callback may call back into its connection.
    pub(crate) callbacks: Mutex<BTreeMap<(ConnectionHandle, u16), Callback>>,
    /// The time origin of this endpoint.
    pub(crate) epoch: Instant,
    /// A new socket the driver switches to at its next turn (`rebind`).
    pub(crate) rebind: Mutex<Option<UdpIo>>,
    /// The driver thread's runtime: sockets (`rebind`) are registered
    /// with its reactor.
    pub(crate) runtime: Handle,
    /// The driver's thread, unparked by [`Shared::wake`] during a short
    /// wait.
    #[allow(clippy::disallowed_types)]
    pub(crate) driver_thread: OnceLock<Thread>,
    /// An application call changed the core since the driver last looked
    /// (read by short waits; `wake` serves the async waits).
    pub(crate) poked: AtomicBool,
    /// The driver is in a short wait (parked on its thread, not in the
    /// runtime).
    pub(crate) napping: AtomicBool,
}

impl Shared {
    /// Lock the state. A panic while the lock was held (a bug) poisons it;
    /// the state is still consistent for the core (every call completes
    /// or does nothing), so the runtime keeps going rather than cascading.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tell the driver that the core changed (something to send). While
    /// the driver is busy this is one stored `Notify` permit and one
    /// flag, no system call; only a driver that waits is woken.
    pub(crate) fn wake(&self) {
        self.poked.store(true, Ordering::SeqCst);
        self.driver_signal.notify_one();
        if self.napping.load(Ordering::SeqCst) {
            if let Some(t) = self.driver_thread.get() {
                t.unpark();
            }
        }
    }

    /// Now, in the core's time.
    pub(crate) fn now(&self) -> Time {
        Time::from_nanos(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn instant(&self, t: Time) -> Instant {
        self.epoch + Duration::from_nanos(t.as_nanos())
    }
}

/// Read the core's events and hand them out; return the up-calls to run
/// once the lock is released.
fn dispatch_events(
    st: &mut State,
    now: Time,
    upcalls: &mut Vec<(ConnectionHandle, u16, Bytes)>,
    wakes: &mut Wakes,
) -> bool {
    let mut accepted = false;
    while let Some((h, ev)) = st.proto.poll_event() {
        let outgoing_known = st.conns.contains_key(&h);
        // Membership (JOIN/LEAVE applied, connection closed) for the
        // groups this endpoint is the source of: O(groups), and only for
        // the events a group uses.
        if matches!(
            ev,
            Event::PeerJoined { .. } | Event::PeerLeft { .. } | Event::Closed { .. }
        ) {
            for g in st.groups.values_mut() {
                g.sender.handle_event(now, h, &ev);
            }
        }
        // Everything but messages, `Connected` and `Writable` goes to the
        // application's event queue as well (crate::events); a message
        // costs no extra look-up here.
        if let Some(app_ev) = ConnectionEvent::from_core(&ev) {
            if let Some(c) = st.conns.get_mut(&h).filter(|c| !c.released) {
                c.events.push(app_ev);
                c.changed.notify_waiters();
            }
        }
        match ev {
            Event::Connected => {
                tracing::debug!(conn = ?h, accepted = !outgoing_known, "connection established");
                if let Some(k) = st.keylog.as_mut() {
                    k.watch(h);
                }
                if !outgoing_known {
                    let limit = st.server_inbox_limit;
                    st.conns.insert(h, ConnState::new(limit));
                    st.incoming.push_back(h);
                    st.users += 1;
                    accepted = true;
                }
                if let Some(c) = st.conns.get_mut(&h) {
                    c.connected = true;
                    c.changed.notify_waiters();
                }
            }
            Event::MessageReceived { stream, bytes, .. } => {
                let Some(c) = st.conns.get_mut(&h).filter(|c| !c.released) else {
                    continue;
                };
                if c.group_streams.contains(&stream) {
                    for body in group_bodies(c, &bytes) {
                        deliver(
                            c,
                            &mut st.proto,
                            h,
                            stream,
                            Bytes::from(body),
                            upcalls,
                            wakes,
                        );
                    }
                    continue;
                }
                deliver(
                    c,
                    &mut st.proto,
                    h,
                    stream,
                    Bytes::from(bytes),
                    upcalls,
                    wakes,
                );
            }
            Event::PeerClosed => {
                tracing::debug!(conn = ?h, "peer closed the connection");
                if let Some(c) = st.conns.get_mut(&h) {
                    c.peer_closed = true;
                    c.changed.notify_waiters();
                }
            }
            Event::Closed {
                reason,
                undelivered,
            } => {
                tracing::debug!(
                    conn = ?h,
                    ?reason,
                    undelivered = undelivered.len(),
                    "connection closed"
                );
                if let Some(c) = st.conns.get_mut(&h) {
                    c.closed = Some(reason);
                    // Tracked messages still pending: not delivered if
                    // listed, else acknowledged before the end.
                    if c.tracked_pending > 0 {
                        for id in undelivered {
                            c.settle(id, MessageOutcome::Undelivered(reason));
                        }
                        for outcome in c.tracked.values_mut().filter(|o| o.is_none()) {
                            *outcome = Some(MessageOutcome::Acknowledged);
                        }
                        c.tracked_pending = 0;
                    }
                    st.tracking.remove(&h);
                    c.changed.notify_waiters();
                    if c.released {
                        st.conns.remove(&h);
                    }
                }
            }
            Event::Writable => {
                if let Some(c) = st.conns.get_mut(&h) {
                    c.send_waiting = false;
                    c.send_wants.clear();
                    c.changed.notify_waiters();
                }
            }
            // Never a member: forget the receiver `join_group` made (a
            // message of the group on this connection is now dropped and
            // counted, as for any group not joined).
            Event::GroupRejected { group } => {
                if let Some(c) = st.conns.get_mut(&h) {
                    c.group_rx.remove(&group);
                }
            }
            Event::MessageAbandoned { id, reason } => {
                if let Some(c) = st.conns.get_mut(&h) {
                    c.settle(id, MessageOutcome::Abandoned(reason));
                }
            }
            // Queued for `next_event` above; nothing else to do.
            Event::SecurityViolation { .. }
            | Event::NetworkReset
            | Event::PathMigrated { .. }
            | Event::GroupJoined { .. }
            | Event::GroupLeft { .. }
            | Event::PeerJoined { .. }
            | Event::PeerLeft { .. }
            | Event::LinkHintApplied { .. }
            | Event::SendWindowHeld { .. }
            | Event::SendWindowReleased { .. } => {}
        }
    }
    accepted
}

/// Hand a delivered message to the stream's callback (after the lock is
/// released) or to the inbox, holding the stream when the inbox is full.
fn deliver(
    c: &mut ConnState,
    proto: &mut ProtoEndpoint,
    h: ConnectionHandle,
    stream: u16,
    bytes: Bytes,
    upcalls: &mut Vec<(ConnectionHandle, u16, Bytes)>,
    wakes: &mut Wakes,
) {
    if c.callbacks.contains(&stream) {
        upcalls.push((h, stream, bytes));
        return;
    }
    c.inbox.push(stream, bytes);
    if c.inbox.bytes() > c.inbox_limit && c.held.insert(stream) {
        proto.hold_stream(h, stream, true);
    }
    wakes.add(&c.changed);
}

/// The application tasks to wake once the state lock is released: the
/// change signals of the connections whose inbox got messages this turn
/// and of those whose waiting writers may send again, each once. A task
/// woken while the driver still holds the lock would run only to block on
/// it (a futex wait, and a futex wake when the driver releases it — two
/// more thread hand-offs); woken after the release, it takes the lock at
/// once and finds everything the turn did. Nothing is lost: a waiter
/// registers its wait before it looks at the state
/// (`Connection::wait_for`). The list keeps its capacity (no allocation
/// per turn).
#[derive(Default)]
pub(crate) struct Wakes(Vec<Arc<Notify>>);

impl Wakes {
    /// Wake the waiters of `signal` after the lock is released; a signal
    /// already listed (the turn's last) is not listed again. O(1).
    fn add(&mut self, signal: &Arc<Notify>) {
        if !self.0.last().is_some_and(|l| Arc::ptr_eq(l, signal)) {
            self.0.push(signal.clone());
        }
    }

    /// Wake them (call with the state lock released). O(listed).
    fn wake(&mut self) {
        for s in self.0.drain(..) {
            s.notify_waiters();
        }
    }
}

/// The bodies a message on a group stream releases, in group order: the
/// core's `GroupReceiver` of its group checks the header and drops
/// copies. One connection delivers its group stream reliably and in
/// order, so a sequence number ahead of the next expected one can only
/// mean this side was not a member in between (it left and joined
/// again): delivery restarts there instead of waiting for a gap no path
/// will fill. A message of no joined group, or malformed, is dropped and
/// counted (`group_rejected`). O(log groups) plus the copy of the body.
fn group_bodies(c: &mut ConnState, bytes: &[u8]) -> Vec<Vec<u8>> {
    let Ok(m) = GroupMessage::decode(bytes) else {
        c.group_rejected += 1;
        return Vec::new();
    };
    let Some(rx) = c.group_rx.get_mut(&m.group) else {
        c.group_rejected += 1;
        return Vec::new();
    };
    if rx.next_seq().is_some_and(|next| m.seq > next) {
        rx.expect_from(m.seq);
    }
    if rx.on_message(bytes).is_err() {
        c.group_rejected += 1;
    }
    std::iter::from_fn(|| rx.poll_message().map(|(_, body)| body)).collect()
}

/// Move every group of the endpoint along (`GroupSender::poll`: read
/// member acknowledgements, hand member connections what they may take,
/// finish leaving members, evict silent ones) and wake its waiters.
/// O(groups · members).
fn poll_groups(st: &mut State, now: Time) {
    let State { proto, groups, .. } = st;
    for g in groups.values_mut() {
        g.sender.poll(proto, now);
        g.collect_events();
        // Room may have opened in the queue, or an event arrived; with no
        // waiter this is one atomic operation.
        g.changed.notify_waiters();
    }
}

/// Settle the tracked messages the peer has acknowledged since the last
/// look, on the connections in `tracking`. O(pending tracked messages ·
/// log), run only on turns that read datagrams or fired a timer.
fn settle_tracked(st: &mut State) {
    let State {
        proto,
        conns,
        tracking,
        ..
    } = st;
    tracking.retain(|h| {
        let Some(c) = conns.get_mut(h) else {
            return false;
        };
        let mut settled = false;
        for (id, outcome) in c.tracked.iter_mut().filter(|(_, o)| o.is_none()) {
            if proto.message_settled(*h, *id) == Some(true) {
                *outcome = Some(MessageOutcome::Acknowledged);
                c.tracked_pending -= 1;
                settled = true;
            }
        }
        if settled {
            c.changed.notify_waiters();
        }
        c.tracked_pending > 0
    });
}

/// Wake the `send`s waiting for buffer space whose buffers reached the
/// low-water mark ([`SendRoom::writer_may_wake`](peregrine_proto::SendRoom::writer_may_wake):
/// the refused message fits and at most two thirds of each buffer is
/// used), and only those. Waking a saturating writer at every
/// acknowledgement made it queue one 64 KiB message per wake-up — a
/// thread hand-off (futex wake, context switch) per message; at the
/// low-water mark it queues a third of its buffer per wake-up, while
/// two thirds are still queued for the driver. A connection gone from the
/// core, or no longer accepting messages, wakes its waiters at once.
/// O(waiting connections · waiting streams · log).
fn wake_send_waiters(st: &mut State, wakes: &mut Wakes) {
    let State {
        proto,
        conns,
        send_waiters,
        ..
    } = st;
    send_waiters.retain(|h| {
        let Some(c) = conns.get_mut(h).filter(|c| c.send_waiting) else {
            return false;
        };
        let ready = c.send_wants.is_empty()
            || c.send_wants.iter().any(|(&stream, &len)| {
                proto
                    .send_room(*h, stream)
                    .is_none_or(|room| room.writer_may_wake(len))
            });
        if ready {
            c.send_waiting = false;
            c.send_wants.clear();
            wakes.add(&c.changed);
        }
        !ready
    });
}

/// Rebinding: from now on every datagram leaves from the new socket; the
/// old one is closed (the peer sees the new address).
fn take_rebind(shared: &Shared, io: &mut UdpIo) {
    if let Some(new_io) = shared
        .rebind
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        *io = new_io;
        let mut st = shared.lock();
        if let (Some(c), Ok(local)) = (st.capture.as_mut(), io.local_addr()) {
            c.set_local(local);
        }
        // A new path: every protected connection takes a spare connection
        // ID, so the new path shares no ID, SYNC_NO or packet-number
        // sequence with the old one (docs/security.md). A connection with
        // no spare yet keeps its IDs.
        let handles: Vec<_> = st.conns.keys().copied().collect();
        for h in handles {
            st.proto.rotate_connection_id(h);
        }
    }
}

/// Read every datagram batch already queued on the socket (at most
/// [`RX_BATCHES_PER_TURN`], or until [`RX_BYTES_PER_TURN`]) into the core, without waiting; how many
/// datagrams. Each `recvmmsg` runs before the lock is taken, so an
/// application call is not held up by the system call.
fn receive(shared: &Shared, io: &UdpIo, rx: &mut RxBuffers) -> u64 {
    let mut total = 0;
    let mut bytes = 0;
    for _ in 0..RX_BATCHES_PER_TURN {
        match io.recv(rx) {
            Ok(0) => break,
            Ok(_) => {}
            // Nothing queued (`WouldBlock`): done. An ICMP error the
            // kernel reports once (`ECONNREFUSED`, …): read the error
            // queue for whom it concerns (icmp.rs). Never fatal.
            Err(e) => {
                if e.kind() != std::io::ErrorKind::WouldBlock {
                    read_icmp(shared, io);
                }
                break;
            }
        }
        let mut st = shared.lock();
        let now = shared.now();
        let st = &mut *st;
        // Each datagram at its own arrival time (kernel timestamp, or its
        // place in a GRO buffer): the packet pair measures the gaps.
        let n = rx.drain(|from, ecn, age, dg| {
            if let Some(c) = st.capture.as_mut() {
                c.received(from, dg);
            }
            bytes += dg.len();
            // Read before the core opens it in place (the base header is
            // never encrypted). O(1).
            if is_priority_data(dg) {
                st.priority_rx_at = Some(now);
            }
            st.proto
                .handle_datagram(now.saturating_sub(age), from, ecn, dg)
        }) as u64;
        st.datagrams_in += n;
        total += n;
        if bytes >= RX_BYTES_PER_TURN {
            break;
        }
    }
    total
}

/// Hand the ICMP destination unreachables queued on the socket to the
/// core (`Endpoint::handle_unreachable`): a handshake to a port with
/// nothing listening ends at once as "connection refused" (icmp.rs).
fn read_icmp(shared: &Shared, io: &UdpIo) {
    let mut hits = Vec::new();
    io.drain_errors(|to, what| hits.push((to, what)));
    if hits.is_empty() {
        return;
    }
    let mut st = shared.lock();
    let now = shared.now();
    for (to, what) in hits {
        st.proto.handle_unreachable(now, to, what);
    }
}

/// Wait until `until` (less than [`SLEEP_THREAD_BELOW`] away) on the
/// driver's own thread, or until a datagram arrives or an application
/// call wakes it: park in naps of at most [`NAP_NS`], reading the socket
/// between them. Each nap is aimed early by the thread's learnt wake-up
/// lateness (`wake`, [`WakePolicy::RUNTIME`]: a nap that ends as late as
/// usual ends on time, at no CPU cost); a nap that ends early leaves a
/// rest of at most 15 µs, polled (no system call) within the timer's CPU
/// budget of 10 % of a core — never a spinning core (pacing.rs). A nap
/// that ends later than usual costs no rate: the pacer's tokens keep
/// accruing. Blocking is right here: the thread runs nothing else. How
/// many datagrams were read. O(1) per nap or poll step.
fn short_wait(
    shared: &Shared,
    io: &UdpIo,
    rx: &mut RxBuffers,
    until: Time,
    wake: &mut WakeTimer,
) -> u64 {
    shared.napping.store(true, Ordering::SeqCst);
    let due_ns = until.as_nanos();
    let mut received = 0;
    let mut polling = false;
    loop {
        if shared.poked.swap(false, Ordering::SeqCst) {
            break;
        }
        // The socket is read between naps, not at every poll step (a
        // system call each, over a rest of a few µs).
        if !polling {
            received = receive(shared, io, rx);
            if received > 0 {
                break;
            }
        }
        let now = shared.now().as_nanos();
        match wake.timeout_ns(now, Some(due_ns)) {
            _ if now >= due_ns => break,
            Some(0) => {
                polling = true;
                std::hint::spin_loop();
            }
            timeout => {
                polling = false;
                let nap_ns = timeout.unwrap_or(u64::MAX).min(NAP_NS);
                std::thread::park_timeout(Duration::from_nanos(nap_ns));
                wake.on_timed_wake(now, nap_ns, shared.now().as_nanos());
            }
        }
    }
    // Leave the timer's polling account closed (the deadline, or an
    // early exit: either way no longer polling).
    wake.timeout_ns(shared.now().as_nanos(), None);
    shared.napping.store(false, Ordering::SeqCst);
    received
}

/// Wait for more datagrams while a stream of them is arriving: park the
/// driver's thread for [`RX_NAP`] (or until an application call unparks
/// it), then read what came. In `epoll_wait` the driver would be woken
/// by the first datagram — on loopback bulk ≈ 4,000 times per GB, each
/// wake-up ≈ 10 µs of the receiver's CPU and ≈ 6 µs of the sender's,
/// which delivers it from its softirq — and then handle a few datagrams
/// before parking again; a nap is not on the socket's wait queue, so
/// the sender wakes nobody, and the driver reads a nap's worth at once.
/// A datagram waits at most one nap longer (as in [`short_wait`]'s
/// naps). Only after a wait that read at least
/// [`RX_NAP_MIN_DATAGRAMS`], and never within [`PRIORITY_NAP_HOLD`] of
/// priority-0 data: a nap that reads fewer returns the endpoint to
/// `epoll_wait`, so an idle endpoint, or a slow one, costs nothing and
/// waits for nothing. How many datagrams were read. O(1) plus the read.
fn rx_nap(shared: &Shared, io: &UdpIo, rx: &mut RxBuffers) -> u64 {
    shared.napping.store(true, Ordering::SeqCst);
    if !shared.poked.swap(false, Ordering::SeqCst) {
        std::thread::park_timeout(RX_NAP);
    }
    shared.napping.store(false, Ordering::SeqCst);
    receive(shared, io, rx)
}

/// Whether the driver may nap at `now` ([`rx_nap`]), priority-0 data
/// having last arrived at `priority_rx_at`: not within
/// [`PRIORITY_NAP_HOLD`] of it. O(1).
fn nap_allowed(priority_rx_at: Option<Time>, now: Time) -> bool {
    priority_rx_at.is_none_or(|t| now.saturating_duration_since(t) >= PRIORITY_NAP_HOLD)
}

/// Run the message callbacks collected by [`dispatch_events`] (outside
/// the endpoint's lock: a callback may send). O(messages).
fn run_upcalls(shared: &Shared, upcalls: &mut Vec<(ConnectionHandle, u16, Bytes)>) {
    if upcalls.is_empty() {
        return;
    }
    let mut cbs = shared.callbacks.lock().unwrap_or_else(|p| p.into_inner());
    for (h, stream, bytes) in upcalls.drain(..) {
        if let Some(cb) = cbs.get_mut(&(h, stream)) {
            cb(stream, bytes);
        }
    }
}

/// Whether `dg` (as it leaves: the base header is never encrypted) is a
/// DATA datagram of priority class 0. O(1).
fn is_priority_data(dg: &[u8]) -> bool {
    Header::new_checked(dg)
        .is_ok_and(|h| h.pk_type_code() == PacketType::Data.code() && h.pri() == 0)
}

/// Start the driver of `shared` on its own thread, in `runtime` (a
/// current-thread runtime on which `io` was registered). The thread ends
/// when the driver does; a panic in it (a bug) is reported as the
/// endpoint's stop reason so no application call waits forever.
pub(crate) fn spawn(
    shared: Arc<Shared>,
    io: UdpIo,
    runtime: tokio::runtime::Runtime,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("peregrine-ep".into())
        .spawn(move || {
            let _ = shared.driver_thread.set(std::thread::current());
            // Sub-millisecond pacing gaps are waited for in naps on this
            // thread: they must end on time (pacing.rs).
            crate::pacing::tighten_timer_slack();
            let driven = shared.clone();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                runtime.block_on(run(driven, io));
            }));
            if r.is_err() {
                shared.lock().stopped = Some("the driver panicked".into());
                wake_all(&shared);
            }
        })
        .map(drop)
}

/// Wake every waiter (the driver stopped).
fn wake_all(shared: &Shared) {
    let st = shared.lock();
    for c in st.conns.values() {
        c.changed.notify_waiters();
    }
    drop(st);
    shared.incoming.notify_waiters();
}

/// The driver. Runs until every application handle is gone (then closes
/// what is left, for at most [`SHUTDOWN_GRACE`]) or the socket fails.
pub(crate) async fn run(shared: Arc<Shared>, mut io: UdpIo) {
    let mut rx = RxBuffers::new();
    let mut tx = TxBatch::default();
    let mut upcalls = Vec::new();
    let mut wakes = Wakes::default();
    let mut timer: Option<Time> = None;
    let mut more_to_send = false;
    let mut shutdown_at: Option<Time> = None;
    let mut last_rx = Time::ZERO;
    // Whether the last wait read datagrams (see `rx_nap`).
    let mut rx_recent = false;
    // Learns this thread's wake-up lateness for the short waits.
    let mut wake = WakeTimer::new(WakePolicy::RUNTIME);
    // Whether the last batch carried priority-0 data (see the cut below).
    let mut priority_last_batch = false;
    loop {
        take_rebind(&shared, &mut io);
        // Whether this turn's batch holds a START (see the late check).
        let mut tx_has_start = false;
        let mut priority_this_batch = false;
        let now = shared.now();
        let received = match timer.map(|t| t.saturating_duration_since(now)) {
            // Busy (more to send, or a timer due): read what has arrived
            // without waiting and go on. No yield to the runtime: it
            // runs nothing else, and the socket is read directly.
            _ if more_to_send => receive(&shared, &io, &mut rx),
            Some(d) if d.is_zero() => {
                if now.saturating_duration_since(last_rx) >= DUE_RX_INTERVAL {
                    last_rx = now;
                    receive(&shared, &io, &mut rx)
                } else {
                    0
                }
            }
            // A timer (a pacing gap, typically) closer than the timer
            // wheel's resolution: wait for it on this thread.
            Some(d) if d < SLEEP_THREAD_BELOW => {
                short_wait(&shared, &io, &mut rx, now + d, &mut wake)
            }
            // Datagrams have been arriving: nap, then read what came
            // (`rx_nap`); an idle endpoint parks on the socket below.
            _ if rx_recent => rx_nap(&shared, &io, &mut rx),
            _ => {
                let sleep_until = timer.map(|t| shared.instant(t));
                tokio::select! {
                    biased;
                    r = io.readable() => {
                        if let Err(e) = r {
                            tracing::warn!(error = %e, "socket failed: the endpoint's driver stops");
                            shared.lock().stopped = Some(e.to_string());
                            break;
                        }
                        receive(&shared, &io, &mut rx)
                    }
                    _ = tokio::time::sleep_until(sleep_until.unwrap_or_else(Instant::now)), if sleep_until.is_some() => 0,
                    _ = io.error_ready() => {
                        read_icmp(&shared, &io);
                        0
                    }
                    _ = shared.driver_signal.notified() => 0,
                }
            }
        };
        // Deliveries first: what the datagrams just read completed goes to
        // its up-calls before this turn's datagrams are built, so an
        // answer an up-call queues (an echo, a reply) leaves in this
        // turn's batch instead of after the next read, and the
        // application is not kept waiting while up to a batch of bulk
        // datagrams is built and sealed (issue 36: the latency of
        // priority messages beside bulk).
        // The next wait naps only while data keeps coming fast: a wait
        // that read fewer than `RX_NAP_MIN_DATAGRAMS` hands the endpoint
        // back to `epoll_wait`.
        rx_recent = received >= RX_NAP_MIN_DATAGRAMS || (rx_recent && more_to_send);
        let mut accepted_early = false;
        if received > 0 {
            {
                let mut st = shared.lock();
                let now = shared.now();
                // Never while priority-0 data is arriving: a nap would
                // hold it (`PRIORITY_NAP_HOLD`).
                rx_recent &= nap_allowed(st.priority_rx_at, now);
                accepted_early = dispatch_events(&mut st, now, &mut upcalls, &mut wakes);
            }
            wakes.wake();
            run_upcalls(&shared, &mut upcalls);
        }
        // Send, dispatch, arm the timer — under the lock, then release it
        // before the socket and the callbacks.
        let accepted;
        {
            let mut st = shared.lock();
            let now = shared.now();
            let st = &mut *st;
            // Timers are checked on every turn, not only when the sleep
            // branch wins: under a constant stream of datagrams the biased
            // select may never poll it.
            let fired = timer.is_some_and(|t| t <= now);
            if fired {
                st.proto.handle_timeout(now);
            }
            // Membership changes the last datagrams carried reach the
            // groups before they fan out (a new member gets the queued
            // messages in this turn's datagrams).
            let mut accepted_now = accepted_early;
            if !st.groups.is_empty() {
                accepted_now |= dispatch_events(st, now, &mut upcalls, &mut wakes);
                poll_groups(st, now);
            }
            tx.clear();
            more_to_send = false;
            // Each datagram is built and sealed where it leaves from, at
            // the batch's end: no copy (issue 36).
            while let Some((t, dg)) = tx.push_next(&mut st.proto, now) {
                // PK_TYPE 1: a START (see the late rebind check below).
                tx_has_start |= dg.get(4).is_some_and(|b| b >> 4 == 1);
                if let Some(c) = st.capture.as_mut() {
                    c.sent(t.destination, dg);
                }
                // A priority-0 message that just arrived leaves now, with
                // only what was built before it (the scheduler puts it
                // first), not after up to a batch of bulk datagrams is
                // built and sealed behind it. Only when the last batch had
                // none: a class-0 bulk stream keeps its full GSO batches.
                let priority = is_priority_data(dg);
                if tx.len() >= TX_BATCH_DATAGRAMS || tx.bytes() >= TX_BATCH_BYTES {
                    more_to_send = true;
                    break;
                }
                if priority {
                    priority_this_batch = true;
                    if !priority_last_batch {
                        more_to_send = true;
                        break;
                    }
                }
            }
            priority_last_batch = priority_this_batch;
            st.datagrams_out += tx.len() as u64;
            accepted = dispatch_events(st, now, &mut upcalls, &mut wakes) || accepted_now;
            if let Some(k) = st.keylog.as_mut() {
                k.drain(&mut st.proto);
            }
            if (received > 0 || fired) && !st.tracking.is_empty() {
                settle_tracked(st);
            }
            // Senders waiting for buffer space: only acknowledgements
            // (datagrams read) and timers (expiring messages) free some,
            // so only such a turn looks at them — not every turn, and only
            // those waiters (not every waiter of every connection: with
            // many connections that is a thundering herd; nor a walk over
            // every connection to find them: `send_waiters`). The pool's
            // `Writable` wakes its waiters in `dispatch_events`.
            if (received > 0 || fired) && !st.send_waiters.is_empty() {
                wake_send_waiters(st, &mut wakes);
            }
            timer = st.proto.poll_timeout();
            // A group's eviction deadline.
            for g in st.groups.values() {
                if let Some(t) = g.sender.poll_timeout() {
                    timer = Some(timer.map_or(t, |x| x.min(t)));
                }
            }
            if st.users == 0 {
                if shutdown_at.is_none() {
                    for h in st.proto.handles() {
                        st.proto.close(h, now);
                    }
                    shutdown_at = Some(now + SHUTDOWN_GRACE);
                    // Send the ENDs the closes just queued.
                    more_to_send = true;
                }
                let expired = shutdown_at.is_some_and(|t| now >= t);
                if (st.proto.connection_count() == 0 && tx.is_empty()) || expired {
                    tracing::debug!("endpoint dropped: the driver stops");
                    st.stopped = Some("endpoint dropped".into());
                    break;
                }
                // Wake up at the end of the grace period at the latest.
                timer = timer.min(shutdown_at).or(shutdown_at);
            }
        }
        wakes.wake();
        if accepted {
            shared.incoming.notify_waiters();
        }
        run_upcalls(&shared, &mut upcalls);
        if !tx.is_empty() {
            // Checked again here: an application that rebinds and then
            // connects must never see its START leave from the old socket.
            // A batch without a START was sealed for the old path (its
            // connection IDs: a rotation happens at the switch), so it
            // leaves from the old socket first — on the new path it
            // would link the two (docs/security.md, "Connection-ID
            // rotation").
            let pending = shared
                .rebind
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some();
            if pending && !tx_has_start {
                if let Err(e) = io.send_batch(&tx).await {
                    tracing::debug!(error = %e, "send on the old socket failed before a rebind");
                }
                tx.clear();
            }
            take_rebind(&shared, &mut io);
            if tx.is_empty() {
                continue;
            }
            if let Err(e) = io.send_batch(&tx).await {
                tracing::warn!(error = %e, "send failed: the endpoint's driver stops");
                shared.lock().stopped = Some(e.to_string());
                break;
            }
        }
    }
    // A socket handed over by a late `rebind` goes with the driver.
    drop(
        shared
            .rebind
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(),
    );
    if let Some(c) = shared.lock().capture.as_mut() {
        c.flush();
    }
    // Wake everyone so nothing waits on a dead driver.
    wake_all(&shared);
}

#[cfg(test)]
mod tests {
    use super::{is_priority_data, nap_allowed, PRIORITY_NAP_HOLD};
    use peregrine_proto::wire::header::{HeaderRepr, HEADER_LEN};
    use peregrine_proto::wire::packet_type::PacketType;
    use peregrine_proto::Time;
    use std::time::Duration;

    fn header(t: PacketType, pri: u8) -> Vec<u8> {
        let mut h = HeaderRepr::new(t);
        h.pri = pri;
        let mut buf = vec![0u8; HEADER_LEN + 4];
        h.emit(&mut buf).expect("a valid header");
        buf
    }

    #[test]
    fn only_class_0_data_is_priority_data() {
        assert!(is_priority_data(&header(PacketType::Data, 0)));
        for pri in 1..=3 {
            assert!(!is_priority_data(&header(PacketType::Data, pri)));
        }
        assert!(!is_priority_data(&header(PacketType::Ack, 0)));
        assert!(!is_priority_data(&header(PacketType::Start, 0)));
        // Too short to hold a header: not a priority datagram (no panic).
        assert!(!is_priority_data(
            &header(PacketType::Data, 0)[..HEADER_LEN - 1]
        ));
    }

    /// The receive nap is held off for a second after priority-0 data,
    /// and allowed before any arrived and once the second has passed.
    #[test]
    fn no_nap_within_the_hold_after_priority_data() {
        let t0 = Time::from_millis(5_000);
        assert!(nap_allowed(None, t0));
        assert!(!nap_allowed(Some(t0), t0));
        let just_inside = t0 + PRIORITY_NAP_HOLD - Duration::from_nanos(1);
        assert!(!nap_allowed(Some(t0), just_inside));
        assert!(nap_allowed(Some(t0), t0 + PRIORITY_NAP_HOLD));
        // A clock read before the arrival (another thread's `now`) is
        // within the hold, not a wrap-around.
        assert!(!nap_allowed(Some(t0), t0 - Duration::from_millis(1)));
    }
}
