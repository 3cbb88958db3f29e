//! Unit tests of the schedulers on backlogged streams (no network).

use super::*;
use peregrine_cc::Time;

fn view(id: u16, class: u8, weight: u32) -> StreamView {
    StreamView {
        id,
        class,
        weight,
        head_deadline: None,
        head_enqueued: Time::ZERO,
    }
}

/// Serve `n` blocks of `len` bytes, one packet each, from always-backlogged
/// streams; the sequence of stream ids served.
fn serve(s: &mut dyn Scheduler, views: &[StreamView], n: usize, len: usize) -> Vec<u16> {
    for v in views {
        s.activate(v);
    }
    let ctx = SchedContext::at(Time::ZERO);
    let mut out = Vec::new();
    for _ in 0..n {
        let id = s.pick(&ctx).expect("backlogged");
        let v = views.iter().find(|v| v.id == id).expect("known");
        s.on_sent(v, len, true);
        s.end_packet();
        out.push(id);
    }
    out
}

#[test]
fn rr_alternates_in_activation_order() {
    let mut s = rr::RoundRobin::new();
    let got = serve(
        &mut s,
        &[view(5, 0, 1), view(2, 3, 1), view(9, 1, 1)],
        6,
        100,
    );
    assert_eq!(got, [5, 2, 9, 5, 2, 9]);
}

#[test]
fn rr_drops_streams_without_more_data() {
    let mut s = rr::RoundRobin::new();
    let (a, b) = (view(1, 0, 1), view(2, 0, 1));
    s.activate(&a);
    s.activate(&b);
    let ctx = SchedContext::at(Time::ZERO);
    assert_eq!(s.pick(&ctx), Some(1));
    s.on_sent(&a, 10, false);
    assert_eq!(s.pick(&ctx), Some(2));
    s.remove(2);
    assert_eq!(s.pick(&ctx), None);
    assert!(s.is_empty());
}

#[test]
fn abs_serves_the_head_of_the_most_urgent_class_until_it_is_empty() {
    let mut s = abs::Abs::new();
    let got = serve(
        &mut s,
        &[view(1, 2, 1), view(2, 1, 1), view(3, 1, 1)],
        4,
        100,
    );
    assert_eq!(got, [2, 2, 2, 2]);
    let ctx = SchedContext::at(Time::ZERO);
    s.on_sent(&view(2, 1, 1), 100, false);
    assert_eq!(s.pick(&ctx), Some(3));
    s.on_sent(&view(3, 1, 1), 100, false);
    assert_eq!(s.pick(&ctx), Some(1));
}

#[test]
fn wfq_shares_match_weights_within_two_percent_over_10000_packets() {
    for weights in [[3u32, 1, 0], [1, 1, 1], [5, 3, 2], [100, 1, 7]] {
        let views: Vec<StreamView> = weights
            .iter()
            .enumerate()
            .filter(|(_, &w)| w > 0)
            .map(|(i, &w)| view(i as u16, 0, w))
            .collect();
        let mut s = wfq::Wfq::new();
        let got = serve(&mut s, &views, 10_000, 1415);
        let total: u32 = views.iter().map(|v| v.weight).sum();
        for v in &views {
            let share = got.iter().filter(|&&id| id == v.id).count() as f64 / 10_000.0;
            let want = f64::from(v.weight) / f64::from(total);
            assert!(
                (share - want).abs() <= 0.02 * want.max(0.01),
                "weights {weights:?}: stream {} got {share}, want {want}",
                v.id
            );
        }
    }
}

#[test]
fn wfq_by_bytes_not_packets() {
    // Equal weights, one stream sends blocks 4× larger: it gets a quarter
    // of the decisions and the same bytes.
    let mut s = wfq::Wfq::new();
    let (a, b) = (view(1, 0, 1), view(2, 0, 1));
    s.activate(&a);
    s.activate(&b);
    let ctx = SchedContext::at(Time::ZERO);
    let mut bytes = [0usize; 3];
    for _ in 0..10_000 {
        let id = s.pick(&ctx).unwrap();
        let len = if id == 1 { 400 } else { 100 };
        bytes[usize::from(id)] += len;
        s.on_sent(if id == 1 { &a } else { &b }, len, true);
    }
    let ratio = bytes[1] as f64 / bytes[2] as f64;
    assert!((ratio - 1.0).abs() < 0.02, "{bytes:?}");
}

#[test]
fn wfq_idle_streams_earn_no_credit() {
    let mut s = wfq::Wfq::new();
    let (a, b) = (view(1, 0, 1), view(2, 0, 1));
    let ctx = SchedContext::at(Time::ZERO);
    s.activate(&a);
    for _ in 0..100 {
        assert_eq!(s.pick(&ctx), Some(1));
        s.on_sent(&a, 100, true);
    }
    s.activate(&b);
    let mut got = Vec::new();
    for _ in 0..10 {
        let id = s.pick(&ctx).unwrap();
        s.on_sent(if id == 1 { &a } else { &b }, 100, true);
        got.push(id);
    }
    let from_b = got.iter().filter(|&&i| i == 2).count();
    assert!((4..=6).contains(&from_b), "{got:?}");
}

