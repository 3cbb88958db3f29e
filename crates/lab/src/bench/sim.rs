//! # `peregrine bench sim`: how fast the simulator runs a scenario
//!
//! Runs one scenario several times in this process and reports, per run,
//! the simulated events and the wall-clock seconds, then the median wall
//! time, events per wall-second, the real-time factor (simulated seconds
//! per wall second), the process's peak resident set (`getrusage`'s
//! `ru_maxrss`: the high-water mark of the whole process, so of its
//! largest run) and the user CPU seconds of all runs (on a shared,
//! loaded machine the CPU time says more than the wall time). Issue 40
//! uses it for the swarm scaling figures of `docs/performance.md`
//! (`peregrine bench sim scenarios/swarm-1000.toml --runs 1 --json`).
//!
//! The simulation itself never reads the wall clock; only this benchmark
//! does, around each run.

use peregrine_sim::Scenario;
use serde::Serialize;

/// One run of the scenario.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// Simulated events processed.
    pub events: u64,
    /// Wall-clock seconds of the run.
    pub wall_seconds: f64,
    /// `events / wall_seconds`.
    pub events_per_second: f64,
}

/// What `peregrine bench sim` reports (its `--json` document).
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// The scenario's name.
    pub scenario: String,
    /// Simulated seconds per run.
    pub simulated_seconds: f64,
    /// Simulated events of the median run (every run simulates the same
    /// events: the simulation is deterministic).
    pub events: u64,
    /// Median wall-clock seconds over the runs.
    pub wall_seconds: f64,
    /// `events / wall_seconds` of the median.
    pub events_per_second: f64,
    /// Simulated seconds per wall second (> 1: faster than real time).
    pub real_time_factor: f64,
    /// Peak resident set of the process, bytes (`ru_maxrss`).
    pub peak_rss_bytes: u64,
    /// User CPU seconds of the process over all runs (`ru_utime`).
    pub user_cpu_seconds: f64,
    /// Every run, in order.
    pub runs: Vec<Run>,
}

impl Outcome {
    /// The human-readable summary (the runs are reported as they finish
    /// through [`run`]'s callback).
    pub fn table(&self) -> String {
        format!(
            "{}: {} s simulated, {} events; median wall time {:.3} s over {} runs = {:.0} simulated events per wall-second ({:.2}x real time); peak RSS {:.1} MiB; user CPU {:.2} s\n",
            self.scenario,
            self.simulated_seconds,
            self.events,
            self.wall_seconds,
            self.runs.len(),
            self.events_per_second,
            self.real_time_factor,
            self.peak_rss_bytes as f64 / (1024.0 * 1024.0),
            self.user_cpu_seconds,
        )
    }
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchSimError {
    /// `runs` was 0.
    #[error("`runs` must be at least 1")]
    NoRuns,
    /// The simulation failed.
    #[error("simulation failed: {0}")]
    Sim(#[from] peregrine_sim::SimError),
}

/// (peak RSS bytes, user CPU seconds) of this process so far.
fn rusage() -> (u64, f64) {
    // SAFETY: `getrusage` fills the zeroed struct it is given and reads
    // nothing else; RUSAGE_SELF is always valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (0, 0.0);
    }
    // Linux reports ru_maxrss in KiB.
    let rss = u64::try_from(ru.ru_maxrss).unwrap_or(0) * 1024;
    let user = ru.ru_utime.tv_sec as f64 + ru.ru_utime.tv_usec as f64 * 1e-6;
    (rss, user)
}

/// Run `scenario` `runs` times; `each` is called after every run (for
/// progress lines). O(runs · the simulation).
pub fn run(
    scenario: &Scenario,
    runs: usize,
    mut each: impl FnMut(usize, &Run),
) -> Result<Outcome, BenchSimError> {
    if runs == 0 {
        return Err(BenchSimError::NoRuns);
    }
    let (_, cpu0) = rusage();
    let mut done = Vec::with_capacity(runs);
    for i in 0..runs {
        // Benchmarks measure the machine's wall clock on purpose; the
        // simulation itself never reads it.
        #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
        let t0 = std::time::Instant::now();
        let r = peregrine_sim::run(scenario)?;
        #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
        let wall = t0.elapsed().as_secs_f64();
        let run = Run {
            events: r.events,
            wall_seconds: wall,
            events_per_second: r.events as f64 / wall.max(1e-9),
        };
        each(i, &run);
        done.push(run);
    }
    let (rss, cpu1) = rusage();
    let mut order: Vec<usize> = (0..done.len()).collect();
    order.sort_by(|&a, &b| done[a].wall_seconds.total_cmp(&done[b].wall_seconds));
    let median = &done[order[order.len() / 2]];
    let simulated_seconds = scenario.model.duration_ns as f64 / 1e9;
    Ok(Outcome {
        scenario: scenario.name(),
        simulated_seconds,
        events: median.events,
        wall_seconds: median.wall_seconds,
        events_per_second: median.events_per_second,
        real_time_factor: simulated_seconds / median.wall_seconds.max(1e-9),
        peak_rss_bytes: rss,
        user_cpu_seconds: cpu1 - cpu0,
        runs: done,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_dumbbell_reports_its_events_and_memory() {
        let text = include_str!("../../../../scenarios/dumbbell.toml");
        let sc = Scenario::from_toml_str(text, "dumbbell.toml", &["duration=2s".to_string()])
            .expect("scenario");
        let mut seen = 0;
        let o = run(&sc, 2, |_, _| seen += 1).expect("runs");
        assert_eq!(seen, 2);
        assert_eq!(o.runs.len(), 2);
        assert!(o.events > 0);
        assert_eq!(o.runs[0].events, o.runs[1].events, "deterministic");
        assert!(o.peak_rss_bytes > 1 << 20, "{} bytes", o.peak_rss_bytes);
        assert!((o.simulated_seconds - 2.0).abs() < 1e-9);
        assert!(o.table().contains("peak RSS"));
        assert!(matches!(run(&sc, 0, |_, _| ()), Err(BenchSimError::NoRuns)));
    }
}
