use super::*;
use crate::rng::component_rng;
use crate::world::loss::LossSpec;
use peregrine_proto::io::EcnCodepoint;

/// `ns` nanoseconds after the epoch.
fn t(ns: u64) -> Time {
    Time::from_nanos(ns)
}

fn pkt(id: u64, bytes: u32) -> Packet {
    Packet {
        id,
        flow: 0,
        forward: true,
        is_data: true,
        src: 0,
        dst: 1,
        next_hop: 1,
        dst_port: 1,
        src_port: 1,
        wire_bytes: bytes,
        created: peregrine_cc::Time::ZERO,
        left_first_hop: false,
        hops: 0,
        ecn: None,
        payload: Vec::new(),
    }
}

fn link(server: Server, delay_ns: u64, limit: QueueLimit) -> PointToPoint {
    PointToPoint::new(
        server,
        Duration::from_nanos(delay_ns),
        limit,
        LossModel::new(LossSpec::None, component_rng(1, "l")),
        Outages::none(),
    )
}

/// Drive a link until idle, returning (arrival ns, packet id).
fn drain(l: &mut PointToPoint, now_ns: u64) -> Vec<(u64, u64)> {
    let mut now = t(now_ns);
    let mut got = Vec::new();
    let mut out = LinkOutput::default();
    l.advance(now, &mut out);
    while let Some(w) = l.next_wake(now) {
        now = w;
        l.advance(now, &mut out);
    }
    for (at, p) in out.delivered {
        got.push((at.as_nanos(), p.id));
    }
    got
}

const PKTS: QueueLimit = QueueLimit {
    packets: Some(100),
    bytes: None,
    floor_packets: 0,
};

#[test]
fn fixed_rate_serializes_then_propagates() {
    // 1000 B at 8 Mbit/s = 1 ms; delay 5 ms.
    let mut l = link(Server::Rate(8_000_000), 5_000_000, PKTS);
    for i in 0..3 {
        l.enqueue(t(0), pkt(i, 1000)).expect("room");
    }
    let got = drain(&mut l, 0);
    assert_eq!(got, vec![(6_000_000, 0), (7_000_000, 1), (8_000_000, 2)]);
}

#[test]
fn drop_tail_in_packets_and_bytes_with_floor() {
    let mut l = link(
        Server::Rate(8_000),
        0,
        QueueLimit {
            packets: Some(2),
            bytes: None,
            floor_packets: 0,
        },
    );
    assert!(l.enqueue(t(0), pkt(0, 100)).is_ok());
    assert!(l.enqueue(t(0), pkt(1, 100)).is_ok());
    assert_eq!(
        l.enqueue(t(0), pkt(2, 100)).map_err(|(_, r)| r),
        Err(DropReason::QueueFull)
    );
    // A byte limit of 0 (zero-delay BDP) still admits the floor of 3 packets.
    let mut l = link(
        Server::Rate(8_000),
        0,
        QueueLimit {
            packets: None,
            bytes: Some(0),
            floor_packets: 3,
        },
    );
    for i in 0..3 {
        assert!(l.enqueue(t(0), pkt(i, 1500)).is_ok());
    }
    assert!(l.enqueue(t(0), pkt(3, 1500)).is_err());
    assert_eq!(l.stats().queue_drops, 1);
}

#[test]
fn trace_opportunities_carry_1500_bytes_and_packets_span_them() {
    // Opportunities at 1, 1, 2, 5 ms; period 5 ms.
    let trace = Arc::new(MahimahiTrace::parse("1\n1\n2\n5\n").expect("valid"));
    let mut l = link(Server::Trace(trace), 0, PKTS);
    // Four packets of 1000 B: the first opportunity (1500 B) sends packet
    // 0 and half of packet 1; the second (same ms) finishes packet 1 and
    // packet 2; the third (2 ms) sends packet 3 and wastes its remainder.
    for i in 0..4 {
        l.enqueue(t(0), pkt(i, 1000)).expect("room");
    }
    let got = drain(&mut l, 0);
    assert_eq!(
        got,
        vec![
            (1_000_000, 0),
            (1_000_000, 1),
            (1_000_000, 2),
            (2_000_000, 3)
        ]
    );
    // A 4000 B packet uses parts of three opportunities.
    l.enqueue(t(2_000_000), pkt(4, 4000)).expect("room");
    let got = drain(&mut l, 2_000_000);
    // Opportunities at 5 ms and then the next loop's 6, 6 ms.
    assert_eq!(got, vec![(6_000_000, 4)]);
}

