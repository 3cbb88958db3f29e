//! The impairment harness end to end: toy `SansIo` nodes on impaired
//! pipes. Here each impairment's statistics and determinism; the event
//! loop's ordering, guards (timer spin, livelock) and configuration errors
//! in `harness/event_loop.rs`.

#[path = "harness/event_loop.rs"]
mod event_loop;

use peregrine_proto::harness::{
    Corruption, CorruptionPattern, GilbertElliott, Harness, Jitter, LogEntry, NodeId, Outage,
    PeriodicOutage, PipeConfig, Reorder, RunOutcome,
};
use peregrine_proto::{EcnCodepoint, SansIo, Time, Transmit};
use std::collections::{BTreeSet, VecDeque};
use std::net::SocketAddr;

const MS: u64 = 1_000_000;

fn addr(n: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, n], 4000))
}

/// A toy node: sends `count` numbered datagrams of `size` bytes (the
/// sequence number big-endian in the first 8, zeros after) to `peer`, one
/// every `interval_ns` from time zero (all at once if 0); optionally
/// echoes what it receives; records everything it receives.
#[derive(Default)]
struct Toy {
    peer: Option<SocketAddr>,
    count: u64,
    size: usize,
    interval_ns: u64,
    next_send: Time,
    sent: u64,
    /// Send all-zero payloads instead of numbered ones.
    zeros: bool,
    /// Send at most one datagram per timer firing.
    pace_by_timer: bool,
    fired: bool,
    echo: bool,
    outbox: VecDeque<(SocketAddr, Vec<u8>)>,
    received: Vec<(Time, SocketAddr, Vec<u8>)>,
}

impl Toy {
    fn sender(peer: SocketAddr, count: u64, size: usize, interval_ns: u64) -> Toy {
        assert!(size >= 8);
        Toy {
            peer: Some(peer),
            count,
            size,
            interval_ns,
            ..Toy::default()
        }
    }
    fn sink() -> Toy {
        Toy::default()
    }
    fn echo() -> Toy {
        Toy {
            echo: true,
            ..Toy::default()
        }
    }
    fn seqs(&self) -> Vec<u64> {
        self.received.iter().map(|(_, _, b)| seq_of(b)).collect()
    }
}

fn seq_of(bytes: &[u8]) -> u64 {
    u64::from_be_bytes(bytes[..8].try_into().unwrap())
}

impl SansIo for Toy {
    fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        _ecn: Option<EcnCodepoint>,
        bytes: &mut [u8],
    ) {
        self.received.push((now, remote, bytes.to_vec()));
        if self.echo {
            self.outbox.push_back((remote, bytes.to_vec()));
        }
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        buf.clear();
        let destination = if let Some((to, bytes)) = self.outbox.pop_front() {
            buf.extend_from_slice(&bytes);
            to
        } else if self.sent < self.count
            && self.next_send <= now
            && (self.fired || !self.pace_by_timer)
        {
            self.fired = false;
            if !self.zeros {
                buf.extend_from_slice(&self.sent.to_be_bytes());
            }
            buf.resize(self.size, 0);
            self.sent += 1;
            self.next_send = Time::from_nanos(self.next_send.as_nanos() + self.interval_ns);
            self.peer?
        } else {
            return None;
        };
        Some(Transmit {
            destination,
            ecn: Some(EcnCodepoint::Ect0),
            size: buf.len(),
        })
    }

    fn poll_timeout(&mut self) -> Option<Time> {
        (self.sent < self.count).then_some(self.next_send)
    }

    fn handle_timeout(&mut self, _now: Time) {
        self.fired = true;
    }
}

/// Node 0 sends through `config` to node 1 until everything has arrived.
fn one_way(seed: u64, config: PipeConfig, sender: Toy) -> (Harness<Toy>, NodeId, NodeId) {
    let mut h = Harness::new(seed);
    let a = h.add_node(addr(1), sender);
    let b = h.add_node(addr(2), Toy::sink());
    h.set_pipe(a, b, config).unwrap();
    h.record_deliveries(true);
    let out = h.run_until_idle(Time::from_secs_f64(3600.0)).unwrap();
    assert_eq!(out, RunOutcome::Idle);
    (h, a, b)
}

