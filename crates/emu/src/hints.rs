//! `peregrine emu --hint-lead D [--hint-miss P] [--hint-false-alarm R]`:
//! the link model's own knowledge of its outages, exported to the command
//! as link hints (issue 38 item 3).
//!
//! The emulated link's outages are drawn from seeded generators, so the
//! emulator knows them in advance: the simulator's [`HintPlan`]
//! (`peregrine_sim::world::hint_plan`, the same plan a scenario link's
//! `hints` uses) rebuilds both directions' outages from the forwarding
//! threads' configurations and generator names, merges them, and
//! announces each `lead` ahead, with misses and false alarms drawn from
//! `emu/hints` of the link's seed.
//!
//! The feed ([`Exporter`]) is a Unix stream socket the emulator listens
//! on; the command finds it in `PEREGRINE_HINTS` (`unix:PATH`) and reads
//! JSON lines in the format of `peregrine::hints::json`:
//! `{"t_ms": START, "kind": "outage", "duration_ms": LENGTH, "confidence":
//! 1}`, with `t_ms` the window's start in Unix time (the model's time 0 is
//! the emulator's start). A reader that connects late first gets every
//! hint already sent whose outage has not begun.

use crate::clock::from_model;
use peregrine_cc::Time;
use std::collections::VecDeque;
use std::io::Write as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The environment variable that tells the command where the feed is.
pub const HINTS_ENV: &str = "PEREGRINE_HINTS";
pub use peregrine_sim::world::hint_plan::{
    HintField, HintOptions, HintPlan, OutageSource, PlannedHint, DEFAULT_ALARM,
};

/// The generator name of the emulator's hint draws (misses; false
/// alarms under `emu/hints/false_alarms`).
pub const HINT_RNG: &str = "emu/hints";

/// Checks `opts`; the error names the flag.
pub fn validate(opts: &HintOptions) -> Result<(), String> {
    opts.check().map_err(|(field, problem)| {
        let flag = match field {
            HintField::Miss => "--hint-miss",
            HintField::FalseAlarm => "--hint-false-alarm",
        };
        format!("{flag}: {problem}")
    })
}

/// The JSON line of `h`, for an emulator that started at Unix time
/// `start_unix`.
pub fn json_line(h: &PlannedHint, start_unix: Duration) -> String {
    let t = start_unix + Duration::from_nanos(from_model(h.starts));
    format!(
        "{{\"t_ms\":{:.3},\"kind\":\"outage\",\"duration_ms\":{:.3},\"confidence\":1}}\n",
        t.as_secs_f64() * 1e3,
        h.duration.as_secs_f64() * 1e3
    )
}

/// What the exporter did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportCounters {
    /// Hints sent (each once, to however many readers).
    pub sent: u64,
    /// Of which false alarms.
    pub false_alarms: u64,
    /// Readers that connected.
    pub readers: u64,
}

/// The feed: a Unix socket at `path` and the thread that writes the plan's
/// hints to every reader at their times.
pub struct Exporter {
    /// The socket's path (`PEREGRINE_HINTS` is `unix:` + this).
    pub path: PathBuf,
    /// The plan.
    pub plan: HintPlan,
    /// The emulator's start (model time 0).
    pub start: Instant,
    /// The same instant as Unix time.
    pub start_unix: Duration,
    /// The stop signal (an eventfd).
    pub stop: Arc<OwnedFd>,
}

impl Exporter {
    /// Bind the socket (replacing a stale one at `path`). The listener is
    /// created before the command starts, so the command can connect at
    /// once.
    pub fn bind(path: &std::path::Path) -> std::io::Result<UnixListener> {
        let _ = std::fs::remove_file(path);
        let l = UnixListener::bind(path)?;
        l.set_nonblocking(true)?;
        Ok(l)
    }

    /// Run until stopped. Per hint O(readers).
    pub fn run(mut self, listener: UnixListener) -> std::io::Result<ExportCounters> {
        let mut c = ExportCounters::default();
        let mut readers: Vec<UnixStream> = Vec::new();
        // Sent hints whose outage has not begun: a late reader gets them.
        let mut recent: VecDeque<(Time, String)> = VecDeque::new();
        let mut next = self.plan.next_hint();
        loop {
            let now = Time::from_nanos(self.start.elapsed().as_nanos() as u64);
            while recent.front().is_some_and(|(s, _)| *s <= now) {
                recent.pop_front();
            }
            loop {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        c.readers += 1;
                        let _ = s.set_nonblocking(false);
                        let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
                        let ok = recent
                            .iter()
                            .all(|(_, l)| s.write_all(l.as_bytes()).is_ok());
                        if ok {
                            readers.push(s);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            while let Some(h) = next.as_ref().filter(|h| h.send_at <= now) {
                let line = json_line(h, self.start_unix);
                readers.retain_mut(|r| r.write_all(line.as_bytes()).is_ok());
                c.sent += 1;
                c.false_alarms += u64::from(h.false_alarm);
                recent.push_back((h.starts, line));
                next = self.plan.next_hint();
            }
            // Sleep until the next send, a new reader, or stop.
            let now = Time::from_nanos(self.start.elapsed().as_nanos() as u64);
            let wait_ns = next
                .as_ref()
                .map(|h| from_model(h.send_at).saturating_sub(from_model(now)));
            let mut fds = [
                libc::pollfd {
                    fd: listener.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.stop.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let ts = wait_ns.map(|ns| libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            });
            let ts_ptr = ts
                .as_ref()
                .map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: two valid pollfds, a valid or null timespec, no mask.
            let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, ts_ptr, std::ptr::null()) };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINTR) {
                    return Err(e);
                }
            }
            if fds[1].revents != 0 {
                break;
            }
        }
        let _ = std::fs::remove_file(&self.path);
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use peregrine_sim::scenario::config::OutageWindow;
    use peregrine_sim::scenario::units::Dur;
    use peregrine_sim::world::outage::OutageConfig;

    #[test]
    fn the_feed_line_is_what_the_runtime_reads() {
        // 300 ms every 5 s for 60 s (the plan's own tests are in the simulator).
        let c = OutageConfig {
            scheduled: (1..12)
                .map(|k| OutageWindow {
                    start: Dur(k * 5_000_000_000),
                    end: Dur(k * 5_000_000_000 + 300_000_000),
                })
                .collect(),
            ..OutageConfig::default()
        };
        let src = OutageSource {
            config: c,
            seed: 1,
            rng_name: "emu/uplink/outage".into(),
        };
        let opts = HintOptions {
            lead: Duration::from_millis(100),
            miss: 0.0,
            false_alarm_hz: 0.0,
        };
        let mut p = HintPlan::new(opts, &[src], 1, HINT_RNG);
        let first = p.next_hint().expect("eleven outages");
        let line = json_line(&first, Duration::from_secs(1_000));
        assert_eq!(
            line,
            "{\"t_ms\":1005000.000,\"kind\":\"outage\",\"duration_ms\":300.000,\"confidence\":1}\n"
        );
        let back = peregrine::hints::json::parse_line(line.trim()).expect("the runtime reads it");
        assert_eq!(back.duration, Some(Duration::from_millis(300)));
    }

    #[test]
    fn a_bad_flag_is_named() {
        let o = |miss, fa| HintOptions {
            lead: Duration::from_millis(1),
            miss,
            false_alarm_hz: fa,
        };
        assert!(validate(&o(1.5, 0.0)).unwrap_err().contains("--hint-miss"));
        assert!(validate(&o(0.0, -1.0))
            .unwrap_err()
            .contains("--hint-false-alarm"));
    }
}
