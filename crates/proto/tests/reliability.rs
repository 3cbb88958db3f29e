//! Reliability invariants of the connection, as property tests over the
//! impairment harness (issue 5, "Tests").
//!
//! Two real endpoints (an [`App`] around each) talk through seeded pipes;
//! proptest draws the paths, the controllers, the start-up mode and the
//! messages, 1,000 cases per property:
//!
//! * **a** — a path that loses at most ~30 % (Bernoulli plus
//!   Gilbert-Elliott), reorders, duplicates, jitters and has outages
//!   shorter than the idle timeout: every message arrives exactly once,
//!   intact, in order, and the close delivers everything (Closed without
//!   undelivered messages on both sides, PeerClosed after the last
//!   message). The premise — the path delivers a packet in every
//!   idle-timeout period — depends on what the endpoints offer it, so it
//!   is read off each run: a side that ended on a timeout must show a
//!   real silence in the delivery log (else the case fails: a spurious
//!   timeout), and such a case need only lose nothing silently; at most
//!   2 % of the cases may end so (a handful do: a loss streak on the
//!   once-a-second START, a close whose last answers die in an outage);
//! * **b** — a permanent outage from a random instant: the connection ends
//!   with `Closed`, and its `undelivered` list is exactly the messages the
//!   peer's application never got (`b_forward`: only the data direction
//!   dies, so every acknowledgement that was sent arrives and equality is
//!   decidable) or contains them all (`b_both`: both directions die, so an
//!   acknowledgement may be lost with the link — no protocol can then know,
//!   but nothing may be lost silently). Never a hang (the run must go idle)
//!   and never a spinning timer (the harness's `TimerSpin`/`Stalled`
//!   errors fail the case);
//! * **c** — single-bit flips and bursts of up to 15 bits with ST_CKS on:
//!   no corrupted datagram becomes a message, a security violation or a
//!   reset, and the transfer still completes.
//!
//! A failure prints the minimal failing case, which holds the harness seed
//! (the harness's own errors name it too): the run replays bit for bit.
//! With `RELIABILITY_TRACE=1` the failing case is replayed and every
//! delivered datagram (decoded) and event is printed.
//! `PROPTEST_RNG_SEED=<n>` replays proptest's choice of cases.
//!
//! ## Timing
//!
//! The idle timeout is 4 s (keep-alive every 250 ms) so that a case covers
//! outages, idle timeouts and closes in a few virtual seconds. The RTO
//! ceiling is 1 s to match: with the default 60 s, START's exponential
//! backoff alone leaves the path silent for longer than the idle timeout,
//! and "the path delivers a packet in every idle-timeout period" could not
//! hold however good the path.

mod support;

use peregrine_cc::{CcConfig, NAMES};
use peregrine_proto::connection::ViolationKind;
use peregrine_proto::harness::{
    Corruption, CorruptionPattern, GilbertElliott, Harness, HarnessError, Jitter, LogEntry, NodeId,
    Outage, PipeConfig, Reorder, RunOutcome,
};
use peregrine_proto::wire::{DatagramRepr, Flags, PacketType, StartupMode};
use peregrine_proto::{CloseReason, ConnectionConfig, Event, MessageId, Time};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use std::collections::BTreeSet;
use std::time::Duration;
use support::{addr, App, CLIENT, SERVER};

const IDLE_TIMEOUT: Duration = Duration::from_secs(4);
const KEEP_ALIVE: Duration = Duration::from_millis(250);
const MAX_RTO: Duration = Duration::from_secs(1);
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// A run still busy at this virtual time is a hang.
const RUN_LIMIT_S: u64 = 600;
/// Longest outage in property a: well inside the idle timeout, so that
/// keep-alives (every 250 ms) get through before it expires.
const MAX_SHORT_OUTAGE_US: u64 = 2_000_000;

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: 1000,
        failure_persistence: None,
        ..Config::default()
    })
}

/// One drawn scenario. `Debug` is what proptest prints on failure.
#[derive(Clone, Debug)]
struct Case {
    /// Harness seed (pipes) and endpoint seeds (ids, SYNC_NO).
    seed: u64,
    client_cc: &'static str,
    server_cc: &'static str,
    startup: StartupMode,
    /// Client to server.
    forward: PipeConfig,
    /// Server to client.
    backward: PipeConfig,
    /// Sizes of the client's messages (contents derive from the seed).
    client_sizes: Vec<usize>,
    /// Sizes of the server's messages.
    server_sizes: Vec<usize>,
    /// The client closes once everything is handed to the endpoint.
    close: bool,
}

