//! The real-time driver: one thread per direction reads IP packets from
//! one TUN device, runs them through the simulator's link model on the
//! wall clock, and writes each delivered packet to the other TUN device
//! at its arrival time.
//!
//! The driver is the one the `LinkModel` trait's documentation sketches:
//! `enqueue` at the wall-clock time since the emulator started, `advance`
//! whenever something may be due, hold each delivered packet until its
//! arrival time. The model computes every departure and arrival time in
//! its own (virtual) time, so a late wake-up delays a packet's *write* by
//! the lateness only, never the link's schedule: errors do not add up.
//!
//! Sleeping uses `ppoll(2)` with a nanosecond timeout (an hrtimer, with
//! the thread's timer slack set to 1 ns) on the source device and a stop
//! `eventfd`, in the real-time scheduling class where permitted. A wake-up
//! from a sleep still comes tens of µs late on a virtual machine (75 µs on
//! average on this project's 2-core VM, idle): more than the 23 µs one
//! 1,452-byte packet takes at 500 Mbit/s, so back-to-back packets left the
//! emulator in bunches and a packet pair read nonsense (issue 35). The
//! driver therefore sleeps until a margin *before* each deadline and
//! polls without sleeping for the rest ([`WakeTimer`]): the margin follows
//! the measured lateness of its own wake-ups, and the polling is capped at
//! half of the wall time in every 50 ms window, so a saturated fast link
//! does not take a core (it then writes in small bunches, as before).
//! `peregrine emu -v` prints the lateness and the share of time spent
//! polling. Packet buffers are recycled through a pool: after warm-up the
//! forwarding path allocates nothing per packet.

use crate::clock::{from_model, to_model};
use crate::log::LogSink;
use peregrine_cc::Time;
use peregrine_proto::io::EcnCodepoint;
use peregrine_sim::world::link::{DropReason, LinkModel, LinkOutput};
use peregrine_sim::world::packet::Packet;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

/// The `SCHED_FIFO` priority of the forwarding threads (low: above every
/// ordinary process, below the kernel's own real-time threads). The
/// threads sleep between packets, and the kernel's real-time throttling
/// keeps 5 % of each CPU for others even if one misbehaved.
pub const RT_PRIORITY: libc::c_int = 10;
/// The largest packet read from a TUN device (its MTU is 1500).
const BUF_BYTES: usize = 2048;
/// Packets read in one go before the link is served again.
const READ_BATCH: usize = 64;

/// Which way a direction carries packets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dir {
    /// From the command to the outer side.
    Uplink,
    /// From the outer side to the command.
    Downlink,
}

impl Dir {
    /// `uplink` / `downlink`.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Uplink => "uplink",
            Dir::Downlink => "downlink",
        }
    }
    /// The one-letter tag of log lines, `u` / `d`.
    pub fn tag(self) -> u8 {
        match self {
            Dir::Uplink => b'u',
            Dir::Downlink => b'd',
        }
    }
}

/// What one direction did, for the caller's summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirCounters {
    /// Packets read from the source device.
    pub read_packets: u64,
    /// Packets written to the destination device.
    pub written_packets: u64,
    /// Bytes written.
    pub written_bytes: u64,
    /// Packets the link model dropped (queue, loss, outage).
    pub model_drops: u64,
    /// Packets the destination device refused.
    pub write_errors: u64,
    /// Sum over written packets of how late each was written after its
    /// arrival time in the model, ns (the emulator's own timing error).
    pub late_ns_sum: u64,
    /// The latest write, ns after the model's arrival time.
    pub late_ns_max: u64,
    /// Packets written more than 1 ms late.
    pub late_over_1ms: u64,
    /// Wall time spent polling without sleeping before deadlines, ns
    /// ([`WakeTimer`]).
    pub busy_poll_ns: u64,
    /// Wall time the direction ran, ns (the base of `busy_poll_ns`).
    pub run_ns: u64,
    /// Whether the thread ran in the real-time scheduling class.
    pub realtime: bool,
    /// The link model's own counters at the end.
    pub model: peregrine_sim::world::link::LinkStats,
}

