//! ECN end to end through real connections (issue 41, item 2;
//! docs/protocol.md §6.5.3): the sender marks ECT by its controller,
//! the receiver counts codepoints and reports them in the ACK's ECN
//! section, the sender validates the counts and reacts to CE — classic
//! controllers once per round trip, Prague per mark.
//!
//! The bottleneck: the client's sending direction runs through a harness
//! pipe of 20 Mbit/s with a deep (2 MB) drop-tail queue and 10 ms each
//! way. The harness does not mark (codepoints pass through), so a
//! [`Marking`] wrapper around the client models that same queue — its
//! serialisation at the pipe's rate, FIFO — and sets CE on an
//! ECN-capable datagram that will wait longer than `threshold` in it (a
//! step AQM on the expected sojourn, as L4S's shallow queue marks).

mod support;

use peregrine_cc::CcConfig;
use peregrine_proto::harness::{Harness, PipeConfig};
use peregrine_proto::wire::{DatagramRepr, Payload};
use peregrine_proto::{ConnectionConfig, EcnCodepoint, Pacing, SansIo, Time, Transmit};
use std::net::SocketAddr;
use std::time::Duration;
use support::{addr, App, CLIENT, SERVER};

const RATE_BPS: u64 = 20_000_000;
const ONE_WAY_US: u64 = 10_000;
const MESSAGES: usize = 4_000;
const MESSAGE_BYTES: usize = 1_200;
/// The marking threshold: 2 ms, not DualPI2's 1 ms, because at 20 Mbit/s
/// one full datagram takes 0.58 ms and the ACK clock (an ACK per two
/// packets) releases bursts of 2–3 datagrams that alone cross 1 ms.
const STEP: Duration = Duration::from_millis(2);

/// The client, behind a model of its bottleneck queue that marks CE.
struct Marking {
    app: App,
    /// Mark an ECN-capable datagram that waits longer than this (`None`:
    /// never mark).
    threshold: Option<Duration>,
    /// Clear the ECN field of every datagram (a bleaching path).
    bleach: bool,
    link_free_at: Time,
    /// (send time, expected wait) of every datagram.
    waits: Vec<(Time, Duration)>,
    marked: u64,
    ect_seen: u64,
}

impl SansIo for Marking {
    fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        bytes: &mut [u8],
    ) {
        self.app.handle_datagram(now, remote, ecn, bytes);
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        let mut t = self.app.poll_transmit(now, buf)?;
        let serialisation = Duration::from_nanos(t.size as u64 * 8 * 1_000_000_000 / RATE_BPS);
        let start = self.link_free_at.max(now);
        let wait = start.saturating_duration_since(now);
        self.link_free_at = start + serialisation;
        self.waits.push((now, wait));
        if matches!(t.ecn, Some(EcnCodepoint::Ect0 | EcnCodepoint::Ect1)) {
            self.ect_seen += 1;
            if self.threshold.is_some_and(|k| wait > k) {
                t.ecn = Some(EcnCodepoint::Ce);
                self.marked += 1;
            }
        }
        if self.bleach {
            t.ecn = None;
        }
        Some(t)
    }

    fn poll_timeout(&mut self) -> Option<Time> {
        self.app.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Time) {
        self.app.handle_timeout(now);
    }
}

/// The ACKs a node sent: how many, their datagram bytes, and the bytes
/// of their ECN sections (docs/protocol.md §6.5.3).
#[derive(Debug, Default, Clone, Copy)]
struct AckTally {
    acks: u64,
    bytes: u64,
    ecn_bytes: u64,
}

impl AckTally {
    fn count(&mut self, datagram: &[u8]) {
        if let Ok(d) = DatagramRepr::decode(datagram) {
            if let Payload::Ack(a) = &d.payload {
                self.acks += 1;
                self.bytes += datagram.len() as u64;
                self.ecn_bytes += a.ecn_len() as u64;
            }
        }
    }