fn connection_config(cc: &str, startup: StartupMode) -> ConnectionConfig {
    ConnectionConfig {
        cc: CcConfig::from_name(cc).expect("registered controller"),
        startup,
        idle_timeout: IDLE_TIMEOUT,
        keep_alive_interval: KEEP_ALIVE,
        max_rto: MAX_RTO,
        handshake_timeout: HANDSHAKE_TIMEOUT,
        checksum: true,
        ..ConnectionConfig::default()
    }
}

/// A message's bytes: pseudo-random from (seed, direction, index), so a
/// swapped, truncated or corrupted message never compares equal.
fn content(seed: u64, dir: u64, i: usize, len: usize) -> Vec<u8> {
    let mut x = seed ^ (dir << 56) ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 56) as u8
        })
        .collect()
}

/// What happened in one run.
struct Run {
    client: App,
    server: App,
    /// Every datagram delivered, as delivered.
    log: Vec<LogEntry>,
    client_node: NodeId,
    server_node: NodeId,
    corrupted: u64,
}

fn harness_failure(e: HarnessError) -> TestCaseError {
    // TimerSpin / Stalled: a timer spinning without progress, or a livelock.
    TestCaseError::fail(format!("harness: {e}"))
}

fn run(case: &Case) -> Result<Run, TestCaseError> {
    let (h, c, s) = setup(case, true).map_err(harness_failure)?;
    finish(h, c, s)
}

/// The harness with both applications, pipes configured, the client's
/// START queued.
fn setup(case: &Case, record: bool) -> Result<(Harness<App>, NodeId, NodeId), HarnessError> {
    let mut h: Harness<App> = Harness::new(case.seed);
    h.record_deliveries(record);
    let mut client = App::client(case.seed.wrapping_add(1));
    let mut server = App::server(
        connection_config(case.server_cc, case.startup),
        case.seed.wrapping_add(2),
    );
    client.outbox = (case.client_sizes.iter().enumerate())
        .map(|(i, &n)| content(case.seed, 0, i, n))
        .collect();
    server.outbox = (case.server_sizes.iter().enumerate())
        .map(|(i, &n)| content(case.seed, 1, i, n))
        .collect();
    client.close_when_sent = case.close;
    let c = h.add_node(addr(CLIENT), client);
    let s = h.add_node(addr(SERVER), server);
    h.set_pipe(c, s, case.forward.clone())?;
    h.set_pipe(s, c, case.backward.clone())?;
    h.node_mut(c).connect(
        Time::ZERO,
        addr(SERVER),
        connection_config(case.client_cc, case.startup),
    );
    Ok((h, c, s))
}

fn finish(mut h: Harness<App>, c: NodeId, s: NodeId) -> Result<Run, TestCaseError> {
    let limit = Time::from_secs_f64(RUN_LIMIT_S as f64);
    let outcome = h.run_until_idle(limit).map_err(harness_failure)?;
    prop_assert_eq!(
        outcome,
        RunOutcome::Idle,
        "hang: still busy at {:?} (client {:?}, server {:?})",
        h.now(),
        h.node(c).ep.handles(),
        h.node(s).ep.handles()
    );
    let corrupted = [(c, s), (s, c)]
        .iter()
        .filter_map(|&(a, b)| h.pipe(a, b))
        .map(|p| p.stats().corrupted)
        .sum();
    let log = h.delivery_log().to_vec();
    // The harness owns its nodes: take them back.
    let client = std::mem::replace(h.node_mut(c), App::client(0));
    let server = std::mem::replace(h.node_mut(s), App::client(0));
    for app in [&client, &server] {
        prop_assert!(
            app.send_errors.is_empty(),
            "send_message failed: {:?}",
            app.send_errors
        );
    }
    Ok(Run {
        client,
        server,
        log,
        client_node: c,
        server_node: s,
        corrupted,
    })
}

