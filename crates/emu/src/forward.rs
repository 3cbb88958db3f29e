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
//! polls without sleeping for the rest ([`WakeTimer`], shared with the UDP
//! runtime's driver, `peregrine::wake`): the margin follows
//! the measured lateness of its own wake-ups, and the polling is capped at
//! half of the wall time in every 50 ms window, so a saturated fast link
//! does not take a core (it then writes in small bunches, as before).
//! `peregrine emu -v` prints the lateness and the share of time spent
//! polling. Packet buffers are recycled through a pool: after warm-up the
//! forwarding path allocates nothing per packet.

use crate::clock::{from_model, to_model};
use crate::log::LogSink;
use peregrine::wake::WakePolicy;
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

/// The thread's wake-up timer: the one shared with the UDP runtime's
/// driver (`peregrine::wake`), with the emulator's policy — a margin of
/// 1.5 × the mean lateness (at most 200 µs, at least 1/16 of a long
/// sleep) polled out, polling at most half of each 50 ms window.
pub use peregrine::wake::WakeTimer;

/// One timed `ppoll` sleep of `ns` on no descriptor (the calibration's).
fn ppoll_sleep(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: no descriptors (a null array of length 0), a valid
    // timespec, no signal mask: a plain high-resolution sleep.
    unsafe { libc::ppoll(std::ptr::null_mut(), 0, &ts, std::ptr::null()) };
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
        let mut timer = WakeTimer::new(WakePolicy::EMULATOR);
        // The lateness of its first wake-ups, before a packet pair at the
        // link's first packets meets a timer that has learnt nothing.
        let start = self.start;
        timer.calibrate(16, || now_ns(start), ppoll_sleep);
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
