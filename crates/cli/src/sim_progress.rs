//! Progress of one `peregrine sim` run on stderr: simulated time, events
//! per wall-second and an ETA, drawn only when stderr is a terminal and
//! `-q` was not given (so captured output never changes); and a warning,
//! even off a terminal (but not with `-q`), as soon as the run's pace says
//! it will take more than an hour of wall time.
//!
//! The simulator cannot know a run's cost before running it (events
//! depend on what the protocol does), so the estimate is measured: the
//! engine reports every 65,536 events (`peregrine_sim::run_with_progress`)
//! and, once a second of wall time has passed, the projected total is
//! simulated time left ÷ simulated seconds per wall-second.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use peregrine_sim::Time;
use std::io::IsTerminal as _;

/// Projected wall time above which a run is worth a warning, seconds.
pub const WARN_ABOVE_WALL_S: f64 = 3600.0;

/// The wall time measured before the pace is trusted, seconds.
const PACE_AFTER_WALL_S: f64 = 1.0;

/// The progress of one run (see the module documentation).
pub struct RunProgress {
    bar: Option<ProgressBar>,
    quiet: bool,
    end_ns: u64,
    // The wall clock measures the machine, never the simulation.
    #[allow(clippy::disallowed_types)]
    started: std::time::Instant,
    warned: bool,
}

// The wall clock measures the machine (pace, ETA), never the simulation.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
impl RunProgress {
    /// Progress for a run of `duration_ns` simulated nanoseconds; drawn only
    /// if stderr is a terminal and not `quiet`.
    pub fn new(duration_ns: u64, quiet: bool) -> RunProgress {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = visible.then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(duration_ns / 1_000_000),
                ProgressDrawTarget::stderr(),
            );
            if let Ok(style) =
                ProgressStyle::with_template("[{bar:32}] {percent:>3}% · {msg} · ETA {eta}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        RunProgress {
            bar,
            quiet,
            end_ns: duration_ns,
            started: std::time::Instant::now(),
            warned: false,
        }
    }

    /// The engine reached simulated time `now` after `events` events.
    pub fn report(&mut self, now: Time, events: u64) {
        let wall_s = self.started.elapsed().as_secs_f64();
        let sim_ns = now.as_nanos().min(self.end_ns);
        if let Some(bar) = &self.bar {
            bar.set_position(sim_ns / 1_000_000);
            bar.set_message(format!(
                "{} of {} simulated · {} events/s",
                seconds(sim_ns as f64 / 1e9),
                seconds(self.end_ns as f64 / 1e9),
                si(events as f64 / wall_s.max(1e-9)),
            ));
        }
        if !self.warned && !self.quiet && wall_s >= PACE_AFTER_WALL_S && sim_ns > 0 {
            let total_s = wall_s * self.end_ns as f64 / sim_ns as f64;
            if let Some(text) = long_run_warning(total_s, sim_ns as f64 / 1e9 / wall_s) {
                self.warned = true;
                match &self.bar {
                    Some(bar) => bar.println(text),
                    None => eprintln!("{text}"),
                }
            }
        }
    }

    /// Clear the bar (the run ended).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The warning for a run projected to take `total_wall_s` seconds at
/// `pace` simulated seconds per wall-second, or `None` below an hour.
pub fn long_run_warning(total_wall_s: f64, pace: f64) -> Option<String> {
    (total_wall_s > WARN_ABOVE_WALL_S).then(|| {
        format!(
            "warning: at its current pace ({pace:.3} simulated s per wall-second) this run needs about {} of wall time; Ctrl-C stops it, --set duration=… shortens it",
            human_wall(total_wall_s)
        )
    })
}

/// `"2.5 h"`, `"3.1 days"`, `"12 min"`.
fn human_wall(s: f64) -> String {
    if s >= 2.0 * 86_400.0 {
        format!("{:.1} days", s / 86_400.0)
    } else if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.0} min", s / 60.0)
    }
}

/// `"12.5 s"` (simulated time).
fn seconds(s: f64) -> String {
    if s >= 100.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// `"1.23 M"`, `"456 k"`, `"78"`.
fn si(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.0} k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_only_above_an_hour() {
        assert_eq!(long_run_warning(3599.0, 10.0), None);
        assert_eq!(
            long_run_warning(100_000_000.0 / 8.0, 8.0).as_deref(),
            Some("warning: at its current pace (8.000 simulated s per wall-second) this run needs about 144.7 days of wall time; Ctrl-C stops it, --set duration=… shortens it")
        );
        assert_eq!(
            long_run_warning(9000.0, 1.0)
                .as_deref()
                .map(|w| w.contains("about 2.5 h of wall")),
            Some(true)
        );
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(si(1_234_567.0), "1.23 M");
        assert_eq!(si(45_600.0), "46 k");
        assert_eq!(seconds(12.34), "12.3 s");
        assert_eq!(human_wall(720.0), "12 min");
    }
}
