//! Connection and endpoint settings, with the defaults of a drone/vehicle
//! transport and the bounds that keep memory use finite.

use crate::wire::{StartupMode, HEADER_LEN};
use peregrine_cc::CcConfig;
use std::time::Duration;

/// Bytes of a DATA datagram that are not block data when it carries one
/// frame: base header, packet number, stream-frame header.
pub const DATA_OVERHEAD: usize = HEADER_LEN + 4 + crate::wire::StreamFrame::HEADER_LEN;

/// What one half-open connection costs the endpoint, bytes, as the
/// half-open accounting counts it (`EndpointStats::half_open_bytes`): the
/// heap a Noise_XX listener holds per answered START — the boxed
/// `Connection` (2,880 bytes inline: the configuration is shared, the
/// packet keys boxed and absent until XX message 3), its Noise handshake
/// state, the START-REPLY kept for re-sending, recovery and scheduler
/// state, and the endpoint's id, peer, timer and half-open map entries —
/// measured at 6,685 bytes by a counting allocator
/// (`tests/half_open_memory.rs`, which fails if an entry outgrows this),
/// rounded up to 8 KiB. (8,565 bytes before the sharing and boxing.)
pub const HALF_OPEN_ENTRY_BYTES: usize = 8 << 10;

/// The smallest datagram size a connection agrees to use: room for a
/// header, a packet number, a frame header and 27 bytes of data, and for
/// the ACK and NACK payloads the connection sends.
pub const MIN_PACKET_SIZE: u16 = 64;

/// Whether a connection discovers its path MTU (`ConnectionConfig::pmtu_discovery`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum PmtuDiscovery {
    /// Fixed size: every datagram may be the negotiated `max_packet_size`
    /// (what the simulator and like-for-like benchmarks use).
    Off,
    /// DPLPMTUD from 1,200 bytes up to the negotiated `max_packet_size`;
    /// messages are cut into blocks that fit 1,200-byte datagrams, and a
    /// datagram carries as many as the current PMTU holds.
    On,
    /// Left to the runtime: the core alone treats it as [`Off`](Self::Off);
    /// the UDP runtime (`peregrine`) as [`On`](Self::On) with the
    /// interface's MTU (less IP and UDP headers) as `max_packet_size`.
    #[default]
    Auto,
}

impl PmtuDiscovery {
    /// The name used by the CLI and JSON: `off`, `on`, `auto`.
    pub const fn name(self) -> &'static str {
        match self {
            PmtuDiscovery::Off => "off",
            PmtuDiscovery::On => "on",
            PmtuDiscovery::Auto => "auto",
        }
    }
    /// The mode with this name (`off`, `on`, `auto`).
    pub fn from_name(name: &str) -> Option<PmtuDiscovery> {
        [PmtuDiscovery::Off, PmtuDiscovery::On, PmtuDiscovery::Auto]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// How this side schedules the acknowledgements of the DATA it receives
/// (`ConnectionConfig::ack_policy`; docs/protocol.md §10 "ACK policies").
///
/// The seeds measure *TCP* variants; [`Tcp`](Self::Tcp) reproduces TCP's
/// delayed ACK so that a controller can be compared like with like, and
/// [`Sltp`](Self::Sltp) is this protocol's own schedule.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum AckPolicy {
    /// SLTP's schedule (default): an ACK after `ack_frequency` DATA
    /// packets or within `max_ack_delay`, the data sender asking for
    /// every ⌊cwnd/8⌋ packets once its window holds 32
    /// (`request_ack_frequency`), up to `max_ack_ranges` ranges.
    #[default]
    Sltp,
    /// TCP's delayed ACK (RFC 5681 §4.2, RFC 1122 §4.2.3.2): an ACK for
    /// every second full-size packet received (Linux's rule: once more than
    /// one full packet's worth of data is unacknowledged, the full size
    /// being the largest DATA packet seen), at most `delayed_ack` late, at
    /// once on a gap or an out-of-order arrival, at most
    /// [`AckPolicy::TCP_MAX_RANGES`] ranges per ACK (SACK's limit). The
    /// peer's ACK-frequency requests are ignored and, as a data sender,
    /// this side makes none.
    Tcp {
        /// Longest an ACK is held back (default 40 ms, Linux's minimum
        /// delayed-ACK timer; RFC 5681: below 500 ms).
        delayed_ack: Duration,
    },
}

