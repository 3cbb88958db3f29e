//! Build any controller from its name or from a typed configuration.
//!
//! [`CcConfig`] is the factory (quinn's `ControllerFactory` idea): a
//! serialisable description of one controller with its parameters, so
//! scenario files can name a controller and override any
//! **[PROJECT CHOICE]**; [`CcConfig::build`] makes a fresh controller from
//! it for every connection.

use crate::algos::{
    bbr::BbrConfig, bic::BicConfig, compound::CompoundConfig, cubic::CubicConfig,
    highspeed::HighSpeedConfig, htcp::HtcpConfig, hybla::HyblaConfig, illinois::IllinoisConfig,
    newreno::NewRenoConfig, rtwtcp::RtwTcpConfig, scalable::ScalableConfig, shtcp::ShtcpConfig,
    vegas::VegasConfig, veno::VenoConfig, westwood::WestwoodConfig, yeah::YeahConfig,
};
use crate::controller::CongestionController;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Every registered controller name, in the project's canonical order.
pub const NAMES: [&str; 16] = [
    "newreno",
    "hybla",
    "highspeed",
    "htcp",
    "vegas",
    "scalable",
    "veno",
    "bic",
    "yeah",
    "cubic",
    "westwood",
    "illinois",
    "compound",
    "bbr",
    "shtcp",
    "rtwtcp",
];

/// A name that is not in [`NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown congestion controller {name:?}; known: {}", NAMES.join(", "))]
pub struct UnknownController {
    /// The name that was asked for.
    pub name: String,
}

/// One controller and its parameters. In TOML:
/// `algorithm = "cubic"` plus the algorithm's fields.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "algorithm", rename_all = "lowercase"))]
#[allow(missing_docs)] // each variant is named after its algorithm
pub enum CcConfig {
    NewReno(NewRenoConfig),
    Hybla(HyblaConfig),
    HighSpeed(HighSpeedConfig),
    Htcp(HtcpConfig),
    Vegas(VegasConfig),
    Scalable(ScalableConfig),
    Veno(VenoConfig),
    Bic(BicConfig),
    Yeah(YeahConfig),
    Cubic(CubicConfig),
    Westwood(WestwoodConfig),
    Illinois(IllinoisConfig),
    Compound(CompoundConfig),
    Bbr(BbrConfig),
    Shtcp(ShtcpConfig),
    RtwTcp(RtwTcpConfig),
}

impl CcConfig {
    /// The default configuration of the controller called `name`.
    pub fn from_name(name: &str) -> Result<CcConfig, UnknownController> {
        Ok(match name {
            "newreno" => CcConfig::NewReno(Default::default()),
            "hybla" => CcConfig::Hybla(Default::default()),
            "highspeed" => CcConfig::HighSpeed(Default::default()),
            "htcp" => CcConfig::Htcp(Default::default()),
            "vegas" => CcConfig::Vegas(Default::default()),
            "scalable" => CcConfig::Scalable(Default::default()),
            "veno" => CcConfig::Veno(Default::default()),
            "bic" => CcConfig::Bic(Default::default()),
            "yeah" => CcConfig::Yeah(Default::default()),
            "cubic" => CcConfig::Cubic(Default::default()),
            "westwood" => CcConfig::Westwood(Default::default()),
            "illinois" => CcConfig::Illinois(Default::default()),
            "compound" => CcConfig::Compound(Default::default()),
            "bbr" => CcConfig::Bbr(Default::default()),
            "shtcp" => CcConfig::Shtcp(Default::default()),
            "rtwtcp" => CcConfig::RtwTcp(Default::default()),
            other => {
                return Err(UnknownController {
                    name: other.to_string(),
                })
            }
        })
    }

    /// The registry name of the configured controller.
    pub fn name(&self) -> &'static str {
        match self {
            CcConfig::NewReno(_) => "newreno",
            CcConfig::Hybla(_) => "hybla",
            CcConfig::HighSpeed(_) => "highspeed",
            CcConfig::Htcp(_) => "htcp",
            CcConfig::Vegas(_) => "vegas",
            CcConfig::Scalable(_) => "scalable",
            CcConfig::Veno(_) => "veno",
            CcConfig::Bic(_) => "bic",
            CcConfig::Yeah(_) => "yeah",
            CcConfig::Cubic(_) => "cubic",
            CcConfig::Westwood(_) => "westwood",
            CcConfig::Illinois(_) => "illinois",
            CcConfig::Compound(_) => "compound",
            CcConfig::Bbr(_) => "bbr",
            CcConfig::Shtcp(_) => "shtcp",
            CcConfig::RtwTcp(_) => "rtwtcp",
        }
    }

    /// A fresh controller with this configuration (call `init` before use).
    pub fn build(&self) -> Box<dyn CongestionController> {
        match self {
            CcConfig::NewReno(c) => Box::new(c.build()),
            CcConfig::Hybla(c) => Box::new(c.build()),
            CcConfig::HighSpeed(c) => Box::new(c.build()),
            CcConfig::Htcp(c) => Box::new(c.build()),
            CcConfig::Vegas(c) => Box::new(c.build()),
            CcConfig::Scalable(c) => Box::new(c.build()),
            CcConfig::Veno(c) => Box::new(c.build()),
            CcConfig::Bic(c) => Box::new(c.build()),
            CcConfig::Yeah(c) => Box::new(c.build()),
            CcConfig::Cubic(c) => Box::new(c.build()),
            CcConfig::Westwood(c) => Box::new(c.build()),
            CcConfig::Illinois(c) => Box::new(c.build()),
            CcConfig::Compound(c) => Box::new(c.build()),
            CcConfig::Bbr(c) => Box::new(c.build()),
            CcConfig::Shtcp(c) => Box::new(c.build()),
            CcConfig::RtwTcp(c) => Box::new(c.build()),
        }
    }
}

/// A fresh controller with the default configuration of `name`.
pub fn build(name: &str) -> Result<Box<dyn CongestionController>, UnknownController> {
    Ok(CcConfig::from_name(name)?.build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_a_controller_of_that_name() {
        for name in NAMES {
            let cfg = CcConfig::from_name(name).unwrap();
            assert_eq!(cfg.name(), name);
            assert_eq!(cfg.build().name(), name);
        }
    }

    #[test]
    fn unknown_name_is_a_clear_error() {
        let err = build("tahoe").err().unwrap();
        assert!(err.to_string().contains("\"tahoe\""));
        assert!(err.to_string().contains("cubic"));
    }
}
