//! The multicast group-message decoder and the receiver's de-duplication
//! and ordering: they must never panic on any bytes, a decoded message
//! re-encodes to the same bytes, and the receiver never delivers a
//! sequence number twice or out of order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peregrine_proto::multicast::{GroupMessage, GroupReceiver};

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = GroupMessage::decode(data) {
        assert_eq!(m.encode(), data);
    }
    // The same bytes cut into messages of 0..=31 bytes, fed to a receiver.
    let mut rx = GroupReceiver::new(0, 8);
    let mut rest = data;
    let mut last: Option<u64> = None;
    while let Some((&len, tail)) = rest.split_first() {
        let n = usize::from(len % 32).min(tail.len());
        let (msg, tail) = tail.split_at(n);
        let _ = rx.on_message(msg);
        while let Some((seq, _)) = rx.poll_message() {
            assert!(last.is_none_or(|l| seq == l + 1), "in order, once");
            last = Some(seq);
        }
        rest = tail;
    }
});
