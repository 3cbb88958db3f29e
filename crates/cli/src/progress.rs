//! A progress bar for long CLI work (sweeps, reproductions), on stderr.
//!
//! Hidden when stderr is not a terminal (pipes, CI logs, tests) or when
//! the user asked for `--quiet`, so it never pollutes captured output.
//! [`Progress::callback`] has the `(done, total)` shape of
//! `peregrine_sim::experiment::run_sweep`'s progress callback and may be
//! called from any thread.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal as _;

/// A progress bar counting runs.
#[derive(Debug, Clone)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `total` runs labelled `message`; hidden if `quiet` or if
    /// stderr is not a terminal.
    pub fn new(total: usize, message: &str, quiet: bool) -> Progress {
        let visible = !quiet && std::io::stderr().is_terminal();
        Progress::with_visibility(total, message, visible)
    }

    /// A bar that is shown (on stderr) only if `visible`.
    pub fn with_visibility(total: usize, message: &str, visible: bool) -> Progress {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        if let Ok(style) = ProgressStyle::with_template(
            "{msg} [{bar:32}] {pos}/{len} runs · {elapsed} elapsed · ETA {eta}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(message.to_string());
        Progress { bar }
    }

    /// Record that `done` of `total` runs are finished.
    pub fn update(&self, done: usize, total: usize) {
        if self.bar.length() != Some(total as u64) {
            self.bar.set_length(total as u64);
        }
        // Runs finish out of order across threads: never move backwards.
        if done as u64 > self.bar.position() {
            self.bar.set_position(done as u64);
        }
    }

    /// A `(done, total)` callback for the sweep runner.
    pub fn callback(&self) -> impl Fn(usize, usize) + Sync + '_ {
        move |done, total| self.update(done, total)
    }

    /// Runs finished so far.
    pub fn position(&self) -> u64 {
        self.bar.position()
    }

    /// Whether the bar is drawn.
    pub fn is_hidden(&self) -> bool {
        self.bar.is_hidden()
    }

    /// Remove the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_when_quiet_and_counts_monotonically() {
        let p = Progress::new(10, "sweep", true);
        assert!(p.is_hidden());
        let cb = p.callback();
        cb(3, 10);
        cb(2, 10); // a late report from another thread
        assert_eq!(p.position(), 3);
        cb(10, 10);
        assert_eq!(p.position(), 10);
        p.finish();
    }
}
