//! Observing a runtime endpoint over loopback: a qlog file per
//! connection endpoint (`EndpointBuilder::trace`) and a pcapng capture
//! of the socket layer (`EndpointBuilder::pcap`) that tshark, with the
//! SLTP dissector, decodes to START, DATA and ACK packets.

// A real-time test: it waits (bounded) for the drivers' files, and
// checks the capture's wall-clock stamps.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use peregrine::{ConnectionConfig, EndpointBuilder};
use peregrine_proto::wire::{DatagramRepr, PacketType};
use peregrine_trace::qlog::QlogDir;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("peregrine-observe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// (interface, time ns, packet) of every Enhanced Packet Block.
fn read_pcapng(file: &[u8]) -> Vec<(u32, u64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 12 <= file.len() {
        let ty = u32::from_le_bytes(file[i..i + 4].try_into().unwrap());
        let len = u32::from_le_bytes(file[i + 4..i + 8].try_into().unwrap()) as usize;
        if len < 12 || i + len > file.len() {
            break; // a block still being written
        }
        if ty == 6 {
            let b = &file[i + 8..i + len - 4];
            let iface = u32::from_le_bytes(b[0..4].try_into().unwrap());
            let hi = u64::from(u32::from_le_bytes(b[4..8].try_into().unwrap()));
            let lo = u64::from(u32::from_le_bytes(b[8..12].try_into().unwrap()));
            let cap = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
            out.push((iface, hi << 32 | lo, b[20..20 + cap].to_vec()));
        }
        i += len;
    }
    out
}

/// (src port, dst port, UDP payload) of a captured IPv4/UDP packet.
fn udp4(p: &[u8]) -> (u16, u16, &[u8]) {
    assert_eq!(p[0], 0x45, "IPv4, 20-byte header");
    assert_eq!(p[9], 17, "UDP");
    assert_eq!(&p[12..16], &[127, 0, 0, 1], "source is loopback");
    assert_eq!(&p[16..20], &[127, 0, 0, 1], "destination is loopback");
    let sp = u16::from_be_bytes([p[20], p[21]]);
    let dp = u16::from_be_bytes([p[22], p[23]]);
    (sp, dp, &p[28..])
}

/// Every record of a JSON-SEQ qlog file, parsed.
fn qlog_records(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.split('\u{1e}')
        .filter(|r| !r.trim().is_empty())
        .map(|r| serde_json::from_str(r).unwrap_or_else(|e| panic!("{}: {e}: {r}", path.display())))
        .collect()
}

struct Run {
    pcap: PathBuf,
    qlog_files: Vec<PathBuf>,
    server_port: u16,
    client_port: u16,
}

/// A 64 KiB unencrypted transfer between two loopback endpoints, the
/// client captured and both traced; returns once the files are complete
/// (both connections' qlogs closed and the capture flushed).
fn traced_transfer(name: &str) -> Run {
    let dir = temp_dir(name);
    let pcap = dir.join("client.pcapng");
    let server_q = QlogDir::new(&dir, "server").unwrap();
    let client_q = QlogDir::new(&dir, "client").unwrap();
    let (sf, cf) = (server_q.files(), client_q.files());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (server_port, client_port) = rt.block_on(async {
        let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let server = EndpointBuilder::new()
            .insecure()
            .server(ConnectionConfig::default())
            .trace(server_q)
            .bind(bind)
            .unwrap();
        let addr = server.local_addr();
        let rx = tokio::spawn(async move {
            let conn = server.accept().await.unwrap();
            let mut got = 0;
            while let Some((_, b)) = conn.recv().await {
                got += b.len();
            }
            got
        });
        let client = EndpointBuilder::new()
            .insecure()
            .trace(client_q)
            .pcap(&pcap)
            .bind(bind)
            .unwrap();
        let client_port = client.local_addr().port();
        let conn = client
            .connect(addr, ConnectionConfig::default())
            .await
            .unwrap();
        conn.send(1, &vec![7u8; 64 * 1024]).await.unwrap();
        conn.close().await;
        assert_eq!(rx.await.unwrap(), 64 * 1024);
        (addr.port(), client_port)
    });
    drop(rt);
    // The drivers finish the closes on their own threads: wait for the
    // files (qlog sinks are flushed when the core drops the connection,
    // the capture when the driver stops).
    let deadline = Instant::now() + Duration::from_secs(20);
    let files = || {
        let mut v = sf.lock().unwrap().clone();
        v.extend(cf.lock().unwrap().iter().cloned());
        v
    };
    loop {
        let done = files().len() == 2
            && files()
                .iter()
                .all(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("connection_closed")));
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "qlog files never completed");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The capture is flushed at most 100 ms after a packet and when the
    // driver stops.
    std::thread::sleep(Duration::from_millis(300));
    Run {
        pcap,
        qlog_files: files(),
        server_port,
        client_port,
    }
}