impl AckPolicy {
    /// TCP's default delayed-ACK timer.
    pub const TCP_DELAYED_ACK: Duration = Duration::from_millis(40);
    /// Most ranges one ACK reports under [`AckPolicy::Tcp`] (SACK's three
    /// blocks when timestamps are on), counting the first.
    pub const TCP_MAX_RANGES: usize = 3;
    /// The longest delayed-ACK timer RFC 5681 allows (exclusive).
    pub const TCP_DELAYED_ACK_LIMIT: Duration = Duration::from_millis(500);

    /// TCP's policy with the default 40 ms timer.
    pub const fn tcp() -> AckPolicy {
        AckPolicy::Tcp {
            delayed_ack: Self::TCP_DELAYED_ACK,
        }
    }

    /// The name used by scenarios, the CLI and JSON: `sltp`, `tcp`.
    pub const fn name(self) -> &'static str {
        match self {
            AckPolicy::Sltp => "sltp",
            AckPolicy::Tcp { .. } => "tcp",
        }
    }

    /// The policy with this name (`sltp`, `tcp`) and, for `tcp`, the
    /// delayed-ACK timer (`None`: 40 ms). A timer given with `sltp`, a zero
    /// timer or one of 500 ms or more is an error naming `delayed_ack`; an
    /// unknown name one naming `ack_policy`.
    pub fn from_name(name: &str, delayed_ack: Option<Duration>) -> Result<AckPolicy, ConfigError> {
        let policy = match (name, delayed_ack) {
            ("sltp", None) => AckPolicy::Sltp,
            ("sltp", Some(_)) => {
                return Err(ConfigError {
                    field: "delayed_ack",
                    problem: "applies only to ack_policy \"tcp\"",
                })
            }
            ("tcp", d) => AckPolicy::Tcp {
                delayed_ack: d.unwrap_or(Self::TCP_DELAYED_ACK),
            },
            _ => {
                return Err(ConfigError {
                    field: "ack_policy",
                    problem: "is not \"sltp\" or \"tcp\"",
                })
            }
        };
        policy.validate()?;
        Ok(policy)
    }

    /// The delayed-ACK timer (`None` for SLTP, whose delay is `max_ack_delay`).
    pub const fn delayed_ack(self) -> Option<Duration> {
        match self {
            AckPolicy::Sltp => None,
            AckPolicy::Tcp { delayed_ack } => Some(delayed_ack),
        }
    }

    /// Checks the timer: positive and below 500 ms.
    pub fn validate(self) -> Result<(), ConfigError> {
        if let AckPolicy::Tcp { delayed_ack } = self {
            if delayed_ack.is_zero() {
                return Err(ConfigError {
                    field: "delayed_ack",
                    problem: "is zero",
                });
            }
            if delayed_ack >= Self::TCP_DELAYED_ACK_LIMIT {
                return Err(ConfigError {
                    field: "delayed_ack",
                    problem: "is not below 500 ms (RFC 5681)",
                });
            }
        }
        Ok(())
    }
}

/// A configuration value that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid connection configuration: {field} {problem}")]
pub struct ConfigError {
    /// The offending field.
    pub field: &'static str,
    /// What is wrong with it.
    pub problem: &'static str,
}

