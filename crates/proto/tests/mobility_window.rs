//! The handover window (issue 7, item 1; seed 003 §III-E) end to end on the
//! impairment harness: the receiving application closes its window for
//! 2 s in the middle of a transfer, as a vehicle does before handing over
//! between road-side units, then reopens it.
//!
//! The path: 20 Mbit/s each way, 256 KB drop-tail queue, 15 ms one way
//! (RTT 30 ms), no loss. What must hold: nothing is lost or delivered
//! twice; no RTO fires and nothing is declared lost; the congestion window
//! when the window reopens is the one it had once the pause settled; the
//! sender polls with STATUS, the gaps between polls growing and never
//! above `max_status_interval`; CWIN went out with its reason codes.

mod support;

use peregrine_proto::harness::{Harness, LogEntry, NodeId, Outage, PipeConfig, RunOutcome};
use peregrine_proto::wire::{CwinReason, DatagramRepr, Flags, PacketType, Payload};
use peregrine_proto::{ConnectionConfig, ConnectionStats, MessageId, Time, WindowTarget};
use std::time::Duration;
use support::{addr, App, CLIENT, SERVER};

const MESSAGES: u32 = 4_000;
const MESSAGE_LEN: usize = 1_000;
const CLOSE_AT: Time = Time::from_millis(600);
const REOPEN_AT: Time = Time::from_millis(2_600);
const MAX_STATUS_INTERVAL: Duration = Duration::from_millis(500);

fn message(n: u32) -> Vec<u8> {
    let mut m = vec![(n % 251) as u8; MESSAGE_LEN];
    m[..4].copy_from_slice(&n.to_be_bytes());
    m
}

fn intact(id: MessageId, bytes: &[u8]) -> bool {
    id.stream == 0 && bytes == message(id.number).as_slice()
}

fn pipe() -> PipeConfig {
    PipeConfig {
        rate_bps: 20_000_000,
        delay_us: 15_000,
        queue_limit_bytes: Some(256 * 1024),
        ..PipeConfig::default()
    }
}

struct Run {
    h: Harness<App>,
    c: NodeId,
    s: NodeId,
}

impl Run {
    /// Client sends `MESSAGES` to the server; `server_to_client` is the
    /// pipe of the acknowledgements (and of CWIN).
    fn new(seed: u64, server_to_client: PipeConfig) -> Run {
        let config = ConnectionConfig {
            max_status_interval: MAX_STATUS_INTERVAL,
            // The receiver's buffer, hence its window, below the path's
            // BDP + queue (75 KB + 256 KB): the sender's flight is bounded
            // by it, so the drop-tail queue never overflows and any loss
            // would be the pause's. With the default 4 MiB, slow start
            // (the default since issue 35; a used packet-pair estimate
            // only raises the first window, slow start goes on) overflows
            // it before CLOSE_AT (39 tail drops, seed 71) and CUBIC once
            // more after the reopening (8): real congestion losses, 9 of
            // them detected while the window is closed, as the in-flight
            // data drains — not what this test is about.
            max_receive_buffer_bytes: 200_000,
            max_message_size: 64 * 1024,
            ..ConnectionConfig::default()
        };
        let mut h: Harness<App> = Harness::new(seed);
        let mut client = App::client(seed + 1);
        client.outbox = (0..MESSAGES).map(message).collect();
        client.close_when_sent = true;
        let mut server = App::server(config.clone(), seed + 2);
        server.keep_bytes = false;
        server.expect = Some(intact);
        let c = h.add_node(addr(CLIENT), client);
        let s = h.add_node(addr(SERVER), server);
        h.set_pipe(c, s, pipe()).expect("valid pipe");
        h.set_pipe(s, c, server_to_client).expect("valid pipe");
        h.record_deliveries(true);
        h.node_mut(c).connect(Time::ZERO, addr(SERVER), config);
        Run { h, c, s }
    }

    fn client_stats(&self) -> ConnectionStats {
        let app = self.h.node(self.c);
        app.conn
            .and_then(|c| app.ep.stats(c))
            .expect("client connection")
    }

    fn server_stats(&self) -> ConnectionStats {
        let app = self.h.node(self.s);
        app.conn
            .and_then(|c| app.ep.stats(c))
            .expect("server connection")
    }

    fn set_server_window(&mut self, bytes: u64) {
        let now = self.h.now();
        let app = self.h.node_mut(self.s);
        let conn = app.conn.expect("the server has its connection by now");
        assert!(app
            .ep
            .set_receive_window(conn, now, WindowTarget::Connection, bytes));
    }

