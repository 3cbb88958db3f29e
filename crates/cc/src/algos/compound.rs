//! STUB: placeholder so the registry compiles; replaced by the real Compound.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Compound settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompoundConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl CompoundConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Compound> {
        PolicyController::new(self.core.clone(), Compound {})
    }
}

/// The Compound policy.
#[derive(Clone, Debug)]
pub struct Compound {}

impl CcPolicy for Compound {
    fn name(&self) -> &'static str {
        "compound"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
