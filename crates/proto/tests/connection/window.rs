//! The handover window between two in-memory endpoints
//! ([`peregrine_proto::harness::driver`]).

use crate::basic::{cfg, connected, ms, pair};
use peregrine_proto::wire::{CwinReason, DatagramRepr, Flags, PacketType, Payload};
use peregrine_proto::WindowTarget;
use std::time::Duration;

/// CWINs node `from` sent: (window, reason, header WINDOW_SIZE).
fn cwins(
    sim: &peregrine_proto::harness::driver::Driver,
    from: usize,
) -> Vec<(u32, CwinReason, u32)> {
    sim.log
        .iter()
        .filter(|s| s.from == from)
        .filter_map(|s| match DatagramRepr::decode(&s.bytes).ok()?.payload {
            Payload::Cwin(c) => Some((c.window_bytes, c.reason, s.header.window_size)),
            _ => None,
        })
        .collect()
}

#[test]
fn handover_closing_sends_cwin_with_the_reason_and_advertises_zero() {
    let (mut sim, client, server) = connected();
    assert!(sim.eps[1].set_receive_window(server, sim.now, WindowTarget::Connection, 0));
    sim.run_for(ms(50));
    assert_eq!(cwins(&sim, 1), vec![(0, CwinReason::HANDOVER_START, 0)]);
    assert_eq!(sim.eps[1].stats(server).unwrap().advertised_window_bytes, 0);
    let cli = sim.eps[0].stats(client).unwrap();
    assert_eq!(cli.peer_window_bytes, 0);
    assert_eq!(cli.window.cwins_received, 1);
    assert_eq!(cli.window.window_pauses, 1);
    // Reopening to a cap: handover_end, and the cap is what is advertised.
    assert!(sim.eps[1].set_receive_window(server, sim.now, WindowTarget::Connection, 5_000));
    sim.run_for(ms(50));
    // WINDOW_SIZE counts units of 2^WINDOW_SCALE (3 for the 4 MiB buffer).
    assert_eq!(
        cwins(&sim, 1)[1],
        (5_000, CwinReason::HANDOVER_END, 5_000 >> 3)
    );
    assert_eq!(sim.eps[0].stats(client).unwrap().peer_window_bytes, 5_000);
    // An explicit reason, and removing the cap.
    assert!(sim.eps[1].set_receive_window_with_reason(
        server,
        sim.now,
        WindowTarget::Connection,
        u64::MAX,
        Some(CwinReason::APP_RESUME)
    ));
    sim.run_for(ms(50));
    let last = cwins(&sim, 1)[2];
    assert_eq!(last.1, CwinReason::APP_RESUME);
    assert!(
        u64::from(last.0) > 1 << 20,
        "the whole free buffer: {}",
        last.0
    );
    let srv = sim.eps[1].stats(server).unwrap();
    assert_eq!(srv.window.cwins_sent, 3);
    assert!(srv.advertised_window_bytes > 1 << 20);
    // An unknown connection is refused.
    assert!(!sim.eps[1].set_receive_window(
        peregrine_proto::endpoint::ConnectionHandle(999),
        sim.now,
        WindowTarget::Connection,
        0
    ));
}

#[test]
fn handover_status_polls_back_off_to_the_configured_bound() {
    let bound = ms(700);
    let client_cfg = peregrine_proto::ConnectionConfig {
        max_status_interval: bound,
        ..cfg()
    };
    let (mut sim, client) = pair(client_cfg, cfg(), ms(10));
    sim.run_for(ms(100));
    let server = sim.eps[1].handles()[0];
    sim.eps[1].set_receive_window(server, sim.now, WindowTarget::Connection, 0);
    sim.run_for(ms(30));
    for _ in 0..5 {
        sim.eps[0]
            .send_message(client, sim.now, 0, &[7u8; 500])
            .unwrap();
    }
    sim.run_for(Duration::from_secs(6));
    let polls: Vec<_> = sim
        .log
        .iter()
        .filter(|s| {
            s.from == 0
                && s.header.pk_type == PacketType::Status
                && s.header.flags.contains(Flags::REPLY_REQ)
        })
        .map(|s| s.at)
        .collect();
    assert!(polls.len() >= 6, "{polls:?}");
    let gaps: Vec<Duration> = polls.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.windows(2).all(|g| g[1] >= g[0]), "{gaps:?}");
    assert!(gaps.iter().all(|g| *g <= bound), "{gaps:?}");
    assert_eq!(*gaps.last().unwrap(), bound);
    assert_eq!(sim.received(1).len(), 0, "nothing passes a closed window");
    let cli = sim.eps[0].stats(client).unwrap();
    assert_eq!(cli.window.status_polls_sent, polls.len() as u64);
    assert_eq!((cli.rtos, cli.packets_lost), (0, 0));
    // Reopen: everything arrives, the polls stop.
    sim.eps[1].set_receive_window(server, sim.now, WindowTarget::Connection, u64::MAX);
    sim.run_for(ms(200));
    assert_eq!(sim.received(1).len(), 5);
    let cli = sim.eps[0].stats(client).unwrap();
    assert_eq!(cli.window.status_polls_sent, polls.len() as u64);
    assert!(cli.window.window_paused >= Duration::from_secs(6));
}

