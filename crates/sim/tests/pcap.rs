//! `--pcap` (issue 26): one pcapng capture per link direction that the
//! usual tools read, byte-identical across runs, results unchanged by
//! capturing — and the SLTP dissector (`tools/wireshark/sltp.lua`) run
//! by `tshark` decodes every captured datagram to the fields the
//! simulator sent (checked against `peregrine_proto`'s own decoder).
//! The tshark part skips, saying so, where `tshark` is not installed
//! (CI installs it: `.ci/run`).

use peregrine_proto::wire::{DatagramRepr, Header, Payload};
use peregrine_sim::{run, run_with_options, RunOptions, Scenario};
use std::path::{Path, PathBuf};
use std::process::Command;

fn scenario(security: &str) -> Scenario {
    let toml = format!(
        r#"
name = "cap"
duration = "2s"
seed = 3
[[links]]
name = "access"
a = "a"
b = "r"
rate = "100Mbps"
delay = "1ms"
[[links]]
name = "bottleneck"
a = "r"
b = "b"
rate = "4Mbps"
delay = "10ms"
queue = {{ packets = 30 }}
loss = {{ model = "bernoulli", p = 0.01 }}
[[flows]]
src = "a"
dst = "b"
security = "{security}"
[[flows.streams]]
app = "file"
bytes = 300000
[[flows.streams]]
app = "cbr"
rate = "64kbps"
message_bytes = 200
"#
    );
    Scenario::from_toml_str(&toml, "cap.toml", &[]).expect("valid scenario")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("peregrine-pcap-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The UDP payloads of an IPv4 pcapng file written by the simulator:
/// (timestamp ns, source port, destination port, payload).
fn read_capture(path: &Path) -> Vec<(u64, u16, u16, Vec<u8>)> {
    let file = std::fs::read(path).unwrap();
    let u32le = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().unwrap());
    let mut out = Vec::new();
    let mut i = 0;
    while i < file.len() {
        let ty = u32le(&file[i..]);
        let len = u32le(&file[i + 4..]) as usize;
        if ty == 6 {
            let b = &file[i + 8..i + len - 4];
            let ts = (u64::from(u32le(&b[4..])) << 32) | u64::from(u32le(&b[8..]));
            let cap = u32le(&b[12..]) as usize;
            let pkt = &b[20..20 + cap];
            assert_eq!(pkt[0], 0x45, "IPv4 without options");
            assert_eq!(pkt[9], 17, "UDP");
            let sport = u16::from_be_bytes([pkt[20], pkt[21]]);
            let dport = u16::from_be_bytes([pkt[22], pkt[23]]);
            out.push((ts, sport, dport, pkt[28..].to_vec()));
        }
        i += len;
    }
    out
}

#[test]
fn captures_are_deterministic_and_do_not_change_results() {
    let s = scenario("none");
    let (d1, d2) = (temp_dir("det1"), temp_dir("det2"));
    let plain = run(&s).unwrap().summary_json();
    let r1 = run_with_options(
        &s,
        &RunOptions {
            pcap_dir: Some(d1.clone()),
            ..RunOptions::default()
        },
    )
    .unwrap();
    run_with_options(
        &s,
        &RunOptions {
            pcap_dir: Some(d2.clone()),
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert_eq!(plain, r1.summary_json(), "capturing changed the results");
    let mut names: Vec<_> = std::fs::read_dir(&d1)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "access.down.pcapng",
            "access.up.pcapng",
            "bottleneck.down.pcapng",
            "bottleneck.up.pcapng"
        ]
    );
    for n in &names {
        let (a, b) = (
            std::fs::read(d1.join(n)).unwrap(),
            std::fs::read(d2.join(n)).unwrap(),
        );
        assert_eq!(a, b, "{n} differs between two runs of the same seed");
    }
    // Every datagram offered to the bottleneck is there, in time order,
    // each a well-formed SLTP datagram; the flow's packets sent forward
    // are at least the packets the flow sent (retransmissions included).
    let up = read_capture(&d1.join("bottleneck.up.pcapng"));
    let tx = r1.summary_json()["flows"][0]["tx_packets"]
        .as_u64()
        .expect("tx_packets");
    assert!(up.len() as u64 >= tx, "{} captured < {tx} sent", up.len());
    assert!(up.windows(2).all(|w| w[0].0 <= w[1].0), "time order");
    for (_, _, _, p) in &up {
        Header::new_checked(&p[..]).expect("every captured datagram has a valid header");
    }
    let _ = std::fs::remove_dir_all(&d1);
    let _ = std::fs::remove_dir_all(&d2);
}

fn dissector() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/wireshark/sltp.lua")
}

fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `tshark -X lua_script:sltp.lua -r FILE -T json -e …`: one object per
/// frame with the named fields as arrays of strings.
fn tshark_fields(file: &Path, fields: &[&str]) -> Vec<serde_json::Value> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-X")
        .arg(format!("lua_script:{}", dissector().display()))
        .arg("-r")
        .arg(file)
        .args(["-T", "json"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("tshark prints JSON");
    v.as_array()
        .unwrap()
        .iter()
        .map(|f| f["_source"]["layers"].clone())
        .collect()
}

fn field_u64(layers: &serde_json::Value, name: &str) -> Option<u64> {
    let s = layers[name].as_array()?.first()?.as_str()?;
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn field_all(layers: &serde_json::Value, name: &str) -> Vec<u64> {
    layers[name].as_array().map_or(Vec::new(), |a| {
        a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect()
    })
}

#[test]
fn tshark_with_the_dissector_reads_what_the_simulator_sent() {
    if !tshark_available() {
        eprintln!("skipped: tshark is not installed (apt-get install tshark)");
        return;
    }
    let dir = temp_dir("tshark");
    run_with_options(
        &scenario("none"),
        &RunOptions {
            pcap_dir: Some(dir.clone()),
            ..RunOptions::default()
        },
    )
    .unwrap();
    let fields = [
        "sltp.type",
        "sltp.src_id",
        "sltp.dest_id",
        "sltp.total_len",
        "sltp.sync_no",
        "sltp.flags",
        "sltp.pn",
        "sltp.frame.stream_id",
        "sltp.frame.message_no",
        "sltp.ack.largest",
        "sltp.ack.ecn.ect0",
        "sltp.ack.ecn.ce",
        "_ws.expert",
    ];
    let mut ecn_acks = 0;
    let mut kinds = std::collections::BTreeSet::new();
    for file in ["bottleneck.up.pcapng", "bottleneck.down.pcapng"] {
        let sent = read_capture(&dir.join(file));
        let seen = tshark_fields(&dir.join(file), &fields);
        assert_eq!(
            seen.len(),
            sent.len(),
            "{file}: one decoded frame per datagram"
        );
        for (k, ((_, _, _, bytes), l)) in sent.iter().zip(&seen).enumerate() {
            let d = DatagramRepr::decode(bytes).expect("the simulator sent valid datagrams");
            let h = &d.header;
            let at = format!("{file} frame {}", k + 1);
            assert!(l.get("_ws.expert").is_none(), "{at}: expert info {l}");
            assert_eq!(
                field_u64(l, "sltp.type"),
                Some(u64::from(h.pk_type.code())),
                "{at}"
            );
            assert_eq!(
                field_u64(l, "sltp.src_id"),
                Some(u64::from(h.src_id)),
                "{at}"
            );
            assert_eq!(
                field_u64(l, "sltp.dest_id"),
                Some(u64::from(h.dest_id)),
                "{at}"
            );
            assert_eq!(
                field_u64(l, "sltp.total_len"),
                Some(u64::from(h.total_len)),
                "{at}"
            );
            assert_eq!(
                field_u64(l, "sltp.sync_no"),
                Some(u64::from(h.sync_no)),
                "{at}"
            );
            assert_eq!(
                field_u64(l, "sltp.flags"),
                Some(u64::from(h.flags.bits())),
                "{at}"
            );
            kinds.insert(h.pk_type.name());
            match &d.payload {
                Payload::Data(p) => {
                    assert_eq!(
                        field_u64(l, "sltp.pn"),
                        Some(u64::from(p.packet_number)),
                        "{at}"
                    );
                    let streams: Vec<u64> =
                        p.frames.iter().map(|f| u64::from(f.stream_id)).collect();
                    let messages: Vec<u64> = p
                        .frames
                        .iter()
                        .map(|f| u64::from(f.message_number))
                        .collect();
                    assert_eq!(field_all(l, "sltp.frame.stream_id"), streams, "{at}");
                    assert_eq!(field_all(l, "sltp.frame.message_no"), messages, "{at}");
                }
                Payload::Ack(a) => {
                    assert_eq!(
                        field_u64(l, "sltp.pn"),
                        Some(u64::from(a.packet_number)),
                        "{at}"
                    );
                    assert_eq!(
                        field_u64(l, "sltp.ack.largest"),
                        Some(a.largest_acked),
                        "{at}"
                    );
                    // The compact ECN section (three varints, §6.5.3).
                    assert_eq!(
                        field_u64(l, "sltp.ack.ecn.ect0"),
                        a.ecn.map(|e| e.ect0),
                        "{at}"
                    );
                    assert_eq!(field_u64(l, "sltp.ack.ecn.ce"), a.ecn.map(|e| e.ce), "{at}");
                    ecn_acks += usize::from(a.ecn.is_some());
                }
                _ => {}
            }
        }
    }
    for k in ["START", "DATA", "ACK"] {
        assert!(kinds.contains(k), "no {k} in the captures: {kinds:?}");
    }
    assert!(ecn_acks > 0, "no ACK carried ECN counts");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tshark_shows_sealed_payloads_as_protected() {
    if !tshark_available() {
        eprintln!("skipped: tshark is not installed (apt-get install tshark)");
        return;
    }
    let dir = temp_dir("sealed");
    run_with_options(
        &scenario("xx"),
        &RunOptions {
            pcap_dir: Some(dir.clone()),
            ..RunOptions::default()
        },
    )
    .unwrap();
    let file = dir.join("bottleneck.up.pcapng");
    let sent = read_capture(&file);
    let seen = tshark_fields(&file, &["sltp.type", "sltp.tag", "sltp.frame.stream_id"]);
    assert_eq!(seen.len(), sent.len());
    let mut sealed = 0;
    for l in &seen {
        if field_u64(l, "sltp.type") == Some(3) {
            assert!(
                l.get("sltp.tag").is_some(),
                "a sealed DATA shows its tag: {l}"
            );
            assert!(
                l.get("sltp.frame.stream_id").is_none(),
                "ciphertext is not parsed as frames"
            );
            sealed += 1;
        }
    }
    assert!(sealed > 100, "{sealed} sealed DATA packets");
    let _ = std::fs::remove_dir_all(&dir);
}
