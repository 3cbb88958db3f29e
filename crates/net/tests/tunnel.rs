//! The tunnel over loopback: UDP boundaries and reply ports, TCP bytes
//! (SHA-256) with half-close, refusals in words, an unreachable server,
//! and a server restart the client survives.

use peregrine::tunnel::{self, FlowState, ForwardSpec, TunnelConfig, TunnelEvent};
use peregrine::{Endpoint, EndpointBuilder, Tunnel};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::time::{timeout, Instant};

/// One test at a time: each runs two endpoints (two driver threads) and a
/// runtime, and on a loaded two-core machine seven at once starved one
/// another past the timeouts.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn lo() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal")
}

fn config() -> TunnelConfig {
    TunnelConfig {
        connect_timeout: Duration::from_secs(2),
        reconnect_delay: Duration::from_millis(200),
        ..TunnelConfig::default()
    }
}

async fn server_on(addr: SocketAddr, cfg: TunnelConfig) -> Tunnel {
    let ep = EndpointBuilder::new()
        .server(tunnel::connection_config(None, Duration::from_secs(2)))
        .bind(addr)
        .expect("bind tunnel server");
    Tunnel::server(ep, cfg).await.expect("server starts")
}

async fn client_to(server: SocketAddr, forwards: &[String]) -> Tunnel {
    let ep = Endpoint::client(lo()).expect("bind client");
    let specs = forwards
        .iter()
        .map(|f| f.parse::<ForwardSpec>().expect("spec"))
        .collect();
    Tunnel::client(
        ep,
        server,
        tunnel::connection_config(Some(Duration::from_millis(10)), Duration::from_secs(2)),
        specs,
        config(),
    )
    .await
    .expect("client connects")
}

/// A UDP echo that prefixes each reply with nothing: it returns the datagram.
async fn udp_echo() -> SocketAddr {
    let s = UdpSocket::bind(lo()).await.expect("bind echo");
    let a = s.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        while let Ok((n, from)) = s.recv_from(&mut buf).await {
            let _ = s.send_to(&buf[..n], from).await;
        }
    });
    a
}

/// A TCP server that reads until EOF, then writes back the same bytes and
/// closes (so only a working half-close gets an answer).
async fn tcp_echo_after_eof() -> SocketAddr {
    let l = TcpListener::bind(lo()).await.expect("bind");
    let a = l.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut all = Vec::new();
                if s.read_to_end(&mut all).await.is_ok() {
                    let _ = s.write_all(&all).await;
                    let _ = s.shutdown().await;
                }
            });
        }
    });
    a
}

/// A TCP server that hashes what it receives and answers the digest.
async fn tcp_sha_sink() -> SocketAddr {
    let l = TcpListener::bind(lo()).await.expect("bind");
    let a = l.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut h = Sha256::new();
                let mut buf = vec![0u8; 1 << 16];
                let mut total = 0u64;
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) => break,
                        Ok(n) => {
                            h.update(&buf[..n]);
                            total += n as u64;
                        }
                        Err(_) => return,
                    }
                }
                let mut reply = h.finalize().to_vec();
                reply.extend_from_slice(&total.to_be_bytes());
                let _ = s.write_all(&reply).await;
                let _ = s.shutdown().await;
            });
        }
    });
    a
}

