//! STUB: placeholder so the registry compiles; replaced by the real RtwTcp.

use crate::core::{Core, CoreConfig};
use crate::policy::{CcPolicy, PolicyController};
use crate::types::{AckSample, PathInfo};
use serde::{Deserialize, Serialize};

/// RtwTcp settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RtwTcpConfig {
    /// Shared core settings.
    pub core: CoreConfig,
}

impl RtwTcpConfig {
    /// Build the controller.
    pub fn build(&self) -> PolicyController<RtwTcp> {
        PolicyController::new(self.core.clone(), RtwTcp {})
    }
}

/// The RtwTcp policy.
#[derive(Clone, Debug)]
pub struct RtwTcp {}

impl CcPolicy for RtwTcp {
    fn name(&self) -> &'static str {
        "rtwtcp"
    }
    fn on_cong_avoid(&mut self, core: &mut Core, _ack: &AckSample, acked: u32, path: &PathInfo) {
        core.reno_cong_avoid(acked, path);
    }
}
