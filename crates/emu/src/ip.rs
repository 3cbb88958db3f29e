//! The IP header fields the emulator's link model looks at on a TUN
//! packet (raw IPv4 or IPv6, `IFF_NO_PI`): the ECN codepoint, read on the
//! way in and written back when an AQM marked the packet CE, and the flow
//! 5-tuple FQ-CoDel hashes. Anything that is not a well-formed IPv4/IPv6
//! header is left alone (not ECN-capable, flow 0).

use peregrine_proto::io::EcnCodepoint;
use peregrine_sim::world::packet::{codepoint_of, ecn_of};

/// The ECN codepoint of an IP packet: the low two bits of the IPv4 TOS
/// byte or of the IPv6 traffic class. O(1).
pub fn ecn(packet: &[u8]) -> Option<EcnCodepoint> {
    let bits = match packet.first().map(|b| b >> 4) {
        Some(4) if packet.len() >= 20 => packet[1] & 0b11,
        Some(6) if packet.len() >= 40 => (packet[1] >> 4) & 0b11,
        _ => return None,
    };
    codepoint_of(peregrine_link::aqm::Ecn::from_bits(bits))
}

/// Write `codepoint` into the packet's ECN bits; for IPv4 the header
/// checksum is updated incrementally (RFC 1624: HC' = ~(~HC + ~m + m')).
/// A packet that is not IPv4/IPv6 is left unchanged. O(1).
pub fn set_ecn(packet: &mut [u8], codepoint: Option<EcnCodepoint>) {
    let bits = ecn_of(codepoint).bits();
    match packet.first().map(|b| b >> 4) {
        Some(4) if packet.len() >= 20 => {
            let old_word = u16::from_be_bytes([packet[0], packet[1]]);
            packet[1] = (packet[1] & !0b11) | bits;
            let new_word = u16::from_be_bytes([packet[0], packet[1]]);
            let hc = u16::from_be_bytes([packet[10], packet[11]]);
            let mut sum = u32::from(!hc) + u32::from(!old_word) + u32::from(new_word);
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            packet[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        }
        Some(6) if packet.len() >= 40 => {
            packet[1] = (packet[1] & !0b0011_0000) | (bits << 4);
        }
        _ => {}
    }
}

/// A hash of the packet's 5-tuple (addresses, protocol, ports), FQ-CoDel's
/// flow key; 0 for anything unparsable. O(header).
pub fn flow_hash(packet: &[u8]) -> u64 {
    let (proto, addrs, l4) = match packet.first().map(|b| b >> 4) {
        Some(4) if packet.len() >= 20 => {
            let ihl = usize::from(packet[0] & 0x0f) * 4;
            (packet[9], &packet[12..20], ihl)
        }
        Some(6) if packet.len() >= 40 => (packet[6], &packet[8..40], 40),
        _ => return 0,
    };
    let mut h = u64::from(proto);
    let mut mix = |bytes: &[u8]| {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = peregrine_cc::splitmix::mix64(h ^ u64::from_le_bytes(w));
        }
    };
    mix(addrs);
    // TCP, UDP: the ports.
    if matches!(proto, 6 | 17) {
        if let Some(ports) = packet.get(l4..l4 + 4) {
            mix(ports);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal IPv4/UDP header with a valid checksum.
    fn ipv4(tos: u8) -> Vec<u8> {
        let mut p = vec![
            0x45, tos, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x12, 0x34, 0x11,
            0x5c, 0, 8, 0, 0,
        ];
        let c = checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p
    }

    fn checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = h
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn ipv4_ce_mark_keeps_the_header_checksum_valid() {
        let mut p = ipv4(0b1011_1010); // DSCP 46, ECT(0)
        assert_eq!(ecn(&p), Some(EcnCodepoint::Ect0));
        set_ecn(&mut p, Some(EcnCodepoint::Ce));
        assert_eq!(ecn(&p), Some(EcnCodepoint::Ce));
        assert_eq!(p[1] >> 2, 0b101110, "DSCP untouched");
        assert_eq!(checksum(&p[..20]), 0, "a valid header sums to 0");
        let mut q = ipv4(0);
        assert_eq!(ecn(&q), None);
        set_ecn(&mut q, Some(EcnCodepoint::Ect1));
        assert_eq!(checksum(&q[..20]), 0);
    }

    #[test]
    fn ipv6_traffic_class_ecn() {
        let mut p = vec![0u8; 40];
        p[0] = 0x60;
        p[1] = 0x20; // traffic class low nibble 0b0010: ECT(0)
        assert_eq!(ecn(&p), Some(EcnCodepoint::Ect0));
        set_ecn(&mut p, Some(EcnCodepoint::Ce));
        assert_eq!(ecn(&p), Some(EcnCodepoint::Ce));
        assert_eq!(p[0], 0x60);
        assert_eq!(ecn(&[1, 2, 3]), None);
    }

    #[test]
    fn flows_differ_by_port() {
        let a = ipv4(0);
        let mut b = ipv4(0);
        b[21] ^= 1;
        assert_ne!(flow_hash(&a), flow_hash(&b));
        assert_eq!(flow_hash(&a), flow_hash(&ipv4(0b10)));
        assert_eq!(flow_hash(&[]), 0);
    }
}
