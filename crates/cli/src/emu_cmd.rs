//! `peregrine emu`: argument parsing and printing over `peregrine_emu`.

use anyhow::Context as _;
use clap::{Args, Subcommand};
use peregrine_emu::spec::{self, LinkArgs, LinkSource, OutageArg, ServerArg};
use peregrine_sim::scenario::config::QueueConfig;
use peregrine_sim::scenario::units::parse_duration;
use std::ffi::OsString;
use std::path::PathBuf;

/// `peregrine emu [LINK FLAGS] [-- COMMAND [ARGS…]]` and `peregrine emu plot FILE`.
#[derive(Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "\
Runs COMMAND (default: your shell) in a new network namespace whose traffic goes through \
the simulator's own link model in real time, both directions, as Mahimahi's mm-link and \
mm-delay. The downlink carries traffic towards COMMAND, the uplink traffic from it. \
COMMAND reaches the outer side at $PEREGRINE_EMU_HOST (10.250.0.(4L+1) at nesting level L; \
the command's own address is 10.250.0.(4L+2)). Shells nest. The exit status is COMMAND's.

The queue of each direction is UNBOUNDED unless --queue is given (as with mm-link). \
Without --downlink/--uplink a direction has no rate limit (delay, loss and outages only).

Needs root, or an unprivileged user namespace (then the outer side is a private namespace \
of its own). Uses iproute2 (`ip`). See docs/emulator.md.

Examples:
  peregrine emu --downlink 12Mbps --uplink 12Mbps --delay 20ms -- iperf3 -c $PEREGRINE_EMU_HOST -R
  peregrine emu --delay 20ms -- peregrine emu --downlink trace.mm --uplink 12Mbps
  peregrine emu --link scenarios/mmwave-trace.toml:links.0 --log emu.log -- COMMAND
  peregrine emu plot emu.log --out emu-plots"
)]
pub struct EmuArgs {
    #[command(subcommand)]
    sub: Option<EmuSub>,
    /// Towards the command: a rate as in scenario files (`12Mbps`) or a Mahimahi trace file (plain or .gz).
    #[arg(long, value_name = "TRACE|RATE", value_parser = ServerArg::parse)]
    downlink: Option<ServerArg>,
    /// From the command: a rate (`12Mbps`) or a Mahimahi trace file.
    #[arg(long, value_name = "TRACE|RATE", value_parser = ServerArg::parse)]
    uplink: Option<ServerArg>,
    /// One-way propagation delay of each direction (`20ms`); default 0.
    #[arg(long, value_name = "DURATION", value_parser = parse_dur_ns)]
    delay: Option<u64>,
    /// Drop-tail queue of each direction: packets=N, bytes=N or bdp=X (X × rate × 2·delay, at least 10 packets). Default: unbounded.
    #[arg(long, value_name = "packets=N|bytes=N|bdp=X", value_parser = spec::parse_queue)]
    queue: Option<QueueConfig>,
    /// Bernoulli loss probability of each direction, in [0, 1].
    #[arg(long, value_name = "P", value_parser = spec::parse_loss)]
    loss: Option<f64>,
    /// An outage of each direction: a window START-END since the start (`5s-6s`, repeatable), or random `mean_up=10s,mean_down=200ms`.
    #[arg(long, value_name = "START-END|mean_up=D,mean_down=D", value_parser = spec::parse_outage)]
    outage: Vec<OutageArg>,
    /// Queue discipline of each direction: MODEL[,KEY=VALUE…] with the keys of a scenario's `aqm` table (`codel,target_ms=5,ecn=true`; models drop_tail, codel, fq_codel, pie, red, dualpi2). See docs/emulator.md.
    #[arg(long, value_name = "MODEL[,KEY=VALUE…]", value_parser = parse_aqm_boxed)]
    aqm: Option<Box<spec::AqmConfig>>,
    /// Delay jitter of each direction: normal|pareto,mean_ms=M,stdev_ms=S[,reorder=true] (without reorder=true a packet never overtakes its predecessor).
    #[arg(long, value_name = "MODEL,mean_ms=M,stdev_ms=S", value_parser = spec::parse_jitter)]
    jitter: Option<(spec::Jitter, bool)>,
    /// netem's reordering of each direction: P[,gap=N] (every N-th packet is sent at once, without the delay, with probability P; gap 1 by default).
    #[arg(long, value_name = "P[,gap=N]", value_parser = spec::parse_reorder)]
    reorder: Option<spec::NetemReorder>,
    /// Seed of the loss, outage, AQM, jitter and reorder generators.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Use link N of a scenario file instead (the command at end `a`: `up` is the uplink, `down` the downlink; the scenario's seed).
    #[arg(long, value_name = "FILE.toml:links.N", value_parser = spec::parse_link_ref,
          conflicts_with_all = ["downlink", "uplink", "delay", "queue", "loss", "outage", "aqm", "jitter", "reorder"])]
    link: Option<(PathBuf, usize)>,
    /// Write every packet's arrival, departure and drop, per direction, to FILE (see docs/emulator.md).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Announce each outage of the link this long before it begins, as a link hint on the feed the command finds in $PEREGRINE_HINTS (unix:PATH; `perf --hints emu`). See docs/emulator.md.
    #[arg(long, value_name = "DURATION", value_parser = parse_dur_ns)]
    hint_lead: Option<u64>,
    /// With --hint-lead: leave each outage unannounced with probability P.
    #[arg(long, value_name = "P", requires = "hint_lead", value_parser = parse_probability)]
    hint_miss: Option<f64>,
    /// With --hint-lead: announce outages that never come, RATE per second (Poisson).
    #[arg(long, value_name = "RATE", requires = "hint_lead", value_parser = parse_per_second)]
    hint_false_alarm: Option<f64>,
    /// Describe the link on standard error before starting.
    #[arg(long, short)]
    verbose: bool,
    /// The command to run and its arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

