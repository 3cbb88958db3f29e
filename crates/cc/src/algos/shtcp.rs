//! STUB: placeholder so the registry compiles; replaced by the real Shtcp.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Shtcp settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShtcpConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl ShtcpConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Shtcp> {
        PolicyController::new(self.core.clone(), Shtcp {})
    }
}

/// The Shtcp policy.
#[derive(Clone, Debug)]
pub struct Shtcp {}

impl CcPolicy for Shtcp {
    fn name(&self) -> &'static str {
        "shtcp"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
