//! STUB: placeholder so the registry compiles; replaced by the real Westwood.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Westwood settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WestwoodConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl WestwoodConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Westwood> {
        PolicyController::new(self.core.clone(), Westwood {})
    }
}

/// The Westwood policy.
#[derive(Clone, Debug)]
pub struct Westwood {}

impl CcPolicy for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