/// One direction: a link model between two devices.
pub struct Forwarder {
    /// Its direction.
    pub dir: Dir,
    /// The simulator's link model.
    pub model: Box<dyn LinkModel + Send>,
    /// The model's propagation delay, ns (to log departure times).
    pub delay_ns: u64,
    /// The device packets are read from.
    pub src: Arc<OwnedFd>,
    /// The device delivered packets are written to.
    pub dst: Arc<OwnedFd>,
    /// The stop signal (an eventfd).
    pub stop: Arc<OwnedFd>,
    /// Per-packet log, if asked for.
    pub log: Option<LogSink>,
    /// The emulator's start (time 0 of the model).
    pub start: Instant,
}

fn now_ns(start: Instant) -> u64 {
    start.elapsed().as_nanos() as u64
}

/// Ask for precise wake-ups: 1 ns timer slack, and the real-time
/// `SCHED_FIFO` class (priority [`RT_PRIORITY`]) where permitted (root),
/// so a packet's release is not queued behind other processes' time
/// slices on a busy machine. Returns whether the thread is real-time.
fn set_precise_wakeups() -> bool {
    // SAFETY: PR_SET_TIMERSLACK and sched_setscheduler(0, …) only change
    // the calling thread's scheduling; `param` is a valid sched_param.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        let param = libc::sched_param {
            sched_priority: RT_PRIORITY,
        };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0
    }
}

/// The longest early-wake margin: beyond it a late wake-up is a stall
/// (a descheduled thread), not the timer's latency to compensate.
const MAX_MARGIN_NS: u64 = 200_000;
/// The window over which busy polling is budgeted.
const POLL_WINDOW_NS: u64 = 50_000_000;
/// The share of each window busy polling may take (as a fraction
/// `1 / POLL_SHARE_DIV`).
const POLL_SHARE_DIV: u64 = 2;

/// When to sleep and for how long: sleep in `ppoll` until `margin` before
/// the deadline, then poll with a zero timeout until it. The margin is
/// 1.5 × a moving average (gain 1/8) of how late the thread's timed
/// wake-ups came, capped at [`MAX_MARGIN_NS`]; polling takes at most
/// 1/[`POLL_SHARE_DIV`] of each [`POLL_WINDOW_NS`] window, after which
/// the driver sleeps to the deadline itself until the window ends. O(1)
/// per call, no allocation.
#[derive(Clone, Debug, Default)]
pub struct WakeTimer {
    late_avg_ns: u64,
    window_start_ns: u64,
    polled_in_window_ns: u64,
    polling_since_ns: Option<u64>,
    /// Total polling time, ns.
    pub polled_ns: u64,
}

impl WakeTimer {
    /// The margin before a deadline at which sleeping stops.
    pub fn margin_ns(&self) -> u64 {
        (self.late_avg_ns + self.late_avg_ns / 2).min(MAX_MARGIN_NS)
    }

    /// The margin for a sleep of `remaining_ns`: the learnt one, but at
    /// least 1/16 of the sleep up to [`MAX_MARGIN_NS`] — a wake-up after a
    /// long idle spell comes later than the short ones the average learns
    /// from (a halted virtual CPU; measured: the first probe of a pair 26 µs
    /// late behind a 20 ms sleep with a 10-µs learnt lateness), and polling
    /// a sixteenth of a long sleep costs little.
    fn margin_for(&self, remaining_ns: u64) -> u64 {
        self.margin_ns().max((remaining_ns / 16).min(MAX_MARGIN_NS))
    }

