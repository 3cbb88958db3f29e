//! # peregrine-fuzz: the drivers behind the whole-endpoint fuzz target
//!
//! The decoder targets in `fuzz_targets/` call `peregrine_proto::wire`
//! directly. The `endpoint` target needs more — a connected endpoint pair,
//! an attacker-controlled network, invariant checks — and so does the
//! corpus generator (`examples/gen_corpus.rs`) that writes its seeds, so
//! that machinery lives here: [`ops`] is the input format, [`world`] runs
//! it, [`modes`] lists the security modes, [`forge`] builds forgeries, [`checks`] holds
//! what the invariants measure. It
//! builds on stable too (`cargo test` in `fuzz/` replays the committed
//! corpus).
#![warn(missing_docs)]

pub mod checks;
pub mod forge;
pub mod modes;
pub mod ops;
pub mod world;
