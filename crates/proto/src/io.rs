//! The sans-IO boundary: what goes in and out of the protocol core.
//!
//! Everything that drives `peregrine-proto` — the UDP runtime, the
//! simulator, the in-memory test harness — talks to it through
//! [`SansIo`]: datagrams and time in, datagrams and the next timer out.

use crate::Time;
use std::net::SocketAddr;

/// The ECN codepoint of a received or sent datagram (RFC 3168).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EcnCodepoint {
    /// ECN-capable transport, codepoint 0.
    Ect0,
    /// ECN-capable transport, codepoint 1.
    Ect1,
    /// Congestion experienced.
    Ce,
}

/// One datagram the core wants sent: its bytes were written into the
/// caller's buffer by [`SansIo::poll_transmit`] (at its start) or
/// [`SansIo::poll_transmit_at`] (at the offset the caller gave).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send it.
    pub destination: SocketAddr,
    /// ECN codepoint to set, if any.
    pub ecn: Option<EcnCodepoint>,
    /// Length of the datagram in the buffer.
    pub size: usize,
}

/// A sans-IO protocol participant.
///
/// # Call contract
///
/// * `now` never goes backwards between calls.
/// * After any `handle_*` call, call [`poll_transmit`](Self::poll_transmit)
///   (or [`poll_transmit_at`](Self::poll_transmit_at): the two are one
///   sequence of datagrams, they may be mixed) until it returns `None`, then [`poll_timeout`](Self::poll_timeout) and
///   arm one timer for the instant it returns; when that instant comes, call
///   [`handle_timeout`](Self::handle_timeout).
/// * No method panics for any input bytes.
pub trait SansIo {
    /// A datagram arrived from `remote`. The participant may work in
    /// `bytes` (a protected datagram is decrypted in place, in the
    /// caller's receive buffer): their contents are unspecified afterwards.
    fn handle_datagram(
        &mut self,
        now: Time,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        bytes: &mut [u8],
    );
    /// The next datagram to send, written into `buf` (cleared first), or `None`.
    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit>;
    /// The next datagram to send, written at `buf[start..start + size]`
    /// (the vector is extended as needed), or `None`. Not one byte of
    /// `buf[..start]` changes, and the bytes past the datagram's end are
    /// unspecified (the vector may be longer than `start + size`): a
    /// runtime builds its send batch in one reused vector, each datagram
    /// where it leaves from (`start` = the end of the last one), with
    /// neither a copy nor zeroing. Exactly the datagram
    /// [`poll_transmit`](Self::poll_transmit) would have returned — same
    /// bytes, same state change.
    ///
    /// The default writes through `poll_transmit` and copies (an
    /// allocation per call); the [`Endpoint`](crate::Endpoint) builds in
    /// place. Complexity: that of `poll_transmit`.
    fn poll_transmit_at(&mut self, now: Time, buf: &mut Vec<u8>, start: usize) -> Option<Transmit> {
        let mut own = Vec::new();
        let t = self.poll_transmit(now, &mut own)?;
        buf.resize(start, 0);
        buf.extend_from_slice(own.get(..t.size)?);
        Some(t)
    }
    /// When [`handle_timeout`](Self::handle_timeout) must next be called, if ever.
    fn poll_timeout(&mut self) -> Option<Time>;
    /// The instant returned by [`poll_timeout`](Self::poll_timeout) has come.
    fn handle_timeout(&mut self, now: Time);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A participant that sends datagrams of 1, 2, 3 … bytes, each byte
    /// its number, and implements only `poll_transmit`.
    struct Counting(u8);

    impl SansIo for Counting {
        fn handle_datagram(
            &mut self,
            _: Time,
            _: SocketAddr,
            _: Option<EcnCodepoint>,
            _: &mut [u8],
        ) {
        }
        fn poll_transmit(&mut self, _: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
            if self.0 == 5 {
                return None;
            }
            self.0 += 1;
            buf.clear();
            buf.resize(usize::from(self.0), self.0);
            Some(Transmit {
                destination: SocketAddr::from(([10, 0, 0, 1], 4000)),
                ecn: None,
                size: buf.len(),
            })
        }
        fn poll_timeout(&mut self) -> Option<Time> {
            None
        }
        fn handle_timeout(&mut self, _: Time) {}
    }

    /// The default `poll_transmit_at` appends each datagram at the offset
    /// it is given, over stale bytes, and leaves the bytes before it.
    #[test]
    fn the_default_poll_transmit_at_writes_at_the_offset_and_keeps_the_prefix() {
        let mut p = Counting(0);
        let mut batch = vec![0xee; 40];
        let mut end = 3;
        while let Some(t) = p.poll_transmit_at(Time::ZERO, &mut batch, end) {
            end += t.size;
        }
        assert_eq!(&batch[..3], &[0xee; 3], "the prefix");
        assert_eq!(
            &batch[3..end],
            &[1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5],
            "each datagram after the last"
        );
    }
}
