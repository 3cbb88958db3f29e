//! How an experiment tells its caller how far it has come.
//!
//! The library never draws anything: a run function takes a
//! `&dyn Progress`, the command line implements it with a progress bar,
//! tests and library users pass [`Silent`]. Worker threads of a sweep call
//! [`Progress::update`] concurrently and out of order, so implementations
//! must be `Sync` and must never move backwards.

/// A sink for progress reports. Every method is O(1) for the caller.
pub trait Progress: Sync {
    /// A phase of `total` runs named `title` starts (it replaces the
    /// previous phase, if any).
    fn start(&self, title: &str, total: usize);
    /// `done` of the phase's `total` runs are finished.
    fn update(&self, done: usize, total: usize);
    /// What is being measured right now (a short status line).
    fn status(&self, _text: &str) {}
    /// A warning to show without losing the bar.
    fn warn(&self, text: &str) {
        eprintln!("warning: {text}");
    }
    /// The current phase is over.
    fn finish(&self);
}

/// Reports nothing (tests, library users without a terminal).
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _title: &str, _total: usize) {}
    fn update(&self, _done: usize, _total: usize) {}
    fn finish(&self) {}
}
