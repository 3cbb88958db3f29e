//! # Benchmarks that run in the laboratory's process
//!
//! * [`endpoint`]: `peregrine bench endpoint`, the sans-IO scale
//!   benchmark of one server endpoint holding thousands of connections
//!   (issue 20).
//! * [`alloc`]: the heap counter it reads its KiB per connection from.
//! * [`sim`]: `peregrine bench sim`, events per wall-second, wall time
//!   and peak RSS of a simulator scenario (issue 40).

pub mod alloc;
pub mod endpoint;
pub mod sim;
