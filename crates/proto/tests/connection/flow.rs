//! Per-stream flow control (credit in messages, docs/protocol.md §6.5.1):
//! an unread stream stalls at its credit while others flow, reading
//! resumes it, retransmissions pass, the setting is validated, and loss
//! does not deadlock it.

use peregrine_cc::Time;
use peregrine_proto::connection::*;
use peregrine_proto::endpoint::{ConnectionHandle, Endpoint};
use peregrine_proto::harness::driver::{addr, Driver, Fate};
use peregrine_proto::wire::{DatagramRepr, Flags, Payload};
use peregrine_proto::StreamConfig;
use std::time::Duration;

fn credit_config(credit: u32) -> ConnectionConfig {
    ConnectionConfig {
        initial_stream_credit: Some(credit),
        ..ConnectionConfig::default()
    }
}

/// Node 0 sends to node 1, whose configuration sets the credit.
fn pair(credit: u32, seed: u64) -> (Driver, ConnectionHandle) {
    let a = Endpoint::new(EndpointConfig::default(), seed);
    let b = Endpoint::new(EndpointConfig::server(credit_config(credit)), seed + 1);
    let mut sim = Driver::new(vec![a, b], Duration::from_millis(10), seed);
    let client = sim.eps[0]
        .connect(Time::ZERO, addr(1), ConnectionConfig::default())
        .expect("valid config");
    sim.run_for(Duration::from_millis(300));
    (sim, client)
}

fn server(sim: &Driver) -> ConnectionHandle {
    sim.eps[1].handles()[0]
}

/// (stream, message number, in a ST_RET packet) of every data frame node
/// 0 sent, skip frames excluded.
fn frames_sent(sim: &Driver) -> Vec<(u16, u32, bool)> {
    let mut out = Vec::new();
    for s in sim.log.iter().filter(|s| s.from == 0) {
        let dg = DatagramRepr::decode(&s.bytes).expect("well-formed");
        if let Payload::Data(d) = &dg.payload {
            let ret = dg.header.flags.contains(Flags::ST_RET);
            for f in d.frames.iter().filter(|f| !f.is_skip()) {
                out.push((f.stream_id, f.message_number, ret));
            }
        }
    }
    out
}

fn received_on(sim: &Driver, stream: u16) -> Vec<u32> {
    sim.events[1]
        .iter()
        .filter_map(|(_, e)| match e {
            Event::MessageReceived { id, .. } if id.stream == stream => Some(id.number),
            _ => None,
        })
        .collect()
}

#[test]
fn flow_unread_stream_stalls_at_its_credit_while_another_flows_and_reading_resumes_it() {
    let (mut sim, client) = pair(4, 11);
    let srv = server(&sim);
    assert!(sim.eps[1].hold_stream(srv, 1, true));
    for i in 0u32..20 {
        for stream in [1u16, 2] {
            sim.eps[0]
                .send_message(client, sim.now, stream, &i.to_be_bytes())
                .expect("queued");
        }
    }
    sim.run_for(Duration::from_secs(3));
    // Stream 2 is read: it delivered everything.
    assert_eq!(received_on(&sim, 2), (0..20).collect::<Vec<_>>());
    // Stream 1 is not read: nothing returned, and the sender never sent a
    // message at or above the credit of 4.
    assert!(received_on(&sim, 1).is_empty());
    let sent1: Vec<u32> = frames_sent(&sim)
        .into_iter()
        .filter(|f| f.0 == 1)
        .map(|f| f.1)
        .collect();
    assert!(!sent1.is_empty());
    assert!(
        sent1.iter().all(|&n| n < 4),
        "sent past the credit: {sent1:?}"
    );
    // Reading resumes it.
    sim.eps[1].hold_stream(srv, 1, false);
    sim.run_for(Duration::from_secs(3));
    assert_eq!(received_on(&sim, 1), (0..20).collect::<Vec<_>>());
}

#[test]
fn flow_retransmissions_of_a_stalled_stream_still_go_through() {
    let (mut sim, client) = pair(3, 12);
    let srv = server(&sim);
    sim.eps[1].hold_stream(srv, 1, true);
    // Drop the first DATA packet carrying stream 1.
    let mut dropped = false;
    sim.hook = Box::new(move |from, _, bytes| {
        if from == 0 && !dropped {
            if let Ok(dg) = DatagramRepr::decode(bytes) {
                if let Payload::Data(d) = &dg.payload {
                    if d.frames.iter().any(|f| f.stream_id == 1) {
                        dropped = true;
                        return Fate::Drop;
                    }
                }
            }
        }
        Fate::Deliver
    });
    for i in 0u32..10 {
        sim.eps[0]
            .send_message(client, sim.now, 1, &i.to_be_bytes())
            .expect("queued");
    }
    sim.run_for(Duration::from_secs(5));
    let frames = frames_sent(&sim);
    // The credit (3) held new data back, yet the lost blocks were sent
    // again (in ST_RET packets).
    assert!(frames.iter().all(|f| f.0 != 1 || f.1 < 3), "{frames:?}");
    assert!(
        frames.iter().any(|f| f.0 == 1 && f.2),
        "no retransmission: {frames:?}"
    );
    sim.eps[1].hold_stream(srv, 1, false);
    sim.run_for(Duration::from_secs(5));
    assert_eq!(received_on(&sim, 1), (0..10).collect::<Vec<_>>());
}

