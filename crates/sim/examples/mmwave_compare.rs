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
//! half-width, retransmissions, the per-flow spread (Jain's index and the
//! slowest flow's share of the mean flow, means over seeds) and the
//! channel's event counts.
//!
//! Environment (all optional): `TRAFFIC` (`bulk`, `cbr`, `onoff`; default
//! `bulk`), `LOAD` (default 1.0), `MODELS` (`old,new` by default; `new`
//! alone halves the cost), `CCS` (comma list), `EXTRA` (more `[vehicular]`
//! lines, `;`-separated, e.g. `mobility = "highway";area_m = [168.0, 40.0]`)
//! and `SERIES` (a directory: per model, controller and seed 1 a CSV of
//! vehicle 0's cwnd, SRTT, its downlink RLC queue and capacity every 50 ms,
//! plus the aggregate RLC backlog — the time series that show what a
//! controller does around an outage).

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
    let env_or = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let traffic = env_or("TRAFFIC", "bulk");
    let load = env_or("LOAD", "1.0");
    let wanted = env_or("MODELS", "old,new");
    let ccs = env_or("CCS", "rtwtcp,cubic,compound,bbr");
    let extra = env_or("EXTRA", "").replace(';', "\n");
    let series = std::env::var("SERIES").ok();
    let models = [
        ("old", ["unshared", "outage", "oracle"]),
        ("new", ["pf", "fading", new_source.as_str()]),
    ];
    for (label, [sched, channel, source]) in models {
        if !wanted.split(',').any(|w| w == label) {
            continue;
        }
        for cc in ccs.split(',') {
            let (mut thr, mut rtt, mut retx) = (Vec::new(), Vec::new(), Vec::new());
            let (mut jain, mut slowest) = (Vec::new(), Vec::new());
            let mut counts = None;
            for seed in 1..=seeds {
                let doc = format!(
                    "duration = \"{secs}s\"\nseed = {seed}\n[metrics]\ninterval = \"50ms\"\n\
                     per_message = false\n[vehicular]\nenvironment = \"{env}\"\n\
                     mobility = \"{mobility}\"\nrate_scale = 0.025\ntraffic = \"{traffic}\"\n\
                     cc = \"{cc}\"\nhints = \"{hints}\"\nscheduler = \"{sched}\"\n\
                     channel_model = \"{channel}\"\nhint_source = \"{source}\"\n\
                     rlc_buffer_bytes = {rlc}\nload = {load}\n{extra}\n"
                );
                let s = Scenario::from_toml_str(&doc, "compare", &[]).expect("valid");
                let m = &s.model;
                let v = m.vehicular.as_ref().expect("vehicular");
                let tl = ChannelTimeline::record(v, m.duration_ns, m.seed).expect("records");
                counts = Some(tl.counts);
                let r = run_with_timeline(&s, Some(&tl)).expect("runs");
                let per: Vec<f64> = r
                    .flows
                    .iter()
                    .map(|f| f.goodput_bps(r.duration_ns))
                    .collect();
                let total: f64 = per.iter().sum();
                let sq: f64 = per.iter().map(|x| x * x).sum();
                jain.push(total * total / (per.len() as f64 * sq.max(1e-9)));
                let min = per.iter().cloned().fold(f64::INFINITY, f64::min);
                slowest.push(min / (total / per.len() as f64).max(1e-9));
                if let (Some(dir), 1) = (&series, seed) {
                    write_series(dir, label, cc, &r, v.first_access_link, &tl);
                }
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
            let (j, _) = mean_ci(&jain);
            let (sl, slci) = mean_ci(&slowest);
            println!(
                "{label} {env}/{mobility} {cc:9} thr {t:8.2} ± {tci:6.2} Mbit/s  \
                 rtt {r:8.2} ± {rci:6.2} ms  retx {x:8.0} ± {xci:6.0}  \
                 jain {j:.3} slowest {sl:.3} ± {slci:.3}  {:?}",
                counts.expect("a seed")
            );
        }
    }
}

/// Vehicle 0's cwnd (kB), SRTT (ms), downlink RLC queue (kB) and capacity
/// (Mbit/s), and the RLC backlog of all vehicles (kB), per 50 ms sample,
/// into `dir/<model>_<cc>.csv`.
fn write_series(
    dir: &str,
    model: &str,
    cc: &str,
    r: &peregrine_sim::SimResults,
    first_access_link: usize,
    tl: &ChannelTimeline,
) {
    use std::fmt::Write as _;
    let f0 = &r.flows[0];
    let down0 = &r.links[2 * first_access_link];
    let mut out = String::from("time_s,cwnd_kb,srtt_ms,rlc0_kb,cap0_mbps,rlc_all_kb\n");
    for (k, s) in f0.metrics.samples.iter().enumerate() {
        let t = peregrine_sim::Time::from_nanos(s.time_ns);
        let all: u64 = (0..r.flows.len())
            .filter_map(|i| r.links.get(2 * (first_access_link + i)))
            .filter_map(|l| l.samples.get(k))
            .map(|x| x.backlog_bytes)
            .sum();
        let q0 = down0.samples.get(k).map_or(0, |x| x.backlog_bytes);
        let _ = writeln!(
            out,
            "{:.3},{:.1},{:.2},{:.1},{:.2},{:.1}",
            s.time_ns as f64 / 1e9,
            s.cwnd_bytes as f64 / 1e3,
            s.srtt_ns.unwrap_or(0) as f64 / 1e6,
            q0 as f64 / 1e3,
            tl.capacity[0].at(t) as f64 / 1e6,
            all as f64 / 1e3,
        );
    }
    let _ = std::fs::create_dir_all(dir);
    let path = format!("{dir}/{model}_{cc}.csv");
    std::fs::write(&path, out).expect("writes the series");
}
