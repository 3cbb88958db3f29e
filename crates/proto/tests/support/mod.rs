//! An application around an [`Endpoint`], for driving real connections
//! through the impairment [`Harness`](peregrine_proto::harness::Harness):
//! it queues messages and hands them to `send_message` as the send buffer
//! allows, closes once everything is handed over (if asked), and records
//! every event with the virtual time it was read.
//!
//! Shared by `tests/reliability.rs`, `tests/transfer.rs` and
//! `benches/throughput.rs`; each uses a subset, hence the `dead_code`
//! allowance.
#![allow(dead_code)]

use peregrine_proto::{
    CloseReason, ConnectionConfig, ConnectionHandle, EcnCodepoint, Endpoint, EndpointConfig, Event,
    MessageId, SansIo, SendError, Time, Transmit,
};
use std::collections::VecDeque;
use std::net::SocketAddr;

/// Client and server addresses.
pub const CLIENT: u8 = 1;
/// The server's host byte.
pub const SERVER: u8 = 2;

/// `10.0.0.n:4000`.
pub fn addr(n: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, n], 4000))
}

/// An endpoint with an application on top.
pub struct App {
    /// The endpoint (the thing under test).
    pub ep: Endpoint,
    /// The connection this application uses: set by [`App::connect`], or
    /// by the first event of an accepted connection.
    pub conn: Option<ConnectionHandle>,
    /// Messages not yet accepted by `send_message`.
    pub outbox: VecDeque<Vec<u8>>,
    /// Messages accepted by `send_message`, in order, with their ids.
    pub sent: Vec<(MessageId, Vec<u8>)>,
    /// Call `close` once the outbox is empty and the connection is up.
    pub close_when_sent: bool,
    /// `close` was called.
    pub close_called: bool,
    /// Every event read, with the time it was read.
    pub events: Vec<(Time, Event)>,
    /// Keep only message ids and lengths of received messages (large
    /// transfers), not their bytes.
    pub keep_bytes: bool,
    /// Messages received: (time, id, bytes — empty unless `keep_bytes`).
    pub received: Vec<(Time, MessageId, Vec<u8>)>,
    /// A message whose id or content was wrong (checked on arrival when
    /// `keep_bytes` is off, against [`App::expect`]).
    pub expect: Option<fn(MessageId, &[u8]) -> bool>,
    /// Messages that failed `expect`.
    pub bad_messages: u64,
    /// `send_message` errors other than `BufferFull` and `WouldBlock`
    /// (never expected).
    pub send_errors: Vec<SendError>,
    /// `send_message` refusals with `WouldBlock` (the endpoint's pool was
    /// full; the message stays in the outbox until `Writable`).
    pub would_block: u64,
    /// When `Some`, every datagram this endpoint sends is recorded here:
    /// (time, destination, bytes) — what an on-path attacker could copy.
    pub tap: Option<Vec<(Time, SocketAddr, Vec<u8>)>>,
    now: Time,
}

impl App {
    /// An application on an endpoint seeded with `seed`.
    pub fn new(config: EndpointConfig, seed: u64) -> App {
        App {
            ep: Endpoint::new(config, seed),
            conn: None,
            outbox: VecDeque::new(),
            sent: Vec::new(),
            close_when_sent: false,
            close_called: false,
            events: Vec::new(),
            keep_bytes: true,
            received: Vec::new(),
            expect: None,
            bad_messages: 0,
            send_errors: Vec::new(),
            would_block: 0,
            tap: None,
            now: Time::ZERO,
        }
    }

    /// A client application.
    pub fn client(seed: u64) -> App {
        App::new(EndpointConfig::default(), seed)
    }

    /// A server application accepting connections configured as `config`.
    pub fn server(config: ConnectionConfig, seed: u64) -> App {
        App::new(EndpointConfig::server(config), seed)
    }

    /// Opens the connection (call through `Harness::node_mut`).
    pub fn connect(&mut self, now: Time, remote: SocketAddr, config: ConnectionConfig) {
        self.now = self.now.max(now);
        let handle = self
            .ep
            .connect(self.now, remote, config)
            .expect("valid connection config");
        self.conn = Some(handle);
        self.pump();
    }

    /// Hands queued messages to the endpoint while it takes them, closes
    /// if asked and everything is handed over, and reads events.
    pub fn pump(&mut self) {
        self.read_events();
        let Some(conn) = self.conn else { return };
        while let Some(msg) = self.outbox.front() {
            match self.ep.send_message(conn, self.now, 0, msg) {
                Ok(id) => {
                    let msg = self.outbox.pop_front().unwrap_or_default();
                    self.sent.push((id, msg));
                }
                Err(SendError::BufferFull) => break,
                Err(SendError::WouldBlock { .. }) => {
                    self.would_block += 1;
                    break;
                }
                Err(e) => {
                    // Closed connection and the like: keep the error for
                    // the test to judge, stop feeding.
                    self.send_errors.push(e);
                    self.outbox.clear();
                    break;
                }
            }
        }
        // An application closes an established connection; closing one
        // still STARTING abandons it (nothing would reach the peer).
        if self.close_when_sent
            && !self.close_called
            && self.outbox.is_empty()
            && self.saw(|e| *e == Event::Connected)
        {
            self.close_called = true;
            self.ep.close(conn, self.now);
        }
        self.read_events();
    }

    fn read_events(&mut self) {
        while let Some((handle, ev)) = self.ep.poll_event() {
            if self.conn.is_none() {
                self.conn = Some(handle);
            }
            if let Event::MessageReceived { id, bytes, .. } = &ev {
                if let Some(check) = self.expect {
                    if !check(*id, bytes) {
                        self.bad_messages += 1;
                    }
                }
                let kept = if self.keep_bytes {
                    bytes.clone()
                } else {
                    Vec::new()
                };
                self.received.push((self.now, *id, kept));
                if !self.keep_bytes {
                    // Keep the event log small on big transfers.
                    continue;
                }
            }
            self.events.push((self.now, ev));
        }
    }

    /// The `Closed` event, if the connection closed.
    pub fn closed(&self) -> Option<(Time, CloseReason, Vec<MessageId>)> {
        self.events.iter().find_map(|(t, e)| match e {
            Event::Closed {
                reason,
                undelivered,
            } => Some((*t, *reason, undelivered.clone())),
            _ => None,
        })
    }

    /// Whether an event matching `f` was read.
    pub fn saw(&self, f: impl Fn(&Event) -> bool) -> bool {
        self.events.iter().any(|(_, e)| f(e))
    }

    /// The time of the last message received.
    pub fn last_received_at(&self) -> Option<Time> {
        self.received.last().map(|(t, _, _)| *t)
    }
}

impl SansIo for App {
    fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        bytes: &mut [u8],
    ) {
        self.now = self.now.max(now);
        self.ep.handle_datagram(now, remote, ecn, bytes);
        self.pump();
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.now = self.now.max(now);
        let t = self.ep.poll_transmit(now, buf)?;
        if let Some(tap) = &mut self.tap {
            tap.push((self.now, t.destination, buf[..t.size].to_vec()));
        }
        Some(t)
    }

    fn poll_timeout(&mut self) -> Option<Time> {
        // The harness asks last, after draining transmits: read what those
        // produced (a connection is released only once its events are read).
        self.read_events();
        self.ep.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Time) {
        self.now = self.now.max(now);
        self.ep.handle_timeout(now);
        self.pump();
    }
}
