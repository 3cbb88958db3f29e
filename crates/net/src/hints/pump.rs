//! The hint pump: one thread per source, from the source's reads to the
//! controllers of the connections the hints concern.
//!
//! The thread ("peregrine-hints") loops: wait for the source at most until
//! the earliest held hint is due (and at most [`POLL`], to notice that the
//! endpoint or connection is gone), then hand every due hint to its
//! connections under the endpoint's lock — the core's `link_hint`, as
//! `Connection::link_hint` does — and wake the driver so a controller that
//! now holds (or releases) its window is acted on at once. It holds the
//! endpoint's lock only for the hand-over (O(connections · log
//! connections)), never across a read.

use super::{unix_now, Hint, HintSource, HintStats, SourcePoll, MIN_CONFIDENCE};
use crate::driver::Shared;
use peregrine_proto::{ConnectionHandle, ConnectionState};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::time::Instant;

/// Longest wait on the source between two looks at the target.
pub const POLL: Duration = Duration::from_millis(100);
/// A held hint due sooner than this is waited for by sleeping, not by a
/// timed read of the source.
const PRECISE_BELOW: Duration = Duration::from_millis(10);

/// Whom a pump's hints go to.
pub(crate) enum Target {
    /// Every connection of the endpoint (present and future).
    Endpoint(Weak<Shared>),
    /// One connection.
    Connection(Weak<Shared>, ConnectionHandle),
}

impl Target {
    fn shared(&self) -> Option<Arc<Shared>> {
        match self {
            Target::Endpoint(w) | Target::Connection(w, _) => w.upgrade(),
        }
    }
}

/// A running pump: its counters, and a way to stop it. The pump also
/// stops by itself once its endpoint's driver is gone (or, for
/// [`Connection::hints`](crate::Connection::hints), its connection is),
/// and when its source ends or fails (after delivering what it holds).
/// Dropping the feed does not stop the pump.
#[derive(Clone, Debug)]
pub struct HintFeed {
    stats: Arc<Mutex<HintStats>>,
    stop: Arc<AtomicBool>,
    running: Arc<AtomicBool>,
}

impl HintFeed {
    /// The counters so far. O(1).
    pub fn stats(&self) -> HintStats {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stop the pump (within [`POLL`]); held hints are dropped.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Whether the pump thread is still running.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }
}

/// A hint waiting for its start.
struct Held {
    due: Instant,
    /// The announced start, Unix time (the receipt time if it had none).
    start_unix: Duration,
    hint: Hint,
}

/// Start a pump reading `source` for `target`.
pub(crate) fn start(mut source: Box<dyn HintSource>, target: Target) -> std::io::Result<HintFeed> {
    let feed = HintFeed {
        stats: Arc::new(Mutex::new(HintStats {
            source: source.describe(),
            ..HintStats::default()
        })),
        stop: Arc::new(AtomicBool::new(false)),
        running: Arc::new(AtomicBool::new(true)),
    };
    let f = feed.clone();
    std::thread::Builder::new()
        .name("peregrine-hints".into())
        .spawn(move || {
            run(&mut *source, &target, &f);
            f.running.store(false, Ordering::SeqCst);
        })?;
    Ok(feed)
}

fn run(source: &mut dyn HintSource, target: &Target, feed: &HintFeed) {
    let mut held: Vec<Held> = Vec::new();
    let mut source_done = false;
    let stats = |f: &dyn Fn(&mut HintStats)| {
        f(&mut feed.stats.lock().unwrap_or_else(|p| p.into_inner()));
    };
    loop {
        if feed.stop.load(Ordering::SeqCst) {
            return;
        }
        match target.shared() {
            None => return,
            Some(shared) => {
                if let Target::Connection(_, h) = target {
                    if !live(shared.lock().proto.state(*h)) {
                        return;
                    }
                }
            }
        }
        let now = Instant::now();
        let wait = held
            .first()
            .map_or(POLL, |h| h.due.saturating_duration_since(now))
            .min(POLL);
        if source_done && held.is_empty() {
            return;
        }
        if source_done || (!held.is_empty() && wait < PRECISE_BELOW) {
            // A socket's read timeout counts in scheduler ticks (4 ms at
            // HZ=250): a hint due sooner is waited for by `nanosleep`
            // (a high-resolution timer), the source read again after.
            std::thread::sleep(wait);
        } else {
            let polled = source.next(wait);
            let bad = source.take_malformed();
            if !bad.is_empty() {
                for b in &bad {
                    tracing::warn!(source = %source.describe(), "hint rejected: {b}");
                }
                stats(&|s| {
                    s.malformed += bad.len() as u64;
                    s.last_malformed = bad.last().cloned();
                });
            }
            match polled {
                Ok(SourcePoll::Hint(hint)) => {
                    stats(&|s| s.received += 1);
                    if hint.kind.core_kind().is_none() || hint.confidence < MIN_CONFIDENCE {
                        stats(&|s| s.ignored += 1);
                    } else {
                        let now_unix = unix_now();
                        let start_unix = hint.starts_at_unix.unwrap_or(now_unix);
                        let due = Instant::now() + start_unix.saturating_sub(now_unix);
                        // Sorted by due time (few held at once: O(held)).
                        let at = held.partition_point(|h| h.due <= due);
                        held.insert(
                            at,
                            Held {
                                due,
                                start_unix,
                                hint,
                            },
                        );
                    }
                }
                Ok(SourcePoll::Idle) => {}
                Ok(SourcePoll::Ended) => {
                    source_done = true;
                    stats(&|s| s.ended = true);
                }
                Err(e) => {
                    tracing::warn!("{e}");
                    source_done = true;
                    let msg = e.to_string();
                    stats(&|s| s.error = Some(msg.clone()));
                }
            }
        }
        let now = Instant::now();
        let due = held.partition_point(|h| h.due <= now);
        if due == 0 {
            continue;
        }
        let Some(shared) = target.shared() else {
            return;
        };
        for h in held.drain(..due) {
            deliver(&shared, target, &h, feed);
        }
    }
}

/// Whether a connection in `state` can still take a hint.
fn live(state: Option<ConnectionState>) -> bool {
    state.is_some_and(|s| s != ConnectionState::Closed)
}

/// Hand one hint to its connections. O(connections · log connections).
fn deliver(shared: &Shared, target: &Target, h: &Held, feed: &HintFeed) {
    let late = unix_now().saturating_sub(h.start_unix);
    let delivered = {
        let mut st = shared.lock();
        let now = shared.now();
        // The event's start on the endpoint's clock.
        let issued_at = now - late;
        let Some(hint) = h.hint.to_link_hint(issued_at) else {
            return;
        };
        let handles = match target {
            Target::Endpoint(_) => st.proto.handles(),
            Target::Connection(_, c) => vec![*c],
        };
        let mut n = 0u64;
        for c in handles {
            if live(st.proto.state(c)) {
                st.proto.link_hint(c, now, &hint);
                n += 1;
            }
        }
        n
    };
    shared.wake();
    let late_ns = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
    let mut s = feed.stats.lock().unwrap_or_else(|p| p.into_inner());
    if delivered == 0 {
        s.ignored += 1;
    } else {
        s.applied += 1;
        s.deliveries += delivered;
        s.late_ns_sum = s.late_ns_sum.saturating_add(late_ns);
        s.late_ns_max = s.late_ns_max.max(late_ns);
    }
}
