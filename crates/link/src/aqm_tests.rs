use super::*;
use crate::uniform::SplitMix;

#[derive(Debug, Clone, PartialEq)]
struct P {
    id: u64,
    size: u64,
    ecn: Ecn,
    flow: u64,
}

impl WireSize for P {
    fn wire_bytes(&self) -> u64 {
        self.size
    }
}

impl Queued for P {
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    fn set_ce(&mut self) {
        self.ecn = Ecn::Ce;
    }
    fn flow_key(&self) -> u64 {
        self.flow
    }
}

fn p(id: u64, flow: u64, ecn: Ecn) -> P {
    P {
        id,
        size: 1500,
        ecn,
        flow,
    }
}

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

/// A standing queue served one packet per ms: returns the instants of
/// CoDel's congestion signals (drops, or CE marks) over `ms_total` ms.
fn codel_signal_times(ecn: bool, pkt_ecn: Ecn, ms_total: u64) -> (Vec<Time>, AqmStats) {
    let params = CodelParams {
        ecn,
        ..CodelParams::default()
    };
    let mut q: Qdisc<P> = Qdisc::new(AqmConfig::Codel(params), QueueLimit::unlimited(), None);
    let mut u = SplitMix(1);
    let mut dropped = Vec::new();
    for i in 0..3000 {
        q.enqueue(Time::ZERO, p(i, 1, pkt_ecn), &mut u, &mut dropped)
            .unwrap();
    }
    let mut signals = Vec::new();
    for t in 1..=ms_total {
        let before = dropped.len();
        let got = q.dequeue(ms(t), &mut u, &mut dropped);
        signals.extend(std::iter::repeat_n(ms(t), dropped.len() - before));
        if got.is_some_and(|x| x.ecn == Ecn::Ce && pkt_ecn != Ecn::Ce) {
            signals.push(ms(t));
        }
    }
    (signals, *q.stats())
}

#[test]
fn codel_signals_at_interval_over_sqrt_count() {
    let (drops, stats) = codel_signal_times(false, Ecn::NotEct, 2000);
    // Every packet arrived at 0, one leaves per ms: the sojourn reaches
    // the 5 ms target at the dequeue at 5 ms, so first_above_time = 105 ms
    // and the first drop is there; then the n-th next one is due interval/√n after the last
    // due time (RFC 8289 §5.5 control_law), caught by the next 1-ms
    // dequeue.
    assert_eq!(drops[0], ms(105));
    let mut due = drops[0];
    for (n, &d) in drops.iter().enumerate().skip(1) {
        due = control_law(due, Duration::from_millis(100), n as u32);
        let lag = d.saturating_duration_since(due);
        assert!(
            d >= due && lag < Duration::from_millis(1) + Duration::from_nanos(1),
            "drop {n} at {d:?}, due {due:?}"
        );
    }
    assert!(drops.len() > 20, "{} drops", drops.len());
    assert_eq!(stats.aqm_dropped as usize, drops.len());
    // With ECN on, an ECT packet is marked at the same instants instead.
    let (marks, stats) = codel_signal_times(true, Ecn::Ect0, 2000);
    assert_eq!(stats.aqm_dropped, 0);
    assert_eq!(marks[0], ms(105));
    assert!(marks.len() > 20);
    let mut due = marks[0];
    for (n, &d) in marks.iter().enumerate().skip(1) {
        due = control_law(due, Duration::from_millis(100), n as u32);
        assert!(d >= due && d.saturating_duration_since(due) <= Duration::from_millis(1));
    }
}

#[test]
fn codel_with_ecn_still_drops_non_ect_packets() {
    let (_, stats) = codel_signal_times(true, Ecn::NotEct, 500);
    assert!(stats.aqm_dropped > 0 && stats.ce_marked == 0);
}

#[test]
fn codel_leaves_a_short_queue_alone() {
    let mut q: Qdisc<P> = Qdisc::new(
        AqmConfig::Codel(CodelParams::default()),
        QueueLimit::unlimited(),
        None,
    );
    let (mut u, mut d) = (SplitMix(1), Vec::new());
    // One packet per ms in and out: sojourn 0, never a drop.
    for t in 0..5000 {
        q.enqueue(ms(t), p(t, 1, Ecn::NotEct), &mut u, &mut d)
            .unwrap();
        assert!(q.dequeue(ms(t), &mut u, &mut d).is_some());
    }
    assert!(d.is_empty());
}

