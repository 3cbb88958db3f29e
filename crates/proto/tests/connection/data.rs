//! Messaging, recovery, flow-control and start-up tests of one connection
//! between two in-memory endpoints ([`peregrine_proto::harness::driver`]).

use crate::basic::{cfg, connected, ms, pair};
use peregrine_cc::{CcConfig, Time};
use peregrine_proto::connection::*;
use peregrine_proto::harness::driver::{addr, Fate};
use peregrine_proto::wire::{DatagramRepr, Flags, HeaderRepr, PacketType, Payload, StartupMode};
use std::time::Duration;

#[test]
fn large_messages_are_fragmented_and_reassembled() {
    let (mut sim, client, _) = connected();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    sim.eps[0].send_message(client, sim.now, 0, &big).unwrap();
    sim.eps[0]
        .send_message(client, sim.now, 0, b"after the big one")
        .unwrap();
    sim.eps[0].send_message(client, sim.now, 0, b"").unwrap();
    sim.run_for(Duration::from_secs(3));
    let got = sim.received(1);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].1, big);
    assert_eq!(got[1].1, b"after the big one");
    assert!(got[2].1.is_empty());
    let blocks = 200_000usize.div_ceil(1452 - config::DATA_OVERHEAD);
    let first = sim
        .log
        .iter()
        .find(|s| s.from == 0 && s.header.pk_type == PacketType::Data)
        .unwrap();
    assert_eq!(
        usize::from(first.header.tblock),
        blocks,
        "the header mirrors the first frame"
    );
    assert_eq!(first.header.pblock, 0);
    let too_big = vec![0u8; (1 << 20) + 1];
    assert!(matches!(
        sim.eps[0].send_message(client, sim.now, 0, &too_big),
        Err(SendError::MessageTooLarge { .. })
    ));
    assert_eq!(
        sim.eps[0].open_stream(
            client,
            sim.now,
            3,
            peregrine_proto::streams::StreamConfig {
                class: 4,
                ..Default::default()
            }
        ),
        Err(SendError::InvalidStreamConfig(3))
    );
}

#[test]
fn small_messages_share_datagrams() {
    let (mut sim, client, _) = connected();
    for i in 0..100u32 {
        let mut m = vec![0u8; 40];
        m[..4].copy_from_slice(&i.to_be_bytes());
        sim.eps[0].send_message(client, sim.now, 0, &m).unwrap();
    }
    sim.run_for(Duration::from_secs(1));
    let got = sim.received(1);
    assert_eq!(got.len(), 100);
    for (i, (n, m)) in got.iter().enumerate() {
        assert_eq!(*n as usize, i);
        assert_eq!(m[..4], (i as u32).to_be_bytes());
    }
    let data_packets = sim
        .log
        .iter()
        .filter(|s| s.from == 0 && s.header.pk_type == PacketType::Data)
        .count();
    // 53 bytes of frame each: 26 fit a 1452-byte datagram.
    assert!(
        data_packets <= 5,
        "{data_packets} DATA packets for 100 messages"
    );
}

/// The receiver lists a DATA packet's frames once, on the stack up to 16
/// and on the heap beyond: packets of 1, 16 and 17 frames (either side of
/// that boundary) are all checked, stored and delivered in order.
#[test]
fn packets_of_16_and_17_frames_deliver_every_message() {
    let (mut sim, client, _) = connected();
    let mut next = 0u32;
    for burst in [1u32, 16, 17] {
        for _ in 0..burst {
            sim.eps[0]
                .send_message(client, sim.now, 0, &next.to_be_bytes())
                .unwrap();
            next += 1;
        }
        sim.run_for(ms(200));
    }
    let got = sim.received(1);
    assert_eq!(got.len(), next as usize);
    for (i, (n, m)) in got.iter().enumerate() {
        assert_eq!(*n as usize, i);
        assert_eq!(m[..], (i as u32).to_be_bytes());
    }
    // Each burst left in one datagram: 1 + 16 + 17 frames, 3 packets.
    let data_packets = sim
        .log
        .iter()
        .filter(|s| s.from == 0 && s.header.pk_type == PacketType::Data)
        .count();
    assert_eq!(data_packets, 3, "one DATA packet per burst");
}