#[test]
fn trace_wastes_opportunities_on_an_empty_queue_and_loops() {
    let trace = Arc::new(MahimahiTrace::parse("1\n2\n4\n").expect("valid"));
    let mut l = link(Server::Trace(trace), 0, PKTS);
    // Arrives at 2.5 ms: the 1 and 2 ms opportunities are wasted; it
    // leaves at 4 ms. The next arrives at 4.5 ms: next opportunity is
    // 1 ms of the second loop = 5 ms.
    l.enqueue(t(2_500_000), pkt(0, 1500)).expect("room");
    let got = drain(&mut l, 2_500_000);
    assert_eq!(got, vec![(4_000_000, 0)]);
    l.enqueue(t(4_500_000), pkt(1, 1500)).expect("room");
    let got = drain(&mut l, 4_500_000);
    assert_eq!(got, vec![(5_000_000, 1)]);
    assert!(l.stats().wasted_opportunities >= 2);
}

#[test]
fn outage_holds_the_queue_and_loses_what_is_on_the_wire() {
    use crate::units::Dur;
    use crate::world::outage::{OutageConfig, OutageWindow};
    let cfg = OutageConfig {
        scheduled: vec![OutageWindow {
            start: Dur(500_000),
            end: Dur(10_000_000),
        }],
        ..OutageConfig::default()
    };
    let mut l = PointToPoint::new(
        Server::Rate(8_000_000),
        Duration::ZERO,
        PKTS,
        LossModel::new(LossSpec::None, component_rng(1, "l")),
        Outages::new(&cfg, component_rng(1, "o")),
    );
    // Packet 0 (1 ms of serialization) is on the wire when the outage
    // starts at 0.5 ms: lost. Packet 1 waits and leaves at 10 ms.
    l.enqueue(t(0), pkt(0, 1000)).expect("room");
    l.enqueue(t(0), pkt(1, 1000)).expect("room");
    let got = drain(&mut l, 0);
    assert_eq!(got, vec![(11_000_000, 1)]);
    assert_eq!(l.stats().outage_drops, 1);
}

#[test]
fn real_mahimahi_trace_mean_rate_if_present() {
    let rel = std::path::Path::new("shared/traces/mahimahi/TMobile-LTE-short.up");
    let Some(p) = crate::paths::find_upwards(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), rel)
    else {
        eprintln!("skipping: ../shared/traces/mahimahi not found beside the workspace");
        return;
    };
    let loaded = MahimahiTrace::load(&p).expect("the shared trace parses");
    assert!(loaded.opportunities() > 1000);
    let r = loaded.mean_rate_bps();
    // An LTE uplink: between 100 kbit/s and 100 Mbit/s.
    assert!(r > 1e5 && r < 1e8, "mean rate {r}");
    // Served through a link, a long backlog leaves at about that rate.
    let trace = Arc::new(loaded);
    let mut l = link(
        Server::Trace(Arc::clone(&trace)),
        0,
        QueueLimit {
            packets: Some(100_000),
            bytes: None,
            floor_packets: 0,
        },
    );
    for i in 0..20_000 {
        l.enqueue(t(0), pkt(i, 1500)).expect("room");
    }
    let got = drain(&mut l, 0);
    // One 1500-byte packet per opportunity, none wasted while backlogged.
    assert_eq!(got.len(), 20_000);
    assert_eq!(
        got.last().expect("delivered").0,
        trace.opportunity(19_999).as_nanos()
    );
    assert_eq!(got[0].0, trace.opportunity(0).as_nanos());
}

/// 2000 packets offered at 1 ms spacing to a 10 Mbit/s, 10 ms link with
/// the given impairments: (arrival ns, id) in arrival order.
fn impaired(jitter: Jitter, reorders: bool, reorder: Option<NetemReorder>) -> Vec<(u64, u64)> {
    let mut l = link(Server::Rate(10_000_000), 10_000_000, PKTS).with_impairments(
        jitter,
        reorders,
        component_rng(1, "j"),
        reorder.map(|r| (r, component_rng(1, "r"))),
    );
    let mut out = LinkOutput::default();
    for i in 0..2000u64 {
        let now = t(i * 1_000_000);
        l.advance(now, &mut out);
        l.enqueue(now, pkt(i, 1000)).unwrap();
        l.advance(now, &mut out);
    }
    let mut got = drain(&mut l, 2000 * 1_000_000);
    got.extend(out.delivered.iter().map(|(at, p)| (at.as_nanos(), p.id)));
    got.sort();
    got
}

fn overtaken(arrivals: &[(u64, u64)]) -> usize {
    arrivals.windows(2).filter(|w| w[1].1 < w[0].1).count()
}

