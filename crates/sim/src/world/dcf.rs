//! An interference-based 802.11 DCF (issue 22, deliverable 2): the
//! alternative to the statistical MAC of `channel::wifi::WifiChannel::attempt`,
//! selected per scenario with `[wireless] mac = { model = "dcf" }`.
//!
//! Every transmission is an interval on the medium. When it starts, its
//! received power at every node is fixed (log-distance path loss and the
//! channel's shadowing at that instant); each node keeps the sum of the
//! power of all transmissions overlapping it. Reception follows ns-3's
//! `YansWifiPhy` + `InterferenceHelper`:
//!
//! * a node that is neither transmitting nor receiving *locks* on a frame
//!   whose power reaches `rx_sensitivity_dbm` (preamble detection);
//! * while locked, the frame is cut into chunks at every change of the
//!   interference; each chunk survives with `(1 − BER(SINR))^bits` (the
//!   PLCP header bits at 1 Mbit/s DBPSK — 2 Mbit/s DQPSK with the short
//!   preamble — the rest at the frame's modulation, with the DSSS/CCK
//!   error models of `channel::wifi::phy`), and the frame is received
//!   with the product of the chunks' probabilities (one uniform draw at
//!   its end);
//! * a frame arriving during a reception is interference, unless it is
//!   `capture_threshold_db` stronger: then the receiver drops the first
//!   and locks on the new one (preamble capture). A locked frame that
//!   dominates its interferers survives them (SINR capture).
//!
//! Carrier sense is separate from reception: a node senses the medium busy
//! while it transmits, while it is locked on a frame, while the total
//! power it hears reaches `cs_threshold_dbm` (energy detection), or while
//! its NAV (set from a decoded unicast frame for someone else, for the
//! SIFS + ACK that follows) runs. Nodes out of carrier-sense range of each
//! other are hidden terminals.
//!
//! Each station runs DCF: a post-backoff drawn uniformly from `0..=CW`
//! slots after every exchange; the backoff counts idle slots after DIFS
//! (EIFS = SIFS + ACK + DIFS after a frame it could not decode) and
//! freezes while the medium is busy; stations whose counters reach zero in
//! the same slot transmit together and collide. A unicast data frame is
//! acknowledged SIFS after its end by an ACK at the basic rate that takes
//! airtime, can collide and can be lost (no carrier sense for the ACK, as
//! the standard says); without the ACK within the ACK timeout the sender
//! doubles its window and retries, up to `retry_limit` transmissions, then
//! drops the frame (reason `Channel`). A receiver that already passed a
//! frame up ignores its retransmissions (duplicate detection). Broadcast
//! frames have no ACK and no retry.
//!
//! The model is its own small discrete-event simulation (a heap of
//! timed events); the interfaces drive it through the shared medium. Every
//! random draw (backoffs, reception) comes from the `wifi/dcf`
//! generator, in event order, so a run is reproducible bit for bit.
//!
//! Spatial reach (issue 40): a transmission's power is counted only at
//! the nodes where it reaches [`CUTOFF_BELOW_NOISE_DB`] below the noise
//! floor (never above the receive sensitivity or the carrier-sense
//! threshold, so every frame a node could lock on or sense is kept):
//! weaker transmissions are left out of the SINR sums and the
//! carrier-sense power. Which nodes to check comes from a uniform
//! [`Grid`] of node positions (cells as wide as the distance where the
//! mean received power, plus [`SHADOW_MARGIN_SIGMAS`] σ of shadowing,
//! falls to the cut-off; rebuilt every [`GRID_REFRESH`] of simulated
//! time with a margin for the nodes' motion). Carrier sense is
//! re-evaluated only at the nodes a transmission reached (and the sender,
//! and the nodes whose NAV ran out), in node order: elsewhere nothing it
//! depends on changed.
//!
//! Cost: each transmission start or end is O(candidates) — the nodes of
//! the grid cells around the sender — plus O(reached · log reached) for
//! the power bookkeeping and chunk updates at the nodes it reaches; an
//! event is O(log events pending).

use super::channel::wifi::phy::{Modulation, NOISE_BANDWIDTH_HZ, PLCP_HEADER_BITS};
use super::channel::wifi::{mac, WifiChannel, WifiConfig};
use super::channel::{check_range, noise_floor_dbm, ConfigError};
use super::geom::Vec3;
use super::grid::Grid;
use super::link::{DropReason, LinkOutput, LinkStats};
use super::packet::Packet;
use super::queue::{DropTailQueue, QueueLimit};
use crate::rng::{component_rng, SimRng};
use peregrine_cc::Time;
use peregrine_proto::vtime::EventQueue;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The `next_hop` of a broadcast frame: every node that decodes it gets a
/// copy (with its own index as `next_hop`); no ACK, no retry.
pub const BROADCAST: usize = usize::MAX;

/// Which MAC a wireless scenario's medium runs: `[wireless] mac = { model
/// = "statistical" }` (the default: `WifiChannel::attempt`'s Bianchi
/// collisions folded into one outcome per frame) or `{ model = "dcf", … }`
/// (this module, with the fields of [`DcfConfig`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum MacConfig {
    /// The statistical MAC (the default until the DCF becomes it).
    #[default]
    Statistical,
    /// The interference-based DCF.
    Dcf(DcfConfig),
}

/// Parameters of the interference-based DCF beyond the channel's
/// (`WifiConfig` keeps the timing, rates, retry limit and carrier-sense
/// threshold). Unknown fields are rejected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DcfConfig {
    /// Weakest frame a receiver locks on (preamble detection), dBm.
    /// Default −99 dBm, the channel's default carrier-sense threshold: a
    /// node defers to every frame it could decode.
    pub rx_sensitivity_dbm: f64,
    /// A frame this much stronger than the one being received takes the
    /// receiver over (preamble capture), dB. Default 10 dB.
    pub capture_threshold_db: f64,
    /// Data rate of unicast frames: `"fixed"` (the channel's
    /// `data_rate_mbps`, default) or `"arf"` (Auto Rate Fallback per
    /// neighbour over 1, 2, 5.5 and 11 Mbit/s, starting at the standard
    /// rate of `data_rate_mbps`). Broadcasts stay at `data_rate_mbps`.
    pub rate_adaptation: RateAdaptation,
}

