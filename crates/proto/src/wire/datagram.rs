//! Whole datagrams: base header, payload, and the authentication-tag area.
//!
//! ```text
//! +----------------------+---------------------------+------------------+
//! | base header (20)     | payload (type-specific)   | auth tag (0|16)  |
//! +----------------------+---------------------------+------------------+
//! |<------------------------- TOTAL_LEN ----------------------------->|
//! ```
//!
//! The tag area is absent (length 0) until a connection has negotiated
//! encryption through the SECURITY TLV of its START exchange; from then on
//! every post-handshake datagram ends with an [`AUTH_TAG_LEN`]-byte tag.
//! The header cannot say so (its 8 flags are fixed by SLTP), so the tag
//! length is connection state that the caller passes to
//! [`DatagramRepr::decode_with_tag`]. START and REJECT never carry a tag.

use super::checksum::datagram_checksum;
use super::cursor::check_room;
use super::error::{Result, WireError};
use super::flags::Flags;
use super::header::{patch_len_and_checksum, Header, HeaderRepr, HEADER_LEN};
use super::payload::Payload;

/// Length of the authentication tag once encryption is negotiated (an AEAD
/// tag such as AES-GCM's or ChaCha20-Poly1305's).
pub const AUTH_TAG_LEN: usize = 16;
/// Largest datagram TOTAL_LEN can describe.
pub const MAX_DATAGRAM_LEN: usize = u16::MAX as usize;

/// A decoded datagram; the payload borrows from the input bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DatagramRepr<'a> {
    /// The base header, `total_len` and `chksum` as carried.
    pub header: HeaderRepr,
    /// The payload, decoded according to `header.pk_type`.
    pub payload: Payload<'a>,
    /// The authentication tag; empty when the connection is not encrypted.
    pub auth_tag: &'a [u8],
}

impl<'a> DatagramRepr<'a> {
    /// Decodes an unencrypted datagram (no tag area).
    pub fn decode(bytes: &'a [u8]) -> Result<DatagramRepr<'a>> {
        Self::decode_with_tag(bytes, 0)
    }

    /// Decodes a datagram whose post-handshake packets end with a
    /// `tag_len`-byte tag. Checks, in order: the header is complete, PK_TYPE
    /// is not 0, TOTAL_LEN equals `bytes.len()`, CHKSUM when ST_CKS is set,
    /// the tag fits, then the payload. The payload must already be in
    /// plaintext: the crypto layer decrypts in place before calling this.
    pub fn decode_with_tag(bytes: &'a [u8], tag_len: usize) -> Result<DatagramRepr<'a>> {
        let header = Self::decode_header(bytes)?;
        if header.flags.contains(Flags::ST_CKS) {
            let computed = datagram_checksum(bytes);
            if computed != header.chksum {
                return Err(WireError::BadChecksum {
                    found: header.chksum,
                    computed,
                });
            }
        }
        Self::decode_rest(bytes, header, tag_len)
    }

    /// [`decode`](Self::decode) without the CHKSUM check, which is left
    /// to the caller: the second value says whether ST_CKS asks for it
    /// (then the datagram must not be acted on before its checksum —
    /// [`datagram_checksum`], or
    /// [`datagram_checksum_copying`](super::checksum::datagram_checksum_copying)
    /// which copies a block out on the way — equals `header.chksum`).
    /// The receiver uses it to verify the checksum while copying the
    /// block into its message (one pass over the bytes instead of two).
    /// The other checks are `decode`'s, in its order; a datagram that
    /// fails both the checksum and another check gets the other error.
    /// O(len of the frame headers), no allocation.
    pub fn decode_deferring_checksum(bytes: &'a [u8]) -> Result<(DatagramRepr<'a>, bool)> {
        let header = Self::decode_header(bytes)?;
        let due = header.flags.contains(Flags::ST_CKS);
        Ok((Self::decode_rest(bytes, header, 0)?, due))
    }

    /// The header, checked against the datagram's length.
    fn decode_header(bytes: &[u8]) -> Result<HeaderRepr> {
        let view = Header::new_checked(bytes)?;
        let header = HeaderRepr::parse(&view)?;
        if usize::from(header.total_len) != bytes.len() {
            return Err(WireError::TotalLenMismatch {
                total_len: header.total_len,
                actual: bytes.len(),
            });
        }
        Ok(header)
    }

    /// The tag area and the payload after a checked header.
    fn decode_rest(
        bytes: &'a [u8],
        header: HeaderRepr,
        tag_len: usize,
    ) -> Result<DatagramRepr<'a>> {
        let body = bytes.get(HEADER_LEN..).unwrap_or(&[]);
        let tag_len = if header.pk_type.is_handshake() {
            0
        } else {
            tag_len
        };
        let Some(payload_len) = body.len().checked_sub(tag_len) else {
            return Err(WireError::MissingAuthTag {
                tag_len,
                available: body.len(),
            });
        };
        let (payload, auth_tag) = body.split_at_checked(payload_len).unwrap_or((body, &[]));
        let payload = Payload::decode(header.pk_type, payload)?;
        Ok(DatagramRepr {
            header,
            payload,
            auth_tag,
        })
    }

    /// Encoded length: header, payload and tag.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload.buffer_len() + self.auth_tag.len()
    }

