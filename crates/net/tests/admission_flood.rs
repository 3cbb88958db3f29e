//! Admission under a flood from addresses the attacker receives at
//! (issue 21, item 7), over real loopback UDP.
//!
//! The attacker binds 1,000 sockets: 5 ports on each of 200 addresses in
//! 127.0.0.0/8 (127.0.0.2 … 127.0.0.201; Linux routes all of 127/8 to
//! `lo`). It sends genuine Noise_XX STARTs (valid bindings: 64 captured
//! from real clients, replayed from every socket) and answers every
//! REJECT `retry` at once with the same START echoing the token — so it
//! passes the retry check and every START it sends can create state. It
//! paces itself to 2,000 datagrams per second (fresh STARTs and token
//! echoes together). After 2 s of flood a legitimate client at 127.0.0.1
//! connects and exchanges a message: it must be through within 2 s, and
//! the server's half-open accounting must stay under its bound
//! (docs/security.md: `half_open_max` × `HALF_OPEN_ENTRY_BYTES`, 32 MiB by
//! default).

use peregrine::{ConnectionConfig, Endpoint, EndpointBuilder, EndpointStats};
use peregrine_proto::crypto::{NoiseConfig, SecurityConfig, StaticKeypair};
use peregrine_proto::wire::{DatagramRepr, HeaderRepr, Payload, RejectReason, StartPayload, Tlv};
use peregrine_proto::{EndpointConfig, SansIo, Time};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::time::Instant;

/// Datagrams per second the attacker sends.
const RATE: u64 = 2_000;
/// Attacker addresses, and ports on each.
const ADDRS: u8 = 200;
const PORTS: usize = 5;

/// `n` genuine Noise_XX STARTs (valid bindings, distinct SRC_IDs), from
/// fresh sans-IO clients.
fn starts(n: u64) -> Vec<Vec<u8>> {
    let to: SocketAddr = "127.0.0.1:9".parse().expect("literal");
    (0..n)
        .map(|i| {
            let mut c = peregrine_proto::Endpoint::new(EndpointConfig::default(), 5_000 + i);
            let cfg = ConnectionConfig {
                security: Some(SecurityConfig::Noise(NoiseConfig::xx(
                    StaticKeypair::from_private([0xc1; 32]),
                ))),
                ..ConnectionConfig::default()
            };
            c.connect(Time::ZERO, to, cfg).expect("a client");
            let mut buf = Vec::new();
            let t = c.poll_transmit(Time::ZERO, &mut buf).expect("its START");
            buf.truncate(t.size);
            buf
        })
        .collect()
}

/// The token of a REJECT `retry` and the SRC_ID of the START it answers.
fn retry_token(bytes: &[u8]) -> Option<(u16, Vec<u8>)> {
    let dg = DatagramRepr::decode(bytes).ok()?;
    let Payload::Reject(r) = &dg.payload else {
        return None;
    };
    (r.reason == RejectReason::RETRY).then_some(())?;
    let token = r.tlvs.iter().find_map(|t| match t {
        Tlv::RetryToken(v) => Some(v.to_vec()),
        _ => None,
    })?;
    Some((dg.header.dest_id, token))
}

/// `start` with a RETRY_TOKEN TLV (left out of the Noise binding, so
/// message 1 stays valid), re-encoded.
fn with_token(start: &[u8], token: &[u8]) -> Vec<u8> {
    let mut dg = DatagramRepr::decode(start).expect("a START");
    let Payload::Start(s) = &dg.payload else {
        panic!("not a START")
    };
    let mut tlvs = s.tlvs.clone();
    tlvs.insert(1, Tlv::RetryToken(token));
    dg.payload = Payload::Start(StartPayload { tlvs });
    let mut buf = vec![0u8; dg.buffer_len()];
    let n = dg.emit(&mut buf).expect("re-encoded");
    buf.truncate(n);
    buf
}

