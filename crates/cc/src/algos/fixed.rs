//! Fixed: a constant congestion window, for tests only.
//!
//! Not a congestion controller anyone should run: it exists to follow the
//! registry recipe (docs/architecture.md, "Adding a controller") once for
//! real. It is registered in the registry's `unlisted` section, so
//! `CcConfig::from_name("fixed")`, scenario files (`cc = "fixed"`), `perf
//! --cc fixed` and `peregrine cc trace fixed` accept it, while
//! [`NAMES`](crate::registry::NAMES) — and so `cc list`, the docs, the
//! showcase and every experiment that runs all controllers — does not list it.
//!
//! Every ACK in congestion avoidance sets the window back to
//! `window_segments`, and a congestion event keeps `ssthresh` there: the
//! window never grows above it.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Fixed-window settings.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct FixedConfig {
    /// Shared core settings (the initial window among them).
    pub core: CoreConfig,
    /// The window, in segments (at least 2).
    pub window_segments: u32,
}

impl Default for FixedConfig {
    fn default() -> Self {
        FixedConfig {
            core: CoreConfig::default(),
            window_segments: 10,
        }
    }
}

impl FixedConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Fixed> {
        PolicyController::new(
            self.core.clone(),
            Fixed {
                window_segments: self.window_segments.max(2),
            },
        )
    }
}

/// The fixed-window policy.
#[derive(Clone, Debug)]
pub struct Fixed {
    window_segments: u32,
}

impl CcPolicy for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, _acked: u32, _p: &PathInfo) {
        core.cwnd = self.window_segments;
    }

    fn ssthresh(&mut self, _core: &Core, _path: &PathInfo) -> u32 {
        self.window_segments
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionController;
    use crate::testutil::{ack, path};

    #[test]
    fn acks_never_grow_the_window_past_its_size() {
        let mut c = crate::testutil::with_window(FixedConfig::default().build(), 4, 2);
        for _ in 0..1000 {
            c.on_ack(&ack(1), &path(0, 100));
        }
        assert_eq!(c.core().cwnd, 10);
    }
}
