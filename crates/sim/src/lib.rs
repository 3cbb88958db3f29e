//! # peregrine-sim — the laboratory (not yet built)
//!
//! A deterministic discrete-event simulator that will run the unmodified
//! `peregrine-proto` code over modelled mobile wireless networks. This crate
//! is an empty shell until the simulator issues land; today's controller lab
//! lives in `peregrine_cc::lab`.

#![warn(missing_docs)]
