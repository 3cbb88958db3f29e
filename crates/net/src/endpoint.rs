//! # The async endpoint: a UDP socket, many connections
//!
//! [`EndpointBuilder::bind`] opens the socket and starts the driver on a
//! thread of its own (see the `driver` module: a current-thread runtime
//! per endpoint, off the application's pool); [`Endpoint::connect`] opens connections,
//! [`Endpoint::accept`] hands out the ones peers opened (an endpoint built
//! with [`EndpointBuilder::server`] accepts). All connections share the
//! socket; the core demultiplexes them by connection id.
//!
//! Security is on by default ([`EndpointBuilder::security`],
//! [`EndpointBuilder::insecure`]): with nothing configured a server makes
//! a fresh static keypair from OS entropy at bind and accepts `Noise_IK`
//! and `Noise_XX`; a client runs `Noise_XX` with a fresh keypair —
//! encrypted, but the server is not authenticated (opportunistic) unless
//! the application pins its key (`NoiseConfig::ik`). Packets are sealed
//! with AES-128-GCM when both ends accelerate AES ([`aes_hardware`], the
//! client's preference wins), ChaCha20-Poly1305 otherwise
//! ([`EndpointBuilder::aead`]).

use crate::driver::{self, ConnState, Shared, State};
use crate::group::{Group, GroupEntry};
use crate::socket::{SocketCapabilities, UdpIo};
use crate::{Connection, Error};
use peregrine_proto::crypto::{
    AeadPreference, NoiseConfig, PublicKey, SecurityConfig, StaticKeypair,
};
use peregrine_proto::endpoint::EndpointStats;
use peregrine_proto::multicast::{GroupConfig, JoinPolicy};
use peregrine_proto::{ConnectionConfig, Endpoint as ProtoEndpoint, EndpointConfig};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::Notify;

/// How the connections of an endpoint are protected.
#[derive(Clone, Debug, Default)]
enum SecurityMode {
    /// Encrypted with fresh keys (see the module docs).
    #[default]
    Default,
    /// This configuration, for every connection that has none of its own.
    Configured(SecurityConfig),
    /// Unencrypted (SLTP's plain wire format).
    Insecure,
}

/// How to build an [`Endpoint`].
#[derive(Clone, Debug, Default)]
pub struct EndpointBuilder {
    config: EndpointConfig,
    seed: Option<u64>,
    security: SecurityMode,
    keypair: Option<StaticKeypair>,
    aead: Option<AeadPreference>,
    aes_hardware: Option<bool>,
    /// Refuse JOINs for groups this endpoint does not host.
    refuse_unknown_groups: bool,
    /// Trace factory and packet capture (observe.rs).
    pub(crate) observe: crate::observe::Observe,
    /// Hint sources for every connection (`hints`), started at bind.
    hints: HintSlots,
}

/// The builder's hint sources: taken (once) by `bind`. A builder is
/// `Clone`; its clones share the sources, and the first to bind gets them.
#[derive(Clone, Default)]
struct HintSlots(Vec<HintSlot>);

/// One source, until `bind` takes it.
type HintSlot = Arc<Mutex<Option<Box<dyn crate::hints::HintSource>>>>;

impl std::fmt::Debug for HintSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} hint source(s)", self.0.len())
    }
}

/// Whether this CPU accelerates AES-128-GCM: AES-NI and PCLMULQDQ on x86,
/// the AES and PMULL instructions on 64-bit ARM; `false` elsewhere. The
/// runtime hands it to the sans-IO core (`EndpointConfig::aes_hardware`),
/// which never probes the CPU itself; with it an `Auto` client offers
/// AES-128-GCM first. O(1) after the first call (std caches the probe).
pub fn aes_hardware() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes")
            && std::arch::is_aarch64_feature_detected!("pmull")
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

impl EndpointBuilder {
    /// A client-only endpoint (STARTs from peers are rejected).
    pub fn new() -> EndpointBuilder {
        EndpointBuilder::default()
    }

