//! `peregrine emu --hint-lead D [--hint-miss P] [--hint-false-alarm R]`:
//! the link model's own knowledge of its outages, exported to the command
//! as link hints (issue 38 item 3).
//!
//! The emulated link's outages (scheduled windows and random on/off
//! periods, `--outage` or the scenario link's) are drawn by the
//! simulator's [`Outages`] from a seeded generator, so the emulator knows
//! them in advance: [`HintPlan`] rebuilds each direction's outages from
//! the same configuration and the same generator names as the forwarding
//! threads' models (the very same windows), merges the two directions'
//! windows (the command's traffic stops when either is down), and
//! announces each merged window `lead` before it begins:
//!
//! * each outage is **missed** (not announced) with probability `miss`;
//! * **false alarms** come as a Poisson process of `false_alarm_hz` per
//!   second: an announced outage, of the links' mean outage length, when
//!   nothing happens;
//! * draws come from `emu/hints` and `emu/hints/false_alarms` of the
//!   link's seed, so a run's hints depend only on its flags and seed.
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
use peregrine_sim::rng::{component_rng, SimRng};
use peregrine_sim::scenario::config::OutageConfig;
use peregrine_sim::world::outage::Outages;
use rand::RngExt;
use std::collections::VecDeque;
use std::io::Write as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The environment variable that tells the command where the feed is.
pub const HINTS_ENV: &str = "PEREGRINE_HINTS";
/// A false alarm's announced length when the link has no outages to take
/// a mean from (the simulator's blockage prior, `HintPriors::blockage`).
pub const DEFAULT_ALARM: Duration = Duration::from_millis(100);

/// The hint flags.
#[derive(Clone, Debug, PartialEq)]
pub struct HintOptions {
    /// How far ahead of each outage its hint is sent (`--hint-lead`).
    pub lead: Duration,
    /// Probability an outage is not announced (`--hint-miss`), in [0, 1].
    pub miss: f64,
    /// False alarms per second (`--hint-false-alarm`), ≥ 0.
    pub false_alarm_hz: f64,
}

impl HintOptions {
    /// Checks the values; the error names the flag.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.miss) {
            return Err(format!(
                "--hint-miss: {} is not a probability in [0, 1]",
                self.miss
            ));
        }
        if !(self.false_alarm_hz.is_finite() && (0.0..=1e3).contains(&self.false_alarm_hz)) {
            return Err(format!(
                "--hint-false-alarm: {} is not a rate in [0, 1000] per second",
                self.false_alarm_hz
            ));
        }
        Ok(())
    }
}

/// One direction's outages, as the forwarding thread's model draws them.
#[derive(Clone, Debug)]
pub struct OutageSource {
    /// The configuration.
    pub config: OutageConfig,
    /// The seed.
    pub seed: u64,
    /// The generator's component name (`emu/uplink/outage`, …).
    pub rng_name: String,
}

impl OutageSource {
    fn build(&self) -> Outages {
        Outages::new(&self.config, component_rng(self.seed, &self.rng_name))
    }

    /// The mean outage length this configuration asks for, if any.
    fn mean_length(&self) -> Option<Duration> {
        let c = &self.config;
        let windows: Vec<u64> = c
            .scheduled
            .iter()
            .map(|w| w.end.0.saturating_sub(w.start.0))
            .collect();
        let mut total = windows.iter().sum::<u64>() as f64;
        let mut n = windows.len() as f64;
        if let (Some(_), Some(d)) = (c.mean_up, c.mean_down) {
            total += d.0 as f64;
            n += 1.0;
        }
        (n > 0.0).then(|| Duration::from_nanos((total / n) as u64))
    }
}

/// A hint the emulator sends.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedHint {
    /// When it is sent (model time).
    pub send_at: Time,
    /// When the announced outage begins (model time).
    pub starts: Time,
    /// How long it is announced to last.
    pub duration: Duration,
    /// Nothing happens then (a false alarm).
    pub false_alarm: bool,
}

/// One direction's windows, in order (each window once; touching
/// windows come merged, as the model's `up_at` sees them).
struct Windows {
    outages: Outages,
    /// The end of the last window handed out (`None`: none yet). Time
    /// only moves forward here, as [`Outages`] requires.
    pos: Option<Time>,
    peeked: Option<(Time, Time)>,
}

impl Windows {
    fn next_window(&mut self) -> Option<(Time, Time)> {
        let start = match self.pos {
            None if self.outages.is_down(Time::ZERO) => Time::ZERO,
            None => self.outages.next_down_after(Time::ZERO)?,
            Some(p) => self.outages.next_down_after(p)?,
        };
        let end = self.outages.up_at(start);
        self.pos = Some(end);
        Some((start, end))
    }

    fn peek(&mut self) -> Option<(Time, Time)> {
        if self.peeked.is_none() {
            self.peeked = self.next_window();
        }
        self.peeked
    }
}

