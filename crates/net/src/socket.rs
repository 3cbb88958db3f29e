//! # The socket layer: batched UDP with GSO/GRO/ECN where the kernel has them
//!
//! One tokio `UdpSocket` driven through `quinn-udp`'s `UdpSocketState`,
//! which uses `recvmmsg`-style batches, UDP_GRO on receive and UDP_SEGMENT
//! (GSO) on send on Linux, reads and writes the ECN bits, and falls back
//! by itself (one datagram per call, no offload) where the platform or the
//! kernel lacks them — [`UdpIo::capabilities`] says what was found.
//!
//! Sending: the driver collects the core's datagrams into one contiguous
//! [`TxBatch`]; runs of datagrams to the same destination with the same
//! ECN and the same size (the last may be shorter) go out as one GSO
//! "super-datagram" of up to `max_gso_segments` segments (64 on Linux:
//! UDP_MAX_SEGMENTS) and as many bytes as one IP packet holds (65,507
//! over IPv4, 65,527 over IPv6) — 45 datagrams of 1,452 bytes per call. Receiving: every
//! buffer of a batch may hold several datagrams of one sender cut at
//! `stride` (GRO); [`UdpIo::recv_batch`] splits them again.
//!
//! Every datagram is handed out with its own arrival time (as an age
//! before the hand-out): on Linux the kernel's receive timestamp
//! (`SO_TIMESTAMPNS`, read by the `recvmmsg` of [`crate::rx_time`]),
//! spread in arrival order over a GRO buffer; elsewhere the read time,
//! likewise spread. No two datagrams of a buffer share a time.

use crate::rx_time;
use peregrine_proto::{EcnCodepoint, SansIo, Time};
use quinn_udp::{RecvMeta, Transmit, UdpSocketState, BATCH_SIZE};
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Bytes of one receive buffer: room for a GRO batch of full-size datagrams.
const RX_BUFFER_BYTES: usize = 64 * 1024;
/// Largest GSO super-datagram over IPv4: the IPv4 total length (65,535)
/// minus the IPv4 (20) and UDP (8) headers — 45 datagrams of 1,452 bytes.
const MAX_GSO_BYTES_V4: usize = 65_535 - 20 - 8;
/// The same over IPv6: the payload length (65,535) covers the UDP header
/// but not the IPv6 header.
const MAX_GSO_BYTES_V6: usize = 65_535 - 8;
/// Kernel socket buffer sizes asked for (the kernel may grant less): deep
/// enough that a burst at loopback speed is not dropped before the driver runs.
const SOCKET_BUFFER_BYTES: usize = 8 << 20;

/// What the socket layer found the kernel supports.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SocketCapabilities {
    /// Datagrams per GSO send (1: no GSO).
    pub max_gso_segments: usize,
    /// Datagrams per GRO receive buffer (1: no GRO).
    pub gro_segments: usize,
    /// Buffers per batched receive call (1: no `recvmmsg`).
    pub recv_batch: usize,
}

/// A UDP socket with the batched, offloaded send and receive paths.
#[derive(Debug)]
pub(crate) struct UdpIo {
    socket: UdpSocket,
    state: UdpSocketState,
    /// The kernel gives each datagram a receive timestamp (Linux
    /// `SO_TIMESTAMPNS`), read by our own `recvmmsg`.
    kernel_timestamps: bool,
}

/// A UDP socket bound to `addr`. An IPv6 socket gets `IPV6_V6ONLY = 0`
/// before it is bound, so `[::]:PORT` takes IPv4 peers too (as v4-mapped
/// addresses) whatever the host's default (Linux `net.ipv6.bindv6only`);
/// `perf -s` relies on it. Best effort: where the platform has no
/// dual-stack sockets the option is refused and the socket stays v6-only.
/// Blocking mode (the caller switches it). O(1).
// The one place this crate opens a socket: the runtime is the I/O layer
// the sans-IO core is kept free of.
#[allow(clippy::disallowed_types)]
pub(crate) fn bind_dual_stack(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        let _ = socket.set_only_v6(false);
    }
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

