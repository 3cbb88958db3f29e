//! The `[vehicular]` table: connected vehicles on 28 GHz mmWave (seed 004,
//! issue 11) described in a few lines and expanded into ordinary nodes,
//! links and flows.
//!
//! A vehicular world is a server behind a core link (`core_delay`, 1 ms in
//! seed 004) to a gateway node `gw` standing for the road-side base
//! stations, and one access link `gw — v<i>` per vehicle whose capacity and
//! up/down state follow the mmWave channel (the engine replaces the
//! generated fixed-rate access links by [`crate::world::mmwave_link`]
//! links fed with the channel's recorded states). One flow per vehicle,
//! server → vehicle (downlink), so the server's connection is the sender
//! the channel's link hints are delivered to.
//!
//! Key choice: the expansion happens on the TOML document, before it is
//! deserialized, so the generated links and flows go through the same
//! validation as hand-written ones and every `vehicular.*` field can be
//! overridden and swept like any other (`--set vehicular.load=0.6`).
//! Hand-written nodes, links and flows may sit beside the generated ones;
//! the generated names (`server`, `gw`, `v<i>`, `core`, `access-v<i>`) must
//! not be used by them.

use super::ScenarioError;
use crate::world::cells::{HandoverBuffer, SchedulerKind};
use crate::world::channel::hints::{HintMode, HintOrigin};
use serde::Deserialize;
use toml::Value;

// The table's fields, defaults and validated form live with the model
// they configure (`world::vehicles::config`); re-exported so the public
// paths `scenario::vehicular::*` keep working.
pub use crate::world::vehicles::config::{VehicleMobility, VehicularConfig, VehicularModel};

fn err(origin: &str, field: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError::new(origin, format!("vehicular.{field}"), message)
}

impl VehicularConfig {
    /// Checks every field, naming the first bad one.
    pub fn check(&self, origin: &str) -> Result<(VehicleMobility, HintMode), ScenarioError> {
        self.cells(origin)?;
        let mobility = match self.mobility.as_str() {
            "manhattan" => VehicleMobility::Manhattan,
            "random" => VehicleMobility::Random,
            "highway" => VehicleMobility::Highway,
            o => {
                return Err(err(
                    origin,
                    "mobility",
                    format!("{o:?}: use manhattan, random or highway"),
                ))
            }
        };
        let hints = match self.hints.as_str() {
            "perfect" => HintMode::Perfect,
            "noisy" => HintMode::noisy_default(),
            "absent" => HintMode::Absent,
            o => {
                return Err(err(
                    origin,
                    "hints",
                    format!("{o:?}: use perfect, noisy or absent"),
                ))
            }
        };
        if !matches!(self.traffic.as_str(), "cbr" | "bulk" | "onoff") {
            return Err(err(origin, "traffic", "use cbr, bulk or onoff"));
        }
        if self.onoff_mean_on.0 == 0 {
            return Err(err(origin, "onoff_mean_on", "must be positive"));
        }
        if self.onoff_mean_off.0 == 0 {
            return Err(err(origin, "onoff_mean_off", "must be positive"));
        }
        if !(1..=1000).contains(&self.vehicles) {
            return Err(err(origin, "vehicles", "must be 1 … 1000"));
        }
        let finite_pos = |v: f64| v.is_finite() && v > 0.0;
        if !self.area_m.iter().all(|v| finite_pos(*v) && *v <= 1e6) {
            return Err(err(origin, "area_m", "sides must be in (0, 1e6] m"));
        }
        if self.base_stations.is_empty() || self.base_stations.len() > 1000 {
            return Err(err(origin, "base_stations", "must list 1 … 1000 sites"));
        }
        for (i, b) in self.base_stations.iter().enumerate() {
            if !b.iter().all(|v| v.is_finite()) {
                return Err(err(origin, &format!("base_stations.{i}"), "must be finite"));
            }
        }
        if !(finite_pos(self.speed_min_mps)
            && self.speed_max_mps.is_finite()
            && self.speed_min_mps <= self.speed_max_mps
            && self.speed_max_mps <= 1000.0)
        {
            return Err(err(
                origin,
                "speed_min_mps",
                "speeds must satisfy 0 < speed_min_mps <= speed_max_mps <= 1000",
            ));
        }
        let road_m =
            crate::world::vehicles::HIGHWAY_LANES as f64 * crate::world::vehicles::LANE_WIDTH_M;
        if mobility == VehicleMobility::Highway && self.area_m[1] < road_m {
            return Err(err(
                origin,
                "area_m",
                format!("the highway's {road_m} m of lanes must fit in area_m[1]"),
            ));
        }
        if !(self.block_size_m.is_finite() && self.block_size_m >= 1.0) {
            return Err(err(origin, "block_size_m", "must be >= 1 m"));
        }
        if !(finite_pos(self.load) && self.load <= 10.0) {
            return Err(err(origin, "load", "must be in (0, 10]"));
        }
        if !(finite_pos(self.rate_scale) && self.rate_scale <= 1.0) {
            return Err(err(origin, "rate_scale", "must be in (0, 1]"));
        }
        if self.reference_rate.0 == 0 || self.core_rate.0 == 0 {
            return Err(err(origin, "reference_rate", "rates must be positive"));
        }
        if self.step.0 < 10_000 || self.step.0 > 1_000_000_000 {
            return Err(err(origin, "step", "must be 10 µs … 1 s"));
        }
        if !(64..=60_000).contains(&self.payload_bytes) {
            return Err(err(origin, "payload_bytes", "must be 64 … 60000"));
        }
        if !matches!(
            self.handover.as_str(),
            "break_before_make" | "make_before_break"
        ) {
            return Err(err(
                origin,
                "handover",
                format!(
                    "{:?}: use break_before_make or make_before_break",
                    self.handover
                ),
            ));
        }
        if self.overlap.0 < 1_000_000 || self.overlap.0 > 10_000_000_000 {
            return Err(err(origin, "overlap", "must be 1 ms … 10 s"));
        }
        if self.group_rate.0 < 10_000 || self.group_rate.0 > 10_000_000_000 {
            return Err(err(origin, "group_rate", "must be 10 kbit/s … 10 Gbit/s"));
        }
        Ok((mobility, hints))
    }

