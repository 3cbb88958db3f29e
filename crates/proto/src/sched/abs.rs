//! Absolute priority, seed 002 Algorithms 2–3: the most urgent class with
//! data is served exclusively; within a class the stream at the head keeps
//! sending until it has no more data (Algorithm 3 puts it back at the
//! head), then the next one in that class goes.
//!
//! **Tie-break**: lower class first (0 is most urgent); within a class, the
//! stream that became active earliest — so the head keeps its place for as
//! long as it stays active.

use super::{SchedContext, Scheduler, StreamView};
use std::collections::BTreeMap;

/// The ABS scheduler.
#[derive(Debug, Default)]
pub struct Abs {
    order: BTreeMap<(u8, u64), u16>,
    keys: BTreeMap<u16, (u8, u64)>,
    seq: u64,
}

impl Abs {
    /// No active stream.
    pub fn new() -> Abs {
        Abs::default()
    }

    /// The class of the stream ABS would pick, and that stream.
    pub fn head(&self) -> Option<(u8, u16)> {
        self.order.first_key_value().map(|(&(c, _), &id)| (c, id))
    }
}

impl Scheduler for Abs {
    fn name(&self) -> &'static str {
        "abs"
    }
    fn activate(&mut self, s: &StreamView) {
        if let Some(&(class, seq)) = self.keys.get(&s.id) {
            if class == s.class {
                return;
            }
            self.order.remove(&(class, seq));
        }
        self.seq += 1;
        let key = (s.class, self.seq);
        self.order.insert(key, s.id);
        self.keys.insert(s.id, key);
    }
    fn remove(&mut self, id: u16) {
        if let Some(key) = self.keys.remove(&id) {
            self.order.remove(&key);
        }
    }
    fn pick(&mut self, _ctx: &SchedContext) -> Option<u16> {
        self.head().map(|(_, id)| id)
    }
    fn on_sent(&mut self, s: &StreamView, _bytes: usize, more: bool) {
        if more {
            self.activate(s);
        } else {
            self.remove(s.id);
        }
    }
    fn len(&self) -> usize {
        self.keys.len()
    }
}
