//! Experiments: sweeps over scenario fields and seeds, run in parallel and
//! aggregated with confidence intervals.
//!
//! The sweep engine is the laboratory's (it was `peregrine_sim::experiment`;
//! the simulator is the engine and its models only): a typed runner —
//! [`run_sweep`] is generic over what one run returns — that any engine
//! plugs into through a closure.
//!
//! An experiment is one scenario document run many times: once per
//! *grid point* (a combination of field values, [`SweepSpec::points`]) and
//! per *seed*. The pieces, in the order they are used:
//!
//! * [`spec`]: what to sweep — the `[sweep]` table of a scenario document
//!   or the `--sweep key=v1,v2 --seeds N` command-line form;
//! * [`runner`]: [`run_sweep`] runs every (point, seed) across cores with
//!   rayon through a caller-given closure (the engine, or a toy in tests)
//!   and returns the summaries in (point, seed) order whatever the order
//!   of completion, so the thread count never changes a result;
//! * [`stats`]: mean, standard deviation, median and the 95 % Student-t
//!   confidence interval;
//! * [`compare`]: one point's per-seed values of a key (for box plots
//!   and CDFs) and paired per-seed comparisons of two points (gains over
//!   a baseline) with their confidence interval;
//! * [`aggregate`](mod@aggregate): every numeric leaf of the run summaries, per grid
//!   point, as a tidy CSV and a JSON document with byte-deterministic
//!   number formatting.
//!
//! Nothing here prints: progress goes through a callback.

pub mod aggregate;
pub mod compare;
pub mod runner;
pub mod spec;
pub mod stats;

pub use aggregate::{aggregate, Aggregate, KeyStats, PointStats};
pub use compare::{paired, values, CompareError};
pub use runner::{run_sweep, SweepError, SweepOutcome, DEFAULT_BASE_SEED, SEED_KEY};
pub use spec::{SpecError, SweepPoint, SweepSpec};
pub use stats::{t_975, Summary};