#[derive(Subcommand, Debug)]
enum EmuSub {
    /// Draw a --log file: capacity vs throughput and time in the link, per direction (SVG).
    Plot(PlotArgs),
}

#[derive(Args, Debug)]
struct PlotArgs {
    /// The log written by `peregrine emu --log FILE`.
    file: PathBuf,
    /// Directory for uplink.svg and downlink.svg (default: FILE's directory).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn parse_dur_ns(s: &str) -> Result<u64, String> {
    parse_duration(s).map(|d| d.0)
}

fn parse_probability(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("{s:?}: a probability is a number in [0, 1]")),
    }
}

/// `0.5`, `0.5/s` or `0.5Hz`: events per second, in [0, 1000].
fn parse_per_second(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("Hz"))
        .unwrap_or(t);
    match t.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && (0.0..=1e3).contains(&r) => Ok(r),
        _ => Err(format!(
            "{s:?}: a rate per second in [0, 1000] (e.g. 0.2 or 0.2/s)"
        )),
    }
}

/// Run `peregrine emu`: exits the process with the command's status.
pub fn run(args: EmuArgs) -> anyhow::Result<()> {
    if let Some(EmuSub::Plot(p)) = args.sub {
        let out = p.out.clone().unwrap_or_else(|| {
            p.file
                .parent()
                .map(PathBuf::from)
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or_else(|| PathBuf::from("."))
        });
        let files = peregrine_emu::plot::plot(&p.file, &out)?;
        for f in files {
            println!("{}", f.display());
        }
        return Ok(());
    }
    let link = match args.link {
        Some((file, index)) => LinkSource::Scenario { file, index },
        None => LinkSource::Args(Box::new(LinkArgs {
            downlink: args.downlink.unwrap_or(ServerArg::Unlimited),
            uplink: args.uplink.unwrap_or(ServerArg::Unlimited),
            delay_ns: args.delay.unwrap_or(0),
            queue: args.queue,
            loss: args.loss.unwrap_or(0.0),
            outages: args.outage,
            seed: args.seed,
            options: peregrine_sim::world::link_options::LinkOptions {
                aqm: args.aqm.map(|a| *a).unwrap_or_default(),
                jitter: args.jitter.map_or(spec::Jitter::None, |j| j.0),
                jitter_reorders: args.jitter.is_some_and(|j| j.1),
                reorder: args.reorder,
            },
        })),
    };
    let outcome = peregrine_emu::run(&peregrine_emu::Options {
        link,
        log: args.log,
        command: args.command,
        verbose: args.verbose,
        hints: args
            .hint_lead
            .map(|lead_ns| peregrine_emu::hints::HintOptions {
                lead: std::time::Duration::from_nanos(lead_ns),
                miss: args.hint_miss.unwrap_or(0.0),
                false_alarm_hz: args.hint_false_alarm.unwrap_or(0.0),
            }),
    })
    .context("peregrine emu")?;
    if args.verbose {
        for (c, name) in outcome.counters.iter().zip(["uplink", "downlink"]) {
            eprintln!(
                "peregrine emu: {name}: {} packets in, {} out ({} bytes), {} dropped by the link; \
                 written {:.1} µs late on average, {:.1} µs at most, {} more than 1 ms late{}, \
                 busy-polled {:.1} % of the time; \
                 model: {} queue drops, largest queue {} packets, {} trace opportunities wasted \
                 on an empty queue, {} CE-marked and {} dropped by the AQM",
                c.read_packets,
                c.written_packets,
                c.written_bytes,
                c.model_drops,
                c.late_ns_sum as f64 / c.written_packets.max(1) as f64 / 1e3,
                c.late_ns_max as f64 / 1e3,
                c.late_over_1ms,
                if c.realtime {
                    ""
                } else {
                    " (not real-time: SCHED_FIFO refused)"
                },
                c.busy_poll_ns as f64 * 100.0 / c.run_ns.max(1) as f64,
                c.model.queue_drops,
                c.model.max_queue_packets,
                c.model.wasted_opportunities,
                c.model.ce_marked,
                c.model.aqm_dropped
            );
        }
    }
    if let (true, Some(h)) = (args.verbose, &outcome.hints) {
        eprintln!(
            "peregrine emu: hints: {} sent ({} false alarms), {} reader(s)",
            h.sent, h.false_alarms, h.readers
        );
    }
    for w in &outcome.warnings {
        eprintln!("peregrine emu: warning: {w}");
    }
    std::process::exit(outcome.exit_code);
}

/// `--aqm`, boxed: its parameters would make every command's arguments large.
fn parse_aqm_boxed(text: &str) -> Result<Box<spec::AqmConfig>, String> {
    spec::parse_aqm(text).map(Box::new)
}