    /// Every message arrived once, intact, in order; the close was normal.
    fn assert_complete(&self) {
        let server = self.h.node(self.s);
        assert_eq!(server.bad_messages, 0);
        assert_eq!(server.received.len(), MESSAGES as usize);
        for (i, (_, id, _)) in server.received.iter().enumerate() {
            assert_eq!(id.number as usize, i, "out of order or twice");
        }
        let client = self.h.node(self.c);
        assert!(client.send_errors.is_empty(), "{:?}", client.send_errors);
        let (_, _, undelivered) = client.closed().expect("client closed");
        assert!(undelivered.is_empty());
    }
}

/// STATUS polls (REPLY_REQ) the client sent, by delivery time.
fn status_polls(log: &[LogEntry], from: NodeId) -> Vec<Time> {
    log.iter()
        .filter(|e| e.from == from)
        .filter_map(|e| {
            let dg = DatagramRepr::decode(&e.datagram).ok()?;
            (dg.header.pk_type == PacketType::Status && dg.header.flags.contains(Flags::REPLY_REQ))
                .then_some(e.sent_at)
        })
        .collect()
}

/// CWIN packets the server sent: (sent at, window, reason).
fn cwins(log: &[LogEntry], from: NodeId) -> Vec<(Time, u32, CwinReason)> {
    log.iter()
        .filter(|e| e.from == from)
        .filter_map(|e| match DatagramRepr::decode(&e.datagram).ok()?.payload {
            Payload::Cwin(c) => Some((e.sent_at, c.window_bytes, c.reason)),
            _ => None,
        })
        .collect()
}

#[test]
fn handover_window_closed_for_2s_loses_nothing_fires_no_rto_and_keeps_cwnd() {
    let mut run = Run::new(71, pipe());
    run.h.run_until(CLOSE_AT).expect("runs");
    let before = run.server_stats().messages_delivered;
    assert!(
        before > 0 && before < u64::from(MESSAGES),
        "the pause must fall mid-transfer ({before} delivered)"
    );
    run.set_server_window(0);
    // Let what was in flight drain and be acknowledged.
    run.h
        .run_until(CLOSE_AT + Duration::from_millis(500))
        .expect("runs");
    let settled = run.client_stats();
    assert_eq!(settled.peer_window_bytes, 0);
    assert_eq!(
        settled.bytes_in_flight, 0,
        "in-flight data was acknowledged"
    );
    let delivered_in_pause = run.server_stats().messages_delivered;
    run.h.run_until(REOPEN_AT).expect("runs");
    let at_reopen = run.client_stats();
    assert_eq!(
        run.server_stats().messages_delivered,
        delivered_in_pause,
        "no new data during the pause"
    );
    assert_eq!(at_reopen.cwnd_bytes, settled.cwnd_bytes);
    assert_eq!(at_reopen.ssthresh_bytes, settled.ssthresh_bytes);
    run.set_server_window(u64::MAX);
    // Half an RTT later: the first packets left (CWIN took 15 ms), no ACK
    // of them is back yet, so any change of cwnd would be the pause's.
    run.h
        .run_until(REOPEN_AT + Duration::from_millis(20))
        .expect("runs");
    let resumed = run.client_stats();
    assert!(
        resumed.data_packets_sent > at_reopen.data_packets_sent,
        "data resumed at once after the reopening CWIN"
    );
    assert_eq!(resumed.cwnd_bytes, settled.cwnd_bytes, "cwnd unchanged");
    assert_eq!(
        resumed.idle_restarts, 0,
        "the pause is not idle time for the controller"
    );
    assert_eq!(resumed.window.window_pauses, 1);
    let paused = resumed.window.window_paused;
    assert!(
        paused >= Duration::from_millis(1_990) && paused <= Duration::from_millis(2_040),
        "paused {paused:?}"
    );
    assert_eq!(
        run.h
            .run_until_idle(Time::from_millis(60_000))
            .expect("runs"),
        RunOutcome::Idle
    );
    run.assert_complete();
    let client = run.client_stats();
    assert_eq!(client.rtos, 0, "no RTO during the pause");
    assert_eq!(client.packets_lost, 0, "the pause is not loss");
    assert_eq!(client.loss_episodes, 0, "nor congestion");
    // STATUS polls: back off, bounded by max_status_interval.
    let polls = status_polls(run.h.delivery_log(), run.c);
    assert_eq!(polls.len() as u64, client.window.status_polls_sent);
    assert!(polls.len() >= 4, "polls: {polls:?}");
    assert!(polls
        .iter()
        .all(|t| *t > CLOSE_AT && *t < REOPEN_AT + Duration::from_millis(1)));
    let gaps: Vec<Duration> = polls.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.windows(2).all(|g| g[1] >= g[0]), "gaps {gaps:?}");
    assert!(gaps.iter().all(|g| *g <= MAX_STATUS_INTERVAL), "{gaps:?}");
    assert_eq!(gaps.last().copied(), Some(MAX_STATUS_INTERVAL));
    // CWIN: closing with handover_start, reopening with handover_end.
    let sent = cwins(run.h.delivery_log(), run.s);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!((sent[0].1, sent[0].2), (0, CwinReason::HANDOVER_START));
    assert!(sent[1].1 > 0);
    assert_eq!(sent[1].2, CwinReason::HANDOVER_END);
    assert_eq!(run.server_stats().window.cwins_sent, 2);
    assert_eq!(client.window.cwins_received, 2);
}

