//! The steady-state data path allocates nothing per packet (issue 18).
//!
//! A counting global allocator (a count, not a timing) watches two real
//! endpoints exchanging 1,200-byte messages (one DATA packet each) over an
//! in-memory, loss-free 1 ms link. The link and the application reuse
//! their buffers, so after a warm-up every allocation counted is the
//! endpoints' own. The one allocation a delivered message needs — its
//! `Vec<u8>` in `Event::MessageReceived`, the single copy out of the
//! datagram — is counted apart; everything else (sending from a shared
//! `Bytes`, packetisation, the sent-packet record, ACK processing, DATA
//! decoding, reassembly, the events queue) must average well below one
//! allocation per DATA packet.
//!
//! Only one test lives in this binary: the counter is process-wide.

use peregrine_proto::{
    Bytes, ConnectionConfig, ConnectionHandle, Endpoint, EndpointConfig, Event, SansIo, Time,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The system allocator, counting allocations and reallocations.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ONE_WAY: Duration = Duration::from_millis(1);
const STEP: Duration = Duration::from_micros(20);
const PAYLOAD: usize = 1_200;

/// Two endpoints and the datagrams between them, with recycled buffers.
struct Pair {
    eps: [Endpoint; 2],
    addrs: [SocketAddr; 2],
    /// In flight: (arrival time, destination index, datagram).
    wire: VecDeque<(Time, usize, Vec<u8>)>,
    /// Spare datagram buffers.
    free: Vec<Vec<u8>>,
    now: Time,
    datagrams: u64,
    delivered: u64,
}

impl Pair {
    fn new() -> Pair {
        let addrs: [SocketAddr; 2] = [
            "10.0.0.1:4000".parse().expect("address"),
            "10.0.0.2:4000".parse().expect("address"),
        ];
        Pair {
            eps: [
                Endpoint::new(EndpointConfig::default(), 1),
                Endpoint::new(EndpointConfig::server(ConnectionConfig::default()), 2),
            ],
            addrs,
            wire: VecDeque::with_capacity(8192),
            free: (0..8192).map(|_| Vec::with_capacity(2048)).collect(),
            now: Time::ZERO,
            datagrams: 0,
            delivered: 0,
        }
    }

    /// One step of `STEP`: deliver what is due, run due timers, send
    /// everything the endpoints have, read events.
    fn step(&mut self) -> bool {
        let mut connected = false;
        self.now += STEP;
        while self.wire.front().is_some_and(|d| d.0 <= self.now) {
            let Some((_, to, mut buf)) = self.wire.pop_front() else {
                break;
            };
            let from = self.addrs[1 - to];
            self.eps[to].handle_datagram(self.now, from, None, &mut buf);
            self.free.push(buf);
        }
        for i in 0..2 {
            if self.eps[i].poll_timeout().is_some_and(|t| t <= self.now) {
                self.eps[i].handle_timeout(self.now);
            }
            loop {
                let mut buf = self.free.pop().unwrap_or_default();
                let Some(t) = self.eps[i].poll_transmit(self.now, &mut buf) else {
                    self.free.push(buf);
                    break;
                };
                buf.truncate(t.size);
                let to = usize::from(t.destination == self.addrs[1]);
                self.datagrams += 1;
                self.wire.push_back((self.now + ONE_WAY, to, buf));
            }
            while let Some((_, ev)) = self.eps[i].poll_event() {
                match ev {
                    Event::Connected => connected = true,
                    Event::MessageReceived { bytes, .. } => {
                        assert_eq!(bytes.len(), PAYLOAD);
                        self.delivered += 1;
                    }
                    _ => {}
                }
            }
        }
        connected
    }

    /// Keep the client's send buffer full with slices of one shared buffer.
    fn feed(&mut self, conn: ConnectionHandle, message: &Bytes, budget: &mut u64) {
        while *budget > 0 {
            match self.eps[0].send_message(conn, self.now, 0, message.clone()) {
                Ok(_) => *budget -= 1,
                Err(_) => break,
            }
        }
    }
}

#[test]
fn steady_state_send_and_receive_allocate_nothing_per_packet() {
    let mut p = Pair::new();
    let conn = p.eps[0]
        .connect(Time::ZERO, p.addrs[1], ConnectionConfig::default())
        .expect("valid config");
    let mut up = false;
    for _ in 0..50_000 {
        up |= p.step();
        if up {
            break;
        }
    }
    assert!(up, "connected");
    let message = Bytes::from(vec![0x5a; PAYLOAD]);

    // Warm-up: every buffer, queue and map grows to its working size.
    let mut budget = 20_000u64;
    while p.delivered < 20_000 {
        p.feed(conn, &message, &mut budget);
        p.step();
    }

    // Measured: the same again.
    const MEASURED: u64 = 20_000;
    let (d0, m0) = (p.datagrams, p.delivered);
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let mut budget = MEASURED;
    while p.delivered < m0 + MEASURED {
        p.feed(conn, &message, &mut budget);
        p.step();
    }
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    let datagrams = p.datagrams - d0;
    let messages = p.delivered - m0;
    // One allocation per delivered message is its own Vec<u8>.
    let other = allocations.saturating_sub(messages);
    let per_packet = other as f64 / messages as f64;
    println!(
        "{messages} messages (DATA packets), {datagrams} datagrams both ways: \
         {allocations} allocations, {other} besides the delivered buffers \
         = {per_packet:.4} per DATA packet"
    );
    assert!(
        per_packet < 0.01,
        "{per_packet:.4} allocations per DATA packet besides the delivered message"
    );
}