    /// Accept connections, configured as `server`.
    pub fn server(mut self, server: ConnectionConfig) -> EndpointBuilder {
        self.config.server = Some(server);
        self
    }

    /// Replace the whole core configuration (limits, controller adoption).
    pub fn config(mut self, config: EndpointConfig) -> EndpointBuilder {
        self.config = config;
        self
    }

    /// As a group source, refuse a peer's JOIN for a group this endpoint
    /// does not host (no live [`Group`] from [`Endpoint::group`] /
    /// [`Endpoint::group_with`]): the peer gets
    /// [`ConnectionEvent::GroupRejected`](crate::ConnectionEvent::GroupRejected)
    /// and never becomes a member. Off by default: every JOIN is accepted,
    /// and a member that joined before the group was created is added
    /// when it is. A JOIN that arrives before `group` is refused.
    pub fn refuse_unknown_groups(mut self, refuse: bool) -> EndpointBuilder {
        self.refuse_unknown_groups = refuse;
        self
    }

    /// Ceiling of the endpoint's buffer pool, bytes: the message data all
    /// its connections hold queued or unacknowledged (seed 003 §III-F).
    /// At the ceiling `Connection::send` waits (and `try_send` fails with
    /// `SendError::WouldBlock`) until acknowledgements free room. Default
    /// 64 MiB; 0 is refused by [`bind`](Self::bind).
    pub fn memory_ceiling(mut self, bytes: usize) -> EndpointBuilder {
        self.config.memory_ceiling_bytes = bytes;
        self
    }

    /// Seed of the core's random choices (connection ids, SYNC_NO); by
    /// default 8 bytes of OS entropy. The Noise handshakes' ephemeral keys
    /// are always seeded with 32 fresh bytes of OS entropy, whatever this.
    pub fn seed(mut self, seed: u64) -> EndpointBuilder {
        self.seed = Some(seed);
        self
    }

    /// Protect every connection of this endpoint whose own
    /// `ConnectionConfig::security` is `None` with `security`: the ones it
    /// accepts (server role: checked at [`bind`](Self::bind)) and the ones
    /// it opens (client role: checked at [`Endpoint::connect`]). A
    /// configuration that cannot run in a role is an [`Error::Security`].
    pub fn security(mut self, security: SecurityConfig) -> EndpointBuilder {
        self.security = SecurityMode::Configured(security);
        self
    }

    /// No encryption: connections without their own
    /// `ConnectionConfig::security` use SLTP's plain wire format (the seed
    /// reproductions; a peer that requires encryption rejects them).
    pub fn insecure(mut self) -> EndpointBuilder {
        self.security = SecurityMode::Insecure;
        self
    }

    /// Which packet AEADs the endpoint's security offers (client) and
    /// accepts (server): `Auto` (the default) both, AES-128-GCM first when
    /// [`aes_hardware`]; or only one. Applies to the default security and
    /// to [`security`](Self::security)'s configuration.
    pub fn aead(mut self, aead: AeadPreference) -> EndpointBuilder {
        self.aead = Some(aead);
        self
    }

    /// Override the CPU probe [`aes_hardware`] (tests; a machine whose
    /// AES is slow although present).
    pub fn aes_hardware(mut self, accelerated: bool) -> EndpointBuilder {
        self.aes_hardware = Some(accelerated);
        self
    }

    /// The endpoint's static keypair for the default security (server:
    /// accepts `Noise_IK` and `Noise_XX` with it; client: `Noise_XX`);
    /// by default a fresh one from OS entropy. Ignored with
    /// [`security`](Self::security) or [`insecure`](Self::insecure).
    pub fn keypair(mut self, keypair: StaticKeypair) -> EndpointBuilder {
        self.keypair = Some(keypair);
        self
    }

