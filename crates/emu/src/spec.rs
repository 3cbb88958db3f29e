//! What each direction of the emulated link is: parsed from the command
//! line (`--downlink`, `--uplink`, `--delay`, `--queue`, `--loss`,
//! `--outage`) or taken from a scenario file's link (`--link
//! FILE.toml:links.N`), and turned into the simulator's own
//! [`PointToPoint`] link model.
//!
//! Direction names follow Mahimahi: the **uplink** carries what the
//! command sends, the **downlink** what it receives. In a scenario link
//! the command sits at end `a`, so `up` (a → b) is the uplink and `down`
//! (b → a) the downlink, as `scenarios/mmwave-trace.toml` already writes.

use anyhow::{anyhow, bail};
pub use peregrine_link::aqm::AqmConfig;
pub use peregrine_link::impair::{Jitter, NetemReorder};
use peregrine_sim::rng::component_rng;
use peregrine_sim::scenario::config::{OutageConfig, OutageWindow, QueueConfig};
use peregrine_sim::scenario::model::{DirSpec, LossSpec, ServerSpec};
use peregrine_sim::scenario::units::{parse_duration, parse_rate, Dur};
use peregrine_sim::world::link::{PointToPoint, QueueLimit, Server};
use peregrine_sim::world::link_options::{
    AqmTable, JitterTable, LinkOptions, OptionError, ReorderTable,
};
use peregrine_sim::world::loss::LossModel;
use peregrine_sim::world::outage::Outages;
use peregrine_sim::world::trace::MahimahiTrace;
use peregrine_sim::Scenario;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The rate of a direction given no rate: 1 Pbit/s.
pub const UNLIMITED_BPS: u64 = 1_000_000_000_000_000;

/// How a direction serves its queue, as the user wrote it.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerArg {
    /// No rate limit (a packet is served in 1 ns): only delay, loss and
    /// outages apply, as `mm-delay` alone.
    Unlimited,
    /// A fixed rate, bits per second.
    Rate(u64),
    /// A Mahimahi trace file (plain or `.gz`).
    Trace(PathBuf),
}

impl ServerArg {
    /// `12Mbps` (anything [`parse_rate`] reads) is a rate; anything else
    /// must be an existing trace file. O(1) plus one `stat`.
    pub fn parse(text: &str) -> Result<ServerArg, String> {
        let looks_like_rate = text.starts_with(|c: char| c.is_ascii_digit())
            && text
                .chars()
                .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E');
        if let Ok(r) = parse_rate(text) {
            if r.0 == 0 {
                return Err(format!("{text:?}: a rate must be positive"));
            }
            return Ok(ServerArg::Rate(r.0));
        }
        if Path::new(text).is_file() {
            return Ok(ServerArg::Trace(PathBuf::from(text)));
        }
        if looks_like_rate {
            // Report the rate parser's complaint (unknown unit, …).
            return Err(parse_rate(text).err().unwrap_or_default());
        }
        Err(format!(
            "{text:?} is neither a rate (e.g. \"12Mbps\") nor a trace file that exists"
        ))
    }
}

/// `--queue packets=N|bytes=N|bdp=X`.
pub fn parse_queue(text: &str) -> Result<QueueConfig, String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: expected packets=N, bytes=N or bdp=X"))?;
    let mut q = QueueConfig::default();
    match key.trim() {
        "packets" => {
            q.packets = Some(
                value
                    .trim()
                    .parse()
                    .map_err(|_| format!("{text:?}: packets must be a whole number of packets"))?,
            )
        }
        "bytes" => {
            q.bytes = Some(
                value
                    .trim()
                    .parse()
                    .map_err(|_| format!("{text:?}: bytes must be a whole number of bytes"))?,
            )
        }
        "bdp" => {
            let x: f64 = value
                .trim()
                .parse()
                .map_err(|_| format!("{text:?}: bdp must be a number (multiples of the BDP)"))?;
            if !(x.is_finite() && x > 0.0) {
                return Err(format!("{text:?}: bdp must be positive"));
            }
            q.bdp = Some(x);
        }
        other => {
            return Err(format!(
                "{other:?}: unknown queue kind (expected packets=N, bytes=N or bdp=X)"
            ))
        }
    }
    Ok(q)
}