#[test]
fn qlog_and_pcap_of_a_loopback_transfer() {
    let run = traced_transfer("files");
    // One qlog per connection endpoint, each a valid JSON-SEQ trace.
    assert_eq!(run.qlog_files.len(), 2);
    for f in &run.qlog_files {
        let recs = qlog_records(f);
        let header = &recs[0];
        assert_eq!(header["qlog_format"], "JSON-SEQ", "{}", f.display());
        assert!(header["trace"]["vantage_point"]["type"].is_string());
        let mut last = 0.0;
        for r in &recs[1..] {
            let t = r["time"].as_f64().expect("every event has a time");
            assert!(t >= last, "times never go back: {r}");
            last = t;
            assert!(r["name"].as_str().is_some_and(|n| n.contains(':')), "{r}");
            assert!(r["data"].is_object(), "{r}");
        }
        let names: Vec<&str> = recs[1..]
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        for want in [
            "transport:packet_sent",
            "transport:packet_received",
            "recovery:metrics_updated",
        ] {
            assert!(names.contains(&want), "{}: no {want}", f.display());
        }
    }
    // The capture: the client's datagrams both ways, between the real
    // loopback ports, wall-clock stamped, payloads the exact datagrams.
    let packets = read_pcapng(&std::fs::read(&run.pcap).unwrap());
    assert!(packets.len() >= 4, "{} packets", packets.len());
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut kinds = std::collections::BTreeSet::new();
    let (mut out, mut inn) = (0, 0);
    for (iface, t, p) in &packets {
        assert_eq!(*iface, 0);
        assert!(
            *t <= now_ns && now_ns - t < 60_000_000_000,
            "wall-clock time {t}"
        );
        let (sp, dp, payload) = udp4(p);
        match (sp, dp) {
            (s, d) if s == run.client_port && d == run.server_port => out += 1,
            (s, d) if s == run.server_port && d == run.client_port => inn += 1,
            other => panic!("unexpected ports {other:?}"),
        }
        let d = DatagramRepr::decode(payload).expect("captured datagrams decode");
        kinds.insert(d.header.pk_type.code());
    }
    assert!(out > 0 && inn > 0, "both directions: {out} out, {inn} in");
    for k in [PacketType::Start, PacketType::Data, PacketType::Ack] {
        assert!(kinds.contains(&k.code()), "no {k:?} in {kinds:?}");
    }
    // tshark with the SLTP dissector reads the same.
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("skipped the tshark part: tshark is not installed (apt-get install tshark)");
        return;
    }
    let lua = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/wireshark/sltp.lua");
    let o = Command::new("tshark")
        .arg("-X")
        .arg(format!("lua_script:{}", lua.display()))
        .arg("-r")
        .arg(&run.pcap)
        .args(["-T", "json", "-e", "sltp.type"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let frames = v.as_array().unwrap();
    assert_eq!(
        frames.len(),
        packets.len(),
        "one decoded frame per datagram"
    );
    let seen: std::collections::BTreeSet<u64> = frames
        .iter()
        .filter_map(|f| {
            f["_source"]["layers"]["sltp.type"][0]
                .as_str()?
                .parse()
                .ok()
        })
        .collect();
    for k in [PacketType::Start, PacketType::Data, PacketType::Ack] {
        assert!(
            seen.contains(&u64::from(k.code())),
            "tshark: no {k:?} in {seen:?}"
        );
    }
}
