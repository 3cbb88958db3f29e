//! The kernel-TCP side of the reproduction: an in-process echo server and a
//! client that times "send a buffer, receive it back" over loopback
//! (or, with `--ethernet`, across a veth pair between two namespaces).
//!
//! Framing is a 4-byte big-endian length then the buffer; the server reads
//! the whole buffer before returning it, as an SLTP/Peregrine message is
//! delivered whole, so both transports are timed on the same task. Nagle is
//! off on both ends (`TCP_NODELAY`) so small buffers are not held back.
//! Plain blocking std sockets and one thread per connection: the simplest
//! correct echo, with no runtime of its own to be measured.
//
// The CLI runtime legitimately opens sockets, spawns threads and reads the
// clock here; the clippy bans are for the sans-IO crates.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use anyhow::{bail, Context};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Instant;

/// Largest buffer the echo server accepts (a bad length never allocates
/// more than this).
pub const MAX_BUFFER_BYTES: usize = 64 << 20;

/// A TCP echo server on a loopback port, serving on a background thread
/// for the life of the process.
pub struct TcpEchoServer {
    /// Where it listens.
    pub addr: SocketAddr,
}

impl TcpEchoServer {
    /// Bind `127.0.0.1:0` and start accepting.
    pub fn start() -> anyhow::Result<TcpEchoServer> {
        Self::start_on(std::net::Ipv4Addr::LOCALHOST.into())
    }

    /// Bind `ip:0` (in the calling thread's network namespace, where the
    /// listener stays) and start accepting.
    pub fn start_on(ip: std::net::IpAddr) -> anyhow::Result<TcpEchoServer> {
        let listener = TcpListener::bind((ip, 0))
            .with_context(|| format!("cannot bind the TCP echo server on {ip}"))?;
        let addr = listener.local_addr()?;
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    // A client that goes away mid-message just ends its thread.
                    let _ = serve(conn);
                });
            }
        });
        Ok(TcpEchoServer { addr })
    }
}

fn serve(mut conn: TcpStream) -> std::io::Result<()> {
    conn.set_nodelay(true)?;
    let mut buf = Vec::new();
    loop {
        let mut len = [0u8; 4];
        match conn.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let len = u32::from_be_bytes(len) as usize;
        if len > MAX_BUFFER_BYTES {
            return Err(std::io::Error::other("echo buffer too large"));
        }
        buf.resize(len, 0);
        conn.read_exact(&mut buf)?;
        conn.write_all(&buf)?;
    }
}

/// Connect to `server` and time `count` echoes of a `size_bytes` buffer;
/// the round-trip times in milliseconds. Connection set-up is not timed
/// (as for Peregrine's echo mode, which times round trips on an open
/// connection).
pub fn echo_round_trips(
    server: SocketAddr,
    size_bytes: usize,
    count: usize,
) -> anyhow::Result<Vec<f64>> {
    if size_bytes > MAX_BUFFER_BYTES {
        bail!("echo size {size_bytes} exceeds {MAX_BUFFER_BYTES} bytes");
    }
    let mut conn =
        TcpStream::connect(server).with_context(|| format!("cannot connect to {server}"))?;
    conn.set_nodelay(true)?;
    // A recognisable pattern, checked on return: an echo that corrupts is a bug, not a time.
    let sent: Vec<u8> = (0..size_bytes).map(|i| (i % 251) as u8).collect();
    let mut back = vec![0u8; size_bytes];
    let len = u32::try_from(size_bytes).context("echo size does not fit the 4-byte length")?;
    let mut times = Vec::with_capacity(count);
    for _ in 0..count {
        let start = Instant::now();
        conn.write_all(&len.to_be_bytes())?;
        conn.write_all(&sent)?;
        conn.read_exact(&mut back).context("TCP echo ended early")?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        if back != sent {
            bail!("TCP echo returned different bytes");
        }
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_over_loopback_returns_times() {
        let server = TcpEchoServer::start().expect("bind loopback");
        for size in [1, 1024, 300_000] {
            let times = echo_round_trips(server.addr, size, 3).expect("echo works");
            assert_eq!(times.len(), 3);
            assert!(times.iter().all(|t| t.is_finite() && *t > 0.0));
        }
    }

    #[test]
    fn oversize_request_is_an_error() {
        let server = TcpEchoServer::start().expect("bind loopback");
        assert!(echo_round_trips(server.addr, MAX_BUFFER_BYTES + 1, 1).is_err());
    }
}
