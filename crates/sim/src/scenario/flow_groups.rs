//! `[[flow_groups]]`: many client nodes connecting to ONE server endpoint,
//! written once as a count and a template (issue 20, deliverable 5).
//!
//! A group is a `[[flows]]` table plus `count` (members), `start_spacing`
//! (member `i` opens at `start + i · start_spacing`) and an optional
//! `link` template (each member's own access link from its `src`). Every
//! string in the template may contain `{i}`, the member index
//! `0 … count − 1` (`src = "drone{i}"`), except `dst`: every member
//! connects to the one server endpoint at `dst`. A stream template may
//! carry `every` and `offset`: the stream exists only in members with
//! `i % every == offset` ("1 drone in 10 also sends video").
//!
//! Key choice: like `[vehicular]`, the group is expanded on the TOML
//! document before deserialization, into ordinary flows (named
//! `<name><i>`) and links appended after the hand-written ones, so the
//! members go through exactly the validation a hand-written flow does,
//! and every group field can be overridden and swept
//! (`--set flow_groups.0.count=20`). The expansion remembers where each
//! generated flow and link came from, so an error in a member is reported
//! at the template field (`flow_groups.0.streams.1.rate`), never at a
//! generated `flows.N`. What the expansion cannot express in ordinary
//! flows — that all members of the groups aimed at one node share one
//! server `Endpoint` — is the [`FlowGroupSpec`] list the engine reads.
//!
//! Cost: O(members × template size) to expand, once per scenario read.

use super::units::Dur;
use super::ScenarioError;
use serde::Deserialize;
use std::ops::Range;
use toml::Value;

/// Most members of all groups (and flows) together: the validation of
/// `[[flows]]` allows 50,000 flows.
const MAX_FLOWS: usize = 50_000;

/// The keys a `[[flow_groups]]` table has beside those of `[[flows]]`.
const GROUP_KEYS: [&str; 3] = ["count", "start_spacing", "link"];

/// The keys a `[[flow_groups.streams]]` table has beside those of
/// `[[flows.streams]]`.
const STREAM_KEYS: [&str; 2] = ["every", "offset"];

/// The `[[flows]]` keys that configure the server side of a connection:
/// groups sharing one server endpoint must write them the same.
const SERVER_KEYS: [&str; 10] = [
    "cc",
    "cc_options",
    "ack_policy",
    "delayed_ack",
    "scheduler",
    "target_rate",
    "aging_bound",
    "startup",
    "payload_bytes",
    "security",
];

/// One expanded group, as the engine needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowGroupSpec {
    /// The group's name (its members are `<name>0`, `<name>1`, …).
    pub name: String,
    /// Index of the group in `flow_groups`.
    pub index: usize,
    /// The generated flows, indices into [`super::Model::flows`].
    pub flows: Range<usize>,
    /// The server node every member connects to, as written.
    pub dst: String,
}

/// The typed group-only fields (the rest of the table is a flow template).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupFields {
    count: u64,
    #[serde(default)]
    start_spacing: Dur,
}

/// The typed stream-only fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamFields {
    #[serde(default = "one")]
    every: u64,
    #[serde(default)]
    offset: u64,
}

fn one() -> u64 {
    1
}

/// Where generated items came from, to report errors at the template.
#[derive(Clone, Debug, Default)]
pub struct Expansion {
    /// The expanded groups.
    pub groups: Vec<FlowGroupSpec>,
    /// First generated link index; per generated link, its group.
    first_link: usize,
    link_group: Vec<usize>,
    /// First generated flow index; per generated flow, (group, member,
    /// template stream index of each of its streams).
    first_flow: usize,
    flow_origin: Vec<(usize, u64, Vec<usize>)>,
}

