//! Scheduler decisions per second with 10, 100 and 10,000 active streams,
//! for each scheduler: one decision is `pick` plus `on_sent` of a
//! 1,428-byte frame (the stream stays backlogged, so every decision
//! re-queues it). Streams have classes 0–3 and weights 1–4; under EDF every
//! stream's next deadline moves on after each block.
//!
//! `sched_bulk_beside_priority`: the shape of `perf`'s latency test — one
//! backlogged class-2 bulk stream without deadlines and an idle class-0
//! stream; one decision per datagram of bulk.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use peregrine_proto::sched::{SchedContext, SchedulerConfig, StreamView};
use peregrine_proto::Time;
use std::hint::black_box;
use std::time::Duration;

const DECISIONS: u64 = 1_000;

fn schedulers() -> [SchedulerConfig; 6] {
    [
        SchedulerConfig::RoundRobin,
        SchedulerConfig::Wfq,
        SchedulerConfig::Abs,
        SchedulerConfig::Adaptive {
            target_bps: 5_000_000,
        },
        SchedulerConfig::Edf,
        SchedulerConfig::Aging {
            bound: Duration::from_millis(100),
        },
    ]
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sched_decisions");
    g.throughput(Throughput::Elements(DECISIONS));
    for cfg in schedulers() {
        for n in [10u16, 100, 10_000] {
            let mut views: Vec<StreamView> = (0..n)
                .map(|i| StreamView {
                    id: i,
                    class: (i % 4) as u8,
                    weight: 1 + u32::from(i % 4),
                    head_deadline: Some(Time::from_micros(u64::from(i) * 7 % 1_000)),
                    head_enqueued: Time::from_micros(u64::from(i)),
                })
                .collect();
            let mut s = cfg.build();
            for v in &views {
                s.activate(v);
            }
            // Adaptive: an estimate of 5/4 · 62,500 B · 8 / 100 ms =
            // 6.25 Mbit/s, above the target, alternating with one below.
            let mut ctx = SchedContext {
                now: Time::from_millis(1),
                cwnd_bytes: 62_500,
                srtt: Some(Duration::from_millis(100)),
            };
            let mut tick = 0u64;
            g.bench_with_input(BenchmarkId::new(cfg.name(), n), &n, |b, _| {
                b.iter(|| {
                    for _ in 0..DECISIONS {
                        tick += 1;
                        ctx.now = Time::from_micros(1_000 + tick);
                        ctx.cwnd_bytes = if tick % 5_000 < 2_500 { 62_500 } else { 20_000 };
                        let id = s.pick(&ctx).expect("backlogged");
                        let v = &mut views[usize::from(id)];
                        v.head_deadline = Some(Time::from_micros(tick + u64::from(id) % 977));
                        v.head_enqueued = ctx.now;
                        s.on_sent(v, 1_428, true);
                        black_box(id);
                    }
                });
            });
        }
    }
    g.finish();
}

fn bench_bulk_beside_priority(c: &mut Criterion) {
    let mut g = c.benchmark_group("sched_bulk_beside_priority");
    g.throughput(Throughput::Elements(DECISIONS));
    for cfg in schedulers() {
        let view = |id: u16, class: u8| StreamView {
            id,
            class,
            weight: 1,
            head_deadline: None,
            head_enqueued: Time::ZERO,
        };
        let (priority, bulk) = (view(0, 0), view(1, 2));
        let mut s = cfg.build();
        s.activate(&priority);
        s.on_sent(&priority, 200, false);
        s.activate(&bulk);
        let ctx = SchedContext {
            now: Time::from_millis(1),
            cwnd_bytes: 1_000_000,
            srtt: Some(Duration::from_micros(100)),
        };
        g.bench_function(cfg.name(), |b| {
            b.iter(|| {
                for _ in 0..DECISIONS {
                    let id = s.pick(&ctx).expect("backlogged");
                    s.on_sent(&bulk, 1_428, true);
                    black_box(id);
                }
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench, bench_bulk_beside_priority);
criterion_main!(benches);
