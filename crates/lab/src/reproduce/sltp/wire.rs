//! What one echo puts on the wire (`--ethernet` only): frames and bytes each
//! way per round trip, Peregrine beside kernel TCP, read from the two
//! shapers' statistics.
//!
//! Seed 003's network time is wire time plus time spent in the hosts. On
//! the shaped veth the first part is countable: every frame leaves through
//! one of the two token buckets, whose statistics bill each segment of an
//! offloaded super-packet as the frame it would be on Ethernet, so their
//! counts before and after a connection say exactly what it cost — data,
//! acknowledgements, set-up and teardown. To leave set-up and teardown out, each transport runs
//! two connections at each size, one of [`SHORT_ECHOES`] round trips and one
//! of [`SHORT_ECHOES`] + [`COUNTED_ECHOES`], and the difference is divided by
//! [`COUNTED_ECHOES`]: what one more echo costs. Nothing else uses the pair
//! (the hogs run in the host's namespace), so the counts are the
//! transports' own. Acknowledgements are not quite the same on every
//! connection (TCP acknowledges each receive-offloaded batch, and more often
//! while a connection is young), so the per-echo frame count carries a few
//! frames of noise; twenty counted echoes keep it small against a 64 KiB
//! echo's ≈ 45 data frames.
//!
//! From the bytes, the serialisation time at the pair's rate gives the
//! wire's share of the network time; the rest of the median is time off the
//! wire — user-space work, system calls, the kernel's stack — which is where
//! kernel TCP's offloads (TSO/GRO, checksums in the stack, no per-datagram
//! sealing or framing in user space) save what SLTP's user-space datagrams
//! cannot (docs/performance.md, "Where a 64 KiB echo's time goes on the wire").

// Wall-clock pauses let a connection's last frames (FIN, END, a delayed
// ACK) leave before the counters are read; the sans-IO bans do not apply.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use super::report::Transport;
use crate::netns::{Side, VethPair};
use anyhow::anyhow;
use serde::Serialize;
use std::time::Duration;

/// Round trips on the shorter of the two connections per point.
pub const SHORT_ECHOES: usize = 2;
/// Round trips the longer connection adds, over which the cost of one echo
/// is averaged.
pub const COUNTED_ECHOES: usize = 20;
/// How long after a connection ends its counters are read: long enough for
/// its closing frames and a delayed ACK (40 ms in Linux) to leave.
const SETTLE: Duration = Duration::from_millis(120);

/// Frames and bytes on the pair, each way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Frames the client sent (towards the server).
    pub out_frames: u64,
    /// Bytes of those frames (each with its Ethernet, IP and transport
    /// headers, as the shaper bills them).
    pub out_bytes: u64,
    /// Frames the client received.
    pub in_frames: u64,
    /// Bytes of those frames.
    pub in_bytes: u64,
}

impl Counters {
    /// `self − earlier`, per direction (`None` if a counter went backwards,
    /// i.e. the device was reset).
    fn since(self, earlier: Counters) -> Option<Counters> {
        Some(Counters {
            out_frames: self.out_frames.checked_sub(earlier.out_frames)?,
            out_bytes: self.out_bytes.checked_sub(earlier.out_bytes)?,
            in_frames: self.in_frames.checked_sub(earlier.in_frames)?,
            in_bytes: self.in_bytes.checked_sub(earlier.in_bytes)?,
        })
    }
}

/// What one more echo of `size_bytes` cost on the wire, for one transport.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WireEcho {
    /// `peregrine` or `tcp`.
    pub transport: Transport,
    /// Buffer sent and received back, bytes.
    pub size_bytes: u64,
    /// Frames from client to server per echo (request data and the
    /// acknowledgements of the echo).
    pub out_frames: f64,
    /// Bytes of those frames per echo, Ethernet header included.
    pub out_bytes: f64,
    /// Frames from server to client per echo.
    pub in_frames: f64,
    /// Bytes of those frames per echo.
    pub in_bytes: f64,
    /// Both directions' bytes serialised at the pair's rate, ms: the
    /// wire's share of one echo if no frame overlapped another (an upper
    /// bound: acknowledgements travel while data flows the other way).
    pub serialisation_ms: f64,
}