impl UdpIo {
    /// Bind `addr` (IPv4 or IPv6; an IPv6 socket is dual-stack, see
    /// [`bind_dual_stack`]) and configure it for batched I/O. Needs a
    /// tokio runtime.
    pub(crate) fn bind(addr: SocketAddr) -> io::Result<UdpIo> {
        let std_socket = bind_dual_stack(addr)?;
        let state = UdpSocketState::new((&std_socket).into())?;
        // Best effort: a smaller buffer only means more drops under bursts.
        let _ = state.set_recv_buffer_size((&std_socket).into(), SOCKET_BUFFER_BYTES);
        let _ = state.set_send_buffer_size((&std_socket).into(), SOCKET_BUFFER_BYTES);
        std_socket.set_nonblocking(true)?;
        // ICMP errors (port unreachable, …) onto the error queue (icmp.rs).
        crate::icmp::enable(&std_socket, addr.is_ipv6());
        #[cfg(target_os = "linux")]
        let kernel_timestamps = {
            use std::os::fd::AsRawFd;
            rx_time::linux::enable_timestamps(std_socket.as_raw_fd())
        };
        #[cfg(not(target_os = "linux"))]
        let kernel_timestamps = false;
        let socket = UdpSocket::from_std(std_socket)?;
        Ok(UdpIo {
            socket,
            state,
            kernel_timestamps,
        })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// What offloads are in use.
    pub(crate) fn capabilities(&self) -> SocketCapabilities {
        SocketCapabilities {
            max_gso_segments: self.state.max_gso_segments(),
            gro_segments: self.state.gro_segments(),
            recv_batch: BATCH_SIZE,
        }
    }

    /// Wait until the socket may have datagrams.
    pub(crate) async fn readable(&self) -> io::Result<()> {
        self.socket.readable().await
    }

    /// Wait until the socket reports an error (`POLLERR`: an ICMP error
    /// on its error queue, icmp.rs).
    pub(crate) async fn error_ready(&self) -> io::Result<()> {
        self.socket.ready(Interest::ERROR).await.map(drop)
    }

    /// Read the error queue without waiting, handing each destination
    /// unreachable to `f(destination, what)`, and clear the cached error
    /// readiness (so [`error_ready`](Self::error_ready) waits for a new
    /// one). O(entries read).
    pub(crate) fn drain_errors(
        &self,
        mut f: impl FnMut(SocketAddr, peregrine_proto::Unreachable),
    ) -> usize {
        // Read first, whatever tokio last saw (a receive may report the
        // error before the reactor has polled the POLLERR), then forget
        // the cached readiness (a no-op if none is cached).
        let n = crate::icmp::drain(&self.socket, &mut f);
        let _ = self.socket.try_io(Interest::ERROR, || -> io::Result<()> {
            Err(io::ErrorKind::WouldBlock.into())
        });
        n
    }

    /// Read one batch without waiting, handing every datagram (GRO
    /// batches split) to `f(from, ecn, bytes)`: [`recv`](Self::recv)
    /// then [`RxBuffers::drain`]. `Ok(0)` or `WouldBlock` when nothing is
    /// queued.
    #[cfg(test)]
    pub(crate) fn recv_batch(
        &self,
        bufs: &mut RxBuffers,
        f: impl FnMut(SocketAddr, Option<EcnCodepoint>, Duration, &mut [u8]),
    ) -> io::Result<usize> {
        self.recv(bufs)?;
        Ok(bufs.drain(f))
    }

    /// Read one batch into `bufs` without waiting (one `recvmmsg`);
    /// how many buffers were filled. `Ok(0)` or `WouldBlock` when nothing
    /// is queued. The datagrams are handed out by [`RxBuffers::drain`],
    /// so the caller may take its locks after the system call.
    ///
    /// The `recvmmsg` is tried whatever tokio last saw of the socket's
    /// readiness: a busy driver reads between its sends without going
    /// through the runtime's `epoll_wait` first (tokio only refreshes
    /// readiness when its reactor is polled). A `WouldBlock` clears the
    /// cached readiness, so the next [`readable`](Self::readable) really
    /// waits for a new datagram.
    pub(crate) fn recv(&self, bufs: &mut RxBuffers) -> io::Result<usize> {
        bufs.filled = 0;
        // On the stack: a busy driver calls this every turn, mostly to
        // find nothing, so no allocation per call.
        let mut chunks = bufs.data.chunks_mut(RX_BUFFER_BYTES);
        let mut slices: [IoSliceMut<'_>; BATCH_SIZE] =
            std::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or_default()));
        bufs.stamps.fill(None);
        let got = if self.kernel_timestamps {
            self.recv_timestamped(
                &mut bufs.scratch,
                &mut slices,
                &mut bufs.meta,
                &mut bufs.stamps,
            )
        } else {
            self.state
                .recv((&self.socket).into(), &mut slices, &mut bufs.meta)
        };
        match got {
            Ok(n) => {
                bufs.filled = n;
                Ok(n)
            }
            Err(e) => {
                if e.kind() == io::ErrorKind::WouldBlock {
                    // Forget the stale readiness (a no-op if tokio has
                    // none cached).
                    let _ = self
                        .socket
                        .try_io(Interest::READABLE, || -> io::Result<()> {
                            Err(io::ErrorKind::WouldBlock.into())
                        });
                }
                Err(e)
            }
        }
    }

