//! One direction of a link: [`Pipe`], built from the link crate's
//! primitives ([`peregrine_link`]): its byte-counted FIFO and drop-tail
//! limit for the virtual queue, its outage schedule, Bernoulli and
//! Gilbert–Elliott draws, jitter, corruption and in-order delivery — the
//! implementations the simulator's links use.

use super::config::{Jitter, PipeConfig};
use super::{seeded_rng, ConfigError};
use crate::vtime::EventQueue;
use crate::{EcnCodepoint, Time};
use peregrine_link::fifo::{Fifo, QueueLimit, WireSize};
use peregrine_link::impair::{self, corrupt, InOrder};
use peregrine_link::outage::{Periodic, Schedule};
#[cfg(test)]
use peregrine_link::serialise::serialisation_ns;
use peregrine_link::uniform::{chance, RandSource, Uniform};
use rand_chacha::ChaCha8Rng;

/// Why a pipe dropped a datagram.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropCause {
    /// The drop-tail queue was full when it arrived.
    QueueFull,
    /// The link was in an outage when its turn to be sent came.
    Outage,
    /// Independent (Bernoulli) loss.
    RandomLoss,
    /// Gilbert-Elliott (bursty) loss.
    BurstLoss,
}

/// Dropped datagrams, per cause.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DropCounts {
    /// Tail drops at a full queue.
    pub queue_full: u64,
    /// Drops during an outage.
    pub outage: u64,
    /// Bernoulli losses.
    pub random_loss: u64,
    /// Gilbert-Elliott losses.
    pub burst_loss: u64,
}

impl DropCounts {
    /// All drops.
    pub fn total(&self) -> u64 {
        self.queue_full + self.outage + self.random_loss + self.burst_loss
    }
    /// Drops of one cause.
    pub fn get(&self, cause: DropCause) -> u64 {
        match cause {
            DropCause::QueueFull => self.queue_full,
            DropCause::Outage => self.outage,
            DropCause::RandomLoss => self.random_loss,
            DropCause::BurstLoss => self.burst_loss,
        }
    }
    fn bump(&mut self, cause: DropCause) {
        match cause {
            DropCause::QueueFull => self.queue_full += 1,
            DropCause::Outage => self.outage += 1,
            DropCause::RandomLoss => self.random_loss += 1,
            DropCause::BurstLoss => self.burst_loss += 1,
        }
    }
}

/// What a pipe has done so far. Every pushed datagram is either dropped or
/// delivered, plus one extra delivery per duplicate:
/// `sent + duplicated == dropped.total() + delivered + in flight`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PipeStats {
    /// Datagrams pushed.
    pub sent: u64,
    /// Bytes pushed.
    pub sent_bytes: u64,
    /// Datagrams handed out by [`Pipe::pop_due`] (duplicates included).
    pub delivered: u64,
    /// Bytes handed out.
    pub delivered_bytes: u64,
    /// Datagrams dropped, by cause.
    pub dropped: DropCounts,
    /// Extra copies made.
    pub duplicated: u64,
    /// Datagrams with flipped bits (a duplicate of one counts once).
    pub corrupted: u64,
    /// Copies held back by the [`Reorder`](super::Reorder) knob.
    pub reordered: u64,
}

/// What [`Pipe::push`] did with a datagram.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PushOutcome {
    /// It is in flight, as this many copies (2 if duplicated).
    InFlight {
        /// Copies that will be delivered.
        copies: u8,
    },
    /// It was dropped.
    Dropped(DropCause),
}

/// A datagram coming out of a pipe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered {
    /// The bytes, possibly corrupted.
    pub datagram: Vec<u8>,
    /// ECN codepoint, carried through unchanged.
    pub ecn: Option<EcnCodepoint>,
    /// When it was pushed.
    pub sent_at: Time,
    /// When it is due (at or before the `now` it was popped at).
    pub due_at: Time,
    /// Bits were flipped.
    pub corrupted: bool,
    /// This is the extra copy of a duplicated datagram.
    pub duplicate: bool,
    /// It was held back by the reorder knob.
    pub held_back: bool,
}

/// One random stream per impairment, all from one key: turning one knob
/// on or off does not change the decisions any other knob makes.
struct Rngs {
    loss: RandSource<ChaCha8Rng>,
    burst: RandSource<ChaCha8Rng>,
    jitter: RandSource<ChaCha8Rng>,
    reorder: RandSource<ChaCha8Rng>,
    duplicate: RandSource<ChaCha8Rng>,
    corrupt: RandSource<ChaCha8Rng>,
}

impl Rngs {
    fn new(seed: u64, name: &str) -> Rngs {
        let stream = |k: u64| {
            let mut r = seeded_rng(seed, name);
            r.set_stream(k);
            RandSource(r)
        };
        Rngs {
            loss: stream(1),
            burst: stream(2),
            jitter: stream(3),
            reorder: stream(4),
            duplicate: stream(5),
            corrupt: stream(6),
        }
    }
}

