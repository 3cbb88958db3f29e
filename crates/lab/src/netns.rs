//! Two network namespaces joined by a shaped veth pair: a wire between two
//! "hosts" on one machine (`peregrine reproduce sltp --ethernet`).
//!
//! # Address plan
//!
//! The server namespace holds `10.251.0.1/30`, the client namespace
//! `10.251.0.2/30`, each on a device `pgwire0` (the two ends of one veth
//! pair). The namespaces are new and private to one run, so these
//! addresses never meet `peregrine emu`'s `10.250.0.0/24`, each other's
//! (concurrent runs have their own namespaces), or any routed network:
//! nothing is routed out of a namespace, and both namespaces (with the
//! veth pair inside them) are deleted when the [`VethPair`] is dropped.
//!
//! # Why not `peregrine_emu::netns`
//!
//! The emulator makes an anonymous namespace for its command by
//! `unshare(2)` and joins it to its parent through a TUN device it serves
//! itself; here both ends are named namespaces the kernel joins with a
//! veth pair and shapes with `tc`, so the only shared piece would be a
//! four-line `ip` runner.
//!
//! # Clean-up
//!
//! Namespaces made with `ip netns add` outlive the process that made them,
//! so they are deleted on every way out: [`Drop`] (normal return, errors,
//! panics that unwind) and, on SIGINT, SIGTERM or SIGHUP, a signal thread
//! started with the first pair that kills the child processes registered
//! with [`kill_on_signal`] (which would otherwise keep a deleted namespace
//! alive, unnamed), deletes every live pair's namespaces and exits with
//! status 128 + the signal.
//
// The CLI runtime legitimately spawns threads and opens sockets here; the
// clippy bans are for the sans-IO crates.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use anyhow::{anyhow, bail, Context as _};
use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, Once};

/// One end of the wire.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Side {
    /// The namespace the servers run in (`10.251.0.1`).
    Server,
    /// The namespace the clients run in (`10.251.0.2`).
    Client,
}

/// The device name of both veth ends (each in its own namespace).
pub const DEVICE: &str = "pgwire0";

/// Two fresh network namespaces joined by a veth pair of `mtu_bytes`,
/// shaped to `rate_bps` by a token bucket (`tc tbf`) on both ends. The
/// bucket holds 4 frames, so tbf cuts any larger GSO/TSO super-packet into
/// MTU-sized frames as a NIC's segmentation offload would: senders keep
/// their offloads (as on a real NIC) and the wire carries frames.
/// Deleted (namespaces, devices, qdiscs) when dropped.
#[derive(Debug)]
pub struct VethPair {
    server_ns: String,
    client_ns: String,
    /// The MTU of both ends, bytes.
    pub mtu_bytes: u32,
    /// The shaping rate of each direction, bit/s.
    pub rate_bps: u64,
}

/// Names of the namespaces that exist now (for the signal thread).
static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Child processes to kill on a signal, by pid.
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static SIGNALS: Once = Once::new();
/// Set once a signal arrived: children registered after that are killed at once.
static DYING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static NEXT: AtomicU32 = AtomicU32::new(0);

