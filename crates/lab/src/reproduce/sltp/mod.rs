//! Seed 003 §VI on this machine (`peregrine reproduce sltp`).
//!
//! "Network time" — send a buffer, receive it back — for buffer sizes from
//! 1 KiB to 1 MiB, Peregrine (through `peregrine perf` echo mode, as a
//! subprocess) against the kernel's TCP (an in-process echo over loopback),
//! at 0, 25, 50, 75 and 100 % background CPU load from hog processes this
//! command starts and stops itself; plus the latency, bandwidth and burst
//! Peregrine's packet-pair probe measured on each connection. Writes
//! `DIR/sltp/report.md` (tables, SVG plots, the seed's findings beside ours),
//! CSVs and `summary.json`.
//!
//! With `ethernet` (`--ethernet`) the two ends are not on loopback but in
//! two network namespaces joined by a veth pair with a 1,500-byte MTU
//! shaped to 1 Gbit/s ([`crate::netns::VethPair`]): servers in one, clients
//! in the other, so kernel TCP's segments are the size of Peregrine's
//! datagrams, as on the seed's Ethernet. `summary.json`'s `run.link` says
//! which link a run used.
//!
//! Key choices: the transports are interleaved at every point (Peregrine
//! then TCP, connection by connection) so drift on a shared machine hits
//! both alike; every figure is a median of repeated round trips; each load
//! level gets fresh hogs, killed before the next level starts.

pub mod hog;
mod markdown;
pub mod perf;
mod plots;
pub mod report;
pub mod stats;
pub mod tcp_echo;
pub mod wire;

use crate::netns::{Side, VethPair};
use crate::progress::Progress;
use anyhow::{bail, Context};
use report::{
    fmt_size, AchievedLoad, Link, LinkKind, Machine, Measurement, Results, RunInfo, Transport,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Options of the reproduction (`peregrine reproduce sltp`).
#[derive(Debug, Clone)]
pub struct Options {
    /// A short run (1, 16, 256 KiB and 1 MiB; one connection of 5 round
    /// trips per point), well under a minute.
    pub quick: bool,
    /// Output directory; everything goes to `out/sltp/`.
    pub out: PathBuf,
    /// Transports to measure (Peregrine needs `peregrine perf`).
    pub transports: Vec<Transport>,
    /// Buffer sizes in bytes (empty: powers of two from 1 KiB to 1 MiB).
    pub sizes: Vec<u64>,
    /// Background loads in percent (empty: 0, 25, 50, 75, 100).
    pub loads: Vec<u8>,
    /// Connections per point and transport (default 5; 1 with `quick`).
    pub connections: Option<usize>,
    /// Round trips per connection (default 10; 5 with `quick`).
    pub echoes: Option<usize>,
    /// The `peregrine` binary: it runs the hogs (`peregrine hog`) and, unless
    /// `perf_bin` is given, `peregrine perf`.
    pub peregrine_bin: PathBuf,
    /// The binary providing `perf` (default: `peregrine_bin`). For tests.
    pub perf_bin: Option<PathBuf>,
    /// The command line, for the report.
    pub command: String,
    /// Measure between two network namespaces joined by a veth pair of
    /// [`ETHERNET_MTU_BYTES`] shaped to [`ETHERNET_RATE_BPS`] instead of
    /// over loopback (`--ethernet`; needs root).
    pub ethernet: bool,
}

/// The MTU of the `--ethernet` veth pair: the seed's Ethernet.
pub const ETHERNET_MTU_BYTES: u32 = 1500;
/// The rate each direction of the `--ethernet` veth pair is shaped to: the
/// seed's 1 Gbit/s Ethernet.
pub const ETHERNET_RATE_BPS: u64 = 1_000_000_000;

impl Options {
    /// The defaults of the command, running the binary `peregrine_bin`.
    pub fn new(peregrine_bin: PathBuf) -> Options {
        Options {
            quick: false,
            out: PathBuf::from("out"),
            transports: vec![Transport::Peregrine, Transport::Tcp],
            sizes: Vec::new(),
            loads: Vec::new(),
            connections: None,
            echoes: None,
            peregrine_bin,
            perf_bin: None,
            command: "peregrine reproduce sltp".into(),
            ethernet: false,
        }
    }
}

/// What [`run`] produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Everything measured (what `summary.json` and the report are made from).
    pub results: Results,
    /// `summary.json` as written (the seed's findings beside ours included).
    pub summary: report::SltpSummary,
    /// The report written.
    pub report: PathBuf,
}

