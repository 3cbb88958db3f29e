//! STUB: placeholder so the registry compiles; replaced by the real Bbr.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Bbr settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BbrConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl BbrConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Bbr> {
        PolicyController::new(self.core.clone(), Bbr {})
    }
}

/// The Bbr policy.
#[derive(Clone, Debug)]
pub struct Bbr {}

impl CcPolicy for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