    /// One `recvmmsg` that also reads the kernel's receive timestamps.
    #[cfg(target_os = "linux")]
    fn recv_timestamped(
        &self,
        scratch: &mut rx_time::linux::Scratch,
        slices: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
        stamps: &mut [Option<Duration>],
    ) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        rx_time::linux::recv(self.socket.as_raw_fd(), scratch, slices, meta, stamps)
    }

    #[cfg(not(target_os = "linux"))]
    fn recv_timestamped(
        &self,
        _scratch: &mut (),
        slices: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
        _stamps: &mut [Option<Duration>],
    ) -> io::Result<usize> {
        self.state.recv((&self.socket).into(), slices, meta)
    }

    /// Send the whole batch, waiting for the socket to drain when the
    /// kernel buffer is full. Errors other than would-block are dropped by
    /// quinn-udp (logged): UDP loss is the protocol's business.
    pub(crate) async fn send_batch(&self, batch: &TxBatch) -> io::Result<()> {
        let max_segments = self.state.max_gso_segments().max(1);
        let mut i = 0;
        while i < batch.items.len() {
            let first = batch.items[i];
            // Extend the run: same destination and ECN, equal sizes, the
            // last one possibly shorter (GSO's rule).
            // The whole super-datagram must fit one UDP length field, or
            // the kernel refuses it (and quinn-udp drops it silently).
            let max_bytes = match first.destination {
                SocketAddr::V6(a) if a.ip().to_ipv4_mapped().is_none() => MAX_GSO_BYTES_V6,
                _ => MAX_GSO_BYTES_V4,
            };
            let mut j = i + 1;
            let mut total = first.len;
            while j < batch.items.len() && j - i < max_segments {
                let it = batch.items[j];
                let prev = batch.items[j - 1];
                let same = it.destination == first.destination && it.ecn == first.ecn;
                if !same || it.len > first.len || prev.len != first.len {
                    break;
                }
                if total + it.len > max_bytes {
                    break;
                }
                total += it.len;
                j += 1;
            }
            let start = first.offset;
            let end = batch.items[j - 1].offset + batch.items[j - 1].len;
            let transmit = Transmit {
                destination: first.destination,
                ecn: first.ecn.map(ecn_to_udp),
                contents: &batch.bytes[start..end],
                segment_size: (j - i > 1).then_some(first.len),
                src_ip: None,
            };
            loop {
                self.socket.writable().await?;
                match self.socket.try_io(Interest::WRITABLE, || {
                    self.state.send((&self.socket).into(), &transmit)
                }) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => return Err(e),
                }
            }
            i = j;
        }
        Ok(())
    }
}

/// Receive buffers and their metadata, reused across calls.
pub(crate) struct RxBuffers {
    data: Vec<u8>,
    meta: Vec<RecvMeta>,
    /// The kernel's receive timestamp of each buffer (since the Unix
    /// epoch), where it gave one.
    stamps: Vec<Option<Duration>>,
    /// Control-message and address buffers of the timestamped `recvmmsg`.
    #[cfg(target_os = "linux")]
    scratch: rx_time::linux::Scratch,
    #[cfg(not(target_os = "linux"))]
    scratch: (),
    /// Buffers the last [`UdpIo::recv`] filled and not yet drained.
    filled: usize,
}

impl RxBuffers {
    /// Buffers for one batch.
    pub(crate) fn new() -> RxBuffers {
        RxBuffers {
            data: vec![0; RX_BUFFER_BYTES * BATCH_SIZE],
            meta: vec![RecvMeta::default(); BATCH_SIZE],
            stamps: vec![None; BATCH_SIZE],
            #[cfg(target_os = "linux")]
            scratch: rx_time::linux::Scratch::new(),
            #[cfg(not(target_os = "linux"))]
            scratch: (),
            filled: 0,
        }
    }

