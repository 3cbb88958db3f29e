//! # peregrine — the transport over UDP (not yet built)
//!
//! The library applications will `cargo add`: an endpoint over a UDP socket
//! driving the sans-IO `peregrine-proto` core. An empty shell until the
//! runtime issue lands.

#![warn(missing_docs)]
