//! Building the running world from a validated scenario, and turning the
//! finished world into results.

use super::{addr, AppSlot, FlowRt, Sim, Slot};
use super::{Ev, EventQueue, SimError, StaticRoutes};
use crate::apps::{App, MessageTrace};
use crate::metrics::output::{FlowResult, LinkResult, SimResults};
use crate::metrics::{FlowMetrics, StreamMetrics};
use crate::rng::component_rng;
use crate::scenario::model::{AppSpec, DirSpec, ServerSpec};
use crate::scenario::Scenario;
use crate::world::link::{LinkModel, PointToPoint, Server};
use crate::world::link_model::LinkStats;
use crate::world::loss::LossModel;
use crate::world::outage::Outages;
use crate::world::trace::MahimahiTrace;
use peregrine_cc::Time;
use peregrine_proto::vtime::EndpointTimer;
use peregrine_proto::{ConnectionConfig, Endpoint, EndpointConfig, PmtuDiscovery, StreamConfig};
use rand::RngExt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Port of flow `f`'s endpoints (client and server, on different nodes).
fn port(f: usize) -> u16 {
    // Validation keeps flows well below 55,000.
    10_000u16.wrapping_add(f as u16)
}

struct Loader<'a> {
    scenario: &'a Scenario,
    traces: BTreeMap<String, Arc<MahimahiTrace>>,
    msg_traces: BTreeMap<String, Arc<MessageTrace>>,
}

impl Loader<'_> {
    fn fail(&self, message: String) -> SimError {
        SimError {
            scenario: self.scenario.name(),
            seed: self.scenario.model.seed,
            message,
        }
    }

    fn trace(&mut self, path: &str, field: &str) -> Result<Arc<MahimahiTrace>, SimError> {
        if let Some(t) = self.traces.get(path) {
            return Ok(Arc::clone(t));
        }
        let full = self.scenario.resolve_path(path);
        let t = MahimahiTrace::load(&full)
            .map_err(|e| self.fail(format!("{}: {field}: {path}: {e}", self.scenario.origin)))?;
        let t = Arc::new(t);
        self.traces.insert(path.to_string(), Arc::clone(&t));
        Ok(t)
    }

    fn msg_trace(&mut self, path: &str, field: &str) -> Result<Arc<MessageTrace>, SimError> {
        if let Some(t) = self.msg_traces.get(path) {
            return Ok(Arc::clone(t));
        }
        let full = self.scenario.resolve_path(path);
        let t = MessageTrace::load(&full)
            .map_err(|e| self.fail(format!("{}: {field}: {path}: {e}", self.scenario.origin)))?;
        let t = Arc::new(t);
        self.msg_traces.insert(path.to_string(), Arc::clone(&t));
        Ok(t)
    }

    fn direction(&mut self, d: &DirSpec, rng_name: &str) -> Result<PointToPoint, SimError> {
        let seed = self.scenario.model.seed;
        let (server, rate_bps) = match &d.server {
            ServerSpec::Rate(r) => (Server::Rate(*r), *r as f64),
            ServerSpec::Trace { path, field } => {
                let t = self.trace(path, field)?;
                let r = t.mean_rate_bps();
                (Server::Trace(t), r)
            }
        };
        let limit = d.queue.limit(rate_bps, d.delay_ns, d.queue_floor_packets);
        Ok(PointToPoint::new(
            server,
            Duration::from_nanos(d.delay_ns),
            limit,
            LossModel::new(
                d.loss.clone(),
                component_rng(seed, &format!("{rng_name}/loss")),
            ),
            Outages::new(
                &d.outages,
                component_rng(seed, &format!("{rng_name}/outage")),
            ),
        )
        .with_options(&d.options, limit, seed, rng_name))
    }
}

