//! # Per-datagram receive times
//!
//! The packet-pair start-up measures the gap between two answers, so each
//! datagram needs its own arrival time — not the time the driver happened
//! to read a whole batch. On Linux the socket asks the kernel for a
//! receive timestamp of every datagram (`SO_TIMESTAMPNS`, one
//! `SCM_TIMESTAMPNS` control message per `recvmmsg` message), read here by
//! a `recvmmsg` of our own: quinn-udp's control-message buffer (88 bytes)
//! has no room for the timestamp beside the ECN, packet-info and GRO
//! messages, and the kernel would truncate those instead.
//!
//! A GRO buffer holds several datagrams and carries one timestamp (the
//! first segment's). Its datagrams are spread in arrival order over the
//! buffer's estimated serialization time at [`GRO_SPREAD_BYTES_PER_SEC`]
//! — never one shared timestamp: the i-th datagram is timed at the
//! buffer's timestamp plus the bytes before it at that rate, capped at the
//! read time. Where the kernel gives no timestamp (other platforms, or an
//! old kernel) the buffer's time is the read time.
//!
//! Kernel timestamps are wall-clock (`CLOCK_REALTIME`); the driver maps
//! them onto its monotonic clock by their age at the read: the driver's
//! `now` minus (wall-clock now − timestamp), clamped to `[now − 1 s, now]`
//! so a wall-clock step cannot move a datagram far.

use std::time::Duration;

/// The rate at which the datagrams of one GRO buffer are spread
/// (bytes per second): a 10 Gbit/s interface, the fastest a coalesced
/// batch is likely to have crossed. Used only inside a GRO buffer.
pub(crate) const GRO_SPREAD_BYTES_PER_SEC: u64 = 10_000_000_000 / 8;

/// The oldest a kernel timestamp may be taken to be at the read (a
/// wall-clock step, or a timestamp that makes no sense, is clamped).
pub(crate) const MAX_AGE: Duration = Duration::from_secs(1);

/// The wall clock now, as time since the Unix epoch: what kernel receive
/// timestamps are compared with.
pub(crate) fn wall_clock() -> Duration {
    // The I/O layer may read clocks (the ban is for the sans-IO core);
    // kernel timestamps are wall-clock, so the age needs this one.
    #[allow(clippy::disallowed_types, clippy::disallowed_methods)]
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.unwrap_or(Duration::ZERO)
}

/// How long before the read (`wall_now`, since the Unix epoch) a datagram
/// with kernel timestamp `stamp` (likewise) arrived, at most [`MAX_AGE`];
/// zero without a timestamp or for a timestamp in the future.
pub(crate) fn age(stamp: Option<Duration>, wall_now: Duration) -> Duration {
    stamp
        .and_then(|t| wall_now.checked_sub(t))
        .unwrap_or(Duration::ZERO)
        .min(MAX_AGE)
}

