//! Moving bytes between a local socket and a flow's stream (both sides).

use super::stats::Flow;
use super::wire::{TCP_DATA, TCP_FIN, TCP_RESET};
use crate::{Connection, ConnectionEvent};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How a TCP flow ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TcpEnd {
    /// Both directions finished with FIN.
    Finished,
    /// The local socket or the peer's failed: the local socket was reset.
    Reset(String),
    /// The tunnel connection ended: the local socket was reset.
    TunnelClosed,
}

impl TcpEnd {
    pub fn reason(&self) -> String {
        match self {
            TcpEnd::Finished => "finished".into(),
            TcpEnd::Reset(why) => format!("reset: {why}"),
            TcpEnd::TunnelClosed => "tunnel closed: connection reset".into(),
        }
    }
}

/// Carry `sock` over `stream` both ways until both sides have finished
/// (half-close honoured: a FIN each way, in either order) or something
/// failed, in which case the socket is reset (SO_LINGER 0), so the local
/// program sees a failure, never a clean end of a cut transfer.
/// `towards_target`: this socket's bytes go towards the target (client).
pub(crate) async fn tcp(
    conn: &Connection,
    stream: u16,
    sock: TcpStream,
    flow: &Flow,
    chunk: usize,
    towards_target: bool,
) -> TcpEnd {
    let _ = sock.set_nodelay(true);
    let mut guard = ResetOnDrop { sock, clean: false };
    let end = {
        let (mut rd, mut wr) = guard.sock.split();
        let count_read = |n: usize| {
            if towards_target {
                flow.add_up(n)
            } else {
                flow.add_down(n)
            }
        };
        let count_written = |n: usize| {
            if towards_target {
                flow.add_down(n)
            } else {
                flow.add_up(n)
            }
        };
        // Local socket → stream.
        let reader = async {
            loop {
                let mut buf = vec![0u8; 1 + chunk];
                buf[0] = TCP_DATA;
                match rd.read(&mut buf[1..]).await {
                    Ok(0) => {
                        return match conn.send(stream, vec![TCP_FIN]).await {
                            Ok(_) => Ok(()),
                            Err(_) => Err(TcpEnd::TunnelClosed),
                        };
                    }
                    Ok(n) => {
                        buf.truncate(1 + n);
                        if conn.send(stream, buf).await.is_err() {
                            return Err(TcpEnd::TunnelClosed);
                        }
                        count_read(n);
                    }
                    Err(e) => {
                        let _ = conn.send(stream, vec![TCP_RESET]).await;
                        return Err(TcpEnd::Reset(format!("local read: {e}")));
                    }
                }
            }
        };
        // Stream → local socket.
        let writer = async {
            loop {
                let Some(m) = conn.recv_on(stream).await else {
                    return Err(TcpEnd::TunnelClosed);
                };
                match m.first() {
                    Some(&TCP_DATA) => {
                        if let Err(e) = wr.write_all(&m[1..]).await {
                            let _ = conn.send(stream, vec![TCP_RESET]).await;
                            return Err(TcpEnd::Reset(format!("local write: {e}")));
                        }
                        count_written(m.len() - 1);
                    }
                    Some(&TCP_FIN) => {
                        let _ = wr.shutdown().await;
                        return Ok(());
                    }
                    Some(&TCP_RESET) => return Err(TcpEnd::Reset("by the other side".into())),
                    _ => {
                        let _ = conn.send(stream, vec![TCP_RESET]).await;
                        return Err(TcpEnd::Reset("malformed tunnel message".into()));
                    }
                }
            }
        };
        tokio::pin!(reader);
        tokio::pin!(writer);
        let (mut read_done, mut write_done) = (false, false);
        loop {
            tokio::select! {
                r = &mut reader, if !read_done => match r {
                    Ok(()) => {
                        read_done = true;
                        flow.set_state(super::FlowState::HalfClosed);
                    }
                    Err(e) => break e,
                },
                w = &mut writer, if !write_done => match w {
                    Ok(()) => {
                        write_done = true;
                        flow.set_state(super::FlowState::HalfClosed);
                    }
                    Err(e) => break e,
                },
            }
            if read_done && write_done {
                break TcpEnd::Finished;
            }
        }
    };
    guard.clean = end == TcpEnd::Finished;
    drop(guard);
    end
}

/// A TCP socket that is reset, not closed, when dropped before its flow
/// finished (an error, the tunnel's end, or the task aborted): the
/// program must not take a cut stream for a whole one.
pub(crate) struct ResetOnDrop {
    pub sock: TcpStream,
    pub clean: bool,
}

impl Drop for ResetOnDrop {
    fn drop(&mut self) {
        if !self.clean {
            let _ = self.sock.set_zero_linger();
        }
    }
}

/// Read and drop what is left on `stream` (messages in flight when the
/// flow ended) until nothing came for `quiet`, so the connection's inbox
/// does not keep them.
pub(crate) async fn drain(conn: Connection, stream: u16, quiet: Duration) {
    while let Ok(Some(_)) = tokio::time::timeout(quiet, conn.recv_on(stream)).await {}
}

/// Follow a tunnel connection's events until it ends (both sides): count
/// each abandoned message on its flow, and answer the peer's close with
/// ours so both ends finish now rather than at the idle timeout. Returns
/// why the connection ended, in words. O(log flows) per event.
pub(crate) async fn watch_connection(
    conn: &Connection,
    flows: &Mutex<BTreeMap<u16, Arc<Flow>>>,
) -> String {
    while let Some(e) = conn.next_event().await {
        match e {
            ConnectionEvent::MessageAbandoned { id, .. } => {
                let flow = flows
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&id.stream)
                    .cloned();
                if let Some(f) = flow {
                    f.abandoned.fetch_add(1, Relaxed);
                }
            }
            ConnectionEvent::Closed { reason, .. } => return reason.to_string(),
            ConnectionEvent::PeerClosed => {
                conn.close().await;
                return "the other side closed the tunnel".to_string();
            }
            _ => {}
        }
    }
    conn.close_reason()
        .map_or("closed".to_string(), |r| r.to_string())
}