    /// The scheduler and the handover-buffer policy, each checked.
    pub fn cells(&self, origin: &str) -> Result<(SchedulerKind, HandoverBuffer), ScenarioError> {
        let scheduler = SchedulerKind::parse(&self.scheduler).ok_or_else(|| {
            err(
                origin,
                "scheduler",
                format!("{:?}: use pf, rr or unshared", self.scheduler),
            )
        })?;
        let buffer = HandoverBuffer::parse(&self.handover_buffer).ok_or_else(|| {
            err(
                origin,
                "handover_buffer",
                format!("{:?}: use move or drop", self.handover_buffer),
            )
        })?;
        if self.pf_window.0 < 1_000_000 || self.pf_window.0 > 100_000_000_000 {
            return Err(err(origin, "pf_window", "must be 1 ms … 100 s"));
        }
        if HintOrigin::parse(&self.hint_source).is_none() {
            return Err(err(
                origin,
                "hint_source",
                "use oracle, base_station or mobility",
            ));
        }
        if !matches!(self.channel_model.as_str(), "outage" | "fading") {
            return Err(err(origin, "channel_model", "use outage or fading"));
        }
        if !(self.pf_min_share.is_finite() && (0.0..=1.0).contains(&self.pf_min_share)) {
            return Err(err(origin, "pf_min_share", "must be in [0, 1]"));
        }
        match self.cell_demand.as_str() {
            "full_buffer" => {}
            "backlogged" if self.handover == "make_before_break" => {
                return Err(err(
                    origin,
                    "cell_demand",
                    "\"backlogged\" is not supported with handover = \"make_before_break\" \
                     (its attachments replay the full-buffer schedule)",
                ))
            }
            "backlogged" => {}
            other => {
                return Err(err(
                    origin,
                    "cell_demand",
                    format!("{other:?}: use full_buffer or backlogged"),
                ))
            }
        }
        Ok((scheduler, buffer))
    }
}

