//! The tunnel's control-record decoder (`peregrine::tunnel::wire`): it
//! must never panic on any bytes, and a decoded record re-encodes to the
//! same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peregrine::tunnel::wire::Control;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Control::decode(data) {
        assert_eq!(c.encode(), data);
    }
});