/// A saturating flow (2 packets per ms into a 1-packet-per-ms link) and a
/// sparse one (a packet every 50 ms): the sparse flow's worst sojourn.
fn sparse_flow_worst_sojourn(config: AqmConfig) -> (Duration, Duration) {
    let mut q: Qdisc<P> = Qdisc::new(config, QueueLimit::packets(1000), None);
    let (mut u, mut d) = (SplitMix(3), Vec::new());
    let mut sent_at = std::collections::BTreeMap::new();
    let (mut sparse_worst, mut fat_last) = (Duration::ZERO, Duration::ZERO);
    let mut id = 0;
    for t in 0..3000u64 {
        for _ in 0..2 {
            id += 1;
            sent_at.insert(id, ms(t));
            let _ = q.enqueue(ms(t), p(id, 7, Ecn::NotEct), &mut u, &mut d);
        }
        if t % 50 == 25 {
            id += 1;
            sent_at.insert(id, ms(t));
            let small = P {
                size: 100,
                ..p(id, 9, Ecn::NotEct)
            };
            let _ = q.enqueue(ms(t), small, &mut u, &mut d);
        }
        if let Some(x) = q.dequeue(ms(t), &mut u, &mut d) {
            let s = ms(t).saturating_duration_since(sent_at[&x.id]);
            if x.flow == 9 {
                sparse_worst = sparse_worst.max(s);
            } else {
                fat_last = s;
            }
        }
    }
    (sparse_worst, fat_last)
}

#[test]
fn fq_codel_isolates_a_sparse_flow_from_a_saturating_one() {
    let (sparse, fat) = sparse_flow_worst_sojourn(AqmConfig::FqCodel(FqCodelParams::default()));
    // The sparse flow is a new flow at each arrival: served next.
    assert!(sparse <= Duration::from_millis(1), "sparse flow {sparse:?}");
    // The saturating flow keeps a CoDel-controlled standing queue.
    assert!(fat > Duration::from_millis(5), "fat flow {fat:?}");
    // A FIFO gives the sparse flow the whole queue.
    let (fifo_sparse, _) = sparse_flow_worst_sojourn(AqmConfig::DropTail);
    assert!(fifo_sparse > Duration::from_millis(500), "{fifo_sparse:?}");
}

#[test]
fn fq_codel_drops_from_the_fattest_flow_when_full() {
    let mut q: Qdisc<P> = Qdisc::new(
        AqmConfig::FqCodel(FqCodelParams::default()),
        QueueLimit::packets(10),
        None,
    );
    let (mut u, mut d) = (SplitMix(3), Vec::new());
    for i in 0..10 {
        q.enqueue(Time::ZERO, p(i, 1, Ecn::NotEct), &mut u, &mut d)
            .unwrap();
    }
    q.enqueue(Time::ZERO, p(99, 2, Ecn::NotEct), &mut u, &mut d)
        .unwrap();
    assert_eq!(d.iter().map(|x| x.id).collect::<Vec<_>>(), [0]);
    assert_eq!(q.backlog(), (10, 15_000));
    // Flow 1 was new first: it is served while its deficit (one quantum,
    // 1514 bytes) is positive — two packets — then the new flow 2.
    let order: Vec<u64> = (0..3)
        .filter_map(|_| q.dequeue(Time::ZERO, &mut u, &mut d).map(|x| x.id))
        .collect();
    assert_eq!(order, [1, 2, 99]);
}

#[test]
fn dualpi2_couples_classic_drops_to_the_square_of_l4s_marks() {
    let params = DualPi2Params::default();
    let mut q: Qdisc<P> = Qdisc::new(AqmConfig::DualPi2(params), QueueLimit::unlimited(), None);
    let (mut u, mut d) = (SplitMix(9), Vec::new());
    let mut id = 0;
    // A classic standing queue far above target drives p′ up.
    for _ in 0..200 {
        id += 1;
        q.enqueue(Time::ZERO, p(id, 1, Ecn::NotEct), &mut u, &mut d)
            .unwrap();
    }
    let mut t = 0;
    while q.probability().unwrap() < 0.3 {
        t += 1;
        id += 1;
        q.enqueue(ms(t), p(id, 1, Ecn::NotEct), &mut u, &mut d)
            .unwrap();
        q.dequeue(ms(t), &mut u, &mut d);
        assert!(t < 10_000, "p′ never rose");
    }
    let p_prime = q.probability().unwrap();
    // Now at one instant (no update runs): 20k L4S and 20k classic arrivals.
    let now = ms(t);
    let (mut marked, mut l_total, mut c_seen) = (0u64, 0u64, 0u64);
    d.clear();
    for _ in 0..20_000 {
        id += 1;
        q.enqueue(now, p(id, 2, Ecn::Ect1), &mut u, &mut d).unwrap();
        id += 1;
        q.enqueue(now, p(id, 1, Ecn::NotEct), &mut u, &mut d)
            .unwrap();
    }
    while let Some(x) = q.dequeue(now, &mut u, &mut d) {
        if x.flow == 2 {
            l_total += 1;
            marked += u64::from(x.ecn == Ecn::Ce);
        } else {
            c_seen += 1;
        }
    }
    let c_dropped = d.len() as u64;
    let mark = marked as f64 / l_total as f64;
    let drop = c_dropped as f64 / (c_seen + c_dropped) as f64;
    assert!((mark - params.k * p_prime).abs() < 0.02, "{mark} vs k·p′");
    let predicted = (mark / params.k).powi(2);
    assert!(
        (drop - predicted).abs() < 0.1 * predicted,
        "classic drop {drop}, (mark/k)² = {predicted}"
    );
}

