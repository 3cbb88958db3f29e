//! The key log (`PEREGRINE_KEYLOG`, `EndpointBuilder::keylog`) over
//! loopback: encrypted connections are captured (`EndpointBuilder::pcap`)
//! and every sealed DATA packet of the capture is decrypted with ring
//! using nothing but the logged lines; the plaintext frames carry exactly
//! the messages sent.
//!
//! One test in its own binary: it sets `PEREGRINE_KEYLOG` for the whole
//! process (the server takes its key log from the variable, the clients
//! from the builder).

// A real-time test: it waits (bounded) for the drivers' files.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use peregrine::{
    AeadPreference, ConnectionConfig, EndpointBuilder, NoiseConfig, SecurityConfig, StaticKeypair,
};
use peregrine_proto::crypto::{KeyLogLabel, KeyLogLine};
use peregrine_proto::wire::{DatagramRepr, Flags, Payload, Tlv, AUTH_TAG_LEN, HEADER_LEN};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, CHACHA20_POLY1305};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Header and packet number: in the clear, the associated data.
const CLEAR_PREFIX: usize = HEADER_LEN + 4;

/// (interface, time ns, packet) of every Enhanced Packet Block (the
/// reader of tests/observe.rs).
fn read_pcapng(file: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 12 <= file.len() {
        let ty = u32::from_le_bytes(file[i..i + 4].try_into().unwrap());
        let len = u32::from_le_bytes(file[i + 4..i + 8].try_into().unwrap()) as usize;
        if len < 12 || i + len > file.len() {
            break;
        }
        if ty == 6 {
            let b = &file[i + 8..i + len - 4];
            let cap = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
            out.push(b[20..20 + cap].to_vec());
        }
        i += len;
    }
    out
}

/// (source port, UDP payload) of a captured IPv4/UDP packet.
fn udp4(p: &[u8]) -> (u16, &[u8]) {
    assert_eq!(p[0], 0x45, "IPv4, 20-byte header");
    (u16::from_be_bytes([p[20], p[21]]), &p[28..])
}

/// The message each side sends: distinct bytes per side and client.
fn message(client: u8, from_server: bool) -> Vec<u8> {
    (0..1500u32)
        .map(|i| (i * 7 + u32::from(client) * 31 + u32::from(from_server) * 101) as u8)
        .collect()
}

/// Both directions' keys of one connection, from its key-log lines.
#[derive(Default, Debug)]
struct Keys {
    lines: Vec<String>,
    secrets: BTreeMap<&'static str, Vec<u8>>,
}

/// Opens a sealed datagram (exactly TOTAL_LEN bytes) with a logged key
/// and IV alone, by the documented rule: nonce = IV XOR the packet
/// number, associated data = the clear prefix. The plaintext datagram
/// (its tag area left in place, as `decode_with_tag` expects).
fn open(key: &[u8], iv: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
    let alg = match key.len() {
        16 => &AES_128_GCM,
        32 => &CHACHA20_POLY1305,
        n => panic!("a {n}-byte key"),
    };
    let key = LessSafeKey::new(UnboundKey::new(alg, key).unwrap());
    let pn = u32::from_be_bytes(sealed[HEADER_LEN..CLEAR_PREFIX].try_into().unwrap());
    let mut nonce: [u8; 12] = iv.try_into().unwrap();
    for (b, p) in nonce[4..].iter_mut().zip(u64::from(pn).to_be_bytes()) {
        *b ^= p;
    }
    let mut body = sealed[CLEAR_PREFIX..].to_vec();
    let n = key
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&sealed[..CLEAR_PREFIX]),
            &mut body,
        )
        .ok()?
        .len();
    let mut plain = sealed.to_vec();
    plain[CLEAR_PREFIX..CLEAR_PREFIX + n].copy_from_slice(&body[..n]);
    Some(plain)
}

struct Client {
    n: u8,
    builder: EndpointBuilder,
    pcap: PathBuf,
}

