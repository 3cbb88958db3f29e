//! STUB: placeholder so the registry compiles; replaced by the real Veno.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Veno settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VenoConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl VenoConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Veno> {
        PolicyController::new(self.core.clone(), Veno {})
    }
}

/// The Veno policy.
#[derive(Clone, Debug)]
pub struct Veno {}

impl CcPolicy for Veno {
    fn name(&self) -> &'static str {
        "veno"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
