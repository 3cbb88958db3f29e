//! The CPU hog of seed 003 §VI-D: background load that removes idle CPU
//! cycles at user level, so the transports can be measured at 25, 50, 75 and
//! 100 % load.
//!
//! `peregrine hog --duty D --seconds S` (hidden) is one duty-cycled busy
//! loop: in every 10 ms period it spins for `D × 10 ms` and sleeps for the
//! rest. [`Hog::start`] runs one such child process per core. Key choices:
//! - child processes of the same binary, not threads, so the load competes
//!   with both the Peregrine processes and the in-process TCP echo exactly
//!   as an unrelated program would;
//! - bounded twice: each hog exits after `--seconds` on its own and as soon
//!   as its parent is gone (re-parented), so a crashed `reproduce` leaves no
//!   spinning orphans; [`Hog`] kills its children when dropped.
//
// A hog is wall-clock load by definition, and the share it got is measured
// against wall-clock time: this module reads the clock (CLI runtime, not
// the sans-IO core).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use anyhow::{bail, Context};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The duty-cycle period: short enough that "50 %" is 50 % at the time
/// scale of one round trip, long enough that the sleep is honoured.
const PERIOD: Duration = Duration::from_millis(10);

/// Arguments of the hidden `peregrine hog`.
#[derive(Debug, Clone, Copy)]
pub struct HogArgs {
    /// Fraction of each 10 ms period spent spinning, 0.0 ..= 1.0.
    pub duty: f64,
    /// Exit after this many seconds whatever happens.
    pub seconds: f64,
}

/// Check a duty cycle: a fraction in 0 ..= 1.
pub fn check_duty(duty: f64) -> anyhow::Result<f64> {
    if !(0.0..=1.0).contains(&duty) {
        bail!("hog --duty must be within 0.0 ..= 1.0, got {duty}");
    }
    Ok(duty)
}

/// Run one hog until `--seconds` pass or the parent process goes away.
pub fn run(args: HogArgs) -> anyhow::Result<()> {
    let duty = check_duty(args.duty)?;
    if !(args.seconds.is_finite() && args.seconds >= 0.0) {
        bail!(
            "hog --seconds must be a non-negative number, got {}",
            args.seconds
        );
    }
    let parent = std::os::unix::process::parent_id();
    let start = std::time::Instant::now();
    let limit = Duration::from_secs_f64(args.seconds);
    let busy = PERIOD.mul_f64(duty);
    let mut spins: u64 = 0;
    while start.elapsed() < limit && std::os::unix::process::parent_id() == parent {
        let period_start = std::time::Instant::now();
        while period_start.elapsed() < busy {
            spins = std::hint::black_box(spins.wrapping_add(1));
        }
        let rest = PERIOD.saturating_sub(period_start.elapsed());
        if !rest.is_zero() {
            std::thread::sleep(rest);
        }
    }
    Ok(())
}

/// A set of hog processes, one per core; killed when dropped.
pub struct Hog {
    children: Vec<Child>,
    // When they were started, to turn their CPU time into a share.
    started: std::time::Instant,
}

/// CPU seconds (user + system) a live process has used, from
/// /proc/PID/stat; `None` if unreadable. /proc reports clock ticks of
/// USER_HZ, which Linux fixes at 100 for user space.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; fields resume after ')'.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')' come state (field 3) ... utime is field 14, stime 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

impl Hog {
    /// Start `cores` hogs of the binary `exe` at `load_pct` % (0 starts none),
    /// each bounded to `max_seconds`.
    pub fn start(exe: &Path, load_pct: u8, cores: usize, max_seconds: f64) -> anyhow::Result<Hog> {
        let duty = check_duty(f64::from(load_pct) / 100.0)?;
        let mut hog = Hog {
            children: Vec::new(),
            started: std::time::Instant::now(),
        };
        if load_pct == 0 {
            return Ok(hog);
        }
        for _ in 0..cores {
            let child = Command::new(exe)
                .args(["hog", "--duty", &duty.to_string()])
                .args(["--seconds", &max_seconds.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .with_context(|| format!("cannot start the hog {} hog", exe.display()))?;
            // Pushed at once so that a later failure still kills this one
            // (Drop), and registered so that an interrupted run does too.
            crate::netns::kill_on_signal(child.id());
            hog.children.push(child);
        }
        hog.started = std::time::Instant::now();
        Ok(hog)
    }

    /// How many hog processes are running.
    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// Whether no hog runs (0 % load).
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// Stop the hogs; the share of the `cores` they actually got while they
    /// ran, percent (on a busy machine less than asked). `None` with no hog
    /// or when /proc cannot be read.
    pub fn stop(mut self, cores: usize) -> Option<f64> {
        let secs = self.started.elapsed().as_secs_f64();
        let children = std::mem::take(&mut self.children);
        // Read the CPU time before the kill: a reaped process has no /proc entry.
        let used: Option<f64> = children.iter().map(|c| cpu_seconds(c.id())).sum();
        let measured = !children.is_empty() && cores > 0 && secs > 0.0;
        children.into_iter().for_each(kill);
        used.filter(|_| measured)
            .map(|u| 100.0 * u / (secs * cores as f64))
    }
}

fn kill(mut c: Child) {
    crate::netns::release_on_signal(c.id());
    let _ = c.kill();
    let _ = c.wait();
}

impl Drop for Hog {
    fn drop(&mut self) {
        std::mem::take(&mut self.children)
            .into_iter()
            .for_each(kill);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duty_must_be_a_fraction() {
        assert!(check_duty(0.0).is_ok());
        assert!(check_duty(1.0).is_ok());
        assert!(format!("{}", check_duty(1.5).unwrap_err()).contains("--duty"));
        assert!(check_duty(f64::NAN).is_err());
        assert!(check_duty(-0.1).is_err());
    }

    #[test]
    fn hog_stops_after_its_bound() {
        // A 50 % hog bounded to 50 ms returns on its own.
        run(HogArgs {
            duty: 0.5,
            seconds: 0.05,
        })
        .expect("a bounded hog returns");
        assert!(run(HogArgs {
            duty: 0.5,
            seconds: -1.0
        })
        .is_err());
    }

    #[test]
    fn zero_load_starts_nothing() {
        let hog = Hog::start(Path::new("/nonexistent"), 0, 4, 1.0).expect("no process needed");
        assert_eq!(hog.len(), 0);
        assert_eq!(hog.stop(4), None);
    }

    #[test]
    fn cpu_seconds_of_this_process() {
        // This test process has run code, so it has a CPU time; a pid that
        // cannot exist has none.
        let me = cpu_seconds(std::process::id()).expect("/proc/self/stat readable");
        assert!(me >= 0.0);
        assert_eq!(cpu_seconds(u32::MAX), None);
    }
}