/// Unicast rate choice.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateAdaptation {
    /// Every data frame at the channel's `data_rate_mbps`.
    #[default]
    Fixed,
    /// Auto Rate Fallback (A. Kamerman and L. Monteban, "WaveLAN-II: a
    /// high-performance wireless LAN for the unlicensed band", Bell Labs
    /// Technical Journal, 1997; ns-3's `ArfWifiManager`): one step up
    /// after [`ARF_SUCCESSES`] consecutive acknowledged frames, one step
    /// down after [`ARF_FAILURES`] consecutive failures or when the first
    /// frame after a step up fails.
    Arf,
}

/// A transmission reaching a node more than this far below the noise floor
/// (dB) is left out of that node's SINR sums and carrier-sense power. At
/// 10 dB below the noise it raises the noise-plus-interference by at most
/// 10 % (0.41 dB) — less than a tenth of the 3 dB shadowing σ, and well
/// inside the SINR step between two DSSS/CCK rates — while the distance
/// where the default channel's mean power falls to it (≈ 580 m) bounds
/// the nodes each transmission touches. It is also the DCF's existing
/// "overlap" threshold: interference this weak never counted as a
/// collision.
pub const CUTOFF_BELOW_NOISE_DB: f64 = 10.0;

/// The grid is searched out to where the *mean* received power plus this
/// many shadowing σ reaches the cut-off: a node further away is left out
/// even when its shadowing favours it by more (probability 0.13 % per
/// link and coherence interval at 3 σ, and then it is still within a few
/// dB of the cut-off, 10 dB below the noise).
pub const SHADOW_MARGIN_SIGMAS: f64 = 3.0;

/// Simulated time between two rebuilds of the DCF's spatial grid. Between
/// rebuilds a node may move at most twice the fastest speed seen at the
/// last rebuild times this interval (the margin added to the cells).
pub const GRID_REFRESH: Duration = Duration::from_millis(100);

/// ARF: consecutive successes before trying the next rate up.
pub const ARF_SUCCESSES: u32 = 10;
/// ARF: consecutive failures before falling back one rate.
pub const ARF_FAILURES: u32 = 2;

/// ARF state towards one neighbour.
#[derive(Copy, Clone, Debug)]
struct Arf {
    /// Index into `Modulation::ALL`.
    rate: usize,
    successes: u32,
    failures: u32,
    /// The last step was up and no frame has been acknowledged since.
    probing: bool,
}

impl Default for DcfConfig {
    fn default() -> DcfConfig {
        DcfConfig {
            rx_sensitivity_dbm: -99.0,
            capture_threshold_db: 10.0,
            rate_adaptation: RateAdaptation::Fixed,
        }
    }
}

impl DcfConfig {
    /// Checks every field, naming the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_range("rx_sensitivity_dbm", self.rx_sensitivity_dbm, -150.0, 0.0)?;
        check_range(
            "capture_threshold_db",
            self.capture_threshold_db,
            0.0,
            100.0,
        )?;
        Ok(())
    }
}

/// Counters of the DCF.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DcfStats {
    /// Data frames taken into service (each with all its attempts).
    pub frames: u64,
    /// Data transmissions (unicast and broadcast), retries included.
    pub attempts: u64,
    /// Retransmissions (attempts beyond each frame's first).
    pub retries: u64,
    /// Data attempts that did not reach their receiver because another
    /// transmission overlapped them there (or the receiver was busy
    /// sending or receiving another frame).
    pub collisions: u64,
    /// Data attempts lost to noise alone (weak signal, no overlap).
    pub errors: u64,
    /// Unicast frames dropped after the last retry, never received.
    pub mac_drops: u64,
    /// ACK frames sent.
    pub acks: u64,
    /// Broadcast frames sent.
    pub broadcasts: u64,
    /// Airtime of every transmission (data, broadcast, ACK; overlapping
    /// transmissions each count), ns.
    pub airtime_ns: u64,
    /// Airtime of broadcast transmissions, ns (OLSR's control traffic:
    /// nothing else in the simulator broadcasts).
    pub broadcast_airtime_ns: u64,
}

/// What became of one data transmission at its addressee (the record the
/// tests check: every attempt has exactly one).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RxOutcome {
    /// Decoded.
    Received,
    /// Lost with another transmission overlapping it at the receiver.
    Collided,
    /// Lost to noise alone.
    Error,
}

/// One attempt's record: (transmission id, packet id, sender, receiver,
/// outcome at the receiver).
pub type AttemptRecord = (u64, u64, usize, usize, RxOutcome);

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A transmission ends (id).
    TxEnd(u64),
    /// A station's backoff reaches zero (node, generation).
    BackoffDone(usize, u64),
    /// A receiver sends an ACK (node, addressee).
    AckStart(usize, usize),
    /// A sender's ACK timeout (node, generation).
    AckTimeout(usize, u64),
    /// NAVs end: every node re-evaluates its carrier sense (one event
    /// per NAV instant, whatever the number of nodes that set it).
    NavEnd,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Data,
    Ack,
}

/// A transmission on the medium.
#[derive(Debug)]
struct Tx {
    id: u64,
    from: usize,
    /// Addressee; `None` = broadcast.
    to: Option<usize>,
    kind: Kind,
    /// End of the PLCP preamble and header.
    header_end: Time,
    end: Time,
    modulation: Modulation,
    /// (node, received power in mW) at every node it reaches at or above
    /// the cut-off, ascending by node (never the sender).
    rx_mw: Vec<(u32, f64)>,
    /// Packet id (data) for the attempt record.
    packet_id: u64,
    /// The addressee missed it because it was busy or captured away.
    dest_busy: bool,
}

/// A frame being received.
#[derive(Debug)]
struct Rx {
    tx: u64,
    signal_mw: f64,
    /// ln of the probability that the chunks so far survived.
    log_ok: f64,
    chunk_from: Time,
    /// Another transmission overlapped it.
    interfered: bool,
    /// The frame's end of PLCP header, end and modulation (copied so a
    /// chunk closes without looking the transmission up).
    header_end: Time,
    end: Time,
    modulation: Modulation,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// No frame in service.
    Empty,
    /// Counting down to transmit the head.
    Contend,
    /// Sending the head.
    Sending,
    /// Waiting for the head's ACK.
    WaitAck,
}

/// The frame in service at a station.
#[derive(Debug)]
struct Head {
    /// The packet, until the receiver passes it up (then `None`: the
    /// station still needs the ACK, the receiver has it already).
    pkt: Option<Packet>,
    id: u64,
    to: Option<usize>,
    bytes: usize,
}

