//! The progress bar of sweeps and reproductions, on stderr: the CLI's
//! implementation of `peregrine_lab::Progress`.
//!
//! Hidden when stderr is not a terminal (pipes, CI logs, tests) or when
//! the user asked for `--quiet`, so it never pollutes captured output.
//! The lab calls it from worker threads, out of order: the bar never
//! moves backwards.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal as _;
use std::sync::Mutex;

/// A progress bar counting runs, one phase at a time.
#[derive(Debug)]
pub struct Bar {
    visible: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Bar {
    /// A bar shown on stderr unless `quiet` or stderr is not a terminal.
    pub fn new(quiet: bool) -> Bar {
        Bar::with_visibility(!quiet && std::io::stderr().is_terminal())
    }

    /// A bar that is drawn only if `visible`.
    pub fn with_visibility(visible: bool) -> Bar {
        Bar {
            visible,
            bar: Mutex::new(None),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&ProgressBar) -> R) -> Option<R> {
        let guard = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().map(f)
    }

    /// Runs finished so far in the current phase.
    #[cfg(test)]
    pub fn position(&self) -> u64 {
        self.with(ProgressBar::position).unwrap_or(0)
    }
}

impl peregrine_lab::Progress for Bar {
    fn start(&self, title: &str, total: usize) {
        let target = if self.visible {
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
        bar.set_message(title.to_string());
        let mut guard = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = guard.replace(bar) {
            old.finish_and_clear();
        }
    }

    fn update(&self, done: usize, total: usize) {
        self.with(|bar| {
            if bar.length() != Some(total as u64) {
                bar.set_length(total as u64);
            }
            // Runs finish out of order across threads: never move backwards.
            if done as u64 > bar.position() {
                bar.set_position(done as u64);
            }
        });
    }

    fn status(&self, text: &str) {
        self.with(|bar| bar.set_message(text.to_string()));
    }

    fn warn(&self, text: &str) {
        let shown = self.visible
            && self
                .with(|bar| bar.println(format!("warning: {text}")))
                .is_some();
        if !shown {
            eprintln!("warning: {text}");
        }
    }

    fn finish(&self) {
        self.with(ProgressBar::finish_and_clear);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use peregrine_lab::Progress as _;

    #[test]
    fn hidden_when_quiet_and_counts_monotonically() {
        let p = Bar::new(true);
        p.start("sweep", 10);
        p.update(3, 10);
        p.update(2, 10); // a late report from another thread
        assert_eq!(p.position(), 3);
        p.update(10, 10);
        assert_eq!(p.position(), 10);
        p.finish();
    }
}
