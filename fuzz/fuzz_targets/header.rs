//! The base-header decoder: checked view, getters, parsed form, emit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peregrine_proto::wire::{Header, HeaderRepr, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    let Ok(view) = Header::new_checked(data) else {
        return;
    };
    let _ = (view.flags(), view.window_size(), view.sync_no(), view.pk_type());
    if let Ok(repr) = HeaderRepr::parse(&view) {
        let mut out = [0u8; HEADER_LEN];
        repr.emit(&mut out).expect("a parsed header re-encodes");
        assert_eq!(&out[..], &data[..HEADER_LEN]);
    }
});
