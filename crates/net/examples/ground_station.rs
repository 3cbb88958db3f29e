//! A ground station: receives a drone's telemetry and video.
//!
//! ```sh
//! cargo run -p peregrine --example ground_station -- 127.0.0.1:5600 [--once]
//! ```
//!
//! Uses the blocking facade (no async code here). Telemetry (stream 1) is
//! handled by an up-call registered with `on_message`: the driver runs it
//! the moment each record is delivered, with no task hop. Video frames
//! (stream 2) are read with `recv`. One line per drone when it lands.

use peregrine::blocking::Endpoint;
use peregrine::ConnectionConfig;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:5600".to_string();
    let mut once = false;
    for a in std::env::args().skip(1) {
        if a == "--once" {
            once = true;
        } else {
            addr = a;
        }
    }
    let ep = Endpoint::server(addr.parse()?, ConnectionConfig::default())?;
    println!("ground station listening on {}", ep.local_addr());
    // Encrypted by default: a fresh keypair per run; a drone that knows
    // this key can pin it (`NoiseConfig::ik`), otherwise it runs Noise_XX.
    if let Some(key) = ep.public_key() {
        println!("public key {key}");
    }
    while let Some(conn) = ep.accept() {
        let telemetry = Arc::new(AtomicU64::new(0));
        let last_seq = Arc::new(AtomicU64::new(0));
        let (t, l) = (telemetry.clone(), last_seq.clone());
        conn.on_message(1, move |_stream, record| {
            t.fetch_add(1, Ordering::Relaxed);
            if let Some(seq) = record.get(..8) {
                let mut b = [0u8; 8];
                b.copy_from_slice(seq);
                l.store(u64::from_be_bytes(b), Ordering::Relaxed);
            }
        });
        let (mut frames, mut video_bytes) = (0u64, 0usize);
        while let Some((stream, bytes)) = conn.recv() {
            if stream == 2 {
                frames += 1;
                video_bytes += bytes.len();
            }
        }
        println!(
            "drone landed: {} telemetry records (last seq {}), {frames} video frames ({video_bytes} bytes)",
            telemetry.load(Ordering::Relaxed),
            last_seq.load(Ordering::Relaxed)
        );
        if once {
            break;
        }
    }
    Ok(())
}