/// A seeded one-direction link.
///
/// A pushed datagram meets, in this order:
///
/// 1. the **drop-tail queue**: dropped if the bytes waiting for or in
///    serialisation plus its own exceed `queue_limit_bytes`;
/// 2. the **outage** schedule, judged at the instant its serialisation
///    would start (after the datagrams queued ahead of it): dropped if the
///    link is down then. One already on the wire when an outage starts
///    is delivered — it was in the air;
/// 3. **serialisation** at `rate_bps` (FIFO, one at a time);
/// 4. **loss**: Bernoulli, then Gilbert-Elliott (whose state moves once per
///    datagram that got this far). A lost datagram has used its
///    serialisation time — it was sent and never arrived;
/// 5. **corruption**, then **duplication** (the copy carries the same bits);
/// 6. each copy's **delay**: propagation + jitter, kept in sending order
///    unless `jitter_reorders`; then the **reorder** knob may hold it back.
///
/// Time never goes backwards: a `now` earlier than the previous push is
/// taken as that push's time.
pub struct Pipe {
    config: PipeConfig,
    name: String,
    seed: u64,
    /// The configuration's jitter, as the link crate draws it.
    jitter: impair::Jitter,
    /// The configuration's outages, as the link crate judges them.
    outages: Schedule,
    rngs: Rngs,
    ge_bad: bool,
    last_push: Time,
    link_free_at: Time,
    /// The virtual queue: datagrams not yet fully on the wire (when each
    /// leaves it, and its size), no bytes stored.
    backlog: Fifo<OnWire>,
    in_order: InOrder,
    /// In (due time, push order): the project's one event queue.
    in_flight: EventQueue<Delivered>,
    stats: PipeStats,
}

impl Pipe {
    /// A pipe whose random decisions come from `(seed, name)`; the name
    /// must be stable across runs (the harness uses `"pipe:FROM->TO"`).
    pub fn new(config: PipeConfig, seed: u64, name: &str) -> Result<Pipe, ConfigError> {
        config.validate()?;
        Ok(Pipe {
            jitter: jitter_of(&config),
            outages: outages_of(&config),
            config,
            name: name.to_owned(),
            seed,
            rngs: Rngs::new(seed, name),
            ge_bad: false,
            last_push: Time::ZERO,
            link_free_at: Time::ZERO,
            backlog: Fifo::new(),
            in_order: InOrder::default(),
            in_flight: EventQueue::new(),
            stats: PipeStats::default(),
        })
    }