/// Settings of one connection (either side).
///
/// Every limit is enforced with an error or a drop, never a panic: a
/// hostile peer cannot make the connection hold more than
/// `max_receive_buffer_bytes` of reassembly data or more than
/// `max_reassembly_messages` incomplete messages.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionConfig {
    /// The congestion controller of this side's sending direction.
    pub cc: CcConfig,
    /// How the sending direction starts: SLTP's packet pair (ECHO_1/ECHO_2
    /// sizes the first window; the runtime's default) or the controller's
    /// own slow start (what the seed reproductions of TCP and QUIC use).
    pub startup: StartupMode,
    /// Largest datagram (TOTAL_LEN) this side sends and accepts; the
    /// connection uses the smaller of both sides' values. 1452 bytes is
    /// SLTP's own choice (seed 003 §VI). With path MTU discovery on, the
    /// upper bound of the search.
    pub max_packet_size: u16,
    /// Path MTU discovery (DPLPMTUD, RFC 8899; [`crate::pmtud`]): off
    /// (every datagram may be the negotiated `max_packet_size`), on
    /// (start at 1,200 bytes and probe up to it), or left to the runtime
    /// (the default: the sans-IO core and the simulator treat it as off;
    /// the UDP runtime turns it on with the interface's MTU as the bound).
    pub pmtu_discovery: PmtuDiscovery,
    /// Largest application message accepted by `send_message`, bytes.
    pub max_message_size: usize,
    /// Most messages sent but not yet acknowledged by the peer.
    pub max_outstanding_messages: usize,
    /// Most bytes of messages sent but not yet acknowledged by the peer.
    pub max_send_buffer_bytes: usize,
    /// Receive buffer: bytes of incomplete or out-of-order messages plus
    /// received messages the application has not polled yet. The free part
    /// is the window advertised in WINDOW_SIZE.
    pub max_receive_buffer_bytes: usize,
    /// Most incomplete or out-of-order messages held for reassembly.
    pub max_reassembly_messages: usize,
    /// RTO before the first RTT sample (RFC 6298: 1 s).
    pub initial_rto: Duration,
    /// Lower bound on the RTO (default 200 ms, as Linux; RFC 6298 says 1 s).
    pub min_rto: Duration,
    /// Upper bound on the backed-off RTO (RFC 6298: at least 60 s).
    pub max_rto: Duration,
    /// Longest this side holds an acknowledgement back (unless its peer
    /// asked for another delay with an ACK-frequency request), and the
    /// longest it asks its peer to.
    pub max_ack_delay: Duration,
    /// Acknowledge at once after this many unacknowledged DATA packets
    /// (unless the peer asked for another threshold).
    pub ack_frequency: u32,
    /// As a data sender, ask the peer to acknowledge less often when the
    /// window is large (every ⌊cwnd/8⌋ full packets, at least 2, at most
    /// 64; within a quarter of the smoothed RTT): docs/protocol.md
    /// §6.5.2 and §10 "ACK schedule". Off: the peer keeps its own schedule.
    pub request_ack_frequency: bool,
    /// How DATA is acknowledged: SLTP's schedule (default; the three
    /// fields above) or TCP's delayed ACK, which overrides them.
    pub ack_policy: AckPolicy,
    /// Most ranges besides the first that one ACK reports (the newest
    /// first), and most missing-packet ranges one NACK carries (1–255).
    pub max_ack_ranges: usize,
    /// Packet-threshold loss detection distance (DupThresh), also the
    /// receiver's reordering allowance before it NACKs a gap.
    pub packet_threshold: u64,
    /// Close the connection when nothing arrives from the peer for this long.
    pub idle_timeout: Duration,
    /// Send an IDLE keep-alive when nothing was sent for this long; must be
    /// shorter than `idle_timeout`.
    pub keep_alive_interval: Duration,
    /// Give up a START that gets no answer after this long.
    pub handshake_timeout: Duration,
    /// Declare the peer dead ([`CloseReason::PeerDead`](crate::CloseReason::PeerDead))
    /// after this many retransmission timeouts in a row with data
    /// outstanding and nothing heard from the peer — unless an outage is
    /// expected: a link-failure hint whose predicted end has not passed
    /// (or, without a prediction, until the peer is heard again), the
    /// controller holding its window through a predicted outage (RTW-TCP's
    /// `Hold`: no backoff, no count), or the peer's handover window
    /// closed to 0. The timeouts double from the RTO, and the
    /// retransmission the last one sends gets one more RTO, so with the
    /// 200 ms minimum RTO the default 4 spans 0.2 + 0.4 + 0.8 + 1.6 + 0.2
    /// = 3.2 s on any path shorter than ~50 ms, and an outage shorter than
    /// ~3 s is survived. 0: never (only `idle_timeout` ends a
    /// silent connection; the simulator's experiments do this so that
    /// long scripted outages do not end their flows).
    pub peer_death_timeouts: u32,
    /// Upper bound on the packet-pair measured initial window, bytes
    /// (SLTP's 144 KiB by default).
    pub max_initial_window_bytes: u64,
    /// Longest the packet-pair test waits for its two answers before the
    /// connection falls back to the controller's initial window.
    pub probe_timeout: Duration,
    /// This many NACKs within one smoothed RTT count as a burst, which
    /// repeats the packet-pair test (seed 003 §III-D); 0 disables re-probing.
    pub reprobe_nack_burst: u32,
    /// Least time between two packet-pair tests.
    pub reprobe_min_interval: Duration,
    /// Set ST_CKS (Internet checksum) on every datagram sent.
    pub checksum: bool,
    /// ECN (docs/protocol.md §6.5.3): send this side's datagrams
    /// ECN-capable — ECT(0) under a classic controller, ECT(1) under a
    /// scalable one (Prague) — and validate the CE counts the peer
    /// reports in its ACKs; newly reported CE is a congestion signal. A
    /// path or peer that fails validation (RFC 9000 §13.4.2) turns it off
    /// for the connection. On by default: the endpoint always marked its
    /// datagrams ECT(0), and validation makes it safe where ECN is not
    /// carried (the QUIC default). Off: datagrams leave not-ECT. The
    /// receiving side reports counts either way.
    pub ecn: bool,
    /// The stream scheduler of this side's sending direction (switchable
    /// at run time with `Endpoint::set_scheduler`).
    pub scheduler: crate::sched::SchedulerConfig,
    /// Queue guard (docs/protocol.md, "Queue guard"): while class-0 data
    /// is being sent, keep this side's own standing queue at most this
    /// much delay above min RTT by capping bytes in flight under any
    /// controller. `None` (the default): off.
    pub queue_guard: Option<Duration>,
    /// Receive-queue bound (docs/runtime.md, "Receive-queue bound"):
    /// when this side's socket queue holds a standing sojourn above this
    /// delay (the receiving process is the bottleneck, as on loopback),
    /// the advertised window is cut to what the process drains in about
    /// that time, so a priority message, an ACK or a key update does not
    /// wait behind the connection's own backlog. Measured from the
    /// runtime's per-datagram arrival times; inert where the network is
    /// the bottleneck and in the simulator. 1 ms by default; `None`: off.
    pub receive_queue_target: Option<Duration>,
    /// Per-stream receive credit, in messages: how many messages of one
    /// stream beyond the oldest one its application has not read yet this
    /// side accepts (docs/protocol.md §6.5.1). Announced in START (TLV 7
    /// STREAM_CREDIT) and raised in ACKs as the application reads. `None`
    /// (the default): no per-stream limit. `Some(0)` is invalid.
    pub initial_stream_credit: Option<u32>,
    /// Longest interval between two STATUS polls of a sender facing a
    /// closed (zero) window: the polls start one RTO after the window
    /// closed and back off exponentially up to this bound (seed 003
    /// §III-E; docs/protocol.md §10 "Handover window"). Must be positive
    /// and below `idle_timeout` (the polls also keep the peer's answers
    /// coming).
    pub max_status_interval: Duration,
    /// Packet protection (`crate::crypto`): `None` (the default, and the
    /// simulator's) sends unencrypted SLTP datagrams, byte-identical to
    /// the wire format without security; `Some` runs the handshake in the
    /// SECURITY TLV and seals every later datagram. Both sides must agree:
    /// a protected side rejects or closes an unprotected peer.
    pub security: Option<crate::crypto::SecurityConfig>,
    /// How finely a paced sender spaces its datagrams ([`Pacing`]):
    /// `Auto` (the default) is 1 ms bursts in the core and the simulator,
    /// one datagram at a time in the UDP runtime.
    pub pacing: Pacing,
    /// Key update and AEAD usage limits of a protected connection
    /// (docs/security.md, "Key update"): the default updates before the
    /// agreed AEAD's limit (2^22 packets per key for AES-128-GCM); ignored
    /// unprotected.
    pub key_update: crate::crypto::KeyUpdateConfig,
    /// Spare connection IDs a protected server keeps issued to its client
    /// for connection-ID rotation (docs/security.md, "Connection-ID
    /// rotation"); 0 turns rotation off. Each one holds an ID of the
    /// endpoint's 16-bit space while issued.
    pub spare_connection_ids: u8,
}