#[test]
fn dualpi2_step_marks_a_standing_l4s_queue_and_classifies_by_ecn() {
    let mut q: Qdisc<P> = Qdisc::new(
        AqmConfig::DualPi2(DualPi2Params::default()),
        QueueLimit::unlimited(),
        None,
    );
    let (mut u, mut d) = (SplitMix(1), Vec::new());
    for i in 0..10 {
        q.enqueue(Time::ZERO, p(i, 2, Ecn::Ect1), &mut u, &mut d)
            .unwrap();
    }
    // Sojourn 0.5 ms: under the 1 ms step, p′ = 0: no mark.
    assert_eq!(
        q.dequeue(Time::from_micros(500), &mut u, &mut d)
            .unwrap()
            .ecn,
        Ecn::Ect1
    );
    // 2 ms: marked.
    assert_eq!(q.dequeue(ms(2), &mut u, &mut d).unwrap().ecn, Ecn::Ce);
    assert_eq!(q.stats().ce_marked, 1);
}

#[test]
fn dualpi2_step_threshold_has_a_floor_of_two_packets_at_low_rates() {
    // 20 Mbit/s: two 1,514-byte packets take 1.21 ms, above the 1-ms step.
    let mut q: Qdisc<P> = Qdisc::new(
        AqmConfig::DualPi2(DualPi2Params::default()),
        QueueLimit::unlimited(),
        Some(20_000_000),
    );
    let (mut u, mut d) = (SplitMix(1), Vec::new());
    for i in 0..3 {
        q.enqueue(Time::ZERO, p(i, 2, Ecn::Ect1), &mut u, &mut d)
            .unwrap();
    }
    // 1.1 ms: above the configured 1 ms, under the floor: no mark.
    let at = Time::from_micros(1_100);
    assert_eq!(q.dequeue(at, &mut u, &mut d).unwrap().ecn, Ecn::Ect1);
    // 1.3 ms: above the floor: marked.
    let at = Time::from_micros(1_300);
    assert_eq!(q.dequeue(at, &mut u, &mut d).unwrap().ecn, Ecn::Ce);
    // At 1 Gbit/s the floor (24 µs) is below the step: 1.1 ms is marked.
    let mut q: Qdisc<P> = Qdisc::new(
        AqmConfig::DualPi2(DualPi2Params::default()),
        QueueLimit::unlimited(),
        Some(1_000_000_000),
    );
    q.enqueue(Time::ZERO, p(9, 2, Ecn::Ect1), &mut u, &mut d)
        .unwrap();
    let at = Time::from_micros(1_100);
    assert_eq!(q.dequeue(at, &mut u, &mut d).unwrap().ecn, Ecn::Ce);
}

#[test]
fn pie_probability_follows_the_delay_and_the_burst_allowance_protects() {
    let mut q: Qdisc<P> = Qdisc::new(
        AqmConfig::Pie(PieParams::default()),
        QueueLimit::unlimited(),
        None,
    );
    let (mut u, mut d) = (SplitMix(5), Vec::new());
    let mut id = 0;
    // Two arrivals and one departure per ms: the delay grows.
    let mut refused_during_burst = 0;
    let mut last = 0.0;
    for t in 0..150 {
        for _ in 0..2 {
            id += 1;
            if q.enqueue(ms(t), p(id, 1, Ecn::NotEct), &mut u, &mut d)
                .is_err()
            {
                refused_during_burst += 1;
            }
        }
        q.dequeue(ms(t), &mut u, &mut d);
        let pr = q.probability().unwrap();
        assert!(pr >= last, "p fell while the delay grew: {pr} < {last}");
        last = pr;
    }
    assert_eq!(refused_during_burst, 0, "no drop within MAX_BURST");
    assert!(last > 0.0, "p rose above the target");
    assert!(q.burst_allowance().unwrap() < Duration::from_millis(150));
    let mut refused_after = 0;
    for t in 150..1000 {
        for _ in 0..2 {
            id += 1;
            if q.enqueue(ms(t), p(id, 1, Ecn::NotEct), &mut u, &mut d)
                .is_err()
            {
                refused_after += 1;
            }
        }
        q.dequeue(ms(t), &mut u, &mut d);
    }
    assert!(
        refused_after > 0,
        "PIE dropped once the burst allowance ran out"
    );
    assert_eq!(q.stats().aqm_dropped, refused_after);
    // An idle, empty queue: p decays back towards 0.
    while q.dequeue(ms(1000), &mut u, &mut d).is_some() {}
    let high = q.probability().unwrap();
    q.dequeue(ms(3000), &mut u, &mut d);
    let low = q.probability().unwrap();
    assert!(low < high * 0.5, "{low} !< {high}/2");
}