/// `--loss p`: Bernoulli loss probability in [0, 1].
pub fn parse_loss(text: &str) -> Result<f64, String> {
    let p: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?}: a loss probability is a number in [0, 1]"))?;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("{text:?}: a loss probability is in [0, 1]"));
    }
    Ok(p)
}

/// `--aqm MODEL[,KEY=VALUE…]`: a queue discipline with the keys of a
/// scenario's `aqm` table (`codel,target_ms=5,ecn=true`); errors name the
/// bad key.
pub fn parse_aqm(text: &str) -> Result<AqmConfig, String> {
    let t = AqmTable::parse_flag(text)?;
    LinkOptions::validate(Some(&t), None, None, "")
        .map(|o| o.aqm)
        .map_err(option_error)
}

/// `--jitter MODEL,mean_ms=M,stdev_ms=S[,reorder=true]`: delay jitter
/// (`normal` or `pareto`) and whether it may reorder.
pub fn parse_jitter(text: &str) -> Result<(Jitter, bool), String> {
    let t = JitterTable::parse_flag(text)?;
    LinkOptions::validate(None, Some(&t), None, "")
        .map(|o| (o.jitter, o.jitter_reorders))
        .map_err(option_error)
}

/// `--reorder P[,gap=N]`: netem's `reorder P gap N`.
pub fn parse_reorder(text: &str) -> Result<NetemReorder, String> {
    let t = ReorderTable::parse_flag(text)?;
    LinkOptions::validate(None, None, Some(&t), "")
        .and_then(|o| {
            o.reorder.ok_or(OptionError {
                field: ".reorder".into(),
                msg: "missing".into(),
            })
        })
        .map_err(option_error)
}

fn option_error(e: OptionError) -> String {
    format!("{}: {}", e.field.trim_start_matches('.'), e.msg)
}

/// One `--outage`: a window `START-END` (`5s-6.5s`) or random outages
/// `mean_up=10s,mean_down=200ms`.
#[derive(Clone, Debug, PartialEq)]
pub enum OutageArg {
    /// Down during `[start, end)` since the start of the emulator.
    Window(OutageWindow),
    /// Exponential up and down times with these means.
    Random {
        /// Mean up time.
        mean_up: Dur,
        /// Mean down time.
        mean_down: Dur,
    },
}

/// Parse one `--outage` value.
pub fn parse_outage(text: &str) -> Result<OutageArg, String> {
    if text.contains('=') {
        let (mut up, mut down) = (None, None);
        for part in text.split(',') {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?}: expected key=duration"))?;
            let d = parse_duration(v.trim())?;
            match k.trim() {
                "mean_up" => up = Some(d),
                "mean_down" => down = Some(d),
                other => {
                    return Err(format!(
                        "{other:?}: unknown outage key (expected mean_up, mean_down)"
                    ))
                }
            }
        }
        match (up, down) {
            (Some(mean_up), Some(mean_down)) if mean_up.0 > 0 && mean_down.0 > 0 => {
                Ok(OutageArg::Random { mean_up, mean_down })
            }
            _ => Err(format!(
                "{text:?}: random outages need both mean_up and mean_down, positive"
            )),
        }
    } else {
        let (s, e) = text.split_once('-').ok_or_else(|| {
            format!("{text:?}: expected START-END (e.g. 5s-6s) or mean_up=…,mean_down=…")
        })?;
        let start = parse_duration(s.trim())?;
        let end = parse_duration(e.trim())?;
        if end.0 <= start.0 {
            return Err(format!("{text:?}: the outage must end after it starts"));
        }
        Ok(OutageArg::Window(OutageWindow { start, end }))
    }
}

/// The link the command line describes.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkArgs {
    /// Towards the command.
    pub downlink: ServerArg,
    /// From the command.
    pub uplink: ServerArg,
    /// One-way delay of each direction, ns.
    pub delay_ns: u64,
    /// Queue size of each direction (`None`: unbounded, as `mm-link`).
    pub queue: Option<QueueConfig>,
    /// Bernoulli loss of each direction.
    pub loss: f64,
    /// Outages of each direction.
    pub outages: Vec<OutageArg>,
    /// Seed of the loss and outage generators.
    pub seed: u64,
    /// Queue discipline, jitter and reordering of each direction
    /// (`--aqm`, `--jitter`, `--reorder`).
    pub options: LinkOptions,
}

