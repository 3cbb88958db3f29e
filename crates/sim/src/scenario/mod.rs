//! Scenario files (TOML): what to simulate.
//!
//! [`overrides`] applies `key=value` settings (from `--set` on the command
//! line or a sweep grid) to a parsed scenario document before it is
//! turned into typed configuration, so every field of every scenario can
//! be overridden and swept the same way.

pub mod overrides;
