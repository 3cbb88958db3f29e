//! Namespaces, TUN devices and addresses.
//!
//! # Address plan
//!
//! Every emulator takes one /30 of `10.250.0.0/24` (RFC 1918 private
//! space) by its nesting level `L` (1 for a `peregrine emu` started
//! outside any other, `L + 1` for one started inside level `L`'s
//! command): `10.250.0.4L/30`, with the outer side (the
//! `PEREGRINE_EMU_HOST` address) at `10.250.0.(4L+1)` on the device
//! `pgemuL` in the parent namespace and the command's side at
//! `10.250.0.(4L+2)` on `pgemuL` inside the new namespace. Levels 1 to
//! 63 exist. The new namespace's default route points at the outer side
//! and forwards (`ip_forward = 1`, in that namespace only), and the
//! parent namespace gets routes for the deeper levels' addresses
//! (`10.250.0.4(L+1)` to `.255`) through this emulator's device, so a
//! command at any depth reaches `PEREGRINE_EMU_HOST` of every level above
//! it and the replies find their way back. Nothing else is routed: there
//! is no NAT to the outside world, and the routes disappear with the
//! device when the emulator ends.

use anyhow::{anyhow, bail, Context as _};
use std::fs::File;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;

/// The deepest nesting level (the /24 holds 63 /30s after level 0's).
pub const MAX_LEVEL: u8 = 63;

/// The environment variable carrying the nesting level to nested emulators.
pub const LEVEL_ENV: &str = "PEREGRINE_EMU_LEVEL";
/// The environment variable carrying the outer side's address.
pub const HOST_ENV: &str = "PEREGRINE_EMU_HOST";

/// Addresses of nesting level `level` (1 ..= [`MAX_LEVEL`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// The level.
    pub level: u8,
}

impl Level {
    /// The level of an emulator started with `PEREGRINE_EMU_LEVEL` =
    /// `parent` (`None`: not nested). Errors beyond [`MAX_LEVEL`] or on an
    /// unreadable value.
    pub fn below(parent: Option<&str>) -> anyhow::Result<Level> {
        let p: u8 = match parent {
            None => 0,
            Some(s) => s.trim().parse().map_err(|_| {
                anyhow!("{LEVEL_ENV}={s:?} is not a nesting level (a number 1..={MAX_LEVEL})")
            })?,
        };
        if p >= MAX_LEVEL {
            bail!("peregrine emu nests at most {MAX_LEVEL} deep ({LEVEL_ENV}={p})");
        }
        Ok(Level { level: p + 1 })
    }
    /// The outer side's address, `10.250.0.(4L+1)`.
    pub fn host(self) -> Ipv4Addr {
        Ipv4Addr::new(10, 250, 0, 4 * self.level + 1)
    }
    /// The command's address, `10.250.0.(4L+2)`.
    pub fn command(self) -> Ipv4Addr {
        Ipv4Addr::new(10, 250, 0, 4 * self.level + 2)
    }
    /// The device name on both sides, `pgemuL`.
    pub fn device(self) -> String {
        format!("pgemu{}", self.level)
    }
    /// The prefixes covering the deeper levels' addresses
    /// (`10.250.0.4(L+1)` … `10.250.0.255`), fewest first-fit CIDR blocks. O(8).
    pub fn deeper_prefixes(self) -> Vec<(Ipv4Addr, u8)> {
        let mut out = Vec::new();
        let mut a = 4 * (u32::from(self.level) + 1);
        while a < 256 {
            let mut size = 256u32;
            while a % size != 0 || a + size > 256 {
                size /= 2;
            }
            out.push((
                Ipv4Addr::new(10, 250, 0, a as u8),
                32 - size.trailing_zeros() as u8,
            ));
            a += size;
        }
        out
    }
}

/// How the emulator got the right to make namespaces.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Privilege {
    /// Running as root: the outer side is the caller's namespace.
    Root,
    /// Not root: a new user namespace owns a new, private network
    /// namespace that plays the outer side.
    UserNamespace,
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Make sure the process may create namespaces and TUN devices: nothing
/// to do as root; otherwise enter a new user and network namespace, or
/// say in words that root is needed. Must run before any thread starts
/// (a user namespace needs a single-threaded process).
pub fn acquire_privilege() -> anyhow::Result<Privilege> {
    // SAFETY: geteuid has no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    if uid == 0 {
        return Ok(Privilege::Root);
    }
    // SAFETY: unshare only changes this process's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
        let e = errno();
        bail!(
            "peregrine emu needs root: it is running as uid {uid}, and the kernel refused an \
             unprivileged user namespace to work in instead ({e}; see \
             /proc/sys/kernel/unprivileged_userns_clone and \
             kernel.apparmor_restrict_unprivileged_userns). Run it as root (sudo)."
        );
    }
    let write = |path: &str, text: String| -> anyhow::Result<()> {
        std::fs::write(path, text).with_context(|| format!("writing {path}"))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    ip(&["link", "set", "lo", "up"])?;
    Ok(Privilege::UserNamespace)
}

