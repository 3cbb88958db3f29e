//! Per-packet costs of the protection and integrity path (issue 18):
//!
//! * `aead/seal_open_1400B/<aead>` — one 1,400-byte datagram (tag
//!   included) sealed by one side's packet keys and opened by the other's,
//!   for each AEAD the build has (`crypto::aead::bench`).
//! * `endpoint/send_receive_1400B/{plain,protected}` — one 1,400-byte DATA
//!   datagram through two connected endpoints: `send_message`, the
//!   sender's `poll_transmit`, the receiver's `handle_datagram`, its
//!   `poll_event` (the message) and its `poll_transmit` with the ACKs it
//!   decides to send handed back to the sender (so the sender's window
//!   stays open; the ACK policy decides how many there are).
//!   `protected` is `Noise_IK` with the core's default AEAD offer
//!   (`EndpointConfig::aes_hardware` false: ChaCha20-Poly1305);
//!   `protected_aes` the same with AES hardware declared (AES-128-GCM).
//! * `endpoint/receive_bulk_1452B/{plain,protected}` — the receiver
//!   alone on a bulk transfer of 64-KiB messages (as `peregrine perf`
//!   sends them): per full-size DATA datagram, its `handle_datagram`
//!   (reassembly in place) and its share of `poll_event` and of the ACKs'
//!   `poll_transmit`; the sender's datagrams are built outside the timing.
//! * `checksum/1400B` — the RFC 1071 checksum of a 1,400-byte datagram
//!   (`wire::datagram_checksum`: the loop chosen at run time, AVX2 where
//!   the CPU has it); `checksum/1400B_portable` — the same with the
//!   baseline target's loop (SSE2 on x86-64); `checksum/1400B_wordwise` —
//!   the big-endian word-by-word loop it replaced (issue 18), copied here.
//!
//! `cargo bench -p peregrine-proto --bench packet`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use peregrine_proto::crypto::aead::bench::{SealOpen, ALGORITHMS};
use peregrine_proto::crypto::{NoiseConfig, SecurityConfig, StaticKeypair};
use peregrine_proto::{
    ConnectionConfig, ConnectionHandle, Endpoint, EndpointConfig, Event, SansIo, Time,
};
use std::hint::black_box;
use std::net::SocketAddr;
use std::time::Duration;

const DATAGRAM: usize = 1_400;

fn addr(n: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, n], 4000))
}

fn bench_aead(c: &mut Criterion) {
    let mut group = c.benchmark_group("aead");
    group.throughput(Throughput::Bytes(DATAGRAM as u64));
    for name in ALGORITHMS {
        let mut so = SealOpen::new(name).expect("known AEAD");
        let mut buf = Vec::with_capacity(2048);
        assert!(so.round_trip(&mut buf, DATAGRAM), "{name} round trip");
        group.bench_function(format!("seal_open_1400B/{name}"), |b| {
            b.iter(|| black_box(so.round_trip(&mut buf, DATAGRAM)))
        });
    }
    group.finish();
}

/// Two endpoints with one established connection.
struct Pair {
    a: Endpoint,
    b: Endpoint,
    conn: ConnectionHandle,
    now: Time,
    buf: Vec<u8>,
    rx: Vec<u8>,
    /// Bytes of message that make one 1,400-byte datagram.
    message: bytes::Bytes,
    datagrams: u64,
}

