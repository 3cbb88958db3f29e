//! # A connected endpoint pair under attack, with invariant checks
//!
//! [`World`] holds a client and a server [`Endpoint`] that have completed a
//! real handshake in one of the [`MODES`] and exchanged a few messages;
//! every datagram they sent is captured. The network between them is the
//! fuzzer's: genuine datagrams wait in an in-flight queue until an
//! operation delivers, drops or reorders them, and the attacker injects
//! raw bytes, mutated / truncated / replayed captures and well-formed
//! forgeries from the genuine or other addresses ([`Op`]). Time moves
//! only when an operation says so, firing every timer on the way.
//!
//! After every step the world checks what must hold for any input (a
//! violation panics, which libFuzzer reports as a crash):
//! * no timer spin: a timer that fires, sends nothing and stays due is not
//!   fired more than [`SPIN_LIMIT`] times at one instant;
//! * endpoint counters never decrease, `datagrams_received` equals the
//!   datagrams handed in, the buffer pool stays under its ceiling, the
//!   server holds at most [`MAX_SERVER_CONNECTIONS`];
//! * per-connection counters never decrease;
//! * per connection and stream, delivered message numbers strictly rise;
//! * protected modes only: every message delivered on the genuine pair is
//!   exactly the next one the peer's application sent on that stream (same
//!   bytes, in order, none skipped); every injected datagram raises exactly
//!   one drop counter (`decode_errors`, `unknown_connection`,
//!   `auth_failures`, `replays_dropped`) unless it is a START / REJECT or
//!   the first copy of a genuine datagram that side never got; no other
//!   connection delivers anything; the genuine pair never closes as
//!   `Remote` / `Reset` / `PeerClosed` unless the peer's application
//!   closed / aborted, and never as `Rejected` or `ProtocolViolation`.
//!
//! Insecure mode makes no authenticity promise (SYNC_NO and the checksum
//! are visible to an on-path attacker), so there only the structural
//! invariants apply.

