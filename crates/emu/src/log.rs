//! `--log FILE`: one line per packet event, per direction, like
//! `mm-link --uplink-log/--downlink-log` but both directions in one file.
//!
//! ```text
//! # peregrine emu log v1
//! # uplink: 12.000 Mbit/s, delay 20.000 ms, queue unbounded, loss none, outages none
//! # uplink rate_bps 12000000        (or: # uplink trace /abs/path, # uplink unlimited)
//! # uplink delay_ns 20000000
//! # start_monotonic_ns 81234567890   (time 0 of the lines below on CLOCK_MONOTONIC)
//! u 1234567 + 1500                   arrival at the link: direction, time (ns since start), bytes
//! u 1234567 - 1500 845000            departure from the link (before the propagation delay):
//!                                    time, bytes, time spent queued and in transmission (ns)
//! d 1234567 x 1500 queue             drop: time, bytes, reason (queue, channel, outage)
//! ```
//!
//! Each direction's thread formats into its own buffer and appends it to
//! the file (`O_APPEND`) 64 KiB at a time, so lines of the two directions
//! never interleave mid-line but are only ordered within a direction.

use crate::forward::Dir;
use peregrine_sim::world::link::DropReason;
use std::fs::File;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

const CHUNK_BYTES: usize = 64 * 1024;

/// One direction's writer into the shared log file.
pub struct LogSink {
    file: Arc<File>,
    buf: Vec<u8>,
}

impl LogSink {
    /// Create (truncate) `path` and write `header` lines (each prefixed
    /// with `# `); returns the shared file to make sinks from.
    pub fn create(path: &Path, header: &[String]) -> std::io::Result<Arc<File>> {
        let mut f = File::create(path)?;
        writeln!(f, "# peregrine emu log v1")?;
        for h in header {
            writeln!(f, "# {h}")?;
        }
        drop(f);
        Ok(Arc::new(File::options().append(true).open(path)?))
    }

    /// A sink appending to `file`.
    pub fn new(file: Arc<File>) -> LogSink {
        LogSink {
            file,
            buf: Vec::with_capacity(CHUNK_BYTES + 128),
        }
    }

    fn line(&mut self, args: std::fmt::Arguments<'_>) {
        // Writing into a Vec cannot fail.
        let _ = self.buf.write_fmt(args);
        if self.buf.len() >= CHUNK_BYTES {
            // A failed log write must not stop the link; the final
            // flush reports it.
            let _ = self.flush();
        }
    }

    /// A packet reached the link at `t_ns`. O(1).
    pub fn arrival(&mut self, dir: Dir, t_ns: u64, bytes: u32) {
        self.line(format_args!("{} {t_ns} + {bytes}\n", dir.tag() as char));
    }

    /// A packet left the link at `t_ns` after `delay_ns` in it. O(1).
    pub fn departure(&mut self, dir: Dir, t_ns: u64, bytes: u32, delay_ns: u64) {
        self.line(format_args!(
            "{} {t_ns} - {bytes} {delay_ns}\n",
            dir.tag() as char
        ));
    }

    /// A packet was dropped at `t_ns`. O(1).
    pub fn drop(&mut self, dir: Dir, t_ns: u64, bytes: u32, why: DropReason) {
        self.line(format_args!(
            "{} {t_ns} x {bytes} {}\n",
            dir.tag() as char,
            why.name()
        ));
    }

    /// Append what is buffered. O(buffered bytes).
    pub fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            (&*self.file).write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// One event read back from a log.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Arrival at the link.
    Arrival {
        /// Time, ns.
        t_ns: u64,
        /// Bytes.
        bytes: u32,
    },
    /// Departure from the link.
    Departure {
        /// Time, ns.
        t_ns: u64,
        /// Bytes.
        bytes: u32,
        /// Time in the link (queue + transmission), ns.
        delay_ns: u64,
    },
    /// Drop.
    Drop {
        /// Time, ns.
        t_ns: u64,
        /// Bytes.
        bytes: u32,
    },
}

/// What a log says about one direction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirLog {
    /// Fixed rate, if any.
    pub rate_bps: Option<u64>,
    /// Trace file, if any.
    pub trace: Option<String>,
    /// Events in time order.
    pub events: Vec<Event>,
}

/// A parsed log: `[uplink, downlink]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Log {
    /// Uplink, downlink.
    pub dirs: [DirLog; 2],
}

/// Parse a log's text. Errors name the line. O(lines log lines).
pub fn parse(text: &str) -> Result<Log, String> {
    let mut log = Log::default();
    for (i, line) in text.lines().enumerate() {
        let bad = || format!("line {}: {line:?} is not a log line", i + 1);
        if let Some(h) = line.strip_prefix("# ") {
            let mut w = h.split_whitespace();
            let d = match w.next() {
                Some("uplink") => 0,
                Some("downlink") => 1,
                _ => continue,
            };
            match (w.next(), w.next()) {
                (Some("rate_bps"), Some(r)) => log.dirs[d].rate_bps = r.parse().ok(),
                (Some("trace"), Some(_)) => {
                    // The path is the rest of the line (it may hold spaces).
                    let rest = h
                        .split_once(" trace ")
                        .map(|(_, p)| p.to_string())
                        .unwrap_or_default();
                    log.dirs[d].trace = Some(rest);
                }
                _ => {}
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            return Err(bad());
        }
        let d = match f[0] {
            "u" => 0,
            "d" => 1,
            _ => return Err(bad()),
        };
        let t_ns: u64 = f[1].parse().map_err(|_| bad())?;
        let bytes: u32 = f[3].parse().map_err(|_| bad())?;
        let e = match f[2] {
            "+" => Event::Arrival { t_ns, bytes },
            "-" => Event::Departure {
                t_ns,
                bytes,
                delay_ns: f.get(4).and_then(|s| s.parse().ok()).ok_or_else(bad)?,
            },
            "x" => Event::Drop { t_ns, bytes },
            _ => return Err(bad()),
        };
        log.dirs[d].events.push(e);
    }
    for d in &mut log.dirs {
        d.events.sort_by_key(|e| match e {
            Event::Arrival { t_ns, .. }
            | Event::Departure { t_ns, .. }
            | Event::Drop { t_ns, .. } => *t_ns,
        });
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_lines_parse_back() {
        let dir = std::env::temp_dir().join(format!("pg-emu-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("l.log");
        let f = LogSink::create(
            &path,
            &[
                "uplink rate_bps 12000000".into(),
                "downlink trace /x y/t.mm".into(),
            ],
        )
        .expect("create");
        let mut s = LogSink::new(f);
        s.arrival(Dir::Uplink, 10, 1500);
        s.departure(Dir::Uplink, 20, 1500, 10);
        s.drop(Dir::Downlink, 5, 100, DropReason::QueueFull);
        s.flush().expect("flush");
        let log = parse(&std::fs::read_to_string(&path).expect("read")).expect("parses");
        assert_eq!(log.dirs[0].rate_bps, Some(12_000_000));
        assert_eq!(log.dirs[1].trace.as_deref(), Some("/x y/t.mm"));
        assert_eq!(
            log.dirs[0].events,
            vec![
                Event::Arrival {
                    t_ns: 10,
                    bytes: 1500
                },
                Event::Departure {
                    t_ns: 20,
                    bytes: 1500,
                    delay_ns: 10
                }
            ]
        );
        assert_eq!(
            log.dirs[1].events,
            vec![Event::Drop {
                t_ns: 5,
                bytes: 100
            }]
        );
        assert!(parse("u x + 1").unwrap_err().contains("line 1"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
