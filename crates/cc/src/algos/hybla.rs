//! STUB: placeholder so the registry compiles; replaced by the real Hybla.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Hybla settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HyblaConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl HyblaConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Hybla> {
        PolicyController::new(self.core.clone(), Hybla {})
    }
}

/// The Hybla policy.
#[derive(Clone, Debug)]
pub struct Hybla {}

impl CcPolicy for Hybla {
    fn name(&self) -> &'static str {
        "hybla"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