fn one_way_delays_ns(log: &[LogEntry]) -> Vec<u64> {
    log.iter()
        .map(|e| e.at.as_nanos() - e.sent_at.as_nanos())
        .collect()
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

#[test]
fn bernoulli_loss_rate_matches_over_20000_datagrams() {
    let cfg = PipeConfig {
        loss: 0.05,
        ..Default::default()
    };
    let (h, a, b) = one_way(1, cfg, Toy::sender(addr(2), 20_000, 100, MS));
    let got = h.node(b).received.len() as f64;
    let rate = 1.0 - got / 20_000.0;
    // σ = √(0.05·0.95/20000) ≈ 0.0015; allow 4σ.
    assert!((rate - 0.05).abs() < 0.006, "loss rate {rate}");
    let stats = h.pipe(a, b).unwrap().stats();
    assert_eq!(stats.sent, 20_000);
    assert_eq!(stats.dropped.random_loss + stats.delivered, 20_000);
    assert_eq!(stats.dropped.total(), stats.dropped.random_loss);
}

#[test]
fn gilbert_elliott_mean_burst_is_one_over_p_bg() {
    let (p_gb, p_bg) = (0.02, 0.25);
    let cfg = PipeConfig {
        gilbert_elliott: Some(GilbertElliott {
            p_gb,
            p_bg,
            loss_good: 0.0,
            loss_bad: 1.0,
        }),
        ..Default::default()
    };
    let n = 50_000;
    let (h, _, b) = one_way(2, cfg, Toy::sender(addr(2), n, 8, MS));
    let got: BTreeSet<u64> = h.node(b).seqs().into_iter().collect();
    let mut bursts = Vec::new();
    let mut run = 0u64;
    for s in 0..n {
        if got.contains(&s) {
            if run > 0 {
                bursts.push(run as f64);
            }
            run = 0;
        } else {
            run += 1;
        }
    }
    let (mean, _) = mean_sd(&bursts);
    // ~930 bursts, burst-length σ ≈ 3.5, so the mean's σ ≈ 0.11.
    assert!((mean - 1.0 / p_bg).abs() < 0.45, "mean burst {mean}");
    let loss = 1.0 - got.len() as f64 / n as f64;
    let expected = p_gb / (p_gb + p_bg);
    assert!((loss - expected).abs() < 0.012, "loss {loss} vs {expected}");
}

#[test]
fn rate_limit_spaces_deliveries_by_serialisation_time() {
    // 1250 bytes at 1 Mbit/s take 10 ms; a burst of 100 leaves 10 ms apart.
    let cfg = PipeConfig {
        rate_bps: 1_000_000,
        delay_us: 5_000,
        ..Default::default()
    };
    let (h, _, b) = one_way(3, cfg, Toy::sender(addr(2), 100, 1250, 0));
    let times: Vec<u64> = h.node(b).received.iter().map(|r| r.0.as_nanos()).collect();
    assert_eq!(times.len(), 100);
    assert_eq!(times[0], 15 * MS);
    assert!(times.windows(2).all(|w| w[1] - w[0] == 10 * MS));
    assert_eq!(h.node(b).seqs(), (0..100).collect::<Vec<_>>());
}

#[test]
fn delay_plus_uniform_jitter_stays_within_bounds() {
    let cfg = PipeConfig {
        delay_us: 20_000,
        jitter: Jitter::Uniform { max_us: 5_000 },
        jitter_reorders: true,
        ..Default::default()
    };
    let (h, _, b) = one_way(4, cfg, Toy::sender(addr(2), 5_000, 8, MS));
    let delays = one_way_delays_ns(h.delivery_log());
    assert_eq!(delays.len(), 5_000);
    assert!(delays.iter().all(|d| (20 * MS..=25 * MS).contains(d)));
    let ms: Vec<f64> = delays.iter().map(|&d| d as f64 / 1e6).collect();
    let (mean, sd) = mean_sd(&ms);
    // U[20, 25]: mean 22.5, σ = 5/√12 ≈ 1.44.
    assert!(
        (mean - 22.5).abs() < 0.1 && (sd - 1.443).abs() < 0.1,
        "{mean} {sd}"
    );
    // 1 ms apart with up to 5 ms of independent jitter: they overtake.
    let seqs = h.node(b).seqs();
    assert!(seqs.windows(2).filter(|w| w[1] < w[0]).count() > 100);
}

#[test]
fn normal_jitter_has_its_mean_and_deviation_and_can_keep_order() {
    for keep_order in [false, true] {
        let cfg = PipeConfig {
            delay_us: 10_000,
            jitter: Jitter::Normal {
                mean_us: 3_000.0,
                std_dev_us: 1_000.0,
            },
            jitter_reorders: !keep_order,
            ..Default::default()
        };
        let (h, _, b) = one_way(5, cfg, Toy::sender(addr(2), 10_000, 8, 20 * MS));
        let delays = one_way_delays_ns(h.delivery_log());
        assert!(delays.iter().all(|&d| d >= 10 * MS));
        let extra: Vec<f64> = delays.iter().map(|&d| (d - 10 * MS) as f64 / 1e3).collect();
        let (mean, sd) = mean_sd(&extra);
        assert!((mean - 3_000.0).abs() < 40.0, "mean {mean} µs");
        assert!((sd - 1_000.0).abs() < 40.0, "sd {sd} µs");
        let seqs = h.node(b).seqs();
        let inversions = seqs.windows(2).filter(|w| w[1] < w[0]).count();
        // 20 ms apart, 1 ms σ: never reordered by jitter either way.
        assert_eq!(inversions, 0);
    }
}

#[test]
fn duplication_count_matches_probability() {
    let cfg = PipeConfig {
        duplicate: 0.1,
        ..Default::default()
    };
    let (h, a, b) = one_way(6, cfg, Toy::sender(addr(2), 20_000, 8, MS));
    let stats = *h.pipe(a, b).unwrap().stats();
    // σ = √(20000·0.1·0.9) ≈ 42.
    assert!((stats.duplicated as i64 - 2_000).abs() < 170, "{stats:?}");
    assert_eq!(h.node(b).received.len() as u64, 20_000 + stats.duplicated);
    let distinct: BTreeSet<u64> = h.node(b).seqs().into_iter().collect();
    assert_eq!(distinct.len(), 20_000);
}

fn flipped_bits(bytes: &[u8]) -> Vec<usize> {
    (0..bytes.len() * 8)
        .filter(|&i| bytes[i / 8] & (0x80 >> (i % 8)) != 0)
        .collect()
}

#[test]
fn corruption_flips_exactly_k_bits() {
    let cfg = PipeConfig {
        corruption: Some(Corruption {
            probability: 0.5,
            pattern: CorruptionPattern::Bits { count: 3 },
        }),
        ..Default::default()
    };
    // All-zero payloads: the set bits of what arrives are the flipped ones.
    let mut sender = Toy::sender(addr(2), 4_000, 200, MS);
    sender.zeros = true;
    let (h, a, b) = one_way(7, cfg, sender);
    let received = &h.node(b).received;
    assert_eq!(received.len(), 4_000);
    let mut corrupted = 0;
    for (_, _, bytes) in received {
        match flipped_bits(bytes).len() {
            0 => {}
            3 => corrupted += 1,
            n => panic!("{n} bits flipped"),
        }
    }
    assert_eq!(corrupted, h.pipe(a, b).unwrap().stats().corrupted);
    assert!((corrupted as i64 - 2_000).abs() < 130, "{corrupted}");
}

#[test]
fn corruption_bursts_stay_within_15_bits() {
    let cfg = PipeConfig {
        corruption: Some(Corruption {
            probability: 1.0,
            pattern: CorruptionPattern::Burst { max_len_bits: 15 },
        }),
        ..Default::default()
    };
    let (h, _, b) = one_way(8, cfg, Toy::sender(addr(2), 3_000, 64, MS));
    let mut longest = 0;
    for (i, (_, _, bytes)) in h.node(b).received.iter().enumerate() {
        let mut clean = (i as u64).to_be_bytes().to_vec();
        clean.resize(64, 0);
        let diff: Vec<u8> = bytes.iter().zip(&clean).map(|(x, y)| x ^ y).collect();
        let bits = flipped_bits(&diff);
        let span = bits.last().unwrap() - bits[0] + 1;
        assert!(span <= 15, "burst of {span} bits");
        longest = longest.max(span);
    }
    assert_eq!(longest, 15);
}

#[test]
fn outages_drop_everything_inside_and_nothing_outside() {
    let cfg = PipeConfig {
        delay_us: 5_000,
        outages: vec![Outage {
            start_us: 200_000,
            end_us: 300_000,
        }],
        periodic_outage: Some(PeriodicOutage {
            first_start_us: 500_000,
            period_us: 100_000,
            duration_us: 10_000,
        }),
        ..Default::default()
    };
    // One datagram per ms: datagram s is sent at s ms.
    let (h, a, b) = one_way(9, cfg, Toy::sender(addr(2), 1_000, 8, MS));
    let inside = |s: u64| (200..300).contains(&s) || (s >= 500 && (s - 500) % 100 < 10);
    let expected: Vec<u64> = (0..1_000).filter(|&s| !inside(s)).collect();
    assert_eq!(h.node(b).seqs(), expected);
    let dropped = h.pipe(a, b).unwrap().stats().dropped;
    assert_eq!(dropped.outage, 1_000 - expected.len() as u64);
    assert_eq!(dropped.outage, 100 + 5 * 10);
}

#[test]
fn drop_tail_queue_drops_when_full() {
    // 1 byte per µs; room for ten 1000-byte datagrams; a burst of 50.
    let cfg = PipeConfig {
        rate_bps: 8_000_000,
        queue_limit_bytes: Some(10_000),
        ..Default::default()
    };
    let (h, a, b) = one_way(10, cfg.clone(), Toy::sender(addr(2), 50, 1000, 0));
    assert_eq!(h.node(b).seqs(), (0..10).collect::<Vec<_>>());
    assert_eq!(h.pipe(a, b).unwrap().stats().dropped.queue_full, 40);
    // Slower than the link: nothing queues, nothing drops.
    let (h, _, b) = one_way(10, cfg, Toy::sender(addr(2), 50, 1000, 2 * MS));
    assert_eq!(h.node(b).received.len(), 50);
}

#[test]
fn reorder_knob_holds_back_a_fraction() {
    let cfg = PipeConfig {
        delay_us: 10_000,
        reorder: Some(Reorder {
            probability: 0.1,
            extra_delay_us: 5_500,
        }),
        ..Default::default()
    };
    let (h, a, b) = one_way(11, cfg, Toy::sender(addr(2), 10_000, 8, MS));
    let held = h.pipe(a, b).unwrap().stats().reordered;
    assert!((held as i64 - 1_000).abs() < 120, "{held}");
    // A held-back datagram arrives after everything sent within 5.5 ms
    // after it: it is the one out of order.
    let seqs = h.node(b).seqs();
    let mut max_seen = None;
    let late = seqs
        .iter()
        .filter(|&&s| {
            let is_late = max_seen.is_some_and(|m| s < m);
            max_seen = max_seen.max(Some(s));
            is_late
        })
        .count() as u64;
    // Only the last few may have no one left to overtake them.
    assert!(
        late >= held.saturating_sub(6) && late <= held,
        "late {late} held {held}"
    );
    assert_eq!(seqs.len(), 10_000);
}

/// Two senders and an echo node on a path with every impairment.
fn busy_scenario(seed: u64) -> Vec<LogEntry> {
    let mut h = Harness::new(seed);
    h.set_default_pipe(PipeConfig {
        rate_bps: 20_000_000,
        delay_us: 3_000,
        jitter: Jitter::Normal {
            mean_us: 500.0,
            std_dev_us: 400.0,
        },
        reorder: Some(Reorder {
            probability: 0.02,
            extra_delay_us: 2_000,
        }),
        queue_limit_bytes: Some(20_000),
        loss: 0.02,
        gilbert_elliott: Some(GilbertElliott {
            p_gb: 0.01,
            p_bg: 0.3,
            ..Default::default()
        }),
        duplicate: 0.01,
        corruption: Some(Corruption {
            probability: 0.01,
            pattern: CorruptionPattern::Burst { max_len_bits: 15 },
        }),
        periodic_outage: Some(PeriodicOutage {
            first_start_us: 100_000,
            period_us: 400_000,
            duration_us: 30_000,
        }),
        ..Default::default()
    })
    .unwrap();
    h.add_node(addr(1), Toy::sender(addr(3), 3_000, 300, 3 * MS));
    h.add_node(addr(2), Toy::sender(addr(3), 1_000, 1200, 0));
    h.add_node(addr(3), Toy::echo());
    h.record_deliveries(true);
    assert_eq!(
        h.run_until_idle(Time::from_millis(60_000)).unwrap(),
        RunOutcome::Idle
    );
    h.delivery_log().to_vec()
}

#[test]
fn same_seed_gives_bit_identical_runs() {
    let first = busy_scenario(2024);
    assert!(first.len() > 4_000, "{}", first.len());
    assert_eq!(first, busy_scenario(2024));
    assert_ne!(first, busy_scenario(2025));
}

/// `set_addr`: the node's datagrams come from its new address, datagrams
/// to the old one are unroutable; `inject` delivers from any address.
#[test]
fn set_addr_moves_a_node_and_inject_delivers_from_any_address() {
    let mut h = Harness::new(3);
    let a = h.add_node(addr(1), Toy::sender(addr(2), 2, 8, 10 * MS));
    let b = h.add_node(addr(2), Toy::echo());
    h.run_until(Time::from_millis(5)).unwrap();
    // The first datagram went out at 0 and was echoed back to 10.0.0.1.
    assert_eq!(h.node(a).received.len(), 1);
    h.set_addr(a, addr(7));
    assert_eq!(h.addr(a), addr(7));
    assert_eq!(h.node_at(addr(7)), Some(a));
    assert_eq!(h.node_at(addr(1)), None);
    assert_eq!(
        h.run_until_idle(Time::from_millis(1_000)).unwrap(),
        RunOutcome::Idle
    );
    let from: Vec<SocketAddr> = h.node(b).received.iter().map(|r| r.1).collect();
    assert_eq!(from, [addr(1), addr(7)]);
    assert_eq!(
        h.node(a).received.len(),
        2,
        "the echo found the new address"
    );
    // A datagram to the old address is unroutable.
    h.inject(addr(1), b, &[0u8; 8]).unwrap();
    assert_eq!(h.node(b).received.last().map(|r| r.1), Some(addr(1)));
    h.run_until_idle(Time::from_millis(2_000)).unwrap();
    assert_eq!(h.unroutable(), 1);
}