#[test]
fn a_lost_packet_is_nacked_and_retransmitted_with_st_ret() {
    let (mut sim, client, server) = connected();
    let mut data_seen = 0;
    sim.hook = Box::new(move |from, h, _| {
        if from == 0 && h.pk_type == PacketType::Data {
            data_seen += 1;
            if data_seen == 2 {
                return Fate::Drop;
            }
        }
        Fate::Deliver
    });
    for _ in 0..8 {
        sim.eps[0]
            .send_message(client, sim.now, 0, &[5u8; 1400])
            .unwrap();
    }
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.received(1).len(), 8);
    let dropped = sim.log.iter().find(|s| s.fate == Fate::Drop).unwrap();
    let Payload::Data(d) = DatagramRepr::decode(&dropped.bytes).unwrap().payload else {
        panic!()
    };
    let lost_pn = u64::from(d.packet_number);
    let nack = sim
        .log
        .iter()
        .find(|s| s.from == 1 && s.header.pk_type == PacketType::Nack)
        .expect("the receiver NACKed");
    let Payload::Nack(n) = DatagramRepr::decode(&nack.bytes).unwrap().payload else {
        panic!()
    };
    assert_eq!(n.missing_packets[0].first, lost_pn);
    let rexmit = sim
        .log
        .iter()
        .filter(|s| s.from == 0 && s.header.pk_type == PacketType::Data)
        .find(|s| s.header.flags.contains(Flags::ST_RET))
        .expect("a retransmission");
    assert!(rexmit.at >= nack.at);
    let s = sim.eps[0].stats(client).unwrap();
    assert_eq!(
        (s.packets_lost, s.packets_retransmitted, s.nacks_received),
        (1, 1, 1)
    );
    assert_eq!(sim.eps[1].stats(server).unwrap().nacks_sent, 1);
}

#[test]
fn ecn_marks_are_echoed_and_start_a_cwr_episode() {
    let (mut sim, client, server) = connected();
    let mut marked = false;
    sim.hook = Box::new(move |from, h, _| {
        if from == 0 && h.pk_type == PacketType::Data && !marked {
            marked = true;
            return Fate::MarkCe;
        }
        Fate::Deliver
    });
    for _ in 0..4 {
        sim.eps[0]
            .send_message(client, sim.now, 0, &[1u8; 1000])
            .unwrap();
    }
    sim.run_for(ms(500));
    assert_eq!(sim.eps[1].stats(server).unwrap().ecn_ce_received, 1);
    let echo = sim
        .log
        .iter()
        .any(|s| s.from == 1 && s.header.pk_type == PacketType::Ack && s.header.cn == 3);
    assert!(echo, "an ACK with CN = 3");
    let s = sim.eps[0].stats(client).unwrap();
    assert_eq!((s.ecn_echoes_received, s.ecn_episodes), (1, 1));
}

