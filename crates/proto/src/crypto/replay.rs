//! A sliding replay window on the 64-bit packet number.
//!
//! Every packet number is used once per direction (retransmissions get new
//! numbers), so an authenticated packet whose number was already accepted
//! is a replay. The window remembers the largest accepted number and a
//! bitmap of the [`REPLAY_WINDOW`] numbers below it; anything older is
//! rejected outright (a packet that late is useless to the receiver
//! anyway). The window is updated only after a packet authenticates, so a
//! forged packet number cannot move it.

/// Packet numbers remembered below the largest accepted one.
pub const REPLAY_WINDOW: u64 = 128;

/// The set of recently accepted packet numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayWindow {
    /// The largest accepted packet number, `None` before the first.
    largest: Option<u64>,
    /// Bit `i` set: `largest - i` was accepted (bit 0 is `largest`).
    seen: u128,
}

impl ReplayWindow {
    /// An empty window.
    pub fn new() -> ReplayWindow {
        ReplayWindow::default()
    }

    /// The largest accepted packet number.
    pub fn largest(&self) -> Option<u64> {
        self.largest
    }

    /// Whether `pn` would be accepted: newer than everything, or inside the
    /// window and not yet seen.
    pub fn is_fresh(&self, pn: u64) -> bool {
        let Some(largest) = self.largest else {
            return true;
        };
        if pn > largest {
            return true;
        }
        let age = largest - pn;
        age < REPLAY_WINDOW && self.seen & (1u128 << age) == 0
    }

    /// Records `pn` as accepted (call only after it authenticated and
    /// [`is_fresh`](Self::is_fresh) said yes).
    pub fn insert(&mut self, pn: u64) {
        match self.largest {
            None => {
                self.largest = Some(pn);
                self.seen = 1;
            }
            Some(largest) if pn > largest => {
                let shift = pn - largest;
                self.seen = if shift >= REPLAY_WINDOW {
                    0
                } else {
                    self.seen << shift
                };
                self.seen |= 1;
                self.largest = Some(pn);
            }
            Some(largest) => {
                let age = largest - pn;
                if age < REPLAY_WINDOW {
                    self.seen |= 1u128 << age;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_window_rejects_repeats_and_accepts_reordering() {
        let mut w = ReplayWindow::new();
        for pn in [0, 1, 2, 5, 4] {
            assert!(w.is_fresh(pn), "{pn}");
            w.insert(pn);
        }
        for pn in [0, 1, 2, 4, 5] {
            assert!(!w.is_fresh(pn), "{pn} replayed");
        }
        assert!(w.is_fresh(3), "a reordered packet is still fresh");
        w.insert(3);
        assert!(!w.is_fresh(3));
        assert_eq!(w.largest(), Some(5));
    }

    #[test]
    fn replay_window_forgets_nothing_inside_and_rejects_older() {
        let mut w = ReplayWindow::new();
        w.insert(10);
        w.insert(10 + REPLAY_WINDOW);
        // 10 is now exactly REPLAY_WINDOW old: outside, rejected.
        assert!(!w.is_fresh(10));
        assert!(w.is_fresh(11), "inside the window and never seen");
        assert!(!w.is_fresh(9), "too old even though never seen");
        assert!(!w.is_fresh(10 + REPLAY_WINDOW));
        // A jump past the whole window clears the bitmap.
        w.insert(10_000);
        assert!(w.is_fresh(10_000 - 1));
        assert!(!w.is_fresh(10_000));
    }
}
