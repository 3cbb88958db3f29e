//! The on-path relay of `security.rs`: one tokio UDP socket between a
//! client and a server; an attack closure decides, datagram by datagram,
//! what to send instead, and the relay counts what was injected per
//! direction.

use peregrine_proto::rng::SeededRng;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::UdpSocket;

/// Which way a datagram goes through the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Client to server.
    ToServer,
    /// Server to client.
    ToClient,
}

impl Dir {
    /// 0 towards the server, 1 towards the client.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What the relay sends for one datagram: each entry is a datagram and
/// whether it is an injection (not the genuine datagram as received).
pub type Out = Vec<(Vec<u8>, bool)>;

/// The attack: sees every genuine datagram (and whether the relay is
/// armed), returns what to send.
pub type Attack = Box<dyn FnMut(Dir, &[u8], bool, &mut SeededRng) -> Out + Send>;

/// Forward unchanged.
pub fn pass(dg: &[u8]) -> Out {
    vec![(dg.to_vec(), false)]
}

/// The relay's shared state.
#[derive(Default)]
pub struct RelayState {
    /// Datagrams injected towards the server (0) and the client (1).
    pub injected: [u64; 2],
    /// Genuine datagrams forwarded unchanged.
    pub forwarded: u64,
}

/// A running relay (stopped when dropped).
pub struct Relay {
    /// Where the client connects.
    pub addr: SocketAddr,
    /// Whether the attack is on (the closure is told).
    pub armed: Arc<AtomicBool>,
    state: Arc<Mutex<RelayState>>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Datagrams injected towards `dir`'s receiver so far.
    pub fn injected(&self, dir: Dir) -> u64 {
        self.state.lock().expect("not poisoned").injected[dir.index()]
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A relay in front of `server`; the first address that is not the
/// server's is the client.
pub async fn relay(server: SocketAddr, mut attack: Attack, seed: u64) -> Relay {
    let sock = UdpSocket::bind("127.0.0.1:0").await.expect("bind relay");
    let addr = sock.local_addr().expect("relay address");
    let armed = Arc::new(AtomicBool::new(false));
    let state = Arc::new(Mutex::new(RelayState::default()));
    let (a, st) = (armed.clone(), state.clone());
    let task = tokio::spawn(async move {
        let mut rng = SeededRng::new(seed);
        let mut client: Option<SocketAddr> = None;
        let mut buf = vec![0u8; 65536];
        loop {
            let Ok((n, from)) = sock.recv_from(&mut buf).await else {
                continue;
            };
            let (to, dir) = if from == server {
                match client {
                    Some(c) => (c, Dir::ToClient),
                    None => continue,
                }
            } else {
                client = Some(from);
                (server, Dir::ToServer)
            };
            let dg = &buf[..n];
            let out = attack(dir, dg, a.load(Ordering::SeqCst), &mut rng);
            for (bytes, injected) in out {
                let _ = sock.send_to(&bytes, to).await;
                let mut s = st.lock().expect("not poisoned");
                if injected {
                    s.injected[dir.index()] += 1;
                } else {
                    s.forwarded += 1;
                }
            }
        }
    });
    Relay {
        addr,
        armed,
        state,
        task,
    }
}