#[test]
fn retransmission_timeout_backs_off_and_recovers() {
    let (mut sim, client, _) = connected();
    // Black hole for the client's DATA for 1.5 s.
    let until = sim.now + ms(1500);
    let clock = std::rc::Rc::new(std::cell::Cell::new(sim.now));
    let c2 = clock.clone();
    sim.hook = Box::new(move |from, h, _| {
        if from == 0 && h.pk_type == PacketType::Data && c2.get() < until {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    sim.eps[0]
        .send_message(client, sim.now, 0, b"persistent")
        .unwrap();
    let mut data_times = Vec::new();
    while sim.now < until + Duration::from_secs(3) {
        sim.run_for(ms(1));
        clock.set(sim.now);
    }
    for s in &sim.log {
        if s.from == 0 && s.header.pk_type == PacketType::Data {
            data_times.push(s.at);
        }
    }
    assert_eq!(sim.received(1).len(), 1);
    let st = sim.eps[0].stats(client).unwrap();
    assert!(st.rtos >= 2, "rtos {}", st.rtos);
    // Gaps between transmissions double (200, 400, 800 ms …).
    let gaps: Vec<Duration> = data_times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() >= 3, "{gaps:?}");
    for w in gaps.windows(2).take(2) {
        let ratio = w[1].as_secs_f64() / w[0].as_secs_f64();
        assert!((1.8..2.2).contains(&ratio), "{gaps:?}");
    }
    assert!(gaps[0] >= ms(200), "minimum RTO 200 ms: {gaps:?}");
}

#[test]
fn packet_pair_sizes_the_initial_window() {
    let c = ConnectionConfig {
        startup: StartupMode::PacketPair,
        max_initial_window_bytes: 1 << 30,
        ..cfg()
    };
    let (mut sim, client) = pair(c.clone(), c, ms(20));
    sim.rate_bps = 10_000_000;
    sim.run_for(ms(300));
    let s = sim.eps[0].stats(client).unwrap();
    assert_eq!(s.probes_started, 1);
    assert_eq!(s.probes_completed, 1);
    let d = s.probe_decision.expect("judged");
    assert_eq!(
        (d.name(), d.pairs_complete, d.pairs_agreeing),
        ("used", 3, 3)
    );
    let p = s.last_probe.unwrap();
    // 1452-byte probes at 10 Mbit/s: 1.1616 ms apart at the peer, which
    // times them itself (ARRIVAL_NS): nothing on the way back counts.
    assert_eq!(p.probe_size, 1452);
    assert_eq!(p.dispersion, Duration::from_nanos(1_161_600));
    assert_eq!(p.bandwidth_bytes_per_sec, 1_250_000);
    // The base RTT ≈ 40 ms + serialisation of the probe (and of the answer).
    assert!(p.latency >= ms(41) && p.latency < ms(43), "{:?}", p.latency);
    let expected = (p.latency.as_nanos() * 1452 / 1_161_600) as u64;
    assert_eq!(p.burst_bytes, expected);
    assert_eq!(s.initial_window_bytes, Some(expected));
    assert_eq!(
        s.cwnd_bytes,
        expected.div_ceil(1452) * 1452,
        "set_initial_window"
    );
    // Three ECHO_1/ECHO_2 pairs left back to back, all of the packet size
    // (so the runtime sends the six in one GSO call).
    let probes: Vec<_> = sim
        .log
        .iter()
        .filter(|x| x.from == 0 && x.header.flags.contains(Flags::REPLY_REQ))
        .filter(|x| matches!(x.header.pk_type, PacketType::Echo1 | PacketType::Echo2))
        .collect();
    assert_eq!(probes.len(), 6);
    assert!(probes.iter().all(|x| x.at == probes[0].at));
    let sizes: Vec<usize> = probes.iter().map(|x| x.bytes.len()).collect();
    assert_eq!(sizes, [1452; 6]);
    // The cap applies.
    let capped = ConnectionConfig {
        startup: StartupMode::PacketPair,
        max_initial_window_bytes: 10_000,
        ..cfg()
    };
    let (mut sim, client) = pair(capped.clone(), capped, ms(20));
    sim.rate_bps = 10_000_000;
    sim.run_for(ms(300));
    assert_eq!(
        sim.eps[0].stats(client).unwrap().initial_window_bytes,
        Some(10_000)
    );
}

#[test]
fn data_leaves_with_the_probes_and_the_probed_window_is_paced() {
    // CUBIC does not pace: the window the pair measured (≈ 52 KB at
    // 10 Mbit/s and 40 ms) must still be spread over an RTT, not burst.
    let c = ConnectionConfig {
        cc: CcConfig::from_name("cubic").expect("registered"),
        startup: StartupMode::PacketPair,
        max_initial_window_bytes: 1 << 30,
        ..cfg()
    };
    let (mut sim, client) = pair(c.clone(), c, ms(20));
    sim.rate_bps = 10_000_000;
    let bulk = vec![7u8; 400_000];
    sim.eps[0].send_message(client, sim.now, 0, &bulk).unwrap();
    sim.run_for(ms(400));
    let from_client = |t: PacketType| -> Vec<Time> {
        sim.log
            .iter()
            .filter(|x| x.from == 0 && x.header.pk_type == t)
            .map(|x| x.at)
            .collect()
    };
    let probes = from_client(PacketType::Echo1);
    let data = from_client(PacketType::Data);
    assert!(!probes.is_empty());
    // No extra RTT: the first DATA leaves with the probes.
    assert_eq!(data[0], probes[0], "data starts with the probe in flight");
    let s = sim.eps[0].stats(client).unwrap();
    let p = s.last_probe.expect("the pair completed");
    let measured_at = p.at;
    // CUBIC left start-up with the measured window as W_max …
    assert!(s.cwnd_bytes >= s.initial_window_bytes.unwrap());
    // … and the packets after the measurement are paced at the measured
    // rate (1.25 MB/s: one 1,452-byte packet per 1.16 ms, in bursts of at
    // most the pacer's capacity), not released in one go: over the first
    // 20 ms after it, at most 10 ms-worth-plus-a-burst left.
    let after: Vec<Time> = data
        .iter()
        .copied()
        .filter(|t| *t >= measured_at && *t < measured_at + ms(20))
        .collect();
    let cap = 10; // packets: the pacer's minimum burst
    let paced_max = cap + 20_000_000 / 1_161_600;
    assert!(
        !after.is_empty() && after.len() as u64 <= paced_max,
        "{} packets in the 20 ms after the measurement (paced: ≤ {paced_max})",
        after.len()
    );
    // No instant releases more than the bucket holds.
    let largest_burst = after
        .chunk_by(|a, b| a == b)
        .map(<[Time]>::len)
        .max()
        .unwrap_or(0);
    assert!(largest_burst <= cap as usize, "a burst of {largest_burst}");
}

#[test]
fn a_lost_probe_falls_back_to_the_initial_window() {
    let c = ConnectionConfig {
        startup: StartupMode::PacketPair,
        ..cfg()
    };
    let (mut sim, client) = pair(c.clone(), c, ms(10));
    sim.hook = Box::new(|_, h, _| {
        if h.pk_type == PacketType::Echo2 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    sim.eps[0]
        .send_message(client, Time::ZERO, 0, b"waits for the probe")
        .unwrap();
    sim.run_for(Duration::from_secs(2));
    let s = sim.eps[0].stats(client).unwrap();
    assert_eq!((s.probes_started, s.probes_completed), (1, 0));
    assert_eq!(s.initial_window_bytes, None);
    assert_eq!(s.cwnd_bytes, 10 * 1452, "the controller's own IW");
    assert_eq!(sim.received(1).len(), 1);
}

#[test]
fn a_reader_that_stops_closes_the_window_and_the_sender_polls_with_status() {
    let small = ConnectionConfig {
        max_receive_buffer_bytes: 8 * 1024,
        max_message_size: 4 * 1024,
        ..cfg()
    };
    let (mut sim, client) = pair(cfg(), small, ms(10));
    sim.run_for(ms(100));
    let server = sim.eps[1].handles()[0];
    sim.read_events[1] = false;
    for i in 0..30u32 {
        let mut m = vec![0u8; 1000];
        m[..4].copy_from_slice(&i.to_be_bytes());
        sim.eps[0].send_message(client, sim.now, 0, &m).unwrap();
    }
    sim.run_for(Duration::from_secs(3));
    let srv = sim.eps[1].stats(server).unwrap();
    assert!(
        srv.messages_delivered <= 8,
        "{} delivered into an 8 KiB buffer",
        srv.messages_delivered
    );
    let cli = sim.eps[0].stats(client).unwrap();
    assert!(
        cli.peer_window_bytes < 1000,
        "window {}",
        cli.peer_window_bytes
    );
    let polls = sim
        .log
        .iter()
        .filter(|s| s.from == 0 && s.header.pk_type == PacketType::Status)
        .count();
    assert!(polls >= 2, "{polls} STATUS polls");
    assert!(sim.log.iter().any(|s| s.from == 1
        && s.header.pk_type == PacketType::Status
        && s.header.flags.contains(Flags::REPLY)));
    // The application reads again: the window reopens, everything arrives.
    sim.read_events[1] = true;
    sim.run_for(Duration::from_secs(5));
    let got = sim.received(1);
    assert_eq!(got.len(), 30);
    assert!(got.iter().enumerate().all(|(i, (n, _))| *n as usize == i));
}

#[test]
fn a_cwin_from_the_receiver_sets_the_senders_window() {
    let (mut sim, client, _) = connected();
    // Craft a CWIN from the server: window 0 for a handover.
    let last = sim.log.iter().rev().find(|s| s.from == 1).unwrap();
    let ack = last.header;
    let next_pn = sim
        .log
        .iter()
        .filter(|s| s.from == 1)
        .filter_map(|s| DatagramRepr::decode(&s.bytes).ok()?.payload.packet_number())
        .max()
        .map_or(0, |pn| pn + 1);
    let mut h = HeaderRepr::new(PacketType::Cwin);
    h.dest_id = ack.dest_id;
    h.src_id = ack.src_id;
    h.sync_no = ack.sync_no;
    h.flags = Flags::ST_CKS;
    let dg = DatagramRepr {
        header: h,
        payload: Payload::Cwin(peregrine_proto::wire::CwinPayload {
            packet_number: next_pn,
            window_bytes: 0,
            reason: peregrine_proto::wire::CwinReason::HANDOVER_START,
        }),
        auth_tag: &[],
    };
    let mut bytes = vec![0u8; dg.buffer_len()];
    dg.emit(&mut bytes).unwrap();
    sim.inject(0, addr(1), &bytes);
    assert_eq!(sim.eps[0].stats(client).unwrap().peer_window_bytes, 0);
    sim.eps[0]
        .send_message(client, sim.now, 0, b"after the handover")
        .unwrap();
    sim.run_for(Duration::from_secs(2));
    // STATUS answers reopen the window and the message goes through.
    assert_eq!(sim.received(1).len(), 1);
}

#[test]
fn a_burst_of_nacks_repeats_the_packet_pair_test() {
    let c = ConnectionConfig {
        startup: StartupMode::PacketPair,
        ..cfg()
    };
    let (mut sim, client) = pair(c.clone(), c, ms(10));
    sim.rate_bps = 10_000_000;
    sim.run_for(Duration::from_millis(1500));
    assert_eq!(sim.eps[0].stats(client).unwrap().probes_completed, 1);
    let mut n = 0;
    sim.hook = Box::new(move |from, h, _| {
        if from == 0 && h.pk_type == PacketType::Data {
            n += 1;
            if n % 4 == 0 {
                return Fate::Drop;
            }
        }
        Fate::Deliver
    });
    for _ in 0..60 {
        sim.eps[0]
            .send_message(client, sim.now, 0, &[3u8; 1400])
            .unwrap();
    }
    sim.run_for(Duration::from_secs(2));
    let s = sim.eps[0].stats(client).unwrap();
    assert!(s.nacks_received >= 3, "{} NACKs", s.nacks_received);
    assert_eq!(
        s.probes_started, 2,
        "re-probed once (then at most once a second)"
    );
    assert_eq!(s.probes_completed, 2);
    assert_eq!(sim.received(1).len(), 60);
}

#[test]
fn the_send_gate_holds_data_during_a_predicted_blockage() {
    let c = ConnectionConfig {
        // The pro-active freeze is an extension (seed 004 holds only on a loss).
        cc: CcConfig::RtwTcp(peregrine_cc::algos::rtwtcp::RtwTcpConfig::with_extensions()),
        ..cfg()
    };
    let (mut sim, client) = pair(c.clone(), c, ms(10));
    sim.run_for(ms(100));
    for _ in 0..400 {
        sim.eps[0]
            .send_message(client, sim.now, 0, &[1u8; 1400])
            .unwrap();
    }
    sim.run_for(ms(200));
    let hint_at = sim.now;
    let blockage = ms(150);
    sim.eps[0].link_hint(
        client,
        hint_at,
        &peregrine_cc::LinkHint {
            kind: peregrine_cc::LinkHintKind::Blockage,
            issued_at: hint_at,
            predicted_duration: Some(blockage),
            cqi: Some(0),
            speed_mps: Some(15.0),
        },
    );
    assert_eq!(
        sim.eps[0].stats(client).unwrap().controller_mode,
        Some("frozen")
    );
    let end = hint_at + blockage;
    let clock = std::rc::Rc::new(std::cell::Cell::new(sim.now));
    let c2 = clock.clone();
    sim.hook = Box::new(move |_, _, _| {
        if c2.get() < end {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    while sim.now < end {
        sim.run_for(ms(1));
        clock.set(sim.now);
    }
    let during = sim
        .log
        .iter()
        .filter(|s| s.from == 0 && s.header.pk_type == PacketType::Data)
        .filter(|s| s.at > hint_at && s.at < end)
        .count();
    assert_eq!(during, 0, "frozen: no DATA until the outage is over");
    let s = sim.eps[0].stats(client).unwrap();
    assert_eq!(s.controller, "rtwtcp");
    while sim.now < end + Duration::from_secs(10) && sim.received(1).len() < 400 {
        sim.run_for(ms(10));
        clock.set(sim.now);
    }
    assert_eq!(sim.received(1).len(), 400);
    assert_eq!(
        sim.eps[0].stats(client).unwrap().loss_episodes,
        0,
        "no reduction for the blockage: {:?}",
        sim.eps[0].stats(client).unwrap()
    );
}
