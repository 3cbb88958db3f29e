//! # Well-formed forgeries from captured headers
//!
//! What an on-path attacker of an unprotected link builds without solving
//! anything: a valid END / FIN / REMOTE_RESET / NACK / CWIN / … carrying a
//! seen datagram's connection ids, SYNC_NO and window, with a correct
//! checksum. In a protected mode the attacker cannot make the tag, so the
//! forgery carries garbage there and must be rejected and counted.

use peregrine_proto::wire::{
    BarePayload, CwinPayload, CwinReason, DatagramRepr, Flags, Header, HeaderRepr, MissingPackets,
    NackPayload, PacketType, Payload, AUTH_TAG_LEN,
};

/// A well-formed datagram of the kind `kind` selects, with the ids,
/// SYNC_NO and window of the captured `template` and a valid checksum;
/// with a 16-byte garbage tag when `tagged`. `None` if the template's
/// header does not parse.
pub fn forge(template: &[u8], kind: u8, number: u32, tagged: bool) -> Option<Vec<u8>> {
    let t = HeaderRepr::parse(&Header::new_checked(template).ok()?).ok()?;
    let bare = Payload::Bare(BarePayload {
        packet_number: number,
    });
    let (pk_type, flags, payload) = match kind % 9 {
        0 => (PacketType::End, Flags::REPLY_REQ, bare),
        1 => (PacketType::End, Flags::REPLY, bare),
        2 => (PacketType::Fin, Flags::EMPTY, bare),
        3 => (PacketType::Fin, Flags::REMOTE_RESET, bare),
        4 => (PacketType::Idle, Flags::EMPTY, bare),
        5 => (PacketType::Status, Flags::REPLY_REQ, bare),
        6 => (
            PacketType::Nack,
            Flags::EMPTY,
            Payload::Nack(NackPayload {
                packet_number: number,
                missing_packets: vec![MissingPackets {
                    first: u64::from(number % 64),
                    count: 1 + number % 8,
                }],
                missing_blocks: Vec::new(),
            }),
        ),
        7 => (
            PacketType::Cwin,
            Flags::EMPTY,
            Payload::Cwin(CwinPayload {
                packet_number: number,
                window_bytes: 0,
                reason: CwinReason::HANDOVER_START,
            }),
        ),
        _ => (
            PacketType::Cwin,
            Flags::EMPTY,
            Payload::Cwin(CwinPayload {
                packet_number: number,
                window_bytes: number,
                reason: CwinReason::HANDOVER_END,
            }),
        ),
    };
    let mut header = HeaderRepr::new(pk_type);
    header.dest_id = t.dest_id;
    header.src_id = t.src_id;
    header.sync_no = t.sync_no;
    header.window_size = t.window_size;
    let w_val = if t.flags.contains(Flags::W_VAL) {
        Flags::W_VAL
    } else {
        Flags::EMPTY
    };
    // ST_CKS as the captured packet has it: set on plain packets, clear
    // on sealed ones (a sealed datagram carries no checksum), so a forgery
    // reaches the tag check rather than the ST_CKS rule.
    let st_cks = if t.flags.contains(Flags::ST_CKS) {
        Flags::ST_CKS
    } else {
        Flags::EMPTY
    };
    header.flags = flags | st_cks | w_val;
    let tag = [0xa5u8; AUTH_TAG_LEN];
    let d = DatagramRepr {
        header,
        payload,
        auth_tag: if tagged { &tag } else { &[] },
    };
    let mut out = vec![0u8; d.buffer_len()];
    let n = d.emit(&mut out).ok()?;
    out.truncate(n);
    Some(out)
}
