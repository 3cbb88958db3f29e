//! STUB: placeholder so the registry compiles; replaced by the real Htcp.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// Htcp settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HtcpConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl HtcpConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<Htcp> {
        PolicyController::new(self.core.clone(), Htcp {})
    }
}

/// The Htcp policy.
#[derive(Clone, Debug)]
pub struct Htcp {}

impl CcPolicy for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
