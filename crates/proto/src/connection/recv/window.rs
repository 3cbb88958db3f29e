//! # Built for things that move: handover window, link hints, pool hooks
//!
//! **Handover window** (seed 003 §III-E). The application may cap the
//! window this side advertises — for the whole connection or for one
//! stream — with [`Connection::set_receive_window`]. A vehicle about to
//! hand over closes it to 0: every header then advertises 0 (WINDOW_SIZE
//! with W_VAL) and a CWIN with a reason code (`handover_start`) tells the
//! sender at once; reopening sends CWIN again (`handover_end`). Data
//! already in flight is still accepted: the window only stops *new* data.
//!
//! The sender facing a zero window stops new data (retransmissions still
//! go) and polls with STATUS (REPLY_REQ), the first poll one RTO after the
//! window closed, then backing off exponentially up to
//! `ConnectionConfig::max_status_interval`, until a CWIN (or the W_VAL
//! window of any newer packet) reopens it; data then resumes at once. The
//! pause is not loss and not congestion: nothing is declared lost because
//! of it, the controller hears nothing about it, no RTO runs while nothing
//! is in flight, and the paused time is taken out of the idle time of the
//! controller's idle-restart rule ([`crate::recovery::Recovery::exclude_idle`]).
//!
//! A stream has no window field on the wire (CWIN is per connection in
//! version 1): closing a stream's window holds its delivery to the
//! application, which freezes the stream's credit when the connection uses
//! per-stream credit (`initial_stream_credit`), so the sender stops new
//! messages of that stream only; reopening releases the held messages.
//!
//! **Link hints** ([`Connection::handle_link_hint`]) go to the controller
//! unchanged; what the sender does during a predicted outage is the
//! controller's decision, through its send gate (cc-spec §2.4, §3.16).
//! The application hears what each hint did (`Event::LinkHintApplied`)
//! and when the gate starts and stops holding the window
//! (`Event::SendWindowHeld` / `SendWindowReleased`, whatever caused it).
//!
//! **Pool hooks**: the endpoint's buffer pool (seed 003 §III-F) counts
//! each connection's queued and unacknowledged message bytes; the
//! connection remembers the amount last counted so the endpoint can apply
//! exact differences after every call.

use crate::connection::{Connection, ConnectionState, Event, HintEffect};
use crate::wire::{expand_packet_number, CwinPayload, CwinReason};
use peregrine_cc::{LinkHint, Time};
use std::time::Duration;

/// What [`Connection::set_receive_window`] applies to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WindowTarget {
    /// The connection's window (WINDOW_SIZE and CWIN).
    Connection,
    /// One stream (by id): held while its window is 0.
    Stream(u16),
}

/// Handover-window state of one connection, both directions.
#[derive(Clone, Debug, Default)]
pub(crate) struct WindowState {
    /// The application's cap on the advertised window, bytes (`None`:
    /// only the free receive buffer counts).
    app_limit: Option<u64>,
    /// A CWIN waiting to leave: window bytes and reason.
    cwin_pending: Option<(u32, CwinReason)>,
    /// Streams whose window the application closed.
    closed_streams: std::collections::BTreeSet<u16>,
    /// Sender side: since when the peer's window has been 0.
    paused_since: Option<Time>,
    /// Counters reported in the stats.
    pub counters: WindowCounters,
    /// Bytes of this connection the endpoint's pool last counted.
    pub pool_accounted: usize,
    /// Sender side: since when, and at which window (bytes), the
    /// controller has held its window (its send gate lets only probes
    /// through); watched to report `SendWindowHeld` / `SendWindowReleased`.
    send_hold: Option<(Time, u64)>,
}

/// Counters of the handover window, reported in
/// [`ConnectionStats`](crate::connection::ConnectionStats).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowCounters {
    /// CWIN packets sent.
    pub cwins_sent: u64,
    /// CWIN packets received.
    pub cwins_received: u64,
    /// STATUS polls sent while the peer's window held new data back.
    pub status_polls_sent: u64,
    /// Times the peer's window closed to 0 (pauses begun).
    pub window_pauses: u64,
    /// Total time the peer's window stayed 0 (finished pauses).
    pub window_paused: Duration,
}