/// The receiver got exactly `sender.sent[..k]`, in order, intact; returns `k`.
fn received_prefix(from: &App, to: &App, who: &str) -> Result<usize, TestCaseError> {
    let got = &to.received;
    prop_assert!(
        got.len() <= from.sent.len(),
        "{who}: {} messages received but only {} sent",
        got.len(),
        from.sent.len()
    );
    for (i, ((_, id, bytes), (sent_id, sent_bytes))) in got.iter().zip(&from.sent).enumerate() {
        prop_assert_eq!(
            id,
            sent_id,
            "{}: message #{} of the stream arrived out of order or twice",
            who,
            i
        );
        prop_assert!(
            bytes == sent_bytes,
            "{who}: message {id:?} arrived damaged ({} bytes, sent {})",
            bytes.len(),
            sent_bytes.len()
        );
    }
    Ok(got.len())
}

/// An application's events, short (message ids, not bytes).
fn summary(app: &App) -> Vec<String> {
    app.events
        .iter()
        .map(|(t, e)| match e {
            Event::MessageReceived { id, bytes, .. } => format!(
                "{:.6} message {} ({} bytes)",
                t.as_secs_f64(),
                id.number,
                bytes.len()
            ),
            e => format!("{:.6} {e:?}", t.as_secs_f64()),
        })
        .collect()
}

/// No corrupted packet passed for a real one (SecurityViolation), and no
/// reset unless the peer had already closed (a closed endpoint answers
/// with a stateless reset). One violation is legitimate: when the peer's
/// endpoint accepted the START a second time (its first connection had
/// timed out while the initiator still tried), a late packet of the dead
/// association carries its old SYNC_NO, and the check rightly drops it.
fn no_security_events(app: &App, peer: &App, who: &str) -> Result<(), TestCaseError> {
    let peer_closed_at = peer.closed().map(|(t, _, _)| t);
    let peer_reaccepted = peer.ep.endpoint_stats().connections_accepted > 1;
    for (t, e) in &app.events {
        let ok = match e {
            Event::SecurityViolation {
                kind: ViolationKind::WrongSyncNo,
                ..
            } => peer_reaccepted,
            Event::SecurityViolation { .. } => false,
            Event::NetworkReset => peer_closed_at.is_some_and(|p| p <= *t),
            _ => true,
        };
        prop_assert!(
            ok,
            "{who}: unexpected {e:?} at {t:?}; events {:#?}",
            summary(app)
        );
    }
    Ok(())
}

fn ids(v: impl IntoIterator<Item = MessageId>) -> BTreeSet<MessageId> {
    v.into_iter().collect()
}

/// Never silent loss, in both directions: whatever a sender's application
/// handed over and the peer's application did not get is in the sender's
/// `Closed { undelivered }`, which names only messages really sent. Every
/// side that opened a connection closed it.
fn check_no_silent_loss(r: &Run) -> Result<(), TestCaseError> {
    for (from, to, who) in [
        (&r.client, &r.server, "client->server"),
        (&r.server, &r.client, "server->client"),
    ] {
        let k = received_prefix(from, to, who)?;
        if from.conn.is_none() {
            continue;
        }
        let Some((_, reason, undelivered)) = from.closed() else {
            return Err(TestCaseError::fail(format!("{who}: sender never closed")));
        };
        let sent = ids(from.sent.iter().map(|(id, _)| *id));
        let missing = ids(from.sent[k..].iter().map(|(id, _)| *id));
        let reported = ids(undelivered.iter().copied());
        prop_assert!(
            missing.is_subset(&reported),
            "{who}: silent loss: {:?} never arrived but Closed({:?}) reports only {:?}",
            missing.difference(&reported).collect::<Vec<_>>(),
            reason,
            reported
        );
        prop_assert!(
            reported.is_subset(&sent),
            "{who}: reports messages never sent"
        );
    }
    Ok(())
}

/// Times at which `to` was handed a datagram that decodes with ST_CKS set
/// and its checksum right (both endpoints checksum everything; a
/// corruption that clears ST_CKS leaves a datagram that decodes but that
/// the endpoint rightly drops) and is not a byte-for-byte copy of an
/// earlier one — a network duplicate is no sign of life.
fn fresh_arrivals(log: &[LogEntry], to: NodeId) -> Vec<(Time, Vec<u8>)> {
    let mut seen = BTreeSet::new();
    let checked = |bytes: &[u8]| {
        DatagramRepr::decode(bytes).is_ok_and(|d| d.header.flags.contains(Flags::ST_CKS))
    };
    log.iter()
        .filter(|e| e.to == to && checked(&e.datagram))
        .filter(|e| seen.insert(e.datagram.clone()))
        .map(|e| (e.at, e.datagram.clone()))
        .collect()
}

