//! One whole controller-lab run (40 s of simulated time) per controller,
//! for four controllers. Run with `cargo bench -p peregrine-sim --bench
//! cclab`; the figures are medians from criterion, to be compared within
//! one run.

use criterion::{criterion_group, criterion_main, Criterion};
use peregrine_sim::cclab::{self as lab, LabConfig};
use std::hint::black_box;

fn bench_lab(c: &mut Criterion) {
    let mut group = c.benchmark_group("lab_run_40s");
    group.sample_size(10);
    for name in ["newreno", "cubic", "bbr", "rtwtcp"] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut cc = peregrine_cc::build(name).expect("registered");
                black_box(
                    lab::run(cc.as_mut(), &LabConfig::default())
                        .summary
                        .bytes_delivered,
                )
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_lab);
criterion_main!(benches);