    /// Hand every datagram of the last [`UdpIo::recv`] (GRO batches split
    /// at their stride) to `f(from, ecn, age, bytes)`, mutable so that it
    /// can be opened in place; how many. `age` is how long before this
    /// call the datagram arrived: from its buffer's kernel timestamp (else
    /// the buffer's last datagram counts as arriving now), each datagram
    /// of a GRO buffer later than the one before it by the serialization
    /// time of that one ([`rx_time::gro_offset`]). O(datagrams), no copy.
    pub(crate) fn drain(
        &mut self,
        mut f: impl FnMut(SocketAddr, Option<EcnCodepoint>, Duration, &mut [u8]),
    ) -> usize {
        let mut datagrams = 0;
        let filled = std::mem::take(&mut self.filled);
        let wall_now = rx_time::wall_clock();
        for ((meta, stamp), chunk) in self
            .meta
            .iter()
            .zip(&self.stamps)
            .zip(self.data.chunks_mut(RX_BUFFER_BYTES))
            .take(filled)
        {
            let buf = &mut chunk[..meta.len];
            let ecn = meta.ecn.map(ecn_from_udp);
            let stride = meta.stride.max(1);
            // The offset of the buffer's last datagram from its first.
            let span = rx_time::gro_offset(buf.len().saturating_sub(1) / stride * stride);
            // At least the span: the buffer's last datagram arrived no
            // later than now, and each is later than the one before it.
            let first_age = rx_time::age(*stamp, wall_now).max(span);
            if buf.is_empty() {
                // An empty datagram is still a datagram: the core counts
                // it (a decode error) rather than the socket layer hiding it.
                f(meta.addr, ecn, first_age, buf);
                datagrams += 1;
                continue;
            }
            for (i, dg) in buf.chunks_mut(stride).enumerate() {
                let age = first_age.saturating_sub(rx_time::gro_offset(i * stride));
                f(meta.addr, ecn, age, dg);
                datagrams += 1;
            }
        }
        datagrams
    }
}

/// One datagram of a [`TxBatch`].
#[derive(Copy, Clone, Debug)]
struct TxItem {
    destination: SocketAddr,
    ecn: Option<EcnCodepoint>,
    offset: usize,
    len: usize,
}

/// Datagrams waiting to be sent, back to back in one buffer.
///
/// The core builds and seals each datagram right where it leaves from
/// ([`push_next`](Self::push_next): `SansIo::poll_transmit_at` at the end
/// of the last one), so a datagram is never copied into the batch (issue
/// 36: the second copy was 1.3 % of the sender's CPU). The buffer keeps
/// its length across batches — `used` is the batch's end — so the bytes
/// of the last batch are overwritten, not zeroed again.
#[derive(Debug, Default)]
pub(crate) struct TxBatch {
    /// The datagrams in `bytes[..used]`; what follows is stale.
    bytes: Vec<u8>,
    used: usize,
    items: Vec<TxItem>,
}

impl TxBatch {
    /// Append a copy of a datagram (tests).
    #[cfg(test)]
    pub(crate) fn push(&mut self, destination: SocketAddr, ecn: Option<EcnCodepoint>, dg: &[u8]) {
        self.bytes.truncate(self.used);
        self.bytes.extend_from_slice(dg);
        self.record(destination, ecn, dg.len());
    }

    /// Append the next datagram `core` has to send, built in place at the
    /// batch's end; its transmit and bytes, or `None` when it has none.
    /// O(1) beyond the core's own work: nothing is copied.
    pub(crate) fn push_next(
        &mut self,
        core: &mut impl SansIo,
        now: Time,
    ) -> Option<(peregrine_proto::Transmit, &[u8])> {
        let t = core.poll_transmit_at(now, &mut self.bytes, self.used)?;
        let start = self.used;
        self.record(t.destination, t.ecn, t.size);
        let dg = self.bytes.get(start..start + t.size)?;
        Some((t, dg))
    }

    fn record(&mut self, destination: SocketAddr, ecn: Option<EcnCodepoint>, len: usize) {
        self.items.push(TxItem {
            destination,
            ecn,
            offset: self.used,
            len,
        });
        self.used += len;
    }

    /// Datagrams held.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Bytes of the datagrams collected.
    pub(crate) fn bytes(&self) -> usize {
        self.used
    }