impl Pair {
    fn new(protected: bool, aes_hardware: bool) -> Pair {
        let (mut client, mut server) = (ConnectionConfig::default(), ConnectionConfig::default());
        if protected {
            let server_kp = StaticKeypair::from_private([0x5e; 32]);
            let client_kp = StaticKeypair::from_private([0xc1; 32]);
            client.security = Some(SecurityConfig::Noise(NoiseConfig::ik(
                client_kp,
                server_kp.public(),
            )));
            server.security = Some(SecurityConfig::Noise(NoiseConfig::server(server_kp)));
        }
        let mut a = Endpoint::new(
            EndpointConfig {
                aes_hardware,
                ..EndpointConfig::default()
            },
            1,
        );
        let mut b = Endpoint::new(EndpointConfig::server(server), 2);
        let conn = a.connect(Time::ZERO, addr(2), client).expect("valid");
        let mut p = Pair {
            a,
            b: {
                b.poll_timeout();
                b
            },
            conn,
            now: Time::ZERO,
            buf: Vec::with_capacity(2048),
            rx: Vec::with_capacity(2048),
            message: bytes::Bytes::new(),
            datagrams: 0,
        };
        // Handshake and packet-pair probe, in virtual time.
        for _ in 0..2_000 {
            p.advance(Duration::from_millis(1));
            p.pump();
        }
        assert!(p.a.stats(conn).is_some_and(|s| s.packets_received > 0));
        // Size the message so that its DATA datagram is DATAGRAM bytes.
        let probe = 1_000;
        p.a.send_message(conn, p.now, 0, vec![0x5a; probe])
            .expect("room");
        let size =
            p.a.poll_transmit(p.now, &mut p.buf)
                .expect("a datagram")
                .size;
        p.rx.clear();
        p.rx.extend_from_slice(&p.buf[..size]);
        p.b.handle_datagram(p.now, addr(1), None, &mut p.rx);
        p.pump();
        p.message = bytes::Bytes::from(vec![0x5a; probe + DATAGRAM - size]);
        p
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        for ep in [&mut self.a, &mut self.b] {
            if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                ep.handle_timeout(self.now);
            }
        }
    }

    /// Moves datagrams both ways until neither side has any; reads events.
    fn pump(&mut self) {
        loop {
            let mut moved = false;
            while let Some(t) = self.a.poll_transmit(self.now, &mut self.buf) {
                self.rx.clear();
                self.rx.extend_from_slice(&self.buf[..t.size]);
                self.b
                    .handle_datagram(self.now, addr(1), None, &mut self.rx);
                self.datagrams += 1;
                moved = true;
            }
            while let Some(t) = self.b.poll_transmit(self.now, &mut self.buf) {
                self.rx.clear();
                self.rx.extend_from_slice(&self.buf[..t.size]);
                self.a
                    .handle_datagram(self.now, addr(2), None, &mut self.rx);
                moved = true;
            }
            while let Some((_, e)) = self.b.poll_event() {
                black_box(matches!(e, Event::MessageReceived { .. }));
            }
            while self.a.poll_event().is_some() {}
            if !moved {
                break;
            }
        }
    }

    /// One message = one 1,400-byte DATA datagram, sent and received.
    fn one(&mut self) {
        self.advance(Duration::from_micros(20));
        self.a
            .send_message(self.conn, self.now, 0, self.message.clone())
            .expect("room");
        self.pump();
    }
}

fn bench_endpoint(c: &mut Criterion) {
    let mut group = c.benchmark_group("endpoint");
    group.throughput(Throughput::Elements(1));
    for (name, protected, aes) in [
        ("plain", false, false),
        ("protected", true, false),
        ("protected_aes", true, true),
    ] {
        let mut p = Pair::new(protected, aes);
        // Check (outside the timing) that one message is one datagram.
        let before = p.datagrams;
        for _ in 0..1_000 {
            p.one();
        }
        assert_eq!(
            p.datagrams - before,
            1_000,
            "{name}: one datagram a message"
        );
        let s = p.a.stats(p.conn).expect("open");
        assert_eq!(s.security.encrypted, protected);
        let aead = s.security.aead.map(|a| a.name());
        if protected {
            let want = if aes {
                "aes-128-gcm"
            } else {
                "chacha20-poly1305"
            };
            assert_eq!(aead, Some(want), "{name}");
        }
        group.bench_function(format!("send_receive_1400B/{name}"), |b| b.iter(|| p.one()));
    }
    group.finish();
}

/// Bytes of one bulk message (`peregrine perf`'s: 64 KiB, ~46 blocks).
const BULK_MESSAGE: usize = 64 * 1024;
/// Datagrams built ahead and then handed to the receiver in one go.
const RECEIVE_BATCH: usize = 64;

impl Pair {
    /// Up to `n` of the sender's DATA datagrams of bulk messages (64 KiB),
    /// built ahead into `out` (untimed): the sender gets a new message
    /// whenever it has room, and virtual time advances a little when its
    /// pacer holds it; fewer when its window is full (the ACKs of the
    /// last batch open it again).
    fn build_bulk(&mut self, n: usize, out: &mut Vec<Vec<u8>>, bulk: &bytes::Bytes) {
        let mut filled = 0;
        let mut idle = 0;
        while filled < n && idle < 5 {
            let _ = self.a.send_message(self.conn, self.now, 0, bulk.clone());
            match self.a.poll_transmit(self.now, &mut self.buf) {
                Some(t) => {
                    if out.len() <= filled {
                        out.push(Vec::with_capacity(2048));
                    }
                    let dg = &mut out[filled];
                    dg.clear();
                    dg.extend_from_slice(&self.buf[..t.size]);
                    filled += 1;
                    idle = 0;
                }
                None => {
                    self.advance(Duration::from_micros(20));
                    idle += 1;
                }
            }
        }
        out.truncate(filled);
    }

