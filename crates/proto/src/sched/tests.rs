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

/// Seed 002 Fig. 5's setting at the scheduler: a class-0 control stream
/// offering ~0.2 Mbit/s of 20–300-byte messages beside nine saturating
/// class-3 bulk streams, one 1400-byte packet filled per packet time of a
/// 1 Mbit/s link (1415 bytes on the wire: 11.32 ms). With a 100 ms bound,
/// aging must send ≥ 99 % of the control messages and none may wait in
/// the scheduler longer than the bound plus one packet time; it used to
/// let the aged bulk streams take turns ahead of the control stream for
/// ever (70 of 8,190 messages delivered in the simulator).
#[test]
fn aging_serves_the_control_stream_beside_nine_saturating_bulk_streams() {
    use std::collections::VecDeque;
    use std::time::Duration;
    let bound = Duration::from_millis(100);
    let packet_time = Duration::from_nanos(1415 * 8 * 1000); // at 1 Mbit/s
    let payload_bytes = 1400usize;
    let mut s = aging::Aging::new(bound);
    let bulk: Vec<StreamView> = (1..10).map(|id| view(id, 3, 1)).collect();
    for b in &bulk {
        s.activate(b);
    }
    let control = |enqueued: Time| StreamView {
        head_enqueued: enqueued,
        ..view(0, 0, 3)
    };
    // (enqueued, bytes left) of each queued control message.
    let mut queue: VecDeque<(Time, usize)> = VecDeque::new();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // Mean message 160 bytes every 6.4 ms mean: 0.2 Mbit/s.
    let mut next_arrival = Time::ZERO;
    let (mut offered, mut sent, mut max_wait) = (0u64, 0u64, Duration::ZERO);
    let mut bulk_packets = [0u64; 10];
    let end = Time::from_millis(60_000);
    let mut now = Time::ZERO;
    while now < end {
        while next_arrival <= now {
            if queue.is_empty() {
                s.activate(&control(next_arrival));
            }
            queue.push_back((next_arrival, 20 + (next() % 281) as usize));
            offered += 1;
            next_arrival = next_arrival.saturating_add(Duration::from_micros(next() % 12_800));
        }
        let mut room = payload_bytes;
        while room > 0 {
            let Some(id) = s.pick(&SchedContext::at(now)) else {
                break;
            };
            if id == 0 {
                let (enqueued, left) = queue.front_mut().expect("control is active");
                let take = (*left).min(room);
                *left -= take;
                room -= take;
                if *left == 0 {
                    max_wait = max_wait.max(now.saturating_duration_since(*enqueued));
                    sent += 1;
                    queue.pop_front();
                }
                let head = queue.front().map(|m| m.0).unwrap_or(now);
                s.on_sent(&control(head), take, !queue.is_empty());
            } else {
                bulk_packets[usize::from(id)] += 1;
                s.on_sent(&bulk[usize::from(id) - 1], room, true);
                room = 0;
            }
        }
        s.end_packet();
        now = now.saturating_add(packet_time);
    }
    eprintln!("aging, Fig. 5 setting: sent {sent} of {offered}, longest wait {max_wait:?}, bulk packets {bulk_packets:?}");
    assert!(offered > 9_000, "offered {offered}");
    assert!(
        sent as f64 >= 0.99 * offered as f64,
        "sent {sent} of {offered} control messages"
    );
    assert!(
        max_wait <= bound + packet_time,
        "a control message waited {max_wait:?} in the scheduler"
    );
    // The bulk streams are not starved either: each gets a share.
    for (id, n) in bulk_packets.iter().enumerate().skip(1) {
        assert!(*n > 100, "bulk stream {id} sent {n} packets");
    }
}

/// A class-0 stream that is itself saturating (its head message always
/// old, so always late) still yields to an aged class-3 stream once per
/// half bound: aging starves no one.
#[test]
fn aging_still_serves_a_low_class_beside_a_saturating_urgent_stream() {
    let bound = std::time::Duration::from_millis(100);
    let mut s = aging::Aging::new(bound);
    let hi = view(1, 0, 1); // head queued at 0: late from 50 ms on
    let lo = view(2, 3, 1);
    s.activate(&hi);
    s.activate(&lo);
    let mut lo_picks = Vec::new();
    for ms in 0..1_000u64 {
        let id = s.pick(&SchedContext::at(Time::from_millis(ms))).unwrap();
        if id == 2 {
            lo_picks.push(ms);
            s.on_sent(&lo, 1400, true);
        } else {
            s.on_sent(&hi, 1400, true);
        }
    }
    // Every half bound (the wait that promotes class 3), then no sooner
    // than half a bound after the previous overtaking.
    assert_eq!(
        lo_picks,
        vec![
            50, 100, 150, 200, 250, 300, 350, 400, 450, 500, 550, 600, 650, 700, 750, 800, 850,
            900, 950
        ]
    );
}

/// EDF as it was before a stream kept its place when it shares its key
/// with nobody: every datagram sent re-sequences the stream.
#[derive(Default)]
struct EdfAlwaysRefresh {
    order: std::collections::BTreeMap<(Time, u8, u64), u16>,
    keys: std::collections::BTreeMap<u16, (Time, u8, u64)>,
    seq: u64,
}

impl EdfAlwaysRefresh {
    fn put(&mut self, s: &StreamView, refresh: bool) {
        let deadline = s.head_deadline.unwrap_or(Time::MAX);
        if let Some(&old) = self.keys.get(&s.id) {
            if !refresh && old.0 == deadline && old.1 == s.class {
                return;
            }
            self.order.remove(&old);
        }
        self.seq += 1;
        let key = (deadline, s.class, self.seq);
        self.order.insert(key, s.id);
        self.keys.insert(s.id, key);
    }
    fn pick(&self) -> Option<u16> {
        self.order.first_key_value().map(|(_, &id)| id)
    }
    fn remove(&mut self, id: u16) {
        if let Some(key) = self.keys.remove(&id) {
            self.order.remove(&key);
        }
    }
}

proptest::proptest! {
    /// The shortcut changes no pick: over random activations, sends (with
    /// the head's deadline and class moving) and removals, EDF picks what
    /// the always-re-sequencing EDF picks.
    #[test]
    fn edf_keeping_an_unshared_place_picks_as_re_sequencing_does(
        ops in proptest::collection::vec((0u8..4, 1u16..6, 0u8..3, 0u64..4), 1..200)
    ) {
        let mut fast = edf::Edf::new();
        let mut reference = EdfAlwaysRefresh::default();
        let ctx = SchedContext::at(Time::ZERO);
        for (op, id, class, deadline) in ops {
            let mut v = view(id, class, 1);
            // Deadline 0: none; a few distinct values so that ties happen.
            v.head_deadline = (deadline > 0).then(|| Time::from_millis(deadline * 10));
            match op {
                0 => {
                    fast.activate(&v);
                    reference.put(&v, false);
                }
                1 | 2 => {
                    // Only a stream the scheduler holds is ever sent from.
                    if reference.keys.contains_key(&id) {
                        fast.on_sent(&v, 1_000, true);
                        reference.put(&v, true);
                    }
                }
                _ => {
                    fast.remove(id);
                    reference.remove(id);
                }
            }
            proptest::prop_assert_eq!(fast.pick(&ctx), reference.pick());
            proptest::prop_assert_eq!(fast.len(), reference.keys.len());
        }
    }
}
