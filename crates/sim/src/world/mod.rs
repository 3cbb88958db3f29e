//! The modelled physical world: geometry, packets, links, queues, loss
//! and outages. Positions are sampled by the channel when it needs them;
//! everything here is a pure value driven in virtual time.
//!
//! Each model's configuration (the serde table a scenario writes for it,
//! its defaults, its validated form) lives beside the model; checking it
//! against the rest of a scenario and assembling the model is
//! `crate::scenario`'s job. Nothing here imports from `crate::scenario`.

pub mod cells;
pub mod channel;
pub mod dcf;
pub mod geom;
pub mod grid;
pub mod hint_plan;
pub mod link;
pub mod link_model;
pub mod link_options;
pub mod link_registry;
pub mod loss;
pub mod medium;
pub mod mmwave_link;
pub mod mobility;
pub mod olsr;
pub mod outage;
pub mod packet;
pub mod queue;
pub mod routing;
pub mod trace;
pub mod vehicles;
pub mod wireless;
