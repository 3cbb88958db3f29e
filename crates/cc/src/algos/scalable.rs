//! STUB: placeholder so the registry compiles; replaced by the real Scalable.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Scalable settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScalableConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl ScalableConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Scalable> {
        PolicyController::new(self.core.clone(), Scalable {})
    }
}

/// The Scalable policy.
#[derive(Clone, Debug)]
pub struct Scalable {}

impl CcPolicy for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
