//! The modelled physical world: geometry, mobility, channels, links,
//! queues and routing. Positions are sampled by the channel when it needs
//! them; everything here is a pure value driven in virtual time.

pub mod channel;
pub mod geom;
pub mod mobility;
pub mod routing;
