//! How long a link hint takes from a predictor's socket to the
//! controller (issue 38: "a documented latency from source to
//! controller"), measured, not guessed.
//!
//! A connection over loopback runs a bulk transfer (so the driver is busy,
//! as it is when hints matter) with an endpoint-wide hint pump on a
//! `udp:` or `unix:` source. This program then sends N JSON lines, each
//! stamped with its send time (`t_ms` = now), 20 ms apart; the pump
//! measures, per hint, the wall-clock time from that stamp to the moment
//! it handed the hint to the controller (`HintStats::late_ns_*`). It
//! prints the median, p90, p99 and maximum, per source kind.
//!
//! ```text
//! cargo run --release -p peregrine --example hint_latency -- [N]
//! ```

// A benchmark driver: the wall clock and plain sockets.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use peregrine::hints::{self, HintSource};
use peregrine::{CcConfig, ConnectionConfig, Endpoint, EndpointBuilder};
use std::io::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("literal address")
}

enum Sender {
    Udp(std::net::UdpSocket, SocketAddr),
    Unix(std::os::unix::net::UnixStream),
}

impl Sender {
    fn send(&mut self, line: &str) {
        match self {
            Sender::Udp(s, to) => {
                s.send_to(line.as_bytes(), *to).expect("send");
            }
            Sender::Unix(s) => s.write_all(line.as_bytes()).expect("write"),
        }
    }
}

async fn measure(kind: &str, n: usize) -> Vec<f64> {
    let dir = std::env::temp_dir().join(format!("pg-hint-latency-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (source, mut sender): (Box<dyn HintSource>, Sender) = match kind {
        "udp" => {
            let s = hints::json::UdpSource::bind("127.0.0.1:0").expect("bind");
            let to = s.local_addr();
            let tx = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
            (Box::new(s), Sender::Udp(tx, to))
        }
        _ => {
            let path = dir.join("h.sock");
            let _ = std::fs::remove_file(&path);
            let l = std::os::unix::net::UnixListener::bind(&path).expect("bind");
            let s = hints::open(&format!("unix:{}", path.display())).expect("connect");
            let (w, _) = l.accept().expect("accept");
            (s, Sender::Unix(w))
        }
    };
    let server = Endpoint::server(v4(), ConnectionConfig::default()).expect("server");
    let client = EndpointBuilder::new()
        .hints(source)
        .bind(v4())
        .expect("client");
    let config = ConnectionConfig {
        cc: CcConfig::from_name("cubic").expect("cubic"),
        ..ConnectionConfig::default()
    };
    let conn = client
        .connect(server.local_addr(), config)
        .await
        .expect("connect");
    let sconn = server.accept().await.expect("accept");
    let reader = tokio::spawn(async move { while sconn.recv().await.is_some() {} });
    let writer = {
        let conn = conn.clone();
        tokio::spawn(async move {
            let chunk = peregrine::Bytes::from(vec![7u8; 16 * 1024]);
            while conn.send(1, chunk.clone()).await.is_ok() {}
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut samples = Vec::with_capacity(n);
    let (mut applied, mut sum) = (0u64, 0u64);
    for _ in 0..n {
        // CongestionFree changes nothing for CUBIC: the transfer goes on.
        let line = format!(
            "{{\"t_ms\": {:.3}, \"kind\": \"restored\"}}\n",
            hints::unix_now().as_secs_f64() * 1e3
        );
        sender.send(&line);
        let mut s = client.hint_stats().remove(0);
        for _ in 0..2000 {
            if s.applied > applied {
                break;
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
            s = client.hint_stats().remove(0);
        }
        assert!(s.applied > applied, "hint not applied: {s:?}");
        samples.push((s.late_ns_sum - sum) as f64 / 1e3);
        applied = s.applied;
        sum = s.late_ns_sum;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    writer.abort();
    reader.abort();
    let _ = std::fs::remove_dir_all(&dir);
    samples
}

fn q(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(200, |a| a.parse().expect("N: a number of hints"));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "source → controller, {n} hints each, bulk transfer running; load average {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "{:<6} {:>10} {:>10} {:>10} {:>10}",
        "source", "p50 µs", "p90 µs", "p99 µs", "max µs"
    );
    for kind in ["udp", "unix"] {
        let mut s = measure(kind, n).await;
        s.sort_by(f64::total_cmp);
        println!(
            "{kind:<6} {:>10.0} {:>10.0} {:>10.0} {:>10.0}",
            q(&s, 0.5),
            q(&s, 0.9),
            q(&s, 0.99),
            s[s.len() - 1]
        );
    }
}