#[test]
fn handover_lost_reopening_cwin_is_recovered_by_the_next_status_poll() {
    // The server → client pipe is down for 4 ms around the reopening:
    // the CWIN that reopens the window is lost.
    let down = PipeConfig {
        outages: vec![Outage {
            start_us: REOPEN_AT.as_nanos() / 1_000 - 1_000,
            end_us: REOPEN_AT.as_nanos() / 1_000 + 3_000,
        }],
        ..pipe()
    };
    let mut run = Run::new(72, down);
    run.h.run_until(CLOSE_AT).expect("runs");
    run.set_server_window(0);
    run.h.run_until(REOPEN_AT).expect("runs");
    let at_reopen = run.client_stats();
    run.set_server_window(u64::MAX);
    run.h
        .run_until(REOPEN_AT + Duration::from_millis(40))
        .expect("runs");
    assert_eq!(
        run.client_stats().data_packets_sent,
        at_reopen.data_packets_sent,
        "the CWIN was lost: the sender still waits"
    );
    // The next poll (at most max_status_interval later) gets the answer.
    run.h
        .run_until(REOPEN_AT + MAX_STATUS_INTERVAL + Duration::from_millis(40))
        .expect("runs");
    assert!(run.client_stats().data_packets_sent > at_reopen.data_packets_sent);
    assert_eq!(
        run.h
            .run_until_idle(Time::from_millis(60_000))
            .expect("runs"),
        RunOutcome::Idle
    );
    run.assert_complete();
    let client = run.client_stats();
    assert_eq!((client.rtos, client.packets_lost), (0, 0));
    assert_eq!(
        client.window.cwins_received, 1,
        "only the closing CWIN arrived"
    );
}

#[test]
fn handover_closing_a_stream_window_holds_only_that_stream() {
    let config = ConnectionConfig {
        initial_stream_credit: Some(4),
        ..ConnectionConfig::default()
    };
    let mut h: Harness<App> = Harness::new(73);
    let client = App::client(74);
    let server = App::server(config.clone(), 75);
    let c = h.add_node(addr(CLIENT), client);
    let s = h.add_node(addr(SERVER), server);
    h.set_default_pipe(pipe()).expect("valid pipe");
    h.node_mut(c).connect(Time::ZERO, addr(SERVER), config);
    h.run_until(Time::from_millis(200)).expect("runs");
    let now = h.now();
    {
        let app = h.node_mut(s);
        let conn = app.conn.expect("connected");
        assert!(app
            .ep
            .set_receive_window(conn, now, WindowTarget::Stream(1), 0));
    }
    {
        let app = h.node_mut(c);
        let conn = app.conn.expect("connected");
        for n in 0..20u32 {
            for stream in [0u16, 1] {
                app.ep
                    .send_message(conn, now, stream, &n.to_be_bytes())
                    .expect("room");
            }
        }
    }
    h.run_until(Time::from_millis(1_500)).expect("runs");
    let got = |h: &Harness<App>, stream: u16| {
        h.node(s)
            .received
            .iter()
            .filter(|(_, id, _)| id.stream == stream)
            .count()
    };
    assert_eq!(got(&h, 0), 20, "the other stream is not held");
    assert_eq!(got(&h, 1), 0, "the closed stream delivers nothing");
    let cstats = {
        let app = h.node(c);
        app.ep.stats(app.conn.expect("connected")).expect("stats")
    };
    let held = cstats
        .streams
        .iter()
        .find(|st| st.id == 1)
        .expect("stream 1");
    assert!(
        held.messages_acked < 20,
        "the frozen credit stops the sender: {} acknowledged",
        held.messages_acked
    );
    let now = h.now();
    {
        let app = h.node_mut(s);
        let conn = app.conn.expect("connected");
        assert!(app
            .ep
            .set_receive_window(conn, now, WindowTarget::Stream(1), u64::MAX));
        app.pump();
    }
    h.run_until(Time::from_millis(4_000)).expect("runs");
    assert_eq!(got(&h, 1), 20, "reopened: everything arrives");
    let numbers: Vec<u32> = h
        .node(s)
        .received
        .iter()
        .filter(|(_, id, _)| id.stream == 1)
        .map(|(_, id, _)| id.number)
        .collect();
    assert_eq!(numbers, (0..20).collect::<Vec<_>>());
}