/// How a paced sender releases datagrams (`ConnectionConfig::pacing`;
/// `crates/proto/src/recovery/pacer.rs`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Pacing {
    /// Bursts of 1 ms of the rate (at least a packet), credit up to 2 ms:
    /// an ordinary millisecond timer suffices.
    Coarse,
    /// One datagram per packet time at the rate (sub-millisecond gaps);
    /// the same credit as `Coarse`, for late wake-ups.
    Fine,
    /// Left to the runtime: the core alone treats it as
    /// [`Coarse`](Self::Coarse) (the simulator's behaviour is unchanged);
    /// the UDP runtime (`peregrine`) as [`Fine`](Self::Fine).
    #[default]
    Auto,
}

/// Most spare connection IDs a server keeps issued per connection.
pub const MAX_SPARE_CONNECTION_IDS: u8 = 8;

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            cc: CcConfig::from_name("cubic").unwrap_or(CcConfig::NewReno(Default::default())),
            // The simulator's default too (scenario `startup`): both halves
            // start the same way unless told otherwise (issue 35).
            startup: StartupMode::SlowStart,
            max_packet_size: 1452,
            pmtu_discovery: PmtuDiscovery::Auto,
            max_message_size: 1 << 20,
            max_outstanding_messages: 4096,
            max_send_buffer_bytes: 16 << 20,
            max_receive_buffer_bytes: 4 << 20,
            max_reassembly_messages: 4096,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
            max_ack_delay: Duration::from_millis(25),
            ack_frequency: 2,
            request_ack_frequency: true,
            ack_policy: AckPolicy::Sltp,
            max_ack_ranges: 32,
            packet_threshold: 3,
            idle_timeout: Duration::from_secs(30),
            keep_alive_interval: Duration::from_secs(5),
            handshake_timeout: Duration::from_secs(10),
            peer_death_timeouts: 4,
            max_initial_window_bytes: 144 * 1024,
            probe_timeout: Duration::from_secs(1),
            reprobe_nack_burst: 3,
            reprobe_min_interval: Duration::from_secs(1),
            checksum: true,
            ecn: true,
            scheduler: crate::sched::SchedulerConfig::RoundRobin,
            queue_guard: None,
            receive_queue_target: Some(Duration::from_millis(1)),
            initial_stream_credit: None,
            max_status_interval: Duration::from_secs(2),
            security: None,
            pacing: Pacing::Auto,
            key_update: crate::crypto::KeyUpdateConfig::default(),
            spare_connection_ids: 2,
        }
    }
}

