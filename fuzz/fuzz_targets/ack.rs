//! The ACK payload decoder: it must never panic, and whatever decodes
//! must re-encode to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peregrine_proto::wire::AckPayload;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = AckPayload::decode(data) {
        let mut out = vec![0u8; p.buffer_len()];
        let n = p.emit(&mut out).expect("a decoded payload re-encodes");
        assert_eq!(&out[..n], data);
    }
});