#[derive(Debug)]
struct Station {
    queue: DropTailQueue,
    stats: LinkStats,
    head: Option<Head>,
    phase: Phase,
    /// Transmissions of the head so far.
    tries: u32,
    backoff_slots: u32,
    /// Backoff event generation (stale events are ignored).
    gen: u64,
    /// The instant the pending backoff event fires, if any.
    backoff_at: Option<Time>,
    /// Medium idle (as this node senses it) since.
    idle_since: Option<Time>,
    /// Interframe space before counting: DIFS, or EIFS after an error.
    ifs: Duration,
    /// Backoff counting never starts before this (end of the ACK wait).
    resume_at: Time,
    transmitting: Option<u64>,
    rx: Option<Rx>,
    nav_until: Time,
    /// Last received frame failed: the next idle period starts with EIFS.
    eifs: bool,
    /// Sum of the power of the transmissions overlapping this node, mW.
    power_mw: f64,
    /// Transmissions counted in `power_mw` (at 0 the sum is reset to
    /// exactly 0, clearing the rounding dust).
    overlaps: u32,
    /// This node is in `Dcf::nav_live`.
    nav_listed: bool,
    /// Id of the last packet this node passed up (duplicate detection,
    /// per sender: (sender, id)).
    last_up: Vec<Option<u64>>,
    /// ARF state per neighbour (only with `rate_adaptation = "arf"`).
    arf: std::collections::BTreeMap<usize, Arf>,
}

/// Where the nodes are: the medium samples its mobility models.
pub trait Positions {
    /// Every node's position at `t` (non-decreasing `t`).
    fn at(&mut self, t: Time) -> &[Vec3];
    /// Node `node`'s position at `t` (non-decreasing `t` per node; only
    /// that node's model is sampled).
    fn of(&mut self, t: Time, node: usize) -> Vec3;
    /// The fastest node's speed at `t`, m/s.
    fn max_speed_mps(&mut self, t: Time) -> f64;
}

/// The interference-based DCF of one medium.
pub struct Dcf {
    cfg: DcfConfig,
    wifi: WifiConfig,
    st: Vec<Station>,
    txs: Vec<Tx>,
    next_id: u64,
    /// In (time, sequence) order: the project's one event queue.
    events: EventQueue<Ev>,
    rng: SimRng,
    stats: DcfStats,
    sens_mw: f64,
    cs_mw: f64,
    noise_mw: f64,
    capture: f64,
    /// Interference below this is not counted as an overlap, mW.
    overlap_mw: f64,
    slot: Duration,
    sifs: Duration,
    difs: Duration,
    eifs: Duration,
    ack_air: Duration,
    ack_timeout: Duration,
    data_modulation: Modulation,
    ack_modulation: Modulation,
    record: Option<Vec<AttemptRecord>>,
    /// The instant of the last NAV-end event pushed.
    nav_event: Option<Time>,
    /// Power vectors of ended transmissions, for reuse.
    spare: Vec<Vec<(u32, f64)>>,
    /// Per ordered pair (`from · n + to`), the shadowing knots of the
    /// current coherence interval (`WifiChannel::shadowing_db_cached`):
    /// allocated at the first transmission, O(nodes²) memory.
    shadow_knots: Vec<Option<(u64, f64, f64)>>,
    /// Received power below this is left out, mW (see
    /// [`CUTOFF_BELOW_NOISE_DB`]).
    cutoff_mw: f64,
    /// Beyond this distance a transmission is below the cut-off (mean
    /// power plus [`SHADOW_MARGIN_SIGMAS`] σ), m.
    reach_m: f64,
    /// Node positions by cell, and the instant of its snapshot.
    grid: Grid,
    grid_at: Option<Time>,
    /// The motion margin the grid's cells were widened by, m.
    grid_margin_m: f64,
    /// Scratch: grid candidates, nodes to re-sense.
    cand: Vec<u32>,
    touched: Vec<usize>,
    /// Nodes whose NAV may still run out (re-sensed when it does).
    nav_live: Vec<usize>,
}

impl std::fmt::Debug for Dcf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dcf")
            .field("nodes", &self.st.len())
            .field("stats", &self.stats)
            .finish()
    }
}

/// `ln(1 − ber)`: the log of a bit's survival. Above a few dB of SINR the
/// bit error rate is below 2⁻⁵³, `1 − ber` rounds to exactly 1 and its
/// log is exactly +0, which is returned without calling `ln` (the same
/// bits; issue 40: this `ln`, twice per reception chunk, was 5 % of a
/// 1,000-UAV run).
#[inline]
fn ln_ok(ber: f64) -> f64 {
    let ok = 1.0 - ber;
    if ok == 1.0 {
        0.0
    } else {
        ok.ln()
    }
}

fn dbm_to_mw(dbm: f64) -> f64 {
    10f64.powf(dbm / 10.0)
}

