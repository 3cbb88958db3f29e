//! Semantic checks of a deserialized scenario, and resolution into the
//! indexed [`Model`]. Every error names the field path and what is
//! allowed.

use super::config::{
    DirConfig, LinkConfig, LossConfig, QueueConfig, ScenarioConfig, StreamAppConfig,
};
use super::model::{
    AppSpec, DirSpec, FlowSpec, LinkSpec, LossSpec, Model, PeriodDist, ServerSpec, StreamSpec,
};
use super::ScenarioError;
use crate::world::hint_plan::HintField;
use crate::world::link_options::LinkOptions;
use peregrine_cc::{CcConfig, NAMES};
use peregrine_proto::connection::config::MIN_PACKET_SIZE;
use peregrine_proto::connection::ConnectionConfig;
use peregrine_proto::crypto::NoisePattern;
use peregrine_proto::sched::registry::{self as sched_registry, SchedulerParam};
use peregrine_proto::wire::StartupMode;
use peregrine_proto::{AckPolicy, SchedulerConfig, StreamConfig, StreamReliability};
use std::collections::BTreeMap;
use std::time::Duration;

/// Stream-frame and packet overhead of a DATA datagram carrying one frame.
const DATA_OVERHEAD: u32 = peregrine_proto::connection::config::DATA_OVERHEAD as u32;

struct V<'a> {
    origin: &'a str,
}

impl V<'_> {
    fn err<T>(&self, field: impl Into<String>, msg: impl Into<String>) -> Result<T, ScenarioError> {
        Err(ScenarioError::new(self.origin, field, msg))
    }
    fn prob(&self, field: String, p: f64) -> Result<f64, ScenarioError> {
        if (0.0..=1.0).contains(&p) {
            Ok(p)
        } else {
            self.err(field, format!("{p} is not a probability (allowed: 0 to 1)"))
        }
    }
}

