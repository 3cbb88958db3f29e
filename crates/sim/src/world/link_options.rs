//! A link direction's queue discipline and impairments, as a scenario
//! (`aqm = { … }`, `jitter = { … }`, `reorder = { … }` on a `[[links]]`
//! entry or one of its directions) and `peregrine emu` (`--aqm`,
//! `--jitter`, `--reorder`) write them: the tables, their one validation
//! (errors name the bad key), and the validated [`LinkOptions`] that
//! [`PointToPoint::with_options`](super::link::PointToPoint::with_options)
//! applies. The algorithms are the link crate's ([`peregrine_link::aqm`],
//! [`peregrine_link::impair`]).

use peregrine_link::aqm::{
    AqmConfig, CodelParams, DualPi2Params, FqCodelParams, PieParams, RedParams,
};
use peregrine_link::impair::{Jitter, NetemReorder};
use serde::Deserialize;
use std::time::Duration;

/// `aqm = { model = "codel", target_ms = 5, … }`: every key any model
/// takes; [`LinkOptions::validate`] rejects a key the model does not.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AqmTable {
    /// `drop_tail`, `codel`, `fq_codel`, `pie`, `red`, `dualpi2`.
    pub model: String,
    /// Mark ECT packets CE instead of dropping them.
    #[serde(default)]
    pub ecn: Option<bool>,
    /// Target queue delay, ms (codel, fq_codel, pie, dualpi2).
    #[serde(default)]
    pub target_ms: Option<f64>,
    /// CoDel's interval, ms (codel, fq_codel).
    #[serde(default)]
    pub interval_ms: Option<f64>,
    /// CoDel's MAXPACKET, bytes (codel, fq_codel).
    #[serde(default)]
    pub mtu_bytes: Option<u64>,
    /// Flow buckets (fq_codel).
    #[serde(default)]
    pub flows: Option<u32>,
    /// DRR quantum, bytes (fq_codel).
    #[serde(default)]
    pub quantum_bytes: Option<u64>,
    /// Update interval, ms (pie, dualpi2).
    #[serde(default)]
    pub t_update_ms: Option<f64>,
    /// Integral gain, Hz (pie, dualpi2).
    #[serde(default)]
    pub alpha: Option<f64>,
    /// Proportional gain, Hz (pie, dualpi2).
    #[serde(default)]
    pub beta: Option<f64>,
    /// Burst allowance, ms (pie).
    #[serde(default)]
    pub max_burst_ms: Option<f64>,
    /// Above this drop probability ECT packets are dropped too (pie).
    #[serde(default)]
    pub mark_ecn_threshold: Option<f64>,
    /// Lower threshold, packets (red).
    #[serde(default)]
    pub min_th_packets: Option<f64>,
    /// Upper threshold, packets (red).
    #[serde(default)]
    pub max_th_packets: Option<f64>,
    /// Marking probability at the upper threshold (red).
    #[serde(default)]
    pub max_p: Option<f64>,
    /// EWMA weight of the average queue (red).
    #[serde(default)]
    pub w_q: Option<f64>,
    /// Coupling factor (dualpi2).
    #[serde(default)]
    pub k: Option<f64>,
    /// L4S step marking threshold, ms (dualpi2).
    #[serde(default)]
    pub step_thresh_ms: Option<f64>,
    /// Classic queue's scheduler weight, percent (dualpi2).
    #[serde(default)]
    pub c_protection_percent: Option<u8>,
}

/// `jitter = { model = "normal", mean_ms = 5, stdev_ms = 2, reorder = false }`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JitterTable {
    /// `normal` or `pareto`.
    pub model: String,
    /// Mean extra delay, ms.
    pub mean_ms: f64,
    /// Standard deviation, ms.
    pub stdev_ms: f64,
    /// May a packet overtake its predecessor (default false)?
    #[serde(default)]
    pub reorder: bool,
}

/// `reorder = { p = 0.25, gap = 5 }`: netem's `reorder P gap GAP`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReorderTable {
    /// Probability that a candidate packet is sent at once.
    pub p: f64,
    /// Every `gap`-th packet is a candidate (default 1, as `tc`).
    #[serde(default)]
    pub gap: Option<u64>,
}

/// A bad key: its path and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError {
    /// The key, e.g. `links.0.up.aqm.target_ms`.
    pub field: String,
    /// What is wrong.
    pub msg: String,
}