/// The measurement plan after defaults and checks.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    sizes_bytes: Vec<u64>,
    loads_pct: Vec<u8>,
    connections: usize,
    echoes: usize,
    transports: Vec<Transport>,
}

fn plan(args: &Options) -> anyhow::Result<Plan> {
    let sizes_bytes = if !args.sizes.is_empty() {
        args.sizes.clone()
    } else if args.quick {
        vec![1 << 10, 16 << 10, 256 << 10, 1 << 20]
    } else {
        (10..=20).map(|p| 1u64 << p).collect()
    };
    if let Some(bad) = sizes_bytes
        .iter()
        .find(|s| **s == 0 || **s > tcp_echo::MAX_BUFFER_BYTES as u64)
    {
        bail!(
            "--sizes: {bad} is not within 1 ..= {} bytes",
            tcp_echo::MAX_BUFFER_BYTES
        );
    }
    let loads_pct = if args.loads.is_empty() {
        vec![0, 25, 50, 75, 100]
    } else {
        args.loads.clone()
    };
    if let Some(bad) = loads_pct.iter().find(|l| **l > 100) {
        bail!("--loads: {bad} is not a percentage (0 ..= 100)");
    }
    let connections = args.connections.unwrap_or(if args.quick { 1 } else { 5 });
    let echoes = args.echoes.unwrap_or(if args.quick { 5 } else { 10 });
    if connections == 0 || echoes == 0 {
        bail!("--connections and --echoes must be at least 1");
    }
    let mut transports = args.transports.clone();
    transports.sort();
    transports.dedup();
    if transports.is_empty() {
        bail!("--transports: name at least one of peregrine, tcp");
    }
    Ok(Plan {
        sizes_bytes,
        loads_pct,
        connections,
        echoes,
        transports,
    })
}

