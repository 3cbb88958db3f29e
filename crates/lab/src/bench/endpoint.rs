//! # `peregrine bench endpoint`: one server endpoint, N connections
//!
//! A sans-IO scale benchmark (issue 20): no sockets and no clock inside
//! the protocol — one server [`Endpoint`] and as many client endpoints as
//! needed (one per [`CONNECTIONS_PER_CLIENT`] connections, each with its
//! own address) exchange datagrams over an in-memory wire with a fixed
//! one-way delay, in virtual time. Each run:
//!
//! 1. opens N connections, one every [`OPEN_GAP`] of virtual time (the
//!    half-open count stays far below the admission limits, so no START
//!    is answered with a retry);
//! 2. once connected, each client sends one 1 KiB message and the server
//!    answers each with one 1 KiB message;
//! 3. when every answer has arrived, all connections stay idle, sending
//!    keep-alives, for [`IDLE`] (60 simulated seconds).
//!
//! Each count is run several times — at least [`MIN_REPETITIONS`], and
//! until [`MIN_CONNECTIONS_PER_COUNT`] connections have been opened in
//! all — and the median wall time is reported: a 1,000-connection run
//! lasts a tenth of a second, short enough for one scheduler hiccup on a
//! shared machine to swing it by 2×, which would make the growth figure
//! below meaningless.
//!
//! Reported per N: the wall-clock seconds of the whole run (the median), microseconds
//! per connection (wall time / N: the figure whose growth from 1,000 to
//! 50,000 connections shows whether the endpoint's work per connection
//! stays constant), and KiB per connection held by the server endpoint
//! at the end of the idle phase: the heap bytes freed when the server is
//! dropped, divided by N (read from [`super::alloc`]; `None` when the
//! binary does not install the counting allocator).
//!
//! Default connection settings (no packet protection: the Noise
//! handshake's fixed cost per connection would hide the endpoint's own
//! scaling). The simulated work is deterministic; only the wall time
//! varies.

use super::alloc;
use peregrine_proto::vtime::{self, EndpointTimer, EventQueue, Firing, Host, RunLimits};
use peregrine_proto::{
    ConnectionConfig, ConnectionHandle, Endpoint, EndpointConfig, Event, SansIo, Time,
};
use serde::Serialize;
use std::net::SocketAddr;
use std::time::Duration;

/// Connection counts run when none are given.
pub const DEFAULT_CONNECTIONS: [usize; 3] = [1_000, 10_000, 50_000];
/// Connections per client endpoint.
pub const CONNECTIONS_PER_CLIENT: usize = 1_000;
/// Virtual time between two connections' STARTs (20,000 per second).
pub const OPEN_GAP: Duration = Duration::from_micros(50);
/// One-way delay of the in-memory wire.
pub const ONE_WAY_DELAY: Duration = Duration::from_millis(10);
/// Idle time after the last answer, with keep-alives.
pub const IDLE: Duration = Duration::from_secs(60);
/// Fewest runs of each count (the median of them is reported).
pub const MIN_REPETITIONS: usize = 3;
/// Runs of a count repeat until this many connections were opened in all
/// (the default of [`Options::min_connections_per_count`]).
pub const MIN_CONNECTIONS_PER_COUNT: usize = 50_000;
/// Bytes of each message (one each way per connection).
pub const MESSAGE_BYTES: usize = 1024;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Connection counts, in this order.
    pub connections: Vec<usize>,
    /// Each count repeats until this many connections were opened in all
    /// (and at least [`MIN_REPETITIONS`] times).
    pub min_connections_per_count: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            connections: DEFAULT_CONNECTIONS.to_vec(),
            min_connections_per_count: MIN_CONNECTIONS_PER_COUNT,
        }
    }
}

/// One run's figures (the JSON contract of `--json`: these keys).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Run {
    /// Connections opened on the server endpoint.
    pub connections: usize,
    /// Wall-clock seconds of the whole run (open, exchange, idle): the
    /// median of `repetitions` runs.
    pub seconds: f64,
    /// `seconds` × 10⁶ / `connections`.
    pub us_per_connection: f64,
    /// Server heap per connection at the end of the idle phase, KiB
    /// (`null` when the allocator is not counting).
    pub kib_per_connection: Option<f64>,
    /// How many runs of this count the median is taken over.
    pub repetitions: usize,
}

/// Every run (`{"runs": [...]}` in JSON).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Outcome {
    /// In the order of [`Options::connections`].
    pub runs: Vec<Run>,
}

