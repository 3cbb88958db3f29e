//! The scheduler registry: THE list of stream schedulers.
//!
//! [`SchedulerConfig`], its [`name`](SchedulerConfig::name) and
//! [`build`](SchedulerConfig::build), the name table [`SCHEDULERS`] and
//! the one name parser [`SchedulerConfig::from_name`] (used by scenario
//! files, `perf --scheduler` and Python) are generated from the one list
//! below. Adding a scheduler is one new file in `sched/` (declared in
//! `sched/mod.rs`) and one entry here (docs/architecture.md, "Adding a
//! scheduler"): its registry name, its variant, its parameter if it has
//! one (field, type, how it is made from the number given, the default,
//! what the number is), and the expression that builds it.

use super::{abs, adaptive, aging, edf, rr, wfq, Scheduler};
use std::time::Duration;

/// What a scheduler's one numeric parameter is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SchedulerParam {
    /// A rate in bits per second (scenario field `target_rate`; `perf
    /// --scheduler NAME:BPS`).
    RateBps,
    /// A time bound (scenario field `aging_bound`, any duration; `perf
    /// --scheduler NAME:MS` in milliseconds).
    BoundNanos,
}

impl SchedulerParam {
    /// How `perf --scheduler NAME:ARG` spells the argument (`BPS`, `MS`).
    pub fn cli_unit(self) -> &'static str {
        match self {
            SchedulerParam::RateBps => "BPS",
            SchedulerParam::BoundNanos => "MS",
        }
    }

    /// The parameter in its native unit (bit/s, ns) from the number
    /// `perf --scheduler NAME:ARG` gives (bit/s, ms); `None` on overflow.
    pub fn from_cli(self, arg: u64) -> Option<u64> {
        match self {
            SchedulerParam::RateBps => Some(arg),
            SchedulerParam::BoundNanos => arg.checked_mul(1_000_000),
        }
    }
}

/// One registered scheduler.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SchedulerInfo {
    /// Registry name (`"wfq"`): scenario files' `scheduler`, `perf --scheduler`.
    pub name: &'static str,
    /// Its numeric parameter, if it takes one.
    pub param: Option<SchedulerParam>,
    /// The parameter's default in its native unit (bit/s, ns) when
    /// `perf --scheduler NAME` omits it; 0 without a parameter.
    pub default_param: u64,
}

impl SchedulerInfo {
    /// How `perf --scheduler` spells it: `rr`, `adaptive[:BPS]`.
    pub fn cli_syntax(&self) -> String {
        match self.param {
            Some(p) => format!("{}[:{}]", self.name, p.cli_unit()),
            None => self.name.to_string(),
        }
    }
}

/// A scheduler name that is not registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownScheduler {
    /// The name that was asked for.
    pub name: String,
}

impl std::fmt::Display for UnknownScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown scheduler {:?} (allowed: {})",
            self.name,
            names().join(", ")
        )
    }
}

impl std::error::Error for UnknownScheduler {}

/// Every registered scheduler name, in registry order.
pub fn names() -> Vec<&'static str> {
    SCHEDULERS.iter().map(|s| s.name).collect()
}

/// The registry entry of `name`. O(registered schedulers).
pub fn scheduler(name: &str) -> Option<&'static SchedulerInfo> {
    SCHEDULERS.iter().find(|s| s.name == name)
}