/// A direction's validated queue discipline and impairments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkOptions {
    /// The queue discipline (drop-tail by default).
    pub aqm: AqmConfig,
    /// Delay jitter.
    pub jitter: Jitter,
    /// Whether jitter may reorder.
    pub jitter_reorders: bool,
    /// netem reordering.
    pub reorder: Option<NetemReorder>,
}

/// Keys each model takes (besides `model` and `ecn`).
fn allowed(model: &str) -> &'static [&'static str] {
    match model {
        "codel" => &["target_ms", "interval_ms", "mtu_bytes"],
        "fq_codel" => &[
            "target_ms",
            "interval_ms",
            "mtu_bytes",
            "flows",
            "quantum_bytes",
        ],
        "pie" => &[
            "target_ms",
            "t_update_ms",
            "alpha",
            "beta",
            "max_burst_ms",
            "mark_ecn_threshold",
        ],
        "red" => &["min_th_packets", "max_th_packets", "max_p", "w_q"],
        "dualpi2" => &[
            "target_ms",
            "t_update_ms",
            "alpha",
            "beta",
            "k",
            "step_thresh_ms",
            "c_protection_percent",
        ],
        _ => &[],
    }
}

impl AqmTable {
    /// The keys set, besides `model`.
    fn set_keys(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let mut k = |name: &'static str, set: bool| {
            if set {
                v.push(name)
            }
        };
        k("ecn", self.ecn.is_some());
        k("target_ms", self.target_ms.is_some());
        k("interval_ms", self.interval_ms.is_some());
        k("mtu_bytes", self.mtu_bytes.is_some());
        k("flows", self.flows.is_some());
        k("quantum_bytes", self.quantum_bytes.is_some());
        k("t_update_ms", self.t_update_ms.is_some());
        k("alpha", self.alpha.is_some());
        k("beta", self.beta.is_some());
        k("max_burst_ms", self.max_burst_ms.is_some());
        k("mark_ecn_threshold", self.mark_ecn_threshold.is_some());
        k("min_th_packets", self.min_th_packets.is_some());
        k("max_th_packets", self.max_th_packets.is_some());
        k("max_p", self.max_p.is_some());
        k("w_q", self.w_q.is_some());
        k("k", self.k.is_some());
        k("step_thresh_ms", self.step_thresh_ms.is_some());
        k("c_protection_percent", self.c_protection_percent.is_some());
        v
    }

    /// Parse `peregrine emu`'s `--aqm MODEL[,KEY=VALUE…]` (the keys of the
    /// scenario table). Errors name the bad key.
    pub fn parse_flag(text: &str) -> Result<AqmTable, String> {
        let mut parts = text.split(',');
        let model = parts.next().unwrap_or("").trim();
        let mut t = AqmTable {
            model: model.to_string(),
            ..AqmTable::default()
        };
        for kv in parts {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("{kv:?}: expected KEY=VALUE"))?;
            let (k, v) = (k.trim(), v.trim());
            let f = || -> Result<f64, String> {
                v.parse::<f64>()
                    .map_err(|_| format!("aqm.{k}: {v:?} is not a number"))
            };
            let u = || -> Result<u64, String> {
                v.parse::<u64>()
                    .map_err(|_| format!("aqm.{k}: {v:?} is not a whole number"))
            };
            match k {
                "ecn" => {
                    t.ecn = Some(
                        v.parse::<bool>()
                            .map_err(|_| format!("aqm.ecn: {v:?} is not true or false"))?,
                    )
                }
                "target_ms" => t.target_ms = Some(f()?),
                "interval_ms" => t.interval_ms = Some(f()?),
                "mtu_bytes" => t.mtu_bytes = Some(u()?),
                "flows" => {
                    t.flows = Some(
                        u32::try_from(u()?)
                            .map_err(|_| format!("aqm.flows: {v:?} is too large"))?,
                    )
                }
                "quantum_bytes" => t.quantum_bytes = Some(u()?),
                "t_update_ms" => t.t_update_ms = Some(f()?),
                "alpha" => t.alpha = Some(f()?),
                "beta" => t.beta = Some(f()?),
                "max_burst_ms" => t.max_burst_ms = Some(f()?),
                "mark_ecn_threshold" => t.mark_ecn_threshold = Some(f()?),
                "min_th_packets" => t.min_th_packets = Some(f()?),
                "max_th_packets" => t.max_th_packets = Some(f()?),
                "max_p" => t.max_p = Some(f()?),
                "w_q" => t.w_q = Some(f()?),
                "k" => t.k = Some(f()?),
                "step_thresh_ms" => t.step_thresh_ms = Some(f()?),
                "c_protection_percent" => {
                    t.c_protection_percent = Some(u8::try_from(u()?).map_err(|_| {
                        format!("aqm.c_protection_percent: {v:?} is not a percentage")
                    })?)
                }
                other => return Err(format!("aqm.{other}: unknown key")),
            }
        }
        Ok(t)
    }
}

