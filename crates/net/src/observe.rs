//! Looking inside a runtime endpoint: the core's trace stream (qlog) and
//! a packet capture of the socket layer (pcapng).
//!
//! * [`EndpointBuilder::trace`] hands the sans-IO core a
//!   [`TraceFactory`] (`peregrine_trace::qlog::QlogDir` writes one
//!   `.sqlog` per connection endpoint). Event times are the driver's
//!   clock: nanoseconds since the endpoint was bound (the qlog header's
//!   `reference_time` 0 is the bind).
//! * [`EndpointBuilder::pcap`] writes every datagram the driver hands to
//!   the socket and every datagram it reads from it into a pcapng file,
//!   wrapped in IPv4/UDP or IPv6/UDP headers with the real local and peer
//!   addresses and ports (one `LINKTYPE_RAW` interface), stamped with the
//!   wall clock (ns since the Unix epoch). Payloads are captured as they
//!   cross the socket: sealed packets stay ciphertext (see
//!   `PEREGRINE_KEYLOG` in docs/observability.md). No libpcap.
//!
//! Both are off by default and cost one `Option` check per datagram
//! when off.

use crate::EndpointBuilder;
use peregrine_proto::trace::TraceFactory;
use peregrine_trace::pcapng::{Ipv4Udp, Ipv6Udp, LinkType, PcapngWriter};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the capture is flushed to its file at the latest, so that a
/// process that exits abruptly loses little of it.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// A trace factory waiting for `bind` (shared: the builder is `Clone`,
/// the factory is not; the first `bind` takes it).
type FactorySlot = Arc<Mutex<Option<Box<dyn TraceFactory>>>>;

/// What the builder was asked to observe.
#[derive(Clone, Default)]
pub(crate) struct Observe {
    trace: Option<FactorySlot>,
    pcap: Option<PathBuf>,
    /// The key log file (`EndpointBuilder::keylog`; crate::keylog).
    pub(crate) keylog: Option<PathBuf>,
}

impl std::fmt::Debug for Observe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observe")
            .field("trace", &self.trace.is_some())
            .field("pcap", &self.pcap)
            .field("keylog", &self.keylog)
            .finish()
    }
}

impl Observe {
    /// The trace factory, if one was given and not yet taken by a bind.
    pub(crate) fn take_trace(&self) -> Option<Box<dyn TraceFactory>> {
        self.trace
            .as_ref()
            .and_then(|s| s.lock().unwrap_or_else(|p| p.into_inner()).take())
    }

    /// Opens the key log: the builder's file, else `PEREGRINE_KEYLOG`'s,
    /// if either names one.
    pub(crate) fn open_keylog(&self) -> io::Result<Option<crate::keylog::KeyLog>> {
        crate::keylog::resolve(self.keylog.as_deref())
            .map(|p| crate::keylog::KeyLog::open(&p))
            .transpose()
    }

    /// Opens the capture file, if one was asked for.
    pub(crate) fn open_capture(&self, local: SocketAddr) -> io::Result<Option<Capture>> {
        self.pcap
            .as_deref()
            .map(|p| Capture::create(p, local))
            .transpose()
    }
}

impl EndpointBuilder {
    /// Trace every connection of the endpoint with `factory` (asked for a
    /// sink per connection; `peregrine_trace::qlog::QlogDir` writes
    /// qlog). Times are nanoseconds since the endpoint was bound. A
    /// clone of the builder shares the factory: the first `bind` takes it.
    pub fn trace(mut self, factory: impl TraceFactory + 'static) -> EndpointBuilder {
        self.observe.trace = Some(Arc::new(Mutex::new(Some(Box::new(factory)))));
        self
    }

    /// Capture every datagram the endpoint sends and receives into the
    /// pcapng file `path` (created, or truncated, at `bind`; an error
    /// there is `bind`'s). See the module docs for the format.
    pub fn pcap(mut self, path: impl Into<PathBuf>) -> EndpointBuilder {
        self.observe.pcap = Some(path.into());
        self
    }
}

/// The packet capture of one endpoint's socket layer.
pub(crate) struct Capture {
    out: PcapngWriter<BufWriter<File>>,
    iface: u32,
    v4: Ipv4Udp,
    v6: Ipv6Udp,
    /// The socket's address (its IP may be a wildcard).
    local: SocketAddr,
    /// With a wildcard local IP: the source IP the kernel's route picks
    /// for each peer IP (looked up once per peer).
    sources: BTreeMap<IpAddr, IpAddr>,
    /// When the file was last flushed, wall-clock ns.
    last_flush_ns: u64,
    /// A write failed: the capture stops (the connection goes on).
    failed: bool,
}

