//! # peregrine-link: the one link implementation
//!
//! The primitives every link of the project is built from, in one place:
//! the simulator's links (`peregrine_sim::world`), hence the live emulator
//! (`peregrine emu`, which runs the simulator's link model from a wall
//! clock), and the sans-IO core's test harness (`peregrine_proto::harness`,
//! whose pipes are this crate's primitives around a virtual queue).
//!
//! * [`serialise`]: time on the wire at a rate;
//! * [`aqm`]: queue disciplines — drop-tail, CoDel, FQ-CoDel, PIE, RED, DualPI2 — with ECN marking;
//! * [`fifo`]: the byte-counted FIFO and its drop-tail [`QueueLimit`](fifo::QueueLimit);
//! * [`outage`]: scheduled, periodic and random outage windows;
//! * [`loss`]: Bernoulli and the one Gilbert–Elliott channel;
//! * [`impair`]: jitter, corruption and duplication draws;
//! * [`uniform`]: the random source a caller hands in.
//!
//! The crate is sans-IO and has no random-number dependency in its normal
//! build: every draw goes through the caller's [`Uniform`](uniform::Uniform)
//! source, so each user keeps its own seeded generator (ChaCha streams in
//! the harness and the simulator, SplitMix64 in the controller lab). The
//! optional `rand` feature adds [`uniform::RandSource`], the bridge from a
//! `rand` generator; `serde` derives (de)serialisation for the harness's
//! configuration types. Time is [`peregrine_cc::Time`].
//!
//! Dependencies point down: `peregrine-cc` ← `peregrine-link` ←
//! {`peregrine-proto` (harness), `peregrine-sim`} ← `peregrine-emu`.

pub mod aqm;
pub mod fifo;
pub mod impair;
pub mod loss;
pub mod outage;
pub mod serialise;
pub mod uniform;

pub use peregrine_cc::Time;
