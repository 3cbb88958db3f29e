//! `SansIo::poll_transmit_at` (a datagram built and sealed at an offset
//! of the caller's buffer, as the runtime builds its send batch) against
//! `SansIo::poll_transmit` (one datagram per buffer, as the simulator
//! takes them): two worlds driven alike, one through each, must send the
//! same datagrams — byte for byte, in the same order — and the first must
//! never change a byte of the caller's buffer before the offset.

use super::integrity_tests::addr;
use super::Endpoint;
use crate::connection::{ConnectionConfig, EndpointConfig};
use crate::crypto::{NoiseConfig, SecurityConfig, StaticKeypair};
use crate::io::{SansIo, Transmit};
use crate::wire::StartupMode;
use crate::Time;
use proptest::prelude::*;
use std::time::Duration;

/// How each world takes its datagrams.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// `poll_transmit`, one fresh datagram per call.
    Whole,
    /// `poll_transmit_at` at the end of a batch that holds up to
    /// `batch` datagrams (then starts over, its bytes left stale).
    At { batch: usize },
}

/// A client endpoint (`conns` connections) and a server, plus the batch
/// vector of the `At` mode.
struct World {
    mode: Mode,
    a: Endpoint,
    b: Endpoint,
    handles: Vec<crate::ConnectionHandle>,
    batch: Vec<u8>,
    /// The batch's end and datagram count.
    used: usize,
    held: usize,
}

fn security(kind: u8) -> (Option<SecurityConfig>, Option<SecurityConfig>) {
    let (ck, sk) = (
        StaticKeypair::from_private([1; 32]),
        StaticKeypair::from_private([2; 32]),
    );
    match kind {
        0 => (None, None),
        1 => (
            Some(SecurityConfig::Noise(NoiseConfig::ik(ck, sk.public()))),
            Some(SecurityConfig::Noise(NoiseConfig::server(sk))),
        ),
        // XX: the client appends message 3 behind its datagrams until the
        // server answers (the sealer's write past the tag).
        _ => (
            Some(SecurityConfig::Noise(NoiseConfig::xx(ck))),
            Some(SecurityConfig::Noise(NoiseConfig::server(sk))),
        ),
    }
}

impl World {
    fn new(mode: Mode, conns: usize, kind: u8) -> World {
        let (c, s) = security(kind);
        let cfg = |security| ConnectionConfig {
            startup: StartupMode::SlowStart,
            security,
            ..ConnectionConfig::default()
        };
        let mut a = Endpoint::new(EndpointConfig::default(), 11);
        let b = Endpoint::new(EndpointConfig::server(cfg(s)), 12);
        let handles = (0..conns)
            .map(|_| a.connect(Time::ZERO, addr(1), cfg(c.clone())).unwrap())
            .collect();
        World {
            mode,
            a,
            b,
            handles,
            batch: Vec::new(),
            used: 0,
            held: 0,
        }
    }

    /// The next datagram of side `from` (0: the client), checked for the
    /// batch's prefix staying as it was.
    fn poll(&mut self, from: usize, now: Time) -> Option<(Transmit, Vec<u8>)> {
        let ep = if from == 0 { &mut self.a } else { &mut self.b };
        match self.mode {
            Mode::Whole => {
                let mut buf = Vec::new();
                let t = ep.poll_transmit(now, &mut buf)?;
                assert_eq!(buf.len(), t.size, "the vector holds exactly the datagram");
                Some((t, buf))
            }
            Mode::At { batch } => {
                if self.held >= batch {
                    // Start over: what follows is stale, never zeroed.
                    (self.used, self.held) = (0, 0);
                }
                let before = self.batch.get(..self.used).unwrap().to_vec();
                let t = ep.poll_transmit_at(now, &mut self.batch, self.used);
                assert_eq!(
                    self.batch.get(..self.used),
                    Some(&before[..]),
                    "the bytes before the offset never change"
                );
                let t = t?;
                let dg = self.batch[self.used..self.used + t.size].to_vec();
                self.used += t.size;
                self.held += 1;
                Some((t, dg))
            }
        }
    }

    /// Every datagram both ways at `now` (at most 50 rounds), in order.
    fn pump(&mut self, now: Time, log: &mut Vec<(usize, Transmit, Vec<u8>)>) {
        for _ in 0..50 {
            let mut moved = false;
            for from in [0, 1] {
                while let Some((t, mut dg)) = self.poll(from, now) {
                    log.push((from, t, dg.clone()));
                    let to = if from == 0 { &mut self.b } else { &mut self.a };
                    to.handle_datagram(now, addr(from), None, &mut dg);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
    }

    /// Runs the script: per step, the messages sent (connection, length)
    /// and the milliseconds that pass. Everything both sides sent.
    fn run(&mut self, script: &[(Vec<(usize, usize)>, u64)]) -> Vec<(usize, Transmit, Vec<u8>)> {
        let mut log = Vec::new();
        let mut now = Time::ZERO;
        self.pump(now, &mut log);
        for (sends, ms) in script {
            for &(c, len) in sends {
                let h = self.handles[c % self.handles.len()];
                let body: Vec<u8> = (0..len).map(|i| (i * 31 + c) as u8).collect();
                let _ = self.a.send_message(h, now, 0, body);
            }
            self.pump(now, &mut log);
            now += Duration::from_millis(*ms);
            self.a.handle_timeout(now);
            self.b.handle_timeout(now);
            self.pump(now, &mut log);
            while self.a.poll_event().is_some() {}
            while self.b.poll_event().is_some() {}
        }
        log
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn datagrams_built_at_an_offset_are_those_built_alone(
        conns in 1usize..5,
        kind in 0u8..3,
        batch in 1usize..50,
        script in proptest::collection::vec(
            (proptest::collection::vec((0usize..5, 0usize..20_000), 0..4), 1u64..40),
            1..25,
        ),
    ) {
        let whole = World::new(Mode::Whole, conns, kind).run(&script);
        let at = World::new(Mode::At { batch }, conns, kind).run(&script);
        prop_assert!(whole.len() > conns, "the handshakes at least");
        let sent: usize = script.iter().flat_map(|(s, _)| s).map(|&(_, l)| l).sum();
        if sent > 2_000 {
            prop_assert!(whole.iter().any(|(_, t, _)| t.size > 1_000), "full DATA datagrams");
        }
        prop_assert_eq!(whole.len(), at.len());
        for (i, (w, a)) in whole.iter().zip(&at).enumerate() {
            prop_assert_eq!(w, a, "datagram {}", i);
        }
    }
}
