//! Results of `peregrine reproduce sltp` and everything written from them:
//! CSVs, `summary.json` and `report.md` (with the seed's findings beside
//! ours). Pure functions of a [`Results`] value, so the report can be
//! regenerated and tested from recorded data without running anything.

use super::perf::ProbeReport;
use super::stats::{median, Summary};
use serde::Serialize;
use std::fmt::Write as _;

/// Which transport a measurement is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Peregrine over UDP, through `peregrine perf` echo mode.
    Peregrine,
    /// The kernel's TCP, through the in-process echo.
    Tcp,
}

impl std::str::FromStr for Transport {
    type Err = anyhow::Error;

    /// `peregrine` or `tcp`.
    fn from_str(s: &str) -> anyhow::Result<Transport> {
        match s {
            "peregrine" => Ok(Transport::Peregrine),
            "tcp" => Ok(Transport::Tcp),
            other => anyhow::bail!("unknown transport {other:?} (peregrine or tcp)"),
        }
    }
}

impl Transport {
    /// Lower-case name used in files.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Peregrine => "peregrine",
            Transport::Tcp => "tcp",
        }
    }
}

/// All the round trips measured at one (transport, load, size) point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measurement {
    /// Transport measured.
    pub transport: Transport,
    /// Background CPU load, percent.
    pub load_pct: u8,
    /// Buffer sent and received back, bytes.
    pub size_bytes: u64,
    /// Every round-trip time, milliseconds (all connections, in order).
    pub times_ms: Vec<f64>,
    /// One packet-pair probe per Peregrine connection that reported one.
    pub probes: Vec<ProbeReport>,
}

impl Measurement {
    /// Summary of the round-trip times.
    pub fn summary(&self) -> Option<Summary> {
        Summary::of(&self.times_ms)
    }

    /// Median of each probe quantity over the connections; `None` when no
    /// connection reported a probe.
    pub fn probe_median(&self) -> Option<ProbeReport> {
        let pick =
            |f: fn(&ProbeReport) -> f64| median(&self.probes.iter().map(f).collect::<Vec<_>>());
        Some(ProbeReport {
            rtt_ms: pick(|p| p.rtt_ms)?,
            bandwidth_bps: pick(|p| p.bandwidth_bps)?,
            burst_bytes: pick(|p| p.burst_bytes)?,
        })
    }
}

/// The machine the run was on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    /// Logical cores (one hog per core).
    pub cores: usize,
    /// CPU model from /proc/cpuinfo.
    pub cpu_model: String,
    /// Kernel release.
    pub kernel: String,
    /// /proc/loadavg when the run started (the machine may be shared).
    pub loadavg_start: String,
}

/// The load a level asked for and the CPU share its hogs actually got.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AchievedLoad {
    /// Requested background load, percent.
    pub load_pct: u8,
    /// CPU the hogs used over the level, percent of all cores; `None` with
    /// no hog (0 %) or when /proc could not be read.
    pub hog_cpu_pct: Option<f64>,
}

/// The link between the two ends: every figure of a run used the same one.
/// In `summary.json` as `run.link`, e.g. `{"kind": "veth", "mtu_bytes":
/// 1500, "rate_bps": 1e9}` or `{"kind": "loopback", "mtu_bytes": 65536,
/// "rate_bps": null}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Link {
    /// `loopback` (both ends in this host's namespace on `lo`) or `veth`
    /// (`--ethernet`: two network namespaces joined by a shaped veth pair).
    pub kind: LinkKind,
    /// The MTU both ends used, bytes (loopback: `lo`'s, read from /sys;
    /// 0 if unreadable).
    pub mtu_bytes: u32,
    /// The shaped rate of each direction, bit/s; `None` (null): not shaped.
    pub rate_bps: Option<f64>,
}

/// [`Link::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    /// The host's loopback device.
    Loopback,
    /// A veth pair between two network namespaces.
    Veth,
}

impl Link {
    /// One line for the report: what the link was.
    pub fn describe(&self) -> String {
        match self.kind {
            LinkKind::Loopback => format!(
                "loopback (both ends on `lo` in one namespace, MTU {} bytes, TCP segment offloads on, not shaped)",
                self.mtu_bytes
            ),
            LinkKind::Veth => format!(
                "a veth pair between two network namespaces (`--ethernet`): MTU {} bytes, shaped to {} Mbit/s \
                 each way by `tc tbf` on both ends, whose 4-frame bucket cuts TSO/GSO super-packets into \
                 MTU-sized frames as a NIC would",
                self.mtu_bytes,
                self.rate_bps.map_or("?".into(), |r| format!("{:.0}", r / 1e6))
            ),
        }
    }
}