use crate::checks::{counters, drops, endpoint_counters, fingerprint, is_handshake};
pub use crate::forge::forge;
pub use crate::modes::{Mode, MODES};
use crate::ops::{Op, Script, MAX_SEND_LEN};
use peregrine_proto::endpoint::EndpointStats;
use peregrine_proto::vtime::{self, EndpointTimer, EventQueue, Firing, Host, RunLimits};
use peregrine_proto::{
    CloseReason, ConnectionConfig, ConnectionHandle, ConnectionState, Endpoint, EndpointConfig,
    Event, SansIo, Time,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::SocketAddr;

/// The client's index in [`World`]'s sides.
pub const CLIENT: usize = 0;
/// The server's index.
pub const SERVER: usize = 1;
/// The server's `max_connections` (small, so forged STARTs reach it).
pub const MAX_SERVER_CONNECTIONS: usize = 4;
/// Each endpoint's buffer-pool ceiling, bytes (small, so `WouldBlock` happens).
pub const MEMORY_CEILING: usize = 256 * 1024;
/// A timer may fire this often at one instant without sending anything.
pub const SPIN_LIMIT: u32 = 1_000;
/// Captured datagrams kept (the oldest are kept; later ones are not captured).
const MAX_CAPTURED: usize = 4_096;
/// Genuine datagrams in flight at most (older ones are lost).
const MAX_IN_FLIGHT: usize = 1_024;
/// Timer instants one `Advance` visits at most.
const MAX_ADVANCE_STEPS: u32 = 20_000;

/// A datagram on the wire: its receiving side, its source, its bytes.
#[derive(Clone, Debug)]
pub struct Flight {
    /// [`CLIENT`] or [`SERVER`].
    pub to: usize,
    /// Where it comes from.
    pub from: SocketAddr,
    /// The datagram.
    pub bytes: Vec<u8>,
}

struct Side {
    ep: Endpoint,
    addr: SocketAddr,
    /// The genuine connection.
    conn: Option<ConnectionHandle>,
    /// Messages the application sent on `conn`, per stream, by number.
    sent: BTreeMap<u16, Vec<Vec<u8>>>,
    /// Per connection and stream: messages delivered and the last number.
    delivered: BTreeMap<(ConnectionHandle, u16), (u32, u32)>,
    datagrams_in: u64,
    close_called: bool,
    abort_called: bool,
    connected: bool,
    /// The genuine connection has ended (a `Closed` event, any reason):
    /// its state is gone, so the peer's next packet is answered with a
    /// stateless reset.
    ended: bool,
    last_endpoint: [u64; 12],
    last_conn: BTreeMap<ConnectionHandle, [u64; 12]>,
    max_connections: usize,
}

impl Side {
    fn new(ep: Endpoint, addr: SocketAddr, max_connections: usize) -> Side {
        Side {
            ep,
            addr,
            conn: None,
            sent: BTreeMap::new(),
            delivered: BTreeMap::new(),
            datagrams_in: 0,
            close_called: false,
            abort_called: false,
            connected: false,
            ended: false,
            last_endpoint: [0; 12],
            last_conn: BTreeMap::new(),
            max_connections,
        }
    }
}

/// The bytes of message `number` of `stream` sent by `side`: distinct per
/// message, so a mix-up shows.
pub fn message(side: usize, stream: u16, number: usize, len: usize) -> Vec<u8> {
    let mut x = (side as u64) << 48 ^ u64::from(stream) << 32 ^ number as u64 ^ 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A client and a server endpoint joined by an attacker-controlled network.
pub struct World {
    now: Time,
    sides: [Side; 2],
    in_flight: VecDeque<Flight>,
    captured: Vec<Flight>,
    secure: bool,
    buf: Vec<u8>,
    /// (side, fingerprint) of every genuine datagram sent to that side.
    genuine: BTreeSet<(usize, u64)>,
    /// (side, fingerprint) of every datagram handed to that side.
    handed: BTreeSet<(usize, u64)>,
}

impl World {
    /// A pair in mode `MODES[mode % MODES.len()]`, connected by a real
    /// handshake, after the client sent two messages and the server one,
    /// all delivered over a perfect network.
    ///
    /// # Panics
    /// If the setup does not connect (a bug, not an input problem).
    pub fn connected(mode: u8) -> World {
        let mode = &MODES[usize::from(mode) % MODES.len()];
        let (client_sec, server_sec) = (mode.security)();
        let client_cfg = ConnectionConfig {
            security: client_sec,
            ..ConnectionConfig::default()
        };
        let server_cfg = ConnectionConfig {
            security: server_sec.clone(),
            ..ConnectionConfig::default()
        };
        let ep_cfg = |server: Option<ConnectionConfig>, max_connections| EndpointConfig {
            server,
            max_connections,
            memory_ceiling_bytes: MEMORY_CEILING,
            ..EndpointConfig::default()
        };
        let client_addr = SocketAddr::from(([10, 0, 0, 1], 4000));
        let server_addr = SocketAddr::from(([10, 0, 0, 2], 4000));
        let mut w = World {
            now: Time::ZERO,
            sides: [
                Side::new(Endpoint::new(ep_cfg(None, 1024), 11), client_addr, 1024),
                Side::new(
                    Endpoint::new(ep_cfg(Some(server_cfg), MAX_SERVER_CONNECTIONS), 22),
                    server_addr,
                    MAX_SERVER_CONNECTIONS,
                ),
            ],
            in_flight: VecDeque::new(),
            captured: Vec::new(),
            secure: server_sec.is_some(),
            buf: Vec::with_capacity(2048),
            genuine: BTreeSet::new(),
            handed: BTreeSet::new(),
        };
        let conn = w.sides[CLIENT]
            .ep
            .connect(Time::ZERO, server_addr, client_cfg);
        // Invariant: the configuration is the validated default plus a
        // security mode from MODES, and the endpoint is empty.
        w.sides[CLIENT].conn = Some(conn.expect("setup: connect"));
        w.send(CLIENT, 0, 300);
        w.send(CLIENT, 1, 2_000);
        w.settle();
        for _ in 0..200 {
            if w.sides[SERVER].conn.is_some() && w.sides[SERVER].sent.is_empty() {
                w.send(SERVER, 0, 100);
            }
            let done = w.sides.iter().all(|s| s.connected)
                && w.sides[SERVER].delivered.len() == 2
                && w.sides[CLIENT].delivered.len() == 1;
            if done && w.in_flight.is_empty() {
                return w;
            }
            if w.in_flight.is_empty() {
                w.advance(50);
            } else {
                w.deliver(w.in_flight.len());
            }
        }
        panic!("setup: the {} pair did not connect", mode.name);
    }

    /// Runs a whole fuzz input: setup, then every operation with the
    /// invariant checks after each.
    pub fn run(data: &[u8]) -> World {
        let script = Script::decode(data);
        let mut w = World::connected(script.mode);
        for op in &script.ops {
            w.apply(op);
        }
        w
    }

    /// Every datagram the endpoints sent so far (what an on-path attacker saw).
    pub fn captured(&self) -> &[Flight] {
        &self.captured
    }

    /// Messages delivered so far on each side's genuine connection.
    pub fn delivered_on_pair(&self, side: usize) -> u32 {
        let s = &self.sides[side];
        s.delivered
            .iter()
            .filter(|((h, _), _)| Some(*h) == s.conn)
            .map(|(_, (n, _))| n)
            .sum()
    }

    /// The life-cycle state of a side's genuine connection (`None` once
    /// it is released).
    pub fn pair_state(&self, side: usize) -> Option<ConnectionState> {
        let s = &self.sides[side];
        s.conn.and_then(|c| s.ep.state(c))
    }

    /// A side's endpoint counters.
    pub fn endpoint_stats(&self, side: usize) -> &EndpointStats {
        self.sides[side].ep.endpoint_stats()
    }

    /// The server's held connections.
    pub fn server_connections(&self) -> usize {
        self.sides[SERVER].ep.connection_count()
    }

    /// Applies one operation, then settles and checks the invariants.
    pub fn apply(&mut self, op: &Op) {
        match op {
            Op::Raw { to, from, bytes } => {
                let to = usize::from(*to % 2);
                let from = self.source_addr(to, *from);
                self.attack(to, from, bytes);
            }
            Op::Mutated {
                index,
                from,
                flips,
                truncate,
            } => {
                let Some(f) = self.capture(*index) else {
                    return;
                };
                let mut bytes = f.bytes;
                if bytes.is_empty() {
                    return;
                }
                for (pos, xor) in flips {
                    let i = usize::from(*pos) % bytes.len();
                    bytes[i] ^= xor;
                }
                if *truncate != 0 {
                    bytes.truncate(usize::from(*truncate) % bytes.len());
                }
                let from = self.source_addr(f.to, *from);
                self.attack(f.to, from, &bytes);
            }
            Op::Replay { index, from } => {
                let Some(f) = self.capture(*index) else {
                    return;
                };
                let from = self.source_addr(f.to, *from);
                self.attack(f.to, from, &f.bytes);
            }
            Op::Forge {
                index,
                kind,
                from,
                number,
            } => {
                let Some(f) = self.capture(*index) else {
                    return;
                };
                let Some(bytes) = forge(&f.bytes, *kind, *number, self.secure) else {
                    return;
                };
                let from = self.source_addr(f.to, *from);
                self.attack(f.to, from, &bytes);
            }
            Op::Deliver { count } => self.deliver(usize::from(*count)),
            Op::DropNext => {
                self.in_flight.pop_front();
            }
            Op::Swap => {
                if self.in_flight.len() >= 2 {
                    self.in_flight.swap(0, 1);
                }
            }
            Op::Advance { ms } => self.advance(u64::from(*ms)),
            Op::Send { side, stream, len } => {
                let len = usize::from(*len) % (MAX_SEND_LEN + 1);
                self.send(usize::from(*side % 2), u16::from(*stream % 4), len);
            }
            Op::Close { side } => {
                let s = &mut self.sides[usize::from(*side % 2)];
                if let Some(c) = s.conn.filter(|c| s.ep.state(*c).is_some()) {
                    s.close_called = true;
                    s.ep.close(c, self.now);
                }
            }
            Op::Abort { side } => {
                let s = &mut self.sides[usize::from(*side % 2)];
                if let Some(c) = s.conn.filter(|c| s.ep.state(*c).is_some()) {
                    s.abort_called = true;
                    s.ep.abort(c, self.now);
                }
            }
        }
        self.settle();
    }

    fn capture(&self, index: u16) -> Option<Flight> {
        if self.captured.is_empty() {
            return None;
        }
        Some(self.captured[usize::from(index) % self.captured.len()].clone())
    }

    /// The source of an injected datagram to side `to`: mostly the genuine
    /// peer's address, else the peer's host on another port, else a stranger.
    fn source_addr(&self, to: usize, sel: u8) -> SocketAddr {
        let peer = self.sides[1 - to].addr;
        match sel % 4 {
            0 | 1 => peer,
            2 => SocketAddr::new(peer.ip(), peer.port().wrapping_add(1)),
            _ => SocketAddr::from(([192, 0, 2, sel / 4 % 8], 4000 + u16::from(sel / 32))),
        }
    }

    fn inject(&mut self, to: usize, from: SocketAddr, bytes: &[u8]) {
        let now = self.now;
        self.handed.insert((to, fingerprint(bytes)));
        let s = &mut self.sides[to];
        s.datagrams_in += 1;
        // The endpoint opens in place: it gets its own copy.
        s.ep.handle_datagram(now, from, None, &mut bytes.to_vec());
        self.pump(to);
    }

    /// An attacker's datagram. In a protected mode it must be dropped and
    /// counted exactly once (one of the drop counters rises by one) unless
    /// it is a handshake packet (in the clear) or the first copy of a
    /// genuine datagram this side was never handed (an early or
    /// resurrected delivery, not an attack).
    fn attack(&mut self, to: usize, from: SocketAddr, bytes: &[u8]) {
        let key = (to, fingerprint(bytes));
        let first_genuine = self.genuine.contains(&key) && !self.handed.contains(&key);
        let checked = self.secure && !first_genuine && !is_handshake(bytes);
        let before = drops(self.sides[to].ep.endpoint_stats());
        self.inject(to, from, bytes);
        let after = drops(self.sides[to].ep.endpoint_stats());
        assert!(
            !checked || after == before + 1,
            "side {to}: an injected datagram of {} bytes raised the drop counters by {} (expected 1)",
            bytes.len(),
            after - before
        );
    }

    fn deliver(&mut self, count: usize) {
        for _ in 0..count {
            let Some(f) = self.in_flight.pop_front() else {
                return;
            };
            self.inject(f.to, f.from, &f.bytes);
        }
    }

    fn send(&mut self, side: usize, stream: u16, len: usize) {
        let now = self.now;
        let s = &mut self.sides[side];
        let Some(conn) = s.conn else { return };
        let number = s.sent.get(&stream).map_or(0, Vec::len);
        let bytes = message(side, stream, number, len);
        if let Ok(id) = s.ep.send_message(conn, now, stream, &bytes) {
            assert_eq!(
                (id.stream, id.number as usize),
                (stream, number),
                "message ids are per stream, from 0, consecutive"
            );
            s.sent.entry(stream).or_default().push(bytes);
        }
        self.pump(side);
    }

    /// Lets `ms` milliseconds pass, visiting every timer instant on the
    /// way (at most [`MAX_ADVANCE_STEPS`] of them) through the project's
    /// one host loop ([`vtime::run`]).
    fn advance(&mut self, ms: u64) {
        let target = Time::from_nanos(self.now.as_nanos().saturating_add(ms * 1_000_000));
        let mut clock = Clock {
            world: self,
            queue: EventQueue::new(),
            timers: [EndpointTimer::new(); 2],
            steps: 0,
        };
        clock.arm();
        // The step cap ends the advance (`done`); no livelock limit here:
        // `settle` catches a spinning timer itself.
        let limits = RunLimits::until(target, u64::MAX);
        match vtime::run(&mut clock, limits, &mut |_, _| {}) {
            Ok(_) => {}
            Err(never) => match never {},
        }
        self.now = self.now.max(target);
        self.settle();
    }

    /// Sends everything side `side` wants sent and reads its events.
    fn pump(&mut self, side: usize) {
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(t) = self.sides[side].ep.poll_transmit(self.now, &mut buf) {
            let bytes = buf[..t.size].to_vec();
            let peer = 1 - side;
            if t.destination == self.sides[peer].addr {
                let f = Flight {
                    to: peer,
                    from: self.sides[side].addr,
                    bytes,
                };
                self.genuine.insert((peer, fingerprint(&f.bytes)));
                if self.captured.len() < MAX_CAPTURED {
                    self.captured.push(f.clone());
                }
                if self.in_flight.len() >= MAX_IN_FLIGHT {
                    self.in_flight.pop_front();
                }
                self.in_flight.push_back(f);
            }
        }
        self.buf = buf;
        self.read_events(side);
    }

    /// Fires every due timer of both sides, then checks the invariants.
    fn settle(&mut self) {
        for side in [CLIENT, SERVER] {
            self.pump(side);
            let mut spins = 0u32;
            while let Some(t) = self.sides[side].ep.poll_timeout() {
                if t > self.now {
                    break;
                }
                let before = self.captured.len() + self.in_flight.len();
                self.sides[side].ep.handle_timeout(self.now);
                self.pump(side);
                let sent = self.captured.len() + self.in_flight.len() != before;
                spins = if sent { 0 } else { spins + 1 };
                assert!(
                    spins <= SPIN_LIMIT,
                    "timer spin: side {side} fired {spins} times at {:?} without progress",
                    self.now
                );
            }
        }
        for side in [CLIENT, SERVER] {
            self.check(side);
        }
    }

    fn read_events(&mut self, side: usize) {
        while let Some((handle, ev)) = self.sides[side].ep.poll_event() {
            self.on_event(side, handle, ev);
        }
    }

    fn on_event(&mut self, side: usize, handle: ConnectionHandle, ev: Event) {
        let secure = self.secure;
        let (me, peer) = if side == CLIENT {
            let [a, b] = &mut self.sides;
            (a, &*b)
        } else {
            let [a, b] = &mut self.sides;
            (b, &*a)
        };
        if me.conn.is_none() {
            // The server adopts the first connection it reports (setup).
            me.conn = Some(handle);
        }
        let genuine = me.conn == Some(handle);
        match ev {
            Event::Connected if genuine => me.connected = true,
            Event::MessageReceived { stream, id, bytes } => {
                assert_eq!(stream, id.stream, "event stream and id stream agree");
                let entry = me.delivered.entry((handle, stream)).or_insert((0, 0));
                assert!(
                    entry.0 == 0 || id.number > entry.1,
                    "side {side} {handle:?} stream {stream}: message {} delivered after {}",
                    id.number,
                    entry.1
                );
                if secure {
                    assert!(
                        genuine,
                        "side {side}: a message on a non-genuine connection"
                    );
                    let expected = peer.sent.get(&stream).and_then(|v| v.get(entry.0 as usize));
                    assert_eq!(
                        id.number, entry.0,
                        "side {side} stream {stream}: messages skipped"
                    );
                    assert!(
                        expected == Some(&bytes),
                        "side {side} stream {stream} #{}: delivered bytes are not what the peer sent",
                        id.number
                    );
                }
                *entry = (entry.0 + 1, id.number);
            }
            Event::PeerClosed if secure && genuine => {
                assert!(peer.close_called, "side {side}: PeerClosed without a close");
            }
            Event::Closed { reason, .. } if genuine => {
                me.ended = true;
                if secure {
                    check_close(side, me, peer, reason);
                }
            }
            _ => {}
        }
    }
}

/// What may end a genuine connection in a protected mode. Panics (a crash
/// for the fuzzer) on any other reason.
fn check_close(side: usize, me: &Side, peer: &Side, reason: CloseReason) {
    match reason {
                CloseReason::Remote => assert!(peer.close_called, "side {side}: Remote close"),
                // The peer aborted, or its side of the connection ended on
                // its own (silence: peer death, idle timeout) and forgot
                // the connection, so it answers our next packet with a
                // stateless reset (found by this target: the server gave
                // the client up after 3.2 s of dropped datagrams, the
                // client's keep-alive came 15 s later).
                CloseReason::Reset => assert!(
                    peer.abort_called || peer.ended,
                    "side {side}: Reset while the peer's connection lives"
                ),
                CloseReason::Local => assert!(me.close_called, "side {side}: Local close"),
                CloseReason::Aborted => assert!(me.abort_called, "side {side}: Aborted"),
                // No ICMP is ever handed in here: refused / unreachable
                // cannot end a genuine connection either.
                CloseReason::Rejected(_)
                | CloseReason::ProtocolViolation(_)
                | CloseReason::ConnectionRefused { .. }
                | CloseReason::HostUnreachable { .. }
                // The default AEAD limits (2^23 sealed, 2^36+ failed
                // openings per key) are out of a fuzz run's reach.
                | CloseReason::KeyLimit(_) => {
                    panic!("side {side}: genuine connection closed by {reason:?}")
                }
                // Silence (the fuzzer drops datagrams): the idle timeout
                // or, with data outstanding, the peer-death rule.
                CloseReason::IdleTimeout
                | CloseReason::HandshakeTimeout
                | CloseReason::PeerDead { .. } => {}
    }
}

impl World {
    fn check(&mut self, side: usize) {
        let s = &mut self.sides[side];
        let now = endpoint_counters(&s.ep);
        for (i, (a, b)) in s.last_endpoint.iter().zip(now.iter()).enumerate() {
            assert!(
                b >= a,
                "side {side}: endpoint counter #{i} fell from {a} to {b}"
            );
        }
        s.last_endpoint = now;
        let st = s.ep.endpoint_stats();
        assert_eq!(
            st.datagrams_received, s.datagrams_in,
            "side {side}: datagrams_received"
        );
        assert!(
            st.pool_bytes_in_use <= st.pool_ceiling_bytes
                && st.pool_peak_bytes <= st.pool_ceiling_bytes,
            "side {side}: pool over its ceiling: {st:?}"
        );
        assert!(
            s.ep.connection_count() <= s.max_connections,
            "side {side}: {} connections",
            s.ep.connection_count()
        );
        let mut seen = BTreeMap::new();
        for h in s.ep.handles() {
            let Some(stats) = s.ep.stats(h) else { continue };
            let c = counters(&stats);
            if let Some(last) = s.last_conn.get(&h) {
                for (i, (a, b)) in last.iter().zip(c.iter()).enumerate() {
                    assert!(
                        b >= a,
                        "side {side} {h:?}: counter #{i} fell from {a} to {b}"
                    );
                }
            }
            seen.insert(h, c);
        }
        s.last_conn = seen;
    }
}

/// The timers of both sides on the one event queue, while
/// [`World::advance`] moves time.
struct Clock<'a> {
    world: &'a mut World,
    queue: EventQueue<usize>,
    timers: [EndpointTimer; 2],
    steps: u32,
}

impl Clock<'_> {
    /// Queues each side's timer as it now stands.
    fn arm(&mut self) {
        let now = self.world.now;
        for side in [CLIENT, SERVER] {
            let want = self.world.sides[side].ep.poll_timeout();
            if let Some(at) = self.timers[side].arm(want, now) {
                self.queue.push(at, side);
            }
        }
    }
}

impl Host for Clock<'_> {
    type Event = usize;
    type Error = std::convert::Infallible;

    fn queue(&mut self) -> &mut EventQueue<usize> {
        &mut self.queue
    }

    fn livelock(&self, _: Time, _: u64) -> Self::Error {
        unreachable!("advance runs without a livelock limit")
    }

    /// A side's timer instant: the world moves there and settles (both
    /// sides fire what is due), then both timers are re-queued.
    fn handle(&mut self, at: Time, side: usize) -> Result<(), Self::Error> {
        match self.timers[side].fire(at) {
            Firing::Due => {
                self.steps += 1;
                self.world.now = self.world.now.max(at);
                self.world.settle();
            }
            Firing::Later(t) => self.queue.push(t, side),
            Firing::Stale => {}
        }
        self.arm();
        Ok(())
    }

    fn done(&self) -> bool {
        self.steps >= MAX_ADVANCE_STEPS
    }
}