fn table(pairs: Vec<(&str, Value)>) -> Value {
    Value::Table(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn s(x: impl Into<String>) -> Value {
    Value::String(x.into())
}

/// If `doc` has a `[vehicular]` table: its validated form, and `doc`
/// with the generated links and flows appended (hand-written ones first).
pub fn expand(doc: &mut Value, origin: &str) -> Result<Option<VehicularModel>, ScenarioError> {
    let Some(raw) = doc.get("vehicular").cloned() else {
        return Ok(None);
    };
    let cfg: VehicularConfig = serde_path_to_error::deserialize(raw).map_err(|e| {
        let field = e.path().to_string();
        ScenarioError::new(
            origin,
            format!("vehicular.{field}"),
            e.into_inner().message().to_string(),
        )
    })?;
    let (mobility, hints) = cfg.check(origin)?;
    let (scheduler, handover_buffer) = cfg.cells(origin)?;
    let mut channel = cfg.environment.config();
    channel.capacity_cap_bps = cfg.scaled(channel.capacity_cap_bps);
    channel.fading = cfg.channel_model == "fading";
    let Value::Table(t) = doc else {
        return Err(ScenarioError::new(origin, "(document)", "is not a table"));
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
    let first_access_link = links.len() + 1;
    let first_flow = flows.len();
    links.push(table(vec![
        ("name", s("core")),
        ("a", s("gw")),
        ("b", s("server")),
        // Rates carry their unit: a bare number is an error in a scenario.
        ("rate", s(format!("{}bps", cfg.core_rate.0))),
        ("delay", s(format!("{}ns", cfg.core_delay.0))),
        ("queue", table(vec![("packets", Value::Integer(100_000))])),
    ]));
    let rlc = cfg.scaled(cfg.rlc_buffer_bytes).max(10 * 1500);
    let rate = cfg.offered_rate_bps();
    for i in 0..cfg.vehicles {
        links.push(table(vec![
            ("name", s(format!("access-v{i}"))),
            ("a", s("gw")),
            ("b", s(format!("v{i}"))),
            // Replaced by the channel-driven link when the world is built.
            ("rate", s(format!("{}bps", channel.capacity_cap_bps))),
            ("queue", table(vec![("bytes", Value::Integer(rlc as i64))])),
        ]));
        let app = if cfg.traffic == "bulk" {
            table(vec![("app", s("bulk"))])
        } else if cfg.traffic == "onoff" {
            table(vec![
                ("app", s("onoff")),
                ("rate", s(format!("{rate}bps"))),
                (
                    "message_bytes",
                    Value::Integer(i64::from(cfg.payload_bytes)),
                ),
                ("distribution", s("exponential")),
                ("mean_on", s(format!("{}ns", cfg.onoff_mean_on.0))),
                ("mean_off", s(format!("{}ns", cfg.onoff_mean_off.0))),
            ])
        } else {
            table(vec![
                ("app", s("cbr")),
                ("rate", s(format!("{rate}bps"))),
                (
                    "message_bytes",
                    Value::Integer(i64::from(cfg.payload_bytes)),
                ),
            ])
        };
        let mut flow = vec![
            ("name", s(format!("v{i}"))),
            ("src", s("server")),
            ("dst", s(format!("v{i}"))),
            ("cc", s(cfg.cc.clone())),
            (
                "payload_bytes",
                Value::Integer(i64::from(cfg.payload_bytes)),
            ),
            ("streams", Value::Array(vec![app])),
        ];
        // Validated with the flow (errors name flows.N.ack_policy).
        if let Some(p) = &cfg.ack_policy {
            flow.push(("ack_policy", s(p.clone())));
        }
        if let Some(d) = cfg.delayed_ack {
            flow.push(("delayed_ack", s(format!("{}ns", d.0))));
        }
        flows.push(table(flow));
    }
    t.insert("links".into(), Value::Array(links));
    t.insert("flows".into(), Value::Array(flows));
    let cells_follow_traffic = cfg.cell_demand == "backlogged";
    let make_before_break = (cfg.handover == "make_before_break")
        .then(|| std::time::Duration::from_nanos(cfg.overlap.0));
    Ok(Some(VehicularModel {
        config: cfg,
        mobility,
        hints,
        channel,
        scheduler,
        cells_follow_traffic,
        handover_buffer,
        first_access_link,
        first_flow,
        make_before_break,
    }))
}

/// The typed form of [`expand`], for a configuration built in code: if
/// `config` has a `vehicular` table, its validated form, and `config` with
/// the generated links and flows appended after its own. The generation
/// is [`expand`]'s own (the table is written to a TOML document and
/// expanded there), so a scenario built in code and the same scenario
/// read from a file are the same. O(vehicles).
pub fn expand_config(
    config: &mut super::ScenarioConfig,
    origin: &str,
) -> Result<Option<VehicularModel>, ScenarioError> {
    let Some(v) = &config.vehicular else {
        return Ok(None);
    };
    let internal =
        |e: &dyn std::fmt::Display| ScenarioError::new(origin, "vehicular", e.to_string());
    let table = Value::try_from(v).map_err(|e| internal(&e))?;
    let mut doc = table_doc(table);
    let Some(mut model) = expand(&mut doc, origin)? else {
        return Ok(None);
    };
    /// What [`expand`] appended to the document.
    #[derive(Deserialize)]
    struct Generated {
        links: Vec<super::config::LinkConfig>,
        flows: Vec<super::config::FlowConfig>,
    }
    let generated: Generated = doc.try_into().map_err(|e| internal(&e))?;
    model.first_access_link += config.links.len();
    model.first_flow += config.flows.len();
    config.links.extend(generated.links);
    config.flows.extend(generated.flows);
    Ok(Some(model))
}

/// A document holding only `vehicular = table`.
fn table_doc(table: Value) -> Value {
    let mut doc = toml::Table::new();
    doc.insert("vehicular".to_string(), table);
    Value::Table(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Dur;
    use crate::world::channel::mmwave::Environment;
    use crate::Scenario;

    const DOC: &str = "duration = \"1s\"\nseed = 3\n[vehicular]\nvehicles = 3\n";

    #[test]
    fn a_vehicular_table_expands_into_links_and_flows() {
        let s = Scenario::from_toml_str(DOC, "t", &[]).unwrap();
        let m = &s.model;
        let v = m.vehicular.as_ref().unwrap();
        assert_eq!(m.links.len(), 4);
        assert_eq!(m.flows.len(), 3);
        assert_eq!(m.links[v.first_access_link + 2].name, "access-v2");
        assert_eq!(m.flows[v.first_flow + 1].name, "v1");
        assert_eq!(m.nodes[m.flows[0].src], "server");
        assert_eq!(v.mobility, VehicleMobility::Manhattan);
        assert_eq!(v.hints, HintMode::Perfect);
        assert_eq!(v.channel.capacity_cap_bps, 2_000_000_000);
    }

    #[test]
    fn bad_fields_are_named_and_overrides_apply() {
        let bad = |set: &str| {
            Scenario::from_toml_str(DOC, "t", &[set.to_string()])
                .unwrap_err()
                .field
        };
        assert_eq!(bad("vehicular.mobility=\"teleport\""), "vehicular.mobility");
        assert_eq!(bad("vehicular.hints=\"psychic\""), "vehicular.hints");
        assert_eq!(bad("vehicular.load=0"), "vehicular.load");
        assert_eq!(bad("vehicular.vehicles=0"), "vehicular.vehicles");
        assert_eq!(bad("vehicular.cc=\"nope\""), "flows.0.cc");
        assert_eq!(bad("vehicular.colour=1"), "vehicular.colour");
        assert_eq!(bad("vehicular.scheduler=\"wfq\""), "vehicular.scheduler");
        assert_eq!(
            bad("vehicular.handover_buffer=\"keep\""),
            "vehicular.handover_buffer"
        );
        assert_eq!(bad("vehicular.pf_min_share=2.0"), "vehicular.pf_min_share");
        assert_eq!(
            bad("vehicular.cell_demand=\"some\""),
            "vehicular.cell_demand"
        );
        assert_eq!(
            bad("vehicular.channel_model=\"rayleigh\""),
            "vehicular.channel_model"
        );
        assert_eq!(bad("vehicular.pf_window=\"10us\""), "vehicular.pf_window");
        assert_eq!(bad("vehicular.traffic=\"poisson\""), "vehicular.traffic");
        assert_eq!(
            bad("vehicular.onoff_mean_off=\"0s\""),
            "vehicular.onoff_mean_off"
        );
        assert_eq!(
            bad("vehicular.hint_source=\"crystal\""),
            "vehicular.hint_source"
        );
        assert_eq!(bad("vehicular.handover=\"teleport\""), "vehicular.handover");
        assert_eq!(bad("vehicular.overlap=\"0s\""), "vehicular.overlap");
        assert_eq!(bad("vehicular.group_rate=\"1bps\""), "vehicular.group_rate");
        let s = Scenario::from_toml_str(
            DOC,
            "t",
            &[
                "vehicular.rate_scale=0.05".into(),
                "vehicular.load=0.5".into(),
                "vehicular.environment=\"rural\"".into(),
            ],
        )
        .unwrap();
        let v = s.model.vehicular.as_ref().unwrap();
        assert_eq!(v.channel.capacity_cap_bps, 100_000_000);
        assert_eq!(v.config.offered_rate_bps(), 50_000_000);
        assert_eq!(v.config.environment, Environment::Rural);
    }

    #[test]
    fn a_typed_table_expands_as_the_same_file_does() {
        let file = Scenario::from_toml_str(DOC, "t", &[]).unwrap();
        let mut cfg = crate::scenario::ScenarioConfig::new(Dur(1_000_000_000), 3);
        cfg.vehicular = Some(VehicularConfig {
            vehicles: 3,
            ..VehicularConfig::default()
        });
        let built = Scenario::from_config(cfg, "t").unwrap();
        assert_eq!(format!("{:?}", built.config), format!("{:?}", file.config));
        assert_eq!(format!("{:?}", built.model), format!("{:?}", file.model));
        // The table reads back as written (every field, floats exactly).
        let v = VehicularConfig {
            rate_scale: 0.025,
            load: 0.6,
            ..VehicularConfig::default()
        };
        let back: VehicularConfig = Value::try_from(&v).unwrap().try_into().unwrap();
        assert_eq!(back, v);
    }
}
