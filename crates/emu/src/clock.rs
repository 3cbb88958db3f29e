//! The one place where the emulator's clock meets the link model's time.
//!
//! The emulator measures time as nanoseconds since its start (a
//! monotonic [`std::time::Instant`]); the link model's `now` arguments
//! and the arrival times it reports are [`ModelTime`], the simulator's
//! own clock type, so a real-time run and a simulated run of the same
//! link read the same instants.

/// The link model's time type (nanoseconds since the emulator started).
pub type ModelTime = peregrine_cc::Time;

/// The model time of `ns` nanoseconds since the emulator started. O(1).
#[inline]
pub fn to_model(ns: u64) -> ModelTime {
    ModelTime::from_nanos(ns)
}

/// Nanoseconds since the emulator started of model time `t`. O(1).
#[inline]
pub fn from_model(t: ModelTime) -> u64 {
    t.as_nanos()
}
