//! The 20-byte SLTP base header, exactly as seed 003 Table I and
//! ARCHITECTURE.md fix it (network byte order, 32 bits a row):
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-------------------------------+-------------------------------+
//! |            DEST_ID            |            SRC_ID             |
//! +-------+---+---+---------------+-------------------------------+
//! |PK_TYPE|PRI|CN |     FLAGS     |            CHKSUM             |
//! +-------+---+---+---------------+---------------+---------------+
//! |           TOTAL_LEN           |    PBLOCK     |    TBLOCK     |
//! +-------------------------------+-------------------------------+
//! |          MESS_SEQ_NO          |          MESS_ACC_NO          |
//! +-----------------------+-------+-------------------------------+
//! |        SYNC_NO        |              WINDOW_SIZE              |
//! +-----------------------+---------------------------------------+
//! ```
//!
//! [`Header`] is a checked view over a buffer (smoltcp style): once
//! [`Header::new_checked`] has accepted it, every getter is infallible.
//! [`HeaderRepr`] is the parsed form; [`HeaderRepr::emit`] writes it back.

use super::cursor::{check_max, check_room};
use super::error::{Result, WireError};
use super::flags::Flags;
use super::packet_type::PacketType;

/// Length of the base header in bytes.
pub const HEADER_LEN: usize = 20;
/// Largest PRI value (2 bits).
pub const PRI_MAX: u8 = 3;
/// Largest CN value (2 bits).
pub const CN_MAX: u8 = 3;
/// Largest SYNC_NO value (12 bits).
pub const SYNC_NO_MAX: u16 = 0x0fff;
/// Largest WINDOW_SIZE value (20 bits).
pub const WINDOW_SIZE_MAX: u32 = 0x000f_ffff;

mod field {
    use core::ops::Range;
    pub const DEST_ID: Range<usize> = 0..2;
    pub const SRC_ID: Range<usize> = 2..4;
    pub const TYPE_PRI_CN: usize = 4;
    pub const FLAGS: usize = 5;
    pub const CHKSUM: Range<usize> = 6..8;
    pub const TOTAL_LEN: Range<usize> = 8..10;
    pub const PBLOCK: usize = 10;
    pub const TBLOCK: usize = 11;
    pub const MESS_SEQ_NO: Range<usize> = 12..14;
    pub const MESS_ACC_NO: Range<usize> = 14..16;
    pub const SYNC_WINDOW: Range<usize> = 16..20;
}

/// A read-only view of a base header at the start of `buffer`.
///
/// Constructed only through [`Header::new_checked`], which guarantees the
/// buffer holds at least [`HEADER_LEN`] bytes; the getters rely on that and
/// read fixed offsets below 20.
#[derive(Debug, Clone, Copy)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Wraps `buffer` after checking it holds a whole base header.
    pub fn new_checked(buffer: T) -> Result<Header<T>> {
        let len = buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::ShorterThanHeader { len });
        }
        Ok(Header { buffer })
    }

    fn bytes(&self) -> &[u8; HEADER_LEN] {
        // `new_checked` guarantees the length; the fallback is unreachable
        // and only keeps this function free of a panic path.
        self.buffer
            .as_ref()
            .first_chunk::<HEADER_LEN>()
            .unwrap_or(&[0; HEADER_LEN])
    }

    fn u16_at(&self, r: core::ops::Range<usize>) -> u16 {
        let b = self.bytes();
        u16::from_be_bytes([b[r.start], b[r.start + 1]])
    }

    /// DEST_ID: connection id at the remote end.
    pub fn dest_id(&self) -> u16 {
        self.u16_at(field::DEST_ID)
    }
    /// SRC_ID: connection id at the local end.
    pub fn src_id(&self) -> u16 {
        self.u16_at(field::SRC_ID)
    }
    /// The raw 4-bit PK_TYPE code (0 is invalid).
    pub fn pk_type_code(&self) -> u8 {
        self.bytes()[field::TYPE_PRI_CN] >> 4
    }
    /// PK_TYPE, or [`WireError::ReservedPacketType`] for code 0.
    pub fn pk_type(&self) -> Result<PacketType> {
        PacketType::from_code(self.pk_type_code())
    }
    /// PRI: priority, 0..=3.
    pub fn pri(&self) -> u8 {
        (self.bytes()[field::TYPE_PRI_CN] >> 2) & 0b11
    }
    /// CN: congestion notification, 0..=3.
    pub fn cn(&self) -> u8 {
        self.bytes()[field::TYPE_PRI_CN] & 0b11
    }
    /// FLAGS.
    pub fn flags(&self) -> Flags {
        Flags(self.bytes()[field::FLAGS])
    }
    /// CHKSUM as carried.
    pub fn chksum(&self) -> u16 {
        self.u16_at(field::CHKSUM)
    }
    /// TOTAL_LEN: length of the whole datagram in bytes.
    pub fn total_len(&self) -> u16 {
        self.u16_at(field::TOTAL_LEN)
    }
    /// PBLOCK: current block of the message.
    pub fn pblock(&self) -> u8 {
        self.bytes()[field::PBLOCK]
    }
    /// TBLOCK: number of blocks of the message.
    pub fn tblock(&self) -> u8 {
        self.bytes()[field::TBLOCK]
    }
    /// MESS_SEQ_NO.
    pub fn mess_seq_no(&self) -> u16 {
        self.u16_at(field::MESS_SEQ_NO)
    }
    /// MESS_ACC_NO.
    pub fn mess_acc_no(&self) -> u16 {
        self.u16_at(field::MESS_ACC_NO)
    }
    fn sync_window(&self) -> u32 {
        let b = self.bytes();
        let r = field::SYNC_WINDOW;
        u32::from_be_bytes([b[r.start], b[r.start + 1], b[r.start + 2], b[r.start + 3]])
    }
    /// SYNC_NO: 12-bit anti-replay number.
    pub fn sync_no(&self) -> u16 {
        (self.sync_window() >> 20) as u16
    }
    /// WINDOW_SIZE: 20-bit receive window (scaled, see the WINDOW_SCALE TLV).
    pub fn window_size(&self) -> u32 {
        self.sync_window() & WINDOW_SIZE_MAX
    }
}