    /// Feed every connection of the endpoint (those open now and later)
    /// with the hints of `source` (`crate::hints::open("unix:PATH")`, or
    /// any [`HintSource`](crate::hints::HintSource)): [`bind`](Self::bind)
    /// starts a pump thread that hands each hint to the controllers when
    /// the event it announces begins (see [`crate::hints`]); its counters
    /// are [`Endpoint::hint_stats`]. May be called more than once.
    pub fn hints(mut self, source: Box<dyn crate::hints::HintSource>) -> EndpointBuilder {
        self.hints.0.push(Arc::new(Mutex::new(Some(source))));
        self
    }

    /// Bind `addr` and start the driver on a dedicated thread
    /// ("peregrine-ep", with its own current-thread tokio runtime; it
    /// ends once the endpoint, every connection and the graceful closes
    /// are done). Needs no runtime of the caller's: the async API works
    /// from any executor. The configuration is checked first ([`EndpointConfig::validate`]):
    /// a setting that cannot work is an [`Error::Config`] naming the field,
    /// a security configuration that cannot serve an [`Error::Security`].
    pub fn bind(mut self, addr: SocketAddr) -> Result<Endpoint, Error> {
        if let Some(server) = self.config.server.as_mut() {
            // Path MTU discovery's bound: the largest interface MTU (each
            // client's own bound is its route's, and the smaller wins).
            crate::pmtu::resolve(server, crate::pmtu::max_datagram_local(addr));
            crate::pacing::resolve(server);
        }
        self.config.validate().map_err(Error::Config)?;
        self.config.aes_hardware = self.aes_hardware.unwrap_or_else(aes_hardware);
        let (client_security, public_key) = self.resolve_security()?;
        // The driver's runtime: built here so that the socket registers
        // with its reactor and a bind error is returned to the caller.
        let runtime = DriverRuntime(Some(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
        ));
        let io = {
            let _in_driver_runtime = runtime.enter();
            UdpIo::bind(addr)?
        };
        let local = io.local_addr()?;
        let capture = self.observe.open_capture(local)?;
        let keylog = self.observe.open_keylog()?;
        let capabilities = io.capabilities();
        let seed = match self.seed {
            Some(s) => s,
            None => crate::keys::random_seed()?,
        };
        let server_inbox_limit = self
            .config
            .server
            .as_ref()
            .map_or(4 << 20, |s| s.max_receive_buffer_bytes);
        let mut proto = ProtoEndpoint::new(self.config, seed);
        // Ephemeral handshake keys get 256 bits of OS entropy, whatever the
        // (64-bit, possibly fixed) seed of ids and SYNC_NOs.
        proto.seed_handshakes(crate::keys::os_random::<32>()?);
        if let Some(factory) = self.observe.take_trace() {
            proto.set_trace_factory(factory);
        }
        proto.set_key_log(keylog.is_some());
        if self.refuse_unknown_groups {
            // No group hosted yet: every JOIN is refused until `group`.
            proto.set_join_policy(JoinPolicy::Only(Default::default()));
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                proto,
                conns: BTreeMap::new(),
                incoming: VecDeque::new(),
                send_waiters: Default::default(),
                tracking: Default::default(),
                server_inbox_limit,
                users: 1,
                stopped: None,
                datagrams_in: 0,
                priority_rx_at: None,
                datagrams_out: 0,
                groups: BTreeMap::new(),
                refuse_unknown_groups: self.refuse_unknown_groups,
                capture,
                keylog,
            }),
            driver_signal: Notify::new(),
            incoming: Notify::new(),
            callbacks: Mutex::new(BTreeMap::new()),
            epoch: tokio::time::Instant::now(),
            rebind: Mutex::new(None),
            runtime: runtime.handle().clone(),
            driver_thread: OnceLock::new(),
            poked: AtomicBool::new(false),
            napping: AtomicBool::new(false),
        });
        driver::spawn(shared.clone(), io, runtime.into_inner())?;
        let mut hint_feeds = Vec::new();
        for slot in &self.hints.0 {
            let taken = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(source) = taken {
                hint_feeds.push(crate::hints::start(
                    source,
                    crate::hints::Target::Endpoint(Arc::downgrade(&shared)),
                )?);
            }
        }
        Ok(Endpoint {
            hint_feeds,
            shared,
            local: Mutex::new(local),
            capabilities,
            client_security,
            public_key,
        })
    }

    /// Fills in the server configuration's security and returns the
    /// client role's default and the endpoint's static public key.
    fn resolve_security(&mut self) -> Result<(Option<SecurityConfig>, Option<PublicKey>), Error> {
        let keypair = match (&self.security, self.keypair.take()) {
            (SecurityMode::Default, None) => Some(crate::keys::generate_keypair()?),
            (SecurityMode::Default, kp) => kp,
            _ => None,
        };
        let (server_default, client) = match &self.security {
            SecurityMode::Default => {
                // Set just above for this mode.
                let kp = keypair.clone().ok_or(Error::Security("has no keypair"))?;
                (
                    Some(SecurityConfig::Noise(NoiseConfig::server(kp.clone()))),
                    Some(SecurityConfig::Noise(NoiseConfig::xx(kp))),
                )
            }
            SecurityMode::Configured(c) => (Some(c.clone()), Some(c.clone())),
            SecurityMode::Insecure => (None, None),
        };
        let (server_default, client) = match self.aead {
            Some(a) => (
                server_default.map(|s| s.with_aead(a)),
                client.map(|c| c.with_aead(a)),
            ),
            None => (server_default, client),
        };
        let mut public_key = keypair.as_ref().map(StaticKeypair::public);
        if let Some(server) = self.config.server.as_mut() {
            if server.security.is_none() {
                server.security = server_default;
            }
            if let Some(sec) = &server.security {
                sec.validate(false).map_err(Error::Security)?;
                if let Some(kp) = &sec.noise().keypair {
                    public_key = Some(kp.public());
                }
            }
        }
        if let (None, Some(SecurityConfig::Noise(n))) = (&public_key, &client) {
            public_key = n.keypair.as_ref().map(StaticKeypair::public);
        }
        Ok((client, public_key))
    }
}