/// Where the two directions come from.
#[derive(Clone, Debug, PartialEq)]
pub enum LinkSource {
    /// Command-line flags (boxed: the AQM parameters make them large).
    Args(Box<LinkArgs>),
    /// `FILE.toml:links.N`: that scenario link, with the scenario's seed.
    Scenario {
        /// The scenario file.
        file: PathBuf,
        /// The index of the link in `[[links]]`.
        index: usize,
    },
}

/// Split `FILE.toml:links.N`.
pub fn parse_link_ref(text: &str) -> Result<(PathBuf, usize), String> {
    let (file, field) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("{text:?}: expected FILE.toml:links.N"))?;
    let n = field
        .strip_prefix("links.")
        .and_then(|n| n.parse::<usize>().ok())
        .ok_or_else(|| format!("{field:?}: expected links.N (N the link's index, from 0)"))?;
    Ok((PathBuf::from(file), n))
}

/// One direction, ready to run, with what the log and plot need to know.
pub struct BuiltDirection {
    /// The simulator's link model for this direction.
    pub model: PointToPoint,
    /// A one-line description for the log header and the banner.
    pub describe: String,
    /// Its trace, if trace-driven (the plot draws its capacity).
    pub trace: Option<PathBuf>,
    /// Its fixed rate, if rate-driven.
    pub rate_bps: Option<u64>,
    /// One-way delay, ns.
    pub delay_ns: u64,
    /// Its outages, as the model draws them (for `--hint-lead`).
    pub outages: crate::hints::OutageSource,
}

/// `[uplink, downlink]` of `source`. Errors name the bad field or file.
pub fn build(source: &LinkSource) -> anyhow::Result<[BuiltDirection; 2]> {
    match source {
        LinkSource::Args(a) => {
            let outages = OutageConfig {
                scheduled: a
                    .outages
                    .iter()
                    .filter_map(|o| match o {
                        OutageArg::Window(w) => Some(w.clone()),
                        OutageArg::Random { .. } => None,
                    })
                    .collect(),
                mean_up: a.outages.iter().find_map(|o| match o {
                    OutageArg::Random { mean_up, .. } => Some(*mean_up),
                    OutageArg::Window(_) => None,
                }),
                mean_down: a.outages.iter().find_map(|o| match o {
                    OutageArg::Random { mean_down, .. } => Some(*mean_down),
                    OutageArg::Window(_) => None,
                }),
            };
            let loss = if a.loss > 0.0 {
                LossSpec::Bernoulli {
                    p: a.loss,
                    data_only: false,
                }
            } else {
                LossSpec::None
            };
            let dir = |server: &ServerArg, name: &str| -> anyhow::Result<BuiltDirection> {
                let (server, trace, rate) = match server {
                    ServerArg::Unlimited => (None, None, None),
                    ServerArg::Rate(r) => (Some(Server::Rate(*r)), None, Some(*r)),
                    ServerArg::Trace(p) => {
                        let t = MahimahiTrace::load(p)
                            .map_err(|e| anyhow!("--{name} {}: {e}", p.display()))?;
                        (Some(Server::Trace(Arc::new(t))), Some(p.clone()), None)
                    }
                };
                make(
                    server,
                    trace,
                    rate,
                    a.delay_ns,
                    a.queue.as_ref(),
                    10,
                    loss.clone(),
                    &outages,
                    &a.options,
                    a.seed,
                    &format!("emu/{name}"),
                )
            };
            Ok([dir(&a.uplink, "uplink")?, dir(&a.downlink, "downlink")?])
        }
        LinkSource::Scenario { file, index } => {
            let sc = Scenario::from_file(file, &[]).map_err(|e| anyhow!("{e}"))?;
            let link = sc.model.links.get(*index).ok_or_else(|| {
                anyhow!(
                    "{}: links.{index}: the scenario has {} link(s)",
                    file.display(),
                    sc.model.links.len()
                )
            })?;
            let seed = sc.model.seed;
            let dir = |d: &DirSpec, name: &str| -> anyhow::Result<BuiltDirection> {
                let (server, trace, rate) = match &d.server {
                    ServerSpec::Rate(r) => (Some(Server::Rate(*r)), None, Some(*r)),
                    ServerSpec::Trace { path, field } => {
                        let full = sc.resolve_path(path);
                        let t = MahimahiTrace::load(&full)
                            .map_err(|e| anyhow!("{}: {field}: {path}: {e}", file.display()))?;
                        (Some(Server::Trace(Arc::new(t))), Some(full), None)
                    }
                };
                // The simulator's component names, so the losses and
                // outages are the very draws `peregrine sim` makes.
                make(
                    server,
                    trace,
                    rate,
                    d.delay_ns,
                    Some(&d.queue),
                    d.queue_floor_packets,
                    d.loss.clone(),
                    &d.outages,
                    &d.options,
                    seed,
                    &format!("link/{}/{name}", link.name),
                )
            };
            Ok([dir(&link.dirs[0], "up")?, dir(&link.dirs[1], "down")?])
        }
    }
}