/// The world of `scenario`, with its first events scheduled.
pub(crate) fn build(scenario: &Scenario) -> Result<Sim, SimError> {
    let m = &scenario.model;
    let mut loader = Loader {
        scenario,
        traces: BTreeMap::new(),
        msg_traces: BTreeMap::new(),
    };
    let mut links: Vec<Box<dyn LinkModel>> = Vec::new();
    let mut link_names = Vec::new();
    let mut link_mtu = Vec::new();
    for l in &m.links {
        for (dir, name) in l.dirs.iter().zip(["up", "down"]) {
            let p = loader.direction(dir, &format!("link/{}/{name}", l.name))?;
            links.push(Box::new(p));
            link_names.push(format!("{}/{name}", l.name));
            link_mtu.push((l.mtu, 0));
        }
    }
    // Path MTU discovery runs only where a link limits the packet size,
    // so every scenario without `mtu` runs as before.
    let pmtu_discovery = if m.links.iter().any(|l| l.mtu.is_some()) {
        PmtuDiscovery::On
    } else {
        PmtuDiscovery::Off
    };
    let routes = StaticRoutes::new(m.nodes.len(), &m.links);
    let mut router: Box<dyn super::Router> = Box::new(routes.clone());
    let mut queue = EventQueue::new();
    let mut wireless = None;
    if let Some(w) = &m.wireless {
        let pairs = m.flows.iter().map(|f| (f.src, f.dst)).collect();
        let built =
            super::wireless::build(w, &m.nodes, pairs, m.seed, |p| scenario.resolve_path(p))
                .map_err(|e| loader.fail(format!("{}: {e}", scenario.origin)))?;
        links = built.links;
        link_names = built.link_names;
        link_mtu = vec![(None, 0); links.len()];
        router = built.router;
        let mut w = built.wireless;
        // Routes exist before the first flow starts (same instant, earlier).
        queue.push(Time::ZERO, Ev::RouteTick);
        // OLSR's first messages go out after one jitter (`engine::olsr`).
        if let Some(t) = w.olsr.as_ref().and_then(|o| o.borrow().next_due()) {
            w.olsr_wake = Some(t);
            queue.push(t, Ev::Olsr);
        }
        wireless = Some(w);
    }
    let mut slots = Vec::new();
    let mut by_addr = BTreeMap::new();
    let mut flows = Vec::new();
    let mut apps = Vec::new();
    let mut metrics = Vec::new();
    let shared = super::groups::SharedServers::new(m);
    // Per node, the slot of its shared server endpoint once created.
    let mut shared_slot: Vec<Option<usize>> = vec![None; m.nodes.len()];
    for (f, fs) in m.flows.iter().enumerate() {
        let mut config = ConnectionConfig {
            cc: fs.cc.clone(),
            startup: fs.startup,
            pacing: fs.pacing,
            max_packet_size: fs.max_packet_size,
            pmtu_discovery,
            scheduler: fs.scheduler,
            queue_guard: fs.queue_guard,
            ack_policy: fs.ack_policy,
            // The run decides when a flow ends, not an idle timer: a long
            // outage must not close the connection under the experiment.
            idle_timeout: std::time::Duration::from_nanos(
                m.duration_ns.saturating_mul(2).max(60_000_000_000),
            ),
            // Nor the peer-death rule (issue 21): a scripted outage longer
            // than four backed-off RTOs is part of the experiment.
            peer_death_timeouts: 0,
            ..ConnectionConfig::default()
        };
        let mut server_config = config.clone();
        if let Some(pattern) = fs.security {
            let (c, s) = match shared.node_of_flow[f] {
                Some(n) => super::groups::member_security(m.seed, f, &m.nodes[n], pattern),
                None => super::security::flow_security(m.seed, f, pattern),
            };
            config.security = Some(c);
            server_config.security = Some(s);
        }
        let ep_seed =
            |role: &str| component_rng(m.seed, &format!("endpoint/{f}/{role}")).random::<u64>();
        let p = port(f);
        let client = slots.len();
        slots.push(Slot {
            ep: Endpoint::new(EndpointConfig::default(), ep_seed("client")),
            node: fs.src,
            port: p,
            flow: f,
            client: true,
            timer: EndpointTimer::new(),
            timer_lane: Default::default(),
            handle: None,
            shared: false,
            sent_long: false,
        });
        by_addr.insert((fs.src, p), client);
        let server = match (shared.node_of_flow[f], shared_slot[fs.dst]) {
            (Some(_), Some(s)) => s,
            (Some(n), None) => {
                // The first member aimed at `n` creates its endpoint; the
                // others' server settings are the same (validated).
                let s = slots.len();
                let seed = component_rng(m.seed, &format!("endpoint/shared/{}", m.nodes[n]))
                    .random::<u64>();
                let cfg =
                    super::groups::shared_endpoint_config(server_config, shared.members_at[n]);
                slots.push(Slot {
                    ep: Endpoint::new(cfg, seed),
                    node: n,
                    port: super::groups::SHARED_PORT,
                    flow: f,
                    client: false,
                    timer: EndpointTimer::new(),
                    timer_lane: Default::default(),
                    handle: None,
                    shared: true,
                    sent_long: false,
                });
                by_addr.insert((n, super::groups::SHARED_PORT), s);
                shared_slot[n] = Some(s);
                s
            }
            (None, _) => {
                let s = slots.len();
                slots.push(Slot {
                    ep: Endpoint::new(EndpointConfig::server(server_config), ep_seed("server")),
                    node: fs.dst,
                    port: p,
                    flow: f,
                    client: false,
                    timer: EndpointTimer::new(),
                    timer_lane: Default::default(),
                    handle: None,
                    shared: false,
                    sent_long: false,
                });
                by_addr.insert((fs.dst, p), s);
                s
            }
        };
        let mut fm = FlowMetrics::with_warmup(m.warmup_ns);
        let mut app_ids = Vec::new();
        let mut streams = Vec::new();
        for (si, s) in fs.streams.iter().enumerate() {
            let trace = match &s.app {
                AppSpec::Trace { path, field, .. } => Some(loader.msg_trace(path, field)?),
                _ => None,
            };
            let app = App::new(
                s.app.clone(),
                s.stop_ns.map(Time::from_nanos),
                component_rng(m.seed, &format!("app/{f}/{}", s.id)),
                trace,
            );
            let mut cfg: StreamConfig = s.config;
            if let Some(limit) = app.buffer_limit() {
                cfg.max_buffered_bytes = usize::try_from(limit).unwrap_or(usize::MAX);
            }
            streams.push((s.id, cfg));
            fm.streams.push(StreamMetrics {
                id: s.id,
                app: app_name(&s.app),
                start_ns: s.start_ns,
                finite: app.is_finite(),
                ..StreamMetrics::default()
            });
            app_ids.push(apps.len());
            apps.push(AppSlot {
                app,
                flow: f,
                stream: s.id,
                stream_index: si,
                deadline: s.deadline_ns.map(Duration::from_nanos),
                start: Time::from_nanos(s.start_ns),
            });
        }
        metrics.push(fm);
        flows.push(FlowRt {
            client,
            server,
            apps: app_ids,
            path: routes.path(&m.links, fs.src, fs.dst),
            started: false,
            config,
            streams,
        });
        queue.push(Time::from_nanos(fs.start_ns), Ev::FlowStart(f));
    }
    queue.push(
        Time::from_nanos(m.interval_ns.min(m.duration_ns)),
        Ev::Sample,
    );
    let _ = addr;
    let paths: Vec<&[usize]> = flows.iter().map(|f| f.path.as_slice()).collect();
    let link_hints = if wireless.is_none() {
        super::link_hints::plans(&m.links, &paths, m.seed)
    } else {
        Vec::new()
    };
    let mut sim = Sim {
        name: scenario.name(),
        seed: m.seed,
        end: Time::from_nanos(m.duration_ns),
        interval: Duration::from_nanos(m.interval_ns),
        ip_overhead: m.ip_overhead_bytes,
        per_message: m.per_message,
        queue,
        link_wake: vec![None; links.len()],
        links,
        router,
        slots,
        by_addr,
        flows,
        apps,
        // Before `metrics` moves into the struct (fields are evaluated in
        // the order written).
        in_flight_msgs: vec![Default::default(); metrics.len()],
        metrics,
        message_log: Vec::new(),
        next_packet_id: 0,
        spare_payloads: [Vec::new(), Vec::new()],
        offers: Vec::new(),
        out: Default::default(),
        zeros: peregrine_proto::Bytes::new(),
        packets: Vec::new(),
        free_packets: Vec::new(),
        link_samples: (0..link_names.len()).map(|_| Vec::new()).collect(),
        link_mtu,
        link_names,
        wireless,
        olsr_out: Vec::new(),
        now: Time::ZERO,
        capture: None,
        link_hints,
        hint_lane: Default::default(),
    };
    sim.schedule_link_hints();
    Ok(sim)
}