/// Counters of the endpoint: the core's (malformed and unknown datagrams,
/// accepts, rejects, and the buffer pool: `core.pool_bytes_in_use`,
/// `pool_peak_bytes`, `pool_ceiling_bytes`, `pool_would_block`) and the
/// socket layer's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// The core's counters.
    pub core: EndpointStats,
    /// Datagrams read from the socket (GRO batches counted per datagram).
    pub datagrams_received: u64,
    /// Datagrams written to the socket (GSO batches counted per datagram).
    pub datagrams_sent: u64,
    /// Connections the core holds now.
    pub connections: usize,
}

/// A UDP socket carrying Peregrine connections.
///
/// Dropping the endpoint (and every [`Connection`] of it) closes the
/// remaining connections gracefully and stops the driver.
pub struct Endpoint {
    shared: Arc<Shared>,
    local: Mutex<SocketAddr>,
    capabilities: SocketCapabilities,
    /// Security of outgoing connections that bring none of their own.
    client_security: Option<SecurityConfig>,
    /// This endpoint's static public key, if it has one.
    public_key: Option<PublicKey>,
    /// The pumps of `EndpointBuilder::hints`.
    hint_feeds: Vec<crate::hints::HintFeed>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("local", &self.local)
            .finish()
    }
}

impl Endpoint {
    /// A client endpoint on `addr` (use port 0 for any).
    pub fn client(addr: SocketAddr) -> Result<Endpoint, Error> {
        EndpointBuilder::new().bind(addr)
    }