/// The hints of a link, in the order they are sent: pure and seeded (no
/// clock), so they can be checked without running anything.
pub struct HintPlan {
    opts: HintOptions,
    dirs: Vec<Windows>,
    miss_rng: SimRng,
    alarm_rng: SimRng,
    alarm_length: Duration,
    next_alarm: Option<Time>,
    next_outage: Option<PlannedHint>,
}

impl HintPlan {
    /// The plan for a link with these directions' outages, its draws from
    /// `seed`.
    pub fn new(opts: HintOptions, dirs: &[OutageSource], seed: u64) -> HintPlan {
        let lengths: Vec<Duration> = dirs.iter().filter_map(OutageSource::mean_length).collect();
        let alarm_length = if lengths.is_empty() {
            DEFAULT_ALARM
        } else {
            lengths.iter().sum::<Duration>() / lengths.len() as u32
        };
        let mut p = HintPlan {
            dirs: dirs
                .iter()
                .map(|d| Windows {
                    outages: d.build(),
                    pos: None,
                    peeked: None,
                })
                .collect(),
            miss_rng: component_rng(seed, "emu/hints"),
            alarm_rng: component_rng(seed, "emu/hints/false_alarms"),
            alarm_length,
            next_alarm: None,
            next_outage: None,
            opts,
        };
        p.next_alarm = p.draw_alarm(Time::ZERO);
        p.next_outage = p.draw_outage();
        p
    }

    fn draw_alarm(&mut self, after: Time) -> Option<Time> {
        if self.opts.false_alarm_hz <= 0.0 {
            return None;
        }
        let u: f64 = self.alarm_rng.random();
        let gap = -(1.0 - u).ln() / self.opts.false_alarm_hz;
        Some(after + Duration::from_secs_f64(gap.min(1e9)))
    }

    /// The next merged outage that is announced (not missed).
    /// O(windows merged).
    fn draw_outage(&mut self) -> Option<PlannedHint> {
        loop {
            let first = (0..self.dirs.len())
                .filter_map(|i| self.dirs[i].peek().map(|w| (w, i)))
                .min()?;
            let ((start, mut end), i) = first;
            self.dirs[i].peeked = None;
            // Merge every window (of either direction) that overlaps or
            // touches the merged one, until none does.
            loop {
                let mut grew = false;
                for d in &mut self.dirs {
                    while let Some((s, e)) = d.peek().filter(|(s, _)| *s <= end) {
                        debug_assert!(s >= start);
                        if e > end {
                            end = e;
                            grew = true;
                        }
                        d.peeked = None;
                    }
                }
                if !grew {
                    break;
                }
            }
            let u: f64 = self.miss_rng.random();
            if u < self.opts.miss {
                continue;
            }
            return Some(PlannedHint {
                send_at: start - self.opts.lead,
                starts: start,
                duration: end - start,
                false_alarm: false,
            });
        }
    }

    /// The next hint to send, in order of sending. O(1) amortized per
    /// outage.
    pub fn next_hint(&mut self) -> Option<PlannedHint> {
        let alarm_send = self.next_alarm.map(|a| a - self.opts.lead);
        let outage_send = self.next_outage.as_ref().map(|h| h.send_at);
        let take_alarm = match (alarm_send, outage_send) {
            (Some(a), Some(o)) => a < o,
            (Some(_), None) => true,
            _ => false,
        };
        if take_alarm {
            let at = self.next_alarm?;
            self.next_alarm = self.draw_alarm(at);
            return Some(PlannedHint {
                send_at: at - self.opts.lead,
                starts: at,
                duration: self.alarm_length,
                false_alarm: true,
            });
        }
        let h = self.next_outage.take()?;
        self.next_outage = self.draw_outage();
        Some(h)
    }
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

    fn every(period_ms: u64, down_ms: u64, until_ms: u64) -> OutageConfig {
        OutageConfig {
            scheduled: (1..)
                .map(|k| k * period_ms)
                .take_while(|s| *s < until_ms)
                .map(|s| OutageWindow {
                    start: Dur(s * 1_000_000),
                    end: Dur((s + down_ms) * 1_000_000),
                })
                .collect(),
            ..OutageConfig::default()
        }
    }

    fn src(config: OutageConfig, name: &str) -> OutageSource {
        OutageSource {
            config,
            seed: 1,
            rng_name: name.into(),
        }
    }

    fn opts(lead_ms: u64, miss: f64, fa: f64) -> HintOptions {
        HintOptions {
            lead: Duration::from_millis(lead_ms),
            miss,
            false_alarm_hz: fa,
        }
    }

    fn all(p: &mut HintPlan) -> Vec<PlannedHint> {
        std::iter::from_fn(|| p.next_hint()).collect()
    }