    /// Whether it holds none.
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Forget every datagram (keeping the allocation, and the bytes: the
    /// next batch overwrites them).
    pub(crate) fn clear(&mut self) {
        self.used = 0;
        self.items.clear();
    }
}

fn ecn_to_udp(e: EcnCodepoint) -> quinn_udp::EcnCodepoint {
    match e {
        EcnCodepoint::Ect0 => quinn_udp::EcnCodepoint::Ect0,
        EcnCodepoint::Ect1 => quinn_udp::EcnCodepoint::Ect1,
        EcnCodepoint::Ce => quinn_udp::EcnCodepoint::Ce,
    }
}

fn ecn_from_udp(e: quinn_udp::EcnCodepoint) -> EcnCodepoint {
    match e {
        quinn_udp::EcnCodepoint::Ect0 => EcnCodepoint::Ect0,
        quinn_udp::EcnCodepoint::Ect1 => EcnCodepoint::Ect1,
        quinn_udp::EcnCodepoint::Ce => EcnCodepoint::Ce,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn roundtrip(lens: &[usize]) -> Vec<Vec<u8>> {
        roundtrip_on("127.0.0.1:0".parse().unwrap(), lens)
            .await
            .unwrap()
    }

    /// `None` when `local` cannot be bound (no IPv6 on this machine).
    async fn roundtrip_on(local: SocketAddr, lens: &[usize]) -> Option<Vec<Vec<u8>>> {
        let a = UdpIo::bind(local).ok()?;
        let b = UdpIo::bind(local).ok()?;
        let to = b.local_addr().unwrap();
        let mut batch = TxBatch::default();
        for (i, &len) in lens.iter().enumerate() {
            batch.push(to, Some(EcnCodepoint::Ect0), &vec![i as u8; len]);
        }
        assert_eq!(batch.len(), lens.len());
        a.send_batch(&batch).await.unwrap();
        let mut got = Vec::new();
        let mut rx = RxBuffers::new();
        while got.len() < lens.len() {
            b.readable().await.unwrap();
            let _ = b.recv_batch(&mut rx, |_, _, _, dg| got.push(dg.to_vec()));
        }
        Some(got)
    }

    /// `[::]` is dual-stack by our own setting, not the host's sysctl:
    /// the option reads back 0 and an IPv4 datagram to the port arrives.
    #[test]
    #[allow(clippy::disallowed_types)]
    fn an_ipv6_wildcard_socket_takes_ipv4_whatever_the_sysctl() {
        let Ok(server) = bind_dual_stack("[::]:0".parse().unwrap()) else {
            return; // no IPv6 on this machine
        };
        assert_eq!(
            socket2::SockRef::from(&server).only_v6().ok(),
            Some(false),
            "IPV6_V6ONLY was not cleared"
        );
        let port = server.local_addr().unwrap().port();
        server
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let client = bind_dual_stack("127.0.0.1:0".parse().unwrap()).unwrap();
        client.send_to(b"v4", ("127.0.0.1", port)).unwrap();
        let mut buf = [0u8; 8];
        let (n, from) = server.recv_from(&mut buf).expect("IPv4 datagram on [::]");
        assert_eq!(&buf[..n], b"v4");
        assert_eq!(
            from.ip().to_canonical(),
            std::net::IpAddr::from([127, 0, 0, 1])
        );
        // IPv4 sockets are left alone.
        assert!(socket2::SockRef::from(&client).only_v6().is_err());
    }

    #[tokio::test]
    async fn the_largest_gso_runs_the_kernel_takes_arrive_whole() {
        // 45 × 1452 = 65,340 bytes: one IPv4 run at the IPv4 limit
        // (65,507), the rest in a second run; over IPv6 (65,527) 45 of
        // 1,456 bytes = 65,520 fit one run. A run past the limit would be
        // refused by the kernel and lost, and these counts would fall short.
        let got = roundtrip(&[1452; 90]).await;
        assert_eq!(got.len(), 90);
        assert!(got.iter().all(|dg| dg.len() == 1452));
        if let Some(got) = roundtrip_on("[::1]:0".parse().unwrap(), &[1456; 91]).await {
            assert_eq!(got.len(), 91);
            for (i, dg) in got.iter().enumerate() {
                assert_eq!(dg.len(), 1456);
                assert!(dg.iter().all(|&x| x == i as u8), "datagram {i} in order");
            }
        }
    }

    #[tokio::test]
    async fn a_gso_batch_arrives_as_separate_datagrams() {
        // Three equal datagrams and a shorter last one: one GSO run if
        // the kernel has GSO, four sends otherwise; either way four arrive.
        let got = roundtrip(&[1000, 1000, 1000, 300]).await;
        let lens: Vec<usize> = got.iter().map(Vec::len).collect();
        assert_eq!(lens, vec![1000, 1000, 1000, 300]);
        for (i, dg) in got.iter().enumerate() {
            assert!(dg.iter().all(|&x| x == i as u8));
        }
    }

    #[tokio::test]
    async fn each_datagram_keeps_its_own_arrival_time() {
        // Two datagrams sent 3 ms apart and read together afterwards:
        // their times are their arrivals (kernel timestamps), 3 ms apart,
        // not the one time of the read.
        let a = UdpIo::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let b = UdpIo::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let to = b.local_addr().unwrap();
        let mut rx = RxBuffers::new();
        // Linux turns receive timestamping on for the whole stack through
        // a static key flipped from a work queue when the first socket
        // asks: until it runs, a datagram is stamped when it is read, not
        // when it arrived (seen under load: the first of the pair came out
        // 6 ms "late"). Wait until a datagram held back 5 ms shows its age.
        let mut stamping = false;
        for _ in 0..100 {
            let mut probe = TxBatch::default();
            probe.push(to, None, &[0; 1]);
            a.send_batch(&probe).await.unwrap();
            std::thread::sleep(Duration::from_millis(5));
            let mut oldest = Duration::ZERO;
            let mut got = 0;
            while got == 0 {
                b.readable().await.unwrap();
                got = b
                    .recv_batch(&mut rx, |_, _, age, _| oldest = oldest.max(age))
                    .unwrap_or(0);
            }
            if oldest >= Duration::from_millis(4) {
                stamping = true;
                break;
            }
        }
        let mut sent_at = Vec::new();
        for len in [100, 200] {
            let mut batch = TxBatch::default();
            batch.push(to, None, &vec![1; len]);
            sent_at.push(crate::rx_time::wall_clock());
            a.send_batch(&batch).await.unwrap();
            std::thread::sleep(Duration::from_millis(3));
        }
        // A loaded machine may oversleep: compare with the real spacing.
        let sent_gap = sent_at[1] - sent_at[0];
        // Arrival = wall clock at the read − age: under load the two may
        // come out of two reads (the second still in the kernel's
        // backlog at the first), and ages from different reads are
        // measured from different "now"s (CI saw "0ns apart" that way).
        let mut arrivals = Vec::new();
        while arrivals.len() < 2 {
            b.readable().await.unwrap();
            let read_at = crate::rx_time::wall_clock();
            let _ = b.recv_batch(&mut rx, |_, _, age, dg| {
                arrivals.push((dg.len(), read_at.saturating_sub(age)))
            });
        }
        assert_eq!(
            arrivals.iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![100, 200]
        );
        if b.kernel_timestamps && stamping {
            let gap = arrivals[1].1.saturating_sub(arrivals[0].1);
            assert!(
                gap >= Duration::from_millis(2) && gap < sent_gap + Duration::from_millis(20),
                "arrivals {gap:?} apart, sent {sent_gap:?} apart"
            );
        }
        if b.kernel_timestamps && !stamping {
            eprintln!("arrival-time check skipped: the kernel stamped no probe on arrival");
        }
        // A GRO buffer (or a platform without timestamps): in arrival
        // order, never one shared time.
        let mut arrivals = Vec::new();
        let mut batch = TxBatch::default();
        for _ in 0..4 {
            batch.push(to, None, &[2; 1000]);
        }
        a.send_batch(&batch).await.unwrap();
        while arrivals.len() < 4 {
            b.readable().await.unwrap();
            let read_at = crate::rx_time::wall_clock();
            let _ = b.recv_batch(&mut rx, |_, _, age, _| {
                arrivals.push(read_at.saturating_sub(age))
            });
        }
        let capabilities = b.capabilities();
        if capabilities.gro_segments > 1 {
            assert!(arrivals.windows(2).all(|w| w[0] < w[1]), "{arrivals:?}");
        }
    }

    #[tokio::test]
    async fn a_run_longer_than_one_udp_length_is_split() {
        // 60 × 1452 bytes is more than 65,535: sent as one run it would be
        // refused by the kernel and silently lost.
        let lens = vec![1452; 60];
        let got = roundtrip(&lens).await;
        assert_eq!(got.len(), 60);
        for (i, dg) in got.iter().enumerate() {
            assert_eq!(dg.len(), 1452);
            assert!(dg.iter().all(|&x| x == i as u8), "datagram {i} in order");
        }
    }
}