    /// Mean datagram bytes per ACK, and what it would be with the first
    /// version's fixed 24-byte section in the ACKs that carry one.
    fn per_ack(&self, with_section: u64) -> (f64, f64) {
        let n = self.acks.max(1) as f64;
        let now = self.bytes as f64 / n;
        let fixed = (self.bytes - self.ecn_bytes + 24 * with_section) as f64 / n;
        (now, fixed)
    }
}

/// A harness node: the marking client or the plain server, with the ACKs
/// it sent.
enum Node {
    Client(Box<Marking>, AckTally),
    Server(Box<App>, AckTally),
}

impl Node {
    fn inner(&mut self) -> (&mut dyn SansIo, &mut AckTally) {
        match self {
            Node::Client(m, t) => (m.as_mut(), t),
            Node::Server(a, t) => (a.as_mut(), t),
        }
    }
}

impl SansIo for Node {
    fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        bytes: &mut [u8],
    ) {
        self.inner().0.handle_datagram(now, remote, ecn, bytes);
    }
    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        let (node, tally) = self.inner();
        let t = node.poll_transmit(now, buf)?;
        tally.count(buf.get(..t.size).unwrap_or(buf));
        Some(t)
    }
    fn poll_timeout(&mut self) -> Option<Time> {
        self.inner().0.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Time) {
        self.inner().0.handle_timeout(now);
    }
}

/// What one transfer showed.
struct Run {
    client: Marking,
    server: App,
    done_at: Time,
    /// ACKs the client (forward direction) and the server sent.
    acks: [AckTally; 2],
}

impl Run {
    fn client_stats(&self) -> peregrine_proto::ConnectionStats {
        let c = &self.client.app;
        c.ep.stats(c.conn.expect("connected")).expect("stats")
    }

    fn server_stats(&self) -> peregrine_proto::ConnectionStats {
        self.server
            .ep
            .stats(self.server.conn.expect("accepted"))
            .expect("stats")
    }

    /// Wait percentile `p` (0–100) of the datagrams sent after `from`, ms.
    fn wait_percentile_ms(&self, from: Time, p: f64) -> f64 {
        let mut v: Vec<Duration> = (self.client.waits.iter())
            .filter(|(t, _)| *t >= from)
            .map(|(_, w)| *w)
            .collect();
        assert!(!v.is_empty());
        v.sort_unstable();
        let i = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
        v[i].as_secs_f64() * 1000.0
    }

    /// Goodput over the transfer, Mbit/s.
    fn goodput_mbps(&self) -> f64 {
        (MESSAGES * MESSAGE_BYTES) as f64 * 8.0 / self.done_at.as_secs_f64() / 1e6
    }
}

fn transfer(cc: &str, ecn: bool, threshold: Option<Duration>, bleach: bool) -> Run {
    let config = ConnectionConfig {
        cc: CcConfig::from_name(cc).expect("registered"),
        ecn,
        idle_timeout: Duration::from_secs(60),
        // One datagram per packet time: 1 ms bursts alone would cross a
        // 1 ms marking threshold (L4S senders pace finely).
        pacing: Pacing::Fine,
        ..ConnectionConfig::default()
    };
    let mut h: Harness<Node> = Harness::new(41);
    let mut client = App::client(1);
    client.outbox = (0..MESSAGES)
        .map(|i| vec![i as u8; MESSAGE_BYTES])
        .collect();
    let mut server = App::server(config.clone(), 2);
    server.keep_bytes = false;
    client.connect(Time::ZERO, addr(SERVER), config);
    let client = Marking {
        app: client,
        threshold,
        bleach,
        link_free_at: Time::ZERO,
        waits: Vec::new(),
        marked: 0,
        ect_seen: 0,
    };
    let c = h.add_node(
        addr(CLIENT),
        Node::Client(Box::new(client), AckTally::default()),
    );
    let s = h.add_node(
        addr(SERVER),
        Node::Server(Box::new(server), AckTally::default()),
    );
    let pipe = PipeConfig {
        rate_bps: RATE_BPS,
        delay_us: ONE_WAY_US,
        queue_limit_bytes: Some(2 << 20),
        ..PipeConfig::default()
    };
    h.set_pipe(c, s, pipe).unwrap();
    let back = PipeConfig {
        delay_us: ONE_WAY_US,
        ..PipeConfig::default()
    };
    h.set_pipe(s, c, back).unwrap();
    // Run until the server has every message (the connection stays open:
    // its stats are read afterwards).
    let mut done_at = None;
    for step in 1..=600u64 {
        h.run_until(Time::from_millis(step * 100)).unwrap();
        let Node::Server(server, _) = h.node(s) else {
            unreachable!()
        };
        if let Some(t) = (server.received.len() == MESSAGES)
            .then(|| server.last_received_at())
            .flatten()
        {
            done_at = Some(t);
            break;
        }
    }
    let done_at = done_at.expect("the transfer completed within 60 s");
    let blank = || Node::Server(Box::new(App::client(0)), AckTally::default());
    let (client, client_acks) = match std::mem::replace(h.node_mut(c), blank()) {
        Node::Client(m, t) => (*m, t),
        Node::Server(..) => unreachable!(),
    };
    let (server, server_acks) = match std::mem::replace(h.node_mut(s), blank()) {
        Node::Server(a, t) => (*a, t),
        Node::Client(..) => unreachable!(),
    };
    Run {
        client,
        server,
        done_at,
        acks: [client_acks, server_acks],
    }
}