/// The queue limit of `q` for a direction of mean rate `rate_bps` and
/// one-way delay `delay_ns`: the simulator's own rule
/// ([`QueueConfig::limit`]), with `q.min_packets` or else `floor` as a
/// BDP queue's floor. `None` is unbounded. O(1).
pub fn queue_limit(
    q: Option<&QueueConfig>,
    rate_bps: f64,
    delay_ns: u64,
    floor: u64,
) -> QueueLimit {
    let unbounded = QueueLimit {
        packets: None,
        bytes: None,
        floor_packets: 0,
    };
    q.map_or(unbounded, |q| {
        q.limit(rate_bps, delay_ns, q.min_packets.unwrap_or(floor))
    })
}

#[allow(clippy::too_many_arguments)]
fn make(
    server: Option<Server>,
    trace: Option<PathBuf>,
    rate_bps: Option<u64>,
    delay_ns: u64,
    queue: Option<&QueueConfig>,
    floor: u64,
    loss: LossSpec,
    outages: &OutageConfig,
    options: &LinkOptions,
    seed: u64,
    rng_name: &str,
) -> anyhow::Result<BuiltDirection> {
    let mean_rate = match &server {
        Some(Server::Rate(r)) => *r as f64,
        Some(Server::Trace(t)) => t.mean_rate_bps(),
        None => f64::INFINITY,
    };
    if queue.is_some_and(|q| q.bdp.is_some()) && server.is_none() {
        bail!("--queue bdp=X needs a rate or a trace (the link has no rate to take a BDP of)");
    }
    let limit = queue_limit(queue, mean_rate, delay_ns, floor);
    let mut describe = format!(
        "{}, delay {:.3} ms, queue {}, loss {}, outages {}",
        match (&trace, rate_bps) {
            (Some(p), _) => format!("trace {}", p.display()),
            (None, Some(r)) => format!("{:.3} Mbit/s", r as f64 / 1e6),
            (None, None) => "no rate limit".to_string(),
        },
        delay_ns as f64 / 1e6,
        describe_limit(&limit),
        match &loss {
            LossSpec::None => "none".to_string(),
            LossSpec::Bernoulli { p, .. } => format!("bernoulli p={p}"),
            LossSpec::GilbertElliott { .. } => "gilbert-elliott".to_string(),
        },
        if outages.scheduled.is_empty() && outages.mean_up.is_none() {
            "none".to_string()
        } else {
            format!(
                "{} window(s){}",
                outages.scheduled.len(),
                if outages.mean_up.is_some() {
                    " + random"
                } else {
                    ""
                }
            )
        }
    );
    if options.aqm != AqmConfig::DropTail {
        describe.push_str(&format!(", aqm {}", options.aqm.name()));
    }
    if options.jitter != Jitter::None {
        describe.push_str(&format!(
            ", jitter {:?}{}",
            options.jitter,
            if options.jitter_reorders {
                " (reordering)"
            } else {
                ""
            }
        ));
    }
    if let Some(r) = options.reorder {
        describe.push_str(&format!(", reorder p={} gap={}", r.p, r.gap));
    }
    let outage_source = crate::hints::OutageSource {
        config: outages.clone(),
        seed,
        rng_name: format!("{rng_name}/outage"),
    };
    let model = PointToPoint::new(
        // An unlimited direction: 1 Pbit/s serves any packet in 1 ns,
        // far above what the emulator can carry.
        server.unwrap_or(Server::Rate(UNLIMITED_BPS)),
        std::time::Duration::from_nanos(delay_ns),
        limit,
        LossModel::new(loss, component_rng(seed, &format!("{rng_name}/loss"))),
        Outages::new(outages, component_rng(seed, &outage_source.rng_name)),
    )
    .with_options(options, limit, seed, rng_name);
    Ok(BuiltDirection {
        model,
        describe,
        trace,
        rate_bps,
        delay_ns,
        outages: outage_source,
    })
}

