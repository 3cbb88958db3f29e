//! The endpoint's side of issue 7: the application's handover window and
//! the buffer pool ([`super::pool`]) — sending under the ceiling, exact
//! accounting after every call into a connection, `Writable` events.

use super::{ConnectionHandle, Endpoint};
use crate::connection::{ConnectionState, Event, MessageData, MessageId, SendError, WindowTarget};
use crate::wire::CwinReason;
use peregrine_cc::Time;

impl Endpoint {
    /// Cap the receive window of a connection, or close / reopen one of its
    /// streams (seed 003 §III-E): 0 closes it — before a handover, say —
    /// and the peer's sender stops new data and polls with STATUS until it
    /// reopens; `u64::MAX` removes the cap. A connection-wide change sends
    /// CWIN (`handover_start` when closing to 0, `handover_end` when
    /// reopening). Whether the connection exists.
    ///
    /// Complexity: O(log n).
    pub fn set_receive_window(
        &mut self,
        handle: ConnectionHandle,
        now: Time,
        target: WindowTarget,
        bytes: u64,
    ) -> bool {
        self.set_receive_window_with_reason(handle, now, target, bytes, None)
    }

    /// [`set_receive_window`](Self::set_receive_window) with the CWIN's
    /// reason code chosen by the application (`None`: the default one).
    ///
    /// Complexity: O(log n).
    pub fn set_receive_window_with_reason(
        &mut self,
        handle: ConnectionHandle,
        now: Time,
        target: WindowTarget,
        bytes: u64,
        reason: Option<CwinReason>,
    ) -> bool {
        let now = self.tick(now);
        match self.connections.get_mut(&handle) {
            Some(c) => {
                c.set_receive_window(now, target, bytes, reason);
                true
            }
            None => false,
        }
    }

    /// `send_message` under the pool's ceiling: the connection's own
    /// checks first, then the pool's, then the message is queued and
    /// counted.
    pub(super) fn send_pooled(
        &mut self,
        handle: ConnectionHandle,
        now: Time,
        stream: u16,
        bytes: impl MessageData,
        deadline: Option<Time>,
    ) -> Result<MessageId, SendError> {
        let conn = self
            .connections
            .get_mut(&handle)
            .ok_or(SendError::UnknownConnection)?;
        conn.precheck_send(bytes.message_len())?;
        let checked = self.pool.check(handle, bytes.message_len());
        self.sync_pool_stats();
        checked?;
        let conn = self
            .connections
            .get_mut(&handle)
            .ok_or(SendError::UnknownConnection)?;
        let out = conn.send_message(now, stream, bytes, deadline);
        self.pool_sync(handle);
        out
    }

    /// Count the bytes `handle` holds now (exact difference to what the
    /// pool last counted for it) and raise `Writable` for connections
    /// waiting for room that fits again.
    pub(super) fn pool_sync(&mut self, handle: ConnectionHandle) {
        let swapped = self.connections.get_mut(&handle).map(|c| c.pool_swap());
        self.pool_sync_swapped(swapped);
    }

    /// [`pool_sync`](Self::pool_sync) for a connection the caller already
    /// holds: `swapped` is its `pool_swap()` (`None`: no such
    /// connection). A connection whose holding did not change, with no
    /// connection waiting for room, changes nothing — the pool, its
    /// waiters and the stats mirrored from it (kept equal to the pool by
    /// every call that changes it) stay as they are — so nothing runs:
    /// the receive path calls this once per datagram, and a data
    /// receiver's holding rarely moves. O(1) then; else O(waiters).
    pub(super) fn pool_sync_swapped(&mut self, swapped: Option<(usize, usize)>) {
        if let Some((before, after)) = swapped {
            if before == after && !self.pool.has_waiters() {
                return;
            }
            self.pool.update(before, after);
        }
        self.wake_writers();
    }

    /// Raise `Writable` for the waiting connections whose refused size
    /// fits now (not for one that closed meanwhile: it sends no more).
    pub(super) fn wake_writers(&mut self) {
        if self.pool.has_waiters() {
            for h in self.pool.take_writable() {
                if let Some(c) = self.connections.get_mut(&h) {
                    if matches!(
                        c.state(),
                        ConnectionState::Starting | ConnectionState::Connected
                    ) {
                        c.push_event(Event::Writable);
                    }
                }
            }
        }
        self.sync_pool_stats();
    }

    /// A connection is being released: whatever it still held leaves the
    /// pool, and it waits no more.
    pub(super) fn pool_release(&mut self, handle: ConnectionHandle, accounted: usize) {
        self.pool.update(accounted, 0);
        self.pool.forget(handle);
        self.wake_writers();
    }

    fn sync_pool_stats(&mut self) {
        self.stats.pool_bytes_in_use = self.pool.in_use() as u64;
        self.stats.pool_peak_bytes = self.pool.peak() as u64;
        self.stats.pool_ceiling_bytes = self.pool.ceiling() as u64;
        self.stats.pool_would_block = self.pool.would_block_count();
    }
}
