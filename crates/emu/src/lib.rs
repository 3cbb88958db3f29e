//! # peregrine-emu — the laboratory's links, live
//!
//! Runs a command inside a new network namespace whose only way out is a
//! pair of TUN devices served in real time by the simulator's own link
//! model ([`peregrine_sim::world::link::PointToPoint`]: rate or
//! Mahimahi trace with 1,500-byte looping opportunities, drop-tail
//! queue, loss, outages, propagation delay), one model per direction —
//! Mahimahi's `mm-link` + `mm-delay` + `mm-loss` with Peregrine's code.
//! `peregrine emu` is a thin command over [`run`].
//!
//! * [`spec`]: the link from flags or from a scenario file's link;
//! * [`netns`]: privileges, namespaces, TUN devices and the address plan
//!   (one /30 of `10.250.0.0/24` per nesting level);
//! * [`forward`]: the real-time driver, one thread per direction;
//! * [`clock`]: the one conversion between the wall clock and model time;
//! * [`log`] and [`plot`]: `--log FILE` and `peregrine emu plot FILE`;
//! * [`hints`]: `--hint-lead` — the link's outages announced ahead to the
//!   command as link hints (`PEREGRINE_HINTS`).
//!
//! Linux only (TUN, network namespaces); root, or an unprivileged user
//! namespace where the kernel allows it.

#![warn(missing_docs)]
// A real-time driver: the wall clock (`Instant`) and threads are its job,
// the opposite of the sans-IO core the workspace-wide bans protect.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

pub mod clock;
pub mod forward;
pub mod hints;
pub mod ip;
pub mod log;
pub mod netns;
pub mod plot;
pub mod spec;

use anyhow::{anyhow, Context as _};
use forward::{Dir, DirCounters, Forwarder};
use hints::HINTS_ENV;
use log::LogSink;
use netns::{Level, Privilege, HOST_ENV, LEVEL_ENV};
use spec::{BuiltDirection, LinkSource};
use std::ffi::OsString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// What to run, over which link.
#[derive(Clone, Debug)]
pub struct Options {
    /// The link.
    pub link: LinkSource,
    /// `--log FILE`.
    pub log: Option<PathBuf>,
    /// The command and its arguments (empty: the user's shell, `$SHELL`
    /// or `/bin/sh`).
    pub command: Vec<OsString>,
    /// Print a one-line description of each direction on standard error.
    pub verbose: bool,
    /// Export the link's outages as hints (`--hint-lead` …), if asked.
    pub hints: Option<hints::HintOptions>,
}

/// How the emulation ended.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The command's exit status as a shell reports it (128 + signal
    /// number when a signal ended it).
    pub exit_code: i32,
    /// `[uplink, downlink]` counters.
    pub counters: [DirCounters; 2],
    /// Problems that did not stop the command (a direction's device
    /// failed, the log could not be written).
    pub warnings: Vec<String>,
    /// What the hint feed sent, if there was one.
    pub hints: Option<hints::ExportCounters>,
}