impl Expansion {
    /// `e` with its field moved from a generated flow or link to the
    /// template field it came from (`flows.1007.streams.1.rate` →
    /// `flow_groups.0.streams.1.rate`, member named in the message);
    /// other errors unchanged. O(path length).
    pub fn remap(&self, mut e: ScenarioError) -> ScenarioError {
        let written = e.field.clone();
        let parts: Vec<&str> = written.split('.').collect();
        let index = |s: Option<&&str>| s.and_then(|x| x.parse::<usize>().ok());
        match (parts.first().copied(), index(parts.get(1))) {
            (Some("flows"), Some(k)) if k >= self.first_flow => {
                let Some((g, i, streams)) = self.flow_origin.get(k - self.first_flow) else {
                    return e;
                };
                let mut field = format!("flow_groups.{g}");
                let mut rest = &parts[2..];
                let mut also: &[&str] = &GROUP_KEYS;
                if rest.first() == Some(&"streams") {
                    also = &STREAM_KEYS;
                    field.push_str(".streams");
                    if let Some(j) = index(rest.get(1)) {
                        let t = streams.get(j).copied().unwrap_or(j);
                        field.push_str(&format!(".{t}"));
                        rest = &rest[2..];
                    } else {
                        rest = &rest[1..];
                    }
                }
                for p in rest {
                    field.push('.');
                    field.push_str(p);
                }
                e.field = field;
                if e.message.starts_with("unknown field") && rest.len() == 1 {
                    // serde lists the flow's fields; a group has these too.
                    e.message = format!("{}, or {}", e.message, also.join(", "));
                } else {
                    e.message = format!("{} (member {i})", e.message);
                }
            }
            (Some("links"), Some(k)) if k >= self.first_link => {
                let Some(g) = self.link_group.get(k - self.first_link) else {
                    return e;
                };
                let mut field = format!("flow_groups.{g}.link");
                for p in &parts[2..] {
                    field.push('.');
                    field.push_str(p);
                }
                e.field = field;
            }
            _ => {}
        }
        e
    }
}

/// `{i}` replaced by `i` in every string of `v`. O(size of `v`).
fn substitute(v: &mut Value, i: &str) {
    match v {
        Value::String(s) if s.contains("{i}") => *s = s.replace("{i}", i),
        Value::Array(a) => a.iter_mut().for_each(|x| substitute(x, i)),
        Value::Table(t) => t.iter_mut().for_each(|(_, x)| substitute(x, i)),
        _ => {}
    }
}

/// Deserialize `v` as `T`, errors named under `prefix`.
fn typed<T: serde::de::DeserializeOwned>(
    v: Value,
    prefix: &str,
    origin: &str,
) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." || path.is_empty() {
            prefix.to_string()
        } else {
            format!("{prefix}.{path}")
        };
        ScenarioError::new(origin, field, e.into_inner().message().to_string())
    })
}