    /// Replaces the configuration. Datagrams already in flight keep their
    /// schedule, and unless `jitter_reorders` later ones still arrive after
    /// them (a shorter new delay does not overtake); the random streams
    /// and the Gilbert-Elliott state go on.
    pub fn set_config(&mut self, config: PipeConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.jitter = jitter_of(&config);
        self.outages = outages_of(&config);
        self.config = config;
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &PipeConfig {
        &self.config
    }
    /// The stable name the random streams were derived from.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The seed the random streams were derived from.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Counters so far.
    pub fn stats(&self) -> &PipeStats {
        &self.stats
    }
    /// Datagrams (copies) pushed and not yet popped.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Is the link down at `t` (inside a scheduled or periodic outage)?
    pub fn is_down_at(&self, t: Time) -> bool {
        self.outages.is_down(t)
    }

    /// Sends `datagram` into the pipe at `now`.
    pub fn push(
        &mut self,
        now: Time,
        mut datagram: Vec<u8>,
        ecn: Option<EcnCodepoint>,
    ) -> PushOutcome {
        let now = now.max(self.last_push);
        self.last_push = now;
        let len = datagram.len() as u64;
        self.stats.sent += 1;
        self.stats.sent_bytes += len;

        self.backlog.pop_while(|w| w.end <= now);
        if let Some(limit) = self.config.queue_limit_bytes {
            let probe = OnWire { end: now, len };
            if !self.backlog.admits(&QueueLimit::bytes(limit), &probe) {
                return self.drop(DropCause::QueueFull);
            }
        }
        let tx_start = now.max(self.link_free_at);
        if self.is_down_at(tx_start) {
            return self.drop(DropCause::Outage);
        }
        let tx_end = Time::from_nanos(tx_start.as_nanos().saturating_add(
            peregrine_link::serialise::serialisation_ns(len, self.config.rate_bps),
        ));
        if self.config.rate_bps > 0 {
            self.link_free_at = tx_end;
            self.backlog.push(OnWire { end: tx_end, len });
        }

        // Both draws are always made, each from its own stream.
        let random_lost = chance(&mut self.rngs.loss, self.config.loss);
        let burst_lost = self.gilbert_elliott_loses();
        if random_lost {
            return self.drop(DropCause::RandomLoss);
        }
        if burst_lost {
            return self.drop(DropCause::BurstLoss);
        }

        let mut corrupted = false;
        if let Some(c) = self.config.corruption {
            if chance(&mut self.rngs.corrupt, c.probability) && !datagram.is_empty() {
                corrupt(&mut self.rngs.corrupt, &mut datagram, c.pattern);
                corrupted = true;
                self.stats.corrupted += 1;
            }
        }
        let twice = chance(&mut self.rngs.duplicate, self.config.duplicate);
        let item = Delivered {
            datagram,
            ecn,
            sent_at: now,
            due_at: tx_end,
            corrupted,
            duplicate: false,
            held_back: false,
        };
        if twice {
            self.stats.duplicated += 1;
            let copy = Delivered {
                duplicate: true,
                ..item.clone()
            };
            self.schedule(tx_end, item);
            self.schedule(tx_end, copy);
            PushOutcome::InFlight { copies: 2 }
        } else {
            self.schedule(tx_end, item);
            PushOutcome::InFlight { copies: 1 }
        }
    }

    /// When the next datagram is due, if any is in flight.
    pub fn next_delivery(&self) -> Option<Time> {
        self.in_flight.peek_time()
    }

    /// The next datagram due at or before `now`, in (due time, push order).
    pub fn pop_due(&mut self, now: Time) -> Option<Delivered> {
        if self.next_delivery()? > now {
            return None;
        }
        let (_, item) = self.in_flight.pop()?;
        self.stats.delivered += 1;
        self.stats.delivered_bytes += item.datagram.len() as u64;
        Some(item)
    }

    fn drop(&mut self, cause: DropCause) -> PushOutcome {
        self.stats.dropped.bump(cause);
        PushOutcome::Dropped(cause)
    }

    fn gilbert_elliott_loses(&mut self) -> bool {
        let Some(ge) = self.config.gilbert_elliott else {
            return false;
        };
        let rng = &mut self.rngs.burst;
        ge.lose(&mut self.ge_bad, || rng.unit_f64())
    }

    fn schedule(&mut self, tx_end: Time, mut item: Delivered) {
        let jitter_ns = self.jitter.draw_ns(&mut self.rngs.jitter);
        let due = tx_end
            .as_nanos()
            .saturating_add(self.config.delay_us.saturating_mul(1_000))
            .saturating_add(jitter_ns);
        let mut due = self
            .in_order
            .due(Time::from_nanos(due), self.config.jitter_reorders)
            .as_nanos();
        if let Some(r) = self.config.reorder {
            if chance(&mut self.rngs.reorder, r.probability) {
                due = due.saturating_add(r.extra_delay_us.saturating_mul(1_000));
                item.held_back = true;
                self.stats.reordered += 1;
            }
        }
        item.due_at = Time::from_nanos(due);
        self.in_flight.push(item.due_at, item);
    }
}

impl std::fmt::Debug for Pipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipe")
            .field("name", &self.name)
            .field("seed", &self.seed)
            .field("config", &self.config)
            .field("in_flight", &self.in_flight.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// What the virtual queue knows of a datagram ahead: when it is fully
/// on the wire, and its size.
#[derive(Copy, Clone, Debug)]
struct OnWire {
    end: Time,
    len: u64,
}

impl WireSize for OnWire {
    fn wire_bytes(&self) -> u64 {
        self.len
    }
}

/// The harness's jitter (µs, serde form) as the link crate draws it.
fn jitter_of(config: &PipeConfig) -> impair::Jitter {
    match config.jitter {
        Jitter::None => impair::Jitter::None,
        Jitter::Uniform { max_us } => impair::Jitter::Uniform {
            max_ns: max_us.saturating_mul(1_000),
        },
        Jitter::Normal {
            mean_us,
            std_dev_us,
        } => impair::Jitter::Normal {
            mean_us,
            stdev_us: std_dev_us,
        },
    }
}

/// The harness's outage windows (µs) as the link crate's schedule.
fn outages_of(config: &PipeConfig) -> Schedule {
    let ns = |us: u64| Time::from_nanos(us.saturating_mul(1_000));
    let windows = config
        .outages
        .iter()
        .map(|o| (ns(o.start_us), ns(o.end_us)))
        .collect();
    let periodic = config.periodic_outage.map(|p| Periodic {
        first_start: ns(p.first_start_us),
        period_ns: p.period_us.saturating_mul(1_000),
        duration_ns: p.duration_us.saturating_mul(1_000),
    });
    Schedule::new(windows, periodic)
}

#[cfg(test)]
#[path = "pipe_tests.rs"]
mod tests;
