use peregrine_cc::lab::{self, LabConfig};
use std::time::Duration;
fn main() {
    for name in ["vegas", "veno", "yeah", "westwood", "compound", "illinois"] {
        let mut cfg = LabConfig::clean();
        cfg.duration = Duration::from_secs(30);
        let mut cc = peregrine_cc::build(name).unwrap();
        let t = lab::run(cc.as_mut(), &cfg);
        let steady: Vec<_> = t.rows.iter().filter(|r| r.time.as_secs_f64() > 5.0 && r.event.is_none()).collect();
        let q: Vec<f64> = steady.iter().map(|r| r.queue_bytes as f64 / 1448.0).collect();
        let mean = q.iter().sum::<f64>() / q.len() as f64;
        let min = q.iter().cloned().fold(f64::MAX, f64::min);
        let max = q.iter().cloned().fold(0.0, f64::max);
        let bw = steady.last().and_then(|r| r.bandwidth_estimate_bytes_per_sec);
        println!("{name}: lost {} qmean {mean:.2} min {min} max {max} bw {:?} goodput {:.2}", t.summary.packets_lost, bw, t.summary.bytes_delivered as f64*8.0/30e6);
    }
}