    /// The `ppoll` timeout at `now` for a deadline `due` (`None`: no
    /// deadline), in ns: `Some(0)` means poll without sleeping.
    pub fn timeout_ns(&mut self, now: u64, due: Option<u64>) -> Option<u64> {
        if now.saturating_sub(self.window_start_ns) >= POLL_WINDOW_NS {
            self.window_start_ns = now;
            self.polled_in_window_ns = 0;
        }
        let remaining = due.map(|d| d.saturating_sub(now));
        let may_poll = self.polled_in_window_ns < POLL_WINDOW_NS / POLL_SHARE_DIV;
        match remaining {
            Some(0) => {
                self.stop_polling(now);
                Some(0)
            }
            Some(r)
                if may_poll
                    && (r <= self.margin_ns()
                        || (self.polling_since_ns.is_some() && r <= MAX_MARGIN_NS)) =>
            {
                let since = self.polling_since_ns.get_or_insert(now);
                let spent = now - *since;
                self.polled_in_window_ns += spent;
                self.polled_ns += spent;
                *since = now;
                Some(0)
            }
            Some(r) => {
                self.stop_polling(now);
                Some(if may_poll { r - self.margin_for(r) } else { r })
            }
            None => {
                self.stop_polling(now);
                None
            }
        }
    }

    fn stop_polling(&mut self, now: u64) {
        if let Some(since) = self.polling_since_ns.take() {
            let spent = now.saturating_sub(since);
            self.polled_in_window_ns += spent;
            self.polled_ns += spent;
        }
    }

    /// Measure the thread's wake-up lateness before any packet needs it:
    /// `rounds` timed `ppoll` sleeps of 200 µs (on no descriptor), whose
    /// mean lateness (stalls beyond the cap left out) seeds the moving
    /// average — a packet pair at a link's first packets would otherwise
    /// meet a timer that has learnt nothing. About `rounds` × 0.3 ms.
    pub fn calibrate(&mut self, start: Instant, rounds: u32) {
        const ASK_NS: u64 = 200_000;
        let (mut sum, mut n) = (0u64, 0u64);
        for _ in 0..rounds {
            let t0 = now_ns(start);
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: ASK_NS as libc::c_long,
            };
            // SAFETY: no descriptors (a null array of length 0), a valid
            // timespec, no signal mask: a plain high-resolution sleep.
            unsafe { libc::ppoll(std::ptr::null_mut(), 0, &ts, std::ptr::null()) };
            let late = now_ns(start).saturating_sub(t0 + ASK_NS);
            if late <= MAX_MARGIN_NS {
                sum += late;
                n += 1;
            }
        }
        if let Some(avg) = sum.checked_div(n) {
            self.late_avg_ns = avg;
        }
    }

    /// A timed sleep of `asked_ns` that started at `slept_at` ended by its
    /// timeout at `now`: learn how late it came. A wake-up later than the
    /// cap is a stall, not the timer's latency, and is not learnt.
    pub fn on_timed_wake(&mut self, slept_at: u64, asked_ns: u64, now: u64) {
        let late = now.saturating_sub(slept_at + asked_ns);
        if late <= MAX_MARGIN_NS {
            self.late_avg_ns = self.late_avg_ns - self.late_avg_ns / 8 + late / 8;
        }
        // The sleep ended a margin before its deadline: poll the rest.
        self.polling_since_ns.get_or_insert(now);
    }
}