#[test]
fn adaptive_follows_algorithm_4() {
    let mut s = adaptive::Adaptive::new(1_000_000);
    let hi = view(1, 0, 1);
    let lo = view(2, 3, 1);
    s.activate(&hi);
    s.activate(&lo);
    let mut ctx = SchedContext::at(Time::ZERO);
    assert_eq!(s.pick(&ctx), Some(1), "no estimate yet: ABS");
    assert_eq!(s.mode(), Some("abs"));
    // 5/4 · 10,000 B · 8 / 0.1 s = 1 Mbit/s: not above the target, ABS.
    ctx.cwnd_bytes = 10_000;
    ctx.srtt = Some(std::time::Duration::from_millis(100));
    assert_eq!(adaptive::Adaptive::estimate_bps(&ctx), Some(1_000_000));
    assert_eq!(s.pick(&ctx), Some(1));
    assert_eq!(s.switches(), 0);
    ctx.cwnd_bytes = 10_001;
    assert_eq!(s.pick(&ctx), Some(1), "RR starts at the queue head");
    assert_eq!((s.mode(), s.switches()), (Some("rr"), 1));
    s.on_sent(&hi, 100, true);
    assert_eq!(s.pick(&ctx), Some(1), "RR: the head fills the packet");
    s.end_packet();
    assert_eq!(s.pick(&ctx), Some(2), "RR alternates between packets");
    s.on_sent(&lo, 100, true);
    s.end_packet();
    ctx.cwnd_bytes = 5_000;
    assert_eq!(s.pick(&ctx), Some(1));
    assert_eq!((s.mode(), s.switches()), (Some("abs"), 2));
}

#[test]
fn edf_serves_the_earliest_deadline_and_no_deadline_last() {
    let mut s = edf::Edf::new();
    let mut a = view(1, 3, 1);
    a.head_deadline = Some(Time::from_millis(50));
    let mut b = view(2, 0, 1);
    b.head_deadline = Some(Time::from_millis(20));
    let c = view(3, 3, 1);
    for v in [&a, &b, &c] {
        s.activate(v);
    }
    let ctx = SchedContext::at(Time::ZERO);
    assert_eq!(s.pick(&ctx), Some(2));
    s.on_sent(&b, 10, false);
    assert_eq!(s.pick(&ctx), Some(1));
    a.head_deadline = None;
    s.on_sent(&a, 10, true);
    assert_eq!(s.pick(&ctx), Some(3), "no deadlines: least recently served");
    s.on_sent(&c, 10, true);
    assert_eq!(s.pick(&ctx), Some(1));
}

#[test]
fn aging_promotes_a_starving_low_class_within_its_bound() {
    let bound = std::time::Duration::from_millis(100);
    let mut s = aging::Aging::new(bound);
    let hi = view(1, 0, 1);
    let mut lo = view(2, 3, 1);
    lo.head_enqueued = Time::ZERO;
    s.activate(&hi);
    s.activate(&lo);
    // Until 3/8 of the bound, ABS (a tie goes to ABS); at half the bound
    // the class-3 stream overtakes class 0.
    for ms in [0u64, 25, 49] {
        assert_eq!(s.pick(&SchedContext::at(Time::from_millis(ms))), Some(1));
    }
    assert_eq!(s.pick(&SchedContext::at(Time::from_millis(50))), Some(2));
    assert_eq!(s.aged_picks(), 1);
    // Plain ABS would never serve it.
    let mut a = abs::Abs::new();
    a.activate(&hi);
    a.activate(&lo);
    assert_eq!(
        a.pick(&SchedContext::at(Time::from_millis(1_000_000))),
        Some(1)
    );
}

#[test]
fn aging_does_not_promote_a_bulk_stream_that_is_being_served() {
    // A class-3 bulk stream whose head message is old (its application
    // keeps a deep queue) but which is served all the time is not
    // starving: a fresh class-0 message goes first, as with ABS.
    let bound = std::time::Duration::from_millis(100);
    let mut s = aging::Aging::new(bound);
    let bulk = view(2, 3, 1);
    s.activate(&bulk);
    for ms in 0..200u64 {
        assert_eq!(s.pick(&SchedContext::at(Time::from_millis(ms))), Some(2));
        s.on_sent(&bulk, 1415, true);
    }
    let mut hi = view(1, 0, 1);
    hi.head_enqueued = Time::from_millis(200);
    s.activate(&hi);
    assert_eq!(s.pick(&SchedContext::at(Time::from_millis(200))), Some(1));
    assert_eq!(s.aged_picks(), 0);
    // Once the bulk stream goes unserved for half the bound, it overtakes.
    for ms in [210u64, 240, 248] {
        assert_eq!(s.pick(&SchedContext::at(Time::from_millis(ms))), Some(1));
        s.on_sent(&hi, 1415, true);
    }
    assert_eq!(s.pick(&SchedContext::at(Time::from_millis(250))), Some(2));
    assert_eq!(s.aged_picks(), 1);
}

#[test]
fn every_scheduler_handles_10000_streams() {
    for cfg in [
        SchedulerConfig::RoundRobin,
        SchedulerConfig::Wfq,
        SchedulerConfig::Abs,
        SchedulerConfig::Adaptive { target_bps: 1 },
        SchedulerConfig::Edf,
        SchedulerConfig::Aging {
            bound: std::time::Duration::from_millis(10),
        },
    ] {
        let mut s = cfg.build();
        let views: Vec<StreamView> = (0..10_000u16).map(|i| view(i, (i % 4) as u8, 1)).collect();
        let got = serve(s.as_mut(), &views, 20_000, 100);
        assert_eq!(got.len(), 20_000, "{}", s.name());
        assert_eq!(s.len(), 10_000, "{}", s.name());
        assert_eq!(s.name(), cfg.name());
    }
}