    #[test]
    fn each_scheduled_outage_is_announced_lead_ahead() {
        // 300 ms every 5 s for 60 s, the same on both directions.
        let c = every(5000, 300, 60_000);
        let mut p = HintPlan::new(opts(100, 0.0, 0.0), &[src(c.clone(), "u"), src(c, "d")], 1);
        let hints = all(&mut p);
        assert_eq!(hints.len(), 11, "{hints:?}");
        for (k, h) in hints.iter().enumerate() {
            let start = Time::from_millis(5000 * (k as u64 + 1));
            assert_eq!(h.starts, start);
            assert_eq!(h.send_at, start - Duration::from_millis(100));
            assert_eq!(h.duration, Duration::from_millis(300));
            assert!(!h.false_alarm);
        }
        let line = json_line(&hints[0], Duration::from_secs(1_000));
        assert_eq!(
            line,
            "{\"t_ms\":1005000.000,\"kind\":\"outage\",\"duration_ms\":300.000,\"confidence\":1}\n"
        );
        let back = peregrine::hints::json::parse_line(line.trim()).expect("the runtime reads it");
        assert_eq!(back.duration, Some(Duration::from_millis(300)));
    }

    #[test]
    fn overlapping_directions_merge_and_random_outages_match_the_model() {
        let up = OutageConfig {
            scheduled: vec![OutageWindow {
                start: Dur(1_000_000_000),
                end: Dur(1_200_000_000),
            }],
            ..OutageConfig::default()
        };
        let down = OutageConfig {
            scheduled: vec![OutageWindow {
                start: Dur(1_100_000_000),
                end: Dur(1_500_000_000),
            }],
            ..OutageConfig::default()
        };
        let hints = all(&mut HintPlan::new(
            opts(50, 0.0, 0.0),
            &[src(up, "u"), src(down, "d")],
            1,
        ));
        assert_eq!(hints.len(), 1);
        assert_eq!(hints[0].starts, Time::from_millis(1000));
        assert_eq!(hints[0].duration, Duration::from_millis(500));
        // Random outages: the plan's windows are the link model's own.
        let random = OutageConfig {
            mean_up: Some(Dur(2_000_000_000)),
            mean_down: Some(Dur(200_000_000)),
            ..OutageConfig::default()
        };
        let s = src(random, "emu/uplink/outage");
        let mut p = HintPlan::new(opts(100, 0.0, 0.0), std::slice::from_ref(&s), 1);
        let mut model = s.build();
        for _ in 0..20 {
            let h = p.next_hint().expect("random outages never end");
            assert!(model.is_down(h.starts), "{h:?}");
            assert_eq!(model.up_at(h.starts), h.starts + h.duration);
            if h.starts > Time::ZERO {
                assert!(!model.is_down(h.starts - Duration::from_nanos(1)));
            }
        }
    }

    #[test]
    fn misses_and_false_alarms_follow_their_rates() {
        let c = every(1000, 100, 2_000_001);
        let hints = all(&mut HintPlan::new(opts(100, 0.3, 0.0), &[src(c, "u")], 7));
        let frac = hints.len() as f64 / 2000.0;
        assert!((frac - 0.7).abs() < 0.04, "announced {frac}");
        // 2 false alarms per second over 1000 s, no outages.
        let mut p = HintPlan::new(opts(100, 0.0, 2.0), &[], 7);
        let alarms: Vec<_> = std::iter::from_fn(|| p.next_hint())
            .take_while(|h| h.starts < Time::from_millis(1_000_000))
            .collect();
        assert!(
            (alarms.len() as f64 - 2000.0).abs() < 180.0,
            "{}",
            alarms.len()
        );
        assert!(alarms
            .iter()
            .all(|h| h.false_alarm && h.duration == DEFAULT_ALARM));
        assert!(alarms.windows(2).all(|w| w[0].send_at <= w[1].send_at));
        // Both together stay in order of sending, and replay per seed.
        let mk = || {
            let mut p = HintPlan::new(
                opts(100, 0.1, 0.5),
                &[src(every(1000, 100, 30_000), "u")],
                3,
            );
            // False alarms never end: the first 40 s.
            std::iter::from_fn(|| p.next_hint())
                .take_while(|h| h.starts < Time::from_millis(40_000))
                .collect::<Vec<_>>()
        };
        let a = mk();
        assert!(a.windows(2).all(|w| w[0].send_at <= w[1].send_at));
        assert!(a.iter().any(|h| h.false_alarm) && a.iter().any(|h| !h.false_alarm));
        assert_eq!(a, mk());
        assert!(opts(1, 1.5, 0.0)
            .validate()
            .unwrap_err()
            .contains("--hint-miss"));
        assert!(opts(1, 0.0, -1.0)
            .validate()
            .unwrap_err()
            .contains("--hint-false-alarm"));
    }
}