/// A side that ended on a timeout must have had a reason: for the idle
/// timeout, no fresh datagram in the idle period before it (after it
/// connected); for the handshake timeout, no answer to its START.
fn check_timeout_was_genuine(
    r: &Run,
    app: &App,
    node: NodeId,
    who: &str,
) -> Result<(), TestCaseError> {
    let Some((closed_at, reason, _)) = app.closed() else {
        return Ok(());
    };
    let connected_at = app
        .events
        .iter()
        .find(|(_, e)| *e == Event::Connected)
        .map(|(t, _)| *t);
    match reason {
        CloseReason::IdleTimeout => {
            let from = Time::from_nanos(
                closed_at
                    .as_nanos()
                    .saturating_sub(IDLE_TIMEOUT.as_nanos() as u64),
            );
            let from = connected_at.map_or(from, |c| from.max(c));
            let heard: Vec<Time> = fresh_arrivals(&r.log, node)
                .into_iter()
                .map(|(t, _)| t)
                .filter(|t| *t > from && *t < closed_at)
                .collect();
            prop_assert!(
                heard.is_empty(),
                "{who}: spurious idle timeout at {closed_at:?}: fresh datagrams arrived at {heard:?}"
            );
        }
        CloseReason::HandshakeTimeout => {
            let answered = fresh_arrivals(&r.log, node).into_iter().any(|(t, b)| {
                DatagramRepr::decode(&b).is_ok_and(|d| {
                    d.header.pk_type == PacketType::Start && d.header.flags.contains(Flags::REPLY)
                }) && t < closed_at
            });
            prop_assert!(
                !answered,
                "{who}: handshake timeout although START was answered"
            );
        }
        CloseReason::PeerDead { silent_for, .. } => {
            // Nothing was heard during the backed-off timeouts: the second
            // half of the span (the first timeout is at 1/16 of it).
            let from = Time::from_nanos(
                closed_at
                    .as_nanos()
                    .saturating_sub(silent_for.as_nanos() as u64 / 2),
            );
            let heard: Vec<Time> = fresh_arrivals(&r.log, node)
                .into_iter()
                .map(|(t, _)| t)
                .filter(|t| *t > from && *t < closed_at)
                .collect();
            prop_assert!(
                heard.is_empty(),
                "{who}: spurious peer death at {closed_at:?}: fresh datagrams arrived at {heard:?}"
            );
        }
        _ => {}
    }
    Ok(())
}

/// How a run of property a or c ended.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Ending {
    /// Everything delivered, both sides closed normally.
    Complete,
    /// The path went silent for an idle timeout (or never answered START),
    /// so the premise of property a did not hold; nothing was lost silently.
    PathWentSilent,
}

