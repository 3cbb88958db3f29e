//! Packet numbers: 64-bit in the endpoints, 32-bit truncated on the wire.
//!
//! Every packet after the handshake carries the low 32 bits of a 64-bit
//! packet number that starts at 0 in each direction, grows by one per
//! datagram sent (retransmissions included) and is never reused. The
//! receiver recovers the full number from the largest it has processed so
//! far with [`expand_packet_number`] — the rule of RFC 9000 Appendix A.3
//! with a 32-bit window — which is exact as long as fewer than 2^31
//! packets are in flight. ACK and NACK name packets by their full 64-bit
//! numbers, so no expansion is needed there.

/// Bits of the packet number carried in post-handshake packets.
pub const PACKET_NUMBER_BITS: u32 = 32;

/// The low 32 bits of a full packet number, as sent.
pub const fn truncate_packet_number(full: u64) -> u32 {
    full as u32
}

/// The full packet number closest to `largest + 1` whose low 32 bits are
/// `truncated`. `largest` is the largest packet number processed so far on
/// this path, or `None` before the first one.
pub fn expand_packet_number(truncated: u32, largest: Option<u64>) -> u64 {
    const WIN: u64 = 1 << PACKET_NUMBER_BITS;
    const HWIN: u64 = WIN / 2;
    const MASK: u64 = WIN - 1;
    let expected = match largest {
        Some(l) => l.saturating_add(1),
        None => 0,
    };
    let candidate = (expected & !MASK) | u64::from(truncated);
    if candidate.saturating_add(HWIN) <= expected && candidate <= u64::MAX - WIN {
        candidate + WIN
    } else if candidate > expected.saturating_add(HWIN) && candidate >= WIN {
        candidate - WIN
    } else {
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_follows_rfc9000_a3() {
        assert_eq!(expand_packet_number(0, None), 0);
        assert_eq!(expand_packet_number(7, Some(5)), 7);
        // Just after a wrap of the low 32 bits.
        assert_eq!(expand_packet_number(2, Some(0xffff_fffe)), 0x1_0000_0002);
        // A late packet from just before the wrap.
        assert_eq!(
            expand_packet_number(0xffff_fff0, Some(0x1_0000_0003)),
            0xffff_fff0
        );
        // Cannot go below zero.
        assert_eq!(expand_packet_number(0xffff_ffff, Some(3)), 0xffff_ffff);
        // Round trip for numbers near the largest.
        for largest in [0u64, 1 << 31, (1 << 32) + 17, u64::MAX - (1 << 33)] {
            for delta in [-1000i64, -1, 1, 2, 1000] {
                let Some(full) = largest.checked_add_signed(delta) else {
                    continue;
                };
                assert_eq!(
                    expand_packet_number(truncate_packet_number(full), Some(largest)),
                    full
                );
            }
        }
    }
}