    /// Writes the datagram into `buf` and returns its length. TOTAL_LEN is
    /// always computed; CHKSUM is computed when ST_CKS is set and written
    /// as given otherwise. Nothing is allocated.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let pk_type = self.header.pk_type;
        self.payload.check_fits(pk_type)?;
        if pk_type.is_handshake() && !self.auth_tag.is_empty() {
            return Err(WireError::FieldOutOfRange {
                field: "auth tag length of a handshake packet",
                value: self.auth_tag.len() as u64,
                max: 0,
            });
        }
        let len = self.buffer_len();
        let total_len = u16::try_from(len).map_err(|_| WireError::DatagramTooLong { len })?;
        check_room(buf, len)?;
        let (head, rest) = buf.split_at_mut(HEADER_LEN);
        self.header.emit(head)?;
        let n = self.payload.emit(rest)?;
        let available = HEADER_LEN + rest.len();
        let tag_dst =
            rest.get_mut(n..n + self.auth_tag.len())
                .ok_or(WireError::BufferTooSmall {
                    needed: len,
                    available,
                })?;
        tag_dst.copy_from_slice(self.auth_tag);
        let out = buf.get_mut(..len).ok_or(WireError::BufferTooSmall {
            needed: len,
            available: 0,
        })?;
        patch_len_and_checksum(out, total_len, 0);
        let chksum = if self.header.flags.contains(Flags::ST_CKS) {
            datagram_checksum(out)
        } else {
            self.header.chksum
        };
        patch_len_and_checksum(out, total_len, chksum);
        Ok(len)
    }
}

/// The truncated packet number of a datagram, read without decoding the
/// payload (the crypto layer needs it for the nonce before decrypting).
/// `None` for START and REJECT.
pub fn peek_packet_number(bytes: &[u8]) -> Result<Option<u32>> {
    let view = Header::new_checked(bytes)?;
    if view.pk_type()?.is_handshake() {
        return Ok(None);
    }
    let pn = bytes
        .get(HEADER_LEN..HEADER_LEN + 4)
        .and_then(|b| b.first_chunk::<4>())
        .ok_or(WireError::Truncated {
            what: "packet number",
            needed: 4,
            available: bytes.len().saturating_sub(HEADER_LEN),
        })?;
    Ok(Some(u32::from_be_bytes(*pn)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::packet_type::PacketType;
    use crate::wire::payload::BarePayload;

    fn idle(flags: Flags) -> DatagramRepr<'static> {
        let mut header = HeaderRepr::new(PacketType::Idle);
        header.flags = flags;
        DatagramRepr {
            header,
            payload: Payload::Bare(BarePayload { packet_number: 42 }),
            auth_tag: &[],
        }
    }

    #[test]
    fn length_and_checksum_are_checked() {
        let mut buf = [0u8; 64];
        let n = idle(Flags::ST_CKS).emit(&mut buf).unwrap();
        assert_eq!(n, 24);
        let d = DatagramRepr::decode(&buf[..n]).unwrap();
        assert_eq!(d.header.total_len, 24);
        assert_eq!(peek_packet_number(&buf[..n]), Ok(Some(42)));
        assert!(matches!(
            DatagramRepr::decode(&buf[..n + 1]),
            Err(WireError::TotalLenMismatch {
                total_len: 24,
                actual: 25
            })
        ));
        buf[n - 1] ^= 1;
        assert!(matches!(
            DatagramRepr::decode(&buf[..n]),
            Err(WireError::BadChecksum { .. })
        ));
    }

    #[test]
    fn tag_area_is_split_off() {
        let tag = [7u8; AUTH_TAG_LEN];
        let mut d = DatagramRepr {
            auth_tag: &tag,
            ..idle(Flags::EMPTY)
        };
        d.header.total_len = 40;
        let mut buf = [0u8; 64];
        let n = d.emit(&mut buf).unwrap();
        assert_eq!(n, 40);
        assert_eq!(
            DatagramRepr::decode_with_tag(&buf[..n], AUTH_TAG_LEN),
            Ok(d)
        );
        // Without the tag length the tag reads as trailing payload bytes.
        assert!(DatagramRepr::decode(&buf[..n]).is_err());
        // A tag longer than the body.
        assert!(matches!(
            DatagramRepr::decode_with_tag(&buf[..n], 100),
            Err(WireError::MissingAuthTag { .. })
        ));
    }

    #[test]
    fn payload_must_fit_type() {
        let mut d = idle(Flags::EMPTY);
        d.header.pk_type = PacketType::Data;
        assert!(matches!(
            d.emit(&mut [0u8; 64]),
            Err(WireError::PayloadMismatch { .. })
        ));
        assert!(matches!(
            idle(Flags::EMPTY).emit(&mut [0u8; 23]),
            Err(WireError::BufferTooSmall {
                needed: 24,
                available: 23
            })
        ));
    }
}
