//! The whole-datagram decoder, with and without a tag area: it must never
//! panic, and whatever decodes must re-encode to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peregrine_proto::wire::{peek_packet_number, DatagramRepr, AUTH_TAG_LEN};

fuzz_target!(|data: &[u8]| {
    let _ = peek_packet_number(data);
    for tag_len in [0, AUTH_TAG_LEN] {
        if let Ok(d) = DatagramRepr::decode_with_tag(data, tag_len) {
            let mut out = vec![0u8; d.buffer_len()];
            let n = d.emit(&mut out).expect("a decoded datagram re-encodes");
            assert_eq!(&out[..n], data);
        }
    }
});