/// Run the measurements, reporting to `progress`, and write `out/sltp/`.
/// Cost: wall-clock time (real sockets at every load level).
// The reproduction measures wall-clock time on purpose (this is the CLI
// runtime, not the sans-IO core).
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
pub fn run(args: &Options, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    let started = std::time::Instant::now();
    let plan = plan(args)?;
    let exe = args.peregrine_bin.clone();
    let perf_bin = args.perf_bin.clone().unwrap_or_else(|| exe.clone());
    let machine = machine();
    let dir = args.out.join("sltp");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;

    // Made first and dropped last (after the processes in it are killed):
    // its Drop deletes the namespaces on every way out of this function.
    let wire = if args.ethernet {
        Some(VethPair::create(ETHERNET_MTU_BYTES, ETHERNET_RATE_BPS)?)
    } else {
        None
    };
    let link = match &wire {
        Some(w) => Link {
            kind: LinkKind::Veth,
            mtu_bytes: w.mtu_bytes,
            rate_bps: Some(w.rate_bps as f64),
        },
        None => Link {
            kind: LinkKind::Loopback,
            mtu_bytes: std::fs::read_to_string("/sys/class/net/lo/mtu")
                .ok()
                .and_then(|m| m.trim().parse().ok())
                .unwrap_or(0),
            rate_bps: None,
        },
    };
    let peregrine = if plan.transports.contains(&Transport::Peregrine) {
        Some(perf::PerfServer::start(
            &perf_bin,
            &dir.join("perf-server.log"),
            wire.as_ref(),
        )?)
    } else {
        None
    };
    // The echo server's listener lives until the process exits; after the
    // wire is dropped it keeps the (then unnamed) server namespace alive
    // that long, and nothing else.
    let tcp = match &wire {
        None => tcp_echo::TcpEchoServer::start()?,
        Some(w) => w.run_in(Side::Server, || {
            tcp_echo::TcpEchoServer::start_on(VethPair::addr(Side::Server).into())
        })?,
    };

    // With a wire, one more pass after the load levels counts what an echo
    // puts on it (two connections per size and transport, see `wire`).
    let wire_points = if wire.is_some() {
        plan.sizes_bytes.len() * plan.transports.len()
    } else {
        0
    };
    let total =
        plan.loads_pct.len() * plan.sizes_bytes.len() * plan.connections * plan.transports.len()
            + wire_points;
    progress.start("reproduce sltp", total);
    let mut done = 0;
    let hog_bound_s = if args.quick { 120.0 } else { 1800.0 };
    let mut points: BTreeMap<(Transport, u8, u64), Measurement> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut achieved = Vec::new();
    for &load in &plan.loads_pct {
        let hog = hog::Hog::start(&exe, load, machine.cores, hog_bound_s)?;
        if !hog.is_empty() {
            // Let the hogs reach their duty cycle before measuring.
            std::thread::sleep(Duration::from_millis(300));
        }
        for &size in &plan.sizes_bytes {
            for _ in 0..plan.connections {
                for &t in &plan.transports {
                    progress.status(&format!("{load} % load, {}, {}", t.name(), fmt_size(size)));
                    let m = points
                        .entry((t, load, size))
                        .or_insert_with(|| Measurement {
                            transport: t,
                            load_pct: load,
                            size_bytes: size,
                            times_ms: Vec::new(),
                            probes: Vec::new(),
                        });
                    let outcome = match (t, &peregrine) {
                        (Transport::Peregrine, Some(server)) => perf::echo_client(
                            &perf_bin,
                            server.addr,
                            size,
                            plan.echoes,
                            wire.as_ref(),
                        )
                        .map(|r| {
                            m.probes.extend(r.probe);
                            r.echo.map(|e| e.times_ms).unwrap_or_default()
                        }),
                        // Not reached (the server is started whenever Peregrine is
                        // planned), but an error is cheaper than a panic to keep so.
                        (Transport::Peregrine, None) => {
                            Err(anyhow::anyhow!("no perf server running"))
                        }
                        (Transport::Tcp, _) => {
                            let echo =
                                || tcp_echo::echo_round_trips(tcp.addr, size as usize, plan.echoes);
                            match &wire {
                                None => echo(),
                                Some(w) => w.run_in(Side::Client, echo),
                            }
                        }
                    };
                    match outcome {
                        Ok(times) => m.times_ms.extend(times),
                        Err(e) => {
                            let msg =
                                format!("{} at {load} % load, {}: {e:#}", t.name(), fmt_size(size));
                            progress.warn(&msg);
                            failures.push(msg);
                        }
                    }
                    done += 1;
                    progress.update(done, total);
                }
            }
        }
        achieved.push(AchievedLoad {
            load_pct: load,
            hog_cpu_pct: hog.stop(machine.cores),
        });
    }
    let mut wire_per_echo = Vec::new();
    if let Some(w) = &wire {
        for &size in &plan.sizes_bytes {
            for &t in &plan.transports {
                progress.status(&format!("on the wire: {}, {}", t.name(), fmt_size(size)));
                let counted = match (t, &peregrine) {
                    (Transport::Peregrine, Some(server)) => wire::measure(w, t, size, |echoes| {
                        perf::echo_client(&perf_bin, server.addr, size, echoes, Some(w)).map(drop)
                    }),
                    (Transport::Peregrine, None) => Err(anyhow::anyhow!("no perf server running")),
                    (Transport::Tcp, _) => wire::measure(w, t, size, |echoes| {
                        w.run_in(Side::Client, || {
                            tcp_echo::echo_round_trips(tcp.addr, size as usize, echoes)
                        })
                        .map(drop)
                    }),
                };
                match counted {
                    Ok(c) => wire_per_echo.push(c),
                    Err(e) => {
                        let msg = format!("{} on the wire, {}: {e:#}", t.name(), fmt_size(size));
                        progress.warn(&msg);
                        failures.push(msg);
                    }
                }
                done += 1;
                progress.update(done, total);
            }
        }
    }
    progress.finish();
    drop(peregrine);

    let results = Results {
        info: RunInfo {
            command: args.command.clone(),
            quick: args.quick,
            sizes_bytes: plan.sizes_bytes.clone(),
            loads_pct: plan.loads_pct.clone(),
            connections: plan.connections,
            echoes_per_connection: plan.echoes,
            link,
            elapsed_s: started.elapsed().as_secs_f64(),
            achieved_load: achieved,
            machine,
        },
        measurements: points
            .into_values()
            .filter(|m| !m.times_ms.is_empty())
            .collect(),
        wire_per_echo,
        failures,
    };
    let report = write_outputs(&results, &dir)?;
    Ok(Outcome {
        summary: report::summary_json(&results),
        results,
        report,
    })
}

