//! Hot path: the cost of one `on_ack` per controller in congestion
//! avoidance (a whole controller-lab run is `cargo bench -p peregrine-sim
//! --bench cclab`). Run with `cargo bench -p peregrine-cc`; the figures are
//! medians from criterion, to be compared within one run.

use criterion::{criterion_group, criterion_main, Criterion};
use peregrine_cc::{AckSample, CaState, PathInfo, RateSample, Time, NAMES};
use std::hint::black_box;
use std::time::Duration;

fn steady_path(now: Time, pn: u64) -> PathInfo {
    let mut p = PathInfo::new(now, 1448);
    p.srtt = Some(Duration::from_millis(40));
    p.rttvar = Some(Duration::from_millis(2));
    p.min_rtt = Some(Duration::from_millis(40));
    p.latest_rtt = Some(Duration::from_millis(40));
    p.rto = Duration::from_millis(200);
    p.snd_una = pn;
    p.snd_nxt = pn + 100;
    p.delivered = pn;
    p.in_flight = 100;
    p.ca_state = CaState::Open;
    p
}

fn bench_on_ack(c: &mut Criterion) {
    let mut group = c.benchmark_group("on_ack");
    for name in NAMES {
        group.bench_function(name, |b| {
            let mut cc = peregrine_cc::build(name).expect("registered");
            let mut pn = 0u64;
            cc.init(&steady_path(Time::ZERO, 0));
            b.iter(|| {
                pn += 1;
                let now = Time::from_micros(pn * 116);
                let ack = AckSample {
                    acked_segs: 1,
                    acked_bytes: 1448,
                    rtt: Some(Duration::from_millis(40)),
                    prior_in_flight: 100,
                    una_advanced: true,
                    rate: Some(RateSample {
                        delivered: 100,
                        interval: Duration::from_millis(40),
                        prior_delivered: pn.saturating_sub(100),
                        prior_in_flight: 100,
                        acked_sacked: 1,
                        rtt: Some(Duration::from_millis(40)),
                        ..RateSample::default()
                    }),
                    ..AckSample::default()
                };
                cc.on_ack(black_box(&ack), &steady_path(now, pn));
                black_box(cc.cwnd_bytes())
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_on_ack);
criterion_main!(benches);