/// Property a (and c). Premise: the path delivers a packet in every
/// idle-timeout period. Whether it held is read off the run: a side that
/// ended on a timeout must show a real silence in the delivery log
/// (otherwise the timeout is a bug), and then only "never silent loss"
/// is required. Otherwise everything was delivered exactly once, intact,
/// in order; the client's close ended `Local` and the server's `Remote`,
/// both with nothing undelivered, and the server saw `PeerClosed` after
/// the last message.
fn check_complete(r: &Run) -> Result<Ending, TestCaseError> {
    let (client, server) = (&r.client, &r.server);
    no_security_events(client, server, "client")?;
    no_security_events(server, client, "server")?;
    let timed_out = |app: &App| {
        matches!(
            app.closed(),
            Some((
                _,
                CloseReason::IdleTimeout
                    | CloseReason::HandshakeTimeout
                    | CloseReason::PeerDead { .. },
                _
            ))
        )
    };
    if timed_out(client) || timed_out(server) {
        check_timeout_was_genuine(r, client, r.client_node, "client")?;
        check_timeout_was_genuine(r, server, r.server_node, "server")?;
        check_no_silent_loss(r)?;
        return Ok(Ending::PathWentSilent);
    }
    prop_assert!(
        client.outbox.is_empty(),
        "client never handed everything over"
    );
    prop_assert!(
        server.outbox.is_empty(),
        "server never handed everything over"
    );
    let k = received_prefix(client, server, "client->server")?;
    prop_assert_eq!(k, client.sent.len(), "client->server: messages missing");
    let k = received_prefix(server, client, "server->client")?;
    prop_assert_eq!(k, server.sent.len(), "server->client: messages missing");
    match client.closed() {
        Some((_, CloseReason::Local, u)) if u.is_empty() => {}
        other => prop_assert!(false, "client should close normally: {other:?}"),
    }
    match server.closed() {
        Some((_, CloseReason::Remote, u)) if u.is_empty() => {}
        other => prop_assert!(false, "server should close normally: {other:?}"),
    }
    // PeerClosed comes after the last message the peer sent before END.
    let peer_closed = server
        .events
        .iter()
        .position(|(_, e)| *e == Event::PeerClosed);
    let last_message = server
        .events
        .iter()
        .rposition(|(_, e)| matches!(e, Event::MessageReceived { .. }));
    prop_assert!(peer_closed.is_some(), "server never saw PeerClosed");
    prop_assert!(
        last_message < peer_closed,
        "PeerClosed before the last message: {:?}",
        server.events
    );
    Ok(Ending::Complete)
}

/// Runs a/c-style cases; at most 2 % may see the path go silent, or the
/// property would be tested on too few cases.
fn run_complete_property<S: Strategy<Value = Case>>(
    name: &str,
    strategy: S,
    mut also: impl FnMut(&Run),
) {
    let silent = std::cell::Cell::new(0u32);
    let also = std::cell::RefCell::new(&mut also);
    run_property(name, strategy, |case| {
        let r = run(case)?;
        (also.borrow_mut())(&r);
        if check_complete(&r)? == Ending::PathWentSilent {
            silent.set(silent.get() + 1);
        }
        Ok(())
    });
    eprintln!(
        "{name}: in {} of 1000 cases the path went silent for an idle timeout \
         (checked: the timeout was genuine and nothing was lost silently)",
        silent.get()
    );
    assert!(silent.get() <= 20, "{name}: premise too rarely met");
}

// ---------------------------------------------------------------- strategies

fn controller() -> impl Strategy<Value = &'static str> {
    prop::sample::select(NAMES.to_vec())
}

fn startup() -> impl Strategy<Value = StartupMode> {
    prop_oneof![Just(StartupMode::PacketPair), Just(StartupMode::SlowStart)]
}

/// Mostly small messages (drone commands), some of several blocks, and
/// the empty message.
fn sizes(max: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(
        prop_oneof![3 => 0usize..64, 2 => 64usize..1500, 1 => 1500usize..5000],
        0..=max,
    )
}

/// Delay, rate, ≤ 30 % loss (Bernoulli ≤ 20 % plus Gilbert-Elliott ≤ 9 %
/// long-run: 1 − 0.8·0.91 < 0.28), jitter (reordering or not), the reorder
/// knob and duplication. No outages.
fn impairments(max_loss: f64) -> impl Strategy<Value = PipeConfig> {
    (
        1_000u64..40_000,
        prop_oneof![Just(0u64), 1_000_000u64..50_000_000],
        0.0..=max_loss,
        prop::option::of((0.0f64..=0.03, 0.3f64..=1.0)),
        prop::option::of((0u64..=10_000, any::<bool>())),
        prop::option::of((0.0f64..=0.3, 1_000u64..=30_000)),
        0.0f64..=0.2,
    )
        .prop_map(
            |(delay_us, rate_bps, loss, ge, jitter, reorder, duplicate)| PipeConfig {
                rate_bps,
                delay_us,
                jitter: match jitter {
                    Some((max_us, _)) => Jitter::Uniform { max_us },
                    None => Jitter::None,
                },
                jitter_reorders: jitter.is_some_and(|(_, r)| r),
                reorder: reorder.map(|(probability, extra_delay_us)| Reorder {
                    probability,
                    extra_delay_us,
                }),
                loss,
                gilbert_elliott: ge.map(|(p_gb, p_bg)| GilbertElliott {
                    p_gb,
                    p_bg,
                    loss_good: 0.0,
                    loss_bad: 1.0,
                }),
                duplicate,
                ..PipeConfig::default()
            },
        )
}

