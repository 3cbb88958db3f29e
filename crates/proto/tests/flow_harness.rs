//! Per-stream credit on the impairment harness with 5 % loss both ways: a
//! stream the receiving application does not read stalls at its credit
//! while another keeps flowing, and everything arrives once it reads again
//! (no deadlock although ACKs carrying credit get lost).

#[path = "sched/common.rs"]
mod common;

use common::*;
use peregrine_proto::harness::PipeConfig;
use peregrine_proto::{ConnectionConfig, SchedulerConfig, Time};
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

#[test]
fn flow_credit_on_the_harness_with_five_percent_loss() {
    let pipe = PipeConfig {
        rate_bps: 2_000_000,
        delay_us: 20_000,
        loss: 0.05,
        ..PipeConfig::default()
    };
    let config = ConnectionConfig {
        initial_stream_credit: Some(3),
        ..cubic(SchedulerConfig::RoundRobin)
    };
    let mut p = Pair::new(pipe, config, 0xf10);
    // START may be lost: wait for the connection.
    while !p.connected && p.now() < Time::from_secs_f64(20.0) {
        let t = p.now() + 100 * MS;
        p.run_until(t, 10 * MS);
    }
    assert!(p.connected);
    let start = p.now();
    let (b, conn) = (p.b, p.conn);
    let server = p.h.node_mut(b).handles()[0];
    assert!(p.h.node_mut(b).hold_stream(server, 1, true));
    const N: u32 = 60;
    for i in 0..N {
        for stream in [1u16, 2] {
            let now = p.now();
            p.sender()
                .send_message(conn, now, stream, &[i as u8; 200])
                .expect("queued");
        }
    }
    p.run_until(start + Duration::from_secs(15), 10 * MS);
    let on = |p: &Pair, s: u16| -> Vec<u32> {
        p.delivered
            .iter()
            .filter(|d| d.1 == s)
            .map(|d| d.2)
            .collect()
    };
    assert_eq!(on(&p, 2), (0..N).collect::<Vec<_>>(), "stream 2 flows");
    assert!(on(&p, 1).is_empty(), "stream 1 is not read");
    // The sender stopped at the credit: 3 messages of stream 1 sent.
    let stats = p.sender().stats(conn).expect("open");
    let s1 = stats.streams.iter().find(|s| s.id == 1).expect("stream 1");
    assert_eq!(s1.bytes_sent, 3 * 200, "{s1:?}");
    p.h.node_mut(b).hold_stream(server, 1, false);
    p.run_until(start + Duration::from_secs(60), 10 * MS);
    assert_eq!(on(&p, 1), (0..N).collect::<Vec<_>>(), "stream 1 resumed");
}