impl ConnectionConfig {
    /// The default configuration with controller `cc` and start-up `startup`.
    pub fn with_controller(cc: CcConfig, startup: StartupMode) -> ConnectionConfig {
        ConnectionConfig {
            cc,
            startup,
            ..ConnectionConfig::default()
        }
    }

    /// The longest this side may hold an ACK back under its ACK policy
    /// (the peer's loss timers allow for it): `max_ack_delay`, or the
    /// larger of it and TCP's `delayed_ack`.
    pub fn effective_max_ack_delay(&self) -> Duration {
        match self.ack_policy.delayed_ack() {
            Some(d) => d.max(self.max_ack_delay),
            None => self.max_ack_delay,
        }
    }

    /// Whether this side, as data sender, asks its peer for an ACK
    /// frequency (never under [`AckPolicy::Tcp`]).
    pub fn requests_ack_frequency(&self) -> bool {
        self.request_ack_frequency && self.ack_policy == AckPolicy::Sltp
    }

    /// Checks that the settings can work together.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, problem| Err(ConfigError { field, problem });
        if self.max_packet_size < MIN_PACKET_SIZE {
            return bad("max_packet_size", "is below 64 bytes");
        }
        let block = usize::from(self.max_packet_size) - DATA_OVERHEAD;
        if self.max_message_size > block * usize::from(u16::MAX) {
            return bad(
                "max_message_size",
                "needs more than 65,535 blocks of max_packet_size",
            );
        }
        if self.max_outstanding_messages == 0 {
            return bad("max_outstanding_messages", "is zero");
        }
        if self.max_send_buffer_bytes < self.max_message_size {
            return bad("max_send_buffer_bytes", "is smaller than max_message_size");
        }
        if self.max_receive_buffer_bytes
            < self.max_message_size.max(usize::from(self.max_packet_size))
        {
            return bad(
                "max_receive_buffer_bytes",
                "is smaller than max_message_size or one packet",
            );
        }
        if self.max_reassembly_messages == 0 {
            return bad("max_reassembly_messages", "is zero");
        }
        if let Err(problem) = self.key_update.validate() {
            return bad("key_update", problem);
        }
        if self.spare_connection_ids > MAX_SPARE_CONNECTION_IDS {
            return bad("spare_connection_ids", "is above 8");
        }
        if self.initial_stream_credit == Some(0) {
            return bad(
                "initial_stream_credit",
                "is zero (no stream could ever send)",
            );
        }
        if self.receive_queue_target.is_some_and(|t| t.is_zero()) {
            return bad(
                "receive_queue_target",
                "is zero (give a positive delay, or None for off)",
            );
        }
        if self.min_rto.is_zero() {
            return bad("min_rto", "is zero");
        }
        if self.max_rto < self.min_rto {
            return bad("max_rto", "is below min_rto");
        }
        if !(1..=crate::wire::AckPayload::MAX_RANGES).contains(&self.max_ack_ranges) {
            return bad("max_ack_ranges", "is not within 1..=255");
        }
        if self.ack_frequency == 0 {
            return bad("ack_frequency", "is zero");
        }
        self.ack_policy.validate()?;
        if self.packet_threshold == 0 {
            return bad("packet_threshold", "is zero");
        }
        if self.idle_timeout.is_zero() {
            return bad("idle_timeout", "is zero");
        }
        if self.keep_alive_interval.is_zero() || self.keep_alive_interval >= self.idle_timeout {
            return bad(
                "keep_alive_interval",
                "must be positive and below idle_timeout",
            );
        }
        if self.handshake_timeout.is_zero() {
            return bad("handshake_timeout", "is zero");
        }
        if self.probe_timeout.is_zero() {
            return bad("probe_timeout", "is zero");
        }
        if self.max_status_interval.is_zero() || self.max_status_interval >= self.idle_timeout {
            return bad(
                "max_status_interval",
                "must be positive and below idle_timeout",
            );
        }
        Ok(())
    }

    /// The WINDOW_SCALE this side announces: the smallest shift that fits
    /// its receive buffer into WINDOW_SIZE's 20 bits (at most 12).
    pub fn window_scale(&self) -> u8 {
        let mut scale = 0u8;
        while scale < 12 && (self.max_receive_buffer_bytes >> scale) > 0x000f_ffff {
            scale += 1;
        }
        scale
    }
}