impl VethPair {
    /// Create the pair: `ip netns add` × 2 (unique names `pgsltp-PID-N-s`
    /// and `-c`), the veth pair, addresses, MTU, `tc tbf` on both ends.
    /// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2; without
    /// them the error says which is missing. O(1) commands (~12 `ip`/`tc`).
    pub fn create(mtu_bytes: u32, rate_bps: u64) -> anyhow::Result<VethPair> {
        if !(576..=9000).contains(&mtu_bytes) {
            bail!("mtu_bytes: {mtu_bytes} is outside 576 ..= 9000");
        }
        if rate_bps < 1_000_000 {
            bail!("rate_bps: {rate_bps} is below 1 Mbit/s");
        }
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        if uid != 0 {
            bail!(
                "--ethernet needs root: it creates two network namespaces joined by a veth pair \
                 and shapes it with tc, which takes CAP_NET_ADMIN and CAP_SYS_ADMIN, and this \
                 process runs as uid {uid}. Run it as root (sudo), or leave out --ethernet to \
                 measure over loopback"
            );
        }
        for tool in ["ip", "tc"] {
            if Command::new(tool).arg("-V").output().is_err() {
                bail!(
                    "--ethernet needs `{tool}` (iproute2), which is not on PATH \
                     (apt-get install iproute2)"
                );
            }
        }
        install_signal_cleanup();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = format!("pgsltp-{}-{n}", std::process::id());
        let pair = VethPair {
            server_ns: format!("{base}-s"),
            client_ns: format!("{base}-c"),
            mtu_bytes,
            rate_bps,
        };
        // From here on every early return drops `pair`, which deletes
        // whatever was made so far.
        for ns in [&pair.server_ns, &pair.client_ns] {
            run("ip", &["netns", "add", ns]).context(
                "--ethernet cannot create a network namespace (is the kernel built with \
                 network namespaces, and is /run/netns writable?)",
            )?;
            LIVE.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(ns.clone());
        }
        run(
            "ip",
            &[
                "link",
                "add",
                DEVICE,
                "netns",
                &pair.server_ns,
                "type",
                "veth",
                "peer",
                "name",
                DEVICE,
                "netns",
                &pair.client_ns,
            ],
        )
        .context("--ethernet cannot create a veth pair (kernel module veth)")?;
        let mtu = mtu_bytes.to_string();
        // tbf's bucket: 4 frames. Ethernet serializes every frame at the
        // line rate; a bucket of 1 ms (125 kB at 1 Gbit/s) would let a
        // whole 64 KiB echo through unshaped. 4 frames rather than 1 so
        // the qdisc timer's slack on a busy host does not cost rate (bulk
        // iperf3 got the same 455-460 Mbit/s, CPU-bound, with 6 kB and
        // 125 kB buckets here).
        let burst = (4 * u64::from(mtu_bytes)).to_string();
        let rate = rate_bps.to_string();
        for side in [Side::Server, Side::Client] {
            let ns = pair.name(side);
            let addr = format!("{}/30", Self::addr(side));
            run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
            run("ip", &["-n", ns, "addr", "add", &addr, "dev", DEVICE])?;
            // Offloads stay on: TCP hands 64 KiB TSO super-packets (and
            // Peregrine UDP GSO ones) to the device as it would to a NIC,
            // and tbf, whose bucket is smaller, cuts them into MTU-sized
            // frames where a NIC would. (With `gso_max_segs 1` instead,
            // kernel TCP segments in software and bulk iperf3 got 340-360
            // Mbit/s here against 650-770 with offloads, at load 7.7.)
            run("ip", &["-n", ns, "link", "set", DEVICE, "mtu", &mtu, "up"])?;
            run(
                "tc",
                &[
                    "-n",
                    ns,
                    "qdisc",
                    "add",
                    "dev",
                    DEVICE,
                    "root",
                    "tbf",
                    "rate",
                    &format!("{rate}bit"),
                    "burst",
                    &burst,
                    "latency",
                    "10ms",
                ],
            )
            .context("--ethernet cannot shape the veth pair (tc tbf, kernel module sch_tbf)")?;
        }
        Ok(pair)
    }

    /// The namespace name of `side`.
    pub fn name(&self, side: Side) -> &str {
        match side {
            Side::Server => &self.server_ns,
            Side::Client => &self.client_ns,
        }
    }

    /// The address of `side` on the wire.
    pub fn addr(side: Side) -> Ipv4Addr {
        match side {
            Side::Server => Ipv4Addr::new(10, 251, 0, 1),
            Side::Client => Ipv4Addr::new(10, 251, 0, 2),
        }
    }

    /// `program` as a command that runs inside `side`'s namespace (the
    /// child joins it between fork and exec, so its pid is the program's
    /// own and killing it kills the program). O(1).
    pub fn command(&self, side: Side, program: &Path) -> anyhow::Result<Command> {
        let ns = self.open(side)?;
        let mut cmd = Command::new(program);
        // SAFETY: setns is async-signal-safe; the descriptor is moved into
        // the closure, so it is open in the child until exec (where
        // O_CLOEXEC closes it).
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(cmd)
    }

