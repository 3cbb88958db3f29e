//! `cc_options`: a flow's controller settings beyond its name (issue 41).
//!
//! `cc = "cubic"` picks the controller at its defaults; `cc_options = {
//! slow_start_exit = "linux_hystart" }` (or a `[flows.cc_options]` table)
//! sets fields of that controller's configuration struct in `peregrine_cc`
//! (`CubicConfig`, `BbrConfig`, …), in their serde form: the keys are the
//! struct's field names, nested tables its nested structs (`core`,
//! `hystart_plus_plus`). Every field left out keeps the controller's
//! default.
//!
//! Key choice: the table is kept as TOML in [`super::config::FlowConfig`]
//! and resolved here, where the controller is known, by deserializing
//! `CcConfig` (`algorithm = <cc>` plus the options). The configuration
//! structs deny unknown fields, so a field the named controller does not
//! have is an error, never silently ignored. `CcConfig` is an internally
//! tagged enum, whose deserializer does not report where inside the
//! table a problem is; to name the field (`flows.0.cc_options.core.mss`)
//! each key is tried alone, descending into nested tables, and the
//! deepest key that fails alone is the one reported. Cost: O(keys ×
//! depth) small deserializations, once per flow at load.

use peregrine_cc::CcConfig;
use serde::Deserialize;
use toml::{Table, Value};

/// `cc`'s configuration with `options` set: `Err((field path below
/// cc_options, problem))` naming the first field that is not one of the
/// controller's or has a value its type does not hold. `cc` must be a
/// registry name. O(keys × depth).
pub fn resolve(cc: &str, options: &Table) -> Result<CcConfig, (String, String)> {
    if options.contains_key("algorithm") {
        return Err((
            "algorithm".into(),
            "the controller is the flow's `cc`; cc_options holds only its settings".into(),
        ));
    }
    // Each key alone first, so that an error names its field.
    for (key, value) in options {
        if let Some((path, problem)) = locate(cc, &[key.as_str()], value) {
            return Err((path.join("."), problem));
        }
    }
    // Then all together (no key failed alone, so this fails only on
    // combinations, which no configuration struct checks today).
    parse(cc, options.clone()).map_err(|problem| (String::new(), problem))
}

/// The configuration of `cc` with the fields of `table`; the
/// deserializer's message on failure.
fn parse(cc: &str, mut table: Table) -> Result<CcConfig, String> {
    table.insert("algorithm".into(), Value::String(cc.into()));
    CcConfig::deserialize(Value::Table(table))
        .map_err(|e| format!("{} (controller {cc:?})", e.message().trim_end_matches('\n')))
}

/// The deepest key path at or below `path` whose value alone fails to
/// deserialize, with the problem; `None` when `path = value` is fine.
fn locate(cc: &str, path: &[&str], value: &Value) -> Option<(Vec<String>, String)> {
    let problem = parse(cc, nest(path, value.clone())).err()?;
    if let Value::Table(sub) = value {
        for (key, v) in sub {
            let mut deeper = path.to_vec();
            deeper.push(key.as_str());
            if let Some(found) = locate(cc, &deeper, v) {
                return Some(found);
            }
        }
    }
    Some((path.iter().map(|s| s.to_string()).collect(), problem))
}

