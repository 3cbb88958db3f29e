//! # The runtime's side of path MTU discovery
//!
//! The core (`peregrine_proto::pmtud`) searches between 1,200 bytes and
//! the connection's `max_packet_size`; the runtime supplies that bound
//! when the configuration leaves it to the runtime
//! ([`PmtuDiscovery::Auto`], the default): the MTU of the interface the
//! route to the peer leaves by, less the IP and UDP headers.
//!
//! * a client asks the kernel for the route's MTU: a UDP socket
//!   connected to the peer and `getsockopt(IP_MTU)` (`IPV6_MTU`), which
//!   is the device MTU of the route (or the kernel's cached path MTU);
//! * a server, which learns its peers only as they come, takes the
//!   largest MTU of its interfaces (`/sys/class/net/*/mtu`): the
//!   negotiation takes the smaller of both sides' maxima, so each
//!   connection ends up bounded by its client's route.
//!
//! The result is capped at the largest UDP payload one IP packet holds:
//! 65,507 bytes over IPv4, 65,527 over IPv6 (loopback's MTU is 65,536).
//! Where the kernel says nothing (another OS, no `/sys`), the bound is
//! SLTP's 1,452 bytes.
//!
//! The socket keeps Don't-Fragment with `IP_PMTUDISC_PROBE` (set by
//! `quinn-udp`): the kernel neither fragments nor refuses a probe larger
//! than its cached path MTU on its own account. A datagram larger than
//! the interface MTU fails with `EMSGSIZE`, which `quinn-udp` drops
//! silently (it expects it for MTU probes): the probe is lost, and the
//! core's probe timer counts it as such.

use peregrine_proto::{ConnectionConfig, PmtuDiscovery};
use std::net::SocketAddr;

/// The bound when the kernel tells nothing: SLTP's own choice.
pub const FALLBACK_MAX_DATAGRAM: u16 = 1452;
/// IPv4 header (no options) and UDP header, bytes.
const V4_HEADERS: u32 = 20 + 8;
/// IPv6 header and UDP header, bytes.
const V6_HEADERS: u32 = 40 + 8;
/// Largest UDP payload in one IPv4 packet.
const V4_MAX_PAYLOAD: u32 = 65_535 - V4_HEADERS;
/// Largest UDP payload in one IPv6 packet (the payload length covers the
/// UDP header, not the IPv6 header).
const V6_MAX_PAYLOAD: u32 = 65_535 - 8;

/// The largest datagram (UDP payload) an interface of `mtu` bytes
/// carries for `family_v6`, capped at one IP packet's payload.
pub fn max_datagram_for_mtu(mtu: u32, family_v6: bool) -> u16 {
    let (headers, cap) = if family_v6 {
        (V6_HEADERS, V6_MAX_PAYLOAD)
    } else {
        (V4_HEADERS, V4_MAX_PAYLOAD)
    };
    u16::try_from(mtu.saturating_sub(headers).min(cap)).unwrap_or(u16::MAX)
}

/// The largest datagram the route to `remote` carries: its MTU as the
/// kernel reports it (`IP_MTU` on a connected socket), less headers.
/// `None` where the kernel cannot say. One socket and two system calls.
pub fn max_datagram_to(remote: SocketAddr) -> Option<u16> {
    let mtu = route_mtu(remote)?;
    let v6 = remote.is_ipv6() && !is_v4_mapped(remote);
    Some(max_datagram_for_mtu(mtu, v6))
}

/// The largest datagram any local interface carries for `local`'s family
/// (the server's bound: its peers are not known yet). `None` without
/// `/sys/class/net`. O(interfaces).
pub fn max_datagram_local(local: SocketAddr) -> Option<u16> {
    let mtu = largest_interface_mtu()?;
    Some(max_datagram_for_mtu(mtu, local.is_ipv6()))
}

fn is_v4_mapped(a: SocketAddr) -> bool {
    match a {
        SocketAddr::V6(v6) => v6.ip().to_ipv4_mapped().is_some(),
        SocketAddr::V4(_) => false,
    }
}

/// Apply the runtime's bound to a configuration: `Auto` becomes `On`
/// with `bound` as `max_packet_size`; `On` keeps the smaller of its own
/// `max_packet_size` and `bound`; `Off` is left alone (fixed size).
pub fn resolve(config: &mut ConnectionConfig, bound: Option<u16>) {
    let bound = bound.unwrap_or(FALLBACK_MAX_DATAGRAM);
    match config.pmtu_discovery {
        PmtuDiscovery::Auto => {
            config.pmtu_discovery = PmtuDiscovery::On;
            config.max_packet_size = bound;
        }
        PmtuDiscovery::On => config.max_packet_size = config.max_packet_size.min(bound),
        PmtuDiscovery::Off => {}
    }
}

fn largest_interface_mtu() -> Option<u32> {
    let dir = std::fs::read_dir("/sys/class/net").ok()?;
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path().join("mtu")).ok())
        .filter_map(|s| s.trim().parse::<u32>().ok())
        .max()
}

#[cfg(target_os = "linux")]
fn route_mtu(remote: SocketAddr) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let bind: SocketAddr = if remote.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    // A throwaway socket, only for the route lookup: `connect` on UDP
    // sends nothing.
    #[allow(clippy::disallowed_types)]
    let s = std::net::UdpSocket::bind(bind).ok()?;
    s.connect(remote).ok()?;
    let (level, name) = if remote.is_ipv4() {
        (libc::IPPROTO_IP, libc::IP_MTU)
    } else {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    };
    let mut mtu: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `mtu` and `len` are valid for writes of a c_int and a
    // socklen_t, and the descriptor is open for the call's duration.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&mut mtu as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0 && mtu > 0).then_some(mtu as u32)
}

#[cfg(not(target_os = "linux"))]
fn route_mtu(_remote: SocketAddr) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_caps() {
        assert_eq!(max_datagram_for_mtu(1500, false), 1472);
        assert_eq!(max_datagram_for_mtu(1500, true), 1452);
        assert_eq!(max_datagram_for_mtu(1280, false), 1252);
        assert_eq!(max_datagram_for_mtu(65_536, false), 65_507);
        assert_eq!(max_datagram_for_mtu(65_536, true), 65_488);
        assert_eq!(max_datagram_for_mtu(200_000, true), 65_527);
    }

    #[test]
    fn resolve_keeps_fixed_and_caps_explicit() {
        let mut c = ConnectionConfig {
            pmtu_discovery: PmtuDiscovery::Off,
            ..ConnectionConfig::default()
        };
        resolve(&mut c, Some(9000));
        assert_eq!(
            (c.pmtu_discovery, c.max_packet_size),
            (PmtuDiscovery::Off, 1452)
        );
        let mut c = ConnectionConfig::default();
        resolve(&mut c, Some(9000));
        assert_eq!(
            (c.pmtu_discovery, c.max_packet_size),
            (PmtuDiscovery::On, 9000)
        );
        let mut c = ConnectionConfig {
            pmtu_discovery: PmtuDiscovery::On,
            max_packet_size: 4000,
            ..ConnectionConfig::default()
        };
        resolve(&mut c, Some(9000));
        assert_eq!(c.max_packet_size, 4000);
        let mut c = ConnectionConfig::default();
        resolve(&mut c, None);
        assert_eq!(c.max_packet_size, FALLBACK_MAX_DATAGRAM);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn loopback_route_is_large() {
        let got = max_datagram_to("127.0.0.1:9".parse().expect("literal"));
        // Loopback's MTU is 65,536 on Linux unless someone changed it.
        assert!(got.is_some_and(|m| m > 1500), "{got:?}");
    }
}