/// `perf --scheduler`'s help: `rr, wfq, abs, adaptive[:BPS], edf, aging[:MS]`.
pub fn cli_syntax() -> String {
    SCHEDULERS
        .iter()
        .map(SchedulerInfo::cli_syntax)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Generates the registry from the one list below.
macro_rules! registry {
    ($(
        $(#[$attr:meta])*
        $name:literal => $variant:ident
            $({ $field:ident: $fty:ty = $make:expr, $param:ident, default $default:expr })?
            => $build:expr;
    )*) => {
        /// Which scheduler a connection uses; switchable at run time with
        /// [`Endpoint::set_scheduler`](crate::endpoint::Endpoint::set_scheduler).
        #[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
        pub enum SchedulerConfig {
            $($(#[$attr])* $variant $({
                #[allow(missing_docs)] // documented on the variant
                $field: $fty
            })?,)*
        }

        /// Every registered scheduler, in registry order.
        pub const SCHEDULERS: &[SchedulerInfo] = &[$(SchedulerInfo {
            name: $name,
            param: registry!(@param $($param)?),
            default_param: registry!(@default $($default)?),
        },)*];

        impl SchedulerConfig {
            /// A fresh scheduler of this kind.
            pub fn build(self) -> Box<dyn Scheduler> {
                match self {
                    $(SchedulerConfig::$variant $({ $field })? => Box::new($build),)*
                }
            }

            /// The registry name of the scheduler it builds.
            pub fn name(self) -> &'static str {
                match self {
                    $(SchedulerConfig::$variant { .. } => $name,)*
                }
            }

            /// The scheduler called `name`, its parameter (if it takes
            /// one) `param` in its native unit ([`SchedulerParam`]: bit/s,
            /// ns); a scheduler without a parameter ignores it. The one
            /// name parser of schedulers. O(registered schedulers).
            pub fn from_name(name: &str, param: u64) -> Result<SchedulerConfig, UnknownScheduler> {
                let _ = param; // unused when no scheduler takes one
                Ok(match name {
                    $($name => SchedulerConfig::$variant $({ $field: {
                        let p = param;
                        $make(p)
                    } })?,)*
                    other => return Err(UnknownScheduler { name: other.to_string() }),
                })
            }
        }
    };
    (@param $param:ident) => { Some(SchedulerParam::$param) };
    (@param) => { None };
    (@default $default:expr) => { $default };
    (@default) => { 0 };
}

registry! {
    /// Round robin (seed 002 Algorithm 1), the default.
    #[default]
    "rr" => RoundRobin => rr::RoundRobin::new();
    /// Weighted fair queuing by the streams' weights.
    "wfq" => Wfq => wfq::Wfq::new();
    /// Absolute priority by the streams' classes.
    "abs" => Abs => abs::Abs::new();
    /// Seed 002 Algorithm 4: ABS while `5/4 · cwnd · 8 / sRTT` is at most
    /// `target_bps` (the application's target rate, bits per second), RR
    /// above it.
    "adaptive" => Adaptive { target_bps: u64 = |p: u64| p, RateBps, default 10_000_000 }
        => adaptive::Adaptive::new(target_bps);
    /// Earliest deadline first.
    "edf" => Edf => edf::Edf::new();
    /// ABS with aging: no stream waits (unserved, with data queued) longer
    /// than `bound`, the longest wait (as long as the link can carry the
    /// aged streams at all).
    "aging" => Aging { bound: Duration = Duration::from_nanos, BoundNanos, default 100_000_000 }
        => aging::Aging::new(bound);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_scheduler_builds_under_its_name() {
        for s in SCHEDULERS {
            let c = SchedulerConfig::from_name(s.name, s.default_param).unwrap();
            assert_eq!(c.name(), s.name);
            assert_eq!(c.build().name(), s.name);
        }
        assert_eq!(names(), ["rr", "wfq", "abs", "adaptive", "edf", "aging"]);
        assert_eq!(
            cli_syntax(),
            "rr, wfq, abs, adaptive[:BPS], edf, aging[:MS]"
        );
        assert_eq!(SchedulerConfig::default(), SchedulerConfig::RoundRobin);
        assert_eq!(
            SchedulerConfig::from_name("aging", 5_000_000).unwrap(),
            SchedulerConfig::Aging {
                bound: Duration::from_millis(5)
            }
        );
        let e = SchedulerConfig::from_name("fifo", 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown scheduler \"fifo\" (allowed: rr, wfq, abs, adaptive, edf, aging)"
        );
    }
}