/// The running attacker.
struct Attacker {
    sent: Arc<AtomicU64>,
    echoed: Arc<AtomicU64>,
    started: Instant,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Attacker {
    fn stop(self) -> (u64, u64, Duration) {
        for t in &self.tasks {
            t.abort();
        }
        (
            self.sent.load(Ordering::Relaxed),
            self.echoed.load(Ordering::Relaxed),
            self.started.elapsed(),
        )
    }
}

async fn attack(server: SocketAddr) -> Attacker {
    let starts = Arc::new(starts(64));
    let by_src: Arc<BTreeMap<u16, usize>> = Arc::new(
        starts
            .iter()
            .enumerate()
            .map(|(i, s)| (HeaderRepr::decode(s).expect("header").src_id, i))
            .collect(),
    );
    let mut sockets = Vec::new();
    for a in 0..ADDRS {
        for _ in 0..PORTS {
            let at = SocketAddr::from(([127, 0, 0, 2 + a], 0));
            let s = UdpSocket::bind(at).await.expect("bind in 127/8");
            sockets.push(Arc::new(s));
        }
    }
    let sent = Arc::new(AtomicU64::new(0));
    let echoed = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    // Every socket answers its REJECT `retry`s with the token.
    for s in &sockets {
        let (s, starts, by_src) = (s.clone(), starts.clone(), by_src.clone());
        let (sent, echoed) = (sent.clone(), echoed.clone());
        tasks.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 2_048];
            while let Ok((n, _)) = s.recv_from(&mut buf).await {
                let Some((src, token)) = retry_token(&buf[..n]) else {
                    continue;
                };
                let Some(&k) = by_src.get(&src) else { continue };
                if s.send_to(&with_token(&starts[k], &token), server)
                    .await
                    .is_ok()
                {
                    sent.fetch_add(1, Ordering::Relaxed);
                    echoed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // Fresh STARTs fill the rest of the rate, round robin over the
    // sockets and, per round, the next captured START.
    let started = Instant::now();
    {
        let sent = sent.clone();
        tasks.push(tokio::spawn(async move {
            let mut next = 0usize;
            loop {
                let due = started.elapsed().as_millis() as u64 * RATE / 1_000;
                while sent.load(Ordering::Relaxed) < due {
                    let s = &sockets[next % sockets.len()];
                    let k = (next / sockets.len()) % starts.len();
                    next += 1;
                    let _ = s.send_to(&starts[k], server).await;
                    sent.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }));
    }
    Attacker {
        sent,
        echoed,
        started,
        tasks,
    }
}

/// Connect from 127.0.0.1 and exchange one message each way.
async fn legitimate(server: &Arc<Endpoint>) -> Duration {
    let client = Endpoint::client("127.0.0.1:0".parse().expect("literal")).expect("client");
    let accept = tokio::spawn({
        let server = server.clone();
        async move {
            let conn = server.accept().await.expect("a connection");
            let (s, b) = conn.recv().await.expect("a message");
            assert_eq!((s, &b[..]), (1, &b"ping"[..]));
            conn.send(1, b"pong").await.expect("answer");
            conn
        }
    });
    let t0 = Instant::now();
    let conn = client
        .connect(server.local_addr(), ConnectionConfig::default())
        .await
        .expect("the legitimate client connects");
    conn.send(1, b"ping").await.expect("send");
    let (s, b) = conn.recv().await.expect("the answer");
    assert_eq!((s, &b[..]), (1, &b"pong"[..]));
    let took = t0.elapsed();
    let _server_conn = accept.await.expect("accept task");
    took
}

async fn scenario(what: &str, config: EndpointConfig) -> (Duration, EndpointStats) {
    let server = EndpointBuilder::new()
        .config(config)
        .server(ConnectionConfig::default())
        .bind("127.0.0.1:0".parse().expect("literal"))
        .expect("bind server");
    let server = Arc::new(server);
    let quiet = legitimate(&server).await;
    let attacker = attack(server.local_addr()).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let took = legitimate(&server).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (sent, echoed, ran) = attacker.stop();
    let s = server.stats().core;
    let rate = sent as f64 / ran.as_secs_f64();
    eprintln!(
        "{what}: flood {sent} datagrams ({echoed} echoing tokens) in {ran:.2?} = {rate:.0}/s \
         from {} sockets on {ADDRS} addresses; legitimate connect + exchange {took:.2?} \
         (without flood {quiet:.2?}); half-open peak {} (max {}), bytes peak {} (bound {}); \
         accepted {}, evicted {}, expired {}, rate-limited {}, source-limited {}, \
         retries {}, tokens ok {}, REJECTs dropped (stateless queue full) {}",
        usize::from(ADDRS) * PORTS,
        s.half_open_peak,
        s.half_open_max,
        s.half_open_bytes_peak,
        s.half_open_bytes_max,
        s.connections_accepted,
        s.half_open_evicted,
        s.half_open_expired,
        s.starts_rate_limited,
        s.starts_source_limited,
        s.retries_sent,
        s.tokens_accepted,
        s.stateless_dropped,
    );
    assert!(
        rate >= 0.8 * RATE as f64,
        "{what}: the flood ran at {rate:.0}/s"
    );
    assert!(
        s.tokens_accepted > 500,
        "{what}: the attacker echoed tokens"
    );
    assert!(took <= Duration::from_secs(2), "{what}: {took:?}");
    assert!(s.half_open_peak <= s.half_open_max, "{what}");
    assert!(s.half_open_bytes_peak <= s.half_open_bytes_max, "{what}");
    (took, s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flood_from_200_receiving_addresses_cannot_lock_out_a_client() {
    // The defaults: the bound is 32 MiB (4,096 entries of 8 KiB).
    let (_, s) = scenario("defaults", EndpointConfig::default()).await;
    assert_eq!(s.half_open_bytes_max, 32 << 20);
    // The limits the flood beat (256 half-open slots, tokens above
    // 32): the oldest half-open entry is evicted, the client gets in.
    let (_, s) = scenario(
        "max_half_open 256",
        EndpointConfig {
            max_half_open: 256,
            retry_when_half_open_above: 32,
            ..EndpointConfig::default()
        },
    )
    .await;
    assert!(s.half_open_evicted > 0, "the cap was reached");
}
