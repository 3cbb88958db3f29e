//! # The endpoint's buffer pool: bounded memory for message data
//!
//! Seed 003 §III-F has SLTP take its buffers from a pool of fixed size, so
//! that a stalled peer (a closed handover window, a blacked-out link)
//! cannot make a sender grow without bound. Peregrine keeps the bound and
//! makes it observable: [`BufferPool`] counts, per endpoint, the bytes of
//! message data its connections hold — queued and not yet sent, or sent
//! and not yet acknowledged — against a ceiling
//! (`EndpointConfig::memory_ceiling_bytes`).
//!
//! Key choices:
//! * **Logical, exact accounting.** No slab allocator: a message's bytes
//!   count from `send_message` until the peer acknowledges all of it, it is
//!   abandoned (deadline, unreliable loss), or its connection is freed. The
//!   endpoint applies, after every call into a connection, the exact
//!   difference between the bytes the connection holds and what the pool
//!   last counted for it ([`BufferPool::update`]), so the count never
//!   drifts and never needs a scan.
//! * **Would-block, never abort, never silent loss.** A message that would
//!   take the pool over its ceiling is refused whole
//!   ([`SendError::WouldBlock`]); nothing of it is queued. The refusal is
//!   remembered per connection with the smallest size refused, and an
//!   [`Event::Writable`](crate::Event::Writable) is raised for that
//!   connection once that much is free again.

use super::ConnectionHandle;
use crate::connection::SendError;
use std::collections::BTreeMap;

/// Bytes held by an endpoint's connections, against a ceiling.
#[derive(Clone, Debug)]
pub struct BufferPool {
    ceiling: usize,
    in_use: usize,
    peak: usize,
    would_block: u64,
    /// Connections refused since their last `Writable`: the smallest
    /// message size refused.
    waiters: BTreeMap<ConnectionHandle, usize>,
}

impl BufferPool {
    /// An empty pool with room for `ceiling` bytes.
    pub fn new(ceiling: usize) -> BufferPool {
        BufferPool {
            ceiling,
            in_use: 0,
            peak: 0,
            would_block: 0,
            waiters: BTreeMap::new(),
        }
    }

    /// Bytes in use.
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// The most bytes ever in use at once.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// The ceiling, bytes.
    pub fn ceiling(&self) -> usize {
        self.ceiling
    }

    /// How many sends were refused with `WouldBlock`.
    pub fn would_block_count(&self) -> u64 {
        self.would_block
    }

    /// Whether a message of `len` bytes fits now; if not, `handle` is
    /// remembered as waiting and the refusal is returned.
    pub fn check(&mut self, handle: ConnectionHandle, len: usize) -> Result<(), SendError> {
        if self.in_use.saturating_add(len) <= self.ceiling {
            return Ok(());
        }
        self.would_block += 1;
        let need = self.waiters.entry(handle).or_insert(len);
        *need = (*need).min(len);
        Err(SendError::WouldBlock {
            in_use: self.in_use,
            ceiling: self.ceiling,
        })
    }

    /// A connection's holding changed from `before` to `after` bytes.
    pub fn update(&mut self, before: usize, after: usize) {
        if after >= before {
            self.in_use = self.in_use.saturating_add(after - before);
            self.peak = self.peak.max(self.in_use);
        } else {
            self.in_use = self.in_use.saturating_sub(before - after);
        }
    }

    /// Whether some connection waits for room.
    pub fn has_waiters(&self) -> bool {
        !self.waiters.is_empty()
    }

    /// The waiting connections whose refused size fits now; they stop
    /// waiting (one `Writable` per refusal episode).
    pub fn take_writable(&mut self) -> Vec<ConnectionHandle> {
        let free = self.ceiling.saturating_sub(self.in_use);
        let ready: Vec<ConnectionHandle> = self
            .waiters
            .iter()
            .filter(|(_, &need)| need <= free)
            .map(|(h, _)| *h)
            .collect();
        for h in &ready {
            self.waiters.remove(h);
        }
        ready
    }

    /// A connection is gone: it waits no more.
    pub fn forget(&mut self, handle: ConnectionHandle) {
        self.waiters.remove(&handle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_refuses_past_the_ceiling_and_wakes_the_waiter_when_room_frees() {
        let mut p = BufferPool::new(1000);
        let h = ConnectionHandle(3);
        assert_eq!(p.check(h, 600), Ok(()));
        p.update(0, 600);
        assert_eq!(
            p.check(h, 500),
            Err(SendError::WouldBlock {
                in_use: 600,
                ceiling: 1000
            })
        );
        assert_eq!(
            p.check(h, 450),
            Err(SendError::WouldBlock {
                in_use: 600,
                ceiling: 1000
            })
        );
        assert_eq!(p.would_block_count(), 2);
        assert!(p.has_waiters());
        // 100 bytes acknowledged: 500 free, the smallest refusal (450) fits.
        p.update(600, 500);
        assert_eq!(p.take_writable(), vec![h]);
        assert!(!p.has_waiters());
        assert!(p.take_writable().is_empty());
        assert_eq!((p.in_use(), p.peak(), p.ceiling()), (500, 600, 1000));
    }

    #[test]
    fn pool_accounting_is_exact_across_updates_and_forget() {
        let mut p = BufferPool::new(10);
        p.update(0, 10);
        p.update(10, 4);
        p.update(0, 3);
        assert_eq!(p.in_use(), 7);
        assert_eq!(p.peak(), 10);
        let h = ConnectionHandle(1);
        assert!(p.check(h, 4).is_err());
        p.forget(h);
        p.update(7, 0);
        assert!(p.take_writable().is_empty());
        assert_eq!(p.in_use(), 0);
        assert_eq!(p.check(h, 10), Ok(()));
    }
}