impl Dcf {
    /// A DCF for `n` nodes on a channel configured `wifi`, each with a
    /// drop-tail queue of `queue_packets`; draws from `wifi/dcf` of `seed`.
    pub fn new(
        cfg: DcfConfig,
        wifi: &WifiConfig,
        n: usize,
        queue_packets: u64,
        seed: u64,
    ) -> Result<Dcf, ConfigError> {
        cfg.validate()?;
        wifi.validate()?;
        let ack_modulation = Modulation::for_rate(wifi.basic_rate_mbps)
            .ok_or_else(|| ConfigError::new("basic_rate_mbps", "must be at most 11 Mbit/s"))?;
        let slot = Duration::from_micros(wifi.slot_us);
        let sifs = Duration::from_micros(wifi.sifs_us);
        let difs = mac::difs(wifi);
        let ack_air = mac::frame_time(wifi, mac::ACK_BYTES, wifi.basic_rate_mbps);
        let st = (0..n)
            .map(|_| Station {
                queue: DropTailQueue::new(QueueLimit::packets(queue_packets)),
                stats: LinkStats::default(),
                head: None,
                phase: Phase::Empty,
                tries: 0,
                backoff_slots: 0,
                gen: 0,
                backoff_at: None,
                idle_since: Some(Time::ZERO),
                ifs: difs,
                resume_at: Time::ZERO,
                transmitting: None,
                rx: None,
                nav_until: Time::ZERO,
                eifs: false,
                power_mw: 0.0,
                overlaps: 0,
                nav_listed: false,
                last_up: vec![None; n],
                arf: std::collections::BTreeMap::new(),
            })
            .collect();
        let noise_dbm = noise_floor_dbm(NOISE_BANDWIDTH_HZ, wifi.noise_figure_db);
        let noise_mw = dbm_to_mw(noise_dbm);
        let cutoff_dbm = (noise_dbm - CUTOFF_BELOW_NOISE_DB)
            .min(cfg.rx_sensitivity_dbm)
            .min(wifi.cs_threshold_dbm);
        // Mean power at d: P_tx − L_ref − 10 n log10(d); solve for the
        // cut-off with the shadowing margin.
        let budget_db = wifi.tx_power_dbm - wifi.reference_loss_db() - cutoff_dbm
            + SHADOW_MARGIN_SIGMAS * wifi.shadowing_sigma_db;
        let reach_m = 10f64
            .powf(budget_db / (10.0 * wifi.path_loss_exponent))
            .max(1.0);
        Ok(Dcf {
            cutoff_mw: dbm_to_mw(cutoff_dbm),
            reach_m,
            grid: Grid::new(),
            grid_margin_m: 0.0,
            grid_at: None,
            cand: Vec::new(),
            touched: Vec::new(),
            nav_live: Vec::new(),
            sens_mw: dbm_to_mw(cfg.rx_sensitivity_dbm),
            cs_mw: dbm_to_mw(wifi.cs_threshold_dbm),
            capture: dbm_to_mw(cfg.capture_threshold_db),
            overlap_mw: noise_mw * 0.1,
            noise_mw,
            cfg,
            st,
            txs: Vec::new(),
            next_id: 0,
            events: EventQueue::new(),
            rng: component_rng(seed, "wifi/dcf"),
            stats: DcfStats::default(),
            slot,
            sifs,
            difs,
            eifs: sifs + ack_air + difs,
            ack_air,
            ack_timeout: mac::ack_timeout(wifi),
            data_modulation: wifi.modulation(),
            ack_modulation,
            wifi: wifi.clone(),
            record: None,
            nav_event: None,
            spare: Vec::new(),
            shadow_knots: Vec::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &DcfConfig {
        &self.cfg
    }

    /// Keep a record of every data attempt's outcome at its addressee
    /// (for tests; grows with the run).
    pub fn record_attempts(&mut self) {
        self.record = Some(Vec::new());
    }

    /// The attempt records, if recording.
    pub fn attempts(&self) -> Option<&[AttemptRecord]> {
        self.record.as_deref()
    }

    /// The counters.
    pub fn stats(&self) -> &DcfStats {
        &self.stats
    }

    /// Node `node`'s interface counters.
    pub fn link_stats(&self, node: usize) -> &LinkStats {
        &self.st[node].stats
    }

    /// Packets and bytes waiting at `node` (the frame in service
    /// excluded). O(1).
    pub fn backlog(&self, node: usize) -> (u64, u64) {
        self.st[node].queue.backlog()
    }

    /// Whether `node` has a frame queued or in service. O(1).
    pub fn busy_station(&self, node: usize) -> bool {
        self.st[node].head.is_some() || !self.st[node].queue.is_empty()
    }

    /// Data transmissions on air now (started, outcome not yet known).
    /// O(transmissions on air).
    pub fn on_air_data(&self) -> u64 {
        self.txs
            .iter()
            .filter(|t| t.kind == Kind::Data && t.to.is_some())
            .count() as u64
    }

    /// The instant of the next pending event. O(1).
    pub fn next_event(&self) -> Option<Time> {
        self.events.peek_time()
    }

    fn push(&mut self, t: Time, ev: Ev) {
        self.events.push(t, ev);
    }

    /// Queue `pkt` at `node` at `now`, addressed to `pkt.next_hop` (or
    /// to every node that decodes it when that is [`BROADCAST`]).
    /// O(log events).
    pub fn enqueue(
        &mut self,
        now: Time,
        node: usize,
        pkt: Packet,
    ) -> Result<(), (Packet, DropReason)> {
        let s = &mut self.st[node];
        s.queue.push(pkt, &mut s.stats)?;
        if s.phase == Phase::Empty {
            self.take_head(now, node, &mut LinkOutput::default());
        }
        Ok(())
    }

    /// Whether the medium is busy at `node` (physical or virtual carrier
    /// sense).
    fn sensed_busy(&self, node: usize, now: Time) -> bool {
        let s = &self.st[node];
        s.transmitting.is_some() || s.rx.is_some() || s.power_mw >= self.cs_mw || s.nav_until > now
    }

    /// Slot counting starts at this instant in the current idle period.
    fn anchor(&self, node: usize) -> Option<Time> {
        let s = &self.st[node];
        s.idle_since.map(|t| (t + s.ifs).max(s.resume_at))
    }

    /// Re-evaluate `node`'s carrier sense after a change at `now`.
    fn cca(&mut self, node: usize, now: Time) {
        let busy = self.sensed_busy(node, now);
        let idle = self.st[node].idle_since.is_some();
        if busy && idle {
            // Freeze: count the idle slots that passed.
            let anchor = self.anchor(node).unwrap_or(now);
            let s = &mut self.st[node];
            if now > anchor {
                let done = ((now - anchor).as_nanos() / self.slot.as_nanos()) as u64;
                s.backoff_slots -= done.min(u64::from(s.backoff_slots)) as u32;
            }
            s.idle_since = None;
            // A backoff that ends at this very instant still fires: the
            // station transmits in the same slot (and collides).
            if s.backoff_at.is_some_and(|t| t > now) {
                s.gen += 1;
                s.backoff_at = None;
            }
        } else if !busy && !idle {
            let s = &mut self.st[node];
            s.idle_since = Some(now);
            s.ifs = if s.eifs { self.eifs } else { self.difs };
            s.eifs = false;
            self.schedule_backoff(node, now);
        }
    }

    /// Schedule the backoff event of a contending station on an idle
    /// medium.
    fn schedule_backoff(&mut self, node: usize, now: Time) {
        let Some(anchor) = self.anchor(node) else {
            return;
        };
        let s = &self.st[node];
        if s.phase != Phase::Contend || s.backoff_at.is_some() {
            return;
        }
        let at = (anchor + self.slot * s.backoff_slots).max(now);
        let s = &mut self.st[node];
        s.gen += 1;
        s.backoff_at = Some(at);
        let g = s.gen;
        self.push(at, Ev::BackoffDone(node, g));
    }

    fn draw_backoff(&mut self, node: usize, now: Time) {
        let tries = self.st[node].tries;
        let cw = mac::contention_window(&self.wifi, tries);
        let slots = self.rng.random_range(0..=cw);
        let s = &mut self.st[node];
        s.backoff_slots = slots;
        s.resume_at = s.resume_at.max(now);
        s.gen += 1;
        s.backoff_at = None;
    }

    /// The head is done: take the next frame, if any, and contend.
    fn take_head(&mut self, now: Time, node: usize, out: &mut LinkOutput) {
        let s = &mut self.st[node];
        s.head = None;
        s.tries = 0;
        match s.queue.pop(out) {
            None => s.phase = Phase::Empty,
            Some(p) => {
                s.head = Some(Head {
                    id: p.id,
                    to: (p.next_hop != BROADCAST).then_some(p.next_hop),
                    bytes: (p.wire_bytes as usize).saturating_add(self.wifi.mac_overhead_bytes),
                    pkt: Some(p),
                });
                s.phase = Phase::Contend;
                self.stats.frames += 1;
                self.schedule_backoff(node, now);
            }
        }
    }

    /// Process every event due at or before `now`; `positions(t)` gives
    /// every node's position at `t`, `wifi` the channel (path loss and
    /// shadowing). Appends deliveries and drops to `out`. O(events ·
    /// nodes).
    pub fn run_until(
        &mut self,
        now: Time,
        wifi: &WifiChannel,
        positions: &mut dyn Positions,
        out: &mut LinkOutput,
    ) {
        while let Some((t, &ev)) = self.events.peek() {
            if t > now {
                break;
            }
            self.events.pop();
            match ev {
                Ev::BackoffDone(node, g) => {
                    let s = &self.st[node];
                    if s.gen != g || s.phase != Phase::Contend {
                        continue;
                    }
                    self.st[node].backoff_at = None;
                    self.start_data(t, node, wifi, positions);
                }
                Ev::AckStart(node, to) => {
                    self.stats.acks += 1;
                    let (m, air) = (self.ack_modulation, self.ack_air);
                    self.start_tx(
                        t,
                        node,
                        Some(to),
                        Kind::Ack,
                        m,
                        air,
                        u64::MAX,
                        wifi,
                        positions,
                    );
                }
                Ev::TxEnd(id) => self.end_tx(t, id, out),
                Ev::AckTimeout(node, g) => {
                    let s = &self.st[node];
                    if s.gen != g || s.phase != Phase::WaitAck {
                        continue;
                    }
                    self.failed_attempt(t, node, out);
                }
                Ev::NavEnd => {
                    let mut touched = std::mem::take(&mut self.touched);
                    touched.clear();
                    self.cca_nodes(t, &mut touched);
                    self.touched = touched;
                }
            }
        }
    }

    fn start_data(
        &mut self,
        now: Time,
        node: usize,
        wifi: &WifiChannel,
        positions: &mut dyn Positions,
    ) {
        let (to, bytes, pid) = {
            let h = self.st[node].head.as_ref().expect("contending with a head");
            (h.to, h.bytes, h.id)
        };
        self.stats.attempts += 1;
        if self.st[node].tries > 0 {
            self.stats.retries += 1;
        }
        self.st[node].tries += 1;
        self.st[node].phase = Phase::Sending;
        let (m, rate) = match (self.cfg.rate_adaptation, to) {
            (RateAdaptation::Arf, Some(d)) => {
                let m = Modulation::ALL[self.arf(node, d).rate];
                (m, m.rate_mbps())
            }
            _ => (self.data_modulation, self.wifi.data_rate_mbps),
        };
        let air = mac::frame_time(&self.wifi, bytes, rate);
        self.start_tx(now, node, to, Kind::Data, m, air, pid, wifi, positions);
    }

    /// ARF state of `node` towards `to` (created at the configured rate).
    fn arf(&mut self, node: usize, to: usize) -> &mut Arf {
        let start = Modulation::ALL
            .iter()
            .position(|m| *m == self.data_modulation)
            .unwrap_or(0);
        self.st[node].arf.entry(to).or_insert(Arf {
            rate: start,
            successes: 0,
            failures: 0,
            probing: false,
        })
    }

    /// ARF bookkeeping of `node`'s head towards its addressee.
    fn arf_outcome(&mut self, node: usize, ok: bool) {
        if self.cfg.rate_adaptation != RateAdaptation::Arf {
            return;
        }
        let Some(to) = self.st[node].head.as_ref().and_then(|h| h.to) else {
            return;
        };
        let top = Modulation::ALL.len() - 1;
        let a = self.arf(node, to);
        if ok {
            a.failures = 0;
            a.probing = false;
            a.successes += 1;
            if a.successes >= ARF_SUCCESSES && a.rate < top {
                a.rate += 1;
                a.successes = 0;
                a.probing = true;
            }
        } else {
            a.successes = 0;
            a.failures += 1;
            if (a.probing || a.failures >= ARF_FAILURES) && a.rate > 0 {
                a.rate -= 1;
                a.failures = 0;
            }
            a.probing = false;
        }
    }

    /// The rate `node` uses towards `to` now, Mbit/s (ARF's current rate,
    /// else the configured one).
    pub fn rate_mbps(&self, node: usize, to: usize) -> f64 {
        match self.st[node].arf.get(&to) {
            Some(a) if self.cfg.rate_adaptation == RateAdaptation::Arf => {
                Modulation::ALL[a.rate].rate_mbps()
            }
            _ => self.wifi.data_rate_mbps,
        }
    }

    /// Close `node`'s current reception chunk at `now` (before the power
    /// it hears changes).
    fn close_chunk(&mut self, node: usize, now: Time) {
        let noise = self.noise_mw;
        let long = self.wifi.long_preamble;
        let s = &mut self.st[node];
        let Some(rx) = s.rx.as_mut() else {
            return;
        };
        if now <= rx.chunk_from {
            return;
        }
        let (header_end, tx_end, modulation) = (rx.header_end, rx.end, rx.modulation);
        let interference = (s.power_mw - rx.signal_mw).max(0.0);
        let sinr = rx.signal_mw / (noise + interference);
        let (from, to) = (rx.chunk_from, now);
        // PLCP header: its 48 bits end with the preamble.
        let (hdr_m, hdr_rate) = if long {
            (Modulation::Dbpsk1, 1.0)
        } else {
            (Modulation::Dqpsk2, 2.0)
        };
        let hdr_len = Duration::from_secs_f64(f64::from(PLCP_HEADER_BITS) / (hdr_rate * 1e6));
        let hdr_start = header_end.saturating_sub(hdr_len);
        let overlap = |a: Time, b: Time| -> f64 {
            let lo = from.max(a);
            let hi = to.min(b);
            if hi > lo {
                (hi - lo).as_secs_f64()
            } else {
                0.0
            }
        };
        let hdr_bits = overlap(hdr_start, header_end) * hdr_rate * 1e6;
        let body_bits = overlap(header_end, tx_end) * modulation.rate_mbps() * 1e6;
        let mut log_ok = 0.0;
        if hdr_bits > 0.0 {
            log_ok += hdr_bits * ln_ok(hdr_m.ber(sinr));
        }
        if body_bits > 0.0 {
            log_ok += body_bits * ln_ok(modulation.ber(sinr));
        }
        rx.log_ok += log_ok;
        rx.chunk_from = now;
        if interference > self.overlap_mw {
            rx.interfered = true;
        }
    }

    /// Rebuild the spatial grid when its snapshot is [`GRID_REFRESH`] old
    /// (or missing). O(nodes) on a rebuild, else O(1).
    fn refresh_grid(&mut self, now: Time, positions: &mut dyn Positions) {
        if self.grid_at.is_some_and(|t| now < t + GRID_REFRESH) {
            return;
        }
        // A node may move up to twice the fastest speed now for one
        // refresh interval before the next snapshot; the cells widen by
        // that so the 3 × 3 × 3 cells around a sender still hold every
        // node within `reach_m` of it.
        let margin_m = 2.0 * positions.max_speed_mps(now) * GRID_REFRESH.as_secs_f64();
        let pos = positions.at(now);
        self.grid.rebuild(pos, self.reach_m + margin_m);
        self.grid_at = Some(now);
        self.grid_margin_m = margin_m;
    }

    /// Received power of a transmission by `node` at `now` at every node
    /// it reaches at or above the cut-off, ascending, into `rx_mw`.
    /// O(candidates).
    fn reached(
        &mut self,
        now: Time,
        node: usize,
        wifi: &WifiChannel,
        positions: &mut dyn Positions,
        rx_mw: &mut Vec<(u32, f64)>,
    ) {
        self.refresh_grid(now, positions);
        let n = self.st.len();
        if self.shadow_knots.len() != n * n {
            self.shadow_knots = vec![None; n * n];
        }
        let p_tx = self.wifi.tx_power_dbm;
        let me = positions.of(now, node);
        let mut cand = std::mem::take(&mut self.cand);
        // Only nodes whose snapshot lies within reach of the sender, plus
        // twice the margin the grid's cells allow for motion since the
        // snapshot (and a metre against rounding), are sampled: a node
        // beyond would have had to move at over twice the speed the grid
        // itself assumes. The rest of the 3 × 3 × 3 cells (in a flat swarm
        // two thirds of their nodes) are left before their mobility model
        // is run (issue 40).
        let radius_m = self.reach_m + 2.0 * self.grid_margin_m + 1.0;
        self.grid.candidates_within(me, radius_m, &mut cand);
        let knots = &mut self.shadow_knots[node * n..(node + 1) * n];
        for &k in &cand {
            let k = k as usize;
            if k == node {
                continue;
            }
            let d = me.distance(positions.of(now, k));
            if d > self.reach_m {
                continue;
            }
            let loss = wifi.path_loss_db(d)
                + wifi.shadowing_db_cached(now, WifiChannel::link_id(node, k), &mut knots[k]);
            let mw = dbm_to_mw(p_tx - loss);
            if mw >= self.cutoff_mw {
                rx_mw.push((k as u32, mw));
            }
        }
        self.cand = cand;
    }

    /// Re-evaluate carrier sense at `now` at `nodes` (those whose sensing
    /// inputs changed) and at every node whose NAV ran out, in ascending
    /// node order (as one pass over every node would: everywhere else
    /// [`cca`](Self::cca) would change nothing). O(k log k).
    fn cca_nodes(&mut self, now: Time, nodes: &mut Vec<usize>) {
        let mut i = 0;
        while i < self.nav_live.len() {
            let k = self.nav_live[i];
            if self.st[k].nav_until <= now {
                nodes.push(k);
                self.st[k].nav_listed = false;
                self.nav_live.swap_remove(i);
            } else {
                i += 1;
            }
        }
        nodes.sort_unstable();
        nodes.dedup();
        for &k in nodes.iter() {
            self.cca(k, now);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn start_tx(
        &mut self,
        now: Time,
        node: usize,
        to: Option<usize>,
        kind: Kind,
        modulation: Modulation,
        air: Duration,
        packet_id: u64,
        wifi: &WifiChannel,
        positions: &mut dyn Positions,
    ) {
        let id = self.next_id;
        self.next_id += 1;
        let preamble = Duration::from_secs_f64(self.wifi.preamble_us() * 1e-6);
        let end = now + air.max(Duration::from_nanos(1));
        let air_ns = (end - now).as_nanos() as u64;
        self.stats.airtime_ns += air_ns;
        if kind == Kind::Data && to.is_none() {
            self.stats.broadcast_airtime_ns += air_ns;
        }
        // Power vectors are recycled: no allocation per frame once warm.
        let mut rx_mw = self.spare.pop().unwrap_or_default();
        rx_mw.clear();
        self.reached(now, node, wifi, positions, &mut rx_mw);
        // Half duplex: a reception in progress at the sender is lost.
        if let Some(rx) = self.st[node].rx.take() {
            self.lost_rx(node, rx.tx, true);
        }
        self.st[node].transmitting = Some(id);
        let mut tx = Tx {
            id,
            from: node,
            to,
            kind,
            header_end: (now + preamble).min(end),
            end,
            modulation,
            rx_mw,
            packet_id,
            dest_busy: false,
        };
        let frame = (tx.header_end, tx.end, tx.modulation);
        let mut touched = std::mem::take(&mut self.touched);
        touched.clear();
        touched.push(node);
        let mut dest_reached = false;
        // Receivers, in node order.
        for i in 0..tx.rx_mw.len() {
            let (k, p) = tx.rx_mw[i];
            let k = k as usize;
            touched.push(k);
            self.close_chunk(k, now);
            self.st[k].power_mw += p;
            self.st[k].overlaps += 1;
            let addressed = to == Some(k);
            dest_reached |= addressed;
            if self.st[k].transmitting.is_some() {
                if addressed {
                    tx.dest_busy = true;
                }
            } else if let Some(rx) = &self.st[k].rx {
                if p >= self.sens_mw && p >= rx.signal_mw * self.capture {
                    // Preamble capture: the stronger frame takes over.
                    let old = self.st[k].rx.take().map(|r| r.tx);
                    if let Some(old) = old {
                        self.lost_rx(k, old, true);
                    }
                    self.lock(k, id, p, now, frame);
                } else if addressed {
                    tx.dest_busy = true;
                }
            } else if p >= self.sens_mw {
                self.lock(k, id, p, now, frame);
            }
        }
        if let Some(d) = to.filter(|_| !dest_reached) {
            // Below the cut-off at its addressee: busy there as before.
            let s = &self.st[d];
            if s.transmitting.is_some() || s.rx.is_some() {
                tx.dest_busy = true;
            }
        }
        let end_at = tx.end;
        self.txs.push(tx);
        self.cca_nodes(now, &mut touched);
        self.touched = touched;
        self.push(end_at, Ev::TxEnd(id));
    }

    fn lock(&mut self, k: usize, id: u64, p: f64, now: Time, frame: (Time, Time, Modulation)) {
        let interfered = self.st[k].power_mw - p > self.overlap_mw;
        self.st[k].rx = Some(Rx {
            tx: id,
            signal_mw: p,
            log_ok: 0.0,
            chunk_from: now,
            interfered,
            header_end: frame.0,
            end: frame.1,
            modulation: frame.2,
        });
    }

    /// A reception at `k` of transmission `id` was abandoned (half duplex
    /// or capture): the frame is lost there.
    fn lost_rx(&mut self, k: usize, id: u64, _collided: bool) {
        if let Some(tx) = self.txs.iter_mut().find(|t| t.id == id) {
            if tx.to == Some(k) {
                tx.dest_busy = true;
            }
        }
        self.st[k].eifs = true;
    }

    fn end_tx(&mut self, now: Time, id: u64, out: &mut LinkOutput) {
        let Some(i) = self.txs.iter().position(|t| t.id == id) else {
            return;
        };
        // Chunks close with the power still on, then it is removed (only
        // where it was counted: elsewhere the power does not change).
        for j in 0..self.txs[i].rx_mw.len() {
            let k = self.txs[i].rx_mw[j].0 as usize;
            self.close_chunk(k, now);
        }
        let tx = self.txs.swap_remove(i);
        let mut touched = std::mem::take(&mut self.touched);
        touched.clear();
        touched.push(tx.from);
        let mut dest: Option<RxOutcome> = None;
        for &(k, p) in &tx.rx_mw {
            let k = k as usize;
            touched.push(k);
            let s = &mut self.st[k];
            s.power_mw -= p;
            s.overlaps -= 1;
            if s.overlaps == 0 {
                // Nothing left overlapping k: clear the rounding dust.
                s.power_mw = 0.0;
            }
            let locked = s.rx.as_ref().is_some_and(|r| r.tx == id);
            if !locked {
                continue;
            }
            let rx = s.rx.take().expect("locked");
            let p_ok = rx.log_ok.exp();
            let ok = self.rng.random::<f64>() < p_ok;
            let addressed = tx.to.is_none_or(|d| d == k);
            if tx.to == Some(k) {
                dest = Some(if ok {
                    RxOutcome::Received
                } else if rx.interfered {
                    RxOutcome::Collided
                } else {
                    RxOutcome::Error
                });
            }
            if !ok {
                self.st[k].eifs = true;
                continue;
            }
            match tx.kind {
                Kind::Data => {
                    if addressed && tx.to.is_none() {
                        self.pass_up_copy(now, tx.from, k, out);
                    } else if addressed {
                        self.pass_up(now, tx.from, k, out);
                        if tx.to.is_some() {
                            self.push(now + self.sifs, Ev::AckStart(k, tx.from));
                        }
                    } else if tx.to.is_some() {
                        // Virtual carrier sense for the SIFS + ACK to come.
                        let nav = now + self.sifs + self.ack_air;
                        if nav > self.st[k].nav_until {
                            self.st[k].nav_until = nav;
                            if !self.st[k].nav_listed {
                                self.st[k].nav_listed = true;
                                self.nav_live.push(k);
                            }
                            if self.nav_event != Some(nav) {
                                self.nav_event = Some(nav);
                                self.push(nav, Ev::NavEnd);
                            }
                        }
                    }
                }
                Kind::Ack => {
                    if tx.to == Some(k) && self.st[k].phase == Phase::WaitAck {
                        self.acked(now, k, out);
                    }
                }
            }
        }
        if tx.kind == Kind::Data {
            if let Some(d) = tx.to {
                let outcome = dest.unwrap_or(if tx.dest_busy {
                    RxOutcome::Collided
                } else {
                    RxOutcome::Error
                });
                match outcome {
                    RxOutcome::Collided => self.stats.collisions += 1,
                    RxOutcome::Error => self.stats.errors += 1,
                    RxOutcome::Received => {}
                }
                if let Some(r) = self.record.as_mut() {
                    r.push((tx.id, tx.packet_id, tx.from, d, outcome));
                }
            }
        }
        // The sender.
        let j = tx.from;
        let (kind, to) = (tx.kind, tx.to);
        self.spare.push(tx.rx_mw);
        self.st[j].transmitting = None;
        match kind {
            Kind::Data if to.is_some() => {
                let s = &mut self.st[j];
                s.phase = Phase::WaitAck;
                s.gen += 1;
                s.backoff_at = None;
                let g = s.gen;
                self.push(now + self.ack_timeout, Ev::AckTimeout(j, g));
            }
            Kind::Data => {
                self.stats.broadcasts += 1;
                self.draw_backoff(j, now);
                self.take_head(now, j, out);
            }
            Kind::Ack => {}
        }
        self.cca_nodes(now, &mut touched);
        self.touched = touched;
    }

    /// Receiver `k` decoded the head of `from`: pass it up once.
    fn pass_up(&mut self, now: Time, from: usize, k: usize, out: &mut LinkOutput) {
        let Some(id) = self.st[from].head.as_ref().map(|h| h.id) else {
            return;
        };
        if self.st[k].last_up[from] == Some(id) {
            return; // a retransmission of a frame already passed up
        }
        if let Some(p) = self.st[from].head.as_mut().and_then(|h| h.pkt.take()) {
            self.st[k].last_up[from] = Some(id);
            let s = &mut self.st[from].stats;
            s.delivered_packets += 1;
            s.delivered_bytes += u64::from(p.wire_bytes);
            out.delivered.push((now, p));
        }
    }

    /// Receiver `k` decoded the broadcast head of `from`: a copy for it.
    fn pass_up_copy(&mut self, now: Time, from: usize, k: usize, out: &mut LinkOutput) {
        let Some(p) = self.st[from].head.as_ref().and_then(|h| h.pkt.as_ref()) else {
            return;
        };
        let mut p = p.clone();
        p.next_hop = k;
        let s = &mut self.st[from].stats;
        s.delivered_packets += 1;
        s.delivered_bytes += u64::from(p.wire_bytes);
        out.delivered.push((now, p));
    }

    /// Station `j` got its ACK.
    fn acked(&mut self, now: Time, j: usize, out: &mut LinkOutput) {
        self.arf_outcome(j, true);
        self.st[j].gen += 1;
        self.st[j].tries = 0;
        self.draw_backoff(j, now);
        self.take_head(now, j, out);
    }

    /// Station `j`'s ACK did not come.
    fn failed_attempt(&mut self, now: Time, j: usize, out: &mut LinkOutput) {
        self.arf_outcome(j, false);
        if self.st[j].tries >= self.wifi.retry_limit {
            let h = self.st[j].head.take().expect("a frame in service");
            if let Some(p) = h.pkt {
                self.stats.mac_drops += 1;
                self.st[j].stats.channel_drops += 1;
                out.dropped.push((p, DropReason::Channel));
            }
            self.st[j].tries = 0;
            self.draw_backoff(j, now);
            self.take_head(now, j, out);
            return;
        }
        self.draw_backoff(j, now);
        self.st[j].phase = Phase::Contend;
        self.schedule_backoff(j, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Static positions, for driving the DCF directly.
    struct Fixed(Vec<Vec3>);

    impl Positions for Fixed {
        fn at(&mut self, _t: Time) -> &[Vec3] {
            &self.0
        }
        fn of(&mut self, _t: Time, node: usize) -> Vec3 {
            self.0[node]
        }
        fn max_speed_mps(&mut self, _t: Time) -> f64 {
            0.0
        }
    }

    fn broadcast(id: u64) -> Packet {
        Packet {
            id,
            flow: 0,
            forward: false,
            is_data: false,
            src: 0,
            dst: BROADCAST,
            next_hop: BROADCAST,
            dst_port: 698,
            src_port: 698,
            wire_bytes: 100,
            created: Time::ZERO,
            left_first_hop: true,
            hops: 0,
            ecn: None,
            payload: Vec::new(),
        }
    }

    #[test]
    fn ln_ok_is_ln_of_one_minus_ber_bit_for_bit() {
        let mut bers = vec![0.0, 1e-300, 1e-17, 1.1e-16, 1e-16, 2e-16, 1e-9, 0.1, 0.5];
        for m in Modulation::ALL {
            for i in -200..400 {
                bers.push(m.ber(10f64.powf(f64::from(i) / 10.0)));
            }
        }
        for b in bers {
            assert_eq!(ln_ok(b).to_bits(), (1.0 - b).ln().to_bits(), "ber {b:e}");
        }
    }

    #[test]
    fn the_cut_off_is_10_db_below_the_noise_and_the_reach_follows_the_path_loss() {
        let wifi = WifiConfig::default();
        let d = Dcf::new(DcfConfig::default(), &wifi, 2, 10, 1).expect("dcf");
        let noise = noise_floor_dbm(NOISE_BANDWIDTH_HZ, wifi.noise_figure_db);
        let cutoff_dbm = 10.0 * d.cutoff_mw.log10();
        assert!((cutoff_dbm - (noise - 10.0)).abs() < 1e-9, "{cutoff_dbm}");
        // At the reach the mean power plus 3 σ is the cut-off.
        let at_reach = wifi.tx_power_dbm
            - wifi.reference_loss_db()
            - 10.0 * wifi.path_loss_exponent * d.reach_m.log10()
            + 3.0 * wifi.shadowing_sigma_db;
        assert!((at_reach - cutoff_dbm).abs() < 1e-9);
        assert!((1_100.0..1_300.0).contains(&d.reach_m), "{}", d.reach_m);
        // A sensitivity below the noise − 10 dB lowers the cut-off with it.
        let low = DcfConfig {
            rx_sensitivity_dbm: -120.0,
            ..DcfConfig::default()
        };
        let d = Dcf::new(low, &wifi, 2, 10, 1).expect("dcf");
        assert!((10.0 * d.cutoff_mw.log10() + 120.0).abs() < 1e-9);
    }

    #[test]
    fn a_transmission_reaches_near_nodes_and_not_those_beyond_the_cut_off() {
        let cfg = WifiConfig {
            shadowing_sigma_db: 0.0,
            ..WifiConfig::default()
        };
        let wifi = WifiChannel::new(cfg.clone(), 3).expect("channel");
        // 0 sends; 1 hears it well, 2 faintly (above the cut-off, below
        // the sensitivity), 3 and 4 are beyond the cut-off (≈ 580 m).
        let xs = [0.0, 100.0, 500.0, 700.0, 5_000.0];
        let mut pos = Fixed(xs.iter().map(|&x| Vec3::new(x, 0.0, 0.0)).collect());
        let mut d = Dcf::new(DcfConfig::default(), &cfg, xs.len(), 10, 1).expect("dcf");
        d.enqueue(Time::ZERO, 0, broadcast(1)).expect("queued");
        let mut out = LinkOutput::default();
        // Run until the broadcast is on air.
        while d.txs.is_empty() {
            let t = d.next_event().expect("an event");
            d.run_until(t, &wifi, &mut pos, &mut out);
        }
        let reached: Vec<u32> = d.txs[0].rx_mw.iter().map(|r| r.0).collect();
        assert_eq!(reached, [1, 2]);
        assert!(d.st[1].power_mw > d.st[2].power_mw && d.st[2].power_mw > 0.0);
        assert_eq!(d.st[3].power_mw, 0.0);
        assert_eq!(d.st[4].power_mw, 0.0);
        assert!(d.st[1].rx.is_some(), "1 locks on the frame");
        assert!(d.st[2].rx.is_none(), "2 is below the sensitivity");
        // Run to the end: 1 decodes it; every power sum is back to 0.
        while let Some(t) = d.next_event() {
            d.run_until(t, &wifi, &mut pos, &mut out);
        }
        assert_eq!(out.delivered.len(), 1);
        assert_eq!(out.delivered[0].1.next_hop, 1);
        assert!(d.st.iter().all(|s| s.power_mw == 0.0 && s.overlaps == 0));
    }
}
