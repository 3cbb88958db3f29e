//! The DATA (stream frames) payload decoder: it must never panic, and whatever decodes
//! must re-encode to the same bytes — both as decoded (a checked view of the input)
//! and rebuilt from the frames its iterator yields.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peregrine_proto::wire::DataPayload;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = DataPayload::decode(data) {
        let mut out = vec![0u8; p.buffer_len()];
        let n = p.emit(&mut out).expect("a decoded payload re-encodes");
        assert_eq!(&out[..n], data);
        let rebuilt = DataPayload {
            packet_number: p.packet_number,
            frames: p.frames.iter().collect::<Vec<_>>().into(),
        };
        assert_eq!(rebuilt, p);
        let mut again = vec![0u8; rebuilt.buffer_len()];
        let m = rebuilt.emit(&mut again).expect("the frames re-encode");
        assert_eq!(&again[..m], data);
    }
});
