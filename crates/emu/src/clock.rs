//! The one place where the emulator's clock meets the link model's time.
//!
//! The emulator measures time as nanoseconds since its start (a
//! monotonic [`std::time::Instant`]); the link model's `now` arguments
//! and the arrival times it reports are [`ModelTime`]. When the
//! `LinkModel` trait moves from `u64` nanoseconds to
//! `peregrine_cc::Time` (same meaning), only this file changes:
//! `pub type ModelTime = peregrine_cc::Time;` and the two bodies below
//! become `Time::from_nanos(ns)` and `t.as_nanos()`.

/// The link model's time type (nanoseconds since the emulator started).
pub type ModelTime = u64;

/// The model time of `ns` nanoseconds since the emulator started. O(1).
#[inline]
pub fn to_model(ns: u64) -> ModelTime {
    ns
}

/// Nanoseconds since the emulator started of model time `t`. O(1).
#[inline]
pub fn from_model(t: ModelTime) -> u64 {
    t
}