impl JitterTable {
    /// Parse `--jitter MODEL,mean_ms=M,stdev_ms=S[,reorder=true]`.
    pub fn parse_flag(text: &str) -> Result<JitterTable, String> {
        let mut parts = text.split(',');
        let mut t = JitterTable {
            model: parts.next().unwrap_or("").trim().to_string(),
            mean_ms: f64::NAN,
            stdev_ms: f64::NAN,
            reorder: false,
        };
        for kv in parts {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("{kv:?}: expected KEY=VALUE"))?;
            let num = || {
                v.trim()
                    .parse::<f64>()
                    .map_err(|_| format!("jitter.{}: {v:?} is not a number", k.trim()))
            };
            match k.trim() {
                "mean_ms" => t.mean_ms = num()?,
                "stdev_ms" => t.stdev_ms = num()?,
                "reorder" => {
                    t.reorder = v
                        .trim()
                        .parse()
                        .map_err(|_| format!("jitter.reorder: {v:?} is not true or false"))?
                }
                other => return Err(format!("jitter.{other}: unknown key")),
            }
        }
        if t.mean_ms.is_nan() {
            return Err("jitter.mean_ms: missing".to_string());
        }
        if t.stdev_ms.is_nan() {
            return Err("jitter.stdev_ms: missing".to_string());
        }
        Ok(t)
    }
}

impl ReorderTable {
    /// Parse `--reorder P[,gap=N]`.
    pub fn parse_flag(text: &str) -> Result<ReorderTable, String> {
        let mut parts = text.split(',');
        let p = parts.next().unwrap_or("").trim();
        let mut t = ReorderTable {
            p: p.parse()
                .map_err(|_| format!("reorder.p: {p:?} is not a probability"))?,
            gap: None,
        };
        for kv in parts {
            match kv.split_once('=') {
                Some(("gap", v)) => {
                    t.gap = Some(
                        v.trim()
                            .parse()
                            .map_err(|_| format!("reorder.gap: {v:?} is not a whole number"))?,
                    )
                }
                _ => return Err(format!("reorder: {kv:?}: expected gap=N")),
            }
        }
        Ok(t)
    }
}

fn err<T>(field: String, msg: impl Into<String>) -> Result<T, OptionError> {
    Err(OptionError {
        field,
        msg: msg.into(),
    })
}

/// A positive, finite number of milliseconds as a duration.
fn ms(field: String, v: Option<f64>, default: Duration) -> Result<Duration, OptionError> {
    match v {
        None => Ok(default),
        Some(x) if x > 0.0 && x.is_finite() => Ok(Duration::from_secs_f64(x / 1e3)),
        Some(_) => err(field, "must be a positive number of milliseconds"),
    }
}

fn positive(field: String, v: Option<f64>, default: f64) -> Result<f64, OptionError> {
    match v {
        None => Ok(default),
        Some(x) if x > 0.0 && x.is_finite() => Ok(x),
        Some(_) => err(field, "must be positive"),
    }
}

fn prob(field: String, v: Option<f64>, default: f64) -> Result<f64, OptionError> {
    match v {
        None => Ok(default),
        Some(x) if (0.0..=1.0).contains(&x) => Ok(x),
        Some(_) => err(field, "must be a probability in [0, 1]"),
    }
}

fn whole(field: String, v: Option<u64>, default: u64) -> Result<u64, OptionError> {
    match v {
        None => Ok(default),
        Some(x) if x > 0 => Ok(x),
        Some(_) => err(field, "must be at least 1"),
    }
}