#[test]
fn red_obeys_its_thresholds() {
    let params = RedParams {
        w_q: 1.0, // the average is the instantaneous queue: thresholds exact
        ..RedParams::default()
    };
    let mut q: Qdisc<P> = Qdisc::new(AqmConfig::Red(params), QueueLimit::unlimited(), None);
    let (mut u, mut d) = (SplitMix(2), Vec::new());
    // Below min_th (5): every arrival accepted.
    for i in 0..6 {
        q.enqueue(Time::ZERO, p(i, 1, Ecn::NotEct), &mut u, &mut d)
            .unwrap();
    }
    // Between (w_q = 1: avg = the queue met on arrival): held at 10
    // packets, p_b = max_p·(10 − 5)/(15 − 5) = 0.05; count-based spacing
    // makes the gaps between drops uniform on [1, 1/p_b], so the rate is
    // about 1/((1/p_b + 1)/2) ≈ 0.095 and no gap exceeds 1/p_b = 20.
    for i in 6..10 {
        q.enqueue(Time::ZERO, p(i, 1, Ecn::NotEct), &mut u, &mut d)
            .unwrap();
    }
    let (mut refused, mut gap, mut worst_gap) = (0, 0, 0);
    for i in 0..20_000 {
        gap += 1;
        if q.enqueue(Time::ZERO, p(100 + i, 1, Ecn::NotEct), &mut u, &mut d)
            .is_err()
        {
            refused += 1;
            worst_gap = worst_gap.max(gap);
            gap = 0;
        } else {
            q.dequeue(Time::ZERO, &mut u, &mut d);
        }
    }
    let rate = f64::from(refused) / 20_000.0;
    assert!((0.08..0.11).contains(&rate), "rate {rate}");
    assert!(worst_gap <= 20, "gap {worst_gap}");
    // At or above max_th (15): every arrival refused.
    while q.backlog().0 < 15 {
        let _ = q.enqueue(Time::ZERO, p(0, 1, Ecn::NotEct), &mut u, &mut d);
    }
    for j in 0..100 {
        let r = q.enqueue(Time::ZERO, p(10_000 + j, 1, Ecn::NotEct), &mut u, &mut d);
        assert_eq!(r.map_err(|(_, why)| why), Err(Refused::Aqm));
    }
    // With ECN, an ECT arrival above max_th is marked, not dropped.
    let mut q: Qdisc<P> = Qdisc::new(
        AqmConfig::Red(RedParams {
            ecn: true,
            ..params
        }),
        QueueLimit::unlimited(),
        None,
    );
    for i in 0..20 {
        let _ = q.enqueue(Time::ZERO, p(i, 1, Ecn::Ect0), &mut u, &mut d);
    }
    assert_eq!(q.backlog().0, 20);
    assert!(q.stats().ce_marked > 0 && q.stats().aqm_dropped == 0);
}

#[test]
fn drop_tail_refuses_at_the_limit_and_keeps_order() {
    let mut q: Qdisc<P> = Qdisc::new(AqmConfig::DropTail, QueueLimit::packets(2), None);
    let (mut u, mut d) = (SplitMix(2), Vec::new());
    q.enqueue(Time::ZERO, p(1, 1, Ecn::NotEct), &mut u, &mut d)
        .unwrap();
    q.enqueue(Time::ZERO, p(2, 1, Ecn::NotEct), &mut u, &mut d)
        .unwrap();
    let r = q.enqueue(Time::ZERO, p(3, 1, Ecn::NotEct), &mut u, &mut d);
    assert_eq!(r.map_err(|(x, why)| (x.id, why)), Err((3, Refused::Full)));
    assert_eq!(q.front().map(|x| x.id), Some(1));
    assert_eq!(q.dequeue(ms(1), &mut u, &mut d).map(|x| x.id), Some(1));
    assert_eq!(q.backlog(), (1, 1500));
}