/// Prague over a link that marks above 2 ms of queue: ECT(1) on the
/// wire, the peer's counts reach the sender and validate, and the queue
/// stays short with no loss at full speed.
#[test]
fn prague_keeps_a_short_queue_without_loss() {
    let run = transfer("prague", true, Some(STEP), false);
    let c = run.client_stats();
    let s = run.server_stats();
    let p50 = run.wait_percentile_ms(Time::from_millis(500), 50.0);
    let p99 = run.wait_percentile_ms(Time::from_millis(500), 99.0);
    eprintln!(
        "prague: {:.2} Mbit/s, wait p50 {p50:.2} ms p99 {p99:.2} ms, {} marked, {} lost, CE reported {}, {} CWR episodes",
        run.goodput_mbps(),
        run.client.marked,
        c.packets_lost,
        c.ecn_ce_reported,
        c.ecn_episodes
    );
    assert_eq!(c.ecn_codepoint, Some(EcnCodepoint::Ect1));
    assert_eq!(c.ecn_failure, None);
    assert!(s.ecn_ect1_received > 0 && s.ecn_ect0_received == 0);
    assert_eq!(c.packets_lost, 0);
    assert!(run.client.marked > 0);
    assert_eq!(c.ecn_ce_reported, s.ecn_ce_received);
    assert!(p99 <= 3.0, "queueing delay p99 {p99} ms");
    assert!(
        run.goodput_mbps() > 14.0,
        "goodput {} Mbit/s",
        run.goodput_mbps()
    );
}

/// CUBIC with ECN over the same marking link: ECT(0); many marks, but
/// one window reduction (CWR episode) per round trip at most, no loss.
#[test]
fn cubic_reduces_once_per_round_trip_on_ce() {
    let run = transfer("cubic", true, Some(STEP), false);
    let c = run.client_stats();
    let rtt_s = 2.0 * ONE_WAY_US as f64 / 1e6;
    let max_episodes = (run.done_at.as_secs_f64() / rtt_s).ceil() as u64;
    eprintln!(
        "cubic: {:.2} Mbit/s, {} marked, {} CE reported, {} CWR episodes (at most {max_episodes}), {} lost",
        run.goodput_mbps(),
        run.client.marked,
        c.ecn_ce_reported,
        c.ecn_episodes,
        c.packets_lost
    );
    assert_eq!(c.ecn_codepoint, Some(EcnCodepoint::Ect0));
    assert_eq!(c.packets_lost, 0);
    assert!(c.ecn_episodes >= 1);
    assert!(c.ecn_episodes <= max_episodes);
    // Several marks fall in each round trip: they are one signal.
    assert!(
        c.ecn_ce_reported > c.ecn_episodes,
        "{} marks, {} episodes",
        c.ecn_ce_reported,
        c.ecn_episodes
    );
}

