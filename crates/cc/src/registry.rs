//! Build any controller from its name or from a typed configuration.
//!
//! [`CcConfig`] is the factory (quinn's `ControllerFactory` idea): a
//! serialisable description of one controller with its parameters, so
//! scenario files can name a controller and override any
//! **[PROJECT CHOICE]**; [`CcConfig::build`] makes a fresh controller from
//! it for every connection.

use crate::algos::{
    bbr, bbr3, bic, compound, cubic, fixed, highspeed, htcp, hybla, illinois, ledbat, newreno,
    prague, rtwtcp, scalable, shtcp, vegas, veno, westwood, yeah,
};
use crate::controller::CongestionController;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Generates the registry's tables and `CcConfig` from the one list above.
macro_rules! registry {
    (
        listed { $( $name:literal => $variant:ident($config:ty), $title:literal; )* }
        unlisted { $( $uname:literal => $uvariant:ident($uconfig:ty), $utitle:literal; )* }
    ) => {
        /// Every listed controller name, in the project's canonical order.
        pub const NAMES: [&str; [$($name),*].len()] = [$($name),*];

        /// Every registered controller, listed ones first (in [`NAMES`]
        /// order), then the unlisted ones.
        pub const CONTROLLERS: &[Controller] = &[
            $(Controller { name: $name, title: $title, listed: true },)*
            $(Controller { name: $uname, title: $utitle, listed: false },)*
        ];

        /// One controller and its parameters. In TOML:
        /// `algorithm = "cubic"` plus the algorithm's fields.
        #[derive(Clone, Debug, PartialEq)]
        #[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
        #[cfg_attr(feature = "serde", serde(tag = "algorithm"))]
        #[allow(missing_docs)] // each variant is named after its algorithm
        pub enum CcConfig {
            $(#[cfg_attr(feature = "serde", serde(rename = $name))] $variant($config),)*
            $(#[cfg_attr(feature = "serde", serde(rename = $uname))] $uvariant($uconfig),)*
        }

        impl CcConfig {
            /// The default configuration of the controller called `name`.
            /// O(registered controllers).
            pub fn from_name(name: &str) -> Result<CcConfig, UnknownController> {
                Ok(match name {
                    $($name => CcConfig::$variant(Default::default()),)*
                    $($uname => CcConfig::$uvariant(Default::default()),)*
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
                    $(CcConfig::$variant(_) => $name,)*
                    $(CcConfig::$uvariant(_) => $uname,)*
                }
            }

            /// A fresh controller with this configuration (call `init` before use).
            pub fn build(&self) -> Box<dyn CongestionController> {
                match self {
                    $(CcConfig::$variant(c) => Box::new(c.build()),)*
                    $(CcConfig::$uvariant(c) => Box::new(c.build()),)*
                }
            }
        }
    };
}

// THE list of congestion controllers: every other list (`NAMES`,
// `CcConfig`, `from_name`, `name`, `build`, the CLI's value parsers,
// Python's `controllers()`, `docs/build-cc-doc.py`) is generated from it
// or checked against it. Adding a controller is one new file in `algos/`
// (declared in `algos/mod.rs`) and one line here: registry name, the
// `CcConfig` variant and its configuration type (which has `build()` and
// `Default`), and the name the literature uses (docs/architecture.md,
// "Adding a controller"). `listed` controllers are in `NAMES`, in this
// order (the project's canonical order); `unlisted` ones are accepted by
// name but left out of every "all controllers" list.
registry! {
    listed {
        "newreno" => NewReno(newreno::NewRenoConfig), "NewReno";
        "hybla" => Hybla(hybla::HyblaConfig), "Hybla";
        "highspeed" => HighSpeed(highspeed::HighSpeedConfig), "HighSpeed";
        "htcp" => Htcp(htcp::HtcpConfig), "H-TCP";
        "vegas" => Vegas(vegas::VegasConfig), "Vegas";
        "scalable" => Scalable(scalable::ScalableConfig), "Scalable";
        "veno" => Veno(veno::VenoConfig), "Veno";
        "bic" => Bic(bic::BicConfig), "BIC";
        "yeah" => Yeah(yeah::YeahConfig), "YeAH";
        "cubic" => Cubic(cubic::CubicConfig), "CUBIC";
        "westwood" => Westwood(westwood::WestwoodConfig), "Westwood+";
        "illinois" => Illinois(illinois::IllinoisConfig), "Illinois";
        "compound" => Compound(compound::CompoundConfig), "Compound";
        "bbr" => Bbr(bbr::BbrConfig), "BBR";
        "shtcp" => Shtcp(shtcp::ShtcpConfig), "S-HTCP";
        "rtwtcp" => RtwTcp(rtwtcp::RtwTcpConfig), "RTW-TCP";
        "bbr3" => Bbr3(bbr3::Bbr3Config), "BBRv3";
        "prague" => Prague(prague::PragueConfig), "Prague";
        "ledbat" => Ledbat(ledbat::LedbatConfig), "LEDBAT++";
    }
    unlisted {
        // Test-only (algos/fixed.rs): the recipe followed once, in
        // crates/cli/tests/registry_recipe.rs.
        "fixed" => Fixed(fixed::FixedConfig), "Fixed window (test)";
    }
}

/// One registered controller: its registry name and the name the
/// literature (and the seed papers' tables) use for it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Controller {
    /// Registry name (`"westwood"`): scenario files, `--cc`, `cc list`.
    pub name: &'static str,
    /// Published name (`"Westwood+"`): reports and figures.
    pub title: &'static str,
    /// Whether [`NAMES`] lists it (unlisted: test-only, accepted by name).
    pub listed: bool,
}

/// The registry entry of `name` (listed or not). O(registered controllers).
pub fn controller(name: &str) -> Option<&'static Controller> {
    CONTROLLERS.iter().find(|c| c.name == name)
}

/// A name that is not registered (the message lists [`NAMES`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown congestion controller {name:?}; known: {}", NAMES.join(", "))]
pub struct UnknownController {
    /// The name that was asked for.
    pub name: String,
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
    fn every_registered_controller_builds_and_only_listed_ones_are_in_names() {
        for c in CONTROLLERS {
            let cfg = CcConfig::from_name(c.name).unwrap();
            assert_eq!(cfg.build().name(), c.name);
            assert_eq!(NAMES.contains(&c.name), c.listed, "{}", c.name);
            assert_eq!(controller(c.name), Some(c));
        }
        let listed: Vec<_> = CONTROLLERS
            .iter()
            .filter(|c| c.listed)
            .map(|c| c.name)
            .collect();
        assert_eq!(listed, NAMES);
        assert_eq!(controller("westwood").unwrap().title, "Westwood+");
        assert!(controller("tahoe").is_none());
    }

    #[test]
    fn unknown_name_is_a_clear_error() {
        let err = build("tahoe").err().unwrap();
        assert!(err.to_string().contains("\"tahoe\""));
        assert!(err.to_string().contains("cubic"));
    }
}