/// Check `cfg` and resolve it into a [`Model`].
pub fn validate(cfg: &ScenarioConfig, origin: &str) -> Result<Model, ScenarioError> {
    let v = V { origin };
    if cfg.duration.0 == 0 {
        return v.err("duration", "must be positive (e.g. \"100s\")");
    }
    if cfg.metrics.interval.0 == 0 {
        return v.err("metrics.interval", "must be positive (e.g. \"1s\")");
    }
    if cfg.metrics.warmup.is_some_and(|w| w.0 >= cfg.duration.0) {
        return v.err(
            "metrics.warmup",
            "must end before the run does (shorter than `duration`)",
        );
    }
    let mut nodes: Vec<String> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for (i, n) in cfg.nodes.iter().enumerate() {
        if n.name.is_empty() || index.contains_key(&n.name) {
            return v.err(
                format!("nodes.{i}.name"),
                format!("{:?} is empty or used twice", n.name),
            );
        }
        index.insert(n.name.clone(), nodes.len());
        nodes.push(n.name.clone());
    }
    let intern = |name: &str, index: &mut BTreeMap<String, usize>, nodes: &mut Vec<String>| {
        *index.entry(name.to_string()).or_insert_with(|| {
            nodes.push(name.to_string());
            nodes.len() - 1
        })
    };
    let mut links = Vec::new();
    for (i, l) in cfg.links.iter().enumerate() {
        if l.a == l.b {
            return v.err(
                format!("links.{i}.b"),
                format!("a link joins two different nodes (both are {:?})", l.a),
            );
        }
        let a = intern(&l.a, &mut index, &mut nodes);
        let b = intern(&l.b, &mut index, &mut nodes);
        let up = dir(&v, cfg, l, l.up.as_ref(), &format!("links.{i}"), "up")?;
        let down = dir(&v, cfg, l, l.down.as_ref(), &format!("links.{i}"), "down")?;
        let min_mtu = cfg
            .net
            .ip_overhead_bytes
            .saturating_add(u32::from(MIN_PACKET_SIZE));
        if l.mtu.is_some_and(|m| m < min_mtu) {
            return v.err(
                format!("links.{i}.mtu"),
                format!(
                    "must be at least {min_mtu} bytes (the IP/UDP overhead and a 64-byte datagram)"
                ),
            );
        }
        let hints = match &l.hints {
            Some(h) => {
                let o = h.options();
                if let Err((field, problem)) = o.check() {
                    let key = match field {
                        HintField::Miss => "miss",
                        HintField::FalseAlarm => "false_alarm",
                    };
                    return v.err(format!("links.{i}.hints.{key}"), problem);
                }
                Some(o)
            }
            None => None,
        };
        links.push(LinkSpec {
            name: l.name.clone().unwrap_or_else(|| format!("{}-{}", l.a, l.b)),
            a,
            b,
            dirs: [up, down],
            mtu: l.mtu,
            hints,
        });
    }
    // Each flow gets port 10000 + index; each node an address 10.x.y.z.
    if cfg.flows.len() > 50_000 {
        return v.err(
            "flows",
            format!("{} flows (allowed: at most 50,000)", cfg.flows.len()),
        );
    }
    if nodes.len() >= 1 << 24 {
        return v.err(
            "nodes",
            format!("{} nodes (allowed: fewer than 16,777,216)", nodes.len()),
        );
    }
    let mut flows = Vec::new();
    for (i, f) in cfg.flows.iter().enumerate() {
        let p = format!("flows.{i}");
        let node = |field: &str, name: &str| match index.get(name) {
            Some(n) => Ok(*n),
            None => v.err(
                format!("{p}.{field}"),
                format!("unknown node {name:?} (known: {})", nodes.join(", ")),
            ),
        };
        let src = node("src", &f.src)?;
        let dst = node("dst", &f.dst)?;
        if src == dst {
            return v.err(format!("{p}.dst"), "a flow joins two different nodes");
        }
        let cc = CcConfig::from_name(&f.cc).or_else(|_| {
            v.err(
                format!("{p}.cc"),
                format!(
                    "unknown controller {:?} (allowed: {})",
                    f.cc,
                    NAMES.join(", ")
                ),
            )
        })?;
        let cc = match &f.cc_options {
            None => cc,
            Some(options) => {
                super::cc_options::resolve(cc.name(), options).or_else(|(field, problem)| {
                    let at = if field.is_empty() {
                        format!("{p}.cc_options")
                    } else {
                        format!("{p}.cc_options.{field}")
                    };
                    v.err(at, problem)
                })?
            }
        };
        // The scheduler registry names the schedulers and their one
        // parameter; the scenario gives it in `target_rate` (a rate) or
        // `aging_bound` (a duration).
        let Some(sched) = sched_registry::scheduler(&f.scheduler) else {
            return v.err(
                format!("{p}.scheduler"),
                format!(
                    "unknown scheduler {:?} (allowed: {})",
                    f.scheduler,
                    sched_registry::names().join(", ")
                ),
            );
        };
        let param = match sched.param {
            None => 0,
            Some(SchedulerParam::RateBps) => match f.target_rate {
                Some(r) if r.0 > 0 => r.0,
                _ => {
                    return v.err(
                        format!("{p}.target_rate"),
                        format!(
                            "the {} scheduler needs a positive target_rate (e.g. \"50Mbps\")",
                            sched.name
                        ),
                    )
                }
            },
            // (queue_guard is checked after the scheduler.)
            Some(SchedulerParam::BoundNanos) => match f.aging_bound {
                Some(d) if d.0 > 0 => d.0,
                _ => {
                    return v.err(
                        format!("{p}.aging_bound"),
                        format!(
                            "the {} scheduler needs a positive aging_bound (e.g. \"100ms\")",
                            sched.name
                        ),
                    )
                }
            },
        };
        let scheduler = SchedulerConfig::from_name(sched.name, param)
            .or_else(|e| v.err(format!("{p}.scheduler"), e.to_string()))?;
        let queue_guard = match f.queue_guard {
            None => None,
            Some(d) if d.0 > 0 => Some(Duration::from_nanos(d.0)),
            Some(_) => {
                return v.err(
                    format!("{p}.queue_guard"),
                    "queue_guard must be a positive delay (e.g. \"10ms\"), or absent for off",
                )
            }
        };
        let delayed_ack = f.delayed_ack.map(|d| Duration::from_nanos(d.0));
        let ack_policy = AckPolicy::from_name(&f.ack_policy, delayed_ack).or_else(|e| {
            let problem = if e.field == "ack_policy" {
                format!("unknown ACK policy {:?} (allowed: sltp, tcp)", f.ack_policy)
            } else {
                format!("delayed_ack {}", e.problem)
            };
            v.err(format!("{p}.{}", e.field), problem)
        })?;
        let startup = match StartupMode::from_name(f.startup.as_str()) {
            Some(m) => m,
            None => {
                return v.err(
                    format!("{p}.startup"),
                    format!(
                        "unknown start-up {:?} (allowed: slow_start, packet_pair; or slow-start, packet-pair)",
                        f.startup
                    ),
                )
            }
        };
        let pacing = match f.pacing.as_deref() {
            // Left out: the core's own choice (coarse), as before the key.
            None => peregrine_proto::Pacing::Auto,
            Some("coarse") => peregrine_proto::Pacing::Coarse,
            Some("fine") => peregrine_proto::Pacing::Fine,
            Some(other) => {
                return v.err(
                    format!("{p}.pacing"),
                    format!("unknown pacing {other:?} (allowed: coarse, fine)"),
                )
            }
        };
        let security = match f.security.as_str() {
            "none" => None,
            "ik" => Some(NoisePattern::IK),
            "xx" => Some(NoisePattern::XX),
            "ikpsk2" => Some(NoisePattern::IKpsk2),
            "nnpsk0" => Some(NoisePattern::NNpsk0),
            other => {
                return v.err(
                    format!("{p}.security"),
                    format!("unknown security {other:?} (allowed: none, ik, xx, ikpsk2, nnpsk0)"),
                )
            }
        };
        let max_packet = f.payload_bytes.saturating_add(DATA_OVERHEAD);
        if f.payload_bytes < 27 || max_packet > 65_000 {
            return v.err(
                format!("{p}.payload_bytes"),
                format!(
                    "{} is out of range (allowed: 27 to {})",
                    f.payload_bytes,
                    65_000 - DATA_OVERHEAD
                ),
            );
        }
        if f.streams.is_empty() {
            return v.err(
                format!("{p}.streams"),
                "a flow needs at least one stream with an application",
            );
        }
        let mut streams: Vec<StreamSpec> = Vec::new();
        for (j, s) in f.streams.iter().enumerate() {
            let spec = stream(&v, s, &format!("{p}.streams.{j}"), j, f.start.0)?;
            if streams.iter().any(|o| o.id == spec.id) {
                return v.err(
                    format!("{p}.streams.{j}.id"),
                    format!("stream {} is used twice in this flow", spec.id),
                );
            }
            streams.push(spec);
        }
        // The connection configuration must be acceptable to the protocol.
        let cc_probe = ConnectionConfig {
            max_packet_size: max_packet as u16,
            ..ConnectionConfig::default()
        };
        if let Err(e) = cc_probe.validate() {
            return v.err(format!("{p}.payload_bytes"), e.to_string());
        }
        flows.push(FlowSpec {
            name: f.name.clone().unwrap_or_else(|| format!("flow{i}")),
            src,
            dst,
            cc,
            scheduler,
            queue_guard,
            ack_policy,
            startup,
            pacing,
            start_ns: f.start.0,
            max_packet_size: max_packet as u16,
            security,
            streams,
        });
    }
    let wireless = super::wireless::validate(cfg, &nodes, origin)?;
    Ok(Model {
        duration_ns: cfg.duration.0,
        seed: cfg.seed,
        interval_ns: cfg.metrics.interval.0,
        per_message: cfg.metrics.per_message,
        warmup_ns: cfg.metrics.warmup.map(|w| w.0),
        ip_overhead_bytes: cfg.net.ip_overhead_bytes,
        nodes,
        links,
        flows,
        wireless,
        vehicular: None,
        flow_groups: Vec::new(),
    })
}

