//! `LinkModel` outside the engine: a driver written against the public
//! API only, as the real-time emulator will be. It wakes late by a
//! varying amount (as a wall-clock timer does) and still sees the
//! departures, drops and arrival times of a driver that wakes on time.

use peregrine_sim::rng::component_rng;
use peregrine_sim::scenario::model::LossSpec;
use peregrine_sim::world::link::{LinkModel, LinkOutput, PointToPoint, QueueLimit, Server};
use peregrine_sim::world::loss::LossModel;
use peregrine_sim::world::outage::Outages;
use peregrine_sim::world::packet::Packet;
use peregrine_sim::Time;
use std::time::Duration;

fn pkt(id: u64) -> Packet {
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
        wire_bytes: 1200,
        created: Time::ZERO,
        left_first_hop: false,
        hops: 0,
        ecn: None,
        payload: Vec::new(),
    }
}

/// 10 Mbit/s, 5 ms, a 20-packet queue, 10 % seeded loss.
fn link() -> PointToPoint {
    PointToPoint::new(
        Server::Rate(10_000_000),
        Duration::from_millis(5),
        QueueLimit::packets(20),
        LossModel::new(
            LossSpec::Bernoulli {
                p: 0.1,
                data_only: false,
            },
            component_rng(9, "link/x/up/loss"),
        ),
        Outages::none(),
    )
}

/// Offer 60 packets, one every 0.5 ms (faster than the link drains), and
/// drive the link with a clock that reaches each wake-up `lateness(i)`
/// after it was due. Returns (arrival, id) of the delivered packets, the
/// ids lost on the channel and the ids refused by the full queue.
fn drive(lateness: impl Fn(u64) -> Duration) -> (Vec<(Time, u64)>, Vec<u64>, Vec<u64>) {
    let mut l = link();
    let mut out = LinkOutput::default();
    let (mut delivered, mut lost, mut refused) = (Vec::new(), Vec::new(), Vec::new());
    let mut now = Time::ZERO;
    let mut wakes = 0;
    let mut next_arrival = 0u64;
    loop {
        let arrival =
            (next_arrival < 60).then(|| Time::ZERO + Duration::from_micros(500 * next_arrival));
        let wake = l.next_wake(now).map(|w| {
            wakes += 1;
            w + lateness(wakes)
        });
        // The driver's clock jumps to whichever comes first (an arrival
        // is never late: it is when the datagram came in).
        now = match (arrival, wake) {
            (Some(a), Some(w)) => a.min(w),
            (Some(a), None) => a,
            (None, Some(w)) => w,
            (None, None) => break,
        }
        .max(now);
        if arrival == Some(now) {
            // Catch up first: what fell due while asleep leaves before
            // the new packet is offered to the queue.
            l.advance(now, &mut out);
            if let Err((p, _)) = l.enqueue(now, pkt(next_arrival)) {
                refused.push(p.id);
            }
            next_arrival += 1;
        }
        l.advance(now, &mut out);
        delivered.extend(out.delivered.drain(..).map(|(t, p)| (t, p.id)));
        lost.extend(out.dropped.drain(..).map(|(p, _)| p.id));
        out.processed.clear();
    }
    (delivered, lost, refused)
}

#[test]
fn a_late_waking_driver_sees_the_timeline_of_an_exact_one() {
    let exact = drive(|_| Duration::ZERO);
    // Late by 0–0.3 ms at every wake-up.
    let late = drive(|i| Duration::from_micros((i * 37) % 300));
    assert_eq!(exact, late);
    let (delivered, lost, refused) = exact;
    assert!(!lost.is_empty() && !refused.is_empty() && delivered.len() > 20);
    assert_eq!(delivered.len() + lost.len() + refused.len(), 60);
    // 1200 B at 10 Mbit/s = 0.96 ms apart, plus 5 ms of propagation.
    assert_eq!(delivered[0].0, Time::from_nanos(960_000 + 5_000_000));
}

#[test]
fn wired_links_can_move_to_a_driver_thread() {
    fn send<T: Send>(_: &T) {}
    send(&link());
}