impl Connection {
    /// Cap the window this side advertises (`target` = the connection) or
    /// close / reopen one stream; `bytes = u64::MAX` removes the cap. On
    /// the connection a change sends CWIN with `reason`, or when `None`:
    /// `handover_start` when closing to 0, `handover_end` when reopening
    /// from 0, `unspecified` otherwise. A stream is closed by 0 and reopened
    /// by any other value.
    pub fn set_receive_window(
        &mut self,
        now: Time,
        target: WindowTarget,
        bytes: u64,
        reason: Option<CwinReason>,
    ) {
        let now = self.tick(now);
        match target {
            WindowTarget::Stream(id) => {
                if bytes == 0 {
                    self.window.closed_streams.insert(id);
                    self.hold_stream(id, true);
                } else if self.window.closed_streams.remove(&id) {
                    self.hold_stream(id, false);
                    // The held messages are readable now, and the credit
                    // they hold back may grow once read.
                    self.recv.request_ack_at(now);
                }
            }
            WindowTarget::Connection => {
                let was_closed = self.window.app_limit == Some(0);
                self.window.app_limit = (bytes != u64::MAX).then_some(bytes);
                let reason = reason.unwrap_or(if bytes == 0 {
                    CwinReason::HANDOVER_START
                } else if was_closed {
                    CwinReason::HANDOVER_END
                } else {
                    CwinReason::UNSPECIFIED
                });
                let window = u32::try_from(self.advertised_window()).unwrap_or(u32::MAX);
                if !matches!(
                    self.state,
                    ConnectionState::Starting | ConnectionState::Closed
                ) {
                    self.window.cwin_pending = Some((window, reason));
                }
            }
        }
    }

    /// The window this side advertises: the free receive buffer, capped by
    /// the application's window and by the receive-queue bound
    /// (queue_bound.rs).
    pub(crate) fn advertised_window(&self) -> u64 {
        let free = u64::try_from(self.free_receive_bytes()).unwrap_or(u64::MAX);
        let free = self.queue_bound.cap().map_or(free, |cap| free.min(cap));
        self.window.app_limit.map_or(free, |cap| free.min(cap))
    }

    /// The CWIN due, if any (taken: it leaves with this call's packet).
    pub(crate) fn take_cwin(&mut self) -> Option<(u32, CwinReason)> {
        let c = self.window.cwin_pending.take()?;
        self.window.counters.cwins_sent += 1;
        Some(c)
    }

    /// A CWIN arrived (already recorded as received): its window applies
    /// if it is the newest packet of the peer (a CWIN overtaken by a newer
    /// packet is stale: the newer one's W_VAL already told the window).
    pub(crate) fn on_cwin(&mut self, c: &CwinPayload) {
        self.window.counters.cwins_received += 1;
        let largest = self.recv.largest();
        if largest.is_some_and(|l| expand_packet_number(c.packet_number, Some(l)) == l) {
            self.on_peer_window(u64::from(c.window_bytes));
        }
    }

    /// The peer's window changed to `bytes`: a pause begins at 0 and ends
    /// at anything else (its time leaves the idle-restart clock).
    pub(crate) fn on_window_update(&mut self, bytes: u64) {
        let now = self.now;
        match (bytes, self.window.paused_since) {
            (0, None) => {
                self.window.paused_since = Some(now);
                self.window.counters.window_pauses += 1;
            }
            (1.., Some(since)) => {
                self.window.paused_since = None;
                let paused = now.saturating_duration_since(since);
                self.window.counters.window_paused += paused;
                self.recovery.exclude_idle(now, paused);
            }
            _ => {}
        }
    }

    /// How long to wait before the next STATUS poll: one RTO, doubled per
    /// poll already sent, at most `max_status_interval`.
    pub(crate) fn status_poll_wait(&self) -> Duration {
        let rto = self.recovery.rtt().rto();
        rto.saturating_mul(1u32 << self.status_backoff.min(16))
            .min(self.config.max_status_interval)
    }