fn dir(
    v: &V<'_>,
    cfg: &ScenarioConfig,
    l: &LinkConfig,
    d: Option<&DirConfig>,
    p: &str,
    which: &str,
) -> Result<DirSpec, ScenarioError> {
    let empty = DirConfig::default();
    let d = d.unwrap_or(&empty);
    // A field set on the direction wins; else the link's.
    let (trace, trace_field) = match (&d.trace, &l.trace) {
        (Some(t), _) => (Some(t.clone()), format!("{p}.{which}.trace")),
        (None, Some(t)) if d.rate.is_none() => (Some(t.clone()), format!("{p}.trace")),
        _ => (None, String::new()),
    };
    let server = match (trace, d.rate.or(l.rate)) {
        (Some(path), _) => ServerSpec::Trace {
            path,
            field: trace_field,
        },
        (None, Some(r)) if r.0 > 0 => ServerSpec::Rate(r.0),
        (None, Some(_)) => return v.err(format!("{p}.rate"), "must be positive (e.g. \"5Mbps\")"),
        (None, None) => {
            return v.err(
                format!("{p}.rate"),
                // What selects a link model, from the one list of them.
                format!(
                    "the {which} direction needs {}",
                    crate::world::link_registry::direction_fields_help()
                ),
            );
        }
    };
    let queue = d
        .queue
        .clone()
        .or_else(|| l.queue.clone())
        .unwrap_or(QueueConfig {
            bdp: Some(1.0),
            ..QueueConfig::default()
        });
    let qf = if d.queue.is_some() {
        format!("{p}.{which}.queue")
    } else {
        format!("{p}.queue")
    };
    let kinds = [
        queue.packets.is_some(),
        queue.bytes.is_some(),
        queue.bdp.is_some(),
    ]
    .iter()
    .filter(|x| **x)
    .count();
    if kinds != 1 {
        return v.err(qf, "set exactly one of packets, bytes, bdp");
    }
    if queue.packets == Some(0)
        || queue.bytes == Some(0)
        || queue.bdp.is_some_and(|b| !(b > 0.0 && b.is_finite()))
    {
        return v.err(qf, "the queue size must be positive");
    }
    let loss_cfg = d.loss.as_ref().or(l.loss.as_ref());
    let lf = if d.loss.is_some() {
        format!("{p}.{which}.loss")
    } else {
        format!("{p}.loss")
    };
    let loss = match loss_cfg {
        None => LossSpec::None,
        Some(lc) => loss(v, lc, &lf)?,
    };
    let outages = d
        .outages
        .clone()
        .or_else(|| l.outages.clone())
        .unwrap_or_default();
    let of = if d.outages.is_some() {
        format!("{p}.{which}.outages")
    } else {
        format!("{p}.outages")
    };
    for (k, w) in outages.scheduled.iter().enumerate() {
        if w.end <= w.start {
            return v.err(format!("{of}.scheduled.{k}.end"), "must be after start");
        }
    }
    match (outages.mean_up, outages.mean_down) {
        (None, None) => {}
        (Some(u), Some(dn)) if u.0 > 0 && dn.0 > 0 => {}
        _ => {
            return v.err(
                format!("{of}.mean_up"),
                "random outages need both mean_up and mean_down, positive",
            )
        }
    }
    // Each table from the direction, else the link; the error names the
    // key where it was written.
    let pick = |own: bool| {
        if own {
            format!("{p}.{which}")
        } else {
            p.to_string()
        }
    };
    let options = LinkOptions::validate(
        d.aqm.as_ref().or(l.aqm.as_ref()),
        None,
        None,
        &pick(d.aqm.is_some()),
    )
    .and_then(|a| {
        let j = LinkOptions::validate(
            None,
            d.jitter.as_ref().or(l.jitter.as_ref()),
            None,
            &pick(d.jitter.is_some()),
        )?;
        let r = LinkOptions::validate(
            None,
            None,
            d.reorder.as_ref().or(l.reorder.as_ref()),
            &pick(d.reorder.is_some()),
        )?;
        Ok(LinkOptions {
            aqm: a.aqm,
            jitter: j.jitter,
            jitter_reorders: j.jitter_reorders,
            reorder: r.reorder,
        })
    });
    let options = match options {
        Ok(o) => o,
        Err(e) => return v.err(e.field, e.msg),
    };
    Ok(DirSpec {
        server,
        delay_ns: d.delay.or(l.delay).map_or(0, |x| x.0),
        queue_floor_packets: queue
            .min_packets
            .unwrap_or(cfg.net.queue_floor_packets)
            .max(1),
        queue,
        loss,
        outages,
        options,
    })
}