impl Outcome {
    /// The text table `peregrine bench endpoint` prints.
    pub fn table(&self) -> String {
        let mut s = String::from(
            "| connections | seconds | µs/connection | KiB/connection |\n|---:|---:|---:|---:|\n",
        );
        for r in &self.runs {
            let kib = r
                .kib_per_connection
                .map_or_else(|| "n/a".to_string(), |k| format!("{k:.1}"));
            s.push_str(&format!(
                "| {} | {:.3} | {:.1} | {} |\n",
                r.connections, r.seconds, r.us_per_connection, kib
            ));
        }
        s.push('\n');
        s.push_str(&crate::report::legend(&[
            (
                "connections",
                "connections opened on the one server endpoint",
            ),
            (
                "seconds",
                "wall-clock time of the whole run (open, 1 KiB each way, 60 s of \
                 keep-alives in virtual time), median over the repetitions",
            ),
            ("µs/connection", "seconds × 10⁶ ÷ connections"),
            (
                "KiB/connection",
                "server heap per connection after the idle phase (n/a: allocator not counting)",
            ),
        ]));
        if let (Some(first), Some(last)) = (self.runs.first(), self.runs.last()) {
            if self.runs.len() > 1 && first.us_per_connection > 0.0 {
                s.push_str(&format!(
                    "\nµs per connection at {} is {:.2}× that at {} (1.0 = constant work per connection)\n",
                    last.connections,
                    last.us_per_connection / first.us_per_connection,
                    first.connections
                ));
            }
        }
        s
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A connection count of zero.
    #[error("connections: {0} is not a positive count")]
    BadCount(usize),
    /// More connections than one endpoint can hold.
    #[error("connections: {0} is above the endpoint limit of {1}")]
    TooMany(usize, usize),
    /// Something went wrong inside a run (a bug, or a limit hit).
    #[error("endpoint bench with {connections} connections: {problem}")]
    Run {
        /// The run's count.
        connections: usize,
        /// What happened.
        problem: String,
    },
}

/// Run every count of `options`, in order.
pub fn run(options: &Options) -> Result<Outcome, BenchError> {
    let limit = EndpointConfig::default().max_connections;
    for &n in &options.connections {
        if n == 0 {
            return Err(BenchError::BadCount(n));
        }
        if n > limit {
            return Err(BenchError::TooMany(n, limit));
        }
    }
    let counting = alloc::enable();
    let runs = options
        .connections
        .iter()
        .map(|&n| run_count(n, options.min_connections_per_count, counting))
        .collect::<Result<_, _>>()?;
    Ok(Outcome { runs })
}

/// Run count `n` [`repetitions_for`] times; the median wall time.
fn run_count(n: usize, min_total: usize, counting: bool) -> Result<Run, BenchError> {
    let reps = repetitions_for(n, min_total);
    let mut seconds = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let r = run_one(n, counting)?;
        seconds.push(r.seconds);
        last = Some(r);
    }
    seconds.sort_by(f64::total_cmp);
    let median = seconds[seconds.len() / 2];
    let last = last.expect("at least one repetition");
    Ok(Run {
        seconds: median,
        us_per_connection: median * 1e6 / n as f64,
        repetitions: reps,
        ..last
    })
}

/// How many times count `n` runs: at least [`MIN_REPETITIONS`], and
/// enough to open `min_total` connections in all. O(1).
pub fn repetitions_for(n: usize, min_total: usize) -> usize {
    min_total.div_ceil(n.max(1)).max(MIN_REPETITIONS)
}

fn server_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1], 4433))
}

/// Client endpoint `i`'s address (index 1 + i among the endpoints).
fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 1 + (i >> 16) as u8, (i >> 8) as u8, i as u8], 5000))
}

/// The endpoint index of an address (0: the server).
fn index_of(a: SocketAddr) -> Option<usize> {
    if a == server_addr() {
        return Some(0);
    }
    match a {
        SocketAddr::V4(v) => {
            let o = v.ip().octets();
            Some((usize::from(o[1] - 1) << 16 | usize::from(o[2]) << 8 | usize::from(o[3])) + 1)
        }
        SocketAddr::V6(_) => None,
    }
}

/// What happens, in the project's one [`EventQueue`].
enum Ev {
    /// Connection number `k` opens (all are queued before the run, so at
    /// an instant they come before anything scheduled later).
    Open(usize),
    /// A datagram reaches endpoint `dest` from `from` (one delay for all:
    /// arrivals are in sending order).
    Arrive {
        dest: usize,
        from: SocketAddr,
        bytes: Vec<u8>,
    },
    /// Endpoint `i`'s timer.
    Timer(usize),
}