    /// Run `f` on a new thread that has joined `side`'s namespace, and
    /// return its result: sockets `f` opens live in that namespace (and
    /// stay there, whichever thread uses them later). O(1) plus `f`.
    pub fn run_in<T: Send>(
        &self,
        side: Side,
        f: impl FnOnce() -> anyhow::Result<T> + Send,
    ) -> anyhow::Result<T> {
        let ns = self.open(side)?;
        std::thread::scope(|s| {
            s.spawn(move || {
                // SAFETY: setns on this (new, single-purpose) thread only.
                if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(anyhow!(
                        "cannot join network namespace {}: {}",
                        self.name(side),
                        std::io::Error::last_os_error()
                    ));
                }
                f()
            })
            .join()
            .map_err(|_| anyhow!("a thread in namespace {} panicked", self.name(side)))?
        })
    }

    /// What `side`'s shaper has sent so far: (frames, bytes) from the root
    /// qdisc's statistics (`tc -s -j qdisc show`). The qdisc bills each
    /// segment of an offloaded super-packet as a frame with its own headers
    /// (Ethernet header included), so these are what the wire carries, where
    /// the device's own counters count a super-packet once. O(1) plus a `tc`
    /// process.
    pub fn shaper_sent(&self, side: Side) -> anyhow::Result<(u64, u64)> {
        let ns = self.name(side);
        let out = Command::new("tc")
            .args(["-n", ns, "-s", "-j", "qdisc", "show", "dev", DEVICE])
            .output()
            .map_err(|e| anyhow!("cannot run `tc` ({e}): iproute2 is needed"))?;
        if !out.status.success() {
            bail!(
                "`tc -n {ns} -s -j qdisc show dev {DEVICE}` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        parse_root_qdisc_stats(&String::from_utf8_lossy(&out.stdout))
            .with_context(|| format!("the shaper's statistics in {ns}"))
    }

    fn open(&self, side: Side) -> anyhow::Result<File> {
        let path = format!("/run/netns/{}", self.name(side));
        File::open(&path).with_context(|| format!("cannot open {path}"))
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        for ns in [&self.server_ns, &self.client_ns] {
            if let Some(i) = live.iter().position(|l| l == ns) {
                live.swap_remove(i);
                // Deleting a namespace deletes the veth end (and with it
                // the peer) and its qdisc.
                let _ = run("ip", &["netns", "del", ns]);
            }
        }
    }
}

/// Have the signal thread kill child `pid` before it deletes the
/// namespaces (a child that would outlive an interrupted run). Call
/// [`release_on_signal`] before reaping the child where possible (at the
/// latest right after), so a reused pid is not killed. O(1).
pub fn kill_on_signal(pid: u32) {
    let mut c = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    if DYING.load(Ordering::SeqCst) {
        kill_now(pid);
    } else {
        c.push(pid);
    }
}

fn kill_now(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) on a child this process started and has not
        // reaped (registered until just before reaping).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Undo [`kill_on_signal`]. O(registered children).
pub fn release_on_signal(pid: u32) {
    let mut c = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = c.iter().position(|p| *p == pid) {
        c.swap_remove(i);
    }
}

/// Run `tool ARGS…`, turning a failure into an error that quotes the
/// command and what it printed.
fn run(tool: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(tool)
        .args(args)
        .output()
        .map_err(|e| anyhow!("cannot run `{tool}` ({e}): iproute2 is needed"))?;
    if !out.status.success() {
        bail!(
            "`{tool} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// (packets, bytes) of the root qdisc in `tc -s -j qdisc show`'s output.
/// O(qdiscs).
pub fn parse_root_qdisc_stats(json: &str) -> anyhow::Result<(u64, u64)> {
    let v: serde_json::Value =
        serde_json::from_str(json).context("`tc -j` printed something that is not JSON")?;
    let root = v
        .as_array()
        .and_then(|qs| {
            qs.iter()
                .find(|q| q["root"] == serde_json::Value::Bool(true))
        })
        .ok_or_else(|| anyhow!("no root qdisc in {json:?}"))?;
    let field = |k: &str| {
        root[k]
            .as_u64()
            .ok_or_else(|| anyhow!("the root qdisc has no integer {k:?}: {root}"))
    };
    Ok((field("packets")?, field("bytes")?))
}

/// The write end of the pipe the signal handler reports to (-1: none).
static SIGNAL_PIPE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    let byte = sig as u8;
    // SAFETY: write(2) is async-signal-safe; one byte from a live local.
    unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
}

/// Catch SIGINT, SIGTERM and SIGHUP with a handler that writes the signal
/// to a pipe, and start a thread that reads it, kills the registered
/// children, deletes the live namespaces and exits with 128 + the signal.
/// A handler rather than a blocked mask: children start with default
/// dispositions (exec resets handlers) but would inherit a mask. Once per
/// process; if the pipe cannot be made, Ctrl-C keeps its default (the
/// namespaces then outlive an interrupted run: `ip netns del pgsltp-…`).
fn install_signal_cleanup() {
    SIGNALS.call_once(|| {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into `fds`.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return;
        }
        SIGNAL_PIPE.store(fds[1], Ordering::Relaxed);
        let read_fd = fds[0];
        std::thread::spawn(move || {
            let mut byte = 0u8;
            // SAFETY: reads one byte into a live local from our pipe.
            let n = unsafe { libc::read(read_fd, (&mut byte as *mut u8).cast(), 1) };
            if n != 1 {
                return;
            }
            let sig = i32::from(byte);
            {
                let mut c = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
                DYING.store(true, Ordering::SeqCst);
                std::mem::take(&mut *c).into_iter().for_each(kill_now);
            }
            let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
            for ns in &live {
                let _ = run("ip", &["netns", "del", ns]);
            }
            eprintln!(
                "interrupted (signal {sig}); deleted network namespaces {}",
                live.join(", ")
            );
            std::process::exit(128 + sig);
        });
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: installs a handler that only calls write(2).
            unsafe {
                libc::signal(
                    sig,
                    on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
                )
            };
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_root_qdiscs_statistics() {
        let json = r#"[{"kind":"tbf","handle":"8081:","root":true,"refcnt":3,
            "options":{"rate":125000000,"burst":6000,"lat":10000},
            "bytes":1516948,"packets":1002,"drops":0,"overlimits":7}]"#;
        assert_eq!(
            parse_root_qdisc_stats(json).expect("parsed"),
            (1002, 1_516_948)
        );
        let e = parse_root_qdisc_stats(r#"[{"kind":"tbf","root":true,"bytes":"x"}]"#).unwrap_err();
        assert!(format!("{e:#}").contains("packets"), "{e:#}");
        assert!(parse_root_qdisc_stats("[]").is_err());
        assert!(parse_root_qdisc_stats("Error: oops").is_err());
    }

    #[test]
    fn bad_settings_name_the_field() {
        let e = VethPair::create(100, 1_000_000_000).unwrap_err();
        assert!(format!("{e:#}").contains("mtu_bytes"), "{e:#}");
        let e = VethPair::create(1500, 10).unwrap_err();
        assert!(format!("{e:#}").contains("rate_bps"), "{e:#}");
    }

    #[test]
    fn pair_carries_tcp_and_is_deleted_on_drop() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !Path::new("/run").exists() {
            println!("skipped: needs root for network namespaces");
            return;
        }
        let pair = match VethPair::create(1500, 1_000_000_000) {
            Ok(p) => p,
            Err(e) => {
                println!("skipped: network namespaces unavailable here: {e:#}");
                return;
            }
        };
        let names = [
            pair.name(Side::Server).to_string(),
            pair.name(Side::Client).to_string(),
        ];
        let listener = pair
            .run_in(Side::Server, || {
                Ok(std::net::TcpListener::bind((
                    VethPair::addr(Side::Server),
                    0,
                ))?)
            })
            .expect("bind in the server namespace");
        let port = listener.local_addr().expect("bound").port();
        pair.run_in(Side::Client, || {
            Ok(std::net::TcpStream::connect((
                VethPair::addr(Side::Server),
                port,
            ))?)
        })
        .expect("connect from the client namespace");
        drop(listener);
        drop(pair);
        for n in names {
            assert!(
                !Path::new("/run/netns").join(&n).exists(),
                "{n} left behind"
            );
        }
    }
}