impl Capture {
    fn create(path: &Path, local: SocketAddr) -> io::Result<Capture> {
        let file = File::create(path)
            .map_err(|e| io::Error::new(e.kind(), format!("pcap file {}: {e}", path.display())))?;
        let mut out = PcapngWriter::new(BufWriter::new(file), "peregrine runtime")?;
        let iface = out.add_interface(&format!("udp {local}"), LinkType::Raw)?;
        Ok(Capture {
            out,
            iface,
            v4: Ipv4Udp::default(),
            v6: Ipv6Udp::default(),
            local,
            sources: BTreeMap::new(),
            last_flush_ns: wall_clock_ns(),
            failed: false,
        })
    }

    /// The socket changed (`rebind`).
    pub(crate) fn set_local(&mut self, local: SocketAddr) {
        self.local = local;
    }

    /// A datagram handed to the socket for `to`. O(datagram).
    pub(crate) fn sent(&mut self, to: SocketAddr, datagram: &[u8]) {
        let peer = unmap(to);
        let local = self.local_for(peer);
        self.record(local, peer, datagram);
    }

    /// A datagram read from the socket, from `from`. O(datagram).
    pub(crate) fn received(&mut self, from: SocketAddr, datagram: &[u8]) {
        let peer = unmap(from);
        let local = self.local_for(peer);
        self.record(peer, local, datagram);
    }

    /// Writes out what is buffered.
    pub(crate) fn flush(&mut self) {
        if !self.failed && self.out.get_mut().flush().is_err() {
            self.failed = true;
        }
    }

    /// The local address as seen by `peer`: the socket's, with a wildcard
    /// IP replaced by the route's source IP, in the peer's family.
    fn local_for(&mut self, peer: SocketAddr) -> SocketAddr {
        let ip = unmap(self.local).ip();
        let ip = if ip.is_unspecified() || ip.is_ipv4() != peer.is_ipv4() {
            *self
                .sources
                .entry(peer.ip())
                .or_insert_with(|| route_source(peer))
        } else {
            ip
        };
        SocketAddr::new(ip, self.local.port())
    }

    fn record(&mut self, src: SocketAddr, dst: SocketAddr, datagram: &[u8]) {
        if self.failed {
            return;
        }
        let time_ns = wall_clock_ns();
        let packet = match (src, dst) {
            (SocketAddr::V4(s), SocketAddr::V4(d)) => self.v4.wrap(s, d, datagram),
            (s, d) => self.v6.wrap(v6(s), v6(d), datagram),
        };
        let mut r = self.out.write_packet(self.iface, time_ns, packet);
        let since_flush_ns = time_ns.saturating_sub(self.last_flush_ns);
        if r.is_ok() && since_flush_ns >= FLUSH_EVERY.as_nanos() as u64 {
            self.last_flush_ns = time_ns;
            r = self.out.get_mut().flush();
        }
        if let Err(e) = r {
            tracing::warn!(error = %e, "packet capture failed: capturing stops");
            self.failed = true;
        }
    }
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("local", &self.local)
            .field("failed", &self.failed)
            .finish()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Now, wall clock, in ns since the Unix epoch (0 before it). The one
/// place the runtime reads the wall clock: a capture's timestamps must
/// line up with other captures and logs of the host, which the driver's
/// monotonic clock (`Shared::now`) does not.
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
fn wall_clock_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// An IPv4-mapped IPv6 address (a dual-stack socket's view of an IPv4
/// peer) as the IPv4 address it is.
fn unmap(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v) => match v.ip().to_ipv4_mapped() {
            Some(ip) => SocketAddr::V4(SocketAddrV4::new(ip, v.port())),
            None => a,
        },
        a => a,
    }
}

fn v6(a: SocketAddr) -> SocketAddrV6 {
    match a {
        SocketAddr::V6(v) => v,
        SocketAddr::V4(v) => SocketAddrV6::new(v.ip().to_ipv6_mapped(), v.port(), 0, 0),
    }
}

/// The source IP the kernel would use towards `peer` (a connected UDP
/// socket sends nothing); the wildcard if there is no route. A blocking
/// std socket is right here: `connect` on UDP only consults the routing
/// table, and this runs once per peer with a capture on.
#[allow(clippy::disallowed_types)]
fn route_source(peer: SocketAddr) -> IpAddr {
    let any: SocketAddr = if peer.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    std::net::UdpSocket::bind(any)
        .and_then(|s| {
            s.connect(peer)?;
            s.local_addr()
        })
        .map_or(any.ip(), |a| a.ip())
}