/// Run `options.command` over the emulated link and wait for it. Must be
/// called while the process has a single thread (it changes network
/// namespaces and, without root, enters a user namespace). The process
/// stays in the new namespace afterwards: call it last.
pub fn run(options: &Options) -> anyhow::Result<Outcome> {
    let level = Level::below(std::env::var(LEVEL_ENV).ok().as_deref())?;
    let [up, down] = spec::build(&options.link)?;
    let plan = match &options.hints {
        Some(h) => {
            hints::validate(h).map_err(|e| anyhow!(e))?;
            Some(hints::HintPlan::new(
                h.clone(),
                &[up.outages.clone(), down.outages.clone()],
                up.outages.seed,
                hints::HINT_RNG,
            ))
        }
        None => None,
    };
    let header = |d: &BuiltDirection, name: &str| {
        let mut h = vec![format!("{name}: {}", d.describe)];
        match (&d.trace, d.rate_bps) {
            (Some(p), _) => {
                let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
                h.push(format!("{name} trace {}", abs.display()));
            }
            (None, Some(r)) => h.push(format!("{name} rate_bps {r}")),
            (None, None) => h.push(format!("{name} unlimited")),
        }
        h.push(format!("{name} delay_ns {}", d.delay_ns));
        h
    };
    let log_file = match &options.log {
        Some(p) => {
            let mut h = header(&up, "uplink");
            h.extend(header(&down, "downlink"));
            Some(LogSink::create(p, &h).with_context(|| format!("--log {}", p.display()))?)
        }
        None => None,
    };
    let privilege = netns::acquire_privilege()?;
    if options.verbose {
        eprintln!(
            "peregrine emu: level {}{}, {HOST_ENV}={}\n  uplink:   {}\n  downlink: {}",
            level.level,
            if privilege == Privilege::UserNamespace {
                " (not root: the outer side is a private namespace)"
            } else {
                ""
            },
            level.host(),
            up.describe,
            down.describe
        );
    }

    let dev = level.device();
    let outer = Arc::new(netns::open_tun(&dev)?);
    netns::configure_outer(level).context("configuring the outer device")?;
    netns::enter_new_netns()?;
    let inner = Arc::new(netns::open_tun(&dev)?);
    netns::configure_inner(level).context("configuring the new namespace")?;

    // SAFETY: eventfd has no memory preconditions.
    let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if efd < 0 {
        return Err(anyhow!("eventfd: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a descriptor we just created and own.
    let stop = Arc::new(unsafe { OwnedFd::from_raw_fd(efd) });
    let start = Instant::now();
    let start_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    // The hint feed: listening before the command starts, so it can
    // connect at once (a Unix socket is not namespaced).
    let feed = match plan {
        Some(plan) => {
            let path = std::env::temp_dir().join(format!(
                "peregrine-emu-{}-{}.hints",
                std::process::id(),
                level.level
            ));
            let listener = hints::Exporter::bind(&path)
                .with_context(|| format!("hint feed {}", path.display()))?;
            let exporter = hints::Exporter {
                path: path.clone(),
                plan,
                start,
                start_unix,
                stop: Arc::clone(&stop),
            };
            let thread = std::thread::Builder::new()
                .name("emu-hints".into())
                .spawn(move || exporter.run(listener))?;
            if options.verbose {
                eprintln!(
                    "peregrine emu: hints on unix:{} ({HINTS_ENV})",
                    path.display()
                );
            }
            Some((path, thread))
        }
        None => None,
    };
    if let Some(f) = &log_file {
        // The model's time 0 on CLOCK_MONOTONIC (the clock every process
        // shares), so measurements taken elsewhere can be lined up.
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        let ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        use std::io::Write as _;
        writeln!(&**f, "# start_monotonic_ns {ns}").context("writing the log")?;
    }
    let spawn = |dir: Dir, d: BuiltDirection, src: &Arc<OwnedFd>, dst: &Arc<OwnedFd>| {
        let f = Forwarder {
            dir,
            model: Box::new(d.model),
            delay_ns: d.delay_ns,
            src: Arc::clone(src),
            dst: Arc::clone(dst),
            stop: Arc::clone(&stop),
            log: log_file.as_ref().map(|f| LogSink::new(Arc::clone(f))),
            start,
        };
        std::thread::Builder::new()
            .name(format!("emu-{}", dir.name()))
            .spawn(move || f.run())
    };
    let up_thread = spawn(Dir::Uplink, up, &inner, &outer)?;
    let down_thread = spawn(Dir::Downlink, down, &outer, &inner)?;

    let mut argv = options.command.clone();
    if argv.is_empty() {
        argv.push(std::env::var_os("SHELL").unwrap_or_else(|| "/bin/sh".into()));
    }
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env(HOST_ENV, level.host().to_string())
        .env(LEVEL_ENV, level.level.to_string());
    match &feed {
        Some((path, _)) => {
            cmd.env(HINTS_ENV, format!("unix:{}", path.display()));
        }
        // An outer emulator's feed is not this link's.
        None => {
            cmd.env_remove(HINTS_ENV);
        }
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run {:?}", argv[0]))?;
    // Like a shell running a foreground job: ^C and ^\ are for the
    // command; the emulator ends when it does.
    // SAFETY: setting a signal's disposition to "ignore".
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let status = child.wait().context("waiting for the command")?;
    let exit_code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);

    let one: u64 = 1;
    // SAFETY: writing 8 bytes to our eventfd wakes both threads.
    unsafe { libc::write(efd, (&one as *const u64).cast(), 8) };
    let mut warnings = Vec::new();
    let mut join =
        |h: std::thread::JoinHandle<std::io::Result<DirCounters>>, name: &str| match h.join() {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                warnings.push(format!("forwarding the {name} stopped: {e}"));
                DirCounters::default()
            }
            Err(_) => {
                warnings.push(format!("the {name} thread panicked"));
                DirCounters::default()
            }
        };
    let counters = [join(up_thread, "uplink"), join(down_thread, "downlink")];
    let hints = feed.map(|(path, h)| {
        let c = match h.join() {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                warnings.push(format!("the hint feed stopped: {e}"));
                hints::ExportCounters::default()
            }
            Err(_) => {
                warnings.push("the hint thread panicked".into());
                hints::ExportCounters::default()
            }
        };
        let _ = std::fs::remove_file(path);
        c
    });
    Ok(Outcome {
        exit_code,
        counters,
        warnings,
        hints,
    })
}
