//! Each experiment's run function at a small size, checked through its
//! typed result (and the files it wrote): the reproductions of seeds 001,
//! 002 and 004 and the showcase. Sizes are those the CLI tests used before
//! the experiments moved here, so the suite costs no more.

use peregrine_lab::reproduce::{aqm, fanet, mmwave_cvn, quic_sched};
use peregrine_lab::{showcase, Silent};
use std::path::PathBuf;

/// An empty scratch directory for the test `name`.
fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("peregrine-lab-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a scratch directory");
    d
}

fn read(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// fanet's and mmwave-cvn's compared controllers are the seeds' chosen
/// subsets of the registry, and aqm's contenders run registry controllers:
/// each is a registered name (a renamed controller fails here, not
/// mid-run).
#[test]
fn the_compared_controllers_are_registry_names() {
    let aqm_ccs: Vec<&str> = aqm::CONTENDERS.iter().map(|c| c.cc).collect();
    for name in fanet::CONTROLLERS
        .iter()
        .chain(&mmwave_cvn::CONTROLLERS)
        .chain(&aqm_ccs)
    {
        assert!(
            peregrine_cc::registry::CcConfig::from_name(name).is_ok(),
            "{name} is not in peregrine_cc::registry"
        );
    }
}

#[test]
fn quic_sched_tiny_gives_table1_and_is_deterministic() {
    let dir = tempdir("quic");
    let run = |out: PathBuf| {
        let opts = quic_sched::Options {
            tiny: true,
            out,
            ..quic_sched::Options::default()
        };
        quic_sched::run(&opts, &Silent).expect("runs")
    };
    let o = run(dir.join("a"));
    assert!(o.console.contains("Table 1"), "{}", o.console);
    let t1 = &o.summary.table1;
    assert_eq!(t1.keys().collect::<Vec<_>>(), ["wfq", "abs", "abs+guard"]);
    for (_, by_size) in t1.iter() {
        assert_eq!(by_size.keys().collect::<Vec<_>>(), ["2", "4", "8", "16"]);
        for (_, by_loss) in by_size.iter() {
            assert_eq!(by_loss.keys().collect::<Vec<_>>(), ["0", "5", "10"]);
            for (_, g) in by_loss.iter() {
                assert!(*g > -1.0 && *g < 1.0, "gain {g}");
            }
        }
    }
    // ABS serves the priority stream first: with 16-packet messages and no
    // loss it must beat RR.
    let abs16 = t1
        .get("abs")
        .and_then(|s| s.get("16"))
        .and_then(|l| l.get("0"));
    assert!(abs16.is_some_and(|g| *g > 0.0), "{abs16:?}");
    // Table 1 cell by cell as published-vs-ours rows, ours as in the summary.
    assert_eq!(o.comparisons.len(), 3 * 4 * 3);
    let first = &o.comparisons[0];
    assert_eq!(first.item, "WFQ, 2 packets, 0 % loss");
    let wfq2 = t1
        .get("wfq")
        .and_then(|s| s.get("2"))
        .and_then(|l| l.get("0"));
    let ours = first.ours.expect("our gain");
    assert!(
        wfq2.is_some_and(|g| (g - ours).abs() < 1e-4),
        "{wfq2:?} vs {ours}"
    );
    // The file is the typed summary, serialized (and reads back as one).
    let text = read(&o.dir.join("summary.json"));
    let typed = serde_json::to_string_pretty(&o.summary).expect("serializes") + "\n";
    assert_eq!(text, typed);
    let back: quic_sched::QuicSchedSummary = serde_json::from_str(&text).expect("typed JSON");
    assert_eq!(back.table1.keys().count(), 3);
    let report = read(&o.report);
    for part in [
        "(a) Fig. 5",
        "(b) Table 1",
        "(c) §4.3",
        "Differences from the seed",
    ] {
        assert!(report.contains(part), "no {part} in the report");
    }
    for f in ["table1.csv", "table1_gain.svg", "adaptive.csv"] {
        assert!(o.dir.join(f).exists(), "{f} missing");
    }
    assert_eq!(
        read(&o.dir.join("table1.csv")).lines().count(),
        1 + 3 * 4 * 3
    );
    // Deterministic: a second run writes the same summary.
    let again = run(dir.join("b"));
    assert_eq!(text, read(&again.dir.join("summary.json")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fanet_small_gives_every_controller_and_the_report() {
    let dir = tempdir("fanet");
    let opts = fanet::Options {
        quick: true,
        seeds: Some(1),
        // The flows open at 5 s, after OLSR's warm-up.
        duration: Some("8s".into()),
        out: dir.clone(),
        ..fanet::Options::default()
    };
    let o = fanet::run(&opts, &Silent).expect("runs");
    // Primary (sltp), extended, primary (tcp): 3 × 13 controllers.
    assert_eq!(o.runs, 39);
    assert!(o.console.contains("39 runs"), "{}", o.console);
    let s = &o.summary;
    // Issue 39: both ACK policies, `controllers` meaning sltp.
    let tcp = s.by_ack_policy.get("tcp").expect("by_ack_policy.tcp");
    assert_eq!(
        tcp.controllers.keys().collect::<Vec<_>>(),
        fanet::CONTROLLERS
    );
    for (c, m) in tcp.controllers.iter() {
        let thr = m.throughput_pct.expect("throughput");
        assert!(thr > 0.0 && thr < 100.0, "tcp {c}: {thr} %");
    }
    assert_eq!(s.controllers.keys().collect::<Vec<_>>(), fanet::CONTROLLERS);
    assert_eq!(s.ci95.keys().collect::<Vec<_>>(), fanet::CONTROLLERS);
    for (c, m) in s.controllers.iter() {
        let pdr = m.pdr.expect("pdr");
        assert!(pdr > 0.0 && pdr <= 1.0, "{c}: pdr {pdr}");
        let thr = m.throughput_pct.expect("throughput");
        assert!(thr > 0.0 && thr < 100.0, "{c}: {thr} %");
    }
    // One seed: no confidence interval.
    assert!(s.ci95.iter().all(|(_, ci)| ci.pdr.is_none()));
    // Fig. 4 as published-vs-ours rows, ours the summary's throughput.
    let items: Vec<&str> = o.comparisons.iter().map(|c| c.item.as_str()).collect();
    assert_eq!(items, fanet::CONTROLLERS);
    for (c, (_, m)) in o.comparisons.iter().zip(s.controllers.iter()) {
        assert_eq!(c.ours, m.throughput_pct, "{}", c.item);
    }
    let text = read(&o.dir.join("summary.json"));
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let keys: Vec<&String> = v["controllers"]["cubic"]
        .as_object()
        .expect("object")
        .keys()
        .collect();
    assert_eq!(
        keys,
        [
            "pdr",
            "throughput_pct",
            "delay_ms_mean",
            "jitter_ms_mean",
            "cwnd_cma_final",
            "route_changes",
            "routing",
            "mac"
        ]
    );
    // Issue 22: routing overhead, route availability and MAC counters,
    // per case, with their CIs.
    for case in [&v, &v["extended"]] {
        let c = &case["controllers"]["cubic"];
        for key in ["control_bytes_per_s", "airtime_share", "route_availability"] {
            let x = c["routing"][key].as_f64().unwrap_or(-1.0);
            assert!(x > 0.0, "routing.{key} = {x}");
            assert!(case["ci95"]["cubic"]["routing"].get(key).is_some());
        }
        for key in ["retries", "collisions"] {
            assert!(c["mac"][key].as_f64().is_some(), "mac.{key}");
            assert!(case["ci95"]["cubic"]["mac"].get(key).is_some());
        }
    }
    let report = read(&o.report);
    for part in [
        "Table 1",
        "Fig. 4",
        "Fig. 3",
        "Fig. 5",
        "Figs. 6–9",
        "S-HTCP against H-TCP",
        "ACK policy: the primary case under SLTP's and TCP's ACKs",
        "Extended case",
        "How often routes change",
        "Where and why the numbers differ",
    ] {
        assert!(report.contains(part), "report lacks {part:?}");
    }
    assert!(o.dir.join("plots/fig4_throughput_load.svg").is_file());
    assert_eq!(read(&o.dir.join("runs.jsonl")).lines().count(), 39);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mmwave_cvn_quick_gives_the_contract_shape_and_is_deterministic() {
    let dir = tempdir("mmwave");
    let run = |out: PathBuf| {
        let opts = mmwave_cvn::Options {
            quick: true,
            duration_s: Some(0.05),
            seeds: Some(2),
            out,
            ..mmwave_cvn::Options::default()
        };
        mmwave_cvn::run(&opts, &Silent).expect("runs")
    };
    let o = run(dir.join("a"));
    // Absent hints only for RTW-TCP: the others' runs are the perfect ones.
    // And the bulk, perfect-hint headline again under TCP's ACK policy.
    assert_eq!(o.runs, (4 + 1 + 2 * 4 + 4) * 2);
    let report = read(&o.report);
    for needle in [
        "Bulk flows",
        "Where RTW-TCP helps",
        "Sensitivity check",
        "Fig. 8",
        "Figs. 10–11",
        "RLC buffer's part in RTT",
        "Link failures",
        "Published vs ours",
        "scaled",
    ] {
        assert!(report.contains(needle), "report lacks {needle}");
    }
    assert!(o.dir.join("plots/bulk_throughput.svg").exists());
    assert!(o
        .dir
        .join("plots/fig8_throughput_urban_random.svg")
        .exists());
    let s = &o.summary.scenarios;
    assert_eq!(s.keys().collect::<Vec<_>>(), ["urban_random"]);
    let h = s.get("urban_random").expect("scenario");
    assert_eq!(
        h.keys().collect::<Vec<_>>(),
        ["hints_perfect", "hints_absent"]
    );
    for (hk, ccs) in h.iter() {
        assert_eq!(
            ccs.keys().collect::<Vec<_>>(),
            ["rtwtcp", "cubic", "compound", "bbr"]
        );
        for (cc, loads) in ccs.iter() {
            let want: &[&str] = if hk == "hints_perfect" {
                &["bulk", "load_0.6", "load_1.0"]
            } else {
                &["bulk"]
            };
            assert_eq!(loads.keys().collect::<Vec<_>>(), want);
            for (l, p) in loads.iter() {
                let t = p.throughput_mbps;
                assert!(t > 0.0 && t.is_finite(), "{hk} {cc} {l}: {t}");
                assert!(p.rtt_ms > 0.0 && p.ci95.throughput_mbps >= 0.0);
            }
        }
    }
    // Seed 004's six grid findings beside ours; the quick grid has no rural
    // world, so the rural-vs-urban finding has no value of ours.
    assert_eq!(o.comparisons.len(), 6);
    assert!(o.comparisons.iter().all(|c| c.published.is_some()));
    assert!(o.comparisons[1].item.starts_with("rural") && o.comparisons[1].ours.is_none());
    assert!(o.comparisons[0].ours.is_some());
    let text = read(&o.dir.join("summary.json"));
    // The file is the typed summary, serialized (and reads back as one).
    let typed = serde_json::to_string_pretty(&o.summary).expect("serializes") + "\n";
    assert_eq!(text, typed);
    let back: mmwave_cvn::MmwaveSummary = serde_json::from_str(&text).expect("typed JSON");
    assert_eq!(back.scenarios.keys().count(), 1);
    // Issue 39: both ACK policies, `scenarios` being `sltp`'s.
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    for cc in ["rtwtcp", "cubic", "compound", "bbr"] {
        let tcp = &v["by_ack_policy"]["tcp"]["scenarios"]["urban_random"]["hints_perfect"][cc];
        let sltp = &v["scenarios"]["urban_random"]["hints_perfect"][cc]["bulk"];
        assert!(
            tcp["bulk"]["throughput_mbps"]
                .as_f64()
                .is_some_and(|t| t > 0.0),
            "{cc}"
        );
        assert!(
            sltp["throughput_mbps"].as_f64().is_some_and(|t| t > 0.0),
            "{cc}"
        );
        // Only the headline ran under TCP's ACKs.
        assert_eq!(tcp.as_object().map(|o| o.len()), Some(1), "{cc}");
    }
    assert!(report.contains("ACK policy: the headline under SLTP's and TCP's ACKs"));
    assert!(report.contains("backlogged"));
    // Determinism: a second run writes the same bytes.
    let again = run(dir.join("b"));
    assert_eq!(text, read(&again.dir.join("summary.json")));
    assert_eq!(report, read(&again.report));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_showcase_gives_one_row_per_scheduler() {
    let dir = tempdir("showcase");
    let o = showcase::run(&dir).expect("runs");
    let names: Vec<&str> = o.rows.iter().map(|r| r.scheduler).collect();
    assert_eq!(names, showcase::SCHEDULERS);
    for r in &o.rows {
        assert!(r.sent > 0 && !r.latencies_ms.is_empty(), "{}", r.scheduler);
        assert!(r.latencies_ms.windows(2).all(|w| w[0] <= w[1]));
        assert!(r.bulk_mbps > 0.0 && r.bulk_mbps < 1.0, "{}", r.bulk_mbps);
    }
    for s in ["| RR ", "| ABS ", "| EDF "] {
        assert!(o.console.contains(s), "no row {s}: {}", o.console);
    }
    assert!(read(&o.report).contains("![control-message latency per scheduler](latency_box.svg)"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `reproduce sltp`'s run function with the kernel's TCP only (an
/// in-process echo over loopback: no subprocess, no hogs at 0 % load) at
/// the smallest size; Peregrine's side needs the `peregrine perf` binary
/// and is covered by the CLI's tests.
#[test]
fn sltp_tcp_only_gives_a_typed_summary() {
    use peregrine_lab::reproduce::sltp::{self, report::Transport};
    let dir = tempdir("sltp");
    let opts = sltp::Options {
        out: dir.clone(),
        transports: vec![Transport::Tcp],
        sizes: vec![1024],
        loads: vec![0],
        connections: Some(1),
        echoes: Some(2),
        command: "peregrine reproduce sltp --transports tcp".into(),
        // Never started: no Peregrine point and no background load.
        ..sltp::Options::new(PathBuf::from("/nonexistent/peregrine"))
    };
    let o = sltp::run(&opts, &Silent).expect("runs");
    let s = &o.summary;
    assert_eq!(s.seed, "003 (SLTP) §VI");
    assert_eq!(
        (s.run.sizes_bytes.as_slice(), s.run.loads_pct.as_slice()),
        (&[1024][..], &[0][..])
    );
    assert!(s.failures.is_empty(), "{:?}", s.failures);
    assert_eq!(s.points.len(), 1);
    let p = &s.points[0];
    assert_eq!((p.transport, p.load_pct, p.size_bytes), ("tcp", 0, 1024));
    let t = p.network_time_ms.expect("round trips measured");
    assert!(t.count == 2 && t.median > 0.0, "{t:?}");
    assert!(p.probe.is_none());
    // Every seed finding is there, beside what this run saw.
    assert_eq!(s.findings.len(), 6);
    assert!(s.findings.iter().all(|f| !f.ours.is_empty()));
    let text = read(&dir.join("sltp/summary.json"));
    assert_eq!(
        text,
        serde_json::to_string_pretty(s).expect("serializes") + "\n"
    );
    assert!(read(&o.report).contains("network_time_load0.svg"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `reproduce aqm --quick` at a shorter run: every AQM × controller cell
/// and the L4S pair in the typed summary (the file is that summary), the
/// report with its checks and charts, and the orders the AQMs are for.
#[test]
fn aqm_quick_gives_every_cell_and_the_orders_of_the_field() {
    let dir = tempdir("aqm");
    let opts = aqm::Options {
        quick: true,
        duration_s: Some(6.0),
        out: dir.clone(),
        ..aqm::Options::default()
    };
    let o = aqm::run(&opts, &Silent).expect("runs");
    assert_eq!(o.runs, (5 * 5 + 1) * aqm::QUICK_SEEDS as usize);
    let s = &o.summary;
    assert_eq!(s.cells.keys().collect::<Vec<_>>(), aqm::AQMS);
    for (a, ccs) in s.cells.iter() {
        assert_eq!(ccs.keys().collect::<Vec<_>>(), aqm::contender_keys(), "{a}");
        for (cc, c) in ccs.iter() {
            let g = c.flow.goodput_mbps.mean;
            assert!(g > 5.0 && g < 20.0, "{a} {cc}: goodput {g}");
            let p = c.priority_latency_p99_ms.mean;
            // At least the path's 20.8 ms, and delivered.
            assert!(p > 20.0 && p.is_finite(), "{a} {cc}: priority p99 {p}");
            let after = c.priority_latency_p99_after_warmup_ms.mean;
            assert!(after > 20.0 && after.is_finite(), "{a} {cc}: {after}");
            assert!(c.flow.queue_delay_p99_ms.mean >= c.flow.queue_delay_p50_ms.mean);
        }
    }
    let p99 = |a: &str, cc: &str| {
        let c = s.cells.get(a).and_then(|m| m.get(cc)).expect("cell");
        c.flow.queue_delay_p99_after_warmup_ms.mean
    };
    // The orders the field claims: every AQM keeps CUBIC's queue far below
    // a full drop-tail buffer (160 ms), FQ-CoDel and CoDel lowest — for
    // the field's CUBIC and SLTP's alike.
    for cubic in ["cubic", "cubic-sltp"] {
        for a in ["codel", "fq_codel", "pie", "dualpi2"] {
            assert!(p99(a, cubic) < p99("drop_tail", cubic) / 2.0, "{a} {cubic}");
        }
        assert!(p99("fq_codel", cubic) < p99("pie", cubic), "{cubic}");
        assert!(p99("drop_tail", cubic) > 60.0, "{cubic}");
    }
    // What each contender is, in the summary: the field's CUBIC and SLTP's.
    let info = |k: &str| s.contenders.get(k).expect("described");
    assert_eq!(
        s.contenders.keys().collect::<Vec<_>>(),
        aqm::contender_keys()
    );
    assert_eq!(info("cubic").ack_policy, "tcp");
    assert_eq!(
        info("cubic").slow_start_exit.as_deref(),
        Some("linux_hystart")
    );
    assert!(info("cubic").description.contains("Linux CUBIC"));
    assert_eq!(info("cubic-sltp").ack_policy, "sltp");
    assert_eq!(info("cubic-sltp").slow_start_exit, None);
    // Marks where ECN is on by default, none at drop-tail.
    let marks = |a: &str| {
        s.cells
            .get(a)
            .and_then(|m| m.get("cubic"))
            .expect("cell")
            .ce_marked
            .mean
    };
    assert!(marks("fq_codel") > 0.0 && marks("dualpi2") > 0.0);
    assert_eq!(marks("drop_tail"), 0.0);
    // The L4S pair: both flows, shares summing to 1, Prague's queue short.
    let k = &s.coexistence;
    assert_eq!(k.flows.keys().collect::<Vec<_>>(), ["prague", "cubic"]);
    let share: f64 = k.flows.iter().map(|(_, f)| f.share.mean).sum();
    assert!((share - 1.0).abs() < 1e-9, "{share}");
    let prague = k.flows.get("prague").expect("prague");
    let cubic = k.flows.get("cubic").expect("cubic");
    assert!(prague.flow.queue_delay_p99_ms.mean < cubic.flow.queue_delay_p99_ms.mean);
    let text = read(&o.dir.join("summary.json"));
    assert_eq!(
        text,
        serde_json::to_string_pretty(s).expect("serializes") + "\n"
    );
    let back: aqm::AqmSummary = serde_json::from_str(&text).expect("typed JSON");
    assert_eq!(back.cells.keys().count(), aqm::AQMS.len());
    assert_eq!(back.setup, s.setup);
    let report = read(&o.report);
    for needle in [
        "AQM × contender",
        "Linux CUBIC",
        "L4S beside classic",
        "Issue 41's checks",
    ] {
        assert!(report.contains(needle), "report lacks {needle}");
    }
    for chart in [
        "queue_p99_after_warmup",
        "goodput",
        "priority_p99",
        "coexistence_queue",
    ] {
        assert!(o.dir.join(format!("plots/{chart}.svg")).exists(), "{chart}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