/// Up to two outages, the first starting in the first second (while a
/// case's handshake, transfer or close is under way), each at most 2 s,
/// at least 1 s apart.
fn short_outages() -> impl Strategy<Value = Vec<Outage>> {
    prop::collection::vec((0u64..1_000_000, 1_000u64..=MAX_SHORT_OUTAGE_US), 0..=2).prop_map(
        |mut v| {
            v.sort_unstable();
            let mut out: Vec<Outage> = Vec::new();
            for (start, len) in v {
                let start = match out.last() {
                    Some(prev) => start.max(prev.end_us + 1_000_000),
                    None => start,
                };
                out.push(Outage {
                    start_us: start,
                    end_us: start + len,
                });
            }
            out
        },
    )
}

fn with_outages(mut p: PipeConfig, outages: Vec<Outage>) -> PipeConfig {
    p.outages = outages;
    p
}

/// When a permanent outage starts: mostly while the case is busy (its
/// transfers take a few hundred ms), sometimes later.
fn death_time() -> impl Strategy<Value = u64> {
    prop_oneof![3 => 0u64..400_000, 1 => 400_000u64..3_000_000]
}

fn permanent_outage_from(start_us: u64) -> Vec<Outage> {
    vec![Outage {
        start_us,
        end_us: u64::MAX,
    }]
}

fn case_with(
    forward: impl Strategy<Value = PipeConfig>,
    backward: impl Strategy<Value = PipeConfig>,
    server_msgs: usize,
    close: impl Strategy<Value = bool>,
) -> impl Strategy<Value = Case> {
    (
        any::<u64>(),
        controller(),
        controller(),
        startup(),
        forward,
        backward,
        sizes(12),
        sizes(server_msgs),
        close,
    )
        .prop_map(
            |(seed, client_cc, server_cc, startup, forward, backward, cs, ss, close)| Case {
                seed,
                client_cc,
                server_cc,
                startup,
                forward,
                backward,
                client_sizes: cs,
                server_sizes: ss,
                close,
            },
        )
}

// ---------------------------------------------------------------- properties

fn run_property<S>(name: &str, strategy: S, check: impl Fn(&Case) -> Result<(), TestCaseError>)
where
    S: Strategy<Value = Case>,
{
    let mut runner = runner();
    match runner.run(&strategy, |case| check(&case)) {
        Ok(()) => {}
        Err(TestError::Fail(why, case)) => {
            if std::env::var_os("RELIABILITY_TRACE").is_some() {
                trace(&case);
            } else {
                eprintln!("(set RELIABILITY_TRACE=1 for the datagrams and events of this case)");
            }
            panic!("{name}: {why}\nminimal failing case: {case:#?}");
        }
        Err(e) => panic!("{name}: {e}"),
    }
}

#[test]
fn a_every_message_arrives_exactly_once_and_close_delivers_everything() {
    let path = || (impairments(0.2), short_outages()).prop_map(|(p, o)| with_outages(p, o));
    run_complete_property("a", case_with(path(), path(), 4, Just(true)), |_| {});
}

/// The client's data direction dies for good at a random instant (maybe
/// before the handshake); the way back stays up without loss, so every
/// acknowledgement the server sends arrives and the client can know
/// exactly what was delivered.
#[test]
fn b_forward_outage_closed_reports_exactly_the_undelivered_messages() {
    let forward = (impairments(0.2), death_time())
        .prop_map(|(p, t)| with_outages(p, permanent_outage_from(t)));
    let backward = impairments(0.0).prop_map(|mut p| {
        p.gilbert_elliott = None;
        p
    });
    run_property(
        "b_forward",
        case_with(forward, backward, 0, any::<bool>()),
        |case| {
            let r = run(case)?;
            let k = received_prefix(&r.client, &r.server, "client->server")?;
            let Some((_, reason, undelivered)) = r.client.closed() else {
                return Err(TestCaseError::fail("client connection never closed"));
            };
            let expected: Vec<MessageId> = r.client.sent[k..].iter().map(|(id, _)| *id).collect();
            prop_assert_eq!(
                &undelivered,
                &expected,
                "client Closed({:?}) must list exactly the {} messages the server's application never got",
                reason,
                expected.len()
            );
            if !undelivered.is_empty() {
                prop_assert!(
                    matches!(
                        reason,
                        CloseReason::IdleTimeout
                            | CloseReason::HandshakeTimeout
                            | CloseReason::PeerDead { .. }
                    ),
                    "undelivered messages but reason {reason:?}"
                );
            }
            if r.server.conn.is_some() {
                prop_assert!(r.server.closed().is_some(), "server never closed");
            }
            no_security_events(&r.client, &r.server, "client")?;
            no_security_events(&r.server, &r.client, "server")?;
            Ok(())
        },
    );
}

