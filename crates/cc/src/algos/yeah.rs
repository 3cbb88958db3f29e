//! STUB: placeholder so the registry compiles; replaced by the real Yeah.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Yeah settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct YeahConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl YeahConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Yeah> {
        PolicyController::new(self.core.clone(), Yeah {})
    }
}

/// The Yeah policy.
#[derive(Clone, Debug)]
pub struct Yeah {}

impl CcPolicy for Yeah {
    fn name(&self) -> &'static str {
        "yeah"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