#[test]
fn logged_keys_alone_decrypt_captured_data_packets() {
    let dir = std::env::temp_dir().join(format!("peregrine-keylog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let keylog = dir.join("keys.log");
    std::env::set_var(peregrine::keylog::KEYLOG_ENV, &keylog);

    let server_kp = StaticKeypair::from_private([0x42; 32]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
    // The server: default security (accepts Noise_IK and Noise_XX), its
    // key log from PEREGRINE_KEYLOG.
    let server = rt.block_on(async {
        EndpointBuilder::new()
            .keypair(server_kp.clone())
            .server(ConnectionConfig::default())
            .bind(bind)
            .unwrap()
    });
    let server_addr = server.local_addr();
    // Client 1: the default Noise_XX, AES-128-GCM. Client 2: Noise_IK
    // (the server's key pinned), ChaCha20-Poly1305. Both log to the same
    // file through the builder.
    let clients = [
        Client {
            n: 1,
            builder: EndpointBuilder::new().aead(AeadPreference::Aes128Gcm),
            pcap: dir.join("client1.pcapng"),
        },
        Client {
            n: 2,
            builder: EndpointBuilder::new()
                .security(SecurityConfig::Noise(
                    NoiseConfig::ik(StaticKeypair::from_private([7; 32]), server_kp.public())
                        .with_aead(AeadPreference::ChaCha20Poly1305),
                ))
                .aead(AeadPreference::ChaCha20Poly1305),
            pcap: dir.join("client2.pcapng"),
        },
    ];
    let mut ports = BTreeMap::new();
    rt.block_on(async {
        for c in &clients {
            let accept = {
                let n = c.n;
                let server = &server;
                async move {
                    let conn = server.accept().await.unwrap();
                    let (_, got) = conn.recv().await.unwrap();
                    assert_eq!(&got[..], &message(n, false)[..]);
                    conn.send(1, message(n, true)).await.unwrap();
                    conn
                }
            };
            let client = c
                .builder
                .clone()
                .keylog(&keylog)
                .pcap(&c.pcap)
                .bind(bind)
                .unwrap();
            ports.insert(c.n, client.local_addr().port());
            let connect = async {
                let conn = client
                    .connect(server_addr, ConnectionConfig::default())
                    .await
                    .unwrap();
                conn.send(1, message(c.n, false)).await.unwrap();
                let (_, back) = conn.recv().await.unwrap();
                assert_eq!(&back[..], &message(c.n, true)[..]);
                conn
            };
            let (sc, cc) = tokio::join!(accept, connect);
            cc.close().await;
            drop(sc);
            drop(client);
        }
    });
    drop(server);
    drop(rt);
    // The captures are flushed when the drivers stop.
    std::thread::sleep(Duration::from_millis(500));

    // The key log: created 0600, four lines per connection from each
    // side, the client's and the server's identical.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&keylog).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "key log mode {mode:o}");
    }
    let text = std::fs::read_to_string(&keylog).unwrap();
    let mut by_conn: BTreeMap<[u8; 32], Keys> = BTreeMap::new();
    for line in text.lines() {
        let l = KeyLogLine::parse(line)
            .unwrap()
            .expect("no comments written");
        let k = by_conn.entry(l.client_ephemeral).or_default();
        k.lines.push(line.to_string());
        if let Some(old) = k.secrets.insert(l.label.name(), l.secret.clone()) {
            assert_eq!(old, l.secret, "both sides log the same {}", l.label.name());
        }
    }
    assert_eq!(by_conn.len(), 2, "one entry per connection:\n{text}");
    for k in by_conn.values() {
        assert_eq!(k.lines.len(), 8, "4 lines from each side: {:?}", k.lines);
        assert_eq!(k.secrets.len(), 4);
    }

    for c in &clients {
        let port = ports[&c.n];
        let packets = read_pcapng(&std::fs::read(&c.pcap).unwrap());
        // The connection's name in the log is the ephemeral key in the
        // clear in the client's START.
        let ephemeral = packets
            .iter()
            .map(|p| udp4(p))
            .filter(|(sp, _)| *sp == port)
            .find_map(|(_, dg)| match DatagramRepr::decode(dg).ok()?.payload {
                Payload::Start(s) => s.tlvs.iter().find_map(|t| match t {
                    Tlv::Security(v) => <[u8; 32]>::try_from(&v[1..33]).ok(),
                    _ => None,
                }),
                _ => None,
            })
            .expect("the client's START is captured");
        let keys = by_conn
            .get(&ephemeral)
            .expect("the START's ephemeral key names a logged connection");
        let want_len = if c.n == 1 { 16 } else { 32 };
        assert_eq!(
            keys.secrets[KeyLogLabel::ClientTrafficKey.name()].len(),
            want_len,
            "client {}: the key's length names the AEAD",
            c.n
        );
        // Every sealed DATA packet opens with the logged key of its
        // direction; its stream frames are exactly the message's bytes.
        let mut data = [Vec::new(), Vec::new()];
        for p in &packets {
            let (sp, dg) = udp4(p);
            let from_server = sp != port;
            let total = usize::from(u16::from_be_bytes([dg[8], dg[9]]));
            // An XX client appends message 3 behind TOTAL_LEN.
            let sealed = &dg[..total];
            if sealed[4] >> 4 != 3 || Flags(sealed[5]).contains(Flags::ST_CKS) {
                continue; // not DATA, or not sealed
            }
            let (key, iv) = if from_server {
                (KeyLogLabel::ServerTrafficKey, KeyLogLabel::ServerTrafficIv)
            } else {
                (KeyLogLabel::ClientTrafficKey, KeyLogLabel::ClientTrafficIv)
            };
            let plain = open(&keys.secrets[key.name()], &keys.secrets[iv.name()], sealed)
                .unwrap_or_else(|| panic!("client {}: a DATA packet does not open", c.n));
            let d =
                DatagramRepr::decode_with_tag(&plain, AUTH_TAG_LEN).expect("the plaintext decodes");
            let Payload::Data(dp) = d.payload else {
                panic!("DATA decodes as DATA")
            };
            for f in dp.frames.iter() {
                assert_eq!(f.stream_id, 1);
                data[usize::from(from_server)].push((f.block_index, f.data.to_vec()));
            }
        }
        for (dir, want) in [(0, message(c.n, false)), (1, message(c.n, true))] {
            let blocks = &mut data[dir];
            assert!(!blocks.is_empty(), "client {}: no sealed DATA {dir}", c.n);
            blocks.sort();
            blocks.dedup();
            let got: Vec<u8> = blocks.iter().flat_map(|(_, b)| b.clone()).collect();
            assert_eq!(got, want, "client {}: decrypted DATA = the message", c.n);
        }
        // A wrong key opens nothing: the other direction's.
        let sealed_data = packets
            .iter()
            .map(|p| udp4(p))
            .find(|(sp, dg)| *sp == port && dg[4] >> 4 == 3)
            .map(|(_, dg)| dg[..usize::from(u16::from_be_bytes([dg[8], dg[9]]))].to_vec())
            .unwrap();
        assert!(open(
            &keys.secrets[KeyLogLabel::ServerTrafficKey.name()],
            &keys.secrets[KeyLogLabel::ServerTrafficIv.name()],
            &sealed_data
        )
        .is_none());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
