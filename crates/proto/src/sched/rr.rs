//! Round robin, seed 002 Algorithm 1: active streams wait in a FIFO
//! queue; the head gives one block and, if it has more, goes to the back.
//!
//! **Tie-break**: there are no ties — streams are served in the order they
//! became active; a stream that becomes active joins the back.
//!
//! One difference from quic-go: its unit is "all of a stream's data that
//! fits the packet", ours one block (a full packet's worth, or one small
//! message), so small messages of several streams interleave in one
//! datagram.

use super::{IdSet, SchedContext, Scheduler, StreamView};
use std::collections::VecDeque;

/// The round-robin scheduler.
#[derive(Debug)]
pub struct RoundRobin {
    queue: VecDeque<u16>,
    active: IdSet,
    stale: usize,
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
            self.queue.pop_front();
            if more {
                self.queue.push_back(s.id);
            } else {
                self.active.remove(s.id);
            }
        } else if !more {
            self.remove(s.id);
        }
    }
    fn len(&self) -> usize {
        self.queue.len() - self.stale.min(self.queue.len())
    }
}