/// Offset of the datagram starting `bytes_before` bytes into a GRO buffer
/// from the buffer's timestamp: the serialization time of the bytes ahead
/// of it at [`GRO_SPREAD_BYTES_PER_SEC`]. O(1).
pub(crate) fn gro_offset(bytes_before: usize) -> Duration {
    let ns = (bytes_before as u128 * 1_000_000_000) / u128::from(GRO_SPREAD_BYTES_PER_SEC);
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

#[cfg(target_os = "linux")]
pub(crate) mod linux {
    //! `SO_TIMESTAMPNS` and a `recvmmsg` that reads it.

    use quinn_udp::{EcnCodepoint, RecvMeta, BATCH_SIZE};
    use std::io::{self, IoSliceMut};
    use std::mem;
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
    use std::os::fd::RawFd;
    use std::time::Duration;

    /// Control-message room per message: timestamp (32), packet info
    /// (32), TOS/TCLASS (24), GRO (24), with margin.
    const CTRL_LEN: usize = 256;
    /// `UDP_GRO` (linux/udp.h), not exported by every libc version.
    const UDP_GRO: libc::c_int = 104;

    #[repr(C, align(8))]
    #[derive(Clone, Copy)]
    struct Ctrl([u8; CTRL_LEN]);

    /// The control-message and address buffers of one batch, kept across
    /// calls: a busy driver reads the socket every turn, mostly finding
    /// nothing, so nothing is zeroed or allocated per call.
    pub(crate) struct Scratch {
        names: Vec<libc::sockaddr_storage>,
        ctrls: Vec<Ctrl>,
    }

    impl Scratch {
        /// Buffers for a batch of [`BATCH_SIZE`].
        pub(crate) fn new() -> Scratch {
            Scratch {
                // SAFETY: sockaddr_storage is plain data; zero is valid.
                names: vec![unsafe { mem::zeroed() }; BATCH_SIZE],
                ctrls: vec![Ctrl([0; CTRL_LEN]); BATCH_SIZE],
            }
        }
    }

    /// Ask the kernel for a receive timestamp of every datagram. Whether
    /// it worked (a failure leaves the socket as it was: times fall back
    /// to the read time).
    pub(crate) fn enable_timestamps(fd: RawFd) -> bool {
        let on: libc::c_int = 1;
        // SAFETY: a valid socket descriptor and an int option value of the
        // right size.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        rc == 0
    }

    /// One `recvmmsg` into `bufs` (at most [`BATCH_SIZE`]): fills `meta`
    /// (address, length, GRO stride, ECN) and `stamps` (the kernel's
    /// receive timestamp, since the Unix epoch) of each message; how many. `WouldBlock` when
    /// nothing is queued. O(messages + control messages); no allocation.
    pub(crate) fn recv(
        fd: RawFd,
        scratch: &mut Scratch,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
        stamps: &mut [Option<Duration>],
    ) -> io::Result<usize> {
        let count = bufs.len().min(meta.len()).min(stamps.len()).min(BATCH_SIZE);
        // SAFETY: mmsghdr is plain data; all-zero is a valid (empty) value.
        let mut hdrs: [libc::mmsghdr; BATCH_SIZE] = unsafe { mem::zeroed() };
        for (((hdr, name), ctrl), buf) in hdrs
            .iter_mut()
            .zip(scratch.names.iter_mut())
            .zip(scratch.ctrls.iter_mut())
            .zip(bufs.iter_mut())
            .take(count)
        {
            let h = &mut hdr.msg_hdr;
            h.msg_name = (name as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            // IoSliceMut is guaranteed ABI-compatible with iovec on Unix.
            h.msg_iov = (buf as *mut IoSliceMut<'_>).cast();
            h.msg_iovlen = 1;
            h.msg_control = ctrl.0.as_mut_ptr().cast();
            h.msg_controllen = CTRL_LEN as _;
        }
        let n = loop {
            // SAFETY: `count` headers, each pointing at live buffers above.
            let r = unsafe {
                libc::recvmmsg(
                    fd,
                    hdrs.as_mut_ptr(),
                    count as libc::c_uint,
                    0,
                    std::ptr::null_mut(),
                )
            };
            if r >= 0 {
                break r as usize;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        for (((hdr, name), m), st) in hdrs
            .iter()
            .zip(scratch.names.iter())
            .zip(meta.iter_mut())
            .zip(stamps.iter_mut())
            .take(n)
        {
            let len = hdr.msg_len as usize;
            let (stride, ecn, stamp) = decode_cmsgs(&hdr.msg_hdr, len);
            let Some(addr) = sockaddr(name) else {
                // An unknown address family: an empty buffer, dropped.
                m.len = 0;
                continue;
            };
            m.addr = addr;
            m.len = len;
            m.stride = stride;
            m.ecn = ecn;
            m.dst_ip = None;
            *st = stamp;
        }
        Ok(n)
    }

    fn decode_cmsgs(
        h: &libc::msghdr,
        len: usize,
    ) -> (usize, Option<EcnCodepoint>, Option<Duration>) {
        let mut stride = len;
        let mut ecn_bits = 0u8;
        let mut stamp = None;
        // SAFETY: `h` is a header the kernel filled; CMSG_* walk its
        // control buffer within `msg_controllen`.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                let data = libc::CMSG_DATA(c);
                match ((*c).cmsg_level, (*c).cmsg_type) {
                    (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) => {
                        let ts: libc::timespec = std::ptr::read_unaligned(data.cast());
                        if ts.tv_sec >= 0 && (0..1_000_000_000).contains(&ts.tv_nsec) {
                            stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
                        }
                    }
                    (libc::IPPROTO_IP, libc::IP_TOS) | (libc::IPPROTO_IP, libc::IP_RECVTOS) => {
                        ecn_bits = std::ptr::read_unaligned(data.cast::<u8>());
                    }
                    (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => {
                        ecn_bits = std::ptr::read_unaligned(data.cast::<libc::c_int>()) as u8;
                    }
                    (libc::SOL_UDP, UDP_GRO) => {
                        let s = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                        if s > 0 {
                            stride = s as usize;
                        }
                    }
                    _ => {}
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        (stride, EcnCodepoint::from_bits(ecn_bits & 0b11), stamp)
    }

    fn sockaddr(name: &libc::sockaddr_storage) -> Option<SocketAddr> {
        match libc::c_int::from(name.ss_family) {
            libc::AF_INET => {
                // SAFETY: the family says this storage holds a sockaddr_in.
                let a: &libc::sockaddr_in = unsafe { &*(name as *const _ as *const _) };
                Some(SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes()),
                    u16::from_be(a.sin_port),
                )))
            }
            libc::AF_INET6 => {
                // SAFETY: the family says this storage holds a sockaddr_in6.
                let a: &libc::sockaddr_in6 = unsafe { &*(name as *const _ as *const _) };
                Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(a.sin6_addr.s6_addr),
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_clamped_and_gro_datagrams_are_spread() {
        let now = Duration::from_secs(1_000);
        assert_eq!(age(None, now), Duration::ZERO);
        assert_eq!(
            age(Some(now - Duration::from_micros(30)), now),
            Duration::from_micros(30)
        );
        assert_eq!(age(Some(now + Duration::from_secs(1)), now), Duration::ZERO);
        assert_eq!(age(Some(now - Duration::from_secs(60)), now), MAX_AGE);
        // 1,452 bytes at 10 Gbit/s: 1,161.6 ns.
        assert_eq!(gro_offset(0), Duration::ZERO);
        assert_eq!(gro_offset(1452), Duration::from_nanos(1161));
        assert!(gro_offset(2 * 1452) > gro_offset(1452));
    }
}