fn app_name(a: &AppSpec) -> &'static str {
    match a {
        AppSpec::Bulk { .. } => "bulk",
        AppSpec::Cbr { .. } => "cbr",
        AppSpec::OnOff { .. } => "onoff",
        AppSpec::File { .. } => "file",
        AppSpec::Trace { .. } => "trace",
    }
}

impl Sim {
    /// The results of a finished run.
    pub(crate) fn finish(mut self, scenario: &Scenario, events: u64) -> SimResults {
        let m = &scenario.model;
        let mut flows = Vec::new();
        for (f, fs) in m.flows.iter().enumerate() {
            let c = self.flows[f].client;
            let stats = self.slots[c].handle.and_then(|h| self.slots[c].ep.stats(h));
            let metrics = std::mem::take(&mut self.metrics[f]);
            // Bottleneck: the slowest fixed-rate direction on the path.
            let path_rate = self.flows[f]
                .path
                .iter()
                .filter_map(|&d| match &m.links[d / 2].dirs[d % 2].server {
                    ServerSpec::Rate(r) => Some(*r as f64),
                    ServerSpec::Trace { path, .. } => self.links_trace_rate(path),
                })
                .fold(f64::INFINITY, f64::min);
            flows.push(FlowResult {
                name: fs.name.clone(),
                src: m.nodes[fs.src].clone(),
                dst: m.nodes[fs.dst].clone(),
                cc: fs.cc.name(),
                scheduler: fs.scheduler.name(),
                start_ns: fs.start_ns,
                path: self.flows[f]
                    .path
                    .iter()
                    .map(|&d| self.link_names[d].clone())
                    .collect(),
                path_rate_bps: path_rate.is_finite().then_some(path_rate),
                security: fs.security,
                stats,
                metrics,
            });
        }
        let links = self
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| LinkResult {
                name: self.link_names[i].clone(),
                stats: LinkStats {
                    mtu_drops: self.link_mtu.get(i).map_or(0, |m| m.1),
                    ..l.stats().clone()
                },
                backlog_packets: l.backlog().0,
                samples: std::mem::take(&mut self.link_samples[i]),
            })
            .collect();
        let mut messages = std::mem::take(&mut self.message_log);
        messages.sort_unstable();
        let groups = m
            .flow_groups
            .iter()
            .map(|g| {
                let node = g.flows.clone().next().map_or(0, |f| m.flows[f].dst);
                let ep = self
                    .by_addr
                    .get(&(node, super::groups::SHARED_PORT))
                    .map(|&s| &self.slots[s].ep);
                crate::metrics::groups::GroupResult {
                    name: g.name.clone(),
                    dst: g.dst.clone(),
                    flows: g.flows.clone(),
                    server_connections: ep.map_or(0, |e| e.connection_count()),
                    server_accepted: ep.map_or(0, |e| e.endpoint_stats().connections_accepted),
                    server_rejects: ep.map_or(0, |e| e.endpoint_stats().rejects_sent),
                }
            })
            .collect();
        SimResults {
            handover_multicast: None,
            groups,
            wireless: self.wireless.as_ref().map(|w| w.result()),
            name: scenario.name(),
            seed: m.seed,
            duration_ns: m.duration_ns,
            interval_ns: m.interval_ns,
            events,
            flows,
            links,
            messages,
        }
    }

    fn links_trace_rate(&self, _path: &str) -> Option<f64> {
        // Trace capacity varies; processed load is then reported in bit/s only.
        None
    }
}
