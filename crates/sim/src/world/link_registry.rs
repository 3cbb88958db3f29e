//! The one list of link models: every kind of link the simulator (and,
//! for the point-to-point kinds, the emulator) can run, with how a
//! scenario selects it and where its code is.
//!
//! [`LINK_MODELS`] is the registry, in the order the docs list it. The
//! scenario checker's "needs a rate or a trace" error
//! ([`direction_fields_help`]), `peregrine sim --help` ([`help_text`]),
//! Python's `peregrine.link_models()` ([`names`]) and the table in
//! `docs/scenarios.md` ([`markdown_table`], checked by a test of this
//! module) are generated from it. Adding a link model is one file with a
//! type implementing [`LinkModel`](super::link_model::LinkModel) plus one
//! entry here (and where it is selected: a direction field or a world
//! table; see `docs/architecture.md`, "… a link model").

/// How a scenario selects a link model.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// A field of a `[[links]]` direction (set on the link for both
    /// directions, or on `up` / `down`): `rate`, `trace`.
    DirectionField(&'static str),
    /// A top-level table that replaces the point-to-point links of the
    /// scenario with its own: `[wireless]`, `[vehicular]`.
    WorldTable(&'static str),
}

impl Selector {
    /// How a scenario writes it: `links.N.rate` or `[wireless]`.
    pub fn written(self) -> String {
        match self {
            Selector::DirectionField(f) => {
                format!("`links.N.{f}`, `links.N.up.{f}`, `links.N.down.{f}`")
            }
            Selector::WorldTable(t) => format!("`[{t}]`"),
        }
    }
}

/// One registered link model.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LinkModelEntry {
    /// Its registry name (`peregrine.link_models()`, docs).
    pub name: &'static str,
    /// How a scenario selects it.
    pub selector: Selector,
    /// An example value of a direction field (`"5Mbps"`), `""` for a table.
    pub example: &'static str,
    /// The type implementing `LinkModel`, as a path under `world::`.
    pub code: &'static str,
    /// One line: what it models.
    pub summary: &'static str,
}

/// Every link model, once.
pub const LINK_MODELS: &[LinkModelEntry] = &[
    LinkModelEntry {
        name: "point_to_point",
        selector: Selector::DirectionField("rate"),
        example: "\"5Mbps\"",
        code: "link::PointToPoint (Server::Rate)",
        summary: "a drop-tail queue served at a fixed rate, then a propagation delay; loss and outages per direction",
    },
    LinkModelEntry {
        name: "mahimahi",
        selector: Selector::DirectionField("trace"),
        example: "\"../shared/traces/…/x.down\"",
        code: "link::PointToPoint (Server::Trace, trace::MahimahiTrace)",
        summary: "the queue served by a Mahimahi delivery trace (1500 bytes per listed millisecond, looped), then a propagation delay",
    },
    LinkModelEntry {
        name: "wifi",
        selector: Selector::WorldTable("wireless"),
        example: "",
        code: "medium::WifiNic (one shared medium::Medium)",
        summary: "ad hoc 802.11b: every node's transmit queue on one shared medium (statistical MAC or DCF), multi-hop routing",
    },
    LinkModelEntry {
        name: "mmwave",
        selector: Selector::WorldTable("vehicular"),
        example: "",
        code: "mmwave_link::MmWaveLink",
        summary: "28 GHz access links whose capacity and outages follow the recorded mmWave channel of each vehicle",
    },
];

/// The registered names, in registry order. O(models).
pub fn names() -> Vec<&'static str> {
    LINK_MODELS.iter().map(|m| m.name).collect()
}

/// The entry named `name`. O(models).
pub fn by_name(name: &str) -> Option<&'static LinkModelEntry> {
    LINK_MODELS.iter().find(|m| m.name == name)
}

/// What a `[[links]]` direction may give to pick its model, for the
/// error of a direction that gives none: `a rate ("5Mbps", point_to_point)
/// or a trace (mahimahi)`. O(models).
pub fn direction_fields_help() -> String {
    let parts: Vec<String> = LINK_MODELS
        .iter()
        .filter_map(|m| match m.selector {
            Selector::DirectionField(f) if m.example.starts_with("\"5") => {
                Some(format!("a {f} (e.g. {}, {})", m.example, m.name))
            }
            Selector::DirectionField(f) => Some(format!("a {f} ({})", m.name)),
            Selector::WorldTable(_) => None,
        })
        .collect();
    join_or(&parts)
}

/// `a`, `a or b`, `a, b or c`.
fn join_or(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The link models for `--help`: one line each, name, selector, summary.
/// O(models).
pub fn help_text() -> String {
    let mut s = String::from("Link models (selected in the scenario):\n");
    for m in LINK_MODELS {
        let by = match m.selector {
            Selector::DirectionField(f) => format!("links.N.{f}"),
            Selector::WorldTable(t) => format!("[{t}]"),
        };
        s.push_str(&format!("  {:<15} {:<17} {}\n", m.name, by, m.summary));
    }
    s
}

/// The docs table (`docs/scenarios.md`, between the `link-models`
/// markers). O(models).
pub fn markdown_table() -> String {
    let mut s = String::from("| Link model | Selected by | Code (`crates/sim/src/world/`) | What it models |\n|---|---|---|---|\n");
    for m in LINK_MODELS {
        s.push_str(&format!(
            "| `{}` | {} | `{}` | {} |\n",
            m.name,
            m.selector.written(),
            m.code,
            m.summary
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_snake_case() {
        let n = names();
        for (i, a) in n.iter().enumerate() {
            assert!(a.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{a}");
            assert!(!n[i + 1..].contains(a), "{a} twice");
            assert_eq!(by_name(a).map(|m| m.name), Some(*a));
        }
        assert!(by_name("nope").is_none());
    }

    #[test]
    fn the_direction_error_names_every_direction_field() {
        let h = direction_fields_help();
        assert_eq!(
            h,
            "a rate (e.g. \"5Mbps\", point_to_point) or a trace (mahimahi)"
        );
        for m in LINK_MODELS {
            if let Selector::DirectionField(f) = m.selector {
                assert!(h.contains(f) && h.contains(m.name), "{h}");
            }
        }
    }

    #[test]
    fn help_lists_every_model() {
        let h = help_text();
        for m in LINK_MODELS {
            assert!(h.contains(m.name) && h.contains(m.summary), "{h}");
        }
    }

    /// `docs/scenarios.md` carries the table generated here, between
    /// `<!-- link-models:start -->` and `<!-- link-models:end -->`.
    #[test]
    fn the_docs_table_is_the_registry() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenarios.md");
        let doc = std::fs::read_to_string(&path).expect("docs/scenarios.md");
        let start = "<!-- link-models:start -->\n";
        let end = "<!-- link-models:end -->";
        let a = doc.find(start).expect("start marker") + start.len();
        let b = doc[a..].find(end).expect("end marker") + a;
        assert_eq!(
            &doc[a..b],
            markdown_table(),
            "docs/scenarios.md's link-model table differs from world::link_registry; paste markdown_table()'s output"
        );
    }
}