/// Settings of an [`Endpoint`](crate::Endpoint).
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointConfig {
    /// How accepted connections are configured; `None` = this endpoint
    /// accepts no connection (every START is answered with REJECT `refused`).
    pub server: Option<ConnectionConfig>,
    /// Most connections at once (further STARTs get REJECT `busy`).
    /// Default [`MAX_CONNECTIONS`] (65,535): every connection id SLTP's
    /// 16-bit DEST_ID/SRC_ID can name on one endpoint (0 means "none").
    pub max_connections: usize,
    /// Run the controller the initiator asks for in its CONTROLLER TLV
    /// (when it is a registered name) instead of `server.cc`; an unknown
    /// name is then answered with REJECT `controller_unsupported`.
    pub adopt_peer_controller: bool,
    /// Most datagrams without a connection (REJECTs, resets) queued for
    /// sending. Default 1,024 (64 before issue 21): a runtime turn's
    /// worth of STARTs must fit — the UDP runtime reads up to 8 × 32
    /// datagrams before it sends — or under a flood the REJECT `retry`
    /// meant for a genuine client is dropped and it waits an RTO (seen in
    /// `crates/net/tests/admission_flood.rs`). Each entry is one REJECT or
    /// reset (≤ 64 bytes), so ≈ 120 KiB at most.
    pub max_stateless_queue: usize,
    /// Ceiling of the endpoint's buffer pool, bytes (seed 003 §III-F): the
    /// message data all its connections hold queued or unacknowledged.
    /// At the ceiling `send_message` fails with
    /// [`SendError::WouldBlock`](crate::connection::SendError::WouldBlock)
    /// and an [`Event::Writable`](crate::connection::Event::Writable)
    /// follows once enough is acknowledged. Default 64 MiB.
    pub memory_ceiling_bytes: usize,
    /// Hard cap on half-open connections (server side, START answered,
    /// nothing valid received since). At the cap a newly admitted START
    /// evicts the oldest half-open connection (closed silently, counted in
    /// `EndpointStats::half_open_evicted`) instead of being refused, so a
    /// flood cannot lock newer clients out. The effective cap is the
    /// smaller of this and `max_half_open_bytes` /
    /// [`HALF_OPEN_ENTRY_BYTES`].
    /// Default 16,384 (a quarter of the connection limit).
    pub max_half_open: usize,
    /// Bytes the half-open connections may hold together, counted as
    /// [`HALF_OPEN_ENTRY_BYTES`]
    /// each (the measured heap cost of one, rounded up: docs/security.md):
    /// bounds the cap in bytes. Default 32 MiB (4,096 entries).
    pub max_half_open_bytes: usize,
    /// Most half-open connections from one source (an IPv4 address, or an
    /// IPv6 /64) while at least `retry_when_half_open_above` connections
    /// are half-open (a flood; below that every START is admitted): a
    /// further START from it is dropped (counted in
    /// `EndpointStats::starts_source_limited`) until one of them completes
    /// or expires. Counted in a fixed table of hashed slots, so a spoofed
    /// flood cannot grow it (docs/security.md). Default 64.
    pub max_half_open_per_source: usize,
    /// STARTs per second one source may send while at least
    /// `retry_when_half_open_above` connections are half-open (a token
    /// bucket per source, in the same fixed table; only STARTs that would
    /// create state count): STARTs beyond it are dropped, unanswered
    /// (`EndpointStats::starts_rate_limited`). `0` = no rate limit.
    /// Default 50.
    pub start_rate_per_source: u32,
    /// The token bucket's depth: STARTs one source may send at once.
    /// Default 100.
    pub start_burst_per_source: u32,
    /// The shortest a half-open connection admitted with a valid retry
    /// token lives: such a connection expires after 3 round trips as the
    /// token measured them (REJECT `retry` to the START echoing it), but
    /// not before this nor after `half_open_timeout`. Default 500 ms.
    pub half_open_min_timeout: Duration,
    /// A START without a valid retry token is accepted only while fewer
    /// connections than this are half-open; otherwise it is answered with
    /// REJECT `retry` (or dropped when that REJECT would be larger than the
    /// START). `0` = always require a token. Default 2,048 (1/32 of the
    /// connection limit, the ratio of the former 32 to 1,024).
    pub retry_when_half_open_above: usize,
    /// A half-open connection that receives nothing valid for this long is
    /// dropped (counted in `EndpointStats::half_open_expired`). Default 10 s
    /// (above the default 5 s keep-alive, so a quiet client's first
    /// keep-alive validates it in time). This is the expiry of a
    /// connection accepted without a token (no flood: below
    /// `retry_when_half_open_above`); one accepted with a valid token
    /// (under a flood) expires after 3 measured round trips, see
    /// `half_open_min_timeout`.
    pub half_open_timeout: Duration,
    /// How long a retry token stays valid after it is issued. Default 10 s.
    pub retry_token_lifetime: Duration,
    /// Whether this machine accelerates AES (x86 AES-NI and PCLMULQDQ,
    /// the ARMv8 crypto extensions): a client whose AEAD preference is
    /// `Auto` then offers AES-128-GCM first, else ChaCha20-Poly1305. The
    /// sans-IO core never probes the CPU: the UDP runtime sets this from
    /// feature detection; the default `false` keeps the simulator and the
    /// tests the same on every machine.
    pub aes_hardware: bool,
}

