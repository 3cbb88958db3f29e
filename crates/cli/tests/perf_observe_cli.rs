//! `peregrine perf client --qlog DIR --pcap FILE` on 127.0.0.1: one
//! `.sqlog` for the client's connection endpoint, which `peregrine qlog
//! plot` draws, and a pcapng capture of its datagrams.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn perf_client_writes_a_qlog_that_plots_and_a_capture() {
    let dir = std::env::temp_dir().join(format!("peregrine-perf-observe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .args(["perf", "server", "--listen", "127.0.0.1:0", "--once"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start the server");
    let mut reader = BufReader::new(server.stderr.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    // Drain the server's stderr so it never blocks on a full pipe (a
    // test thread, not the sans-IO core the lint guards).
    #[allow(clippy::disallowed_methods)]
    std::thread::spawn(move || for _ in reader.lines() {});
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let qlog = dir.join("q");
    let pcap = dir.join("client.pcapng");
    let out = Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .args([
            "perf",
            "client",
            "--connect",
            &addr,
            "--bytes",
            "300000",
            "--json",
        ])
        .arg("--qlog")
        .arg(&qlog)
        .arg("--pcap")
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server.wait().unwrap().success());

    let files: Vec<_> = std::fs::read_dir(&qlog)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlog"))
        .collect();
    assert_eq!(
        files.len(),
        1,
        "one file per connection endpoint: {files:?}"
    );
    let text = std::fs::read_to_string(&files[0]).unwrap();
    for r in text.split('\u{1e}').filter(|r| !r.trim().is_empty()) {
        serde_json::from_str::<serde_json::Value>(r).unwrap_or_else(|e| panic!("{e}: {r}"));
    }
    assert!(text.contains("recovery:metrics_updated"));
    let plot = Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .args(["qlog", "plot"])
        .arg(&files[0])
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        plot.status.success(),
        "{}",
        String::from_utf8_lossy(&plot.stderr)
    );
    let svgs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert!(svgs >= 1, "qlog plot wrote no SVG");

    // pcapng: a Section Header Block, then Enhanced Packet Blocks.
    let cap = std::fs::read(&pcap).unwrap();
    assert_eq!(&cap[0..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
    let (mut i, mut packets) = (0, 0);
    while i + 8 <= cap.len() {
        let ty = u32::from_le_bytes(cap[i..i + 4].try_into().unwrap());
        let len = u32::from_le_bytes(cap[i + 4..i + 8].try_into().unwrap()) as usize;
        packets += usize::from(ty == 6);
        i += len;
    }
    assert_eq!(i, cap.len(), "whole blocks");
    assert!(packets >= 4, "{packets} packets captured");
}
