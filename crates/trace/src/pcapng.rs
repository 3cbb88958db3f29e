//! A streaming pcapng writer (the format of draft-ietf-opsawg-pcapng,
//! which Wireshark, tshark and tcpdump read).
//!
//! A file is one section: a Section Header Block, one Interface
//! Description Block per interface the caller adds, then one Enhanced
//! Packet Block per packet. Timestamps are nanoseconds (the interface's
//! `if_tsresol` option is 9), so simulated instants are kept exactly.
//! Nothing in a block depends on the wall clock or the host, so the
//! same packets give the same bytes: a simulation's captures are as
//! reproducible as its results.
//!
//! ```
//! use peregrine_trace::pcapng::{Ipv4Udp, LinkType, PcapngWriter};
//! let mut w = PcapngWriter::new(Vec::new(), "example").unwrap();
//! let iface = w.add_interface("link/up", LinkType::Ipv4).unwrap();
//! let mut frame = Ipv4Udp::default();
//! let bytes = frame.wrap(
//!     "10.0.0.1:4000".parse().unwrap(),
//!     "10.0.0.2:4433".parse().unwrap(),
//!     b"payload",
//! );
//! w.write_packet(iface, 1_500_000_000, bytes).unwrap();
//! let file = w.finish().unwrap();
//! assert_eq!(&file[0..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
//! ```

use std::io::{self, Write};
use std::net::{SocketAddrV4, SocketAddrV6};

/// The link type of an interface: what each packet's bytes begin with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    /// `LINKTYPE_IPV4` (228): raw IPv4 packets, no link-layer header.
    Ipv4,
    /// `LINKTYPE_RAW` (101): raw IPv4 or IPv6 packets.
    Raw,
}

impl LinkType {
    fn code(self) -> u16 {
        match self {
            LinkType::Ipv4 => 228,
            LinkType::Raw => 101,
        }
    }
}

/// Block types of the format.
const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
/// The byte-order magic: the reader learns the file's endianness from it.
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// Options.
const OPT_END: u16 = 0;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;
/// The largest packet kept whole (the interface's snap length).
pub const SNAPLEN: u32 = 262_144;

/// Writes one pcapng section to `W`, block by block (nothing is held
/// back but what `W` buffers: wrap a file in a `BufWriter`).
///
/// Every block reaches `W` in one `write_all`, so a `BufWriter` never
/// flushes half a block: a process that dies between flushes (or exits
/// while its capture thread is still running) leaves a file of whole
/// blocks that every tool reads.
pub struct PcapngWriter<W: Write> {
    out: W,
    interfaces: u32,
    /// The packet block being assembled, reused (grows once to the
    /// largest packet seen).
    block: Vec<u8>,
}

fn option_len(value_len: usize) -> usize {
    4 + value_len.next_multiple_of(4)
}

fn put_option(buf: &mut Vec<u8>, code: u16, value: &[u8]) {
    buf.extend_from_slice(&code.to_le_bytes());
    buf.extend_from_slice(&(value.len() as u16).to_le_bytes());
    buf.extend_from_slice(value);
    buf.resize(
        buf.len() + (value.len().next_multiple_of(4) - value.len()),
        0,
    );
}

