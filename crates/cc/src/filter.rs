//! H10: Kathleen Nichols' windowed min/max filter (kernel `lib/win_minmax.c`).
//!
//! Keeps the best, second-best and third-best samples of the last window so
//! the running extreme is available in O(1) and ages out smoothly. The
//! window and the time axis are plain `u64`s so the same filter serves
//! wall-clock windows (nanoseconds) and round-counted windows (BBR's
//! bandwidth filter counts packet-timed rounds).

/// One `(time, value)` sample.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MinMaxSample {
    /// When the sample was taken (nanoseconds or rounds).
    pub t: u64,
    /// The sampled value.
    pub v: u64,
}

/// Which extreme the filter tracks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Max,
    Min,
}

/// A windowed running maximum or minimum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowedFilter {
    kind: Kind,
    window: u64,
    s: [MinMaxSample; 3],
    empty: bool,
}

impl WindowedFilter {
    /// A running maximum over `window`.
    pub fn new_max(window: u64) -> Self {
        WindowedFilter {
            kind: Kind::Max,
            window,
            s: [MinMaxSample::default(); 3],
            empty: true,
        }
    }
    /// A running minimum over `window`.
    pub fn new_min(window: u64) -> Self {
        WindowedFilter {
            kind: Kind::Min,
            window,
            s: [MinMaxSample::default(); 3],
            empty: true,
        }
    }
    /// The current extreme, `None` before the first sample.
    pub fn get(&self) -> Option<u64> {
        (!self.empty).then_some(self.s[0].v)
    }
    /// The current extreme, or 0 before the first sample.
    pub fn get_or_zero(&self) -> u64 {
        self.get().unwrap_or(0)
    }
    /// Forget every sample and start again from `(t, v)`.
    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        let s = MinMaxSample { t, v };
        self.s = [s; 3];
        self.empty = false;
        v
    }
    /// Forget every sample.
    pub fn clear(&mut self) {
        self.empty = true;
        self.s = [MinMaxSample::default(); 3];
    }

    fn better_or_equal(&self, a: u64, b: u64) -> bool {
        match self.kind {
            Kind::Max => a >= b,
            Kind::Min => a <= b,
        }
    }

    /// Add the sample `(t, v)` and return the running extreme.
    pub fn update(&mut self, t: u64, v: u64) -> u64 {
        let val = MinMaxSample { t, v };
        if self.empty
            || self.better_or_equal(v, self.s[0].v)
            || t.saturating_sub(self.s[2].t) > self.window
        {
            return self.reset(t, v);
        }
        if self.better_or_equal(v, self.s[1].v) {
            self.s[1] = val;
            self.s[2] = val;
        } else if self.better_or_equal(v, self.s[2].v) {
            self.s[2] = val;
        }
        self.subwin_update(val)
    }

    /// Sub-window maintenance (kernel `minmax_subwin_update`).
    fn subwin_update(&mut self, val: MinMaxSample) -> u64 {
        let dt = val.t.saturating_sub(self.s[0].t);
        if dt > self.window {
            // The best sample passed the whole window: promote the others.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.saturating_sub(self.s[0].t) > self.window {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > self.window / 4 {
            // A quarter of the window passed without a 2nd choice: take one.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > self.window / 2 {
            // Half the window passed without a 3rd choice: take one.
            self.s[2] = val;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cc-spec BB-2: max filter over 10 rounds.
    #[test]
    fn bb2_max_filter_expires_by_rounds() {
        let mut f = WindowedFilter::new_max(10);
        let samples = [
            (0, 100),
            (1, 90),
            (2, 95),
            (3, 80),
            (5, 85),
            (9, 60),
            (10, 70),
        ];
        for (t, v) in samples {
            assert_eq!(f.update(t, v), 100, "round {t}");
        }
        assert_eq!(f.update(11, 50), 85);
        assert_eq!(f.update(23, 20), 20);
    }

    #[test]
    fn min_filter_tracks_minimum() {
        let mut f = WindowedFilter::new_min(100);
        assert_eq!(f.get(), None);
        assert_eq!(f.update(0, 50), 50);
        assert_eq!(f.update(10, 60), 50);
        assert_eq!(f.update(20, 40), 40);
        assert_eq!(f.update(200, 70), 70);
    }
}
