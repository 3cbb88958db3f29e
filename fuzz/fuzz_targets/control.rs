//! The control messages carried in an ECHO (`wire::control`:
//! NEW_CONNECTION_ID and KEY_UPDATE, issue 37). Input: one flags byte (its
//! REPLY_REQ and REPLY bits are used), then an ECHO payload. Nothing may
//! panic; whatever decodes as a control message must re-encode to the
//! same flags and payload, and every other ECHO must decode as none.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peregrine_proto::wire::control::{KEY_UPDATE_PROBE_ID, NEW_CONNECTION_ID_PROBE_ID};
use peregrine_proto::wire::{Control, EchoPayload, Flags, PacketType};

fuzz_target!(|data: &[u8]| {
    let Some((&f, rest)) = data.split_first() else {
        return;
    };
    let flags = Flags(f & (Flags::REPLY_REQ.bits() | Flags::REPLY.bits()));
    let Ok(p) = EchoPayload::decode(rest) else {
        return;
    };
    for t in [PacketType::Echo, PacketType::Echo1, PacketType::Echo2] {
        match Control::from_echo(t, flags, &p) {
            Ok(Some(c)) => {
                assert_eq!(t, PacketType::Echo);
                let (f2, p2) = c.to_echo(p.packet_number);
                assert_eq!(f2, flags);
                assert_eq!(p2, p);
            }
            Ok(None) => assert!(
                t != PacketType::Echo
                    || (p.probe_id != NEW_CONNECTION_ID_PROBE_ID && p.probe_id != KEY_UPDATE_PROBE_ID)
            ),
            Err(e) => {
                assert_eq!(t, PacketType::Echo);
                assert!(!e.to_string().is_empty());
            }
        }
    }
});