fn loss(v: &V<'_>, lc: &LossConfig, f: &str) -> Result<LossSpec, ScenarioError> {
    Ok(match lc.model.as_str() {
        "none" => LossSpec::None,
        "bernoulli" => {
            let Some(p) = lc.p else {
                return v.err(format!("{f}.p"), "bernoulli loss needs p (0 to 1)");
            };
            LossSpec::Bernoulli {
                p: v.prob(format!("{f}.p"), p)?,
                data_only: lc.data_only,
            }
        }
        "gilbert_elliott" => {
            let (Some(p_gb), Some(p_bg)) = (lc.p_gb, lc.p_bg) else {
                return v.err(
                    format!("{f}.p_gb"),
                    "gilbert_elliott loss needs p_gb and p_bg (0 to 1)",
                );
            };
            LossSpec::GilbertElliott {
                p_gb: v.prob(format!("{f}.p_gb"), p_gb)?,
                p_bg: v.prob(format!("{f}.p_bg"), p_bg)?,
                loss_good: v.prob(format!("{f}.loss_good"), lc.loss_good.unwrap_or(0.0))?,
                loss_bad: v.prob(format!("{f}.loss_bad"), lc.loss_bad.unwrap_or(1.0))?,
                data_only: lc.data_only,
            }
        }
        other => {
            return v.err(
                format!("{f}.model"),
                format!("unknown loss model {other:?} (allowed: none, bernoulli, gilbert_elliott)"),
            )
        }
    })
}