impl LinkOptions {
    /// Validate the three tables; `prefix` is the direction's path
    /// (`links.0.up`), errors name `prefix.aqm.KEY` etc.
    pub fn validate(
        aqm: Option<&AqmTable>,
        jitter: Option<&JitterTable>,
        reorder: Option<&ReorderTable>,
        prefix: &str,
    ) -> Result<LinkOptions, OptionError> {
        let mut o = LinkOptions::default();
        if let Some(a) = aqm {
            o.aqm = aqm_config(a, &format!("{prefix}.aqm"))?;
        }
        if let Some(j) = jitter {
            let f = format!("{prefix}.jitter");
            let mean_us = j.mean_ms * 1e3;
            let stdev_us = j.stdev_ms * 1e3;
            if !(j.mean_ms >= 0.0 && j.mean_ms.is_finite()) {
                return err(
                    format!("{f}.mean_ms"),
                    "must be a non-negative number of ms",
                );
            }
            if !(j.stdev_ms >= 0.0 && j.stdev_ms.is_finite()) {
                return err(
                    format!("{f}.stdev_ms"),
                    "must be a non-negative number of ms",
                );
            }
            o.jitter = match j.model.as_str() {
                "normal" => Jitter::Normal { mean_us, stdev_us },
                "pareto" => {
                    if !(j.mean_ms > 0.0 && j.stdev_ms > 0.0) {
                        return err(
                            format!("{f}.stdev_ms"),
                            "pareto jitter needs a positive mean_ms and stdev_ms",
                        );
                    }
                    Jitter::Pareto { mean_us, stdev_us }
                }
                other => {
                    return err(
                        format!("{f}.model"),
                        format!("unknown jitter model {other:?} (allowed: normal, pareto)"),
                    )
                }
            };
            o.jitter_reorders = j.reorder;
        }
        if let Some(r) = reorder {
            let f = format!("{prefix}.reorder");
            let p = prob(format!("{f}.p"), Some(r.p), 0.0)?;
            let gap = whole(format!("{f}.gap"), r.gap, 1)?;
            o.reorder = Some(NetemReorder::new(p, gap));
        }
        Ok(o)
    }
}

