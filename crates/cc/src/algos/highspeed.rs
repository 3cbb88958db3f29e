//! STUB: placeholder so the registry compiles; replaced by the real HighSpeed.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// HighSpeed settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HighSpeedConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl HighSpeedConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<HighSpeed> {
        PolicyController::new(self.core.clone(), HighSpeed {})
    }
}

/// The HighSpeed policy.
#[derive(Clone, Debug)]
pub struct HighSpeed {}

impl CcPolicy for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