/// Move this process (its calling thread, and every process it starts
/// from now on) into a new network namespace. Call before threads start.
pub fn enter_new_netns() -> anyhow::Result<()> {
    // SAFETY: unshare only changes this thread's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(anyhow!("unshare(CLONE_NEWNET): {}", errno()));
    }
    Ok(())
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// Create the TUN device `name` in the current network namespace and
/// return its file descriptor (non-blocking, close-on-exec). The device
/// lives while the descriptor is open.
pub fn open_tun(name: &str) -> anyhow::Result<OwnedFd> {
    if name.len() >= libc::IFNAMSIZ {
        bail!("device name {name:?} is too long");
    }
    // SAFETY: a NUL-terminated path and plain flags.
    let raw = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        let e = errno();
        if e.raw_os_error() == Some(libc::EACCES) {
            // SAFETY: geteuid has no preconditions.
            let uid = unsafe { libc::geteuid() };
            bail!(
                "cannot open /dev/net/tun ({e}): peregrine emu needs root, or a /dev/net/tun \
                 that every user may read and write (mode 0666, as most distributions ship \
                 it) for its user-namespace mode (effective uid here {uid})"
            );
        }
        bail!("cannot open /dev/net/tun ({e}): the kernel's TUN driver is needed (modprobe tun)");
    }
    // SAFETY: `raw` is a descriptor we just opened and own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // struct ifreq: 16 bytes of name, then a union whose first member
    // (ifr_flags) is a short; 40 bytes in all.
    let mut ifr = [0u8; 40];
    ifr[..name.len()].copy_from_slice(name.as_bytes());
    ifr[16..18].copy_from_slice(&(IFF_TUN | IFF_NO_PI).to_ne_bytes());
    // SAFETY: TUNSETIFF reads and writes a struct ifreq, which `ifr` is
    // laid out as and large enough for.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, ifr.as_mut_ptr()) } != 0 {
        let e = errno();
        if e.raw_os_error() == Some(libc::EBUSY) {
            bail!(
                "the device {name} is already in use in this network namespace: another \
                 peregrine emu at the same nesting level runs here. Start this one inside \
                 that one's command (nesting), or in a namespace of its own (unshare -n)"
            );
        }
        bail!("creating TUN device {name}: {e}");
    }
    Ok(fd)
}

/// Run `ip ARGS…` (iproute2), turning a failure into an error that
/// quotes the command and what it printed.
pub fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        anyhow!("cannot run `ip` ({e}): peregrine emu needs iproute2 (apt-get install iproute2)")
    })?;
    if !out.status.success() {
        bail!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Configure the outer device of `level` (in the current namespace):
/// address, MTU 1500, up, and the routes to the deeper levels.
pub fn configure_outer(level: Level) -> anyhow::Result<()> {
    let dev = level.device();
    let host = format!("{}/30", level.host());
    ip(&["addr", "add", &host, "dev", &dev])?;
    ip(&["link", "set", &dev, "mtu", "1500", "up"])?;
    let via = level.command().to_string();
    for (net, len) in level.deeper_prefixes() {
        let p = format!("{net}/{len}");
        ip(&["route", "replace", &p, "via", &via, "dev", &dev])?;
    }
    Ok(())
}

/// Configure the new namespace: loopback up, the command's address on
/// the inner device, the default route through the outer side,
/// forwarding on (so deeper levels reach the levels above).
pub fn configure_inner(level: Level) -> anyhow::Result<()> {
    let dev = level.device();
    ip(&["link", "set", "lo", "up"])?;
    let cmd = format!("{}/30", level.command());
    ip(&["addr", "add", &cmd, "dev", &dev])?;
    ip(&["link", "set", &dev, "mtu", "1500", "up"])?;
    let host = level.host().to_string();
    ip(&["route", "add", "default", "via", &host, "dev", &dev])?;
    // /proc/sys/net shows the writer's namespace: this is the new one's.
    File::options()
        .write(true)
        .open("/proc/sys/net/ipv4/ip_forward")
        .and_then(|mut f| f.write_all(b"1"))
        .context("enabling forwarding in the new namespace")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_have_their_own_slash_30_and_route_the_deeper_ones() {
        let l1 = Level::below(None).expect("level 1");
        assert_eq!(l1.level, 1);
        assert_eq!(l1.host(), Ipv4Addr::new(10, 250, 0, 5));
        assert_eq!(l1.command(), Ipv4Addr::new(10, 250, 0, 6));
        assert_eq!(
            l1.deeper_prefixes(),
            vec![
                (Ipv4Addr::new(10, 250, 0, 8), 29),
                (Ipv4Addr::new(10, 250, 0, 16), 28),
                (Ipv4Addr::new(10, 250, 0, 32), 27),
                (Ipv4Addr::new(10, 250, 0, 64), 26),
                (Ipv4Addr::new(10, 250, 0, 128), 25),
            ]
        );
        let l2 = Level::below(Some("1")).expect("level 2");
        assert_eq!(l2.host(), Ipv4Addr::new(10, 250, 0, 9));
        let last = Level::below(Some("62")).expect("level 63");
        assert_eq!(last.command(), Ipv4Addr::new(10, 250, 0, 254));
        assert!(last.deeper_prefixes().is_empty());
        assert!(Level::below(Some("63")).is_err());
        assert!(Level::below(Some("x")).is_err());
    }
}
