//! The runtime's security defaults over loopback: encrypted unless told
//! otherwise, no silent downgrade in either direction, a pinned server key
//! that does not match fails the handshake, and a configuration used in a
//! role it cannot play is an error naming what is missing.

use peregrine::{
    CloseReason, ConnectionConfig, Endpoint, EndpointBuilder, Error, NoiseConfig, SecurityConfig,
    StreamConfig,
};
use peregrine_proto::wire::RejectReason;
use std::net::SocketAddr;
use std::time::Duration;

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal address")
}

/// A short handshake timeout, so refused handshakes end quickly.
fn quick() -> ConnectionConfig {
    ConnectionConfig {
        handshake_timeout: Duration::from_secs(2),
        ..ConnectionConfig::default()
    }
}

/// Connect, send one message, check it arrives; whether the connection
/// was encrypted at both ends. Also checks that each side learned the
/// other's static key and that both ran the same pattern.
async fn exchange(server: Endpoint, client: Endpoint) -> (bool, bool) {
    let addr = server.local_addr();
    let (server_key, client_key) = (server.public_key(), client.public_key());
    let accept = tokio::spawn(async move {
        let conn = server.accept().await.expect("a connection");
        let (s, b) = conn.recv().await.expect("a message");
        assert_eq!((s, &b[..]), (1, &b"ping"[..]));
        let enc = conn.stats().expect("stats").security.encrypted;
        let seen = (conn.peer_static_key(), conn.security_pattern());
        // Answer only now: the client closes after the answer, and a
        // released connection no longer reports its keys.
        conn.send(1, b"pong").await.expect("answer");
        conn.closed().await;
        (enc, seen)
    });
    let conn = client.connect(addr, quick()).await.expect("connect");
    conn.open_stream(1, StreamConfig::default())
        .expect("stream");
    conn.send(1, b"ping").await.expect("send");
    let (s, b) = conn.recv().await.expect("the answer");
    assert_eq!((s, &b[..]), (1, &b"pong"[..]));
    let enc = conn.stats().expect("stats").security.encrypted;
    let (client_seen, pattern) = (conn.peer_static_key(), conn.security_pattern());
    assert_eq!(conn.close().await, peregrine::CloseReason::Local);
    let (server_enc, (server_seen, server_pattern)) = accept.await.expect("server task");
    assert_eq!(pattern, server_pattern, "both ends ran the same pattern");
    if enc {
        assert_eq!(
            client_seen, server_key,
            "the client learned the server's key"
        );
        assert_eq!(
            server_seen, client_key,
            "the server learned the client's key"
        );
    } else {
        assert_eq!((client_seen, server_seen, pattern), (None, None, None));
    }
    (enc, server_enc)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_endpoints_encrypt_and_the_server_has_a_public_key() {
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind");
    let client = Endpoint::client(v4()).expect("bind");
    let key = server
        .public_key()
        .expect("a default server has a static key");
    assert_ne!(Some(key), client.public_key(), "fresh keys per endpoint");
    assert!(matches!(
        client.client_security(),
        Some(SecurityConfig::Noise(n)) if n.patterns == [peregrine::NoisePattern::XX]
    ));
    assert_eq!(exchange(server, client).await, (true, true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_keypair_is_the_endpoint_identity() {
    let (skp, ckp) = (
        peregrine::keys::generate_keypair().expect("OS entropy"),
        peregrine::keys::generate_keypair().expect("OS entropy"),
    );
    let server = EndpointBuilder::new()
        .keypair(skp.clone())
        .server(ConnectionConfig::default())
        .bind(v4())
        .expect("bind");
    let client = EndpointBuilder::new()
        .keypair(ckp.clone())
        .bind(v4())
        .expect("bind");
    assert_eq!(server.public_key(), Some(skp.public()));
    assert_eq!(client.public_key(), Some(ckp.public()));
    // `exchange` checks each side met exactly these keys.
    assert_eq!(exchange(server, client).await, (true, true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_endpoints_do_not_encrypt() {
    let server = EndpointBuilder::new()
        .insecure()
        .server(ConnectionConfig::default())
        .bind(v4())
        .expect("bind");
    assert_eq!(server.public_key(), None);
    let client = EndpointBuilder::new().insecure().bind(v4()).expect("bind");
    assert_eq!(exchange(server, client).await, (false, false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_server_key_runs_ik() {
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind");
    let kp = peregrine::keys::generate_keypair().expect("OS entropy");
    let pinned = NoiseConfig::ik(kp, server.public_key().expect("key"));
    let client = EndpointBuilder::new()
        .security(SecurityConfig::Noise(pinned))
        .bind(v4())
        .expect("bind");
    assert_eq!(exchange(server, client).await, (true, true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_silent_downgrade_either_way() {
    // An insecure client and a default (encrypted) server.
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind");
    let client = EndpointBuilder::new().insecure().bind(v4()).expect("bind");
    let r = client.connect(server.local_addr(), quick()).await;
    // REJECT security_required (the insecure client believes it).
    assert!(
        matches!(
            r,
            Err(Error::Closed(CloseReason::Rejected(
                RejectReason::SECURITY_REQUIRED
            )))
        ),
        "{r:?}"
    );
    assert_eq!(server.stats().core.connections_accepted, 0);

    // A default (encrypted) client and an insecure server.
    let server = EndpointBuilder::new()
        .insecure()
        .server(ConnectionConfig::default())
        .bind(v4())
        .expect("bind");
    let client = Endpoint::client(v4()).expect("bind");
    let r = client.connect(server.local_addr(), quick()).await;
    // The plain START-REPLY is dropped as a failed handshake; the client
    // keeps trying until its handshake timeout.
    assert!(
        matches!(r, Err(Error::Closed(CloseReason::HandshakeTimeout))),
        "{r:?}"
    );
    assert!(
        client.stats().core.datagrams_received > 0,
        "it did hear the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_pinned_key_fails_the_handshake() {
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("bind");
    let kp = peregrine::keys::generate_keypair().expect("OS entropy");
    let impostor = peregrine::keys::generate_keypair()
        .expect("OS entropy")
        .public();
    let client = EndpointBuilder::new()
        .security(SecurityConfig::Noise(NoiseConfig::ik(kp, impostor)))
        .bind(v4())
        .expect("bind");
    let t0 = tokio::time::Instant::now();
    let r = client.connect(server.local_addr(), quick()).await;
    // Message 1 does not decrypt: REJECT key_mismatch (issue 21), which
    // the protected client believes after its 1 s grace, not at the
    // handshake timeout (2 s here, 10 s by default).
    assert!(
        matches!(
            r,
            Err(Error::Closed(CloseReason::Rejected(
                RejectReason::KEY_MISMATCH
            )))
        ),
        "{r:?}"
    );
    eprintln!("wrong pinned key reported after {:?}", t0.elapsed());
    assert_eq!(server.stats().core.connections_accepted, 0);
    assert!(server.stats().core.handshake_failures > 0);
    assert!(server.stats().core.rejects_sent > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_in_the_wrong_role_is_an_error() {
    let kp = peregrine::keys::generate_keypair().expect("OS entropy");
    // A server configuration (two patterns) cannot connect.
    let ep = EndpointBuilder::new()
        .security(SecurityConfig::Noise(NoiseConfig::server(kp.clone())))
        .bind(v4())
        .expect("bind: no server role to check");
    let r = ep
        .connect("127.0.0.1:9".parse().expect("literal"), quick())
        .await;
    assert!(
        matches!(r, Err(Error::Security(m)) if m.contains("exactly one")),
        "{r:?}"
    );
    // IK without the server's key cannot serve... nor connect.
    let mut ik = NoiseConfig::ik(kp.clone(), kp.public());
    ik.peer_key = None;
    let r = EndpointBuilder::new()
        .security(SecurityConfig::Noise(NoiseConfig {
            keypair: None,
            ..NoiseConfig::server(kp)
        }))
        .server(ConnectionConfig::default())
        .bind(v4());
    assert!(
        matches!(&r, Err(Error::Security(m)) if m.contains("keypair")),
        "{r:?}"
    );
    let ep = EndpointBuilder::new()
        .security(SecurityConfig::Noise(ik))
        .bind(v4())
        .expect("bind");
    let r = ep
        .connect("127.0.0.1:9".parse().expect("literal"), quick())
        .await;
    assert!(
        matches!(r, Err(Error::Security(m)) if m.contains("server's public key")),
        "{r:?}"
    );
}