    /// A STATUS poll leaves.
    pub(crate) fn on_status_poll_sent(&mut self) {
        self.window.counters.status_polls_sent += 1;
    }

    /// The handover-window counters.
    pub(crate) fn window_counters(&self) -> WindowCounters {
        let mut c = self.window.counters.clone();
        if let Some(since) = self.window.paused_since {
            c.window_paused += self.now.saturating_duration_since(since);
        }
        c
    }

    /// Hand a link-layer hint (blockage, deafness, beam misalignment,
    /// handover, congestion-free; predicted duration, CQI, speed) to the
    /// controller. What the sender does next is the controller's send
    /// gate's decision: a controller that ignores hints behaves exactly as
    /// without one.
    pub fn handle_link_hint(&mut self, now: Time, hint: &LinkHint) {
        let now = self.tick(now);
        if self.state != ConnectionState::Closed {
            let before = self.window.send_hold.is_some();
            self.recovery.on_link_hint(now, hint);
            self.note_link_hint_outage(now, hint);
            let after = self.recovery.congestion().window_held(now);
            let effect = match (before, after) {
                (false, true) => HintEffect::WindowHeld,
                (true, false) => HintEffect::WindowReleased,
                _ => HintEffect::Noted,
            };
            self.events.push_back(Event::LinkHintApplied {
                kind: hint.kind,
                effect,
                cwnd_bytes: self.recovery.congestion().cwnd_bytes(),
            });
            self.watch_send_gate(now);
        }
    }

    /// Report a change of the controller's hold on its window
    /// (`SendWindowHeld` / `SendWindowReleased`). Called after every
    /// recovery outcome (ACK, NACK, timeout), link hint and controller
    /// change — where a hold begins or ends. O(1).
    pub(crate) fn watch_send_gate(&mut self, now: Time) {
        let held = self.recovery.congestion().window_held(now);
        match (self.window.send_hold, held) {
            (None, true) => {
                let cwnd_bytes = self.recovery.congestion().cwnd_bytes();
                self.window.send_hold = Some((now, cwnd_bytes));
                self.events.push_back(Event::SendWindowHeld { cwnd_bytes });
            }
            (Some((since, held_cwnd)), false) => {
                let cwnd_bytes = self.recovery.congestion().cwnd_bytes();
                self.window.send_hold = None;
                self.events.push_back(Event::SendWindowReleased {
                    held_for: now.saturating_duration_since(since),
                    cwnd_bytes,
                    reduced: cwnd_bytes < held_cwnd,
                });
            }
            _ => {}
        }
    }

    /// Queue an event for the application (the endpoint's `Writable`).
    pub(crate) fn push_event(&mut self, event: Event) {
        self.events.push_back(event);
    }

    /// Bytes of message data this connection holds queued or
    /// unacknowledged (what the endpoint's pool counts), as (last counted,
    /// now); the pool's count becomes the current value.
    pub(crate) fn pool_swap(&mut self) -> (usize, usize) {
        let now = self.send.buffered_bytes();
        let before = std::mem::replace(&mut self.window.pool_accounted, now);
        (before, now)
    }

    /// What the endpoint's pool counts for this connection.
    pub(crate) fn pool_accounted(&self) -> usize {
        self.window.pool_accounted
    }

    /// Whether `send_message` would refuse `len` bytes on this connection
    /// for a reason of its own (checked before the pool, so that a closed
    /// connection says `Closed`, not `WouldBlock`).
    pub(crate) fn precheck_send(&self, len: usize) -> Result<(), crate::connection::SendError> {
        if !matches!(
            self.state,
            ConnectionState::Starting | ConnectionState::Connected
        ) {
            return Err(crate::connection::SendError::Closed);
        }
        if len > self.config.max_message_size {
            return Err(crate::connection::SendError::MessageTooLarge {
                size: len,
                max: self.config.max_message_size,
            });
        }
        Ok(())
    }
}
