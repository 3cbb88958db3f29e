//! STUB: placeholder so the registry compiles; replaced by the real Vegas.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Vegas settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VegasConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl VegasConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Vegas> {
        PolicyController::new(self.core.clone(), Vegas {})
    }
}

/// The Vegas policy.
#[derive(Clone, Debug)]
pub struct Vegas {}

impl CcPolicy for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