#[test]
fn flow_initial_stream_credit_is_validated() {
    assert_eq!(ConnectionConfig::default().initial_stream_credit, None);
    assert!(credit_config(1).validate().is_ok());
    let err = credit_config(0).validate().unwrap_err();
    assert_eq!(err.field, "initial_stream_credit");
    let mut ep = Endpoint::new(EndpointConfig::default(), 1);
    assert!(ep.connect(Time::ZERO, addr(1), credit_config(0)).is_err());
    let mut ep = Endpoint::new(EndpointConfig::default(), 2);
    assert!(ep.accept(credit_config(0)).is_err());
}

#[test]
fn flow_no_deadlock_under_five_percent_loss() {
    let (mut sim, client) = pair(2, 13);
    sim.loss = 0.05;
    let srv = server(&sim);
    const N: u32 = 150;
    let mut next = [0u32; 3];
    let mut t = 0u32;
    while sim.now < Time::from_secs_f64(90.0) {
        for stream in [1u16, 2] {
            for _ in 0..5 {
                let n = next[usize::from(stream)];
                if n < N
                    && sim.eps[0]
                        .send_message(client, sim.now, stream, &n.to_be_bytes())
                        .is_ok()
                {
                    next[usize::from(stream)] += 1;
                }
            }
        }
        // The application reads stream 1 only now and then.
        t += 1;
        sim.eps[1].hold_stream(srv, 1, t % 20 < 10);
        sim.run_for(Duration::from_millis(50));
        if received_on(&sim, 1).len() == N as usize && received_on(&sim, 2).len() == N as usize {
            break;
        }
    }
    sim.eps[1].hold_stream(srv, 1, false);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(received_on(&sim, 1), (0..N).collect::<Vec<_>>());
    assert_eq!(received_on(&sim, 2), (0..N).collect::<Vec<_>>());
    // The receiver's check of the credit never fired on a correct sender.
    let stats = sim.eps[1].stats(srv).expect("open");
    assert_eq!(stats.protocol_errors, 0);
    assert!(sim.now < Time::from_secs_f64(90.0), "stalled");
}

#[test]
fn flow_the_end_of_a_connection_never_overtakes_a_held_message() {
    // The peer sends five messages on a stream the application holds, then
    // closes: the close completes on the wire, but the application is told
    // about it only after it was handed those messages (the UDP runtime
    // reads "closed, nothing in the inbox" as the end of the data).
    let (mut sim, client) = pair(1_000, 14);
    let srv = server(&sim);
    sim.eps[1].hold_stream(srv, 1, true);
    for i in 0u32..5 {
        sim.eps[0]
            .send_message(client, sim.now, 1, &i.to_be_bytes())
            .expect("queued");
    }
    sim.eps[0].close(client, sim.now);
    sim.run_for(Duration::from_secs(3));
    let ended = |sim: &Driver| {
        sim.events[1]
            .iter()
            .position(|(_, e)| matches!(e, Event::PeerClosed | Event::Closed { .. }))
    };
    assert!(received_on(&sim, 1).is_empty());
    assert_eq!(ended(&sim), None, "the end overtook held messages");
    sim.eps[1].hold_stream(srv, 1, false);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(received_on(&sim, 1), (0..5).collect::<Vec<_>>());
    let last_message = sim.events[1]
        .iter()
        .rposition(|(_, e)| matches!(e, Event::MessageReceived { .. }))
        .expect("messages");
    assert!(ended(&sim).is_some_and(|end| end > last_message));
}

/// `Endpoint::send_room`: a message refused with `BufferFull` does not
/// fit, and the writer's low-water mark is reached once the peer has
/// acknowledged what the stream held; `send_joins_pending` only while
/// data waits, and never for a class-0 stream.
#[test]
fn send_room_reports_the_refusal_and_the_low_water_mark() {
    let (mut sim, client) = pair(1_000, 3);
    sim.eps[0]
        .open_stream(
            client,
            sim.now,
            5,
            StreamConfig {
                max_buffered_bytes: 30_000,
                ..StreamConfig::default()
            },
        )
        .expect("valid");
    let msg = vec![7u8; 10_000];
    // Nothing waits to be sent yet: a message would need the driver.
    assert!(!sim.eps[0].send_joins_pending(client, 5));
    let mut queued = 0;
    while sim.eps[0].send_message(client, sim.now, 5, &msg).is_ok() {
        queued += 1;
    }
    assert_eq!(queued, 3);
    // Data waits: another bulk message joins it; a class-0 one does not.
    assert!(sim.eps[0].send_joins_pending(client, 5));
    sim.eps[0]
        .open_stream(
            client,
            sim.now,
            0,
            StreamConfig {
                class: 0,
                ..StreamConfig::default()
            },
        )
        .expect("valid");
    assert!(!sim.eps[0].send_joins_pending(client, 0));
    let room = sim.eps[0].send_room(client, 5).expect("connection");
    assert_eq!(room.stream_bytes, 30_000);
    assert!(!room.fits(msg.len()));
    assert!(!room.writer_may_wake(msg.len()));
    // Another stream (default limit) still has room.
    assert!(sim.eps[0]
        .send_room(client, 6)
        .expect("connection")
        .writer_may_wake(msg.len()));
    sim.run_for(Duration::from_secs(1));
    let room = sim.eps[0].send_room(client, 5).expect("connection");
    assert_eq!(room.stream_bytes, 0);
    assert!(room.writer_may_wake(msg.len()));
    assert!(sim.eps[0]
        .send_room(ConnectionHandle(u64::MAX), 5)
        .is_none());
}
