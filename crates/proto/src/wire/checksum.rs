//! The Internet checksum (RFC 1071), as TCP uses it: the one's-complement
//! of the one's-complement sum of the data taken as big-endian 16-bit words,
//! an odd final byte padded with a zero byte.

/// The RFC 1071 checksum of `data`.
pub fn internet_checksum(data: &[u8]) -> u16 {
    !fold(sum_words(data, 0))
}

/// The checksum of a whole datagram, computed as if its CHKSUM field
/// (bytes 6–7) were zero, without copying the datagram.
pub fn datagram_checksum(datagram: &[u8]) -> u16 {
    let (head, tail) = datagram.split_at(datagram.len().min(6));
    let tail = tail.get(2..).unwrap_or(&[]);
    // `head` has an even length whenever `tail` is non-empty, so the words
    // of `tail` stay aligned as they are in the datagram.
    let sum = sum_words(head, 0);
    !fold(sum_words(tail, sum))
}

fn sum_words(data: &[u8], mut sum: u64) -> u64 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    sum
}

fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the sum of 0001 f203 f4f5 f6f7 is ddf2, checksum 220d.
        assert_eq!(
            internet_checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0x220d
        );
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(internet_checksum(&[0xab]), !0xab00);
        assert_eq!(internet_checksum(&[]), 0xffff);
    }

    #[test]
    fn datagram_checksum_skips_the_field() {
        let mut d = [0x12u8; 23];
        d[6] = 0x55;
        d[7] = 0x66;
        let mut zeroed = d;
        zeroed[6] = 0;
        zeroed[7] = 0;
        assert_eq!(datagram_checksum(&d), internet_checksum(&zeroed));
        assert_eq!(datagram_checksum(&[1, 2, 3]), internet_checksum(&[1, 2, 3]));
    }
}
