//! A drone: telemetry on a priority stream beside a video stream.
//!
//! ```sh
//! cargo run -p peregrine --example ground_station -- 127.0.0.1:5600 &
//! cargo run -p peregrine --example drone -- 127.0.0.1:5600 5
//! ```
//!
//! Stream 1 carries 50 Hz telemetry (class 0, reliable, in order); stream
//! 2 carries 30 fps video frames of 20–40 KB (class 3, each frame useless
//! after 200 ms: it carries a deadline and is skipped if late). The
//! absolute-priority scheduler sends telemetry first whenever both wait,
//! and each stream has its own send buffer, so a video backlog never
//! keeps a telemetry record from being queued. A third task reads the
//! connection's events and prints the late frames the drone gave up.
//! Uses the async API (tokio).

use peregrine::{
    ConnectionConfig, ConnectionEvent, Endpoint, SchedulerConfig, StreamConfig, StreamReliability,
};
use std::time::Duration;

const TELEMETRY: u16 = 1;
const VIDEO: u16 = 2;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let ground = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:5600".into())
        .parse()?;
    let seconds: u64 = args.next().map_or(Ok(5), |s| s.parse())?;
    let bind = if let std::net::SocketAddr::V6(_) = ground {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    };
    let ep = Endpoint::client(bind.parse()?)?;
    let config = ConnectionConfig {
        scheduler: SchedulerConfig::Abs,
        ..ConnectionConfig::default()
    };
    let conn = ep.connect(ground, config).await?;
    conn.open_stream(
        TELEMETRY,
        StreamConfig {
            class: 0,
            ..StreamConfig::default()
        },
    )?;
    conn.open_stream(
        VIDEO,
        StreamConfig {
            class: 3,
            reliability: StreamReliability::ReliableOrdered,
            ..StreamConfig::default()
        },
    )?;
    println!("connected to {ground}; flying for {seconds} s");

    // Events: a video frame abandoned at its deadline comes back with the
    // id `send_with_deadline` returned.
    let events = {
        let conn = conn.clone();
        tokio::spawn(async move {
            while let Some(ev) = conn.next_event().await {
                match ev {
                    ConnectionEvent::MessageAbandoned { id, reason } => {
                        println!("video frame #{} dropped: {reason:?}", id.number);
                    }
                    ConnectionEvent::Closed { .. } => break,
                    other => println!("event: {other:?}"),
                }
            }
        })
    };

    // Video: its own task, so a full send buffer never delays telemetry.
    let video = {
        let conn = conn.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(33));
            for frame in 0..seconds * 30 {
                tick.tick().await;
                let size = 20_000 + (frame as usize * 7_919) % 20_000;
                let mut f = vec![0u8; size];
                f[..8].copy_from_slice(&frame.to_be_bytes());
                if conn
                    .send_with_deadline(VIDEO, &f, Duration::from_millis(200))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        })
    };
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    for seq in 0..seconds * 50 {
        tick.tick().await;
        // A MAVLink-sized telemetry record: sequence, then a fake attitude.
        let mut t = [0u8; 40];
        t[..8].copy_from_slice(&seq.to_be_bytes());
        conn.send(TELEMETRY, &t).await?;
    }
    video.await?;
    let stats = conn.stats();
    let reason = conn.close().await;
    events.abort();
    if let Some(s) = stats {
        println!(
            "sent {} messages ({} abandoned), {} packets, {} retransmitted, srtt {:?}; closed: {reason:?}",
            s.messages_sent, s.messages_abandoned, s.data_packets_sent, s.packets_retransmitted, s.srtt
        );
    }
    Ok(())
}