impl Forwarder {
    /// Run until the stop eventfd is signalled or a device fails. Per
    /// packet O(1) amortized plus the model's cost; no allocation once
    /// the buffer pool and queues have grown to the traffic's peak.
    pub fn run(mut self) -> std::io::Result<DirCounters> {
        let mut c = DirCounters {
            realtime: set_precise_wakeups(),
            ..DirCounters::default()
        };
        let mut out = LinkOutput::default();
        let mut held: VecDeque<(u64, Packet)> = VecDeque::new();
        let mut pool: Vec<Vec<u8>> = Vec::new();
        let mut next_id = 0u64;
        let src = self.src.as_raw_fd();
        let dst = self.dst.as_raw_fd();
        let stop = self.stop.as_raw_fd();
        let forward = self.dir == Dir::Uplink;
        let mut timer = WakeTimer::default();
        timer.calibrate(self.start, 16);
        let started = now_ns(self.start);
        loop {
            // 1. Everything the source has now, into the link.
            for _ in 0..READ_BATCH {
                let mut buf = pool.pop().unwrap_or_else(|| Vec::with_capacity(BUF_BYTES));
                buf.clear();
                // SAFETY: reading at most `capacity` bytes into the buffer's
                // own allocation; the length is set to what was read.
                let n = unsafe { libc::read(src, buf.as_mut_ptr().cast(), buf.capacity()) };
                if n < 0 {
                    pool.push(buf);
                    let e = std::io::Error::last_os_error();
                    match e.raw_os_error() {
                        Some(libc::EAGAIN) => break,
                        Some(libc::EINTR) => continue,
                        _ => return Err(e),
                    }
                }
                // SAFETY: the kernel initialised `n` ≤ capacity bytes.
                unsafe { buf.set_len(n as usize) };
                let now = now_ns(self.start);
                c.read_packets += 1;
                if let Some(l) = self.log.as_mut() {
                    l.arrival(self.dir, now, n as u32);
                }
                let pkt = Packet {
                    id: next_id,
                    // FQ-CoDel's flow: the 5-tuple.
                    flow: crate::ip::flow_hash(&buf) as usize,
                    forward,
                    is_data: true,
                    src: usize::from(!forward),
                    dst: usize::from(forward),
                    next_hop: usize::from(forward),
                    dst_port: 0,
                    src_port: 0,
                    wire_bytes: n as u32,
                    created: Time::from_nanos(now),
                    left_first_hop: false,
                    hops: 0,
                    ecn: crate::ip::ecn(&buf),
                    payload: buf,
                };
                next_id += 1;
                if let Err((p, why)) = self.model.enqueue(to_model(now), pkt) {
                    c.model_drops += 1;
                    if let Some(l) = self.log.as_mut() {
                        l.drop(self.dir, now, p.wire_bytes, why);
                    }
                    pool.push(p.payload);
                }
            }
            // 2. Serve the link up to now.
            let now = now_ns(self.start);
            self.model.advance(to_model(now), &mut out);
            for (at, p) in out.delivered.drain(..) {
                let at = from_model(at);
                if let Some(l) = self.log.as_mut() {
                    let left = at.saturating_sub(self.delay_ns);
                    let since = left.saturating_sub(p.created.as_nanos());
                    l.departure(self.dir, left, p.wire_bytes, since);
                }
                // Arrival times of a FIFO link with a fixed delay never
                // decrease; insert from the back to stay correct anyway.
                let mut i = held.len();
                while i > 0 && held[i - 1].0 > at {
                    i -= 1;
                }
                held.insert(i, (at, p));
            }
            for (p, why) in out.dropped.drain(..) {
                c.model_drops += 1;
                if let Some(l) = self.log.as_mut() {
                    l.drop(self.dir, now, p.wire_bytes, why);
                }
                pool.push(p.payload);
            }
            out.processed.clear();
            out.hints.clear();
            // 3. Hand over what has arrived.
            let now = now_ns(self.start);
            while held.front().is_some_and(|(at, _)| *at <= now) {
                let Some((at, mut p)) = held.pop_front() else {
                    break;
                };
                // An AQM's CE mark goes into the IP header.
                if p.ecn == Some(EcnCodepoint::Ce) && crate::ip::ecn(&p.payload) != p.ecn {
                    crate::ip::set_ecn(&mut p.payload, p.ecn);
                }
                // SAFETY: writing the packet's initialised bytes.
                let w = unsafe { libc::write(dst, p.payload.as_ptr().cast(), p.payload.len()) };
                if w < 0 {
                    let e = std::io::Error::last_os_error();
                    if e.raw_os_error() == Some(libc::EBADF) {
                        return Err(e);
                    }
                    c.write_errors += 1;
                } else {
                    c.written_packets += 1;
                    c.written_bytes += p.payload.len() as u64;
                    let late = now_ns(self.start).saturating_sub(at);
                    c.late_ns_sum += late;
                    c.late_ns_max = c.late_ns_max.max(late);
                    c.late_over_1ms += u64::from(late > 1_000_000);
                }
                pool.push(p.payload);
            }
            // 4. Sleep until the next thing to do, a packet, or stop.
            let wake = self.model.next_wake(to_model(now)).map(from_model);
            let due = match (wake, held.front().map(|(at, _)| *at)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let now = now_ns(self.start);
            let sleep = timer.timeout_ns(now, due);
            let mut fds = [
                libc::pollfd {
                    fd: src,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: stop,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let ts = sleep.map(|ns| libc::timespec {
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
            if r == 0 {
                if let Some(asked) = sleep.filter(|&ns| ns > 0) {
                    timer.on_timed_wake(now, asked, now_ns(self.start));
                }
            }
            if fds[1].revents != 0 {
                break;
            }
        }
        c.busy_poll_ns = timer.polled_ns;
        c.run_ns = now_ns(self.start).saturating_sub(started);
        if let Some(l) = self.log.as_mut() {
            l.flush()?;
        }
        c.model = self.model.stats().clone();
        Ok(c)
    }
}

/// A reason's name in the log.
pub fn reason_name(why: DropReason) -> &'static str {
    why.name()
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_wake_timer_learns_its_lateness_and_polls_only_the_margin() {
        let mut t = WakeTimer::default();
        // Nothing learnt: sleep to a sixteenth before the deadline (the
        // long-sleep margin).
        assert_eq!(t.timeout_ns(0, Some(1_000_000)), Some(1_000_000 - 62_500));
        // After that sleep: poll until the deadline, then stop.
        t.on_timed_wake(0, 937_500, 940_000);
        assert_eq!(t.timeout_ns(950_000, Some(1_000_000)), Some(0));
        assert_eq!(t.timeout_ns(1_000_000, Some(1_000_000)), Some(0));
        assert_eq!(t.polled_ns, 60_000);
        t.polled_ns = 0;
        assert_eq!(t.timeout_ns(0, None), None);
        // Timed wake-ups that come 80 µs late.
        let mut now = 0;
        for _ in 0..64 {
            t.on_timed_wake(now, 500_000, now + 580_000);
            now += 580_000;
            // The deadline was reached when the thread woke.
            assert_eq!(t.timeout_ns(now, Some(now)), Some(0));
        }
        t.polled_ns = 0;
        let m = t.margin_ns();
        assert!((110_000..=120_000).contains(&m), "margin {m}");
        // Far from the deadline: sleep to the margin before it.
        assert_eq!(
            t.timeout_ns(now, Some(now + 1_000_000)),
            Some(1_000_000 - m)
        );
        // Within the margin: poll; the polling time is counted.
        assert_eq!(t.timeout_ns(now, Some(now + 50_000)), Some(0));
        assert_eq!(t.timeout_ns(now + 30_000, Some(now + 50_000)), Some(0));
        assert_eq!(t.timeout_ns(now + 50_000, Some(now + 50_000)), Some(0));
        assert_eq!(t.polled_ns, 50_000);
        // A stall is not the timer's latency.
        let before = t.margin_ns();
        t.on_timed_wake(0, 1_000, 5_000_000);
        assert_eq!(t.margin_ns(), before);
    }

    #[test]
    fn busy_polling_takes_at_most_half_of_each_window() {
        let mut t = WakeTimer::default();
        for i in 0..64 {
            let woke = i * 1_000_000 + 180_000;
            t.on_timed_wake(i * 1_000_000, 100_000, woke);
            assert_eq!(t.timeout_ns(woke, Some(woke)), Some(0));
        }
        t.polled_ns = 0;
        // A deadline always 10 µs away (a saturated fast link): poll
        // every µs for 200 ms.
        let start = 1_000_000_000u64;
        let mut slept = 0;
        for us in 0..200_000u64 {
            let now = start + us * 1_000;
            if t.timeout_ns(now, Some(now + 10_000)) != Some(0) {
                slept += 1;
            }
        }
        let share = t.polled_ns as f64 / 200e6;
        assert!(share <= 0.51, "polled {share}");
        assert!(share >= 0.45, "polled {share}");
        assert!(slept > 0);
    }

    use super::*;
    use peregrine_sim::world::link::{PointToPoint, QueueLimit, Server};
    use peregrine_sim::world::loss::LossModel;
    use peregrine_sim::world::outage::Outages;
    use std::os::fd::FromRawFd;

    /// A connected pair of datagram sockets (packet boundaries kept,
    /// like a TUN device), the first end non-blocking.
    fn dgram_pair() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: socketpair writes two descriptors into `fds`.
        let r = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()) };
        assert_eq!(r, 0, "socketpair: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just created and are owned here.
        unsafe {
            libc::fcntl(fds[0], libc::F_SETFL, libc::O_NONBLOCK);
            (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
        }
    }

    /// The driver, without namespaces or TUN: packets written into one
    /// socket pair come out of the other after the model's delay, paced
    /// at its rate, and the stop eventfd ends the thread.
    #[test]
    fn forwards_with_the_models_delay_and_rate() {
        let (src_driver, src_test) = dgram_pair();
        let (dst_driver, dst_test) = dgram_pair();
        // SAFETY: eventfd has no memory preconditions.
        let efd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
        assert!(efd >= 0);
        // SAFETY: a descriptor we just created and own.
        let stop = Arc::new(unsafe { OwnedFd::from_raw_fd(efd) });
        let delay_ns = 10_000_000;
        let model = PointToPoint::new(
            // 1000-byte packets at 8 Mbit/s: one per ms.
            Server::Rate(8_000_000),
            std::time::Duration::from_nanos(delay_ns),
            QueueLimit {
                packets: None,
                bytes: None,
                floor_packets: 0,
            },
            LossModel::new(
                peregrine_sim::scenario::model::LossSpec::None,
                peregrine_sim::rng::component_rng(1, "t"),
            ),
            Outages::none(),
        );
        let f = Forwarder {
            dir: Dir::Uplink,
            model: Box::new(model),
            delay_ns,
            src: Arc::new(src_driver),
            dst: Arc::new(dst_driver),
            stop: Arc::clone(&stop),
            log: None,
            start: Instant::now(),
        };
        let h = std::thread::spawn(move || f.run());
        let t0 = Instant::now();
        let pkt = [7u8; 1000];
        for _ in 0..20 {
            // SAFETY: writing 1000 initialised bytes.
            let w = unsafe { libc::write(src_test.as_raw_fd(), pkt.as_ptr().cast(), pkt.len()) };
            assert_eq!(w, 1000);
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        for _ in 0..20 {
            // SAFETY: reading into a 2048-byte buffer (blocking end).
            let n = unsafe { libc::read(dst_test.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            assert_eq!(n, 1000);
            got.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        let one: u64 = 1;
        // SAFETY: 8 bytes to our eventfd.
        unsafe { libc::write(stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        let c = h.join().expect("no panic").expect("no device error");
        assert_eq!(
            (c.read_packets, c.written_packets, c.model_drops),
            (20, 20, 0)
        );
        // First packet: 1 ms of transmission + 10 ms of delay; then one
        // per ms. Lower bounds are exact (never early); upper bounds are
        // loose, for busy machines.
        assert!(got[0] >= 11.0 && got[0] < 40.0, "first at {} ms", got[0]);
        // The 20th leaves after 20 ms of transmission: paced, not burst.
        assert!(got[19] >= 30.0 && got[19] < 80.0, "last at {} ms", got[19]);
    }
}