impl<W: Write> PcapngWriter<W> {
    /// Starts a section; `application` is recorded as `shb_userappl`.
    ///
    /// Errors: `W`'s.
    pub fn new(out: W, application: &str) -> io::Result<Self> {
        let mut w = PcapngWriter {
            out,
            interfaces: 0,
            block: Vec::new(),
        };
        let app = application.as_bytes();
        let body_len = 4 + 2 + 2 + 8 + option_len(app.len()) + 4;
        let total = (12 + body_len) as u32;
        let mut b = Vec::with_capacity(total as usize);
        b.extend_from_slice(&SHB.to_le_bytes());
        b.extend_from_slice(&total.to_le_bytes());
        b.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes()); // major version
        b.extend_from_slice(&0u16.to_le_bytes()); // minor version
        b.extend_from_slice(&(-1i64).to_le_bytes()); // section length: unknown
        put_option(&mut b, SHB_USERAPPL, app);
        put_option(&mut b, OPT_END, &[]);
        b.extend_from_slice(&total.to_le_bytes());
        debug_assert_eq!(b.len(), total as usize);
        w.out.write_all(&b)?;
        Ok(w)
    }

    /// Declares an interface named `name` (e.g. the link direction) with
    /// nanosecond timestamps; returns its id for [`Self::write_packet`].
    ///
    /// Errors: `W`'s.
    pub fn add_interface(&mut self, name: &str, link_type: LinkType) -> io::Result<u32> {
        let name = name.as_bytes();
        let body_len = 2 + 2 + 4 + option_len(name.len()) + option_len(1) + 4;
        let total = (12 + body_len) as u32;
        let mut b = Vec::with_capacity(total as usize);
        b.extend_from_slice(&IDB.to_le_bytes());
        b.extend_from_slice(&total.to_le_bytes());
        b.extend_from_slice(&link_type.code().to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes()); // reserved
        b.extend_from_slice(&SNAPLEN.to_le_bytes());
        put_option(&mut b, IF_NAME, name);
        put_option(&mut b, IF_TSRESOL, &[9]); // 10^-9 s
        put_option(&mut b, OPT_END, &[]);
        b.extend_from_slice(&total.to_le_bytes());
        debug_assert_eq!(b.len(), total as usize);
        self.out.write_all(&b)?;
        self.interfaces += 1;
        Ok(self.interfaces - 1)
    }

    /// Writes one packet seen on `interface` at `time_ns` nanoseconds
    /// (since the epoch of the capture: the simulation's start for the
    /// simulator). A packet longer than [`SNAPLEN`] is cut to it and its
    /// original length recorded, as capture tools do. O(packet length),
    /// no allocation once the block buffer has grown to the largest
    /// packet.
    ///
    /// Errors: `W`'s; `InvalidInput` for an interface never added.
    pub fn write_packet(&mut self, interface: u32, time_ns: u64, packet: &[u8]) -> io::Result<()> {
        if interface >= self.interfaces {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("pcapng: interface {interface} was never added"),
            ));
        }
        let captured = packet.len().min(SNAPLEN as usize);
        let padded = captured.next_multiple_of(4);
        let total = (32 + padded) as u32;
        let b = &mut self.block;
        b.clear();
        b.extend_from_slice(&EPB.to_le_bytes());
        b.extend_from_slice(&total.to_le_bytes());
        b.extend_from_slice(&interface.to_le_bytes());
        b.extend_from_slice(&((time_ns >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(time_ns as u32).to_le_bytes());
        b.extend_from_slice(&(captured as u32).to_le_bytes());
        b.extend_from_slice(&(packet.len() as u32).to_le_bytes());
        b.extend_from_slice(&packet[..captured]);
        b.extend_from_slice(&[0u8; 3][..padded - captured]);
        b.extend_from_slice(&total.to_le_bytes());
        // One write per block: see the type's doc.
        self.out.write_all(b)
    }

    /// The underlying writer (to flush a long-lived capture). O(1).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Flushes and returns the writer.
    ///
    /// Errors: `W`'s.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Builds IPv4 + UDP headers around a payload in a reused buffer: the
/// form a capture needs for a dissector to find UDP (and SLTP in it).
///
/// The IPv4 header has TTL 64, Don't-Fragment set (as Peregrine sends),
/// a correct header checksum and an identification counter; the UDP
/// checksum is 0 ("none", legal over IPv4), which tools accept.
#[derive(Debug, Default)]
pub struct Ipv4Udp {
    buf: Vec<u8>,
    ident: u16,
}

impl Ipv4Udp {
    /// The IPv4 + UDP header bytes added to every payload.
    pub const HEADER_LEN: usize = 28;

    /// Returns `payload` wrapped as a UDP datagram from `src` to `dst`.
    /// A payload longer than a UDP datagram can carry (65,507 bytes over
    /// IPv4) gets its length fields saturated — a capture must never
    /// fail — which tools flag as malformed. O(payload), no allocation
    /// once the buffer has grown.
    pub fn wrap(&mut self, src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> &[u8] {
        let total = (Self::HEADER_LEN + payload.len()).min(usize::from(u16::MAX)) as u16;
        let udp_len = (8 + payload.len()).min(usize::from(u16::MAX)) as u16;
        self.ident = self.ident.wrapping_add(1);
        self.buf.clear();
        let b = &mut self.buf;
        b.extend_from_slice(&[0x45, 0x00]);
        b.extend_from_slice(&total.to_be_bytes());
        b.extend_from_slice(&self.ident.to_be_bytes());
        b.extend_from_slice(&[0x40, 0x00, 64, 17, 0, 0]); // DF, TTL, UDP, checksum 0
        b.extend_from_slice(&src.ip().octets());
        b.extend_from_slice(&dst.ip().octets());
        let sum = internet_checksum(&b[0..20]);
        b[10..12].copy_from_slice(&sum.to_be_bytes());
        b.extend_from_slice(&src.port().to_be_bytes());
        b.extend_from_slice(&dst.port().to_be_bytes());
        b.extend_from_slice(&udp_len.to_be_bytes());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(payload);
        &self.buf
    }
}

/// Builds IPv6 + UDP headers around a payload in a reused buffer (for
/// a [`LinkType::Raw`] interface, which carries IPv4 and IPv6 alike).
///
/// Hop limit 64, no extension headers, and a correct UDP checksum (it is
/// mandatory over IPv6, RFC 8200 §8.1, so tools would flag a zero one).
#[derive(Debug, Default)]
pub struct Ipv6Udp {
    buf: Vec<u8>,
}

impl Ipv6Udp {
    /// The IPv6 + UDP header bytes added to every payload.
    pub const HEADER_LEN: usize = 48;

    /// Returns `payload` wrapped as a UDP datagram from `src` to `dst`.
    /// A payload longer than a UDP datagram can carry gets its length
    /// fields saturated (a capture must never fail). O(payload), no
    /// allocation once the buffer has grown.
    pub fn wrap(&mut self, src: SocketAddrV6, dst: SocketAddrV6, payload: &[u8]) -> &[u8] {
        let udp_len = (8 + payload.len()).min(usize::from(u16::MAX)) as u16;
        self.buf.clear();
        let b = &mut self.buf;
        b.extend_from_slice(&[0x60, 0, 0, 0]); // version 6, class 0, flow 0
        b.extend_from_slice(&udp_len.to_be_bytes()); // payload length
        b.extend_from_slice(&[17, 64]); // next header UDP, hop limit
        b.extend_from_slice(&src.ip().octets());
        b.extend_from_slice(&dst.ip().octets());
        b.extend_from_slice(&src.port().to_be_bytes());
        b.extend_from_slice(&dst.port().to_be_bytes());
        b.extend_from_slice(&udp_len.to_be_bytes());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(payload);
        // Pseudo-header (addresses, upper-layer length, next header) and
        // the UDP header and payload, one's-complement summed.
        let mut sum: u32 = b[8..40]
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        sum += u32::from(udp_len) + 17;
        sum += b[40..]
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
            .fold(0u32, u32::wrapping_add);
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        // A computed zero is sent as all ones (zero means "no checksum").
        let check = match !(sum as u16) {
            0 => 0xffff,
            c => c,
        };
        b[46..48].copy_from_slice(&check.to_be_bytes());
        &self.buf
    }
}

/// RFC 1071 over `bytes` (even length here).
fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal reader of what the writer writes: (block type, body).
    fn blocks(file: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < file.len() {
            let ty = u32::from_le_bytes(file[i..i + 4].try_into().unwrap());
            let len = u32::from_le_bytes(file[i + 4..i + 8].try_into().unwrap()) as usize;
            assert_eq!(len % 4, 0, "blocks are 32-bit aligned");
            let trailer = u32::from_le_bytes(file[i + len - 4..i + len].try_into().unwrap());
            assert_eq!(
                trailer as usize, len,
                "trailing length repeats the leading one"
            );
            out.push((ty, file[i + 8..i + len - 4].to_vec()));
            i += len;
        }
        out
    }

    /// Records what each `write` call was handed.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_write_is_whole_blocks_so_a_killed_capture_stays_readable() {
        // CI saw a runtime capture end 4 bytes short: the process exited
        // after a BufWriter had flushed half a block. Each write is now
        // one or more whole blocks.
        let mut w = PcapngWriter::new(Writes::default(), "peregrine test").unwrap();
        let i = w.add_interface("l0/up", LinkType::Ipv4).unwrap();
        for len in [0, 1, 3, 4, 1400, 65_000] {
            w.write_packet(i, 7, &vec![0xab; len]).unwrap();
        }
        let writes = w.finish().unwrap().0;
        for chunk in &writes {
            // `blocks` panics on a partial block.
            assert!(!blocks(chunk).is_empty());
        }
        assert_eq!(blocks(&writes.concat()).len(), 2 + 6);
    }

    #[test]
    fn a_file_is_a_section_interfaces_and_packets() {
        let mut w = PcapngWriter::new(Vec::new(), "peregrine test").unwrap();
        let a = w.add_interface("l0/up", LinkType::Ipv4).unwrap();
        let b = w.add_interface("l0/down", LinkType::Ipv4).unwrap();
        assert_eq!((a, b), (0, 1));
        w.write_packet(b, 5_000_000_123, &[1, 2, 3, 4, 5]).unwrap();
        let file = w.finish().unwrap();
        let bl = blocks(&file);
        assert_eq!(
            bl.iter().map(|b| b.0).collect::<Vec<_>>(),
            [SHB, IDB, IDB, EPB]
        );
        assert_eq!(&bl[0].1[0..4], &BYTE_ORDER_MAGIC.to_le_bytes());
        // The IDB names the interface and sets nanosecond timestamps.
        let idb = &bl[2].1;
        assert_eq!(u16::from_le_bytes([idb[0], idb[1]]), 228);
        assert_eq!(&idb[8..10], &IF_NAME.to_le_bytes());
        assert_eq!(&idb[12..19], b"l0/down");
        assert_eq!(&idb[20..22], &IF_TSRESOL.to_le_bytes());
        assert_eq!(idb[24], 9);
        let epb = &bl[3].1;
        assert_eq!(u32::from_le_bytes(epb[0..4].try_into().unwrap()), 1);
        let hi = u32::from_le_bytes(epb[4..8].try_into().unwrap()) as u64;
        let lo = u32::from_le_bytes(epb[8..12].try_into().unwrap()) as u64;
        assert_eq!((hi << 32) | lo, 5_000_000_123);
        assert_eq!(u32::from_le_bytes(epb[12..16].try_into().unwrap()), 5);
        assert_eq!(u32::from_le_bytes(epb[16..20].try_into().unwrap()), 5);
        assert_eq!(&epb[20..25], &[1, 2, 3, 4, 5]);
        assert_eq!(&epb[25..28], &[0, 0, 0], "padded to 32 bits");
    }

    #[test]
    fn an_unknown_interface_is_an_error_not_a_corrupt_file() {
        let mut w = PcapngWriter::new(Vec::new(), "t").unwrap();
        let err = w.write_packet(0, 0, b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(blocks(&w.finish().unwrap()).len(), 1);
    }

    #[test]
    fn long_packets_are_cut_to_the_snap_length_and_keep_their_length() {
        let mut w = PcapngWriter::new(Vec::new(), "t").unwrap();
        w.add_interface("i", LinkType::Raw).unwrap();
        let big = vec![7u8; SNAPLEN as usize + 10];
        w.write_packet(0, 1, &big).unwrap();
        let bl = blocks(&w.finish().unwrap());
        let epb = &bl[2].1;
        assert_eq!(u32::from_le_bytes(epb[12..16].try_into().unwrap()), SNAPLEN);
        assert_eq!(
            u32::from_le_bytes(epb[16..20].try_into().unwrap()),
            SNAPLEN + 10
        );
    }

    #[test]
    fn ipv4_udp_headers_are_well_formed() {
        let mut h = Ipv4Udp::default();
        let pkt = h
            .wrap(
                "10.0.0.1:40000".parse().unwrap(),
                "10.0.1.2:4433".parse().unwrap(),
                b"hello",
            )
            .to_vec();
        assert_eq!(pkt.len(), 33);
        assert_eq!(pkt[0], 0x45);
        assert_eq!(u16::from_be_bytes([pkt[2], pkt[3]]), 33);
        assert_eq!(pkt[9], 17);
        // A correct header checksum sums (with itself) to 0xffff.
        assert_eq!(internet_checksum(&pkt[0..20]), 0);
        assert_eq!(&pkt[12..16], &[10, 0, 0, 1]);
        assert_eq!(&pkt[16..20], &[10, 0, 1, 2]);
        assert_eq!(u16::from_be_bytes([pkt[20], pkt[21]]), 40000);
        assert_eq!(u16::from_be_bytes([pkt[22], pkt[23]]), 4433);
        assert_eq!(u16::from_be_bytes([pkt[24], pkt[25]]), 13);
        assert_eq!(&pkt[28..], b"hello");
    }

    #[test]
    fn the_same_packets_give_the_same_bytes() {
        let make = || {
            let mut w = PcapngWriter::new(Vec::new(), "t").unwrap();
            let i = w.add_interface("x", LinkType::Ipv4).unwrap();
            let mut h = Ipv4Udp::default();
            for k in 0..10u64 {
                let p = h.wrap(
                    "10.0.0.1:1".parse().unwrap(),
                    "10.0.0.2:2".parse().unwrap(),
                    &[k as u8; 17],
                );
                w.write_packet(i, k * 1000, p).unwrap();
            }
            w.finish().unwrap()
        };
        assert_eq!(make(), make());
    }

    #[test]
    fn ipv6_udp_has_a_checksum_that_verifies() {
        let mut w = Ipv6Udp::default();
        let p = w
            .wrap(
                "[::1]:4000".parse().unwrap(),
                "[::1]:4433".parse().unwrap(),
                b"odd",
            )
            .to_vec();
        assert_eq!(p.len(), Ipv6Udp::HEADER_LEN + 3);
        assert_eq!(p[0] >> 4, 6);
        assert_eq!(u16::from_be_bytes([p[4], p[5]]), 11);
        assert_eq!(p[6], 17);
        // Summing pseudo-header + UDP with the checksum in place gives 0xffff.
        let mut sum: u32 = p[8..40]
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        sum += 11 + 17;
        sum += p[40..]
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
            .sum::<u32>();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
    }
}