    /// A server endpoint on `addr`, accepting connections configured as `config`.
    pub fn server(addr: SocketAddr, config: ConnectionConfig) -> Result<Endpoint, Error> {
        EndpointBuilder::new().server(config).bind(addr)
    }

    /// The state shared with the driver (for the blocking facade).
    pub(crate) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        *self.local.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Move every connection of this endpoint to a new socket bound to
    /// `addr` (a real rebinding: new port, or a new interface after a
    /// handover); returns the new address. The driver switches at its
    /// next turn and closes the old socket. The peers follow through the
    /// core's address migration: a peer sees authentic packets from the
    /// new address, validates it (PATH_CHALLENGE / PATH_RESPONSE) and moves
    /// the connection there (`Event::PathMigrated`, counted in
    /// `ConnectionStats::path`); tested mid-transfer in
    /// `tests/migration.rs`.
    pub fn rebind(&self, addr: SocketAddr) -> Result<SocketAddr, Error> {
        let io = {
            // Registered with the driver thread's reactor, which reads it.
            let _in_driver_runtime = self.shared.runtime.enter();
            UdpIo::bind(addr)?
        };
        let local = io.local_addr()?;
        *self.shared.rebind.lock().unwrap_or_else(|p| p.into_inner()) = Some(io);
        *self.local.lock().unwrap_or_else(|p| p.into_inner()) = local;
        self.shared.wake();
        Ok(local)
    }

    /// This endpoint's static public key (what a client pins with
    /// `--peer-key` / `NoiseConfig::ik`): the server configuration's
    /// keypair, or the default keypair; `None` without one (insecure, or
    /// a pre-shared key only).
    pub fn public_key(&self) -> Option<PublicKey> {
        self.public_key
    }

    /// The security configuration a [`connect`](Self::connect) without its
    /// own uses (`None`: unencrypted).
    pub fn client_security(&self) -> Option<&SecurityConfig> {
        self.client_security.as_ref()
    }

    /// The offloads the socket layer uses.
    pub fn capabilities(&self) -> SocketCapabilities {
        self.capabilities
    }

    /// Open a connection to `remote` and wait for its handshake. A
    /// `config` without `security` gets the endpoint's (encrypted unless
    /// the builder said [`insecure`](EndpointBuilder::insecure)).
    pub async fn connect(
        &self,
        remote: SocketAddr,
        mut config: ConnectionConfig,
    ) -> Result<Connection, Error> {
        if config.security.is_none() {
            config.security = self.client_security.clone();
        }
        // Path MTU discovery's bound: the MTU of the route to the peer.
        crate::pmtu::resolve(&mut config, crate::pmtu::max_datagram_to(remote));
        crate::pacing::resolve(&mut config);
        if let Some(sec) = &config.security {
            sec.validate(true).map_err(Error::Security)?;
        }
        let inbox_limit = config.max_receive_buffer_bytes;
        let handle = {
            let mut st = self.shared.lock();
            if let Some(why) = &st.stopped {
                return Err(Error::EndpointStopped(why.clone()));
            }
            let now = self.shared.now();
            let h = st.proto.connect(now, remote, config)?;
            st.conns.insert(h, ConnState::new(inbox_limit));
            st.users += 1;
            h
        };
        self.shared.wake();
        let conn = Connection::new(self.shared.clone(), handle);
        conn.established().await?;
        Ok(conn)
    }