/// If `doc` has `[[flow_groups]]`: remove them and append their members'
/// flows and links to `doc` (after the hand-written ones); what was
/// generated from where. Without the key `doc` is untouched (and the
/// scenario reads exactly as before). O(members × template size).
pub fn expand(doc: &mut Value, origin: &str) -> Result<Expansion, ScenarioError> {
    let err = |field: String, msg: String| Err(ScenarioError::new(origin, field, msg));
    let Value::Table(t) = doc else {
        return Ok(Expansion::default());
    };
    let Some(raw) = t.remove("flow_groups") else {
        return Ok(Expansion::default());
    };
    let Value::Array(groups) = raw else {
        return err(
            "flow_groups".into(),
            "must be an array of tables ([[flow_groups]])".into(),
        );
    };
    let arr = |t: &mut toml::Table, key: &str| -> Result<Vec<Value>, ScenarioError> {
        match t.remove(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err(ScenarioError::new(
                origin,
                key,
                "must be an array of tables",
            )),
        }
    };
    let mut links = arr(t, "links")?;
    let mut flows = arr(t, "flows")?;
    let mut x = Expansion {
        first_link: links.len(),
        first_flow: flows.len(),
        ..Expansion::default()
    };
    let mut names: Vec<String> = Vec::new();
    // Server-side settings of the first group aimed at each node.
    let mut servers: Vec<(String, usize, toml::Table)> = Vec::new();
    for (g, raw) in groups.into_iter().enumerate() {
        let p = format!("flow_groups.{g}");
        let Value::Table(mut tpl) = raw else {
            return err(p, "must be a table".into());
        };
        let mut own = toml::Table::new();
        for k in GROUP_KEYS {
            if let Some(v) = tpl.remove(k) {
                own.insert(k.to_string(), v);
            }
        }
        let link = own.remove("link");
        let fields: GroupFields = typed(Value::Table(own), &p, origin)?;
        let name = match tpl.remove("name") {
            Some(Value::String(s)) if !s.is_empty() && !s.contains("{i}") => s,
            Some(Value::String(s)) if s.contains("{i}") => {
                return err(
                    format!("{p}.name"),
                    format!(
                    "{s:?}: the group's name must not contain {{i}} (members are named <name><i>)"
                ),
                )
            }
            Some(_) => {
                return err(
                    format!("{p}.name"),
                    "must be a non-empty string (members are named <name>0, <name>1, …)".into(),
                )
            }
            None => {
                return err(
                    format!("{p}.name"),
                    "missing: a group needs a name (members are named <name>0, <name>1, …)".into(),
                )
            }
        };
        if names.contains(&name) {
            return err(format!("{p}.name"), format!("{name:?} names two groups"));
        }
        names.push(name.clone());
        let dst = match tpl.get("dst") {
            Some(Value::String(s)) if s.contains("{i}") => {
                return err(
                    format!("{p}.dst"),
                    format!("{s:?}: every member connects to one server endpoint, so dst cannot depend on {{i}}"),
                )
            }
            Some(Value::String(s)) => s.clone(),
            Some(_) => return err(format!("{p}.dst"), "must be a node name".into()),
            None => {
                return err(
                    format!("{p}.dst"),
                    "missing: the node of the server endpoint every member connects to".into(),
                )
            }
        };
        let total = flows.len() as u64 + fields.count;
        if fields.count == 0 || total > MAX_FLOWS as u64 {
            return err(
                format!("{p}.count"),
                format!(
                    "{} members with {} other flows (allowed: 1 to {MAX_FLOWS} flows in all)",
                    fields.count,
                    flows.len()
                ),
            );
        }
        // Groups aimed at one node share its server endpoint, so they
        // must configure the server side the same.
        let server: toml::Table = SERVER_KEYS
            .iter()
            .filter_map(|k| tpl.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect();
        if let Some((_, first, s)) = servers.iter().find(|(d, _, _)| *d == dst) {
            if let Some(k) = SERVER_KEYS.iter().find(|k| s.get(**k) != server.get(**k)) {
                return err(
                    format!("{p}.{k}"),
                    format!(
                        "differs from flow_groups.{first}.{k}: groups whose members connect to the one server endpoint at {dst:?} must write {k} the same"
                    ),
                );
            }
        } else {
            servers.push((dst.clone(), g, server));
        }
        // The stream templates, with `every`/`offset` taken out; a stream
        // without an id keeps its template index as id in every member.
        let streams = match tpl.remove("streams") {
            None => Vec::new(),
            Some(Value::Array(a)) => a,
            Some(_) => {
                return err(
                    format!("{p}.streams"),
                    "must be an array of tables ([[flow_groups.streams]])".into(),
                )
            }
        };
        let mut stream_tpls = Vec::new();
        for (j, s) in streams.into_iter().enumerate() {
            let sp = format!("{p}.streams.{j}");
            let Value::Table(mut s) = s else {
                return err(sp, "must be a table".into());
            };
            let mut own = toml::Table::new();
            for k in STREAM_KEYS {
                if let Some(v) = s.remove(k) {
                    own.insert(k.to_string(), v);
                }
            }
            let sel: StreamFields = typed(Value::Table(own), &sp, origin)?;
            if sel.every == 0 {
                return err(format!("{sp}.every"), "must be at least 1".into());
            }
            if sel.offset >= sel.every {
                return err(
                    format!("{sp}.offset"),
                    format!(
                        "{} (allowed: 0 to every − 1 = {})",
                        sel.offset,
                        sel.every - 1
                    ),
                );
            }
            s.entry("id").or_insert(Value::Integer(j as i64));
            stream_tpls.push((sel, Value::Table(s)));
        }
        let start = match tpl.remove("start") {
            None => Dur(0),
            Some(v) => typed::<Dur>(v, &format!("{p}.start"), origin)?,
        };
        let link = match link {
            None => None,
            Some(Value::Table(l)) => {
                if l.contains_key("a") {
                    return err(
                        format!("{p}.link.a"),
                        "is each member's src: leave it out".into(),
                    );
                }
                Some(l)
            }
            Some(_) => {
                return err(
                    format!("{p}.link"),
                    "must be a table (a [[links]] entry without a)".into(),
                )
            }
        };
        let first = flows.len();
        for i in 0..fields.count {
            let is = i.to_string();
            let mut f = tpl.clone();
            let mut chosen = Vec::new();
            let mut member_streams = Vec::new();
            for (j, (sel, s)) in stream_tpls.iter().enumerate() {
                if i % sel.every == sel.offset {
                    chosen.push(j);
                    member_streams.push(s.clone());
                }
            }
            f.insert("streams".into(), Value::Array(member_streams));
            let offset = fields.start_spacing.0.checked_mul(i);
            let Some(at) = offset.and_then(|o| o.checked_add(start.0)) else {
                return err(
                    format!("{p}.start_spacing"),
                    format!("member {i} would start after the end of time"),
                );
            };
            f.insert("start".into(), Value::String(format!("{at}ns")));
            let mut f = Value::Table(f);
            substitute(&mut f, &is);
            if let Value::Table(ft) = &mut f {
                ft.insert("name".into(), Value::String(format!("{name}{i}")));
                if let Some(l) = &link {
                    let mut l = Value::Table(l.clone());
                    substitute(&mut l, &is);
                    if let (Value::Table(lt), Some(src)) = (&mut l, ft.get("src")) {
                        lt.insert("a".into(), src.clone());
                    }
                    links.push(l);
                    x.link_group.push(g);
                }
            }
            flows.push(f);
            x.flow_origin.push((g, i, chosen));
        }
        x.groups.push(FlowGroupSpec {
            name,
            index: g,
            flows: first..flows.len(),
            dst,
        });
    }
    t.insert("links".into(), Value::Array(links));
    t.insert("flows".into(), Value::Array(flows));
    Ok(x)
}

#[cfg(test)]
mod tests {
    use crate::Scenario;

    const DOC: &str = r#"
duration = "1s"
seed = 3

[[links]]
a = "hub"
b = "ground"
rate = "100Mbps"
delay = "10ms"

[[flows]]
src = "hub"
dst = "ground"
[[flows.streams]]
app = "bulk"

[[flow_groups]]
name = "drone"
count = 20
src = "drone{i}"
dst = "ground"
start_spacing = "1ms"
link = { b = "hub", rate = "1Gbps", delay = "1ms" }
scheduler = "abs"

[[flow_groups.streams]]
app = "cbr"
priority = 0
rate = "16kbps"
message_bytes = 200

[[flow_groups.streams]]
app = "cbr"
every = 10
offset = 3
priority = 3
rate = "2Mbps"
"#;

    fn bad(set: &str) -> (String, String) {
        let e = Scenario::from_toml_str(DOC, "t", &[set.to_string()]).unwrap_err();
        (e.field, e.message)
    }

    #[test]
    fn a_group_expands_into_members_after_the_hand_written_flows() {
        let s = Scenario::from_toml_str(DOC, "t", &[]).unwrap();
        let m = &s.model;
        assert_eq!(m.flows.len(), 21);
        assert_eq!(m.links.len(), 21);
        let g = &m.flow_groups[0];
        assert_eq!((g.name.as_str(), g.flows.clone()), ("drone", 1..21));
        assert_eq!(m.flows[0].name, "flow0");
        let d7 = &m.flows[8];
        assert_eq!(d7.name, "drone7");
        assert_eq!(m.nodes[d7.src], "drone7");
        assert_eq!(m.nodes[d7.dst], "ground");
        assert_eq!(d7.start_ns, 7_000_000);
        assert_eq!(m.links[8].name, "drone7-hub");
        // Stream 1 only in members 3 and 13; ids are template indices.
        let ids = |f: usize| m.flows[f].streams.iter().map(|s| s.id).collect::<Vec<_>>();
        assert_eq!(ids(1 + 3), [0, 1]);
        assert_eq!(ids(1 + 13), [0, 1]);
        assert_eq!(ids(1 + 4), [0]);
        assert_eq!(m.flows[4].streams[1].config.class, 3);
        // Overrides reach the template.
        let s = Scenario::from_toml_str(DOC, "t", &["flow_groups.0.count=5".into()]).unwrap();
        assert_eq!(s.model.flows.len(), 6);
    }

    #[test]
    fn errors_name_the_template_field() {
        assert_eq!(bad("flow_groups.0.count=0").0, "flow_groups.0.count");
        assert_eq!(bad("flow_groups.0.count=60000").0, "flow_groups.0.count");
        assert_eq!(bad("flow_groups.0.cc=\"bbrr\"").0, "flow_groups.0.cc");
        assert_eq!(bad("flow_groups.0.dst=\"g{i}\"").0, "flow_groups.0.dst");
        assert_eq!(bad("flow_groups.0.dst=\"moon\"").0, "flow_groups.0.dst");
        let (field, msg) = bad("flow_groups.0.colour=1");
        assert_eq!(field, "flow_groups.0.colour");
        assert!(msg.ends_with("or count, start_spacing, link"), "{msg}");
        assert_eq!(
            bad("flow_groups.0.streams.1.every=0").0,
            "flow_groups.0.streams.1.every"
        );
        assert_eq!(
            bad("flow_groups.0.streams.1.offset=10").0,
            "flow_groups.0.streams.1.offset"
        );
        // A member's stream 1 is template stream 1 although members
        // without it exist; the member is named.
        let (field, msg) = bad("flow_groups.0.streams.1.rate=\"0bps\"");
        assert_eq!(field, "flow_groups.0.streams.1.rate");
        assert!(msg.contains("member 3"), "{msg}");
        assert_eq!(
            bad("flow_groups.0.link.rate=\"fast\"").0,
            "flow_groups.0.link.rate"
        );
        assert_eq!(bad("flow_groups.0.link.a=\"x\"").0, "flow_groups.0.link.a");
        assert_eq!(
            bad("flow_groups.0.start_spacing=\"1 parsec\"").0,
            "flow_groups.0.start_spacing"
        );
        assert_eq!(bad("flow_groups.0.name=\"d{i}\"").0, "flow_groups.0.name");
        // The controller's options: named at the template's key.
        assert_eq!(
            bad("flow_groups.0.cc_options={ slow_start_exti = \"linux_hystart\" }").0,
            "flow_groups.0.cc_options.slow_start_exti"
        );
    }

    #[test]
    fn a_groups_cc_options_reach_every_member() {
        use peregrine_cc::algos::cubic::SlowStartExit;
        use peregrine_cc::CcConfig;
        let set = "flow_groups.0.cc_options={ slow_start_exit = \"linux_hystart\" }";
        let s = Scenario::from_toml_str(DOC, "t", &[set.into()]).unwrap();
        // Flow 0 is the hand-written one (defaults); 1… are the members.
        assert_eq!(s.model.flows[0].cc, CcConfig::from_name("cubic").unwrap());
        for f in &s.model.flows[1..] {
            let CcConfig::Cubic(c) = &f.cc else {
                panic!("{}: cubic", f.name)
            };
            assert_eq!(c.slow_start_exit, SlowStartExit::LinuxHyStart, "{}", f.name);
        }
    }

    #[test]
    fn groups_sharing_a_server_must_agree_on_its_settings() {
        let two = format!(
            "{DOC}\n[[flow_groups]]\nname = \"rover\"\ncount = 2\nsrc = \"hub\"\ndst = \"ground\"\nscheduler = \"rr\"\n[[flow_groups.streams]]\napp = \"bulk\"\n"
        );
        let e = Scenario::from_toml_str(&two, "t", &[]).unwrap_err();
        assert_eq!(e.field, "flow_groups.1.scheduler");
        let same = two.replace("scheduler = \"rr\"", "scheduler = \"abs\"");
        let s = Scenario::from_toml_str(&same, "t", &[]).unwrap();
        assert_eq!(s.model.flow_groups[1].flows, 21..23);
        let dup = same.replace("name = \"rover\"", "name = \"drone\"");
        let e = Scenario::from_toml_str(&dup, "t", &[]).unwrap_err();
        assert_eq!(e.field, "flow_groups.1.name");
    }

    #[test]
    fn without_groups_the_document_is_untouched() {
        let mut doc: toml::Value = toml::from_str("duration = 1\nseed = 1\n").unwrap();
        let before = doc.clone();
        let x = super::expand(&mut doc, "t").unwrap();
        assert!(x.groups.is_empty());
        assert_eq!(doc, before);
    }
}
