//! STUB: placeholder so the registry compiles; replaced by the real Bic.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Bic settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BicConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl BicConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Bic> {
        PolicyController::new(self.core.clone(), Bic {})
    }
}

/// The Bic policy.
#[derive(Clone, Debug)]
pub struct Bic {}

impl CcPolicy for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
