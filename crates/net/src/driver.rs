//! # The driver: one tokio task per endpoint
//!
//! The task owns the socket and runs the sans-IO call order of
//! `peregrine_proto::Endpoint` (handle → poll_transmit → poll_event →
//! poll_timeout) whenever a datagram batch arrives, the timer fires or an
//! application call wakes it. The protocol state sits behind one mutex in
//! [`Shared`]; application calls lock it briefly, change the core and
//! notify the driver, which does all the sending. The lock is never held
//! across a socket call or an `.await`.
//!
//! Delivery: each `MessageReceived` either goes to the connection's inbox
//! (read with `Connection::recv`) or, when the application registered a
//! callback for its stream, is handed to that callback by this task right
//! after the lock is released — seed 003 §III-E's up-call, with no task
//! hop. An inbox that grows past the connection's receive buffer holds the
//! stream in the core (`hold_stream`), so the peer's window closes instead
//! of memory growing.

use crate::socket::{RxBuffers, TxBatch, UdpIo};
use bytes::Bytes;
use peregrine_proto::{
    CloseReason, ConnectionHandle, Endpoint as ProtoEndpoint, Event, SansIo, Time,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Datagrams collected under one lock before they are sent.
const TX_BATCH_DATAGRAMS: usize = 128;
/// Receive batches handled before the driver looks at its other work.
const RX_BATCHES_PER_TURN: usize = 8;
/// Timers closer than this are not slept on (tokio's timer wheel has a
/// 1 ms resolution) but polled by yielding.
const SPIN_BELOW: Duration = Duration::from_millis(1);
/// How long a dropped endpoint keeps driving graceful closes.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A message callback: `(stream, bytes)`, run inside the driver task.
pub(crate) type Callback = Box<dyn FnMut(u16, Bytes) + Send>;

/// What the runtime keeps per connection beside the core's state.
#[derive(Debug)]
pub(crate) struct ConnState {
    /// Messages delivered and not yet read by `recv`.
    pub(crate) inbox: VecDeque<(u16, Bytes)>,
    /// Bytes in `inbox`.
    pub(crate) inbox_bytes: usize,
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
    /// A `send` waits for buffer space (woken after every driver turn).
    pub(crate) send_waiting: bool,
    /// Wakes `recv`, `send`, `connect` and `closed` waiters.
    pub(crate) changed: Arc<Notify>,
}

impl ConnState {
    pub(crate) fn new(inbox_limit: usize) -> ConnState {
        ConnState {
            inbox: VecDeque::new(),
            inbox_bytes: 0,
            inbox_limit,
            held: BTreeSet::new(),
            callbacks: BTreeSet::new(),
            connected: false,
            peer_closed: false,
            closed: None,
            send_waiting: false,
            released: false,
            changed: Arc::new(Notify::new()),
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
    /// Receive-buffer size of accepted connections (their inbox limit).
    pub(crate) server_inbox_limit: usize,
    /// Application handles (endpoints and connections) alive; at zero the
    /// driver closes what is left and stops.
    pub(crate) users: usize,
    /// The driver stopped (socket error or shutdown).
    pub(crate) stopped: Option<String>,
    /// Datagrams the socket layer received.
    pub(crate) datagrams_in: u64,
    /// Datagrams the socket layer sent.
    pub(crate) datagrams_out: u64,
}

/// The state shared by the driver and every application handle.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// Wakes the driver after an application call.
    pub(crate) wake: Notify,
    /// Wakes `accept` waiters.
    pub(crate) incoming: Notify,
    /// Callbacks by (connection, stream), outside the state lock so a
    /// callback may call back into its connection.
    pub(crate) callbacks: Mutex<BTreeMap<(ConnectionHandle, u16), Callback>>,
    /// The time origin of this endpoint.
    pub(crate) epoch: Instant,
    /// A new socket the driver switches to at its next turn (`rebind`).
    pub(crate) rebind: Mutex<Option<UdpIo>>,
}

impl Shared {
    /// Lock the state. A panic while the lock was held (a bug) poisons it;
    /// the state is still consistent for the core (every call completes
    /// or does nothing), so the runtime keeps going rather than cascading.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
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
fn dispatch_events(st: &mut State, upcalls: &mut Vec<(ConnectionHandle, u16, Bytes)>) -> bool {
    let mut accepted = false;
    while let Some((h, ev)) = st.proto.poll_event() {
        let outgoing_known = st.conns.contains_key(&h);
        match ev {
            Event::Connected => {
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
                let bytes = Bytes::from(bytes);
                if c.callbacks.contains(&stream) {
                    upcalls.push((h, stream, bytes));
                    continue;
                }
                c.inbox_bytes += bytes.len();
                c.inbox.push_back((stream, bytes));
                if c.inbox_bytes > c.inbox_limit && c.held.insert(stream) {
                    st.proto.hold_stream(h, stream, true);
                }
                c.changed.notify_waiters();
            }
            Event::PeerClosed => {
                if let Some(c) = st.conns.get_mut(&h) {
                    c.peer_closed = true;
                    c.changed.notify_waiters();
                }
            }
            Event::Closed { reason, .. } => {
                if let Some(c) = st.conns.get_mut(&h) {
                    c.closed = Some(reason);
                    c.changed.notify_waiters();
                    if c.released {
                        st.conns.remove(&h);
                    }
                }
            }
            Event::Writable => {
                if let Some(c) = st.conns.get_mut(&h) {
                    c.send_waiting = false;
                    c.changed.notify_waiters();
                }
            }
            // Migration and multicast membership are visible in the stats
            // and through the proto endpoint's group API; nothing to wake.
            Event::SecurityViolation { .. }
            | Event::MessageAbandoned { .. }
            | Event::NetworkReset
            | Event::PathMigrated { .. }
            | Event::GroupJoined { .. }
            | Event::GroupLeft { .. }
            | Event::PeerJoined { .. }
            | Event::PeerLeft { .. } => {}
        }
    }
    accepted
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
    }
}

/// Read every datagram batch already queued on the socket (at most
/// [`RX_BATCHES_PER_TURN`]) into the core, without waiting.
fn receive(shared: &Shared, io: &UdpIo, rx: &mut RxBuffers) {
    for _ in 0..RX_BATCHES_PER_TURN {
        let mut st = shared.lock();
        let now = shared.now();
        let st = &mut *st;
        let mut n = 0u64;
        let r = io.recv_batch(rx, |from, ecn, dg| {
            st.proto.handle_datagram(now, from, ecn, dg);
            n += 1;
        });
        st.datagrams_in += n;
        match r {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            // ICMP errors (port unreachable) surface here on some
            // platforms: not fatal to the endpoint.
            Err(_) => break,
        }
    }
}

/// The driver task. Runs until every application handle is gone (then
/// closes what is left, for at most [`SHUTDOWN_GRACE`]) or the socket fails.
pub(crate) async fn run(shared: Arc<Shared>, mut io: UdpIo) {
    let mut rx = RxBuffers::new();
    let mut tx = TxBatch::default();
    let mut buf = Vec::with_capacity(2048);
    let mut upcalls = Vec::new();
    let mut timer: Option<Time> = None;
    let mut more_to_send = false;
    let mut shutdown_at: Option<Time> = None;
    loop {
        take_rebind(&shared, &mut io);
        let now = shared.now();
        let soon = timer.is_some_and(|t| t.saturating_duration_since(now) < SPIN_BELOW);
        if more_to_send || soon {
            // More to send, or a timer (a pacing gap, typically) closer
            // than the timer wheel's 1 ms resolution: let other tasks run,
            // read what has arrived without waiting, and go on — sleeping
            // would stretch every pacing gap to a millisecond.
            tokio::task::yield_now().await;
            receive(&shared, &io, &mut rx);
        } else {
            let sleep_until = timer.map(|t| shared.instant(t));
            tokio::select! {
                biased;
                r = io.readable() => {
                    if let Err(e) = r {
                        shared.lock().stopped = Some(e.to_string());
                        break;
                    }
                    receive(&shared, &io, &mut rx);
                }
                _ = tokio::time::sleep_until(sleep_until.unwrap_or_else(Instant::now)), if sleep_until.is_some() => {}
                _ = shared.wake.notified() => {}
            }
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
            if timer.is_some_and(|t| t <= now) {
                st.proto.handle_timeout(now);
            }
            tx.clear();
            more_to_send = false;
            while let Some(t) = st.proto.poll_transmit(now, &mut buf) {
                tx.push(t.destination, t.ecn, &buf[..t.size]);
                if tx.len() >= TX_BATCH_DATAGRAMS {
                    more_to_send = true;
                    break;
                }
            }
            st.datagrams_out += tx.len() as u64;
            accepted = dispatch_events(st, &mut upcalls);
            // Senders waiting for buffer space: any turn may have freed
            // some. Only those are woken (not every waiter of every
            // connection: with many connections that is a thundering herd).
            for c in st.conns.values_mut() {
                if c.send_waiting {
                    c.send_waiting = false;
                    c.changed.notify_waiters();
                }
            }
            timer = st.proto.poll_timeout();
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
                    st.stopped = Some("endpoint dropped".into());
                    break;
                }
                // Wake up at the end of the grace period at the latest.
                timer = timer.min(shutdown_at).or(shutdown_at);
            }
        }
        if accepted {
            shared.incoming.notify_waiters();
        }
        if !upcalls.is_empty() {
            let mut cbs = shared.callbacks.lock().unwrap_or_else(|p| p.into_inner());
            for (h, stream, bytes) in upcalls.drain(..) {
                if let Some(cb) = cbs.get_mut(&(h, stream)) {
                    cb(stream, bytes);
                }
            }
        }
        if !tx.is_empty() {
            // Checked again here: an application that rebinds and then
            // connects must never see its START leave from the old socket.
            take_rebind(&shared, &mut io);
            if let Err(e) = io.send_batch(&tx).await {
                shared.lock().stopped = Some(e.to_string());
                break;
            }
        }
    }
    // Wake everyone so nothing waits on a dead driver.
    let st = shared.lock();
    for c in st.conns.values() {
        c.changed.notify_waiters();
    }
    drop(st);
    shared.incoming.notify_waiters();
}