/// The most connections one endpoint can hold: its connection ids are
/// SLTP's 16-bit DEST_ID/SRC_ID, and 0 means "no connection yet".
pub const MAX_CONNECTIONS: usize = u16::MAX as usize;

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            server: None,
            max_connections: MAX_CONNECTIONS,
            adopt_peer_controller: false,
            max_stateless_queue: 1_024,
            memory_ceiling_bytes: 64 << 20,
            max_half_open: MAX_CONNECTIONS.div_ceil(4),
            max_half_open_bytes: 32 << 20,
            max_half_open_per_source: 64,
            start_rate_per_source: 50,
            start_burst_per_source: 100,
            half_open_min_timeout: Duration::from_millis(500),
            retry_when_half_open_above: MAX_CONNECTIONS.div_ceil(32),
            half_open_timeout: Duration::from_secs(10),
            retry_token_lifetime: Duration::from_secs(10),
            aes_hardware: false,
        }
    }
}

impl ConnectionConfig {
    /// Checks `security` for a side of this role (`is_client`): the error
    /// names `security` and what is missing.
    pub fn validate_security(&self, is_client: bool) -> Result<(), ConfigError> {
        match &self.security {
            Some(s) => s.validate(is_client).map_err(|problem| ConfigError {
                field: "security",
                problem,
            }),
            None => Ok(()),
        }
    }
}