    /// The next connection a peer opened, once its handshake completed;
    /// `None` once the driver stopped.
    pub async fn accept(&self) -> Option<Connection> {
        loop {
            let notified = self.shared.incoming.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.shared.lock();
                if let Some(h) = st.incoming.pop_front() {
                    // `users` was counted when the connection was queued.
                    return Some(Connection::adopt(self.shared.clone(), h));
                }
                if st.stopped.is_some() {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Become the source of multicast group `id`: its messages go on
    /// [`DEFAULT_GROUP_STREAM`](crate::DEFAULT_GROUP_STREAM) with the
    /// core's default limits (`GroupConfig`: a 256-message group queue, 64
    /// messages in flight per member, eviction after 5 s without
    /// progress). See [`group_with`](Self::group_with).
    pub fn group(&self, id: u32) -> Result<Group, Error> {
        self.group_with(GroupConfig {
            group: id,
            stream: crate::DEFAULT_GROUP_STREAM,
            ..GroupConfig::default()
        })
    }

    /// Become the source of the group `config.group`, configured as
    /// `config`. Any connection of this endpoint whose peer joins the
    /// group (`Connection::join_group` on its side) becomes a member —
    /// also one that joined before this call. Fails with
    /// [`GroupError::Exists`](crate::GroupError::Exists) if the endpoint
    /// already has the group. With
    /// [`EndpointBuilder::refuse_unknown_groups`] JOINs for `config.group`
    /// are accepted from now on, until the [`Group`] is dropped.
    /// O(connections) (the early joiners are looked up).
    pub fn group_with(&self, config: GroupConfig) -> Result<Group, Error> {
        let id = config.group;
        let changed = {
            let mut st = self.shared.lock();
            if st.groups.contains_key(&id) {
                return Err(Error::Group(crate::GroupError::Exists { group: id }));
            }
            let now = self.shared.now();
            let mut entry = GroupEntry::new(config);
            for h in st.proto.handles() {
                if st.proto.peer_in_group(h, id) {
                    entry.sender.join(now, h);
                }
            }
            entry.collect_events();
            let changed = entry.changed.clone();
            st.groups.insert(id, entry);
            crate::group::update_join_policy(&mut st);
            changed
        };
        self.shared.wake();
        Ok(Group::new(self.shared.clone(), id, changed))
    }

    /// Endpoint-wide counters.
    pub fn stats(&self) -> Stats {
        let st = self.shared.lock();
        Stats {
            core: st.proto.endpoint_stats().clone(),
            datagrams_received: st.datagrams_in,
            datagrams_sent: st.datagrams_out,
            connections: st.proto.connection_count(),
        }
    }

    /// The counters of each hint source given to
    /// [`EndpointBuilder::hints`], in order. O(sources).
    pub fn hint_stats(&self) -> Vec<crate::hints::HintStats> {
        self.hint_feeds.iter().map(|f| f.stats()).collect()
    }

    /// Stop accepting (new STARTs are rejected); connections go on.
    pub fn stop_accepting(&self) {
        self.shared.lock().proto.stop_accepting();
    }

    /// Why the driver stopped, if it did.
    pub fn stopped(&self) -> Option<String> {
        self.shared.lock().stopped.clone()
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.users = st.users.saturating_sub(1);
        // Connections accepted but never handed out count as users too.
        let now = self.shared.now();
        while let Some(h) = st.incoming.pop_front() {
            st.proto.close(h, now);
            if let Some(c) = st.conns.get_mut(&h) {
                c.released = true;
            }
            st.users = st.users.saturating_sub(1);
        }
        drop(st);
        self.shared.wake();
    }
}

/// The driver's runtime until the driver thread owns it. A `bind` that
/// fails after building it (the address is taken, a capture file cannot be
/// opened, …) may run inside the caller's async code, where dropping a
/// runtime the ordinary way panics ("Cannot drop a runtime in a context
/// where blocking is not allowed"); this shuts it down without blocking
/// instead, so the caller gets its error.
struct DriverRuntime(Option<tokio::runtime::Runtime>);

impl DriverRuntime {
    /// The runtime, for the driver thread.
    fn into_inner(mut self) -> tokio::runtime::Runtime {
        self.0.take().expect("taken only once, here")
    }
}

impl std::ops::Deref for DriverRuntime {
    type Target = tokio::runtime::Runtime;
    fn deref(&self) -> &tokio::runtime::Runtime {
        self.0.as_ref().expect("present until into_inner")
    }
}

impl Drop for DriverRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}