    /// The receiver's share of `batch` (timed by the caller): each datagram
    /// handled, the messages read, the ACKs built — handed to the sender
    /// after the clock stops (`acks`).
    fn receive(&mut self, batch: &mut [Vec<u8>], acks: &mut Vec<Vec<u8>>) {
        for dg in batch.iter_mut() {
            self.b.handle_datagram(self.now, addr(1), None, dg);
        }
        while let Some((_, e)) = self.b.poll_event() {
            black_box(matches!(e, Event::MessageReceived { .. }));
        }
        acks.clear();
        while let Some(t) = self.b.poll_transmit(self.now, &mut self.buf) {
            acks.push(self.buf[..t.size].to_vec());
        }
    }
}

/// `endpoint/receive_bulk_1452B/{plain,protected}`: the receiver alone on
/// a bulk transfer of 64-KiB messages in full-size DATA datagrams
/// (reassembled in place, as `peregrine perf` sends them): per datagram,
/// `handle_datagram`, the share of `poll_event` and of the ACKs'
/// `poll_transmit`. The sender's datagrams are built ahead and its ACK
/// processing runs outside the timing.
fn bench_receive(c: &mut Criterion) {
    let mut group = c.benchmark_group("endpoint");
    group.throughput(Throughput::Elements(1));
    let bulk = bytes::Bytes::from(vec![0x5a; BULK_MESSAGE]);
    for (name, protected) in [("plain", false), ("protected", true)] {
        let mut p = Pair::new(protected, false);
        let mut batch = Vec::new();
        let mut acks = Vec::new();
        // Warm up (and check) the transfer outside the timing: the
        // sender's window grows to a full batch.
        let mut full = 0;
        for _ in 0..500 {
            p.build_bulk(RECEIVE_BATCH, &mut batch, &bulk);
            full += usize::from(batch.len() == RECEIVE_BATCH);
            p.receive(&mut batch, &mut acks);
            for ack in &mut acks {
                p.a.handle_datagram(p.now, addr(2), None, ack);
            }
            while p.a.poll_event().is_some() {}
        }
        assert!(full > 100, "{name}: the sender fills batches ({full})");
        group.bench_function(format!("receive_bulk_1452B/{name}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0u64;
                while done < iters {
                    let n = (iters - done).min(RECEIVE_BATCH as u64) as usize;
                    p.build_bulk(n, &mut batch, &bulk);
                    if batch.is_empty() {
                        break;
                    }
                    // A benchmark measures wall time: the sans-IO ban on
                    // clocks is for the library, not its benches.
                    #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
                    let start = std::time::Instant::now();
                    p.receive(&mut batch, &mut acks);
                    total += start.elapsed();
                    done += batch.len() as u64;
                    for ack in &mut acks {
                        p.a.handle_datagram(p.now, addr(2), None, ack);
                    }
                    while p.a.poll_event().is_some() {}
                }
                total
            })
        });
    }
    group.finish();
}

fn bench_checksum(c: &mut Criterion) {
    let mut group = c.benchmark_group("checksum");
    group.throughput(Throughput::Bytes(DATAGRAM as u64));
    let data: Vec<u8> = (0..DATAGRAM).map(|i| (i * 31 + 7) as u8).collect();
    group.bench_function("1400B", |b| {
        b.iter(|| black_box(peregrine_proto::wire::datagram_checksum(black_box(&data))))
    });
    group.bench_function("1400B_portable", |b| {
        b.iter(|| {
            black_box(
                peregrine_proto::wire::checksum::bench::datagram_checksum_portable(black_box(
                    &data,
                )),
            )
        })
    });
    group.bench_function("1400B_wordwise", |b| {
        b.iter(|| black_box(wordwise_datagram_checksum(black_box(&data))))
    });
    group.finish();
}

/// The checksum before issue 18: big-endian 16-bit words one by one.
fn wordwise_datagram_checksum(datagram: &[u8]) -> u16 {
    fn sum_words(data: &[u8], mut sum: u64) -> u64 {
        let mut words = data.chunks_exact(2);
        for w in &mut words {
            sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [last] = words.remainder() {
            sum += u64::from(*last) << 8;
        }
        sum
    }
    let (head, tail) = datagram.split_at(datagram.len().min(6));
    let tail = tail.get(2..).unwrap_or(&[]);
    let mut sum = sum_words(tail, sum_words(head, 0));
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

criterion_group!(
    benches,
    bench_aead,
    bench_endpoint,
    bench_receive,
    bench_checksum
);
criterion_main!(benches);
