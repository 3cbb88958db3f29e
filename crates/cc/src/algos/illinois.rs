//! STUB: placeholder so the registry compiles; replaced by the real Illinois.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Illinois settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IllinoisConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl IllinoisConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Illinois> {
        PolicyController::new(self.core.clone(), Illinois {})
    }
}

/// The Illinois policy.
#[derive(Clone, Debug)]
pub struct Illinois {}

impl CcPolicy for Illinois {
    fn name(&self) -> &'static str {
        "illinois"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