struct World {
    endpoints: Vec<Endpoint>,
    /// Each endpoint's timer, with at most one live event in the queue
    /// (superseded ones are skipped when they pop).
    timers: Vec<EndpointTimer>,
    queue: EventQueue<Ev>,
    /// Datagram buffers to reuse (the bench allocates none per datagram
    /// once warm, so its own cost does not grow with the count).
    spare: Vec<Vec<u8>>,
    buf: Vec<u8>,
    answered: usize,
    closed: usize,
    /// The answers that end the exchange phase (`None`: the idle phase,
    /// which runs to its end).
    goal_answers: Option<usize>,
}

/// The benchmark is a world of the one host loop ([`vtime::run`]).
impl Host for World {
    type Event = Ev;
    type Error = String;

    fn queue(&mut self) -> &mut EventQueue<Ev> {
        &mut self.queue
    }

    fn livelock(&self, at: Time, limit: u64) -> String {
        format!("over {limit} events at {} ns", at.as_nanos())
    }

    fn handle(&mut self, now: Time, ev: Ev) -> Result<(), String> {
        match ev {
            Ev::Open(k) => {
                let c = 1 + k / CONNECTIONS_PER_CLIENT;
                self.endpoints[c]
                    .connect(now, server_addr(), ConnectionConfig::default())
                    .map_err(|e| format!("connect: {e}"))?;
                self.service(c, now)?;
            }
            Ev::Arrive {
                dest,
                from,
                mut bytes,
            } => {
                self.endpoints[dest].handle_datagram(now, from, None, &mut bytes);
                self.spare.push(bytes);
                self.service(dest, now)?;
            }
            Ev::Timer(i) => match self.timers[i].fire(now) {
                Firing::Due => {
                    self.endpoints[i].handle_timeout(now);
                    self.service(i, now)?;
                }
                Firing::Later(t) => self.queue.push(t, Ev::Timer(i)),
                Firing::Stale => {}
            },
        }
        if self.closed > 0 {
            return Err(format!("{} connections closed", self.closed));
        }
        Ok(())
    }

    /// Every answer arrived: the idle phase starts.
    fn done(&self) -> bool {
        self.goal_answers == Some(self.answered)
    }
}

impl World {
    /// Send what endpoint `i` has to send, handle its events (answering
    /// messages), re-arm its timer.
    fn service(&mut self, i: usize, now: Time) -> Result<(), String> {
        let from = if i == 0 {
            server_addr()
        } else {
            client_addr(i - 1)
        };
        loop {
            let ep = &mut self.endpoints[i];
            while let Some(t) = ep.poll_transmit(now, &mut self.buf) {
                let dest = index_of(t.destination).ok_or("a datagram to an unknown address")?;
                let mut bytes = self.spare.pop().unwrap_or_default();
                bytes.clear();
                bytes.extend_from_slice(&self.buf[..t.size]);
                self.queue
                    .push(now + ONE_WAY_DELAY, Ev::Arrive { dest, from, bytes });
            }
            let mut acted = false;
            while let Some((h, ev)) = ep.poll_event() {
                match ev {
                    Event::Connected if i != 0 => {
                        send(ep, h, now, vec![0x5a; MESSAGE_BYTES])?;
                        acted = true;
                    }
                    Event::MessageReceived { bytes, .. } => {
                        if i == 0 {
                            send(ep, h, now, bytes)?;
                            acted = true;
                        } else {
                            self.answered += 1;
                        }
                    }
                    Event::Closed { .. } => self.closed += 1,
                    _ => {}
                }
            }
            if !acted {
                break;
            }
        }
        let want = self.endpoints[i].poll_timeout();
        if let Some(t) = self.timers[i].arm(want, now) {
            self.queue.push(t, Ev::Timer(i));
        }
        Ok(())
    }
}

fn send(ep: &mut Endpoint, h: ConnectionHandle, now: Time, bytes: Vec<u8>) -> Result<(), String> {
    ep.send_message(h, now, 0, bytes)
        .map(drop)
        .map_err(|e| format!("send_message: {e}"))
}