/// What was run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// The command line.
    pub command: String,
    /// Whether `--quick` was given.
    pub quick: bool,
    /// Buffer sizes, bytes.
    pub sizes_bytes: Vec<u64>,
    /// Background loads, percent.
    pub loads_pct: Vec<u8>,
    /// Connections per point (each with its own probe).
    pub connections: usize,
    /// Echo round trips per connection.
    pub echoes_per_connection: usize,
    /// The link every figure of this run used.
    pub link: Link,
    /// Wall-clock length of the run, seconds.
    pub elapsed_s: f64,
    /// Per load level, what the hogs achieved.
    pub achieved_load: Vec<AchievedLoad>,
    /// The machine.
    pub machine: Machine,
}

/// Everything one run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Results {
    /// What was run.
    pub info: RunInfo,
    /// One entry per (transport, load, size) point measured.
    pub measurements: Vec<Measurement>,
    /// With `--ethernet`: what one echo put on the wire, per transport and
    /// size (measured after the load levels, with no hog running); empty
    /// over loopback.
    pub wire_per_echo: Vec<super::wire::WireEcho>,
    /// Measurements that failed, one line each (the run goes on).
    pub failures: Vec<String>,
}

impl Results {
    /// The measurement at one point, if it was taken.
    pub fn point(&self, t: Transport, load_pct: u8, size_bytes: u64) -> Option<&Measurement> {
        self.measurements
            .iter()
            .find(|m| m.transport == t && m.load_pct == load_pct && m.size_bytes == size_bytes)
    }

    fn median_ms(&self, t: Transport, load_pct: u8, size_bytes: u64) -> Option<f64> {
        self.point(t, load_pct, size_bytes)?
            .summary()
            .map(|s| s.median)
    }

    /// Peregrine's median time over TCP's at one point (> 1: TCP faster).
    pub fn ratio(&self, load_pct: u8, size_bytes: u64) -> Option<f64> {
        let p = self.median_ms(Transport::Peregrine, load_pct, size_bytes)?;
        let t = self.median_ms(Transport::Tcp, load_pct, size_bytes)?;
        (t > 0.0).then_some(p / t)
    }
}

/// "1 KiB", "64 KiB", "1 MiB", or bytes when not a whole KiB.
pub fn fmt_size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.decimals$}"))
}

/// Effective rate of an echo: both directions' bytes over the round trip, MB/s.
pub fn echo_rate_mb_s(size_bytes: u64, time_ms: f64) -> f64 {
    2.0 * size_bytes as f64 / (time_ms / 1e3) / 1e6
}

/// `network_time.csv`: one row per point.
pub fn network_time_csv(r: &Results) -> String {
    let mut s = String::from(
        "transport,load_pct,size_bytes,count,median_ms,mean_ms,min_ms,max_ms,echo_mb_per_s\n",
    );
    for m in &r.measurements {
        if let Some(x) = m.summary() {
            let _ = writeln!(
                s,
                "{},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.3}",
                m.transport.name(),
                m.load_pct,
                m.size_bytes,
                x.count,
                x.median,
                x.mean,
                x.min,
                x.max,
                echo_rate_mb_s(m.size_bytes, x.median)
            );
        }
    }
    s
}

/// `samples.csv`: every round trip.
pub fn samples_csv(r: &Results) -> String {
    let mut s = String::from("transport,load_pct,size_bytes,index,time_ms\n");
    for m in &r.measurements {
        for (i, t) in m.times_ms.iter().enumerate() {
            let _ = writeln!(
                s,
                "{},{},{},{i},{t:.6}",
                m.transport.name(),
                m.load_pct,
                m.size_bytes
            );
        }
    }
    s
}

