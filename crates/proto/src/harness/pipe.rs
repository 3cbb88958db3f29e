//! One direction of a link: [`Pipe`].

use super::config::{CorruptionPattern, Jitter, PipeConfig};
use super::{seeded_rng, ConfigError};
use crate::vtime::EventQueue;
use crate::{EcnCodepoint, Time};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use std::collections::{BTreeSet, VecDeque};

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
    loss: ChaCha8Rng,
    burst: ChaCha8Rng,
    jitter: ChaCha8Rng,
    reorder: ChaCha8Rng,
    duplicate: ChaCha8Rng,
    corrupt: ChaCha8Rng,
}

impl Rngs {
    fn new(seed: u64, name: &str) -> Rngs {
        let stream = |k: u64| {
            let mut r = seeded_rng(seed, name);
            r.set_stream(k);
            r
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
    normal: Option<Normal<f64>>,
    rngs: Rngs,
    ge_bad: bool,
    last_push: Time,
    link_free_at: Time,
    /// (serialisation end, size) of datagrams not yet fully on the wire.
    backlog: VecDeque<(Time, u64)>,
    backlog_bytes: u64,
    last_fifo_due: Time,
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
            normal: normal_of(&config),
            config,
            name: name.to_owned(),
            seed,
            rngs: Rngs::new(seed, name),
            ge_bad: false,
            last_push: Time::ZERO,
            link_free_at: Time::ZERO,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            last_fifo_due: Time::ZERO,
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
        self.normal = normal_of(&config);
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
        let t = t.as_nanos();
        let ns = |us: u64| us.saturating_mul(1_000);
        if self
            .config
            .outages
            .iter()
            .any(|o| ns(o.start_us) <= t && t < ns(o.end_us))
        {
            return true;
        }
        match &self.config.periodic_outage {
            Some(p) if t >= ns(p.first_start_us) && p.period_us > 0 => {
                (t - ns(p.first_start_us)) % ns(p.period_us) < ns(p.duration_us)
            }
            _ => false,
        }
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

        while let Some(&(end, size)) = self.backlog.front() {
            if end > now {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= size;
        }
        if let Some(limit) = self.config.queue_limit_bytes {
            if self.backlog_bytes.saturating_add(len) > limit {
                return self.drop(DropCause::QueueFull);
            }
        }
        let tx_start = now.max(self.link_free_at);
        if self.is_down_at(tx_start) {
            return self.drop(DropCause::Outage);
        }
        let tx_end = Time::from_nanos(
            tx_start
                .as_nanos()
                .saturating_add(serialisation_ns(len, self.config.rate_bps)),
        );
        if self.config.rate_bps > 0 {
            self.link_free_at = tx_end;
            self.backlog.push_back((tx_end, len));
            self.backlog_bytes += len;
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
        ge.lose(&mut self.ge_bad, || rng.random::<f64>())
    }

    fn schedule(&mut self, tx_end: Time, mut item: Delivered) {
        let jitter_ns = match (self.config.jitter, &self.normal) {
            (Jitter::Uniform { max_us }, _) => self
                .rngs
                .jitter
                .random_range(0..=max_us.saturating_mul(1_000)),
            (Jitter::Normal { .. }, Some(n)) => {
                let us = n.sample(&mut self.rngs.jitter).max(0.0);
                (us * 1e3).round().min(u64::MAX as f64) as u64
            }
            _ => 0,
        };
        let mut due = tx_end
            .as_nanos()
            .saturating_add(self.config.delay_us.saturating_mul(1_000))
            .saturating_add(jitter_ns);
        if !self.config.jitter_reorders {
            due = due.max(self.last_fifo_due.as_nanos());
            self.last_fifo_due = Time::from_nanos(due);
        }
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

fn normal_of(config: &PipeConfig) -> Option<Normal<f64>> {
    match config.jitter {
        // Validated finite and non-negative, which is all `Normal` asks.
        Jitter::Normal {
            mean_us,
            std_dev_us,
        } => Normal::new(mean_us, std_dev_us).ok(),
        _ => None,
    }
}

/// Time to put `len` bytes on a `rate_bps` wire, rounded up to whole ns.
pub(crate) fn serialisation_ns(len: u64, rate_bps: u64) -> u64 {
    if rate_bps == 0 {
        return 0;
    }
    let ns = (u128::from(len) * 8 * 1_000_000_000).div_ceil(u128::from(rate_bps));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// True with probability `p`; no draw is made when the outcome is certain.
fn chance(rng: &mut ChaCha8Rng, p: f64) -> bool {
    if p <= 0.0 {
        false
    } else if p >= 1.0 {
        true
    } else {
        rng.random::<f64>() < p
    }
}

fn flip(bytes: &mut [u8], bit: usize) {
    bytes[bit / 8] ^= 0x80 >> (bit % 8);
}

/// Flips bits of a non-empty datagram as `pattern` says.
fn corrupt(rng: &mut ChaCha8Rng, bytes: &mut [u8], pattern: CorruptionPattern) {
    let n_bits = bytes.len() * 8;
    match pattern {
        CorruptionPattern::Bits { count } => {
            // Floyd's algorithm: `k` distinct positions in O(k log k).
            let k = (count as usize).min(n_bits);
            let mut chosen = BTreeSet::new();
            for j in n_bits - k..n_bits {
                let t = rng.random_range(0..=j);
                if !chosen.insert(t) {
                    chosen.insert(j);
                }
            }
            for bit in chosen {
                flip(bytes, bit);
            }
        }
        CorruptionPattern::Burst { max_len_bits } => {
            let len = rng.random_range(1..=(max_len_bits as usize).min(n_bits));
            let start = rng.random_range(0..=n_bits - len);
            flip(bytes, start);
            if len > 1 {
                flip(bytes, start + len - 1);
            }
            for bit in start + 1..start + len.saturating_sub(1) {
                if rng.random::<bool>() {
                    flip(bytes, bit);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "pipe_tests.rs"]
mod tests;