/// One run with `n` connections.
fn run_one(n: usize, counting: bool) -> Result<Run, BenchError> {
    let fail = |problem: String| BenchError::Run {
        connections: n,
        problem,
    };
    let clients = n.div_ceil(CONNECTIONS_PER_CLIENT);
    // Benchmarks measure the machine's wall clock on purpose; the
    // simulation itself runs in virtual time.
    #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
    let t0 = std::time::Instant::now();
    let mut endpoints = Vec::with_capacity(clients + 1);
    endpoints.push(Endpoint::new(
        EndpointConfig::server(ConnectionConfig::default()),
        1,
    ));
    for i in 0..clients {
        endpoints.push(Endpoint::new(EndpointConfig::default(), 2 + i as u64));
    }
    let mut queue = EventQueue::new();
    for k in 0..n {
        queue.push(Time::ZERO + OPEN_GAP * k as u32, Ev::Open(k));
    }
    let mut w = World {
        timers: vec![EndpointTimer::new(); endpoints.len()],
        endpoints,
        queue,
        spare: Vec::new(),
        buf: Vec::with_capacity(2048),
        answered: 0,
        closed: 0,
        goal_answers: Some(n),
    };
    // Far beyond what a healthy run needs: a stuck run ends with an error.
    let give_up = Time::ZERO + OPEN_GAP * n as u32 + IDLE + Duration::from_secs(120);
    // No livelock limit: a healthy run never nears one, a stuck one hits
    // `give_up` or runs dry.
    let exchange = RunLimits::until(give_up, u64::MAX);
    let answered_at = vtime::run(&mut w, exchange, &mut |_, _| {}).map_err(&fail)?;
    if !w.done() {
        return Err(fail(match w.queue.peek_time() {
            None => "nothing left to do before the end".into(),
            Some(t) => format!(
                "{} of {n} answers after {:?} of virtual time",
                w.answered,
                t.as_nanos() as f64 / 1e9
            ),
        }));
    }
    // The idle phase: everything before `answered_at + IDLE`.
    let idle_until = answered_at.unwrap_or(Time::ZERO) + IDLE;
    let idle = RunLimits::until(Time::from_nanos(idle_until.as_nanos() - 1), u64::MAX);
    w.goal_answers = None;
    vtime::run(&mut w, idle, &mut |_, _| {}).map_err(&fail)?;
    let seconds = t0.elapsed().as_secs_f64();
    let held = w.endpoints[0].connection_count();
    if held != n {
        return Err(fail(format!("the server holds {held} connections")));
    }
    let kib_per_connection = counting.then(|| {
        let before = alloc::live_bytes();
        let server = w.endpoints.swap_remove(0);
        drop(server);
        (before - alloc::live_bytes()) as f64 / n as f64 / 1024.0
    });
    Ok(Run {
        connections: n,
        seconds,
        us_per_connection: seconds * 1e6 / n as f64,
        kib_per_connection,
        repetitions: 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_run_completes_and_reports_its_figures() {
        let out = run(&Options {
            connections: vec![50],
            min_connections_per_count: 0,
        })
        .expect("a healthy run");
        assert_eq!(out.runs.len(), 1);
        let r = &out.runs[0];
        assert_eq!(r.connections, 50);
        assert_eq!(r.repetitions, MIN_REPETITIONS);
        assert!(r.seconds > 0.0 && r.us_per_connection > 0.0);
        // The test binary does not install the counting allocator.
        assert_eq!(r.kib_per_connection, None);
        let json = serde_json::to_value(&out).unwrap();
        let keys: Vec<&str> = json["runs"][0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "connections",
                "seconds",
                "us_per_connection",
                "kib_per_connection",
                "repetitions"
            ]
        );
        assert!(out.table().contains("| 50 |"));
    }

    #[test]
    fn small_counts_repeat_until_enough_connections() {
        assert_eq!(repetitions_for(1_000, MIN_CONNECTIONS_PER_COUNT), 50);
        assert_eq!(repetitions_for(10_000, MIN_CONNECTIONS_PER_COUNT), 5);
        assert_eq!(repetitions_for(50_000, MIN_CONNECTIONS_PER_COUNT), 3);
        assert_eq!(repetitions_for(7, 0), MIN_REPETITIONS);
    }

    #[test]
    fn counts_are_checked_before_running() {
        assert!(matches!(
            run(&Options {
                connections: vec![0],
                ..Options::default()
            }),
            Err(BenchError::BadCount(0))
        ));
        assert!(matches!(
            run(&Options {
                connections: vec![70_000],
                ..Options::default()
            }),
            Err(BenchError::TooMany(70_000, 65_535))
        ));
    }

    #[test]
    fn addresses_map_back_to_their_endpoint() {
        assert_eq!(index_of(server_addr()), Some(0));
        for i in [0, 1, 255, 256, 49_999] {
            assert_eq!(index_of(client_addr(i)), Some(i + 1));
        }
    }
}