/// `{ a = { b = value } }` for the path `[a, b]`.
fn nest(path: &[&str], value: Value) -> Table {
    let mut inner = value;
    for key in path.iter().skip(1).rev() {
        let mut t = Table::new();
        t.insert((*key).to_string(), inner);
        inner = Value::Table(t);
    }
    let mut t = Table::new();
    if let Some(first) = path.first() {
        t.insert((*first).to_string(), inner);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use peregrine_cc::algos::cubic::{CubicConfig, SlowStartExit};

    const DOC: &str = r#"
duration = "5s"
seed = 1
[[links]]
a = "x"
b = "y"
rate = "10Mbps"
delay = "10ms"
[[flows]]
src = "x"
dst = "y"
cc = "cubic"
[[flows.streams]]
app = "bulk"
"#;

    fn with(set: &[&str]) -> Result<Scenario, crate::scenario::ScenarioError> {
        let o: Vec<String> = set.iter().map(|s| s.to_string()).collect();
        Scenario::from_toml_str(DOC, "t", &o)
    }

    fn bad(set: &[&str]) -> (String, String) {
        let e = with(set).unwrap_err();
        (e.field, e.message)
    }

    #[test]
    fn options_reach_the_built_controller_configuration() {
        let s = with(&["flows.0.cc_options={ slow_start_exit = \"linux_hystart\", min_cnt = 3 }"])
            .unwrap();
        let want = CubicConfig {
            slow_start_exit: SlowStartExit::LinuxHyStart,
            min_cnt: 3,
            ..CubicConfig::default()
        };
        assert_eq!(s.model.flows[0].cc, CcConfig::Cubic(want));
        // A nested struct, partly set: the rest keeps its defaults.
        let s = with(&["flows.0.cc_options={ core = { initial_window_segs = 4 } }"]).unwrap();
        let CcConfig::Cubic(c) = &s.model.flows[0].cc else {
            panic!("cubic")
        };
        assert_eq!(c.core.initial_window_segs, 4);
        let mut expect = CubicConfig::default();
        expect.core.initial_window_segs = 4;
        assert_eq!(*c, expect);
        // Without the key: the registry's default, as before.
        let s = with(&[]).unwrap();
        assert_eq!(s.model.flows[0].cc, CcConfig::from_name("cubic").unwrap());
    }

    #[test]
    fn a_table_form_is_the_same_as_the_inline_one() {
        let text = DOC.replace(
            "[[flows.streams]]",
            "[flows.cc_options]\nslow_start_exit = \"linux_hystart\"\n[[flows.streams]]",
        );
        let s = Scenario::from_toml_str(&text, "t", &[]).unwrap();
        let inline = with(&["flows.0.cc_options={ slow_start_exit = \"linux_hystart\" }"]).unwrap();
        assert_eq!(s.model.flows[0].cc, inline.model.flows[0].cc);
    }

    #[test]
    fn errors_name_the_field_and_what_is_allowed() {
        // Unknown field: named, with the controller's fields listed.
        let (f, m) = bad(&["flows.0.cc_options={ slow_start_exti = \"linux_hystart\" }"]);
        assert_eq!(f, "flows.0.cc_options.slow_start_exti");
        assert!(m.contains("slow_start_exit") && m.contains("cubic"), "{m}");
        // Unknown value of an enumerated field: the allowed names.
        let (f, m) = bad(&["flows.0.cc_options={ slow_start_exit = \"linux\" }"]);
        assert_eq!(f, "flows.0.cc_options.slow_start_exit");
        assert!(
            m.contains("linux_hystart") && m.contains("hystart_plus_plus"),
            "{m}"
        );
        // Wrong type.
        let (f, m) = bad(&["flows.0.cc_options={ fast_convergence = 3 }"]);
        assert_eq!(f, "flows.0.cc_options.fast_convergence");
        assert!(m.contains("bool"), "{m}");
        // Out of the type's range.
        let (f, m) = bad(&["flows.0.cc_options={ min_cnt = -1 }"]);
        assert_eq!(f, "flows.0.cc_options.min_cnt");
        assert!(m.contains("-1"), "{m}");
        // Nested: the deepest bad key, after good ones.
        let (f, _) = bad(&[
            "flows.0.cc_options={ min_cnt = 2, core = { initial_window_segs = 4, nope = 1 } }",
        ]);
        assert_eq!(f, "flows.0.cc_options.core.nope");
        // The algorithm is `cc`'s business.
        let (f, _) = bad(&["flows.0.cc_options={ algorithm = \"bbr\" }"]);
        assert_eq!(f, "flows.0.cc_options.algorithm");
        // Not a table.
        let (f, _) = bad(&["flows.0.cc_options=\"linux_hystart\""]);
        assert_eq!(f, "flows.0.cc_options");
    }

    #[test]
    fn every_controller_rejects_a_field_it_does_not_have() {
        // The contract rests on every configuration struct denying unknown
        // fields: a controller added without it fails here.
        let mut t = Table::new();
        t.insert("no_such_field".into(), Value::Integer(1));
        for c in peregrine_cc::registry::CONTROLLERS {
            let (field, problem) = resolve(c.name, &t).expect_err(c.name);
            assert_eq!(field, "no_such_field", "{}", c.name);
            assert!(problem.contains(c.name), "{}: {problem}", c.name);
        }
        // And an empty table is the controller's default.
        for c in peregrine_cc::registry::CONTROLLERS {
            assert_eq!(
                resolve(c.name, &Table::new()).unwrap(),
                CcConfig::from_name(c.name).unwrap()
            );
        }
    }

    #[test]
    fn an_option_of_another_controller_is_an_error() {
        // CUBIC's field under BBR: never silently ignored.
        let (f, m) = bad(&[
            "flows.0.cc=\"bbr\"",
            "flows.0.cc_options={ slow_start_exit = \"linux_hystart\" }",
        ]);
        assert_eq!(f, "flows.0.cc_options.slow_start_exit");
        assert!(m.contains("bbr"), "{m}");
        // An unknown controller is still reported at `cc`.
        let (f, _) = bad(&[
            "flows.0.cc=\"cubical\"",
            "flows.0.cc_options={ slow_start_exit = \"linux_hystart\" }",
        ]);
        assert_eq!(f, "flows.0.cc");
    }
}