/// `probe.csv`: the packet-pair medians per (load, size).
pub fn probe_csv(r: &Results) -> String {
    let mut s = String::from("load_pct,size_bytes,probes,rtt_ms,bandwidth_bps,burst_bytes\n");
    for m in r
        .measurements
        .iter()
        .filter(|m| m.transport == Transport::Peregrine)
    {
        if let Some(p) = m.probe_median() {
            let _ = writeln!(
                s,
                "{},{},{},{:.6},{:.0},{:.0}",
                m.load_pct,
                m.size_bytes,
                m.probes.len(),
                p.rtt_ms,
                p.bandwidth_bps,
                p.burst_bytes
            );
        }
    }
    s
}

/// One of the seed's findings and what this run saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Where in seed 003 (figure).
    pub figure: &'static str,
    /// What the seed reports.
    pub seed: &'static str,
    /// What this run measured, in one sentence with numbers.
    pub ours: String,
}

/// The seed's §VI findings (docs/seed-results.md) beside this run's numbers.
pub fn findings(r: &Results) -> Vec<Finding> {
    let sizes = &r.info.sizes_bytes;
    let loads = &r.info.loads_pct;
    let ratio_over = |load: u8, pred: &dyn Fn(u64) -> bool| {
        let v: Vec<f64> = sizes
            .iter()
            .filter(|s| pred(**s))
            .filter_map(|s| r.ratio(load, *s))
            .collect();
        median(&v)
    };
    let mut out = Vec::new();

    let faster: Vec<String> = sizes
        .iter()
        .filter(|s| r.ratio(0, **s).is_some_and(|x| x < 1.0))
        .map(|s| fmt_size(*s))
        .collect();
    let measured0 = sizes.iter().filter(|s| r.ratio(0, **s).is_some()).count();
    out.push(Finding {
        figure: "Fig. 7 (PC to PC, no load)",
        seed: "SLTP beats TCP at larger buffer sizes on machines with spare CPU and memory.",
        ours: if measured0 == 0 {
            "not measured (no point with both transports at 0 % load)".into()
        } else {
            format!(
                "at 0 % load Peregrine's median network time is below TCP's at {} of {measured0} sizes{}; \
                 median Peregrine/TCP time ratio {} below 64 KiB and {} from 64 KiB up.",
                faster.len(),
                if faster.is_empty() { String::new() } else { format!(" ({})", faster.join(", ")) },
                opt(ratio_over(0, &|s| s < 65536), 2),
                opt(ratio_over(0, &|s| s >= 65536), 2),
            )
        },
    });
    out.push(Finding {
        figure: "Fig. 9 (RSU to RSU, no load)",
        seed: "On constrained single-core MIPS RSUs, kernel TCP slightly outperforms SLTP.",
        ours: "not reproducible here (no RSU hardware); the 0 % rows above are the same experiment on this machine."
            .into(),
    });
    let by_load: Vec<String> = loads
        .iter()
        .map(|l| format!("{l} %: {}", opt(ratio_over(*l, &|_| true), 2)))
        .collect();
    out.push(Finding {
        figure: "Fig. 10 (network time under load)",
        seed: "As the load increases SLTP underperforms TCP (fewer user-space cycles); significant only at very high load.",
        ours: format!("median over sizes of the Peregrine/TCP time ratio, by load: {}.", by_load.join(", ")),
    });
    let probe_over = |load: u8, pred: &dyn Fn(u64) -> bool, f: fn(&ProbeReport) -> f64| {
        let v: Vec<f64> = sizes
            .iter()
            .filter(|s| pred(**s))
            .filter_map(|s| r.point(Transport::Peregrine, load, *s)?.probe_median())
            .map(|p| f(&p))
            .collect();
        median(&v)
    };
    let per_load =
        |pred: &dyn Fn(u64) -> bool, f: fn(&ProbeReport) -> f64, scale: f64, d: usize| {
            loads
                .iter()
                .map(|l| {
                    format!(
                        "{l} %: {}",
                        opt(probe_over(*l, pred, f).map(|x| x * scale), d)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
    out.push(Finding {
        figure: "Fig. 11 (bandwidth under load)",
        seed: "Differences only for small packets; past ~2 KB the bandwidth falls to ≈ 2.5 MB/s.",
        ours: format!(
            "packet-pair bandwidth (MB/s), median over sizes ≥ 2 KiB, by load: {}.",
            per_load(&|s| s >= 2048, |p| p.bandwidth_bps, 1.0 / 8e6, 1)
        ),
    });
    out.push(Finding {
        figure: "Fig. 12 (latency under load)",
        seed: "Latency increases with load, especially past 50 KB.",
        ours: format!(
            "packet-pair latency (ms), median over sizes ≥ 64 KiB, by load: {}; below 64 KiB: {}.",
            per_load(&|s| s >= 65536, |p| p.rtt_ms, 1.0, 3),
            per_load(&|s| s < 65536, |p| p.rtt_ms, 1.0, 3)
        ),
    });
    out.push(Finding {
        figure: "Fig. 13 (burst under load)",
        seed: "High load hurts the burst, especially for small packets; past ~10 KB the burst is severely reduced.",
        ours: format!(
            "packet-pair burst (KiB), sizes ≤ 8 KiB by load: {}; sizes ≥ 16 KiB: {}.",
            per_load(&|s| s <= 8192, |p| p.burst_bytes, 1.0 / 1024.0, 1),
            per_load(&|s| s >= 16384, |p| p.burst_bytes, 1.0 / 1024.0, 1)
        ),
    });
    out
}

/// `summary.json`: the run, the medians per point and the findings (the
/// seed's numbers beside ours), fields in the order written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SltpSummary {
    /// Which seed and section this reproduces.
    pub seed: &'static str,
    /// How the run was made.
    pub run: RunInfo,
    /// One entry per measured (transport, load, size) point.
    pub points: Vec<PointSummary>,
    /// The seed's findings beside this run's numbers.
    pub findings: Vec<Finding>,
    /// With `--ethernet`: frames and bytes each way per echo and their
    /// serialisation time, per transport and size (empty over loopback).
    pub wire_per_echo: Vec<super::wire::WireEcho>,
    /// Measurements that failed (one sentence each).
    pub failures: Vec<String>,
}

/// One measured point in `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointSummary {
    /// `peregrine` or `tcp`.
    pub transport: &'static str,
    /// Background CPU load, percent.
    pub load_pct: u8,
    /// Buffer sent and received back, bytes.
    pub size_bytes: u64,
    /// The round-trip times' summary.
    pub network_time_ms: Option<Summary>,
    /// The packet-pair probe's medians (Peregrine only).
    pub probe: Option<ProbeReport>,
}

/// `summary.json` of `r`. O(points × round trips).
pub fn summary_json(r: &Results) -> SltpSummary {
    SltpSummary {
        seed: "003 (SLTP) §VI",
        run: r.info.clone(),
        points: r
            .measurements
            .iter()
            .map(|m| PointSummary {
                transport: m.transport.name(),
                load_pct: m.load_pct,
                size_bytes: m.size_bytes,
                network_time_ms: m.summary(),
                probe: m.probe_median(),
            })
            .collect(),
        findings: findings(r),
        wire_per_echo: r.wire_per_echo.clone(),
        failures: r.failures.clone(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Recorded data: 1 KiB and 1 MiB at 0 and 100 % load; Peregrine at
    /// 1 MiB / 0 % is missing (a failed point).
    pub(crate) fn fixture() -> Results {
        let probe = |rtt_ms, mb_s: f64, burst_kib: f64| ProbeReport {
            rtt_ms,
            bandwidth_bps: mb_s * 8e6,
            burst_bytes: burst_kib * 1024.0,
        };
        let m = |t, load_pct, size_bytes, times_ms: &[f64], probes: Vec<ProbeReport>| Measurement {
            transport: t,
            load_pct,
            size_bytes,
            times_ms: times_ms.to_vec(),
            probes,
        };
        use Transport::{Peregrine as P, Tcp as T};
        Results {
            info: RunInfo {
                command: "peregrine reproduce sltp --quick".into(),
                quick: true,
                sizes_bytes: vec![1024, 1 << 20],
                loads_pct: vec![0, 100],
                connections: 2,
                echoes_per_connection: 3,
                link: Link {
                    kind: LinkKind::Loopback,
                    mtu_bytes: 65536,
                    rate_bps: None,
                },
                elapsed_s: 12.0,
                achieved_load: vec![
                    AchievedLoad {
                        load_pct: 0,
                        hog_cpu_pct: None,
                    },
                    AchievedLoad {
                        load_pct: 100,
                        hog_cpu_pct: Some(61.5),
                    },
                ],
                machine: Machine {
                    cores: 2,
                    cpu_model: "Test CPU".into(),
                    kernel: "6.0".into(),
                    loadavg_start: "0.1 0.2 0.3".into(),
                },
            },
            measurements: vec![
                m(
                    P,
                    0,
                    1024,
                    &[0.2, 0.3, 0.1, 0.2, 0.2, 9.0],
                    vec![probe(0.05, 800.0, 16.0), probe(0.07, 600.0, 8.0)],
                ),
                m(T, 0, 1024, &[0.1, 0.1, 0.1, 0.2, 0.1, 0.1], vec![]),
                m(T, 0, 1 << 20, &[2.0, 2.0, 3.0], vec![]),
                m(P, 100, 1024, &[0.8, 0.9, 1.0], vec![probe(0.5, 100.0, 4.0)]),
                m(T, 100, 1024, &[0.4, 0.4, 0.4], vec![]),
                m(
                    P,
                    100,
                    1 << 20,
                    &[40.0, 50.0, 60.0],
                    vec![probe(0.9, 50.0, 2.0)],
                ),
                m(T, 100, 1 << 20, &[10.0, 10.0, 10.0], vec![]),
            ],
            wire_per_echo: vec![],
            failures: vec!["peregrine at 0 % load, 1 MiB: perf client failed".into()],
        }
    }

    #[test]
    fn ratios_and_probe_medians() {
        let r = fixture();
        assert_eq!(r.ratio(0, 1024), Some(2.0));
        assert_eq!(r.ratio(100, 1 << 20), Some(5.0));
        assert_eq!(r.ratio(0, 1 << 20), None);
        let p = r
            .point(Transport::Peregrine, 0, 1024)
            .and_then(|m| m.probe_median())
            .expect("two probes");
        assert!((p.rtt_ms - 0.06).abs() < 1e-12);
        assert_eq!(p.bandwidth_bps, 700.0 * 8e6);
        assert_eq!(p.burst_bytes, 12.0 * 1024.0);
        assert_eq!(
            r.point(Transport::Tcp, 0, 1024)
                .and_then(|m| m.probe_median()),
            None
        );
        assert_eq!(fmt_size(1024), "1 KiB");
        assert_eq!(fmt_size(1 << 20), "1 MiB");
        assert_eq!(fmt_size(1500), "1500 B");
        assert!((echo_rate_mb_s(1_000_000, 2.0) - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn csvs_hold_one_row_per_point() {
        let r = fixture();
        let nt = network_time_csv(&r);
        assert_eq!(nt.lines().count(), 1 + r.measurements.len());
        assert!(nt.contains("peregrine,0,1024,6,0.200000,"), "{nt}");
        let samples = samples_csv(&r);
        assert_eq!(samples.lines().count(), 1 + 6 + 6 + 3 + 3 + 3 + 3 + 3);
        let probe = probe_csv(&r);
        assert_eq!(probe.lines().count(), 1 + 3);
        assert!(
            probe.contains("0,1024,2,0.060000,5600000000,12288"),
            "{probe}"
        );
    }

    #[test]
    fn findings_quote_measured_numbers() {
        let f = findings(&fixture());
        assert_eq!(f.len(), 6);
        assert!(
            f[0].ours.contains("below TCP's at 0 of 1 sizes"),
            "{}",
            f[0].ours
        );
        // Ratio by load: 0 % only 1 KiB (2.0); 100 %: median of 2.25 and 5.0.
        assert!(
            f[2].ours.contains("0 %: 2.00, 100 %: 3.62"),
            "{}",
            f[2].ours
        );
        // Bandwidth over sizes >= 2 KiB: only 1 MiB at 100 % has a probe.
        assert!(f[3].ours.contains("0 %: -, 100 %: 50.0"), "{}", f[3].ours);
        let summary = summary_json(&fixture());
        assert_eq!(summary.points.len(), 7);
        assert_eq!(summary.run.machine.cores, 2);
        let json = serde_json::to_value(&summary).expect("serializes");
        assert_eq!(
            json["run"]["link"],
            serde_json::json!({"kind": "loopback", "mtu_bytes": 65536, "rate_bps": null})
        );
        assert_eq!(summary.failures.len(), 1);
        assert!(summary.points[0].network_time_ms.is_some());
    }
}