fn describe_limit(l: &QueueLimit) -> String {
    match (l.packets, l.bytes) {
        (Some(p), _) => format!("{p} packets"),
        (None, Some(b)) if l.floor_packets > 0 => {
            format!("{b} bytes (at least {} packets)", l.floor_packets)
        }
        (None, Some(b)) => format!("{b} bytes"),
        (None, None) => "unbounded".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_traces_and_bad_values() {
        assert_eq!(ServerArg::parse("12Mbps"), Ok(ServerArg::Rate(12_000_000)));
        assert!(ServerArg::parse("12Mbpx")
            .unwrap_err()
            .contains("unknown rate unit"));
        assert!(ServerArg::parse("no-such-trace")
            .unwrap_err()
            .contains("neither"));
        assert!(ServerArg::parse("0Mbps").unwrap_err().contains("positive"));
    }

    #[test]
    fn aqm_jitter_reorder_flags_use_the_scenario_keys() {
        match parse_aqm("codel,target_ms=2,ecn=true") {
            Ok(AqmConfig::Codel(c)) => {
                assert_eq!(c.target, std::time::Duration::from_millis(2));
                assert!(c.ecn);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse_aqm("fq_codel"), Ok(AqmConfig::FqCodel(_))));
        assert!(matches!(
            parse_aqm("dualpi2,k=2"),
            Ok(AqmConfig::DualPi2(_))
        ));
        let e = parse_aqm("codel,target_ms=0").unwrap_err();
        assert!(e.starts_with("aqm.target_ms:"), "{e}");
        assert!(parse_aqm("pie,bogus=1").unwrap_err().contains("aqm.bogus"));
        assert!(parse_aqm("sfq").unwrap_err().starts_with("aqm.model:"));
        let (j, reorders) = parse_jitter("pareto,mean_ms=4,stdev_ms=2,reorder=true").unwrap();
        assert!(matches!(j, Jitter::Pareto { .. }) && reorders);
        assert!(parse_jitter("normal,mean_ms=4")
            .unwrap_err()
            .contains("stdev_ms"));
        let r = parse_reorder("0.25,gap=5").unwrap();
        assert_eq!((r.p, r.gap), (0.25, 5));
        assert!(parse_reorder("0.25,gap=0")
            .unwrap_err()
            .starts_with("reorder.gap:"));
        assert!(parse_reorder("2").unwrap_err().starts_with("reorder.p:"));
    }

    #[test]
    fn queues_losses_outages_links() {
        assert_eq!(parse_queue("packets=100").map(|q| q.packets), Ok(Some(100)));
        assert_eq!(parse_queue("bytes=15000").map(|q| q.bytes), Ok(Some(15000)));
        assert_eq!(parse_queue("bdp=1.5").map(|q| q.bdp), Ok(Some(1.5)));
        assert!(parse_queue("pkts=3")
            .unwrap_err()
            .contains("unknown queue kind"));
        assert!(parse_queue("bdp=-1").is_err());
        assert_eq!(parse_loss("0.01"), Ok(0.01));
        assert!(parse_loss("2").is_err());
        assert_eq!(
            parse_outage("5s-6s"),
            Ok(OutageArg::Window(OutageWindow {
                start: Dur(5_000_000_000),
                end: Dur(6_000_000_000)
            }))
        );
        assert!(parse_outage("6s-5s").is_err());
        assert_eq!(
            parse_outage("mean_up=10s,mean_down=200ms"),
            Ok(OutageArg::Random {
                mean_up: Dur(10_000_000_000),
                mean_down: Dur(200_000_000)
            })
        );
        assert!(parse_outage("mean_up=10s").is_err());
        assert_eq!(
            parse_link_ref("a/b.toml:links.2"),
            Ok((PathBuf::from("a/b.toml"), 2))
        );
        assert!(parse_link_ref("a.toml:flows.0").is_err());
    }

    #[test]
    fn queue_limits_follow_the_simulator() {
        let unb = queue_limit(None, 12e6, 20_000_000, 10);
        assert_eq!((unb.packets, unb.bytes), (None, None));
        let q = parse_queue("bdp=1").expect("valid");
        // 12 Mbit/s × 40 ms = 60,000 bytes.
        let l = queue_limit(Some(&q), 12e6, 20_000_000, 10);
        assert_eq!((l.bytes, l.floor_packets), (Some(60_000), 10));
    }
}
