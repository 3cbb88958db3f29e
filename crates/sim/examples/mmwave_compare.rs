//! Issue 23 sensitivity probe: bulk throughput and RTT of the four
//! seed-004 controllers on the same recorded channels, old model
//! (`unshared`/`outage`/`oracle`) against the new one (`pf`/`fading`/
//! `mobility`), per seed, with 95 % confidence half-widths.
//!
//!   cargo run -p peregrine-sim --example mmwave_compare -- \
//!       [seconds] [seeds] [environment] [mobility] [rlc_buffer_bytes] \
//!       [hints] [new-model hint_source]
//!
//! Prints one line per (model, controller): mean aggregate throughput
//! (Mbit/s) ± half-width, mean of the flows' sampled SRTT (ms) ±
//! half-width, retransmissions, and the channel's event counts.

use peregrine_sim::world::vehicles::ChannelTimeline;
use peregrine_sim::{run_with_timeline, Scenario};

/// Student t 0.975 quantiles for 1 … 10 degrees of freedom.
const T975: [f64; 10] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
];

fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (m, f64::NAN);
    }
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, T975[(xs.len() - 2).min(9)] * (var / n).sqrt())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let secs: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(10);
    let seeds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    let env = args.get(2).cloned().unwrap_or_else(|| "urban".into());
    let mobility = args.get(3).cloned().unwrap_or_else(|| "random".into());
    // Before rate_scale (0.025), as in `[vehicular]`; default the seed's 50 MB.
    let rlc: u64 = args
        .get(4)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000_000);
    let hints = args.get(5).cloned().unwrap_or_else(|| "perfect".into());
    let new_source = args.get(6).cloned().unwrap_or_else(|| "mobility".into());
    let models = [
        ("old", ["unshared", "outage", "oracle"]),
        ("new", ["pf", "fading", new_source.as_str()]),
    ];
    for (label, [sched, channel, source]) in models {
        for cc in ["rtwtcp", "cubic", "compound", "bbr"] {
            let (mut thr, mut rtt, mut retx) = (Vec::new(), Vec::new(), Vec::new());
            let mut counts = None;
            for seed in 1..=seeds {
                let doc = format!(
                    "duration = \"{secs}s\"\nseed = {seed}\n[metrics]\ninterval = \"50ms\"\n\
                     per_message = false\n[vehicular]\nenvironment = \"{env}\"\n\
                     mobility = \"{mobility}\"\nrate_scale = 0.025\ntraffic = \"bulk\"\n\
                     cc = \"{cc}\"\nhints = \"{hints}\"\nscheduler = \"{sched}\"\n\
                     channel_model = \"{channel}\"\nhint_source = \"{source}\"\n\
                     rlc_buffer_bytes = {rlc}\n"
                );
                let s = Scenario::from_toml_str(&doc, "compare", &[]).expect("valid");
                let m = &s.model;
                let v = m.vehicular.as_ref().expect("vehicular");
                let tl = ChannelTimeline::record(v, m.duration_ns, m.seed).expect("records");
                counts = Some(tl.counts);
                let r = run_with_timeline(&s, Some(&tl)).expect("runs");
                let total: f64 = r.flows.iter().map(|f| f.goodput_bps(r.duration_ns)).sum();
                let srtts: Vec<f64> = r
                    .flows
                    .iter()
                    .flat_map(|f| f.metrics.samples.iter().filter_map(|x| x.srtt_ns))
                    .map(|ns| ns as f64 / 1e6)
                    .collect();
                thr.push(total / 1e6);
                rtt.push(srtts.iter().sum::<f64>() / srtts.len().max(1) as f64);
                retx.push(
                    r.flows
                        .iter()
                        .filter_map(|f| f.stats.as_ref())
                        .map(|s| s.packets_retransmitted as f64)
                        .sum::<f64>(),
                );
            }
            let (t, tci) = mean_ci(&thr);
            let (r, rci) = mean_ci(&rtt);
            let (x, xci) = mean_ci(&retx);
            println!(
                "{label} {env}/{mobility} {cc:9} thr {t:8.2} ± {tci:6.2} Mbit/s  \
                 rtt {r:8.2} ± {rci:6.2} ms  retx {x:8.0} ± {xci:6.0}  {:?}",
                counts.expect("a seed")
            );
        }
    }
}