impl EndpointConfig {
    /// An endpoint that accepts connections configured as `server`.
    pub fn server(server: ConnectionConfig) -> EndpointConfig {
        EndpointConfig {
            server: Some(server),
            ..EndpointConfig::default()
        }
    }

    /// Checks that the settings can work (the server configuration too).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, problem| Err(ConfigError { field, problem });
        if self.max_connections == 0 {
            return bad("max_connections", "is zero");
        }
        if self.memory_ceiling_bytes == 0 {
            return bad("memory_ceiling_bytes", "is zero (no message could be sent)");
        }
        if self.max_half_open == 0 {
            return bad("max_half_open", "is zero (no connection could be accepted)");
        }
        if self.half_open_timeout.is_zero() {
            return bad("half_open_timeout", "is zero");
        }
        if self.max_half_open_bytes < HALF_OPEN_ENTRY_BYTES {
            return bad(
                "max_half_open_bytes",
                "is below one half-open entry (HALF_OPEN_ENTRY_BYTES)",
            );
        }
        if self.max_half_open_per_source == 0 {
            return bad(
                "max_half_open_per_source",
                "is zero (no connection could be accepted)",
            );
        }
        if self.start_rate_per_source > 0 && self.start_burst_per_source == 0 {
            return bad(
                "start_burst_per_source",
                "is zero with a rate limit (no START could pass)",
            );
        }
        if self.half_open_min_timeout.is_zero()
            || self.half_open_min_timeout > self.half_open_timeout
        {
            return bad(
                "half_open_min_timeout",
                "must be positive and at most half_open_timeout",
            );
        }
        if self.retry_token_lifetime.is_zero() {
            return bad("retry_token_lifetime", "is zero (no token could be used)");
        }
        match &self.server {
            Some(s) => s.validate().and_then(|()| s.validate_security(false)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_values_name_the_field() {
        assert_eq!(ConnectionConfig::default().validate(), Ok(()));
        let c = ConnectionConfig {
            keep_alive_interval: Duration::from_secs(60),
            ..ConnectionConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "keep_alive_interval");
        let c = ConnectionConfig {
            max_packet_size: 40,
            ..ConnectionConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "max_packet_size");
        let c = ConnectionConfig {
            max_status_interval: Duration::ZERO,
            ..ConnectionConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "max_status_interval");
        let c = ConnectionConfig {
            max_status_interval: Duration::from_secs(30),
            ..ConnectionConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "max_status_interval");
    }

    #[test]
    fn pool_endpoint_config_validates_the_ceiling() {
        assert_eq!(EndpointConfig::default().validate(), Ok(()));
        assert_eq!(EndpointConfig::default().memory_ceiling_bytes, 64 << 20);
        let c = EndpointConfig {
            memory_ceiling_bytes: 0,
            ..EndpointConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "memory_ceiling_bytes");
        let c = EndpointConfig::server(ConnectionConfig {
            max_status_interval: Duration::ZERO,
            ..ConnectionConfig::default()
        });
        assert_eq!(c.validate().unwrap_err().field, "max_status_interval");
    }

    #[test]
    fn window_scale_fits_the_buffer_in_20_bits() {
        let c = ConnectionConfig::default();
        // 4 MiB >> 2 = 1 MiB > 0xfffff; >> 3 fits.
        assert_eq!(c.window_scale(), 3);
        let small = ConnectionConfig {
            max_receive_buffer_bytes: 100_000,
            ..ConnectionConfig::default()
        };
        assert_eq!(small.window_scale(), 0);
    }
}