/// The parsed base header.
///
/// `total_len` and `chksum` are kept as carried so that a decoded datagram
/// re-encodes to the same bytes; [`super::DatagramRepr::emit`] recomputes
/// `total_len` always and `chksum` when ST_CKS is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeaderRepr {
    /// DEST_ID.
    pub dest_id: u16,
    /// SRC_ID.
    pub src_id: u16,
    /// PK_TYPE.
    pub pk_type: PacketType,
    /// PRI, 0..=3; 0 is the most urgent class.
    pub pri: u8,
    /// CN, 0..=3.
    pub cn: u8,
    /// FLAGS.
    pub flags: Flags,
    /// CHKSUM.
    pub chksum: u16,
    /// TOTAL_LEN.
    pub total_len: u16,
    /// PBLOCK.
    pub pblock: u8,
    /// TBLOCK.
    pub tblock: u8,
    /// MESS_SEQ_NO.
    pub mess_seq_no: u16,
    /// MESS_ACC_NO.
    pub mess_acc_no: u16,
    /// SYNC_NO, 0..=4095.
    pub sync_no: u16,
    /// WINDOW_SIZE, 0..=0xFFFFF.
    pub window_size: u32,
}

impl HeaderRepr {
    /// A header of type `pk_type` with every other field zero.
    pub fn new(pk_type: PacketType) -> HeaderRepr {
        HeaderRepr {
            dest_id: 0,
            src_id: 0,
            pk_type,
            pri: 0,
            cn: 0,
            flags: Flags::EMPTY,
            chksum: 0,
            total_len: 0,
            pblock: 0,
            tblock: 0,
            mess_seq_no: 0,
            mess_acc_no: 0,
            sync_no: 0,
            window_size: 0,
        }
    }

    /// Parses a checked view. Fails only on PK_TYPE 0; length and checksum
    /// are checked by [`super::DatagramRepr::decode`], which sees the whole
    /// datagram.
    pub fn parse<T: AsRef<[u8]>>(h: &Header<T>) -> Result<HeaderRepr> {
        Ok(HeaderRepr {
            dest_id: h.dest_id(),
            src_id: h.src_id(),
            pk_type: h.pk_type()?,
            pri: h.pri(),
            cn: h.cn(),
            flags: h.flags(),
            chksum: h.chksum(),
            total_len: h.total_len(),
            pblock: h.pblock(),
            tblock: h.tblock(),
            mess_seq_no: h.mess_seq_no(),
            mess_acc_no: h.mess_acc_no(),
            sync_no: h.sync_no(),
            window_size: h.window_size(),
        })
    }

