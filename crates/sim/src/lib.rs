//! # peregrine-sim — the laboratory
//!
//! A deterministic discrete-event simulator that runs the unmodified
//! `peregrine-proto` code over modelled mobile wireless networks.
//!
//! * [`rng`]: every random source is a seeded generator derived from the
//!   scenario seed and a stable component name, so adding a component never
//!   changes another component's draws.
//! * [`scenario`]: scenario files and `key=value` overrides.
//! * [`experiment`]: sweeps over scenario fields and seeds, run across
//!   cores and aggregated with 95 % confidence intervals.
//! * [`world`]: the modelled physical world — geometry, and (as they land)
//!   mobility, channels, links, queues and routing.

#![warn(missing_docs)]

pub mod experiment;
pub mod rng;
pub mod scenario;
pub mod world;

pub use peregrine_cc::Time;
