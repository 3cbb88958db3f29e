//! # ICMP errors from the socket's error queue (Linux)
//!
//! Without `IP_RECVERR` an unconnected UDP socket never hears of the ICMP
//! port unreachable its datagram drew: a client against a port with
//! nothing listening waited for the handshake timeout (issue 21). With
//! `IP_RECVERR` / `IPV6_RECVERR` on, the kernel queues each ICMP error on
//! the socket's error queue (with the destination of the datagram that
//! drew it), reports the error once to the next `recvmsg`/`sendmsg`
//! (`ECONNREFUSED`, …) and marks the socket `POLLERR`. quinn-udp never
//! reads that queue, so [`drain`] does, with `recvmsg(MSG_ERRQUEUE)`, and
//! hands each destination-unreachable to the core
//! (`peregrine_proto::Endpoint::handle_unreachable`). "Fragmentation
//! needed" / "packet too big" (`EMSGSIZE`) and time-exceeded errors are
//! read and dropped here: they are not failures of the peer.
//!
//! Elsewhere (no error queue) both functions do nothing.

use peregrine_proto::Unreachable;
use std::net::SocketAddr;

/// Most error-queue entries read in one [`drain`] (the queue is bounded by
/// the receive buffer; what is left is read at the next wake-up).
const MAX_PER_DRAIN: usize = 64;

/// Ask the kernel to queue ICMP errors on `socket` (both families on an
/// IPv6 socket, which may carry IPv4-mapped traffic). Best effort: a
/// kernel without it only loses the early failure report.
#[cfg(target_os = "linux")]
pub(crate) fn enable(socket: &impl std::os::fd::AsRawFd, ipv6: bool) {
    let fd = socket.as_raw_fd();
    let on: libc::c_int = 1;
    let set = |level, name| {
        // SAFETY: `fd` is a live socket owned by the caller; the option
        // value is a c_int on the stack, its size given exactly.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                std::ptr::addr_of!(on).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    if ipv6 {
        set(libc::IPPROTO_IPV6, libc::IPV6_RECVERR);
    }
    set(libc::IPPROTO_IP, libc::IP_RECVERR);
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn enable<T>(_socket: &T, _ipv6: bool) {}

/// What an extended error says about the peer, if it is a destination
/// unreachable worth reporting.
#[cfg(target_os = "linux")]
fn classify(errno: i32) -> Option<Unreachable> {
    match errno {
        libc::ECONNREFUSED => Some(Unreachable::Port),
        libc::EHOSTUNREACH
        | libc::ENETUNREACH
        | libc::EHOSTDOWN
        | libc::ENONET
        | libc::EACCES
        | libc::EPROTO
        | libc::ENOPROTOOPT => Some(Unreachable::Host),
        // EMSGSIZE (path MTU), time exceeded and the rest: not the peer's failure.
        _ => None,
    }
}

/// Read the socket's error queue without waiting, handing each
/// destination unreachable to `f(destination, what)`; how many entries
/// were read. O(entries), at most [`MAX_PER_DRAIN`] system calls.
#[cfg(target_os = "linux")]
pub(crate) fn drain(
    socket: &impl std::os::fd::AsRawFd,
    mut f: impl FnMut(SocketAddr, Unreachable),
) -> usize {
    let fd = socket.as_raw_fd();
    let mut read = 0;
    for _ in 0..MAX_PER_DRAIN {
        // SAFETY: zeroed sockaddr_storage and msghdr are valid values.
        let mut name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        // Room for one `sock_extended_err` with its offender address.
        let mut control = [0u64; 64];
        let mut data = [0u8; 64];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = std::ptr::addr_of_mut!(name).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: every pointer in `msg` points at a live local buffer of
        // the length given; MSG_ERRQUEUE never blocks.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if n < 0 {
            break;
        }
        read += 1;
        let Some(dest) = sockaddr_to_std(&name, msg.msg_namelen) else {
            continue;
        };
        // SAFETY: the kernel filled `msg_control` with `msg_controllen`
        // bytes of well-formed cmsgs; CMSG_* walk them within that length.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                let c = &*cmsg;
                let is_err = (c.cmsg_level == libc::SOL_IP && c.cmsg_type == libc::IP_RECVERR)
                    || (c.cmsg_level == libc::SOL_IPV6 && c.cmsg_type == libc::IPV6_RECVERR);
                if is_err {
                    let ee: libc::sock_extended_err =
                        std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                    let icmp = ee.ee_origin == libc::SO_EE_ORIGIN_ICMP
                        || ee.ee_origin == libc::SO_EE_ORIGIN_ICMP6;
                    if icmp {
                        if let Some(what) = classify(ee.ee_errno as i32) {
                            f(dest, what);
                        }
                    }
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
    }
    read
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn drain<T>(_socket: &T, _f: impl FnMut(SocketAddr, Unreachable)) -> usize {
    0
}

/// A kernel socket address as a `SocketAddr` (IPv4-mapped IPv6 kept as is:
/// the core compares it with the address it sent to).
#[cfg(target_os = "linux")]
fn sockaddr_to_std(ss: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    let len = len as usize;
    match i32::from(ss.ss_family) {
        libc::AF_INET if len >= std::mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: libc::sockaddr_in =
                unsafe { std::ptr::read_unaligned(std::ptr::from_ref(ss).cast()) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 if len >= std::mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: libc::sockaddr_in6 =
                unsafe { std::ptr::read_unaligned(std::ptr::from_ref(ss).cast()) };
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
