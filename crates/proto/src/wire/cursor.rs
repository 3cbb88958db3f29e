//! Bounds-checked reading and writing, the only place that touches bytes.
//!
//! Every decoder reads through [`Reader`] and every encoder writes through
//! [`Writer`]; both check the length before each access and never index,
//! so a hostile datagram can at worst produce a [`WireError`].

use super::error::{Result, WireError};

/// A cursor over untrusted input.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    /// Bytes not yet read.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The unread bytes, left unread.
    pub(crate) fn peek(&self) -> &'a [u8] {
        self.buf
    }

    /// The unread bytes, consuming them.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.buf)
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        match self.buf.split_at_checked(n) {
            Some((head, tail)) => {
                self.buf = tail;
                Ok(head)
            }
            None => Err(WireError::Truncated {
                what,
                needed: n,
                available: self.buf.len(),
            }),
        }
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let bytes = self.take(N, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array(what)?))
    }

    /// A QUIC variable-length integer (RFC 9000 §16): the two high bits of
    /// the first byte give its length (1, 2, 4 or 8 bytes), the rest its
    /// value, big-endian. Any of the four forms is accepted for a value.
    #[cfg(test)]
    pub(crate) fn varint(&mut self, what: &'static str) -> Result<u64> {
        let first = *self.buf.first().ok_or(WireError::Truncated {
            what,
            needed: 1,
            available: 0,
        })?;
        let len = varint_len_of_first(first);
        let bytes = self.take(len, what)?;
        let mut v = u64::from(first & 0x3f);
        for b in bytes.iter().skip(1) {
            v = (v << 8) | u64::from(*b);
        }
        Ok(v)
    }

    /// Fails with [`WireError::TrailingBytes`] unless everything was read.
    pub(crate) fn finish(&self, what: &'static str) -> Result<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(WireError::TrailingBytes {
                what,
                count: self.buf.len(),
            })
        }
    }
}

/// The largest value a QUIC variable-length integer holds (2^62 − 1).
pub(crate) const VARINT_MAX: u64 = (1 << 62) - 1;

/// The length of a varint from its first byte's two high bits. O(1).
pub(crate) fn varint_len_of_first(first: u8) -> usize {
    1 << (first >> 6)
}

/// The shortest form of `v`, bytes (1, 2, 4 or 8; `v` ≤ [`VARINT_MAX`]).
pub(crate) fn varint_len(v: u64) -> usize {
    match v {
        0..=0x3f => 1,
        0x40..=0x3fff => 2,
        0x4000..=0x3fff_ffff => 4,
        _ => 8,
    }
}

/// A cursor over the caller's output buffer.
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }

    /// Bytes written so far.
    pub(crate) fn written(&self) -> usize {
        self.pos
    }

    pub(crate) fn put(&mut self, bytes: &[u8]) -> Result<()> {
        let end = self.pos.checked_add(bytes.len());
        match end.and_then(|end| self.buf.get_mut(self.pos..end)) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                self.pos += bytes.len();
                Ok(())
            }
            None => Err(WireError::BufferTooSmall {
                needed: self.pos.saturating_add(bytes.len()),
                available: self.buf.len(),
            }),
        }
    }

    pub(crate) fn zeros(&mut self, n: usize) -> Result<()> {
        let end = self.pos.checked_add(n);
        match end.and_then(|end| self.buf.get_mut(self.pos..end)) {
            Some(dst) => {
                dst.fill(0);
                self.pos += n;
                Ok(())
            }
            None => Err(WireError::BufferTooSmall {
                needed: self.pos.saturating_add(n),
                available: self.buf.len(),
            }),
        }
    }

    pub(crate) fn u8(&mut self, v: u8) -> Result<()> {
        self.put(&[v])
    }

    pub(crate) fn u16(&mut self, v: u16) -> Result<()> {
        self.put(&v.to_be_bytes())
    }

    pub(crate) fn u32(&mut self, v: u32) -> Result<()> {
        self.put(&v.to_be_bytes())
    }

    pub(crate) fn u64(&mut self, v: u64) -> Result<()> {
        self.put(&v.to_be_bytes())
    }
}

impl Writer<'_> {
    /// `v` as a QUIC varint in the `len`-byte form (1, 2, 4 or 8, at least
    /// [`varint_len`]`(v)`); a value above [`VARINT_MAX`] or a form too
    /// short for it is [`WireError::FieldOutOfRange`].
    pub(crate) fn varint(&mut self, field: &'static str, v: u64, len: usize) -> Result<()> {
        check_max(field, v, VARINT_MAX)?;
        if !matches!(len, 1 | 2 | 4 | 8) || len < varint_len(v) {
            return Err(WireError::FieldOutOfRange {
                field,
                value: v,
                max: match len {
                    1 => 0x3f,
                    2 => 0x3fff,
                    4 => 0x3fff_ffff,
                    _ => VARINT_MAX,
                },
            });
        }
        let tag = (len.trailing_zeros() as u64) << (8 * len - 2);
        let bytes = (v | tag).to_be_bytes();
        self.put(&bytes[8 - len..])
    }
}

/// Fails with [`WireError::BufferTooSmall`] unless `buf` holds `needed` bytes.
pub(crate) fn check_room(buf: &[u8], needed: usize) -> Result<()> {
    if buf.len() < needed {
        Err(WireError::BufferTooSmall {
            needed,
            available: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// Fails with [`WireError::FieldOutOfRange`] unless `value <= max`.
pub(crate) fn check_max(field: &'static str, value: u64, max: u64) -> Result<()> {
    if value > max {
        Err(WireError::FieldOutOfRange { field, value, max })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_reports_truncation_instead_of_panicking() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u16("a").unwrap(), 0x0102);
        assert_eq!(
            r.u32("b"),
            Err(WireError::Truncated {
                what: "b",
                needed: 4,
                available: 1
            })
        );
        assert_eq!(r.u8("c").unwrap(), 3);
        assert!(r.is_empty());
    }

    #[test]
    fn writer_reports_small_buffer() {
        let mut buf = [0u8; 3];
        let mut w = Writer::new(&mut buf);
        w.u16(0xabcd).unwrap();
        assert_eq!(
            w.u16(1),
            Err(WireError::BufferTooSmall {
                needed: 4,
                available: 3
            })
        );
        assert_eq!(w.written(), 2);
    }
}