#[test]
fn jitter_without_reordering_keeps_the_order_and_with_it_does_not() {
    let normal = Jitter::Normal {
        mean_us: 5_000.0,
        stdev_us: 5_000.0,
    };
    let fifo = impaired(normal, false, None);
    assert_eq!(fifo.len(), 2000);
    assert_eq!(overtaken(&fifo), 0, "a packet overtook its predecessor");
    let free = impaired(normal, true, None);
    assert!(overtaken(&free) > 100, "{} overtakes", overtaken(&free));
    // The mean extra delay is the jitter's mean (5 ms; clamping at 0 adds
    // a little): arrivals are 10.8 ms (serialisation + delay) + jitter.
    let mean_ms = free
        .iter()
        .map(|(at, id)| (at - id * 1_000_000) as f64 / 1e6)
        .sum::<f64>()
        / 2000.0;
    assert!((mean_ms - 10.8 - 5.0).abs() < 0.6, "mean {mean_ms} ms");
    let pareto = impaired(
        Jitter::Pareto {
            mean_us: 2_000.0,
            stdev_us: 1_000.0,
        },
        false,
        None,
    );
    assert_eq!(overtaken(&pareto), 0);
}

#[test]
fn netem_reorder_sends_about_p_of_the_packets_at_once() {
    let arrivals = impaired(Jitter::None, false, Some(NetemReorder::new(0.25, 1)));
    // A reordered packet skips the 10 ms delay: it arrives 0.8 ms after it
    // was offered (its serialisation), the others 10.8 ms after.
    let early = arrivals
        .iter()
        .filter(|(at, id)| at - id * 1_000_000 < 5_000_000)
        .count();
    let rate = early as f64 / 2000.0;
    assert!((rate - 0.25).abs() < 0.03, "reorder rate {rate}");
    assert!(overtaken(&arrivals) > 0);
    // gap 5, p 1: exactly every fifth packet.
    let every5 = impaired(Jitter::None, false, Some(NetemReorder::new(1.0, 5)));
    let early: Vec<u64> = every5
        .iter()
        .filter(|(at, id)| at - id * 1_000_000 < 5_000_000)
        .map(|(_, id)| *id)
        .collect();
    assert_eq!(early.len(), 400);
    assert!(early.iter().all(|id| id % 5 == 4));
}

#[test]
fn an_aqm_link_marks_ect_packets_and_counts_them() {
    let aqm = peregrine_link::aqm::AqmConfig::Codel(peregrine_link::aqm::CodelParams {
        ecn: true,
        ..Default::default()
    });
    // 1 Mbit/s: a 1000-byte packet takes 8 ms; 400 offered at once build
    // a standing queue far above CoDel's 5 ms target.
    let run = |ecn: Option<EcnCodepoint>| {
        let mut l = link(Server::Rate(1_000_000), 0, QueueLimit::packets(1000)).with_aqm(
            aqm,
            QueueLimit::packets(1000),
            component_rng(1, "aqm"),
        );
        let mut out = LinkOutput::default();
        for i in 0..400 {
            let mut p = pkt(i, 1000);
            p.ecn = ecn;
            l.enqueue(t(0), p).unwrap();
        }
        let mut now = t(0);
        l.advance(now, &mut out);
        while let Some(w) = l.next_wake(now) {
            now = w;
            l.advance(now, &mut out);
        }
        (l, out)
    };
    let (l, out) = run(Some(EcnCodepoint::Ect0));
    let marked = out
        .delivered
        .iter()
        .filter(|(_, p)| p.ecn == Some(EcnCodepoint::Ce))
        .count() as u64;
    assert!(marked > 0);
    assert_eq!(
        out.delivered.len(),
        400,
        "ECT packets are marked, not dropped"
    );
    assert_eq!(l.stats().ce_marked, marked);
    assert_eq!((l.stats().aqm_dropped, l.stats().aqm), (0, Some("codel")));
    // Not ECN-capable: dropped instead, reported as AQM drops.
    let (l, out) = run(None);
    let aqm_drops = out
        .dropped
        .iter()
        .filter(|(_, r)| *r == DropReason::Aqm)
        .count() as u64;
    assert!(aqm_drops > 0);
    assert_eq!(l.stats().aqm_dropped, aqm_drops);
    assert_eq!(out.delivered.len() as u64 + aqm_drops, 400);
}

#[test]
fn a_trace_link_serves_an_fq_codel_queue() {
    // A trace with one opportunity per ms; FQ-CoDel cannot be peeked, so
    // the head is dequeued into the trace server and sent from there.
    let trace = Arc::new(MahimahiTrace::parse("1\n").unwrap());
    let mut l = link(Server::Trace(trace), 0, QueueLimit::packets(100)).with_aqm(
        peregrine_link::aqm::AqmConfig::FqCodel(Default::default()),
        QueueLimit::packets(100),
        component_rng(1, "aqm"),
    );
    for i in 0..10 {
        l.enqueue(t(0), pkt(i, 1500)).unwrap();
    }
    let got = drain(&mut l, 0);
    assert_eq!(got.len(), 10);
    assert_eq!(l.backlog(), (0, 0));
}