fn local(t: &Tunnel, i: usize) -> SocketAddr {
    t.local_addrs()[i].1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_datagrams_keep_boundaries_and_return_to_their_port() {
    let _serial = SERIAL.lock().await;
    let echo = udp_echo().await;
    let server = server_on(lo(), config()).await;
    let saddr = server.endpoint().local_addr();
    let client = client_to(
        saddr,
        &[format!("udp:0:{echo},class=0,reliability=reliable")],
    )
    .await;
    let fwd = local(&client, 0);
    // Two sources: each gets its own flow and only its own replies.
    let a = UdpSocket::bind(lo()).await.unwrap();
    let b = UdpSocket::bind(lo()).await.unwrap();
    // 65,507 B: the largest UDP payload over IPv4.
    let sizes = [1usize, 17, 1200, 1452, 5000, 65_507];
    for (i, &n) in sizes.iter().enumerate() {
        let pa = vec![i as u8; n];
        let pb = vec![0xF0 | i as u8; n];
        a.send_to(&pa, fwd).await.unwrap();
        b.send_to(&pb, fwd).await.unwrap();
        let mut buf = vec![0u8; 65_536];
        let (got, _) = timeout(Duration::from_secs(5), a.recv_from(&mut buf))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "no reply to a ({n} B):\n{}\n{}",
                    client.stats(),
                    server.stats()
                )
            })
            .unwrap();
        assert_eq!(&buf[..got], &pa[..], "datagram {n} B to a intact, whole");
        let (got, _) = timeout(Duration::from_secs(5), b.recv_from(&mut buf))
            .await
            .expect("reply to b")
            .unwrap();
        assert_eq!(&buf[..got], &pb[..], "datagram {n} B to b intact, whole");
    }
    let s = client.stats();
    let udp: Vec<_> = s
        .flows
        .iter()
        .filter(|f| f.state == FlowState::Open)
        .collect();
    assert_eq!(udp.len(), 2, "one flow per source:\n{s}");
    let total: usize = sizes.iter().sum();
    for f in udp {
        assert_eq!(f.up_msgs, sizes.len() as u64, "{s}");
        assert_eq!(f.up_bytes, total as u64, "{s}");
        assert_eq!(f.down_bytes, total as u64, "{s}");
        assert_eq!(f.class, 0);
    }
    let j = s.to_json();
    let v: serde_json::Value = serde_json::from_str(&j).expect("valid JSON");
    assert_eq!(v["flows"].as_array().unwrap().len(), 2, "{j}");
    assert_eq!(server.stats().flows.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_bytes_intact_and_half_close_honoured() {
    let _serial = SERIAL.lock().await;
    let echo = tcp_echo_after_eof().await;
    let sink = tcp_sha_sink().await;
    let server = server_on(lo(), config()).await;
    let saddr = server.endpoint().local_addr();
    let client = client_to(saddr, &[format!("tcp:0:{echo}"), format!("tcp:0:{sink}")]).await;
    // Half-close: the echo answers only after our FIN reached it.
    let mut s = TcpStream::connect(local(&client, 0)).await.unwrap();
    let msg: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
    s.write_all(&msg).await.unwrap();
    s.shutdown().await.unwrap();
    let mut back = Vec::new();
    timeout(Duration::from_secs(20), s.read_to_end(&mut back))
        .await
        .expect("echo within 20 s")
        .expect("clean end");
    assert_eq!(back, msg);
    // 32 MiB, SHA-256 at the target.
    let mut s = TcpStream::connect(local(&client, 1)).await.unwrap();
    let mut h = Sha256::new();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let total = 32u64 << 20;
    let mut buf = vec![0u8; 1 << 16];
    let mut sent = 0u64;
    let t0 = Instant::now();
    while sent < total {
        for c in buf.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            c.copy_from_slice(&state.to_le_bytes()[..c.len()]);
        }
        s.write_all(&buf).await.unwrap();
        h.update(&buf);
        sent += buf.len() as u64;
    }
    s.shutdown().await.unwrap();
    let mut reply = Vec::new();
    timeout(Duration::from_secs(60), s.read_to_end(&mut reply))
        .await
        .expect("digest within 60 s")
        .unwrap();
    assert_eq!(reply.len(), 40);
    assert_eq!(&reply[..32], &h.finalize()[..], "SHA-256 at the target");
    assert_eq!(u64::from_be_bytes(reply[32..].try_into().unwrap()), total);
    println!("32 MiB through the tunnel in {:?}", t0.elapsed());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let st = client.stats();
    let done: Vec<_> = st
        .flows
        .iter()
        .filter(|f| f.state == FlowState::Closed("finished".into()))
        .collect();
    assert_eq!(done.len(), 2, "both flows finished cleanly:\n{st}");
    assert!(done.iter().any(|f| f.up_bytes == total), "{st}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_reported_in_words_within_seconds() {
    let _serial = SERIAL.lock().await;
    // A port nothing listens on, and a target outside the allow list.
    let closed = {
        let l = TcpListener::bind(lo()).await.unwrap();
        l.local_addr().unwrap()
    };
    let echo = udp_echo().await;
    let cfg = TunnelConfig {
        allow: Some(vec![closed.to_string()]),
        ..config()
    };
    let server = server_on(lo(), cfg).await;
    let saddr = server.endpoint().local_addr();
    let client = client_to(saddr, &[format!("tcp:0:{closed}"), format!("udp:0:{echo}")]).await;
    let t0 = Instant::now();
    // On loopback the refusal can come back before `connect` has seen its
    // SYN-ACK settle: the reset then surfaces from `connect` itself. Both
    // are the local connection ending without data.
    match TcpStream::connect(local(&client, 0)).await {
        Ok(mut s) => {
            let mut buf = [0u8; 16];
            let r = timeout(Duration::from_secs(5), s.read(&mut buf))
                .await
                .expect("the local connection ends within 5 s");
            assert!(
                matches!(r, Err(_) | Ok(0)),
                "no data from a refused target: {r:?}"
            );
        }
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
    let u = UdpSocket::bind(lo()).await.unwrap();
    u.send_to(b"ping", local(&client, 1)).await.unwrap();
    let mut reasons = Vec::new();
    while reasons.len() < 2 {
        match timeout(Duration::from_secs(5), client.next_event()).await {
            Ok(Some(TunnelEvent::FlowRefused { reason, .. })) => reasons.push(reason),
            Ok(Some(_)) => {}
            other => panic!("no refusal event: {other:?}, so far {reasons:?}"),
        }
    }
    println!("refusals after {:?}: {reasons:?}", t0.elapsed());
    assert!(
        reasons.iter().any(|r| r.contains("refused the connection")),
        "{reasons:?}"
    );
    assert!(reasons.iter().any(|r| r.contains("--allow")), "{reasons:?}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(client.stats().refused_flows, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_an_error_in_seconds() {
    let _serial = SERIAL.lock().await;
    // A bound UDP socket that never answers.
    let silent = UdpSocket::bind(lo()).await.unwrap();
    let ep = Endpoint::client(lo()).unwrap();
    let t0 = Instant::now();
    let r = Tunnel::client(
        ep,
        silent.local_addr().unwrap(),
        tunnel::connection_config(None, Duration::from_secs(1)),
        vec!["udp:0:127.0.0.1:9".parse().unwrap()],
        config(),
    )
    .await;
    let e = r.expect_err("no server there").to_string();
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert!(e.contains("cannot reach the tunnel server"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_survives_a_server_restart() {
    let _serial = SERIAL.lock().await;
    let sink = tcp_sha_sink().await;
    let echo = udp_echo().await;
    let server = server_on(lo(), config()).await;
    let saddr = server.endpoint().local_addr();
    let client = client_to(saddr, &[format!("tcp:0:{sink}"), format!("udp:0:{echo}")]).await;
    // A transfer in progress when the server goes away.
    let mut s = TcpStream::connect(local(&client, 0)).await.unwrap();
    s.write_all(&[7u8; 100_000]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(server);
    // The cut connection is reset, never ended cleanly with a digest.
    let mut reply = Vec::new();
    let r = timeout(Duration::from_secs(10), async {
        loop {
            if s.write_all(&[7u8; 10_000]).await.is_err() {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = &reply;
            if tokio::time::timeout(Duration::from_millis(1), s.read_to_end(&mut reply))
                .await
                .is_ok()
            {
                return Some(reply.len());
            }
        }
    })
    .await
    .expect("the local connection fails within 10 s");
    assert!(
        r.is_none_or(|n| n == 0),
        "a cut transfer got an answer: {r:?}"
    );
    // A new server on the same address; the client reconnects by itself.
    let t0 = Instant::now();
    let server2 = loop {
        // `bind` drops a runtime when it fails: not on an async thread.
        let ep = tokio::task::block_in_place(|| {
            EndpointBuilder::new()
                .server(tunnel::connection_config(None, Duration::from_secs(2)))
                .bind(saddr)
        });
        match ep {
            Ok(ep) => break Tunnel::server(ep, config()).await.unwrap(),
            Err(_) if t0.elapsed() < Duration::from_secs(10) => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!("cannot rebind {saddr}: {e}"),
        }
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut s = loop {
        if client.stats().connected && client.stats().connections >= 2 {
            break TcpStream::connect(local(&client, 0)).await.unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "no reconnection: {}",
            client.stats()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let data = vec![42u8; 1 << 20];
    s.write_all(&data).await.unwrap();
    s.shutdown().await.unwrap();
    let mut reply = Vec::new();
    timeout(Duration::from_secs(20), s.read_to_end(&mut reply))
        .await
        .expect("digest after the restart")
        .unwrap();
    assert_eq!(&reply[..32], &Sha256::digest(&data)[..]);
    // UDP works again too.
    let u = UdpSocket::bind(lo()).await.unwrap();
    u.send_to(b"after", local(&client, 1)).await.unwrap();
    let mut buf = [0u8; 16];
    let (n, _) = timeout(Duration::from_secs(5), u.recv_from(&mut buf))
        .await
        .expect("udp after restart")
        .unwrap();
    assert_eq!(&buf[..n], b"after");
    println!("reconnected in {:?}: {}", t0.elapsed(), client.stats());
    drop(server2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_udp_flows_close_and_reopen() {
    let _serial = SERIAL.lock().await;
    let echo = udp_echo().await;
    let cfg = TunnelConfig {
        udp_idle_timeout: Duration::from_millis(800),
        ..config()
    };
    let server = server_on(lo(), cfg.clone()).await;
    let ep = Endpoint::client(lo()).unwrap();
    let client = Tunnel::client(
        ep,
        server.endpoint().local_addr(),
        tunnel::connection_config(None, Duration::from_secs(2)),
        vec![format!("udp:0:{echo}").parse().unwrap()],
        cfg,
    )
    .await
    .unwrap();
    let u = UdpSocket::bind(lo()).await.unwrap();
    let mut buf = [0u8; 64];
    for round in 0..2 {
        u.send_to(b"hello", local(&client, 0)).await.unwrap();
        let (n, _) = timeout(Duration::from_secs(5), u.recv_from(&mut buf))
            .await
            .expect("echo")
            .unwrap();
        assert_eq!(&buf[..n], b"hello", "round {round}");
        // Idle for more than the timeout (checked every 0.5 s).
        tokio::time::sleep(Duration::from_millis(2000)).await;
        let s = client.stats();
        let open = s
            .flows
            .iter()
            .filter(|f| f.state == FlowState::Open)
            .count();
        assert_eq!(open, 0, "round {round}: the idle flow closed:\n{s}");
    }
    let s = client.stats();
    assert_eq!(s.closed_flows, 2, "a new flow after the idle one:\n{s}");
    assert!(
        s.flows
            .iter()
            .all(|f| matches!(&f.state, FlowState::Closed(r) if r.contains("idle"))),
        "{s}"
    );
    let ss = server.stats();
    assert_eq!(ss.closed_flows, 2, "the server closed its side too:\n{ss}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flows_beyond_the_limit_are_refused() {
    let _serial = SERIAL.lock().await;
    let sink = tcp_sha_sink().await;
    let cfg = TunnelConfig {
        max_flows: 1,
        ..config()
    };
    let server = server_on(lo(), cfg.clone()).await;
    let ep = Endpoint::client(lo()).unwrap();
    let client = Tunnel::client(
        ep,
        server.endpoint().local_addr(),
        tunnel::connection_config(None, Duration::from_secs(2)),
        vec![format!("tcp:0:{sink}").parse().unwrap()],
        cfg,
    )
    .await
    .unwrap();
    let _first = TcpStream::connect(local(&client, 0)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Reset at once: seen by connect itself or by the first read.
    if let Ok(mut second) = TcpStream::connect(local(&client, 0)).await {
        let mut buf = [0u8; 8];
        let r = timeout(Duration::from_secs(5), second.read(&mut buf))
            .await
            .expect("the second connection ends at once");
        assert!(matches!(r, Err(_) | Ok(0)), "{r:?}");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(client.stats().turned_away, 1, "{}", client.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datagrams_past_their_deadline_are_dropped_not_delivered_late() {
    let _serial = SERIAL.lock().await;
    let echo = udp_echo().await;
    let server = server_on(lo(), config()).await;
    let client = client_to(
        server.endpoint().local_addr(),
        &[format!("udp:0:{echo},deadline=100ms")],
    )
    .await;
    let u = UdpSocket::bind(lo()).await.unwrap();
    let mut buf = [0u8; 64];
    u.send_to(b"first", local(&client, 0)).await.unwrap();
    timeout(Duration::from_secs(5), u.recv_from(&mut buf))
        .await
        .expect("the flow works")
        .unwrap();
    // The client's window closes (seed 003's handover window): the
    // server's replies cannot leave, and their 100 ms deadline passes.
    let conn = client.connection().expect("connected");
    assert!(conn.set_receive_window(peregrine::WindowTarget::Connection, 0));
    tokio::time::sleep(Duration::from_millis(200)).await;
    for i in 0..5u8 {
        u.send_to(&[b'x', i], local(&client, 0)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    conn.set_receive_window(peregrine::WindowTarget::Connection, u64::MAX);
    // Nothing of the expired replies arrives afterwards.
    let late = timeout(Duration::from_millis(800), u.recv_from(&mut buf)).await;
    assert!(
        late.is_err(),
        "an expired datagram was delivered late: {late:?}"
    );
    let s = server.stats();
    let f = &s.flows[0];
    assert_eq!(f.down_msgs, 6, "the server read all six replies:\n{s}");
    assert_eq!(f.abandoned, 5, "five expired at the server:\n{s}");
    println!("{s}");
}
