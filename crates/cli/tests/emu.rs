//! `peregrine emu` end to end, as root, in network namespaces this test
//! creates (`unshare -n`), so no test traffic touches the machine's own
//! namespace. Where namespaces, TUN or iproute2 are unavailable each
//! test prints `skipped: <why>` and is counted as skipped, not passed.
//!
//! A custom harness (`harness = false`): the same executable is also the
//! small test program the checks run inside the namespaces (`probe …`:
//! a TCP sender/receiver with SHA-256, a UDP echo and pinger, a UDP
//! blaster and sink), so no other binary is needed.

// The probe is a real-network program: sockets and the wall clock.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod emu_env;
use emu_env::environment_problem;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

const PEREGRINE: &str = env!("CARGO_BIN_EXE_peregrine");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("probe") {
        probe(&args[2..]);
        return;
    }
    if args.iter().any(|a| a == "--list") {
        for t in TESTS {
            println!("{}: test", t.0);
        }
        return;
    }
    let filters: Vec<&String> = args[1..].iter().filter(|a| !a.starts_with('-')).collect();
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let skip_reason = environment_problem();
    for (name, test) in TESTS {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        if let Some(why) = &skip_reason {
            println!("test {name} ... skipped: {why}");
            skipped += 1;
            continue;
        }
        let t0 = Instant::now();
        match std::panic::catch_unwind(test) {
            Ok(()) => {
                println!("test {name} ... ok ({:.1} s)", t0.elapsed().as_secs_f64());
                passed += 1;
            }
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    println!("\ntest result: {passed} passed; {failed} failed; {skipped} skipped");
    if failed > 0 {
        std::process::exit(101);
    }
}

type Test = (&'static str, fn());
const TESTS: &[Test] = &[
    (
        "sha256_transfer_over_20ms_12mbps",
        sha256_transfer_over_20ms_12mbps,
    ),
    (
        "trace_link_delivers_what_the_trace_allows",
        trace_link_delivers_what_the_trace_allows,
    ),
    ("nested_delays_add_up", nested_delays_add_up),
    (
        "scenario_link_loss_and_exit_status",
        scenario_link_loss_and_exit_status,
    ),
];

/// `chrt -f 5` where the probes may run real-time (root), so a busy
/// machine delays them less (the emulator's own threads already are);
/// else nothing.
fn realtime_prefix() -> &'static str {
    let ok = Command::new("chrt")
        .args(["-f", "5", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        "chrt -f 5"
    } else {
        ""
    }
}

/// Run `script` (sh) inside a fresh network namespace; returns stdout,
/// panicking with both streams if it fails.
fn in_namespace(script: &str) -> String {
    let me = std::env::current_exe().expect("own path");
    let out = Command::new("unshare")
        .args(["-n", "sh", "-c", script])
        .env("PEREGRINE", PEREGRINE)
        .env("PROBE", me)
        .env("RT", realtime_prefix())
        .env_remove("PEREGRINE_EMU_LEVEL")
        .output()
        .expect("unshare runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "script failed ({}):\n{script}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    stdout
}

/// The `key=value` field of the line starting with `tag`.
fn field(out: &str, tag: &str, key: &str) -> String {
    let line = out
        .lines()
        .find(|l| l.starts_with(tag))
        .unwrap_or_else(|| panic!("no {tag:?} line in:\n{out}"));
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
        .to_string()
}

fn num(out: &str, tag: &str, key: &str) -> f64 {
    field(out, tag, key).parse().expect("a number")
}

fn sha256_transfer_over_20ms_12mbps() {
    // The server in the outer emulator's shell, the client in the inner
    // one, behind the link under test.
    let out = in_namespace(
        r#"
        exec "$PEREGRINE" emu -- sh -c '
          $RT "$PROBE" probe tcp-recv 5001 > /tmp/pg-emu-recv.$$ &
          $RT "$PROBE" probe udp-echo 5002 &
          echo=$!
          "$PEREGRINE" emu --delay 20ms --downlink 12Mbps --uplink 12Mbps -- sh -c "
            $RT \"\$PROBE\" probe udp-ping \$PEREGRINE_EMU_HOST:5002 20 50 200 &&
            $RT \"\$PROBE\" probe tcp-send \$PEREGRINE_EMU_HOST:5001 4194304" || exit 1
          wait %1
          kill $echo
          cat /tmp/pg-emu-recv.$$; rm -f /tmp/pg-emu-recv.$$'
        "#,
    );
    let rtt = num(&out, "ping", "p50_ms");
    assert!(
        (39.5..=46.0).contains(&rtt),
        "median RTT {rtt} ms, expected ≈ 40 ms:\n{out}"
    );
    assert_eq!(num(&out, "ping", "received"), 20.0, "{out}");
    assert_eq!(field(&out, "recv", "bytes"), "4194304", "{out}");
    assert_eq!(field(&out, "send", "sha256"), field(&out, "recv", "sha256"));
    // 4 MiB at 12 Mbit/s takes ≥ 2.8 s; a transfer much faster than the
    // link means the link was not in the path.
    let secs = num(&out, "send", "secs");
    assert!(secs > 2.8, "4 MiB in {secs} s over 12 Mbit/s:\n{out}");
    println!("    median rtt {rtt:.2} ms, 4 MiB in {secs:.2} s, sha256 matches");
}

/// A trace of 10 ms with 7 opportunities (8.4 Mbit/s on average, bursty
/// within the period).
const TRACE: &str = "1\n1\n2\n4\n4\n4\n10\n";

fn trace_link_delivers_what_the_trace_allows() {
    let dir = std::env::temp_dir().join(format!("pg-emu-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let trace = dir.join("t.mm");
    std::fs::write(&trace, TRACE).expect("write trace");
    let log = dir.join("emu.log");
    // The client blasts 1500-byte IP packets (one opportunity each) at
    // 12 Mbit/s into a 50-packet queue for 3 s; the sink counts what
    // arrives between 0.5 s and 2.5 s after its first packet.
    let script = format!(
        r#"
        exec "$PEREGRINE" emu -- sh -c '
          $RT "$PROBE" probe udp-sink 5003 0.5 2.0 &
          "$PEREGRINE" emu --uplink {trace} --queue packets=50 --log {log} -- sh -c "
            $RT \"\$PROBE\" probe udp-blast \$PEREGRINE_EMU_HOST:5003 12 3.0 1472" || exit 1
          wait'
        "#,
        trace = trace.display(),
        log = log.display()
    );
    let out = in_namespace(&script);
    let packets = num(&out, "sink", "packets");
    // 7 opportunities per 10 ms: 1400 in 2 s.
    let expected = 1400.0;
    assert!(
        (packets - expected).abs() <= 0.02 * expected,
        "{packets} packets in 2 s, the trace allows {expected}:\n{out}"
    );
    // The log has the drops of the 50-packet queue and plots.
    let text = std::fs::read_to_string(&log).expect("log written");
    assert!(
        text.contains("u ") && text.contains(" x 1500 queue"),
        "no drops logged"
    );
    let plot = Command::new(PEREGRINE)
        .args(["emu", "plot"])
        .arg(&log)
        .output()
        .expect("plot runs");
    assert!(
        plot.status.success(),
        "{}",
        String::from_utf8_lossy(&plot.stderr)
    );
    let svg = std::fs::read_to_string(dir.join("uplink.svg")).expect("uplink.svg");
    assert!(svg.contains("capacity") && svg.contains("time in the link"));
    let _ = std::fs::remove_dir_all(&dir);
    println!("    {packets} packets in 2 s (trace: {expected})");
}

fn nested_delays_add_up() {
    // Three levels: 10 ms, then 5 ms, then 2 ms. The innermost command
    // pings the outermost host (its echo runs in the test's namespace,
    // outside every emulator); the level-2 command pings its own host.
    let dir = std::env::temp_dir().join(format!("pg-emu-nest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write script");
        p.display().to_string()
    };
    let level3 = write(
        "level3.sh",
        r#"test "$PEREGRINE_EMU_LEVEL" = 3 || exit 9
$RT "$PROBE" probe udp-ping "$TOP:5004" 10 20 100 | sed s/^ping/top/
"#,
    );
    let level2 = write(
        "level2.sh",
        &format!(
            r#""$PEREGRINE" emu --delay 2ms -- sh {level3} || exit 8
$RT "$PROBE" probe udp-ping "$PEREGRINE_EMU_HOST:5005" 10 20 100
"#
        ),
    );
    let level1 = write(
        "level1.sh",
        &format!(
            r#"export TOP="$PEREGRINE_EMU_HOST"
$RT "$PROBE" probe udp-echo 5005 &
e2=$!
"$PEREGRINE" emu --delay 5ms -- sh {level2}
status=$?
kill $e2
exit $status
"#
        ),
    );
    let out = in_namespace(&format!(
        r#"
        $RT "$PROBE" probe udp-echo 5004 &
        echo=$!
        "$PEREGRINE" emu --delay 10ms -- sh {level1}
        status=$?
        kill $echo
        exit $status
        "#
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let top = num(&out, "top", "p50_ms");
    assert_eq!(num(&out, "top", "received"), 10.0, "{out}");
    assert!(
        (34.0..=40.0).contains(&top),
        "3 levels: median RTT {top} ms, expected 34:\n{out}"
    );
    let mid = num(&out, "ping", "p50_ms");
    assert!(
        (10.0..=14.0).contains(&mid),
        "level 2 to its host: median RTT {mid} ms, expected 10:\n{out}"
    );
    println!(
        "    RTT through 3 levels {top:.2} ms (34 asked), level 2 to its host {mid:.2} ms (10)"
    );
}

fn scenario_link_loss_and_exit_status() {
    // `--link FILE.toml:links.N` takes the scenario's link (15 ms each
    // way); `--loss 1` loses everything; the command's exit status is
    // the emulator's.
    let dir = std::env::temp_dir().join(format!("pg-emu-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        r#"duration = "1s"
seed = 3
[[links]]
a = "ue"
b = "server"
rate = "10Mbps"
delay = "15ms"
[[flows]]
src = "ue"
dst = "server"
[[flows.streams]]
app = "bulk"
"#,
    )
    .expect("write scenario");
    let out = in_namespace(&format!(
        r#"
        $RT "$PROBE" probe udp-echo 5006 &
        echo=$!
        "$PEREGRINE" emu --link {s}:links.0 -- sh -c '$RT "$PROBE" probe udp-ping $PEREGRINE_EMU_HOST:5006 10 20 100'
        "$PEREGRINE" emu --loss 1 -- sh -c '$RT "$PROBE" probe udp-ping $PEREGRINE_EMU_HOST:5006 5 20 100 | sed s/^ping/lossy/'
        "$PEREGRINE" emu --delay 1ms -- sh -c 'exit 7'
        echo "status=$?"
        "$PEREGRINE" emu --link {s}:links.5 -- true 2>&1 | sed s/^/bad-link:/
        kill $echo
        "#,
        s = scenario.display()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let rtt = num(&out, "ping", "p50_ms");
    assert!(
        (30.0..=34.0).contains(&rtt),
        "median RTT {rtt} ms, the scenario link gives 30:\n{out}"
    );
    assert_eq!(
        num(&out, "lossy", "received"),
        0.0,
        "--loss 1 let packets through:\n{out}"
    );
    assert!(
        out.contains("status=7"),
        "exit status not passed on:\n{out}"
    );
    assert!(out.contains("links.5: the scenario has 1 link(s)"), "{out}");
    println!("    scenario link median RTT {rtt:.2} ms (30), --loss 1 delivered nothing, exit 7 passed on");
}

// ---------------------------------------------------------------- probe

fn probe(args: &[String]) {
    let arg = |i: usize| {
        args.get(i)
            .unwrap_or_else(|| panic!("probe: argument {i} missing"))
    };
    match arg(0).as_str() {
        "tcp-recv" => tcp_recv(arg(1).parse().expect("port")),
        "tcp-send" => tcp_send(arg(1), arg(2).parse().expect("bytes")),
        "udp-echo" => udp_echo(arg(1).parse().expect("port")),
        "udp-ping" => udp_ping(
            arg(1),
            arg(2).parse().expect("count"),
            arg(3).parse().expect("interval ms"),
            arg(4).parse().expect("size"),
        ),
        "udp-blast" => udp_blast(
            arg(1),
            arg(2).parse().expect("Mbit/s"),
            arg(3).parse().expect("seconds"),
            arg(4).parse().expect("payload bytes"),
        ),
        "udp-sink" => udp_sink(
            arg(1).parse().expect("port"),
            arg(2).parse().expect("skip s"),
            arg(3).parse().expect("window s"),
        ),
        "udp-count" => udp_count(
            arg(1).parse().expect("port"),
            arg(2).parse().expect("seconds"),
        ),
        other => panic!("probe: unknown role {other}"),
    }
}

fn resolve(addr: &str) -> SocketAddr {
    addr.parse().expect("ADDR:PORT")
}

fn tcp_recv(port: u16) {
    let l = TcpListener::bind(("0.0.0.0", port)).expect("bind");
    let (mut s, _) = l.accept().expect("accept");
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 65536];
    let mut total = 0u64;
    loop {
        let n = s.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        total += n as u64;
    }
    println!("recv bytes={total} sha256={:x}", h.finalize());
}

fn tcp_send(addr: &str, bytes: u64) {
    let a = resolve(addr);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut s = loop {
        match TcpStream::connect(a) {
            Ok(s) => break s,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("connect {a}: {e}"),
        }
    };
    let t0 = Instant::now();
    let mut h = Sha256::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut left = bytes;
    let mut buf = vec![0u8; 16384];
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        for b in &mut buf[..n] {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        s.write_all(&buf[..n]).expect("write");
        h.update(&buf[..n]);
        left -= n as u64;
    }
    s.shutdown(std::net::Shutdown::Write).expect("shutdown");
    // Wait for the receiver to close: the data has then arrived.
    let _ = s.read(&mut buf);
    println!(
        "send bytes={bytes} sha256={:x} secs={:.3}",
        h.finalize(),
        t0.elapsed().as_secs_f64()
    );
}

fn udp_echo(port: u16) {
    let s = UdpSocket::bind(("0.0.0.0", port)).expect("bind");
    let mut buf = [0u8; 2048];
    loop {
        let (n, from) = s.recv_from(&mut buf).expect("recv");
        let _ = s.send_to(&buf[..n], from);
    }
}

fn udp_ping(addr: &str, count: u32, interval_ms: u64, size: usize) {
    let a = resolve(addr);
    let s = UdpSocket::bind("0.0.0.0:0").expect("bind");
    s.set_read_timeout(Some(Duration::from_millis(2)))
        .expect("timeout");
    let t0 = Instant::now();
    let mut rtts: Vec<f64> = Vec::new();
    let mut sent_at = vec![None; count as usize];
    let mut buf = vec![0u8; size.max(8)];
    let end = Duration::from_millis(interval_ms * u64::from(count) + 1000);
    let mut next = 0u32;
    while t0.elapsed() < end && (rtts.len() as u32) < count {
        let due = Duration::from_millis(interval_ms * u64::from(next));
        if next < count && t0.elapsed() >= due {
            buf[..4].copy_from_slice(&next.to_be_bytes());
            s.send_to(&buf, a).expect("send");
            sent_at[next as usize] = Some(Instant::now());
            next += 1;
        }
        if let Ok(n) = s.recv(&mut buf) {
            if n >= 4 {
                let i = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if let Some(Some(t)) = sent_at.get(i) {
                    rtts.push(t.elapsed().as_secs_f64() * 1e3);
                }
            }
        }
    }
    rtts.sort_by(f64::total_cmp);
    let pct = |q: f64| {
        rtts.get(((rtts.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let mean = rtts.iter().sum::<f64>() / rtts.len().max(1) as f64;
    println!(
        "ping sent={count} received={} mean_ms={mean:.3} p50_ms={:.3} p99_ms={:.3} min_ms={:.3} max_ms={:.3}",
        rtts.len(),
        pct(0.5),
        pct(0.99),
        pct(0.0),
        pct(1.0)
    );
}

fn udp_blast(addr: &str, mbps: f64, secs: f64, payload: usize) {
    let a = resolve(addr);
    let s = UdpSocket::bind("0.0.0.0:0").expect("bind");
    let buf = vec![0u8; payload];
    let gap = Duration::from_secs_f64((payload + 28) as f64 * 8.0 / (mbps * 1e6));
    let t0 = Instant::now();
    let mut n = 0u64;
    while t0.elapsed().as_secs_f64() < secs {
        let due = gap * n as u32;
        let now = t0.elapsed();
        if now < due {
            std::thread::sleep(due - now);
        }
        let _ = s.send_to(&buf, a);
        n += 1;
    }
    println!("blast packets={n}");
}

fn udp_sink(port: u16, skip_s: f64, window_s: f64) {
    let s = UdpSocket::bind(("0.0.0.0", port)).expect("bind");
    let mut buf = [0u8; 2048];
    s.recv(&mut buf).expect("first packet");
    let t0 = Instant::now();
    let (from, to) = (
        Duration::from_secs_f64(skip_s),
        Duration::from_secs_f64(skip_s + window_s),
    );
    s.set_read_timeout(Some(Duration::from_millis(10)))
        .expect("timeout");
    let mut packets = 0u64;
    while t0.elapsed() < to {
        if s.recv(&mut buf).is_ok() {
            let t = t0.elapsed();
            if t >= from && t < to {
                packets += 1;
            }
        }
    }
    println!("sink packets={packets}");
}

/// CLOCK_MONOTONIC in ns: the clock the emulator's log names its start in.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Count UDP packets and bytes for `secs` after the first one; print the
/// first and last arrival on CLOCK_MONOTONIC (to line up with the trace).
fn udp_count(port: u16, secs: f64) {
    let s = UdpSocket::bind(("0.0.0.0", port)).expect("bind");
    let mut buf = [0u8; 2048];
    let n0 = s.recv(&mut buf).expect("first packet");
    let first = monotonic_ns();
    let end = first + (secs * 1e9) as u64;
    s.set_read_timeout(Some(Duration::from_millis(10)))
        .expect("timeout");
    let (mut packets, mut bytes, mut last) = (1u64, n0 as u64, first);
    loop {
        let r = s.recv(&mut buf);
        let now = monotonic_ns();
        if now >= end {
            break;
        }
        if let Ok(n) = r {
            packets += 1;
            bytes += n as u64;
            last = now;
        }
    }
    println!("count packets={packets} udp_bytes={bytes} first_mono_ns={first} last_mono_ns={last}");
}