    /// Decodes the header at the start of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<HeaderRepr> {
        HeaderRepr::parse(&Header::new_checked(bytes)?)
    }

    /// Writes the 20 header bytes, exactly as given, into `buf[..20]`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let pk_type = self.pk_type;
        check_max("pri", self.pri.into(), PRI_MAX.into())?;
        check_max("cn", self.cn.into(), CN_MAX.into())?;
        check_max("sync_no", self.sync_no.into(), SYNC_NO_MAX.into())?;
        check_max(
            "window_size",
            self.window_size.into(),
            WINDOW_SIZE_MAX.into(),
        )?;
        check_room(buf, HEADER_LEN)?;
        let Some(out) = buf.first_chunk_mut::<HEADER_LEN>() else {
            return Err(WireError::BufferTooSmall {
                needed: HEADER_LEN,
                available: buf.len(),
            });
        };
        out[field::DEST_ID].copy_from_slice(&self.dest_id.to_be_bytes());
        out[field::SRC_ID].copy_from_slice(&self.src_id.to_be_bytes());
        out[field::TYPE_PRI_CN] = (pk_type.code() << 4) | (self.pri << 2) | self.cn;
        out[field::FLAGS] = self.flags.bits();
        out[field::CHKSUM].copy_from_slice(&self.chksum.to_be_bytes());
        out[field::TOTAL_LEN].copy_from_slice(&self.total_len.to_be_bytes());
        out[field::PBLOCK] = self.pblock;
        out[field::TBLOCK] = self.tblock;
        out[field::MESS_SEQ_NO].copy_from_slice(&self.mess_seq_no.to_be_bytes());
        out[field::MESS_ACC_NO].copy_from_slice(&self.mess_acc_no.to_be_bytes());
        let sync_window = (u32::from(self.sync_no) << 20) | self.window_size;
        out[field::SYNC_WINDOW].copy_from_slice(&sync_window.to_be_bytes());
        Ok(HEADER_LEN)
    }
}

/// Writes `total_len` and `chksum` into an already emitted header (offsets
/// 8 and 6). The caller guarantees `buf` holds at least [`HEADER_LEN`] bytes.
pub(crate) fn patch_len_and_checksum(buf: &mut [u8], total_len: u16, chksum: u16) {
    if let Some(out) = buf.first_chunk_mut::<HEADER_LEN>() {
        out[field::TOTAL_LEN].copy_from_slice(&total_len.to_be_bytes());
        out[field::CHKSUM].copy_from_slice(&chksum.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_packing_of_row_two_and_five() {
        let repr = HeaderRepr {
            dest_id: 0x0102,
            src_id: 0x0304,
            pk_type: PacketType::Cwin,
            pri: 2,
            cn: 1,
            flags: Flags::W_VAL | Flags::EOM,
            chksum: 0xbeef,
            total_len: 20,
            pblock: 7,
            tblock: 9,
            mess_seq_no: 0xaaaa,
            mess_acc_no: 0x5555,
            sync_no: 0xabc,
            window_size: 0xd_ef01,
        };
        let mut buf = [0u8; 20];
        assert_eq!(repr.emit(&mut buf), Ok(20));
        assert_eq!(buf[4], 0xd9); // 1101 10 01
        assert_eq!(&buf[16..20], &[0xab, 0xcd, 0xef, 0x01]);
        assert_eq!(HeaderRepr::decode(&buf), Ok(repr));
    }

    #[test]
    fn rejects_short_and_type_zero() {
        assert_eq!(
            HeaderRepr::decode(&[0; 19]),
            Err(WireError::ShorterThanHeader { len: 19 })
        );
        assert_eq!(
            HeaderRepr::decode(&[0; 20]),
            Err(WireError::ReservedPacketType)
        );
    }

    #[test]
    fn emit_checks_field_widths() {
        let mut buf = [0u8; 20];
        let mut r = HeaderRepr::new(PacketType::Idle);
        r.sync_no = 4096;
        assert!(matches!(
            r.emit(&mut buf),
            Err(WireError::FieldOutOfRange {
                field: "sync_no",
                ..
            })
        ));
        r.sync_no = 0;
        r.window_size = 1 << 20;
        assert!(r.emit(&mut buf).is_err());
        assert!(matches!(
            HeaderRepr::new(PacketType::Idle).emit(&mut [0u8; 19]),
            Err(WireError::BufferTooSmall { .. })
        ));
    }
}
