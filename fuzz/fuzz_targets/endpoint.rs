//! A whole endpoint pair, connected by a real handshake, fed an arbitrary
//! sequence of attacker datagrams (raw, mutated, truncated, replayed,
//! forged), network losses and reorderings, time steps and application
//! calls, with invariants checked after every step
//! (`peregrine_fuzz::world`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    peregrine_fuzz::world::World::run(data);
});