impl WireEcho {
    /// The per-echo cost from a short and a long connection's counters.
    /// O(1).
    pub fn from_difference(
        transport: Transport,
        size_bytes: u64,
        short: Counters,
        long: Counters,
        counted_echoes: usize,
        rate_bps: u64,
    ) -> anyhow::Result<WireEcho> {
        let d = long.since(short).ok_or_else(|| {
            anyhow!(
                "{} at {size_bytes} bytes: the {COUNTED_ECHOES}-echo longer connection \
                 carried fewer frames than the shorter one ({long:?} against {short:?})",
                transport.name()
            )
        })?;
        let n = counted_echoes as f64;
        let bytes = (d.out_bytes + d.in_bytes) as f64;
        Ok(WireEcho {
            transport,
            size_bytes,
            out_frames: d.out_frames as f64 / n,
            out_bytes: d.out_bytes as f64 / n,
            in_frames: d.in_frames as f64 / n,
            in_bytes: d.in_bytes as f64 / n,
            serialisation_ms: bytes * 8.0 / rate_bps as f64 * 1e3 / n,
        })
    }
}

/// Frames and bytes the two shapers have sent so far: the client's is
/// what went out, the server's what came in ([`VethPair::shaper_sent`]).
/// O(1) plus two `tc` processes.
pub fn counters(wire: &VethPair) -> anyhow::Result<Counters> {
    let (out_frames, out_bytes) = wire.shaper_sent(Side::Client)?;
    let (in_frames, in_bytes) = wire.shaper_sent(Side::Server)?;
    Ok(Counters {
        out_frames,
        out_bytes,
        in_frames,
        in_bytes,
    })
}

/// Run `connection(echoes)` for [`SHORT_ECHOES`] and then
/// [`SHORT_ECHOES`] + [`COUNTED_ECHOES`] round trips, reading the counters
/// around each, and return the cost of one echo. Cost: two connections.
pub fn measure(
    wire: &VethPair,
    transport: Transport,
    size_bytes: u64,
    mut connection: impl FnMut(usize) -> anyhow::Result<()>,
) -> anyhow::Result<WireEcho> {
    let mut counted = |echoes: usize| -> anyhow::Result<Counters> {
        let before = counters(wire)?;
        connection(echoes)?;
        std::thread::sleep(SETTLE);
        let after = counters(wire)?;
        after
            .since(before)
            .ok_or_else(|| anyhow!("the shapers' counters went backwards"))
    };
    let short = counted(SHORT_ECHOES)?;
    let long = counted(SHORT_ECHOES + COUNTED_ECHOES)?;
    WireEcho::from_difference(
        transport,
        size_bytes,
        short,
        long,
        COUNTED_ECHOES,
        wire.rate_bps,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_echo_is_the_difference_over_the_counted_echoes() {
        let short = Counters {
            out_frames: 120,
            out_bytes: 150_000,
            in_frames: 110,
            in_bytes: 140_000,
        };
        // Ten more echoes of 47 frames of 1,514 bytes each way, plus 3 ACKs
        // of 66 bytes back per echo.
        let long = Counters {
            out_frames: 120 + 500,
            out_bytes: 150_000 + 10 * (47 * 1514 + 3 * 66),
            in_frames: 110 + 470,
            in_bytes: 140_000 + 10 * 47 * 1514,
        };
        let w = WireEcho::from_difference(Transport::Tcp, 65_536, short, long, 10, 1_000_000_000)
            .expect("long ≥ short");
        assert_eq!(w.out_frames, 50.0);
        assert_eq!(w.in_frames, 47.0);
        assert_eq!(w.out_bytes, (47 * 1514 + 3 * 66) as f64);
        let expect_ms = (2 * 47 * 1514 + 3 * 66) as f64 * 8.0 / 1e9 * 1e3;
        assert!((w.serialisation_ms - expect_ms).abs() < 1e-12);
        // A longer connection that carried less is an error naming it, not a
        // negative count.
        let err = WireEcho::from_difference(Transport::Tcp, 65_536, long, short, 10, 1_000_000_000)
            .unwrap_err();
        assert!(format!("{err:#}").contains("fewer frames"));
    }
}