/// The compact ECN section on the wire (docs/protocol.md §6.5.3), both
/// directions of a marked CUBIC bulk transfer: the receiver's ACKs carry
/// their counts in a few bytes (three varints) instead of the first
/// version's 24; the sender receives no DATA, so its ACKs carry none.
#[test]
fn the_ecn_section_takes_a_few_bytes_per_ack() {
    let run = transfer("cubic", true, Some(STEP), false);
    let [fwd, rev] = run.acks;
    let (rev_now, rev_fixed) = rev.per_ack(rev.acks);
    let (fwd_now, fwd_fixed) = fwd.per_ack(0);
    eprintln!(
        "reverse (server's ACKs): {} ACKs, {rev_now:.1} B per ACK (ECN section {:.2} B), \
         {rev_fixed:.1} B with the 24-byte section; forward (client's ACKs): {} ACKs, \
         {fwd_now:.1} B per ACK ({fwd_fixed:.1} B before)",
        rev.acks,
        rev.ecn_bytes as f64 / rev.acks.max(1) as f64,
        fwd.acks,
    );
    assert!(rev.acks > 100, "{rev:?}");
    // Every ACK after the first ECT arrival carries the section: 4,000
    // packets take ECT0 into 2 bytes, ECT1 and CE 1 or 2 each.
    let section = rev.ecn_bytes as f64 / rev.acks as f64;
    assert!(section > 3.0 && section <= 6.0, "{section} B per ACK");
    assert!(rev_fixed - rev_now >= 18.0, "{rev_now} vs {rev_fixed}");
    assert_eq!(fwd.ecn_bytes, 0);
}

/// A path that clears the ECN field: the receiver reports no counts, the
/// sender's validation fails (`not_reported`) and it stops marking; the
/// transfer is unaffected.
#[test]
fn a_bleaching_path_turns_ecn_off() {
    let run = transfer("cubic", true, None, true);
    let c = run.client_stats();
    assert_eq!(c.ecn_failure, Some("not_reported"));
    assert_eq!(c.ecn_codepoint, None);
    // Only the first flight went out ECT.
    assert!(
        run.client.ect_seen < 100,
        "{} ECT datagrams",
        run.client.ect_seen
    );
    assert_eq!(run.server_stats().ecn_ect0_received, 0);
}

/// `ecn = false`: nothing is marked; without a threshold nothing is CE.
#[test]
fn ecn_off_sends_not_ect() {
    let run = transfer("cubic", false, Some(STEP), false);
    let c = run.client_stats();
    assert_eq!(run.client.ect_seen, 0);
    assert_eq!(run.client.marked, 0);
    assert_eq!(c.ecn_codepoint, None);
    assert_eq!(c.ecn_ect_packets_sent, 0);
    assert_eq!(c.ecn_episodes, 0);
}

/// A node whose outgoing datagrams cross a path chosen by destination:
/// to `bleach_to` the ECN field is cleared (a bleaching middlebox), to
/// any other address every `mark_every`-th ECT datagram arrives CE (an
/// AQM that works).
struct PathEcn {
    app: App,
    bleach_to: Option<SocketAddr>,
    mark_every: u64,
    ect_seen: u64,
}

impl SansIo for PathEcn {
    fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        bytes: &mut [u8],
    ) {
        self.app.handle_datagram(now, remote, ecn, bytes);
    }
    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        let mut t = self.app.poll_transmit(now, buf)?;
        if self.bleach_to == Some(t.destination) {
            t.ecn = None;
        } else if matches!(t.ecn, Some(EcnCodepoint::Ect0 | EcnCodepoint::Ect1)) {
            self.ect_seen += 1;
            if self.mark_every > 0 && self.ect_seen.is_multiple_of(self.mark_every) {
                t.ecn = Some(EcnCodepoint::Ce);
            }
        }
        Some(t)
    }
    fn poll_timeout(&mut self) -> Option<Time> {
        self.app.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Time) {
        self.app.handle_timeout(now);
    }
}

