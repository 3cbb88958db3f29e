//! FLAGS: the 8 SLTP flag bits (seed 003 Table III). Bit 0 is the most
//! significant bit of the byte, as RFC diagrams number bits.

use core::fmt;

/// The FLAGS byte. Every bit pattern is valid, so this is a plain newtype.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Flags(pub u8);

impl Flags {
    /// Bit 0: WINDOW_SIZE is valid.
    pub const W_VAL: Flags = Flags(0x80);
    /// Bit 1: CHKSUM is set and must be verified.
    pub const ST_CKS: Flags = Flags(0x40);
    /// Bit 2: retransmission is permitted.
    pub const ST_RTR: Flags = Flags(0x20);
    /// Bit 3: this packet is a retransmission.
    pub const ST_RET: Flags = Flags(0x10);
    /// Bit 4: the connection was reset by the other side.
    pub const REMOTE_RESET: Flags = Flags(0x08);
    /// Bit 5: a reply is requested.
    pub const REPLY_REQ: Flags = Flags(0x04);
    /// Bit 6: reply to a previous request.
    pub const REPLY: Flags = Flags(0x02);
    /// Bit 7: the last message was correctly received (an acknowledgement
    /// flag; a message's end is PBLOCK = TBLOCK − 1 or a frame's EOM bit).
    pub const EOM: Flags = Flags(0x01);

    /// No flag set.
    pub const EMPTY: Flags = Flags(0);

    /// Every flag with its SLTP name, most significant bit first.
    pub const NAMED: [(Flags, &'static str); 8] = [
        (Flags::W_VAL, "W_VAL"),
        (Flags::ST_CKS, "ST_CKS"),
        (Flags::ST_RTR, "ST_RTR"),
        (Flags::ST_RET, "ST_RET"),
        (Flags::REMOTE_RESET, "REMOTE_RESET"),
        (Flags::REPLY_REQ, "REPLY_REQ"),
        (Flags::REPLY, "REPLY"),
        (Flags::EOM, "EOM"),
    ];

    /// The raw byte.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether every bit of `other` is set here.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// These flags with `other`'s bits added.
    #[must_use]
    pub const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    /// Names of the set flags, most significant bit first.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Flags::NAMED
            .into_iter()
            .filter(move |(f, _)| self.contains(*f))
            .map(|(_, name)| name)
    }

    /// The flag with this SLTP name (e.g. `"REPLY_REQ"`).
    pub fn from_name(name: &str) -> Option<Flags> {
        Flags::NAMED
            .into_iter()
            .find(|(_, n)| *n == name)
            .map(|(f, _)| f)
    }
}

impl core::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        self.with(rhs)
    }
}

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for name in self.names() {
            if !first {
                f.write_str("|")?;
            }
            f.write_str(name)?;
            first = false;
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_values_match_table_iii() {
        let bits: Vec<u8> = Flags::NAMED.iter().map(|(f, _)| f.bits()).collect();
        assert_eq!(bits, [0x80, 0x40, 0x20, 0x10, 0x08, 0x04, 0x02, 0x01]);
        let f = Flags::REPLY_REQ | Flags::ST_CKS;
        assert_eq!(f.names().collect::<Vec<_>>(), ["ST_CKS", "REPLY_REQ"]);
        assert_eq!(f.to_string(), "ST_CKS|REPLY_REQ");
        assert_eq!(Flags::from_name("EOM"), Some(Flags::EOM));
        assert_eq!(Flags::from_name("eom"), None);
    }
}
