//! STUB: placeholder so the registry compiles; replaced by the real Cubic.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Cubic settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CubicConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl CubicConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Cubic> {
        PolicyController::new(self.core.clone(), Cubic {})
    }
}

/// The Cubic policy.
#[derive(Clone, Debug)]
pub struct Cubic {}

impl CcPolicy for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