/// Write CSVs, `summary.json`, the SVG plots and `report.md` into `dir`;
/// the path of the report.
pub fn write_outputs(r: &Results, dir: &Path) -> anyhow::Result<PathBuf> {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write("network_time.csv", &report::network_time_csv(r))?;
    write("samples.csv", &report::samples_csv(r))?;
    write("probe.csv", &report::probe_csv(r))?;
    let json = serde_json::to_string_pretty(&report::summary_json(r))?;
    write("summary.json", &(json + "\n"))?;
    let mut plot_files = Vec::new();
    for &load in &r.info.loads_pct {
        let name = format!("network_time_load{load}.svg");
        plots::network_time(r, load, &dir.join(&name))?;
        plot_files.push((
            format!("Network time at {load} % load (seed Figs. 7, 9, 10)"),
            name,
        ));
    }
    if r.measurements
        .iter()
        .any(|m| m.transport == Transport::Peregrine)
        && r.measurements.iter().any(|m| m.transport == Transport::Tcp)
    {
        plots::ratio(r, &dir.join("ratio.svg"))?;
        plot_files.push((
            "Peregrine / TCP time ratio by load (seed Fig. 10)".to_string(),
            "ratio.svg".to_string(),
        ));
    }
    if r.measurements.iter().any(|m| !m.probes.is_empty()) {
        for (q, name, caption) in [
            (
                plots::ProbeQuantity::Latency,
                "probe_latency.svg",
                "Packet-pair latency (seed Fig. 12)",
            ),
            (
                plots::ProbeQuantity::Bandwidth,
                "probe_bandwidth.svg",
                "Packet-pair bandwidth (seed Fig. 11)",
            ),
            (
                plots::ProbeQuantity::Burst,
                "probe_burst.svg",
                "Packet-pair burst (seed Fig. 13)",
            ),
        ] {
            plots::probe(r, q, &dir.join(name))?;
            plot_files.push((caption.to_string(), name.to_string()));
        }
    }
    let path = dir.join("report.md");
    std::fs::write(&path, markdown::report_md(r, &plot_files))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// What the report says about the machine (best effort: unknown fields say so).
fn machine() -> Machine {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
    let loadavg = read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    Machine {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_model,
        kernel: if kernel.is_empty() {
            "unknown".into()
        } else {
            kernel
        },
        loadavg_start: if loadavg.is_empty() {
            "unknown".into()
        } else {
            loadavg
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Options {
        let mut o = Options::new(PathBuf::from("peregrine"));
        let list = |v: &str| v.split(',').map(|x| x.parse().expect("a number")).collect();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || *it.next().expect("a value");
            match *a {
                "--quick" => o.quick = true,
                "--transports" => {
                    o.transports = value()
                        .split(',')
                        .map(|t| t.parse().expect("a transport"))
                        .collect()
                }
                "--sizes" => o.sizes = list(value()),
                "--loads" => {
                    o.loads = value()
                        .split(',')
                        .map(|x| x.parse().expect("a load"))
                        .collect()
                }
                "--echoes" => o.echoes = Some(value().parse().expect("a number")),
                other => panic!("unknown test option {other}"),
            }
        }
        o
    }

    #[test]
    fn default_and_quick_plans() {
        let full = plan(&parse(&[])).expect("default plan");
        assert_eq!(full.sizes_bytes.len(), 11);
        assert_eq!(full.sizes_bytes.first(), Some(&1024));
        assert_eq!(full.sizes_bytes.last(), Some(&(1 << 20)));
        assert_eq!(full.loads_pct, vec![0, 25, 50, 75, 100]);
        assert_eq!(full.transports, vec![Transport::Peregrine, Transport::Tcp]);
        let quick = plan(&parse(&["--quick"])).expect("quick plan");
        assert_eq!(quick.sizes_bytes.len(), 4);
        assert_eq!(quick.connections, 1);
        let tcp = plan(&parse(&[
            "--transports",
            "tcp",
            "--sizes",
            "1000,2000",
            "--loads",
            "0,50",
        ]))
        .expect("custom plan");
        assert_eq!(tcp.transports, vec![Transport::Tcp]);
        assert_eq!(tcp.sizes_bytes, vec![1000, 2000]);
        assert_eq!(tcp.loads_pct, vec![0, 50]);
    }

    #[test]
    fn bad_plans_name_the_option() {
        let err = |a: &[&str]| format!("{:#}", plan(&parse(a)).unwrap_err());
        assert!(err(&["--loads", "120"]).contains("--loads"));
        assert!(err(&["--sizes", "0"]).contains("--sizes"));
        assert!(err(&["--echoes", "0"]).contains("--echoes"));
    }

    #[test]
    fn writes_every_output_from_recorded_results() {
        let r = report::tests::fixture();
        let dir = std::env::temp_dir().join(format!("peregrine-sltp-test-{}", std::process::id()));
        let report = write_outputs(&r, &dir).expect("outputs written");
        for f in [
            "report.md",
            "network_time.csv",
            "samples.csv",
            "probe.csv",
            "summary.json",
            "network_time_load0.svg",
            "network_time_load100.svg",
            "ratio.svg",
            "probe_latency.svg",
            "probe_bandwidth.svg",
            "probe_burst.svg",
        ] {
            let len = std::fs::metadata(dir.join(f)).map(|m| m.len()).unwrap_or(0);
            assert!(len > 0, "{f} missing or empty");
        }
        // summary.json is the typed summary, serialized.
        let summary = report::summary_json(&r);
        let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary readable");
        assert_eq!(
            text,
            serde_json::to_string_pretty(&summary).expect("serializes") + "\n"
        );
        assert_eq!(summary.points.len(), r.measurements.len());
        assert_eq!(summary.findings.len(), 6);
        let p = summary
            .points
            .iter()
            .find(|p| p.transport == "tcp" && p.load_pct == 100)
            .expect("a TCP point at 100 % load");
        assert!(p.network_time_ms.is_some() && p.probe.is_none(), "{p:?}");
        let md = std::fs::read_to_string(report).expect("report readable");
        assert!(md.contains("network_time_load100.svg"));
        let svg =
            std::fs::read_to_string(dir.join("network_time_load0.svg")).expect("svg readable");
        assert!(svg.contains("<svg") && svg.contains("kernel TCP"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