/// Both directions die for good, each at its own random instant, on lossy
/// paths: an acknowledgement can die with the link, so a delivered
/// message may be reported undelivered — but every message that did not
/// arrive must be reported, on both sides.
#[test]
fn b_both_directions_outage_never_loses_a_message_silently() {
    let dying = || {
        (impairments(0.2), death_time())
            .prop_map(|(p, t)| with_outages(p, permanent_outage_from(t)))
    };
    run_property(
        "b_both",
        case_with(dying(), dying(), 6, any::<bool>()),
        |case| check_no_silent_loss(&run(case)?),
    );
}

#[test]
fn c_corrupted_datagrams_are_never_delivered() {
    let corrupting = || {
        (
            impairments(0.05),
            0.01f64..=0.3,
            prop_oneof![
                Just(CorruptionPattern::Bits { count: 1 }),
                (1u32..=15).prop_map(|max_len_bits| CorruptionPattern::Burst { max_len_bits }),
            ],
        )
            .prop_map(|(mut p, probability, pattern)| {
                p.corruption = Some(Corruption {
                    probability,
                    pattern,
                });
                p
            })
    };
    let mut corrupted = 0u64;
    let mut rejected = 0u64;
    run_complete_property(
        "c",
        case_with(corrupting(), corrupting(), 4, Just(true)),
        |r| {
            corrupted += r.corrupted;
            rejected += r.client.ep.endpoint_stats().decode_errors
                + r.server.ep.endpoint_stats().decode_errors;
        },
    );
    eprintln!(
        "c: {} datagrams corrupted, {} deliveries rejected by the decoders \
         (a corrupted datagram may also be duplicated)",
        corrupted, rejected
    );
    assert!(rejected > 0, "no corruption was exercised");
}

/// Replays `case` and prints every delivered datagram (decoded) and both
/// applications' events: what to read when a case fails.
fn trace(case: &Case) {
    use peregrine_proto::wire::Payload;
    let Ok((mut h, c, s)) = setup(case, true) else {
        return;
    };
    let outcome = h.run_until_idle(Time::from_secs_f64(RUN_LIMIT_S as f64));
    eprintln!("trace: run ended {outcome:?} at {:?}", h.now());
    for e in h.delivery_log() {
        let what = match DatagramRepr::decode(&e.datagram) {
            Ok(d) => {
                let body = match &d.payload {
                    Payload::Data(p) => format!(
                        "pn {} frames (msg, block/count, len) {:?}",
                        p.packet_number,
                        p.frames
                            .iter()
                            .map(|f| (
                                f.message_number,
                                format!("{}/{}", f.block_index, f.block_count),
                                f.data.len()
                            ))
                            .collect::<Vec<_>>()
                    ),
                    Payload::Ack(a) => format!("{a:?}"),
                    Payload::Nack(n) => format!("{n:?}"),
                    Payload::Bare(b) => format!("pn {}", b.packet_number),
                    _ => String::new(),
                };
                format!(
                    "{:?} {:?} dest {} sync {} {}",
                    d.header.pk_type, d.header.flags, d.header.dest_id, d.header.sync_no, body
                )
            }
            Err(err) => format!("undecodable: {err}"),
        };
        eprintln!(
            "{:>11.6} (sent {:>11.6}) {} -> {}: {what}",
            e.at.as_secs_f64(),
            e.sent_at.as_secs_f64(),
            e.from.0,
            e.to.0
        );
    }
    for (who, id) in [("client", c), ("server", s)] {
        let app = h.node(id);
        eprintln!("{who} events: {:#?}", summary(app));
        eprintln!("{who} endpoint: {:?}", app.ep.endpoint_stats());
    }
}
