//! Round robin, seed 002 Algorithm 1 (quic-go's default): active streams
//! wait in a FIFO queue; the head stream fills the current packet with as
//! much of its queued data as fits (`packet.FillWithStreamData(id)`) —
//! several small messages, or a block of a large one — and then, if it has
//! more, goes to the back. If room remains, the next stream fills the rest.
//!
//! **Unit**: a turn is "all of the head stream's data that fits the current
//! packet". The packetizer asks for one block at a time, so the head stays
//! at the front across [`Scheduler::on_sent`] calls of the same packet and
//! rotates at [`Scheduler::end_packet`] (or leaves when it has nothing
//! more). A stream whose next block did not fit the rest of a packet it had
//! not yet sent in keeps its place at the head for the next packet (quic-go
//! would have sent a fragment of it; our blocks are not split).
//!
//! **Tie-break**: there are no ties — streams are served in the order they
//! became active; a stream that becomes active joins the back.

use super::{IdSet, SchedContext, Scheduler, StreamView};
use std::collections::VecDeque;

/// The round-robin scheduler.
#[derive(Debug)]
pub struct RoundRobin {
    queue: VecDeque<u16>,
    active: IdSet,
    stale: usize,
    /// The head stream, if it has already put data in the current packet
    /// (it goes to the back when the packet ends).
    serving: Option<u16>,
}

impl Default for RoundRobin {
    fn default() -> Self {
        Self::new()
    }
}

impl RoundRobin {
    /// No active stream.
    pub fn new() -> RoundRobin {
        RoundRobin {
            queue: VecDeque::new(),
            active: IdSet::new(),
            stale: 0,
            serving: None,
        }
    }

    fn skip_stale(&mut self) {
        // Removed streams are left in the queue and skipped lazily (O(1)
        // amortised instead of a search).
        while let Some(&id) = self.queue.front() {
            if self.active.contains(id) {
                break;
            }
            self.queue.pop_front();
            self.stale = self.stale.saturating_sub(1);
        }
    }
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "rr"
    }
    fn activate(&mut self, s: &StreamView) {
        if self.active.insert(s.id) {
            self.queue.push_back(s.id);
        }
    }
    fn remove(&mut self, id: u16) {
        if self.active.remove(id) {
            if self.serving == Some(id) {
                self.serving = None;
            }
            self.stale += 1;
            if self.stale > 64 && self.stale > self.queue.len() / 2 {
                let active = &self.active;
                self.queue.retain(|&i| active.contains(i));
                self.stale = 0;
            }
        }
    }
    fn pick(&mut self, _ctx: &SchedContext) -> Option<u16> {
        self.skip_stale();
        self.queue.front().copied()
    }
    fn on_sent(&mut self, s: &StreamView, _bytes: usize, more: bool) {
        self.skip_stale();
        if self.queue.front() == Some(&s.id) {
            if more {
                // Its turn lasts until the packet is full.
                self.serving = Some(s.id);
            } else {
                self.queue.pop_front();
                self.active.remove(s.id);
                self.serving = None;
            }
        } else if !more {
            self.remove(s.id);
        }
    }
    fn reads_heads(&self) -> bool {
        // `on_sent` reads the stream id, nothing else of the view.
        false
    }
    fn end_packet(&mut self) {
        if let Some(id) = self.serving.take() {
            self.skip_stale();
            if self.queue.front() == Some(&id) {
                self.queue.pop_front();
                self.queue.push_back(id);
            }
        }
    }
    fn len(&self) -> usize {
        self.queue.len() - self.stale.min(self.queue.len())
    }
}