/// The server's ECN state: (codepoint, failure, CE reported).
fn ecn_state(
    h: &Harness<PathEcn>,
    s: peregrine_proto::harness::NodeId,
) -> (Option<EcnCodepoint>, Option<&'static str>, u64) {
    let app = &h.node(s).app;
    let st = app.ep.stats(app.conn.expect("accepted")).expect("stats");
    (st.ecn_codepoint, st.ecn_failure, st.ecn_ce_reported)
}

/// The server sends 2,000 messages to the client; the server → client
/// path bleaches ECN towards `bleach` (the client's old or new address);
/// the client moves to a new IP address at 600 ms. Returns the server's
/// ECN state just before the move and at the end.
#[allow(clippy::type_complexity)]
fn migrate_between(
    bleach_old: bool,
) -> (
    (Option<EcnCodepoint>, Option<&'static str>, u64),
    (Option<EcnCodepoint>, Option<&'static str>, u64),
) {
    let new_addr = SocketAddr::from(([10, 0, 1, 9], 4000));
    let config = ConnectionConfig {
        ecn: true,
        idle_timeout: Duration::from_secs(60),
        ..ConnectionConfig::default()
    };
    let mut h: Harness<PathEcn> = Harness::new(43);
    h.set_default_pipe(PipeConfig {
        rate_bps: 10_000_000,
        delay_us: 10_000,
        queue_limit_bytes: Some(256 * 1024),
        ..PipeConfig::default()
    })
    .unwrap();
    let mut client = App::client(1);
    client.keep_bytes = false;
    client.connect(Time::ZERO, addr(SERVER), config.clone());
    let mut server = App::server(config, 2);
    server.outbox = (0..2_000).map(|i| vec![i as u8; MESSAGE_BYTES]).collect();
    let c = h.add_node(
        addr(CLIENT),
        PathEcn {
            app: client,
            bleach_to: None,
            mark_every: 0,
            ect_seen: 0,
        },
    );
    let s = h.add_node(
        addr(SERVER),
        PathEcn {
            app: server,
            bleach_to: Some(if bleach_old { addr(CLIENT) } else { new_addr }),
            mark_every: 20,
            ect_seen: 0,
        },
    );
    h.run_until(Time::from_millis(600)).unwrap();
    let before = ecn_state(&h, s);
    h.set_addr(c, new_addr);
    let mut t = 600;
    while h.node(c).app.received.len() < 2_000 && t < 20_000 {
        t += 100;
        h.run_until(Time::from_millis(t)).unwrap();
    }
    assert_eq!(h.node(c).app.received.len(), 2_000, "every message arrived");
    let server = &h.node(s).app;
    let st = server
        .ep
        .stats(server.conn.expect("accepted"))
        .expect("stats");
    assert_eq!(st.path.migrations, 1, "the server followed the client");
    (before, ecn_state(&h, s))
}

/// RFC 9000 §13.4.2, validation per path: ECN fails on a path that
/// bleaches ECT; after the move to a clean path it is validated afresh,
/// the packets leave ECT again, and CE marks there reach the sender.
#[test]
fn ecn_failed_on_a_bleaching_path_works_again_after_migration() {
    let (before, after) = migrate_between(true);
    eprintln!("bleaching old path: before {before:?}, after {after:?}");
    assert_eq!(before.0, None, "ECN off on the bleaching path");
    assert!(before.1.is_some(), "validation failed there");
    assert_eq!(before.2, 0);
    assert_eq!(after.0, Some(EcnCodepoint::Ect0), "ECT again");
    assert_eq!(after.1, None, "the new path validated");
    assert!(after.2 > 0, "CE on the new path is a signal again");
}

/// The reverse: validated on a clean path, ECN fails on a new path that
/// bleaches it (the old path's counts do not vouch for the new one).
#[test]
fn ecn_validated_on_a_clean_path_fails_after_migration_to_a_bleaching_one() {
    let (before, after) = migrate_between(false);
    eprintln!("bleaching new path: before {before:?}, after {after:?}");
    assert_eq!(before.0, Some(EcnCodepoint::Ect0));
    assert_eq!(before.1, None);
    assert!(before.2 > 0, "marks on the clean path were reported");
    assert_eq!(after.0, None, "ECN off on the bleaching path");
    assert!(after.1.is_some(), "validation failed there");
}