fn stream(
    v: &V<'_>,
    s: &StreamAppConfig,
    p: &str,
    index: usize,
    flow_start: u64,
) -> Result<StreamSpec, ScenarioError> {
    let id = match s.id {
        Some(id) => id,
        None => u16::try_from(index).unwrap_or(u16::MAX),
    };
    if s.priority > 3 {
        return v.err(
            format!("{p}.priority"),
            format!("{} is not a priority class (allowed: 0 to 3)", s.priority),
        );
    }
    if s.weight == 0 {
        return v.err(format!("{p}.weight"), "must be at least 1");
    }
    let reliability = match s.reliability.as_str() {
        "reliable" => StreamReliability::ReliableOrdered,
        "reliable_unordered" => StreamReliability::ReliableUnordered,
        "unreliable" => StreamReliability::Unreliable,
        other => {
            return v.err(
                format!("{p}.reliability"),
                format!(
                "unknown reliability {other:?} (allowed: reliable, reliable_unordered, unreliable)"
            ),
            )
        }
    };
    let msg = |default: u32| -> Result<u32, ScenarioError> {
        let m = s.message_bytes.unwrap_or(default);
        if m == 0 || m > 1 << 20 {
            return v.err(
                format!("{p}.message_bytes"),
                format!("{m} is out of range (allowed: 1 to 1048576)"),
            );
        }
        Ok(m)
    };
    let need_rate = || match s.rate {
        Some(r) if r.0 > 0 => Ok(r.0),
        _ => v.err(
            format!("{p}.rate"),
            format!(
                "the {} application needs a positive rate (e.g. \"1Mbps\")",
                s.app
            ),
        ),
    };
    let buffer = s.buffer_bytes.unwrap_or(4 << 20).max(1);
    let app = match s.app.as_str() {
        "bulk" => AppSpec::Bulk {
            message_bytes: msg(16_384)?,
            buffer_bytes: buffer,
        },
        "cbr" => AppSpec::Cbr {
            rate_bps: need_rate()?,
            message_bytes: msg(1000)?,
        },
        "onoff" => {
            let dist = match s.distribution.as_deref().unwrap_or("exponential") {
                "exponential" => PeriodDist::Exponential,
                "pareto" => {
                    let shape = s.shape.unwrap_or(1.5);
                    if !(shape > 1.0 && shape.is_finite()) {
                        return v.err(
                            format!("{p}.shape"),
                            "the Pareto shape must be above 1 (finite mean)",
                        );
                    }
                    PeriodDist::Pareto(shape)
                }
                other => {
                    return v.err(
                        format!("{p}.distribution"),
                        format!("unknown distribution {other:?} (allowed: exponential, pareto)"),
                    )
                }
            };
            let (Some(on), Some(off)) = (s.mean_on, s.mean_off) else {
                return v.err(
                    format!("{p}.mean_on"),
                    "the onoff application needs mean_on and mean_off",
                );
            };
            if on.0 == 0 || off.0 == 0 {
                return v.err(
                    format!("{p}.mean_on"),
                    "mean_on and mean_off must be positive",
                );
            }
            AppSpec::OnOff {
                rate_bps: need_rate()?,
                message_bytes: msg(1000)?,
                dist,
                mean_on_ns: on.0,
                mean_off_ns: off.0,
            }
        }
        "file" => match s.bytes {
            Some(b) if b > 0 => AppSpec::File {
                bytes: b,
                message_bytes: msg(16_384)?,
                buffer_bytes: buffer,
            },
            _ => return v.err(format!("{p}.bytes"), "the file application needs bytes > 0"),
        },
        "trace" => match &s.path {
            Some(path) => AppSpec::Trace {
                path: path.clone(),
                field: format!("{p}.path"),
                repeat: s.repeat,
                max_messages: s.max_messages,
            },
            None => {
                return v.err(
                    format!("{p}.path"),
                    "the trace application needs a CSV path",
                )
            }
        },
        other => {
            return v.err(
                format!("{p}.app"),
                format!("unknown application {other:?} (allowed: bulk, cbr, onoff, file, trace)"),
            )
        }
    };
    let start_ns = s.start.map_or(flow_start, |d| d.0.max(flow_start));
    if let Some(stop) = s.stop {
        if stop.0 <= start_ns {
            return v.err(format!("{p}.stop"), "must be after the application's start");
        }
    }
    Ok(StreamSpec {
        id,
        config: StreamConfig {
            class: s.priority,
            weight: s.weight,
            reliability,
            // No per-stream send-buffer limit unless the application sets
            // one (bulk and file: `buffer_bytes`, in build.rs): the
            // connection's limit alone, as every recorded result assumed.
            max_buffered_bytes: usize::MAX,
        },
        deadline_ns: s.deadline.map(|d| d.0),
        start_ns,
        stop_ns: s.stop.map(|d| d.0),
        app,
    })
}
