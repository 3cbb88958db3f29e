//! A ground station multicasting telemetry requests to a swarm of drones
//! (issue 29, item 3): one process per drone, over loopback.
//!
//! ```sh
//! cargo run -p peregrine --example swarm -- [--drones 4] [--requests 50]
//! ```
//!
//! The ground station binds a server endpoint, creates multicast group
//! [`GROUP`] (`Endpoint::group`) and starts each drone as a child process
//! of this same program (`swarm drone ADDR INDEX`). A drone connects,
//! joins the group (`Connection::join_group`), reads the requests on
//! [`DEFAULT_GROUP_STREAM`] (`recv_on`) and answers each with a telemetry
//! record on its own stream 1 (unicast). The station waits until every
//! drone is a member (`GroupEvent::MemberJoined`), sends the requests once
//! each (`Group::send` — the fan-out over the members' connections is the
//! library's), then a final "land" request. Each drone checks it got every
//! request once and in order and exits 0; the station checks every answer
//! arrived and exits non-zero if anything is missing.

use peregrine::{
    Connection, ConnectionConfig, Endpoint, GroupEvent, StreamConfig, DEFAULT_GROUP_STREAM,
};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;
use tokio::time::timeout;

/// The swarm's group id.
const GROUP: u32 = 0xe000_5a00;
/// The stream drones answer on.
const TELEMETRY_STREAM: u16 = 1;
/// The request number that tells drones to land (stop).
const LAND: u64 = u64::MAX;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request: its number, then what is asked for.
fn request(n: u64) -> Vec<u8> {
    let mut r = n.to_be_bytes().to_vec();
    r.extend_from_slice(b"battery,position,link");
    r
}

fn number(bytes: &[u8]) -> Option<u64> {
    let mut b = [0u8; 8];
    b.copy_from_slice(bytes.get(..8)?);
    Some(u64::from_be_bytes(b))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("drone") {
        let (Some(addr), Some(index)) = (args.get(1), args.get(2)) else {
            return Err("usage: swarm drone ADDR INDEX".into());
        };
        return drone(addr.parse()?, index.parse()?).await;
    }
    let mut drones = 4usize;
    let mut requests = 50u64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--drones" => {
                drones = value
                    .parse()
                    .map_err(|e| format!("--drones {value}: {e}"))?
            }
            "--requests" => {
                requests = value
                    .parse()
                    .map_err(|e| format!("--requests {value}: {e}"))?
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    station(drones, requests).await
}

/// The ground station.
async fn station(drones: usize, requests: u64) -> Result<(), BoxError> {
    let ep = Endpoint::server("127.0.0.1:0".parse()?, ConnectionConfig::default())?;
    let group = ep.group(GROUP)?;
    let addr = ep.local_addr();
    println!("ground station on {addr}, group {GROUP:#x}, {drones} drones");
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for i in 0..drones {
        children.push(
            Command::new(&exe)
                .args(["drone", &addr.to_string(), &i.to_string()])
                .spawn()?,
        );
    }
    let mut conns: Vec<Connection> = Vec::new();
    while conns.len() < drones {
        let c = timeout(Duration::from_secs(20), ep.accept())
            .await?
            .ok_or("endpoint stopped")?;
        conns.push(c);
    }
    let mut members = 0;
    while members < drones {
        match timeout(Duration::from_secs(20), group.next_event()).await? {
            Some(GroupEvent::MemberJoined { .. }) => members += 1,
            Some(other) => println!("group event {other:?}"),
            None => return Err("endpoint stopped".into()),
        }
    }
    println!("all {drones} drones joined; sending {requests} requests");
    // Answers, read concurrently per drone.
    let readers: Vec<_> = conns
        .iter()
        .cloned()
        .map(|c| {
            tokio::spawn(async move {
                let mut got = BTreeSet::new();
                while let Ok(Some(a)) =
                    timeout(Duration::from_secs(10), c.recv_on(TELEMETRY_STREAM)).await
                {
                    match number(&a) {
                        Some(LAND) => break,
                        Some(n) => {
                            got.insert(n);
                        }
                        None => {}
                    }
                }
                got
            })
        })
        .collect();
    for n in 0..requests {
        group.send(&request(n)).await?;
    }
    group.send(&request(LAND)).await?;
    let mut ok = true;
    for (i, r) in readers.into_iter().enumerate() {
        let got = r.await?;
        let complete = got.len() as u64 == requests && got.iter().copied().eq(0..requests);
        ok &= complete;
        println!("drone {i}: {} of {requests} answers", got.len());
    }
    for mut c in children {
        ok &= c.wait()?.success();
    }
    let s = group.stats();
    println!(
        "group: {} requests admitted, {} copies sent (one per drone), largest queue {}",
        s.messages_admitted, s.member_messages_sent, s.max_queue_messages
    );
    if ok {
        println!("every drone got every request once, in order, and answered");
        Ok(())
    } else {
        Err("some drone missed requests or answers".into())
    }
}

/// One drone (a child process).
async fn drone(station: SocketAddr, index: u32) -> Result<(), BoxError> {
    let ep = Endpoint::client("127.0.0.1:0".parse()?)?;
    let conn = ep.connect(station, ConnectionConfig::default()).await?;
    conn.open_stream(TELEMETRY_STREAM, StreamConfig::default())?;
    conn.join_group(GROUP)?;
    let mut expected = 0u64;
    loop {
        let req = timeout(Duration::from_secs(20), conn.recv_on(DEFAULT_GROUP_STREAM))
            .await?
            .ok_or("connection closed before landing")?;
        let n = number(&req).ok_or("short request")?;
        let mut answer = n.to_be_bytes().to_vec();
        answer.extend_from_slice(&index.to_be_bytes());
        answer.extend_from_slice(format!("battery=87% pos=({index},{n})").as_bytes());
        conn.send(TELEMETRY_STREAM, answer).await?;
        if n == LAND {
            break;
        }
        if n != expected {
            return Err(format!("drone {index}: request {n}, expected {expected}").into());
        }
        expected += 1;
    }
    println!("drone {index}: {expected} requests, in order, then landed");
    conn.close().await;
    Ok(())
}