#[test]
fn handover_pause_is_no_idle_restart_but_plain_idleness_is() {
    // Plain idleness: 2 s with nothing to send, then more data.
    let (mut sim, client, _) = connected();
    sim.eps[0]
        .send_message(client, sim.now, 0, &[1u8; 3000])
        .unwrap();
    sim.run_for(Duration::from_secs(2));
    sim.eps[0]
        .send_message(client, sim.now, 0, &[2u8; 3000])
        .unwrap();
    sim.run_for(ms(200));
    assert_eq!(sim.received(1).len(), 2);
    assert_eq!(sim.eps[0].stats(client).unwrap().idle_restarts, 1);

    // A handover pause of the same length, data waiting all along.
    let (mut sim, client, server) = connected();
    sim.eps[0]
        .send_message(client, sim.now, 0, &[1u8; 3000])
        .unwrap();
    sim.run_for(ms(100));
    sim.eps[1].set_receive_window(server, sim.now, WindowTarget::Connection, 0);
    sim.run_for(ms(30));
    sim.eps[0]
        .send_message(client, sim.now, 0, &[2u8; 3000])
        .unwrap();
    sim.run_for(Duration::from_secs(2));
    assert_eq!(sim.received(1).len(), 1, "held by the closed window");
    sim.eps[1].set_receive_window(server, sim.now, WindowTarget::Connection, u64::MAX);
    sim.run_for(ms(200));
    assert_eq!(sim.received(1).len(), 2);
    let cli = sim.eps[0].stats(client).unwrap();
    assert_eq!(cli.idle_restarts, 0, "the pause is not idle time");
    assert_eq!(cli.window.window_pauses, 1);
}

#[test]
fn handover_a_stale_cwin_overtaken_by_a_newer_packet_is_ignored() {
    use peregrine_proto::wire::{CwinPayload, HeaderRepr};
    let (mut sim, client, _) = connected();
    let last = sim.log.iter().rev().find(|s| s.from == 1).unwrap().header;
    let next_pn = sim
        .log
        .iter()
        .filter(|s| s.from == 1)
        .filter_map(|s| DatagramRepr::decode(&s.bytes).ok()?.payload.packet_number())
        .max()
        .map_or(0, |pn| pn + 1);
    let cwin = |pn: u32, window_bytes: u32| {
        let mut h = HeaderRepr::new(PacketType::Cwin);
        h.dest_id = last.dest_id;
        h.src_id = last.src_id;
        h.sync_no = last.sync_no;
        h.flags = Flags::ST_CKS;
        let dg = DatagramRepr {
            header: h,
            payload: Payload::Cwin(CwinPayload {
                packet_number: pn,
                window_bytes,
                reason: CwinReason::UNSPECIFIED,
            }),
            auth_tag: &[],
        };
        let mut bytes = vec![0u8; dg.buffer_len()];
        dg.emit(&mut bytes).unwrap();
        bytes
    };
    // The newer one (pn + 5) arrives first; the older (pn + 2) is stale.
    sim.inject(
        0,
        peregrine_proto::harness::driver::addr(1),
        &cwin(next_pn + 5, 100_000),
    );
    assert_eq!(sim.eps[0].stats(client).unwrap().peer_window_bytes, 100_000);
    sim.inject(
        0,
        peregrine_proto::harness::driver::addr(1),
        &cwin(next_pn + 2, 0),
    );
    let cli = sim.eps[0].stats(client).unwrap();
    assert_eq!(
        cli.peer_window_bytes, 100_000,
        "the stale CWIN changed nothing"
    );
    assert_eq!(cli.window.cwins_received, 2);
    assert_eq!(cli.window.window_pauses, 0);
}