fn aqm_config(a: &AqmTable, f: &str) -> Result<AqmConfig, OptionError> {
    let Some(defaults) = AqmConfig::defaults(&a.model) else {
        return err(
            format!("{f}.model"),
            format!(
                "unknown aqm model {:?} (allowed: {})",
                a.model,
                AqmConfig::NAMES.join(", ")
            ),
        );
    };
    for key in a.set_keys() {
        if key != "ecn" && !allowed(&a.model).contains(&key) {
            return err(
                format!("{f}.{key}"),
                format!("not a parameter of {} (it takes: ecn, {})", a.model, {
                    let k = allowed(&a.model);
                    if k.is_empty() {
                        "nothing else".to_string()
                    } else {
                        k.join(", ")
                    }
                }),
            );
        }
    }
    let key = |k: &str| format!("{f}.{k}");
    let codel = |d: CodelParams| -> Result<CodelParams, OptionError> {
        Ok(CodelParams {
            target: ms(key("target_ms"), a.target_ms, d.target)?,
            interval: ms(key("interval_ms"), a.interval_ms, d.interval)?,
            mtu_bytes: whole(key("mtu_bytes"), a.mtu_bytes, d.mtu_bytes)?,
            ecn: a.ecn.unwrap_or(d.ecn),
        })
    };
    Ok(match defaults {
        AqmConfig::DropTail => {
            if a.ecn.is_some() {
                return err(key("ecn"), "drop_tail never marks");
            }
            AqmConfig::DropTail
        }
        AqmConfig::Codel(d) => AqmConfig::Codel(codel(d)?),
        AqmConfig::FqCodel(d) => AqmConfig::FqCodel(FqCodelParams {
            codel: codel(d.codel)?,
            flows: u32::try_from(whole(
                key("flows"),
                a.flows.map(u64::from),
                u64::from(d.flows),
            )?)
            .unwrap_or(d.flows),
            quantum_bytes: whole(key("quantum_bytes"), a.quantum_bytes, d.quantum_bytes)?,
        }),
        AqmConfig::Pie(d) => AqmConfig::Pie(PieParams {
            target: ms(key("target_ms"), a.target_ms, d.target)?,
            t_update: ms(key("t_update_ms"), a.t_update_ms, d.t_update)?,
            alpha: positive(key("alpha"), a.alpha, d.alpha)?,
            beta: positive(key("beta"), a.beta, d.beta)?,
            max_burst: match a.max_burst_ms {
                Some(0.0) => Duration::ZERO,
                v => ms(key("max_burst_ms"), v, d.max_burst)?,
            },
            ecn: a.ecn.unwrap_or(d.ecn),
            mark_ecn_threshold: prob(
                key("mark_ecn_threshold"),
                a.mark_ecn_threshold,
                d.mark_ecn_threshold,
            )?,
        }),
        AqmConfig::Red(d) => {
            let min_th = positive(key("min_th_packets"), a.min_th_packets, d.min_th_packets)?;
            let max_th = positive(key("max_th_packets"), a.max_th_packets, d.max_th_packets)?;
            if max_th <= min_th {
                return err(
                    key("max_th_packets"),
                    format!("must be above min_th_packets ({min_th})"),
                );
            }
            let w_q = prob(key("w_q"), a.w_q, d.w_q)?;
            if w_q == 0.0 {
                return err(key("w_q"), "must be positive");
            }
            AqmConfig::Red(RedParams {
                min_th_packets: min_th,
                max_th_packets: max_th,
                max_p: prob(key("max_p"), a.max_p, d.max_p)?,
                w_q,
                ecn: a.ecn.unwrap_or(d.ecn),
            })
        }
        AqmConfig::DualPi2(d) => AqmConfig::DualPi2(DualPi2Params {
            target: ms(key("target_ms"), a.target_ms, d.target)?,
            t_update: ms(key("t_update_ms"), a.t_update_ms, d.t_update)?,
            alpha: positive(key("alpha"), a.alpha, d.alpha)?,
            beta: positive(key("beta"), a.beta, d.beta)?,
            k: positive(key("k"), a.k, d.k)?,
            step_thresh: ms(key("step_thresh_ms"), a.step_thresh_ms, d.step_thresh)?,
            c_protection_percent: match a.c_protection_percent {
                None => d.c_protection_percent,
                Some(x) if x <= 100 => x,
                Some(_) => return err(key("c_protection_percent"), "must be 0 to 100"),
            },
            ecn: a.ecn.unwrap_or(d.ecn),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &AqmTable) -> Result<LinkOptions, OptionError> {
        LinkOptions::validate(Some(a), None, None, "links.0.up")
    }

    #[test]
    fn defaults_and_overrides_per_model() {
        let t = AqmTable::parse_flag("codel,target_ms=2,ecn=true").unwrap();
        let o = v(&t).unwrap();
        let AqmConfig::Codel(c) = o.aqm else {
            panic!("{o:?}")
        };
        assert_eq!(c.target, Duration::from_millis(2));
        assert_eq!(c.interval, Duration::from_millis(100));
        assert!(c.ecn);
        let t = AqmTable::parse_flag("fq_codel").unwrap();
        assert_eq!(
            v(&t).unwrap().aqm,
            AqmConfig::FqCodel(FqCodelParams::default())
        );
    }

    #[test]
    fn errors_name_the_bad_key() {
        let e = v(&AqmTable::parse_flag("codel,w_q=0.1").unwrap()).unwrap_err();
        assert_eq!(e.field, "links.0.up.aqm.w_q");
        let e = v(&AqmTable::parse_flag("codel,target_ms=-1").unwrap()).unwrap_err();
        assert_eq!(e.field, "links.0.up.aqm.target_ms");
        let e = v(&AqmTable::parse_flag("sfq").unwrap()).unwrap_err();
        assert_eq!(e.field, "links.0.up.aqm.model");
        let e = v(&AqmTable::parse_flag("red,min_th_packets=20").unwrap()).unwrap_err();
        assert_eq!(e.field, "links.0.up.aqm.max_th_packets");
        assert!(AqmTable::parse_flag("pie,bogus=1")
            .unwrap_err()
            .contains("aqm.bogus"));
        let j = JitterTable::parse_flag("cauchy,mean_ms=1,stdev_ms=1").unwrap();
        let e = LinkOptions::validate(None, Some(&j), None, "l").unwrap_err();
        assert_eq!(e.field, "l.jitter.model");
        let r = ReorderTable::parse_flag("1.5").unwrap();
        let e = LinkOptions::validate(None, None, Some(&r), "l").unwrap_err();
        assert_eq!(e.field, "l.reorder.p");
    }
}
